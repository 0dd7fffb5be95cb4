//! Every projector fixture under `tests/fixtures/`, under every delivery (in order,
//! every event twice, five seeded shuffles, a failed batch retried): all deliveries
//! leave identical rows, and the rows are the ones the fixture expects. Every
//! subscription has at least one fixture.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use vitals_tests::fixtures::{Delivery, Fixture, check, run};

fn fixtures() -> Vec<(PathBuf, Fixture)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_converges_to_its_expected_rows_under_every_delivery() {
    let all = fixtures();
    assert!(all.len() >= 5, "fixtures found: {}", all.len());
    for (path, fixture) in &all {
        let mut first = None;
        for delivery in Delivery::all(fixture.events.len()) {
            let dir = tempfile::tempdir().expect("temporary directory");
            let store = Arc::new(infra::embedded::EmbeddedStore::open(dir.path()).expect("store"));
            let rows = run(fixture, &delivery, store).await;
            check(fixture, &rows);
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
}

#[test]
fn every_subscription_has_a_fixture() {
    // Erasers and completers included: `registry::all` is what a pipeline runs.
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
