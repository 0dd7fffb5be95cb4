//! Request extractors with the API's error shape, and messages that name the field and
//! the rule it breaks, never a parser's internals: the caller (`AuthUser`, from the
//! bearer token: 401, 429), JSON bodies (415 not JSON, 413 too large, 400 not valid
//! JSON, 422 a field missing, unknown or invalid), raw bodies (413), query strings (400)
//! and the `Idempotency-Key` header.

use super::auth::AuthUser;
use super::error::ApiError;
use super::state::AppState;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use commands::CommandMeta;
use commands::meta::IdempotencyKey;
use events_schema::ids::UserId;
use serde::de::DeserializeOwned;

/// The largest request body accepted (413 beyond).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON body; rejections become `ApiError`s.
pub struct ApiJson<T>(pub T);

/// The parser's message of a data error, in the API's words: `<path>: <rule>`.
fn describe(path: &str, error: &serde_json::Error) -> String {
    let raw = error.to_string();
    // serde_json appends the position; the field's name says more.
    let message = raw.split(" at line ").next().unwrap_or(&raw).to_owned();
    let field = |name: &str| {
        if path.is_empty() || path == "." {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    if let Some(name) = between(&message, "missing field `", "`") {
        return format!("{}: is required", field(name));
    }
    if let Some(name) = between(&message, "unknown field `", "`") {
        // The path already ends at the unknown field.
        let named = if path.ends_with(name) {
            path.to_owned()
        } else {
            field(name)
        };
        return format!("{named}: is not a field of this request");
    }
    if path.is_empty() || path == "." {
        return "the body must be a JSON object with the documented fields".to_owned();
    }
    let rule = if let Some(expected) = message.split(", expected ").nth(1) {
        format!("must be {}", expected_in_words(expected))
    } else {
        message
    };
    format!("{path}: {rule}")
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = text.split_once(start)?.1;
    Some(rest.split_once(end)?.0)
}

/// serde's names of what it expected, as a person would say them.
fn expected_in_words(expected: &str) -> String {
    let words = match expected.trim() {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of at least 0",
        "i32" | "i64" => "a whole number",
        "f64" | "f32" => "a number",
        "a string" => "a string",
        "a boolean" => "true or false",
        "a sequence" => "an array",
        other if other.starts_with("struct ") || other.starts_with("a map") => "an object",
        other if other.starts_with("one of ") => return other.to_owned(),
        other if other.starts_with('`') => return format!("one of {other}"),
        other => {
            return other
                .trim_start_matches("a ")
                .to_owned()
                .replace("value", "a value");
        }
    };
    words.to_owned()
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "the body must be JSON, sent with Content-Type: application/json",
            ));
        }
        let ApiBytes(bytes) = ApiBytes::from_request(request, state).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// A request body as `T`: 400 when it is not JSON, 422 naming the field and the rule
/// when it is JSON but not a `T`. Every body is an object (serde would otherwise read an
/// array positionally and talk about "struct ... with 7 elements").
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let malformed = |inner: &serde_json::Error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            format!(
                "the body is not valid JSON (line {}, column {})",
                inner.line(),
                inner.column()
            ),
        )
    };
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| malformed(&e))?;
    if !value.is_object() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            "the body must be a JSON object with the documented fields",
        ));
    }
    // Read again from the text (not the value): quantities are read from their digits.
    let mut parser = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut parser).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if inner.is_data() {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation",
                describe(&path, &inner),
            )
        } else {
            malformed(&inner)
        }
    })
}

/// A query string; a missing, repeated or ill-typed parameter is `400 bad_query`, with
/// the parameter's name.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> axum::extract::FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let parser = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(parser)
            .map(ApiQuery)
            .map_err(|error| {
                let path = error.path().to_string();
                let message = error.into_inner().to_string();
                let text = if let Some(name) = between(&message, "missing field `", "`") {
                    format!("{name}: is required")
                } else if let Some(name) = between(&message, "duplicate field `", "`") {
                    format!("{name}: is given more than once")
                } else if path.is_empty() || path == "." {
                    "the query string is not valid".to_owned()
                } else {
                    format!("{path}: {message}")
                };
                ApiError::new(StatusCode::BAD_REQUEST, "bad_query", text)
            })
    }
}

/// A raw body (webhooks, whose signature covers the exact bytes); over the body limit
/// is `413 payload_too_large`.
pub struct ApiBytes(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBytes {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        axum::body::Bytes::from_request(request, state)
            .await
            .map(ApiBytes)
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        format!("the body is over {} bytes", MAX_BODY_BYTES),
                    )
                } else {
                    ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "bad_body",
                        "the body could not be read",
                    )
                }
            })
    }
}

