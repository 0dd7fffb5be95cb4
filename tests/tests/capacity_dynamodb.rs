//! The capacity units the counting store computes (DynamoDB's billing rules, from the
//! items a request touches) against the units the DynamoDB endpoint reports consuming
//! (`ReturnConsumedCapacity`), request by request, on the emulator
//! `VITALS_TEST_DYNAMODB_ENDPOINT` names: single writes growing and shrinking an item,
//! an index entry added, rewritten, moved and removed, a transaction, and reads.

use events_schema::Context;
use infra::Store;
use infra::counting::CountingStore;
use infra::store::{Item, Key, Query, TransactAction, Update};
use serde_json::{Value, json};
use std::sync::Arc;
use vitals_tests::backends;

fn item(value: Value) -> Item {
    value.as_object().cloned().expect("an object")
}

/// Units DynamoDB reported for the given operations so far.
fn measured(store: &infra::dynamodb::DynamoStore, operations: &[&str]) -> f64 {
    store
        .metrics()
        .snapshot()
        .iter()
        .filter(|(op, _)| operations.contains(op))
        .map(|(_, stats)| stats.capacity_units)
        .sum()
}

const WRITES: [&str; 4] = ["PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"];

#[tokio::test]
async fn computed_capacity_matches_what_dynamodb_reports() {
    let dynamo = backends::dynamodb_store().await;
    let counting = CountingStore::new(Arc::new(dynamo.clone()));
    let user = format!("USER#{}", ulid::Ulid::new());
    let big = "x".repeat(1500);

    // Each write, then the units both ways so far.
    let mut steps: Vec<(&str, f64, f64)> = Vec::new();
    let mut check = |step: &'static str, counting: &CountingStore| {
        steps.push((
            step,
            counting.capacity().write_units,
            measured(&dynamo, &WRITES),
        ));
    };
    let sleep = Key::new(&user, "NIGHT#2026-03-01");
    counting
        .put(
            Context::Sleep,
            item(json!({"pk": user, "sk": sleep.sk, "minutes": 420})),
            None,
        )
        .await
        .expect("put");
    check("put a small item", &counting);
    counting
        .put(
            Context::Sleep,
            item(json!({"pk": user, "sk": sleep.sk, "notes": big})),
            None,
        )
        .await
        .expect("put");
    check("grow it past 1 KB", &counting);
    counting
        .update(
            Context::Sleep,
            &sleep,
            Update::default().set("minutes", json!(400)),
            None,
        )
        .await
        .expect("update");
    check("update the large item", &counting);

    let goal = Key::new(&user, "GOAL#1");
    let goal_item = |status: &str, title: &str| {
        item(
            json!({"pk": user, "sk": "GOAL#1", "status_pk": format!("{user}#{status}"),
            "status_sk": "GOAL#1", "title": title}),
        )
    };
    counting
        .put(Context::Goals, goal_item("active", "Protein"), None)
        .await
        .expect("put");
    check("a goal: its index entry added", &counting);
    counting
        .put(Context::Goals, goal_item("active", "More protein"), None)
        .await
        .expect("put");
    check("its index entry rewritten", &counting);
    counting
        .put(Context::Goals, goal_item("paused", "More protein"), None)
        .await
        .expect("put");
    check("its index entry moved", &counting);
    counting
        .transact(vec![
            TransactAction::Put {
                table: Context::Nutrition,
                item: item(json!({"pk": user, "sk": "MEAL#1", "name": "Oats"})),
                condition: None,
            },
            TransactAction::Put {
                table: Context::Nutrition,
                item: item(json!({"pk": user, "sk": "EVT#1", "payload": big})),
                condition: None,
            },
        ])
        .await
        .expect("transaction");
    check("a transaction of two puts", &counting);
    counting
        .delete(Context::Goals, &goal, None)
        .await
        .expect("delete");
    check("the goal deleted, its entry too", &counting);

    for (step, computed, reported) in &steps {
        println!("{step:<40} computed {computed:>5} reported {reported:>5}");
    }
    for (step, computed, reported) in &steps {
        assert_eq!(computed, reported, "after {step}: {steps:?}");
    }
    assert!(
        counting.capacity().cdc_units > 0.0,
        "sleep and nutrition stream"
    );

    // Reads: a consistent get, an eventually consistent one, a query.
    counting.take_capacity();
    let before = measured(&dynamo, &["GetItem", "Query"]);
    counting
        .get(Context::Sleep, &sleep, true)
        .await
        .expect("get");
    counting
        .get(Context::Sleep, &sleep, false)
        .await
        .expect("get");
    counting
        .query(
            Context::Nutrition,
            &Query::partition(user.clone()).consistent(),
        )
        .await
        .expect("query");
    let reported = measured(&dynamo, &["GetItem", "Query"]) - before;
    let computed = counting.capacity().read_units;
    println!("reads: computed {computed} reported {reported}");
    assert_eq!(computed, reported);
}
