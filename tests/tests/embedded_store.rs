//! Behaviour only the embedded backend has: its change log (of the outbox items, written
//! in the same commit as the items), TTL purging, persistence across reopen, exclusive
//! opening, and group commit under concurrency.

use events_schema::Context;
use infra::Store;
use infra::embedded::EmbeddedStore;
use infra::store::{Condition, Key, StoreError, TransactAction, Update, now_epoch_seconds};
use serde_json::json;
use std::sync::Arc;
use vitals_tests::conformance::{
    fresh_pk, item, plain_put, put_all, put_if_absent, put_json, put_key, read_item,
};

fn open() -> (EmbeddedStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    (EmbeddedStore::open(dir.path()).expect("opens"), dir)
}

#[tokio::test]
async fn change_log_holds_every_committed_outbox_write_with_both_images() {
    let (store, _dir) = open();
    let pk = fresh_pk();
    let key = Key::new(&pk, "EVT#g1");
    put_json(
        &store,
        Context::Goals,
        json!({"pk": pk, "sk": "EVT#g1", "v": 1}),
    )
    .await;
    store
        .update(Context::Goals, &key, Update::default().set("v", 2), None)
        .await
        .expect("update");
    // A failed condition and a cancelled transaction add nothing to the log.
    refused_again(&store, &pk, "EVT#g1").await;
    let cancelled = store
        .transact(vec![
            plain_put(Context::Goals, item(json!({"pk": pk, "sk": "EVT#2"}))),
            TransactAction::ConditionCheck {
                table: Context::Goals,
                key: Key::new(&pk, "GOAL#none"),
                condition: Condition::ItemExists,
            },
        ])
        .await;
    assert!(matches!(
        cancelled,
        Err(StoreError::TransactionCanceled { .. })
    ));
    // Nor do what no consumer reads: an item that is not an outbox item, and the
    // removal of an outbox item.
    put_json(&store, Context::Goals, json!({"pk": pk, "sk": "GOAL#g1"})).await;
    store
        .delete(Context::Goals, &key, None)
        .await
        .expect("delete");
    assert!(
        read_item(&store, Context::Goals, &Key::new(&pk, "GOAL#g1"))
            .await
            .is_some()
    );

    let log = store.changes_after(0, 100).await.expect("log");
    let seqs: Vec<u64> = log.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, vec![1, 2]);
    assert!(
        log.iter()
            .all(|r| r.table == Context::Goals && r.pk == pk && r.sk == "EVT#g1")
    );
    assert_eq!(
        (
            log[0].old.clone(),
            log[0].new.as_ref().map(|i| i["v"].clone())
        ),
        (None, Some(json!(1)))
    );
    assert_eq!(log[1].old.as_ref().map(|i| i["v"].clone()), Some(json!(1)));
    assert_eq!(log[1].new.as_ref().map(|i| i["v"].clone()), Some(json!(2)));
    assert_eq!(store.changes_after(1, 100).await.expect("log").len(), 1);
    assert_eq!(store.last_sequence().await.expect("seq"), 2);
}

#[tokio::test]
async fn tables_without_a_stream_do_not_publish() {
    let (store, _dir) = open();
    let pk = "WEATHER#u4pruyd#2026-01-01T10";
    put_json(
        &store,
        Context::Environment,
        json!({"pk": pk, "sk": "EVT#1", "temp_c": 4}),
    )
    .await;
    assert!(store.changes_after(0, 10).await.expect("log").is_empty());
}

#[tokio::test]
async fn expired_items_are_purged_and_their_removal_publishes_nothing() {
    let (store, _dir) = open();
    let pk = fresh_pk();
    let now = now_epoch_seconds();
    let items = vec![
        item(json!({"pk": pk, "sk": "EVT#A", "expires_at": now - 1})),
        item(json!({"pk": pk, "sk": "EVT#B", "expires_at": now + 3600})),
        item(json!({"pk": pk, "sk": "EVT#C"})),
    ];
    put_all(&store, Context::Integrations, items).await;
    // Moving an item's TTL forward moves its expiry entry.
    store
        .update(
            Context::Integrations,
            &Key::new(&pk, "EVT#B"),
            Update::default().set("expires_at", now - 2),
            None,
        )
        .await
        .expect("update");
    assert_eq!(store.last_sequence().await.expect("seq"), 4);
    assert_eq!(store.purge_expired(now, 100).await.expect("purge"), 2);
    assert_eq!(store.purge_expired(now, 100).await.expect("purge"), 0);
    // An outbox item's removal is no event: the log holds nothing of it.
    assert!(store.changes_after(4, 10).await.expect("log").is_empty());
    // C, without a TTL, stays; a put on A's key now creates a fresh item.
    assert!(
        read_item(&store, Context::Integrations, &Key::new(&pk, "EVT#C"))
            .await
            .is_some()
    );
    put_if_absent(
        &store,
        Context::Integrations,
        item(json!({"pk": pk, "sk": "EVT#A"})),
    )
    .await
    .expect("A is gone");
}

