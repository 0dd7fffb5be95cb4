//! A storage wrapper that passes every request on to the store it wraps and shows an
//! [`Observer`] each write twice: before it is passed on (where a test may hold it, or
//! refuse it with an error) and once it took effect (what a log line or a test's change
//! feed records), and each read before it is passed on. One forwarding implementation
//! of the port serves every such wrapper: the write log of `vitals serve`
//! ([`crate::logged`]), the tests' access-pattern recording ([`crate::recorded`]), event
//! capture, interleaving gates and injected faults.

use crate::store::{
    BatchWrite, Condition, Found, Item, Key, SingleRead, SingleWrite, Store, StoreError,
    TransactAction, Update, Written,
};
use async_trait::async_trait;
use events_schema::Context;
use std::sync::Arc;

/// One row a write addresses (a transaction's condition checks are not rows).
#[derive(Clone, Copy)]
pub enum Row<'a> {
    Put {
        table: Context,
        item: &'a Item,
    },
    Update {
        table: Context,
        key: &'a Key,
        update: &'a Update,
    },
    Delete {
        table: Context,
        key: &'a Key,
    },
}

impl<'a> Row<'a> {
    /// The row a single write of `table` writes.
    pub fn single(table: Context, write: &'a SingleWrite) -> Self {
        match write {
            SingleWrite::Put { item } => Row::Put { table, item },
            SingleWrite::Update { key, update } => Row::Update { table, key, update },
            SingleWrite::Delete { key } => Row::Delete { table, key },
        }
    }

    /// The row an action of a transaction writes (a condition check writes none).
    pub fn of(action: &'a TransactAction) -> Option<Self> {
        match action {
            TransactAction::Put { table, item, .. } => Some(Row::Put {
                table: *table,
                item,
            }),
            TransactAction::Update {
                table, key, update, ..
            } => Some(Row::Update {
                table: *table,
                key,
                update,
            }),
            TransactAction::Delete { table, key, .. } => Some(Row::Delete { table: *table, key }),
            TransactAction::ConditionCheck { .. } => None,
        }
    }
}

/// A write request: a single row, a transaction, or a batch of unconditional writes.
pub enum Write<'a> {
    Single(Row<'a>),
    Transaction(&'a [TransactAction]),
    Batch {
        table: Context,
        writes: &'a [BatchWrite],
    },
}

impl<'a> Write<'a> {
    /// The rows it writes, in request order.
    pub fn rows(&self) -> Vec<Row<'a>> {
        match self {
            Write::Single(row) => vec![*row],
            Write::Transaction(actions) => actions.iter().filter_map(Row::of).collect(),
            Write::Batch { table, writes } => writes
                .iter()
                .map(|write| match write {
                    BatchWrite::Put(item) => Row::Put {
                        table: *table,
                        item,
                    },
                    BatchWrite::Delete(key) => Row::Delete { table: *table, key },
                })
                .collect(),
        }
    }
}

/// What a wrapper does around the writes it passes on.
#[async_trait]
pub trait Observer: Send + Sync {
    /// What the observer keeps of a write until it took effect.
    type Note: Send;

    /// The error to answer a write with instead of passing it on, if any: fault
    /// injection for tests (a transaction cancelled as a conflict, as DynamoDB cancels
    /// one that meets another on the same item). Everything passes by default.
    fn refuses(&self, _write: &Write<'_>) -> Option<StoreError> {
        None
    }

