//! The projector fixture harness. A fixture (`tests/fixtures/*.json`) names the
//! subscriptions under test, seed rows, the events delivered (written compactly: type,
//! user, payload; the harness fills in the rest of the envelope) and the rows expected
//! afterwards. Every fixture is run under several deliveries (in order, every event
//! twice, seeded shuffles, a batch that fails halfway and is retried) and every delivery
//! must leave exactly the same rows, which must match the expectation. Each projector
//! writes through [`DeclaredWrites`]: a row outside its subscription's declared kinds
//! (or outside its own table) fails the fixture.

use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::events::{activity, goals, identity, integrations, nutrition, sleep};
use events_schema::ids::{EventId, UserId};
use events_schema::time::Timestamp;
use infra::observed::{Observed, Observer, Row, Write};
use infra::store::{Item, Query};
use infra::{Store, StoreError};
use projectors::Projector;
use projectors::projector::Subscription;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, Deserialize)]
pub struct Fixture {
    pub description: String,
    pub subscriptions: Vec<String>,
    /// Rows present before any event (in the subscribers' tables).
    #[serde(default)]
    pub seed: Vec<SeedRow>,
    pub events: Vec<FixtureEvent>,
    /// Per table and partition, the rows after delivery: sort key -> the attributes
    /// that must match (dotted paths allowed; a `null` value means the attribute must be
    /// absent), or `null` for a row that must not exist. A sort key ending in `*` stands
    /// for exactly one row with that prefix (for ids the projectors derive). The
    /// partition must hold exactly the rows listed.
    pub expect: BTreeMap<String, BTreeMap<String, ExpectedRows>>,
}

/// Sort key -> attributes that must match, or `None` for a row that must not exist.
pub type ExpectedRows = BTreeMap<String, Option<BTreeMap<String, Value>>>;

#[derive(Debug, Clone, Deserialize)]
pub struct SeedRow {
    pub table: Context,
    pub item: Item,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FixtureEvent {
    #[serde(rename = "type")]
    pub event_type: String,
    pub user: Option<String>,
    pub payload: Value,
    /// Defaults to a time derived from the event's position in the fixture.
    pub recorded_at: Option<Timestamp>,
    /// The publishing context, for events every context publishes (`PartitionDrained`);
    /// otherwise known from the event type.
    pub context: Option<Context>,
    /// The payload's schema version; 1 unless given (an older payload is upcast as a
    /// stored one would be).
    pub version: Option<u32>,
}

fn context_of(event_type: &str) -> Option<Context> {
    let known: [(&[&str], Context); 6] = [
        (identity::EVENT_TYPES, Context::Identity),
        (nutrition::EVENT_TYPES, Context::Nutrition),
        (activity::EVENT_TYPES, Context::Activity),
        (sleep::EVENT_TYPES, Context::Sleep),
        (goals::EVENT_TYPES, Context::Goals),
        (integrations::EVENT_TYPES, Context::Integrations),
    ];
    known
        .iter()
        .find(|(types, _)| types.contains(&event_type))
        .map(|(_, c)| *c)
}

impl Fixture {
    pub fn load(path: &std::path::Path) -> Self {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The envelopes, with deterministic ids and times.
    pub fn envelopes(&self) -> Vec<EventEnvelope> {
        let base = Timestamp::parse("2026-03-01T00:00:00.000Z")
            .expect("valid")
            .millis();
        self.events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let context = e
                    .context
                    .or_else(|| context_of(&e.event_type))
                    .unwrap_or_else(|| panic!("unknown event type {}", e.event_type));
                let at = e.recorded_at.unwrap_or_else(|| {
                    Timestamp::from_millis(base + i as i64 * 1000).expect("in range")
                });
                EventEnvelope {
                    event_id: EventId::parse(&format!("EVT{i:06}")).expect("valid id"),
                    event_type: e.event_type.clone(),
                    schema_version: e.version.unwrap_or(1),
                    context,
                    user_id: e
                        .user
                        .as_deref()
                        .map(|u| UserId::parse(u).expect("valid user")),
                    occurred_at: at,
                    recorded_at: at,
                    causation_id: None,
                    correlation_id: None,
                    payload: e.payload.clone(),
                }
            })
            .collect()
    }
}

/// A way of delivering a fixture's events.
#[derive(Debug, Clone)]
pub enum Delivery {
    InOrder,
    EveryEventTwice,
    Shuffled(u64),
    /// The first `n` events are applied, the batch "fails", and the whole batch is
    /// delivered again from the start.
    FailedBatchRetried(usize),
}

impl Delivery {
    pub fn all(events: usize) -> Vec<Delivery> {
        let mut all = vec![Delivery::InOrder, Delivery::EveryEventTwice];
        all.extend((1..=5).map(Delivery::Shuffled));
        all.push(Delivery::FailedBatchRetried(events / 2 + 1));
        all
    }

