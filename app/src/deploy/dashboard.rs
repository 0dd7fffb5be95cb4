//! The stack's CloudWatch dashboard: what an operator looks at first. The API as its
//! users see it (requests, 5xx, p50/p99 latency), each projector's lag and errors, the
//! consumers' dead letters, events applied and lag by subscription (their EMF metrics), the
//! tables' consumed capacity and throttles, the streams' incoming records and the
//! functions' invocations and duration (what the bill follows). The body is JSON with
//! `${...}` references resolved by `Fn::Sub` (the API's id, the prefix, the region).

use super::names::{consumer_id, pascal};
use super::plan::Plan;
use events_schema::Context;
use events_schema::tables::TABLES;
use serde_json::{Value, json};

/// A metric line of a widget: `[namespace, name, dimension, value, ...]` plus options.
fn line(namespace: &str, name: &str, dimensions: &[(&str, String)], options: Value) -> Value {
    let mut parts = vec![json!(namespace), json!(name)];
    for (dimension, value) in dimensions {
        parts.push(json!(dimension));
        parts.push(json!(value));
    }
    parts.push(options);
    Value::Array(parts)
}

fn widget(title: &str, metrics: Vec<Value>, stat: &str, at: (u32, u32)) -> Value {
    json!({
        "type": "metric",
        "x": at.0, "y": at.1, "width": 12, "height": 6,
        "properties": {
            "title": title,
            "region": "${AWS::Region}",
            "stat": stat,
            "period": 60,
            "view": "timeSeries",
            "metrics": metrics
        }
    })
}

/// A widget of a search over the consumers' EMF metric `name` by subscription, its
/// `stat` over each minute.
fn emf_widget(title: &str, name: &str, stat: &str, at: (u32, u32)) -> Value {
    let expression = format!(
        "SEARCH('{{{},source,subscription}} MetricName=\"{name}\"', '{stat}', 60)",
        projectors::emf::NAMESPACE
    );
    json!({
        "type": "metric",
        "x": at.0, "y": at.1, "width": 12, "height": 6,
        "properties": {
            "title": title,
            "region": "${AWS::Region}",
            "period": 60,
            "view": "timeSeries",
            "metrics": [[{"expression": expression, "id": "bysubscription", "label": ""}]]
        }
    })
}

/// The dimensions naming the HTTP API.
fn api_dimensions() -> Vec<(&'static str, String)> {
    vec![("ApiId", "${HttpApi}".to_owned())]
}

/// The dimensions naming the function of logical id `id`.
fn function_dimensions(id: &str) -> Vec<(&'static str, String)> {
    vec![("FunctionName", format!("${{{id}}}"))]
}

/// The dimensions naming the table of `context`.
fn table_dimensions(context: Context) -> Vec<(&'static str, String)> {
    vec![("TableName", format!("${{{}Table}}", pascal(context)))]
}

/// The logical ids of the projector functions, one per consumer.
fn projector_ids(plan: &Plan) -> Vec<String> {
    plan.consumers
        .iter()
        .map(|c| consumer_id(c.target))
        .collect()
}

/// The logical ids of every function: the projectors, the API's, the nightly one.
fn function_ids(projectors: &[String]) -> Vec<String> {
    projectors
        .iter()
        .cloned()
        .chain(
            super::api_functions::api_functions()
                .iter()
                .map(|a| a.name.to_owned()),
        )
        .chain(["NightlyFunction".to_owned()])
        .collect()
}

/// The API's two widgets: requests with 4xx and 5xx, and latency p50 and p99.
fn api_widgets() -> [Value; 2] {
    let api = api_dimensions();
    [
        widget(
            "API: requests and 5xx",
            vec![
                line("AWS/ApiGateway", "Count", &api, json!({"stat": "Sum"})),
                line("AWS/ApiGateway", "5xx", &api, json!({"stat": "Sum"})),
                line("AWS/ApiGateway", "4xx", &api, json!({"stat": "Sum"})),
            ],
            "Sum",
            (0, 0),
        ),
        widget(
            "API: latency p50 and p99 (ms)",
            vec![
                line("AWS/ApiGateway", "Latency", &api, json!({"stat": "p50"})),
                line("AWS/ApiGateway", "Latency", &api, json!({"stat": "p99"})),
            ],
            "p99",
            (12, 0),
        ),
    ]
}

