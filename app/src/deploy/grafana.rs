//! The self-hosted shape's Grafana dashboard, generated from the metric families
//! `vitals serve` and `vitals work` expose on `/metrics` (committed as
//! `deploy/grafana/vitals.json`, `vitals deploy grafana`, drift-tested; a test has a real
//! Prometheus scrape both processes and every panel's query return series). Import it
//! in Grafana and pick the Prometheus data source that scrapes them.

use projectors::pipeline::{APPLIED_LAG_NAME, FAMILIES};
use serde_json::{Value, json};

/// A panel: its title, its unit and its PromQL queries (each with its legend).
pub struct Panel {
    pub title: &'static str,
    pub unit: &'static str,
    pub queries: Vec<(String, &'static str)>,
}

/// The PromQL of the `q` quantile of the histogram `family`, by the label `by`.
fn quantile(q: f64, by: &str, family: &str) -> String {
    format!("histogram_quantile({q}, sum by (le, {by}) (rate({family}_bucket[5m])))")
}

/// The HTTP API's panels: requests by status, the share of 5xx, latency p50 and p99.
fn http_panels() -> Vec<Panel> {
    let http = "vitals_http_request_duration_seconds";
    vec![
        Panel {
            title: "Requests by status class (per second)",
            unit: "reqps",
            queries: vec![(
                format!("sum by (status) (rate({http}_count[1m]))"),
                "{{status}}",
            )],
        },
        Panel {
            title: "Share of 5xx answers",
            unit: "percentunit",
            queries: vec![(
                format!(
                    "(sum(rate({http}_count{{status=\"5xx\"}}[5m])) or vector(0)) / sum(rate({http}_count[5m]))"
                ),
                "5xx",
            )],
        },
        Panel {
            title: "Request latency p50 by route",
            unit: "s",
            queries: vec![(quantile(0.5, "route", http), "{{route}}")],
        },
        Panel {
            title: "Request latency p99 by route",
            unit: "s",
            queries: vec![(quantile(0.99, "route", http), "{{route}}")],
        },
    ]
}

/// The projectors' panels: events applied, time to projection, lag, failures.
fn projector_panels() -> Vec<Panel> {
    let [processed, failed, dead, lag_records, lag_ms, depth] = FAMILIES.map(|(name, _)| name);
    vec![
        Panel {
            title: "Events applied by subscription (per second)",
            unit: "ops",
            queries: vec![(
                format!("sum by (subscription) (rate({processed}[1m]))"),
                "{{subscription}}",
            )],
        },
        Panel {
            title: "Time from an event to its projection, p99",
            unit: "s",
            queries: vec![(
                quantile(0.99, "subscription", APPLIED_LAG_NAME),
                "{{subscription}}",
            )],
        },
        Panel {
            title: "Projector lag",
            unit: "short",
            queries: vec![
                (
                    format!("max by (subscription) ({lag_records})"),
                    "{{subscription}} records",
                ),
                (
                    format!("max by (subscription) ({lag_ms})"),
                    "{{subscription}} ms",
                ),
            ],
        },
        Panel {
            title: "Failed attempts and dead letters",
            unit: "short",
            queries: vec![
                (
                    format!("sum by (subscription) (increase({failed}[15m]))"),
                    "{{subscription}} failed",
                ),
                (
                    format!("sum by (subscription) (increase({dead}[1h]))"),
                    "{{subscription}} dead-lettered",
                ),
                (
                    format!("sum by (subscription) ({depth})"),
                    "{{subscription}} waiting",
                ),
            ],
        },
    ]
}

/// DynamoDB's panels: requests by operation and the capacity units consumed.
fn dynamodb_panels() -> Vec<Panel> {
    vec![
        Panel {
            title: "DynamoDB requests by operation (per second)",
            unit: "reqps",
            queries: vec![
                (
                    "sum by (operation) (rate(vitals_dynamodb_requests_total[1m]))".into(),
                    "{{operation}}",
                ),
                (
                    "sum by (operation) (rate(vitals_dynamodb_throttled_total[5m]))".into(),
                    "{{operation}} throttled",
                ),
            ],
        },
        Panel {
            title: "DynamoDB capacity units consumed (per second: what the bill follows)",
            unit: "short",
            queries: vec![(
                "sum by (operation) (rate(vitals_dynamodb_consumed_capacity_units_total[5m]))"
                    .into(),
                "{{operation}}",
            )],
        },
    ]
}

/// The panels, in the order they are laid out (two a row).
pub fn panels() -> Vec<Panel> {
    let mut panels = http_panels();
    panels.extend(projector_panels());
    panels.extend(dynamodb_panels());
    panels
}

/// The dashboard (Grafana's JSON model, with the data source as an import input).
pub fn dashboard() -> Value {
    let panels: Vec<Value> = panels()
        .into_iter()
        .enumerate()
        .map(|(n, panel)| {
            let targets: Vec<Value> = panel
                .queries
                .iter()
                .enumerate()
                .map(|(i, (expr, legend))| {
                    json!({
                        "refId": char::from(b'A' + i as u8).to_string(),
                        "expr": expr,
                        "legendFormat": legend,
                        "datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
                    })
                })
                .collect();
            json!({
                "id": n + 1,
                "type": "timeseries",
                "title": panel.title,
                "gridPos": {"x": (n % 2) * 12, "y": (n / 2) * 8, "w": 12, "h": 8},
                "datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
                "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
                "targets": targets
            })
        })
        .collect();
    json!({
        "__inputs": [{
            "name": "DS_PROMETHEUS",
            "label": "Prometheus",
            "description": "The Prometheus that scrapes vitals serve and vitals work",
            "type": "datasource",
            "pluginId": "prometheus",
            "pluginName": "Prometheus"
        }],
        "title": "Vitals",
        "uid": "vitals",
        "description": "Generated by `vitals deploy grafana` from the metric families of /metrics; do not edit.",
        "schemaVersion": 39,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "tags": ["vitals"],
        "panels": panels
    })
}

/// The dashboard as committed (pretty JSON, newline-terminated).
pub fn dashboard_text() -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(&dashboard()).unwrap_or_default()
    )
}
