//! Backups of the embedded store, taken while it serves, and their restore.
//!
//! A backup is one redb read transaction (the store as one commit left it: items,
//! indexes, expiry, change log, checkpoints and `meta`) copied table by table into a
//! fresh redb file beside the destination, committed durably, then renamed into place:
//! the writer goes on meanwhile, and the destination is never half written. (Copying
//! the raw `vitals.redb` of an open store is not a backup: a copy torn between commits
//! may not even open.)
//!
//! A restore copies a backup into the data directory and checks that copy (it opens
//! with redb's integrity check, its format version is one this release reads, every
//! table reads through), then installs it with a rename, so `vitals.redb` is at every
//! moment the old store or the new one. It never replaces a store in use, replaces one
//! holding items only when forced, and keeps the store it replaces beside it
//! ([`KEPT_ASIDE`]).

use super::apply::backend;
use super::layout::{self, EachTable, Names};
use super::meta::{self, OpenError};
use super::writer::last_sequence_in;
use super::{FILE_NAME, private};
use crate::store::StoreError;
use events_schema::tables::TABLES;
use redb::{
    Database, ReadableDatabase as _, ReadableTable as _, ReadableTableMetadata as _,
    TableDefinition, TableError, TableHandle as _,
};
use std::path::{Path, PathBuf};

/// The name the store a restore replaces is kept under, in its data directory.
pub const KEPT_ASIDE: &str = "vitals.redb.before-restore";
/// Where a restore checks its copy of a backup before installing it.
const STAGED: &str = "vitals.redb.restoring";
/// The page cache of a backup being written or checked (the copy streams through it).
const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// What a backup holds: the store as the commit of its newest change left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub format_version: u32,
    /// The sequence number of the newest change-log record it holds (0 for none): the
    /// backup is consistent at this point of the change log.
    pub sequence: u64,
    /// Each redb table and its entries, in the order of the store's table list.
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

/// Writes a backup of the store open in `db` (at `store`) to `file`: a snapshot copied
/// into `<file>.partial`, committed durably, renamed over `file`.
pub(super) fn write(
    db: &Database,
    names: &Names,
    store: &Path,
    file: &Path,
) -> Result<Snapshot, BackupError> {
    if same_file(store, file) {
        return Err(write_error(file, &"that is the store itself"));
    }
    let mut partial = file.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let written = copy_into(db, names, store, &partial)
        .and_then(|snapshot| rename_durably(&partial, file).map(|()| snapshot));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// The snapshot of `db` copied into a new database at `partial`, committed.
fn copy_into(
    db: &Database,
    names: &Names,
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
    let read = db
        .begin_read()
        .map_err(|e| BackupError::Store(backend(e)))?;
    let recorded = meta::recorded(&read, store).map_err(|e| BackupError::Store(e.into()))?;
    let write = target.begin_write().map_err(|e| cannot(&e))?;
    let mut copy = Copy {
        from: &read,
        to: &write,
        copied: Vec::new(),
        write_failed: None,
    };
    if let Err(error) = layout::each_table(names, &mut copy) {
        return Err(match copy.write_failed {
            Some(why) => cannot(&why),
            None => BackupError::Store(error),
        });
    }
    let Copy { copied, .. } = copy;
    // Whatever the store holds is copied: a table outside the store's list is an error
    // here, not a backup that silently lacks it.
    let listed = read
        .list_tables()
        .map_err(|e| BackupError::Store(backend(e)))?;
    for table in listed {
        if !copied.iter().any(|(name, _)| name == table.name()) {
            let why = format!("a table this release does not back up: {}", table.name());
            return Err(BackupError::Store(StoreError::Backend(why)));
        }
    }
    write.commit().map_err(|e| cannot(&e))?;
    drop(target);
    Ok(Snapshot {
        format_version: recorded.map_or(1, |r| r.format_version),
        sequence: last_sequence_in(&read).map_err(BackupError::Store)?,
        tables: copied,
    })
}

/// Copies each table of a read transaction into a write transaction.
struct Copy<'a> {
    from: &'a redb::ReadTransaction,
    to: &'a redb::WriteTransaction,
    copied: Vec<(String, u64)>,
    /// Set when the failure was the new file's (the error says which side failed).
    write_failed: Option<String>,
}

impl EachTable for Copy<'_> {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &mut self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<(), StoreError> {
        let source = self.from.open_table(def).map_err(backend)?;
        let mut failed = |e: &dyn std::fmt::Display| {
            self.write_failed = Some(e.to_string());
            StoreError::Backend(e.to_string())
        };
        let mut target = self.to.open_table(def).map_err(|e| failed(&e))?;
        let mut entries = 0;
        for entry in source.iter().map_err(backend)? {
            let (key, value) = entry.map_err(backend)?;
            target
                .insert(key.value(), value.value())
                .map_err(|e| failed(&e))?;
            entries += 1;
        }
        self.copied.push((def.name().to_owned(), entries));
        Ok(())
    }
}

/// Reads each table through, counting its entries (a table a backup lacks, which a
/// newer release of the same format may have added, counts none: the store makes it).
struct ReadThrough<'a> {
    txn: &'a redb::ReadTransaction,
    counted: Vec<(String, u64)>,
}

