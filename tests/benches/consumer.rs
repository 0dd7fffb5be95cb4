//! The deployed projector functions against DynamoDB-like latency: a breakfast spike of
//! logged meals through the real Lambda handler (`projectors::lambda::fan_out_with`, as
//! `vitals` runs it in Lambda), in the batches an event source mapping delivers
//! (`BatchSize` 100, a 1 s batching window, `ParallelizationFactor` 4 as deployed: a
//! record goes to one of four lanes by its partition key, each lane a batch at a time),
//! on an embedded store in RAM behind `infra::slow::SlowStore` (p50 5 ms, p99 15 ms per
//! request; a transaction two).
//!
//! Three measures, each for the four functions reading the nutrition stream (activity,
//! dashboard, goals, insights), "before" (records applied one at a time, as the consumer
//! did) and "after" (64 users at once, a user's several records of a batch folded):
//! - throughput: a backlog of `BENCH_EVENTS` meals (default 2,000) drained; events/s per
//!   shard, store requests and write units per event;
//! - a spike: meals arriving at `BENCH_RATE` a second (default 150, the upper end of 30%
//!   of 100,000 users logging breakfast within ten minutes) for `BENCH_SPIKE_S` seconds
//!   (default 20), the mapping polling the shard once a second (checked against the
//!   shard's 5 `GetRecords` a second shared with the stream's three other mappings by
//!   `infra::feed::shard_limits`); lag from a record's arrival to its batch's end, p50,
//!   p99 and max.
//!
//! - a catch-up: `BENCH_EVENTS` meals by a two-hundredth as many users (about ten of a
//!   user's records in a lane's batch), drained one at a time, 64 users at once, and folded:
//!   store requests and write units per event show what the fold saves.
//!
//! `BENCH_FUNCTIONS` (comma-separated targets) narrows the functions measured.

use aws_lambda_events::event::kinesis::KinesisEventRecord;
use events_schema::Context;
use events_schema::time::Clock;
use hdrhistogram::Histogram;
use infra::Store;
use infra::counting::CountingStore;
use infra::embedded::EmbeddedStore;
use infra::feed::FeedRecord;
use infra::feed::shard_limits::Shard;
use infra::slow::{Latency, SlowStore};
use projectors::fold::Folding;
use projectors::lambda::{DEFAULT_CONCURRENCY, Delivery, fan_out_with};
use projectors::runtime::Handler;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vitals_tests::kinesis_batches::{batch, logged_meals, record_of};

const PREFIX: &str = "vitals-";
/// As deployed (`app/src/deploy/plan.rs`).
const BATCH_SIZE: usize = 100;
const LANES: usize = 4;
const BATCHING_WINDOW: Duration = Duration::from_secs(1);
/// The stream's other mappings, each polling once a second.
const OTHER_READERS: usize = 3;
/// A record's size in the stream, both images (what a meal's records average, as the
/// benchmark prints).
const RECORD_BYTES: usize = 850;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Where the stores live: RAM when there is one (a commit's fsync is not what is
/// measured here; the simulated round trips are).
fn scratch() -> anyhow::Result<tempfile::TempDir> {
    let shm = std::path::Path::new("/dev/shm");
    Ok(if shm.is_dir() {
        tempfile::tempdir_in(shm)?
    } else {
        tempfile::tempdir()?
    })
}

/// A fresh store for one run: the function's table starts empty, as a new user's does.
struct Run {
    counting: Arc<CountingStore>,
    slow: Arc<SlowStore>,
    handlers: Vec<Handler>,
    folding: Folding,
    _dir: tempfile::TempDir,
}

impl Run {
    fn new(target: Context) -> anyhow::Result<Self> {
        let dir = scratch()?;
        let embedded: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path())?);
        let counting = Arc::new(CountingStore::new(embedded));
        let slow = Arc::new(SlowStore::new(counting.clone(), Latency::dynamodb()).with_seed(7));
        let store: Arc<dyn Store> = slow.clone();
        let folding = Folding::new(store.clone(), Clock::System);
        let handlers = projectors::registry::projector_handlers(store, target)
            .into_iter()
            .filter(|h| h.projector().source() == Context::Nutrition)
            .collect();
        Ok(Self {
            counting,
            slow,
            handlers,
            folding,
            _dir: dir,
        })
    }
}