    pub fn order<T: Clone>(&self, events: &[T]) -> Vec<T> {
        match self {
            Delivery::InOrder => events.to_vec(),
            Delivery::EveryEventTwice => {
                events.iter().flat_map(|e| [e.clone(), e.clone()]).collect()
            }
            Delivery::Shuffled(seed) => {
                let mut shuffled = events.to_vec();
                let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for i in (1..shuffled.len()).rev() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    shuffled.swap(i, (state % (i as u64 + 1)) as usize);
                }
                shuffled
            }
            Delivery::FailedBatchRetried(n) => {
                let mut delivered = events[..(*n).min(events.len())].to_vec();
                delivered.extend_from_slice(events);
                delivered
            }
        }
    }
}

/// Refuses a write of a row its subscription does not declare (`Subscription::writes`)
/// or of another table than its target: the declarations the events index draws the
/// wiring from are kept true by every fixture.
pub struct DeclaredWrites(pub Subscription);

#[async_trait::async_trait]
impl Observer for DeclaredWrites {
    type Note = ();

    fn refuses(&self, write: &Write<'_>) -> Option<StoreError> {
        let declared = &self.0;
        write.rows().into_iter().find_map(|row| {
            let (table, sk) = match row {
                Row::Put { table, item } => (
                    table,
                    item.get("sk").and_then(Value::as_str).unwrap_or_default(),
                ),
                Row::Update { table, key, .. } | Row::Delete { table, key } => {
                    (table, key.sk.as_str())
                }
            };
            // Dead letters (`DLQ#<subscription>`) are the runtime's, kept in the
            // subscriber's table whatever it projects.
            let letter = sk.starts_with("DLQ#");
            (table != declared.target || !(declared.declares(sk) || letter)).then(|| {
                StoreError::Validation(format!(
                    "{} wrote {sk} in the {table} table, which its subscription does not \
                     declare (it writes {:?} in {})",
                    declared.name, declared.writes, declared.target
                ))
            })
        })
    }

