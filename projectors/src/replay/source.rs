//! Reading a source table's outbox for a replay: one user's partition or the whole
//! table, a page at a time, its `EVT#` items as events.

use events_schema::Context;
use events_schema::envelope::{EventEnvelope, is_outbox_item, outbox_event};
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, prefix};
use infra::store::{Cursor, Item, Key, Page, Query, Scan, SortKeyCondition};
use infra::{Store, StoreError};

/// Items read per page.
pub(super) const PAGE: usize = 1000;

/// How many outbox events a replay of `source` reads.
pub(super) async fn count_events(
    store: &dyn Store,
    source: Context,
    user: Option<&UserId>,
) -> Result<u64, StoreError> {
    let mut count = 0;
    let mut cursor = None;
    loop {
        let page = read_page(store, source, user, cursor, PAGE).await?;
        count += page.items.iter().filter(|i| is_outbox_item(i)).count() as u64;
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(count),
        }
    }
}

pub(super) async fn read_page(
    store: &dyn Store,
    source: Context,
    user: Option<&UserId>,
    cursor: Option<Cursor>,
    page: usize,
) -> Result<Page, StoreError> {
    match user {
        Some(user) => {
            let query = Query::partition(PartitionKey::User(user.clone()).to_string())
                .sort_key(SortKeyCondition::BeginsWith(prefix::EVENT.to_owned()))
                .limit(page)
                .consistent()
                .after(cursor);
            store.query(source, &query).await
        }
        None => {
            let scan = Scan {
                index: None,
                limit: Some(page),
                cursor,
            };
            store.scan(source, &scan).await
        }
    }
}

/// The events of a page's outbox items, grouped by partition (user), in key order.
pub(super) fn outbox_events(items: &[Item]) -> Vec<(String, EventEnvelope)> {
    items
        .iter()
        .filter_map(|item| {
            let event = outbox_event(item)?.ok()?;
            Some((Key::of(item).ok()?.pk, event))
        })
        .collect()
}
