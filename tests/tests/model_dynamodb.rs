//! The model-based test on DynamoDB (the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`), smaller than on the embedded store: a few seeds,
//! every delivery, every read row compared with the reference model.

use vitals_tests::model::{Size, check_seeds};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_row_matches_the_model_under_every_delivery() {
    let seeds: Vec<u64> = match std::env::var("VITALS_MODEL_SEED") {
        Ok(seed) => vec![seed.parse().expect("VITALS_MODEL_SEED is a number")],
        Err(_) => vec![101, 102],
    };
    let size = Size {
        users: 2,
        steps: 60,
    };
    let (cases, compared) = check_seeds(seeds, size, vitals_tests::backends::dynamodb).await;
    eprintln!("model test (dynamodb): {cases} cases, {compared} values compared");
}
