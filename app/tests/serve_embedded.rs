//! `vitals serve` on the embedded store, as the README runs it: black-box over TCP, and
//! the router in-process.

mod support;

use axum::http::StatusCode;

#[test]
fn serve_answers_healthz_with_backend_version_and_build_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().join("data");
    let server = support::start(&["--data-dir", data_dir.to_str().expect("utf-8 path")]);
    let (status, body) = support::request(&server.address, "GET", "/healthz");
    assert_eq!(status, 200, "{body}");
    let health: serde_json::Value = serde_json::from_str(&body).expect("JSON body");
    assert_eq!(health["status"], "ok");
    assert_eq!(health["backend"], "embedded");
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    // The build is the executable that runs: what `b2sum` says of it.
    let binary = std::fs::read(env!("CARGO_BIN_EXE_vitals")).expect("the binary");
    let digest = {
        use blake2::Digest as _;
        format!("{:x}", blake2::Blake2b512::digest(&binary))
    };
    assert_eq!(health["build"], digest[..16], "{body}");
    let (status, _) = support::request(&server.address, "GET", "/nope");
    assert_eq!(status, 404);
    // The projector workers run in-process and report per subscription.
    let (status, metrics) = support::request(&server.address, "GET", "/metrics");
    assert_eq!(status, 200);
    for subscription in [
        "dashboard-from-nutrition",
        "goals-from-activity",
        "insights-from-sleep",
    ] {
        assert!(
            metrics.contains(&format!(
                "vitals_projector_lag_records{{subscription=\"{subscription}\"}}"
            )),
            "{metrics}"
        );
    }
    assert!(metrics.contains("vitals_projector_dlq_depth"), "{metrics}");
    // The request latency per route is a histogram (the requests above are in it, by
    // route template and status class), and the text ends as OpenMetrics does.
    for (route, status) in [("/healthz", "2xx"), ("(unmatched)", "4xx")] {
        let count = format!(
            "vitals_http_request_duration_seconds_count{{method=\"GET\",route=\"{route}\",status=\"{status}\"}} "
        );
        let seen = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&count))
            .and_then(|v| v.trim().parse::<u64>().ok());
        assert!(seen >= Some(1), "{route} {status}: {metrics}");
        assert!(metrics.contains(&format!(
            "vitals_http_request_duration_seconds_bucket{{le=\"+Inf\",method=\"GET\",route=\"{route}\",status=\"{status}\"}}"
        )), "{metrics}");
    }
    assert!(metrics.ends_with("# EOF\n"), "{metrics}");
    let exit = server.stop();
    assert!(exit.success(), "graceful shutdown exits 0, got {exit:?}");
    assert!(
        data_dir.join("vitals.fjall").is_dir(),
        "the store lives in --data-dir"
    );
}

#[tokio::test]
async fn router_healthz_without_a_socket() {
    let response = support::get_in_process("/healthz").await;
    assert_eq!(response.status(), StatusCode::OK);
}
