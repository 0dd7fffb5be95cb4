//! Regression specifications for the defects a review found (issue 11), run on every
//! backend (see `regressions_suite!`). Each case reproduces one defect through the real
//! command handlers and projectors and states what must hold instead. Inputs are built
//! from JSON, as a client would send them.

use crate::commands::{World, items_of, row_of};
use crate::faults::{PausingStore, gated, writes_sort_key};
use commands::CommandMeta;
use events_schema::Context;
use events_schema::envelope::{EventEnvelope, outbox_event};
use events_schema::ids::UserId;
use infra::Store;
use infra::observed::Row;
use infra::store::Item;
use projectors::Projector;
use serde_json::{Value, json};
use std::sync::Arc;

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("valid input")
}

/// Every outbox event of `user` in `table`, oldest first.
pub async fn events_of(store: &dyn Store, table: Context, user: &UserId) -> Vec<EventEnvelope> {
    let pk = format!("USER#{user}");
    let mut events: Vec<EventEnvelope> = items_of(store, table, &pk, "EVT#")
        .await
        .iter()
        .filter_map(|item| outbox_event(item)?.ok())
        .collect();
    events.sort_by(|a, b| a.event_id.cmp(&b.event_id));
    events
}

/// Applies `events` to the named subscriptions (those whose source is the event's).
pub async fn deliver(store: &Arc<dyn Store>, names: &[&str], events: &[EventEnvelope]) {
    let projectors: Vec<Arc<dyn Projector>> = names
        .iter()
        .map(|n| projectors::registry::find(store.clone(), n).expect("subscription"))
        .collect();
    for event in events {
        for projector in projectors.iter().filter(|p| p.source() == event.context) {
            projector
                .apply(event)
                .await
                .unwrap_or_else(|e| panic!("{} on {}: {e}", projector.name(), event.event_type));
        }
    }
}

/// A world whose clock shows the morning of 2026-03-02 (UTC), the day the cases log
/// their meals and set their goals.
fn on_the_day(store: &Arc<dyn Store>) -> World {
    let morning = events_schema::time::Timestamp::parse("2026-03-02T08:00:00.000Z").expect("time");
    World::with_clock(store.clone(), events_schema::time::Clock::manual(morning))
}

/// A daily goal of 100 g protein, in UTC.
fn protein_goal() -> commands::goals::CreateGoal {
    from_json(
        json!({"kind": "daily_protein_grams", "target": "100", "title": "Protein", "timezone": "UTC"}),
    )
}

fn meal(name: &str, protein: &str) -> Value {
    json!({"name": name, "eaten_at": "2026-03-02T09:00:00.000Z", "timezone": "UTC",
           "calories": "100", "protein_g": protein, "carbs_g": "0", "fat_g": "0"})
}

/// Defect 3: the `GoalProgressed` id repeated when the same (old, new) pair came twice,
/// the transaction was cancelled as "already published" and progress stopped.
pub async fn goal_progress_follows_a_deleted_and_logged_again_meal(store: Arc<dyn Store>) {
    let world = on_the_day(&store);
    let goal = world.create_goal(protein_goal()).await;
    let log = |m: Value| world.nutrition.log_meal(&world.meta, from_json(m));
    log(meal("Eggs", "20")).await.expect("meal");
    let ten = log(meal("Nuts", "10")).await.expect("meal").value;
    world
        .nutrition
        .delete_meal(&world.meta, &ten.meal_id)
        .await
        .expect("deleted");
    log(meal("Nuts again", "10")).await.expect("meal");

    let subscriptions = ["goals-from-nutrition", "goals-from-goals"];
    let mut events = events_of(&*store, Context::Goals, &world.meta.user).await;
    events.extend(events_of(&*store, Context::Nutrition, &world.meta.user).await);
    deliver(&store, &subscriptions, &events).await;

    let pk = world.pk();
    let progress = items_of(&*store, Context::Goals, &pk, &format!("PROGRESS#{goal}#")).await;
    let values: Vec<&Value> = progress.iter().map(|r| &r["value"]).collect();
    assert_eq!(
        values,
        vec![&json!("30")],
        "one period, 20 + 10: {progress:?}"
    );
    let goal_row = row_of(&*store, Context::Goals, &pk, &format!("GOAL#{goal}"))
        .await
        .expect("goal item");
    assert_eq!(goal_row["current_value"], json!("30"), "{goal_row:?}");
}

