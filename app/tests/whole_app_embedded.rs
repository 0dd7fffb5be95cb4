//! The whole app over HTTP on the embedded shape: catalog, scheduled meals, training
//! blocks, weather and air, and readiness after a night, scored by `vitals serve`'s own
//! nightly schedule (its day boundaries are tested with a controlled clock in
//! `vitals-tests`).

mod support;

use std::time::{Duration, Instant};
use support::register;
use support::whole_app::{be_active, check_readiness, curate, walk};

const CONVERGE_WITHIN: Duration = Duration::from_secs(30);

/// Waits until every subscription of the in-process pipeline reports no lag.
fn caught_up(address: &str) {
    let deadline = Instant::now() + CONVERGE_WITHIN;
    loop {
        let (_, lags) = support::projector_lags(address);
        if !lags.is_empty() && lags.iter().all(|l| l.ends_with(" 0")) {
            return;
        }
        assert!(Instant::now() < deadline, "no catch-up: {lags:#?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_phone_uses_the_whole_app() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().join("data");
    let store = ["--data-dir", data_dir.to_str().expect("utf-8")];
    let env = [("VITALS_JWT_SECRET", "test-jwt-secret-32-bytes-or-more")];
    // The operator curates before the first start, making the store (`--create`: no
    // command but `serve` makes one unasked).
    let (recipe, plan) = curate(&[&store[..], &["--create"]].concat());
    let server = support::start_with_env(&store, &env);
    let ana = register(&server.address, "ana@example.com");
    let bob = register(&server.address, "bob@example.com");
    walk(&ana, &bob, &recipe, &plan, CONVERGE_WITHIN);
    // Two days ago has ended in every timezone whatever the hour now: a server started
    // now scores it by itself, with no operator and no waiting for midnight.
    let day = (chrono::Utc::now().date_naive() - chrono::Duration::days(2)).to_string();
    be_active(&ana, &day);
    caught_up(&server.address);
    assert!(server.stop().success());

    let server = support::start_with_env(&store, &env);
    let (ana, bob) = (ana.on(&server.address), bob.on(&server.address));
    ana.eventually(
        &format!("/v1/me/readiness?date={day}"),
        CONVERGE_WITHIN,
        |score| score["score"].as_u64() > Some(0),
    );
    check_readiness(&ana, &bob, &day);
    assert!(server.stop().success());
}
