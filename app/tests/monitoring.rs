//! The stack's monitoring. Every alarm of the template can fire, and on a metric that
//! exists:
//! - its metric is one AWS documents with exactly those dimensions (the table below,
//!   from the CloudWatch metric references of each service), or one the consumers emit
//!   (checked against an Embedded Metric Format document `projectors::emf` prints);
//! - replayed against a model of CloudWatch's evaluation (each period's statistic, the
//!   last `EvaluationPeriods` periods, `DatapointsToAlarm` of them breaching, missing data
//!   as `TreatMissingData` says), the failure it is for, at the cadence its metric has
//!   datapoints (an hourly job: one an hour; a dead letter: one, once), raises it; and a
//!   healthy run (the metric at zero, or the job running every hour) does not;
//! - it notifies the stack's topic, on alarm and on recovery.
//!
//! And the dashboard shows only metrics that exist (the same table, and the consumers'
//! EMF metrics by subscription), with every reference resolved by the template.

use serde_json::Value;
use std::collections::BTreeMap;

fn template() -> Value {
    serde_json::from_str(&vitals::deploy::template_text()).expect("the template is JSON")
}

/// How a failure shows in a metric: a datapoint every `cadence_s` while it lasts, or one
/// datapoint once (a dead letter, one failed run of an hourly job).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shows {
    Sustained { cadence_s: u64 },
    Once,
}

/// The AWS metrics the alarms may use: (namespace, name, dimension names), as the
/// services' CloudWatch references document them, and how often each has a datapoint.
const AWS_METRICS: &[(&str, &str, &[&str], u64)] = &[
    // https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html
    ("AWS/Lambda", "Errors", &["FunctionName"], 60),
    ("AWS/Lambda", "Throttles", &["FunctionName"], 60),
    ("AWS/Lambda", "IteratorAge", &["FunctionName"], 60),
    ("AWS/Lambda", "Invocations", &["FunctionName"], 60),
    // https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html
    (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        &["QueueName"],
        60,
    ),
    (
        "AWS/SQS",
        "ApproximateAgeOfOldestMessage",
        &["QueueName"],
        60,
    ),
    // https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-metrics.html
    ("AWS/ApiGateway", "5xx", &["ApiId"], 60),
    ("AWS/ApiGateway", "Count", &["ApiId"], 60),
    ("AWS/ApiGateway", "Latency", &["ApiId"], 60),
    // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/metrics-dimensions.html
    ("AWS/DynamoDB", "ReadThrottleEvents", &["TableName"], 60),
    ("AWS/DynamoDB", "WriteThrottleEvents", &["TableName"], 60),
    (
        "AWS/DynamoDB",
        "ThrottledPutRecordCount",
        &["DelegatedOperation", "TableName"],
        60,
    ),
    (
        "AWS/DynamoDB",
        "AgeOfOldestUnreplicatedRecord",
        &["DelegatedOperation", "TableName"],
        60,
    ),
    // https://docs.aws.amazon.com/streams/latest/dev/monitoring-with-cloudwatch.html
    (
        "AWS/Kinesis",
        "WriteProvisionedThroughputExceeded",
        &["StreamName"],
        60,
    ),
    // Shown on the dashboard only.
    ("AWS/ApiGateway", "4xx", &["ApiId"], 60),
    (
        "AWS/DynamoDB",
        "ConsumedReadCapacityUnits",
        &["TableName"],
        60,
    ),
    (
        "AWS/DynamoDB",
        "ConsumedWriteCapacityUnits",
        &["TableName"],
        60,
    ),
    ("AWS/Kinesis", "IncomingRecords", &["StreamName"], 60),
    ("AWS/Lambda", "Duration", &["FunctionName"], 60),
];

#[derive(Debug, Clone)]
struct Metric {
    namespace: String,
    name: String,
    dimensions: BTreeMap<String, Value>,
}

fn metric_of(namespace: &Value, name: &Value, dimensions: &Value) -> Metric {
    Metric {
        namespace: namespace.as_str().expect("namespace").to_owned(),
        name: name.as_str().expect("metric name").to_owned(),
        dimensions: dimensions
            .as_array()
            .expect("dimensions")
            .iter()
            .map(|d| {
                (
                    d["Name"].as_str().expect("name").to_owned(),
                    d["Value"].clone(),
                )
            })
            .collect(),
    }
}

#[derive(Debug, Clone, Copy)]
enum Stat {
    Sum,
    Average,
    Maximum,
    P99,
}

#[derive(Debug, Clone)]
enum Watched {
    One(Metric, Stat),
}

#[derive(Debug, Clone)]
struct Alarm {
    id: String,
    watched: Watched,
    period: u64,
    periods: usize,
    datapoints: usize,
    threshold: f64,
    above: bool,
    missing_breaches: bool,
}

