//! Changing the profile (display name, timezone, units) and moving the account to
//! another email: the checks, what each change writes over the profile read, and what a
//! cancelled email change means.

use super::IdentityCommands;
use super::profile::{CREDENTIAL_GENERATION, Profile, email_key, profile_key, reservation};
use super::sessions::latest_session_is;
use crate::idempotency::{self, Committed};
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::event_action;
use crate::{CommandError, validate};
use events_schema::envelope::EventEnvelope;
use events_schema::events::identity::{EmailChanged, ProfileState, ProfileUpdated, Units};
use events_schema::ids::UserId;
use events_schema::keys::PartitionKey;
use infra::store::{CancelReason, Condition, Key, Query, SortKeyCondition, Update};
use infra::table::Action;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UpdateProfile {
    pub display_name: Option<String>,
    pub timezone: Option<String>,
    pub units: Option<Units>,
}

impl UpdateProfile {
    /// Checks the change without writing anything: a caller that makes it together with
    /// another (an email change) checks both before writing either.
    pub fn check(&self) -> Result<(), CommandError> {
        self.checked_display_name().map(drop)
    }

    /// The display name as stored (trimmed), after checking every field.
    fn checked_display_name(&self) -> Result<Option<String>, CommandError> {
        let display_name = self
            .display_name
            .as_deref()
            .map(|n| validate::text("display_name", n, 1, 80))
            .transpose()?;
        if let Some(tz) = &self.timezone {
            validate::timezone("timezone", tz)?;
        }
        Ok(display_name)
    }
}

impl IdentityCommands {
    /// Moves the account to a new email, proved by the current password (a wrong one:
    /// `InvalidCredentials`, nothing written): the old reservation is released and the
    /// new one taken in the same transaction as the profile change, which ends every
    /// session and every access token issued before it.
    pub async fn change_email(
        &self,
        meta: &CommandMeta,
        new_email: &str,
        current_password: &str,
    ) -> Result<Outcome<ProfileState>, CommandError> {
        let new_email = validate::email("email", new_email)?;
        let _writer = self.writers.user(&meta.user).await;
        let proved = self.proved_by(&meta.user, current_password).await?;
        optimistic::run!({
            let current = self.profile(&meta.user).await?;
            if current.password_hash != proved.password_hash {
                // The password changed since it was checked: the one given is not the
                // account's any more.
                return Err(CommandError::InvalidCredentials);
            }
            if current.email == new_email {
                return Ok(Attempt::Done(Outcome::replayed(current.state())));
            }
            // The sign-up's request records live under the old email: they go with it.
            let records = self
                .registration_records(&current.email, &meta.user)
                .await?;
            let next = Profile {
                email: new_email.clone(),
                email_pk: new_email.clone(),
                version: current.version + 1,
                ..current.clone()
            };
            let event = self.event_now(
                meta,
                &EmailChanged {
                    old_email: current.email.clone(),
                    profile: next.state(),
                },
            )?;
            let mut actions = email_change(&meta.user, &current, &next, &event, records)?;
            // A new email ends every session: whoever signs in again signs in to it.
            actions.extend(self.end_every_session(&meta.user).await?);
            match idempotency::commit(
                &self.table,
                meta,
                &meta.user_pk(),
                &json!({"email": new_email}),
                actions,
                next.state(),
            )
            .await?
            {
                Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
                Committed::Cancelled(reasons) => email_change_cancelled(&reasons),
            }
        })
    }

    /// The registration request records of `user` kept under `email`'s partition.
    async fn registration_records(
        &self,
        email: &str,
        user: &UserId,
    ) -> Result<Vec<Key>, CommandError> {
        let query = Query::partition(email_key(email).pk)
            .sort_key(SortKeyCondition::BeginsWith("IDEMPOTENCY#".into()))
            .consistent();
        let page = self.table.query(&query).await?;
        Ok(page
            .items
            .iter()
            .filter(|record| record.get("response") == Some(&json!(user)))
            .filter_map(|record| Key::of(record).ok())
            .collect())
    }

    /// Changes display name, timezone or units; no event when nothing changes.
    pub async fn update_profile(
        &self,
        meta: &CommandMeta,
        input: UpdateProfile,
    ) -> Result<Outcome<ProfileState>, CommandError> {
        let display_name = input.checked_display_name()?;
        let _writer = self.writers.user(&meta.user).await;
        optimistic::run!({
            let current = self.profile(&meta.user).await?;
            let Some((update, next)) = profile_update(&current, display_name.clone(), &input)
            else {
                return Ok(Attempt::Done(Outcome::replayed(current.state())));
            };
            let event = self.event_now(
                meta,
                &ProfileUpdated {
                    profile: next.state(),
                },
            )?;
            let actions = vec![update, event_action(&meta.user_pk(), &event)?];
            optimistic::settled(
                idempotency::commit(
                    &self.table,
                    meta,
                    &meta.user_pk(),
                    &input,
                    actions,
                    next.state(),
                )
                .await?,
            )
        })
    }
}