impl EachTable for ReadThrough<'_> {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &mut self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<(), StoreError> {
        let table = match self.txn.open_table(def) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(other) => return Err(backend(other)),
        };
        let mut entries = 0;
        for entry in table.iter().map_err(backend)? {
            entry.map_err(backend)?;
            entries += 1;
        }
        self.counted.push((def.name().to_owned(), entries));
        Ok(())
    }
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
        // Only an empty directory goes: nothing of a failed restore stays behind.
        let _ = std::fs::remove_dir(data_dir);
    }
    restored
}

fn restore_into(from: &Path, data_dir: &Path, force: bool) -> Result<Restored, BackupError> {
    let store = data_dir.join(FILE_NAME);
    let aside = data_dir.join(KEPT_ASIDE);
    let old = Old::of(&store, force)?;
    if !matches!(old, Old::Nothing) && aside.exists() {
        return Err(BackupError::AsideTaken { path: aside });
    }
    let staged = data_dir.join(STAGED);
    remove_if_there(&staged)?;
    let checked = stage(from, &staged);
    if checked.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    let snapshot = checked?;
    let kept = match old {
        Old::Nothing => {
            // Linked, not renamed: a store made there meanwhile is not replaced.
            std::fs::hard_link(&staged, &store).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => BackupError::InUse {
                    path: store.clone(),
                },
                _ => write_error(&store, &e),
            })?;
            remove_if_there(&staged)?;
            None
        }
        Old::Held(_) | Old::Unreadable => {
            std::fs::hard_link(&store, &aside).map_err(|e| write_error(&aside, &e))?;
            std::fs::rename(&staged, &store).map_err(|e| write_error(&store, &e))?;
            Some(aside)
        }
    };
    sync_dir(data_dir).map_err(|e| write_error(data_dir, &e))?;
    // The old store (held open so nothing opened it meanwhile) is let go only now.
    drop(old);
    Ok(Restored {
        store,
        snapshot,
        kept,
    })
}

/// The store a restore would replace.
enum Old {
    Nothing,
    /// Open (so locked) until the new store is in place.
    Held(#[allow(dead_code)] Database),
    /// A file that is not a store this release opens (replaced only when forced).
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
        let db = match Database::open(store) {
            Ok(db) => db,
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(BackupError::InUse {
                    path: store.to_owned(),
                });
            }
            Err(_) if force => return Ok(Old::Unreadable),
            Err(other) => {
                return Err(occupied(format!(
                    "a file that is not a store this release opens ({other})"
                )));
            }
        };
        let items = items_in(&db).map_err(BackupError::Store)?;
        if items > 0 && !force {
            return Err(occupied(format!("a store of {items} items")));
        }
        Ok(Old::Held(db))
    }
}

/// The items of every context's table of the store in `db`.
fn items_in(db: &Database) -> Result<u64, StoreError> {
    let read = db.begin_read().map_err(backend)?;
    let names = Names::new();
    let mut items = 0;
    for def in &TABLES {
        match read.open_table(names.items(def.context)) {
            Ok(table) => items += table.len().map_err(backend)?,
            Err(TableError::TableDoesNotExist(_)) => {}
            Err(other) => return Err(backend(other)),
        }
    }
    Ok(items)
}

/// Copies the backup `from` to `staged` (its owner's only, durable) and checks the copy:
/// it opens with redb's integrity check, records a format version this release reads,
/// and every table reads through. Errors name `from`.
fn stage(from: &Path, staged: &Path) -> Result<Snapshot, BackupError> {
    private::create_file(staged).map_err(|e| write_error(staged, &e))?;
    {
        let mut source = std::fs::File::open(from).map_err(|e| missing(from, &e))?;
        let mut copy = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(staged)
            .map_err(|e| write_error(staged, &e))?;
        std::io::copy(&mut source, &mut copy).map_err(|e| write_error(staged, &e))?;
        copy.sync_all().map_err(|e| write_error(staged, &e))?;
    }
    let not_a_backup = |e: &dyn std::fmt::Display| BackupError::NotABackup(meta::unusable(from, e));
    let db = redb::Builder::new()
        .set_cache_size(CACHE_BYTES)
        .set_check_integrity_on_open(true)
        .open(staged)
        .map_err(|e| not_a_backup(&e))?;
    let read = db.begin_read().map_err(|e| not_a_backup(&e))?;
    let recorded = meta::recorded(&read, from).map_err(BackupError::NotABackup)?;
    let mut through = ReadThrough {
        txn: &read,
        counted: Vec::new(),
    };
    layout::each_table(&Names::new(), &mut through).map_err(|e| not_a_backup(&e))?;
    let sequence = last_sequence_in(&read).map_err(|e| not_a_backup(&e))?;
    let tables = through.counted;
    drop(read);
    drop(db);
    // The integrity check may have written: durable before it is installed.
    std::fs::File::open(staged)
        .and_then(|f| f.sync_all())
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
    let dir = match to.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    sync_dir(dir).map_err(|e| write_error(dir, &e))
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn remove_if_there(path: &Path) -> Result<(), BackupError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(write_error(path, &e)),
        _ => Ok(()),
    }
}

/// Whether `a` and `b` name the same file (both there); false when either is not.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
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
            let db = Database::open(&file).expect("redb opens the backup");
            let txn = db.begin_write().expect("write");
            txn.open_table(layout::META)
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
