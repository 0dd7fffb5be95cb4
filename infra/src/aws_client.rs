//! SDK configuration shared by the AWS adapters: region, optional endpoint URL (a local
//! emulator), retries with backoff for throttling, and an HTTPS client on rustls/ring.
//!
//! Every SDK client of the code is built here ([`dynamodb`], [`dynamodb_streams`],
//! [`kinesis`], [`sqs`], [`secrets_manager`]), with the [`CallLog`] interceptor: with
//! `VITALS_AWS_CALL_LOG=1`, each operation a client sends is logged (target
//! `vitals::aws_call`) with the resources its request names, so the calls a function
//! makes can be checked against its IAM role. `Client::new` of these SDKs is refused by
//! clippy (`clippy.toml`).

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::ConfigBag;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;
use std::time::Duration;

/// Where and how to reach AWS (or an emulator).
#[derive(Debug, Clone, Default)]
pub struct AwsSettings {
    /// Region; falls back to the environment, then `us-east-1`.
    pub region: Option<String>,
    /// An endpoint URL such as `http://127.0.0.1:4566` for an emulator.
    pub endpoint_url: Option<String>,
    /// Attempts per request, the first included (default 8).
    pub max_attempts: Option<u32>,
}

/// Loads SDK configuration: credentials from the usual provider chain; with an endpoint
/// URL and no credentials in the environment, dummy ones (emulators accept any).
pub async fn load(settings: &AwsSettings) -> SdkConfig {
    let http_client = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let retry = RetryConfig::standard()
        .with_max_attempts(settings.max_attempts.unwrap_or(8))
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_secs(5));
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http_client)
        .retry_config(retry);
    let region = settings
        .region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .unwrap_or_else(|| "us-east-1".to_owned());
    loader = loader.region(Region::new(region));
    if let Some(url) = &settings.endpoint_url {
        loader = loader.endpoint_url(url);
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            loader = loader.credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "local",
                "local",
                None,
                None,
                "vitals-local-emulator",
            ));
        }
    }
    loader.load().await
}

/// A DynamoDB client with the [`CallLog`] interceptor.
pub fn dynamodb(config: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(config)
            .interceptor(CallLog)
            .build(),
    )
}

/// A DynamoDB Streams client with the [`CallLog`] interceptor.
pub fn dynamodb_streams(config: &SdkConfig) -> aws_sdk_dynamodbstreams::Client {
    aws_sdk_dynamodbstreams::Client::from_conf(
        aws_sdk_dynamodbstreams::config::Builder::from(config)
            .interceptor(CallLog)
            .build(),
    )
}

/// A Kinesis client with the [`CallLog`] interceptor.
pub fn kinesis(config: &SdkConfig) -> aws_sdk_kinesis::Client {
    aws_sdk_kinesis::Client::from_conf(
        aws_sdk_kinesis::config::Builder::from(config)
            .interceptor(CallLog)
            .build(),
    )
}

/// An SQS client with the [`CallLog`] interceptor.
pub fn sqs(config: &SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(config)
            .interceptor(CallLog)
            .build(),
    )
}

/// A Secrets Manager client with the [`CallLog`] interceptor.
pub fn secrets_manager(config: &SdkConfig) -> aws_sdk_secretsmanager::Client {
    aws_sdk_secretsmanager::Client::from_conf(
        aws_sdk_secretsmanager::config::Builder::from(config)
            .interceptor(CallLog)
            .build(),
    )
}

/// The environment variable that turns the call log on (`1`).
pub const CALL_LOG_ENV: &str = "VITALS_AWS_CALL_LOG";

/// The target of the call log's events.
pub const CALL_LOG_TARGET: &str = "vitals::aws_call";

/// Whether the call log is on: `VITALS_AWS_CALL_LOG=1`, read once per process.
fn call_log_enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var(CALL_LOG_ENV).is_ok_and(|v| v == "1"))
}

/// An interceptor logging, with `VITALS_AWS_CALL_LOG=1`, one event per operation (not
/// per attempt): its service, its name and the resources its request names, as a JSON
/// array (see [`request_resources`]). Never item contents, keys or secret values.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallLog;

impl CallLog {
    /// The name the interceptor goes by in a client's configuration.
    pub const NAME: &'static str = "vitals::CallLog";
}

