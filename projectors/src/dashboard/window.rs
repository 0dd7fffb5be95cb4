//! The dashboard table and its rolling window: which days the home screen keeps (the
//! `WINDOW` row's high-water mark), the pruning of rows that fall out of it, and the
//! typed writes every dashboard projection makes inside it (a group of `DAILY#<date>`,
//! a dated row with its history twin).

use crate::convert::attr_of;
use crate::rows::{GroupChange, Moved, merge_group, put_if_newer, tombstone, upsert_newer};
use chrono::{Datelike as _, Duration};
use events_schema::keys::{SortKey, prefix};
use events_schema::rows::{DailyGroup, Row};
use events_schema::time::Day;
use infra::StoreError;
use infra::store::{Item, Key, Query, SortKeyCondition};
use infra::table::{Table, contexts};

/// Days of dated rows kept behind the newest day seen.
pub const WINDOW_DAYS: i64 = 30;
const WINDOW_SK: &str = "WINDOW";
/// The `WINDOW` row's high-water mark: the newest day seen, as a day number.
const HIGH_WATER: &str = "hwm";
/// The attribute every `DAILY#` row carries beside its groups.
const DAY: &str = "day";

/// What a dated pair of rows becomes: `R`, or its tombstone at the deleting version.
pub(super) enum Dated<'a, R> {
    Row(&'a R),
    Gone(u64),
}

/// Which days one event's application found inside the window (asked once per day).
#[derive(Debug, Default)]
pub struct Admissions(std::collections::HashMap<Day, bool>);

/// The dashboard table, with the window bookkeeping every dashboard projector shares.
#[derive(Clone)]
pub struct DashboardRows {
    pub(super) table: Table<contexts::Dashboard>,
}

fn day_number(day: Day) -> i64 {
    day.date().num_days_from_ce() as i64
}

impl DashboardRows {
    pub fn new(table: Table<contexts::Dashboard>) -> Self {
        Self { table }
    }

    /// Whether `day` is inside the window. Advancing the high-water mark prunes the
    /// rows that fell out of the window.
    async fn admit(&self, pk: &str, day: Day, memo: &mut Admissions) -> Result<bool, StoreError> {
        if let Some(known) = memo.0.get(&day) {
            return Ok(*known);
        }
        let admitted = self.admit_uncached(pk, day).await?;
        memo.0.insert(day, admitted);
        Ok(admitted)
    }

    async fn admit_uncached(&self, pk: &str, day: Day) -> Result<bool, StoreError> {
        let n = day_number(day);
        let key = Key::new(pk, WINDOW_SK);
        // Day numbers are positive for every valid `Day`, so the cast is lossless.
        if upsert_newer(&self.table, &key, Item::new(), HIGH_WATER, n as u64).await? {
            self.prune(pk, day.date() - Duration::days(WINDOW_DAYS))
                .await?;
            return Ok(true);
        }
        let hwm = self
            .table
            .get(&key, true)
            .await?
            .and_then(|row| attr_of::<i64>(&row, HIGH_WATER))
            .unwrap_or(n);
        Ok(n > hwm - WINDOW_DAYS)
    }

    /// Deletes dated rows of `cutoff` and before.
    async fn prune(&self, pk: &str, cutoff: chrono::NaiveDate) -> Result<(), StoreError> {
        let cutoff = Day::new(cutoff);
        for kind in [prefix::DAILY, prefix::RECENT_MEAL, prefix::RECENT_WORKOUT] {
            loop {
                let range = SortKeyCondition::up_to_day(kind, cutoff);
                let page = self
                    .table
                    .query(&Query::partition(pk).sort_key(range).limit(25).consistent())
                    .await?;
                if page.items.is_empty() {
                    break;
                }
                for row in page.items {
                    self.table.delete(&Key::of(&row)?, None).await?;
                }
            }
        }
        Ok(())
    }

    /// Applies `change` to the group `group` of `DAILY#<day>` (see `rows::merge_group`),
    /// if the day is inside the window.
    pub(super) async fn daily(
        &self,
        memo: &mut Admissions,
        pk: &str,
        (day, group): (Day, DailyGroup),
        change: GroupChange<'_>,
    ) -> Result<(), StoreError> {
        if !self.admit(pk, day, memo).await? {
            return Ok(());
        }
        let key = Key::new(pk, SortKey::Daily(day).to_string());
        let also = Item::from_iter([(DAY.to_owned(), crate::convert::value_of(&day))]);
        merge_group(&self.table, &key, group, change, &also)
            .await
            .map(|_| ())
    }

    /// An entity's entry in a group of its day's `DAILY#` row, taken off the day it moved
    /// from, if it moved: a workout of a day's activity, a session of a night's sleep.
    pub(super) async fn daily_member(
        &self,
        memo: &mut Admissions,
        pk: &str,
        group: DailyGroup,
        member: Moved<'_>,
    ) -> Result<(), StoreError> {
        for (day, entry) in member.entries() {
            self.daily(memo, pk, (day, group), GroupChange::Entry(entry))
                .await?;
        }
        Ok(())
    }

    /// A thing on a day, as the home screen keeps it (`recent`, inside the window) and as
    /// the history keeps it (`log`, forever): both written, or both tombstoned, if newer.
    pub(super) async fn dated_pair<R: Row>(
        &self,
        memo: &mut Admissions,
        pk: &str,
        day: Day,
        (recent, log): (SortKey, SortKey),
        row: Dated<'_, R>,
    ) -> Result<(), StoreError> {
        let admitted = self.admit(pk, day, memo).await?;
        let keys = [Some(log), admitted.then_some(recent)];
        for key in keys.into_iter().flatten() {
            let key = Key::new(pk, key.to_string());
            match &row {
                Dated::Row(row) => put_if_newer(&self.table, &key, *row).await?,
                Dated::Gone(version) => tombstone::<_, R>(&self.table, &key, *version).await?,
            };
        }
        Ok(())
    }
}
