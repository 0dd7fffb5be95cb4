//! What a store is: a store records its format version and when it was created in its
//! `meta` table, written in the commit that makes the store, and checked whenever one
//! is opened (the store's own, and a backup's or an older release's redb file, see
//! `archive.rs`). A store is opened, never conjured: only [`Open::OrCreate`] (`vitals
//! serve`'s first start, an explicit `--create`) makes one (see `engine.rs`); a missing
//! store, an empty one, or one of a format this release does not know is an
//! [`OpenError`] naming the path, and is never replaced.

use super::layout::Partitions;
use std::path::{Path, PathBuf};

/// The format of the stores this release makes and reads. A release that changes the
/// layout (a table's key or value, what an item is) raises it, and opens the stores of
/// older versions (upgrading them); a store of a newer version is refused. (The engine
/// under the tables is not the format: a redb store of version 1 is migrated to fjall
/// as it is, and a backup is still a redb file of the same tables.)
pub const FORMAT_VERSION: u32 = 1;

pub(super) const VERSION_KEY: &str = "format_version";
pub(super) const CREATED_KEY: &str = "created_at";

/// Whether opening may make a new store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// The store must be there: a missing one is [`OpenError::Missing`].
    Existing,
    /// A store is made where none is (the data directory too); one that is there is
    /// opened, and refused as with [`Open::Existing`] when it is empty or of a newer
    /// format.
    OrCreate,
}

/// Why a store could not be opened. Each names the store's path.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No store where one was expected: the directory or the file is not there.
    #[error("no store at {}: {why}", path.display())]
    Missing { path: PathBuf, why: String },
    /// The file or directory is there but holds no store: empty, or a database without
    /// the store's record.
    #[error("{} is empty ({why}): it is not a store, and is left as it is", path.display())]
    Empty { path: PathBuf, why: String },
    /// A store of a format version newer than this release reads.
    #[error(
        "{} is a store of format version {found}; this release of vitals reads format version \
         {FORMAT_VERSION} and older: run the release that wrote it, or a newer one",
        path.display()
    )]
    NewerFormat { path: PathBuf, found: u32 },
    /// A format version that is not a version at all.
    #[error("{} records an unknown format version {found:?} (this release reads format \
             version {FORMAT_VERSION}): it is not a store this release can open", path.display())]
    UnknownFormat { path: PathBuf, found: String },
    /// Another process has the store open (one process at a time).
    #[error("{} is already open in another process", path.display())]
    Locked { path: PathBuf },
    /// The store could not be read or made (permissions, a damaged file, a full disk).
    #[error("cannot open {}: {why}", path.display())]
    Unusable { path: PathBuf, why: String },
}

impl OpenError {
    /// The path of the store the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Missing { path, .. }
            | Self::Empty { path, .. }
            | Self::NewerFormat { path, .. }
            | Self::UnknownFormat { path, .. }
            | Self::Locked { path }
            | Self::Unusable { path, .. } => path,
        }
    }
}

impl From<OpenError> for crate::StoreError {
    fn from(error: OpenError) -> Self {
        crate::StoreError::Backend(error.to_string())
    }
}

/// What a store says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub format_version: u32,
    /// When it was made (RFC 3339, UTC); None for a store made before stores recorded it.
    pub created_at: Option<String>,
}

/// What `vitals info` shows of a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// The store's directory.
    pub path: PathBuf,
    pub format_version: u32,
    /// When it was made (RFC 3339, UTC); None for a store made before stores recorded it.
    pub created_at: Option<String>,
    /// The bytes it takes on disk (its tables and journal).
    pub size_bytes: u64,
}

