//! The history screens paged through two years of data, on any backend: every workout,
//! sleep session and meal of a day is listed exactly once, pages come newest first (a
//! day's meals in the order logged), and deleted or moved meals, whose tombstones stay
//! in the history rows, never show up.
//!
//! The facts go through the real command handlers and every projector (in commit order,
//! as a change feed delivers them); the pages are read through the query handlers.

use crate::backends::TestBackend;
use crate::commands::World;
use crate::model::capture::capturing;
use crate::model::deliver::{Delivery, deliver};
use commands::activity::RecordWorkout;
use commands::nutrition::{EditMeal, LogMeal};
use commands::sleep::RecordSleep;
use events_schema::events::sleep::SleepStages;
use events_schema::time::{Clock, Day, Timestamp};
use infra::Store;
use readmodels::history::{History, PageRequest};
use readmodels::views::Page;
use rust_decimal::Decimal;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;

/// How much history a run writes.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// Days of history, ending on the last day.
    pub days: u32,
    /// A workout and a sleep on every `every`-th day of them.
    pub every: u32,
    /// Meals logged on the meal day (some then deleted, some moved away, some moved in).
    pub meals: u32,
    /// The page sizes to read with.
    pub limits: &'static [usize],
}

/// The last day of the history; "now" is its evening.
const LAST_DAY: &str = "2026-03-01";

/// The day `days` before `day`.
fn before(day: Day, days: u32) -> Day {
    Day::new(day.date() - chrono::Duration::days(days.into()))
}

fn timestamp(day: Day, hms: &str) -> Timestamp {
    Timestamp::parse(&format!("{day}T{hms}.000Z")).expect("timestamp")
}

/// Reads every page of one list with `limit`; the items of all pages, in order, and how
/// many pages it took.
async fn all_pages<T, F, Fut>(limit: usize, mut read: F) -> (Vec<T>, usize)
where
    F: FnMut(PageRequest) -> Fut,
    Fut: Future<Output = Result<Page<T>, readmodels::QueryError>>,
{
    let mut items = Vec::new();
    let mut request = PageRequest {
        limit: Some(limit),
        cursor: None,
    };
    for pages in 1.. {
        let page = read(request.clone()).await.expect("a page");
        assert!(page.items.len() <= limit, "a page of {limit} held more");
        items.extend(page.items);
        match page.next_cursor {
            Some(cursor) => request.cursor = Some(cursor),
            None => return (items, pages),
        }
        assert!(pages < 100_000, "paging did not end");
    }
    unreachable!("the loop returns")
}

/// Asserts `listed` holds every id of `expected` exactly once and nothing else.
fn exactly_once(what: &str, listed: &[String], expected: &BTreeSet<String>) {
    let mut seen = BTreeMap::<&str, usize>::new();
    for id in listed {
        *seen.entry(id).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "{what}: listed more than once: {twice:?}");
    let missing: Vec<_> = expected
        .iter()
        .filter(|id| !seen.contains_key(id.as_str()))
        .collect();
    assert!(missing.is_empty(), "{what}: never listed: {missing:?}");
    let extra: Vec<_> = seen.keys().filter(|id| !expected.contains(**id)).collect();
    assert!(
        extra.is_empty(),
        "{what}: listed but not expected: {extra:?}"
    );
}

