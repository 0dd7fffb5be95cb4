//! Reads on a fjall read transaction (a snapshot of every partition): get, partition query and index query, with TTL
//! filtering, limits, the 1 MiB page budget and cursors.

use super::apply::backend;
use super::changelog::ChangeRecord;
use super::layout::{self, Partitions, StrRange};
use crate::store::{
    Cursor, IndexQuery, Item, Key, MAX_PAGE_BYTES, Page, Query, Scan, StoreError, is_expired,
};
use events_schema::Context;
use events_schema::tables::{self, PK, SK};
use fjall::{ReadTransaction, TxKeyspace};
use std::collections::BTreeMap;

pub(super) fn get(
    txn: &ReadTransaction,
    names: &Partitions,
    table: Context,
    key: &Key,
    now: i64,
) -> Result<Option<Item>, StoreError> {
    key.validate()?;
    let found = txn
        .get(names.items(table), layout::item_key(&key.pk, &key.sk))
        .map_err(backend)?;
    let item = found.map(|bytes| layout::decode(&bytes)).transpose()?;
    Ok(item.filter(|item| !is_expired(item, now)))
}

/// Collects a page: stops at `limit` items or the byte budget, and sets the cursor when
/// entries remain after the last one returned.
struct PageBuilder {
    items: Vec<Item>,
    bytes: usize,
    limit: usize,
}

impl PageBuilder {
    fn new(limit: Option<usize>) -> Result<Self, StoreError> {
        if limit == Some(0) {
            return Err(StoreError::Validation(
                "a query limit must be at least 1".to_owned(),
            ));
        }
        Ok(Self {
            items: Vec::new(),
            bytes: 0,
            limit: limit.unwrap_or(usize::MAX),
        })
    }

    fn full(&self) -> bool {
        self.items.len() >= self.limit || self.bytes >= MAX_PAGE_BYTES
    }

    /// `stored_bytes` is the item's stored size, close enough to DynamoDB's count for
    /// the page budget and free to know (measuring the decoded item is not).
    fn push(&mut self, item: Item, stored_bytes: usize) {
        self.bytes += stored_bytes;
        self.items.push(item);
    }

    /// The page; when `more` entries follow, its cursor names `after`, the key of the
    /// last entry read (by attribute name).
    fn finish(self, more: bool, after: Option<BTreeMap<String, String>>) -> Page {
        Page {
            items: self.items,
            cursor: after.filter(|_| more).map(|key| Cursor::from_key(&key)),
        }
    }
}

