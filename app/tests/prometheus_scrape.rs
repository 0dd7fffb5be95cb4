//! A real Prometheus (Debian's package) scrapes both self-hosted shapes, `vitals serve` on
//! the embedded store and `vitals serve` plus `vitals work` on the emulator (named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`), while a user signs up and logs a meal on each; every
//! query of the Grafana dashboard (`deploy/grafana/vitals.json`) then returns series.
//! Without the `prometheus` binary the test fails with instructions: it never passes by
//! skipping.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::Process;
use support::aws_local::Tables;

/// How long Prometheus gets to have every query answered.
const WITHIN: Duration = Duration::from_secs(60);

fn prometheus_binary() -> String {
    let candidates = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"];
    candidates
        .iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(|p| (*p).to_owned())
        .unwrap_or_else(|| {
            panic!(
                "no prometheus binary: install Debian's (`apt-get install --no-install-recommends \
                 prometheus`; scripts/test-all does)"
            )
        })
}

/// `vitals work` on `tables`, its metrics on a free port; the process and that address.
fn work(tables: &Tables) -> (Process, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .arg("work")
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(tables.args())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("vitals work starts");
    let address = support::aws_local::metrics_address(&mut child);
    (Process(child), address)
}

/// A free loopback port for Prometheus to listen on.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// `query` as a URL query string value.
fn encoded(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// How many series Prometheus at `address` answers `query` with, now. (Asked as a
/// count: one small answer, whatever the number of series.)
fn series(address: &str, query: &str) -> u64 {
    let counted = format!("count(({query}))");
    let (status, body) = support::request(
        address,
        "GET",
        &format!("/api/v1/query?query={}", encoded(&counted)),
    );
    assert!(status == 200 || status == 503, "{query}: {status} {body}");
    let reply: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{query}: {e}: {body}"));
    reply["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A user signs up and logs a meal on the server at `address`.
fn traffic(address: &str, email: &str) {
    let client = support::register(address, email);
    let (status, reply) = client.log_meal(support::meal(420), &ulid::Ulid::new().to_string());
    assert_eq!(status, 201, "{reply}");
    let (status, _) = support::request(address, "GET", "/healthz");
    assert_eq!(status, 200);
}

#[test]
fn prometheus_scrapes_both_shapes_and_every_dashboard_query_returns_series() {
    let binary = prometheus_binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let embedded = support::start(&["--data-dir", data.to_str().expect("utf-8 path")]);
    let tables = Tables::new("m");
    tables.bootstrap(&[]);
    let (_work, work_metrics) = work(&tables);
    let aws = support::start_with_env(&tables.store_args(), &[]);

    let port = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 3s\n  scrape_timeout: 3s\n  evaluation_interval: 3s\nscrape_configs:\n\
             - job_name: serve\n  static_configs:\n  - targets: ['{}', '{}']\n\
             - job_name: work\n  static_configs:\n  - targets: ['{work_metrics}']\n",
            embedded.address, aws.address
        ),
    )
    .expect("config written");
    let _prometheus = Process(
        Command::new(&binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    let prometheus = format!("127.0.0.1:{port}");

    traffic(&embedded.address, "ana@example.com");
    traffic(
        &aws.address,
        &format!("rui-{}@example.com", ulid::Ulid::new()),
    );

    let queries: Vec<String> = vitals::deploy::grafana::panels()
        .into_iter()
        .flat_map(|panel| panel.queries.into_iter().map(|(query, _)| query))
        .chain(["up == 1".to_owned()])
        .collect();
    let deadline = Instant::now() + WITHIN;
    let mut waiting = queries.clone();
    loop {
        waiting.retain(|query| series(&prometheus, query) == 0);
        let up = series(&prometheus, "up == 1");
        if waiting.is_empty() && up == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after {WITHIN:?}, {up} of 3 targets up ({}) and no series for: {waiting:#?}",
            support::request(&prometheus, "GET", "/api/v1/targets").1
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // The histograms reach Prometheus as histograms: a p99 by route is a number.
    let p99 = series(
        &prometheus,
        "histogram_quantile(0.99, sum by (le, route) (rate(vitals_http_request_duration_seconds_bucket{route=\"/v1/me/meals\"}[5m])))",
    );
    assert_eq!(p99, 1, "a p99 of POST /v1/me/meals");
    assert!(aws.stop().success());
    assert!(embedded.stop().success());
}
