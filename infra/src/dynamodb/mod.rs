//! The DynamoDB backend on `aws-sdk-dynamodb`: works against AWS and against any
//! endpoint URL speaking the DynamoDB wire protocol. Items are marshalled by
//! `serde_dynamo`; conditions, updates and key conditions become expressions with
//! placeholders; SDK errors map onto the port's typed errors.

mod bootstrap;
mod errors;
mod expr;
mod marshal;
mod metrics;

pub use bootstrap::{TableStatusReport, bootstrap};
pub use metrics::{DynamoMetrics, OperationStats};

use self::expr::{Expr, key_attributes};
use self::marshal::Attributes;
use crate::aws_client::{self, AwsSettings};
use crate::store::{
    BatchWrite, Condition, Cursor, IndexQuery, Item, Key, MAX_TRANSACTION_ACTIONS, Page, Query,
    Scan, SortKeyCondition, Store, StoreError, TransactAction, Update, is_expired,
    now_epoch_seconds, validate_index_attributes,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    self as ddb, ConsumedCapacity, DeleteRequest, PutRequest, ReturnConsumedCapacity, ReturnValue,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, WriteRequest,
};
use events_schema::Context;
use events_schema::tables::{self, PK, SK};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// The DynamoDB backend. Cheap to clone: the SDK client is shared.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    prefix: String,
    metrics: Arc<DynamoMetrics>,
}

/// The units of a response's consumed capacity (none when it reported none).
fn units(capacity: Option<&ConsumedCapacity>) -> f64 {
    capacity
        .and_then(ConsumedCapacity::capacity_units)
        .unwrap_or(0.0)
}

/// The units of a multi-table response's consumed capacity.
fn all_units(capacity: &[ConsumedCapacity]) -> f64 {
    capacity.iter().map(|c| units(Some(c))).sum()
}

/// The condition failed: the item it was checked against, from the error itself.
fn condition_failed(item: Option<&Attributes>) -> StoreError {
    StoreError::ConditionFailed {
        existing: item.and_then(|attrs| marshal::from_attributes(attrs.clone()).ok()),
    }
}

fn build_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("cannot build request: {e}"))
}

/// What a query asks for, whether of the table or of an index.
struct QuerySpec<'a> {
    index: Option<&'a str>,
    pk_attr: &'a str,
    sk_attr: Option<&'a str>,
    pk: &'a str,
    sort_key: Option<&'a SortKeyCondition>,
    forward: bool,
    limit: Option<usize>,
    cursor: Option<&'a Cursor>,
    consistent: bool,
    /// Attributes a cursor must carry for this query.
    cursor_attrs: Vec<&'a str>,
}

