//! A write-back view of some tables, for a rebuild: the partitions of the tables it
//! buffers are read from the store they wrap once, on first use, and kept in memory;
//! every read and conditional write on them is served from memory, with the port's
//! semantics (conditions, updates, transactions all-or-nothing, TTL hidden from reads);
//! [`Buffered::flush`] then writes only the rows that changed, in large unconditional
//! batches ([`Store::write_batch`]). Other tables pass through to the wrapped store.
//!
//! Why: a replay through the store applies each event with a few durable conditional
//! writes, most of them rewriting a row that the next event of the same user rewrites
//! again. Folding a batch of users' events in memory through the same projector code
//! and writing the final rows once costs one write per row instead of several per event.
//!
//! It is not live-safe: the flush overwrites what others wrote to those rows since they
//! were read. A rebuild runs with the projection workers stopped.

use crate::store::{
    BatchWrite, Condition, Cursor, Found, Item, Key, Page, Query, SingleRead, SingleWrite,
    SortKeyCondition, Store, StoreError, TransactAction, Written, is_expired, now_epoch_seconds,
    plan,
};
use async_trait::async_trait;
use events_schema::Context;
use events_schema::tables::{PK, SK};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex};

/// One partition of a buffered table, as read and as changed since.
#[derive(Default)]
struct Partition {
    items: BTreeMap<String, Item>,
    /// The value each changed row had when read (None: absent), to write only the
    /// rows whose final value differs.
    read_as: HashMap<String, Option<Item>>,
}

impl Partition {
    fn set(&mut self, sk: &str, new: Option<Item>) {
        let old = match new {
            Some(item) => self.items.insert(sk.to_owned(), item),
            None => self.items.remove(sk),
        };
        self.read_as.entry(sk.to_owned()).or_insert(old);
    }

    fn changed(&self) -> impl Iterator<Item = (&String, Option<&Item>)> {
        self.read_as
            .iter()
            .map(|(sk, was)| (sk, was.as_ref(), self.items.get(sk)))
            .filter(|(_, was, now)| was != now)
            .map(|(sk, _, now)| (sk, now))
    }
}

type PartitionId = (Context, String);

/// Items a partition is loaded in per query.
const LOAD_PAGE: usize = 100;

/// See the module docs.
pub struct Buffered {
    base: Arc<dyn Store>,
    tables: BTreeSet<Context>,
    partitions: Mutex<HashMap<PartitionId, Partition>>,
}

impl Buffered {
    /// Buffers `tables` of `base`.
    pub fn new(base: Arc<dyn Store>, tables: impl IntoIterator<Item = Context>) -> Self {
        Self {
            base,
            tables: tables.into_iter().collect(),
            partitions: Mutex::new(HashMap::new()),
        }
    }

    fn buffers(&self, table: Context) -> bool {
        self.tables.contains(&table)
    }

