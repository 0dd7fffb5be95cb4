//! The embedded backend: a fjall keyspace in a data directory (`vitals.fjall`; why
//! fjall: `docs/embedded-engine.md`), durable commits (the journal `fdatasync`ed before
//! a write is acknowledged), secondary indexes and a change log of the outbox items
//! (what the projector workers read) kept in the same commit as the items. Reads run on
//! snapshots in parallel with the writer. The directory is its owner's only (see
//! [`private`]). A store records its format version and when it was made, and is
//! opened, never conjured: only [`Open::OrCreate`] makes one (see `meta.rs`,
//! `engine.rs`); an older release's `vitals.redb` is migrated when it is opened (see
//! `archive.rs`). A backup is taken while it serves and restored whole (see [`backup`]).

mod apply;
mod archive;
mod backup;
mod changelog;
mod engine;
mod layout;
mod meta;
mod private;
mod read;
mod writer;

pub use archive::MIGRATED;
pub use backup::{BackupError, KEPT_ASIDE, Restored, Snapshot, restore};
pub use changelog::ChangeRecord;
pub use meta::{FORMAT_VERSION, Open, OpenError, Recorded, StoreInfo};
pub use writer::WriterTotals;

use self::apply::backend;
use self::engine::STORE_DIR;
use self::layout::Partitions;
use self::writer::{Job, WriteOp, WriteOutcome};
use crate::store::{
    BatchWrite, CancelReason, Condition, Found, Item, SingleRead, SingleWrite, Store, StoreError,
    TransactAction, Written, batch_chunks, now_epoch_seconds,
};
use async_trait::async_trait;
use events_schema::Context;
use fjall::TxKeyspace;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

/// Queries with a limit up to this run inline (see `EmbeddedStore::read`).
const INLINE_READ_LIMIT: usize = 100;

pub struct EmbeddedStore {
    db: TxKeyspace,
    names: Arc<Partitions>,
    path: PathBuf,
    recorded: Recorded,
    writer: Mutex<Option<mpsc::Sender<Job>>>,
    committed: tokio::sync::watch::Receiver<u64>,
    writer_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    counters: Arc<writer::WriterCounters>,
    /// Held while the store is open: one process at a time.
    _lock: engine::Lock,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EmbeddedStore({})", self.path.display())
    }
}

/// Makes `data_dir` (its mode checked, a warning given if it is open to others): with
/// [`Open::Existing`], only if it is a directory already holding a store (`path`, or an
/// older release's `legacy`), else [`OpenError::Missing`].
fn prepare_dir(data_dir: &Path, path: &Path, legacy: &Path, mode: Open) -> Result<(), OpenError> {
    let missing = |why: String| OpenError::Missing {
        path: path.to_path_buf(),
        why,
    };
    match mode {
        Open::Existing if !data_dir.exists() => {
            return Err(missing(format!("{} does not exist", data_dir.display())));
        }
        Open::Existing if !data_dir.is_dir() => {
            return Err(missing(format!(
                "{} is not a directory",
                data_dir.display()
            )));
        }
        Open::Existing if !path.exists() && !legacy.exists() => {
            return Err(missing(format!(
                "{} holds no {STORE_DIR}",
                data_dir.display()
            )));
        }
        // The directory's mode is checked (and a warning given) either way.
        Open::Existing => private::create_dir(data_dir),
        Open::OrCreate => private::create_dir(data_dir),
    }
    .map_err(|e| meta::unusable(path, e))
}

/// Makes the store at `path` if there is none: migrated from an older release's store
/// `legacy` if there is one, else new. A `legacy` beside a store is left unread, with a
/// warning.
fn make_or_migrate(path: &Path, legacy: &Path) -> Result<(), OpenError> {
    if !path.exists() {
        if legacy.exists() {
            archive::migrate(legacy, path)?;
        } else {
            engine::create(path, engine::write_new_record)?;
            tracing::info!(store = %path.display(), format_version = FORMAT_VERSION, "created a new store");
        }
    } else if legacy.exists() {
        tracing::warn!(
            store = %path.display(),
            ignored = %legacy.display(),
            "an older release's store is beside the store (a migration stopped before \
             renaming it?): it is not read; move it away"
        );
    }
    Ok(())
}

