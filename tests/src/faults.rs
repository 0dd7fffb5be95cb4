//! Store wrappers that steer what a test's writes meet: a gate that holds the first
//! matching write until the test lets it go (two writers interleave exactly as the test
//! says), and a transaction cancelled as a conflict (DynamoDB's answer when two
//! transactions meet on an item, which neither the embedded store nor the emulators
//! give).

use infra::observed::{Observed, Observer, Row, Write};
use infra::store::{CancelReason, Key, TransactAction};
use infra::{Store, StoreError};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A store that holds the first write with a row matching `paused` until `release` is
/// notified, and signals `reached` when it gets there: two workers' writes interleave
/// exactly as the test says.
pub type PausingStore = Observed<Gate>;

/// The [`Observer`] that holds the first matching write.
pub struct Gate {
    paused: fn(&Row<'_>) -> bool,
    armed: std::sync::atomic::AtomicBool,
    pub reached: tokio::sync::Notify,
    pub release: tokio::sync::Notify,
}

pub fn gated(inner: Arc<dyn Store>, paused: fn(&Row<'_>) -> bool) -> PausingStore {
    let gate = Gate {
        paused,
        armed: std::sync::atomic::AtomicBool::new(true),
        reached: tokio::sync::Notify::new(),
        release: tokio::sync::Notify::new(),
    };
    Observed::new(inner, gate)
}

#[async_trait::async_trait]
impl Observer for Gate {
    type Note = ();

    async fn before(&self, write: Write<'_>) {
        use std::sync::atomic::Ordering;
        let matches = write.rows().iter().any(self.paused);
        if matches && self.armed.swap(false, Ordering::SeqCst) {
            self.reached.notify_one();
            self.release.notified().await;
        }
    }

    fn written(&self, _: ()) {}
}

/// Whether a row puts, or updates an attribute `attr` of (any attribute if empty), a row
/// whose sort key starts with `prefix`.
pub fn writes_sort_key(row: &Row<'_>, prefix: &str, attr: &str) -> bool {
    match row {
        Row::Put { item, .. } => {
            item.get("sk")
                .and_then(Value::as_str)
                .is_some_and(|sk| sk.starts_with(prefix))
                && (attr.is_empty() || item.contains_key(attr))
        }
        Row::Update { key, update, .. } => {
            key.sk.starts_with(prefix) && (attr.is_empty() || update.set.contains_key(attr))
        }
        Row::Delete { .. } => false,
    }
}

/// Cancels the first transaction it sees as a conflict, as DynamoDB cancels one that
/// meets another transaction on the same item (the cancellation carries no item);
/// passes everything else on.
pub struct ConflictOnce {
    armed: AtomicBool,
    met: Met,
}

/// Which actions of the cancelled transaction met the other one.
#[derive(Clone, Copy)]
enum Met {
    Every,
    /// The rows it writes that this matches.
    Rows(fn(&Row<'_>) -> bool),
    /// The condition checks (which write no row) on a key this matches.
    Checks(fn(&Key) -> bool),
}

impl ConflictOnce {
    /// `store`, its next transaction cancelled as a conflict on every action.
    pub fn on(store: Arc<dyn Store>) -> Arc<dyn Store> {
        Self::wrap(store, Met::Every)
    }

    /// `store`, its next transaction cancelled as a conflict on the rows `rows`
    /// matches only, every other action's reason `None` (what DynamoDB answers when one
    /// item of a transaction meets another transaction).
    pub fn at(store: Arc<dyn Store>, rows: fn(&Row<'_>) -> bool) -> Arc<dyn Store> {
        Self::wrap(store, Met::Rows(rows))
    }

    /// `store`, its next transaction cancelled as a conflict on its condition checks of
    /// the keys `keys` matches only, every other action's reason `None`.
    pub fn at_check(store: Arc<dyn Store>, keys: fn(&Key) -> bool) -> Arc<dyn Store> {
        Self::wrap(store, Met::Checks(keys))
    }

    fn wrap(store: Arc<dyn Store>, met: Met) -> Arc<dyn Store> {
        let armed = AtomicBool::new(true);
        Arc::new(Observed::new(store, Self { armed, met }))
    }

    fn reason(&self, action: &TransactAction) -> CancelReason {
        let met = match (self.met, action) {
            (Met::Every, _) => true,
            (Met::Checks(keys), TransactAction::ConditionCheck { key, .. }) => keys(key),
            (Met::Rows(rows), action) => Row::of(action).is_some_and(|row| rows(&row)),
            (Met::Checks(_), _) => false,
        };
        if met {
            CancelReason::Conflict
        } else {
            CancelReason::None
        }
    }
}

#[async_trait::async_trait]
impl Observer for ConflictOnce {
    type Note = ();

    fn refuses(&self, write: &Write<'_>) -> Option<StoreError> {
        let Write::Transaction(actions) = write else {
            return None;
        };
        self.armed.swap(false, Ordering::SeqCst).then(|| {
            let reasons: Vec<CancelReason> = actions.iter().map(|a| self.reason(a)).collect();
            // A matcher that meets nothing would cancel with no reason at all: a broken
            // test, to be named as such rather than read as the command's failure.
            assert!(
                reasons.contains(&CancelReason::Conflict),
                "ConflictOnce: no action of the transaction matched"
            );
            StoreError::TransactionCanceled { reasons }
        })
    }

    async fn before(&self, _: Write<'_>) {}

    fn written(&self, _: ()) {}
}

/// Refuses the first write with a row `rows` matches as throttled (the store briefly
/// unavailable, after its retries); passes everything else on.
pub struct ThrottledOnce {
    armed: AtomicBool,
    rows: fn(&Row<'_>) -> bool,
}

impl ThrottledOnce {
    pub fn at(store: Arc<dyn Store>, rows: fn(&Row<'_>) -> bool) -> Arc<dyn Store> {
        let armed = AtomicBool::new(true);
        Arc::new(Observed::new(store, Self { armed, rows }))
    }
}

#[async_trait::async_trait]
impl Observer for ThrottledOnce {
    type Note = ();

    fn refuses(&self, write: &Write<'_>) -> Option<StoreError> {
        let matches = write.rows().iter().any(self.rows);
        (matches && self.armed.swap(false, Ordering::SeqCst)).then_some(StoreError::Throttled)
    }

    async fn before(&self, _: Write<'_>) {}

    fn written(&self, _: ()) {}
}
