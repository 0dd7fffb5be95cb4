//! Dead-letter queues: where a subscription puts a record it could not process after its
//! retries, whole (not only its position), so `vitals redrive` can apply it later. The
//! table adapter keeps letters as `DLQ#<subscription>` rows in the subscriber's own
//! table (the embedded shape, and DynamoDB without SQS); [`SqsDlq`] keeps them in one SQS
//! queue per subscription (the AWS shape).
//!
//! Layout: `letter` holds the letter and the queue interface both adapters implement;
//! `table` and `sqs` are the adapters; [`DeadLetterStore`] picks one per subscriber.

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access;
mod letter;
mod sqs;
mod table;

pub use self::letter::{DeadLetter, DeadLetterQueue};
pub use self::sqs::{SqsDlq, read_on};
pub use self::table::TableDlq;

use crate::store::Store;
use events_schema::Context;
use std::sync::Arc;

/// Where each subscriber's dead letters are kept: rows of its own table (the embedded
/// shape, and DynamoDB without SQS), or one SQS queue per subscription (the AWS shape).
#[derive(Clone)]
pub enum DeadLetterStore {
    Tables(Arc<dyn Store>),
    Sqs(SqsDlq),
}

impl std::fmt::Debug for DeadLetterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeadLetterStore::Tables(_) => f.write_str("DeadLetterStore::Tables"),
            DeadLetterStore::Sqs(sqs) => write!(f, "DeadLetterStore::Sqs({})", sqs.prefix),
        }
    }
}

impl DeadLetterStore {
    /// The queue of the subscriptions that write `target`'s table.
    pub fn queue_for(&self, target: Context) -> Arc<dyn DeadLetterQueue> {
        match self {
            DeadLetterStore::Tables(store) => Arc::new(TableDlq::new(store.clone(), target)),
            DeadLetterStore::Sqs(sqs) => Arc::new(sqs.clone()),
        }
    }
}