impl EmbeddedStore {
    /// Opens the store in `data_dir`, making it (and the directory) if none is there
    /// ([`Open::OrCreate`]). Fails with a clear error if another process has it open, if
    /// its file is empty, or if it is of a newer format.
    pub fn open(data_dir: &Path) -> Result<Self, StoreError> {
        Ok(Self::open_in(data_dir, Open::OrCreate)?)
    }

    /// Opens the store in `data_dir`; `mode` says whether one may be made there. An
    /// older release's store there (`vitals.redb`) is migrated first.
    pub fn open_in(data_dir: &Path, mode: Open) -> Result<Self, OpenError> {
        let path = data_dir.join(STORE_DIR);
        let legacy = data_dir.join(archive::LEGACY_FILE);
        prepare_dir(data_dir, &path, &legacy, mode)?;
        let lock = engine::lock(data_dir, &path)?;
        make_or_migrate(&path, &legacy)?;
        // Tightened to its owner before anything is read: it holds everything.
        private::tighten_dir(&path).map_err(|e| meta::unusable(&path, e))?;
        let (db, names) = engine::open(&path)?;
        let recorded = meta::recorded(&db.read_tx(), &names, &path)?;
        let names = Arc::new(names);
        let last = writer::last_sequence(&db, &names).map_err(|e| meta::unusable(&path, e))?;
        let (notify, committed) = tokio::sync::watch::channel(last);
        let counters = Arc::new(writer::WriterCounters::default());
        let (sender, thread) = writer::spawn(db.clone(), names.clone(), notify, counters.clone())
            .map_err(|e| meta::unusable(&path, e))?;
        Ok(Self {
            db,
            names,
            path,
            recorded,
            writer: Mutex::new(Some(sender)),
            committed,
            writer_thread: Mutex::new(Some(thread)),
            counters,
            _lock: lock,
        })
    }

