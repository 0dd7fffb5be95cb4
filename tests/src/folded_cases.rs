//! The cases of the live-safe fold view (`infra::folded::Folded`) that depend on the
//! backend's own conditional writes: each takes a store (embedded or the emulator) and
//! a partition of its own, and panics with what went wrong.

use events_schema::Context;
use infra::Store;
use infra::folded::Folded;
use infra::store::{Condition, Item, Key, Query, StoreError, TransactAction, Update};
use serde_json::json;
use std::sync::Arc;

const TABLE: Context = Context::Dashboard;

fn item(key: &Key, attrs: serde_json::Value) -> Item {
    let mut item = key.to_item();
    if let serde_json::Value::Object(attrs) = attrs {
        item.extend(attrs);
    }
    item
}

async fn stored(store: &dyn Store, key: &Key) -> Option<Item> {
    store.get(TABLE, key, true).await.expect("get")
}

/// A fresh partition for one case (the emulator's tables are shared by the process).
pub fn partition() -> String {
    format!("USER#{}", events_schema::ids::UserId::generate())
}

/// Rows changed many times through the view are written once each, with the value the
/// last write left (nested maps and lists included), and nothing before the flush.
pub async fn writes_each_changed_row_once(store: Arc<dyn Store>) {
    let pk = partition();
    let (daily, window, gone) = (
        Key::new(&pk, "DAILY#2026-03-01"),
        Key::new(&pk, "WINDOW"),
        Key::new(&pk, "RECENT_MEAL#2026-02-01#x"),
    );
    store
        .put(TABLE, item(&gone, json!({"name": "old"})), None)
        .await
        .expect("seed");
    store
        .put(TABLE, item(&window, json!({"hwm": 1})), None)
        .await
        .expect("seed");
    let view = Folded::new(store.clone(), [TABLE]);
    for n in 1..=10u64 {
        let entries = json!({"entries": {format!("m{n}"): {"kcal": n * 100, "tags": ["a", n]}}});
        view.update(
            TABLE,
            &daily,
            Update::default()
                .set("version", n)
                .set("nutrition", entries),
            Some(Condition::Newer {
                attr: "version".into(),
                version: n,
            }),
        )
        .await
        .expect("update through the view");
    }
    view.delete(TABLE, &gone, Some(Condition::ItemExists))
        .await
        .expect("delete through the view");
    let unchanged = view.get(TABLE, &window, true).await.expect("read");
    view.put(TABLE, unchanged.expect("window row"), None)
        .await
        .expect("a write that changes nothing");
    assert!(
        stored(&*store, &daily).await.is_none(),
        "nothing is written before the flush"
    );
    let written = view.flush().await.expect("flush");
    assert_eq!(
        written, 2,
        "the day's row and the deletion; not the unchanged row"
    );
    let day = stored(&*store, &daily).await.expect("the day's row");
    assert_eq!(day.get("version"), Some(&json!(10)));
    assert_eq!(
        day.get("nutrition"),
        Some(&json!({"entries": {"m10": {"kcal": 1000, "tags": ["a", 10]}}}))
    );
    assert!(stored(&*store, &gone).await.is_none());
    assert_eq!(view.flush().await.expect("second flush"), 0);
}

/// A row another writer changed after the view read it is not overwritten: the flush
/// fails with `ConditionFailed` and the other writer's value stays; a row another
/// writer created meanwhile likewise. An attribute another writer added, which the
/// fold never saw, survives the fold's write of the others.
pub async fn never_overwrites_another_writer(store: Arc<dyn Store>) {
    let pk = partition();
    let (raced, created, enriched) = (
        Key::new(&pk, "DAILY#1"),
        Key::new(&pk, "DAILY#2"),
        Key::new(&pk, "DAILY#3"),
    );
    let nested = json!({"entries": {"a": {"minutes": 30, "stages": [1, 2]}}});
    for key in [&raced, &enriched] {
        store
            .put(
                TABLE,
                item(key, json!({"version": 1, "sleep": nested})),
                None,
            )
            .await
            .expect("seed");
    }
    let view = Folded::new(store.clone(), [TABLE]);
    for key in [&raced, &enriched] {
        view.update(TABLE, key, Update::default().set("version", 2), None)
            .await
            .expect("fold");
    }
    view.put(TABLE, item(&created, json!({"version": 1})), None)
        .await
        .expect("fold");
    // Another worker meanwhile: changes one row, creates another, adds to a third.
    store
        .update(TABLE, &raced, Update::default().set("version", 7), None)
        .await
        .expect("other writer");
    store
        .put(TABLE, item(&created, json!({"version": 9})), None)
        .await
        .expect("other writer");
    store
        .update(
            TABLE,
            &enriched,
            Update::default().set("activity", json!({"n": 1})),
            None,
        )
        .await
        .expect("other writer");
    let flushed = view.flush().await;
    assert!(
        matches!(flushed, Err(StoreError::ConditionFailed { .. })),
        "a raced flush fails: {flushed:?}"
    );
    let version = |item: Option<Item>| item.and_then(|i| i.get("version").cloned());
    assert_eq!(version(stored(&*store, &raced).await), Some(json!(7)));
    assert_eq!(version(stored(&*store, &created).await), Some(json!(9)));
    let row = stored(&*store, &enriched).await.expect("row");
    assert_eq!(
        row.get("version"),
        Some(&json!(2)),
        "the fold's write landed"
    );
    assert_eq!(
        row.get("activity"),
        Some(&json!({"n": 1})),
        "and theirs stayed"
    );
    assert_eq!(row.get("sleep"), Some(&nested));
}

/// What cannot stay all-or-nothing row by row is refused on a folded table, with
/// nothing written; a query of a partition the fold changed flushes first, so it sees
/// the fold's writes (a query of another partition does not).
pub async fn refuses_what_it_cannot_keep_whole(store: Arc<dyn Store>) {
    let pk = partition();
    let view = Folded::new(store.clone(), [TABLE]);
    let key = Key::new(&pk, "DAILY#1");
    let transaction = vec![TransactAction::Put {
        table: TABLE,
        item: key.to_item(),
        condition: None,
    }];
    assert!(matches!(
        view.transact(transaction).await,
        Err(StoreError::Validation(_))
    ));
    assert!(matches!(
        view.drain_partition_page(TABLE, &pk, 10).await,
        Err(StoreError::Validation(_))
    ));
    assert!(stored(&*store, &key).await.is_none());
    view.put(TABLE, item(&key, json!({"version": 1})), None)
        .await
        .expect("fold");
    view.query(TABLE, &Query::partition(partition()).consistent())
        .await
        .expect("query of another partition");
    assert!(
        stored(&*store, &key).await.is_none(),
        "a query of a partition the fold did not change does not flush"
    );
    let page = view
        .query(TABLE, &Query::partition(pk.clone()).consistent())
        .await
        .expect("query");
    assert_eq!(page.items.len(), 1, "the query sees the fold's write");
    assert!(stored(&*store, &key).await.is_some());
}
