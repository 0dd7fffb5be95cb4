//! The money side of `vitals cost`: on-demand list prices ([`Prices`]), the stack's
//! fixed parts as the generated template declares them ([`Stack`]), and what some usage
//! costs by service ([`Dollars`]). Pure arithmetic: it runs nothing.

use super::usage::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// On-demand list prices in US dollars (us-east-1, as published in 2026). Any of them
/// can be overridden by `vitals cost --prices FILE` (a JSON object of these fields).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Prices {
    pub dynamodb_per_million_write_units: f64,
    pub dynamodb_per_million_read_units: f64,
    pub cdc_per_million_units: f64,
    pub kinesis_per_gb_in: f64,
    pub kinesis_per_gb_out: f64,
    /// An on-demand stream's hourly charge.
    pub kinesis_per_stream_hour: f64,
    /// A provisioned shard's hourly charge.
    pub kinesis_per_shard_hour: f64,
    /// Provisioned streams bill records put in 25 KB units (and reads not at all).
    pub kinesis_per_million_put_units: f64,
    pub lambda_per_million_requests: f64,
    pub lambda_per_gb_second: f64,
    /// Assumed duration of one invocation, in milliseconds.
    pub lambda_ms_per_invocation: f64,
    pub api_gateway_per_million_requests: f64,
    pub alarm_per_month: f64,
    pub secret_per_month: f64,
    /// An enhanced fan-out consumer's charge per shard it reads, an hour.
    pub kinesis_efo_per_consumer_shard_hour: f64,
}

impl Default for Prices {
    fn default() -> Self {
        Self {
            dynamodb_per_million_write_units: 0.625,
            dynamodb_per_million_read_units: 0.125,
            cdc_per_million_units: 0.10,
            kinesis_per_gb_in: 0.08,
            kinesis_per_gb_out: 0.04,
            kinesis_per_stream_hour: 0.04,
            kinesis_per_shard_hour: 0.015,
            kinesis_per_million_put_units: 0.014,
            lambda_per_million_requests: 0.20,
            lambda_per_gb_second: 0.000_016_666_7,
            lambda_ms_per_invocation: 25.0,
            api_gateway_per_million_requests: 1.00,
            alarm_per_month: 0.10,
            secret_per_month: 0.40,
            kinesis_efo_per_consumer_shard_hour: 0.015,
        }
    }
}

/// Days in the month the figures are scaled to.
pub(super) const DAYS_PER_MONTH: f64 = 30.0;
pub(super) const HOURS_PER_MONTH: f64 = 730.0;

/// The memory of the deployed functions, and the stack's fixed parts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stack {
    pub api_memory_mb: f64,
    pub consumer_memory_mb: f64,
    pub streams: usize,
    /// Shards of each stream, 0 when the streams are on demand.
    pub stream_shards: u32,
    pub alarms: usize,
    pub secrets: usize,
}

impl Stack {
    /// Read from the generated template (`deploy/template.json`).
    pub fn from_template(template: &Value) -> Self {
        let resources = template["Resources"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let count = |kind: &str| resources.values().filter(|r| r["Type"] == kind).count();
        // The memory of the first function of `role` (all of a role have the same).
        let memory = |role: &str| {
            resources
                .values()
                .filter(|r| r["Type"] == "AWS::Lambda::Function")
                .find(|r| r["Properties"]["Environment"]["Variables"]["VITALS_ROLE"] == role)
                .and_then(|r| r["Properties"]["MemorySize"].as_f64())
                .unwrap_or(0.0)
        };
        Self {
            api_memory_mb: memory("api"),
            consumer_memory_mb: memory("stream"),
            streams: count("AWS::Kinesis::Stream"),
            stream_shards: template["Parameters"]["StreamShards"]["Default"]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            alarms: count("AWS::CloudWatch::Alarm"),
            secrets: count("AWS::SecretsManager::Secret"),
        }
    }

    /// The streams' share of the floor.
    pub fn streams_floor(&self, prices: &Prices) -> f64 {
        let hourly = match self.stream_shards {
            0 => prices.kinesis_per_stream_hour,
            shards => f64::from(shards) * prices.kinesis_per_shard_hour,
        };
        self.streams as f64 * hourly * HOURS_PER_MONTH
    }

    /// The same stack with its streams on demand (`StreamShards=0`).
    pub fn on_demand(&self) -> Self {
        Self {
            stream_shards: 0,
            ..*self
        }
    }

    /// Dollars a month whatever the traffic.
    pub fn floor(&self, prices: &Prices) -> f64 {
        self.streams_floor(prices)
            + self.alarms as f64 * prices.alarm_per_month
            + self.secrets as f64 * prices.secret_per_month
    }
}

/// What some usage costs, in dollars, by service.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Dollars {
    pub dynamodb: f64,
    pub streams: f64,
    pub lambda: f64,
    pub api_gateway: f64,
}

impl Dollars {
    pub fn of(usage: &Usage, prices: &Prices, stack: &Stack) -> Self {
        let million = 1_000_000.0;
        let c = &usage.capacity;
        let gb = c.cdc_units / (1024.0 * 1024.0);
        let seconds = prices.lambda_ms_per_invocation / 1000.0;
        let gb_seconds = usage.api_requests as f64 * seconds * stack.api_memory_mb / 1024.0
            + usage.consumer_invocations as f64 * seconds * stack.consumer_memory_mb / 1024.0;
        Self {
            dynamodb: c.write_units * prices.dynamodb_per_million_write_units / million
                + c.read_units * prices.dynamodb_per_million_read_units / million,
            // A record is at least one CDC unit and at most 25 KB here, so CDC units
            // bound the put units from above.
            streams: c.cdc_units * prices.cdc_per_million_units / million
                + match stack.stream_shards {
                    0 => gb * (prices.kinesis_per_gb_in + prices.kinesis_per_gb_out),
                    _ => c.cdc_units * prices.kinesis_per_million_put_units / million,
                },
            lambda: (usage.api_requests + usage.consumer_invocations) as f64
                * prices.lambda_per_million_requests
                / million
                + gb_seconds * prices.lambda_per_gb_second,
            api_gateway: usage.api_requests as f64 * prices.api_gateway_per_million_requests
                / million,
        }
    }

    pub fn total(&self) -> f64 {
        self.dynamodb + self.streams + self.lambda + self.api_gateway
    }
}
