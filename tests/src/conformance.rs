//! The storage port's specification. Every function here is one case, run unchanged
//! against every backend (see `conformance_suite!`). Each case works in partitions of
//! its own (fresh user ids), so cases can share tables and run in parallel.

use crate::snapshot::{every_page, scan_all};
use events_schema::Context;
use events_schema::ids::UserId;
use infra::store::{
    BatchWrite, CancelReason, Condition, Cursor, IndexQuery, Item, Key, Page, Query, Scan,
    SortKeyCondition, Store, StoreError, TransactAction, Update, drain_partition,
    now_epoch_seconds,
};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

type Shared = Arc<dyn Store>;

/// An item from a JSON object literal.
pub fn item(value: Value) -> Item {
    match value {
        Value::Object(map) => map,
        other => panic!("an item must be a JSON object, not {other}"),
    }
}

/// A partition key no other case uses.
pub fn fresh_pk() -> String {
    format!("USER#{}", UserId::generate())
}

fn sks(items: &[Item]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["sk"].as_str().expect("sk is a string").to_owned())
        .collect()
}

/// A conformance read gives up after this many pages: a backend whose cursors never
/// end fails fast.
const MAX_PAGES: usize = 10_000;

async fn all_pages(store: &dyn Store, table: Context, query: Query) -> Vec<Item> {
    every_page(MAX_PAGES, |cursor| {
        let query = query.clone().after(cursor);
        async move { store.query(table, &query).await.expect("query") }
    })
    .await
}

async fn all_index_pages(store: &dyn Store, table: Context, query: IndexQuery) -> Vec<Item> {
    every_page(MAX_PAGES, |cursor| {
        let query = query.clone().after(cursor);
        async move { store.query_index(table, &query).await.expect("query") }
    })
    .await
}

/// Every item of partition `pk` of a table, read consistently.
async fn partition_rows(store: &dyn Store, table: Context, pk: &str) -> Vec<Item> {
    all_pages(store, table, Query::partition(pk).consistent()).await
}

/// The item at `key` of a table, read consistently.
pub async fn read_item(store: &dyn Store, table: Context, key: &Key) -> Option<Item> {
    store.get(table, key, true).await.expect("get")
}

/// A transaction's put of `item` into `table`, without a condition.
pub fn plain_put(table: Context, item: Item) -> TransactAction {
    TransactAction::Put {
        table,
        item,
        condition: None,
    }
}

/// A transaction's put of the goals' progress row number `i` of partition `pk`.
fn progress_put(pk: &str, i: usize) -> TransactAction {
    plain_put(
        Context::Goals,
        item(json!({"pk": pk, "sk": format!("PROGRESS#g#{i:03}")})),
    )
}

/// Puts each of `items` into `table`, without a condition.
pub async fn put_all(store: &dyn Store, table: Context, items: Vec<Item>) {
    for item in items {
        store.put(table, item, None).await.expect("put");
    }
}

/// Puts the JSON object `value` (see [`item`]) into `table`, without a condition.
pub async fn put_json(store: &dyn Store, table: Context, value: Value) {
    put_all(store, table, vec![item(value)]).await;
}

/// Puts an item that holds only its key (`pk`, `sk`) into `table`, without a condition.
pub async fn put_key(store: &dyn Store, table: Context, pk: &str, sk: &str) {
    put_all(store, table, vec![Key::new(pk, sk).to_item()]).await;
}

/// Puts `item` into `table` if no item has its key.
pub async fn put_if_absent(
    store: &dyn Store,
    table: Context,
    item: Item,
) -> Result<(), StoreError> {
    store.put(table, item, Some(Condition::ItemNotExists)).await
}

fn expect_validation<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    match result {
        Err(StoreError::Validation(_)) => {}
        other => panic!("{what}: expected a validation error, got {other:?}"),
    }
}

pub async fn put_then_get_round_trips_every_value_type(store: Shared) {
    let pk = fresh_pk();
    let original = item(json!({
        "pk": pk, "sk": "PROFILE", "name": "Zoë 😀", "empty": "", "kcal": 512, "neg": -40,
        "ratio": 0.125, "big": 9_007_199_254_740_993_u64, "ok": true, "nothing": null,
        "list": ["a", 1, false, {"x": 1}], "map": {"nested": {"deep": [1, 2, 3]}}
    }));
    store
        .put(Context::Identity, original.clone(), None)
        .await
        .expect("put");
    let key = Key::new(&pk, "PROFILE");
    for consistent in [true, false] {
        let read = store
            .get(Context::Identity, &key, consistent)
            .await
            .expect("get");
        assert_eq!(read.as_ref(), Some(&original), "consistent={consistent}");
    }
    // The same key in another table is another item.
    assert_eq!(read_item(&*store, Context::Nutrition, &key).await, None);
}

pub async fn get_of_a_missing_item_is_none(store: Shared) {
    let found = store
        .get(Context::Goals, &Key::new(fresh_pk(), "GOAL#x"), true)
        .await;
    assert_eq!(found.expect("get"), None);
}

