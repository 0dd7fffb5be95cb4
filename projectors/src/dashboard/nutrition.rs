//! `DAILY#` nutrition totals, `RECENT_MEAL#` rows and the meal history (`~MEAL#`) from
//! nutrition events. The totals are a copy of what the meal commands computed in their
//! own transaction and carried in the event's `day_totals`: nothing here adds meals up.

use super::window::{Admissions, DashboardRows, Dated};
use crate::convert::item_of;
use crate::projector::{ProjectionError, Projector, decode, subscription, user_pk};
use crate::rows::GroupChange;
use async_trait::async_trait;
use events_schema::envelope::{EventEnvelope, EventPayload};
use events_schema::events::nutrition::{DayTotals, Meal, MealDeleted, MealEdited, MealLogged};
use events_schema::ids::MealId;
use events_schema::rows::{DailyGroup, DayNutrition, MealRow};
use events_schema::time::Day;
use infra::StoreError;

/// The projection of meals into the dashboard.
pub struct DashboardFromNutrition(pub DashboardRows);

impl DashboardFromNutrition {
    /// A meal's two rows on its day, taken off the day it moved from (if it moved).
    async fn meal(
        &self,
        memo: &mut Admissions,
        pk: &str,
        meal: &Meal,
        moved_from: Option<Day>,
    ) -> Result<(), StoreError> {
        if let Some(previous) = moved_from {
            let gone = Dated::<MealRow>::Gone(meal.version);
            self.meal_rows(memo, pk, (previous, &meal.meal_id), gone)
                .await?;
        }
        // The event's meal is the row: one type from the command to the read side.
        self.meal_rows(memo, pk, (meal.day, &meal.meal_id), Dated::Row(meal))
            .await
    }

    /// Writes (or tombstones) a meal's two rows of `day`.
    async fn meal_rows(
        &self,
        memo: &mut Admissions,
        pk: &str,
        (day, meal): (Day, &MealId),
        row: Dated<'_, MealRow>,
    ) -> Result<(), StoreError> {
        let keys = MealRow::keys(day, meal);
        self.0.dated_pair(memo, pk, day, keys, row).await
    }

    /// The day's totals, as the command that changed them versioned them.
    async fn totals(
        &self,
        memo: &mut Admissions,
        pk: &str,
        totals: &DayTotals,
    ) -> Result<(), StoreError> {
        let value = item_of(&DayNutrition {
            meals: totals.meals,
            totals: totals.totals,
        });
        let change = GroupChange::Whole(value, totals.version);
        self.0
            .daily(memo, pk, (totals.day, DailyGroup::Nutrition), change)
            .await
    }
}

#[async_trait]
impl Projector for DashboardFromNutrition {
    subscription!("dashboard-from-nutrition", Nutrition -> Dashboard, consumes crate::facts::MEAL_EVENTS, writes &["RECENT_MEAL#", "~MEAL#", "DAILY#", "WINDOW"]);

    async fn apply(&self, event: &EventEnvelope) -> Result<(), ProjectionError> {
        let mut memo = Admissions::default();
        match event.event_type.as_str() {
            MealLogged::EVENT_TYPE => {
                let logged: MealLogged = decode(event)?;
                let pk = user_pk(event)?;
                self.totals(&mut memo, &pk, &logged.day_totals).await?;
                self.meal(&mut memo, &pk, &logged.meal, None).await?;
            }
            MealEdited::EVENT_TYPE => {
                let edited: MealEdited = decode(event)?;
                let pk = user_pk(event)?;
                for totals in &edited.day_totals {
                    self.totals(&mut memo, &pk, totals).await?;
                }
                let moved = (edited.previous_day != edited.meal.day).then_some(edited.previous_day);
                self.meal(&mut memo, &pk, &edited.meal, moved).await?;
            }
            MealDeleted::EVENT_TYPE => {
                let deleted: MealDeleted = decode(event)?;
                let pk = user_pk(event)?;
                self.totals(&mut memo, &pk, &deleted.day_totals).await?;
                let gone = Dated::Gone(deleted.version);
                let meal = (deleted.day, &deleted.meal_id);
                self.meal_rows(&mut memo, &pk, meal, gone).await?;
            }
            _ => {}
        }
        Ok(())
    }
}
