//! The model-based test on the embedded store: seeded random histories, every delivery,
//! every read row compared with the reference model (see `vitals_tests::model`).
//! `VITALS_MODEL_SEED=<n>` runs one seed; `VITALS_MODEL_CASES=<n>` changes how many.

use vitals_tests::model::{Size, check_seeds};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_row_matches_the_model_under_every_delivery() {
    let seeds: Vec<u64> = match std::env::var("VITALS_MODEL_SEED") {
        Ok(seed) => vec![seed.parse().expect("VITALS_MODEL_SEED is a number")],
        Err(_) => {
            let cases = std::env::var("VITALS_MODEL_CASES")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(24);
            (1..=cases).collect()
        }
    };
    let size = Size {
        users: 3,
        steps: 90,
    };
    let (cases, compared) = check_seeds(seeds, size, vitals_tests::backends::embedded).await;
    eprintln!("model test (embedded): {cases} cases, {compared} values compared");
}