impl Intercept for CallLog {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    // Called once per operation, after the request is serialized and before the retry
    // loop: retries are not logged again.
    fn read_after_serialization(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if !call_log_enabled() {
            return Ok(());
        }
        let (service, operation) = cfg
            .load::<Metadata>()
            .map_or(("unknown", "unknown"), |m| (m.service(), m.name()));
        let body = context.request().body().bytes().unwrap_or_default();
        let resources = Value::Array(request_resources(service, body)).to_string();
        tracing::info!(
            target: "vitals::aws_call",
            service,
            operation,
            resources = %resources,
            "aws call"
        );
        Ok(())
    }
}

/// The resources an awsJson request `body` of `service` (the SDK's service name, as
/// `DynamoDB`) names, one object each: DynamoDB `{"table"}` (with `"index"` for an
/// index), one per table of `RequestItems` and per item of `TransactItems` (with the
/// item's kind, `"action": "Put"`, `"ConditionCheck"`...); DynamoDB
/// Streams and Kinesis `{"stream_arn"}` (Kinesis also `{"stream_name"}`); SQS
/// `{"queue_url"}`; Secrets Manager `{"secret_id"}`. Nothing else of the body is taken.
pub fn request_resources(service: &str, body: &[u8]) -> Vec<Value> {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let text = |field: &str| body.get(field).and_then(Value::as_str);
    let mut resources = Vec::new();
    match service {
        "DynamoDB" => {
            if let Some(table) = text("TableName") {
                resources.push(table_resource(table, text("IndexName")));
            }
            if let Some(Value::Object(items)) = body.get("RequestItems") {
                resources.extend(items.keys().map(|table| table_resource(table, None)));
            }
            if let Some(Value::Array(items)) = body.get("TransactItems") {
                for item in items.iter().filter_map(Value::as_object) {
                    for kind in ["Put", "Update", "Delete", "ConditionCheck", "Get"] {
                        if let Some(table) = item
                            .get(kind)
                            .and_then(|action| action.get("TableName"))
                            .and_then(Value::as_str)
                        {
                            // The item's kind: IAM checks each item of a transaction
                            // against its own action (PutItem, ConditionCheckItem...).
                            let mut resource = table_resource(table, None);
                            resource["action"] = Value::from(kind);
                            resources.push(resource);
                        }
                    }
                }
            }
        }
        "DynamoDB Streams" => {
            if let Some(arn) = text("StreamArn") {
                resources.push(json!({ "stream_arn": arn }));
            }
        }
        "Kinesis" => {
            if let Some(arn) = text("StreamARN") {
                resources.push(json!({ "stream_arn": arn }));
            }
            if let Some(name) = text("StreamName") {
                resources.push(json!({ "stream_name": name }));
            }
        }
        "SQS" => {
            if let Some(url) = text("QueueUrl") {
                resources.push(json!({ "queue_url": url }));
            }
        }
        "Secrets Manager" => {
            if let Some(id) = text("SecretId") {
                resources.push(json!({ "secret_id": id }));
            }
        }
        _ => {}
    }
    resources
}