fn sleep(external: &str, end: &str, score: u8, updated_at: &str) -> Value {
    json!({"external_id": external, "start": "2026-03-02T22:00:00.000Z", "end": end, "score": score,
           "stages": {"awake_min": 0, "light_min": 0, "deep_min": 0, "rem_min": 0},
           "updated_at": updated_at})
}

/// Defect 4: a synced session's version was its recording time, set to the session's
/// start, so a provider's correction with the same start never showed (or, delivered
/// first, was overwritten by the original).
pub async fn a_corrected_synced_sleep_session_shows_in_every_delivery_order(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let first = sleep(
        "night-1",
        "2026-03-03T04:00:00.000Z",
        70,
        "2026-03-03T05:00:00.000Z",
    );
    let corrected = sleep(
        "night-1",
        "2026-03-03T06:00:00.000Z",
        85,
        "2026-03-03T07:00:00.000Z",
    );
    for payload in [first, corrected] {
        world.sync_sleep(&from_json(payload)).await.expect("synced");
    }
    let events = events_of(&*store, Context::Sleep, &world.meta.user).await;
    assert_eq!(events.len(), 2, "the session and its correction");
    let subscriptions = ["dashboard-from-sleep", "goals-from-sleep"];
    for order in [events.clone(), events.iter().rev().cloned().collect()] {
        let fresh = World::new(store.clone());
        let retargeted: Vec<EventEnvelope> = order
            .iter()
            .map(|e| EventEnvelope {
                user_id: Some(fresh.meta.user.clone()),
                ..e.clone()
            })
            .collect();
        deliver(&store, &subscriptions, &retargeted).await;
        let pk = fresh.pk();
        let daily = row_of(&*store, Context::Dashboard, &pk, "DAILY#2026-03-02")
            .await
            .expect("daily row");
        assert_eq!(daily["sleep"]["minutes"], json!(480), "{daily:?}");
        assert_eq!(daily["sleep"]["score"], json!(85), "{daily:?}");
        let night = row_of(&*store, Context::Goals, &pk, "SLEEP_NIGHT#2026-03-02")
            .await
            .expect("night row");
        assert_eq!(night["minutes"], json!(480), "{night:?}");
    }
}

fn workout(duration_s: u32, updated_at: &str) -> Value {
    json!({"external_id": "run-1", "sport": "run", "started_at": "2026-03-02T07:00:00.000Z",
           "duration_s": duration_s, "distance_m": 5000, "calories": null, "updated_at": updated_at})
}

/// Defect 5: an older payload delivered after a newer one (another shard, a redrive, a
/// replay) became a new version.
pub async fn an_older_wearable_payload_never_overwrites_a_newer_one(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let newer = workout(3600, "2026-03-02T10:00:00.000Z");
    let older = workout(1800, "2026-03-02T08:00:00.000Z");
    for payload in [newer.clone(), older, newer] {
        world
            .sync_workout(&from_json(payload))
            .await
            .expect("synced");
    }
    let workouts = world.items(Context::Activity, "WORKOUT#").await;
    assert_eq!(workouts.len(), 1);
    assert_eq!(workouts[0]["duration_s"], json!(3600), "{workouts:?}");
    assert_eq!(
        world.event_types(Context::Activity).await,
        vec!["WorkoutRecorded"],
        "neither the stale payload nor the repeat made a version"
    );
}

/// `user`'s erasure from the dashboard table, as its eraser does it: the tombstone, then
/// the drain of their partition.
async fn erase_from_the_dashboard(store: &Arc<dyn Store>, user: &UserId) {
    let table = infra::table::Table::<infra::table::contexts::Dashboard>::new(store.clone());
    let requested =
        events_schema::time::Timestamp::parse("2026-03-02T10:00:00.000Z").expect("valid");
    commands::erasure::begin(&table, user, requested)
        .await
        .expect("tombstone");
    commands::erasure::erase(&table, user)
        .await
        .expect("drained");
}

