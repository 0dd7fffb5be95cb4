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
    /// As the deployed projector functions get them: each function's records of each
    /// stream as Kinesis batches in four lanes by user (the mapping's parallelization
    /// factor), the lanes and functions at once, each batch through the real Lambda
    /// handler applying 8 users at once, a user's several records of a batch folded
    /// (applied in memory, each row written once, conditioned on being as read: the
    /// lanes and functions racing on a user's rows make some folds give up and apply
    /// one at a time); of every three batches, the first is handed back whole at first
    /// (its deadline past) and delivered again from the record it reports, the second
    /// delivered twice (a retry after a partial failure).
    LambdaBatches,
}

impl Delivery {
    pub const ALL: [Delivery; 7] = [
        Delivery::InOrder,
        Delivery::EveryEventTwice,
        Delivery::Shuffled,
        Delivery::FailedBatchRetried,
        Delivery::Replay,
        Delivery::Rebuild,
        Delivery::LambdaBatches,
    ];

    fn order(self, events: Vec<EventEnvelope>, rng: &mut StdRng) -> Vec<EventEnvelope> {
        match self {
            Delivery::InOrder | Delivery::Replay | Delivery::Rebuild | Delivery::LambdaBatches => {
                events
            }
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
    deliver_on(seed, capture, capture.clone(), delivery, first, clock).await
}

/// As [`deliver`], the subscriptions calling `store` (`capture` seen through a wrapper,
/// such as a recording of their calls).
pub async fn deliver_on(
    seed: u64,
    capture: &Arc<CapturingStore>,
    store: Arc<dyn Store>,
    delivery: Delivery,
    first: Vec<EventEnvelope>,
    clock: &Clock,
) -> Vec<EventEnvelope> {
    let mut published = Vec::new();
    // Each subscription held to the rows it declares it writes.
    let subscriptions = crate::fixtures::held_to_declared_writes(&store, clock);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut round = first;
    if matches!(delivery, Delivery::Replay | Delivery::Rebuild) {
        let mode = match delivery {
            Delivery::Rebuild => projectors::replay::Mode::Rebuild,
            _ => projectors::replay::Mode::Incremental,
        };
        projectors::replay::replay_on(
            store.clone(),
            &projectors::registry::projections_on(store.clone(), clock),
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
        if delivery == Delivery::LambdaBatches {
            lambda_batches(seed, &store, &subscriptions, round, clock).await;
        } else {
            for event in delivery.order(round, &mut rng) {
                apply(seed, &subscriptions, &event).await;
            }
        }
        round = capture.observer().take();
        published.extend(round.iter().cloned());
    }
    panic!("seed {seed}: the subscriptions kept publishing for 64 rounds");
}

/// The tables' prefix in the Kinesis records the Lambda batches carry.
const PREFIX: &str = "model-";
/// Records a batch of [`Delivery::LambdaBatches`] (100 as deployed; fewer, so the
/// short histories make several batches a lane).
const BATCH: usize = 6;

/// `events` as the deployed projector functions get them (see
/// [`Delivery::LambdaBatches`]); a dead letter, or a batch failing twice, is the
/// system's failure.
async fn lambda_batches(
    seed: u64,
    store: &Arc<dyn Store>,
    subscriptions: &[Arc<dyn Projector>],
    events: Vec<EventEnvelope>,
    clock: &Clock,
) {
    use projectors::lambda::{Delivery as Lambda, fan_out_with};
    use projectors::runtime::Handler;
    let dead_letters = infra::dlq::DeadLetterStore::Tables(store.clone());
    let folding = projectors::fold::Folding::new(store.clone(), clock.clone());
    let mut lanes = Vec::new();
    for target in Context::ALL {
        for source in Context::ALL {
            let handlers: Vec<Handler> = subscriptions
                .iter()
                .filter(|s| s.target() == target && s.source() == source)
                .map(|s| Handler::new(s.clone(), dead_letters.queue_for(target)))
                .collect();
            if handlers.is_empty() {
                continue;
            }
            let mut by_lane: Vec<Vec<aws_lambda_events::event::kinesis::KinesisEventRecord>> =
                vec![Vec::new(); 4];
            for (n, event) in events.iter().filter(|e| e.context == source).enumerate() {
                let record = crate::kinesis_batches::record_of(
                    &change_of(event),
                    PREFIX,
                    n as u64 + 1,
                    1.0e9,
                )
                .unwrap_or_else(|e| panic!("seed {seed}: a Kinesis record: {e}"));
                let lane = event.user_id.as_ref().map_or(0, |u| {
                    u.to_string().bytes().map(usize::from).sum::<usize>() % 4
                });
                by_lane[lane].push(record);
            }
            for records in by_lane.into_iter().filter(|r| !r.is_empty()) {
                let handlers = handlers.clone();
                let folding = folding.clone();
                lanes.push(async move {
                    // Small batches, so a lane of a short history has several.
                    for (n, chunk) in records.chunks(BATCH).enumerate() {
                        let batch = crate::kinesis_batches::batch(chunk.to_vec());
                        let concurrent = Lambda {
                            concurrency: 8,
                            fold: Some(folding.clone()),
                            ..Default::default()
                        };
                        let past = Lambda {
                            deadline: Some(std::time::Instant::now()),
                            ..concurrent.clone()
                        };
                        let first = if n % 3 == 0 { &past } else { &concurrent };
                        let mut response = fan_out_with(&handlers, source, &batch, PREFIX, first).await;
                        if n % 3 == 0 {
                            assert!(
                                !response.batch_item_failures.is_empty(),
                                "seed {seed}: a batch past its deadline was not handed back"
                            );
                        }
                        if n % 3 == 1 {
                            response = fan_out_with(&handlers, source, &batch, PREFIX, &concurrent).await;
                        }
                        if let Some(failed) = response.batch_item_failures.first() {
                            let from = chunk
                                .iter()
                                .position(|r| Some(&r.kinesis.sequence_number) == failed.item_identifier.as_ref())
                                .unwrap_or_else(|| panic!("seed {seed}: a reported record not in its batch"));
                            let again = crate::kinesis_batches::batch(chunk[from..].to_vec());
                            let retried = fan_out_with(&handlers, source, &again, PREFIX, &concurrent).await;
                            assert!(
                                retried.batch_item_failures.is_empty(),
                                "seed {seed}: {target} projector's batch of {source} failed again: {retried:?}"
                            );
                        }
                    }
                    for handler in &handlers {
                        let letters = handler
                            .metrics()
                            .dead_lettered
                            .load(std::sync::atomic::Ordering::Relaxed);
                        assert_eq!(letters, 0, "seed {seed}: {} dead-lettered", handler.projector().name());
                    }
                });
            }
        }
    }
    futures_util::future::join_all(lanes).await;
    if std::env::var_os("VITALS_MODEL_FOLDS").is_some() {
        let tally = folding.tally();
        eprintln!(
            "seed {seed}: folds applied {:?}, abandoned {:?}",
            tally.applied, tally.abandoned
        );
    }
}

/// The outbox change that carried `event` (the change feed's record of it).
fn change_of(event: &EventEnvelope) -> infra::feed::FeedRecord {
    let pk = event
        .user_id
        .as_ref()
        .map_or_else(|| "SYSTEM".to_owned(), |u| format!("USER#{u}"));
    let item = events_schema::envelope::outbox_item(&pk, event)
        .unwrap_or_else(|e| panic!("an outbox item of {}: {e}", event.event_id));
    infra::feed::FeedRecord {
        position: event.event_id.to_string(),
        table: event.context,
        pk,
        sk: item
            .get("sk")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        old_image: None,
        new_image: Some(item),
        fault: None,
    }
}
