//! A storage wrapper that counts requests by kind, to prove the request economy of
//! commands and queries ("one read and one transaction") in tests and benchmarks, and
//! the capacity units DynamoDB would bill for them ([`crate::capacity`]).
//!
//! To price a write it must know the item before it: it reads it from the store it
//! wraps first (a read that is neither counted nor priced). Between that read and the
//! write another writer may change the item: the figure is then off by that change,
//! which is fine for what it is for (tests, benchmarks, `vitals cost`). Drains
//! (erasure) are counted but not priced.

use crate::capacity::{self, Capacity};
use crate::store::{
    BatchWrite, Condition, Found, Item, Key, SingleRead, SingleWrite, Store, StoreError,
    TransactAction, Written,
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
    /// Batch write requests as DynamoDB takes them (`BatchWriteItem`, 25 writes each).
    pub batch_writes: usize,
}

impl RequestCounts {
    pub fn reads(&self) -> usize {
        self.gets + self.queries + self.index_queries + self.scans
    }

    pub fn writes(&self) -> usize {
        self.single_writes + self.transactions + self.drains + self.batch_writes
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
    batch_writes: AtomicUsize,
}

pub struct CountingStore {
    inner: Arc<dyn Store>,
    counters: Counters,
    /// Reads per table, to show which tables a query touched.
    reads_by_table: std::sync::Mutex<std::collections::BTreeMap<Context, usize>>,
    capacity: std::sync::Mutex<Capacity>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            counters: Counters::default(),
            reads_by_table: Default::default(),
            capacity: Default::default(),
        }
    }

    /// The capacity units billed so far.
    pub fn capacity(&self) -> Capacity {
        self.capacity.lock().map(|c| *c).unwrap_or_default()
    }

    /// The capacity units billed so far, and starts again from zero.
    pub fn take_capacity(&self) -> Capacity {
        taken(&self.capacity)
    }

    fn bill(&self, units: Capacity) {
        if let Ok(mut capacity) = self.capacity.lock() {
            *capacity += units;
        }
    }

    /// The item a write is about to change (unbilled, uncounted).
    async fn before(&self, table: Context, key: &Key) -> Result<Option<Item>, StoreError> {
        self.inner.get(table, key, true).await
    }

    /// Bills a single write from its outcome: `read` is the item before it (read first
    /// for a put or an update), `put` a put's item.
    fn bill_write(
        &self,
        table: Context,
        read: Option<&Item>,
        put: Option<&Item>,
        outcome: &Result<Written, StoreError>,
    ) {
        let units = match outcome {
            Ok(Written::Put) => capacity::write(table, read, put, false),
            Ok(Written::Updated(item)) => capacity::write(table, read, Some(item), false),
            Ok(Written::Deleted(old)) => capacity::write(table, old.as_ref(), None, false),
            Err(StoreError::ConditionFailed { existing }) => {
                capacity::refused_write(existing.as_ref(), false)
            }
            Err(_) => return,
        };
        self.bill(units);
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
            batch_writes: c.batch_writes.load(Ordering::SeqCst),
        }
    }

    /// Reads per table since creation or the last `take_tables`, and starts again.
    pub fn take_tables(&self) -> std::collections::BTreeMap<Context, usize> {
        taken(&self.reads_by_table)
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
            batch_writes: c.batch_writes.swap(0, Ordering::SeqCst),
        }
    }
}

#[derive(Clone, Copy)]
enum ActionKind {
    Put,
    Update,
    Delete,
    Check,
}

fn action_kind(action: &TransactAction) -> ActionKind {
    match action {
        TransactAction::Put { .. } => ActionKind::Put,
        TransactAction::Update { .. } => ActionKind::Update,
        TransactAction::Delete { .. } => ActionKind::Delete,
        TransactAction::ConditionCheck { .. } => ActionKind::Check,
    }
}

