//! The nightly readiness job: for each day that has ended in every timezone, a
//! `READINESS#<date>` row for every user active that day (listed through the
//! `active-day` index, never a scan), written from the user's markers of the last seven
//! days ([`readiness_score`]). Activity recorded after the job finished its day is
//! scored as the insights projections apply it ([`rescore_late`]).
//!
//! A run can stop anywhere and the next goes on from there. After each page of a day's
//! users it records in a checkpoint (`JOB#readiness` / `RUN#<date>`, insights table)
//! where the next page starts, and whether the day is finished; a run cut short by its
//! [`Budget`] (a Lambda's deadline) or by a crash leaves the rest to the next run, and a
//! finished day is not scored again. Each run looks at the last [`CATCH_UP_DAYS`] ended
//! days, so a night the job missed is scored by the next run.
//!
//! Two runs at once (an operator's and the schedule's) repeat work, never skip any: a
//! checkpoint records only a position before which its writer scored every user, and a
//! score is an idempotent put of a value computed from the same markers.
//!
//! A cursor is the last key a page read, which names a user: an account's erasure
//! removes a cursor naming it (`commands::erasure::forget_job_cursors`), and the day's
//! next run starts again from its first user.

use crate::convert::{item_of, row_of};
use chrono::Duration;
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::rows::{ActiveDayRow, JobRunRow, ReadinessRow};
use events_schema::time::{Day, Timestamp};
use infra::StoreError;
use infra::store::{Cursor, IndexQuery, Item, Key, Query, SortKeyCondition, now_epoch_seconds};
use infra::table::{Table, contexts};
use std::collections::BTreeSet;
use std::time::Instant;

/// How many ended days a run looks at: the latest and the one before, so a run that
/// failed or did not happen one night is made up by the next.
pub const CATCH_UP_DAYS: i64 = 2;

/// How long a day's checkpoint is kept: long after it can matter (a run looks
/// [`CATCH_UP_DAYS`] back), short enough that checkpoints do not pile up.
const CHECKPOINT_KEPT_DAYS: i64 = 30;

/// How much one run may do: pages of a day's users, each of `page_size` users, until
/// `pages` are spent or `deadline` has passed (whichever comes first), checked before
/// each page.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub page_size: usize,
    pub pages: Option<usize>,
    pub deadline: Option<Instant>,
}

impl Budget {
    /// Pages of 100 users until the work is done.
    pub fn unbounded() -> Self {
        Self {
            page_size: 100,
            pages: None,
            deadline: None,
        }
    }

    /// Pages of 100 users while `deadline` has not passed.
    pub fn until(deadline: Instant) -> Self {
        Self {
            deadline: Some(deadline),
            ..Self::unbounded()
        }
    }

    /// Takes a page from the budget; false when it is spent.
    fn take_page(&mut self) -> bool {
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return false;
        }
        match &mut self.pages {
            Some(0) => false,
            Some(pages) => {
                *pages -= 1;
                true
            }
            None => true,
        }
    }
}

/// What one run did for one day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayRun {
    pub day: Day,
    /// Users this run scored.
    pub scored: usize,
    /// Every active user of the day is scored (by this run or an earlier one).
    pub finished: bool,
}

/// The latest day that has ended in every timezone at `now`. A user's day is a day of
/// their own timezone, and the last place a day ends is UTC-12: day D has ended
/// everywhere at D+1 12:00 UTC. Scoring then (rather than per timezone) scores each
/// user after their own night, once, with every marker of the day in place.
pub fn last_ended_day(now: Timestamp) -> Day {
    Day::new((now.datetime() - Duration::hours(12)).date_naive() - Duration::days(1))
}

/// Scores the ended days of the last [`CATCH_UP_DAYS`] not finished yet, oldest first,
/// within `budget`; returns what it did for each day it worked on (none when every day
/// was finished already).
pub async fn run(
    table: &Table<contexts::Insights>,
    now: Timestamp,
    mut budget: Budget,
) -> Result<Vec<DayRun>, StoreError> {
    let last = last_ended_day(now);
    let mut runs = Vec::new();
    for back in (0..CATCH_UP_DAYS).rev() {
        let day = Day::new(last.date() - Duration::days(back));
        let Some(run) = score_day(table, day, &mut budget).await? else {
            continue;
        };
        runs.push(run);
        if !run.finished {
            break;
        }
    }
    Ok(runs)
}

