//! What each session change writes, decided from what was read: a session started (and
//! the oldest past the cap ended), a refresh token rotated, a password changed with
//! every session ending; and what each one's cancellation means. Pure: nothing here
//! touches the table.

use super::credentials::{SignedIn, active, latest_session_is};
use super::tokens::{Presented, digest, is_current};
use crate::identity::profile::{AccountStatus, CREDENTIAL_GENERATION, Profile, profile_key};
use crate::items::to_item;
use crate::optimistic::Attempt;
use crate::{CommandError, idempotency};
use events_schema::ids::{SessionId, UserId};
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::Timestamp;
use infra::store::{CancelReason, Condition, Key, Update};
use infra::table::Action;
use serde_json::json;

/// Sessions one account may hold; signing in past it ends the oldest.
const MAX_SESSIONS: usize = 20;

/// The key of `user`'s `session`.
pub(super) fn session_key(user: &UserId, session: &SessionId) -> Key {
    Key::new(
        PartitionKey::User(user.clone()).to_string(),
        SortKey::Session(session.clone()).to_string(),
    )
}

/// The profile is still an active account's.
fn still_active(user: &UserId) -> Action {
    Action::Check {
        key: profile_key(user),
        condition: active(),
    }
}

/// Starting `session` for `signed_in` at `now`: its item (the secret's digest only); the
/// profile marked with it as the latest session, on condition that the account still
/// holds what the sign-in proved; and the end of the oldest of the `existing` sessions
/// (oldest first) past [`MAX_SESSIONS`].
pub(super) fn starting(
    signed_in: &SignedIn,
    session: &SessionId,
    secret: &str,
    now: Timestamp,
    expires_at: i64,
    existing: Vec<Key>,
) -> Result<Vec<Action>, CommandError> {
    let user = &signed_in.user;
    let mut item = to_item(
        &session_key(user, session),
        &json!({"secret_hash": digest(secret), "started_at": now, "used_at": now}),
    )?;
    item.insert("expires_at".into(), json!(expires_at));
    let mut actions = vec![
        Action::Put {
            item,
            condition: Some(Condition::ItemNotExists),
        },
        Action::Update {
            key: profile_key(user),
            update: Update::default().set("latest_session", session.to_string()),
            condition: Some(signed_in.still_holds()),
        },
    ];
    // The oldest sessions past the limit end (session ids are time-ordered).
    let surplus = (existing.len() + 1).saturating_sub(MAX_SESSIONS);
    actions.extend(existing.into_iter().take(surplus).map(session_end));
    Ok(actions)
}

/// Rotating the `presented` token whose session stores `stored` (a digest) to
/// `next_secret`, on condition that nobody rotated it meanwhile and the account is
/// still active; `None` when the presented secret is not the current one (a reuse,
/// which ends the session).
pub(super) fn rotation(
    presented: &Presented,
    stored: &str,
    next_secret: &str,
    now: Timestamp,
    expires_at: i64,
) -> Option<Vec<Action>> {
    if !is_current(presented, stored) {
        return None;
    }
    let update = Update::default()
        .set("secret_hash", digest(next_secret))
        .set("used_at", json!(now))
        .set("expires_at", expires_at);
    Some(vec![
        Action::Update {
            key: session_key(&presented.user, &presented.session),
            update,
            condition: Some(Condition::AttributeEquals(
                "secret_hash".into(),
                json!(stored),
            )),
        },
        still_active(&presented.user),
    ])
}

/// What a cancelled start of a session (laid out by [`starting`]) means.
pub(super) fn start_cancelled<T>(reasons: &[CancelReason]) -> Result<Attempt<T>, CommandError> {
    match reasons {
        // The profile's condition: the account is going, or its credentials changed
        // since the sign-in checked them (sign in again).
        [_, CancelReason::ConditionFailed { existing }, ..] => {
            let status = existing.as_ref().and_then(|profile| profile.get("status"));
            if status == Some(&json!(AccountStatus::Active)) {
                Err(CommandError::InvalidCredentials)
            } else {
                Err(CommandError::AccountDeleted)
            }
        }
        _ if CancelReason::conflict_only(reasons) => Ok(Attempt::LostRace),
        // A fresh session's item cannot exist; a backend's own code (throttled, say) is
        // not the account's state.
        other => Err(idempotency::unexpected(other)),
    }
}

