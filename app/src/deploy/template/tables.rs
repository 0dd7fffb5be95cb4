//! The storage of the stack: the nine tables (retained when the stack goes, with their
//! indexes, TTL and point-in-time recovery), a Kinesis change stream per published table,
//! and their alarms (throttling, replication to the stream).

use crate::deploy::alarms::{Alarm, Metric, Statistic};
use crate::deploy::names::{pascal, stream_id, table_id};
use crate::deploy::plan::RETENTION_HOURS;
use events_schema::Context;
use events_schema::tables::{PK, SK, TTL, TableDef};
use serde_json::{Value, json};

/// Table `def`, attached to its change stream if `published`.
pub(super) fn table(def: &TableDef, published: bool) -> Value {
    let mut attributes = vec![PK, SK];
    let indexes: Vec<Value> = def
        .gsis
        .iter()
        .map(|gsi| {
            attributes.push(gsi.partition_key);
            let mut keys = vec![json!({"AttributeName": gsi.partition_key, "KeyType": "HASH"})];
            if let Some(sort) = gsi.sort_key {
                attributes.push(sort);
                keys.push(json!({"AttributeName": sort, "KeyType": "RANGE"}));
            }
            json!({"IndexName": gsi.name, "KeySchema": keys, "Projection": {"ProjectionType": "ALL"}})
        })
        .collect();
    let mut properties = json!({
        "TableName": {"Fn::Sub": format!("${{Prefix}}{}", def.context)},
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": attributes
            .iter()
            .map(|a| json!({"AttributeName": a, "AttributeType": "S"}))
            .collect::<Vec<_>>(),
        "KeySchema": [
            {"AttributeName": PK, "KeyType": "HASH"},
            {"AttributeName": SK, "KeyType": "RANGE"}
        ],
        "TimeToLiveSpecification": {"AttributeName": TTL, "Enabled": true},
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true},
        "DeletionProtectionEnabled": true,
        "SSESpecification": {"SSEEnabled": true}
    });
    if !indexes.is_empty() {
        properties["GlobalSecondaryIndexes"] = json!(indexes);
    }
    if published {
        properties["KinesisStreamSpecification"] = json!({
            "StreamArn": {"Fn::GetAtt": [stream_id(def.context), "Arn"]},
            "ApproximateCreationDateTimePrecision": "MILLISECOND"
        });
    }
    json!({
        "Type": "AWS::DynamoDB::Table",
        // The tables hold the users' data: deleting the stack leaves them.
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": properties
    })
}

/// The change stream of `context`'s table (provisioned or on demand, as `StreamShards`
/// says).
pub(super) fn stream(context: Context) -> Value {
    json!({
        "Type": "AWS::Kinesis::Stream",
        "Properties": {
            "Name": {"Fn::Sub": format!("${{Prefix}}{context}-changes")},
            "StreamModeDetails": {"Fn::If": [
                "OnDemandStreams", {"StreamMode": "ON_DEMAND"}, {"StreamMode": "PROVISIONED"}
            ]},
            "ShardCount": {"Fn::If": ["OnDemandStreams", {"Ref": "AWS::NoValue"}, {"Ref": "StreamShards"}]},
            "RetentionPeriodHours": RETENTION_HOURS,
            "StreamEncryption": {"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"}
        }
    })
}

/// A table's throttled requests; for a table with a change stream, its replication to
/// Kinesis (throttled puts, and the age of the oldest change not yet replicated: past
/// the stream's limits the table's changes wait) and the stream's refused writes.
pub(super) fn table_alarms(context: Context, published: bool) -> Vec<(String, Alarm)> {
    let table = || json!({"Ref": table_id(context)});
    let id = pascal(context);
    let dynamodb = |name| Metric::new("AWS/DynamoDB", name).by("TableName", table());
    let mut all: Vec<(String, Alarm)> = ["Read", "Write"]
        .into_iter()
        .map(|kind| {
            let metric = dynamodb(if kind == "Read" {
                "ReadThrottleEvents"
            } else {
                "WriteThrottleEvents"
            });
            (
                format!("{id}Table{kind}Throttles"),
                Alarm::on(
                    metric,
                    Statistic::Sum,
                    format!("{kind} requests to the table were throttled."),
                )
                .above(0.0)
                .over(3, 5, 60),
            )
        })
        .collect();
    if published {
        let replication = |name| dynamodb(name).by("DelegatedOperation", json!("PutRecords"));
        all.push((
            format!("{id}ReplicationThrottles"),
            Alarm::on(
                replication("ThrottledPutRecordCount"),
                Statistic::Sum,
                "The table's changes were throttled on their way to the Kinesis stream: raise StreamShards.",
            )
            .above(0.0)
            .over(3, 5, 60),
        ));
        all.push((
            format!("{id}ReplicationAge"),
            Alarm::on(
                replication("AgeOfOldestUnreplicatedRecord"),
                Statistic::Maximum,
                "A change of the table has waited more than a minute to reach its Kinesis stream.",
            )
            .above(60_000.0)
            .over(5, 5, 60),
        ));
        all.push((
            format!("{id}StreamWriteThrottles"),
            Alarm::on(
                Metric::new("AWS/Kinesis", "WriteProvisionedThroughputExceeded")
                    .by("StreamName", json!({"Ref": stream_id(context)})),
                Statistic::Sum,
                "The change stream refused writes past its shards' limits: raise StreamShards.",
            )
            .above(0.0)
            .over(3, 5, 60),
        ));
    }
    all
}
