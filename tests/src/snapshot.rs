//! Every item of every table of a store, by (table, pk, sk): what whole-store
//! comparisons (a rebuild against the live rows, replays of different histories) read.

use events_schema::Context;
use infra::Store;
use infra::store::{Item, Scan};
use serde_json::Value;
use std::collections::BTreeMap;

pub type Snapshot = BTreeMap<(Context, String, String), Item>;

/// Scans every table of `store`.
pub async fn snapshot(store: &dyn Store) -> Snapshot {
    let mut all = Snapshot::new();
    for table in Context::ALL {
        let mut cursor = None;
        loop {
            let scan = Scan {
                index: None,
                limit: Some(1000),
                cursor,
            };
            let page = store.scan(table, &scan).await.expect("scan");
            for item in page.items {
                let key = |a: &str| {
                    item.get(a)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                all.insert((table, key("pk"), key("sk")), item);
            }
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    all
}
