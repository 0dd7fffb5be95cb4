//! `vitals migrate` on the emulator named by `VITALS_TEST_DYNAMODB_ENDPOINT`: an embedded
//! store of a few hundred users (every command's items and events) moves to DynamoDB
//! with nothing lost. The first run is cut off after its first pages; the second resumes
//! from the saved position and ends with every table's count and checksum equal on both
//! sides. A migration into tables that already hold items (and no saved position) is
//! refused before it writes anything.

mod support;

use events_schema::Context;
use events_schema::ids::UserId;
use infra::Store;
use infra::embedded::EmbeddedStore;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::aws_local::endpoint;
use vitals::cli::AwsArgs;
use vitals::migrate::migrate;

/// Items of every table of the embedded store.
async fn count(store: &dyn Store) -> usize {
    vitals_tests::snapshot::snapshot(store).await.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_store_moves_to_dynamodb_resumably_and_verified() {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedded = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let users = vitals_tests::workload::generate(embedded.clone(), 300, 8).await;
    assert_eq!(users.len(), 300);
    let items = count(&*embedded).await;
    assert!(items > 300 * 20, "{items} items");
    embedded.close();
    drop(embedded);

    let aws = AwsArgs {
        endpoint_url: Some(endpoint()),
        region: None,
        table_prefix: format!("m{}-", UserId::generate().as_str().to_lowercase()),
    };
    let progress = dir.path().join(format!("migrate-{}json", aws.table_prefix));
    // The first run is stopped once it has saved its position a few pages in.
    let first = tokio::spawn({
        let (data, aws) = (dir.path().to_owned(), aws.clone());
        async move { migrate(&data, &aws).await }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let saved = std::fs::read_to_string(&progress).unwrap_or_default();
        if saved.matches("\"copied\"").count() >= 2 {
            break;
        }
        assert!(
            !first.is_finished(),
            "the first run ended before it could be cut off"
        );
        assert!(Instant::now() < deadline, "no progress saved");
        // The progress file is the observable state: check it again shortly.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.abort();
    let _ = first.await;
    // The aborted run's store closes as its writer thread winds down: wait until the
    // data directory can be opened again, as after a crashed process.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(store) = EmbeddedStore::open(dir.path()) {
            store.close();
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the aborted run never let go of the store"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let started = Instant::now();
    let resumed = migrate(dir.path(), &aws)
        .await
        .expect("the second run resumes");
    eprintln!(
        "{} users, {items} items; the resumed run copied {} and verified all in {:?}",
        users.len(),
        resumed.copied,
        started.elapsed()
    );
    assert!(
        resumed.copied < items as u64,
        "resumed where it stopped: {} of {items} items copied again",
        resumed.copied
    );
    let mut migrated = 0;
    for check in &resumed.checks {
        assert!(check.matches(), "{check:?}");
        migrated += check.target_items;
    }
    assert_eq!(migrated, items as u64, "every item, once");
    let identity = resumed
        .checks
        .iter()
        .find(|c| c.table == Context::Identity)
        .expect("identity");
    assert!(identity.target_items >= 300, "every account moved");

    // Another store into the same, now full, tables: refused, nothing written.
    let other = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(EmbeddedStore::open(other.path()).expect("store"));
    vitals_tests::workload::generate(store.clone(), 1, 1).await;
    store.close();
    drop(store);
    let refused = migrate(other.path(), &aws).await;
    let error = refused.map(|_| ()).expect_err("refused");
    assert!(error.to_string().contains("not empty"), "{error}");
}