/// Defect 6: a process that died between a projection's write and the guard's second
/// tombstone check left the row; the redelivered event found the tombstone and returned
/// without sweeping.
pub async fn an_erased_users_redelivered_event_sweeps_what_a_crash_left(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    world.log_meal(from_json(meal("Eggs", "20"))).await;
    let events = events_of(&*store, Context::Nutrition, &world.meta.user).await;
    // The crash: the projection wrote its rows, the process died before the guard's
    // second look, and meanwhile the account was erased from the dashboard.
    let dashboard = projectors::dashboard::DashboardFromNutrition(
        projectors::dashboard::DashboardRows::new(infra::table::Table::new(store.clone())),
    );
    dashboard.apply(&events[0]).await.expect("applies");
    erase_from_the_dashboard(&store, &world.meta.user).await;
    // A late row written after the drain, as the crashed worker's was.
    dashboard.apply(&events[0]).await.expect("applies");
    assert!(
        !items_of(&*store, Context::Dashboard, &world.pk(), "")
            .await
            .is_empty()
    );
    // The redelivery, through the guarded subscription.
    deliver(&store, &["dashboard-from-nutrition"], &events).await;
    let left = items_of(&*store, Context::Dashboard, &world.pk(), "").await;
    assert!(left.is_empty(), "the erased user's rows stay: {left:?}");
}

/// An eraser whose removal of its `PartitionDrained` outbox item failed left, on the
/// redelivery, that item (naming the user) for ever: the retry published a second event
/// under a fresh id and removed only that one. (Nutrition's eraser is set off by the
/// link before it in the erasure chain, activity.)
pub async fn an_erasers_retried_publication_leaves_no_event_behind(store: Arc<dyn Store>) {
    use events_schema::events::erasure::PartitionDrained;
    let world = World::new(store.clone());
    world.log_meal(from_json(meal("Eggs", "20"))).await;
    let user = world.meta.user.clone();
    let now = events_schema::time::Timestamp::now();
    let mut activity_drained = EventEnvelope::new(
        Some(user.clone()),
        now,
        &PartitionDrained {
            context: Context::Activity,
            items_deleted: 0,
            requested_at: now,
            drained: vec![Context::Integrations, Context::Activity],
        },
    )
    .expect("event");
    activity_drained.context = Context::Activity;
    let erased_outbox_removal = |row: &Row<'_>| match row {
        Row::Delete { key, .. } => key.pk.starts_with("ERASED#") && key.sk.starts_with("EVT#"),
        _ => false,
    };
    let failing = crate::faults::ThrottledOnce::at(store.clone(), erased_outbox_removal);
    let eraser = projectors::registry::find(failing, "erase-nutrition").expect("eraser");
    assert!(
        eraser.apply(&activity_drained).await.is_err(),
        "the removal fails"
    );
    eraser
        .apply(&activity_drained)
        .await
        .expect("the redelivery finishes");
    let (erased_pk, _) = events_schema::keys::erased(&user);
    let left = items_of(&*store, Context::Nutrition, &erased_pk.to_string(), "EVT#").await;
    assert!(left.is_empty(), "events left naming the user: {left:?}");
}

