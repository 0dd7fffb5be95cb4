//! A storage wrapper that counts requests by kind, to prove the request economy of
//! commands and queries ("one read and one transaction") in tests and benchmarks.

use crate::store::{
    Condition, IndexQuery, Item, Key, Page, Query, Scan, Store, StoreError, TransactAction, Update,
};
use async_trait::async_trait;
use events_schema::Context;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Requests made through a [`CountingStore`] since it was created or last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    pub gets: usize,
    pub queries: usize,
    pub index_queries: usize,
    /// Full-table or full-index reads (operators' tools only).
    pub scans: usize,
    pub single_writes: usize,
    pub transactions: usize,
    pub drains: usize,
}

impl RequestCounts {
    pub fn reads(&self) -> usize {
        self.gets + self.queries + self.index_queries + self.scans
    }

    pub fn writes(&self) -> usize {
        self.single_writes + self.transactions + self.drains
    }

    pub fn total(&self) -> usize {
        self.reads() + self.writes()
    }
}

#[derive(Default)]
struct Counters {
    gets: AtomicUsize,
    queries: AtomicUsize,
    index_queries: AtomicUsize,
    scans: AtomicUsize,
    single_writes: AtomicUsize,
    transactions: AtomicUsize,
    drains: AtomicUsize,
}

pub struct CountingStore {
    inner: Arc<dyn Store>,
    counters: Counters,
    /// Reads per table, to show which tables a query touched.
    reads_by_table: std::sync::Mutex<std::collections::BTreeMap<Context, usize>>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            counters: Counters::default(),
            reads_by_table: Default::default(),
        }
    }

    pub fn counts(&self) -> RequestCounts {
        let c = &self.counters;
        RequestCounts {
            gets: c.gets.load(Ordering::SeqCst),
            queries: c.queries.load(Ordering::SeqCst),
            index_queries: c.index_queries.load(Ordering::SeqCst),
            scans: c.scans.load(Ordering::SeqCst),
            single_writes: c.single_writes.load(Ordering::SeqCst),
            transactions: c.transactions.load(Ordering::SeqCst),
            drains: c.drains.load(Ordering::SeqCst),
        }
    }

    /// Reads per table since creation or the last `take_tables`, and starts again.
    pub fn take_tables(&self) -> std::collections::BTreeMap<Context, usize> {
        self.reads_by_table
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default()
    }

    fn read_of(&self, table: Context) {
        if let Ok(mut tables) = self.reads_by_table.lock() {
            *tables.entry(table).or_default() += 1;
        }
    }

    /// Returns the counts so far and starts again from zero.
    pub fn take(&self) -> RequestCounts {
        let c = &self.counters;
        RequestCounts {
            gets: c.gets.swap(0, Ordering::SeqCst),
            queries: c.queries.swap(0, Ordering::SeqCst),
            index_queries: c.index_queries.swap(0, Ordering::SeqCst),
            scans: c.scans.swap(0, Ordering::SeqCst),
            single_writes: c.single_writes.swap(0, Ordering::SeqCst),
            transactions: c.transactions.swap(0, Ordering::SeqCst),
            drains: c.drains.swap(0, Ordering::SeqCst),
        }
    }
}

fn bump(counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::SeqCst);
}

#[async_trait]
impl Store for CountingStore {
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
        bump(&self.counters.gets);
        self.read_of(table);
        self.inner.get(table, key, consistent).await
    }

    async fn query(&self, table: Context, query: &Query) -> Result<Page, StoreError> {
        bump(&self.counters.queries);
        self.read_of(table);
        self.inner.query(table, query).await
    }

    async fn query_index(&self, table: Context, query: &IndexQuery) -> Result<Page, StoreError> {
        bump(&self.counters.index_queries);
        self.read_of(table);
        self.inner.query_index(table, query).await
    }

    async fn scan(&self, table: Context, scan: &Scan) -> Result<Page, StoreError> {
        bump(&self.counters.scans);
        self.read_of(table);
        self.inner.scan(table, scan).await
    }

    async fn put(
        &self,
        table: Context,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError> {
        bump(&self.counters.single_writes);
        self.inner.put(table, item, condition).await
    }

    async fn update(
        &self,
        table: Context,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        bump(&self.counters.single_writes);
        self.inner.update(table, key, update, condition).await
    }

    async fn delete(
        &self,
        table: Context,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        bump(&self.counters.single_writes);
        self.inner.delete(table, key, condition).await
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        bump(&self.counters.transactions);
        self.inner.transact(actions).await
    }

    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        bump(&self.counters.drains);
        self.inner.drain_partition_page(table, pk, page_size).await
    }
}
