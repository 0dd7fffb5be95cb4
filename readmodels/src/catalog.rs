//! The curated catalog: recipes or meal plans of one category, by name, one Query of the
//! sparse `catalog` index of the nutrition table per page. It never touches user data:
//! only catalog items carry the index's keys.

use crate::QueryError;
use crate::history::{PageRequest, cursor_error, page_of};
use crate::views::{MealPlanView, Page, RecipeView};
use events_schema::events::nutrition::{MealPlanCurated, RecipeCurated};
use infra::store::{Cursor, IndexQuery};
use infra::table::{Table, contexts};

impl From<RecipeCurated> for RecipeView {
    fn from(r: RecipeCurated) -> Self {
        Self {
            recipe_id: r.recipe_id,
            name: r.name,
            category: r.category,
            nutrients: r.nutrients.into(),
        }
    }
}

impl From<MealPlanCurated> for MealPlanView {
    fn from(p: MealPlanCurated) -> Self {
        Self {
            meal_plan_id: p.meal_plan_id,
            name: p.name,
            category: p.category,
            recipes: p.recipes,
        }
    }
}

/// A category: a lowercase slug of 1 to 40 of a-z, 0-9 and `-` (part of the index key).
fn category(raw: &str) -> Result<&str, QueryError> {
    let ok = (1..=40).contains(&raw.len())
        && raw
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    ok.then_some(raw)
        .ok_or_else(|| QueryError::invalid("category", "must be 1 to 40 of a-z, 0-9 and -"))
}

#[derive(Debug, Clone)]
pub struct Catalog {
    table: Table<contexts::Nutrition>,
}

impl Catalog {
    pub fn new(table: Table<contexts::Nutrition>) -> Self {
        Self { table }
    }

    fn query(
        &self,
        tag: &str,
        raw_category: &str,
        page: &PageRequest,
    ) -> Result<IndexQuery, QueryError> {
        let category = category(raw_category)?;
        Ok(
            IndexQuery::partition("catalog", format!("CATALOG#{tag}#{category}"))
                .limit(page.limit()?)
                .after(page.cursor.clone().map(Cursor::from_text)),
        )
    }

    /// Recipes of `category`, by name.
    pub async fn recipes(
        &self,
        category: &str,
        page: &PageRequest,
    ) -> Result<Page<RecipeView>, QueryError> {
        let query = self.query("RECIPE", category, page)?;
        let found = self.table.query_index(&query).await.map_err(cursor_error)?;
        page_of::<RecipeCurated, RecipeView>(found)
    }

    /// Meal plans of `category`, by name.
    pub async fn meal_plans(
        &self,
        category: &str,
        page: &PageRequest,
    ) -> Result<Page<MealPlanView>, QueryError> {
        let query = self.query("MEAL_PLAN", category, page)?;
        let found = self.table.query_index(&query).await.map_err(cursor_error)?;
        page_of::<MealPlanCurated, MealPlanView>(found)
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Nutrition as NUTRITION;
    use infra::access::{AccessPattern as P, Op, Order::Forward, Sk};

    /// The catalog's read: one category, by name, through the sparse index.
    pub static ACCESS: &[P] = &[P::new(
        "a catalog category, by name",
        NUTRITION,
        Op::query_index("catalog", Forward, true),
        "CATALOG#",
        Sk::Whole,
        "GET /v1/catalog/recipes, GET /v1/catalog/meal-plans, vitals admin catalog",
    )
    .volume(0.5)
    .size(20, 1500)];
}
