//! The whole app over HTTP on the aws-local shape (the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`; required): `vitals bootstrap --kinesis`, `vitals work`
//! and `vitals serve --backend dynamodb` as child processes, the operator's curation and
//! the nightly readiness job as `vitals` commands on the same tables, and the phone's
//! flow of `whole_app_embedded.rs`.

mod support;

use std::time::{Duration, Instant};
use support::aws_local::{Tables, Worker};
use support::whole_app::{be_active, check_readiness, curate, walk};
use support::{register, vitals};

const CONVERGE_WITHIN: Duration = Duration::from_secs(60);

#[test]
fn a_phone_uses_the_whole_app_on_aws_local() {
    let tables = Tables::new("w");
    tables.bootstrap(&[]);
    let _worker = Worker::spawn(&tables.args());
    let store = tables.store_args();
    let server = support::start_with_env(
        &store,
        &[("VITALS_JWT_SECRET", "test-jwt-secret-32-bytes-or-more")],
    );
    let (recipe, plan) = curate(&store);
    let ana = register(&server.address, "ana@example.com");
    let bob = register(&server.address, "bob@example.com");
    let day = walk(&ana, &bob, &recipe, &plan, CONVERGE_WITHIN);

    // The night's markers reach the insights table through Kinesis; the job (as the
    // stack's schedule would run it) scores Ana once they are there.
    be_active(&ana, &day);
    // (Her eaten meal made her active before the night's markers arrive: score until
    // the night and the run count.)
    let deadline = Instant::now() + CONVERGE_WITHIN;
    loop {
        let printed = vitals(&["insights", "nightly", "--date", &day], &store);
        let (status, score) = ana.call("GET", &format!("/v1/me/readiness?date={day}"), None, &[]);
        if status == 200 && score["days_with_data"] == 1 && score["score"].as_u64() > Some(0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never scored: {printed} {status} {score}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    check_readiness(&ana, &bob, &day);
    assert!(server.stop().success());
}
