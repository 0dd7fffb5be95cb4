//! `vitals bootstrap` and `vitals serve --backend dynamodb` against the emulator named
//! by `VITALS_TEST_DYNAMODB_ENDPOINT` (required: this suite never passes by skipping).

mod support;

use support::aws_local::endpoint;

/// `vitals serve --backend dynamodb` on the tables of `prefix`: `check` its `/healthz`
/// answer (status, body), then stop it.
fn healthz(endpoint: &str, prefix: &str, check: impl FnOnce(u16, &str)) {
    let server = support::start(&[
        "--backend",
        "dynamodb",
        "--endpoint-url",
        endpoint,
        "--table-prefix",
        prefix,
    ]);
    let (status, body) = support::request(&server.address, "GET", "/healthz");
    check(status, &body);
    assert!(server.stop().success());
}

fn bootstrap(endpoint: &str, prefix: &str) -> String {
    support::vitals(
        &["bootstrap"],
        &["--endpoint-url", endpoint, "--table-prefix", prefix],
    )
}

#[test]
fn bootstrap_is_idempotent_and_serve_reports_the_dynamodb_backend() {
    let endpoint = endpoint();
    let prefix = format!("boot{}-", std::process::id());

    // Before bootstrap the store is unavailable, and healthz says so without details.
    healthz(&endpoint, &prefix, |status, body| {
        assert_eq!(status, 503, "{body}");
        assert!(
            !body.contains("ResourceNotFound"),
            "internal causes stay in the log: {body}"
        );
    });

    let first = bootstrap(&endpoint, &prefix);
    assert_eq!(
        first.lines().filter(|l| l.starts_with("created\t")).count(),
        9,
        "{first}"
    );
    let second = bootstrap(&endpoint, &prefix);
    assert_eq!(
        second.lines().filter(|l| l.starts_with("exists\t")).count(),
        9,
        "{second}"
    );

    healthz(&endpoint, &prefix, |status, body| {
        assert_eq!(status, 200, "{body}");
        let health: serde_json::Value = serde_json::from_str(body).expect("JSON body");
        assert_eq!(health["backend"], "dynamodb");
    });
}
