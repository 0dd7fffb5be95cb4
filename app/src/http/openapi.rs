//! The OpenAPI document of the HTTP API, generated from the handlers' `#[utoipa::path]`
//! annotations and served at `GET /openapi.json`. It describes the router; it never
//! changes what a handler does. `docs/openapi.json` is this document, committed, and a
//! test fails when the two drift apart.

use super::error::{ErrorBody, ErrorDetail};
use super::{health, metrics, routes};
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
    responses((status = 200, description = "The OpenAPI 3.1 document of this API.", body = Object)),
)]
pub async fn openapi_json() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    )
}

/// Request parts and error responses that many operations share.
pub mod responses {
    use crate::http::error::ErrorBody;
    use utoipa::{IntoParams, ToResponse};

    /// A set of error responses many operations share, as references to the named
    /// responses below (`responses((status = 200, ...), ReadErrors)` in a path).
    macro_rules! error_set {
        ($(#[$doc:meta])* $name:ident: $($status:literal => $response:ident),+) => {
            $(#[$doc])*
            pub struct $name;

            impl utoipa::IntoResponses for $name {
                fn responses() -> std::collections::BTreeMap<
                    String,
                    utoipa::openapi::RefOr<utoipa::openapi::response::Response>,
                > {
                    [$(($status, stringify!($response))),+]
                        .into_iter()
                        .map(|(status, name)| {
                            (
                                status.to_string(),
                                utoipa::openapi::RefOr::Ref(
                                    utoipa::openapi::Ref::from_response_name(name),
                                ),
                            )
                        })
                        .collect()
                }
            }
        };
    }

    error_set!(
        /// Reads of the caller's own things.
        ReadErrors: "401" => Unauthorized, "404" => NotFound, "429" => TooManyRequests, "500" => Internal
    );
    error_set!(
        /// Reads with a query string.
        QueryErrors: "400" => BadQuery, "401" => Unauthorized, "422" => Unprocessable,
            "429" => TooManyRequests, "500" => Internal
    );
    error_set!(
        /// Writes with a JSON body.
        JsonWriteErrors: "400" => BadRequest, "401" => Unauthorized, "409" => Conflict,
            "413" => PayloadTooLarge, "415" => UnsupportedMediaType, "422" => Unprocessable,
            "429" => TooManyRequests, "500" => Internal
    );

    /// The `If-None-Match` header of reads.
    #[derive(IntoParams)]
    #[into_params(parameter_in = Header)]
    pub struct IfNoneMatch {
        /// The `ETag` of a representation the client has: `304` if it is still current.
        #[param(rename = "If-None-Match", value_type = String, required = false)]
        pub tag: Option<String>,
    }

    /// Not modified since the `ETag` the client sent: no body.
    #[derive(ToResponse)]
    #[response(
        description = "Not modified: the representation the `If-None-Match` names is current."
    )]
    pub struct NotModified;

    /// Busy: try again after `Retry-After` seconds.
    #[derive(ToResponse)]
    #[response(
        description = "`busy`: too many password checks at once; try again after `Retry-After` seconds.",
        headers(("Retry-After" = u64, description = "Seconds to wait."))
    )]
    pub struct Busy(pub ErrorBody);

    /// The `Idempotency-Key` header of writes.
    #[derive(IntoParams)]
    #[into_params(parameter_in = Header)]
    pub struct IdempotencyKey {
        /// 1 to 128 visible ASCII characters without `#`, the caller's for this operation:
        /// a retry with the same key and request gets the first response again and writes
        /// nothing; the same key with a different request is `422 idempotency_key_reused`;
        /// the same key on another operation is another request. Remembered for 24 hours.
        #[param(
            rename = "Idempotency-Key",
            value_type = String,
            required = false,
            example = "meal-2026-03-01-1",
            pattern = r#"^[!-"$-~]{1,128}$"#,
            min_length = 1,
            max_length = 128
        )]
        pub key: Option<String>,
    }

    #[derive(ToResponse)]
    #[response(description = "`malformed_json`: the body is not valid JSON.")]
    pub struct MalformedJson(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`malformed_json`: the body is not valid JSON; `bad_header`: `Idempotency-Key` is not visible ASCII."
    )]
    pub struct BadRequest(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(description = "`bad_header`: `Idempotency-Key` is not visible ASCII.")]
    pub struct BadHeader(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`bad_query`: a required query parameter is missing, repeated or of the wrong type."
    )]
    pub struct BadQuery(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`unauthorized`: the bearer token is missing, malformed, expired or forged; `account_deleted`: the account's deletion was requested."
    )]
    pub struct Unauthorized(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`not_found`: it does not exist, or it is not the caller's (another user's ids are never found)."
    )]
    pub struct NotFound(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`contention`: too many concurrent changes, try again; `conflict`: the current state does not allow it."
    )]
    pub struct Conflict(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(description = "`payload_too_large`: the body is over 64 KiB.")]
    pub struct PayloadTooLarge(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`unsupported_media_type`: the `Content-Type` is not `application/json`."
    )]
    pub struct UnsupportedMediaType(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`validation`: a field is missing, of the wrong type or invalid (the message starts with the field's name); `idempotency_key_reused`: the `Idempotency-Key` was used with a different request."
    )]
    pub struct Unprocessable(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`rate_limited`: too many requests from this user or address; `throttled`: the store is busy. Try again after `Retry-After` seconds.",
        headers(("Retry-After" = u64, description = "Seconds to wait."))
    )]
    pub struct TooManyRequests(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(
        description = "`throttled`: the store is busy. Try again after `Retry-After` seconds.",
        headers(("Retry-After" = u64, description = "Seconds to wait."))
    )]
    pub struct Throttled(pub ErrorBody);

    #[derive(ToResponse)]
    #[response(description = "`internal`: something went wrong; the cause is logged, never shown.")]
    pub struct Internal(pub ErrorBody);
}
