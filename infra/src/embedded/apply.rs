//! Applying write actions inside one fjall write transaction: validate everything, check
//! every condition, and only then write items, index entries, expiry entries and the
//! change log records of the changes it publishes. A request that fails validation or
//! a condition has written nothing.

use super::changelog::{self, ChangeRecordRef};
use super::layout::{self, Partitions};
use crate::store::plan as store_plan;
use crate::store::{Item, Key, StoreError, TransactAction};
use events_schema::Context;
use events_schema::tables;
use fjall::WriteTransaction;

/// One item change: what was there and what will be (the shared planner's type, so a
/// planned transaction is written as it comes).
pub(super) use crate::store::plan::Planned as Change;

pub(super) fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

pub(super) fn read_item(
    txn: &WriteTransaction,
    names: &Partitions,
    table: Context,
    key: &Key,
) -> Result<Option<Item>, StoreError> {
    let found = txn
        .get(names.items(table), layout::item_key(&key.pk, &key.sk))
        .map_err(backend)?;
    found.map(|bytes| layout::decode(&bytes)).transpose()
}

/// Validates the actions and checks their conditions; returns the changes to make.
pub(super) fn plan(
    txn: &WriteTransaction,
    names: &Partitions,
    actions: &[TransactAction],
) -> Result<Vec<Change>, StoreError> {
    store_plan::check_size(actions)?;
    plan_batch(txn, names, actions)
}

/// [`plan`] without the transaction size limit: a batch of unconditional writes
/// (`Store::write_batch`), as large as the caller makes it.
pub(super) fn plan_batch(
    txn: &WriteTransaction,
    names: &Partitions,
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
    txn: &mut WriteTransaction,
    names: &Partitions,
    changes: &[Change],
    next_seq: &mut u64,
    at_ms: i64,
) -> Result<(), StoreError> {
    for change in changes {
        let key = layout::item_key(&change.key.pk, &change.key.sk);
        let items = names.items(change.table);
        match &change.new {
            Some(item) => txn.insert(items, key, layout::encode(item)),
            None => txn.remove(items, key),
        }
        write_index_entries(txn, names, change)?;
        write_expiry_entries(txn, names, change);
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
            txn.insert(
                &names.changelog,
                layout::seq_key(*next_seq),
                record.encode(),
            );
            *next_seq += 1;
        }
    }
    Ok(())
}

fn write_index_entries(
    txn: &mut WriteTransaction,
    names: &Partitions,
    change: &Change,
) -> Result<(), StoreError> {
    let (pk, sk) = (change.key.pk.as_str(), change.key.sk.as_str());
    for gsi in tables::table(change.table).gsis {
        let entry = |item: &Option<Item>| item.as_ref().and_then(|i| layout::index_entry(gsi, i));
        let (old, new) = (entry(&change.old), entry(&change.new));
        if old == new {
            continue;
        }
        let index = names.index(change.table, gsi)?;
        if let Some((gpk, gsk)) = &old {
            txn.remove(index, layout::key_of(&[gpk, gsk, pk, sk]));
        }
        if let Some((gpk, gsk)) = &new {
            txn.insert(index, layout::key_of(&[gpk, gsk, pk, sk]), []);
        }
    }
    Ok(())
}

fn write_expiry_entries(txn: &mut WriteTransaction, names: &Partitions, change: &Change) {
    let old = change.old.as_ref().and_then(layout::expiry_of);
    let new = change.new.as_ref().and_then(layout::expiry_of);
    if old == new {
        return;
    }
    let (table, pk, sk) = (
        change.table.as_str(),
        change.key.pk.as_str(),
        change.key.sk.as_str(),
    );
    if let Some(at) = old {
        txn.remove(&names.expiry, layout::expiry_key(at, table, pk, sk));
    }
    if let Some(at) = new {
        txn.insert(&names.expiry, layout::expiry_key(at, table, pk, sk), []);
    }
}

/// Plans the deletion of up to `limit` items of a partition.
pub(super) fn plan_drain(
    txn: &WriteTransaction,
    names: &Partitions,
    table: Context,
    pk: &str,
    limit: usize,
) -> Result<Vec<Change>, StoreError> {
    let everything = layout::StrRange::default();
    let mut changes = Vec::new();
    for entry in txn
        .range(names.items(table), layout::item_bounds(pk, &everything))
        .take(limit)
    {
        let (key, value) = entry.map_err(backend)?;
        let (pk, sk) = layout::split_item_key(&key)?;
        changes.push(Change {
            table,
            key: Key::new(pk, sk),
            old: Some(layout::decode(&value)?),
            new: None,
        });
    }
    Ok(changes)
}

/// Plans the deletion of up to `limit` items whose TTL is at or before `now`.
pub(super) fn plan_purge(
    txn: &WriteTransaction,
    names: &Partitions,
    now: i64,
    limit: usize,
) -> Result<Vec<Change>, StoreError> {
    // Every key at or before `now` is below the first key of `now + 1`.
    let end = layout::expiry_prefix(now.saturating_add(1));
    let mut due: Vec<(Context, Key)> = Vec::new();
    for entry in txn.range(&names.expiry, ..end).take(limit) {
        let (key, _) = entry.map_err(backend)?;
        let (_, parts) = layout::split_expiry(&key)?;
        let [table, pk, sk] = <[String; 3]>::try_from(parts)
            .map_err(|_| StoreError::Backend("corrupt expiry entry".into()))?;
        due.push((table.parse::<Context>().map_err(backend)?, Key::new(pk, sk)));
    }
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
