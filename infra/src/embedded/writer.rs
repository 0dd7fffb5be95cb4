//! The single writer thread of the embedded store, with group commit.
//!
//! The store has one write transaction at a time and each durable commit costs an fsync.
//! Rather than queue writers behind each other's fsyncs, the writer takes every request
//! waiting at that moment, applies them one after the other in one write transaction
//! (each request sees the ones before it, and a request that fails validation or a
//! condition writes nothing), commits once (its journal appended and `fdatasync`ed:
//! `PersistMode::SyncData`), and only then answers them all. A request
//! is acknowledged only after the commit that holds it is durable.

use super::apply::{self, Change, backend};
use super::layout::{self, Partitions};
use crate::store::{Item, StoreError, TransactAction};
use events_schema::Context;
use fjall::{PersistMode, TxKeyspace, WriteTransaction};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Requests taken into one commit at most.
const MAX_GROUP: usize = 512;

/// A write request.
pub(super) enum WriteOp {
    Transact(Vec<TransactAction>),
    /// Unconditional writes of any number (a rebuild's final rows), in one commit.
    Batch(Vec<TransactAction>),
    Drain {
        table: Context,
        pk: String,
        limit: usize,
    },
    Purge {
        now: i64,
        limit: usize,
    },
    /// Moves a consumer's checkpoint forward (never back).
    Checkpoint {
        consumer: String,
        seq: u64,
    },
    /// Deletes up to `limit` change records numbered `through` or less; the number of
    /// the newest one deleted is kept (see [`TRIMMED`]), so numbering continues after a
    /// restart even when the log is left empty.
    TrimChanges {
        through: u64,
        limit: usize,
    },
}

/// What a write request produced.
pub(super) enum WriteOutcome {
    /// The changes made, in action order.
    Applied(Vec<(Option<Item>, Option<Item>)>),
    /// How many items were deleted.
    Deleted(usize),
    /// Done, with nothing to report.
    Done,
}

pub(super) struct Job {
    pub op: WriteOp,
    pub reply: oneshot::Sender<Answer>,
    /// When the request was handed to the writer.
    pub sent: Instant,
}

/// The writer's answer to a request, with what the request no longer needs.
pub(super) struct Answer {
    pub result: Result<WriteOutcome, StoreError>,
    /// The request and the changes it planned, handed back to be freed by the
    /// requesting task rather than by the writer: measured, freeing items was a fifth
    /// of the writer thread's time, and the writer is the store's one serial resource.
    pub spent: Spent,
}

pub(super) struct Spent {
    _op: WriteOp,
    _changes: Vec<Change>,
}

/// What the writer has done since the store opened: running totals, read at any time
/// without stopping it (`EmbeddedStore::writer_totals`).
#[derive(Debug, Default)]
pub(super) struct WriterCounters {
    commits: AtomicU64,
    requests: AtomicU64,
    /// Items written, put or deleted (outbox items also with their change record).
    items: AtomicU64,
    /// Requests' time from being handed over to the start of their group's transaction.
    queued_nanos: AtomicU64,
    /// Time from the start of a group's transaction to its durable commit.
    busy_nanos: AtomicU64,
    /// Of that, the time in the engine's commit (the journal write and its fsync).
    commit_nanos: AtomicU64,
}

/// A snapshot of [`WriterCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterTotals {
    /// Durable commits (one per group of requests).
    pub commits: u64,
    /// Write requests answered.
    pub requests: u64,
    /// Items written, put or deleted, by committed requests (an outbox item also
    /// writes its change record): the unit of the engine's ceiling in the store
    /// benchmark.
    pub items: u64,
    /// Summed over requests: the wait in the writer's queue.
    pub queued: Duration,
    /// Summed over commits: the writer's time applying and committing a group.
    pub busy: Duration,
    /// Summed over commits: the time in the engine's commit alone (journal, fsync).
    pub committing: Duration,
}

impl WriterTotals {
    /// What happened between `earlier` and this snapshot.
    pub fn since(&self, earlier: &WriterTotals) -> WriterTotals {
        WriterTotals {
            commits: self.commits - earlier.commits,
            requests: self.requests - earlier.requests,
            items: self.items - earlier.items,
            queued: self.queued.saturating_sub(earlier.queued),
            busy: self.busy.saturating_sub(earlier.busy),
            committing: self.committing.saturating_sub(earlier.committing),
        }
    }
}

