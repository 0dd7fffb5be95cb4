//! Letters as `DLQ#<subscription>` rows of the subscriber's own table (the embedded
//! shape, and DynamoDB without SQS): written once per record, listed in feed order.

use super::letter::{DeadLetter, DeadLetterQueue, invalid, is_about};
use crate::store::{Condition, Item, Key, Query, Store, StoreError};
use async_trait::async_trait;
use events_schema::Context;
use std::sync::Arc;

/// Letters as rows of a table (the subscriber's own).
pub struct TableDlq {
    store: Arc<dyn Store>,
    table: Context,
}

impl std::fmt::Debug for TableDlq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TableDlq({})", self.table)
    }
}

impl TableDlq {
    pub fn new(store: Arc<dyn Store>, table: Context) -> Self {
        Self { store, table }
    }

    fn pk(subscription: &str) -> String {
        format!("DLQ#{subscription}")
    }

    /// Applies `f` to every letter row of a subscription.
    async fn each_letter(
        &self,
        subscription: &str,
        mut f: impl FnMut(&Item) -> bool,
    ) -> Result<Vec<Key>, StoreError> {
        let mut chosen = Vec::new();
        let mut cursor = None;
        loop {
            let query = Query::partition(Self::pk(subscription))
                .consistent()
                .after(cursor);
            let page = self.store.query(self.table, &query).await?;
            for letter in &page.items {
                if f(letter) {
                    chosen.push(Key::of(letter)?);
                }
            }
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(chosen),
            }
        }
    }
}

#[async_trait]
impl DeadLetterQueue for TableDlq {
    async fn put(&self, letter: &DeadLetter) -> Result<(), StoreError> {
        let mut item: Item = match serde_json::to_value(letter).map_err(invalid)? {
            serde_json::Value::Object(map) => map,
            _ => Item::new(),
        };
        item.insert("pk".into(), Self::pk(&letter.subscription).into());
        item.insert("sk".into(), letter.id.clone().into());
        let put = self
            .store
            .put(self.table, item, Some(Condition::ItemNotExists));
        match put.await {
            // The record's letter is there from an earlier try: it stays as first written.
            Err(StoreError::ConditionFailed { .. }) => Ok(()),
            done => done,
        }
    }

    async fn list(&self, subscription: &str, limit: usize) -> Result<Vec<DeadLetter>, StoreError> {
        let query = Query::partition(Self::pk(subscription))
            .limit(limit.max(1))
            .consistent();
        let page = self.store.query(self.table, &query).await?;
        page.items
            .into_iter()
            .map(|item| serde_json::from_value(item.into()).map_err(invalid))
            .collect()
    }

    async fn remove(&self, subscription: &str, id: &str) -> Result<(), StoreError> {
        self.store
            .delete(self.table, &Key::new(Self::pk(subscription), id), None)
            .await
            .map(|_| ())
    }

    async fn depth(&self, subscription: &str) -> Result<usize, StoreError> {
        Ok(self.each_letter(subscription, |_| true).await?.len())
    }

    async fn remove_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError> {
        let doomed = self
            .each_letter(subscription, |letter| {
                is_about(&serde_json::Value::Object(letter.clone()), pk)
            })
            .await?;
        for key in &doomed {
            self.store.delete(self.table, key, None).await?;
        }
        Ok(doomed.len() as u64)
    }

    async fn count_about(&self, subscription: &str, pk: &str) -> Result<u64, StoreError> {
        let about = self
            .each_letter(subscription, |letter| {
                is_about(&serde_json::Value::Object(letter.clone()), pk)
            })
            .await?;
        Ok(about.len() as u64)
    }
}