/// The lane Lambda gives a record: by its partition key, so one key stays in order.
fn lane_of(record: &KinesisEventRecord) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    record.kinesis.partition_key.hash(&mut hasher);
    (hasher.finish() % LANES as u64) as usize
}

/// How a run applies a batch: users at once, and whether a user's records are folded.
#[derive(Clone, Copy)]
struct Mode {
    concurrency: usize,
    fold: bool,
}

const BEFORE: Mode = Mode {
    concurrency: 1,
    fold: false,
};
const CONCURRENT: Mode = Mode {
    concurrency: DEFAULT_CONCURRENCY,
    fold: false,
};
const FOLDED: Mode = Mode {
    concurrency: DEFAULT_CONCURRENCY,
    fold: true,
};

impl Run {
    fn delivery(&self, mode: Mode) -> Delivery {
        Delivery {
            concurrency: mode.concurrency,
            fold: mode.fold.then(|| self.folding.clone()),
            ..Default::default()
        }
    }
}

/// A backlog drained: every lane takes batches of 100 until its records are done.
async fn throughput(
    target: Context,
    records: &[KinesisEventRecord],
    mode: Mode,
) -> anyhow::Result<String> {
    let run = Arc::new(Run::new(target)?);
    let mut lanes: Vec<Vec<KinesisEventRecord>> = vec![Vec::new(); LANES];
    for record in records {
        lanes[lane_of(record)].push(record.clone());
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for lane in lanes {
        let run = run.clone();
        tasks.push(tokio::spawn(async move {
            for chunk in lane.chunks(BATCH_SIZE) {
                let event = batch(chunk.to_vec());
                let response = fan_out_with(
                    &run.handlers,
                    Context::Nutrition,
                    &event,
                    PREFIX,
                    &run.delivery(mode),
                )
                .await;
                anyhow::ensure!(
                    response.batch_item_failures.is_empty(),
                    "a batch failed: {response:?}"
                );
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let n = records.len() as f64;
    let counts = run.counting.take();
    let capacity = run.counting.take_capacity();
    let tally = run.folding.tally();
    let load = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
    let folds = match (load(&tally.applied), load(&tally.abandoned)) {
        (0, 0) => String::new(),
        (applied, abandoned) => format!(
            "; {applied} folds ({} tried again), {abandoned} given up",
            load(&tally.retried)
        ),
    };
    Ok(format!(
        "{:>8.0} events/s per shard, {:>5.2} store requests ({:.2} reads) and {:>5.2} write units per event ({:.1} s){folds}",
        n / elapsed,
        (counts.reads() + counts.writes()) as f64 / n,
        counts.reads() as f64 / n,
        capacity.write_units / n,
        elapsed
    ))
}

/// A lane's records waiting for their batch, each with when it arrived.
type Lane = tokio::sync::Mutex<VecDeque<(Duration, KinesisEventRecord)>>;

/// A spike: records arrive at `rate` a second; the mapping's poller reads the shard once
/// a second (as Lambda does when it has caught up) and hands each lane its records; a
/// lane invokes the function with up to 100 of them once it has 100 or its oldest has
/// waited the batching window.
async fn spike(
    target: Context,
    records: &[KinesisEventRecord],
    rate: usize,
    mode: Mode,
) -> anyhow::Result<String> {
    let run = Arc::new(Run::new(target)?);
    let started = Instant::now();
    let arrival = |n: usize| Duration::from_secs_f64(n as f64 / rate as f64);
    let queues: Arc<Vec<Lane>> = Arc::new((0..LANES).map(|_| Default::default()).collect());
    let (lags_tx, mut lags_rx) = tokio::sync::mpsc::unbounded_channel::<Duration>();
    let total = records.len();
    // Set once the poller has handed out every record: an idle lane then ends.
    let polled_all = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut lanes = Vec::new();
    for lane in 0..LANES {
        let (run, queues, lags) = (run.clone(), queues.clone(), lags_tx.clone());
        let polled_all = polled_all.clone();
        lanes.push(tokio::spawn(async move {
            let mut done = 0usize;
            loop {
                let (ready, empty) = {
                    let queue = queues[lane].lock().await;
                    let oldest = queue.front().map(|(at, _)| *at);
                    let full = queue.len() >= BATCH_SIZE;
                    let waited = oldest.is_some_and(|at| started.elapsed() >= at + BATCHING_WINDOW);
                    (full || waited, queue.is_empty())
                };
                if !ready {
                    if empty && polled_all.load(std::sync::atomic::Ordering::SeqCst) {
                        return anyhow::Ok(done);
                    }
                    // The simulated lane's wait for its batch to fill (5 ms steps).
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                let taken: Vec<(Duration, KinesisEventRecord)> = {
                    let mut queue = queues[lane].lock().await;
                    let n = queue.len().min(BATCH_SIZE);
                    queue.drain(..n).collect()
                };
                let event = batch(taken.iter().map(|(_, r)| r.clone()).collect());
                let response = fan_out_with(
                    &run.handlers,
                    Context::Nutrition,
                    &event,
                    PREFIX,
                    &run.delivery(mode),
                )
                .await;
                anyhow::ensure!(response.batch_item_failures.is_empty(), "a batch failed");
                let now = started.elapsed();
                for (at, _) in &taken {
                    let _ = lags.send(now.saturating_sub(*at));
                }
                done += taken.len();
            }
        }));
    }
    drop(lags_tx);
    // The poller: once a second, what has arrived since, to the lanes; each poll is a
    // GetRecords call of this mapping, beside the other mappings' one a second each.
    let mut shard = Shard::new();
    let mut polled = 0usize;
    let mut refused = 0usize;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // A late tick is not made up for by a burst: Lambda's poller waits its second.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut lags = Histogram::<u64>::new(3)?;
    let mut second = 0u64;
    while polled < total {
        tick.tick().await;
        let now = started.elapsed();
        // The shard model's clock: the poll's second (the mappings' pollers are not in
        // step on AWS; a tick that wakes a millisecond early must not look like a sixth
        // call in a second).
        let at = Duration::from_secs(second);
        second += 1;
        let arrived = (0..total).take_while(|n| arrival(*n) <= now).count();
        let fresh = arrived.saturating_sub(shard_len(&shard));
        shard.put(at, fresh, fresh * RECORD_BYTES);
        for other in 0..OTHER_READERS {
            let _ = shard.get_records(at, &format!("other-{other}"), 10_000);
        }
        match shard.get_records(at, "this", 10_000) {
            Ok(got) => {
                for (n, record) in records
                    .iter()
                    .enumerate()
                    .skip(polled)
                    .take(got.records.len())
                {
                    queues[lane_of(record)]
                        .lock()
                        .await
                        .push_back((arrival(n), record.clone()));
                }
                polled += got.records.len();
            }
            Err(_) => refused += 1,
        }
        while let Ok(lag) = lags_rx.try_recv() {
            lags.record(lag.as_millis() as u64)?;
        }
    }
    polled_all.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut applied = 0;
    for lane in lanes {
        applied += lane.await??;
    }
    while let Ok(lag) = lags_rx.try_recv() {
        lags.record(lag.as_millis() as u64)?;
    }
    anyhow::ensure!(
        applied == total && lags.len() as usize == total,
        "records lost"
    );
    Ok(format!(
        "lag p50 {:>6} ms, p99 {:>6} ms, max {:>6} ms; {} GetRecords refused; store waited {:.0} s in all",
        lags.value_at_quantile(0.5),
        lags.value_at_quantile(0.99),
        lags.max(),
        refused,
        run.slow.stats().waited.as_secs_f64()
    ))
}

/// Records the shard holds (put and accepted so far): the backlog of a reader that
/// never reads.
fn shard_len(shard: &Shard) -> usize {
    shard.backlog("never-reads")
}

/// The binary's allocator (`app/src/main.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let events = env("BENCH_EVENTS", 2_000);
    let rate = env("BENCH_RATE", 150);
    let spike_s = env("BENCH_SPIKE_S", 20);
    let only: Option<Vec<String>> = std::env::var("BENCH_FUNCTIONS")
        .ok()
        .map(|v| v.split(',').map(str::to_owned).collect());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let dir = scratch()?;
        let source = Arc::new(EmbeddedStore::open(dir.path())?);
        let wanted = events.max(rate * spike_s);
        let changes: Vec<FeedRecord> = logged_meals(&source, wanted, 1).await?;
        let records: Vec<KinesisEventRecord> = changes
            .iter()
            .enumerate()
            .map(|(n, c)| record_of(c, PREFIX, n as u64 + 1, 1.0e9))
            .collect::<anyhow::Result<_>>()?;
        println!(
            "consumer benchmark: {} meals, DynamoDB-like latency (p50 5 ms, p99 15 ms), \
             batches of {BATCH_SIZE}, {LANES} lanes a shard",
            records.len()
        );
        // What a meal puts in the nutrition stream: every change of the table (not only
        // the outbox items the projectors are passed), each with both item images.
        let (mut changes_put, mut bytes_put) = (0usize, 0usize);
        let mut from = 0;
        loop {
            let page = source.changes_after(from, 1_000).await?;
            let Some(last) = page.last() else { break };
            from = last.seq;
            for change in page.into_iter().map(FeedRecord::from) {
                if change.table == Context::Nutrition {
                    changes_put += 1;
                    bytes_put += record_of(&change, PREFIX, 1, 1.0e9)?.kinesis.data.len();
                }
            }
        }
        let meals = records.len() as f64;
        let (per_meal, kb_per_meal) = (changes_put as f64 / meals, bytes_put as f64 / meals / 1024.0);
        println!(
            "a meal puts {per_meal:.1} records ({kb_per_meal:.2} KB with both images) in the nutrition \
             stream: a shard takes {:.0} meals/s (1,000 records/s, 1 MB/s in)",
            (1_000.0 / per_meal).min(1_024.0 / kb_per_meal)
        );
        // A catch-up (a backlog after an outage, a wearable's history): few users, many
        // meals each, so a lane's batch of 100 holds about ten of each user's records.
        // The stream's partition key is the item's, so every lane holds every user's
        // records: the four lanes' folds race on each user's day row.
        let catch_up_users = (events / 200).max(1);
        let catch_up: Vec<KinesisEventRecord> = logged_meals(&source, catch_up_users, 200)
            .await?
            .iter()
            .enumerate()
            .map(|(n, c)| record_of(c, PREFIX, n as u64 + 1, 1.0e9))
            .collect::<anyhow::Result<_>>()?;
        println!(
            "catch-up: {catch_up_users} users x 200 meals ({} records, about ten of a user's a batch, every lane holding every user's)",
            catch_up.len()
        );
        for target in [
            Context::Activity,
            Context::Dashboard,
            Context::Goals,
            Context::Insights,
        ] {
            if only
                .as_ref()
                .is_some_and(|o| !o.contains(&target.to_string()))
            {
                continue;
            }
            for (label, mode) in [("before", BEFORE), ("after", FOLDED)] {
                let backlog = &records[..events.min(records.len())];
                let drained = throughput(target, backlog, mode).await?;
                println!("{target:>9} projector, {label:>6}: throughput {drained}");
                let arriving = &records[..(rate * spike_s).min(records.len())];
                let lagged = spike(target, arriving, rate, mode).await?;
                println!(
                    "{target:>9} projector, {label:>6}: spike of {rate}/s for {spike_s} s: {lagged}"
                );
            }
            for (label, mode) in [("before", BEFORE), ("concurrent", CONCURRENT), ("folded", FOLDED)] {
                let drained = throughput(target, &catch_up, mode).await?;
                println!("{target:>9} projector, catch-up, {label:>10}: {drained}");
            }
        }
        anyhow::Ok(())
    })
}
