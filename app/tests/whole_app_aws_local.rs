//! The whole app over HTTP on the aws-local shape (the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`; required): `vitals bootstrap --kinesis`, `vitals work`
//! and `vitals serve --backend dynamodb` as child processes, the operator's curation and
//! the nightly readiness job as `vitals` commands on the same tables, and the phone's
//! flow of `whole_app_embedded.rs`.

mod support;

use events_schema::ids::UserId;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::register;
use support::whole_app::{be_active, check_readiness, curate, vitals, walk};

const CONVERGE_WITHIN: Duration = Duration::from_secs(60);

struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_phone_uses_the_whole_app_on_aws_local() {
    let endpoint = match std::env::var("VITALS_TEST_DYNAMODB_ENDPOINT") {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!("VITALS_TEST_DYNAMODB_ENDPOINT is not set: run `scripts/test-all`"),
    };
    let prefix = format!("w{}-", UserId::generate().as_str().to_lowercase());
    let aws = [
        "--endpoint-url",
        endpoint.as_str(),
        "--table-prefix",
        prefix.as_str(),
    ];
    vitals(&["bootstrap", "--kinesis", "--dlq-queues"], &aws);
    let _worker = Worker(
        Command::new(env!("CARGO_BIN_EXE_vitals"))
            .arg("work")
            .args(["--metrics-listen", "127.0.0.1:0"])
            .args(aws)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("vitals work starts"),
    );
    let store: Vec<&str> = ["--backend", "dynamodb"]
        .iter()
        .chain(&aws)
        .copied()
        .collect();
    let server = support::start_with_env(&store, &[("VITALS_JWT_SECRET", "test-jwt-secret")]);
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