/// What a cancelled rotation of a session (laid out by [`rotation`]) means.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum RotationCancelled {
    /// Another transaction met one of its items and nothing was written: try again.
    Conflict,
    /// The session's secret is no longer the one read (another presentation of the
    /// same token rotated it first), or the session is gone: a reuse, which ends it.
    Reused,
    /// The account is no longer active.
    Inactive,
    /// A backend's own code, which says nothing of the token.
    Unexpected,
}

/// What the cancellation `reasons` of a rotation (laid out by [`rotation`]) mean.
pub(super) fn rotation_cancelled(reasons: &[CancelReason]) -> RotationCancelled {
    match reasons {
        [CancelReason::ConditionFailed { .. }, ..] => RotationCancelled::Reused,
        [_, CancelReason::ConditionFailed { .. }, ..] => RotationCancelled::Inactive,
        _ if CancelReason::conflict_only(reasons) => RotationCancelled::Conflict,
        _ => RotationCancelled::Unexpected,
    }
}

/// Changing `read`'s password to `new_hash`: only if nobody changed it meanwhile and no
/// session started since the read, its credentials a generation on (every access token
/// issued before ends), and every one of its `sessions` ends with it.
pub(super) fn password_change(read: &Profile, new_hash: String, sessions: Vec<Key>) -> Vec<Action> {
    let unchanged = Condition::AttributeEquals("password_hash".into(), json!(read.password_hash));
    let update = Update::default()
        .set("password_hash", new_hash)
        .add(CREDENTIAL_GENERATION, 1);
    let mut actions = vec![Action::Update {
        key: profile_key(&read.user_id),
        update,
        condition: Some(Condition::All(vec![unchanged, latest_session_is(read)])),
    }];
    actions.extend(sessions.into_iter().map(session_end));
    actions
}