    /// Sees a write before it is passed on (the request waits for it); a write that
    /// [`Observer::refuses`] turned away is not shown.
    async fn before(&self, write: Write<'_>) -> Self::Note;

    /// The write took effect (a refused or failed one is not reported).
    fn written(&self, note: Self::Note);

    /// A drain took effect and deleted `deleted` items of the partition `pk`.
    fn drained(&self, _table: Context, _pk: &str, _deleted: usize) {}

    /// Sees a read of `table` before it is passed on (nothing, by default).
    fn read(&self, _table: Context, _read: SingleRead<'_>) {}
}

/// See the module docs.
pub struct Observed<O> {
    inner: Arc<dyn Store>,
    observer: O,
}

impl<O: Observer> Observed<O> {
    pub fn new(inner: Arc<dyn Store>, observer: O) -> Self {
        Self { inner, observer }
    }

    /// The observer, to read what it recorded.
    pub fn observer(&self) -> &O {
        &self.observer
    }

    /// Shows the observer a write: its refusal, or its note for when it took effect.
    async fn seen(&self, write: Write<'_>) -> Result<O::Note, StoreError> {
        match self.observer.refuses(&write) {
            Some(refused) => Err(refused),
            None => Ok(self.observer.before(write).await),
        }
    }
}

#[async_trait]
impl<O: Observer> Store for Observed<O> {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.inner.register_metrics(registry);
    }

    async fn health(&self) -> Result<(), StoreError> {
        self.inner.health().await
    }

    async fn read(&self, table: Context, read: SingleRead<'_>) -> Result<Found, StoreError> {
        self.observer.read(table, read);
        self.inner.read(table, read).await
    }

    async fn write(
        &self,
        table: Context,
        write: SingleWrite,
        condition: Option<Condition>,
    ) -> Result<Written, StoreError> {
        let note = self.seen(Write::Single(Row::single(table, &write))).await?;
        let written = self.inner.write(table, write, condition).await?;
        self.observer.written(note);
        Ok(written)
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        let note = self.seen(Write::Transaction(&actions)).await?;
        self.inner.transact(actions).await?;
        self.observer.written(note);
        Ok(())
    }

    async fn write_batch(&self, table: Context, writes: Vec<BatchWrite>) -> Result<(), StoreError> {
        let batch = Write::Batch {
            table,
            writes: &writes,
        };
        let note = self.seen(batch).await?;
        self.inner.write_batch(table, writes).await?;
        self.observer.written(note);
        Ok(())
    }

    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        let deleted = self
            .inner
            .drain_partition_page(table, pk, page_size)
            .await?;
        self.observer.drained(table, pk, deleted);
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::EmbeddedStore;
    use crate::store::CancelReason;
    use std::sync::Mutex;

    /// Keeps what it is shown: `before <rows>` and `written <rows>`, `drained <n>`.
    #[derive(Default)]
    struct Journal(Mutex<Vec<String>>);

    impl Journal {
        fn push(&self, line: String) {
            if let Ok(mut lines) = self.0.lock() {
                lines.push(line);
            }
        }
        fn lines(&self) -> Vec<String> {
            self.0.lock().map(|l| l.clone()).unwrap_or_default()
        }
    }

    #[async_trait]
    impl Observer for Journal {
        type Note = String;

        async fn before(&self, write: Write<'_>) -> String {
            let sort_key = |row: Row<'_>| match row {
                Row::Put { item, .. } => {
                    format!("put {}", Key::of(item).map(|k| k.sk).unwrap_or_default())
                }
                Row::Update { key, .. } => format!("update {}", key.sk),
                Row::Delete { key, .. } => format!("delete {}", key.sk),
            };
            let rows: Vec<String> = write.rows().into_iter().map(sort_key).collect();
            let rows = rows.join(", ");
            self.push(format!("before {rows}"));
            rows
        }

        fn written(&self, rows: String) {
            self.push(format!("written {rows}"));
        }

        fn drained(&self, _: Context, _: &str, deleted: usize) {
            self.push(format!("drained {deleted}"));
        }
    }

    /// Refuses every transaction as a conflict; sees nothing.
    struct Conflicts;

    #[async_trait]
    impl Observer for Conflicts {
        type Note = ();

        fn refuses(&self, write: &Write<'_>) -> Option<StoreError> {
            let Write::Transaction(actions) = write else {
                return None;
            };
            let reasons = actions.iter().map(|_| CancelReason::Conflict).collect();
            Some(StoreError::TransactionCanceled { reasons })
        }

        async fn before(&self, _: Write<'_>) {}

        fn written(&self, _: ()) {}
    }

    #[tokio::test]
    async fn a_refused_write_answers_the_observers_error_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
        let observed = Observed::new(store.clone(), Conflicts);
        let (table, a, b) = (
            Context::Goals,
            Key::new("USER#u", "A"),
            Key::new("USER#u", "B"),
        );
        let put = |key: &Key| TransactAction::Put {
            table,
            item: key.to_item(),
            condition: None,
        };
        let refused = observed.transact(vec![put(&a), put(&b)]).await;
        assert!(
            matches!(
                &refused,
                Err(StoreError::TransactionCanceled { reasons })
                    if reasons == &[CancelReason::Conflict, CancelReason::Conflict]
            ),
            "{refused:?}"
        );
        assert_eq!(store.get(table, &a, true).await.expect("get"), None);
        // What it does not refuse passes on.
        observed.put(table, b.to_item(), None).await.expect("put");
        assert!(store.get(table, &b, true).await.expect("get").is_some());
    }

    #[tokio::test]
    async fn an_observer_sees_each_write_before_and_only_effective_ones_after() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
        let observed = Observed::new(store, Journal::default());
        let (table, a, b) = (
            Context::Goals,
            Key::new("USER#u", "A"),
            Key::new("USER#u", "B"),
        );

        // A put that takes effect is shown twice; the same put refused by its
        // condition only before.
        let new = Some(Condition::ItemNotExists);
        observed
            .put(table, a.to_item(), new.clone())
            .await
            .expect("put");
        let refused = observed.put(table, a.to_item(), new).await;
        assert!(matches!(refused, Err(StoreError::ConditionFailed { .. })));
        // A transaction's condition check is not a row.
        let actions = vec![
            TransactAction::ConditionCheck {
                table,
                key: a.clone(),
                condition: Condition::ItemExists,
            },
            TransactAction::Put {
                table,
                item: b.to_item(),
                condition: None,
            },
        ];
        observed.transact(actions).await.expect("transaction");
        observed.delete(table, &a, None).await.expect("delete");
        let drained = observed
            .drain_partition_page(table, "USER#u", 25)
            .await
            .expect("drain");

        assert_eq!(drained, 1);
        assert_eq!(
            observed.observer().lines(),
            [
                "before put A",
                "written put A",
                "before put A",
                "before put B",
                "written put B",
                "before delete A",
                "written delete A",
                "drained 1",
            ]
        );
    }
}
