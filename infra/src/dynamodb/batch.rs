//! `BatchWriteItem`: bulk puts ([`DynamoStore::batch_put`]), a batch of puts and
//! deletes, and the paged drain of a partition, each sending again what DynamoDB leaves
//! unprocessed.

use super::client::{DynamoStore, all_units, build_error, units};
use super::errors;
use super::expr::{Expr, key_attributes};
use super::marshal;
use crate::store::{BatchWrite, Item, StoreError, validate_index_attributes};
use aws_sdk_dynamodb::types::{
    self as ddb, DeleteRequest, PutRequest, ReturnConsumedCapacity, WriteRequest,
};
use events_schema::Context;
use events_schema::tables::{PK, SK};
use std::collections::HashSet;
use std::time::Duration;

/// `BatchWriteItem` takes at most 25 requests.
const BATCH_WRITE_REQUESTS: usize = 25;

impl DynamoStore {
    /// Writes `items` (at most 25) to `table` with one `BatchWriteItem`, unconditionally,
    /// sending again whatever DynamoDB leaves unprocessed (with a growing pause) until
    /// every item is written. For bulk loads into tables nothing else writes (a
    /// migration, a rebuild); every other write goes through conditions.
    pub async fn batch_put(&self, table: Context, items: &[Item]) -> Result<(), StoreError> {
        if items.len() > 25 {
            return Err(StoreError::Validation(
                "a batch write holds at most 25 items".to_owned(),
            ));
        }
        let name = self.table_name(table);
        let mut requests = items
            .iter()
            .map(|item| {
                let put = ddb::PutRequest::builder()
                    .set_item(Some(marshal::to_attributes(item)?))
                    .build()
                    .map_err(build_error)?;
                Ok(ddb::WriteRequest::builder().put_request(put).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut pause = Duration::from_millis(50);
        while !requests.is_empty() {
            let output = self
                .client
                .batch_write_item()
                .request_items(&name, requests)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            self.observe("BatchWriteItem", &output, |o| {
                all_units(o.consumed_capacity())
            });
            let output = output.map_err(errors::common)?;
            requests = output
                .unprocessed_items
                .and_then(|mut left| left.remove(&name))
                .unwrap_or_default();
            if !requests.is_empty() {
                // Throttled in part: DynamoDB asks for the rest again, after a pause.
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
        Ok(())
    }

    /// [`crate::Store::drain_partition_page`]: a `Query` of a page of the partition's keys,
    /// then their deletion.
    pub(super) async fn drain_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        // BatchWriteItem takes at most 25 requests.
        let page_size = page_size.clamp(1, 25);
        let mut expr = Expr::default();
        let key_condition = expr.key_condition(PK, pk, None, None);
        let projection = format!("{}, {}", expr.name(PK), expr.name(SK));
        let name = self.table_name(table);
        let output = self
            .client
            .query()
            .table_name(&name)
            .key_condition_expression(key_condition)
            .projection_expression(projection)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .consistent_read(true)
            .limit(page_size as i32)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("Query", &output, |o| units(o.consumed_capacity()));
        let output = output.map_err(errors::common)?;
        let keys = output.items.unwrap_or_default();
        if keys.is_empty() {
            return Ok(0);
        }
        let pending = keys
            .iter()
            .map(|key| {
                let delete = DeleteRequest::builder()
                    .set_key(Some(key.clone()))
                    .build()
                    .map_err(build_error)?;
                Ok(WriteRequest::builder().delete_request(delete).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.batch_write_requests(&name, pending).await?;
        Ok(keys.len())
    }

    /// [`crate::Store::write_batch`]: the writes, checked, in `BatchWriteItem`s of 25.
    pub(super) async fn write_batch_items(
        &self,
        table: Context,
        writes: Vec<BatchWrite>,
    ) -> Result<(), StoreError> {
        let name = self.table_name(table);
        let mut seen = HashSet::new();
        let mut requests = Vec::with_capacity(writes.len());
        for write in writes {
            if !seen.insert(write.key()?) {
                return Err(StoreError::Validation(
                    "a batch cannot write the same item twice".into(),
                ));
            }
            requests.push(match write {
                BatchWrite::Put(item) => {
                    validate_index_attributes(table, &item)?;
                    let put = PutRequest::builder()
                        .set_item(Some(marshal::to_attributes(&item)?))
                        .build()
                        .map_err(build_error)?;
                    WriteRequest::builder().put_request(put).build()
                }
                BatchWrite::Delete(key) => {
                    let delete = DeleteRequest::builder()
                        .set_key(Some(key_attributes(&key)))
                        .build()
                        .map_err(build_error)?;
                    WriteRequest::builder().delete_request(delete).build()
                }
            });
        }
        for chunk in requests.chunks(BATCH_WRITE_REQUESTS) {
            self.batch_write_requests(&name, chunk.to_vec()).await?;
        }
        Ok(())
    }

    /// Sends up to 25 write requests to one table, retrying the unprocessed ones
    /// (they come back under load) with backoff.
    async fn batch_write_requests(
        &self,
        name: &str,
        mut pending: Vec<WriteRequest>,
    ) -> Result<(), StoreError> {
        let mut backoff = Duration::from_millis(50);
        for _ in 0..10 {
            let output = self
                .client
                .batch_write_item()
                .request_items(name, pending)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            self.observe("BatchWriteItem", &output, |o| {
                all_units(o.consumed_capacity())
            });
            let output = output.map_err(errors::common)?;
            pending = output
                .unprocessed_items
                .and_then(|mut u| u.remove(name))
                .unwrap_or_default();
            if pending.is_empty() {
                return Ok(());
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
        Err(StoreError::Throttled)
    }
}
