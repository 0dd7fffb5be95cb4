//! Kinesis batches as an event source mapping hands them to a projector function, built
//! from a store's own changes: each change becomes the record "Kinesis Data Streams for
//! DynamoDB" puts in the table's stream (its images in DynamoDB JSON, its partition key
//! the item's), so the real Lambda handler decodes it as it would on AWS.

use aws_lambda_events::event::kinesis::{KinesisEvent, KinesisEventRecord};
use base64::Engine as _;
use infra::feed::FeedRecord;
use infra::feed::kinesis::stream_name;
use serde_json::{Value, json};
use std::collections::HashMap;

/// An item's attributes in DynamoDB JSON (`{"S": ..}`, `{"N": ..}`, ...).
fn dynamodb_json(item: &infra::store::Item) -> anyhow::Result<Value> {
    let attributes: HashMap<String, serde_dynamo::AttributeValue> =
        serde_dynamo::to_item(item).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(serde_json::to_value(attributes)?)
}

/// The Kinesis record of `change`, the `sequence`-th of its shard, arrived at
/// `arrival_s` (Unix seconds), on the stream of tables named with `table_prefix`.
pub fn record_of(
    change: &FeedRecord,
    table_prefix: &str,
    sequence: u64,
    arrival_s: f64,
) -> anyhow::Result<KinesisEventRecord> {
    let table = format!("{table_prefix}{}", change.table);
    let keys = json!({"pk": {"S": change.pk}, "sk": {"S": change.sk}});
    let image = |image: &Option<infra::store::Item>| -> anyhow::Result<Value> {
        image.as_ref().map_or(Ok(Value::Null), dynamodb_json)
    };
    let event_name = match (&change.old_image, &change.new_image) {
        (None, Some(_)) => "INSERT",
        (Some(_), Some(_)) => "MODIFY",
        _ => "REMOVE",
    };
    let data = json!({
        "awsRegion": "us-east-1",
        "eventID": format!("{sequence}"),
        "eventName": event_name,
        "userIdentity": null,
        "recordFormat": "application/json",
        "tableName": table,
        "dynamodb": {
            "ApproximateCreationDateTime": (arrival_s * 1000.0) as u64,
            "ApproximateCreationDateTimePrecision": "MILLISECOND",
            "Keys": keys,
            "NewImage": image(&change.new_image)?,
            "OldImage": image(&change.old_image)?,
            "SizeBytes": 0
        },
        "eventSource": "aws:dynamodb"
    });
    let encoded = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&data)?);
    let stream = stream_name(table_prefix, change.table);
    let record = json!({
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": format!("shardId-000000000000:{sequence:042}"),
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::000000000000:role/projector",
        "awsRegion": "us-east-1",
        "eventSourceARN": format!("arn:aws:kinesis:us-east-1:000000000000:stream/{stream}"),
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": format!("{}|{}", change.pk, change.sk),
            "sequenceNumber": format!("{sequence:042}"),
            "approximateArrivalTimestamp": arrival_s,
            "data": encoded
        }
    });
    Ok(serde_json::from_value(record)?)
}

/// A batch of `records`, as one invocation receives it.
pub fn batch(records: Vec<KinesisEventRecord>) -> KinesisEvent {
    let mut event = KinesisEvent::default();
    event.records = records;
    event
}

/// `users` users each logging `meals` meals, one round of every user's meal after
/// another (so a stream's batch interleaves users, as a busy shard does), through the
/// real meal command on `store`; returns the nutrition outbox changes they made, in
/// commit order: what the mapping's filter passes to the nutrition stream's projectors.
pub async fn logged_meals(
    store: &std::sync::Arc<infra::embedded::EmbeddedStore>,
    users: usize,
    meals: usize,
) -> anyhow::Result<Vec<FeedRecord>> {
    use commands::CommandMeta;
    use commands::nutrition::{MealInput, NutritionCommands};
    use events_schema::time::Timestamp;
    use rust_decimal::Decimal;
    let shared: std::sync::Arc<dyn infra::Store> = store.clone();
    let nutrition = NutritionCommands::new(infra::table::Table::new(shared));
    let people: Vec<CommandMeta> = (0..users)
        .map(|_| CommandMeta::new(events_schema::ids::UserId::generate()))
        .collect();
    let after = store.last_sequence().await?;
    for n in 0..meals {
        for meta in &people {
            let input = MealInput {
                name: format!("Meal {n}"),
                eaten_at: Timestamp::parse("2026-03-01T08:00:00.000Z")?,
                timezone: "UTC".into(),
                calories: Decimal::from(300 + n as i64),
                protein_g: Decimal::from(20),
                carbs_g: Decimal::from(30),
                fat_g: Decimal::from(10),
            };
            nutrition.log_meal(meta, input).await?;
        }
    }
    let mut changes = Vec::new();
    let mut from = after;
    loop {
        let page = store.changes_after(from, 1_000).await?;
        let Some(last) = page.last() else { break };
        from = last.seq;
        changes.extend(page.into_iter().map(FeedRecord::from).filter(|c| {
            c.table == events_schema::Context::Nutrition
                && c.sk.starts_with("EVT#")
                && c.new_image.is_some()
        }));
    }
    Ok(changes)
}