/// The end of the session stored under `key`: it is deleted, whatever it holds.
pub(super) fn session_end(key: Key) -> Action {
    Action::Delete {
        key,
        condition: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::sessions::tokens::fresh_secret;
    use crate::secret::Secret;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("timestamp")
    }

    /// Ana's profile, signed up with `password_hash`, `latest_session` started last.
    fn profile(user: &UserId, password_hash: &str, latest_session: Option<&str>) -> Profile {
        Profile {
            user_id: user.clone(),
            email: "ana@example.com".into(),
            email_pk: "ana@example.com".into(),
            display_name: "Ana".into(),
            timezone: "Europe/Paris".into(),
            units: events_schema::events::identity::Units::Metric,
            password_hash: Secret::new(password_hash),
            status: AccountStatus::Active,
            version: 2,
            latest_session: latest_session.map(str::to_owned),
            credential_generation: 0,
        }
    }

    fn sessions(user: &UserId, count: usize) -> Vec<Key> {
        (0..count)
            .map(|_| session_key(user, &SessionId::generate()))
            .collect()
    }

    #[test]
    fn a_new_session_stores_only_the_secrets_digest_while_the_sign_in_holds() {
        let (user, session, secret) = (UserId::generate(), SessionId::generate(), fresh_secret());
        let now = at("2026-03-02T08:00:00.000Z");
        let signed_in = SignedIn::proved(&profile(&user, "argon2-hash", None));
        let shown = format!("{signed_in:?}");
        assert!(
            !shown.contains("argon2-hash") && !shown.contains("ana@"),
            "{shown}"
        );
        let actions = starting(
            &signed_in,
            &session,
            &secret,
            now,
            1_000,
            sessions(&user, 3),
        )
        .expect("actions");
        // Given three sessions, when a fourth starts, then none ends.
        assert_eq!(actions.len(), 2);
        let Action::Put { item, condition } = &actions[0] else {
            panic!("a put first: {actions:?}");
        };
        assert_eq!(condition, &Some(Condition::ItemNotExists));
        assert_eq!(item["secret_hash"], digest(&secret).as_str());
        assert!(
            !serde_json::to_string(item).expect("json").contains(&secret),
            "the secret itself is not stored"
        );
        assert_eq!(item["expires_at"], 1_000);
        // The profile marks it the latest session, while the account is active and
        // still has the password and email the sign-in checked.
        let latest = |condition: Condition| Action::Update {
            key: profile_key(&user),
            update: Update::default().set("latest_session", session.to_string()),
            condition: Some(condition),
        };
        let held = |generation: Condition| {
            Condition::All(vec![
                Condition::AttributeEquals("status".into(), json!("active")),
                Condition::AttributeEquals("password_hash".into(), json!("argon2-hash")),
                Condition::AttributeEquals("email".into(), json!("ana@example.com")),
                generation,
            ])
        };
        let first = Condition::AttributeNotExists(CREDENTIAL_GENERATION.into());
        assert_eq!(actions[1], latest(held(first)));
        // Once the credentials changed (twice, say), at the generation the sign-in read.
        let changed = Profile {
            credential_generation: 2,
            ..profile(&user, "argon2-hash", None)
        };
        let signed_in = SignedIn::proved(&changed);
        assert_eq!(signed_in.access().generation, 2);
        let actions = starting(&signed_in, &session, &secret, now, 1_000, vec![]);
        let second = Condition::AttributeEquals(CREDENTIAL_GENERATION.into(), json!(2));
        assert_eq!(actions.expect("actions")[1], latest(held(second)));
    }

    #[test]
    fn signing_in_past_the_limit_ends_the_oldest_sessions() {
        let user = UserId::generate();
        let existing = sessions(&user, MAX_SESSIONS + 1);
        let now = at("2026-03-02T08:00:00.000Z");
        let actions = starting(
            &SignedIn::proved(&profile(&user, "argon2-hash", None)),
            &SessionId::generate(),
            &fresh_secret(),
            now,
            0,
            existing.clone(),
        )
        .expect("actions");
        // Given one session over the limit already, when another starts, then the two
        // oldest end, and only they.
        let ended: Vec<&Key> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Delete { key, .. } => Some(key),
                _ => None,
            })
            .collect();
        assert_eq!(ended, existing.iter().take(2).collect::<Vec<_>>());
    }

    #[test]
    fn only_the_current_secret_rotates_and_the_rotation_is_conditional() {
        let (user, session, secret) = (UserId::generate(), SessionId::generate(), fresh_secret());
        let presented = Presented::parse(&format!("{user}.{session}.{secret}")).expect("valid");
        let stored = digest(&secret);
        let next = fresh_secret();
        let now = at("2026-03-02T08:00:00.000Z");
        let actions = rotation(&presented, &stored, &next, now, 5).expect("the current secret");
        let Action::Update { key, condition, .. } = &actions[0] else {
            panic!("an update first: {actions:?}");
        };
        assert_eq!(key, &session_key(&user, &session));
        assert_eq!(
            condition,
            &Some(Condition::AttributeEquals(
                "secret_hash".into(),
                json!(stored)
            ))
        );
        assert_eq!(actions[1], still_active(&user));
        // Given the session rotated to `next`, when the old secret comes again, then
        // there is nothing to rotate (the caller ends the session).
        assert_eq!(
            rotation(&presented, &digest(&next), &fresh_secret(), now, 5),
            None
        );
    }

    #[test]
    fn a_new_password_replaces_the_one_read_and_ends_every_session() {
        let user = UserId::generate();
        let open = sessions(&user, 3);
        // Given the profile read with session S1 the latest, the new password replaces
        // the old one only while S1 is still the latest session;
        let read = profile(&user, "old-hash", Some("S1"));
        let actions = password_change(&read, "new-hash".into(), open.clone());
        let old = Condition::AttributeEquals("password_hash".into(), json!("old-hash"));
        // its credentials a generation on, which ends every access token issued before;
        let change = |latest: Condition| Action::Update {
            key: profile_key(&user),
            update: Update::default()
                .set("password_hash", "new-hash")
                .add(CREDENTIAL_GENERATION, 1),
            condition: Some(Condition::All(vec![old.clone(), latest])),
        };
        let s1 = Condition::AttributeEquals("latest_session".into(), json!("S1"));
        assert_eq!(actions[0], change(s1));
        // read with no session ever started, while none has started;
        let never = password_change(&profile(&user, "old-hash", None), "new-hash".into(), vec![]);
        let none = Condition::AttributeNotExists("latest_session".into());
        assert_eq!(never[0], change(none));
        // and every session read ends with it.
        let ended: Vec<Action> = open
            .into_iter()
            .map(|key| Action::Delete {
                key,
                condition: None,
            })
            .collect();
        assert_eq!(actions[1..], ended[..]);
    }

    #[test]
    fn a_cancelled_start_is_a_deleted_account_only_when_the_accounts_check_failed() {
        use CancelReason::{ConditionFailed, Conflict, None as Fine, Other};
        let failed = || ConditionFailed { existing: None };
        let deleted = |r: &[CancelReason]| {
            matches!(start_cancelled::<()>(r), Err(CommandError::AccountDeleted))
        };
        // Given the reasons of the new session, the profile's condition, then the ends
        // of the oldest sessions: the profile's condition failed with no profile, or an
        // account going, whatever met the others: deleted;
        assert!(deleted(&[Fine, failed()]));
        assert!(deleted(&[Conflict, failed(), Fine]));
        let mut going = to_item(&profile_key(&UserId::generate()), &json!({})).expect("item");
        going.insert("status".into(), json!(AccountStatus::DeletionRequested));
        let going = ConditionFailed {
            existing: Some(going),
        };
        assert!(deleted(&[Fine, going]));
        // with an active account: its credentials changed since the sign-in: sign in
        // again;
        let user = UserId::generate();
        let active = to_item(&profile_key(&user), &profile(&user, "new-hash", None));
        let changed = ConditionFailed {
            existing: Some(active.expect("item")),
        };
        let refused = start_cancelled::<()>(&[Fine, changed]);
        assert!(
            matches!(refused, Err(CommandError::InvalidCredentials)),
            "{refused:?}"
        );
        // a conflict alone: try again;
        let conflict = start_cancelled::<()>(&[Fine, Fine, Conflict]);
        assert!(matches!(conflict, Ok(Attempt::LostRace)));
        // a backend's own code is no account's state.
        let throttled = start_cancelled::<()>(&[Other("ThrottlingError".into()), Fine]);
        assert!(
            matches!(throttled, Err(CommandError::Store(_))),
            "{throttled:?}"
        );
    }

    #[test]
    fn a_rotation_refused_on_the_sessions_secret_is_a_reuse() {
        use CancelReason::{ConditionFailed, Conflict, None as Fine, Other};
        let failed = || ConditionFailed { existing: None };
        // Given the reasons of the session's update, then the account's check:
        // the secret changed since it was read (another presentation of the same
        // token rotated it first): a reuse, which ends the session;
        assert_eq!(
            rotation_cancelled(&[failed(), Fine]),
            RotationCancelled::Reused
        );
        assert_eq!(
            rotation_cancelled(&[failed(), failed()]),
            RotationCancelled::Reused
        );
        // the account is going: refused, the session left to the erasure;
        assert_eq!(
            rotation_cancelled(&[Fine, failed()]),
            RotationCancelled::Inactive
        );
        // a conflict: nothing was written, try again;
        assert_eq!(
            rotation_cancelled(&[Conflict, Fine]),
            RotationCancelled::Conflict
        );
        // a backend's own code says nothing of the token: not a refusal.
        let throttled = [Other("ThrottlingError".into()), Fine];
        assert_eq!(
            rotation_cancelled(&throttled),
            RotationCancelled::Unexpected
        );
    }
}
