//! Backups of the embedded store, taken while it serves, and their restore.
//!
//! A backup is one snapshot of the store (items, indexes, expiry, change log,
//! checkpoints and `meta`, as one commit left them) written table by table into a
//! fresh redb file beside the destination (see `archive.rs`), committed durably, then
//! renamed into place: the writer goes on meanwhile, and the destination is never half
//! written. (Copying `vitals.fjall` of an open store is not a backup: a copy torn
//! between its journal and its tables may not recover.)
//!
//! A restore copies a backup into the data directory and checks that copy (it opens
//! with redb's integrity check, its format version is one this release reads, every
//! table reads through), builds a store from it beside the one it replaces, then swaps
//! the two directories in one step, so `vitals.fjall` is at every moment the old store
//! or the new one. It never replaces a store in use, replaces one holding items only
//! when forced, and keeps the store it replaces beside it ([`KEPT_ASIDE`]).

use super::apply::backend;
use super::archive;
use super::engine::{self, STORE_DIR};
use super::layout::Partitions;
use super::meta::{self, OpenError};
use super::private;
use super::writer::last_sequence_in;
use crate::store::StoreError;
use fjall::TxKeyspace;
use redb::ReadableDatabase as _;
use std::path::{Path, PathBuf};

/// The name the store a restore replaces is kept under, in its data directory.
pub const KEPT_ASIDE: &str = "vitals.fjall.before-restore";
/// Where a restore copies a backup to check it.
const STAGED_FILE: &str = "vitals.restoring.redb";
/// Where a restore builds the store it installs.
const STAGED_STORE: &str = "vitals.fjall.restoring";
/// The page cache of a backup being written or checked (the copy streams through it).
const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// What a backup holds: the store as the commit of its newest change left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub format_version: u32,
    /// The sequence number of the newest change-log record it holds (0 for none): the
    /// backup is consistent at this point of the change log.
    pub sequence: u64,
    /// Each table and its entries, in the order of the store's table list.
    pub tables: Vec<(String, u64)>,
}

impl Snapshot {
    /// The items of every context's table (indexes, the log and checkpoints aside).
    pub fn items(&self) -> u64 {
        self.tables
            .iter()
            .filter(|(name, _)| name.starts_with("items/"))
            .map(|(_, entries)| entries)
            .sum()
    }
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// The store installed.
    pub store: PathBuf,
    pub snapshot: Snapshot,
    /// Where the store it replaced is kept, if there was one.
    pub kept: Option<PathBuf>,
}

/// Why a backup could not be written, or restored. Each names its path.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// No backup file where one was named.
    #[error("no backup at {}: {why}", path.display())]
    Missing { path: PathBuf, why: String },
    /// The file is not a backup this release restores: not a store, damaged, or of a
    /// format it does not read (the error names the file and the versions).
    #[error("not restored: {0}")]
    NotABackup(OpenError),
    /// The store to replace is open in another process.
    #[error("{} is open in another process: a store in use is never replaced", path.display())]
    InUse { path: PathBuf },
    /// The store to replace holds data (or cannot be read), and the restore is not forced.
    #[error("{} holds {what}: it is replaced only when the restore is forced (and then \
             kept beside it as {KEPT_ASIDE})", path.display())]
    Occupied { path: PathBuf, what: String },
    /// An earlier restore's kept store is in the way.
    #[error("{} is there already (the store an earlier restore replaced): move it away \
             first", path.display())]
    AsideTaken { path: PathBuf },
    /// Reading the store failed.
    #[error("reading the store: {0}")]
    Store(StoreError),
    /// Writing a file failed (the backup, the restore's copy, a rename).
    #[error("cannot write {}: {why}", path.display())]
    Write { path: PathBuf, why: String },
}

