//! Account erasure as a chain (`projectors::erasure::ERASURE_CHAIN`): each eraser is set
//! off by the link before it only, carries on when the deletion was requested and what
//! was drained, and identity's completer completes the erasure only once every link is
//! drained. Also: the stream each erasure subscription reads, and how many target
//! tables read each stream.

use events_schema::Context;
use events_schema::envelope::{EventEnvelope, outbox_event};
use events_schema::events::erasure::PartitionDrained;
use events_schema::events::identity::AccountDeletionRequested;
use events_schema::ids::{EventId, UserId};
use events_schema::time::Timestamp;
use infra::Store;
use infra::embedded::EmbeddedStore;
use infra::observed::{Observed, Observer, Row, Write};
use infra::store::{Item, Key};
use infra::table::{Table, contexts};
use projectors::Projector;
use projectors::erasure::{ERASURE_CHAIN, LAST, drained_attr, is_complete};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

const USER: &str = "01M8YCQX5B39R9Q5TX3FAWYCCK";
const REQUESTED_AT: &str = "2026-12-03T16:45:29.165Z";

/// Records the events committed through the store (an eraser's `PartitionDrained` is
/// removed from its outbox right after it is written).
#[derive(Default)]
struct Published(Mutex<Vec<EventEnvelope>>);

#[async_trait::async_trait]
impl Observer for Published {
    type Note = Vec<EventEnvelope>;

    async fn before(&self, write: Write<'_>) -> Self::Note {
        let put = |row: Row<'_>| match row {
            Row::Put { item, .. } => outbox_event(item)?.ok(),
            _ => None,
        };
        write.rows().into_iter().filter_map(put).collect()
    }

    fn written(&self, events: Self::Note) {
        if let Ok(mut published) = self.0.lock() {
            published.extend(events);
        }
    }
}

struct Harness {
    store: Arc<Observed<Published>>,
    _dir: tempfile::TempDir,
}

impl Harness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let embedded: Arc<dyn Store> =
            Arc::new(EmbeddedStore::open(dir.path()).expect("embedded store"));
        Self {
            store: Arc::new(Observed::new(embedded, Published::default())),
            _dir: dir,
        }
    }

    fn shared(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    fn subscription(&self, name: &str) -> Arc<dyn Projector> {
        projectors::registry::find(self.shared(), name)
            .unwrap_or_else(|| panic!("no subscription {name}"))
    }

    /// The events published since the last call.
    fn published(&self) -> Vec<EventEnvelope> {
        self.store
            .observer()
            .0
            .lock()
            .map(|mut e| std::mem::take(&mut *e))
            .unwrap_or_default()
    }

    async fn tombstone(&self, table: Context) -> Option<Item> {
        self.store
            .get(table, &Key::tombstone(&user()), true)
            .await
            .expect("tombstone read")
    }

    async fn put(&self, table: Context, item: Value) {
        let Value::Object(item) = item else {
            panic!("an item is an object");
        };
        self.store.put(table, item, None).await.expect("seeded");
    }
}

fn user() -> UserId {
    UserId::parse(USER).expect("a user id")
}

fn at(raw: &str) -> Timestamp {
    Timestamp::parse(raw).expect("a timestamp")
}

fn deletion_requested() -> EventEnvelope {
    let payload = AccountDeletionRequested {
        email: "ana@example.com".into(),
    };
    EventEnvelope::new(Some(user()), at(REQUESTED_AT), &payload).expect("event")
}

/// `context`'s `PartitionDrained`, as its eraser publishes it.
fn drained(context: Context, drained: &[Context]) -> EventEnvelope {
    let payload = PartitionDrained {
        context,
        items_deleted: 0,
        requested_at: at(REQUESTED_AT),
        drained: drained.to_vec(),
    };
    let mut event =
        EventEnvelope::new(Some(user()), at("2026-12-03T16:46:00.000Z"), &payload).expect("event");
    event.context = context;
    event
}

/// The chain up to `context`, included.
fn chain_through(context: Context) -> Vec<Context> {
    let end = ERASURE_CHAIN
        .iter()
        .position(|c| *c == context)
        .expect("a link");
    ERASURE_CHAIN[..=end].to_vec()
}

fn payload_of(event: &EventEnvelope) -> PartitionDrained {
    event.decode().expect("a PartitionDrained")
}

