//! The backend's handle ([`DynamoStore`]): the SDK client, the prefix of the physical
//! table names, and the metrics of every request it sends (consumed capacity when it
//! succeeded, throttling when it failed), with the helpers every operation shares.

use super::bootstrap::{self, TableStatusReport};
use super::errors;
use super::metrics::DynamoMetrics;
use crate::aws_client::{self, AwsSettings};
use crate::store::StoreError;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::ConsumedCapacity;
use events_schema::Context;
use events_schema::tables;
use std::sync::Arc;

/// The DynamoDB backend. Cheap to clone: the SDK client is shared.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    pub(super) client: Client,
    pub(super) prefix: String,
    pub(super) metrics: Arc<DynamoMetrics>,
}

/// The units of a response's consumed capacity (none when it reported none).
pub(super) fn units(capacity: Option<&ConsumedCapacity>) -> f64 {
    capacity
        .and_then(ConsumedCapacity::capacity_units)
        .unwrap_or(0.0)
}

/// The units of a multi-table response's consumed capacity.
pub(super) fn all_units(capacity: &[ConsumedCapacity]) -> f64 {
    capacity.iter().map(|c| units(Some(c))).sum()
}

/// A request the SDK's builder refused (a required field missing).
pub(super) fn build_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("cannot build request: {e}"))
}

impl DynamoStore {
    /// Connects with the given settings; tables are named `<prefix><context>`.
    pub async fn connect(settings: &AwsSettings, prefix: &str) -> Self {
        let config = aws_client::load(settings).await;
        Self::from_client(aws_client::dynamodb(&config), prefix)
    }

    pub fn from_client(client: Client, prefix: &str) -> Self {
        Self {
            client,
            prefix: prefix.to_owned(),
            metrics: Arc::default(),
        }
    }

    /// What this store has asked of DynamoDB.
    pub fn metrics(&self) -> &DynamoMetrics {
        &self.metrics
    }

    /// Records one request: its consumed capacity when it succeeded, whether it was
    /// throttled when it failed.
    pub(super) fn observe<T, E, R>(
        &self,
        operation: &'static str,
        result: &Result<T, SdkError<E, R>>,
        capacity: impl Fn(&T) -> f64,
    ) where
        E: ProvideErrorMetadata,
    {
        match result {
            Ok(output) => self.metrics.record(operation, capacity(output), false),
            Err(error) => {
                let throttled = error
                    .as_service_error()
                    .and_then(|e| e.code())
                    .is_some_and(errors::is_throttling);
                self.metrics.record(operation, 0.0, throttled)
            }
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table_name(&self, table: Context) -> String {
        tables::table(table).physical_name(&self.prefix)
    }

    /// Creates the tables (see [`bootstrap`](fn@crate::dynamodb::bootstrap)).
    pub async fn bootstrap(&self) -> Result<Vec<TableStatusReport>, StoreError> {
        bootstrap::bootstrap(&self.client, &self.prefix).await
    }
}
