//! The nightly readiness job as `vitals serve` and the Lambda run it, on a clock the
//! test controls, on the embedded store and on DynamoDB (the emulator named by
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_goes_on_from_where_a_stopped_run_left_the_day() {
    nightly::resumes(backends::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_goes_on_from_where_a_stopped_run_left_the_day() {
    nightly::resumes(backends::dynamodb().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_keeps_no_erased_users_place_in_a_checkpoint() {
    nightly::forgets_an_erased_users_place(backends::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_keeps_no_erased_users_place_in_a_checkpoint() {
    nightly::forgets_an_erased_users_place(backends::dynamodb().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_scores_activity_recorded_after_the_day_was_finished() {
    nightly::scores_late_activity(backends::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_scores_activity_recorded_after_the_day_was_finished() {
    nightly::scores_late_activity(backends::dynamodb().await).await;
}