    /// What the store is: its path, format version, when it was made, its size now.
    pub fn info(&self) -> Result<StoreInfo, StoreError> {
        let size_bytes = self.db.disk_space();
        Ok(StoreInfo {
            path: self.path.clone(),
            format_version: self.recorded.format_version,
            created_at: self.recorded.created_at.clone(),
            size_bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes a backup of the store to `file` while it goes on serving: one snapshot
    /// copied whole (see [`backup`]); what it holds.
    pub async fn backup_to(&self, file: &Path) -> Result<Snapshot, BackupError> {
        let (db, names) = (self.db.clone(), self.names.clone());
        let (store, file) = (self.path.clone(), file.to_owned());
        tokio::task::spawn_blocking(move || backup::write(&db, &names, &store, &file))
            .await
            .map_err(|e| BackupError::Store(backend(e)))?
    }

    async fn submit(&self, op: WriteOp) -> Result<WriteOutcome, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sender = self
            .writer
            .lock()
            .map_err(|_| StoreError::Backend("writer lock poisoned".into()))?
            .clone()
            .ok_or_else(|| StoreError::Backend("the store is closed".into()))?;
        sender
            .send(Job {
                op,
                reply,
                sent: std::time::Instant::now(),
            })
            .map_err(|_| StoreError::Backend("the store writer has stopped".into()))?;
        let writer::Answer { result, spent } = answer
            .await
            .map_err(|_| StoreError::Backend("the store writer has stopped".into()))?;
        // The spent request and its changes are freed here, off the writer thread.
        drop(spent);
        result
    }

    /// Runs a read on a snapshot. Small reads (a get, a query of at most
    /// [`INLINE_READ_LIMIT`] items) run on the calling task: they take microseconds from
    /// the engine's cache, and handing them to the blocking pool cost more than the
    /// read itself (measured on redb: get p50 52 us through `spawn_blocking`, 3 us in
    /// the engine; fjall's gets are 9 us). Larger reads go to the blocking pool so they
    /// never stall the runtime.
    async fn on_snapshot<T, F>(&self, small: bool, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&fjall::ReadTransaction, &Partitions) -> Result<T, StoreError> + Send + 'static,
    {
        let run = |db: &TxKeyspace, names: &Partitions| f(&db.read_tx(), names);
        if small {
            return run(&self.db, &self.names);
        }
        let (db, names) = (self.db.clone(), self.names.clone());
        tokio::task::spawn_blocking(move || run(&db, &names))
            .await
            .map_err(backend)?
    }

    async fn single(
        &self,
        action: TransactAction,
    ) -> Result<(Option<Item>, Option<Item>), StoreError> {
        match self.submit(WriteOp::Transact(vec![action])).await {
            Ok(WriteOutcome::Applied(mut changes)) => Ok(changes.pop().unwrap_or((None, None))),
            Ok(_) => Err(StoreError::Backend("unexpected outcome".into())),
            Err(StoreError::TransactionCanceled { mut reasons }) => match reasons.pop() {
                Some(CancelReason::ConditionFailed { existing }) => {
                    Err(StoreError::ConditionFailed { existing })
                }
                other => Err(StoreError::Backend(format!(
                    "unexpected cancellation: {other:?}"
                ))),
            },
            Err(e) => Err(e),
        }
    }

    /// Change records with a sequence number greater than `after`, oldest first.
    pub async fn changes_after(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<ChangeRecord>, StoreError> {
        let (db, names) = (self.db.clone(), self.names.clone());
        tokio::task::spawn_blocking(move || read::changes_after(&db, &names, after, limit))
            .await
            .map_err(backend)?
    }

    /// Up to `limit` change records after `after` of `table` whose sort key starts with
    /// `sk_prefix`, scanning at most `scan` records (the others are skipped without
    /// decoding their images); returns them and the last sequence number scanned.
    pub async fn matching_changes_after(
        &self,
        after: u64,
        limit: usize,
        scan: usize,
        table: Context,
        sk_prefix: &'static str,
    ) -> Result<(Vec<ChangeRecord>, u64), StoreError> {
        let (db, names) = (self.db.clone(), self.names.clone());
        tokio::task::spawn_blocking(move || {
            let (limit, scan) = (limit.max(1), scan.max(1));
            read::matching_changes_after(&db, &names, after, limit, scan, table, sk_prefix)
        })
        .await
        .map_err(backend)?
    }

    /// The sequence number of the newest change record (0 when the log is empty).
    pub async fn last_sequence(&self) -> Result<u64, StoreError> {
        let (db, names) = (self.db.clone(), self.names.clone());
        tokio::task::spawn_blocking(move || writer::last_sequence(&db, &names))
            .await
            .map_err(backend)?
    }

    /// What the single writer has done since the store opened (commits, requests, items
    /// written, time queued, applying and committing): where a write's latency goes.
    pub fn writer_totals(&self) -> WriterTotals {
        self.counters.totals()
    }

    /// A receiver that changes whenever a commit adds change records; its value is the
    /// newest sequence number. Consumers wait on it instead of polling.
    pub fn commits(&self) -> tokio::sync::watch::Receiver<u64> {
        self.committed.clone()
    }

    /// The last sequence number `consumer` has recorded as processed (0 if none).
    pub async fn checkpoint(&self, consumer: &str) -> Result<u64, StoreError> {
        let consumer = consumer.to_owned();
        self.on_snapshot(true, move |txn, names| {
            match txn.get(&names.checkpoints, &consumer).map_err(backend)? {
                Some(value) => layout::number(&value),
                None => Ok(0),
            }
        })
        .await
    }

    /// Durably records that `consumer` has processed everything up to `seq`. A
    /// checkpoint never moves back.
    pub async fn set_checkpoint(&self, consumer: &str, seq: u64) -> Result<(), StoreError> {
        self.submit(WriteOp::Checkpoint {
            consumer: consumer.to_owned(),
            seq,
        })
        .await
        .map(|_| ())
    }

    /// Deletes up to `limit` items whose TTL attribute is at or before `now` (epoch
    /// seconds), as DynamoDB's TTL process does; returns how many. Reads already hide
    /// them; this reclaims the space and publishes the deletions.
    pub async fn purge_expired(&self, now: i64, limit: usize) -> Result<usize, StoreError> {
        match self.submit(WriteOp::Purge { now, limit }).await? {
            WriteOutcome::Deleted(n) => Ok(n),
            _ => Err(StoreError::Backend("unexpected outcome".into())),
        }
    }

    /// Deletes up to `limit` change records numbered `through` or less; returns how
    /// many. Numbering goes on after the newest, even from an empty log. Run with the
    /// lowest checkpoint of every consumer, it keeps the log to what is still
    /// unprocessed, as a stream's retention does: an erased user's old images do not
    /// outlive their processing.
    pub async fn trim_changes(&self, through: u64, limit: usize) -> Result<usize, StoreError> {
        match self.submit(WriteOp::TrimChanges { through, limit }).await? {
            WriteOutcome::Deleted(n) => Ok(n),
            _ => Err(StoreError::Backend("unexpected outcome".into())),
        }
    }

    /// Stops the writer after the requests already queued; waits for it.
    pub fn close(&self) {
        if let Ok(mut writer) = self.writer.lock() {
            writer.take();
        }
        if let Some(thread) = self.writer_thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = thread.join();
        }
    }
}

impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        self.close();
    }
}

