//! The storage port: what command, projector and query code may ask of a table.
//!
//! The operations are DynamoDB's (get, query, query an index, conditional single
//! writes, all-or-nothing transactions of up to 100 actions), with the same semantics on
//! every backend: sort keys compare by UTF-8 bytes, indexes are sparse, items whose TTL
//! attribute is in the past are never returned by reads.

#[cfg(test)]
mod answers;
mod cursor;
mod error;
pub(crate) mod item;
pub(crate) mod plan;
mod read;
mod request;
mod write;

pub use cursor::Cursor;
pub use error::{CancelReason, StoreError};
pub use item::{Item, Key, is_expired, now_epoch_seconds, validate_index_attributes};
pub use read::{Found, SingleRead};
pub use request::{
    BatchWrite, Condition, IndexQuery, MAX_TRANSACTION_ACTIONS, Page, Query, Scan,
    SortKeyCondition, TransactAction, Update, batch_chunks,
};
pub use write::{SingleWrite, Written};

use async_trait::async_trait;
use events_schema::Context;

/// The largest page a query returns when no limit is given, in item bytes (as DynamoDB).
pub const MAX_PAGE_BYTES: usize = 1024 * 1024;

/// The largest item, in bytes of its attribute names and values (as DynamoDB).
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// The storage port. Every method addresses one context's table.
#[async_trait]
pub trait Store: Send + Sync {
    /// The backend's name, such as `embedded` or `dynamodb`.
    fn backend(&self) -> &'static str;

    /// Checks that the backend answers.
    async fn health(&self) -> Result<(), StoreError>;

    /// Registers the backend's own metrics (requests, throttles, consumed capacity), if
    /// it keeps any, as they are now, for one scrape of `/metrics`.
    fn register_metrics(&self, _registry: &mut prometheus_client::registry::Registry) {}

    /// Answers one read ([`Found`]). What a backend or wrapper implements; callers use
    /// [`Store::get`], [`Store::query`], [`Store::query_index`] and [`Store::scan`].
    async fn read(&self, table: Context, read: SingleRead<'_>) -> Result<Found, StoreError>;

    /// Reads one item. `consistent` asks for a strongly consistent read.
    async fn get(
        &self,
        table: Context,
        key: &Key,
        consistent: bool,
    ) -> Result<Option<Item>, StoreError> {
        let read = SingleRead::Get { key, consistent };
        self.read(table, read).await?.into_item()
    }

    /// Reads one page of a partition.
    async fn query(&self, table: Context, query: &Query) -> Result<Page, StoreError> {
        let read = SingleRead::Query(query);
        self.read(table, read).await?.into_page("a query")
    }

    /// Reads one page of a secondary index (eventually consistent).
    async fn query_index(&self, table: Context, query: &IndexQuery) -> Result<Page, StoreError> {
        let read = SingleRead::QueryIndex(query);
        self.read(table, read).await?.into_page("an index query")
    }

    /// Reads one page of a whole table or index (see [`Scan`]): operators' tools only.
    async fn scan(&self, table: Context, scan: &Scan) -> Result<Page, StoreError> {
        let read = SingleRead::Scan(scan);
        self.read(table, read).await?.into_page("a scan")
    }

    /// Applies one single-item write, if `condition` holds on the current item; answers
    /// with what its kind returns ([`Written`]). What a backend or wrapper implements;
    /// callers use [`Store::put`], [`Store::update`] and [`Store::delete`].
    async fn write(
        &self,
        table: Context,
        write: SingleWrite,
        condition: Option<Condition>,
    ) -> Result<Written, StoreError>;

    /// Writes a whole item, if `condition` holds on the current one.
    async fn put(
        &self,
        table: Context,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError> {
        let write = SingleWrite::Put { item };
        match self.write(table, write, condition).await? {
            Written::Put => Ok(()),
            other => Err(other.mismatch("a put")),
        }
    }

    /// Sets and removes attributes (creating the item if absent), if `condition` holds;
    /// returns the item as written.
    async fn update(
        &self,
        table: Context,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        let write = SingleWrite::Update {
            key: key.clone(),
            update,
        };
        match self.write(table, write, condition).await? {
            Written::Updated(item) => Ok(item),
            other => Err(other.mismatch("an update")),
        }
    }

    /// Deletes an item, if `condition` holds; returns the item it deleted.
    async fn delete(
        &self,
        table: Context,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        let write = SingleWrite::Delete { key: key.clone() };
        match self.write(table, write, condition).await? {
            Written::Deleted(old) => Ok(old),
            other => Err(other.mismatch("a delete")),
        }
    }

    /// Applies every action or none. At most [`MAX_TRANSACTION_ACTIONS`] actions, no
    /// two on the same item. A failed condition cancels the whole transaction and is
    /// reported per action in [`StoreError::TransactionCanceled`].
    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError>;

    /// Writes and deletes items of one table unconditionally, in as few requests as
    /// the backend allows: what a rebuild uses to write its final rows. Each write is
    /// atomic, the batch as a whole is not (DynamoDB's `BatchWriteItem` is not), and no
    /// two writes may address the same item. The default takes transactions of
    /// [`MAX_TRANSACTION_ACTIONS`]; the backends do better.
    async fn write_batch(&self, table: Context, writes: Vec<BatchWrite>) -> Result<(), StoreError> {
        for chunk in batch_chunks(table, writes, MAX_TRANSACTION_ACTIONS) {
            self.transact(chunk).await?;
        }
        Ok(())
    }

    /// Deletes up to `page_size` items of the partition `pk` (expired ones included)
    /// and returns how many it deleted; 0 means the partition is empty.
    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError>;
}

/// The OpenMetrics text of what `store` registers ([`Store::register_metrics`]).
pub fn metrics_text(store: &dyn Store) -> String {
    let mut registry = prometheus_client::registry::Registry::default();
    store.register_metrics(&mut registry);
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &registry) {
        Ok(()) => text,
        Err(_) => String::new(),
    }
}

/// Deletes every item of a partition, one page at a time; returns how many.
pub async fn drain_partition(
    store: &dyn Store,
    table: Context,
    pk: &str,
) -> Result<usize, StoreError> {
    let mut total = 0;
    loop {
        let deleted = store.drain_partition_page(table, pk, 25).await?;
        if deleted == 0 {
            return Ok(total);
        }
        total += deleted;
    }
}
