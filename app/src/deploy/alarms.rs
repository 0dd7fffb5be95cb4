//! The stack's alarms and the SNS topic they notify. Each alarm watches a metric that
//! something really emits: AWS's own (Lambda, SQS, API Gateway, DynamoDB, Kinesis, with
//! the dimensions AWS documents for them) or the consumers' Embedded Metric Format
//! documents (`projectors::emf`, namespace `Vitals`, dimensions `source` and
//! `subscription`). Its period and evaluation fit how often that metric has a
//! datapoint: an hourly job's failure is one datapoint an hour, a dead letter one
//! datapoint once; `app/tests/alarms.rs` replays each alarm's failure against a model of
//! CloudWatch's evaluation and proves it fires (and that a healthy run does not).

use serde_json::{Map, Value, json};

/// The SNS topic every alarm notifies (on alarm and on recovery).
pub const TOPIC_ID: &str = "AlarmTopic";

/// The statistic an alarm takes of each period.
#[derive(Debug, Clone, Copy)]
pub enum Statistic {
    Sum,
    /// The mean of the period's datapoints: for a metric of 0 or 1 a request (API
    /// Gateway's `5xx`), the share of requests.
    Average,
    Maximum,
    /// The 99th percentile (an extended statistic).
    P99,
}

/// How an alarm compares the period's value with its threshold.
#[derive(Debug, Clone, Copy)]
pub enum Breach {
    Above,
    Below,
}

/// One metric of an alarm: namespace, name, dimensions.
#[derive(Debug, Clone)]
pub struct Metric {
    pub namespace: &'static str,
    pub name: &'static str,
    pub dimensions: Vec<(&'static str, Value)>,
}

impl Metric {
    pub fn new(namespace: &'static str, name: &'static str) -> Self {
        Self {
            namespace,
            name,
            dimensions: Vec::new(),
        }
    }

    pub fn by(mut self, dimension: &'static str, value: Value) -> Self {
        self.dimensions.push((dimension, value));
        self
    }

    fn dimensions_json(&self) -> Value {
        Value::Array(
            self.dimensions
                .iter()
                .map(|(name, value)| json!({"Name": name, "Value": value}))
                .collect(),
        )
    }
}

/// What an alarm watches. (One metric with a statistic: metric math, which could make
/// rates and sums of several, is not something the local emulator can create, and the
/// stack must create there.)
#[derive(Debug, Clone)]
pub enum Watched {
    One(Metric, Statistic),
}

/// One alarm, before it is CloudFormation JSON.
#[derive(Debug, Clone)]
pub struct Alarm {
    pub what: String,
    pub watched: Watched,
    pub period_s: u32,
    pub evaluation_periods: u32,
    pub datapoints_to_alarm: u32,
    pub threshold: f64,
    pub breach: Breach,
    /// Whether a period without data counts as breaching (a heartbeat) or not.
    pub missing_breaches: bool,
}

impl Alarm {
    /// An alarm on `metric`'s `statistic` crossing `threshold` in `datapoints` of the
    /// last `periods` periods of `period_s` seconds; missing data is not breaching.
    pub fn on(metric: Metric, statistic: Statistic, what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            watched: Watched::One(metric, statistic),
            period_s: 60,
            evaluation_periods: 1,
            datapoints_to_alarm: 1,
            threshold: 0.0,
            breach: Breach::Above,
            missing_breaches: false,
        }
    }

    pub fn above(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self.breach = Breach::Above;
        self
    }

    pub fn below(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self.breach = Breach::Below;
        self
    }

    /// `datapoints` breaching periods of the last `periods` of `period_s` seconds.
    pub fn over(mut self, datapoints: u32, periods: u32, period_s: u32) -> Self {
        self.datapoints_to_alarm = datapoints;
        self.evaluation_periods = periods;
        self.period_s = period_s;
        self
    }

    /// A period without data breaches (a heartbeat: silence is the failure).
    pub fn missing_breaches(mut self) -> Self {
        self.missing_breaches = true;
        self
    }