/// Scores the users of `day` from where its checkpoint says, within `budget`; `None`
/// when the day is finished already.
pub async fn score_day(
    table: &Table<contexts::Insights>,
    day: Day,
    budget: &mut Budget,
) -> Result<Option<DayRun>, StoreError> {
    let checkpoint = table.get(&checkpoint_key(day), true).await?;
    let run: JobRunRow = checkpoint.and_then(|c| row_of(&c).ok()).unwrap_or_default();
    if run.finished {
        return Ok(None);
    }
    let cursor = run.cursor.as_deref().map(Cursor::from_text);
    score_from(table, day, cursor, budget, true).await.map(Some)
}

/// Scores every user active on `day` from the first, whatever earlier runs did (an
/// operator's rerun of a day); returns how many. A day that has not ended everywhere
/// at `now` is scored without checkpoints: the job scores it again once it has ended.
pub async fn rescore_day(
    table: &Table<contexts::Insights>,
    day: Day,
    now: Timestamp,
) -> Result<usize, StoreError> {
    let ended = day <= last_ended_day(now);
    let run = score_from(table, day, None, &mut Budget::unbounded(), ended).await?;
    Ok(run.scored)
}

async fn score_from(
    table: &Table<contexts::Insights>,
    day: Day,
    mut cursor: Option<Cursor>,
    budget: &mut Budget,
    checkpoints: bool,
) -> Result<DayRun, StoreError> {
    let mut run = DayRun {
        day,
        scored: 0,
        finished: false,
    };
    while budget.take_page() {
        let query = IndexQuery::partition("active-day", ActiveDayRow::index_pk(day))
            .limit(budget.page_size)
            .after(cursor);
        let page = table.query_index(&query).await?;
        for marker in &page.items {
            if score_user(table, day, marker).await? {
                run.scored += 1;
            }
        }
        run.finished = page.cursor.is_none();
        if checkpoints {
            let checkpoint = checkpoint(day, page.cursor.as_ref(), run.finished);
            table.put(checkpoint, None).await?;
            if let Some(next) = &page.cursor {
                forget_if_erased(table, next).await?;
            }
        }
        if run.finished {
            break;
        }
        cursor = page.cursor;
    }
    Ok(run)
}

/// Writes the readiness row of the user whose `ACTIVE_DAY` marker this is (the index
/// projects the key only); whether it scored them (not an erased user).
async fn score_user(
    table: &Table<contexts::Insights>,
    day: Day,
    marker: &Item,
) -> Result<bool, StoreError> {
    match Key::of(marker) {
        Ok(key) => score(table, day, &key.pk, Scoring::Active).await,
        Err(_) => Ok(false),
    }
}

/// A user's markers changed on `changed` days (an event the insights projections
/// applied). The readiness of each day whose week holds one of them (the day itself and
/// the six after) and that the job has finished already is scored again for this user,
/// from the markers as they are now: activity recorded late (a wearable syncing days
/// later, a meal logged for yesterday) counts, including a user's first of such a day.
/// A day the job has not finished scores it when the job reaches the user. One query of
/// the job's checkpoints per call.
pub async fn rescore_late(
    table: &Table<contexts::Insights>,
    pk: &str,
    changed: &[Day],
    now: Timestamp,
) -> Result<(), StoreError> {
    // Only a day that has ended everywhere is ever finished (the job scores no other,
    // `rescore_day` keeps no checkpoint of one), so a change of days after the last
    // ended one (today's meal) cannot concern a finished day: no query.
    let last_ended = last_ended_day(now);
    if changed.iter().all(|day| *day > last_ended) {
        return Ok(());
    }
    let finished = finished_days(table).await?;
    let weeks = changed
        .iter()
        .flat_map(|day| (0..7).map(move |later| Day::new(day.date() + Duration::days(later))));
    let due: BTreeSet<Day> = weeks.filter(|day| finished.contains(day)).collect();
    for day in due {
        score(table, day, pk, Scoring::Late).await?;
    }
    Ok(())
}

