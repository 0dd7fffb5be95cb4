//! Decoding the record JSON of "Kinesis Data Streams for DynamoDB" (the data of each
//! Kinesis record) into a [`FeedRecord`]. Parsed leniently, since emulators differ from
//! AWS: the table comes from `tableName` or from the `eventSourceARN`; images and keys
//! are DynamoDB JSON (`{"S": ...}`), unmarshalled by `serde_dynamo`; the sequence number
//! is opaque.

use super::FeedRecord;
use crate::store::Item;
use events_schema::Context;
use events_schema::keys::prefix;
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

/// Decodes one record; `position` is its sequence number in the stream. An error is a
/// record with nothing to project: not a change of a Vitals table, or a change that
/// publishes no event and does not decode. A change that may publish an event and does
/// not decode is a record with its [`fault`](FeedRecord::fault), for the subscriptions
/// to dead-letter.
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
    let change = record.dynamodb;
    let mut fault = None;
    let keys = kept(to_item(change.keys), &mut fault).unwrap_or_default();
    let key = |name: &str| keys.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    let (pk, sk) = (key("pk"), key("sk"));
    if pk.is_none() || sk.is_none() {
        fault.get_or_insert_with(|| "its keys are not a string pk and sk".into());
    }
    // A broken old image is still an old image: the change is not an insert.
    let old_image = change
        .old_image
        .map(|image| kept(to_item(image), &mut fault).unwrap_or_default());
    let new_image = change
        .new_image
        .and_then(|image| kept(to_item(image), &mut fault));
    let may_publish =
        old_image.is_none() && sk.as_deref().is_none_or(|sk| sk.starts_with(prefix::EVENT));
    if let (Some(fault), false) = (&fault, may_publish) {
        return Err(format!(
            "a change of the {table} table that publishes no event does not decode: {fault}"
        ));
    }
    Ok(FeedRecord {
        position,
        table,
        pk: pk.unwrap_or_default(),
        sk: sk.unwrap_or_default(),
        old_image,
        // A record with a fault (an insert: no old image) keeps no image either: one kept
        // under a partition key that did not decode would be beyond its owner's erasure.
        new_image: new_image.filter(|_| fault.is_none()),
        fault,
    })
}

/// `result`'s value, or `None` with its error kept in `fault` (the first one wins).
fn kept<T>(result: Result<T, String>, fault: &mut Option<String>) -> Option<T> {
    result.map_err(|e| fault.get_or_insert(e).clone()).ok()
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

    /// A change of a Vitals table that may publish an event is kept even when it does
    /// not decode, with its fault, so that it is dead-lettered and not lost unseen.
    #[test]
    fn an_undecodable_insert_is_kept_with_its_fault_and_nothing_else_is() {
        let record = |keys: &str, images: &str| {
            format!(r#"{{"tableName":"vitals-nutrition","dynamodb":{{"Keys":{keys}{images}}}}}"#)
        };
        let event_keys = r#"{"pk":{"S":"USER#1"},"sk":{"S":"EVT#E1"}}"#;
        let broken_image = r#"{"pk":{"S":"USER#1"},"n":{"N":"five"}}"#;
        // Keys that do not decode beside an image that does: the image is not kept.
        let good_image = r#"{"pk":{"S":"USER#1"},"sk":{"S":"EVT#E1"}}"#;
        for (keys, images) in [
            (
                r#"{"pk":{"N":"1"},"sk":{"S":"EVT#E1"}}"#.to_owned(),
                format!(r#","NewImage":{good_image}"#),
            ),
            (
                event_keys.to_owned(),
                format!(r#","NewImage":{broken_image}"#),
            ),
        ] {
            let data = record(&keys, &images);
            let decoded = decode(data.as_bytes(), "7".into(), "vitals-").expect("kept");
            assert_eq!(decoded.position, "7");
            assert!(decoded.fault.is_some(), "{data}");
            assert!(decoded.new_image.is_none(), "no image kept: {data}");
            assert!(matches!(decoded.envelope(), Some(Err(_))), "{data}");
        }
        let meal_keys = r#"{"pk":{"S":"USER#1"},"sk":{"S":"MEAL#M1"}}"#;
        for (keys, images) in [
            (meal_keys, format!(r#","NewImage":{broken_image}"#)),
            (event_keys, format!(r#","OldImage":{broken_image}"#)),
        ] {
            let data = record(keys, &images);
            let skipped = decode(data.as_bytes(), "7".into(), "vitals-");
            assert!(
                skipped.is_err_and(|e| e.contains("publishes no event")),
                "{data}"
            );
        }
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
