//! Every projector fixture under `tests/fixtures/`, one test each (named for the file),
//! under every delivery (in order, every event twice, five seeded shuffles, a failed
//! batch retried): all deliveries leave identical rows, and the rows are the ones the
//! fixture expects. Every file has its test, and every subscription a fixture.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use vitals_tests::fixtures::{Delivery, Fixture, check, run};

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn fixtures() -> Vec<(PathBuf, Fixture)> {
    let dir = fixtures_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let f = Fixture::load(&p);
            (p, f)
        })
        .collect()
}

/// Runs the fixture `tests/fixtures/<name>.json` under every delivery: all deliveries
/// leave identical rows, and the rows are the ones the fixture expects.
async fn converges(name: &str) {
    let path = fixtures_dir().join(format!("{name}.json"));
    let fixture = Fixture::load(&path);
    let mut first = None;
    for delivery in Delivery::all(fixture.events.len()) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = Arc::new(infra::embedded::EmbeddedStore::open(dir.path()).expect("store"));
        let rows = run(&fixture, &delivery, store).await;
        check(&fixture, &rows);
        match &first {
            None => first = Some(rows),
            Some(expected) => assert_eq!(
                &rows,
                expected,
                "{}: {delivery:?} left different rows",
                path.display()
            ),
        }
    }
}

/// One test per fixture file, named for it, so a failure names its fixture.
macro_rules! fixture_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                converges(stringify!($name)).await;
            }
        )*

        /// The fixture files the tests above run.
        const LISTED: &[&str] = &[$(stringify!($name)),*];
    };
}

fixture_tests!(
    activity_workout_moved,
    cross_intake_and_training_load,
    dashboard_rolling_window,
    erasure_completion,
    erasure_nothing_comes_back,
    goals_set_after_facts,
    identity_profile_versions,
    insights_active_days,
    nutrition_meal_lifecycle,
    sleep_goals_connections,
    wearables_become_syncs,
);

#[test]
fn every_fixture_file_has_its_test() {
    let files: BTreeSet<String> = fixtures()
        .into_iter()
        .filter_map(|(path, _)| Some(path.file_stem()?.to_str()?.to_owned()))
        .collect();
    let listed: BTreeSet<String> = LISTED.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(
        files, listed,
        "list every file of tests/fixtures/ in fixture_tests!"
    );
}

#[test]
fn every_subscription_has_a_fixture() {
    // The erasers and the completer included: `registry::all` is what a pipeline runs.
    let covered: BTreeSet<String> = fixtures()
        .into_iter()
        .flat_map(|(_, f)| f.subscriptions)
        .collect();
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = Arc::new(infra::embedded::EmbeddedStore::open(dir.path()).expect("store"));
    for projector in projectors::registry::all(store) {
        assert!(
            covered.contains(projector.name()),
            "no fixture for {}",
            projector.name()
        );
    }
}