/// The profile `input` makes of `current` (`display_name` already checked) and its
/// write, if still at the version read; None when nothing changes.
fn profile_update(
    current: &Profile,
    display_name: Option<String>,
    input: &UpdateProfile,
) -> Option<(Action, Profile)> {
    let mut next = current.clone();
    next.display_name = display_name.unwrap_or(next.display_name);
    next.timezone = input.timezone.clone().unwrap_or(next.timezone);
    next.units = input.units.unwrap_or(next.units);
    if &next == current {
        return None;
    }
    next.version += 1;
    let update = Action::Update {
        key: profile_key(&current.user_id),
        update: Update::default()
            .set("display_name", next.display_name.clone())
            .set("timezone", next.timezone.clone())
            .set("units", json!(next.units))
            .set("version", next.version),
        condition: Some(Condition::VersionEquals(current.version)),
    };
    Some((update, next))
}

/// What moving `current`'s account to `next`'s email writes (sessions aside): the profile
/// if still at the version read and with the password read (the one the change was
/// proved with), its credentials a generation on (every access token issued before
/// ends), the old email's reservation released if still this user's, the new one taken
/// (the third action: its failure with the profile as read means the email is taken),
/// the event, and the sign-up's request records under the old email deleted.
fn email_change(
    user: &UserId,
    current: &Profile,
    next: &Profile,
    event: &EventEnvelope,
    records: Vec<Key>,
) -> Result<Vec<Action>, CommandError> {
    let mut actions = vec![
        Action::Update {
            key: profile_key(user),
            update: Update::default()
                .set("email", next.email.clone())
                .set("email_pk", next.email.clone())
                .set("version", next.version)
                .add(CREDENTIAL_GENERATION, 1),
            // No session may start meanwhile: this ends every session read.
            condition: Some(Condition::All(vec![
                Condition::VersionEquals(current.version),
                latest_session_is(current),
                current.still_has_password(),
            ])),
        },
        Action::Delete {
            key: email_key(&current.email),
            condition: Some(Condition::AttributeEquals("user_id".into(), json!(user))),
        },
        reservation(&next.email, user)?,
        event_action(&PartitionKey::User(user.clone()).to_string(), event)?,
    ];
    actions.extend(records.into_iter().map(|key| Action::Delete {
        key,
        condition: None,
    }));
    Ok(actions)
}

