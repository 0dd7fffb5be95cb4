//! Erasure covers every place Vitals keeps a user's data, SQS dead letters included, on
//! the aws-local shape (emulator named by `VITALS_TEST_DYNAMODB_ENDPOINT`, required):
//! `vitals work` dead-letters a wearable delivery it cannot apply into SQS, with the
//! record's whole item image; `vitals admin residue` reports it; the account's erasure
//! removes it, and residue is then clean.

mod support;

use commands::CommandMeta;
use commands::handlers::Handlers;
use commands::identity::IdentityCommands;
use commands::integrations::{
    IntegrationCommands, Providers, SandboxProvider, WebhookPayload, sign,
};
use events_schema::ids::UserId;
use infra::Store;
use infra::store::now_epoch_seconds;
use infra::table::Table;
use serde_json::json;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Case;
use support::aws_local::{Tables, Worker};

const SECRET: &str = "sandbox-webhook-secret-for-tests";

/// Messages of a queue that mention `needle`, read without hiding them.
async fn letters_mentioning(sqs: &aws_sdk_sqs::Client, queue: &str, needle: &str) -> usize {
    let url = sqs
        .get_queue_url()
        .queue_name(queue)
        .send()
        .await
        .expect("queue exists")
        .queue_url
        .expect("url");
    let mut found = std::collections::BTreeSet::new();
    // Several receives: a queue hands out a sample per call.
    for _ in 0..5 {
        let received = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .send()
            .await
            .expect("receive");
        for message in received.messages.unwrap_or_default() {
            if message.body().unwrap_or_default().contains(needle) {
                found.insert(message.message_id().unwrap_or_default().to_owned());
            }
        }
    }
    found.len()
}

fn residue(args: &[&str], user: &UserId) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .args([
            "admin",
            "residue",
            user.as_str(),
            "--backend",
            "dynamodb",
            "--dlq",
            "sqs",
        ])
        .args(args)
        .output()
        .expect("residue runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// One user's dead letter, then her erasure, on one set of tables: named cases, in
/// order, each saying its name when it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erasure_removes_the_users_sqs_dead_letters() {
    let tables = Tables::new("e");
    tables.bootstrap(&[]);
    let mut worker = Worker::spawn(&tables.args());

    let config = infra::aws_client::load(&tables.settings()).await;
    let sqs = infra::aws_client::sqs(&config);
    let store = tables.store().await;
    let identity = IdentityCommands::new(Table::new(store.clone()));
    let registered = identity
        .register(
            &CommandMeta::new(UserId::generate()),
            serde_json::from_value(json!({"email": format!("{}ana@example.com", tables.prefix), "password": "correct horse battery",
                                         "display_name": "Ana", "timezone": "UTC"}))
            .expect("input"),
        )
        .await
        .expect("registered")
        .value;
    let meta = CommandMeta::new(registered.clone());
    let queue = format!("{}activity-from-integrations-dlq", tables.prefix);
    let args = tables.args();
    a_delivery_is_dead_lettered(&store, &meta, &registered).await;
    residue_reports_the_dead_letter(&args, &sqs, &queue, &registered).await;
    the_erasure_removes_it(&args, &store, &identity, &sqs, &queue, &meta).await;
    let status = tokio::task::block_in_place(|| worker.stop());
    assert!(status.success(), "{status:?}");
}

/// A wearable connected, then a workout the activity context refuses (no duration):
/// dead-lettered, whole.
async fn a_delivery_is_dead_lettered(store: &Arc<dyn Store>, meta: &CommandMeta, user: &UserId) {
    let _case = Case("a delivery is dead-lettered");
    let providers = Providers::sandbox(SECRET);
    let integrations: IntegrationCommands =
        Handlers::new(Table::new(store.clone())).with_services(Arc::new(providers));
    let started = integrations
        .start_connect(meta, "sandbox")
        .await
        .expect("connect")
        .value;
    let provider_user = format!("watch-{}", user.as_str().to_lowercase());
    integrations
        .complete_connect(
            meta,
            "sandbox",
            &started.state,
            &SandboxProvider::code_for(&provider_user, &started.authorize_url),
        )
        .await
        .expect("connected");
    let payload: WebhookPayload = serde_json::from_value(json!({"delivery_id": "d-1", "provider_user_id": provider_user,
        "workouts": [{"external_id": "bad-1", "sport": "run", "started_at": "2026-03-01T07:00:00.000Z",
                      "duration_s": 0, "distance_m": null, "calories": null}]}))
    .expect("payload");
    let body = serde_json::to_vec(&payload).expect("json");
    let now = now_epoch_seconds();
    integrations
        .receive_webhook(
            "sandbox",
            &now.to_string(),
            &sign(SECRET.as_bytes(), now, &body),
            &body,
        )
        .await
        .expect("accepted");
}

/// The dead letter reaches SQS, and `vitals admin residue` reports it.
async fn residue_reports_the_dead_letter(
    args: &[&str],
    sqs: &aws_sdk_sqs::Client,
    queue: &str,
    user: &UserId,
) {
    let _case = Case("residue reports the dead letter");
    let deadline = Instant::now() + Duration::from_secs(60);
    while letters_mentioning(sqs, queue, user.as_str()).await == 0 {
        assert!(Instant::now() < deadline, "no dead letter in {queue}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (clean, report) = residue(args, user);
    assert!(!clean, "residue reports the dead letter: {report}");
    assert!(report.contains("activity-from-integrations"), "{report}");
}

/// The account's erasure completes, the dead letter with it; residue is then clean.
async fn the_erasure_removes_it(
    args: &[&str],
    store: &Arc<dyn Store>,
    identity: &IdentityCommands,
    sqs: &aws_sdk_sqs::Client,
    queue: &str,
    meta: &CommandMeta,
) {
    let _case = Case("the erasure removes it");
    let registered = &meta.user;
    identity
        .request_deletion(meta, "correct horse battery")
        .await
        .expect("deletion requested");
    let identity_table = Table::<infra::table::contexts::Identity>::new(store.clone());
    let deadline = Instant::now() + Duration::from_secs(90);
    while !projectors::erasure::is_complete(&identity_table, registered)
        .await
        .expect("status")
    {
        assert!(Instant::now() < deadline, "erasure did not complete");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        letters_mentioning(sqs, queue, registered.as_str()).await,
        0,
        "the dead letter with the user's data is gone"
    );
    let (clean, report) = residue(args, registered);
    assert!(clean, "nothing left: {report}");
}
