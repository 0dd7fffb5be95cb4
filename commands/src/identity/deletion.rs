//! Asking for the account's deletion, proved by the current password: the profile
//! marked, identity's erasure tombstone laid, every session ended; and whether that was
//! asked.

use super::IdentityCommands;
use super::profile::{AccountStatus, Profile, profile_key};
use crate::CommandError;
use crate::idempotency;
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::event_action;
use events_schema::events::identity::AccountDeletionRequested;
use events_schema::ids::UserId;
use events_schema::time::Timestamp;
use infra::store::{Condition, Key, Update};
use infra::table::Action;
use serde_json::json;

impl IdentityCommands {
    /// Whether `user` asked for their account's deletion (from the request on: the
    /// identity tombstone is written with it). One strongly consistent read.
    pub async fn is_deleted(&self, user: &UserId) -> Result<bool, CommandError> {
        Ok(self.table.get(&Key::tombstone(user), true).await?.is_some())
    }

    /// Records the request to delete the account (the drain comes later), proved by the
    /// current password (a wrong one: `InvalidCredentials`, nothing written). Login is
    /// refused from now on; asking again publishes nothing new.
    pub async fn request_deletion(
        &self,
        meta: &CommandMeta,
        current_password: &str,
    ) -> Result<Outcome<()>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        let proved = self.proved_by(&meta.user, current_password).await?;
        optimistic::run!({
            let current = self.profile(&meta.user).await?;
            if current.password_hash != proved.password_hash {
                return Err(CommandError::InvalidCredentials);
            }
            if current.status == AccountStatus::DeletionRequested {
                return Ok(Attempt::Done(Outcome::replayed(())));
            }
            let event = self.event_now(
                meta,
                &AccountDeletionRequested {
                    email: current.email.clone(),
                },
            )?;
            let (marked, tombstone) = deletion_request(&current, self.clock.now());
            let mut actions = vec![marked, event_action(&meta.user_pk(), &event)?, tombstone];
            actions.extend(self.end_every_session(&meta.user).await?);
            optimistic::settled(
                idempotency::commit(
                    &self.table,
                    meta,
                    &meta.user_pk(),
                    &json!("delete"),
                    actions,
                    (),
                )
                .await?,
            )
        })
    }
}

/// A new erasure tombstone for `user`: `status` `erasing`, no context drained yet.
fn erasure_tombstone(user: &UserId, now: Timestamp) -> infra::store::Item {
    let key = Key::tombstone(user);
    let mut item = key.to_item();
    item.insert("status".into(), json!("erasing"));
    item.insert("requested_at".into(), json!(now));
    item
}

/// What asking to delete `current`'s account writes (event and sessions aside): the
/// profile marked, if still at the version read and with the password read (the one the
/// request was proved with), and identity's tombstone: from then on no command writes
/// the user's identity items, and the erasure's progress is recorded there (no personal
/// data, only which contexts are done).
fn deletion_request(current: &Profile, now: Timestamp) -> (Action, Action) {
    let marked = Action::Update {
        key: profile_key(&current.user_id),
        update: Update::default()
            .set("status", json!(AccountStatus::DeletionRequested))
            .set("version", current.version + 1),
        condition: Some(Condition::All(vec![
            Condition::VersionEquals(current.version),
            current.still_has_password(),
        ])),
    };
    let tombstone = Action::Put {
        item: erasure_tombstone(&current.user_id, now),
        condition: None,
    };
    (marked, tombstone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::profile::fixtures::profile;

    #[test]
    fn a_deletion_request_marks_the_profile_and_lays_the_tombstone() {
        // Given Ana's active profile at version 2,
        let user = UserId::generate();
        let current = profile(&user, "ana@example.com", 2);
        // when she asks to delete her account,
        let now = Timestamp::now();
        let (marked, tombstone) = deletion_request(&current, now);
        // then the profile is marked if still at version 2, with the password she proved
        // the request with,
        match marked {
            Action::Update {
                key,
                update,
                condition,
            } => {
                assert_eq!(key, profile_key(&user));
                assert_eq!(
                    update.set["status"],
                    json!(AccountStatus::DeletionRequested)
                );
                assert_eq!(update.set["version"], json!(3));
                let proved =
                    Condition::AttributeEquals("password_hash".into(), json!("argon2-hash"));
                let unchanged = Condition::All(vec![Condition::VersionEquals(2), proved]);
                assert_eq!(condition, Some(unchanged));
            }
            other => panic!("not an update: {other:?}"),
        }
        // and the tombstone goes under the erasure key, holding no email or name.
        match tombstone {
            Action::Put { item, condition } => {
                assert_eq!(Key::of(&item).expect("key"), Key::tombstone(&user));
                let text = serde_json::to_string(&item).expect("json");
                assert!(
                    !text.contains("ana@example.com") && !text.contains("Ana"),
                    "{text}"
                );
                assert_eq!(condition, None);
            }
            other => panic!("not a put: {other:?}"),
        }
    }
}
