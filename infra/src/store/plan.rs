//! How a transaction is checked and applied by backends that apply it themselves (the
//! embedded store, the buffered view of a rebuild): the keys it addresses (valid, no item
//! twice), each action's condition against the item as it is, and the item each action
//! leaves. One definition, so both keep DynamoDB's semantics the same way.

use super::item::item_size;
use super::{
    CancelReason, Item, Key, MAX_ITEM_BYTES, MAX_TRANSACTION_ACTIONS, StoreError, TransactAction,
    validate_index_attributes,
};
use events_schema::Context;
use std::collections::HashSet;

/// One change a transaction makes: the item at `key` before and after (None: absent).
#[derive(Debug)]
pub(crate) struct Planned {
    pub table: Context,
    pub key: Key,
    pub old: Option<Item>,
    pub new: Option<Item>,
}

/// A transaction takes 1 to [`MAX_TRANSACTION_ACTIONS`] actions.
pub(crate) fn check_size(actions: &[TransactAction]) -> Result<(), StoreError> {
    if actions.is_empty() || actions.len() > MAX_TRANSACTION_ACTIONS {
        return Err(StoreError::Validation(format!(
            "a transaction takes 1 to {MAX_TRANSACTION_ACTIONS} actions, not {}",
            actions.len()
        )));
    }
    Ok(())
}

/// The key of each action, in order: valid, and no item addressed twice.
pub(crate) fn action_keys(actions: &[TransactAction]) -> Result<Vec<Key>, StoreError> {
    let mut seen = HashSet::new();
    let mut keys = Vec::with_capacity(actions.len());
    for action in actions {
        let key = match action {
            TransactAction::Put { item, .. } => Key::of(item)?,
            TransactAction::Update { key, .. }
            | TransactAction::Delete { key, .. }
            | TransactAction::ConditionCheck { key, .. } => {
                key.validate()?;
                key.clone()
            }
        };
        if !seen.insert((action.table(), key.clone())) {
            return Err(StoreError::Validation(
                "a transaction cannot include two actions on the same item".to_owned(),
            ));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// An item a write leaves: at most [`MAX_ITEM_BYTES`], index attributes well typed.
pub(crate) fn validate_item(table: Context, item: &Item) -> Result<(), StoreError> {
    if item_size(item) > MAX_ITEM_BYTES {
        return Err(StoreError::Validation(format!(
            "item is larger than {MAX_ITEM_BYTES} bytes"
        )));
    }
    validate_index_attributes(table, item)
}

/// The changes `actions` (at `keys`, from [`action_keys`]) make, each condition checked
/// against the item `read` returns; a cancellation with one reason per action if any
/// fails. Condition checks change nothing and are not in the result.
pub(crate) fn plan(
    actions: &[TransactAction],
    keys: Vec<Key>,
    mut read: impl FnMut(Context, &Key) -> Result<Option<Item>, StoreError>,
) -> Result<Vec<Planned>, StoreError> {
    let mut reasons = Vec::with_capacity(actions.len());
    let mut changes = Vec::with_capacity(actions.len());
    for (action, key) in actions.iter().zip(keys) {
        let table = action.table();
        let old = read(table, &key)?;
        let holds = action.condition().is_none_or(|c| c.holds(old.as_ref()));
        reasons.push(if holds {
            CancelReason::None
        } else {
            CancelReason::ConditionFailed {
                existing: old.clone(),
            }
        });
        let new = match action {
            TransactAction::Put { item, .. } => Some(item.clone()),
            TransactAction::Update { update, .. } => Some(update.applied_to(&key, old.as_ref())?),
            TransactAction::Delete { .. } => None,
            TransactAction::ConditionCheck { .. } => continue,
        };
        if let Some(item) = &new {
            validate_item(table, item)?;
        }
        changes.push(Planned {
            table,
            key,
            old,
            new,
        });
    }
    if reasons.iter().any(|r| *r != CancelReason::None) {
        return Err(StoreError::TransactionCanceled { reasons });
    }
    Ok(changes)
}
