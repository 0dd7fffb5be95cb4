//! The live-safe fold view a stream consumer folds a user's records on
//! (`infra::folded::Folded`), on the embedded store:
//! - the cases shared with the emulator (`vitals_tests::folded_cases`);
//! - random histories of conditional writes, reads and queries through a folded view of
//!   one store and directly on another (the oracle) seeded alike: every answer is the
//!   same, and after the flush both stores hold the same items, each changed row
//!   written once.

use infra::Store;
use infra::folded::Folded;
use infra::store::{Condition, Item, Key, Query, StoreError, Update};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use vitals_tests::backends::embedded;
use vitals_tests::folded_cases as cases;
use vitals_tests::snapshot::snapshot;
use vitals_tests::store_histories::{TABLES, key, rows, seeded};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_each_changed_row_once() {
    cases::writes_each_changed_row_once(embedded().await.store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_overwrites_another_writer() {
    cases::never_overwrites_another_writer(embedded().await.store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_what_it_cannot_keep_whole() {
    cases::refuses_what_it_cannot_keep_whole(embedded().await.store).await;
}

fn item(rng: &mut StdRng, key: &Key) -> Item {
    let mut item = key.to_item();
    item.insert("version".into(), json!(rng.gen_range(1..5)));
    if rng.gen_bool(0.5) {
        item.insert(
            "entries".into(),
            json!({"a": {"kcal": rng.gen_range(0..3)}}),
        );
    }
    item
}

fn condition(rng: &mut StdRng) -> Option<Condition> {
    match rng.gen_range(0..7) {
        0 => Some(Condition::ItemExists),
        1 => Some(Condition::ItemNotExists),
        2 => Some(Condition::AttributeExists("entries".into())),
        3 => Some(Condition::VersionEquals(rng.gen_range(1..5))),
        4 => Some(Condition::Newer {
            attr: "version".into(),
            version: rng.gen_range(1..6),
        }),
        _ => None,
    }
}

fn outcome<T: std::fmt::Debug>(result: Result<T, StoreError>) -> String {
    match result {
        Ok(value) => format!("ok {value:?}"),
        Err(other) => format!("{other:?}"),
    }
}

/// Applies one random request to `store`; returns what it answered.
async fn request(store: &dyn Store, rng: &mut StdRng) -> String {
    let (table, key) = key(rng);
    match rng.gen_range(0..7) {
        0 | 1 => {
            let item = item(rng, &key);
            outcome(store.put(table, item, condition(rng)).await)
        }
        2 => {
            let mut update = Update::default().set("version", rng.gen_range(1..5));
            if rng.gen_bool(0.3) {
                update = update.remove("entries");
            }
            outcome(store.update(table, &key, update, condition(rng)).await)
        }
        3 => outcome(store.delete(table, &key, condition(rng)).await),
        4 | 5 => outcome(store.get(table, &key, rng.gen_bool(0.5)).await),
        _ => {
            let query = Query::partition(key.pk.clone()).consistent();
            outcome(store.query(table, &query).await.map(|p| p.items))
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_histories_flush_to_what_direct_writes_leave() {
    let mut flushed_total = 0;
    for seed in 0..40u64 {
        let (_a, folded_base) = seeded(seed, item).await;
        let (_b, direct) = seeded(seed, item).await;
        let folded = Folded::new(folded_base.clone(), TABLES);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xf01d);
        for step in 0..40 {
            let mut twin = rng.clone();
            let answered = request(&folded, &mut rng).await;
            let expected = request(&*direct, &mut twin).await;
            assert_eq!(answered, expected, "seed {seed}, step {step}");
        }
        let expected = rows(snapshot(&*direct).await);
        flushed_total += folded.flush().await.expect("flush");
        assert_eq!(rows(snapshot(&*folded_base).await), expected, "seed {seed}");
        assert_eq!(
            folded.flush().await.expect("flush"),
            0,
            "seed {seed}: a second flush"
        );
        folded_base.close();
        direct.close();
    }
    assert!(flushed_total > 0, "the histories changed nothing");
}