/// The days whose checkpoint says finished (at most [`CHECKPOINT_KEPT_DAYS`] of them).
async fn finished_days(table: &Table<contexts::Insights>) -> Result<BTreeSet<Day>, StoreError> {
    let mut finished = BTreeSet::new();
    let mut cursor = None;
    loop {
        let job = PartitionKey::ReadinessJob.to_string();
        let page = table
            .query(&Query::partition(job).consistent().after(cursor))
            .await?;
        for checkpoint in &page.items {
            let done = row_of::<JobRunRow>(checkpoint).is_ok_and(|run| run.finished);
            let sk = Key::of(checkpoint).map(|key| key.sk.parse::<SortKey>());
            if let (true, Ok(Ok(SortKey::JobRun(day)))) = (done, sk) {
                finished.insert(day);
            }
        }
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(finished),
        }
    }
}

/// Why a user is scored for a day.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scoring {
    /// The job found them through the day's index: active that day.
    Active,
    /// Their markers changed after the job finished the day: scored if they are active
    /// that day now or were scored for it before (as the job would have), not for every
    /// day of the week their change falls in.
    Late,
}

/// Writes the readiness row of `day` for the user of partition `pk`; whether it scored
/// them (not an erased user, not another kind of partition, not a late change on a day
/// they have no score and no activity for).
async fn score(
    table: &Table<contexts::Insights>,
    day: Day,
    pk: &str,
    scoring: Scoring,
) -> Result<bool, StoreError> {
    let Ok(PartitionKey::User(user)) = pk.parse() else {
        return Ok(false);
    };
    if commands::erasure::tombstone(table, &user).await?.is_some() {
        return Ok(false);
    }
    let week_start = Day::new(day.date() - Duration::days(6));
    let range = SortKeyCondition::Between(
        SortKey::ActiveDay(week_start).to_string(),
        SortKey::ActiveDay(day).to_string(),
    );
    let query = Query::partition(pk).sort_key(range).consistent();
    let week = markers(table.query(&query).await?.items)?;
    let readiness = Key::new(pk, SortKey::Readiness(day).to_string());
    if scoring == Scoring::Late {
        let active = week.iter().any(|m| m.day == day && m.had_data());
        if !active && table.get(&readiness, true).await?.is_none() {
            return Ok(false);
        }
    }
    let row = ReadinessRow {
        day,
        score: readiness_score(&week),
        days_with_data: u64::try_from(week.iter().filter(|m| m.had_data()).count())
            .unwrap_or(u64::MAX),
    };
    let mut item = item_of(&row);
    item.extend(readiness.to_item());
    table.put(item, None).await?;
    // Erased meanwhile: the erasure's drain may have passed already.
    if commands::erasure::tombstone(table, &user).await?.is_some() {
        commands::erasure::erase(table, &user).await?;
        return Ok(false);
    }
    Ok(true)
}

/// A cursor is the last key of a page, a user's marker: if that user's account is being
/// erased, the checkpoint must not keep their id. The erasure removes such cursors after
/// writing the tombstone; this look, after the checkpoint is written, catches one the
/// erasure's pass missed (one of the two sees the other's write). The run itself goes on
/// from its cursor in memory.
async fn forget_if_erased(
    table: &Table<contexts::Insights>,
    next: &Cursor,
) -> Result<(), StoreError> {
    let Ok(key) = next.to_key(&["pk"]) else {
        return Ok(());
    };
    let Some(Ok(PartitionKey::User(user))) = key.get("pk").map(|pk| pk.parse()) else {
        return Ok(());
    };
    if commands::erasure::tombstone(table, &user).await?.is_some() {
        let pk = PartitionKey::User(user).to_string();
        commands::erasure::forget_job_cursors(table, &pk).await?;
    }
    Ok(())
}

