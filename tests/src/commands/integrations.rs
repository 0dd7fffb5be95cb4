//! Integrations and environment command specifications: OAuth connect with single-use
//! state, signed webhooks recorded once, disconnect, and the environment cache.

use super::{Held, WEBHOOK_SECRET, World, assert_invalid, items_of, meanwhile, row_of, value};
use crate::faults::{ConflictOnce, writes_sort_key};
use commands::integrations::{SandboxProvider, WebhookPayload, sign};
use commands::{CommandError, Outcome};
use events_schema::Context;
use events_schema::events::integrations::{ProviderWorkout, WearableWorkoutReceived};
use events_schema::ids::UserId;
use infra::Store;
use infra::observed::Row;
use infra::store::now_epoch_seconds;
use serde_json::json;
use std::sync::Arc;

/// A connection stored before connections were versioned (no `version`, no `status`,
/// as the first release wrote them) disconnects, and is connected over: the writes take
/// the unversioned item, where they waited for a version 0 it never had and answered
/// `Contention`.
pub async fn a_connection_stored_before_versions_disconnects_and_reconnects(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let pu = provider_user();
    world.connect_as(&pu).await.expect("connects");
    // The connection as the first release stored it.
    let seed_unversioned = || async {
        let legacy = json!({"pk": world.pk(), "sk": "CONNECTION#sandbox",
                            "provider": "sandbox", "provider_user_id": pu});
        let legacy = serde_json::from_value(legacy).expect("an item");
        let seeded = store.put(Context::Integrations, legacy, None).await;
        seeded.expect("seeded");
    };
    let connection = || async {
        let rows = world.items(Context::Integrations, "CONNECTION#").await;
        assert_eq!(rows.len(), 1, "{rows:?}");
        let version = rows[0]["version"].as_u64();
        (rows[0]["status"].clone(), version.expect("a version now"))
    };
    seed_unversioned().await;
    let disconnected = world.integrations.disconnect(&world.meta, "sandbox").await;
    assert!(
        matches!(&disconnected, Ok(outcome) if !outcome.replayed),
        "{disconnected:?}"
    );
    assert_eq!(connection().await.0, "disconnected");
    seed_unversioned().await;
    // The same provider account again (a fresh code), over the unversioned connection.
    let reconnected = world.connect_as(&pu).await;
    assert_eq!(reconnected.expect("connects over it"), world.meta.user);
    assert_eq!(connection().await.0, "connected");
}

fn provider_user() -> String {
    format!("pu-{}", UserId::generate().as_str().to_lowercase())
}

pub async fn oauth_connect_uses_a_single_use_state(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let started = world.start_connect().await;
    assert_eq!(started.state.len(), 64, "256 random bits, hex");
    assert!(started.authorize_url.contains(&started.state));
    let state_pk = format!("OAUTH_STATE#{}", started.state);
    let state_item = row_of(&*store, Context::Integrations, state_pk, "OAUTH_STATE")
        .await
        .expect("stored");
    let ttl = state_item["expires_at"].as_i64().expect("ttl");
    assert!(
        ttl > now_epoch_seconds() && ttl <= now_epoch_seconds() + 15 * 60,
        "a TTL of minutes"
    );

    let pu = provider_user();
    let code = SandboxProvider::code_for(&pu, &started.authorize_url);
    let user = world
        .complete_connect(&started.state, &code)
        .await
        .expect("completes")
        .value;
    assert_eq!(user, world.meta.user);
    let other_code = SandboxProvider::code_for(&provider_user(), &started.authorize_url);
    let again = world.complete_connect(&started.state, &other_code).await;
    assert_invalid(again, "state");
    assert_invalid(world.complete_connect("feedface", "code-x").await, "state");
    let connection = world
        .items(Context::Integrations, "CONNECTION#sandbox")
        .await;
    assert_eq!(connection.len(), 1);
    assert_eq!(
        world.event_types(Context::Integrations).await,
        vec!["ProviderConnected"]
    );
    let event = &world.events(Context::Integrations).await[0];
    assert!(
        !event.payload.to_string().contains("token"),
        "no tokens in events"
    );
    let unknown = world.integrations.start_connect(&world.meta, "nope").await;
    assert!(
        matches!(unknown, Err(CommandError::NotFound("provider"))),
        "{unknown:?}"
    );
}

