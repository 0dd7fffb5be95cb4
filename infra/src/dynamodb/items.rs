//! Single-item operations: `GetItem`, `PutItem`, `UpdateItem` and `DeleteItem`, each
//! with its condition as an expression, a failed condition answered with the item it was
//! checked against, and the checks DynamoDB would make done first (so both backends fail
//! alike).

use super::client::{DynamoStore, units};
use super::errors;
use super::expr::{Expr, key_attributes};
use super::marshal::{self, Attributes};
use crate::store::{
    Condition, Item, Key, StoreError, Update, is_expired, now_epoch_seconds,
    validate_index_attributes,
};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    ReturnConsumedCapacity, ReturnValue, ReturnValuesOnConditionCheckFailure,
};
use events_schema::Context;
use events_schema::tables::{PK, SK};

/// The condition failed: the item it was checked against, from the error itself.
pub(super) fn condition_failed(item: Option<&Attributes>) -> StoreError {
    StoreError::ConditionFailed {
        existing: item.and_then(|attrs| marshal::from_attributes(attrs.clone()).ok()),
    }
}

/// Checks an update as DynamoDB would: a valid key, no key attribute changed, index
/// attributes of the right type.
pub(super) fn validate_update(
    table: Context,
    key: &Key,
    update: &Update,
) -> Result<(), StoreError> {
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

impl DynamoStore {
    /// [`crate::Store::get`]: one `GetItem`; an expired item reads as none.
    pub(super) async fn get_item(
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

    /// [`crate::Store::put`]: one conditional `PutItem`.
    pub(super) async fn put_item(
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

    /// [`crate::Store::update`]: one conditional `UpdateItem`, returning the item after.
    pub(super) async fn update_item(
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

    /// [`crate::Store::delete`]: one conditional `DeleteItem`, returning the item before.
    pub(super) async fn delete_item(
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
}