/// Writes `span` of history for one user on `backend`, projects it, and pages through
/// it with every limit of the span. Returns how many items were listed in all.
pub async fn check(backend: TestBackend, span: Span) -> usize {
    let last = Day::parse(LAST_DAY).expect("day");
    let capture = Arc::new(capturing(backend.store.clone()));
    let shared: Arc<dyn Store> = capture.clone();
    let world = World::with_clock(shared.clone(), Clock::manual(timestamp(last, "21:00:00")));
    let meta = &world.meta;
    let user = meta.user.clone();

    // Two years of workouts and sleep, oldest first.
    let mut workouts = BTreeSet::new();
    let mut nights = BTreeSet::new();
    for back in (0..span.days).rev().filter(|b| b % span.every == 0) {
        let day = before(last, back);
        let workout = world
            .activity
            .record_workout(
                meta,
                RecordWorkout {
                    sport: "run".into(),
                    started_at: timestamp(day, "07:00:00"),
                    timezone: "UTC".into(),
                    duration_s: 1800 + back,
                    distance_m: Some(5000),
                    calories: None,
                    perceived_effort: None,
                },
            )
            .await
            .expect("workout");
        workouts.insert(workout.value.workout_id.to_string());
        let sleep = world
            .sleep
            .record_sleep(
                meta,
                RecordSleep {
                    start: timestamp(day, "00:30:00"),
                    end: timestamp(day, "07:00:00"),
                    timezone: "UTC".into(),
                    score: 80,
                    stages: SleepStages {
                        awake_min: 10,
                        light_min: 200,
                        deep_min: 90,
                        rem_min: 90,
                    },
                },
            )
            .await
            .expect("sleep");
        nights.insert(sleep.value.sleep_id.to_string());
    }

    // One busy day of meals: every fifth is deleted, every seventh moved to the day
    // before, and a few meals of the day before moved in.
    let meal_day = before(last, 1);
    let day_before = before(meal_day, 1);
    let meal = |day: Day, n: u32| LogMeal {
        name: format!("Meal {n}"),
        eaten_at: timestamp(day, &format!("{:02}:{:02}:00", 6 + n / 60 % 12, n % 60)),
        timezone: "UTC".into(),
        calories: Decimal::from(100 + n),
        protein_g: Decimal::from(10),
        carbs_g: Decimal::from(20),
        fat_g: Decimal::from(5),
    };
    let mut on_day = BTreeSet::new();
    for n in 0..span.meals {
        let logged = world
            .nutrition
            .log_meal(meta, meal(meal_day, n))
            .await
            .expect("meal");
        let id = logged.value.meal_id;
        if n % 5 == 4 {
            world
                .nutrition
                .delete_meal(meta, &id)
                .await
                .expect("delete");
        } else if n % 7 == 6 {
            let edit = EditMeal {
                meal_id: id,
                meal: meal(day_before, n),
            };
            world
                .nutrition
                .edit_meal(meta, edit)
                .await
                .expect("move out");
        } else {
            on_day.insert(id.to_string());
        }
    }
    for n in 0..span.meals / 10 {
        let logged = world
            .nutrition
            .log_meal(meta, meal(day_before, 500 + n))
            .await
            .expect("meal the day before");
        let edit = EditMeal {
            meal_id: logged.value.meal_id.clone(),
            meal: meal(meal_day, 500 + n),
        };
        world
            .nutrition
            .edit_meal(meta, edit)
            .await
            .expect("move in");
        on_day.insert(logged.value.meal_id.to_string());
    }

    let committed = capture.observer().take();
    deliver(0, &capture, Delivery::InOrder, committed, &world.clock).await;

    let history = History::new(infra::table::Table::new(shared.clone()));
    let (history, user) = (&history, &user);
    let first = before(last, span.days - 1);
    let mut listed = 0;
    for &limit in span.limits {
        let (items, pages) = all_pages(limit, |p| async move {
            history.workouts(user, (first, last), &p).await
        })
        .await;
        let days: Vec<Day> = items.iter().map(|w| w.day).collect();
        assert!(days.is_sorted_by(|a, b| a >= b), "workouts newest first");
        let ids: Vec<String> = items.iter().map(|w| w.workout_id.to_string()).collect();
        exactly_once(&format!("workouts, limit {limit}"), &ids, &workouts);
        assert!(pages >= items.len().div_ceil(limit), "pages of {limit}");
        listed += ids.len();

        let (items, _) = all_pages(limit, |p| async move {
            history.sleep(user, (first, last), &p).await
        })
        .await;
        let days: Vec<Day> = items.iter().map(|s| s.night).collect();
        assert!(days.is_sorted_by(|a, b| a >= b), "nights newest first");
        let ids: Vec<String> = items.iter().map(|s| s.sleep_id.to_string()).collect();
        exactly_once(&format!("sleep, limit {limit}"), &ids, &nights);
        listed += ids.len();

        let (items, _) = all_pages(limit, |p| async move {
            history.meals_on(user, meal_day, &p).await
        })
        .await;
        assert!(items.iter().all(|m| m.day == meal_day), "meals of the day");
        let ids: Vec<String> = items.iter().map(|m| m.meal_id.to_string()).collect();
        exactly_once(&format!("meals, limit {limit}"), &ids, &on_day);
        listed += ids.len();
    }

    // A range inside the history lists exactly the facts of its days.
    let (from, to) = (before(last, 400), before(last, 100));
    let (items, _) = all_pages(span.limits[0], |p| async move {
        history.workouts(user, (from, to), &p).await
    })
    .await;
    let inside = span.days.min(401);
    let expected = (100..inside).filter(|b| b % span.every == 0).count();
    assert_eq!(items.len(), expected, "workouts from {from} to {to}");
    assert!(items.iter().all(|w| from <= w.day && w.day <= to));
    drop(backend);
    listed
}