/// The caller, from the request's bearer token: 401 when it is missing, expired or
/// forged, issued before the account's password or email last changed, and for an
/// account whose deletion was requested (`account_deleted`, from the request on); 429
/// over the user's rate limit.
impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(ApiError::unauthorized)?;
        let token = header
            .strip_prefix("Bearer ")
            .ok_or_else(ApiError::unauthorized)?;
        let claims = state.api.auth.verify(token.trim()).await?;
        let user = UserId::parse(&claims.sub).map_err(|_| ApiError::unauthorized())?;
        state.api.limits.user(&claims.sub)?;
        // A token outlives nothing: once the account's deletion is requested, or its
        // password or email changed since the token was issued, it reads and writes
        // nothing, whatever its expiry says.
        let api = &state.api;
        api.auth.still_holds(&api.identity, &user, &claims).await?;
        if let Some(seen) = parts.extensions.get::<super::request_log::Seen>() {
            seen.caller(&user);
        }
        Ok(AuthUser {
            user,
            timezone: claims.tz,
        })
    }
}

/// The [`CommandMeta`] of a request to `operation`: the caller, their timezone, and
/// their `Idempotency-Key` (theirs for this operation only), if any.
pub fn meta(
    caller: &AuthUser,
    headers: &HeaderMap,
    operation: &str,
) -> Result<CommandMeta, ApiError> {
    let meta = CommandMeta::new(caller.user.clone()).in_timezone(caller.timezone.clone());
    of_request(meta, headers, operation)
}

/// `meta` with what the request adds to it: its id (to correlate the command's events
/// with it) and its `Idempotency-Key`, scoped to `operation`, if it sent one.
pub fn of_request(
    mut meta: CommandMeta,
    headers: &HeaderMap,
    operation: &str,
) -> Result<CommandMeta, ApiError> {
    meta.correlation_id = super::request_log::request_id(headers);
    match headers.get("idempotency-key") {
        None => Ok(meta),
        Some(value) => {
            // A key outside its documented form is a malformed header (400), whatever
            // is wrong with it: not a validation error of the body (422).
            let bad_header = || {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_header",
                    "Idempotency-Key must be 1 to 128 visible ASCII characters without '#'",
                )
            };
            let key = value.to_str().map_err(|_| bad_header())?;
            let key = IdempotencyKey::parse(key).map_err(|_| bad_header())?;
            meta.idempotency_key = Some(key.for_operation(operation)?);
            Ok(meta)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        duration_s: u32,
        eaten_at: events_schema::time::Timestamp,
    }

    #[test]
    fn a_request_adds_its_id_and_its_key_for_this_operation_only() {
        let user = events_schema::ids::UserId::generate();
        let mut headers = HeaderMap::new();
        headers.insert("x-request-id", "req-1".parse().expect("header"));
        headers.insert("idempotency-key", "meal-1".parse().expect("header"));
        let meta = |headers: &HeaderMap, operation| {
            of_request(CommandMeta::new(user.clone()), headers, operation)
        };
        let logged = meta(&headers, "log_meal").expect("a valid key");
        assert_eq!(logged.correlation_id.as_deref(), Some("req-1"));
        let key = logged.idempotency_key.expect("the key").sort_key();
        assert!(key.contains("log_meal") && key.ends_with("meal-1"), "{key}");
        let other = meta(&headers, "edit_meal").expect("a valid key");
        assert_ne!(other.idempotency_key.map(|k| k.sort_key()), Some(key));
        // Without a key, nothing is idempotent; a key that is not visible ASCII is a
        // bad header, not a validation error of the body.
        headers.remove("idempotency-key");
        assert_eq!(
            meta(&headers, "log_meal").expect("no key").idempotency_key,
            None
        );
        headers.insert(
            "idempotency-key",
            axum::http::HeaderValue::from_bytes(b"caf\xe9").expect("header"),
        );
        let refused = meta(&headers, "log_meal").expect_err("not visible ASCII");
        assert_eq!(
            (refused.status, refused.code),
            (StatusCode::BAD_REQUEST, "bad_header")
        );
        // Every key outside the documented form is the same bad header: a space, a
        // `#`, nothing, over 128 characters.
        for bad in ["a b", "has#hash", "", &"k".repeat(129)] {
            headers.insert("idempotency-key", bad.parse().expect("header"));
            let refused = meta(&headers, "log_meal").expect_err(bad);
            assert_eq!(
                (refused.status, refused.code),
                (StatusCode::BAD_REQUEST, "bad_header"),
                "{bad:?}"
            );
        }
    }

    fn message(json: &str) -> String {
        parse_json::<Body>(json.as_bytes()).expect_err(json).message
    }

    #[test]
    fn messages_name_the_field_and_the_rule() {
        assert_eq!(
            message(r#"{"duration_s": 1, "eaten_at": "2026-03-01T08:00:00Z"}"#),
            "name: is required"
        );
        assert_eq!(
            message(r#"{"name": "x", "duration_s": -1, "eaten_at": "2026-03-01T08:00:00Z"}"#),
            "duration_s: must be a whole number of at least 0"
        );
        assert_eq!(
            message(r#"{"name": "x", "duration_s": 1, "eaten_at": "2026-02-30T08:00:00Z"}"#),
            "eaten_at: \"2026-02-30T08:00:00Z\" is not a real date-time"
        );
        assert_eq!(
            message(
                r#"{"name": "x", "duration_s": 1, "eaten_at": "2026-03-01T08:00:00Z", "x": 1}"#
            ),
            "x: is not a field of this request"
        );
        assert_eq!(
            message(r#"[1, 2]"#),
            "the body must be a JSON object with the documented fields"
        );
    }
}