impl WriterCounters {
    pub(super) fn totals(&self) -> WriterTotals {
        let nanos = |n: &AtomicU64| Duration::from_nanos(n.load(Ordering::Relaxed));
        WriterTotals {
            commits: self.commits.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            items: self.items.load(Ordering::Relaxed),
            queued: nanos(&self.queued_nanos),
            busy: nanos(&self.busy_nanos),
            committing: nanos(&self.commit_nanos),
        }
    }
}

/// A duration in nanoseconds, for the counters (saturating: 584 years fit).
fn nanos(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
}

/// Starts the writer thread; it stops when every sender is dropped.
pub(super) fn spawn(
    db: TxKeyspace,
    names: Arc<Partitions>,
    committed: tokio::sync::watch::Sender<u64>,
    counters: Arc<WriterCounters>,
) -> Result<(mpsc::Sender<Job>, std::thread::JoinHandle<()>), StoreError> {
    let mut next_seq = last_sequence(&db, &names)? + 1;
    let (tx, rx) = mpsc::channel::<Job>();
    let handle = std::thread::Builder::new()
        .name("vitals-store-writer".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match rx.try_recv() {
                        Ok(job) => group.push(job),
                        Err(_) => break,
                    }
                }
                commit_group(&db, &names, group, &mut next_seq, &counters);
                // Wakes change-log consumers; the value is the newest sequence number.
                committed.send_if_modified(|last| {
                    let newest = next_seq - 1;
                    let changed = *last != newest;
                    *last = newest;
                    changed
                });
            }
        })
        .map_err(backend)?;
    Ok((tx, handle))
}

/// The checkpoint under which trimming keeps the number of the newest change record it
/// deleted: the log's numbering goes on from it when the log is empty. (Consumers are
/// subscriptions, named like `goals-from-nutrition`: none has parentheses.)
pub(super) const TRIMMED: &str = "(trimmed)";

pub(super) fn last_sequence(db: &TxKeyspace, names: &Partitions) -> Result<u64, StoreError> {
    last_sequence_in(&db.read_tx(), names)
}

/// The number of the newest change record committed in `txn`'s snapshot, trimmed or
/// not (0 when none ever was).
pub(super) fn last_sequence_in(
    txn: &fjall::ReadTransaction,
    names: &Partitions,
) -> Result<u64, StoreError> {
    let newest = match txn.last_key_value(&names.changelog).map_err(backend)? {
        Some((key, _)) => layout::number(&key)?,
        None => 0,
    };
    let trimmed = match txn.get(&names.checkpoints, TRIMMED).map_err(backend)? {
        Some(value) => layout::number(&value)?,
        None => 0,
    };
    Ok(newest.max(trimmed))
}

fn commit_group(
    db: &TxKeyspace,
    names: &Partitions,
    group: Vec<Job>,
    next_seq: &mut u64,
    counters: &WriterCounters,
) {
    let started = Instant::now();
    let queued = group.iter().fold(0u64, |sum, job| {
        sum.saturating_add(nanos(started.duration_since(job.sent)))
    });
    counters.queued_nanos.fetch_add(queued, Ordering::Relaxed);
    counters
        .requests
        .fetch_add(group.len() as u64, Ordering::Relaxed);
    let mut txn = db.write_tx().durability(Some(PersistMode::SyncData));
    let at_ms = events_schema::time::Timestamp::now().millis();
    let mut seq = *next_seq;
    let mut results = Vec::with_capacity(group.len());
    let mut items = 0;
    for job in &group {
        match apply_job(&mut txn, names, &job.op, &mut seq, at_ms, &mut items) {
            Ok(result) => results.push(result),
            // A failure while writing leaves this transaction half-written: abandon the
            // whole group rather than commit it.
            Err(e) => {
                drop(txn);
                return fail_all(group, e.to_string());
            }
        }
    }
    let committing = Instant::now();
    let committed = txn.commit();
    counters
        .commit_nanos
        .fetch_add(nanos(committing.elapsed()), Ordering::Relaxed);
    counters
        .busy_nanos
        .fetch_add(nanos(started.elapsed()), Ordering::Relaxed);
    counters.commits.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = committed {
        return fail_all(group, e.to_string());
    }
    counters.items.fetch_add(items, Ordering::Relaxed);
    *next_seq = seq;
    for (job, (result, changes)) in group.into_iter().zip(results) {
        let _ = job.reply.send(Answer {
            result,
            spent: Spent {
                _op: job.op,
                _changes: changes,
            },
        });
    }
}

