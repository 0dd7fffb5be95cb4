//! An event written by a newer release than the running one (a rolling deployment) is
//! neither guessed at nor skipped: every subscription that consumes it dead-letters the
//! whole record, with an error saying to redrive it on the newer release, and writes
//! nothing; the version this release writes, and the older one it upcasts, apply.

use events_schema::Context;
use events_schema::envelope::OUTBOX_ATTR;
use infra::feed::FeedRecord;
use infra::store::Key;
use serde_json::{Value, json};
use vitals_tests::pipeline;

/// The stored v1 `WorkoutRecorded` of the corpus, as `version` of it for user `user`.
fn workout_recorded(user: &str, version: u32) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../events-schema/corpus/WorkoutRecorded.v1.json"
    );
    let mut envelope: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("corpus envelope"))
            .expect("json");
    envelope["user_id"] = json!(user);
    envelope["event_id"] = json!(format!("E{user}{version}"));
    envelope["schema_version"] = json!(version);
    if version >= 2 {
        envelope["payload"]["workout"]["perceived_effort"] = json!(null);
    }
    envelope
}

fn record(envelope: Value) -> FeedRecord {
    let user = envelope["user_id"].as_str().unwrap_or_default().to_owned();
    let id = envelope["event_id"].as_str().unwrap_or_default().to_owned();
    let mut item = infra::store::Item::new();
    item.insert(OUTBOX_ATTR.into(), envelope);
    FeedRecord {
        position: format!("1{id}"),
        table: Context::Activity,
        pk: format!("USER#{user}"),
        sk: format!("EVT#{id}"),
        old_image: None,
        new_image: Some(item),
        fault: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_of_a_newer_release_waits_as_a_dead_letter_and_writes_nothing() {
    let (store, dead_letters, _dir) = pipeline::open_with_dead_letters();
    let handlers = pipeline::handlers(&store, &dead_letters, |s| {
        s.source() == Context::Activity && s.consumes().contains(&"WorkoutRecorded")
    });
    assert!(handlers.len() >= 4);
    for (user, version) in [("UOLD", 1), ("UNOW", 2), ("UNEXT", 3)] {
        let record = record(workout_recorded(user, version));
        for handler in &handlers {
            handler
                .handle(&record)
                .await
                .expect("applied or dead-lettered");
        }
    }
    let day = |user: &str| Key::new(format!("USER#{user}"), "DAILY#2026-12-02");
    for user in ["UOLD", "UNOW"] {
        let row = store
            .get(Context::Dashboard, &day(user), true)
            .await
            .expect("get");
        assert!(
            row.is_some(),
            "{user}'s workout (a version this release reads) is projected"
        );
    }
    let row = store
        .get(Context::Dashboard, &day("UNEXT"), true)
        .await
        .expect("get");
    assert!(row.is_none(), "a newer version writes nothing");
    for handler in &handlers {
        let name = handler.projector().name();
        let letters = pipeline::letters_of(&dead_letters, handler).await;
        assert_eq!(letters.len(), 1, "{name}: the v3 event, only");
        assert_eq!(letters[0].record.pk, "USER#UNEXT");
        assert!(
            letters[0].error.contains("newer release") && letters[0].error.contains("v3"),
            "{name}: {}",
            letters[0].error
        );
        assert_eq!(
            letters[0].attempts, 1,
            "{name}: not retried, retrying cannot help"
        );
    }
}