fn alarm_of(id: &str, p: &Value) -> Alarm {
    let number = |name: &str| p[name].as_u64().unwrap_or_else(|| panic!("{id}: {name}"));
    // Metric math is not something the local emulator creates: the stack must.
    assert!(p.get("Metrics").is_none(), "{id}: metric math");
    let stat = match (p["Statistic"].as_str(), p["ExtendedStatistic"].as_str()) {
        (Some("Sum"), None) => Stat::Sum,
        (Some("Average"), None) => Stat::Average,
        (Some("Maximum"), None) => Stat::Maximum,
        (None, Some("p99")) => Stat::P99,
        other => panic!("{id}: statistic {other:?}"),
    };
    let metric = metric_of(&p["Namespace"], &p["MetricName"], &p["Dimensions"]);
    let (watched, period) = (Watched::One(metric, stat), number("Period"));
    let above = match p["ComparisonOperator"].as_str() {
        Some("GreaterThanThreshold") => true,
        Some("LessThanThreshold") => false,
        other => panic!("{id}: comparison {other:?}"),
    };
    Alarm {
        id: id.to_owned(),
        watched,
        period,
        periods: number("EvaluationPeriods") as usize,
        datapoints: number("DatapointsToAlarm") as usize,
        threshold: p["Threshold"].as_f64().expect("threshold"),
        above,
        missing_breaches: match p["TreatMissingData"].as_str() {
            Some("breaching") => true,
            Some("notBreaching") => false,
            other => panic!("{id}: TreatMissingData {other:?}"),
        },
    }
}

fn alarms() -> Vec<Alarm> {
    let template = template();
    let resources = template["Resources"].as_object().expect("resources");
    resources
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::CloudWatch::Alarm")
        .map(|(id, r)| alarm_of(id, &r["Properties"]))
        .collect()
}

fn metrics_of(watched: &Watched) -> Vec<&Metric> {
    match watched {
        Watched::One(m, _) => vec![m],
    }
}

