//! The model-based (differential) test of the whole read side. A generated history of a
//! few users (meals logged, edited across days and timezones, deleted; workouts and
//! sleep entered and synced from a wearable, resynced with changed and stale payloads,
//! moved across days; goals of every kind set before and after their facts, paused,
//! completed; connects, disconnects; account deletions) runs through the real command
//! handlers; its events reach every subscription in one of several deliveries (in
//! order, twice, shuffled, a failed batch retried, or a replay from scratch); then every
//! read row is compared with what a small reference model computes from the final
//! command-side state.
//!
//! Layout: [`history`] generates, [`execute`] runs the commands, [`capture`] records
//! committed events (the test's change feed), [`deliver`] delivers them, [`oracle`] is
//! the reference model and its comparison.

pub mod capture;
pub mod deliver;
pub mod execute;
pub mod history;
pub mod oracle;

use crate::backends::TestBackend;
use capture::capturing;
use deliver::Delivery;
use events_schema::time::Timestamp;
use history::History;
use infra::Store;
use oracle::Verdict;
use std::future::Future;
use std::sync::Arc;

/// The size of one case.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub users: usize,
    pub steps: usize,
}

/// When a seed's history starts (a Monday or any other day, early in 2026).
fn start(seed: u64) -> Timestamp {
    let base = Timestamp::parse("2026-02-02T10:00:00.000Z").expect("time");
    Timestamp::from_millis(
        base.millis() + (seed % 40) as i64 * 86_400_000 + (seed % 1440) as i64 * 60_000,
    )
    .unwrap_or(base)
}

/// Runs the history of `seed` on a fresh backend from `make`, delivers its events with
/// `delivery`, and compares every read row with the model.
pub async fn run_case<F, Fut>(seed: u64, size: Size, delivery: Delivery, make: F) -> Verdict
where
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
{
    let history = History::generate(seed, size.users, size.steps);
    let backend = make().await;
    let capture = Arc::new(capturing(backend.store.clone()));
    let shared: Arc<dyn Store> = capture.clone();
    let runs = execute::run(&history, shared.clone(), start(seed)).await;
    let committed = capture.observer().take();
    deliver::deliver(seed, &capture, delivery, committed).await;
    let mut verdict = Verdict::default();
    for run in &runs {
        if run.erased {
            oracle::check_erased(&*shared, run, &mut verdict).await;
        } else {
            oracle::check_user(&*shared, run, &mut verdict).await;
        }
    }
    verdict
}

/// Runs `seeds` under every delivery; fails with the seed, the delivery and the first
/// differences found. Returns how many cases ran and how many values were compared.
pub async fn check_seeds<F, Fut>(
    seeds: impl IntoIterator<Item = u64>,
    size: Size,
    make: F,
) -> (usize, usize)
where
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
{
    let (mut cases, mut compared) = (0, 0);
    for seed in seeds {
        for delivery in Delivery::ALL {
            let verdict = run_case(seed, size, delivery, &make).await;
            cases += 1;
            compared += verdict.compared;
            if !verdict.differences.is_empty() {
                let shown: Vec<&String> = verdict.differences.iter().take(15).collect();
                panic!(
                    "model test: seed {seed}, {delivery:?} ({} differences; rerun with VITALS_MODEL_SEED={seed}):\n{}",
                    verdict.differences.len(),
                    shown
                        .iter()
                        .map(|d| format!("  - {d}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
        }
    }
    (cases, compared)
}