#[async_trait]
impl Store for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    async fn health(&self) -> Result<(), StoreError> {
        self.on_snapshot(true, |_, _| Ok(())).await
    }

    async fn read(&self, table: Context, read: SingleRead<'_>) -> Result<Found, StoreError> {
        // Every embedded read sees every acknowledged write: reads are always consistent.
        let now = now_epoch_seconds();
        let small = |limit: Option<usize>| limit.is_some_and(|l| l <= INLINE_READ_LIMIT);
        match read {
            SingleRead::Get { key, .. } => {
                let key = key.clone();
                self.on_snapshot(true, move |txn, names| {
                    read::get(txn, names, table, &key, now).map(Found::Item)
                })
                .await
            }
            SingleRead::Query(query) => {
                let query = query.clone();
                self.on_snapshot(small(query.limit), move |txn, names| {
                    read::query(txn, names, table, &query, now).map(Found::Page)
                })
                .await
            }
            SingleRead::QueryIndex(query) => {
                let query = query.clone();
                self.on_snapshot(small(query.limit), move |txn, names| {
                    read::query_index(txn, names, table, &query, now).map(Found::Page)
                })
                .await
            }
            SingleRead::Scan(scan) => {
                let scan = scan.clone();
                self.on_snapshot(small(scan.limit), move |txn, names| {
                    read::scan(txn, names, table, &scan).map(Found::Page)
                })
                .await
            }
        }
    }

    async fn write(
        &self,
        table: Context,
        write: SingleWrite,
        condition: Option<Condition>,
    ) -> Result<Written, StoreError> {
        let put = matches!(write, SingleWrite::Put { .. });
        let (old, new) = self.single(write.into_action(table, condition)).await?;
        // Past a put: a delete leaves no item, an update the item as written.
        Ok(match new {
            _ if put => Written::Put,
            None => Written::Deleted(old),
            Some(item) => Written::Updated(item),
        })
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        self.submit(WriteOp::Transact(actions)).await.map(|_| ())
    }

    async fn write_batch(&self, table: Context, writes: Vec<BatchWrite>) -> Result<(), StoreError> {
        // One commit per chunk: large enough to amortise the fsync, small enough that a
        // write transaction (held in memory until it commits) stays a few megabytes.
        const CHUNK: usize = 4096;
        for chunk in batch_chunks(table, writes, CHUNK) {
            self.submit(WriteOp::Batch(chunk)).await?;
        }
        Ok(())
    }

    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        let op = WriteOp::Drain {
            table,
            pk: pk.to_owned(),
            limit: page_size.max(1),
        };
        match self.submit(op).await? {
            WriteOutcome::Deleted(n) => Ok(n),
            _ => Err(StoreError::Backend("unexpected outcome".into())),
        }
    }
}
