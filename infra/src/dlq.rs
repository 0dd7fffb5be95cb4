//! Dead-letter queues: where a subscription puts a record it could not process after its
//! retries, whole (not only its position), so `vitals redrive` can apply it later. The
//! table adapter keeps letters as `DLQ#<subscription>` rows in the subscriber's own
//! table (the embedded shape); SQS comes with the AWS shape.

use crate::feed::FeedRecord;
use crate::store::{Condition, Item, Key, Query, Store, StoreError};
use async_trait::async_trait;
use events_schema::Context;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A record a subscription gave up on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// Unique per letter, in arrival order.
    pub id: String,
    pub subscription: String,
    pub record: FeedRecord,
    /// The last error, for the operator (never shown to users).
    pub error: String,
    pub attempts: u32,
}

#[async_trait]
pub trait DeadLetterQueue: Send + Sync {
    async fn put(&self, letter: &DeadLetter) -> Result<(), StoreError>;
    /// The oldest letters of a subscription.
    async fn list(&self, subscription: &str, limit: usize) -> Result<Vec<DeadLetter>, StoreError>;
    async fn remove(&self, subscription: &str, id: &str) -> Result<(), StoreError>;
    async fn depth(&self, subscription: &str) -> Result<usize, StoreError>;
}

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
}

fn invalid(e: serde_json::Error) -> StoreError {
    StoreError::Backend(format!("dead letter does not (de)serialize: {e}"))
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
        self.store
            .put(self.table, item, Some(Condition::ItemNotExists))
            .await
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
        let mut depth = 0;
        let mut cursor = None;
        loop {
            let query = Query::partition(Self::pk(subscription))
                .consistent()
                .after(cursor);
            let page = self.store.query(self.table, &query).await?;
            depth += page.items.len();
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(depth),
            }
        }
    }
}
