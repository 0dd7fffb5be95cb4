//! The recording store holds the real code to its declarations: a handler whose call
//! matches no declared pattern is reported with the call and the code that made it, and
//! an item written with an attribute its kind does not declare is reported too.

use events_schema::Context;
use events_schema::time::{Clock, Timestamp};
use infra::Store;
use infra::recorded::Recorded;
use infra::store::Item;
use serde_json::json;
use std::sync::Arc;
use vitals_tests::commands::World;
use vitals_tests::commands::nutrition::meal;

fn store() -> (Arc<dyn Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = infra::embedded::EmbeddedStore::open(dir.path()).expect("store");
    (Arc::new(store), dir)
}

fn clock() -> Clock {
    Clock::manual(Timestamp::parse("2026-03-02T08:00:00.000Z").expect("instant"))
}

/// Logs a meal through the real handler, recorded against `catalog`.
async fn log_a_meal(catalog: Vec<&'static infra::access::AccessPattern>) -> Recorded {
    let (store, _dir) = store();
    let recorded = Recorded::recording(store.clone(), catalog);
    let world = World::recorded(store, clock(), &recorded);
    world
        .log_meal(meal("2026-03-02T07:30:00.000Z", "420.5", "30"))
        .await;
    recorded
}

#[tokio::test]
async fn a_declared_handler_passes() {
    let recorded = log_a_meal(vitals_tests::access::catalog()).await;
    recorded.all_declared().expect("logging a meal is declared");
    assert!(
        recorded.exercised().iter().any(
            |shape| shape.starts_with("TransactWriteItems of [put nutrition `USER#…`/`MEAL#…`")
        ),
        "{:?}",
        recorded.exercised()
    );
}

#[tokio::test]
async fn an_undeclared_call_fails_naming_the_call_and_its_code() {
    // The same handler, with its transaction's pattern left out of the catalog.
    let without: Vec<_> = vitals_tests::access::catalog()
        .into_iter()
        .filter(|p| p.name != "log a meal")
        .collect();
    let recorded = log_a_meal(without).await;
    let report = recorded
        .all_declared()
        .expect_err("the meal's transaction is undeclared");
    assert!(
        report.contains("TransactWriteItems of [put nutrition `USER#…`/`MEAL#…`"),
        "{report}"
    );
    assert!(
        report.contains("commands/src/nutrition/meals.rs"),
        "{report}"
    );
    assert!(report.contains("1 call shape(s)"), "{report}");
}

#[tokio::test]
async fn an_undeclared_attribute_or_kind_fails() {
    let (store, _dir) = store();
    let recorded = Recorded::recording(store, vitals_tests::access::catalog());
    let mut item = Item::new();
    item.insert("pk".into(), json!("USER#01J0000000000000000000000"));
    item.insert("sk".into(), json!("WINDOW"));
    item.insert("hwm".into(), json!(3));
    item.insert("hwn".into(), json!("a typo"));
    recorded
        .put(Context::Dashboard, item.clone(), None)
        .await
        .expect("written");
    item.insert("sk".into(), json!("WIDGET"));
    recorded
        .put(Context::Dashboard, item, None)
        .await
        .expect("written");
    let report = recorded.all_declared().expect_err("two strays");
    assert!(
        report.contains("dashboard `USER#`/`WINDOW`: attribute `hwn` (S) is not declared"),
        "{report}"
    );
    assert!(
        report.contains("an item of an undeclared kind: dashboard `USER#`/`WIDGET`"),
        "{report}"
    );
}
