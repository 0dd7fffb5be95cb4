//! Decoding the record JSON of "Kinesis Data Streams for DynamoDB" (the data of each
//! Kinesis record) into a [`FeedRecord`]. Parsed leniently, since emulators differ from
//! AWS: the table comes from `tableName` or from the `eventSourceARN`; images and keys
//! are DynamoDB JSON (`{"S": ...}`), unmarshalled by `serde_dynamo`; the sequence number
//! is opaque.

use super::FeedRecord;
use crate::store::Item;
use events_schema::Context;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct StreamRecord {
    #[serde(rename = "tableName")]
    table_name: Option<String>,
    #[serde(rename = "eventSourceARN")]
    event_source_arn: Option<String>,
    dynamodb: Change,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Change {
    keys: serde_dynamo::Item,
    new_image: Option<serde_dynamo::Item>,
    old_image: Option<serde_dynamo::Item>,
}

/// The context whose table `name` is, with table names `<prefix><context>`.
pub fn context_of_table(name: &str, prefix: &str) -> Option<Context> {
    name.strip_prefix(prefix)?.parse().ok()
}

fn table_from_arn(arn: &str) -> Option<&str> {
    arn.split_once(":table/")?.1.split('/').next()
}

fn to_item(item: serde_dynamo::Item) -> Result<Item, String> {
    serde_dynamo::from_item(item).map_err(|e| format!("image does not unmarshal: {e}"))
}

/// Decodes one record; `position` is its sequence number in the stream.
pub fn decode(data: &[u8], position: String, table_prefix: &str) -> Result<FeedRecord, String> {
    let record: StreamRecord =
        serde_json::from_slice(data).map_err(|e| format!("not a DynamoDB stream record: {e}"))?;
    let table = record
        .table_name
        .as_deref()
        .or_else(|| record.event_source_arn.as_deref().and_then(table_from_arn))
        .ok_or("record names no table")?;
    let table = context_of_table(table, table_prefix)
        .ok_or_else(|| format!("table {table} is not a Vitals table"))?;
    let keys = to_item(record.dynamodb.keys)?;
    let key = |name: &str| {
        keys.get(name)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or(format!("record has no {name}"))
    };
    Ok(FeedRecord {
        position,
        table,
        pk: key("pk")?,
        sk: key("sk")?,
        old_image: record.dynamodb.old_image.map(to_item).transpose()?,
        new_image: record.dynamodb.new_image.map(to_item).transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_and_emulator_shapes_decode() {
        let aws = br#"{"awsRegion":"us-east-1","eventID":"e1","eventName":"INSERT","userIdentity":null,
            "recordFormat":"application/json","tableName":"vitals-nutrition",
            "dynamodb":{"ApproximateCreationDateTime":1700000000000,"ApproximateCreationDateTimePrecision":"MILLISECOND",
            "Keys":{"pk":{"S":"USER#1"},"sk":{"S":"EVT#E1"}},
            "NewImage":{"pk":{"S":"USER#1"},"sk":{"S":"EVT#E1"},"n":{"N":"5"},"m":{"M":{"x":{"BOOL":true}}}},"SizeBytes":60},
            "eventSource":"aws:dynamodb"}"#;
        let record = decode(aws, "1".into(), "vitals-").expect("decodes");
        assert_eq!(
            (record.table, record.pk.as_str(), record.sk.as_str()),
            (Context::Nutrition, "USER#1", "EVT#E1")
        );
        let new = record.new_image.expect("image");
        assert_eq!(
            (new["n"].clone(), new["m"]["x"].clone()),
            (serde_json::json!(5), serde_json::json!(true))
        );
        assert!(record.old_image.is_none());

        let emulator = br#"{"eventID":"x","eventName":"REMOVE","eventVersion":"1.1","eventSource":"aws:dynamodb",
            "dynamodb":{"ApproximateCreationDateTime":1796218697,"Keys":{"pk":{"S":"k"},"sk":{"S":"1"}},
            "SequenceNumber":"000000017962186972550000000175","SizeBytes":0,"StreamViewType":"NEW_AND_OLD_IMAGES",
            "OldImage":{"pk":{"S":"k"},"sk":{"S":"1"},"v":{"S":"one"}}},
            "eventSourceARN":"arn:aws:dynamodb:us-east-1:000000000000:table/t1-goals/stream/2026-12-02T13:38:16.019"}"#;
        let record = decode(emulator, "2".into(), "t1-").expect("decodes");
        assert_eq!(record.table, Context::Goals);
        assert!(record.new_image.is_none() && record.old_image.is_some());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for data in [
            &b"nope"[..],
            br#"{"dynamodb":{}}"#,
            br#"{"tableName":"other","dynamodb":{"Keys":{}}}"#,
        ] {
            assert!(decode(data, "1".into(), "vitals-").is_err());
        }
    }
}
