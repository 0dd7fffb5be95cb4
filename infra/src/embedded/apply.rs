//! Applying write actions inside one redb write transaction: validate everything, check
//! every condition, and only then write items, index entries, expiry entries and the
//! change log records of the changes it publishes. A request that fails validation or
//! a condition has written nothing.

use super::changelog::{self, ChangeRecordRef};
use super::layout::{self, CHANGELOG, EXPIRY, Names};
use crate::store::plan as store_plan;
use crate::store::{Item, Key, StoreError, TransactAction};
use events_schema::Context;
use events_schema::tables;
use redb::{ReadableTable, WriteTransaction};

/// One item change: what was there and what will be (the shared planner's type, so a
/// planned transaction is written as it comes).
pub(super) use crate::store::plan::Planned as Change;

pub(super) fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

pub(super) fn read_item(
    txn: &WriteTransaction,
    names: &Names,
    table: Context,
    key: &Key,
) -> Result<Option<Item>, StoreError> {
    let items = txn.open_table(names.items(table)).map_err(backend)?;
    let found = items
        .get((key.pk.as_str(), key.sk.as_str()))
        .map_err(backend)?;
    found.map(|bytes| layout::decode(bytes.value())).transpose()
}

/// Validates the actions and checks their conditions; returns the changes to make.
pub(super) fn plan(
    txn: &WriteTransaction,
    names: &Names,
    actions: &[TransactAction],
) -> Result<Vec<Change>, StoreError> {
    store_plan::check_size(actions)?;
    plan_batch(txn, names, actions)
}

/// [`plan`] without the transaction size limit: a batch of unconditional writes
/// (`Store::write_batch`), as large as the caller makes it.
pub(super) fn plan_batch(
    txn: &WriteTransaction,
    names: &Names,
    actions: &[TransactAction],
) -> Result<Vec<Change>, StoreError> {
    let keys = store_plan::action_keys(actions)?;
    store_plan::plan(actions, keys, |table, key| {
        read_item(txn, names, table, key)
    })
}

/// Writes planned changes: items, index and expiry entries, change log records.
/// `next_seq` is the change log's next sequence number; it is advanced per record.
pub(super) fn write(
    txn: &WriteTransaction,
    names: &Names,
    changes: &[Change],
    next_seq: &mut u64,
    at_ms: i64,
) -> Result<(), StoreError> {
    for change in changes {
        let (pk, sk) = (change.key.pk.as_str(), change.key.sk.as_str());
        {
            let mut items = txn.open_table(names.items(change.table)).map_err(backend)?;
            match &change.new {
                Some(item) => {
                    items
                        .insert((pk, sk), layout::encode(item).as_slice())
                        .map_err(backend)?;
                }
                None => {
                    items.remove((pk, sk)).map_err(backend)?;
                }
            }
        }
        write_index_entries(txn, change)?;
        write_expiry_entries(txn, change)?;
        if changelog::publishes(change) {
            let record = ChangeRecordRef {
                seq: *next_seq,
                table: change.table,
                pk: &change.key.pk,
                sk: &change.key.sk,
                old: change.old.as_ref(),
                new: change.new.as_ref(),
                at_ms,
            };
            let mut log = txn.open_table(CHANGELOG).map_err(backend)?;
            log.insert(*next_seq, record.encode().as_slice())
                .map_err(backend)?;
            *next_seq += 1;
        }
    }
    Ok(())
}

fn write_index_entries(txn: &WriteTransaction, change: &Change) -> Result<(), StoreError> {
    let (pk, sk) = (change.key.pk.as_str(), change.key.sk.as_str());
    for gsi in tables::table(change.table).gsis {
        let entry = |item: &Option<Item>| item.as_ref().and_then(|i| layout::index_entry(gsi, i));
        let (old, new) = (entry(&change.old), entry(&change.new));
        if old == new {
            continue;
        }
        let name = layout::index_table_name(change.table, gsi);
        let mut index = txn.open_table(layout::index_def(&name)).map_err(backend)?;
        if let Some((gpk, gsk)) = &old {
            index
                .remove((gpk.as_str(), gsk.as_str(), pk, sk))
                .map_err(backend)?;
        }
        if let Some((gpk, gsk)) = &new {
            index
                .insert((gpk.as_str(), gsk.as_str(), pk, sk), ())
                .map_err(backend)?;
        }
    }
    Ok(())
}

fn write_expiry_entries(txn: &WriteTransaction, change: &Change) -> Result<(), StoreError> {
    let old = change.old.as_ref().and_then(layout::expiry_of);
    let new = change.new.as_ref().and_then(layout::expiry_of);
    if old == new {
        return Ok(());
    }
    let (table, pk, sk) = (
        change.table.as_str(),
        change.key.pk.as_str(),
        change.key.sk.as_str(),
    );
    let mut expiry = txn.open_table(EXPIRY).map_err(backend)?;
    if let Some(at) = old {
        expiry.remove((at, table, pk, sk)).map_err(backend)?;
    }
    if let Some(at) = new {
        expiry.insert((at, table, pk, sk), ()).map_err(backend)?;
    }
    Ok(())
}

/// Plans the deletion of up to `limit` items of a partition.
pub(super) fn plan_drain(
    txn: &WriteTransaction,
    names: &Names,
    table: Context,
    pk: &str,
    limit: usize,
) -> Result<Vec<Change>, StoreError> {
    let items = txn.open_table(names.items(table)).map_err(backend)?;
    let pk_end = layout::partition_end(pk);
    let everything = layout::StrRange::default();
    let mut changes = Vec::new();
    for entry in items
        .range(layout::item_bounds(pk, &pk_end, &everything))
        .map_err(backend)?
    {
        if changes.len() >= limit {
            break;
        }
        let (key, value) = entry.map_err(backend)?;
        let (pk, sk) = key.value();
        changes.push(Change {
            table,
            key: Key::new(pk, sk),
            old: Some(layout::decode(value.value())?),
            new: None,
        });
    }
    Ok(changes)
}

/// Plans the deletion of up to `limit` items whose TTL is at or before `now`.
pub(super) fn plan_purge(
    txn: &WriteTransaction,
    names: &Names,
    now: i64,
    limit: usize,
) -> Result<Vec<Change>, StoreError> {
    let due: Vec<(Context, Key)> = {
        let expiry = txn.open_table(EXPIRY).map_err(backend)?;
        let mut due = Vec::new();
        for entry in expiry
            .range(..=(now, "\u{10FFFF}", "", ""))
            .map_err(backend)?
        {
            if due.len() >= limit {
                break;
            }
            let (key, _) = entry.map_err(backend)?;
            let (_, table, pk, sk) = key.value();
            let table = table.parse::<Context>().map_err(backend)?;
            due.push((table, Key::new(pk, sk)));
        }
        due
    };
    let mut changes = Vec::with_capacity(due.len());
    for (table, key) in due {
        let old = read_item(txn, names, table, &key)?;
        changes.push(Change {
            table,
            key,
            old,
            new: None,
        });
    }
    Ok(changes)
}