/// The key a query resumes from: the one its cursor names, which must be of the
/// queried partition; `None` without a cursor.
fn start_key(spec: &QuerySpec<'_>) -> Result<Option<Attributes>, StoreError> {
    let Some(cursor) = spec.cursor else {
        return Ok(None);
    };
    let key = cursor.to_key(&spec.cursor_attrs)?;
    if key.get(spec.pk_attr).map(String::as_str) != Some(spec.pk) {
        return Err(StoreError::Validation(
            "the cursor is not valid for this query".into(),
        ));
    }
    Ok(Some(marshal::from_string_key(key)))
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
    fn observe<T, E, R>(
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

    /// Creates the tables (see [`bootstrap`]).
    pub async fn bootstrap(&self) -> Result<Vec<TableStatusReport>, StoreError> {
        bootstrap::bootstrap(&self.client, &self.prefix).await
    }

    /// One `Query` request of `spec` on `table`'s table (or index), for at most `wanted`
    /// items (any number if `None`) from the key `start`; unexpired items only.
    async fn query_once(
        &self,
        table: Context,
        spec: &QuerySpec<'_>,
        wanted: Option<usize>,
        start: Option<Attributes>,
    ) -> Result<QueryOutput, StoreError> {
        let mut expr = Expr::default();
        let key_condition = expr.key_condition(spec.pk_attr, spec.pk, spec.sk_attr, spec.sort_key);
        let filter = expr.not_expired(now_epoch_seconds());
        let output = self
            .client
            .query()
            .table_name(self.table_name(table))
            .set_index_name(spec.index.map(str::to_owned))
            .key_condition_expression(key_condition)
            .filter_expression(filter)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .scan_index_forward(spec.forward)
            .set_limit(wanted.map(|w| w.min(i32::MAX as usize) as i32))
            .consistent_read(spec.consistent)
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("Query", &output, |o| units(o.consumed_capacity()));
        output.map_err(errors::common)
    }

    async fn run_query(&self, table: Context, spec: QuerySpec<'_>) -> Result<Page, StoreError> {
        if spec.limit == Some(0) {
            return Err(StoreError::Validation(
                "a query limit must be at least 1".to_owned(),
            ));
        }
        let mut start = start_key(&spec)?;
        let mut items = Vec::new();
        // DynamoDB applies Limit before the TTL filter: keep asking until the page is
        // full or the partition ends, so both backends return the same pages.
        loop {
            let wanted = spec.limit.map(|l| l - items.len());
            let output = self.query_once(table, &spec, wanted, start.take()).await?;
            for attributes in output.items.unwrap_or_default() {
                items.push(marshal::from_attributes(attributes)?);
            }
            let next = output.last_evaluated_key.filter(|k| !k.is_empty());
            let full = spec.limit.is_some_and(|l| items.len() >= l);
            match next {
                Some(key) if !full && spec.limit.is_some() => start = Some(key),
                Some(key) => {
                    let cursor = Cursor::from_key(&marshal::string_key(&key));
                    return Ok(Page {
                        items,
                        cursor: Some(cursor),
                    });
                }
                None => {
                    return Ok(Page {
                        items,
                        cursor: None,
                    });
                }
            }
        }
    }

    /// A transaction's update action.
    fn transact_update(
        &self,
        table: Context,
        key: &Key,
        update: &Update,
        condition: Option<Condition>,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::default();
        let update_expr = expr.update(update)?;
        let condition = condition.map(|c| expr.condition(&c)).transpose()?.flatten();
        let update = ddb::Update::builder()
            .table_name(self.table_name(table))
            .set_key(Some(key_attributes(key)))
            // DynamoDB requires an expression in a transaction's update.
            .update_expression(update_expr.unwrap_or_else(|| {
                format!(
                    "SET {} = {}",
                    expr.name(PK),
                    expr.value(ddb::AttributeValue::S(key.pk.clone()))
                )
            }))
            .set_condition_expression(condition)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// A transaction's put action.
    fn transact_put(
        &self,
        table: Context,
        item: &Item,
        condition: Option<Condition>,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::default();
        let condition = condition.map(|c| expr.condition(&c)).transpose()?.flatten();
        let put = ddb::Put::builder()
            .table_name(self.table_name(table))
            .set_item(Some(marshal::to_attributes(item)?))
            .set_condition_expression(condition)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// A transaction's delete action.
    fn transact_delete(
        &self,
        table: Context,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::default();
        let condition = condition.map(|c| expr.condition(&c)).transpose()?.flatten();
        let delete = ddb::Delete::builder()
            .table_name(self.table_name(table))
            .set_key(Some(key_attributes(key)))
            .set_condition_expression(condition)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }

    /// A transaction's condition check (an empty condition checks nothing: the item may
    /// exist or not).
    fn transact_check(
        &self,
        table: Context,
        key: &Key,
        condition: &Condition,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::default();
        let condition = expr.condition(condition)?.unwrap_or_else(|| {
            format!(
                "attribute_exists({0}) OR attribute_not_exists({0})",
                expr.name(PK)
            )
        });
        let check = ddb::ConditionCheck::builder()
            .table_name(self.table_name(table))
            .set_key(Some(key_attributes(key)))
            .condition_expression(condition)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// A transaction's action, as DynamoDB takes it.
    fn transact_item(&self, action: TransactAction) -> Result<TransactWriteItem, StoreError> {
        match action {
            TransactAction::Put {
                table,
                item,
                condition,
            } => self.transact_put(table, &item, condition),
            TransactAction::Update {
                table,
                key,
                update,
                condition,
            } => self.transact_update(table, &key, &update, condition),
            TransactAction::Delete {
                table,
                key,
                condition,
            } => self.transact_delete(table, &key, condition),
            TransactAction::ConditionCheck {
                table,
                key,
                condition,
            } => self.transact_check(table, &key, &condition),
        }
    }
}

/// Checks what DynamoDB would reject, so both backends fail the same way before any
/// request is sent.
fn validate_transaction(actions: &[TransactAction]) -> Result<(), StoreError> {
    if actions.is_empty() || actions.len() > MAX_TRANSACTION_ACTIONS {
        return Err(StoreError::Validation(format!(
            "a transaction takes 1 to {MAX_TRANSACTION_ACTIONS} actions, not {}",
            actions.len()
        )));
    }
    let mut seen = HashSet::new();
    for action in actions {
        let key = match action {
            TransactAction::Put { table, item, .. } => {
                validate_index_attributes(*table, item)?;
                Key::of(item)?
            }
            TransactAction::Update {
                table, key, update, ..
            } => {
                validate_update(*table, key, update)?;
                key.clone()
            }
            TransactAction::Delete { key, .. } | TransactAction::ConditionCheck { key, .. } => {
                key.validate()?;
                key.clone()
            }
        };
        if !seen.insert((action.table(), key)) {
            return Err(StoreError::Validation(
                "a transaction cannot include two actions on the same item".to_owned(),
            ));
        }
    }
    Ok(())
}

fn validate_update(table: Context, key: &Key, update: &Update) -> Result<(), StoreError> {
    key.validate()?;
    if let Some(attr) = update
        .set
        .keys()
        .chain(&update.remove)
        .chain(update.add.iter().map(|(attr, _)| attr))
        .find(|a| *a == PK || *a == SK)
    {
        return Err(StoreError::Validation(format!(
            "cannot update key attribute {attr}"
        )));
    }
    validate_index_attributes(table, &update.set)
}

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

    async fn get(
        &self,
        table: Context,
        key: &Key,
        consistent: bool,
    ) -> Result<Option<Item>, StoreError> {
        key.validate()?;
        let output = self
            .client
            .get_item()
            .table_name(self.table_name(table))
            .set_key(Some(key_attributes(key)))
            .consistent_read(consistent)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("GetItem", &output, |o| units(o.consumed_capacity()));
        let output = output.map_err(errors::common)?;
        let item = output.item.map(marshal::from_attributes).transpose()?;
        Ok(item.filter(|item| !is_expired(item, now_epoch_seconds())))
    }

    async fn query(&self, table: Context, query: &Query) -> Result<Page, StoreError> {
        self.run_query(
            table,
            QuerySpec {
                index: None,
                pk_attr: PK,
                sk_attr: Some(SK),
                pk: &query.pk,
                sort_key: query.sort_key.as_ref(),
                forward: query.forward,
                limit: query.limit,
                cursor: query.cursor.as_ref(),
                consistent: query.consistent,
                cursor_attrs: vec![PK, SK],
            },
        )
        .await
    }

    async fn query_index(&self, table: Context, query: &IndexQuery) -> Result<Page, StoreError> {
        let gsi = query.index_of(table)?;
        let mut cursor_attrs = vec![gsi.partition_key, PK, SK];
        cursor_attrs.extend(gsi.sort_key);
        self.run_query(
            table,
            QuerySpec {
                index: Some(gsi.name),
                pk_attr: gsi.partition_key,
                sk_attr: gsi.sort_key,
                pk: &query.pk,
                sort_key: query.sort_key.as_ref(),
                forward: query.forward,
                limit: query.limit,
                cursor: query.cursor.as_ref(),
                consistent: false,
                cursor_attrs,
            },
        )
        .await
    }

    async fn scan(&self, table: Context, scan: &Scan) -> Result<Page, StoreError> {
        if scan.limit == Some(0) {
            return Err(StoreError::Validation(
                "a scan limit must be at least 1".to_owned(),
            ));
        }
        scan.index_of(table)?;
        let start = match &scan.cursor {
            Some(cursor) => Some(marshal::from_string_key(cursor.to_key(&[PK, SK])?)),
            None => None,
        };
        let output = self
            .client
            .scan()
            .table_name(self.table_name(table))
            .set_index_name(scan.index.clone())
            .set_limit(scan.limit.map(|l| l.min(i32::MAX as usize) as i32))
            // Index reads cannot be strongly consistent; table reads are, so a scan
            // right after a write sees it.
            .consistent_read(scan.index.is_none())
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("Scan", &output, |o| units(o.consumed_capacity()));
        let output = output.map_err(errors::common)?;
        let items = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(marshal::from_attributes)
            .collect::<Result<Vec<_>, _>>()?;
        let cursor = output
            .last_evaluated_key
            .filter(|k| !k.is_empty())
            .map(|key| Cursor::from_key(&marshal::string_key(&key)));
        Ok(Page { items, cursor })
    }

    async fn put(
        &self,
        table: Context,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError> {
        Key::of(&item)?;
        validate_index_attributes(table, &item)?;
        let mut expr = Expr::default();
        let condition = condition.map(|c| expr.condition(&c)).transpose()?.flatten();
        let result = self
            .client
            .put_item()
            .table_name(self.table_name(table))
            .set_item(Some(marshal::to_attributes(&item)?))
            .set_condition_expression(condition)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("PutItem", &result, |o| units(o.consumed_capacity()));
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(failed)) => {
                    Err(condition_failed(failed.item()))
                }
                _ => Err(errors::common(e)),
            },
        }
    }

    async fn update(
        &self,
        table: Context,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        validate_update(table, key, &update)?;
        let mut expr = Expr::default();
        let update_expr = expr.update(&update)?;
        let condition = condition.map(|c| expr.condition(&c)).transpose()?.flatten();
        let result = self
            .client
            .update_item()
            .table_name(self.table_name(table))
            .set_key(Some(key_attributes(key)))
            .set_update_expression(update_expr)
            .set_condition_expression(condition)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("UpdateItem", &result, |o| units(o.consumed_capacity()));
        match result {
            Ok(output) => match output.attributes {
                Some(attributes) if !attributes.is_empty() => marshal::from_attributes(attributes),
                // An update that sets nothing returns no attributes: the item is its key.
                _ => Ok(key.to_item()),
            },
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                    Err(condition_failed(failed.item()))
                }
                _ => Err(errors::common(e)),
            },
        }
    }

    async fn delete(
        &self,
        table: Context,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        key.validate()?;
        let mut expr = Expr::default();
        let condition = condition.map(|c| expr.condition(&c)).transpose()?.flatten();
        let result = self
            .client
            .delete_item()
            .table_name(self.table_name(table))
            .set_key(Some(key_attributes(key)))
            .set_condition_expression(condition)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values(ReturnValue::AllOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("DeleteItem", &result, |o| units(o.consumed_capacity()));
        match result {
            Ok(output) => output
                .attributes
                .filter(|a| !a.is_empty())
                .map(marshal::from_attributes)
                .transpose(),
            Err(e) => match e.as_service_error() {
                Some(DeleteItemError::ConditionalCheckFailedException(failed)) => {
                    Err(condition_failed(failed.item()))
                }
                _ => Err(errors::common(e)),
            },
        }
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        validate_transaction(&actions)?;
        let items = actions
            .into_iter()
            .map(|a| self.transact_item(a))
            .collect::<Result<Vec<_>, _>>()?;
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.observe("TransactWriteItems", &result, |o| {
            all_units(o.consumed_capacity())
        });
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => {
                    Err(errors::cancellation(cancelled.cancellation_reasons()))
                }
                _ => Err(errors::common(e)),
            },
        }
    }

    async fn drain_partition_page(
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

    async fn write_batch(&self, table: Context, writes: Vec<BatchWrite>) -> Result<(), StoreError> {
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
}

/// `BatchWriteItem` takes at most 25 requests.
const BATCH_WRITE_REQUESTS: usize = 25;

impl DynamoStore {
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