/// A dead letter put after the user's erasure finished (the projection's last look saw
/// no tombstone, then the eraser drained the table and cleared the letters there were,
/// then the letter landed) kept the erased user's record for ever. The put is held
/// here while the erasure runs.
pub async fn a_dead_letter_put_after_the_users_erasure_is_dropped(store: Arc<dyn Store>) {
    use infra::dlq::{DeadLetterQueue, TableDlq};
    let world = World::new(store.clone());
    world.log_meal(from_json(meal("Eggs", "20"))).await;
    let events = events_of(&*store, Context::Nutrition, &world.meta.user).await;
    // A version of the event no projector reads: it fails, whatever the retries.
    let mut poison = events[0].clone();
    poison.schema_version = 99;
    let record = infra::feed::FeedRecord {
        position: "1".into(),
        table: Context::Nutrition,
        pk: world.pk(),
        sk: format!("EVT#{}", poison.event_id),
        old_image: None,
        new_image: Some(events_schema::envelope::outbox_item(&world.pk(), &poison).expect("item")),
        fault: None,
    };
    let subscription = "dashboard-from-nutrition";
    let projector = projectors::registry::find(store.clone(), subscription).expect("found");
    let at_letter = |row: &Row<'_>| match row {
        Row::Put { item, .. } => item
            .get("pk")
            .and_then(Value::as_str)
            .is_some_and(|pk| pk.starts_with("DLQ#")),
        _ => false,
    };
    let pausing = Arc::new(gated(store.clone(), at_letter));
    let letters = Arc::new(TableDlq::new(pausing.clone(), Context::Dashboard));
    let handler = projectors::runtime::Handler::new(projector, letters);
    // Meanwhile the user's erasure runs through the dashboard to the end.
    let erasure = async {
        erase_from_the_dashboard(&store, &world.meta.user).await;
        let cleared = TableDlq::new(store.clone(), Context::Dashboard);
        let removed = cleared.remove_about(subscription, &world.pk()).await;
        assert_eq!(
            removed.expect("letters cleared"),
            0,
            "the letter is not there yet"
        );
    };
    let handled = async move { handler.handle(&record).await.expect("handled") };
    interleave(&pausing, handled, erasure).await;
    let letters = TableDlq::new(store.clone(), Context::Dashboard);
    let about = letters.count_about(subscription, &world.pk()).await;
    assert_eq!(
        about.expect("counted"),
        0,
        "no letter of the erased user stays"
    );
}

/// Defect 15: internal failures were `Conflict` (409 with internal text).
pub async fn an_unreadable_stored_pointer_is_an_internal_error(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let pointer = json!({"pk": world.pk(), "sk": "EXTERNAL#garmin#run-1", "entity_id": "not#an#id",
                         "target_sk": "WORKOUT#2026-03-02#x", "fingerprint": "f", "version": 1});
    store
        .put(Context::Activity, from_json(pointer), None)
        .await
        .expect("seeded");
    let result = world
        .sync_workout(&from_json(workout(3600, "2026-03-02T10:00:00.000Z")))
        .await;
    let error = format!("{result:?}");
    assert!(
        error.starts_with("Err(Internal("),
        "an internal failure, not a conflict: {error}"
    );
}

/// Runs `first` until it reaches the paused write, runs `second` to the end, then lets
/// `first` finish: the interleaving in which an unconditional recompute writes a staler
/// result last.
async fn interleave(
    pausing: &Arc<PausingStore>,
    first: impl std::future::Future<Output = ()> + Send + 'static,
    second: impl std::future::Future<Output = ()>,
) {
    let reached = pausing.observer().reached.notified();
    let first = tokio::spawn(first);
    tokio::time::timeout(std::time::Duration::from_secs(30), reached)
        .await
        .expect("the first worker reaches the write it is held at");
    second.await;
    pausing.observer().release.notify_one();
    first.await.expect("first worker");
}