#[test]
fn every_link_reads_the_stream_of_the_link_before_and_the_completer_the_last() {
    let found: BTreeMap<String, (Context, Context)> = projectors::registry::described()
        .iter()
        .filter(|s| s.name().starts_with("erase-") || s.name().ends_with("-erasure"))
        .map(|s| (s.name().to_owned(), (s.source(), s.target())))
        .collect();
    let mut expected = BTreeMap::new();
    let mut before = Context::Identity;
    for link in ERASURE_CHAIN {
        expected.insert(format!("erase-{link}"), (before, link));
        before = link;
    }
    expected.insert(
        "identity-from-dashboard-erasure".to_owned(),
        (LAST, Context::Identity),
    );
    assert_eq!(found, expected);
    assert_eq!(LAST, Context::Dashboard);
}

#[test]
fn no_stream_is_read_for_more_than_four_target_tables() {
    let mut readers: BTreeMap<Context, BTreeSet<Context>> = BTreeMap::new();
    for subscription in projectors::registry::described() {
        readers
            .entry(subscription.source())
            .or_default()
            .insert(subscription.target());
    }
    use Context::*;
    let expected: BTreeMap<Context, BTreeSet<Context>> = [
        (Identity, vec![Dashboard, Integrations]),
        (Nutrition, vec![Activity, Dashboard, Goals, Insights]),
        (Activity, vec![Dashboard, Goals, Insights, Nutrition]),
        (Sleep, vec![Dashboard, Goals, Insights]),
        (Goals, vec![Dashboard, Goals, Sleep]),
        (Integrations, vec![Dashboard, Activity, Sleep]),
        (Insights, vec![Dashboard]),
        (Dashboard, vec![Identity]),
    ]
    .into_iter()
    .map(|(source, targets)| (source, targets.into_iter().collect()))
    .collect();
    assert_eq!(readers, expected);
    for (source, targets) in &readers {
        assert!(
            targets.len() <= 4,
            "{source}'s stream is read for {targets:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_link_starts_on_the_deletion_request_and_ignores_partition_drained() {
    let h = Harness::new();
    let first = h.subscription("erase-integrations");
    assert_eq!(first.source(), Context::Identity);
    for context in Context::ALL {
        first
            .apply(&drained(context, &chain_through(LAST)))
            .await
            .expect("ignored");
    }
    assert_eq!(h.tombstone(Context::Integrations).await, None);
    assert!(h.published().is_empty());

    let request = deletion_requested();
    first.apply(&request).await.expect("erased");
    let tombstone = h.tombstone(Context::Integrations).await.expect("tombstone");
    assert_eq!(tombstone["status"], json!("drained"));
    assert_eq!(tombstone["requested_at"], json!(REQUESTED_AT));
    let published = h.published();
    assert_eq!(published.len(), 1, "{published:?}");
    assert_eq!(published[0].context, Context::Integrations);
    let event = payload_of(&published[0]);
    assert_eq!(event.context, Context::Integrations);
    assert_eq!(event.requested_at, at(REQUESTED_AT));
    assert_eq!(event.drained, vec![Context::Integrations]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_middle_link_acts_only_on_its_predecessors_partition_drained() {
    let h = Harness::new();
    let nutrition = h.subscription("erase-nutrition");
    assert_eq!(nutrition.source(), Context::Activity);
    h.put(
        Context::Nutrition,
        json!({"pk": format!("USER#{USER}"), "sk": "MEAL#M1", "name": "Oats"}),
    )
    .await;
    // Not its trigger: the deletion request, and any other context's PartitionDrained
    // (the link after it, the first link, itself).
    nutrition
        .apply(&deletion_requested())
        .await
        .expect("ignored");
    for other in [Context::Integrations, Context::Nutrition, Context::Goals] {
        nutrition
            .apply(&drained(other, &chain_through(other)))
            .await
            .expect("ignored");
    }
    assert_eq!(h.tombstone(Context::Nutrition).await, None);
    assert!(h.published().is_empty());

    let before = drained(Context::Activity, &chain_through(Context::Activity));
    nutrition.apply(&before).await.expect("erased");
    let tombstone = h.tombstone(Context::Nutrition).await.expect("tombstone");
    assert_eq!(tombstone["status"], json!("drained"));
    assert_eq!(tombstone["requested_at"], json!(REQUESTED_AT));
    let published = h.published();
    assert_eq!(published.len(), 1, "{published:?}");
    let event = payload_of(&published[0]);
    assert_eq!(event.context, Context::Nutrition);
    assert_eq!(event.items_deleted, 1);
    assert_eq!(event.requested_at, at(REQUESTED_AT));
    assert_eq!(event.drained, chain_through(Context::Nutrition));

    // Redelivered: the same event again (its id derived from the request), nothing left.
    nutrition.apply(&before).await.expect("finished again");
    let again = h.published();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].event_id, published[0].event_id);
    let seed = format!("{}|nutrition|drained", user());
    assert_eq!(
        published[0].event_id,
        EventId::derived(&seed, at(REQUESTED_AT))
    );
    assert_eq!(payload_of(&again[0]).drained, event.drained);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_v1_partition_drained_sets_off_the_next_link_as_requested_when_it_happened() {
    let h = Harness::new();
    let nutrition = h.subscription("erase-nutrition");
    let mut v1 = drained(Context::Activity, &[]);
    v1.schema_version = 1;
    v1.payload = json!({"context": "activity", "items_deleted": 2});
    nutrition.apply(&v1).await.expect("upcast and erased");
    let tombstone = h.tombstone(Context::Nutrition).await.expect("tombstone");
    assert_eq!(tombstone["requested_at"], json!(v1.occurred_at));
    let published = h.published();
    let event = payload_of(&published[0]);
    assert_eq!(event.requested_at, v1.occurred_at);
    assert_eq!(event.drained, vec![Context::Activity, Context::Nutrition]);
}

/// Identity's state once an account's deletion was requested: the profile (deletion
/// requested), the email's reservation and the tombstone.
async fn deletion_pending(h: &Harness) {
    let pk = format!("USER#{USER}");
    h.put(
        Context::Identity,
        json!({"pk": pk, "sk": "PROFILE", "email": "ana@example.com",
               "status": "deletion_requested", "version": 2}),
    )
    .await;
    h.put(
        Context::Identity,
        json!({"pk": "EMAIL#ana@example.com", "sk": "EMAIL", "user_id": USER}),
    )
    .await;
    let mut tombstone = Key::tombstone(&user()).to_item();
    tombstone.insert("status".into(), json!("erasing"));
    tombstone.insert("requested_at".into(), json!(REQUESTED_AT));
    h.store
        .put(Context::Identity, tombstone, None)
        .await
        .expect("tombstone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_completer_completes_only_when_every_link_is_drained() {
    let h = Harness::new();
    deletion_pending(&h).await;
    let completer = h.subscription("identity-from-dashboard-erasure");
    let identity = Table::<contexts::Identity>::new(h.shared());
    let profile = Key::new(format!("USER#{USER}"), "PROFILE");

    // The chain's end, but goals never reported: ticked off, not complete.
    let partial: Vec<Context> = chain_through(LAST)
        .into_iter()
        .filter(|c| *c != Context::Goals)
        .collect();
    completer
        .apply(&drained(LAST, &partial))
        .await
        .expect("ticked");
    assert!(!is_complete(&identity, &user()).await.expect("status"));
    let tombstone = h.tombstone(Context::Identity).await.expect("tombstone");
    for context in &partial {
        assert_eq!(tombstone.get(&drained_attr(*context)), Some(&json!(true)));
    }
    assert_eq!(tombstone.get(&drained_attr(Context::Goals)), None);
    assert!(
        h.store
            .get(Context::Identity, &profile, true)
            .await
            .expect("read")
            .is_some()
    );

    // Another context's event naming the whole chain is not the chain's end.
    completer
        .apply(&drained(Context::Insights, &chain_through(LAST)))
        .await
        .expect("ignored");
    assert!(!is_complete(&identity, &user()).await.expect("status"));

    // Every link drained: complete, the profile and the reservation gone.
    let whole = drained(LAST, &chain_through(LAST));
    completer.apply(&whole).await.expect("completed");
    assert!(is_complete(&identity, &user()).await.expect("status"));
    assert_eq!(
        h.store
            .get(Context::Identity, &profile, true)
            .await
            .expect("read"),
        None
    );
    let reservation = Key::new("EMAIL#ana@example.com", "EMAIL");
    assert_eq!(
        h.store
            .get(Context::Identity, &reservation, true)
            .await
            .expect("read"),
        None
    );
    // Redelivered: still complete, no error.
    completer.apply(&whole).await.expect("redelivered");
    assert!(is_complete(&identity, &user()).await.expect("status"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_run_link_by_link_completes_the_erasure() {
    let h = Harness::new();
    deletion_pending(&h).await;
    let subscriptions = projectors::registry::all(h.shared());
    let mut round = vec![deletion_requested()];
    let mut links = 0;
    while !round.is_empty() {
        for event in &round {
            for s in subscriptions.iter().filter(|s| s.source() == event.context) {
                s.apply(event).await.expect("applied");
            }
        }
        round = h.published();
        links += round.len();
    }
    assert_eq!(links, ERASURE_CHAIN.len());
    let identity = Table::<contexts::Identity>::new(h.shared());
    assert!(is_complete(&identity, &user()).await.expect("status"));
    for link in ERASURE_CHAIN {
        let tombstone = h.tombstone(link).await.expect("tombstone");
        assert_eq!(tombstone["status"], json!("drained"), "{link}");
        assert_eq!(tombstone["requested_at"], json!(REQUESTED_AT), "{link}");
    }
}