    /// The `AWS::CloudWatch::Alarm` resource, notifying the topic.
    pub fn resource(&self) -> Value {
        let mut properties = Map::new();
        properties.insert("AlarmDescription".into(), json!(self.what));
        match &self.watched {
            Watched::One(metric, statistic) => {
                properties.insert("Namespace".into(), json!(metric.namespace));
                properties.insert("MetricName".into(), json!(metric.name));
                properties.insert("Dimensions".into(), metric.dimensions_json());
                properties.insert("Period".into(), json!(self.period_s));
                match statistic {
                    Statistic::Sum => properties.insert("Statistic".into(), json!("Sum")),
                    Statistic::Average => properties.insert("Statistic".into(), json!("Average")),
                    Statistic::Maximum => properties.insert("Statistic".into(), json!("Maximum")),
                    Statistic::P99 => properties.insert("ExtendedStatistic".into(), json!("p99")),
                };
            }
        }
        properties.insert("EvaluationPeriods".into(), json!(self.evaluation_periods));
        properties.insert("DatapointsToAlarm".into(), json!(self.datapoints_to_alarm));
        properties.insert("Threshold".into(), json!(self.threshold));
        properties.insert(
            "ComparisonOperator".into(),
            json!(match self.breach {
                Breach::Above => "GreaterThanThreshold",
                Breach::Below => "LessThanThreshold",
            }),
        );
        properties.insert(
            "TreatMissingData".into(),
            json!(if self.missing_breaches {
                "breaching"
            } else {
                "notBreaching"
            }),
        );
        properties.insert("AlarmActions".into(), json!([{"Ref": TOPIC_ID}]));
        properties.insert("OKActions".into(), json!([{"Ref": TOPIC_ID}]));
        json!({"Type": "AWS::CloudWatch::Alarm", "Properties": properties})
    }
}

/// The topic the alarms notify, and an e-mail subscription to it when `AlarmEmail` is
/// set (more subscribers: `aws sns subscribe` to the `AlarmTopicArn` output).
pub fn topic_resources() -> Map<String, Value> {
    let mut resources = Map::new();
    resources.insert(
        TOPIC_ID.into(),
        json!({
            "Type": "AWS::SNS::Topic",
            "Properties": {
                "TopicName": {"Fn::Sub": "${Prefix}alarms"},
                "KmsMasterKeyId": "alias/aws/sns"
            }
        }),
    );
    resources.insert(
        "AlarmEmailSubscription".into(),
        json!({
            "Type": "AWS::SNS::Subscription",
            "Condition": "HasAlarmEmail",
            "Properties": {
                "TopicArn": {"Ref": TOPIC_ID},
                "Protocol": "email",
                "Endpoint": {"Ref": "AlarmEmail"}
            }
        }),
    );
    resources
}

/// A function's metric (AWS/Lambda, by `FunctionName`).
pub fn lambda(name: &'static str, function_id: &str) -> Metric {
    Metric::new("AWS/Lambda", name).by("FunctionName", json!({"Ref": function_id}))
}

/// The crash and throttle alarms of a function invoked at least every minute while it
/// has work (the API's, the consumers'): three bad minutes of five.
pub fn function_alarms(id: &str) -> Vec<(String, Alarm)> {
    vec![
        (
            format!("{id}Errors"),
            Alarm::on(
                lambda("Errors", id),
                Statistic::Sum,
                "The function failed invocations (crashed or timed out).",
            )
            .above(0.0)
            .over(3, 5, 60),
        ),
        (
            format!("{id}Throttles"),
            Alarm::on(
                lambda("Throttles", id),
                Statistic::Sum,
                "The function was throttled.",
            )
            .above(0.0)
            .over(3, 5, 60),
        ),
    ]
}

/// The nightly job's alarms: it runs once an hour, so its failure is one datapoint an
/// hour (one failed run alarms), and a silent hour is a missing run (the heartbeat).
pub fn nightly_alarms(id: &str) -> Vec<(String, Alarm)> {
    vec![
        (
            format!("{id}Errors"),
            Alarm::on(lambda("Errors", id), Statistic::Sum, "A run of the nightly readiness job failed.")
                .above(0.0)
                .over(1, 1, 3600),
        ),
        (
            format!("{id}Throttles"),
            Alarm::on(lambda("Throttles", id), Statistic::Sum, "A run of the nightly readiness job was throttled.")
                .above(0.0)
                .over(1, 1, 3600),
        ),
        (
            format!("{id}Heartbeat"),
            Alarm::on(
                lambda("Invocations", id),
                Statistic::Sum,
                "The nightly readiness job has not run for two hours (its schedule or its rule is broken).",
            )
            .below(1.0)
            .over(2, 2, 3600)
            .missing_breaches(),
        ),
    ]
}
