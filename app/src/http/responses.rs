//! Request parts and error responses that many operations share, for the OpenAPI
//! document: the routes name them in their `#[utoipa::path]`s and the document lists
//! them as components. (Apart from `openapi`, so routes and document do not import
//! each other.)

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
    /// Reads with a query string of one thing, which may not exist.
    QueryOneErrors: "400" => BadQuery, "401" => Unauthorized, "404" => NotFound,
        "422" => Unprocessable, "429" => TooManyRequests, "500" => Internal
);
error_set!(
    /// Writes with a JSON body.
    JsonWriteErrors: "400" => BadRequest, "401" => Unauthorized, "409" => Conflict,
        "413" => PayloadTooLarge, "415" => UnsupportedMediaType, "422" => Unprocessable,
        "429" => TooManyRequests, "500" => Internal
);
error_set!(
    /// Signing in and out (no bearer token; the `401` is each operation's own).
    SessionErrors: "400" => MalformedJson, "413" => PayloadTooLarge,
        "415" => UnsupportedMediaType, "422" => Unprocessable, "429" => TooManyRequests,
        "500" => Internal
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
#[response(description = "Not modified: the representation the `If-None-Match` names is current.")]
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
    /// 1 to 128 visible ASCII characters without `#` (any other is `400 bad_header`),
    /// the caller's for this operation:
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
    description = "`malformed_json`: the body is not valid JSON; `bad_header`: `Idempotency-Key` is not 1 to 128 visible ASCII characters without `#`."
)]
pub struct BadRequest(pub ErrorBody);

#[derive(ToResponse)]
#[response(
    description = "`bad_header`: `Idempotency-Key` is not 1 to 128 visible ASCII characters without `#`."
)]
pub struct BadHeader(pub ErrorBody);

#[derive(ToResponse)]
#[response(
    description = "`bad_query`: a required query parameter is missing, repeated or of the wrong type."
)]
pub struct BadQuery(pub ErrorBody);

#[derive(ToResponse)]
#[response(
    description = "`unauthorized`: the bearer token is missing, malformed, expired or forged, or was issued before the account's password or email last changed (sign in again); `account_deleted`: the account's deletion was requested."
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
#[response(description = "`unsupported_media_type`: the `Content-Type` is not `application/json`.")]
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
