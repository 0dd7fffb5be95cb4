//! The store's tables in a redb file: the format of a backup, and the store of the
//! releases before the store moved to fjall (`vitals.redb`, migrated when it is
//! opened). A redb file is one file with checksummed pages, verified on open, and every
//! earlier backup is one: keeping it as the archive format means old backups still
//! restore, and an older release's store is migrated by the same code that restores.
//!
//! Each table keeps its name and its typed keys: `items/<context>` is `(pk, sk)` ->
//! bytes, and so on (see `layout::Shape`).

use super::apply::backend;
use super::layout::{self, Partitions, Shape, TableDef};
use super::meta::{self, OpenError, Recorded};
use crate::store::StoreError;
use fjall::{Slice, TxKeyspace};
use redb::{
    ReadTransaction, ReadableDatabase as _, ReadableTable as _, TableDefinition, TableError,
    TableHandle as _, WriteTransaction,
};
use std::path::Path;

/// The store of the releases before fjall, in the data directory.
pub(super) const LEGACY_FILE: &str = "vitals.redb";
/// What a migrated `vitals.redb` is renamed to (kept: the operator deletes it).
pub const MIGRATED: &str = "vitals.redb.migrated";
/// Entries imported per write transaction (a transaction is held in memory until it
/// commits; the keyspace being built is not in place until the whole import is).
const IMPORT_CHUNK: usize = 16_384;

