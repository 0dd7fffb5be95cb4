//! CloudWatch Embedded Metric Format: a stream consumer's figures for one batch, as log
//! lines CloudWatch Logs turns into metrics (no API call, no agent). One document per
//! subscription: the events it applied, its failed attempts and its dead letters in the
//! batch (the counter families of `vitals serve`'s `/metrics`), and the age of the
//! newest record applied, as `vitals_projector_lag_milliseconds` (Kinesis knows time,
//! not records).

use crate::pipeline::FAMILIES;
use events_schema::Context;
use serde_json::{Map, Value, json};

/// The CloudWatch namespace of every Vitals metric.
pub const NAMESPACE: &str = "Vitals";

/// What one subscription did with one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionBatch {
    pub subscription: &'static str,
    pub processed: u64,
    pub failed: u64,
    pub dead_lettered: u64,
}

/// The documents of one batch of `source`'s stream, stamped `timestamp_ms` (Unix).
pub fn documents(
    source: Context,
    batches: &[SubscriptionBatch],
    newest_age_ms: Option<u64>,
    timestamp_ms: i64,
) -> Vec<Value> {
    let [processed, failed, dead_lettered, _, lag_ms, _] = FAMILIES.map(|(name, _)| name);
    batches
        .iter()
        .map(|batch| {
            let mut values = vec![
                (processed, batch.processed, "Count"),
                (failed, batch.failed, "Count"),
                (dead_lettered, batch.dead_lettered, "Count"),
            ];
            if let Some(age) = newest_age_ms {
                values.push((lag_ms, age, "Milliseconds"));
            }
            let mut document = Map::new();
            document.insert(
                "_aws".into(),
                json!({
                    "Timestamp": timestamp_ms,
                    "CloudWatchMetrics": [{
                        "Namespace": NAMESPACE,
                        "Dimensions": [["source", "subscription"]],
                        "Metrics": values
                            .iter()
                            .map(|(name, _, unit)| json!({"Name": name, "Unit": unit}))
                            .collect::<Vec<_>>(),
                    }],
                }),
            );
            document.insert("source".into(), json!(source.to_string()));
            document.insert("subscription".into(), json!(batch.subscription));
            for (name, value, _) in values {
                document.insert(name.into(), json!(value));
            }
            Value::Object(document)
        })
        .collect()
}
