//! A storage wrapper that passes every request on to the store it wraps and shows an
//! [`Observer`] each write twice: before it is passed on (where a test may hold it) and
//! once it took effect (what a log line or a test's change feed records). Reads pass
//! through unseen. One forwarding implementation of the port serves every such wrapper:
//! the write log of `vitals serve` ([`crate::logged`]) and the tests' event capture and
//! interleaving gates.

use crate::store::{
    Condition, IndexQuery, Item, Key, Page, Query, Scan, Store, StoreError, TransactAction, Update,
};
use async_trait::async_trait;
use events_schema::Context;
use std::sync::Arc;

/// One row a write addresses (a transaction's condition checks are not rows).
#[derive(Clone, Copy)]
pub enum Row<'a> {
    Put {
        table: Context,
        item: &'a Item,
    },
    Update {
        table: Context,
        key: &'a Key,
        update: &'a Update,
    },
    Delete {
        table: Context,
        key: &'a Key,
    },
}

impl<'a> Row<'a> {
    fn of(action: &'a TransactAction) -> Option<Self> {
        match action {
            TransactAction::Put { table, item, .. } => Some(Row::Put {
                table: *table,
                item,
            }),
            TransactAction::Update {
                table, key, update, ..
            } => Some(Row::Update {
                table: *table,
                key,
                update,
            }),
            TransactAction::Delete { table, key, .. } => Some(Row::Delete { table: *table, key }),
            TransactAction::ConditionCheck { .. } => None,
        }
    }
}

/// A write request: a single row, or a transaction.
pub enum Write<'a> {
    Single(Row<'a>),
    Transaction(&'a [TransactAction]),
}

impl<'a> Write<'a> {
    /// The rows it writes, in request order.
    pub fn rows(&self) -> Vec<Row<'a>> {
        match self {
            Write::Single(row) => vec![*row],
            Write::Transaction(actions) => actions.iter().filter_map(Row::of).collect(),
        }
    }
}

/// What a wrapper does around the writes it passes on.
#[async_trait]
pub trait Observer: Send + Sync {
    /// What the observer keeps of a write until it took effect.
    type Note: Send;

    /// Sees a write before it is passed on (the request waits for it).
    async fn before(&self, write: Write<'_>) -> Self::Note;

    /// The write took effect (a refused or failed one is not reported).
    fn written(&self, note: Self::Note);

    /// A drain took effect and deleted `deleted` items of a partition.
    fn drained(&self, _table: Context, _deleted: usize) {}
}

/// See the module docs.
pub struct Observed<O> {
    inner: Arc<dyn Store>,
    observer: O,
}

impl<O: Observer> Observed<O> {
    pub fn new(inner: Arc<dyn Store>, observer: O) -> Self {
        Self { inner, observer }
    }

    /// The observer, to read what it recorded.
    pub fn observer(&self) -> &O {
        &self.observer
    }
}

#[async_trait]
impl<O: Observer> Store for Observed<O> {
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
        let row = Row::Put { table, item: &item };
        let note = self.observer.before(Write::Single(row)).await;
        self.inner.put(table, item, condition).await?;
        self.observer.written(note);
        Ok(())
    }

    async fn update(
        &self,
        table: Context,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        let row = Row::Update {
            table,
            key,
            update: &update,
        };
        let note = self.observer.before(Write::Single(row)).await;
        let item = self.inner.update(table, key, update, condition).await?;
        self.observer.written(note);
        Ok(item)
    }

    async fn delete(
        &self,
        table: Context,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        let row = Row::Delete { table, key };
        let note = self.observer.before(Write::Single(row)).await;
        let deleted = self.inner.delete(table, key, condition).await?;
        self.observer.written(note);
        Ok(deleted)
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        let note = self.observer.before(Write::Transaction(&actions)).await;
        self.inner.transact(actions).await?;
        self.observer.written(note);
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
        self.observer.drained(table, deleted);
        Ok(deleted)
    }
}