/// What `tally` holds, leaving it empty (a poisoned lock has nothing to give).
fn taken<T: Default>(tally: &std::sync::Mutex<T>) -> T {
    tally
        .lock()
        .map(|mut t| std::mem::take(&mut *t))
        .unwrap_or_default()
}

fn bump(counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::SeqCst);
}

#[async_trait]
impl Store for CountingStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.inner.register_metrics(registry);
    }

    async fn health(&self) -> Result<(), StoreError> {
        self.inner.health().await
    }

    async fn read(&self, table: Context, read: SingleRead<'_>) -> Result<Found, StoreError> {
        let c = &self.counters;
        bump(match read {
            SingleRead::Get { .. } => &c.gets,
            SingleRead::Query(_) => &c.queries,
            SingleRead::QueryIndex(_) => &c.index_queries,
            SingleRead::Scan(_) => &c.scans,
        });
        self.read_of(table);
        let found = self.inner.read(table, read).await?;
        // Scans (operators' tools) are counted, not priced.
        if !matches!(read, SingleRead::Scan(_)) {
            self.bill(capacity::read(found.items(), read.consistent()));
        }
        Ok(found)
    }

    async fn write(
        &self,
        table: Context,
        write: SingleWrite,
        condition: Option<Condition>,
    ) -> Result<Written, StoreError> {
        bump(&self.counters.single_writes);
        // A delete answers with the item it deleted; a put or an update is priced from
        // the item before it, read first.
        let read = match &write {
            SingleWrite::Delete { .. } => None,
            SingleWrite::Put { .. } | SingleWrite::Update { .. } => {
                self.before(table, &write.key()?).await?
            }
        };
        let put = match &write {
            SingleWrite::Put { item } => Some(item.clone()),
            SingleWrite::Update { .. } | SingleWrite::Delete { .. } => None,
        };
        let outcome = self.inner.write(table, write, condition).await;
        self.bill_write(table, read.as_ref(), put.as_ref(), &outcome);
        outcome
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        bump(&self.counters.transactions);
        let mut priced = Vec::with_capacity(actions.len());
        for action in &actions {
            let (table, key, new) = match action {
                TransactAction::Put { table, item, .. } => (*table, Key::of(item)?, Some(item)),
                TransactAction::Update { table, key, .. }
                | TransactAction::Delete { table, key, .. }
                | TransactAction::ConditionCheck { table, key, .. } => (*table, key.clone(), None),
            };
            let old = self.before(table, &key).await?;
            priced.push((table, key, old, new.cloned(), action_kind(action)));
        }
        let outcome = self.inner.transact(actions).await;
        if outcome.is_ok() {
            for (table, key, old, new, kind) in priced {
                let units = match kind {
                    ActionKind::Check => capacity::refused_write(old.as_ref(), true),
                    ActionKind::Put => capacity::write(table, old.as_ref(), new.as_ref(), true),
                    ActionKind::Delete => capacity::write(table, old.as_ref(), None, true),
                    ActionKind::Update => {
                        let new = self.before(table, &key).await?;
                        capacity::write(table, old.as_ref(), new.as_ref(), true)
                    }
                };
                self.bill(units);
            }
        }
        outcome
    }

    async fn write_batch(&self, table: Context, writes: Vec<BatchWrite>) -> Result<(), StoreError> {
        /// Writes per `BatchWriteItem` request.
        const PER_REQUEST: usize = 25;
        self.counters
            .batch_writes
            .fetch_add(writes.len().div_ceil(PER_REQUEST), Ordering::SeqCst);
        let mut priced = Vec::with_capacity(writes.len());
        for write in &writes {
            let old = self.before(table, &write.key()?).await?;
            let new = match write {
                BatchWrite::Put(item) => Some(item.clone()),
                BatchWrite::Delete(_) => None,
            };
            priced.push((old, new));
        }
        self.inner.write_batch(table, writes).await?;
        for (old, new) in priced {
            self.bill(capacity::write(table, old.as_ref(), new.as_ref(), false));
        }
        Ok(())
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