pub async fn put_if_absent_fails_the_second_time_and_keeps_the_first(store: Shared) {
    let pk = fresh_pk();
    let first = item(json!({"pk": pk, "sk": "EMAIL", "owner": "first"}));
    let second = item(json!({"pk": pk, "sk": "EMAIL", "owner": "second"}));
    store
        .put(
            Context::Identity,
            first.clone(),
            Some(Condition::ItemNotExists),
        )
        .await
        .expect("first put");
    match store
        .put(Context::Identity, second, Some(Condition::ItemNotExists))
        .await
    {
        Err(StoreError::ConditionFailed { existing }) => assert_eq!(existing, Some(first.clone())),
        other => panic!("expected ConditionFailed, got {other:?}"),
    }
    let read = read_item(&*store, Context::Identity, &Key::new(&pk, "EMAIL")).await;
    assert_eq!(read, Some(first));
}

pub async fn version_guarded_update_accepts_the_current_version_only(store: Shared) {
    let pk = fresh_pk();
    let key = Key::new(&pk, "DAILY_SUMMARY#2026-01-01");
    store
        .put(
            Context::Nutrition,
            item(json!({"pk": pk, "sk": key.sk, "version": 1, "kcal": 100})),
            None,
        )
        .await
        .expect("put");
    let bump =
        |kcal: i64, version: u64| Update::default().set("kcal", kcal).set("version", version);
    let written = store
        .update(
            Context::Nutrition,
            &key,
            bump(250, 2),
            Some(Condition::VersionEquals(1)),
        )
        .await
        .expect("current version is accepted");
    assert_eq!(written["kcal"], json!(250));
    assert_eq!(written["version"], json!(2));
    match store
        .update(
            Context::Nutrition,
            &key,
            bump(999, 2),
            Some(Condition::VersionEquals(1)),
        )
        .await
    {
        Err(StoreError::ConditionFailed {
            existing: Some(current),
        }) => assert_eq!(current["version"], json!(2)),
        other => panic!("a stale version must fail with the current item, got {other:?}"),
    }
    let read = read_item(&*store, Context::Nutrition, &key)
        .await
        .expect("exists");
    assert_eq!(read["kcal"], json!(250));
    // A version condition on a missing item fails.
    let missing = Key::new(&pk, "DAILY_SUMMARY#2026-01-02");
    let result = store
        .update(
            Context::Nutrition,
            &missing,
            bump(1, 1),
            Some(Condition::VersionEquals(0)),
        )
        .await;
    assert!(
        matches!(result, Err(StoreError::ConditionFailed { existing: None })),
        "{result:?}"
    );
    assert_eq!(read_item(&*store, Context::Nutrition, &missing).await, None);
}

pub async fn update_creates_a_missing_item_and_removes_attributes(store: Shared) {
    let pk = fresh_pk();
    let key = Key::new(&pk, "GOAL#g1");
    let created = store
        .update(
            Context::Goals,
            &key,
            Update::default().set("target", 3).set("note", "x"),
            None,
        )
        .await
        .expect("upsert");
    assert_eq!(
        created,
        item(json!({"pk": pk, "sk": "GOAL#g1", "target": 3, "note": "x"}))
    );
    let changed = store
        .update(
            Context::Goals,
            &key,
            Update::default().set("target", 4).remove("note"),
            None,
        )
        .await
        .expect("update");
    assert_eq!(
        changed,
        item(json!({"pk": pk, "sk": "GOAL#g1", "target": 4}))
    );
    let read = read_item(&*store, Context::Goals, &key).await;
    assert_eq!(read, Some(changed));
}

pub async fn an_update_adds_to_a_number_atomically_under_its_condition(store: Shared) {
    let key = Key::new(fresh_pk(), "TRIES");
    let add = |by: i64| Update::default().add("tries", by).set("note", "x");
    let created = store.update(Context::Identity, &key, add(1), None).await;
    assert_eq!(created.expect("from nothing")["tries"], json!(1));
    let added = store.update(Context::Identity, &key, add(2), None).await;
    assert_eq!(added.expect("added")["tries"], json!(3));
    let below = |limit: u64| Condition::Newer {
        attr: "tries".into(),
        version: limit,
    };
    let refused = store
        .update(Context::Identity, &key, add(1), Some(below(3)))
        .await;
    assert!(
        matches!(refused, Err(StoreError::ConditionFailed { .. })),
        "{refused:?}"
    );
    let mut adds = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let (store, key) = (store.clone(), key.clone());
        adds.spawn(async move { store.update(Context::Identity, &key, add(1), None).await });
    }
    while let Some(done) = adds.join_next().await {
        done.expect("task").expect("added");
    }
    let read = read_item(&*store, Context::Identity, &key).await;
    assert_eq!(read.expect("item")["tries"], json!(13), "none lost");
}

pub async fn key_attributes_cannot_be_updated(store: Shared) {
    let key = Key::new(fresh_pk(), "GOAL#g1");
    let result = store
        .update(
            Context::Goals,
            &key,
            Update::default().set("sk", "GOAL#g2"),
            None,
        )
        .await;
    expect_validation(result, "setting sk");
    let result = store
        .update(Context::Goals, &key, Update::default().remove("pk"), None)
        .await;
    expect_validation(result, "removing pk");
    assert_eq!(read_item(&*store, Context::Goals, &key).await, None);
}