/// A widget of the Lambda metric `name` with a line per function of `ids`.
fn functions_widget(title: &str, name: &str, ids: &[String], stat: &str, at: (u32, u32)) -> Value {
    let lines = ids
        .iter()
        .map(|id| {
            line(
                "AWS/Lambda",
                name,
                &function_dimensions(id),
                json!({"label": id}),
            )
        })
        .collect();
    widget(title, lines, stat, at)
}

/// The consumers' widgets by subscription (their EMF metrics): dead letters, events
/// applied and lag.
fn subscription_widgets() -> [Value; 3] {
    let [processed, _, dead_lettered, _, lag_ms, _] =
        projectors::pipeline::FAMILIES.map(|(n, _)| n);
    [
        emf_widget(
            "Dead letters by subscription",
            dead_lettered,
            "Sum",
            (12, 6),
        ),
        emf_widget("Events applied by subscription", processed, "Sum", (0, 12)),
        emf_widget(
            "Lag by subscription (age of the newest record applied, ms)",
            lag_ms,
            "Maximum",
            (0, 36),
        ),
    ]
}

/// A line of DynamoDB's metric `name` for every table.
fn per_table(name: &str) -> Vec<Value> {
    TABLES
        .iter()
        .map(|d| {
            line(
                "AWS/DynamoDB",
                name,
                &table_dimensions(d.context),
                json!({"label": d.context.to_string()}),
            )
        })
        .collect()
}

/// The tables' widgets: consumed write units, consumed read units, throttles.
fn table_widgets() -> [Value; 3] {
    let throttles = TABLES
        .iter()
        .flat_map(|d| {
            ["ReadThrottleEvents", "WriteThrottleEvents"].map(|name| {
                line(
                    "AWS/DynamoDB",
                    name,
                    &table_dimensions(d.context),
                    json!({"label": format!("{} {name}", d.context)}),
                )
            })
        })
        .collect();
    [
        widget(
            "Tables: consumed write units (what the bill follows)",
            per_table("ConsumedWriteCapacityUnits"),
            "Sum",
            (0, 18),
        ),
        widget(
            "Tables: consumed read units",
            per_table("ConsumedReadCapacityUnits"),
            "Sum",
            (12, 18),
        ),
        widget(
            "Tables: throttled reads and writes",
            throttles,
            "Sum",
            (0, 24),
        ),
    ]
}

/// The widget of the records coming into each published table's stream.
fn streams_widget(plan: &Plan) -> Value {
    let lines = plan
        .published
        .iter()
        .map(|d| {
            let stream = vec![("StreamName", format!("${{{}Stream}}", pascal(d.context)))];
            line(
                "AWS/Kinesis",
                "IncomingRecords",
                &stream,
                json!({"label": d.context.to_string()}),
            )
        })
        .collect();
    widget("Streams: incoming records", lines, "Sum", (12, 24))
}

/// The dashboard's body (a `Fn::Sub` template string).
pub fn body(plan: &Plan) -> String {
    let projectors = projector_ids(plan);
    let functions = function_ids(&projectors);
    let mut widgets = Vec::from(api_widgets());
    widgets.push(functions_widget(
        "Projectors: lag behind their streams (IteratorAge, ms)",
        "IteratorAge",
        &projectors,
        "Maximum",
        (0, 6),
    ));
    widgets.extend(subscription_widgets());
    widgets.push(functions_widget(
        "Functions: errors",
        "Errors",
        &functions,
        "Sum",
        (12, 12),
    ));
    widgets.extend(table_widgets());
    widgets.push(streams_widget(plan));
    widgets.push(functions_widget(
        "Functions: invocations (what the bill follows)",
        "Invocations",
        &functions,
        "Sum",
        (0, 30),
    ));
    widgets.push(functions_widget(
        "Functions: duration p99 (ms)",
        "Duration",
        &functions,
        "p99",
        (12, 30),
    ));
    json!({"widgets": widgets}).to_string()
}

/// The `AWS::CloudWatch::Dashboard` resource.
pub fn resource(plan: &Plan) -> Value {
    json!({
        "Type": "AWS::CloudWatch::Dashboard",
        "Properties": {
            "DashboardName": {"Fn::Sub": "${Prefix}vitals"},
            "DashboardBody": {"Fn::Sub": body(plan)}
        }
    })
}
