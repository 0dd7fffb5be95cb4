//! The nightly readiness job ([`projectors::nightly`]) as `vitals serve` and the Lambda
//! run it, driven by a clock the test controls: a day is scored once it has ended in
//! every timezone, once; a user active that day gets a score, an inactive one does not;
//! a run stopped by its budget leaves the rest of the day to the next run, which goes on
//! from where it stopped.

use crate::commands::World;
use crate::model::capture::capturing;
use crate::model::deliver::{Delivery, deliver};
use commands::activity::RecordWorkout;
use commands::sleep::RecordSleep;
use events_schema::events::sleep::SleepStages;
use events_schema::ids::UserId;
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::{Clock, Day, Timestamp};
use infra::Store;
use infra::store::{Cursor, IndexQuery, Key};
use infra::table::{Table, contexts::Insights as Insights_};
use projectors::nightly::{self, Budget, DayRun, score_day};
use readmodels::insights::Insights;
use readmodels::views::ReadinessView;
use std::sync::Arc;

fn at(raw: &str) -> Timestamp {
    Timestamp::parse(raw).expect("timestamp")
}

fn day(raw: &str) -> Day {
    Day::parse(raw).expect("day")
}

pub async fn scores_active_users_once_their_day_has_ended(store: Arc<dyn Store>) {
    let capture = Arc::new(capturing(store));
    let shared: Arc<dyn Store> = capture.clone();
    let clock = Clock::manual(at("2026-03-10T21:00:00.000Z"));
    // Ana sleeps the night of the 10th in Auckland (UTC+13) and runs on the 10th;
    // Ben was active on the 7th only.
    let ana = World::with_clock(shared.clone(), clock.clone());
    let ben = World::with_clock(shared.clone(), clock.clone());
    ana.sleep
        .record_sleep(
            &ana.meta,
            RecordSleep {
                start: at("2026-03-09T10:00:00.000Z"),
                end: at("2026-03-09T18:00:00.000Z"),
                timezone: "Pacific/Auckland".into(),
                score: 85,
                stages: SleepStages {
                    awake_min: 20,
                    light_min: 250,
                    deep_min: 90,
                    rem_min: 120,
                },
            },
        )
        .await
        .expect("sleep");
    let run = |started_at: &str, timezone: &str| RecordWorkout {
        sport: "run".into(),
        started_at: at(started_at),
        timezone: timezone.into(),
        duration_s: 3600,
        distance_m: Some(10_000),
        calories: None,
        perceived_effort: None,
    };
    ana.activity
        .record_workout(&ana.meta, run("2026-03-10T07:00:00.000Z", "UTC"))
        .await
        .expect("ana's run");
    ben.activity
        .record_workout(&ben.meta, run("2026-03-07T07:00:00.000Z", "UTC"))
        .await
        .expect("ben's run");
    // A meal Ana logs on the 8th and deletes: that day has no data left.
    let oats = crate::commands::nutrition::meal("2026-03-08T08:00:00.000Z", "300", "10");
    let eaten = ana.log_meal(oats).await;
    let deleted = ana.nutrition.delete_meal(&ana.meta, &eaten).await;
    deleted.expect("the meal is deleted");
    let committed = capture.observer().take();
    deliver(0, &capture, Delivery::InOrder, committed, &clock).await;

    let insights = Insights::new(Table::new(shared.clone()));
    // The job's calls are recorded against the declared access patterns.
    let recorded = crate::access::recording(shared.clone(), crate::access::catalog());
    let table = Table::new(recorded.clone() as Arc<dyn Store>);
    let tick = |now: Timestamp| {
        let table = table.clone();
        async move {
            let runs = nightly::run(&table, now, Budget::unbounded()).await;
            let runs = runs.expect("run");
            assert!(runs.iter().all(|r| r.finished), "{runs:?}");
            runs.iter().map(|r| (r.day, r.scored)).collect::<Vec<_>>()
        }
    };
    let tenth = day("2026-03-10");

    // The evening of the 10th (UTC): the 10th has not ended everywhere yet.
    let scored = tick(clock.now()).await;
    assert!(scored.iter().all(|(d, _)| *d < tenth), "{scored:?}");
    assert_eq!(readiness(&insights, &ana, tenth).await, None);

    // Noon UTC on the 11th: the 10th has ended in UTC-12 too. It is scored, once.
    let scored = tick(at("2026-03-11T12:00:00.000Z")).await;
    assert_eq!(scored, vec![(tenth, 1)], "only Ana was active on the 10th");
    let score = readiness(&insights, &ana, tenth)
        .await
        .expect("Ana is scored");
    assert_eq!(score.day, tenth);
    // One run of 60 min (of 7 x 30) and one night of 480 min (of 7 x 480), each half
    // of the score: 60*50/210 + 480*50/3360 = 14 + 7; two days with data (the 8th, its
    // only meal deleted, has none).
    assert_eq!((score.score, score.days_with_data), (21, 2), "{score:?}");
    assert_eq!(readiness(&insights, &ben, tenth).await, None);
    let again = tick(at("2026-03-11T18:00:00.000Z")).await;
    assert!(again.is_empty(), "a day is scored once: {again:?}");

    // A run days later catches up on the days missed (Ben's 7th is too far back).
    let scored = tick(at("2026-03-13T12:00:00.000Z")).await;
    let days: Vec<Day> = scored.iter().map(|(d, _)| *d).collect();
    assert_eq!(days, vec![day("2026-03-11"), day("2026-03-12")]);
    crate::access::finish(&recorded, "nightly");
}

