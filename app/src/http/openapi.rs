//! The OpenAPI document of the HTTP API, generated from the handlers' `#[utoipa::path]`
//! annotations and served at `GET /openapi.json`. It describes the router; it never
//! changes what a handler does. `docs/openapi.json` is this document, committed, and a
//! test fails when the two drift apart.

use super::error::{ApiError, ErrorBody, ErrorDetail};
use super::limits::ClientAddress;
use super::state::AppState;
use super::{health, metrics, responses, routes};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::LazyLock;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Vitals API",
        version = env!("CARGO_PKG_VERSION"),
        description = "The Vitals health API for the mobile app. The user is whoever the bearer token says; \
every error is `{\"error\": {\"code\", \"message\"}}`; writes accept an `Idempotency-Key` header (the caller's, \
for that operation). Timestamps are RFC 3339 (any offset; answered as `YYYY-MM-DDTHH:MM:SS.mmmZ`, to the \
millisecond); days are `YYYY-MM-DD` in the user's timezone; quantities are JSON numbers. Reads answer with an \
`ETag`; `If-None-Match` gets `304`. `429` and `503` say when to come back in `Retry-After`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        health::healthz,
        metrics::metrics,
        openapi_json,
        routes::identity::register,
        routes::identity::login,
        routes::identity::refresh,
        routes::identity::logout,
        routes::profile::get_profile,
        routes::profile::patch_profile,
        routes::profile::change_password,
        routes::profile::delete_me,
        routes::nutrition::log_meal,
        routes::nutrition::meals_on,
        routes::nutrition::edit_meal,
        routes::nutrition::delete_meal,
        routes::nutrition::daily_nutrition,
        routes::activity::record_workout,
        routes::activity::workouts,
        routes::activity::latest_workout,
        routes::activity::current_training_block,
        routes::sleep::record_sleep,
        routes::sleep::sleep_history,
        routes::goals::create_goal,
        routes::goals::list_goals,
        routes::goals::get_goal,
        routes::goals::patch_goal,
        routes::goals::goal_progress,
        routes::dashboard::dashboard,
        routes::integrations::connect,
        routes::integrations::disconnect,
        routes::integrations::callback,
        routes::integrations::complete,
        routes::integrations::webhook,
        routes::plans::schedule_meal,
        routes::plans::scheduled_meals,
        routes::plans::remove_scheduled_meal,
        routes::plans::eat_scheduled_meal,
        routes::plans::start_training_block,
        routes::plans::training_blocks,
        routes::plans::end_training_block,
        routes::catalog::recipes,
        routes::catalog::meal_plans,
        routes::insights::readiness,
        routes::insights::environment,
    ),
    components(
        schemas(ErrorBody, ErrorDetail),
        responses(
            responses::MalformedJson,
            responses::BadRequest,
            responses::BadHeader,
            responses::BadQuery,
            responses::Unauthorized,
            responses::NotFound,
            responses::Conflict,
            responses::PayloadTooLarge,
            responses::UnsupportedMediaType,
            responses::Unprocessable,
            responses::TooManyRequests,
            responses::Throttled,
            responses::Internal,
            responses::NotModified,
            responses::Busy,
        ),
    ),
    modifiers(&BearerScheme),
    tags(
        (name = "identity", description = "Accounts and sessions: sign up, sign in, refresh, sign out."),
        (name = "profile", description = "The caller's account."),
        (name = "nutrition", description = "Meals and daily nutrition."),
        (name = "activity", description = "Workouts and training blocks."),
        (name = "sleep", description = "Sleep sessions."),
        (name = "goals", description = "Goals and their progress."),
        (name = "dashboard", description = "The home screen."),
        (name = "plans", description = "Scheduled meals and training blocks."),
        (name = "catalog", description = "Curated recipes and meal plans."),
        (name = "insights", description = "Readiness, weather and air."),
        (name = "integrations", description = "Wearable providers: OAuth connect, signed webhooks. The `sandbox` provider runs offline: see `connect`."),
        (name = "operations", description = "Health, metrics and this document."),
    ),
)]
struct ApiDoc;

/// Registers the `bearer` security scheme: the JWTs register and login issue.
struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A token from `POST /v1/auth/register` or `POST /v1/auth/login`.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The OpenAPI document as pretty JSON, with a trailing newline.
pub fn document() -> String {
    match ApiDoc::openapi().to_pretty_json() {
        Ok(json) => json + "\n",
        // Serializing a document of plain values cannot fail; never panic for it.
        Err(error) => {
            tracing::error!(%error, "serializing the OpenAPI document failed");
            String::from("{}\n")
        }
    }
}

static DOCUMENT: LazyLock<String> = LazyLock::new(document);

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API.", body = Object), (status = 429, response = super::responses::TooManyRequests)),
)]
pub async fn openapi_json(
    State(state): State<AppState>,
    client: ClientAddress,
) -> Result<impl IntoResponse, ApiError> {
    state.api.limits.operations(client)?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    ))
}
