//! Every item of every table of a store, by (table, pk, sk): what whole-store
//! comparisons (a rebuild against the live rows, replays of different histories) read;
//! and the paged reads that gather them.

use events_schema::Context;
use infra::Store;
use infra::store::{Cursor, Item, Page, Scan};
use serde_json::Value;
use std::collections::BTreeMap;

pub type Snapshot = BTreeMap<(Context, String, String), Item>;

/// Scans every table of `store`.
pub async fn snapshot(store: &dyn Store) -> Snapshot {
    let mut all = Snapshot::new();
    for table in Context::ALL {
        for item in scan_all(store, table, None, 1000).await {
            let key = |a: &str| {
                item.get(a)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            all.insert((table, key("pk"), key("sk")), item);
        }
    }
    all
}

/// Every item of a table (or of its `index`), scanned in pages of at most `limit`.
pub async fn scan_all(
    store: &dyn Store,
    table: Context,
    index: Option<&str>,
    limit: usize,
) -> Vec<Item> {
    every_page(WHOLE_TABLE_PAGES, |cursor| {
        let scan = Scan {
            index: index.map(str::to_owned),
            limit: Some(limit),
            cursor,
        };
        async move {
            let page = store.scan(table, &scan).await.expect("scan");
            assert!(page.items.len() <= limit, "a page holds at most the limit");
            page
        }
    })
    .await
}

/// More pages than a whole test table has: past this, a read's pages never end.
pub const WHOLE_TABLE_PAGES: usize = 100_000;

/// Every item of a paged read: `page(cursor)` reads the page that starts where the
/// previous one stopped (`None` for the first). Fails when there are more than
/// `max_pages` (the pages never end).
pub async fn every_page<Fut>(
    max_pages: usize,
    mut page: impl FnMut(Option<Cursor>) -> Fut,
) -> Vec<Item>
where
    Fut: Future<Output = Page>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    for _ in 0..max_pages {
        let page = page(cursor).await;
        items.extend(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return items,
        }
    }
    panic!("pagination did not end");
}
