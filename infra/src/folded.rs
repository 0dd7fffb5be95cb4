//! A live-safe write-back view of some tables, for a stream consumer folding one user's
//! records of a batch: each row of the tables it folds is read from the wrapped store
//! once (strongly consistent), on first use, and kept in memory with the value it was
//! read as; reads and conditional writes on it are then served from memory, with the
//! port's semantics. [`Folded::flush`] writes each row whose value changed once,
//! conditioned on the row still being as it was read, so a write another worker made
//! meanwhile is never overwritten: the flush fails with `ConditionFailed` instead, and
//! the caller applies the records again one at a time (a projection converges under
//! re-application, so the rows a failed flush did write are harmless).
//!
//! Why: a user's ten events of a batch each rewrite the same few rows (the day's
//! summary, the window mark, the recent lists). Applied one at a time against DynamoDB
//! each costs a request of a few milliseconds; folded, a row costs one read and one
//! write whatever the number of events.
//!
//! Unlike [`crate::buffered::Buffered`] (a rebuild's view, which reads whole partitions
//! and overwrites unconditionally with the workers stopped), this view reads rows, not
//! partitions, and is safe beside live writers. What it cannot keep all-or-nothing it
//! refuses: transactions, scans, index queries and partition drains on a folded table
//! fail with a `Validation` error, so a projection needing them is applied unfolded. A
//! query of a partition the fold has changed first flushes (the query then sees the
//! fold's writes); every query is served by the wrapped store.

use crate::store::{
    Condition, Found, Item, Key, SingleRead, SingleWrite, Store, StoreError, TransactAction,
    Update, Written, is_expired, now_epoch_seconds, plan,
};
use async_trait::async_trait;
use events_schema::Context;
use events_schema::tables::{PK, SK};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// One row of a folded table: as read, and as it is now.
#[derive(Debug, Clone)]
struct Row {
    read_as: Option<Item>,
    now: Option<Item>,
}

type RowId = (Context, String, String);

/// See the module docs.
pub struct Folded {
    base: Arc<dyn Store>,
    tables: BTreeSet<Context>,
    rows: Mutex<BTreeMap<RowId, Row>>,
}

/// The write that takes the row at `key` from what was read to what it is now, and its
/// guard: the row still being as read. `None` when nothing changed.
fn guarded_write(
    key: Key,
    read_as: Option<&Item>,
    now: Option<&Item>,
) -> Option<(SingleWrite, Condition)> {
    if read_as == now {
        return None;
    }
    Some(match (read_as, now) {
        (None, Some(item)) => {
            let put = SingleWrite::Put { item: item.clone() };
            (put, Condition::ItemNotExists)
        }
        (Some(old), Some(new)) => {
            let mut update = Update::default();
            for (attr, value) in new.iter().filter(|(a, _)| !is_key(a)) {
                if old.get(attr) != Some(value) {
                    update.set.insert(attr.clone(), value.clone());
                }
            }
            update.remove = old
                .keys()
                .filter(|a| !is_key(a) && !new.contains_key(*a))
                .cloned()
                .collect();
            (SingleWrite::Update { key, update }, unchanged(old))
        }
        (Some(old), None) => (SingleWrite::Delete { key }, unchanged(old)),
        (None, None) => return None,
    })
}

fn is_key(attr: &str) -> bool {
    attr == PK || attr == SK
}

/// The row exists and every attribute it was read with still has its value. (An
/// attribute another writer added and this fold never saw survives the update, which
/// sets and removes only what the fold changed.)
fn unchanged(old: &Item) -> Condition {
    let mut all = vec![Condition::ItemExists];
    all.extend(
        old.iter()
            .filter(|(a, _)| !is_key(a))
            .map(|(a, v)| Condition::AttributeEquals(a.clone(), v.clone())),
    );
    Condition::All(all)
}

impl Folded {
    /// Folds `tables` of `base`.
    pub fn new(base: Arc<dyn Store>, tables: impl IntoIterator<Item = Context>) -> Self {
        Self {
            base,
            tables: tables.into_iter().collect(),
            rows: Mutex::new(BTreeMap::new()),
        }
    }

