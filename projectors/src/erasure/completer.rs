//! [`Completer`]: identity's end of the erasure chain, ticking off drained contexts on
//! the account's tombstone and completing the erasure once every link is done.

use super::chain::{ERASURE_CHAIN, LAST, completer_name};
use crate::convert::attr_of;
use crate::projector::{ProjectionError, Projector, Subscription};
use async_trait::async_trait;
use commands::erasure;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::events::erasure::PartitionDrained;
use events_schema::ids::UserId;
use infra::StoreError;
use infra::store::Update;
use infra::table::Table;

/// `identity-from-dashboard-erasure`: reads the chain's last `PartitionDrained`, records
/// in identity's tombstone every context it lists as drained, and completes the erasure
/// once every link of [`ERASURE_CHAIN`] is.
pub struct Completer {
    table: Table<infra::table::contexts::Identity>,
}

impl Completer {
    pub fn new(table: Table<infra::table::contexts::Identity>) -> Self {
        Self { table }
    }
}

/// The tombstone attribute recording that `context` is drained.
pub fn drained_attr(context: Context) -> String {
    format!("drained_{context}")
}

#[async_trait]
impl Projector for Completer {
    fn subscription(&self) -> Subscription {
        Subscription {
            name: completer_name(LAST),
            source: LAST,
            target: Context::Identity,
            consumes: crate::projector::event_types![PartitionDrained],
            // The account's tombstone and its email claim, and every row of the
            // user's identity partition, which it deletes (identity is drained last,
            // by it): any kind.
            writes: &["TOMBSTONE", "EMAIL", "*"],
        }
    }

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        if !event.is::<PartitionDrained>() {
            return Ok(());
        }
        let last: PartitionDrained = crate::projector::decode(event)?;
        if last.context != LAST {
            return Ok(());
        }
        let user = event
            .user_id
            .clone()
            .ok_or_else(|| ProjectionError::Decode("drained event without a user".into()))?;
        let ticks = last
            .drained
            .iter()
            .chain([&last.context])
            .fold(Update::default(), |update, c| {
                update.set(drained_attr(*c), true)
            });
        let tombstone = match erasure::mark(&self.table, &user, ticks).await {
            Ok(item) => item,
            // No deletion was requested in identity: nothing to complete.
            Err(StoreError::ConditionFailed { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let all_drained = ERASURE_CHAIN
            .iter()
            .all(|c| attr_of::<bool>(&tombstone, &drained_attr(*c)) == Some(true));
        if all_drained {
            // Email reservation, profile and identity's partition go; the tombstone
            // stays (it names no one) so late events and replays keep finding it.
            erasure::finish_identity(&self.table, &user).await?;
            tracing::info!("account erasure complete");
        } else {
            tracing::warn!(
                drained = ?last.drained,
                "the erasure chain ended with contexts not drained"
            );
        }
        Ok(())
    }
}

/// Whether `user`'s erasure is complete (identity's tombstone says so).
pub async fn is_complete(
    identity: &Table<infra::table::contexts::Identity>,
    user: &UserId,
) -> Result<bool, StoreError> {
    Ok(erasure::status(identity, user).await?.as_deref() == Some("complete"))
}
