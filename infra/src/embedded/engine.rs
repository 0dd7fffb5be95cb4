//! The store's engine on disk: a fjall keyspace (an LSM tree with a write-ahead
//! journal) in the data directory's `vitals.fjall`, held by one process at a time (an
//! exclusive lock on `vitals.lock`, released by the kernel when the process dies), and
//! made whole: built in a directory beside it, made durable, then renamed into place,
//! so a `vitals.fjall` is never half made.

use super::apply::backend;
use super::layout::Partitions;
use super::meta::{self, OpenError};
use super::private;
use crate::store::StoreError;
use fjall::{PersistMode, TxKeyspace};
use std::path::{Path, PathBuf};

/// The store's directory inside the data directory.
pub(super) const STORE_DIR: &str = "vitals.fjall";
/// The file whose lock says a process has the store open.
const LOCK_FILE: &str = "vitals.lock";
/// fjall's own marker of a keyspace directory.
const KEYSPACE_MARKER: &str = "version";

/// The data directory's lock, held while the store is open (or replaced by a restore).
#[derive(Debug)]
pub(super) struct Lock {
    _file: std::fs::File,
}

/// Takes the lock of `data_dir`, whose store is at `store` (the path errors name).
pub(super) fn lock(data_dir: &Path, store: &Path) -> Result<Lock, OpenError> {
    let path = data_dir.join(LOCK_FILE);
    let file = private::create_file(&path).map_err(|e| meta::unusable(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(Lock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(OpenError::Locked {
            path: store.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(meta::unusable(&path, e)),
    }
}

/// The engine's settings. Two background workers (one flush, one compaction): the
/// machines it runs on are small, and the writer thread is the store's serial resource.
fn config(dir: &Path) -> fjall::Config {
    fjall::Config::new(dir)
        .flush_workers(1)
        .compaction_workers(1)
}

/// Opens the keyspace at `dir`, which must be one (an empty or foreign directory is
/// refused, never made into a keyspace).
pub(super) fn open(dir: &Path) -> Result<(TxKeyspace, Partitions), OpenError> {
    if !dir.join(KEYSPACE_MARKER).is_file() {
        return Err(OpenError::Empty {
            path: dir.to_owned(),
            why: "a directory without a keyspace in it".to_owned(),
        });
    }
    let keyspace = config(dir)
        .open_transactional()
        .map_err(|e| meta::unusable(dir, e))?;
    let names = Partitions::open(&keyspace).map_err(|e| meta::unusable(dir, e))?;
    Ok((keyspace, names))
}

/// Builds a keyspace at `dir` (removing what a crash left there) with what `fill`
/// writes, and makes it durable. The directory is its owner's only.
pub(super) fn build(
    dir: &Path,
    fill: impl FnOnce(&TxKeyspace, &Partitions) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    remove_dir_if_there(dir)?;
    private::create_dir(dir)?;
    let keyspace = config(dir).open_transactional().map_err(backend)?;
    let names = Partitions::open(&keyspace)?;
    fill(&keyspace, &names)?;
    keyspace.persist(PersistMode::SyncAll).map_err(backend)?;
    Ok(())
}

/// Makes a store at `dir` (which is not there) holding what `fill` writes: built
/// beside it, then renamed into place and the rename made durable.
pub(super) fn create(
    dir: &Path,
    fill: impl FnOnce(&TxKeyspace, &Partitions) -> Result<(), StoreError>,
) -> Result<(), OpenError> {
    let aside = beside(dir, "new");
    build(&aside, fill).map_err(|e| meta::unusable(&aside, e))?;
    std::fs::rename(&aside, dir).map_err(|e| meta::unusable(dir, e))?;
    sync_parent(dir).map_err(|e| meta::unusable(dir, e))
}

/// Writes a new store's record: this format, made now.
pub(super) fn write_new_record(
    keyspace: &TxKeyspace,
    names: &Partitions,
) -> Result<(), StoreError> {
    let mut txn = keyspace.write_tx();
    for (key, value) in meta::new_record() {
        txn.insert(&names.meta, key, value);
    }
    txn.commit().map_err(backend)
}

/// `<dir>.<suffix>`, beside `dir`.
pub(super) fn beside(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

pub(super) fn remove_dir_if_there(dir: &Path) -> Result<(), StoreError> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::Backend(format!(
            "cannot remove {}: {e}",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// Makes a rename in `path`'s directory durable.
pub(super) fn sync_parent(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)?.sync_all()
}

/// Swaps the directories `a` and `b` in one step (`renameat2` with `RENAME_EXCHANGE`),
/// so that each path names one whole store at every moment.
pub(super) fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(std::io::Error::from)
}