    fn folds(&self, table: Context) -> bool {
        self.tables.contains(&table)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<RowId, Row>>, StoreError> {
        self.rows
            .lock()
            .map_err(|_| StoreError::Backend("folded rows lock poisoned".into()))
    }

    fn id(table: Context, key: &Key) -> RowId {
        (table, key.pk.clone(), key.sk.clone())
    }

    /// The row's value now, reading it from the wrapped store on first use.
    async fn current(&self, table: Context, key: &Key) -> Result<Option<Item>, StoreError> {
        let id = Self::id(table, key);
        if let Some(row) = self.lock()?.get(&id) {
            return Ok(row.now.clone());
        }
        let read = self.base.get(table, key, true).await?;
        let mut rows = self.lock()?;
        // A caller folds one user sequentially; were it not, the first read wins.
        let row = rows.entry(id).or_insert(Row {
            read_as: read.clone(),
            now: read,
        });
        Ok(row.now.clone())
    }

    /// Writes every row that changed since it was read, each once and all at once,
    /// each conditioned on being as read; returns how many it wrote. A row changed by
    /// someone else meanwhile fails the flush with `ConditionFailed` (the other rows'
    /// writes may have landed); the rows written are then as read, so a second flush
    /// writes only what is left.
    pub async fn flush(&self) -> Result<usize, StoreError> {
        let (pending, writes): (Vec<(RowId, Option<Item>)>, Vec<_>) = self
            .lock()?
            .iter()
            .filter_map(|(id, row)| {
                let (table, pk, sk) = id;
                let key = Key::new(pk.clone(), sk.clone());
                let (write, guard) = guarded_write(key, row.read_as.as_ref(), row.now.as_ref())?;
                let written = self.base.write(*table, write, Some(guard));
                Some(((id.clone(), row.now.clone()), written))
            })
            .unzip();
        let outcomes = futures_util::future::join_all(writes).await;
        let (mut written, mut first_error) = (0, None);
        let mut rows = self.lock()?;
        for ((id, now), outcome) in pending.into_iter().zip(outcomes) {
            match outcome {
                Ok(_) => {
                    written += 1;
                    if let Some(row) = rows.get_mut(&id) {
                        row.read_as = now;
                    }
                }
                Err(error) => {
                    // What the row is now is unknown: it is read again if used.
                    rows.remove(&id);
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(written), Err)
    }

    /// Whether a row of the partition has changed since it was read (a query of the
    /// partition must see it; a query of another cannot).
    fn changes_partition(&self, table: Context, pk: &str) -> Result<bool, StoreError> {
        Ok(self
            .lock()?
            .iter()
            .any(|((t, p, _), row)| *t == table && p == pk && row.read_as != row.now))
    }

    /// How many rows the view has read.
    pub fn rows_read(&self) -> usize {
        self.lock().map_or(0, |rows| rows.len())
    }
}

fn refused(what: &str) -> StoreError {
    StoreError::Validation(format!("{what} is not served on a folded table"))
}

#[async_trait]
impl Store for Folded {
    fn backend(&self) -> &'static str {
        self.base.backend()
    }

    async fn health(&self) -> Result<(), StoreError> {
        self.base.health().await
    }

    async fn read(&self, table: Context, read: SingleRead<'_>) -> Result<Found, StoreError> {
        if !self.folds(table) {
            return self.base.read(table, read).await;
        }
        match read {
            SingleRead::Get { key, .. } => {
                key.validate()?;
                let now = now_epoch_seconds();
                let item = self.current(table, key).await?;
                Ok(Found::Item(item.filter(|item| !is_expired(item, now))))
            }
            SingleRead::Query(query) => {
                if self.changes_partition(table, &query.pk)? {
                    self.flush().await?;
                }
                self.base.read(table, read).await
            }
            SingleRead::QueryIndex(_) | SingleRead::Scan(_) => Err(refused(read.kind())),
        }
    }

    async fn write(
        &self,
        table: Context,
        write: SingleWrite,
        condition: Option<Condition>,
    ) -> Result<Written, StoreError> {
        if !self.folds(table) {
            return self.base.write(table, write, condition).await;
        }
        let key = write.key()?;
        key.validate()?;
        let current = self.current(table, &key).await?;
        if !condition.is_none_or(|c| c.holds(current.as_ref())) {
            return Err(StoreError::ConditionFailed { existing: current });
        }
        let (new, written) = write.apply(current.as_ref())?;
        if let Some(item) = &new {
            plan::validate_item(table, item)?;
        }
        let mut rows = self.lock()?;
        let row = rows
            .get_mut(&Self::id(table, &key))
            .ok_or_else(|| StoreError::Backend("folded row vanished".into()))?;
        row.now = new;
        Ok(written)
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        if actions.iter().any(|a| self.folds(a.table())) {
            // Folded rows are written one by one: a transaction would not stay one.
            return Err(refused("a transaction"));
        }
        self.base.transact(actions).await
    }

    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        if self.folds(table) {
            return Err(refused("a partition drain"));
        }
        self.base.drain_partition_page(table, pk, page_size).await
    }
}
