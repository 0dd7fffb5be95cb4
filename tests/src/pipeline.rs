//! The event pipeline on a fresh embedded store, for tests: the in-process workers
//! (fed by the change log) and waits on what they project, with a deadline, woken by
//! commits (never by a fixed sleep); and subscription handlers with their dead letters.

use events_schema::Context;
use infra::Store;
use infra::dlq::{DeadLetter, DeadLetterStore};
use infra::embedded::EmbeddedStore;
use infra::feed::embedded::EmbeddedFeed;
use infra::store::{Item, Key};
use projectors::Projector;
use projectors::pipeline::Pipeline;
use projectors::replay::{Mode, Quiet, Replayed};
use projectors::runtime::Handler;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a projection may take to show before a wait fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// A fresh embedded store, and the directory that keeps it alive.
pub fn open() -> (Arc<EmbeddedStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    (
        Arc::new(EmbeddedStore::open(dir.path()).expect("store")),
        dir,
    )
}

/// Replays every user's events through every subscription into `store`, as
/// `vitals replay` does but quietly and in batches of `batch_events` (small ones make
/// a user's rows folded in one batch be read back by the next).
pub async fn replay_all(
    store: Arc<dyn Store>,
    batch_events: usize,
    mode: Mode,
) -> Result<Replayed, infra::StoreError> {
    let subscriptions = projectors::registry::projections(store.clone());
    projectors::replay::replay_with(store, &subscriptions, None, &Quiet, batch_events, mode).await
}

/// Every subscription's worker on `store`, fed by its change log.
pub fn start(store: &Arc<EmbeddedStore>) -> Pipeline {
    let shared: Arc<dyn Store> = store.clone();
    Pipeline::start(
        shared.clone(),
        Arc::new(EmbeddedFeed::new(store.clone())),
        projectors::registry::all(shared),
    )
}

/// As [`start`], with the projectors (and their dead letters) on `projected`: `store`
/// seen through a wrapper, such as a recording of their calls.
pub fn start_on(store: &Arc<EmbeddedStore>, projected: Arc<dyn Store>) -> Pipeline {
    Pipeline::start(
        projected.clone(),
        Arc::new(EmbeddedFeed::new(store.clone())),
        projectors::registry::all(projected),
    )
}

/// Waits until every worker of `pipeline` has applied everything committed to `store`.
pub async fn wait_caught_up(pipeline: &Pipeline, store: &EmbeddedStore) {
    let deadline = Instant::now() + DEADLINE;
    while !pipeline.caught_up().await.expect("lag") {
        assert!(Instant::now() < deadline, "the workers did not catch up");
        let mut commits = store.commits();
        let _ = tokio::time::timeout(Duration::from_millis(200), commits.changed()).await;
    }
}

/// Waits until the row at `key` exists and holds `expected` at the dotted `path`,
/// waking on every commit; fails after the deadline.
pub async fn wait_for(
    store: &EmbeddedStore,
    table: Context,
    key: Key,
    path: &str,
    expected: impl Into<Value>,
) -> Item {
    let expected = expected.into();
    let deadline = Instant::now() + DEADLINE;
    let mut commits = store.commits();
    loop {
        commits.borrow_and_update();
        if let Some(row) = store.get(table, &key, true).await.expect("get")
            && at(&row, path) == expected
        {
            return row;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "{table} {} {} did not converge in time",
            key.pk,
            key.sk
        );
        let _ = tokio::time::timeout(left, commits.changed()).await;
    }
}

/// The value at a dotted path of a row, if it has one.
pub fn value_at<'a>(row: &'a Item, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut value = row.get(parts.next()?)?;
    for part in parts {
        value = value.get(part)?;
    }
    Some(value)
}

/// The value at a dotted path of a row (null when absent).
pub fn at(row: &Item, path: &str) -> Value {
    value_at(row, path).cloned().unwrap_or_default()
}

/// One user's partition of the store, to wait on its projected rows.
pub struct UserRows<'a> {
    pub store: &'a EmbeddedStore,
    pub pk: String,
}

impl UserRows<'_> {
    /// Waits until the user's row `sk` of `table` holds `expected` at `path` (see
    /// [`wait_for`]).
    pub async fn wait(
        &self,
        table: Context,
        sk: impl Into<String>,
        path: &str,
        expected: impl Into<Value>,
    ) -> Item {
        wait_for(self.store, table, Key::new(&self.pk, sk), path, expected).await
    }
}

/// A fresh embedded store as a shared store, a dead-letter store on its tables, and the
/// directory that keeps it alive.
pub fn open_with_dead_letters() -> (Arc<dyn Store>, DeadLetterStore, tempfile::TempDir) {
    let (store, dir) = open();
    let shared: Arc<dyn Store> = store;
    (shared.clone(), DeadLetterStore::Tables(shared), dir)
}

/// A handler for each subscription on `store` that `wanted` picks, dead-lettering to the
/// queue of its target table in `dead_letters`.
pub fn handlers(
    store: &Arc<dyn Store>,
    dead_letters: &DeadLetterStore,
    wanted: impl Fn(&dyn Projector) -> bool,
) -> Vec<Handler> {
    projectors::registry::all(store.clone())
        .into_iter()
        .filter(|s| wanted(s.as_ref()))
        .map(|s| {
            let dlq = dead_letters.queue_for(s.target());
            Handler::new(s, dlq)
        })
        .collect()
}

/// The dead letters (ten at most) that `handler`'s subscription holds.
pub async fn letters_of(dead_letters: &DeadLetterStore, handler: &Handler) -> Vec<DeadLetter> {
    let projector = handler.projector();
    dead_letters
        .queue_for(projector.target())
        .list(projector.name(), 10)
        .await
        .expect("letters")
}