/// Answers every request of a group with `error` (nothing of it was committed).
fn fail_all(group: Vec<Job>, error: String) {
    for job in group {
        let _ = job.reply.send(Answer {
            result: Err(StoreError::Backend(error.clone())),
            spent: Spent {
                _op: job.op,
                _changes: Vec::new(),
            },
        });
    }
}

/// One request of a group, applied to the group's open transaction: its answer (a
/// refused request wrote nothing; the others go on) and the change records it spent.
/// `Err` when a write failed half-way: the transaction must not be committed. Counts
/// the items it wrote into `items`.
fn apply_job(
    txn: &mut WriteTransaction,
    names: &Partitions,
    op: &WriteOp,
    seq: &mut u64,
    at_ms: i64,
    items: &mut u64,
) -> Result<(Result<WriteOutcome, StoreError>, Vec<Change>), StoreError> {
    let planned = match op {
        WriteOp::Checkpoint { consumer, seq } => {
            let done = write_checkpoint(txn, names, consumer, *seq).map(|()| WriteOutcome::Done);
            return Ok((done, Vec::new()));
        }
        WriteOp::TrimChanges { through, limit } => {
            let through = (*through).min(seq.saturating_sub(1));
            let trimmed = trim_changes(txn, names, through, *limit).map(WriteOutcome::Deleted);
            return Ok((trimmed, Vec::new()));
        }
        WriteOp::Transact(actions) => apply::plan(txn, names, actions),
        WriteOp::Batch(actions) => apply::plan_batch(txn, names, actions),
        WriteOp::Drain { table, pk, limit } => apply::plan_drain(txn, names, *table, pk, *limit),
        WriteOp::Purge { now, limit } => apply::plan_purge(txn, names, *now, *limit),
    };
    let changes = match planned {
        Ok(changes) => changes,
        Err(e) => return Ok((Err(e), Vec::new())),
    };
    apply::write(txn, names, &changes, seq, at_ms)?;
    *items += changes.len() as u64;
    let (done, spent) = outcome(op, changes);
    Ok((Ok(done), spent))
}

fn write_checkpoint(
    txn: &mut WriteTransaction,
    names: &Partitions,
    consumer: &str,
    seq: u64,
) -> Result<(), StoreError> {
    let current = match txn.get(&names.checkpoints, consumer).map_err(backend)? {
        Some(value) => layout::number(&value)?,
        None => 0,
    };
    if seq > current {
        txn.insert(&names.checkpoints, consumer, layout::seq_key(seq));
    }
    Ok(())
}

fn trim_changes(
    txn: &mut WriteTransaction,
    names: &Partitions,
    through: u64,
    limit: usize,
) -> Result<usize, StoreError> {
    let doomed: Vec<fjall::Slice> = txn
        .range(&names.changelog, ..=layout::seq_key(through))
        .take(limit)
        .map(|entry| entry.map(|(key, _)| key))
        .collect::<Result<_, _>>()
        .map_err(backend)?;
    let newest = doomed.last().map(|key| layout::number(key)).transpose()?;
    let deleted = doomed.len();
    for key in doomed {
        txn.remove(&names.changelog, key);
    }
    if let Some(newest) = newest {
        write_checkpoint(txn, names, TRIMMED, newest)?;
    }
    Ok(deleted)
}

/// What a request's changes answer, and the changes the answer does not carry.
fn outcome(op: &WriteOp, changes: Vec<Change>) -> (WriteOutcome, Vec<Change>) {
    match op {
        WriteOp::Transact(_) => (
            WriteOutcome::Applied(changes.into_iter().map(|c| (c.old, c.new)).collect()),
            Vec::new(),
        ),
        WriteOp::Drain { .. } | WriteOp::Purge { .. } | WriteOp::Batch(_) => {
            (WriteOutcome::Deleted(changes.len()), changes)
        }
        WriteOp::Checkpoint { .. } => (WriteOutcome::Done, changes),
        WriteOp::TrimChanges { .. } => (WriteOutcome::Deleted(0), changes),
    }
}
