//! What this process asked of DynamoDB, per operation: requests, requests that stayed
//! throttled after the SDK's own retries, and the capacity units DynamoDB reported
//! consuming (every request asks for `ReturnConsumedCapacity` TOTAL), for `/metrics`
//! and for comparing with the units `crate::capacity` computes.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// One operation's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OperationStats {
    pub requests: u64,
    pub throttled: u64,
    pub capacity_units: f64,
}

/// One metric family: name, Prometheus type, help, and its value for an operation.
type Family = (
    &'static str,
    &'static str,
    &'static str,
    fn(&OperationStats) -> String,
);

#[derive(Debug, Default)]
pub struct DynamoMetrics {
    operations: Mutex<BTreeMap<&'static str, OperationStats>>,
}

impl DynamoMetrics {
    pub(super) fn record(&self, operation: &'static str, capacity_units: f64, throttled: bool) {
        if let Ok(mut operations) = self.operations.lock() {
            let stats = operations.entry(operation).or_default();
            stats.requests += 1;
            stats.capacity_units += capacity_units;
            stats.throttled += u64::from(throttled);
        }
    }

    /// The figures so far, by operation name (`PutItem`, `Query`...).
    pub fn snapshot(&self) -> BTreeMap<&'static str, OperationStats> {
        self.operations
            .lock()
            .map(|o| o.clone())
            .unwrap_or_default()
    }

    /// The figures as Prometheus text.
    pub fn prometheus(&self) -> String {
        let snapshot = self.snapshot();
        let mut out = String::new();
        let families: [Family; 3] = [
            (
                "vitals_dynamodb_requests_total",
                "counter",
                "requests sent",
                |s| s.requests.to_string(),
            ),
            (
                "vitals_dynamodb_throttled_total",
                "counter",
                "requests still throttled after the SDK's retries",
                |s| s.throttled.to_string(),
            ),
            (
                "vitals_dynamodb_consumed_capacity_units_total",
                "counter",
                "capacity units DynamoDB reported consuming",
                |s| format!("{}", s.capacity_units),
            ),
        ];
        for (name, kind, help, value) in families {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
            for (operation, stats) in &snapshot {
                out.push_str(&format!(
                    "{name}{{operation=\"{operation}\"}} {}\n",
                    value(stats)
                ));
            }
        }
        out
    }
}