/// The error of an engine failure on the store at `path`.
pub(super) fn unusable(path: &Path, why: impl std::fmt::Display) -> OpenError {
    OpenError::Unusable {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

/// The record a new store starts with: this format, made now.
pub(super) fn new_record() -> [(&'static str, String); 2] {
    [
        (VERSION_KEY, FORMAT_VERSION.to_string()),
        (
            CREATED_KEY,
            events_schema::time::Timestamp::now().to_string(),
        ),
    ]
}

/// A store's record checked: `version` is the text of its `format_version` (None when
/// the store has none). A store of a newer or unknown format is refused.
pub(super) fn checked(
    path: &Path,
    version: Option<String>,
    created_at: Option<String>,
) -> Result<Recorded, OpenError> {
    let found = version.unwrap_or_default();
    let format_version = match found.parse::<u32>() {
        Ok(version) if version >= 1 => version,
        _ => {
            return Err(OpenError::UnknownFormat {
                path: path.to_owned(),
                found,
            });
        }
    };
    if format_version > FORMAT_VERSION {
        return Err(OpenError::NewerFormat {
            path: path.to_owned(),
            found: format_version,
        });
    }
    Ok(Recorded {
        format_version,
        created_at,
    })
}

/// What the store read in `txn` records, checked. A keyspace without a record is not a
/// store (every store this release makes, or migrates, has one).
pub(super) fn recorded(
    txn: &fjall::ReadTransaction,
    names: &Partitions,
    path: &Path,
) -> Result<Recorded, OpenError> {
    let get = |key: &str| -> Result<Option<String>, OpenError> {
        let value = txn.get(&names.meta, key).map_err(|e| unusable(path, e))?;
        Ok(value.map(|v| String::from_utf8_lossy(&v).into_owned()))
    };
    let Some(version) = get(VERSION_KEY)? else {
        return Err(OpenError::Empty {
            path: path.to_owned(),
            why: "a keyspace without the store's record".to_owned(),
        });
    };
    checked(path, Some(version), get(CREATED_KEY)?)
}

#[cfg(test)]
mod tests {
    use crate::embedded::{EmbeddedStore, MIGRATED, Open, OpenError};
    use crate::store::{Key, Store as _, TransactAction};
    use events_schema::Context;
    use std::path::{Path, PathBuf};

    fn error_of(result: Result<EmbeddedStore, impl std::fmt::Display>) -> String {
        match result {
            Ok(store) => panic!("opened {store:?}"),
            Err(error) => error.to_string(),
        }
    }

    /// Sets (or with `None` removes) `key` of the closed store at `path`'s record.
    fn set_record(path: &Path, key: &str, value: Option<&str>) {
        let (keyspace, names) = super::super::engine::open(path).expect("the keyspace opens");
        let mut txn = keyspace.write_tx();
        match value {
            Some(value) => txn.insert(&names.meta, key, value),
            None => txn.remove(&names.meta, key),
        }
        txn.commit().expect("commit");
        keyspace
            .persist(fjall::PersistMode::SyncAll)
            .expect("persisted");
    }

    /// A store in `dir` whose record says `version`; its path.
    fn a_store_recording_format(dir: &Path, version: &str) -> PathBuf {
        let path = EmbeddedStore::open(dir).expect("a store").path().to_owned();
        set_record(&path, "format_version", Some(version));
        path
    }

    #[test]
    fn an_empty_store_directory_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = dir.path().join("vitals.fjall");
        std::fs::create_dir(&store).expect("an empty directory");
        let error = error_of(EmbeddedStore::open(dir.path()));
        assert!(error.contains(&store.display().to_string()), "{error}");
        assert!(error.contains("empty"), "{error}");
        assert_eq!(std::fs::read_dir(&store).expect("still there").count(), 0);
    }

    #[test]
    fn a_store_of_a_newer_format_is_refused_naming_both_versions() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = a_store_recording_format(dir.path(), "7");
        let error = error_of(EmbeddedStore::open(dir.path()));
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains("format version 7"), "{error}");
        assert!(error.contains("version 1"), "{error}");
    }

    #[test]
    fn an_unknown_format_version_is_refused() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = a_store_recording_format(dir.path(), "vNext");
        let error = error_of(EmbeddedStore::open(dir.path()));
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains("vNext"), "{error}");
    }

    #[test]
    fn a_keyspace_without_the_record_is_not_a_store() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = EmbeddedStore::open(dir.path())
            .expect("a store")
            .path()
            .to_owned();
        set_record(&path, "format_version", None);
        let error = error_of(EmbeddedStore::open(dir.path()));
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains("empty"), "{error}");
    }

    #[test]
    fn an_existing_store_is_opened_never_made() {
        let parent = tempfile::tempdir().expect("temporary directory");
        let typo = parent.path().join("vitals-dta");
        match EmbeddedStore::open_in(&typo, Open::Existing) {
            Err(OpenError::Missing { path, why }) => {
                assert_eq!(path, typo.join("vitals.fjall"));
                assert!(why.contains("does not exist"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!typo.exists(), "the directory was made");
        std::fs::create_dir(&typo).expect("a directory");
        let error = error_of(EmbeddedStore::open_in(&typo, Open::Existing));
        assert!(error.contains("holds no vitals.fjall"), "{error}");
        assert_eq!(std::fs::read_dir(&typo).expect("read").count(), 0);
        // Made once, opened after.
        let made = EmbeddedStore::open_in(&typo, Open::OrCreate).expect("made");
        let info = made.info().expect("info");
        assert_eq!(info.format_version, super::FORMAT_VERSION);
        let created = info.created_at.clone().expect("a creation time");
        events_schema::time::Timestamp::parse(&created).expect("RFC 3339");
        assert!(info.size_bytes > 0);
        assert_eq!(info.path, typo.join("vitals.fjall"));
        drop(made);
        let opened = EmbeddedStore::open_in(&typo, Open::Existing).expect("opened");
        assert_eq!(opened.info().expect("info").created_at, Some(created));
        assert!(
            !typo.join("vitals.fjall.new").exists(),
            "made aside, renamed"
        );
    }

    #[test]
    fn a_store_open_elsewhere_is_locked() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let held = EmbeddedStore::open(dir.path()).expect("a store");
        match EmbeddedStore::open_in(dir.path(), Open::Existing) {
            Err(OpenError::Locked { path }) => assert_eq!(path, held.path()),
            other => panic!("{other:?}"),
        }
        drop(held);
        EmbeddedStore::open_in(dir.path(), Open::Existing).expect("free once closed");
    }

    /// An older release's store: a redb file of the same tables, the one of version 1
    /// made before stores recorded their format (no `meta`) included.
    fn a_legacy_store(path: &Path, with_record: bool) {
        use redb::TableDefinition;
        let db = redb::Database::create(path).expect("a redb file");
        let txn = db.begin_write().expect("write");
        {
            let items: TableDefinition<(&str, &str), &[u8]> =
                TableDefinition::new("items/nutrition");
            let mut items = txn.open_table(items).expect("items");
            for n in 0..3 {
                let sk = format!("MEAL#{n}");
                let item = serde_json::json!({"pk": "USER#u", "sk": sk, "kcal": n});
                let bytes = serde_json::to_vec(&item).expect("json");
                items
                    .insert(("USER#u", sk.as_str()), bytes.as_slice())
                    .expect("insert");
            }
            let log: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");
            txn.open_table(log)
                .expect("log")
                .insert(41, b"{}".as_slice())
                .expect("insert");
            if with_record {
                let meta: TableDefinition<&str, &str> = TableDefinition::new("meta");
                let mut meta = txn.open_table(meta).expect("meta");
                meta.insert("format_version", "1").expect("insert");
                meta.insert("created_at", "2026-01-02T03:04:05Z")
                    .expect("insert");
            }
        }
        txn.commit().expect("commit");
    }

    #[tokio::test]
    async fn an_older_releases_redb_store_is_migrated_when_opened_and_kept() {
        for with_record in [true, false] {
            let dir = tempfile::tempdir().expect("temporary directory");
            let legacy = dir.path().join("vitals.redb");
            a_legacy_store(&legacy, with_record);
            let store = EmbeddedStore::open_in(dir.path(), Open::Existing).expect("migrated");
            assert!(!legacy.exists(), "renamed once migrated");
            assert!(dir.path().join(MIGRATED).is_file(), "kept as {MIGRATED}");
            let info = store.info().expect("info");
            assert_eq!(info.format_version, 1);
            let created = with_record.then(|| "2026-01-02T03:04:05Z".to_owned());
            assert_eq!(info.created_at, created);
            let key = Key::new("USER#u", "MEAL#2");
            let item = store
                .get(Context::Nutrition, &key, true)
                .await
                .expect("read");
            assert_eq!(item.and_then(|i| i.get("kcal").cloned()), Some(2.into()));
            // The change log's numbering goes on after the migrated record's.
            let event = serde_json::json!({"pk": "USER#u", "sk": "EVT#1"});
            let put = TransactAction::Put {
                table: Context::Nutrition,
                item: serde_json::from_value(event).expect("an item"),
                condition: None,
            };
            store.transact(vec![put]).await.expect("a write");
            assert_eq!(store.last_sequence().await.expect("log"), 42);
        }
    }

    #[test]
    fn an_empty_or_newer_redb_store_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let legacy = dir.path().join("vitals.redb");
        std::fs::write(&legacy, b"").expect("an empty file");
        let error = error_of(EmbeddedStore::open(dir.path()));
        assert!(error.contains(&legacy.display().to_string()), "{error}");
        assert!(error.contains("empty"), "{error}");
        assert_eq!(std::fs::metadata(&legacy).expect("still there").len(), 0);
        assert!(!dir.path().join("vitals.fjall").exists(), "nothing made");

        std::fs::remove_file(&legacy).expect("removed");
        a_legacy_store(&legacy, true);
        {
            let db = redb::Database::open(&legacy).expect("open");
            let txn = db.begin_write().expect("write");
            let meta: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("meta");
            txn.open_table(meta)
                .expect("meta")
                .insert("format_version", "9")
                .expect("insert");
            txn.commit().expect("commit");
        }
        let error = error_of(EmbeddedStore::open(dir.path()));
        assert!(error.contains("format version 9"), "{error}");
        assert!(legacy.is_file() && !dir.path().join("vitals.fjall").exists());
    }
}