    fn lock(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, HashMap<PartitionId, Partition>>, StoreError> {
        self.partitions
            .lock()
            .map_err(|_| StoreError::Backend("buffered partitions lock poisoned".into()))
    }

    /// Reads the partition from the wrapped store unless it is already here.
    async fn load(&self, table: Context, pk: &str) -> Result<(), StoreError> {
        let id = (table, pk.to_owned());
        if self.lock()?.contains_key(&id) {
            return Ok(());
        }
        let mut partition = Partition::default();
        let mut cursor = None;
        loop {
            // In pages of 100: a store may serve a read that small on the calling task
            // (the embedded one does), where an unbounded one goes to a thread pool. A
            // rebuild loads a partition per user and table, most of them small.
            let query = Query::partition(pk)
                .consistent()
                .limit(LOAD_PAGE)
                .after(cursor);
            let page = self.base.query(table, &query).await?;
            for item in page.items {
                if let Some(sk) = item.get(SK).and_then(|v| v.as_str()) {
                    partition.items.insert(sk.to_owned(), item);
                }
            }
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        // Another task may have loaded (and changed) it meanwhile: theirs wins.
        self.lock()?.entry(id).or_insert(partition);
        Ok(())
    }

    /// Runs `f` on the loaded partition of `key`.
    async fn with<T>(
        &self,
        table: Context,
        pk: &str,
        f: impl FnOnce(&mut Partition) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.load(table, pk).await?;
        let mut partitions = self.lock()?;
        let partition = partitions
            .get_mut(&(table, pk.to_owned()))
            .ok_or_else(|| StoreError::Backend("buffered partition vanished".into()))?;
        f(partition)
    }

    /// Writes every row that changed since it was read, in batches, and forgets the
    /// partitions; returns how many rows it wrote or deleted.
    pub async fn flush(&self) -> Result<usize, StoreError> {
        let partitions = std::mem::take(&mut *self.lock()?);
        // In key order, table by table: a B-tree store then appends to the pages it
        // just wrote rather than touching one page per row all over the file.
        let mut by_table: BTreeMap<Context, BTreeMap<(&str, &str), BatchWrite>> = BTreeMap::new();
        for ((table, pk), partition) in &partitions {
            for (sk, now) in partition.changed() {
                let write = match now {
                    Some(item) => BatchWrite::Put(item.clone()),
                    None => BatchWrite::Delete(Key::new(pk.clone(), sk.clone())),
                };
                by_table
                    .entry(*table)
                    .or_default()
                    .insert((pk.as_str(), sk.as_str()), write);
            }
        }
        let mut written = 0;
        for (table, writes) in by_table {
            written += writes.len();
            self.base
                .write_batch(table, writes.into_values().collect())
                .await?;
        }
        Ok(written)
    }
}

/// A whole item written: its key, and the item valid for `table`.
fn validate(table: Context, item: &Item) -> Result<Key, StoreError> {
    let key = Key::of(item)?;
    plan::validate_item(table, item)?;
    Ok(key)
}

fn query_partition(partition: &Partition, query: &Query) -> Result<Page, StoreError> {
    if query.limit == Some(0) {
        return Err(StoreError::Validation(
            "a query's limit must be at least 1".into(),
        ));
    }
    let start = query.resume_after()?;
    let (lower, upper) = match (&start, query.forward) {
        (Some(sk), true) => (Bound::Excluded(sk.as_str()), Bound::Unbounded),
        (Some(sk), false) => (Bound::Unbounded, Bound::Excluded(sk.as_str())),
        (None, _) => (Bound::Unbounded, Bound::Unbounded),
    };
    let range = partition.items.range::<str, _>((lower, upper));
    let entries: Box<dyn Iterator<Item = (&String, &Item)>> = if query.forward {
        Box::new(range)
    } else {
        Box::new(range.rev())
    };
    let now = now_epoch_seconds();
    let sort_key = query.sort_key.as_ref();
    let mut matching = entries
        .filter(|(sk, _)| sort_key.is_none_or(|c: &SortKeyCondition| c.matches(sk)))
        .filter(|(_, item)| !is_expired(item, now));
    let limit = query.limit.unwrap_or(usize::MAX);
    let items: Vec<(&String, &Item)> = matching.by_ref().take(limit).collect();
    let cursor = match items.last() {
        Some((sk, _)) if items.len() == limit && matching.next().is_some() => {
            Some(Cursor::from_key(&BTreeMap::from([
                (PK.to_owned(), query.pk.clone()),
                (SK.to_owned(), (*sk).clone()),
            ])))
        }
        _ => None,
    };
    Ok(Page {
        items: items.into_iter().map(|(_, item)| item.clone()).collect(),
        cursor,
    })
}

fn refused(what: &str) -> StoreError {
    StoreError::Validation(format!("{what} is not served on a table being rebuilt"))
}

#[async_trait]
impl Store for Buffered {
    fn backend(&self) -> &'static str {
        self.base.backend()
    }

    async fn health(&self) -> Result<(), StoreError> {
        self.base.health().await
    }

    async fn read(&self, table: Context, read: SingleRead<'_>) -> Result<Found, StoreError> {
        if !self.buffers(table) {
            return self.base.read(table, read).await;
        }
        match read {
            SingleRead::Get { key, .. } => {
                key.validate()?;
                let now = now_epoch_seconds();
                self.with(table, &key.pk, |p| {
                    let item = p.items.get(&key.sk).filter(|i| !is_expired(i, now));
                    Ok(Found::Item(item.cloned()))
                })
                .await
            }
            SingleRead::Query(query) => {
                self.with(table, &query.pk, |p| {
                    query_partition(p, query).map(Found::Page)
                })
                .await
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
        if !self.buffers(table) {
            return self.base.write(table, write, condition).await;
        }
        let key = match &write {
            SingleWrite::Put { item } => validate(table, item)?,
            SingleWrite::Update { key, .. } | SingleWrite::Delete { key } => {
                key.validate()?;
                key.clone()
            }
        };
        self.with(table, &key.pk, |p| {
            let current = p.items.get(&key.sk);
            if !condition.as_ref().is_none_or(|c| c.holds(current)) {
                return Err(StoreError::ConditionFailed {
                    existing: current.cloned(),
                });
            }
            let existed = current.is_some();
            let (new, written) = write.apply(current)?;
            // A put's item was validated above, before its partition was loaded.
            if let Written::Updated(item) = &written {
                validate(table, item)?;
            }
            // Deleting an absent row changes nothing.
            if existed || new.is_some() {
                p.set(&key.sk, new);
            }
            Ok(written)
        })
        .await
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        let buffered = actions.iter().filter(|a| self.buffers(a.table())).count();
        if buffered == 0 {
            return self.base.transact(actions).await;
        }
        if buffered < actions.len() {
            // Half in memory, half written now would not be all-or-nothing.
            return Err(refused("a transaction that also writes other tables"));
        }
        plan::check_size(&actions)?;
        let keys = plan::action_keys(&actions)?;
        for (action, key) in actions.iter().zip(&keys) {
            self.load(action.table(), &key.pk).await?;
        }
        let mut partitions = self.lock()?;
        let changes = plan::plan(&actions, keys, |table, key| {
            Ok(partitions
                .get(&(table, key.pk.clone()))
                .and_then(|p| p.items.get(&key.sk))
                .cloned())
        })?;
        for change in changes {
            let partition = partitions
                .get_mut(&(change.table, change.key.pk.clone()))
                .ok_or_else(|| StoreError::Backend("buffered partition vanished".into()))?;
            partition.set(&change.key.sk, change.new);
        }
        Ok(())
    }

    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        if !self.buffers(table) {
            return self.base.drain_partition_page(table, pk, page_size).await;
        }
        self.with(table, pk, |p| {
            let doomed: Vec<String> = p.items.keys().take(page_size.max(1)).cloned().collect();
            for sk in &doomed {
                p.set(sk, None);
            }
            Ok(doomed.len())
        })
        .await
    }
}
