//! `GET /healthz`: the backend's name, the build's version and identity, and whether
//! the store answers. A failing store is 503 with a generic message; the cause goes to
//! the log.

use super::error::ApiError;
use super::limits::ClientAddress;
use super::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

/// The server's health.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok`, or `unavailable` when the store does not answer.
    #[schema(example = "ok")]
    pub status: &'static str,
    /// The storage backend, such as `embedded` or `dynamodb`.
    #[schema(example = "embedded")]
    pub backend: &'static str,
    /// The build's version.
    #[schema(example = "0.1.0")]
    pub version: &'static str,
    /// The running executable's identity: the first 16 hex digits of its BLAKE2b-512
    /// digest (what `b2sum` says of the binary), so a deploy can be seen to run the code
    /// it shipped; `unknown` when the executable cannot be read.
    #[schema(example = "3f5a9c0e12ab77d4")]
    pub build: &'static str,
}

static BUILD: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The running executable's identity (see [`Health::build`]), computed once, off the
/// async workers (a debug binary is a few hundred megabytes).
pub async fn build_id() -> &'static str {
    if let Some(id) = BUILD.get() {
        return id;
    }
    let id = tokio::task::spawn_blocking(executable_digest)
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| "unknown".to_owned());
    BUILD.get_or_init(|| id)
}

// BLAKE2b rather than SHA-256: the dev profile builds it optimised (password hashing
// needs it), so a debug binary hashes in a fraction of a second.
fn executable_digest() -> Option<String> {
    use blake2::Digest as _;
    let mut file = std::fs::File::open(std::env::current_exe().ok()?).ok()?;
    let mut hasher = blake2::Blake2b512::new();
    std::io::copy(&mut file, &mut hasher).ok()?;
    let hex = format!("{:x}", hasher.finalize());
    Some(hex[..16].to_owned())
}

/// Whether the server and its store answer.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses(
        (status = 200, description = "The store answers.", body = Health),
        (status = 429, response = super::responses::TooManyRequests),
        (status = 503, description = "The store does not answer; the cause is logged.", body = Health),
    ),
)]
pub async fn healthz(
    State(state): State<AppState>,
    client: ClientAddress,
) -> Result<(StatusCode, Json<Health>), ApiError> {
    state.api.limits.operations(client)?;
    let backend = state.store.backend();
    let version = env!("CARGO_PKG_VERSION");
    let build = build_id().await;
    Ok(match state.store.health().await {
        Ok(()) => (
            StatusCode::OK,
            Json(Health {
                status: "ok",
                backend,
                version,
                build,
            }),
        ),
        Err(error) => {
            tracing::error!(%error, backend, "health check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(Health {
                    status: "unavailable",
                    backend,
                    version,
                    build,
                }),
            )
        }
    })
}
