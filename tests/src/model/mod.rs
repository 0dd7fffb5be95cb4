//! The model-based (differential) test of the whole read side. A generated history of a
//! few users (meals logged, edited across days and timezones, deleted; workouts and
//! sleep entered and synced from a wearable, resynced with changed and stale payloads,
//! moved across days; goals of every kind set before and after their facts, paused,
//! completed; connects, disconnects; account deletions) runs through the real command
//! handlers; its events reach every subscription in one of several deliveries (in
//! order, twice, shuffled, a failed batch retried, or a replay from scratch); then every
//! read row is compared with what a small reference model computes from the final
//! command-side state. Users live in time zones from UTC+14 to UTC-12 (two with
//! daylight saving), and each history starts near an instant where a day, an ISO week,
//! a year or a clock changes for someone ([`BOUNDARIES`]), its facts drawn near those
//! edges: nights that span a clock change, weeks that start earlier or later than UTC's.
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
use events_schema::time::{Clock, Timestamp};
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

/// Instants where days, weeks, years or clocks change for someone: a history starts
/// shortly before one of them, so its facts and its goals straddle it.
pub const BOUNDARIES: [&str; 12] = [
    // Monday 00:30 and Sunday 23:30 UTC.
    "2026-02-02T00:30:00.000Z",
    "2026-02-01T23:30:00.000Z",
    // Monday begins in UTC+14 (Sunday 10:00 UTC), and in UTC-12 (Monday 12:00 UTC).
    "2026-02-01T10:00:00.000Z",
    "2026-02-02T12:00:00.000Z",
    // Paris springs forward (02:00 -> 03:00 local) and falls back (03:00 -> 02:00).
    "2026-03-29T01:00:00.000Z",
    "2026-10-25T01:00:00.000Z",
    // New York springs forward and falls back.
    "2026-03-08T07:00:00.000Z",
    "2026-11-01T06:00:00.000Z",
    // A year's last seconds, in UTC.
    "2026-12-31T23:59:30.000Z",
    // A leap day, and the Monday of an ISO week 53 (2026 has 53 weeks).
    "2028-02-29T00:00:00.000Z",
    "2026-12-28T00:00:00.000Z",
    // A year's end in UTC+14 (31 December 10:00 UTC).
    "2026-12-31T10:00:00.000Z",
];

/// When a seed's history starts: up to a day and a half before one of the
/// [`BOUNDARIES`] (the history's own minutes and advances then carry it across).
pub fn start(seed: u64) -> Timestamp {
    let boundary = BOUNDARIES[(seed % BOUNDARIES.len() as u64) as usize];
    let base = Timestamp::parse(boundary).expect("a boundary instant");
    let before_minutes = (seed.wrapping_mul(7_919) % (36 * 60)) as i64;
    Timestamp::from_millis(base.millis() - before_minutes * 60_000).unwrap_or(base)
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
    // The handlers' and projectors' calls are recorded against the declared access
    // patterns; the oracle's reads below are the test's own.
    let recorded = crate::access::recording(shared.clone(), crate::access::catalog());
    let clock = Clock::manual(start(seed));
    let runs = execute::run(&history, shared.clone(), &clock, &recorded).await;
    let committed = capture.observer().take();
    deliver::deliver_on(
        seed,
        &capture,
        recorded.clone(),
        delivery,
        committed,
        &clock,
    )
    .await;
    crate::access::finish(&recorded, "model");
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
