//! The buffered view a rebuild writes to (`infra::buffered::Buffered`) keeps the storage
//! port's semantics, and its flush leaves the store as the same writes made directly
//! would have:
//! - the conformance cases that need neither an index nor a scan (a buffered table
//!   serves neither), on a buffered embedded store;
//! - random histories of conditional writes, transactions and drains, applied to a
//!   buffered view of one store and directly to another (the oracle) seeded alike: every
//!   answer and read is the same, and after the flush both stores hold the same items,
//!   with only changed rows written.

use events_schema::Context;
use infra::Store;
use infra::buffered::Buffered;
use infra::store::{Condition, Item, Key, Query, StoreError, TransactAction, Update};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use vitals_tests::snapshot::snapshot;
use vitals_tests::store_histories::{TABLES, key, rows, seeded};

vitals_tests::conformance_item_cases!(vitals_tests::backends::buffered_embedded);

fn item(rng: &mut StdRng, key: &Key) -> Item {
    let mut item = key.to_item();
    item.insert("version".into(), json!(rng.gen_range(1..5)));
    if rng.gen_bool(0.5) {
        item.insert("kcal".into(), json!(rng.gen_range(0..3)));
    }
    item
}

fn condition(rng: &mut StdRng) -> Option<Condition> {
    match rng.gen_range(0..8) {
        0 => Some(Condition::ItemExists),
        1 => Some(Condition::ItemNotExists),
        2 => Some(Condition::AttributeExists("kcal".into())),
        3 => Some(Condition::AttributeEquals("kcal".into(), json!(1))),
        4 => Some(Condition::VersionEquals(rng.gen_range(1..5))),
        5 => Some(Condition::Newer {
            attr: "version".into(),
            version: rng.gen_range(1..6),
        }),
        _ => None,
    }
}

fn update(rng: &mut StdRng) -> Update {
    let mut update = Update::default().set("version", rng.gen_range(1..5));
    if rng.gen_bool(0.3) {
        update = update.remove("kcal");
    }
    update
}

fn action(rng: &mut StdRng) -> TransactAction {
    let (table, key) = key(rng);
    match rng.gen_range(0..4) {
        0 => TransactAction::Put {
            table,
            item: item(rng, &key),
            condition: condition(rng),
        },
        1 => TransactAction::Update {
            table,
            key,
            update: update(rng),
            condition: condition(rng),
        },
        2 => TransactAction::Delete {
            table,
            key,
            condition: condition(rng),
        },
        _ => TransactAction::ConditionCheck {
            table,
            key,
            condition: condition(rng).unwrap_or(Condition::ItemExists),
        },
    }
}

/// What a request answered, comparable across the two stores.
fn outcome<T: std::fmt::Debug>(result: Result<T, StoreError>) -> String {
    match result {
        Ok(value) => format!("ok {value:?}"),
        Err(StoreError::Validation(_)) => "invalid".into(),
        Err(other) => format!("{other:?}"),
    }
}

/// Applies one random request to `store`; returns what it answered.
async fn request(store: &dyn Store, rng: &mut StdRng) -> String {
    let (table, key) = key(rng);
    match rng.gen_range(0..8) {
        0 | 1 => {
            let item = item(rng, &key);
            outcome(store.put(table, item, condition(rng)).await)
        }
        2 => outcome(store.update(table, &key, update(rng), condition(rng)).await),
        3 => outcome(store.delete(table, &key, condition(rng)).await),
        4 => {
            let actions = (0..rng.gen_range(1..4)).map(|_| action(rng)).collect();
            outcome(store.transact(actions).await)
        }
        5 => outcome(store.drain_partition_page(table, &key.pk, 2).await),
        6 => outcome(store.get(table, &key, true).await),
        _ => {
            let mut query = Query::partition(key.pk.clone()).limit(rng.gen_range(1..4));
            if rng.gen_bool(0.5) {
                query = query.reverse();
            }
            let mut pages = Vec::new();
            loop {
                let page = match store.query(table, &query).await {
                    Ok(page) => page,
                    Err(e) => return outcome::<()>(Err(e)),
                };
                pages.push(page.items);
                match page.cursor {
                    Some(cursor) => query = query.after(Some(cursor)),
                    None => return format!("ok {pages:?}"),
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_histories_flush_to_what_direct_writes_leave() {
    let mut flushed_total = 0;
    for seed in 0..40u64 {
        let (_a, buffered_base) = seeded(seed, item).await;
        let (_b, direct) = seeded(seed, item).await;
        let buffered = Buffered::new(buffered_base.clone(), TABLES);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xb0ff);
        for step in 0..40 {
            let mut twin = rng.clone();
            let answered = request(&buffered, &mut rng).await;
            let expected = request(&*direct, &mut twin).await;
            assert_eq!(answered, expected, "seed {seed}, step {step}");
        }
        let before = rows(snapshot(&*buffered_base).await);
        let expected = rows(snapshot(&*direct).await);
        let flushed = buffered.flush().await.expect("flush");
        let after = rows(snapshot(&*buffered_base).await);
        assert_eq!(after, expected, "seed {seed}: flushed store");
        // Exactly the rows that differ are written.
        let keys: std::collections::BTreeSet<_> = before
            .iter()
            .chain(&expected)
            .map(|(t, pk, sk, _)| (*t, pk.clone(), sk.clone()))
            .collect();
        let value = |rows: &[(Context, String, String, Value)], k: &(Context, String, String)| {
            rows.iter()
                .find(|(t, pk, sk, _)| (*t, pk, sk) == (k.0, &k.1, &k.2))
                .map(|r| r.3.clone())
        };
        let differing = keys
            .iter()
            .filter(|k| value(&before, k) != value(&expected, k))
            .count();
        assert_eq!(flushed, differing, "seed {seed}: rows flushed");
        flushed_total += flushed;
        buffered_base.close();
        direct.close();
    }
    assert!(flushed_total > 0, "the histories changed nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbuffered_tables_pass_through_and_mixed_transactions_are_refused() {
    let (_dir, base) = seeded(7, item).await;
    let buffered = Buffered::new(base.clone(), [Context::Dashboard]);
    // Whether the base store itself (not the buffered view) holds `key` in `table`.
    let in_base =
        async |table: Context, key: &Key| base.get(table, key, true).await.expect("get").is_some();
    // Puts `key` in `table` through the buffered view.
    let put = async |table: Context, key: &Key| {
        let item = key.to_item();
        buffered.put(table, item, None).await.expect("put");
    };
    let goal = Key::new("USER#a", "GOAL#1");
    put(Context::Goals, &goal).await;
    assert!(
        in_base(Context::Goals, &goal).await,
        "an unbuffered table is written at once"
    );
    let row = Key::new("USER#a", "DAILY#9");
    put(Context::Dashboard, &row).await;
    assert!(
        !in_base(Context::Dashboard, &row).await,
        "a buffered write waits for the flush"
    );
    let mixed = vec![
        TransactAction::Put {
            table: Context::Dashboard,
            item: Key::new("USER#a", "DAILY#8").to_item(),
            condition: None,
        },
        TransactAction::Delete {
            table: Context::Goals,
            key: goal.clone(),
            condition: None,
        },
    ];
    assert!(matches!(
        buffered.transact(mixed).await,
        Err(StoreError::Validation(_))
    ));
    assert_eq!(buffered.flush().await.expect("flush"), 1);
    assert!(in_base(Context::Dashboard, &row).await);
    assert!(in_base(Context::Goals, &goal).await);
    base.close();
}
