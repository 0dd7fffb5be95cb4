//! A store that records every event it commits: the model test's change feed. It sees
//! what the real feeds see (an outbox item written in a committed write), on any
//! backend, including the events that are removed right after they are written (an
//! eraser's `PartitionDrained`), which reading the outboxes afterwards would miss.

use events_schema::Context;
use events_schema::envelope::{EventEnvelope, OUTBOX_ATTR};
use infra::store::{Condition, IndexQuery, Item, Key, Page, Query, Scan, TransactAction, Update};
use infra::{Store, StoreError};
use serde_json::Value;
use std::sync::{Arc, Mutex};

pub struct CapturingStore {
    inner: Arc<dyn Store>,
    events: Mutex<Vec<EventEnvelope>>,
}

impl CapturingStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            events: Mutex::new(Vec::new()),
        }
    }

    /// The events committed since the last call, in commit order.
    pub fn take(&self) -> Vec<EventEnvelope> {
        self.events
            .lock()
            .map(|mut e| std::mem::take(&mut *e))
            .unwrap_or_default()
    }

    fn record(&self, item: &Item) {
        let is_outbox = item
            .get("sk")
            .and_then(Value::as_str)
            .is_some_and(|sk| sk.starts_with("EVT#"));
        let event = item
            .get(OUTBOX_ATTR)
            .and_then(|e| serde_json::from_value::<EventEnvelope>(e.clone()).ok());
        if let (true, Some(event), Ok(mut events)) = (is_outbox, event, self.events.lock()) {
            events.push(event);
        }
    }
}

#[async_trait::async_trait]
impl Store for CapturingStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    async fn health(&self) -> Result<(), StoreError> {
        self.inner.health().await
    }
    async fn get(
        &self,
        table: Context,
        key: &Key,
        consistent: bool,
    ) -> Result<Option<Item>, StoreError> {
        self.inner.get(table, key, consistent).await
    }
    async fn query(&self, table: Context, query: &Query) -> Result<Page, StoreError> {
        self.inner.query(table, query).await
    }
    async fn query_index(&self, table: Context, query: &IndexQuery) -> Result<Page, StoreError> {
        self.inner.query_index(table, query).await
    }
    async fn scan(&self, table: Context, scan: &Scan) -> Result<Page, StoreError> {
        self.inner.scan(table, scan).await
    }
    async fn put(
        &self,
        table: Context,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError> {
        self.inner.put(table, item.clone(), condition).await?;
        self.record(&item);
        Ok(())
    }
    async fn update(
        &self,
        table: Context,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        self.inner.update(table, key, update, condition).await
    }
    async fn delete(
        &self,
        table: Context,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        self.inner.delete(table, key, condition).await
    }
    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        let written: Vec<Item> = actions
            .iter()
            .filter_map(|a| match a {
                TransactAction::Put { item, .. } => Some(item.clone()),
                _ => None,
            })
            .collect();
        self.inner.transact(actions).await?;
        for item in &written {
            self.record(item);
        }
        Ok(())
    }
    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        self.inner.drain_partition_page(table, pk, page_size).await
    }
}
