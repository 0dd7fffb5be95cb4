//! `vitals bootstrap` and `vitals serve --backend dynamodb` against the emulator named
//! by `VITALS_TEST_DYNAMODB_ENDPOINT` (required: this suite never passes by skipping).

mod support;

use support::aws_local::Tables;

/// `vitals serve --backend dynamodb` on `tables`: `check` its `/healthz` answer (status,
/// body), then stop it.
fn healthz(tables: &Tables, check: impl FnOnce(u16, &str)) {
    let server = support::start(&tables.store_args());
    let (status, body) = support::request(&server.address, "GET", "/healthz");
    check(status, &body);
    assert!(server.stop().success());
}

fn bootstrap(tables: &Tables) -> String {
    support::vitals(&["bootstrap"], &tables.args())
}

#[test]
fn bootstrap_is_idempotent_and_serve_reports_the_dynamodb_backend() {
    let tables = Tables::new("boot");

    // Before bootstrap the store is unavailable, and healthz says so without details.
    healthz(&tables, |status, body| {
        assert_eq!(status, 503, "{body}");
        assert!(
            !body.contains("ResourceNotFound"),
            "internal causes stay in the log: {body}"
        );
    });

    let first = bootstrap(&tables);
    assert_eq!(
        first.lines().filter(|l| l.starts_with("created\t")).count(),
        9,
        "{first}"
    );
    let second = bootstrap(&tables);
    assert_eq!(
        second.lines().filter(|l| l.starts_with("exists\t")).count(),
        9,
        "{second}"
    );

    healthz(&tables, |status, body| {
        assert_eq!(status, 200, "{body}");
        let health: serde_json::Value = serde_json::from_str(body).expect("JSON body");
        assert_eq!(health["backend"], "dynamodb");
    });
}