type Items<'a> = TableDefinition<'a, (&'static str, &'static str), &'static [u8]>;
type Index<'a> = TableDefinition<'a, (&'static str, &'static str, &'static str, &'static str), ()>;
type Expiry<'a> = TableDefinition<'a, (i64, &'static str, &'static str, &'static str), ()>;
type Log<'a> = TableDefinition<'a, u64, &'static [u8]>;
type Checkpoints<'a> = TableDefinition<'a, &'static str, u64>;
type Meta<'a> = TableDefinition<'a, &'static str, &'static str>;

/// Writes every table of the snapshot `txn` into the redb transaction `to`; each
/// table's name and entries, in the store's table order.
pub(super) fn export(
    txn: &fjall::ReadTransaction,
    names: &Partitions,
    to: &WriteTransaction,
) -> Result<Vec<(String, u64)>, StoreError> {
    let mut copied = Vec::new();
    for (def, partition) in &names.all {
        let mut entries = 0;
        let name = def.name.as_str();
        let failed = |e: &dyn std::fmt::Display| StoreError::Backend(format!("{name}: {e}"));
        macro_rules! copy {
            ($def:expr, |$k:ident, $v:ident, $t:ident| $insert:expr) => {{
                let mut $t = to.open_table($def).map_err(|e| failed(&e))?;
                for entry in txn.iter(partition) {
                    let ($k, $v) = entry.map_err(backend)?;
                    $insert.map_err(|e| failed(&e))?;
                    entries += 1;
                }
            }};
        }
        match def.shape {
            Shape::Items => copy!(Items::new(name), |k, v, t| {
                let (pk, sk) = layout::split_item_key(&k)?;
                t.insert((pk.as_str(), sk.as_str()), &*v)
            }),
            Shape::Index => copy!(Index::new(name), |k, _v, t| {
                let [a, b, c, d] = layout::split_index_key(&k)?;
                t.insert((a.as_str(), b.as_str(), c.as_str(), d.as_str()), ())
            }),
            Shape::Expiry => copy!(Expiry::new(name), |k, _v, t| {
                let (at, parts) = layout::split_expiry(&k)?;
                let [a, b, c] = <[String; 3]>::try_from(parts)
                    .map_err(|_| failed(&"a corrupt expiry entry"))?;
                t.insert((at, a.as_str(), b.as_str(), c.as_str()), ())
            }),
            Shape::Changelog => copy!(Log::new(name), |k, v, t| {
                t.insert(layout::number(&k)?, &*v)
            }),
            Shape::Checkpoints => copy!(Checkpoints::new(name), |k, v, t| {
                t.insert(text(&k)?, layout::number(&v)?)
            }),
            Shape::Meta => copy!(Meta::new(name), |k, v, t| t.insert(text(&k)?, text(&v)?)),
        }
        copied.push((def.name.clone(), entries));
    }
    Ok(copied)
}

fn text(bytes: &Slice) -> Result<&str, StoreError> {
    std::str::from_utf8(bytes).map_err(|_| StoreError::Backend("corrupt text in the store".into()))
}

/// Writes every table of the redb snapshot `from` into the keyspace being built (not
/// yet in place); each table's name and entries. A table the file lacks (an index a
/// later release added) counts none. A file without a format record (a store made
/// before stores recorded one) is of version 1, which is recorded.
pub(super) fn import(
    from: &ReadTransaction,
    keyspace: &TxKeyspace,
    names: &Partitions,
) -> Result<Vec<(String, u64)>, StoreError> {
    let mut counted = Vec::new();
    for (def, partition) in &names.all {
        let entries = import_table(from, keyspace, def, partition)?;
        counted.push((def.name.clone(), entries));
    }
    record_version_one(keyspace, names)?;
    Ok(counted)
}

/// Writes the table `def` of the redb snapshot `from` into its `partition` of the
/// keyspace being built; returns how many entries (none if the file lacks the table).
fn import_table(
    from: &ReadTransaction,
    keyspace: &TxKeyspace,
    def: &TableDef,
    partition: &fjall::TxPartitionHandle,
) -> Result<u64, StoreError> {
    let mut chunk = Chunk::new(keyspace);
    let name = def.name.as_str();
    macro_rules! copy {
        ($def:expr, |$k:ident, $v:ident| $key:expr, $value:expr) => {{
            match from.open_table($def) {
                Ok(table) => {
                    for entry in table.iter().map_err(backend)? {
                        let (k, v) = entry.map_err(backend)?;
                        let ($k, $v) = (k.value(), v.value());
                        chunk.insert(partition, $key, $value)?;
                    }
                }
                Err(TableError::TableDoesNotExist(_)) => {}
                Err(other) => return Err(backend(other)),
            }
        }};
    }
    match def.shape {
        Shape::Items => copy!(
            Items::new(name),
            |k, v| layout::item_key(k.0, k.1),
            v.to_vec()
        ),
        Shape::Index => copy!(
            Index::new(name),
            |k, _v| layout::key_of(&[k.0, k.1, k.2, k.3]),
            Vec::new()
        ),
        Shape::Expiry => copy!(
            Expiry::new(name),
            |k, _v| layout::expiry_key(k.0, k.1, k.2, k.3),
            Vec::new()
        ),
        Shape::Changelog => copy!(
            Log::new(name),
            |k, v| layout::seq_key(k).to_vec(),
            v.to_vec()
        ),
        Shape::Checkpoints => copy!(
            Checkpoints::new(name),
            |k, v| k.as_bytes().to_vec(),
            layout::seq_key(v).to_vec()
        ),
        Shape::Meta => copy!(
            Meta::new(name),
            |k, v| k.as_bytes().to_vec(),
            v.as_bytes().to_vec()
        ),
    }
    chunk.finish()
}

/// Records format version 1 in the keyspace being built unless it records a version
/// already (a store made before stores recorded one).
fn record_version_one(keyspace: &TxKeyspace, names: &Partitions) -> Result<(), StoreError> {
    let recorded = keyspace
        .read_tx()
        .get(&names.meta, meta::VERSION_KEY)
        .map_err(backend)?;
    if recorded.is_none() {
        let mut txn = keyspace.write_tx();
        txn.insert(&names.meta, meta::VERSION_KEY, "1");
        txn.commit().map_err(backend)?;
    }
    Ok(())
}

/// Writes in transactions of [`IMPORT_CHUNK`] entries, counting them.
struct Chunk<'k> {
    keyspace: &'k TxKeyspace,
    txn: Option<fjall::WriteTransaction<'k>>,
    pending: usize,
    total: u64,
}

impl<'k> Chunk<'k> {
    fn new(keyspace: &'k TxKeyspace) -> Self {
        Self {
            keyspace,
            txn: None,
            pending: 0,
            total: 0,
        }
    }

