//! The single read: what it asks ([`SingleRead`], borrowing the caller's key or query)
//! and what it answers ([`Found`]). Backends and wrappers implement
//! [`crate::Store::read`] once for all four kinds; callers keep `get`, `query`,
//! `query_index` and `scan`, which ask for one kind and take its answer apart.

use super::{IndexQuery, Item, Key, Page, Query, Scan, StoreError};

/// One read of a table: an item by its key, or one page of a partition, an index or
/// the whole table.
#[derive(Debug, Clone, Copy)]
pub enum SingleRead<'a> {
    /// One item; `consistent` asks for a strongly consistent read.
    Get { key: &'a Key, consistent: bool },
    /// One page of a partition.
    Query(&'a Query),
    /// One page of a secondary index (eventually consistent).
    QueryIndex(&'a IndexQuery),
    /// One page of a whole table or index: operators' tools only.
    Scan(&'a Scan),
}

impl SingleRead<'_> {
    /// Whether it is strongly consistent (index queries and scans never are).
    pub fn consistent(&self) -> bool {
        match self {
            SingleRead::Get { consistent, .. } => *consistent,
            SingleRead::Query(query) => query.consistent,
            SingleRead::QueryIndex(_) | SingleRead::Scan(_) => false,
        }
    }

    /// Its kind, as a message names it ("an index query").
    pub fn kind(&self) -> &'static str {
        match self {
            SingleRead::Get { .. } => "a get",
            SingleRead::Query(_) => "a query",
            SingleRead::QueryIndex(_) => "an index query",
            SingleRead::Scan(_) => "a scan",
        }
    }
}

/// What a single read answers: a get an item (none if absent or expired), the other
/// kinds a page.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Item(Option<Item>),
    Page(Page),
}

impl Found {
    /// The items read, what the read is billed for.
    pub fn items(&self) -> &[Item] {
        match self {
            Found::Item(item) => item.as_slice(),
            Found::Page(page) => &page.items,
        }
    }

    /// A get's answer; another kind is the store's error.
    pub(crate) fn into_item(self) -> Result<Option<Item>, StoreError> {
        match self {
            Found::Item(item) => Ok(item),
            Found::Page(_) => Err(mismatch("a get", "a page")),
        }
    }

    /// The page `asked` (such as "a scan") answered; an item is the store's error.
    pub(crate) fn into_page(self, asked: &str) -> Result<Page, StoreError> {
        match self {
            Found::Page(page) => Ok(page),
            Found::Item(_) => Err(mismatch(asked, "an item")),
        }
    }
}

/// A store answered `asked` with `answered`. Names the kinds only, never the items.
fn mismatch(asked: &str, answered: &str) -> StoreError {
    StoreError::Backend(format!("the store answered {asked} with {answered}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::answers::Answers;
    use events_schema::Context;

    #[tokio::test]
    async fn each_read_takes_its_own_answer_and_refuses_another_kind() {
        let (table, key) = (Context::Goals, Key::new("USER#u", "A"));
        let item = key.to_item();
        let query = Query::partition("USER#u");
        let index = IndexQuery::partition("GSI1", "TYPE#goal");
        let scan = Scan::default();

        let items = Answers::reads(Found::Item(Some(item.clone())));
        assert_eq!(items.get(table, &key, true).await.ok(), Some(Some(item)));
        let page = Page::default();
        let pages = Answers::reads(Found::Page(page.clone()));
        assert_eq!(pages.query(table, &query).await.ok(), Some(page.clone()));
        let indexed = pages.query_index(table, &index).await.ok();
        assert_eq!(indexed, Some(page.clone()));
        assert_eq!(pages.scan(table, &scan).await.ok(), Some(page));

        let mismatched = [
            pages.get(table, &key, false).await.map(drop),
            items.query(table, &query).await.map(drop),
            items.query_index(table, &index).await.map(drop),
            items.scan(table, &scan).await.map(drop),
        ];
        for answer in mismatched {
            let Err(StoreError::Backend(message)) = answer else {
                panic!("not a backend error: {answer:?}");
            };
            assert!(message.starts_with("the store answered a"), "{message}");
        }
    }

    #[test]
    fn only_gets_and_table_queries_read_consistently() {
        let key = Key::new("USER#u", "A");
        let query = Query::partition("USER#u");
        let index = IndexQuery::partition("GSI1", "TYPE#goal");
        let get = SingleRead::Get {
            key: &key,
            consistent: true,
        };
        assert!(get.consistent());
        assert_eq!(SingleRead::Query(&query).consistent(), query.consistent);
        assert!(!SingleRead::QueryIndex(&index).consistent());
        assert_eq!(SingleRead::QueryIndex(&index).kind(), "an index query");
    }
}
