//! A storage wrapper that logs every write that took effect, at info (target
//! `vitals::store`): the table and what kind of row, so one grep for a request id finds
//! the command's commit and every read row it caused (the line inherits the request's or
//! the event's span). Reads are not logged. Never a partition key (it names a user or an
//! email) nor an attribute value: a row is named by its sort key's kind (`DAILY`,
//! `RECENT_MEALS`), an outbox event by its id.

use crate::store::{
    Condition, IndexQuery, Item, Key, Page, Query, Scan, Store, StoreError, TransactAction, Update,
};
use async_trait::async_trait;
use events_schema::Context;
use std::sync::Arc;

pub struct LoggedStore {
    inner: Arc<dyn Store>,
}

impl LoggedStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self { inner }
    }
}

/// A sort key as a log may show it: `EVT#<event id>` whole, any other by its kind.
fn row_kind(sort_key: &str) -> &str {
    if sort_key.starts_with("EVT#") {
        return sort_key;
    }
    sort_key.split('#').next().unwrap_or(sort_key)
}

fn sort_key(item: &Item) -> &str {
    item.get("sk").and_then(|v| v.as_str()).unwrap_or_default()
}

fn written(table: Context, kind: &str, row: &str) {
    tracing::info!(target: "vitals::store", %table, write = kind, row = row_kind(row), "row written");
}

#[async_trait]
impl Store for LoggedStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    fn prometheus(&self) -> String {
        self.inner.prometheus()
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
        let row = sort_key(&item).to_owned();
        self.inner.put(table, item, condition).await?;
        written(table, "put", &row);
        Ok(())
    }

    async fn update(
        &self,
        table: Context,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        let item = self.inner.update(table, key, update, condition).await?;
        written(table, "update", &key.sk);
        Ok(item)
    }

    async fn delete(
        &self,
        table: Context,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        let deleted = self.inner.delete(table, key, condition).await?;
        written(table, "delete", &key.sk);
        Ok(deleted)
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        let rows: Vec<(Context, &'static str, String)> = actions
            .iter()
            .filter_map(|action| match action {
                TransactAction::Put { table, item, .. } => {
                    Some((*table, "put", sort_key(item).to_owned()))
                }
                TransactAction::Update { table, key, .. } => {
                    Some((*table, "update", key.sk.clone()))
                }
                TransactAction::Delete { table, key, .. } => {
                    Some((*table, "delete", key.sk.clone()))
                }
                TransactAction::ConditionCheck { .. } => None,
            })
            .collect();
        self.inner.transact(actions).await?;
        for (table, kind, row) in &rows {
            written(*table, kind, row);
        }
        Ok(())
    }

    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        let deleted = self
            .inner
            .drain_partition_page(table, pk, page_size)
            .await?;
        if deleted > 0 {
            tracing::info!(target: "vitals::store", %table, deleted, "partition page drained");
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::row_kind;

    #[test]
    fn rows_are_named_by_kind_and_events_by_id() {
        assert_eq!(row_kind("DAILY#2026-12-02"), "DAILY");
        assert_eq!(row_kind("SESSION#01J0000000000000000000000"), "SESSION");
        assert_eq!(row_kind("RECENT_MEALS"), "RECENT_MEALS");
        assert_eq!(
            row_kind("EVT#01J0000000000000000000000"),
            "EVT#01J0000000000000000000000"
        );
    }
}
