//! What this process asked of DynamoDB, per operation: requests, requests that stayed
//! throttled after the SDK's own retries, and the capacity units DynamoDB reported
//! consuming (every request asks for `ReturnConsumedCapacity` TOTAL), for `/metrics`
//! and for comparing with the units `crate::capacity` computes.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

/// One operation's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OperationStats {
    pub requests: u64,
    pub throttled: u64,
    pub capacity_units: f64,
}

/// The label of every family: the DynamoDB operation.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Operation {
    operation: &'static str,
}

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

    /// Registers the figures as they are now, by operation: requests sent, requests still
    /// throttled after the SDK's retries, capacity units DynamoDB reported consuming.
    pub fn register(&self, registry: &mut Registry) {
        let requests = Family::<Operation, Counter>::default();
        let throttled = Family::<Operation, Counter>::default();
        let consumed = Family::<Operation, Counter<f64, AtomicU64>>::default();
        for (operation, stats) in self.snapshot() {
            let labels = Operation { operation };
            requests.get_or_create(&labels).inc_by(stats.requests);
            throttled.get_or_create(&labels).inc_by(stats.throttled);
            consumed.get_or_create(&labels).inc_by(stats.capacity_units);
        }
        registry.register("vitals_dynamodb_requests", "requests sent", requests);
        registry.register(
            "vitals_dynamodb_throttled",
            "requests still throttled after the SDK's retries",
            throttled,
        );
        registry.register(
            "vitals_dynamodb_consumed_capacity_units",
            "capacity units DynamoDB reported consuming",
            consumed,
        );
    }
}
