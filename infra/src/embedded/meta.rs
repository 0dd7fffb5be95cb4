//! What a store is, and how one is opened: a store records its format version and when
//! it was created in its `meta` table, written in the commit that makes the store, and
//! checked whenever one is opened. A store is opened, never conjured: only
//! [`Open::OrCreate`] (`vitals serve`'s first start, an explicit `--create`) makes one,
//! and then whole (made aside and renamed into place, so a `vitals.redb` is never half
//! made); a missing store, an empty file, or one of a format this release does not know
//! is an [`OpenError`] naming the path, and is never replaced.

use super::layout::META;
use redb::{Database, ReadableDatabase as _, TableError, TableHandle as _};
use std::path::{Path, PathBuf};

/// The format of the stores this release makes and reads. A release that changes the
/// layout (a table's key or value, what an item is) raises it, and opens the stores of
/// older versions (upgrading them); a store of a newer version is refused.
pub const FORMAT_VERSION: u32 = 1;

const VERSION_KEY: &str = "format_version";
const CREATED_KEY: &str = "created_at";

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
    /// The file is there but holds no store: empty, or a database without its tables.
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
    /// The file could not be read or made (permissions, a damaged file, a full disk).
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
    /// The store's file.
    pub path: PathBuf,
    pub format_version: u32,
    /// When it was made (RFC 3339, UTC); None for a store made before stores recorded it.
    pub created_at: Option<String>,
    /// The file's size in bytes.
    pub size_bytes: u64,
}

/// The error of a redb failure on the file at `path`.
pub(super) fn unusable(path: &Path, why: impl std::fmt::Display) -> OpenError {
    OpenError::Unusable {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

/// Opens the redb database at `path` (which exists and is not empty).
pub(super) fn open_database(path: &Path) -> Result<Database, OpenError> {
    Database::open(path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => OpenError::Locked {
            path: path.to_owned(),
        },
        other => unusable(path, other),
    })
}

/// Makes a new store at `path`: in a file beside it, every table and the `meta` record
/// in one durable commit, then renamed into place, so that a crash leaves either no
/// `path` or a whole store. `make_tables` creates the store's tables in the commit.
pub(super) fn create(
    path: &Path,
    make_tables: impl FnOnce(&redb::WriteTransaction) -> Result<(), crate::StoreError>,
) -> Result<(), OpenError> {
    let aside = path.with_extension("redb.new");
    // What a crash during an earlier making left.
    match std::fs::remove_file(&aside) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(unusable(&aside, e)),
        _ => {}
    }
    super::private::create_file(&aside).map_err(|e| unusable(&aside, e))?;
    let db = Database::create(&aside).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => OpenError::Locked {
            path: path.to_owned(),
        },
        other => unusable(&aside, other),
    })?;
    let txn = db.begin_write().map_err(|e| unusable(&aside, e))?;
    make_tables(&txn).map_err(|e| unusable(&aside, e))?;
    {
        let mut meta = txn.open_table(META).map_err(|e| unusable(&aside, e))?;
        let version = FORMAT_VERSION.to_string();
        let created = events_schema::time::Timestamp::now().to_string();
        for (key, value) in [(VERSION_KEY, version.as_str()), (CREATED_KEY, &created)] {
            meta.insert(key, value).map_err(|e| unusable(&aside, e))?;
        }
    }
    txn.commit().map_err(|e| unusable(&aside, e))?;
    drop(db);
    std::fs::rename(&aside, path).map_err(|e| unusable(path, e))?;
    // The rename itself made durable.
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| unusable(path, e))?;
    }
    tracing::info!(store = %path.display(), format_version = FORMAT_VERSION, "created a new store");
    Ok(())
}

/// What the store in `db` records, checked: a store of a newer or unknown format is
/// refused, a database without the store's tables is empty. A store made before stores
/// recorded their format (its tables are there, its `meta` is not) is of version 1,
/// which is then recorded.
pub(super) fn check(db: &Database, path: &Path) -> Result<Recorded, OpenError> {
    let read = db.begin_read().map_err(|e| unusable(path, e))?;
    if let Some(recorded) = recorded(&read, path)? {
        return Ok(recorded);
    }
    drop(read);
    let write = db.begin_write().map_err(|e| unusable(path, e))?;
    write
        .open_table(META)
        .map_err(|e| unusable(path, e))?
        .insert(VERSION_KEY, FORMAT_VERSION.to_string().as_str())
        .map_err(|e| unusable(path, e))?;
    write.commit().map_err(|e| unusable(path, e))?;
    tracing::info!(
        store = %path.display(),
        format_version = FORMAT_VERSION,
        "recorded the format version of a store made before stores recorded it"
    );
    Ok(Recorded {
        format_version: FORMAT_VERSION,
        created_at: None,
    })
}