fn table_resource(table: &str, index: Option<&str>) -> Value {
    let mut resource = Map::new();
    resource.insert("table".to_owned(), Value::from(table));
    if let Some(index) = index {
        resource.insert("index".to_owned(), Value::from(index));
    }
    Value::Object(resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(service: &str, body: Value) -> Value {
        Value::Array(request_resources(service, body.to_string().as_bytes()))
    }

    #[test]
    fn dynamodb_requests_name_their_tables_and_indexes() {
        let put = json!({
            "TableName": "v-identity",
            "Item": {"pk": {"S": "USER#secret"}, "password": {"S": "hash"}},
            "ConditionExpression": "attribute_not_exists(pk)"
        });
        assert_eq!(resources("DynamoDB", put), json!([{"table": "v-identity"}]));
        let query = json!({
            "TableName": "v-journal",
            "IndexName": "by-day",
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": "USER#1"}}
        });
        assert_eq!(
            resources("DynamoDB", query),
            json!([{"table": "v-journal", "index": "by-day"}])
        );
        let batch = json!({"RequestItems": {
            "v-journal": [{"DeleteRequest": {"Key": {"pk": {"S": "USER#1"}, "sk": {"S": "a"}}}}],
            "v-metrics": [{"PutRequest": {"Item": {"pk": {"S": "USER#1"}}}}]
        }});
        assert_eq!(
            resources("DynamoDB", batch),
            json!([{"table": "v-journal"}, {"table": "v-metrics"}])
        );
        let transaction = json!({"TransactItems": [
            {"Put": {"TableName": "v-identity", "Item": {"pk": {"S": "EMAIL#a@b.c"}}}},
            {"Update": {"TableName": "v-journal", "Key": {"pk": {"S": "x"}},
                        "UpdateExpression": "SET n = :n"}},
            {"Delete": {"TableName": "v-metrics", "Key": {"pk": {"S": "y"}}}},
            {"ConditionCheck": {"TableName": "v-identity", "Key": {"pk": {"S": "z"}},
                                "ConditionExpression": "attribute_exists(pk)"}}
        ]});
        assert_eq!(
            resources("DynamoDB", transaction),
            json!([{"table": "v-identity", "action": "Put"},
                   {"table": "v-journal", "action": "Update"},
                   {"table": "v-metrics", "action": "Delete"},
                   {"table": "v-identity", "action": "ConditionCheck"}])
        );
        let get = json!({"TransactItems": [{"Get": {"TableName": "v-a", "Key": {}}}]});
        assert_eq!(
            resources("DynamoDB", get),
            json!([{"table": "v-a", "action": "Get"}])
        );
        assert_eq!(resources("DynamoDB", json!({})), json!([]));
    }

    #[test]
    fn stream_queue_and_secret_requests_name_their_resource() {
        let arn = "arn:aws:dynamodb:us-east-1:1:table/v-journal/stream/2024";
        assert_eq!(
            resources("DynamoDB Streams", json!({"StreamArn": arn, "Limit": 10})),
            json!([{"stream_arn": arn}])
        );
        let arn = "arn:aws:kinesis:us-east-1:1:stream/v-journal";
        assert_eq!(
            resources("Kinesis", json!({"ShardIterator": "AAA", "StreamARN": arn})),
            json!([{"stream_arn": arn}])
        );
        assert_eq!(
            resources(
                "Kinesis",
                json!({"StreamName": "v-journal", "Records": [{"Data": "c2VjcmV0"}]})
            ),
            json!([{"stream_name": "v-journal"}])
        );
        assert_eq!(
            resources("Kinesis", json!({"ShardIterator": "AAA"})),
            json!([])
        );
        let url = "https://sqs.us-east-1.amazonaws.com/1/v-dlq";
        assert_eq!(
            resources(
                "SQS",
                json!({"QueueUrl": url, "MessageBody": "{\"user\":1}"})
            ),
            json!([{"queue_url": url}])
        );
        assert_eq!(
            resources("Secrets Manager", json!({"SecretId": "v/jwt"})),
            json!([{"secret_id": "v/jwt"}])
        );
        assert_eq!(
            request_resources("DynamoDB", b"not json"),
            Vec::<Value>::new()
        );
        assert_eq!(
            request_resources("Unknown", b"{\"TableName\":\"t\"}"),
            Vec::<Value>::new()
        );
    }

    #[test]
    fn every_client_is_built_with_the_call_log() {
        let config = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .build();
        let named = |mut names: Vec<&'static str>| {
            names.retain(|name| *name == CallLog::NAME);
            names.len()
        };
        let dynamodb = dynamodb(&config);
        assert_eq!(
            named(dynamodb.config().interceptors().map(|i| i.name()).collect()),
            1
        );
        let streams = dynamodb_streams(&config);
        assert_eq!(
            named(streams.config().interceptors().map(|i| i.name()).collect()),
            1
        );
        let kinesis = kinesis(&config);
        assert_eq!(
            named(kinesis.config().interceptors().map(|i| i.name()).collect()),
            1
        );
        let sqs = sqs(&config);
        assert_eq!(
            named(sqs.config().interceptors().map(|i| i.name()).collect()),
            1
        );
        let secrets = secrets_manager(&config);
        assert_eq!(
            named(secrets.config().interceptors().map(|i| i.name()).collect()),
            1
        );
    }
}
