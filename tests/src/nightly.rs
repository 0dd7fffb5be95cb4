//! The nightly readiness job as `vitals serve` runs it ([`NightlySchedule`]), driven by a
//! clock the test controls: a day is scored once it has ended in every timezone, once;
//! a user active that day gets a score, an inactive one does not.

use crate::backends::TestBackend;
use crate::commands::World;
use crate::model::capture::capturing;
use crate::model::deliver::{Delivery, deliver};
use commands::activity::RecordWorkout;
use commands::sleep::RecordSleep;
use events_schema::events::sleep::SleepStages;
use events_schema::time::{Clock, Day, Timestamp};
use infra::Store;
use infra::table::Table;
use projectors::insights::NightlySchedule;
use readmodels::insights::Insights;
use std::sync::Arc;

fn at(raw: &str) -> Timestamp {
    Timestamp::parse(raw).expect("timestamp")
}

fn day(raw: &str) -> Day {
    Day::parse(raw).expect("day")
}

pub async fn check(backend: TestBackend) {
    let capture = Arc::new(capturing(backend.store.clone()));
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
    deliver(0, &capture, Delivery::InOrder, committed).await;

    let insights = Insights::new(Table::new(shared.clone()));
    let mut schedule = NightlySchedule::new(Table::new(shared.clone()));
    let tenth = day("2026-03-10");

    // The evening of the 10th (UTC): the 10th has not ended everywhere yet.
    let scored = schedule.tick(clock.now()).await.expect("tick");
    assert!(scored.iter().all(|(d, _)| *d < tenth), "{scored:?}");
    assert_eq!(
        insights
            .readiness(&ana.meta.user, tenth)
            .await
            .expect("read"),
        None
    );

    // Noon UTC on the 11th: the 10th has ended in UTC-12 too. It is scored, once.
    let scored = schedule
        .tick(at("2026-03-11T12:00:00.000Z"))
        .await
        .expect("tick");
    assert_eq!(scored, vec![(tenth, 1)], "only Ana was active on the 10th");
    let score = insights
        .readiness(&ana.meta.user, tenth)
        .await
        .expect("read")
        .expect("Ana is scored");
    assert_eq!(score.day, tenth);
    // One run of 60 min (of 7 x 30) and one night of 480 min (of 7 x 480), each half
    // of the score: 60*50/210 + 480*50/3360 = 14 + 7; two days with data (the 8th, its
    // only meal deleted, has none).
    assert_eq!((score.score, score.days_with_data), (21, 2), "{score:?}");
    assert_eq!(
        insights
            .readiness(&ben.meta.user, tenth)
            .await
            .expect("read"),
        None
    );
    let again = schedule
        .tick(at("2026-03-11T18:00:00.000Z"))
        .await
        .expect("tick");
    assert!(again.is_empty(), "a day is scored once: {again:?}");

    // A process started days later catches up on the days it missed (Ben's 7th is too
    // far back), then moves one day at a time.
    let mut fresh = NightlySchedule::new(Table::new(shared.clone()));
    let scored = fresh
        .tick(at("2026-03-13T12:00:00.000Z"))
        .await
        .expect("tick");
    let days: Vec<Day> = scored.iter().map(|(d, _)| *d).collect();
    assert_eq!(days, vec![day("2026-03-11"), day("2026-03-12")]);
    drop(backend);
}