    fn insert(
        &mut self,
        partition: &fjall::TxPartitionHandle,
        key: Vec<u8>,
        value: Vec<u8>,
    ) -> Result<(), StoreError> {
        let txn = self.txn.get_or_insert_with(|| self.keyspace.write_tx());
        txn.insert(partition, key, value);
        self.pending += 1;
        self.total += 1;
        if self.pending >= IMPORT_CHUNK {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.pending = 0;
        match self.txn.take() {
            Some(txn) => txn.commit().map_err(backend),
            None => Ok(()),
        }
    }

    fn finish(mut self) -> Result<u64, StoreError> {
        self.commit()?;
        Ok(self.total)
    }
}

/// What the redb file read in `read` records, checked without writing: a file of a
/// newer or unknown format is refused, a database without the store's tables is empty;
/// `None` for a store made before stores recorded their format (of version 1).
pub(super) fn recorded(read: &ReadTransaction, path: &Path) -> Result<Option<Recorded>, OpenError> {
    let unusable = |e: &dyn std::fmt::Display| meta::unusable(path, e);
    let meta_table = match read.open_table(Meta::new("meta")) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => {
            let ours = read
                .list_tables()
                .map_err(|e| unusable(&e))?
                .any(|table| table.name().starts_with("items/"));
            if !ours {
                return Err(OpenError::Empty {
                    path: path.to_owned(),
                    why: "a database without the store's tables".to_owned(),
                });
            }
            return Ok(None);
        }
        Err(other) => return Err(unusable(&other)),
    };
    let get = |key: &str| -> Result<Option<String>, OpenError> {
        Ok(meta_table
            .get(key)
            .map_err(|e| unusable(&e))?
            .map(|v| v.value().to_owned()))
    };
    meta::checked(path, get(meta::VERSION_KEY)?, get(meta::CREATED_KEY)?).map(Some)
}

/// The newest change-log sequence number a redb file holds, trimmed or not.
pub(super) fn last_sequence(read: &ReadTransaction) -> Result<u64, StoreError> {
    let newest = match read.open_table(Log::new("changelog")) {
        Ok(log) => log.last().map_err(backend)?.map_or(0, |(k, _)| k.value()),
        Err(TableError::TableDoesNotExist(_)) => 0,
        Err(other) => return Err(backend(other)),
    };
    let trimmed = match read.open_table(Checkpoints::new("checkpoints")) {
        Ok(table) => table
            .get(super::writer::TRIMMED)
            .map_err(backend)?
            .map_or(0, |v| v.value()),
        Err(TableError::TableDoesNotExist(_)) => 0,
        Err(other) => return Err(backend(other)),
    };
    Ok(newest.max(trimmed))
}

/// Every table name a redb file holds that the store does not have.
pub(super) fn unknown_tables(read: &ReadTransaction) -> Result<Vec<String>, StoreError> {
    let known: Vec<TableDef> = layout::tables();
    Ok(read
        .list_tables()
        .map_err(backend)?
        .map(|t| t.name().to_owned())
        .filter(|name| !known.iter().any(|def| &def.name == name))
        .collect())
}

/// Migrates the older release's store `legacy` (a `vitals.redb`) to a fjall store at
/// `store`, then renames it to [`MIGRATED`]. Errors name `legacy`; it is left as it is
/// when the migration fails.
pub(super) fn migrate(legacy: &Path, store: &Path) -> Result<(), OpenError> {
    let size = std::fs::metadata(legacy)
        .map_err(|e| meta::unusable(legacy, e))?
        .len();
    if size == 0 {
        return Err(OpenError::Empty {
            path: legacy.to_owned(),
            why: "0 bytes".to_owned(),
        });
    }
    let db = redb::Database::open(legacy).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => OpenError::Locked {
            path: legacy.to_owned(),
        },
        other => meta::unusable(legacy, other),
    })?;
    let read = db.begin_read().map_err(|e| meta::unusable(legacy, e))?;
    recorded(&read, legacy)?;
    let unknown = unknown_tables(&read).map_err(|e| meta::unusable(legacy, e))?;
    if let Some(name) = unknown.first() {
        return Err(meta::unusable(
            legacy,
            format!("a table this release does not know: {name}"),
        ));
    }
    let mut counted = Vec::new();
    super::engine::create(store, |keyspace, names| {
        counted = import(&read, keyspace, names)?;
        Ok(())
    })?;
    drop(read);
    drop(db);
    let kept = legacy.with_file_name(MIGRATED);
    std::fs::rename(legacy, &kept).map_err(|e| meta::unusable(legacy, e))?;
    super::engine::sync_parent(legacy).map_err(|e| meta::unusable(legacy, e))?;
    let items: u64 = counted
        .iter()
        .filter(|(name, _)| name.starts_with("items/"))
        .map(|(_, n)| n)
        .sum();
    tracing::info!(
        from = %legacy.display(),
        to = %store.display(),
        kept = %kept.display(),
        items,
        "migrated the store of an older release from redb to fjall"
    );
    Ok(())
}