/// What a cancelled email change (laid out by [`email_change`]) means.
fn email_change_cancelled<T>(reasons: &[CancelReason]) -> Result<Attempt<T>, CommandError> {
    match reasons {
        // The profile changed since it was read, or another transaction was writing it
        // (a conflict): read it again. Its new email's reservation may have failed too,
        // and still not be someone else's: another process may have moved this account
        // to the same email first, which the re-read finds done.
        [
            CancelReason::ConditionFailed { .. } | CancelReason::Conflict,
            ..,
        ] => Ok(Attempt::LostRace),
        // The profile was as read, the new email's reservation was not: someone else
        // has the email.
        [
            CancelReason::None,
            _,
            CancelReason::ConditionFailed { .. },
            ..,
        ] => Err(CommandError::EmailTaken),
        // The transaction met another on an item (the key's record, say): nothing was
        // written, try again.
        other if other.contains(&CancelReason::Conflict) => Ok(Attempt::LostRace),
        other => Err(idempotency::unexpected(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::profile::fixtures::profile;
    use events_schema::time::Timestamp;

    #[test]
    fn an_email_change_moves_the_reservation_with_the_profile() {
        // Given Ana's profile at version 3 under ana@old.example,
        let user = UserId::generate();
        let current = profile(&user, "ana@old.example", 3);
        // when she moves to ana@new.example (one sign-up record under the old email),
        let next = Profile {
            email: "ana@new.example".into(),
            email_pk: "ana@new.example".into(),
            version: 4,
            ..current.clone()
        };
        let event = EventEnvelope::new(
            Some(user.clone()),
            Timestamp::now(),
            &EmailChanged {
                old_email: current.email.clone(),
                profile: next.state(),
            },
        )
        .expect("event");
        let record = Key::new("EMAIL#ana@old.example", "REQ#sign-up");
        let actions =
            email_change(&user, &current, &next, &event, vec![record.clone()]).expect("decide");
        // then the profile changes if still at version 3,
        assert_eq!(actions.len(), 5);
        match &actions[0] {
            Action::Update {
                key,
                update,
                condition,
            } => {
                assert_eq!(key, &profile_key(&user));
                assert_eq!(update.set["email"], json!("ana@new.example"));
                assert_eq!(update.set["email_pk"], json!("ana@new.example"));
                assert_eq!(update.set["version"], json!(4));
                // her credentials a generation on: every access token issued before ends;
                assert_eq!(update.add, vec![(CREDENTIAL_GENERATION.to_owned(), 1)]);
                // and no session started since the read (S1 the latest): it ends them; and
                // the password is still the one she proved the change with.
                let latest = Condition::AttributeEquals("latest_session".into(), json!("S1"));
                let proved =
                    Condition::AttributeEquals("password_hash".into(), json!("argon2-hash"));
                let unchanged = Condition::All(vec![Condition::VersionEquals(3), latest, proved]);
                assert_eq!(condition, &Some(unchanged));
            }
            other => panic!("not an update: {other:?}"),
        }
        // the old reservation goes only if it is still hers,
        match &actions[1] {
            Action::Delete { key, condition } => {
                assert_eq!(key, &email_key("ana@old.example"));
                assert_eq!(
                    condition,
                    &Some(Condition::AttributeEquals("user_id".into(), json!(user)))
                );
            }
            other => panic!("not a delete: {other:?}"),
        }
        // the new one is taken only if free (third: its failure alone: "email taken"),
        assert_eq!(
            actions[2],
            reservation("ana@new.example", &user).expect("reservation")
        );
        // the event is published, and the sign-up's record goes with the old email.
        assert!(matches!(&actions[3], Action::Put { .. }));
        assert_eq!(
            actions[4],
            Action::Delete {
                key: record,
                condition: None
            }
        );
    }

    #[test]
    fn a_cancelled_email_change_reads_again_unless_only_the_new_email_was_refused() {
        use CancelReason::{ConditionFailed, Conflict, None as Fine};
        let failed = || ConditionFailed { existing: None };
        let verdict = |reasons: Vec<CancelReason>| match email_change_cancelled::<()>(&reasons) {
            Ok(Attempt::LostRace) => "read again",
            Ok(Attempt::Done(())) => unreachable!("a cancellation is never done"),
            Err(CommandError::EmailTaken) => "email taken",
            Err(_) => "error",
        };
        // Given the reasons of profile, old reservation, new reservation, event, then
        // the sign-up records and sessions (and a conflict `commit` met at the key's
        // record or the erasure check, appended last):
        // the new email refused while the profile was as read: someone else has it,
        // whatever met the key's record;
        assert_eq!(
            verdict(vec![Fine, Fine, failed(), Fine, Fine]),
            "email taken"
        );
        assert_eq!(
            verdict(vec![Fine, Fine, failed(), Fine, Conflict]),
            "email taken"
        );
        // the profile moved on, or was being written, whatever else failed with it
        // (another process may have moved the account to this very email): read again;
        assert_eq!(
            verdict(vec![failed(), failed(), failed(), Fine]),
            "read again"
        );
        assert_eq!(verdict(vec![Conflict, Fine, failed(), Fine]), "read again");
        assert_eq!(verdict(vec![failed(), Fine, Fine, Fine]), "read again");
        // a conflict anywhere (the key's record, say): read again;
        assert_eq!(
            verdict(vec![Fine, Fine, Fine, Fine, Conflict]),
            "read again"
        );
        // the old reservation alone refused is not a state a read explains.
        assert_eq!(verdict(vec![Fine, failed(), Fine, Fine]), "error");
    }

    #[test]
    fn a_profile_update_writes_only_what_changes_the_profile() {
        let user = UserId::generate();
        let current = profile(&user, "ana@example.com", 5);
        // Given a profile in Paris, metric, at version 5: moving it to Lisbon
        let input = UpdateProfile {
            display_name: None,
            timezone: Some("Europe/Lisbon".into()),
            units: None,
        };
        let (update, next) = profile_update(&current, None, &input).expect("a change");
        // makes version 6 with the new timezone, written if still at version 5;
        assert_eq!((next.timezone.as_str(), next.version), ("Europe/Lisbon", 6));
        assert_eq!(next.display_name, current.display_name);
        match update {
            Action::Update {
                key,
                update,
                condition,
            } => {
                assert_eq!(key, profile_key(&user));
                assert_eq!(update.set["timezone"], json!("Europe/Lisbon"));
                assert_eq!(update.set["version"], json!(6));
                assert_eq!(condition, Some(Condition::VersionEquals(5)));
            }
            other => panic!("not an update: {other:?}"),
        }
        // asking for what it already is writes nothing.
        let same = UpdateProfile {
            display_name: Some("Ana".into()),
            timezone: Some("Europe/Paris".into()),
            units: Some(Units::Metric),
        };
        assert!(profile_update(&current, Some("Ana".into()), &same).is_none());
    }
}