pub async fn an_expired_state_cannot_complete(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let state = "ab".repeat(32);
    let item = json!({"pk": format!("OAUTH_STATE#{state}"), "sk": "OAUTH_STATE", "user_id": world.meta.user, "provider": "sandbox", "expires_at": now_epoch_seconds() - 1});
    store
        .put(
            Context::Integrations,
            item.as_object().cloned().expect("object"),
            None,
        )
        .await
        .expect("put");
    let code = SandboxProvider::code_for(&provider_user(), "");
    assert_invalid(world.complete_connect(&state, &code).await, "state");
    assert!(
        world
            .items(Context::Integrations, "CONNECTION#")
            .await
            .is_empty()
    );
}

/// An authorize URL one account started, completed by another (the attacker sends it;
/// the victim authorizes and their app completes): refused as an unknown state, nothing
/// written for either, and the state still completes for the account that started it.
pub async fn a_connect_completes_only_for_the_account_that_started_it(store: Arc<dyn Store>) {
    let starter = World::new(store.clone());
    let other = World::new(store.clone());
    let started = starter.start_connect().await;
    let code = SandboxProvider::code_for(&provider_user(), &started.authorize_url);
    let by_other = other.complete_connect(&started.state, &code).await;
    assert_invalid(by_other, "state");
    nothing_connected([&starter, &other]).await;
    let by_starter = starter.complete_connect(&started.state, &code).await;
    assert_eq!(value(by_starter), starter.meta.user);
}

/// Asserts that no world of `worlds` has a connection or an integrations event.
async fn nothing_connected(worlds: [&World; 2]) {
    for world in worlds {
        let connections = world.items(Context::Integrations, "CONNECTION#").await;
        assert!(connections.is_empty(), "{connections:?}");
        assert!(world.event_types(Context::Integrations).await.is_empty());
    }
}

/// A code read on its way to the app (another app claiming the app's URL scheme, say)
/// and completed in a connect the reader started: refused, since the code is bound to
/// the PKCE challenge of the connect it was issued for; nothing is written, and the code
/// still completes the connect it was issued for.
pub async fn a_code_issued_for_another_connect_completes_nothing(store: Arc<dyn Store>) {
    let victim = World::new(store.clone());
    let reader = World::new(store.clone());
    let victims = victim.start_connect().await;
    let code = SandboxProvider::code_for(&provider_user(), &victims.authorize_url);
    let readers = reader.start_connect().await;
    let by_reader = reader.complete_connect(&readers.state, &code).await;
    assert_invalid(by_reader, "code");
    nothing_connected([&victim, &reader]).await;
    let by_victim = victim.complete_connect(&victims.state, &code).await;
    assert_eq!(value(by_victim), victim.meta.user);
}

/// The body of a sandbox webhook from provider user `pu` carrying one workout.
pub fn webhook_body(pu: &str, delivery: &str, workout: ProviderWorkout) -> Vec<u8> {
    let payload = WebhookPayload {
        delivery_id: delivery.into(),
        provider_user_id: pu.into(),
        workouts: vec![workout],
        sleep: vec![],
    };
    serde_json::to_vec(&payload).expect("serializes")
}

/// The workout the webhook cases deliver.
fn run_w1() -> ProviderWorkout {
    super::activity_sleep::provider_workout("w-1", "2026-05-02T07:00:00.000Z", 1800)
}

/// Starting a connect, and receiving a webhook, when the transaction is cancelled as a
/// conflict (nothing written): each goes through on the next attempt, where each
/// answered `Contention`.
pub async fn a_connect_and_a_webhook_cancelled_as_a_conflict_go_through_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let starting = World::new(ConflictOnce::on(store.clone()));
    let started = starting
        .integrations
        .start_connect(&starting.meta, "sandbox")
        .await
        .expect("started on the second attempt");
    assert_eq!(starting.store.counts().transactions, 2);
    let pu = provider_user();
    let code = SandboxProvider::code_for(&pu, &started.value.authorize_url);
    let completed = starting.complete_connect(&started.value.state, &code).await;
    completed.expect("completes");

    let receiving = World::new(ConflictOnce::on(store)).as_user(starting.meta.user.clone());
    let body = webhook_body(&pu, "d-9", run_w1());
    let received = receiving.receive_signed(&body, now_epoch_seconds()).await;
    assert!(!received.expect("received on the second attempt").replayed);
    assert_eq!(receiving.store.counts().transactions, 2);
    // A webhook's event id is derived from its delivery (the same on every retry), so
    // in the connect's millisecond it need not sort after the connect's generated id:
    // the events are compared, not their order.
    let mut types = receiving.event_types(Context::Integrations).await;
    types.sort();
    assert_eq!(types, ["ProviderConnected", "WearableWorkoutReceived"]);
}