/// `user`'s readiness score of `day`, if the job has scored it.
async fn readiness(insights: &Insights, user: &World, day: Day) -> Option<ReadinessView> {
    insights
        .readiness(&user.meta.user, day)
        .await
        .expect("read")
}

/// `n` users who each ate on `raw_day` (UTC), their markers projected.
async fn active_users(
    store: Arc<dyn Store>,
    raw_day: &str,
    n: usize,
) -> (Vec<World>, Table<Insights_>) {
    let capture = Arc::new(capturing(store));
    let shared: Arc<dyn Store> = capture.clone();
    let clock = Clock::manual(at(&format!("{raw_day}T21:00:00.000Z")));
    let mut users = Vec::new();
    for _ in 0..n {
        let user = World::with_clock(shared.clone(), clock.clone());
        let oats =
            crate::commands::nutrition::meal(&format!("{raw_day}T08:00:00.000Z"), "300", "10");
        user.log_meal(oats).await;
        users.push(user);
    }
    let committed = capture.observer().take();
    deliver(0, &capture, Delivery::InOrder, committed, &clock).await;
    (users, Table::new(shared))
}

/// A budget of pages of one user each.
fn one_user_a_page(pages: Option<usize>) -> Budget {
    Budget {
        page_size: 1,
        pages,
        ..Budget::unbounded()
    }
}

/// Three users active on one day; a run with a budget of one page of one user scores
/// one and stops; the next goes on from there and scores the other two (not three);
/// then the day is finished and a third run does nothing.
pub async fn goes_on_from_where_a_stopped_run_left_the_day(store: Arc<dyn Store>) {
    // Other days than `scores_active_users_once_their_day_has_ended`'s (and each
    // other's): on DynamoDB the tests of a process share the tables, and the job's
    // checkpoints are per day, not per user.
    let (users, table) = active_users(store, "2026-05-20", 3).await;
    let twentieth = day("2026-05-20");

    let first = score_day(&table, twentieth, &mut one_user_a_page(Some(1))).await;
    let stopped = DayRun {
        day: twentieth,
        scored: 1,
        finished: false,
    };
    assert_eq!(first.expect("run"), Some(stopped));
    let second = score_day(&table, twentieth, &mut one_user_a_page(None)).await;
    let rest = DayRun {
        scored: 2,
        finished: true,
        ..stopped
    };
    assert_eq!(
        second.expect("run"),
        Some(rest),
        "it goes on from the first run"
    );
    let third = score_day(&table, twentieth, &mut one_user_a_page(None)).await;
    assert_eq!(third.expect("run"), None, "the day is finished");

    let insights = Insights::new(table);
    for user in &users {
        let score = readiness(&insights, user, twentieth).await;
        let score = score.expect("every user is scored");
        assert_eq!(score.days_with_data, 1, "{score:?}");
    }
}

/// The user a day's checkpoint names (its cursor is the last key a page read), if any.
async fn named_in_checkpoint(table: &Table<Insights_>, day: Day) -> Option<UserId> {
    let key = Key::new(
        PartitionKey::ReadinessJob.to_string(),
        SortKey::JobRun(day).to_string(),
    );
    let checkpoint = table
        .get(&key, true)
        .await
        .expect("read")
        .expect("a checkpoint");
    let cursor = checkpoint.get("cursor").and_then(|c| c.as_str())?;
    let last = Cursor::from_text(cursor).to_key(&["pk"]).expect("a cursor");
    match last.get("pk").map(|pk| pk.parse()) {
        Some(Ok(PartitionKey::User(user))) => Some(user),
        other => panic!("a cursor naming no user: {other:?}"),
    }
}

