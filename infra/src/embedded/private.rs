//! The data directory holds password hashes, email addresses and health data: it is
//! created readable by its owner only (0700), the store's directory in it is kept so
//! (0700) and the files the store makes itself (its lock, backups) are kept 0600; one
//! found open to others when the store opens is tightened, and says so.

use crate::store::StoreError;
use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

/// The mode of the data directory: its owner's only.
pub(super) const DIRECTORY_MODE: u32 = 0o700;
/// The mode of every file in it.
pub(super) const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and missing parents) readable by its owner only. A directory that is
/// already there keeps its mode (it may be shared, such as a home directory), with a
/// warning when others can read it.
pub(super) fn create_dir(dir: &Path) -> Result<(), StoreError> {
    let cannot = |e: std::io::Error| {
        StoreError::Backend(format!(
            "cannot create data directory {}: {e}",
            dir.display()
        ))
    };
    if !dir.is_dir() {
        DirBuilder::new()
            .recursive(true)
            .mode(DIRECTORY_MODE)
            .create(dir)
            .map_err(cannot)?;
    }
    let mode = std::fs::metadata(dir).map_err(cannot)?.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            directory = %dir.display(),
            mode = format!("{:o}", mode & 0o777),
            "the data directory is open to other users; its files are kept to their owner"
        );
    }
    Ok(())
}

/// Keeps the directory `dir` (the store's own, which holds everything) to its owner:
/// one others could enter is tightened to [`DIRECTORY_MODE`] (logged). What is in it
/// is then out of others' reach, whatever modes the engine gives its files.
pub(super) fn tighten_dir(dir: &Path) -> Result<(), StoreError> {
    tighten(dir, DIRECTORY_MODE)
}

/// Creates the file at `path` if it is missing, readable and writable by its owner
/// only; a file already there that others could read or write is tightened to that
/// (logged). The file, open for reading and writing.
pub(super) fn create_file(path: &Path) -> Result<std::fs::File, StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| StoreError::Backend(format!("cannot create {}: {e}", path.display())))?;
    tighten(path, FILE_MODE)?;
    Ok(file)
}

/// Sets `path`'s mode to `mode` when others could use it (logged).
fn tighten(path: &Path, mode: u32) -> Result<(), StoreError> {
    let failed = |e: std::io::Error| {
        StoreError::Backend(format!(
            "cannot restrict the mode of {}: {e}",
            path.display()
        ))
    };
    let was = std::fs::metadata(path)
        .map_err(failed)?
        .permissions()
        .mode();
    if was & 0o077 != 0 {
        std::fs::set_permissions(path, Permissions::from_mode(mode)).map_err(failed)?;
        tracing::warn!(
            path = %path.display(),
            was = format!("{:o}", was & 0o777),
            now = format!("{mode:o}"),
            "open to other users: restricted to its owner"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::embedded::EmbeddedStore;
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Path;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_new_data_directory_and_its_file_are_the_owners_only() {
        let parent = tempfile::tempdir().expect("temporary directory");
        let dir = parent.path().join("data");
        let store = EmbeddedStore::open(&dir).expect("store");
        assert_eq!(format!("{:o}", mode(&dir)), "700", "data directory");
        assert_eq!(
            format!("{:o}", mode(store.path())),
            "700",
            "store directory"
        );
        assert_eq!(
            format!("{:o}", mode(&dir.join("vitals.lock"))),
            "600",
            "lock file"
        );
    }

    #[test]
    fn a_lock_file_readable_by_others_is_tightened_when_the_store_opens() {
        let parent = tempfile::tempdir().expect("temporary directory");
        let dir = parent.path().join("data");
        drop(EmbeddedStore::open(&dir).expect("store"));
        let lock = dir.join("vitals.lock");
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let _store = EmbeddedStore::open(&dir).expect("store again");
        assert_eq!(format!("{:o}", mode(&lock)), "600", "lock file");
    }
}
