//! A store for the tests of the port's provided methods (`get`, `put` and the others):
//! it answers every read and every single write with the answer it was given, and does
//! nothing else.

use super::{
    Condition, Found, SingleRead, SingleWrite, Store, StoreError, TransactAction, Written,
};
use async_trait::async_trait;
use events_schema::Context;

/// See the module docs.
pub(crate) struct Answers {
    found: Found,
    written: Written,
}

impl Answers {
    /// Answers every read with `found`.
    pub(crate) fn reads(found: Found) -> Self {
        Self {
            found,
            written: Written::Put,
        }
    }

    /// Answers every single write with `written`.
    pub(crate) fn writes(written: Written) -> Self {
        Self {
            found: Found::Item(None),
            written,
        }
    }
}

#[async_trait]
impl Store for Answers {
    fn backend(&self) -> &'static str {
        "answers"
    }
    async fn health(&self) -> Result<(), StoreError> {
        Ok(())
    }
    async fn read(&self, _: Context, _: SingleRead<'_>) -> Result<Found, StoreError> {
        Ok(self.found.clone())
    }
    async fn write(
        &self,
        _: Context,
        _: SingleWrite,
        _: Option<Condition>,
    ) -> Result<Written, StoreError> {
        Ok(self.written.clone())
    }
    async fn transact(&self, _: Vec<TransactAction>) -> Result<(), StoreError> {
        Ok(())
    }
    async fn drain_partition_page(
        &self,
        _: Context,
        _: &str,
        _: usize,
    ) -> Result<usize, StoreError> {
        Ok(0)
    }
}