    async fn before(&self, _write: Write<'_>) -> Self::Note {}

    fn written(&self, _note: Self::Note) {}
}

/// Every subscription of the registry on `store`, each built on its own
/// [`DeclaredWrites`] over `store` (the model-based test runs them so).
pub fn held_to_declared_writes(
    store: &Arc<dyn Store>,
    clock: &events_schema::time::Clock,
) -> Vec<Arc<dyn Projector>> {
    projectors::registry::all_on(store.clone(), clock)
        .into_iter()
        .map(|built| {
            let declared = built.subscription();
            let checked: Arc<dyn Store> =
                Arc::new(Observed::new(store.clone(), DeclaredWrites(declared)));
            projectors::registry::all_on(checked, clock)
                .into_iter()
                .find(|p| p.name() == declared.name)
                .unwrap_or_else(|| panic!("{} is in the registry", declared.name))
        })
        .collect()
}

/// Every row of the partitions the fixture expects, per table and partition.
pub type Rows = BTreeMap<String, BTreeMap<String, Vec<Item>>>;

/// Runs a fixture under one delivery on a fresh store; returns the rows.
pub async fn run(fixture: &Fixture, delivery: &Delivery, store: Arc<dyn Store>) -> Rows {
    // The projectors' calls are recorded against the declared access patterns; the
    // seeding and the reading back below are the test's own.
    let recorded = crate::access::recording(store.clone(), crate::access::catalog());
    let projected: Arc<dyn Store> = recorded.clone();
    for seed in &fixture.seed {
        store
            .put(seed.table, seed.item.clone(), None)
            .await
            .expect("seed row");
    }
    let projectors: Vec<Arc<dyn Projector>> = fixture
        .subscriptions
        .iter()
        .map(|name| {
            let declared = projectors::registry::find(projected.clone(), name)
                .unwrap_or_else(|| panic!("unknown subscription {name}"))
                .subscription();
            let checked: Arc<dyn Store> =
                Arc::new(Observed::new(projected.clone(), DeclaredWrites(declared)));
            projectors::registry::find(checked, name)
                .unwrap_or_else(|| panic!("unknown subscription {name}"))
        })
        .collect();
    for event in delivery.order(&fixture.envelopes()) {
        for projector in projectors.iter().filter(|p| p.source() == event.context) {
            projector
                .apply(&event)
                .await
                .unwrap_or_else(|e| panic!("{} on {}: {e}", projector.name(), event.event_type));
        }
    }
    crate::access::finish(&recorded, "projector-fixtures");
    let mut rows = Rows::new();
    for (table, partitions) in &fixture.expect {
        let context: Context = table.parse().expect("table name");
        for pk in partitions.keys() {
            let page = store
                .query(context, &Query::partition(pk).consistent())
                .await
                .expect("query");
            assert!(page.cursor.is_none(), "fixture partitions fit one page");
            let (notifications, projection): (Vec<Item>, Vec<Item>) =
                page.items.into_iter().partition(|row| {
                    row.get("event_type").and_then(Value::as_str) == Some("GoalProgressed")
                });
            check_progress_published(fixture, &projection, &notifications);
            // A goal's `progress_rev` counts the changes its progress went through, so
            // it depends on the delivery order, like the notifications: left out too.
            let projection = projection
                .into_iter()
                .map(|mut row| {
                    row.remove("progress_rev");
                    row
                })
                .collect();
            rows.entry(table.clone())
                .or_default()
                .insert(pk.clone(), projection);
        }
    }
    rows
}

/// `GoalProgressed` events notify each change of a progress row as it was observed, so
/// which intermediate values they carry depends on the delivery order: they are left
/// out of the rows compared between deliveries. What holds in every order: the final
/// value of every progress row was published.
fn check_progress_published(fixture: &Fixture, rows: &[Item], notifications: &[Item]) {
    let published: Vec<(String, String, String)> = notifications
        .iter()
        .filter_map(|row| {
            let payload = row.get("envelope")?.get("payload")?;
            Some((
                payload.get("goal_id")?.as_str()?.to_owned(),
                payload.get("period_start")?.as_str()?.to_owned(),
                payload.get("value")?.as_str()?.to_owned(),
            ))
        })
        .collect();
    for row in rows.iter().filter(|r| {
        r.get("sk")
            .and_then(Value::as_str)
            .is_some_and(|sk| sk.starts_with("PROGRESS#"))
            && !projectors::convert::is_tombstone(r)
    }) {
        let final_value = (
            row["goal_id"].as_str().unwrap_or_default().to_owned(),
            row["period_start"].as_str().unwrap_or_default().to_owned(),
            row["value"].as_str().unwrap_or_default().to_owned(),
        );
        assert!(
            published.contains(&final_value),
            "{}: no GoalProgressed event carries {final_value:?}; published {published:?}",
            fixture.description
        );
    }
}

/// Asserts the rows hold what the fixture expects.
pub fn check(fixture: &Fixture, rows: &Rows) {
    for (table, partitions) in &fixture.expect {
        for (pk, expected) in partitions {
            let actual = &rows[table][pk];
            let by_sk: BTreeMap<&str, &Item> = actual
                .iter()
                .map(|r| (r["sk"].as_str().unwrap_or_default(), r))
                .collect();
            let mut matched: Vec<&str> = Vec::new();
            for (sk, attrs) in expected {
                let row = match sk.strip_suffix('*') {
                    Some(prefix) => {
                        let found: Vec<&str> = by_sk
                            .keys()
                            .copied()
                            .filter(|k| k.starts_with(prefix))
                            .collect();
                        assert_eq!(
                            found.len(),
                            1,
                            "{}: {table}/{pk}: rows matching {sk}: {found:?}",
                            fixture.description
                        );
                        matched.push(found[0]);
                        by_sk.get(found[0])
                    }
                    None => {
                        matched.push(sk.as_str());
                        by_sk.get(sk.as_str())
                    }
                };
                let Some(attrs) = attrs else {
                    assert!(
                        row.is_none(),
                        "{}: {table}/{pk}: row {sk} must not exist",
                        fixture.description
                    );
                    continue;
                };
                let row = row.unwrap_or_else(|| {
                    panic!(
                        "{}: {table}/{pk}: missing row {sk}; rows: {:?}",
                        fixture.description,
                        by_sk.keys()
                    )
                });
                for (attr, value) in attrs {
                    let found = lookup(row, attr);
                    let expected = (!value.is_null()).then_some(value);
                    assert_eq!(
                        found.as_ref(),
                        expected,
                        "{}: {table}/{pk}/{sk}: attribute {attr}",
                        fixture.description
                    );
                }
            }
            let mut listed: Vec<&str> = matched
                .into_iter()
                .filter(|sk| by_sk.contains_key(sk))
                .collect();
            listed.sort_unstable();
            let present: Vec<&str> = by_sk.keys().copied().collect();
            assert_eq!(
                present, listed,
                "{}: {table}/{pk}: the rows present are exactly the ones listed",
                fixture.description
            );
        }
    }
}

/// An attribute by dotted path (`nutrition.totals.calories`).
fn lookup(row: &Item, path: &str) -> Option<Value> {
    let mut parts = path.split('.');
    let mut value = row.get(parts.next()?)?.clone();
    for part in parts {
        value = value.get(part)?.clone();
    }
    Some(value)
}
