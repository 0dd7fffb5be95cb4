//! The curated catalog under `/v1/catalog`: recipes and meal plans of a category, by
//! name, cursor-paginated, each page one Query of the `catalog` index. Any signed-in
//! user may browse; curation is an operator's (`vitals admin curate`).

use super::Answer;
use crate::http::callers::Me;
use crate::http::extract::ApiQuery;
use crate::http::responses;
use crate::http::state::AppState;
use axum::Router;
use axum::routing::get;
use readmodels::history::PageRequest;
use readmodels::views::{MealPlanView, Page, RecipeView};
use serde::Deserialize;
use vitals_api_macros::read;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/catalog/recipes", get(recipes))
        .route("/v1/catalog/meal-plans", get(meal_plans))
}

/// A category, and which page of it.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CatalogQuery {
    /// A lowercase slug: 1 to 40 of a-z, 0-9 and `-`.
    #[param(example = "breakfast", pattern = r"^[a-z0-9-]{1,40}$")]
    pub category: String,
    /// Items per page, 1 to 100 (50 if absent).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page (only cursors the server gave out are valid).
    #[param(pattern = r"^[A-Za-z0-9_-]+$", min_length = 1, max_length = 2048)]
    pub cursor: Option<String>,
}

impl CatalogQuery {
    fn page(&self) -> PageRequest {
        PageRequest {
            limit: self.limit,
            cursor: self.cursor.clone(),
        }
    }
}

/// Curated recipes of a category, by name: one index query per page.
#[read(
    path = "/v1/catalog/recipes", tag = "catalog", params(CatalogQuery),
    ok = "A page of recipes.", body = Page<RecipeView>, errors(responses::QueryErrors),
)]
pub async fn recipes(me: Me, ApiQuery(query): ApiQuery<CatalogQuery>) -> Answer {
    let catalog = &me.api.reads.catalog;
    me.view(&catalog.recipes(&query.category, &query.page()).await?)
}

/// Curated meal plans of a category, by name: one index query per page.
#[read(
    path = "/v1/catalog/meal-plans", tag = "catalog", params(CatalogQuery),
    ok = "A page of meal plans.", body = Page<MealPlanView>, errors(responses::QueryErrors),
)]
pub async fn meal_plans(me: Me, ApiQuery(query): ApiQuery<CatalogQuery>) -> Answer {
    let catalog = &me.api.reads.catalog;
    me.view(&catalog.meal_plans(&query.category, &query.page()).await?)
}
