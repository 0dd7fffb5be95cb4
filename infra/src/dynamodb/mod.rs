//! The DynamoDB backend on `aws-sdk-dynamodb`: works against AWS and against any
//! endpoint URL speaking the DynamoDB wire protocol. Items are marshalled by
//! `serde_dynamo`; conditions, updates and key conditions become expressions with
//! placeholders; SDK errors map onto the port's typed errors.
//!
//! Layout: `client` holds the handle ([`DynamoStore`]) and what every request shares;
//! `items` the single-item operations, `query` the queries and scans, `transact` the
//! transactions, `batch` the batch writes; `expr` builds expressions, `marshal` turns
//! items into attribute values and back, `errors` maps SDK errors; `bootstrap` creates
//! the tables. This module maps the storage port onto them.

mod batch;
mod bootstrap;
mod client;
mod errors;
mod expr;
mod items;
mod marshal;
mod metrics;
mod query;
mod transact;

pub use bootstrap::{TableStatusReport, bootstrap};
pub use client::DynamoStore;
pub use metrics::{DynamoMetrics, OperationStats};

use crate::store::{
    BatchWrite, Condition, Found, SingleRead, SingleWrite, Store, StoreError, TransactAction,
    Written,
};
use async_trait::async_trait;
use events_schema::Context;

#[async_trait]
impl Store for DynamoStore {
    fn backend(&self) -> &'static str {
        "dynamodb"
    }

    fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.metrics.register(registry);
    }

    async fn health(&self) -> Result<(), StoreError> {
        let output = self
            .client
            .describe_table()
            .table_name(self.table_name(Context::Identity))
            .send()
            .await;
        self.observe("DescribeTable", &output, |_| 0.0);
        output.map(|_| ()).map_err(errors::common)
    }

    async fn read(&self, table: Context, read: SingleRead<'_>) -> Result<Found, StoreError> {
        match read {
            SingleRead::Get { key, consistent } => {
                let item = self.get_item(table, key, consistent).await;
                item.map(Found::Item)
            }
            SingleRead::Query(query) => self.query_table(table, query).await.map(Found::Page),
            SingleRead::QueryIndex(query) => self.query_gsi(table, query).await.map(Found::Page),
            SingleRead::Scan(scan) => self.scan_table(table, scan).await.map(Found::Page),
        }
    }

    async fn write(
        &self,
        table: Context,
        write: SingleWrite,
        condition: Option<Condition>,
    ) -> Result<Written, StoreError> {
        match write {
            SingleWrite::Put { item } => {
                let put = self.put_item(table, item, condition).await;
                put.map(|()| Written::Put)
            }
            SingleWrite::Update { key, update } => {
                let updated = self.update_item(table, &key, update, condition).await;
                updated.map(Written::Updated)
            }
            SingleWrite::Delete { key } => {
                let deleted = self.delete_item(table, &key, condition).await;
                deleted.map(Written::Deleted)
            }
        }
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        self.transact_write_items(actions).await
    }

    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        self.drain_page(table, pk, page_size).await
    }

    async fn write_batch(&self, table: Context, writes: Vec<BatchWrite>) -> Result<(), StoreError> {
        self.write_batch_items(table, writes).await
    }
}