/// A disconnect, and an OAuth callback, whose transaction is cancelled as a conflict
/// read again and commit on the next attempt (they read a conflict as a lost race).
pub async fn a_disconnect_cancelled_as_a_conflict_commits_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    world.connect_as(&provider_user()).await.expect("connects");
    let leaving = World::new(ConflictOnce::on(store.clone())).as_user(world.meta.user.clone());
    let left = leaving
        .integrations
        .disconnect(&leaving.meta, "sandbox")
        .await;
    assert!(!left.expect("disconnected on the second attempt").replayed);
    let events = ["ProviderConnected", "ProviderDisconnected"];
    leaving
        .assert_second_attempt_and_events(Context::Integrations, &events)
        .await;
    // The OAuth callback reads a conflict the same way.
    let started = world.start_connect().await;
    let completing = World::new(ConflictOnce::on(store)).as_user(world.meta.user.clone());
    let code = SandboxProvider::code_for(&provider_user(), &started.authorize_url);
    let completed = completing.complete_connect(&started.state, &code).await;
    let connected = completed.expect("connected on the second attempt");
    assert_eq!(connected.value, world.meta.user);
    assert_eq!(completing.store.counts().transactions, 2);
}

pub async fn signed_webhooks_are_recorded_once(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let pu = provider_user();
    world.connect_as(&pu).await.expect("completes");
    let body = webhook_body(&pu, "d-1", run_w1());
    let now = now_epoch_seconds();
    let signature = sign(WEBHOOK_SECRET.as_bytes(), now, &body);

    let forged = world
        .integrations
        .receive_webhook(
            "sandbox",
            &now.to_string(),
            &sign(b"wrong", now, &body),
            &body,
        )
        .await;
    assert!(
        matches!(forged, Err(CommandError::BadSignature)),
        "{forged:?}"
    );
    let stale = now - 3600;
    let old = world.receive_signed(&body, stale).await;
    assert!(matches!(old, Err(CommandError::BadSignature)), "{old:?}");
    let mut tampered = body.clone();
    tampered.extend_from_slice(b" ");
    let changed = world
        .integrations
        .receive_webhook("sandbox", &now.to_string(), &signature, &tampered)
        .await;
    assert!(
        matches!(changed, Err(CommandError::BadSignature)),
        "{changed:?}"
    );
    assert_eq!(
        world.event_types(Context::Integrations).await,
        vec!["ProviderConnected"],
        "nothing written"
    );

    let first = world.receive_signed(&body, now).await.expect("accepted");
    assert_eq!((first.value, first.replayed), (1, false));
    let again = world.receive_signed(&body, now).await.expect("redelivery");
    assert!(again.replayed);
    let events = world.events(Context::Integrations).await;
    assert_eq!(events.len(), 2, "the redelivery published nothing");
    let received: WearableWorkoutReceived = events[1].decode().expect("typed");
    assert_eq!(received.workout.external_id.as_str(), "w-1");
    assert_eq!(
        world
            .count(Context::Integrations, "DELIVERY#sandbox#d-1")
            .await,
        1
    );

    let stranger = webhook_body("pu-nobody", "d-2", run_w1());
    let unknown = world.receive_signed(&stranger, now).await;
    assert!(
        matches!(unknown, Err(CommandError::NotFound("connection"))),
        "{unknown:?}"
    );
}

/// A delivery to `pu` with id `id`, received by a world of its own, held at the store
/// at its record until [`Held::release`].
async fn held_delivery(store: &Arc<dyn Store>, pu: &str, id: &str) -> Held<Outcome<usize>> {
    let body = webhook_body(pu, id, run_w1());
    let at_delivery = |row: &Row<'_>| writes_sort_key(row, "DELIVERY#", "");
    Held::start(store, at_delivery, move |w| async move {
        w.receive_signed(&body, now_epoch_seconds()).await
    })
    .await
}

/// `world`'s account disconnects from the sandbox while a delivery is held (30 s at most).
async fn disconnect_meanwhile(world: &World) {
    let disconnected = meanwhile(world.integrations.disconnect(&world.meta, "sandbox")).await;
    disconnected.expect("disconnects");
}