/// The consumers' dead-letter metric as an EMF document names it: (namespace, metric,
/// dimension names).
fn emitted_dead_letter_metric() -> (String, String, Vec<String>) {
    let batch = projectors::emf::SubscriptionBatch {
        subscription: "dashboard-from-nutrition",
        processed: 1,
        failed: 0,
        dead_lettered: 1,
    };
    let documents =
        projectors::emf::documents(events_schema::Context::Nutrition, &[batch], None, 0);
    let directive = &documents[0]["_aws"]["CloudWatchMetrics"][0];
    let names: Vec<String> = directive["Metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m["Name"].as_str().expect("name").to_owned())
        .collect();
    let dead = names
        .into_iter()
        .find(|n| n.contains("dead_lettered"))
        .expect("the document carries dead letters");
    assert_eq!(
        documents[0][dead.as_str()],
        1,
        "the value is in the document"
    );
    let dimensions = directive["Dimensions"][0]
        .as_array()
        .expect("one dimension set")
        .iter()
        .map(|d| d.as_str().expect("dimension").to_owned())
        .collect();
    (
        directive["Namespace"]
            .as_str()
            .expect("namespace")
            .to_owned(),
        dead,
        dimensions,
    )
}

/// How the failure an alarm is for shows in its metric; panics for a metric that
/// neither AWS documents nor the code emits.
fn shows(alarm: &Alarm, metric: &Metric) -> Shows {
    let mut dimensions: Vec<&str> = metric.dimensions.keys().map(String::as_str).collect();
    dimensions.sort_unstable();
    if metric.namespace == projectors::emf::NAMESPACE {
        let (namespace, name, mut emitted) = emitted_dead_letter_metric();
        emitted.sort();
        assert_eq!(
            (metric.namespace.as_str(), metric.name.as_str(), dimensions),
            (
                namespace.as_str(),
                name.as_str(),
                emitted.iter().map(String::as_str).collect()
            ),
            "{}: not what the consumers emit",
            alarm.id
        );
        let subscription = metric.dimensions["subscription"].as_str().expect("a name");
        let source = metric.dimensions["source"].as_str().expect("a source");
        assert!(
            projectors::registry::described()
                .iter()
                .any(|s| s.name() == subscription && s.source().to_string() == source),
            "{}: no subscription {subscription} of {source}",
            alarm.id
        );
        return Shows::Once;
    }
    let known = AWS_METRICS
        .iter()
        .find(|(ns, name, dims, _)| {
            *ns == metric.namespace && *name == metric.name && dims.to_vec() == dimensions
        })
        .unwrap_or_else(|| panic!("{}: {metric:?} is not a documented metric", alarm.id));
    let nightly = metric.dimensions.get("FunctionName")
        == Some(&serde_json::json!({"Ref": "NightlyFunction"}));
    match (nightly, metric.name.as_str()) {
        // One run an hour: a failed run is one datapoint.
        (true, "Errors" | "Throttles") => Shows::Once,
        (true, _) => Shows::Sustained { cadence_s: 3600 },
        _ => Shows::Sustained { cadence_s: known.3 },
    }
}

/// A metric's datapoints: (second, value).
type Series = Vec<(u64, f64)>;

/// What the alarm's period `[start, start + period)` shows: its value, or None (missing).
fn period_value(alarm: &Alarm, series: &Series, start: u64) -> Option<f64> {
    let values: Vec<f64> = series
        .iter()
        .filter(|(t, _)| (start..start + alarm.period).contains(t))
        .map(|(_, v)| *v)
        .collect();
    if values.is_empty() {
        return None;
    }
    let Watched::One(_, stat) = &alarm.watched;
    Some(match stat {
        Stat::Sum => values.iter().sum(),
        Stat::Average => values.iter().sum::<f64>() / values.len() as f64,
        Stat::Maximum | Stat::P99 => values.iter().copied().fold(f64::MIN, f64::max),
    })
}

/// Whether the alarm is raised at some evaluation (every minute) of `series` over
/// `horizon` seconds.
fn fires(alarm: &Alarm, series: &Series, horizon: u64) -> bool {
    (1..=horizon / 60).any(|minute| {
        let now = minute * 60;
        let last = now - now % alarm.period;
        let breaching = (1..=alarm.periods as u64)
            .filter_map(|n| last.checked_sub(n * alarm.period))
            .filter(|start| match period_value(alarm, series, *start) {
                None => alarm.missing_breaches,
                Some(v) if alarm.above => v > alarm.threshold,
                Some(v) => v < alarm.threshold,
            })
            .count();
        breaching >= alarm.datapoints
    })
}

/// The metric's datapoints in a run: every `cadence` for `lasting` seconds (or once)
/// at `value`.
fn datapoints(shows: Shows, value: f64, lasting: u64) -> Series {
    match shows {
        Shows::Once => vec![(600, value)],
        Shows::Sustained { cadence_s } => (0..lasting / cadence_s)
            .map(|n| (n * cadence_s, value))
            .collect(),
    }
}

#[test]
fn every_alarm_fires_on_its_failure_and_not_on_a_healthy_run() {
    let alarms = alarms();
    assert!(alarms.len() > 60, "{} alarms", alarms.len());
    let horizon = 12 * 3600;
    for alarm in &alarms {
        let shows = shows(alarm, metrics_of(&alarm.watched)[0]);
        let Watched::One(_, stat) = &alarm.watched;
        let (failing, healthy) = match (alarm.above, stat) {
            // A share of requests: half of them fail, or none.
            (true, Stat::Average) => (
                datapoints(shows, 0.5, horizon),
                datapoints(shows, 0.0, horizon),
            ),
            (true, _) => (
                datapoints(shows, alarm.threshold * 2.0 + 1.0, horizon),
                datapoints(shows, 0.0, horizon),
            ),
            // A heartbeat: silence (the job does not run), or a run every hour.
            (false, _) => (Vec::new(), datapoints(shows, 1.0, horizon)),
        };
        assert!(
            fires(alarm, &failing, horizon),
            "{}: its failure does not raise it: {alarm:?}",
            alarm.id
        );
        assert!(
            !fires(alarm, &healthy, horizon),
            "{}: a healthy run raises it: {alarm:?}",
            alarm.id
        );
    }
}

/// The nightly job's failure alarm under the old shape (errors in 5 of 5 one-minute
/// periods) could never fire on an hourly job: the model says so too, so it can tell.
#[test]
fn the_model_rejects_an_alarm_that_cannot_fire() {
    let template = template();
    let mut properties = template["Resources"]["NightlyFunctionErrors"]["Properties"].clone();
    properties["Period"] = 60.into();
    properties["EvaluationPeriods"] = 5.into();
    properties["DatapointsToAlarm"] = 5.into();
    let alarm = alarm_of("OldNightlyFunctionErrors", &properties);
    let metric = metrics_of(&alarm.watched)[0].clone();
    let series = datapoints(shows(&alarm, &metric), 1.0, 12 * 3600);
    assert!(!fires(&alarm, &series, 12 * 3600));
}

#[test]
fn every_alarm_notifies_the_topic_on_alarm_and_on_recovery() {
    let template = template();
    let resources = template["Resources"].as_object().expect("resources");
    assert_eq!(resources["AlarmTopic"]["Type"], "AWS::SNS::Topic");
    let topic = serde_json::json!([{"Ref": "AlarmTopic"}]);
    for (id, resource) in resources
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::CloudWatch::Alarm")
    {
        assert_eq!(resource["Properties"]["AlarmActions"], topic, "{id}");
        assert_eq!(resource["Properties"]["OKActions"], topic, "{id}");
    }
    assert_eq!(
        template["Outputs"]["AlarmTopicArn"]["Value"],
        serde_json::json!({"Ref": "AlarmTopic"})
    );
}

/// What the issue asked to be watched is watched: each kind of alarm is there for each
/// thing it watches.
#[test]
fn the_alarms_cover_what_matters() {
    let ids: Vec<String> = alarms().into_iter().map(|a| a.id).collect();
    let has = |id: &str| ids.iter().any(|i| i == id);
    for id in [
        "Api5xxRate",
        "ApiLatencyP99",
        "NightlyFunctionErrors",
        "NightlyFunctionHeartbeat",
    ] {
        assert!(has(id), "{id}");
    }
    let plan = vitals::deploy::plan::plan();
    for consumer in &plan.consumers {
        let id = vitals::deploy::template::consumer_id(consumer.target);
        for kind in ["IteratorAge", "FailuresDepth", "FailuresAge", "Errors"] {
            assert!(has(&format!("{id}{kind}")), "{id}{kind}");
        }
        let subscriptions = consumer
            .sources
            .iter()
            .flat_map(|s| &s.subscriptions)
            .count();
        let dead_letter_alarms = ids.iter().filter(|i| i.ends_with("DeadLetters")).count();
        assert!(dead_letter_alarms >= subscriptions);
    }
    let subscriptions: usize = plan
        .consumers
        .iter()
        .flat_map(|c| &c.sources)
        .map(|s| s.subscriptions.len())
        .sum();
    assert_eq!(
        ids.iter().filter(|i| i.ends_with("DeadLetters")).count(),
        subscriptions
    );
    for def in &plan.published {
        let table = vitals::deploy::template::pascal(def.context);
        for kind in [
            "ReplicationThrottles",
            "ReplicationAge",
            "StreamWriteThrottles",
            "TableReadThrottles",
            "TableWriteThrottles",
        ] {
            assert!(has(&format!("{table}{kind}")), "{table}{kind}");
        }
    }
}

/// The dashboard's body resolves (every `${...}` is a resource of the template or the
/// region) to JSON whose widgets show documented metrics or the consumers' own.
#[test]
fn the_dashboard_shows_metrics_that_exist() {
    let template = template();
    let resources = template["Resources"].as_object().expect("resources");
    let body = resources["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
        .as_str()
        .expect("a Fn::Sub body");
    let mut resolved = String::new();
    let mut rest = body;
    while let Some(at) = rest.find("${") {
        resolved.push_str(&rest[..at]);
        let end = rest[at..].find('}').expect("a closed reference") + at;
        let name = &rest[at + 2..end];
        assert!(
            name == "AWS::Region" || resources.contains_key(name),
            "the dashboard refers to {name}, which the template does not have"
        );
        resolved.push_str(&format!("resolved-{name}"));
        rest = &rest[end + 1..];
    }
    resolved.push_str(rest);
    let dashboard: Value = serde_json::from_str(&resolved).expect("the body is JSON");
    let (namespace, dead_lettered, _) = emitted_dead_letter_metric();
    let mut lines = 0;
    let mut searches = Vec::new();
    for widget in dashboard["widgets"].as_array().expect("widgets") {
        for entry in widget["properties"]["metrics"].as_array().expect("metrics") {
            let parts = entry.as_array().expect("a metric line");
            if let Some(expression) = parts[0]["expression"].as_str() {
                searches.push(expression.to_owned());
                continue;
            }
            let strings: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            let mut dimensions: Vec<&str> = strings[2..].iter().step_by(2).copied().collect();
            dimensions.sort_unstable();
            assert!(
                AWS_METRICS
                    .iter()
                    .any(|(ns, name, dims, _)| *ns == strings[0]
                        && *name == strings[1]
                        && dims.to_vec() == dimensions),
                "the dashboard shows {strings:?}, not a documented metric"
            );
            lines += 1;
        }
    }
    assert!(lines > 50, "{lines} metric lines");
    let processed = projectors::pipeline::FAMILIES[0].0;
    let lag_ms = projectors::pipeline::FAMILIES[4].0;
    for name in [dead_lettered.as_str(), processed, lag_ms] {
        assert!(
            searches.iter().any(
                |s| s.contains(&format!("{{{namespace},source,subscription}}"))
                    && s.contains(&format!("\"{name}\""))
            ),
            "no search of {name} by subscription in {searches:?}"
        );
    }
}