/// A key as a cursor names it: attribute names and values.
fn key_of<const N: usize>(attributes: [(&str, String); N]) -> BTreeMap<String, String> {
    attributes
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

pub(super) fn query(
    txn: &ReadTransaction,
    names: &Partitions,
    table: Context,
    query: &Query,
    now: i64,
) -> Result<Page, StoreError> {
    let mut page = PageBuilder::new(query.limit)?;
    let range = StrRange::of(query.sort_key.as_ref());
    let (mut lower, mut upper) = layout::item_bounds(&query.pk, &range);
    let start = query.resume_after()?;
    if let Some(sk) = &start {
        let after = std::ops::Bound::Excluded(layout::item_key(&query.pk, sk));
        if query.forward {
            lower = after
        } else {
            upper = after
        }
    }
    let range = txn.range(names.items(table), (lower, upper));
    let mut entries = in_order(range, query.forward);
    let mut last = None;
    for entry in entries.by_ref() {
        let (key, value) = entry.map_err(backend)?;
        let (_, sk) = layout::split_item_key(&key)?;
        if !query.sort_key.as_ref().is_none_or(|c| c.matches(&sk)) {
            continue;
        }
        let item = layout::decode(&value)?;
        last = Some(sk);
        if !is_expired(&item, now) {
            page.push(item, value.len());
        }
        if page.full() {
            break;
        }
    }
    let more = page.full() && entries.next().is_some();
    let after = last.map(|sk| key_of([(PK, query.pk.clone()), (SK, sk)]));
    Ok(page.finish(more, after))
}

pub(super) fn query_index(
    txn: &ReadTransaction,
    names: &Partitions,
    table: Context,
    query: &IndexQuery,
    now: i64,
) -> Result<Page, StoreError> {
    let gsi = query.index_of(table)?;
    let mut page = PageBuilder::new(query.limit)?;
    let range = StrRange::of(query.sort_key.as_ref());
    let (mut lower, mut upper) = layout::index_bounds(&query.pk, &range);

    let start = index_start(gsi, query)?;
    if let Some((gsk, pk, sk)) = &start {
        let after = std::ops::Bound::Excluded(layout::key_of(&[&query.pk, gsk, pk, sk]));
        if query.forward {
            lower = after
        } else {
            upper = after
        }
    }

    let items = names.items(table);
    let range = txn.range(names.index(table, gsi)?, (lower, upper));
    let mut entries = in_order(range, query.forward);
    let mut last = None;
    for entry in entries.by_ref() {
        let (key, _) = entry.map_err(backend)?;
        let [_, gsk, pk, sk] = layout::split_index_key(&key)?;
        if !query.sort_key.as_ref().is_none_or(|c| c.matches(&gsk)) {
            continue;
        }
        let found = txn
            .get(items, layout::item_key(&pk, &sk))
            .map_err(backend)?;
        last = Some((gsk, pk, sk));
        let Some(bytes) = found else {
            continue;
        };
        let item = layout::decode(&bytes)?;
        if !is_expired(&item, now) {
            page.push(item, bytes.len());
        }
        if page.full() {
            break;
        }
    }
    let more = page.full() && entries.next().is_some();
    Ok(page.finish(more, last.map(|last| index_key(gsi, query, last))))
}

/// Where an index query resumes: the (index sort key, pk, sk) its cursor names.
fn index_start(
    gsi: &tables::GsiDef,
    query: &IndexQuery,
) -> Result<Option<(String, String, String)>, StoreError> {
    let Some(cursor) = &query.cursor else {
        return Ok(None);
    };
    let mut required = vec![gsi.partition_key, PK, SK];
    required.extend(gsi.sort_key);
    let key = cursor.to_key(&required)?;
    if key.get(gsi.partition_key) != Some(&query.pk) {
        return Err(StoreError::Validation(
            "the cursor is not valid for this query".into(),
        ));
    }
    let gsk = gsi
        .sort_key
        .and_then(|name| key.get(name).cloned())
        .unwrap_or_default();
    Ok(Some((gsk, key[PK].clone(), key[SK].clone())))
}

/// The key of the index entry (index sort key, pk, sk) `last`, as its cursor names it.
fn index_key(
    gsi: &tables::GsiDef,
    query: &IndexQuery,
    last: (String, String, String),
) -> BTreeMap<String, String> {
    let (gsk, pk, sk) = last;
    let mut key = key_of([(gsi.partition_key, query.pk.clone()), (PK, pk), (SK, sk)]);
    if let Some(name) = gsi.sort_key {
        key.insert(name.to_owned(), gsk);
    }
    key
}

pub(super) fn changes_after(
    keyspace: &TxKeyspace,
    names: &Partitions,
    after: u64,
    limit: usize,
) -> Result<Vec<ChangeRecord>, StoreError> {
    let txn = keyspace.read_tx();
    let mut records = Vec::new();
    let from = layout::seq_key(after.saturating_add(1));
    for entry in txn.range(&names.changelog, from..).take(limit) {
        let (_, value) = entry.map_err(backend)?;
        records.push(ChangeRecord::decode(&value)?);
    }
    Ok(records)
}

/// Up to `limit` change records after `after` of `table` whose sort key starts with
/// `sk_prefix`, scanning at most `scan` records; returns them and the last sequence
/// number scanned (`after` when none).
pub(super) fn matching_changes_after(
    keyspace: &TxKeyspace,
    names: &Partitions,
    after: u64,
    limit: usize,
    scan: usize,
    table: Context,
    sk_prefix: &str,
) -> Result<(Vec<ChangeRecord>, u64), StoreError> {
    let txn = keyspace.read_tx();
    let mut records = Vec::new();
    let mut last = after;
    let from = layout::seq_key(after.saturating_add(1));
    for entry in txn.range(&names.changelog, from..).take(scan) {
        let (seq, value) = entry.map_err(backend)?;
        last = layout::number(&seq)?;
        if ChangeRecord::matches(&value, table, sk_prefix)? {
            records.push(ChangeRecord::decode(&value)?);
            if records.len() == limit {
                break;
            }
        }
    }
    Ok((records, last))
}

/// One page of a whole table (`scan.index` None) or index, expired items included.
pub(super) fn scan(
    txn: &ReadTransaction,
    names: &Partitions,
    table: Context,
    scan: &Scan,
) -> Result<Page, StoreError> {
    let page = PageBuilder::new(scan.limit)?;
    match scan.index_of(table)? {
        None => scan_items(txn, names, table, scan, page),
        Some(gsi) => scan_index(txn, names, table, gsi, scan, page),
    }
}

fn scan_items(
    txn: &ReadTransaction,
    names: &Partitions,
    table: Context,
    scan: &Scan,
    mut page: PageBuilder,
) -> Result<Page, StoreError> {
    let start = match &scan.cursor {
        Some(cursor) => Some(cursor.to_key(&[PK, SK])?),
        None => None,
    };
    let lower = match &start {
        Some(key) => std::ops::Bound::Excluded(layout::item_key(&key[PK], &key[SK])),
        None => std::ops::Bound::Unbounded,
    };
    let range = txn.range(names.items(table), (lower, std::ops::Bound::Unbounded));
    let mut entries = range.peekable();
    let mut last = None;
    for entry in entries.by_ref() {
        let (key, value) = entry.map_err(backend)?;
        last = Some(layout::split_item_key(&key)?);
        page.push(layout::decode(&value)?, value.len());
        if page.full() {
            break;
        }
    }
    let more = page.full() && entries.peek().is_some();
    Ok(page.finish(more, last.map(|(pk, sk)| key_of([(PK, pk), (SK, sk)]))))
}

fn scan_index(
    txn: &ReadTransaction,
    names: &Partitions,
    table: Context,
    gsi: &tables::GsiDef,
    scan: &Scan,
    mut page: PageBuilder,
) -> Result<Page, StoreError> {
    // Index cursors carry the index keys under fixed names: an index without a sort key
    // stores "" for it.
    const IPK: &str = "index_pk";
    const ISK: &str = "index_sk";
    let start = match &scan.cursor {
        Some(cursor) => Some(cursor.to_key(&[IPK, ISK, PK, SK])?),
        None => None,
    };
    let items = names.items(table);
    let lower = match &start {
        Some(key) => {
            std::ops::Bound::Excluded(layout::key_of(&[&key[IPK], &key[ISK], &key[PK], &key[SK]]))
        }
        None => std::ops::Bound::Unbounded,
    };
    let range = txn.range(
        names.index(table, gsi)?,
        (lower, std::ops::Bound::Unbounded),
    );
    let mut entries = range.peekable();
    let mut last = None;
    for entry in entries.by_ref() {
        let (key, _) = entry.map_err(backend)?;
        let [ipk, isk, pk, sk] = layout::split_index_key(&key)?;
        // An entry without its item would be a store bug; report it rather than hide it.
        let Some(bytes) = txn
            .get(items, layout::item_key(&pk, &sk))
            .map_err(backend)?
        else {
            return Err(StoreError::Backend(format!(
                "index {} of {table} lists {pk} {sk}, which does not exist",
                gsi.name
            )));
        };
        last = Some([ipk, isk, pk, sk]);
        page.push(layout::decode(&bytes)?, bytes.len());
        if page.full() {
            break;
        }
    }
    let more = page.full() && entries.peek().is_some();
    let after = last.map(|[ipk, isk, pk, sk]| key_of([(IPK, ipk), (ISK, isk), (PK, pk), (SK, sk)]));
    Ok(page.finish(more, after))
}

/// A key range in ascending order, or descending when not `forward`.
fn in_order<'a, I>(range: I, forward: bool) -> Box<dyn Iterator<Item = I::Item> + 'a>
where
    I: DoubleEndedIterator + 'a,
{
    if forward {
        Box::new(range)
    } else {
        Box::new(range.rev())
    }
}