/// A webhook held at the store while its account disconnects in another process: the
/// provider user no longer routes to the account when the delivery commits, so nothing
/// is published there, as if it had come after the disconnect; and when another
/// account connects as that provider user meanwhile, the delivery goes to it.
pub async fn a_webhook_racing_a_disconnect_goes_where_its_provider_user_routes_at_commit(
    store: Arc<dyn Store>,
) {
    let ana = World::new(store.clone());
    let pu = provider_user();
    ana.connect_as(&pu).await.expect("connects");
    let held = held_delivery(&store, &pu, "d-racing").await;
    let other = World::in_another_process(store.clone()).as_user(ana.meta.user.clone());
    disconnect_meanwhile(&other).await;
    let delivered = held.release().await;
    assert!(
        matches!(delivered, Err(CommandError::NotFound("connection"))),
        "{delivered:?}"
    );
    let connection_events = vec!["ProviderConnected", "ProviderDisconnected"];
    assert_eq!(
        ana.event_types(Context::Integrations).await,
        connection_events,
        "nothing published to the disconnected account"
    );
    assert_eq!(ana.count(Context::Integrations, "DELIVERY#").await, 0);

    // Ana connects again; while a delivery for her is held, she disconnects and the
    // provider user connects to Bob.
    ana.connect_as(&pu).await.expect("reconnects");
    let held = held_delivery(&store, &pu, "d-moved").await;
    disconnect_meanwhile(&other).await;
    let bob = World::in_another_process(store.clone());
    let connected = bob.connect_as(&pu).await;
    assert_eq!(connected.expect("bob connects"), bob.meta.user);
    let delivered = held.release().await.expect("delivered to bob");
    assert!(!delivered.replayed);
    assert_eq!(
        bob.event_types(Context::Integrations).await,
        vec!["ProviderConnected", "WearableWorkoutReceived"]
    );
    let twice = [connection_events.clone(), connection_events].concat();
    assert_eq!(ana.event_types(Context::Integrations).await, twice);
}

/// A disconnect keeps the connection as disconnected (its version orders what comes
/// next), with no tokens, and releases the provider identity.
pub async fn disconnect_removes_the_connection_once(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let pu = provider_user();
    world.connect_as(&pu).await.expect("completes");
    assert!(
        !world
            .integrations
            .disconnect(&world.meta, "sandbox")
            .await
            .expect("disconnects")
            .replayed
    );
    assert!(
        world
            .integrations
            .disconnect(&world.meta, "sandbox")
            .await
            .expect("again")
            .replayed
    );
    let connections = world.items(Context::Integrations, "CONNECTION#").await;
    assert_eq!(connections.len(), 1);
    assert_eq!(connections[0]["status"], "disconnected", "{connections:?}");
    assert!(
        !serde_json::to_string(&connections[0])
            .expect("json")
            .contains("token"),
        "no provider token at rest: {connections:?}"
    );
    assert!(
        items_of(
            &*store,
            Context::Integrations,
            &format!("PROVIDER_USER#sandbox#{pu}"),
            ""
        )
        .await
        .is_empty()
    );
    assert_eq!(
        world.event_types(Context::Integrations).await,
        vec!["ProviderConnected", "ProviderDisconnected"]
    );
}

pub async fn environment_readings_are_cached_per_cell_and_hour(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let cell = "u09tvw".to_owned();
    let at = chrono::Utc::now();
    let first = world.environment.weather(&cell, at).await.expect("weather");
    let counts = world.store.take();
    assert_eq!(
        (counts.gets, counts.single_writes),
        (1, 1),
        "a miss reads, asks the provider, caches"
    );
    let second = world.environment.weather(&cell, at).await.expect("weather");
    assert_eq!(second, first);
    let counts = world.store.take();
    assert_eq!((counts.gets, counts.writes()), (1, 0), "a hit is one read");
    let hour = events_schema::time::Hour::containing(at);
    let row = row_of(
        &*store,
        Context::Environment,
        format!("WEATHER#{cell}#{hour}"),
        "WEATHER",
    )
    .await
    .expect("cached");
    let ttl = row["expires_at"].as_i64().expect("ttl");
    assert!(
        ttl > now_epoch_seconds() && ttl <= hour.start().timestamp() + 2 * 3600,
        "expires about an hour after its hour"
    );
    world.environment.air(&cell, at).await.expect("air");
    assert_invalid(
        world.environment.weather("not a geohash!", at).await,
        "geohash",
    );
}
