//! The single writer thread of the embedded store, with group commit.
//!
//! redb allows one write transaction at a time and each durable commit costs an fsync.
//! Rather than queue writers behind each other's fsyncs, the writer takes every request
//! waiting at that moment, applies them one after the other in one redb transaction
//! (each request sees the ones before it, and a request that fails validation or a
//! condition writes nothing), commits once, and only then answers them all. A request
//! is acknowledged only after the commit that holds it is durable.

use super::apply::{self, Change, backend};
use super::layout::{CHANGELOG, CHECKPOINTS, Names};
use crate::store::{Item, StoreError, TransactAction};
use events_schema::Context;
use redb::{Database, ReadableTable};
use std::sync::Arc;
use std::sync::mpsc;
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
    /// Deletes up to `limit` change records numbered `through` or less; the newest
    /// record always stays, so numbering continues after a restart.
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
    pub reply: oneshot::Sender<Result<WriteOutcome, StoreError>>,
}

/// Starts the writer thread; it stops when every sender is dropped.
pub(super) fn spawn(
    db: Arc<Database>,
    names: Arc<Names>,
    committed: tokio::sync::watch::Sender<u64>,
) -> Result<(mpsc::Sender<Job>, std::thread::JoinHandle<()>), StoreError> {
    let mut next_seq = last_sequence(&db)? + 1;
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
                commit_group(&db, &names, group, &mut next_seq);
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

pub(super) fn last_sequence(db: &Database) -> Result<u64, StoreError> {
    use redb::ReadableDatabase as _;
    let txn = db.begin_read().map_err(backend)?;
    let log = txn.open_table(CHANGELOG).map_err(backend)?;
    Ok(log
        .last()
        .map_err(backend)?
        .map(|(k, _)| k.value())
        .unwrap_or(0))
}

fn commit_group(db: &Database, names: &Names, group: Vec<Job>, next_seq: &mut u64) {
    let fail_all = |group: Vec<Job>, error: String| {
        for job in group {
            let _ = job.reply.send(Err(StoreError::Backend(error.clone())));
        }
    };
    let txn = match db.begin_write() {
        Ok(txn) => txn,
        Err(e) => return fail_all(group, e.to_string()),
    };
    let at_ms = events_schema::time::Timestamp::now().millis();
    let mut seq = *next_seq;
    let mut results = Vec::with_capacity(group.len());
    for job in &group {
        if let WriteOp::Checkpoint { consumer, seq } = &job.op {
            results.push(write_checkpoint(&txn, consumer, *seq).map(|()| WriteOutcome::Done));
            continue;
        }
        if let WriteOp::TrimChanges { through, limit } = &job.op {
            let newest = seq.saturating_sub(1);
            let through = (*through).min(newest.saturating_sub(1));
            results.push(trim_changes(&txn, through, *limit).map(WriteOutcome::Deleted));
            continue;
        }
        let planned = match &job.op {
            WriteOp::Transact(actions) => apply::plan(&txn, names, actions),
            WriteOp::Batch(actions) => apply::plan_batch(&txn, names, actions),
            WriteOp::Drain { table, pk, limit } => {
                apply::plan_drain(&txn, names, *table, pk, *limit)
            }
            WriteOp::Purge { now, limit } => apply::plan_purge(&txn, names, *now, *limit),
            WriteOp::Checkpoint { .. } | WriteOp::TrimChanges { .. } => Ok(Vec::new()),
        };
        let changes = match planned {
            Ok(changes) => changes,
            // Nothing of this request was written; the others go on.
            Err(e) => {
                results.push(Err(e));
                continue;
            }
        };
        // A failure while writing leaves this transaction half-written: abandon the
        // whole group rather than commit it.
        if let Err(e) = apply::write(&txn, names, &changes, &mut seq, at_ms) {
            drop(txn);
            return fail_all(group, e.to_string());
        }
        results.push(Ok(outcome(&job.op, changes)));
    }
    if let Err(e) = txn.commit() {
        return fail_all(group, e.to_string());
    }
    *next_seq = seq;
    for (job, result) in group.into_iter().zip(results) {
        let _ = job.reply.send(result);
    }
}

fn write_checkpoint(
    txn: &redb::WriteTransaction,
    consumer: &str,
    seq: u64,
) -> Result<(), StoreError> {
    let mut table = txn.open_table(CHECKPOINTS).map_err(backend)?;
    let current = table
        .get(consumer)
        .map_err(backend)?
        .map(|v| v.value())
        .unwrap_or(0);
    if seq > current {
        table.insert(consumer, seq).map_err(backend)?;
    }
    Ok(())
}

fn trim_changes(
    txn: &redb::WriteTransaction,
    through: u64,
    limit: usize,
) -> Result<usize, StoreError> {
    let mut log = txn.open_table(CHANGELOG).map_err(backend)?;
    let doomed: Vec<u64> = log
        .range(..=through)
        .map_err(backend)?
        .take(limit)
        .map(|entry| entry.map(|(k, _)| k.value()))
        .collect::<Result<_, _>>()
        .map_err(backend)?;
    for seq in &doomed {
        log.remove(seq).map_err(backend)?;
    }
    Ok(doomed.len())
}

fn outcome(op: &WriteOp, changes: Vec<Change>) -> WriteOutcome {
    match op {
        WriteOp::Transact(_) => {
            WriteOutcome::Applied(changes.into_iter().map(|c| (c.old, c.new)).collect())
        }
        WriteOp::Drain { .. } | WriteOp::Purge { .. } | WriteOp::Batch(_) => {
            WriteOutcome::Deleted(changes.len())
        }
        WriteOp::Checkpoint { .. } => WriteOutcome::Done,
        WriteOp::TrimChanges { .. } => WriteOutcome::Deleted(0),
    }
}