/// A readiness score from a week of markers: sleep against 8 h a night and activity
/// against 30 min a day, each half of the score, capped at 100.
pub fn readiness_score(markers: &[ActiveDayRow]) -> u64 {
    let sleep: u64 = markers.iter().map(|m| m.sleep_minutes).sum();
    let active: u64 = markers.iter().map(|m| m.active_minutes).sum();
    (sleep * 50 / (7 * 480)).min(50) + (active * 50 / (7 * 30)).min(50)
}

/// A week's marker rows, decoded.
fn markers(items: Vec<Item>) -> Result<Vec<ActiveDayRow>, StoreError> {
    items
        .into_iter()
        .map(|item| {
            row_of(&item)
                .map_err(|e| StoreError::Backend(format!("a day marker does not decode: {e}")))
        })
        .collect()
}

fn checkpoint_key(day: Day) -> Key {
    Key::new(
        PartitionKey::ReadinessJob.to_string(),
        SortKey::JobRun(day).to_string(),
    )
}

/// A day's checkpoint: where its next page starts, whether it is finished.
fn checkpoint(day: Day, next: Option<&Cursor>, finished: bool) -> Item {
    // Kept from when it is written, not from the day: an operator may score an old day.
    let expires_at = now_epoch_seconds() + CHECKPOINT_KEPT_DAYS * 24 * 3600;
    let mut item = item_of(&JobRunRow {
        finished,
        cursor: next.map(|next| next.as_str().to_owned()),
        expires_at,
    });
    item.extend(checkpoint_key(day).to_item());
    item
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Insights as INSIGHTS;
    use infra::access::{AccessPattern as P, Op, Order::Forward, Sk};

    /// The nightly readiness job's calls.
    pub static ACCESS: &[P] = &[
        P::new(
            "the users active on a day",
            INSIGHTS,
            Op::query_index("active-day", Forward, true),
            "DAY#",
            Sk::Whole,
            "the nightly readiness job (a page of users at a time)",
        )
        .volume(0.01)
        .size(100, 300),
        P::new(
            "where the job is in a day",
            INSIGHTS,
            Op::get(true),
            "JOB#",
            Sk::exact("RUN#"),
            "the nightly readiness job (a day's run resumed or skipped once finished)",
        )
        .volume(0.01)
        .size(1, 200),
        P::new(
            "save the job's place",
            INSIGHTS,
            Op::Put,
            "JOB#",
            Sk::exact("RUN#"),
            "the nightly readiness job (after each page)",
        )
        .volume(0.01)
        .size(1, 200),
        P::new(
            "a user's week of day markers",
            INSIGHTS,
            Op::query(Forward, false, true),
            "USER#",
            Sk::range("ACTIVE_DAY#"),
            "the nightly readiness job (one user scored)",
        )
        .volume(1.0)
        .size(7, 300),
        P::new(
            "record a day's readiness",
            INSIGHTS,
            Op::Put,
            "USER#",
            Sk::exact("READINESS#"),
            "the nightly readiness job",
        )
        .volume(1.0)
        .size(1, 300),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_of_pages_is_spent_one_page_at_a_time() {
        let mut budget = Budget {
            pages: Some(2),
            ..Budget::unbounded()
        };
        assert!(budget.take_page());
        assert!(budget.take_page());
        assert!(!budget.take_page());
        assert!(Budget::unbounded().take_page());
    }

    #[test]
    fn a_budget_whose_deadline_has_passed_gives_no_page() {
        let mut passed = Budget::until(Instant::now());
        assert!(!passed.take_page());
        let later = Instant::now() + std::time::Duration::from_secs(3600);
        assert!(Budget::until(later).take_page());
    }

    #[test]
    fn the_last_ended_day_is_the_one_ended_in_utc_minus_12() {
        let day = |raw: &str| last_ended_day(Timestamp::parse(raw).expect("timestamp"));
        assert_eq!(day("2026-03-11T11:59:59.000Z").to_string(), "2026-03-09");
        assert_eq!(day("2026-03-11T12:00:00.000Z").to_string(), "2026-03-10");
    }
}