/// Delivers the first two `events` to `subscription` as two workers: the first is held
/// at its first write that `paused` matches while the second runs to the end.
async fn deliver_interleaved(
    store: &Arc<dyn Store>,
    subscription: &'static str,
    events: &[EventEnvelope],
    paused: fn(&Row<'_>) -> bool,
) {
    let pausing = Arc::new(gated(store.clone(), paused));
    let shared: Arc<dyn Store> = pausing.clone();
    let (early, late) = (events[0].clone(), [events[1].clone()]);
    let first = {
        let shared = shared.clone();
        async move { deliver(&shared, &[subscription], &[early]).await }
    };
    let names = [subscription];
    let second = deliver(&shared, &names, &late);
    interleave(&pausing, first, second).await;
}

/// Defect 8, goals: two workers recomputing one goal's progress; the one that read the
/// facts first wrote last, and the row kept its staler value.
pub async fn a_stale_progress_recompute_never_lands_last(store: Arc<dyn Store>) {
    let world = on_the_day(&store);
    world.create_goal(protein_goal()).await;
    for protein in ["20", "10"] {
        world.log_meal(from_json(meal("Eggs", protein))).await;
    }
    let events = events_of(&*store, Context::Nutrition, &world.meta.user).await;
    assert_eq!(
        progress_after_two_workers(&store, &world, &events).await,
        ["30"]
    );
}

/// The progress values of `world`'s goals once `events` (the first two) were applied by
/// two goals-from-nutrition workers, the first held at its progress write while the
/// second runs to the end.
async fn progress_after_two_workers(
    store: &Arc<dyn Store>,
    world: &World,
    events: &[EventEnvelope],
) -> Vec<String> {
    deliver_interleaved(store, "goals-from-nutrition", events, |a| {
        writes_sort_key(a, "PROGRESS#", "")
    })
    .await;
    let progress = items_of(&**store, Context::Goals, &world.pk(), "PROGRESS#").await;
    let values = progress
        .iter()
        .map(|r| r["value"].as_str().map(str::to_owned));
    values.map(|v| v.unwrap_or_default()).collect()
}

/// A recompute that found nothing to change wrote nothing, so a worker that had read
/// older facts could still commit them: a meal logged (30 g to 50 g) and deleted again
/// (back to 30 g), the deletion's worker finding progress already at 30 while the
/// logging's worker, held with 50 read, committed after it: progress said 50 g of a
/// day whose facts say 30 g.
pub async fn a_recompute_with_nothing_to_change_still_stops_a_stale_one(store: Arc<dyn Store>) {
    let world = on_the_day(&store);
    world.create_goal(protein_goal()).await;
    world.log_meal(from_json(meal("Eggs", "30"))).await;
    let eaten = world.log_meal(from_json(meal("Shake", "20"))).await;
    let deleted = world.nutrition.delete_meal(&world.meta, &eaten).await;
    deleted.expect("the shake is deleted");
    let events = events_of(&*store, Context::Nutrition, &world.meta.user).await;
    deliver(&store, &["goals-from-nutrition"], &events[..1]).await;
    let progress = progress_after_two_workers(&store, &world, &events[1..]).await;
    assert_eq!(progress, ["30"], "the day's facts say 30 g");
}

/// Defect 8, dashboard: the day's activity group recomputed from workout rows, written
/// without a condition.
pub async fn a_stale_daily_activity_recompute_never_lands_last(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    for hour in ["07", "18"] {
        world
            .activity
            .record_workout(
                &world.meta,
                from_json(json!({"sport": "run", "started_at": format!("2026-03-02T{hour}:00:00.000Z"),
                                 "timezone": "UTC", "duration_s": 1800, "distance_m": null, "calories": null})),
            )
            .await
            .expect("workout");
    }
    let events = events_of(&*store, Context::Activity, &world.meta.user).await;
    deliver_interleaved(&store, "dashboard-from-activity", &events, |a| {
        writes_sort_key(a, "DAILY#", "activity")
    })
    .await;
    let daily = row_of(&*store, Context::Dashboard, &world.pk(), "DAILY#2026-03-02")
        .await
        .expect("daily row");
    assert_eq!(daily["activity"]["workouts"], json!(2), "{daily:?}");
    assert_eq!(daily["activity"]["active_minutes"], json!(60), "{daily:?}");
}

/// The provider-user pointer of the sandbox's `provider_user`, if any.
async fn pointer_of(store: &dyn Store, provider_user: &str) -> Option<Item> {
    let pk = format!("PROVIDER_USER#sandbox#{provider_user}");
    row_of(store, Context::Integrations, pk, "PROVIDER_USER").await
}

/// Defect 2: `complete_connect` overwrote the provider-user pointer without a condition;
/// a reconnect as another provider user left the old pointer routing webhooks.
pub async fn a_provider_identity_belongs_to_one_account_at_a_time(store: Arc<dyn Store>) {
    let ana = World::new(store.clone());
    let bob = World::new(store.clone());
    let watch = format!("watch-{}", ana.meta.user.as_str().to_lowercase());
    ana.connect_as(&watch).await.expect("ana connects");
    let taken = bob.connect_as(&watch).await;
    assert!(
        taken.is_err(),
        "bob cannot take ana's provider identity: {taken:?}"
    );
    let pointer = pointer_of(&*store, &watch).await.expect("pointer");
    assert_eq!(pointer["user_id"], json!(ana.meta.user));
    // Ana moves to another watch: the old identity is released.
    let other = format!("{watch}-2");
    ana.connect_as(&other).await.expect("ana reconnects");
    assert!(
        pointer_of(&*store, &watch).await.is_none(),
        "the old pointer no longer routes webhooks to ana"
    );
    // Bob authorizes again (a fresh connect, so a fresh code for the same account).
    bob.connect_as(&watch)
        .await
        .expect("the freed identity is bob's now");
}

/// Defect 2, erasure: erasing one account deleted a pointer that named another.
pub async fn erasing_an_account_never_deletes_anothers_pointer(store: Arc<dyn Store>) {
    let ana = World::new(store.clone());
    let bob = World::new(store.clone());
    let watch = format!("watch-{}", ana.meta.user.as_str().to_lowercase());
    ana.connect_as(&watch).await.expect("ana connects");
    // Bob's own connection names the same provider user (as a hijack left it before
    // pointers were guarded), while the pointer is ana's.
    let connection = json!({"pk": bob.pk(), "sk": "CONNECTION#sandbox", "provider": "sandbox",
                            "provider_user_id": watch});
    store
        .put(Context::Integrations, from_json(connection), None)
        .await
        .expect("seeded");
    let table = infra::table::Table::<infra::table::contexts::Integrations>::new(store.clone());
    commands::erasure::erase(&table, &bob.meta.user)
        .await
        .expect("bob erased");
    let pointer = pointer_of(&*store, &watch).await;
    assert_eq!(
        pointer.as_ref().map(|p| p["user_id"].clone()),
        Some(json!(ana.meta.user)),
        "ana's pointer survives bob's erasure"
    );
}

/// Defect 14: one user's concurrent writes (a phone flushing its offline queue) failed
/// with `Contention` on about one request in ten.
pub async fn one_users_concurrent_meal_logs_all_succeed(store: Arc<dyn Store>) {
    let world = Arc::new(World::new(store.clone()));
    for round in 0..5 {
        let mut writers = tokio::task::JoinSet::new();
        for n in 0..8 {
            let world = world.clone();
            writers.spawn(async move {
                let input = from_json(meal(&format!("queued {round}.{n}"), "1"));
                world.nutrition.log_meal(&world.meta, input).await
            });
        }
        while let Some(done) = writers.join_next().await {
            let logged = done.expect("writer");
            assert!(logged.is_ok(), "round {round}: {logged:?}");
        }
    }
    let summary = world
        .summary(events_schema::time::Day::parse("2026-03-02").expect("day"))
        .await;
    assert_eq!(summary.meals, 40);
}

/// Defect 1, records: a sign-up's request record lives under the email, so it must go
/// when the email does (changed here; erased, in the erasure tests).
pub async fn a_sign_up_record_goes_with_the_email(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let email = format!("{}@example.com", world.meta.user.as_str().to_lowercase());
    let keyed = world.keyed("sign-up-1");
    let registration = json!({"email": email, "password": "correct horse battery",
                              "display_name": "Ana", "timezone": "UTC"});
    let user = world
        .identity
        .register(&keyed, from_json(registration.clone()))
        .await
        .expect("registered")
        .value;
    let records = |email: String| {
        let store = store.clone();
        async move {
            items_of(
                &*store,
                Context::Identity,
                &format!("EMAIL#{email}"),
                "IDEMPOTENCY#",
            )
            .await
        }
    };
    assert_eq!(
        records(email.clone()).await.len(),
        1,
        "the sign-up is recorded"
    );
    let moved = format!("moved-{email}");
    world
        .identity
        .change_email(&CommandMeta::new(user), &moved, "correct horse battery")
        .await
        .expect("email changed");
    assert!(
        records(email.clone()).await.is_empty(),
        "the record went with the old email"
    );
    // The old email is free, and a new sign-up with the old key is a new account.
    let again = world
        .identity
        .register(&keyed, from_json(registration))
        .await
        .expect("a new account");
    assert!(!again.replayed);
}

/// The meta of a fresh user, for cases that need two accounts.
pub fn another_user() -> CommandMeta {
    CommandMeta::new(UserId::generate())
}

/// The home screen read one page of the dashboard's rows: past a page (1 MB) in its
/// window, a heavy logger's month, the rows after the page's end (the recent workouts
/// sort after the meals) were missing. It reads on through the pages.
pub async fn a_dashboard_past_one_page_of_rows_shows_every_kind(store: Arc<dyn Store>) {
    let world = on_the_day(&store);
    let log = world
        .nutrition
        .log_meal(&world.meta, from_json(meal("Eggs", "20")));
    log.await.expect("meal");
    let run = json!({"sport": "run", "started_at": "2026-03-02T07:00:00.000Z",
        "timezone": "UTC", "duration_s": 1800, "distance_m": 5000, "calories": null});
    let recorded = world.activity.record_workout(&world.meta, from_json(run));
    recorded.await.expect("workout");
    let mut events = events_of(&*store, Context::Nutrition, &world.meta.user).await;
    events.extend(events_of(&*store, Context::Activity, &world.meta.user).await);
    let subscriptions = ["dashboard-from-nutrition", "dashboard-from-activity"];
    deliver(&store, &subscriptions, &events).await;
    let pk = world.pk();
    let meal_row = items_of(&*store, Context::Dashboard, &pk, "RECENT_MEAL#").await;
    let meal_row = meal_row.first().expect("the meal's row");
    // 300 more rows of about 4 KB: 1.2 MB of meals before the workout's row.
    for n in 0..300 {
        let mut row = meal_row.clone();
        let sk = format!("{}-{n:03}", row["sk"].as_str().expect("sk"));
        row.insert("sk".into(), json!(sk));
        row.insert("padding".into(), json!("x".repeat(4000)));
        store.put(Context::Dashboard, row, None).await.expect("put");
    }
    let dashboard = readmodels::dashboard::Dashboard::new(infra::table::Table::new(store.clone()));
    let day = events_schema::time::Day::parse("2026-03-02").expect("day");
    let home = dashboard.home(&world.meta.user, day).await.expect("home");
    assert_eq!(home.recent_workouts.len(), 1, "the workout after the meals");
    assert_eq!(home.recent_meals.len(), readmodels::dashboard::RECENT_SHOWN);
}

/// `GET /v1/me/goals` answered every goal of a status from one index Query: past a page
/// (years of completed weekly goals) the rest was cut off with no way to ask for it. It
/// pages like the other lists.
pub async fn goals_are_listed_page_by_page(store: Arc<dyn Store>) {
    let world = on_the_day(&store);
    let mut created = Vec::new();
    for _ in 0..5 {
        created.push(world.create_goal(protein_goal()).await.to_string());
    }
    let goals = readmodels::goals::Goals::new(infra::table::Table::new(store.clone()));
    let active = events_schema::events::goals::GoalStatus::Active;
    let (mut listed, mut cursor, mut pages) = (Vec::new(), None, 0);
    loop {
        let page = readmodels::history::PageRequest {
            limit: Some(2),
            cursor,
        };
        let found = goals.with_status(&world.meta.user, active, &page).await;
        let found = found.expect("a page");
        assert!(found.items.len() <= 2, "{found:?}");
        listed.extend(found.items.iter().map(|g| g.goal_id.to_string()));
        pages += 1;
        match found.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert!(pages >= 3, "five goals two a page: {pages} pages");
    created.sort();
    listed.sort();
    assert_eq!(listed, created, "each goal once");
    let forged = readmodels::history::PageRequest {
        limit: Some(2),
        cursor: Some("not-a-cursor".into()),
    };
    let refused = goals.with_status(&world.meta.user, active, &forged).await;
    assert!(
        matches!(
            refused,
            Err(readmodels::QueryError::Invalid {
                field: "cursor",
                ..
            })
        ),
        "{refused:?}"
    );
}