/// What the store read in `read` records, checked without writing: a store of a newer or
/// unknown format is refused, a database without the store's tables is empty; `None`
/// for a store made before stores recorded their format (of version 1).
pub(super) fn recorded(
    read: &redb::ReadTransaction,
    path: &Path,
) -> Result<Option<Recorded>, OpenError> {
    let meta = match read.open_table(META) {
        Ok(meta) => meta,
        Err(TableError::TableDoesNotExist(_)) => {
            let ours = read
                .list_tables()
                .map_err(|e| unusable(path, e))?
                .any(|table| table.name().starts_with("items/"));
            if !ours {
                return Err(OpenError::Empty {
                    path: path.to_owned(),
                    why: "a database without the store's tables".to_owned(),
                });
            }
            return Ok(None);
        }
        Err(other) => return Err(unusable(path, other)),
    };
    let get = |key: &str| -> Result<Option<String>, OpenError> {
        Ok(meta
            .get(key)
            .map_err(|e| unusable(path, e))?
            .map(|v| v.value().to_owned()))
    };
    let found = get(VERSION_KEY)?.unwrap_or_default();
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
    Ok(Some(Recorded {
        format_version,
        created_at: get(CREATED_KEY)?,
    }))
}

#[cfg(test)]
mod tests {
    use crate::embedded::EmbeddedStore;
    use redb::{Database, TableDefinition};

    const META: TableDefinition<&str, &str> = TableDefinition::new("meta");

    fn error_of(result: Result<EmbeddedStore, impl std::fmt::Display>) -> String {
        match result {
            Ok(store) => panic!("opened {store:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn an_empty_store_file_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = dir.path().join("vitals.redb");
        std::fs::write(&file, b"").expect("an empty file");
        let error = error_of(EmbeddedStore::open(dir.path()));
        assert!(error.contains(&file.display().to_string()), "{error}");
        assert!(error.contains("empty"), "{error}");
        assert_eq!(std::fs::metadata(&file).expect("still there").len(), 0);
    }

    /// A store in `dir` whose meta table records `version` as its format; its path.
    fn a_store_recording_format(dir: &std::path::Path, version: &str) -> std::path::PathBuf {
        let path = EmbeddedStore::open(dir).expect("a store").path().to_owned();
        let db = Database::open(&path).expect("redb opens it");
        let txn = db.begin_write().expect("write");
        txn.open_table(META)
            .expect("meta")
            .insert("format_version", version)
            .expect("insert");
        txn.commit().expect("commit");
        path
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
    fn an_existing_store_is_opened_never_made() {
        use crate::embedded::{Open, OpenError};
        let parent = tempfile::tempdir().expect("temporary directory");
        let typo = parent.path().join("vitals-dta");
        match EmbeddedStore::open_in(&typo, Open::Existing) {
            Err(OpenError::Missing { path, why }) => {
                assert_eq!(path, typo.join("vitals.redb"));
                assert!(why.contains("does not exist"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!typo.exists(), "the directory was made");
        std::fs::create_dir(&typo).expect("a directory");
        let error = error_of(EmbeddedStore::open_in(&typo, Open::Existing));
        assert!(error.contains("holds no vitals.redb"), "{error}");
        assert_eq!(std::fs::read_dir(&typo).expect("read").count(), 0);
        // Made once, opened after.
        let made = EmbeddedStore::open_in(&typo, Open::OrCreate).expect("made");
        let info = made.info().expect("info");
        assert_eq!(info.format_version, super::FORMAT_VERSION);
        let created = info.created_at.clone().expect("a creation time");
        events_schema::time::Timestamp::parse(&created).expect("RFC 3339");
        assert!(info.size_bytes > 0);
        assert_eq!(info.path, typo.join("vitals.redb"));
        drop(made);
        let opened = EmbeddedStore::open_in(&typo, Open::Existing).expect("opened");
        assert_eq!(opened.info().expect("info").created_at, Some(created));
        assert!(
            !typo.join("vitals.redb.new").exists(),
            "made aside, renamed"
        );
    }

    #[test]
    fn a_store_open_in_another_process_is_locked() {
        use crate::embedded::{Open, OpenError};
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = EmbeddedStore::open(dir.path())
            .expect("a store")
            .path()
            .to_owned();
        let _held = Database::open(&path).expect("held");
        match EmbeddedStore::open_in(dir.path(), Open::Existing) {
            Err(OpenError::Locked { path: locked }) => assert_eq!(locked, path),
            other => panic!("{other:?}"),
        }
    }

    /// A store made before stores recorded their format (its tables, no `meta`) is of
    /// version 1, and is opened; a database without the store's tables is empty.
    #[test]
    fn a_store_without_its_record_is_of_version_1_and_a_bare_database_is_empty() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = EmbeddedStore::open(dir.path())
            .expect("a store")
            .path()
            .to_owned();
        {
            let db = Database::open(&path).expect("redb opens it");
            let txn = db.begin_write().expect("write");
            txn.delete_table(META).expect("meta dropped");
            txn.commit().expect("commit");
        }
        let store = EmbeddedStore::open(dir.path()).expect("an older store opens");
        let info = store.info().expect("info");
        assert_eq!((info.format_version, info.created_at), (1, None));
        drop(store);

        let bare = tempfile::tempdir().expect("temporary directory");
        let file = bare.path().join("vitals.redb");
        drop(Database::create(&file).expect("a redb database"));
        let error = error_of(EmbeddedStore::open(bare.path()));
        assert!(error.contains("empty"), "{error}");
        assert!(error.contains(&file.display().to_string()), "{error}");
    }
}
