//! The history screens page through two years of data with every item exactly once, on
//! the embedded store (every day) and on DynamoDB (the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`; every fifth day, to keep the run short).

use vitals_tests::backends;
use vitals_tests::history_pages::{Span, check};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_two_years_page_exactly_once() {
    let span = Span {
        days: 730,
        every: 1,
        meals: 130,
        limits: &[7, 50, 100],
    };
    let listed = check(backends::embedded().await, span).await;
    eprintln!("history pages (embedded): {listed} items listed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_two_years_page_exactly_once() {
    let span = Span {
        days: 730,
        every: 5,
        meals: 60,
        limits: &[7, 100],
    };
    let listed = check(backends::dynamodb().await, span).await;
    eprintln!("history pages (dynamodb): {listed} items listed");
}
