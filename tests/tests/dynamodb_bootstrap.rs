//! `bootstrap` on the emulator (`VITALS_TEST_DYNAMODB_ENDPOINT`, required): every table
//! of the definitions exists with its keys, sparse GSIs, stream and TTL, and running it
//! again changes nothing.

use events_schema::tables::{PK, SK, TABLES, TTL};
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use std::collections::BTreeSet;

#[tokio::test]
async fn bootstrap_creates_every_table_as_defined_and_is_idempotent() {
    let endpoint = vitals_tests::backends::dynamodb_endpoint();
    let settings = AwsSettings {
        endpoint_url: Some(endpoint),
        ..AwsSettings::default()
    };
    let prefix = format!("b{}-", ulid::Ulid::new().to_string().to_lowercase());
    let store = DynamoStore::connect(&settings, &prefix).await;

    let first = store.bootstrap().await.expect("bootstrap");
    assert!(first.iter().all(|t| t.created), "{first:?}");
    let second = store.bootstrap().await.expect("bootstrap again");
    assert!(second.iter().all(|t| !t.created), "{second:?}");

    for def in &TABLES {
        let name = def.physical_name(&prefix);
        let described = store
            .client()
            .describe_table()
            .table_name(&name)
            .send()
            .await
            .expect("describe");
        let table = described.table().expect("table description");
        let keys: Vec<(String, String)> = table
            .key_schema()
            .iter()
            .map(|k| {
                (
                    k.attribute_name().to_owned(),
                    k.key_type().as_str().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            keys,
            vec![
                (PK.to_owned(), "HASH".to_owned()),
                (SK.to_owned(), "RANGE".to_owned())
            ],
            "{name}"
        );

        let indexes: BTreeSet<(String, Vec<String>)> = table
            .global_secondary_indexes()
            .iter()
            .map(|g| {
                let attrs = g
                    .key_schema()
                    .iter()
                    .map(|k| k.attribute_name().to_owned())
                    .collect();
                (g.index_name().unwrap_or_default().to_owned(), attrs)
            })
            .collect();
        let expected: BTreeSet<(String, Vec<String>)> = def
            .gsis
            .iter()
            .map(|g| {
                let attrs = std::iter::once(g.partition_key)
                    .chain(g.sort_key)
                    .map(str::to_owned)
                    .collect();
                (g.name.to_owned(), attrs)
            })
            .collect();
        assert_eq!(indexes, expected, "{name} indexes");

        let stream = table.stream_specification();
        assert_eq!(
            stream.map(|s| s.stream_enabled()).unwrap_or(false),
            def.stream,
            "{name} stream"
        );
        if def.stream {
            let view = stream
                .and_then(|s| s.stream_view_type())
                .map(|v| v.as_str().to_owned());
            assert_eq!(
                view.as_deref(),
                Some("NEW_AND_OLD_IMAGES"),
                "{name} stream view"
            );
        }

        let ttl = store
            .client()
            .describe_time_to_live()
            .table_name(&name)
            .send()
            .await
            .expect("describe ttl");
        let description = ttl.time_to_live_description().expect("ttl description");
        assert_eq!(
            description.attribute_name(),
            Some(TTL),
            "{name} ttl attribute"
        );
        assert_eq!(
            description.time_to_live_status().map(|s| s.as_str()),
            Some("ENABLED"),
            "{name} ttl status"
        );
    }
}
