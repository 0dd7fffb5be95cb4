//! Every request's id and its access log line.
//!
//! The id is the trace id of the W3C `traceparent` the client sent (32 lowercase hex
//! digits, not all zero), or a new one. It is answered in `x-request-id`, handed to
//! commands (as the `x-request-id` request header, always overwritten here, so a client
//! cannot pick another) as the correlation id of the events they record, and it is a
//! field of the request's span, so every line logged while serving it carries it;
//! projectors log the events' correlation id in turn.
//!
//! The access log line (info, target `vitals::access`): method, route template, status,
//! latency, a digest of the caller's user id, the request id. Never a token, a password
//! or a body.

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use events_schema::ids::UserId;
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tracing::Instrument;

/// The header carrying the request id, to commands and back to the client.
pub const REQUEST_ID: &str = "x-request-id";

/// What the access log learns while the request is served: the route template (once
/// routed) and the caller (once authenticated).
#[derive(Clone, Default)]
pub struct Seen(Arc<Mutex<SeenFields>>);

#[derive(Default)]
struct SeenFields {
    route: Option<String>,
    user: Option<String>,
}

impl Seen {
    /// Records the authenticated caller (as a digest: the log never holds the id).
    pub fn caller(&self, user: &UserId) {
        if let Ok(mut fields) = self.0.lock() {
            fields.user = Some(user_digest(user));
        }
    }
}

/// The request id this layer gave the request (for a command's correlation id).
pub fn request_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The first 16 hex digits of the SHA-256 of a user id: the same user gives the same
/// digest in every line, and a line alone does not name the account.
pub fn user_digest(user: &UserId) -> String {
    let digest = Sha256::digest(user.as_str().as_bytes());
    hex::encode(&digest[..8])
}

/// The trace id of a `traceparent` header (`00-<32 hex>-<16 hex>-<2 hex>`), if valid.
pub fn trace_id(traceparent: &str) -> Option<String> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let valid = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && trace.bytes().any(|b| b != b'0')
        && hex(parent, 16)
        && hex(flags, 2)
        && (version != "00" || parts.next().is_none());
    valid.then(|| trace.to_owned())
}

/// A new request id, in the shape of a trace id.
fn new_request_id() -> String {
    format!("{:032x}", ulid::Ulid::new().0)
}

/// The outer layer: assigns the id, serves the request in its span, logs the line.
pub async fn layer(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(trace_id)
        .unwrap_or_else(new_request_id);
    let header = HeaderValue::from_str(&id).ok();
    if let Some(value) = &header {
        request.headers_mut().insert(REQUEST_ID, value.clone());
    }
    let seen = Seen::default();
    request.extensions_mut().insert(seen.clone());
    let method = request.method().clone();
    let span = tracing::info_span!("request", request_id = %id);
    let serve = commands::correlation::scope(id.clone(), next.run(request));
    let mut response = serve.instrument(span.clone()).await;
    if let Some(value) = header {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let (route, user) = match seen.0.lock() {
        Ok(fields) => (fields.route.clone(), fields.user.clone()),
        Err(_) => (None, None),
    };
    let elapsed = started.elapsed();
    super::metrics::observe_request(
        method.as_str(),
        route.as_deref(),
        response.status(),
        elapsed,
    );
    span.in_scope(|| {
        tracing::info!(
            target: "vitals::access",
            method = %method,
            route = route.as_deref().unwrap_or("(unmatched)"),
            status = response.status().as_u16(),
            latency_ms = format!("{:.3}", elapsed.as_secs_f64() * 1000.0),
            user = user.as_deref().unwrap_or("-"),
            "request served"
        )
    });
    response
}

/// The inner layer (on matched routes only): records the route template.
pub async fn route(request: Request, next: Next) -> Response {
    if let (Some(path), Some(seen)) = (
        request.extensions().get::<MatchedPath>(),
        request.extensions().get::<Seen>(),
    ) && let Ok(mut fields) = seen.0.lock()
    {
        fields.route = Some(path.as_str().to_owned());
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_gives_its_trace_id() {
        assert_eq!(
            trace_id("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
    }

    #[test]
    fn an_invalid_traceparent_gives_none() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736\n-00f067aa0ba902b7-01",
            "00-é€f92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01",
        ] {
            assert_eq!(trace_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn new_ids_are_trace_ids() {
        let id = new_request_id();
        let header = format!("00-{id}-00f067aa0ba902b7-01");
        assert_eq!(trace_id(&header), Some(id));
    }

    #[test]
    fn a_digest_does_not_contain_the_id() {
        let user = UserId::generate();
        let digest = user_digest(&user);
        assert_eq!(digest.len(), 16);
        assert!(!user.as_str().to_lowercase().contains(&digest));
        assert_eq!(digest, user_digest(&user));
    }
}
