//! Rebuilding every projection from scratch with `replay` gives exactly the rows the
//! live pipeline built. A generated workload runs on an embedded store with no
//! projectors; its items (commands' state and outbox events only) are copied to a second
//! store; then the live pipeline projects the first from its change log while `replay`
//! rebuilds the second from the outbox events alone, and both stores are compared item
//! by item, every table. The second store is embedded, or DynamoDB on the emulator.

use events_schema::Context;
use infra::Store;
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use infra::embedded::EmbeddedStore;
use infra::feed::embedded::EmbeddedFeed;
use infra::store::{Item, TransactAction};
use projectors::pipeline::Pipeline;
use projectors::replay::{BATCH_EVENTS, Mode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vitals_tests::backends::dynamodb_endpoint;
use vitals_tests::pipeline::replay_all;
use vitals_tests::snapshot::{Snapshot, snapshot};
use vitals_tests::workload;

/// `GoalProgressed` events notify each change of a progress row as it was observed, and
/// a goal's `progress_rev` counts the recomputes its progress went through, so both
/// depend on the order events were seen in (see the fixture harness): they are left
/// out; the progress rows and the rest of the goal items are compared.
fn comparable(snapshot: Snapshot) -> Snapshot {
    snapshot
        .into_iter()
        .filter(|(_, item)| {
            item.get("envelope")
                .and_then(|e| e.get("event_type"))
                .and_then(Value::as_str)
                != Some("GoalProgressed")
        })
        .map(|(key, mut item)| {
            item.remove("progress_rev");
            (key, item)
        })
        .collect()
}

async fn copy(from: &Snapshot, to: &dyn Store) {
    let mut by_table: BTreeMap<Context, Vec<Item>> = BTreeMap::new();
    for ((table, _, _), item) in from {
        by_table.entry(*table).or_default().push(item.clone());
    }
    for (table, items) in by_table {
        for chunk in items.chunks(25) {
            let actions = chunk
                .iter()
                .map(|item| TransactAction::Put {
                    table,
                    item: item.clone(),
                    condition: None,
                })
                .collect();
            to.transact(actions).await.expect("copy");
        }
    }
}

async fn rebuild_matches_live(replica: Arc<dyn Store>, users: usize, mode: Mode) {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let live_store: Arc<dyn Store> = live.clone();
    let started = Instant::now();
    let users = workload::generate(live_store.clone(), users, 8).await;
    eprintln!("workload: {:?}", started.elapsed());
    let commanded = snapshot(&*live_store).await;
    assert!(
        commanded.len() > users.len() * 20,
        "the workload wrote {} items",
        commanded.len()
    );
    copy(&commanded, &*replica).await;

    let pipeline = Pipeline::start(
        live_store.clone(),
        Arc::new(EmbeddedFeed::new(live.clone())),
        projectors::registry::all(live_store.clone()),
    );
    // Small batches: a user's events span several. The replay's calls are recorded
    // against the declared access patterns.
    let recorded =
        vitals_tests::access::recording(replica.clone(), vitals_tests::access::catalog());
    let replayed = replay_all(recorded.clone(), 512, mode)
        .await
        .expect("replay");
    vitals_tests::access::finish(&recorded, "replay");
    assert_eq!(replayed.rejected, 0);
    eprintln!("replay done: {:?}", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut settled = 0;
    while settled < 2 {
        settled = if pipeline.caught_up().await.expect("lag") {
            settled + 1
        } else {
            0
        };
        assert!(
            Instant::now() < deadline,
            "the live pipeline did not catch up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pipeline.stop().await;
    eprintln!("live caught up: {:?}", started.elapsed());

    let live_rows = comparable(snapshot(&*live_store).await);
    let rebuilt = comparable(snapshot(&*replica).await);
    assert!(
        live_rows.len() > comparable(commanded).len(),
        "the projections wrote rows"
    );
    assert!(
        live_rows
            .keys()
            .any(|(_, _, sk)| sk.starts_with("PROGRESS#")),
        "the goals have progress to compare"
    );
    let only_live: Vec<_> = live_rows
        .keys()
        .filter(|k| !rebuilt.contains_key(*k))
        .collect();
    let only_rebuilt: Vec<_> = rebuilt
        .keys()
        .filter(|k| !live_rows.contains_key(*k))
        .collect();
    assert!(only_live.is_empty(), "rows only live built: {only_live:#?}");
    assert!(
        only_rebuilt.is_empty(),
        "rows only the replay built: {only_rebuilt:#?}"
    );
    for (key, row) in &live_rows {
        assert_eq!(Some(row), rebuilt.get(key), "{key:?} differs");
    }
    eprintln!(
        "{} users, {} events replayed ({} applications), {} rows compared",
        users.len(),
        replayed.events,
        replayed.applications,
        live_rows.len()
    );
    live.close();
}

/// Builds the rows live and again by `mode` on a fresh embedded replica, and compares.
async fn on_embedded(mode: Mode) {
    let dir = tempfile::tempdir().expect("tempdir");
    let replica = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    rebuild_matches_live(replica.clone(), 200, mode).await;
    replica.close();
}

/// The same on DynamoDB, with tables of its own: the comparison reads them whole.
async fn on_dynamodb(mode: Mode) {
    let settings = AwsSettings {
        endpoint_url: Some(dynamodb_endpoint()),
        ..AwsSettings::default()
    };
    let prefix = format!("r{}-", ulid::Ulid::new().to_string().to_lowercase());
    let replica = DynamoStore::connect(&settings, &prefix).await;
    replica.bootstrap().await.expect("tables");
    rebuild_matches_live(Arc::new(replica), 20, mode).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replay_on_embedded_rebuilds_exactly_the_live_rows() {
    on_embedded(Mode::Incremental).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rebuild_folded_in_memory_on_embedded_writes_exactly_the_live_rows() {
    on_embedded(Mode::Rebuild).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replay_on_dynamodb_rebuilds_exactly_the_live_rows() {
    on_dynamodb(Mode::Incremental).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rebuild_folded_in_memory_on_dynamodb_writes_exactly_the_live_rows() {
    on_dynamodb(Mode::Rebuild).await;
}

/// Stops the replay (by aborting its task) once `after` batches are applied.
struct StopAfter {
    after: u64,
    batches: std::sync::atomic::AtomicU64,
    events: std::sync::atomic::AtomicU64,
    stop: tokio::sync::mpsc::UnboundedSender<()>,
}

impl projectors::replay::Progress for StopAfter {
    fn total(&self, _: u64) {}
    fn advance(&self, events: u64) {
        use std::sync::atomic::Ordering::SeqCst;
        self.events.fetch_add(events, SeqCst);
        if self.batches.fetch_add(1, SeqCst) + 1 == self.after {
            let _ = self.stop.send(());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interrupted_replay_resumes_where_it_stopped() {
    let stores = two_copies_of_a_workload().await;
    let (interrupted, whole): (Arc<dyn Store>, Arc<dyn Store>) =
        (stores[0].1.clone(), stores[1].1.clone());

    // Interrupted after two batches of 50 events...
    let subscriptions = projectors::registry::projections(interrupted.clone());
    let first_run = interrupt(&interrupted, subscriptions, 2).await;
    // ...then run again: it resumes from its checkpoint instead of starting over (its
    // calls recorded against the declared access patterns).
    let recorded =
        vitals_tests::access::recording(interrupted.clone(), vitals_tests::access::catalog());
    let resumed = replay_all(recorded.clone(), 50, Mode::Incremental)
        .await
        .expect("resumed replay");
    vitals_tests::access::finish(&recorded, "replay");
    let full = replay_all(whole.clone(), BATCH_EVENTS, Mode::Incremental)
        .await
        .expect("whole replay");
    assert!(
        first_run > 0,
        "the first run applied events before it was stopped"
    );
    assert!(
        resumed.events < full.events && resumed.events + first_run >= full.events,
        "resumed {} + first {first_run} events, of {}",
        resumed.events,
        full.events
    );
    // Interrupted-and-resumed and uninterrupted replays leave the same rows, and no
    // checkpoint behind.
    let (a, b) = (
        comparable(snapshot(&*interrupted).await),
        comparable(snapshot(&*whole).await),
    );
    assert!(
        a.keys().all(|(_, pk, _)| !pk.starts_with("REPLAY#")),
        "checkpoints cleared"
    );
    assert_eq!(a.len(), b.len());
    for (key, row) in &a {
        assert_eq!(Some(row), b.get(key), "{key:?} differs");
    }
    for (_, store) in &stores {
        store.close();
    }
}

/// `vitals replay <one subscription>` interrupted leaves that subscription's checkpoint;
/// a later replay of all must not read it as the checkpoint of the whole group that
/// subscription shares a source with (the others would then miss the events before it):
/// it leaves the rows a replay from scratch leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_single_subscriptions_interrupted_replay_does_not_steer_a_replay_of_all() {
    let stores = two_copies_of_a_workload().await;
    let (steered, whole): (Arc<dyn Store>, Arc<dyn Store>) =
        (stores[0].1.clone(), stores[1].1.clone());
    let incremental = projectors::replay::Mode::Incremental;

    // The first of nutrition's consumers (the one whose checkpoint a group would read),
    // replayed alone and stopped after one batch.
    let all = projectors::registry::projections(steered.clone());
    let first_consumer = all
        .iter()
        .find(|p| p.source() == Context::Nutrition && p.target() != Context::Nutrition)
        .expect("a consumer of nutrition")
        .clone();
    // Two batches: the first one's checkpoint is written whole before the stop.
    interrupt(&steered, vec![first_consumer], 2).await;
    let steering = snapshot(&*steered).await;
    assert!(
        steering.keys().any(|(_, pk, _)| pk.starts_with("REPLAY#")),
        "the interrupted replay left its checkpoint"
    );

    // Then every subscription, on that store and on a copy that never saw the above.
    for store in [&steered, &whole] {
        replay_all(store.clone(), 50, incremental)
            .await
            .expect("replay of all");
    }
    let (a, b) = (
        comparable(snapshot(&*steered).await),
        comparable(snapshot(&*whole).await),
    );
    for (key, row) in &b {
        assert_eq!(a.get(key), Some(row), "{key:?} differs");
    }
    assert_eq!(a.len(), b.len());
    for (_, store) in &stores {
        store.close();
    }
}

/// A workload's commanded items (no projections), copied into two fresh embedded stores.
async fn two_copies_of_a_workload() -> Vec<(tempfile::TempDir, Arc<EmbeddedStore>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let source_store: Arc<dyn Store> = source.clone();
    workload::generate(source_store.clone(), 30, 8).await;
    let commanded = snapshot(&*source_store).await;
    source.close();
    let mut stores = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
        copy(&commanded, &*store).await;
        stores.push((dir, store));
    }
    stores
}

/// Replays `subscriptions` on `store` in batches of 50 events and stops it after
/// `batches` of them (waiting until it has stopped); the events it applied.
async fn interrupt(
    store: &Arc<dyn Store>,
    subscriptions: Vec<Arc<dyn projectors::projector::Projector>>,
    batches: u64,
) -> u64 {
    let (stop, mut stopped) = tokio::sync::mpsc::unbounded_channel();
    let progress = Arc::new(StopAfter {
        after: batches,
        batches: Default::default(),
        events: Default::default(),
        stop,
    });
    let mut task = {
        let (store, progress) = (store.clone(), progress.clone());
        tokio::spawn(async move {
            let incremental = projectors::replay::Mode::Incremental;
            projectors::replay::replay_with(
                store,
                &subscriptions,
                None,
                &*progress,
                50,
                incremental,
            )
            .await
        })
    };
    tokio::select! {
        _ = stopped.recv() => {
            task.abort();
            // Wait for the abort to take effect before replaying on the same store.
            let _ = (&mut task).await;
        }
        done = &mut task => panic!("the replay ended before it was interrupted: {done:?}"),
    }
    progress.events.load(std::sync::atomic::Ordering::SeqCst)
}