/// Writes a backup of the store open in `keyspace` (at `store`) to `file`: a snapshot
/// copied into `<file>.partial`, committed durably, renamed over `file`.
pub(super) fn write(
    keyspace: &TxKeyspace,
    names: &Partitions,
    store: &Path,
    file: &Path,
) -> Result<Snapshot, BackupError> {
    if inside(store, file) {
        return Err(write_error(file, &"that is the store itself, or inside it"));
    }
    let mut partial = file.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let written = copy_into(keyspace, names, store, &partial)
        .and_then(|snapshot| rename_durably(&partial, file).map(|()| snapshot));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// A snapshot of the store written into a new redb file at `partial`, committed.
fn copy_into(
    keyspace: &TxKeyspace,
    names: &Partitions,
    store: &Path,
    partial: &Path,
) -> Result<Snapshot, BackupError> {
    let cannot = |e: &dyn std::fmt::Display| write_error(partial, e);
    remove_if_there(partial)?;
    private::create_file(partial).map_err(|e| cannot(&e))?;
    let target = redb::Builder::new()
        .set_cache_size(CACHE_BYTES)
        .create(partial)
        .map_err(|e| cannot(&e))?;
    let read = keyspace.read_tx();
    let recorded = meta::recorded(&read, names, store).map_err(|e| BackupError::Store(e.into()))?;
    // Whatever the store holds is copied: a partition outside the store's list is an
    // error here, not a backup that silently lacks it.
    for partition in keyspace.list_partitions() {
        if !names
            .all
            .iter()
            .any(|(def, _)| def.partition_name() == *partition)
        {
            let why = format!("a table this release does not back up: {partition}");
            return Err(BackupError::Store(StoreError::Backend(why)));
        }
    }
    let write = target.begin_write().map_err(|e| cannot(&e))?;
    let tables = archive::export(&read, names, &write).map_err(BackupError::Store)?;
    write.commit().map_err(|e| cannot(&e))?;
    drop(target);
    Ok(Snapshot {
        format_version: recorded.format_version,
        sequence: last_sequence_in(&read, names).map_err(BackupError::Store)?,
        tables,
    })
}

/// Checks the backup `from` and installs it as the store of `data_dir` (made if
/// missing). A store there in use is refused; one holding items, or that cannot be read,
/// is replaced only when `force`d; a store replaced is kept beside it as [`KEPT_ASIDE`].
pub fn restore(from: &Path, data_dir: &Path, force: bool) -> Result<Restored, BackupError> {
    match std::fs::metadata(from) {
        Ok(found) if found.is_file() => {}
        Ok(_) => return Err(missing(from, &"not a file")),
        Err(e) => return Err(missing(from, &e)),
    }
    let made_dir = !data_dir.exists();
    private::create_dir(data_dir).map_err(|e| write_error(data_dir, &e))?;
    let restored = restore_into(from, data_dir, force);
    if restored.is_err() && made_dir {
        // Nothing of a failed restore stays behind.
        let _ = std::fs::remove_dir_all(data_dir);
    }
    restored
}

fn restore_into(from: &Path, data_dir: &Path, force: bool) -> Result<Restored, BackupError> {
    let store = data_dir.join(STORE_DIR);
    let aside = data_dir.join(KEPT_ASIDE);
    // Held until the new store is in place: nothing opens the store meanwhile.
    let _lock = engine::lock(data_dir, &store).map_err(|e| match e {
        OpenError::Locked { path } => BackupError::InUse { path },
        other => write_error(data_dir, &other),
    })?;
    let legacy = data_dir.join(archive::LEGACY_FILE);
    if legacy.exists() {
        return Err(BackupError::Occupied {
            path: legacy,
            what: "the store of an older release, not yet migrated (open it with this \
                   release, which migrates it, then restore)"
                .to_owned(),
        });
    }
    let old = Old::of(&store, force)?;
    if old != Old::Nothing && aside.exists() {
        return Err(BackupError::AsideTaken { path: aside });
    }
    let staged = data_dir.join(STAGED_STORE);
    let snapshot = stage(from, &data_dir.join(STAGED_FILE), &staged)?;
    let kept = match old {
        Old::Nothing => {
            std::fs::rename(&staged, &store).map_err(|e| write_error(&store, &e))?;
            None
        }
        Old::Held | Old::Unreadable => {
            // One step: `store` is the old store, then the new one, never neither.
            engine::exchange(&staged, &store).map_err(|e| write_error(&store, &e))?;
            std::fs::rename(&staged, &aside).map_err(|e| write_error(&aside, &e))?;
            Some(aside)
        }
    };
    engine::sync_parent(&store).map_err(|e| write_error(data_dir, &e))?;
    Ok(Restored {
        store,
        snapshot,
        kept,
    })
}

/// The store a restore would replace.
#[derive(Debug, PartialEq, Eq)]
enum Old {
    Nothing,
    /// A store (with no items, or replaced by force).
    Held,
    /// A directory that is not a store this release opens (replaced only when forced).
    Unreadable,
}

impl Old {
    fn of(store: &Path, force: bool) -> Result<Self, BackupError> {
        if std::fs::symlink_metadata(store).is_err() {
            return Ok(Old::Nothing);
        }
        let occupied = |what: String| BackupError::Occupied {
            path: store.to_owned(),
            what,
        };
        let (keyspace, names) = match engine::open(store) {
            Ok(opened) => opened,
            Err(_) if force => return Ok(Old::Unreadable),
            Err(other) => {
                return Err(occupied(format!(
                    "a directory that is not a store this release opens ({other})"
                )));
            }
        };
        let items = items_in(&keyspace, &names).map_err(BackupError::Store)?;
        if items > 0 && !force {
            return Err(occupied(format!("a store of {items} items")));
        }
        Ok(Old::Held)
    }
}

/// The items of every context's table of the store.
fn items_in(keyspace: &TxKeyspace, names: &Partitions) -> Result<u64, StoreError> {
    let read = keyspace.read_tx();
    let mut items = 0;
    for (def, partition) in &names.all {
        if def.name.starts_with("items/") {
            items += read.len(partition).map_err(backend)? as u64;
        }
    }
    Ok(items)
}

/// Copies the backup `from` to `file` (its owner's only, durable), checks the copy (it
/// opens with redb's integrity check, records a format version this release reads,
/// holds no table this release does not know) and builds a store from it at `staged`.
/// Errors name `from`; nothing staged is left when it fails.
fn stage(from: &Path, file: &Path, staged: &Path) -> Result<Snapshot, BackupError> {
    let built = stage_file(from, file).and_then(|()| build_from(from, file, staged));
    let _ = std::fs::remove_file(file);
    if built.is_err() {
        let _ = engine::remove_dir_if_there(staged);
    }
    built
}

fn stage_file(from: &Path, file: &Path) -> Result<(), BackupError> {
    remove_if_there(file)?;
    // Made afresh just above, so there is nothing to truncate.
    let mut copy = private::create_file(file).map_err(|e| write_error(file, &e))?;
    let mut source = std::fs::File::open(from).map_err(|e| missing(from, &e))?;
    std::io::copy(&mut source, &mut copy).map_err(|e| write_error(file, &e))?;
    Ok(())
}

fn build_from(from: &Path, file: &Path, staged: &Path) -> Result<Snapshot, BackupError> {
    let not_a_backup = |e: &dyn std::fmt::Display| BackupError::NotABackup(meta::unusable(from, e));
    let db = redb::Builder::new()
        .set_cache_size(CACHE_BYTES)
        .set_check_integrity_on_open(true)
        .open(file)
        .map_err(|e| not_a_backup(&e))?;
    let read = db.begin_read().map_err(|e| not_a_backup(&e))?;
    let recorded = archive::recorded(&read, from).map_err(BackupError::NotABackup)?;
    let unknown = archive::unknown_tables(&read).map_err(|e| not_a_backup(&e))?;
    if let Some(name) = unknown.first() {
        return Err(not_a_backup(&format!(
            "a table this release does not know: {name}"
        )));
    }
    let sequence = archive::last_sequence(&read).map_err(|e| not_a_backup(&e))?;
    let mut tables = Vec::new();
    engine::build(staged, |keyspace, names| {
        tables = archive::import(&read, keyspace, names)?;
        Ok(())
    })
    .map_err(|e| write_error(staged, &e))?;
    Ok(Snapshot {
        format_version: recorded.map_or(1, |r| r.format_version),
        sequence,
        tables,
    })
}

/// Renames `from` over `to` and makes the rename durable.
fn rename_durably(from: &Path, to: &Path) -> Result<(), BackupError> {
    std::fs::File::open(from)
        .and_then(|f| f.sync_all())
        .map_err(|e| write_error(from, &e))?;
    std::fs::rename(from, to).map_err(|e| write_error(to, &e))?;
    engine::sync_parent(to).map_err(|e| write_error(to, &e))
}

fn remove_if_there(path: &Path) -> Result<(), BackupError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(write_error(path, &e)),
        _ => Ok(()),
    }
}