/// A checkpoint keeps no erased user's id: erasing the user its cursor names removes the
/// cursor (the next run goes through the day from its first user); and a run whose last
/// user of a page is being erased (tombstone written, not yet drained) leaves no cursor
/// naming them either.
pub async fn keeps_no_erased_users_place_in_a_checkpoint(store: Arc<dyn Store>) {
    let (users, table) = active_users(store, "2026-07-14", 3).await;
    let fourteenth = day("2026-07-14");
    let at = at("2026-07-15T12:00:00.000Z");

    // Erased after the checkpoint was written: the erasure removes the cursor.
    let first = score_day(&table, fourteenth, &mut one_user_a_page(Some(1))).await;
    assert_eq!(first.expect("run").map(|r| r.scored), Some(1));
    let named = named_in_checkpoint(&table, fourteenth)
        .await
        .expect("a cursor");
    commands::erasure::begin(&table, &named, at)
        .await
        .expect("tombstone");
    commands::erasure::erase(&table, &named)
        .await
        .expect("erase");
    assert_eq!(named_in_checkpoint(&table, fourteenth).await, None);

    // Being erased as the run reads them: the run's own look removes the cursor.
    let first_marker = IndexQuery::partition("active-day", format!("DAY#{fourteenth}")).limit(1);
    let next = table.query_index(&first_marker).await.expect("index").items;
    let pk = next
        .first()
        .and_then(|m| m.get("pk"))
        .and_then(|pk| pk.as_str());
    let Some(Ok(PartitionKey::User(being_erased))) = pk.map(str::parse) else {
        panic!("no marker left: {next:?}");
    };
    commands::erasure::begin(&table, &being_erased, at)
        .await
        .expect("tombstone");
    let second = score_day(&table, fourteenth, &mut one_user_a_page(Some(1))).await;
    assert_eq!(
        second.expect("run").map(|r| r.scored),
        Some(0),
        "an erased user is not scored"
    );
    assert_eq!(named_in_checkpoint(&table, fourteenth).await, None);

    // The day then finishes with the one user left, scored from the first page.
    let rest = score_day(&table, fourteenth, &mut one_user_a_page(None)).await;
    assert_eq!(
        rest.expect("run").map(|r| (r.scored, r.finished)),
        Some((1, true))
    );
    let erased = [&named, &being_erased];
    let kept: Vec<_> = users
        .iter()
        .filter(|u| !erased.contains(&&u.meta.user))
        .collect();
    assert_eq!(kept.len(), 1);
}

/// Activity recorded after the job finished its day counts: a user whose first meal of
/// the day is logged late gets a score, a user already scored is scored again from the
/// workout they record late, and a late change scores no other day of its week on which
/// the user was not active.
pub async fn scores_activity_recorded_after_the_day_was_finished(store: Arc<dyn Store>) {
    let capture = Arc::new(capturing(store));
    let shared: Arc<dyn Store> = capture.clone();
    let clock = Clock::manual(at("2026-08-12T21:00:00.000Z"));
    let (ana, ben) = (
        World::with_clock(shared.clone(), clock.clone()),
        World::with_clock(shared.clone(), clock.clone()),
    );
    let meal = |at: &str| crate::commands::nutrition::meal(at, "300", "10");
    ana.log_meal(meal("2026-08-10T08:00:00.000Z")).await;
    let deliver_all = || async {
        let committed = capture.observer().take();
        deliver(0, &capture, Delivery::InOrder, committed, &clock).await;
    };
    deliver_all().await;
    let table = Table::new(shared.clone());
    let (tenth, eleventh) = (day("2026-08-10"), day("2026-08-11"));
    for day in [tenth, eleventh] {
        let run = score_day(&table, day, &mut Budget::unbounded()).await;
        assert!(run.expect("run").is_some_and(|r| r.finished));
    }
    let insights = Insights::new(table);
    let before = readiness(&insights, &ana, tenth)
        .await
        .expect("Ana is scored");
    assert_eq!(readiness(&insights, &ben, tenth).await, None);

    // Late: Ben's first meal of the 10th, Ana's run of the 10th.
    ben.log_meal(meal("2026-08-10T19:00:00.000Z")).await;
    let run = RecordWorkout {
        sport: "run".into(),
        started_at: at("2026-08-10T07:00:00.000Z"),
        timezone: "UTC".into(),
        duration_s: 3600,
        distance_m: None,
        calories: None,
        perceived_effort: None,
    };
    ana.activity
        .record_workout(&ana.meta, run)
        .await
        .expect("run");
    deliver_all().await;

    let ben_scored = readiness(&insights, &ben, tenth)
        .await
        .expect("Ben is scored late");
    assert_eq!(ben_scored.days_with_data, 1, "{ben_scored:?}");
    let after = readiness(&insights, &ana, tenth)
        .await
        .expect("Ana is scored");
    assert!(after.score > before.score, "{before:?} then {after:?}");
    assert_eq!(
        readiness(&insights, &ben, eleventh).await,
        None,
        "Ben was not active on the 11th"
    );
}
