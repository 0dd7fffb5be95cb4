//! A replay's checkpoints: where each subscription of a run stopped
//! (`REPLAY#<subscription>` in its target table), saved after every batch and removed
//! when the replay finishes.

use super::run::Run;
use crate::convert::{item_of, row_of};
use crate::projector::Projector;
use events_schema::ids::UserId;
use infra::StoreError;
use infra::store::{Cursor, Key};
use serde::{Deserialize, Serialize};

/// A replay checkpoint as stored, one per subscription of the group (`REPLAY#<name>`):
/// the cursor is `null` rather than absent before the first page.
#[derive(Debug, Default, Serialize, Deserialize)]
struct StoredCheckpoint {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    done: bool,
}

pub(super) struct Checkpoint {
    pub(super) cursor: Option<Cursor>,
    pub(super) done: bool,
}

impl Run {
    fn checkpoint_key(subscription: &dyn Projector, user: Option<&UserId>) -> Key {
        // A user's replay is named by the digest of their id, so a checkpoint left by an
        // interrupted replay holds no user id.
        let scope = user.map_or_else(
            || "all".to_owned(),
            |u| format!("user-{}", events_schema::keys::Digest::erasure(u)),
        );
        Key::new(format!("REPLAY#{}", subscription.name()), scope)
    }

    /// Where the group stopped, if every subscription of it stopped at the same place:
    /// a checkpoint that only some hold (left by a replay of one subscription, or an
    /// interrupted save) is no group's, and the group starts from the beginning (its
    /// projections take events again without harm).
    pub(super) async fn checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        let mut agreed: Option<(Option<String>, bool)> = None;
        for subscription in &self.group {
            let key = Self::checkpoint_key(&**subscription, self.user.as_ref());
            let Some(item) = self.store.get(subscription.target(), &key, true).await? else {
                return Ok(None);
            };
            let StoredCheckpoint { cursor, done } = row_of(&item).unwrap_or_default();
            match &agreed {
                Some(first) if *first != (cursor.clone(), done) => return Ok(None),
                _ => agreed = Some((cursor, done)),
            }
        }
        Ok(agreed.map(|(cursor, done)| Checkpoint {
            cursor: cursor.as_deref().map(Cursor::from_text),
            done,
        }))
    }

    pub(super) async fn save_checkpoint(
        &self,
        cursor: Option<&Cursor>,
        done: bool,
    ) -> Result<(), StoreError> {
        for subscription in &self.group {
            let mut item = Self::checkpoint_key(&**subscription, self.user.as_ref()).to_item();
            item.extend(item_of(&StoredCheckpoint {
                cursor: cursor.map(|c| c.as_str().to_owned()),
                done,
            }));
            self.store.put(subscription.target(), item, None).await?;
        }
        Ok(())
    }

    pub(super) async fn clear_checkpoint(&self) -> Result<(), StoreError> {
        for subscription in &self.group {
            let key = Self::checkpoint_key(&**subscription, self.user.as_ref());
            self.store.delete(subscription.target(), &key, None).await?;
        }
        Ok(())
    }
}
