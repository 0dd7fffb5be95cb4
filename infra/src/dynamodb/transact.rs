//! `TransactWriteItems`: each of the port's actions as DynamoDB's (put, update, delete,
//! condition check), the checks DynamoDB would make done first, and a cancelled
//! transaction's reasons mapped onto the port's error.

use super::client::{DynamoStore, all_units, build_error};
use super::errors;
use super::expr::{Expr, key_attributes};
use super::items::validate_update;
use super::marshal;
use crate::store::{
    Condition, Item, Key, MAX_TRANSACTION_ACTIONS, StoreError, TransactAction, Update,
    validate_index_attributes,
};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    self as ddb, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use events_schema::Context;
use events_schema::tables::PK;
use std::collections::HashSet;

impl DynamoStore {
    /// [`crate::Store::transact`]: one `TransactWriteItems` of every action.
    pub(super) async fn transact_write_items(
        &self,
        actions: Vec<TransactAction>,
    ) -> Result<(), StoreError> {
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
