//! `vitals migrate` on the emulator named by `VITALS_TEST_DYNAMODB_ENDPOINT`: an embedded
//! store of a few hundred users (every command's items and events) moves to DynamoDB
//! with nothing lost. The first run is cut off after its first pages; the second resumes
//! from the saved position and ends with every table's count and checksum equal on both
//! sides. A migration into tables that already hold items (and no saved position) is
//! refused before it writes anything. Items whose TTL has passed (by the clock the run
//! is given) are neither copied nor counted.

mod support;

use events_schema::Context;
use events_schema::time::{Clock, Timestamp};
use infra::Store;
use infra::embedded::EmbeddedStore;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Case;
use support::aws_local::Tables;
use vitals::cli::AwsArgs;
use vitals::migrate::{migrate_at, progress_path_of};

/// Items of every table of the embedded store.
async fn count(store: &dyn Store) -> usize {
    vitals_tests::snapshot::snapshot(store).await.len()
}

/// One embedded store on its way to DynamoDB: named cases, in order, each saying its
/// name when it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_store_moves_to_dynamodb_resumably_and_verified() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The migration's "now": fixed for the whole test (the emulator's own TTL sweep, if
    // any, keeps to real time, so it starts there).
    let clock = Clock::manual(Timestamp::now());
    let source = an_embedded_store_of_three_hundred_users(dir.path(), &clock).await;
    let tables = Tables::new("m");
    let aws = tables.aws_args();
    the_first_run_is_cut_off_once_it_has_saved_its_position(dir.path(), &aws, &clock).await;
    the_second_run_resumes_and_verifies_every_item(dir.path(), &aws, &clock, &source).await;
    expired_items_stay_behind(&tables, &source).await;
    a_migration_into_full_tables_is_refused(&aws, &clock).await;
}

/// What the embedded store held before the migration.
struct Source {
    users: usize,
    /// Items not expired at the clock's time.
    items: usize,
    /// The keys of the expired ones.
    expired: Vec<(Context, String, String)>,
}

/// Three hundred users' commands, every table's items, on an embedded store (closed),
/// and a few cache rows and connect states whose TTL has passed by `clock`.
async fn an_embedded_store_of_three_hundred_users(data: &Path, clock: &Clock) -> Source {
    let _case = Case("an embedded store of three hundred users");
    let embedded = Arc::new(EmbeddedStore::open(data).expect("store"));
    let users = vitals_tests::workload::generate(embedded.clone(), 300, 8).await;
    assert_eq!(users.len(), 300);
    let items = count(&*embedded).await;
    assert!(items > 300 * 20, "{items} items");
    let now = clock.now().datetime().timestamp();
    let expired = vec![
        (
            Context::Environment,
            "WEATHER#u09tvw#2026-01-01T00",
            "WEATHER",
        ),
        (Context::Environment, "AIR#u09tvw#2026-01-01T00", "AIR"),
        (Context::Integrations, "OAUTH_STATE#expired", "OAUTH_STATE"),
    ];
    for (table, pk, sk) in &expired {
        let item = serde_json::json!({"pk": pk, "sk": sk, "expires_at": now - 60});
        let item = item.as_object().cloned().expect("object");
        embedded.put(*table, item, None).await.expect("put");
    }
    embedded.close();
    drop(embedded);
    Source {
        users: users.len(),
        items,
        expired: expired
            .into_iter()
            .map(|(table, pk, sk)| (table, pk.to_owned(), sk.to_owned()))
            .collect(),
    }
}

/// The expired items were not copied, and the verification counted them as left
/// behind.
async fn expired_items_stay_behind(tables: &Tables, source: &Source) {
    let _case = Case("expired items stay behind");
    let target = tables.store().await;
    let copied = vitals_tests::snapshot::snapshot(&*target).await;
    for key in &source.expired {
        assert!(!copied.contains_key(key), "{key:?} was copied");
    }
}

/// The first run is stopped once it has saved its position a few pages in; the data
/// directory can be opened again afterwards, as after a crashed process.
async fn the_first_run_is_cut_off_once_it_has_saved_its_position(
    data: &Path,
    aws: &AwsArgs,
    clock: &Clock,
) {
    let _case = Case("the first run is cut off once it has saved its position");
    let progress = progress_path_of(data, aws).await;
    let first = tokio::spawn({
        let (data, aws, clock) = (data.to_owned(), aws.clone(), clock.clone());
        async move { migrate_at(&data, &aws, &clock).await }
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
        if let Ok(store) = EmbeddedStore::open(data) {
            store.close();
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the aborted run never let go of the store"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The second run resumes from the saved position and ends with every table's count
/// and checksum equal on both sides.
async fn the_second_run_resumes_and_verifies_every_item(
    data: &Path,
    aws: &AwsArgs,
    clock: &Clock,
    source: &Source,
) {
    let _case = Case("the second run resumes and verifies every item");
    let items = source.items;
    let started = Instant::now();
    let resumed = migrate_at(data, aws, clock)
        .await
        .expect("the second run resumes");
    eprintln!(
        "{} users, {items} items; the resumed run copied {} and verified all in {:?}",
        source.users,
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
    let left_behind: u64 = resumed.checks.iter().map(|c| c.source_expired).sum();
    assert_eq!(
        left_behind,
        source.expired.len() as u64,
        "expired, not copied"
    );
    let identity = resumed
        .checks
        .iter()
        .find(|c| c.table == Context::Identity)
        .expect("identity");
    assert!(identity.target_items >= 300, "every account moved");
}

/// Another store into the same, now full, tables: refused, nothing written.
async fn a_migration_into_full_tables_is_refused(aws: &AwsArgs, clock: &Clock) {
    let _case = Case("a migration into full tables is refused");
    let other = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(EmbeddedStore::open(other.path()).expect("store"));
    vitals_tests::workload::generate(store.clone(), 1, 1).await;
    store.close();
    drop(store);
    let refused = migrate_at(other.path(), aws, clock).await;
    let error = refused.map(|_| ()).expect_err("refused");
    assert!(error.to_string().contains("not empty"), "{error}");
}
