//! The single conditional write: what it asks ([`SingleWrite`]) and what it answers
//! ([`Written`]). Backends and wrappers implement [`crate::Store::write`] once for all
//! three kinds; callers keep `put`, `update` and `delete`, which ask for one kind and
//! take its answer apart.

use super::{Condition, Item, Key, StoreError, TransactAction, Update};
use events_schema::Context;

/// One single-item write, without its condition (which stands beside it).
#[derive(Debug, Clone, PartialEq)]
pub enum SingleWrite {
    /// Writes a whole item.
    Put { item: Item },
    /// Sets, adds to and removes attributes of the item at `key` (creating it if absent).
    Update { key: Key, update: Update },
    /// Deletes the item at `key`.
    Delete { key: Key },
}

impl SingleWrite {
    /// The key written (a put's, from its item: an error if the item has none).
    pub fn key(&self) -> Result<Key, StoreError> {
        match self {
            SingleWrite::Put { item } => Key::of(item),
            SingleWrite::Update { key, .. } | SingleWrite::Delete { key } => Ok(key.clone()),
        }
    }

    /// The write applied to `current`, the item at its key (None: absent), its condition
    /// already checked: the item it leaves (None: none) and its answer. For the views
    /// that apply writes in memory (the buffered and folded ones); the item left is not
    /// validated here.
    pub fn apply(self, current: Option<&Item>) -> Result<(Option<Item>, Written), StoreError> {
        Ok(match self {
            SingleWrite::Put { item } => (Some(item), Written::Put),
            SingleWrite::Update { key, update } => {
                let item = update.applied_to(&key, current)?;
                (Some(item.clone()), Written::Updated(item))
            }
            SingleWrite::Delete { .. } => (None, Written::Deleted(current.cloned())),
        })
    }

    /// As an action of a transaction on `table`, guarded by `condition`.
    pub fn into_action(self, table: Context, condition: Option<Condition>) -> TransactAction {
        match self {
            SingleWrite::Put { item } => TransactAction::Put {
                table,
                item,
                condition,
            },
            SingleWrite::Update { key, update } => TransactAction::Update {
                table,
                key,
                update,
                condition,
            },
            SingleWrite::Delete { key } => TransactAction::Delete {
                table,
                key,
                condition,
            },
        }
    }
}

/// What a single write answers, one kind for each kind of [`SingleWrite`].
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// A put took effect.
    Put,
    /// An update took effect: the item as written.
    Updated(Item),
    /// A delete took effect: the item it deleted (none if there was none).
    Deleted(Option<Item>),
}

impl Written {
    /// What a store that answered `asked` (such as "an update") with this answer did
    /// wrong: the answer is of another kind. Names the kinds only, never the item.
    pub(crate) fn mismatch(&self, asked: &str) -> StoreError {
        let answered = match self {
            Written::Put => "a put",
            Written::Updated(_) => "an update",
            Written::Deleted(_) => "a delete",
        };
        StoreError::Backend(format!(
            "the store answered {asked} as if it were {answered}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::answers::Answers;

    #[tokio::test]
    async fn put_update_and_delete_take_their_own_answer_and_refuse_another_kind() {
        let (table, key) = (Context::Goals, Key::new("USER#u", "A"));
        let item = key.to_item();

        let puts = Answers::writes(Written::Put);
        assert!(puts.put(table, item.clone(), None).await.is_ok());
        let updated = Answers::writes(Written::Updated(item.clone()));
        let update = Update::default();
        let answer = updated.update(table, &key, update.clone(), None).await;
        assert_eq!(answer.ok(), Some(item.clone()));
        let deleted = Answers::writes(Written::Deleted(Some(item.clone())));
        assert_eq!(
            deleted.delete(table, &key, None).await.ok(),
            Some(Some(item))
        );

        let mismatched = [
            puts.update(table, &key, update, None).await.map(drop),
            puts.delete(table, &key, None).await.map(drop),
            updated.put(table, key.to_item(), None).await,
        ];
        for answer in mismatched {
            assert!(matches!(answer, Err(StoreError::Backend(_))), "{answer:?}");
        }
    }

    #[test]
    fn applied_a_write_leaves_its_item_and_answers_its_kind() {
        let key = Key::new("USER#u", "A");
        let current = key.to_item();
        let update = SingleWrite::Update {
            key: key.clone(),
            update: Update::default().set("minutes", 5),
        };
        let (left, answer) = update.apply(Some(&current)).expect("applied");
        let expected = Update::default().set("minutes", 5).applied_to(&key, None);
        assert_eq!(left, expected.ok());
        assert!(matches!(answer, Written::Updated(item) if Some(&item) == left.as_ref()));

        let delete = SingleWrite::Delete { key };
        let (left, answer) = delete.apply(Some(&current)).expect("applied");
        assert_eq!((left, answer), (None, Written::Deleted(Some(current))));
    }
}
