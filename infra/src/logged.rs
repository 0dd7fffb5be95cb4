//! A storage wrapper that logs every write that took effect, at info (target
//! `vitals::store`): the table and what kind of row, so one grep for a request id finds
//! the command's commit and every read row it caused (the line inherits the request's or
//! the event's span). Reads are not logged. Never a partition key (it names a user or an
//! email) nor an attribute value: a row is named by its sort key's kind (`DAILY`,
//! `RECENT_MEALS`), an outbox event by its id.

use crate::observed::{Observed, Observer, Row, Write};
use crate::store::{Item, Store};
use async_trait::async_trait;
use events_schema::Context;
use std::sync::Arc;

/// The store of `vitals serve`: every request passed on, every write logged.
pub type LoggedStore = Observed<WriteLog>;

/// The [`Observer`] that logs writes.
pub struct WriteLog;

impl LoggedStore {
    pub fn logging(inner: Arc<dyn Store>) -> Self {
        Observed::new(inner, WriteLog)
    }
}

/// A sort key as a log may show it: `EVT#<event id>` whole, any other by its kind.
fn row_kind(sort_key: &str) -> &str {
    if sort_key.starts_with("EVT#") {
        return sort_key;
    }
    sort_key.split('#').next().unwrap_or(sort_key)
}

fn sort_key(item: &Item) -> &str {
    item.get("sk").and_then(|v| v.as_str()).unwrap_or_default()
}

#[async_trait]
impl Observer for WriteLog {
    /// Each row's table, kind of write and sort key, taken before the request consumes
    /// them.
    type Note = Vec<(Context, &'static str, String)>;

    async fn before(&self, write: Write<'_>) -> Self::Note {
        let row = |row: Row<'_>| match row {
            Row::Put { table, item } => (table, "put", sort_key(item).to_owned()),
            Row::Update { table, key, .. } => (table, "update", key.sk.clone()),
            Row::Delete { table, key } => (table, "delete", key.sk.clone()),
        };
        write.rows().into_iter().map(row).collect()
    }

    fn written(&self, rows: Self::Note) {
        for (table, kind, row) in &rows {
            tracing::info!(target: "vitals::store", %table, write = kind, row = row_kind(row), "row written");
        }
    }

    fn drained(&self, table: Context, _pk: &str, deleted: usize) {
        if deleted > 0 {
            tracing::info!(target: "vitals::store", %table, deleted, "partition page drained");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::row_kind;

    #[test]
    fn rows_are_named_by_kind_and_events_by_id() {
        assert_eq!(row_kind("DAILY#2026-12-02"), "DAILY");
        assert_eq!(row_kind("SESSION#01J0000000000000000000000"), "SESSION");
        assert_eq!(row_kind("RECENT_MEALS"), "RECENT_MEALS");
        assert_eq!(
            row_kind("EVT#01J0000000000000000000000"),
            "EVT#01J0000000000000000000000"
        );
    }
}
