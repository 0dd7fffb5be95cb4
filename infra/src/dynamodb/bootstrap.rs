//! Creating the nine context tables from their definitions: keys, sparse GSIs
//! (projection ALL), on-demand billing, streams with new and old images, and TTL.
//! Idempotent: existing tables are left as they are.

use super::errors;
use crate::store::StoreError;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType, TableStatus,
    TimeToLiveSpecification,
};
use events_schema::tables::{PK, SK, TABLES, TableDef};
use std::time::{Duration, Instant};

fn build_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("cannot build request: {e}"))
}

fn key(attr: &str, kind: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(attr)
        .key_type(kind)
        .build()
        .map_err(build_error)
}

fn string_attr(attr: &str) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(attr)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(build_error)
}

/// What `bootstrap` did to one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStatusReport {
    pub name: String,
    pub created: bool,
}

/// Creates every missing table under `prefix`, waits until all are active, and enables
/// TTL on each.
pub async fn bootstrap(
    client: &Client,
    prefix: &str,
) -> Result<Vec<TableStatusReport>, StoreError> {
    let mut report = Vec::new();
    for def in &TABLES {
        let name = def.physical_name(prefix);
        let created = create_table(client, def, &name).await?;
        wait_active(client, &name, Duration::from_secs(120)).await?;
        enable_ttl(client, def, &name).await?;
        report.push(TableStatusReport { name, created });
    }
    Ok(report)
}

async fn create_table(client: &Client, def: &TableDef, name: &str) -> Result<bool, StoreError> {
    let mut attributes = vec![string_attr(PK)?, string_attr(SK)?];
    let mut request = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key(PK, KeyType::Hash)?)
        .key_schema(key(SK, KeyType::Range)?);
    for gsi in def.gsis {
        let mut index = GlobalSecondaryIndex::builder()
            .index_name(gsi.name)
            .key_schema(key(gsi.partition_key, KeyType::Hash)?)
            .projection(
                Projection::builder()
                    .projection_type(ProjectionType::All)
                    .build(),
            );
        attributes.push(string_attr(gsi.partition_key)?);
        if let Some(sk) = gsi.sort_key {
            index = index.key_schema(key(sk, KeyType::Range)?);
            attributes.push(string_attr(sk)?);
        }
        request = request.global_secondary_indexes(index.build().map_err(build_error)?);
    }
    if def.stream {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .map_err(build_error)?,
        );
    }
    match request
        .set_attribute_definitions(Some(attributes))
        .send()
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if e.code() == Some("ResourceInUseException") => Ok(false),
        Err(e) => Err(errors::common(e)),
    }
}

async fn wait_active(client: &Client, name: &str, timeout: Duration) -> Result<(), StoreError> {
    let deadline = Instant::now() + timeout;
    loop {
        let table = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(errors::common)?;
        if table.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(StoreError::Backend(format!(
                "table {name} not active after {timeout:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn enable_ttl(client: &Client, def: &TableDef, name: &str) -> Result<(), StoreError> {
    let current = client
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(errors::common)?;
    let enabled = current
        .time_to_live_description()
        .and_then(|d| d.attribute_name())
        .is_some_and(|attr| attr == def.ttl_attribute());
    if enabled {
        return Ok(());
    }
    let spec = TimeToLiveSpecification::builder()
        .enabled(true)
        .attribute_name(def.ttl_attribute())
        .build()
        .map_err(build_error)?;
    match client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(spec)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        // AWS answers this when TTL is already enabled (a concurrent bootstrap).
        Err(e) if e.message().is_some_and(|m| m.contains("already enabled")) => Ok(()),
        Err(e) => Err(errors::common(e)),
    }
}
