//! Delivers committed events to every subscription, the way a change feed might: in
//! order, every event twice, shuffled, or a batch that fails halfway and comes again;
//! or rebuilds the projections by replay. Events the subscriptions publish while they
//! apply (synced workouts, progress, drained partitions) are delivered the same way,
//! round after round, until nothing new is committed.

use super::capture::CapturingStore;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::time::Clock;
use infra::Store;
use projectors::Projector;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    InOrder,
    EveryEventTwice,
    Shuffled,
    /// The first half of each round is applied, the batch "fails", and the whole round
    /// is delivered again.
    FailedBatchRetried,
    /// The projections are rebuilt by `vitals replay`'s code from the outboxes, then
    /// the erasure subscriptions get the deletion requests.
    Replay,
    /// As `Replay`, in rebuild mode: each batch folded in memory on a buffered view of
    /// the target tables, the final rows written in batches.
    Rebuild,
}

impl Delivery {
    pub const ALL: [Delivery; 6] = [
        Delivery::InOrder,
        Delivery::EveryEventTwice,
        Delivery::Shuffled,
        Delivery::FailedBatchRetried,
        Delivery::Replay,
        Delivery::Rebuild,
    ];

    fn order(self, events: Vec<EventEnvelope>, rng: &mut StdRng) -> Vec<EventEnvelope> {
        match self {
            Delivery::InOrder | Delivery::Replay | Delivery::Rebuild => events,
            Delivery::EveryEventTwice => events.into_iter().flat_map(|e| [e.clone(), e]).collect(),
            Delivery::Shuffled => {
                let mut events = events;
                events.shuffle(rng);
                events
            }
            Delivery::FailedBatchRetried => {
                let mut delivered = events[..events.len() / 2].to_vec();
                delivered.extend(events);
                delivered
            }
        }
    }
}

/// Applies `event` to every subscription of its source; a failure is the system's.
async fn apply(seed: u64, subscriptions: &[Arc<dyn Projector>], event: &EventEnvelope) {
    for subscription in subscriptions.iter().filter(|s| s.source() == event.context) {
        if let Err(error) = subscription.apply(event).await {
            panic!(
                "seed {seed}: {} refused {} {}: {error}",
                subscription.name(),
                event.event_type,
                event.event_id
            );
        }
    }
}

/// Delivers `first` (the events the history committed) and then whatever the
/// subscriptions commit, round after round, in the order `delivery` says, every
/// subscription telling time by `clock` (the one the history's commands ran on);
/// returns the events the subscriptions committed.
pub async fn deliver(
    seed: u64,
    capture: &Arc<CapturingStore>,
    delivery: Delivery,
    first: Vec<EventEnvelope>,
    clock: &Clock,
) -> Vec<EventEnvelope> {
    let mut published = Vec::new();
    let store: Arc<dyn Store> = capture.clone();
    let subscriptions = projectors::registry::all_on(store.clone(), clock);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut round = first;
    if matches!(delivery, Delivery::Replay | Delivery::Rebuild) {
        let mode = match delivery {
            Delivery::Rebuild => projectors::replay::Mode::Rebuild,
            _ => projectors::replay::Mode::Incremental,
        };
        projectors::replay::replay_on(
            store,
            &projectors::registry::projections_on(capture.clone(), clock),
            None,
            &projectors::replay::Quiet,
            // Small batches, so a user's rows folded in one are read back by the next.
            16,
            mode,
            clock,
        )
        .await
        .unwrap_or_else(|e| panic!("seed {seed}: replay: {e}"));
        // What the replay published is in the outboxes it read; the erasure
        // subscriptions (not a read model) get the deletion requests.
        capture.observer().take();
        round.retain(|e| e.context == Context::Identity);
    }
    for _ in 0..64 {
        if round.is_empty() {
            return published;
        }
        for event in delivery.order(round, &mut rng) {
            apply(seed, &subscriptions, &event).await;
        }
        round = capture.observer().take();
        published.extend(round.iter().cloned());
    }
    panic!("seed {seed}: the subscriptions kept publishing for 64 rounds");
}