/// Whether `file` is the directory `store` or inside it (false when `store` is not
/// there).
fn inside(store: &Path, file: &Path) -> bool {
    let Ok(store) = store.canonicalize() else {
        return false;
    };
    let named = file.canonicalize().ok();
    let parent = file
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .and_then(|p| p.canonicalize().ok());
    named.is_some_and(|f| f.starts_with(&store)) || parent.is_some_and(|p| p.starts_with(&store))
}

fn write_error(path: &Path, why: &dyn std::fmt::Display) -> BackupError {
    BackupError::Write {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

fn missing(path: &Path, why: &dyn std::fmt::Display) -> BackupError {
    BackupError::Missing {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store as _;
    use crate::embedded::{EmbeddedStore, Open};
    use crate::store::{Item, TransactAction};
    use events_schema::Context;

    fn item(pk: &str, sk: &str) -> Item {
        serde_json::from_value(serde_json::json!({"pk": pk, "sk": sk, "n": 1})).expect("an item")
    }

    async fn store_with(dir: &Path, items: usize) -> EmbeddedStore {
        let store = EmbeddedStore::open(dir).expect("a store");
        for n in 0..items {
            let put = TransactAction::Put {
                table: Context::Nutrition,
                item: item("USER#u", &format!("EVT#{n:03}")),
                condition: None,
            };
            store.transact(vec![put]).await.expect("a write");
        }
        store
    }

    #[tokio::test]
    async fn a_backup_holds_every_table_and_restores_as_the_same_store() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = store_with(&dir.path().join("data"), 3).await;
        let file = dir.path().join("vitals.vbk");
        let snapshot = store.backup_to(&file).await.expect("a backup");
        assert_eq!(snapshot.format_version, super::super::FORMAT_VERSION);
        assert_eq!(snapshot.sequence, 3, "three changes logged");
        assert_eq!(snapshot.items(), 3);
        for table in [
            "items/nutrition",
            "changelog",
            "checkpoints",
            "meta",
            "expiry",
        ] {
            assert!(
                snapshot.tables.iter().any(|(name, _)| name == table),
                "{table} copied: {snapshot:?}"
            );
        }
        assert!(!dir.path().join("vitals.vbk.partial").exists());
        // Writing over the store itself is refused.
        let refused = store.backup_to(store.path()).await;
        assert!(
            matches!(refused, Err(BackupError::Write { .. })),
            "{refused:?}"
        );

        let restored = restore(&file, &dir.path().join("restored"), false).expect("restored");
        assert_eq!(restored.snapshot.tables, snapshot.tables);
        assert_eq!(restored.kept, None);
        let opened = EmbeddedStore::open_in(&dir.path().join("restored"), Open::Existing)
            .expect("the restored store opens");
        let changes = opened.changes_after(0, 10).await.expect("its log");
        assert_eq!(changes.len(), 3);
        let original = store.changes_after(0, 10).await.expect("the source's log");
        assert_eq!(changes, original);
    }

    #[tokio::test]
    async fn a_restore_refuses_a_newer_format_a_store_in_use_and_data_unless_forced() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = store_with(&dir.path().join("data"), 1).await;
        let file = dir.path().join("vitals.vbk");
        store.backup_to(&file).await.expect("a backup");

        // A store in use, forced or not.
        let in_use = restore(&file, &dir.path().join("data"), true);
        assert!(
            matches!(in_use, Err(BackupError::InUse { .. })),
            "{in_use:?}"
        );
        drop(store);
        // A store holding items: only when forced, and then kept aside.
        let held = restore(&file, &dir.path().join("data"), false);
        assert!(
            matches!(held, Err(BackupError::Occupied { .. })),
            "{held:?}"
        );
        let forced = restore(&file, &dir.path().join("data"), true).expect("forced");
        let kept = forced.kept.expect("the old store kept");
        assert_eq!(kept, dir.path().join("data").join(KEPT_ASIDE));
        let again = restore(&file, &dir.path().join("data"), true);
        assert!(
            matches!(again, Err(BackupError::AsideTaken { .. })),
            "{again:?}"
        );

        // A backup of a newer format, named with both versions.
        {
            let db = redb::Database::open(&file).expect("redb opens the backup");
            let txn = db.begin_write().expect("write");
            let meta: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("meta");
            txn.open_table(meta)
                .expect("meta")
                .insert("format_version", "9")
                .expect("insert");
            txn.commit().expect("commit");
        }
        let newer = restore(&file, &dir.path().join("elsewhere"), false);
        let message = match newer {
            Err(error @ BackupError::NotABackup(OpenError::NewerFormat { .. })) => {
                error.to_string()
            }
            other => panic!("{other:?}"),
        };
        assert!(message.contains("format version 9"), "{message}");
        assert!(message.contains("format version 1"), "{message}");
        assert!(message.contains(&file.display().to_string()), "{message}");
        assert!(!dir.path().join("elsewhere").exists(), "nothing left of it");
    }
}