#[tokio::test]
async fn data_and_sequence_survive_reopening() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let pk = fresh_pk();
    {
        let store = EmbeddedStore::open(dir.path()).expect("opens");
        put_key(&store, Context::Sleep, &pk, "EVT#2026-01-01#s").await;
        let second = EmbeddedStore::open(dir.path());
        match second {
            Err(StoreError::Backend(message)) => {
                assert!(message.contains("already open"), "{message}")
            }
            other => panic!("a second open must be refused, got {other:?}"),
        }
    }
    let store = EmbeddedStore::open(dir.path()).expect("reopens");
    assert!(
        read_item(&store, Context::Sleep, &Key::new(&pk, "EVT#2026-01-01#s"))
            .await
            .is_some()
    );
    put_key(&store, Context::Sleep, &pk, "EVT#2026-01-02#s").await;
    let log = store.changes_after(0, 10).await.expect("log");
    assert_eq!(log.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_are_all_committed_in_order() {
    let (store, _dir) = open();
    let store = Arc::new(store);
    let pk = fresh_pk();
    let mut tasks = Vec::new();
    for writer in 0..64 {
        let (store, pk) = (store.clone(), pk.clone());
        tasks.push(tokio::spawn(async move {
            let actions = (0..3)
                .map(|part| TransactAction::Put {
                    table: Context::Activity,
                    item: item(json!({"pk": pk, "sk": format!("EVT#{writer:02}#{part}")})),
                    condition: Some(Condition::ItemNotExists),
                })
                .collect();
            store.transact(actions).await
        }));
    }
    for task in tasks {
        task.await.expect("task").expect("transaction");
    }
    let log = store.changes_after(0, 1000).await.expect("log");
    assert_eq!(log.len(), 192);
    assert!(
        log.iter().enumerate().all(|(i, r)| r.seq == i as u64 + 1),
        "gap-free sequence"
    );
    // The three changes of one transaction are adjacent in the log.
    for chunk in log.chunks(3) {
        let writer = &chunk[0].sk[..7];
        assert!(
            chunk.iter().all(|r| &r.sk[..7] == writer),
            "interleaved transactions: {chunk:?}"
        );
    }
}

#[tokio::test]
async fn trimming_the_change_log_can_empty_it_and_keeps_its_numbering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pk = fresh_pk();
    {
        let store = EmbeddedStore::open(dir.path()).expect("store");
        for n in 0..10 {
            put_key(&store, Context::Nutrition, &pk, &format!("EVT#{n}")).await;
        }
        assert_eq!(store.last_sequence().await.expect("seq"), 10);
        assert_eq!(store.trim_changes(4, 100).await.expect("trim"), 4);
        let left = store.changes_after(0, 100).await.expect("changes");
        assert_eq!(left.first().map(|r| r.seq), Some(5));
        assert_eq!(
            store.trim_changes(u64::MAX, 3).await.expect("trim"),
            3,
            "the limit holds"
        );
        // Asked to trim everything, it does: nothing of what was processed stays (an
        // erased user's last event among it).
        assert_eq!(store.trim_changes(u64::MAX, 100).await.expect("trim"), 3);
        assert!(
            store
                .changes_after(0, 100)
                .await
                .expect("changes")
                .is_empty()
        );
        assert_eq!(store.last_sequence().await.expect("seq"), 10);
        store.close();
    }
    // Numbering goes on after a restart, from the empty log.
    let store = EmbeddedStore::open(dir.path()).expect("reopen");
    assert_eq!(store.last_sequence().await.expect("seq"), 10);
    put_key(&store, Context::Nutrition, &pk, "EVT#new").await;
    assert_eq!(store.last_sequence().await.expect("seq"), 11);
    let log = store.changes_after(0, 100).await.expect("changes");
    assert_eq!(log.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![11]);
    store.close();
}

#[tokio::test]
async fn the_writer_counts_its_requests_commits_and_time() {
    let (store, _dir) = open();
    let pk = fresh_pk();
    let start = store.writer_totals();
    for n in 0..3 {
        put_key(&store, Context::Goals, &pk, &format!("GOAL#{n}")).await;
    }
    // A request refused by its condition is still a request the writer answered.
    refused_again(&store, &pk, "GOAL#0").await;
    let done = store.writer_totals().since(&start);
    // One after the other, each request is a commit of its own; the refused one wrote
    // no item.
    assert_eq!((done.requests, done.commits, done.items), (4, 4, 3));
    assert!(done.busy >= done.committing, "{done:?}");
    assert!(done.committing > std::time::Duration::ZERO, "{done:?}");

    // Concurrent requests share commits: fewer commits than requests, none lost.
    let store = Arc::new(store);
    let before = store.writer_totals();
    let writes: Vec<_> = (0..64)
        .map(|n| {
            let (store, pk) = (store.clone(), pk.clone());
            tokio::spawn(async move {
                store
                    .put(
                        Context::Goals,
                        item(json!({"pk": pk, "sk": format!("MANY#{n}")})),
                        None,
                    )
                    .await
            })
        })
        .collect();
    for write in writes {
        write.await.expect("task").expect("put");
    }
    let done = store.writer_totals().since(&before);
    assert_eq!((done.requests, done.items), (64, 64));
    assert!((1..=64).contains(&done.commits), "{done:?}");

    // A transaction counts every item it writes, a condition check none.
    let before = store.writer_totals();
    store
        .transact(vec![
            plain_put(Context::Goals, item(json!({"pk": pk, "sk": "TXN#1"}))),
            plain_put(Context::Goals, item(json!({"pk": pk, "sk": "TXN#2"}))),
            TransactAction::ConditionCheck {
                table: Context::Goals,
                key: Key::new(&pk, "GOAL#0"),
                condition: Condition::ItemExists,
            },
        ])
        .await
        .expect("transaction");
    let done = store.writer_totals().since(&before);
    assert_eq!((done.requests, done.items), (1, 2));
}

/// Puts the goal `sk` of `pk` if absent, where it is present: the store must refuse it.
async fn refused_again(store: &EmbeddedStore, pk: &str, sk: &str) {
    let again = item(json!({"pk": pk, "sk": sk}));
    let refused = put_if_absent(store, Context::Goals, again).await;
    assert!(
        matches!(refused, Err(StoreError::ConditionFailed { .. })),
        "{refused:?}"
    );
}
