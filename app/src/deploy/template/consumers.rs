//! The projector functions: one per table written, with an event source mapping on each
//! stream it reads (passing only the outbox events its subscriptions apply), its
//! on-failure queue, its role, its alarms and its rollout.

use super::functions::{dynamodb_statements, function, insert_alarms, insert_rollout, role};
use crate::deploy::alarms::{self, Alarm, Metric, Statistic};
use crate::deploy::names::{consumer_id, pascal, stream_id};
use crate::deploy::plan::{
    BATCH_SIZE, Consumer, MAXIMUM_RECORD_AGE_SECONDS, MAXIMUM_RETRY_ATTEMPTS,
    PARALLELIZATION_FACTOR, Source,
};
use crate::deploy::rollout::{self, Rollout};
use events_schema::Context;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The event source mapping of projector `id` on `source`'s stream, failing over to
/// `queue`.
fn mapping(id: &str, source: &Source, queue: &str) -> Value {
    json!({
        "Type": "AWS::Lambda::EventSourceMapping",
        "Properties": {
            "FunctionName": {"Ref": rollout::alias_id(id)},
            "EventSourceArn": {"Fn::GetAtt": [stream_id(source.context), "Arn"]},
            "StartingPosition": "TRIM_HORIZON",
            "BatchSize": BATCH_SIZE,
            "MaximumBatchingWindowInSeconds": 1,
            "ParallelizationFactor": PARALLELIZATION_FACTOR,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BisectBatchOnFunctionError": true,
            "MaximumRetryAttempts": MAXIMUM_RETRY_ATTEMPTS,
            "MaximumRecordAgeInSeconds": MAXIMUM_RECORD_AGE_SECONDS,
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [queue, "Arn"]}}},
            // Only the outbox items of events its subscriptions apply: every other
            // change of the table is dropped before the function is invoked (and billed).
            "FilterCriteria": {"Filters": [{"Pattern": outbox_filter(&source.event_types)}]}
        }
    })
}

/// A projector function's role statements: its tables, the streams it reads, its own
/// on-failure queue `queue`.
fn consumer_statements(consumer: &Consumer, queue: &str) -> Vec<Value> {
    let mut statements = dynamodb_statements(&consumer.reads(), &consumer.writes());
    let streams: Vec<Value> = consumer
        .sources
        .iter()
        .map(|s| json!({"Fn::GetAtt": [stream_id(s.context), "Arn"]}))
        .collect();
    statements.push(json!({
        "Sid": "ReadStreams",
        "Effect": "Allow",
        "Action": ["kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:GetRecords",
                   "kinesis:GetShardIterator", "kinesis:ListShards"],
        "Resource": streams
    }));
    statements.push(json!({
        "Sid": "OwnFailureQueue",
        "Effect": "Allow",
        "Action": ["sqs:SendMessage"],
        "Resource": {"Fn::GetAtt": [queue, "Arn"]}
    }));
    statements
}

/// The on-failure queue of the projector writing `target` (kept 14 days).
fn failure_queue(target: Context) -> Value {
    json!({
        "Type": "AWS::SQS::Queue",
        "Properties": {
            "QueueName": {"Fn::Sub": crate::admin::failure_queue("${Prefix}", target)},
            "MessageRetentionPeriod": 1_209_600,
            "SqsManagedSseEnabled": true
        }
    })
}

/// The alarms of `alarms` a projector's new version is rolled back on: it crashes,
/// falls behind or dead-letters.
fn consumer_rollback(alarms: &[(String, Alarm)]) -> Vec<String> {
    alarms
        .iter()
        .map(|(alarm, _)| alarm.clone())
        .filter(|alarm| {
            alarm.ends_with("Errors")
                || alarm.ends_with("IteratorAge")
                || alarm.ends_with("DeadLetters")
        })
        .collect()
}

/// A projector function: its role, its on-failure queue, a mapping per stream it reads,
/// its alarms and its rollout.
pub(super) fn consumer_resources(consumer: &Consumer) -> Map<String, Value> {
    let id = consumer_id(consumer.target);
    let suffix = format!("{}-projector", consumer.target);
    let queue = format!("{id}Failures");
    let mut resources = function(
        &id,
        &suffix,
        "stream",
        256,
        120,
        json!({"VITALS_TARGET": consumer.target.to_string()}),
    );
    let statements = consumer_statements(consumer, &queue);
    resources.insert(format!("{id}Role"), role(&id, &suffix, statements));
    resources.insert(queue.clone(), failure_queue(consumer.target));
    for source in &consumer.sources {
        resources.insert(
            format!("{id}From{}", pascal(source.context)),
            mapping(&id, source, &queue),
        );
    }
    let alarms = consumer_alarms(consumer, &id, &queue);
    let rollback = consumer_rollback(&alarms);
    insert_alarms(&mut resources, alarms);
    insert_rollout(&mut resources, &id, Rollout::Linear, &rollback);
    resources
}

/// A projector function's lag, crashes and throttles, its on-failure queue (a batch
/// failed past its retries: redrive it while the stream still holds its records, 24
/// hours), and each of its subscriptions' dead letters.
fn consumer_alarms(consumer: &Consumer, id: &str, queue: &str) -> Vec<(String, Alarm)> {
    let queue_metric = |name| {
        Metric::new("AWS/SQS", name).by("QueueName", json!({"Fn::GetAtt": [queue, "QueueName"]}))
    };
    let mut all = vec![
        (
            format!("{id}IteratorAge"),
            Alarm::on(
                alarms::lambda("IteratorAge", id),
                Statistic::Maximum,
                "The projector is more than a minute behind one of its streams.",
            )
            .above(60_000.0)
            .over(5, 5, 60),
        ),
        (
            format!("{queue}Depth"),
            Alarm::on(
                queue_metric("ApproximateNumberOfMessagesVisible"),
                Statistic::Maximum,
                "Batches failed past their retries: run `vitals redrive-failures` for this table.",
            )
            .above(0.0)
            .over(1, 1, 60),
        ),
        (
            format!("{queue}Age"),
            Alarm::on(
                queue_metric("ApproximateAgeOfOldestMessage"),
                Statistic::Maximum,
                "A failed batch has waited six hours: redrive it before the stream drops its records (24 hours).",
            )
            .above(6.0 * 3600.0)
            .over(1, 1, 300),
        ),
    ];
    let dead_lettered = projectors::pipeline::FAMILIES[2].0;
    for source in &consumer.sources {
        for subscription in &source.subscriptions {
            all.push((
                format!("{}DeadLetters", logical_name(subscription)),
                Alarm::on(
                    Metric::new(projectors::emf::NAMESPACE, dead_lettered)
                        .by("source", json!(source.context.to_string()))
                        .by("subscription", json!(subscription)),
                    Statistic::Sum,
                    format!("{subscription} dead-lettered an event: see `vitals dead-letters {subscription}`, then redrive it."),
                )
                .above(0.0)
                .over(1, 1, 60),
            ));
        }
    }
    all.extend(alarms::function_alarms(id));
    all
}

/// `dashboard-from-nutrition` as a logical id: `DashboardFromNutrition`.
fn logical_name(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

/// The event filter passing only records of outbox items (`EVT#<event-id>`) written
/// with one of `event_types` (an outbox item's `event_type` attribute; a removed outbox
/// item has no new image, so it never passes).
pub fn outbox_filter(event_types: &BTreeSet<&'static str>) -> String {
    json!({"data": {"dynamodb": {
        "Keys": {"sk": {"S": [{"prefix": "EVT#"}]}},
        "NewImage": {"event_type": {"S": event_types}}
    }}})
    .to_string()
}
