//! The nightly readiness job as `vitals serve` schedules it, on a clock the test
//! controls, on the embedded store and on DynamoDB (the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`).

use vitals_tests::{backends, nightly};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_scores_active_users_once_their_day_has_ended() {
    nightly::check(backends::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_scores_active_users_once_their_day_has_ended() {
    nightly::check(backends::dynamodb().await).await;
}