pub async fn conditional_delete_returns_the_old_item(store: Shared) {
    let pk = fresh_pk();
    let key = Key::new(&pk, "CONNECTION#garmin");
    let original = item(json!({"pk": pk, "sk": key.sk, "status": "connected"}));
    store
        .put(Context::Integrations, original.clone(), None)
        .await
        .expect("put");
    let wrong = Condition::AttributeEquals("status".into(), json!("revoked"));
    match store.delete(Context::Integrations, &key, Some(wrong)).await {
        Err(StoreError::ConditionFailed { existing }) => {
            assert_eq!(existing, Some(original.clone()))
        }
        other => panic!("expected ConditionFailed, got {other:?}"),
    }
    let right = Condition::AttributeEquals("status".into(), json!("connected"));
    let old = store
        .delete(Context::Integrations, &key, Some(right))
        .await
        .expect("delete");
    assert_eq!(old, Some(original));
    assert_eq!(read_item(&*store, Context::Integrations, &key).await, None);
    // Deleting what is not there succeeds and returns nothing.
    assert_eq!(
        store
            .delete(Context::Integrations, &key, None)
            .await
            .expect("delete"),
        None
    );
}

pub async fn attribute_conditions_and_their_conjunction(store: Shared) {
    let pk = fresh_pk();
    let key = Key::new(&pk, "PROFILE");
    let put = |extra: Value| {
        let mut it = item(json!({"pk": pk, "sk": "PROFILE", "version": 3}));
        it.extend(item(extra));
        it
    };
    store
        .put(Context::Identity, put(json!({"email": "a@b.c"})), None)
        .await
        .expect("put");
    let cases = [
        (Condition::ItemExists, true),
        (Condition::ItemNotExists, false),
        (Condition::AttributeExists("email".into()), true),
        (Condition::AttributeExists("phone".into()), false),
        (Condition::AttributeNotExists("phone".into()), true),
        (Condition::AttributeNotExists("email".into()), false),
        (
            Condition::AttributeEquals("email".into(), json!("a@b.c")),
            true,
        ),
        (
            Condition::AttributeEquals("email".into(), json!("x@b.c")),
            false,
        ),
        (
            Condition::AttributeEquals("phone".into(), json!("1")),
            false,
        ),
        (Condition::VersionEquals(3), true),
        (Condition::VersionEquals(4), false),
        (
            Condition::All(vec![Condition::ItemExists, Condition::VersionEquals(3)]),
            true,
        ),
        (
            Condition::All(vec![Condition::ItemExists, Condition::VersionEquals(2)]),
            false,
        ),
        (Condition::All(vec![]), true),
    ];
    for (condition, holds) in cases {
        let result = store
            .update(
                Context::Identity,
                &key,
                Update::default().set("checked", true),
                Some(condition.clone()),
            )
            .await;
        match (holds, result) {
            (true, Ok(_)) | (false, Err(StoreError::ConditionFailed { .. })) => {}
            (_, other) => panic!(
                "{condition:?} should {}hold: {other:?}",
                if holds { "" } else { "not " }
            ),
        }
    }
}

