//! The curated catalog under `/v1/catalog`: recipes and meal plans of a category, by
//! name, cursor-paginated, each page one Query of the `catalog` index. Any signed-in
//! user may browse; curation is an operator's (`vitals admin curate`).

use super::ApiError;
use crate::http::auth::AuthUser;
use crate::http::etag::viewed;
use crate::http::extract::ApiQuery;
use crate::http::responses;
use crate::http::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use readmodels::history::PageRequest;
use readmodels::views::{MealPlanView, Page, RecipeView};
use serde::Deserialize;

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
#[utoipa::path(
    get,
    path = "/v1/catalog/recipes",
    tag = "catalog",
    security(("bearer" = [])),
    params(CatalogQuery, responses::IfNoneMatch),
    responses(
        (status = 200, description = "A page of recipes.", body = Page<RecipeView>,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::QueryErrors,
    ),
)]
pub async fn recipes(
    State(state): State<AppState>,
    _caller: AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<CatalogQuery>,
) -> Result<Response, ApiError> {
    let page = state
        .api
        .reads
        .catalog
        .recipes(&query.category, &query.page())
        .await?;
    viewed(&headers, &page)
}

/// Curated meal plans of a category, by name: one index query per page.
#[utoipa::path(
    get,
    path = "/v1/catalog/meal-plans",
    tag = "catalog",
    security(("bearer" = [])),
    params(CatalogQuery, responses::IfNoneMatch),
    responses(
        (status = 200, description = "A page of meal plans.", body = Page<MealPlanView>,
         headers(("ETag" = String, description = "The representation's tag."))),
        (status = 304, response = responses::NotModified),
        responses::QueryErrors,
    ),
)]
pub async fn meal_plans(
    State(state): State<AppState>,
    _caller: AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<CatalogQuery>,
) -> Result<Response, ApiError> {
    let page = state
        .api
        .reads
        .catalog
        .meal_plans(&query.category, &query.page())
        .await?;
    viewed(&headers, &page)
}
