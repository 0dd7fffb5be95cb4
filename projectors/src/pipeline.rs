//! Every subscription's worker, running in-process on one change feed (the embedded
//! shape: `vitals serve` hosts them). Started together, stopped together, and observed
//! through one metrics snapshot.

use crate::projector::Projector;
use crate::runtime::{Metrics, Worker};
use infra::Store;
use infra::StoreError;
use infra::dlq::{DeadLetterQueue, TableDlq};
use infra::feed::{ChangeFeed, Lag};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One subscription as the pipeline runs it.
struct Running {
    name: &'static str,
    feed: Arc<dyn ChangeFeed>,
    dlq: Arc<dyn DeadLetterQueue>,
    metrics: Arc<Metrics>,
}

/// A subscription's counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionStats {
    pub subscription: &'static str,
    pub processed: u64,
    pub failed: u64,
    pub dead_lettered: u64,
    /// How far this subscription is behind its feed.
    pub lag: Lag,
    /// Letters waiting in its dead-letter queue.
    pub dlq_depth: usize,
}

pub struct Pipeline {
    running: Vec<Running>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    shutdown: watch::Sender<bool>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("subscriptions", &self.running.len())
            .finish()
    }
}

impl Pipeline {
    /// Starts one worker per projector on one shared feed (the embedded change log),
    /// each dead-lettering into its own table.
    pub fn start(
        store: Arc<dyn Store>,
        feed: Arc<dyn ChangeFeed>,
        projectors: Vec<Arc<dyn Projector>>,
    ) -> Self {
        Self::start_with(
            projectors,
            |_| feed.clone(),
            |projector| {
                Arc::new(TableDlq::new(store.clone(), projector.target()))
                    as Arc<dyn DeadLetterQueue>
            },
        )
    }

    /// Starts one worker per projector, with the feed and dead-letter queue each gets
    /// (the aws-local shape: a Kinesis stream per source, SQS queues).
    pub fn start_with(
        projectors: Vec<Arc<dyn Projector>>,
        feed_for: impl Fn(&Arc<dyn Projector>) -> Arc<dyn ChangeFeed>,
        dlq_for: impl Fn(&Arc<dyn Projector>) -> Arc<dyn DeadLetterQueue>,
    ) -> Self {
        let (shutdown, stop) = watch::channel(false);
        let mut running = Vec::new();
        let mut tasks = Vec::new();
        for projector in projectors {
            let (feed, dlq) = (feed_for(&projector), dlq_for(&projector));
            let worker = Worker::new(projector, feed.clone(), dlq.clone());
            running.push(Running {
                name: worker.name(),
                feed,
                dlq,
                metrics: worker.metrics.clone(),
            });
            tasks.push(tokio::spawn(worker.run(stop.clone())));
        }
        Self {
            running,
            tasks: std::sync::Mutex::new(tasks),
            shutdown,
        }
    }

    /// Stops every worker after the batch it is on, and waits for them.
    pub async fn stop(&self) {
        let _ = self.shutdown.send(true);
        let tasks = self
            .tasks
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for task in tasks {
            let _ = task.await;
        }
    }

    /// Every subscription's figures: its counters, and its lag and dead-letter depth,
    /// read for all subscriptions at once (on AWS each is a request: one after another,
    /// a scrape would outlast Prometheus' timeout).
    pub async fn stats(&self) -> Result<Vec<SubscriptionStats>, StoreError> {
        let reads = self.running.iter().map(|running| async move {
            let (lag, dlq_depth) = futures_util::future::try_join(
                running.feed.lag(running.name),
                running.dlq.depth(running.name),
            )
            .await?;
            Ok::<_, StoreError>(SubscriptionStats {
                subscription: running.name,
                processed: running.metrics.processed.load(Ordering::Relaxed),
                failed: running.metrics.failed.load(Ordering::Relaxed),
                dead_lettered: running.metrics.dead_lettered.load(Ordering::Relaxed),
                lag,
                dlq_depth,
            })
        });
        futures_util::future::try_join_all(reads).await
    }

    /// Whether every subscription has processed every record of the feed.
    pub async fn caught_up(&self) -> Result<bool, StoreError> {
        for running in &self.running {
            if !running.feed.lag(running.name).await?.is_zero() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The metric families every shape reports (`vitals serve`, `vitals work`, and the
/// Lambda consumers in Embedded Metric Format), with what they count.
pub const FAMILIES: [(&str, &str); 6] = [
    ("vitals_projector_events_processed_total", "events applied"),
    ("vitals_projector_events_failed_total", "failed attempts"),
    (
        "vitals_projector_dead_lettered_total",
        "events dead-lettered",
    ),
    (
        "vitals_projector_lag_records",
        "records behind the feed's head",
    ),
    (
        "vitals_projector_lag_milliseconds",
        "milliseconds behind the stream's head",
    ),
    ("vitals_projector_dlq_depth", "dead letters waiting"),
];

pub use crate::applied_lag::{APPLIED_LAG, APPLIED_LAG_NAME, BySubscription};

/// Registers the metrics of `stats` as they are now, and the applied-lag histogram. Lag
/// is in records on the embedded log and in milliseconds on Kinesis (which tells nothing
/// else), each in its own family.
pub fn register(registry: &mut Registry, stats: &[SubscriptionStats]) {
    let counter = |value: fn(&SubscriptionStats) -> u64| {
        let family = Family::<BySubscription, Counter>::default();
        for s in stats {
            family
                .get_or_create(&BySubscription {
                    subscription: s.subscription,
                })
                .inc_by(value(s));
        }
        family
    };
    let gauge = |value: fn(&SubscriptionStats) -> Option<u64>| {
        let family = Family::<BySubscription, Gauge>::default();
        for s in stats {
            if let Some(v) = value(s) {
                let labels = BySubscription {
                    subscription: s.subscription,
                };
                family
                    .get_or_create(&labels)
                    .set(i64::try_from(v).unwrap_or(i64::MAX));
            }
        }
        family
    };
    // OpenMetrics names a counter family without its samples' `_total`.
    let stem = |name: &'static str| name.strip_suffix("_total").unwrap_or(name);
    let [processed, failed, dead, lag_records, lag_ms, depth] = FAMILIES;
    registry.register(stem(processed.0), processed.1, counter(|s| s.processed));
    registry.register(stem(failed.0), failed.1, counter(|s| s.failed));
    registry.register(stem(dead.0), dead.1, counter(|s| s.dead_lettered));
    registry.register(
        lag_records.0,
        lag_records.1,
        gauge(|s| match s.lag {
            Lag::Records(n) => Some(n),
            Lag::Millis(_) => None,
        }),
    );
    registry.register(
        lag_ms.0,
        lag_ms.1,
        gauge(|s| match s.lag {
            Lag::Millis(n) => Some(n),
            Lag::Records(_) => None,
        }),
    );
    registry.register(depth.0, depth.1, gauge(|s| Some(s.dlq_depth as u64)));
    registry.register(
        APPLIED_LAG_NAME,
        "seconds from an event's recording to its application",
        APPLIED_LAG.clone(),
    );
}

/// The OpenMetrics text of [`register`] alone.
pub fn metrics_text(stats: &[SubscriptionStats]) -> String {
    let mut registry = Registry::default();
    register(&mut registry, stats);
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &registry) {
        Ok(()) => text,
        Err(_) => String::new(),
    }
}