pub async fn newer_guard_keeps_the_highest_version_whatever_the_order(store: Shared) {
    let pk = fresh_pk();
    let key = Key::new(&pk, "DAILY#2026-01-01");
    // Versions arrive out of order and twice; only increases are applied.
    for version in [3u64, 1, 3, 5, 4, 5, 2] {
        let update = Update::default()
            .set("nutrition_version", version)
            .set("kcal", version * 100);
        let result = store
            .update(
                Context::Dashboard,
                &key,
                update,
                Some(Condition::Newer {
                    attr: "nutrition_version".into(),
                    version,
                }),
            )
            .await;
        match result {
            Ok(_) | Err(StoreError::ConditionFailed { .. }) => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    let row = read_item(&*store, Context::Dashboard, &key)
        .await
        .expect("row");
    assert_eq!(
        (row["nutrition_version"].clone(), row["kcal"].clone()),
        (json!(5), json!(500))
    );
    // Another attribute group of the same row has its own version.
    let other = Condition::Newer {
        attr: "sleep_version".into(),
        version: 1,
    };
    store
        .update(
            Context::Dashboard,
            &key,
            Update::default().set("sleep_version", 1).set("sleep_h", 7),
            Some(other),
        )
        .await
        .expect("independent group");
}

pub async fn items_without_valid_keys_are_rejected(store: Shared) {
    let pk = fresh_pk();
    expect_validation(
        store
            .put(Context::Sleep, item(json!({"pk": pk})), None)
            .await,
        "no sk",
    );
    expect_validation(
        store
            .put(Context::Sleep, item(json!({"pk": pk, "sk": 5})), None)
            .await,
        "numeric sk",
    );
    expect_validation(
        store
            .put(Context::Sleep, item(json!({"pk": "", "sk": "x"})), None)
            .await,
        "empty pk",
    );
    expect_validation(
        store.get(Context::Sleep, &Key::new(&pk, ""), true).await,
        "empty sk on get",
    );
    let page = store
        .query(Context::Sleep, &Query::partition(&pk))
        .await
        .expect("query");
    assert!(page.items.is_empty());
}

pub async fn transaction_applies_every_action(store: Shared) {
    let pk = fresh_pk();
    put_all(
        &*store,
        Context::Activity,
        vec![
            item(json!({"pk": pk, "sk": "WORKOUT#2026-01-01#old", "v": 1})),
            item(json!({"pk": pk, "sk": "TRAINING_BLOCK#2026-01-01#b", "v": 1})),
        ],
    )
    .await;
    store
        .transact(vec![
            TransactAction::Put {
                table: Context::Activity,
                item: item(json!({"pk": pk, "sk": "WORKOUT#2026-01-02#new", "v": 1})),
                condition: Some(Condition::ItemNotExists),
            },
            TransactAction::Update {
                table: Context::Activity,
                key: Key::new(&pk, "TRAINING_BLOCK#2026-01-01#b"),
                update: Update::default().set("v", 2),
                condition: Some(Condition::AttributeEquals("v".into(), json!(1))),
            },
            TransactAction::Delete {
                table: Context::Activity,
                key: Key::new(&pk, "WORKOUT#2026-01-01#old"),
                condition: Some(Condition::ItemExists),
            },
            TransactAction::ConditionCheck {
                table: Context::Activity,
                key: Key::new(&pk, "EXTERNAL#garmin#1"),
                condition: Condition::ItemNotExists,
            },
            plain_put(
                Context::Sleep,
                item(json!({"pk": pk, "sk": "SLEEP#2026-01-02#s"})),
            ),
        ])
        .await
        .expect("transaction");
    let rows = partition_rows(&*store, Context::Activity, &pk).await;
    assert_eq!(
        sks(&rows),
        vec!["TRAINING_BLOCK#2026-01-01#b", "WORKOUT#2026-01-02#new"]
    );
    assert_eq!(rows[0]["v"], json!(2));
    let sleep = read_item(
        &*store,
        Context::Sleep,
        &Key::new(&pk, "SLEEP#2026-01-02#s"),
    )
    .await;
    assert!(sleep.is_some());
}

pub async fn transaction_with_one_failing_condition_writes_nothing(store: Shared) {
    let pk = fresh_pk();
    let pointer = item(json!({"pk": pk, "sk": "EXTERNAL#garmin#abc", "workout_id": "W1"}));
    store
        .put(Context::Activity, pointer.clone(), None)
        .await
        .expect("put");
    let before = partition_rows(&*store, Context::Activity, &pk).await;
    let result = store
        .transact(vec![
            TransactAction::Put {
                table: Context::Activity,
                item: item(json!({"pk": pk, "sk": "WORKOUT#2026-01-02#W2"})),
                condition: Some(Condition::ItemNotExists),
            },
            TransactAction::Put {
                table: Context::Activity,
                item: item(json!({"pk": pk, "sk": "EXTERNAL#garmin#abc", "workout_id": "W2"})),
                condition: Some(Condition::ItemNotExists),
            },
            plain_put(Context::Activity, item(json!({"pk": pk, "sk": "EVT#E2"}))),
        ])
        .await;
    match &result {
        Err(e @ StoreError::TransactionCanceled { reasons }) => {
            assert_eq!(reasons.len(), 3);
            assert_eq!(reasons[0], CancelReason::None);
            assert_eq!(
                reasons[1],
                CancelReason::ConditionFailed {
                    existing: Some(pointer.clone())
                }
            );
            assert_eq!(reasons[2], CancelReason::None);
            assert_eq!(e.failed_conditions(), vec![1]);
            assert!(!e.is_retryable());
        }
        other => panic!("expected a cancelled transaction, got {other:?}"),
    }
    let after = partition_rows(&*store, Context::Activity, &pk).await;
    assert_eq!(
        after, before,
        "a cancelled transaction must write none of its actions"
    );
}

pub async fn transaction_reports_a_failed_condition_check(store: Shared) {
    let pk = fresh_pk();
    let result = store
        .transact(vec![
            TransactAction::ConditionCheck {
                table: Context::Identity,
                key: Key::new(&pk, "PROFILE"),
                condition: Condition::ItemExists,
            },
            plain_put(Context::Identity, item(json!({"pk": pk, "sk": "EVT#E1"}))),
        ])
        .await;
    match result {
        Err(StoreError::TransactionCanceled { reasons }) => {
            assert_eq!(
                reasons,
                vec![
                    CancelReason::ConditionFailed { existing: None },
                    CancelReason::None
                ]
            );
        }
        other => panic!("expected a cancelled transaction, got {other:?}"),
    }
    assert_eq!(
        read_item(&*store, Context::Identity, &Key::new(&pk, "EVT#E1")).await,
        None
    );
}

pub async fn transaction_limits_are_enforced(store: Shared) {
    let pk = fresh_pk();
    let put = |i: usize| progress_put(&pk, i);
    expect_validation(
        store.transact((0..101).map(put).collect()).await,
        "101 actions",
    );
    expect_validation(store.transact(vec![]).await, "no actions");
    expect_validation(
        store.transact(vec![put(1), put(1)]).await,
        "two actions on one item",
    );
    let rows = partition_rows(&*store, Context::Goals, &pk).await;
    assert!(
        rows.is_empty(),
        "rejected transactions wrote {} items",
        rows.len()
    );
    store
        .transact((0..100).map(put).collect())
        .await
        .expect("100 actions are allowed");
    let rows = partition_rows(&*store, Context::Goals, &pk).await;
    assert_eq!(rows.len(), 100);
}

pub async fn query_sort_key_conditions_forward_and_reverse(store: Shared) {
    let pk = fresh_pk();
    let keys = [
        "DAILY_SUMMARY#2026-01-01",
        "MEAL#2026-01-01#a",
        "MEAL#2026-01-01#b",
        "MEAL#2026-01-02#a",
        "MEAL#2026-01-03#a",
        "MEAL_PLAN",
        "SCHEDULED_MEAL#2026-01-01#x",
    ];
    put_all(
        &*store,
        Context::Nutrition,
        keys.iter()
            .map(|sk| item(json!({"pk": pk, "sk": sk})))
            .collect(),
    )
    .await;
    let s = |v: &str| v.to_owned();
    let cases: Vec<(SortKeyCondition, Vec<&str>)> = vec![
        (
            SortKeyCondition::Equals(s("MEAL#2026-01-02#a")),
            vec!["MEAL#2026-01-02#a"],
        ),
        (
            SortKeyCondition::BeginsWith(s("MEAL#")),
            keys[1..5].to_vec(),
        ),
        (
            SortKeyCondition::BeginsWith(s("MEAL#2026-01-01#")),
            keys[1..3].to_vec(),
        ),
        (
            SortKeyCondition::Between(s("MEAL#2026-01-01#b"), s("MEAL#2026-01-03#a")),
            keys[2..5].to_vec(),
        ),
        (
            SortKeyCondition::LessThan(s("MEAL#2026-01-01#b")),
            keys[0..2].to_vec(),
        ),
        (
            SortKeyCondition::LessOrEqual(s("MEAL#2026-01-01#b")),
            keys[0..3].to_vec(),
        ),
        (
            SortKeyCondition::GreaterThan(s("MEAL#2026-01-03#a")),
            keys[5..].to_vec(),
        ),
        (
            SortKeyCondition::GreaterOrEqual(s("MEAL#2026-01-03#a")),
            keys[4..].to_vec(),
        ),
    ];
    for (condition, expected) in cases {
        let query = Query::partition(&pk)
            .sort_key(condition.clone())
            .consistent();
        let forward = all_pages(&*store, Context::Nutrition, query.clone()).await;
        assert_eq!(sks(&forward), expected, "{condition:?} forward");
        let reverse = all_pages(&*store, Context::Nutrition, query.reverse()).await;
        let mut reversed: Vec<&str> = expected.clone();
        reversed.reverse();
        assert_eq!(sks(&reverse), reversed, "{condition:?} reverse");
    }
    let latest = store
        .query(
            Context::Nutrition,
            &Query::partition(&pk)
                .sort_key(SortKeyCondition::BeginsWith(s("MEAL#")))
                .reverse()
                .limit(1)
                .consistent(),
        )
        .await
        .expect("query");
    assert_eq!(sks(&latest.items), vec!["MEAL#2026-01-03#a"]);
}

pub async fn sort_order_is_by_utf8_bytes(store: Shared) {
    let pk = fresh_pk();
    let keys = ["Z", "a", "b1", "z", "é", "ÿ", "中", "\u{FFFF}", "😀"];
    // Written in a scrambled order; read back sorted by bytes, where U+FFFF sorts
    // before U+1F600 (UTF-16 order would put it after).
    for sk in [
        keys[6], keys[0], keys[8], keys[3], keys[5], keys[1], keys[7], keys[4], keys[2],
    ] {
        store
            .put(Context::Sleep, item(json!({"pk": pk, "sk": sk})), None)
            .await
            .expect("put");
    }
    let rows = partition_rows(&*store, Context::Sleep, &pk).await;
    assert_eq!(sks(&rows), keys);
    let mut by_bytes = keys.to_vec();
    by_bytes.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(by_bytes, keys);
}

pub async fn pagination_returns_every_item_exactly_once(store: Shared) {
    let pk = fresh_pk();
    let expected: Vec<String> = (0..57)
        .map(|i| format!("WORKOUT#2026-01-01#{i:03}"))
        .collect();
    let actions = |range: std::ops::Range<usize>| -> Vec<TransactAction> {
        expected[range]
            .iter()
            .map(|sk| plain_put(Context::Activity, item(json!({"pk": pk, "sk": sk}))))
            .collect()
    };
    store.transact(actions(0..30)).await.expect("first half");
    store.transact(actions(30..57)).await.expect("second half");
    for limit in [1, 10, 57, 100] {
        let mut pages = 0;
        let mut seen = Vec::new();
        let mut cursor: Option<Cursor> = None;
        loop {
            let query = Query::partition(&pk)
                .limit(limit)
                .after(cursor.take())
                .consistent();
            let Page {
                items,
                cursor: next,
            } = store.query(Context::Activity, &query).await.expect("query");
            assert!(items.len() <= limit, "a page holds at most the limit");
            seen.extend(sks(&items));
            pages += 1;
            assert!(pages <= 100, "pagination does not end");
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, expected, "limit {limit}");
        let reverse = all_pages(
            &*store,
            Context::Activity,
            Query::partition(&pk).limit(limit).reverse().consistent(),
        )
        .await;
        let mut reversed = expected.clone();
        reversed.reverse();
        assert_eq!(sks(&reverse), reversed, "reverse, limit {limit}");
    }
}

pub async fn bad_cursors_and_limits_are_rejected(store: Shared) {
    let pk = fresh_pk();
    put_all(
        &*store,
        Context::Sleep,
        (0..3)
            .map(|i| item(json!({"pk": pk, "sk": format!("SLEEP#{i}")})))
            .collect(),
    )
    .await;
    expect_validation(
        store
            .query(Context::Sleep, &Query::partition(&pk).limit(0))
            .await,
        "limit 0",
    );
    let garbage = Query::partition(&pk).after(Some(Cursor::from_text("not a cursor!")));
    expect_validation(
        store.query(Context::Sleep, &garbage).await,
        "garbage cursor",
    );
    let page = store
        .query(Context::Sleep, &Query::partition(&pk).limit(1).consistent())
        .await
        .expect("query");
    let cursor = page.cursor.expect("more pages");
    let other = Query::partition(fresh_pk()).after(Some(cursor));
    expect_validation(
        store.query(Context::Sleep, &other).await,
        "cursor of another partition",
    );
    let unknown = IndexQuery::partition("no-such-index", "x");
    expect_validation(
        store.query_index(Context::Sleep, &unknown).await,
        "unknown index",
    );
}

fn goal(pk: &str, id: &str, status: Option<&str>) -> Item {
    let mut goal = item(json!({"pk": pk, "sk": format!("GOAL#{id}"), "kind": "weekly_workouts"}));
    if let Some(status) = status {
        goal.insert("status_pk".into(), json!(format!("{pk}#{status}")));
        goal.insert("status_sk".into(), json!(format!("GOAL#{id}")));
    }
    goal
}

pub async fn sparse_index_membership_follows_the_key_attribute(store: Shared) {
    let pk = fresh_pk();
    let active = format!("{pk}#active");
    let paused = format!("{pk}#paused");
    put_all(
        &*store,
        Context::Goals,
        vec![
            goal(&pk, "g1", Some("active")),
            goal(&pk, "g2", Some("active")),
            goal(&pk, "g3", None),
            item(json!({"pk": pk, "sk": "PROGRESS#g1#2026-01-01T00:00:00.000Z", "value": 1})),
        ],
    )
    .await;
    let in_index = |status: String| {
        let store = store.clone();
        async move {
            sks(&all_index_pages(
                &*store,
                Context::Goals,
                IndexQuery::partition("by-status", status),
            )
            .await)
        }
    };
    assert_eq!(in_index(active.clone()).await, vec!["GOAL#g1", "GOAL#g2"]);
    // Moving g2 to paused moves its index entry.
    let key = Key::new(&pk, "GOAL#g2");
    store
        .update(
            Context::Goals,
            &key,
            Update::default().set("status_pk", paused.clone()),
            None,
        )
        .await
        .expect("pause");
    assert_eq!(in_index(active.clone()).await, vec!["GOAL#g1"]);
    assert_eq!(in_index(paused.clone()).await, vec!["GOAL#g2"]);
    // Removing the attribute removes the entry; the item stays in the table.
    store
        .update(
            Context::Goals,
            &key,
            Update::default().remove("status_pk"),
            None,
        )
        .await
        .expect("remove");
    assert!(in_index(paused.clone()).await.is_empty());
    assert!(read_item(&*store, Context::Goals, &key).await.is_some());
    // Adding the attribute to an item that lacked it adds it.
    store
        .update(
            Context::Goals,
            &Key::new(&pk, "GOAL#g3"),
            Update::default()
                .set("status_pk", active.clone())
                .set("status_sk", "GOAL#g3"),
            None,
        )
        .await
        .expect("activate");
    assert_eq!(in_index(active.clone()).await, vec!["GOAL#g1", "GOAL#g3"]);
    // Deleting the item removes its entry; the returned items are whole items.
    store
        .delete(Context::Goals, &Key::new(&pk, "GOAL#g1"), None)
        .await
        .expect("delete");
    let rows = all_index_pages(
        &*store,
        Context::Goals,
        IndexQuery::partition("by-status", active),
    )
    .await;
    assert_eq!(rows, vec![goal(&pk, "g3", Some("active"))]);
}

pub async fn index_pagination_and_sort_conditions(store: Shared) {
    let day = format!("DAY#{}", UserId::generate());
    let users: Vec<String> = (0..23)
        .map(|i| format!("USER#{i:03}-{}", UserId::generate()))
        .collect();
    for user in &users {
        store
            .put(Context::Insights, item(json!({"pk": user, "sk": "ACTIVE_DAY#2026-01-01", "active_day_pk": day, "active_day_sk": user})), None)
            .await
            .expect("put");
    }
    for limit in [1, 5, 23, 50] {
        let rows = all_index_pages(
            &*store,
            Context::Insights,
            IndexQuery::partition("active-day", &day).limit(limit),
        )
        .await;
        let got: Vec<String> = rows
            .iter()
            .map(|r| r["pk"].as_str().expect("pk").to_owned())
            .collect();
        assert_eq!(got, users, "limit {limit}");
        let rows = all_index_pages(
            &*store,
            Context::Insights,
            IndexQuery::partition("active-day", &day)
                .limit(limit)
                .reverse(),
        )
        .await;
        assert_eq!(rows.len(), users.len());
        assert_eq!(rows[0]["pk"].as_str(), Some(users[22].as_str()));
    }
    let some = all_index_pages(
        &*store,
        Context::Insights,
        IndexQuery::partition("active-day", &day).sort_key(SortKeyCondition::Between(
            users[3].clone(),
            users[6].clone(),
        )),
    )
    .await;
    assert_eq!(some.len(), 4);
    let first = store
        .query_index(
            Context::Insights,
            &IndexQuery::partition("active-day", &day)
                .sort_key(SortKeyCondition::BeginsWith("USER#000".into())),
        )
        .await
        .expect("query");
    assert_eq!(first.items.len(), 1);
}

pub async fn hash_only_index_is_queried_by_partition(store: Shared) {
    let email = format!("{}@example.com", UserId::generate().as_str().to_lowercase());
    let pk = fresh_pk();
    let profile = item(json!({"pk": pk, "sk": "PROFILE", "email_pk": email}));
    store
        .put(Context::Identity, profile.clone(), None)
        .await
        .expect("put");
    store
        .put(
            Context::Identity,
            item(json!({"pk": format!("EMAIL#{email}"), "sk": "EMAIL", "user": pk})),
            None,
        )
        .await
        .expect("put");
    let page = store
        .query_index(
            Context::Identity,
            &IndexQuery::partition("by-email", &email),
        )
        .await
        .expect("query");
    assert_eq!(page.items, vec![profile]);
    let with_sort =
        IndexQuery::partition("by-email", &email).sort_key(SortKeyCondition::Equals("x".into()));
    expect_validation(
        store.query_index(Context::Identity, &with_sort).await,
        "sort condition on a hash-only index",
    );
}

pub async fn index_key_attribute_must_be_a_string(store: Shared) {
    let pk = fresh_pk();
    let mut bad = goal(&pk, "g1", Some("active"));
    bad.insert("status_pk".into(), json!(7));
    expect_validation(
        store.put(Context::Goals, bad, None).await,
        "numeric index key",
    );
    let key = Key::new(&pk, "GOAL#g1");
    assert_eq!(read_item(&*store, Context::Goals, &key).await, None);
    let update = Update::default().set("status_sk", json!(["GOAL#g1"]));
    expect_validation(
        store.update(Context::Goals, &key, update, None).await,
        "list index key",
    );
    assert_eq!(read_item(&*store, Context::Goals, &key).await, None);
}

pub async fn expired_items_are_never_returned(store: Shared) {
    let pk = fresh_pk();
    let now = now_epoch_seconds();
    let gone = item(json!({"pk": pk, "sk": "OAUTH_STATE", "expires_at": now - 10}));
    let live = item(json!({"pk": pk, "sk": "OAUTH_STATE2", "expires_at": now + 3600}));
    let plain = item(json!({"pk": pk, "sk": "OAUTH_STATE3"}));
    put_all(
        &*store,
        Context::Integrations,
        vec![gone, live.clone(), plain.clone()],
    )
    .await;
    assert_eq!(
        read_item(
            &*store,
            Context::Integrations,
            &Key::new(&pk, "OAUTH_STATE")
        )
        .await,
        None
    );
    let rows = partition_rows(&*store, Context::Integrations, &pk).await;
    assert_eq!(rows, vec![live, plain]);
    // Limits count returned items, not expired ones skipped.
    let page = store
        .query(
            Context::Integrations,
            &Query::partition(&pk).limit(1).consistent(),
        )
        .await
        .expect("query");
    assert_eq!(sks(&page.items), vec!["OAUTH_STATE2"]);

    let day = format!("DAY#{}", UserId::generate());
    let marker = |user: &str, ttl: i64| {
        item(
            json!({"pk": user, "sk": "ACTIVE_DAY#2026-01-01", "active_day_pk": day, "active_day_sk": user, "expires_at": ttl}),
        )
    };
    put_all(
        &*store,
        Context::Insights,
        vec![marker("USER#a", now - 5), marker("USER#b", now + 600)],
    )
    .await;
    let rows = all_index_pages(
        &*store,
        Context::Insights,
        IndexQuery::partition("active-day", &day),
    )
    .await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["pk"], json!("USER#b"));
}

pub async fn drain_leaves_nothing_in_table_or_index(store: Shared) {
    let pk = fresh_pk();
    let neighbour = fresh_pk();
    let now = now_epoch_seconds();
    let mut actions: Vec<TransactAction> = (0..60).map(|i| progress_put(&pk, i)).collect();
    actions.push(plain_put(Context::Goals, goal(&pk, "g1", Some("active"))));
    actions.push(plain_put(
        Context::Goals,
        item(json!({"pk": pk, "sk": "DEDUP#x#1", "expires_at": now - 1})),
    ));
    store.transact(actions).await.expect("transaction");
    store
        .put(Context::Goals, goal(&neighbour, "g1", Some("active")), None)
        .await
        .expect("put");

    let deleted = drain_partition(&*store, Context::Goals, &pk)
        .await
        .expect("drain");
    assert_eq!(deleted, 62, "expired items are drained too");
    let rows = partition_rows(&*store, Context::Goals, &pk).await;
    assert!(rows.is_empty());
    let indexed = all_index_pages(
        &*store,
        Context::Goals,
        IndexQuery::partition("by-status", format!("{pk}#active")),
    )
    .await;
    assert!(indexed.is_empty());
    assert_eq!(
        store
            .drain_partition_page(Context::Goals, &pk, 25)
            .await
            .expect("drain"),
        0
    );
    let kept = partition_rows(&*store, Context::Goals, &neighbour).await;
    assert_eq!(kept.len(), 1, "another partition is untouched");
}

pub async fn scan_reads_every_item_of_table_and_index_once(store: Shared) {
    let pk = fresh_pk();
    let mut actions: Vec<TransactAction> = (0..23).map(|i| progress_put(&pk, i)).collect();
    for g in ["g1", "g2", "g3"] {
        actions.push(plain_put(Context::Goals, goal(&pk, g, Some("active"))));
    }
    store.transact(actions).await.expect("transaction");

    let mine = |items: Vec<Item>| -> Vec<String> {
        let mut sks: Vec<String> = items
            .iter()
            .filter(|i| i.get("pk").and_then(|v| v.as_str()) == Some(pk.as_str()))
            .filter_map(|i| i.get("sk").and_then(|v| v.as_str()).map(str::to_owned))
            .collect();
        sks.sort();
        sks
    };
    let table = mine(scan_all(&*store, Context::Goals, None, 7).await);
    assert_eq!(table.len(), 26, "each item exactly once: {table:?}");
    table
        .windows(2)
        .for_each(|w| assert_ne!(w[0], w[1], "duplicate {}", w[0]));

    let indexed = mine(scan_all(&*store, Context::Goals, Some("by-status"), 2).await);
    assert_eq!(
        indexed,
        vec!["GOAL#g1", "GOAL#g2", "GOAL#g3"],
        "only index members"
    );

    let first_page = async |index: Option<&str>, limit: usize| {
        let scan = Scan {
            index: index.map(str::to_owned),
            limit: Some(limit),
            cursor: None,
        };
        store.scan(Context::Goals, &scan).await
    };
    expect_validation(
        first_page(Some("no-such-index"), 5).await,
        "an unknown index",
    );
    expect_validation(first_page(None, 0).await, "a zero limit");
}

pub async fn concurrent_version_guarded_writers_lose_no_update(store: Shared) {
    let pk = fresh_pk();
    let key = Key::new(&pk, "DAILY_SUMMARY#2026-01-01");
    store
        .put(
            Context::Nutrition,
            item(json!({"pk": pk, "sk": key.sk, "version": 0, "count": 0, "writers": []})),
            None,
        )
        .await
        .expect("put");
    let writers = 8;
    let increments = 5;
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let (store, key) = (store.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..increments {
                loop {
                    let current = read_item(&*store, Context::Nutrition, &key)
                        .await
                        .expect("exists");
                    let version = current["version"].as_u64().expect("version");
                    let count = current["count"].as_u64().expect("count");
                    let mut names: BTreeSet<String> =
                        serde_json::from_value(current["writers"].clone()).expect("set");
                    names.insert(format!("w{writer}"));
                    let update = Update::default()
                        .set("version", version + 1)
                        .set("count", count + 1)
                        .set("writers", json!(names));
                    match store
                        .update(
                            Context::Nutrition,
                            &key,
                            update,
                            Some(Condition::VersionEquals(version)),
                        )
                        .await
                    {
                        Ok(_) => break,
                        Err(StoreError::ConditionFailed { .. }) => continue,
                        Err(e) => panic!("unexpected error: {e}"),
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer task");
    }
    let last = read_item(&*store, Context::Nutrition, &key)
        .await
        .expect("exists");
    assert_eq!(last["count"], json!(writers * increments));
    assert_eq!(last["version"], json!(writers * increments));
    assert_eq!(
        last["writers"].as_array().map(Vec::len),
        Some(writers as usize)
    );
}

pub async fn batch_writes_put_and_delete_many_items(store: Shared) {
    let pk = fresh_pk();
    let sk = |prefix: &str, n: usize| format!("{prefix}#{n:03}");
    for n in 0..10 {
        store
            .put(
                Context::Dashboard,
                item(json!({"pk": pk, "sk": sk("A", n), "v": 1})),
                None,
            )
            .await
            .expect("put");
    }
    // More writes than one DynamoDB request takes (25), puts and deletes mixed.
    let mut writes: Vec<BatchWrite> = (0..60)
        .map(|n| BatchWrite::Put(item(json!({"pk": pk, "sk": sk("B", n), "v": n}))))
        .collect();
    writes.extend((0..5).map(|n| BatchWrite::Delete(Key::new(&pk, sk("A", n)))));
    writes.push(BatchWrite::Put(item(
        json!({"pk": pk, "sk": sk("A", 5), "v": 2}),
    )));
    // Deleting what is not there is no error.
    writes.push(BatchWrite::Delete(Key::new(&pk, sk("C", 0))));
    store
        .write_batch(Context::Dashboard, writes)
        .await
        .expect("batch");
    let items = all_pages(
        &*store,
        Context::Dashboard,
        Query::partition(&pk).limit(40).consistent(),
    )
    .await;
    let expected: Vec<String> = (5..10)
        .map(|n| sk("A", n))
        .chain((0..60).map(|n| sk("B", n)))
        .collect();
    assert_eq!(sks(&items), expected);
    assert_eq!(items[0]["v"], json!(2), "a put replaces the item");
    assert_eq!(items[10]["v"], json!(5));

    // The same item twice is refused, and nothing of the batch is written.
    let twice = vec![
        BatchWrite::Put(item(json!({"pk": pk, "sk": sk("D", 0)}))),
        BatchWrite::Put(item(json!({"pk": pk, "sk": sk("D", 0), "v": 1}))),
    ];
    assert!(matches!(
        store.write_batch(Context::Dashboard, twice).await,
        Err(StoreError::Validation(_))
    ));
    let key = Key::new(&pk, sk("D", 0));
    assert_eq!(read_item(&*store, Context::Dashboard, &key).await, None);
}
