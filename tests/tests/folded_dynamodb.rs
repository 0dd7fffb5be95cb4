//! The live-safe fold view (`infra::folded::Folded`) on the DynamoDB backend against
//! the emulator named by `VITALS_TEST_DYNAMODB_ENDPOINT`: its guarded writes are
//! DynamoDB's condition expressions (equality of nested maps and lists included).

use vitals_tests::backends::dynamodb;
use vitals_tests::folded_cases as cases;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_each_changed_row_once() {
    cases::writes_each_changed_row_once(dynamodb().await.store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_overwrites_another_writer() {
    cases::never_overwrites_another_writer(dynamodb().await.store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_what_it_cannot_keep_whole() {
    cases::refuses_what_it_cannot_keep_whole(dynamodb().await.store).await;
}
