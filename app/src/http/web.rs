//! The reference web app at `/` (issue 42): its page, script and style, built from
//! `clients/web` (the script bundled by esbuild into `app/web/app.js`, committed and
//! checked against its sources by `scripts/client-test`) and compiled into the binary,
//! so the app needs no CDN and no file beside the binary.
//!
//! These are not API operations, so the OpenAPI document does not list them; like the
//! operations routes they answer without a token and are rate-limited per client
//! address.

use super::error::ApiError;
use super::limits::ClientAddress;
use super::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

const PAGE: &str = include_str!("../../web/index.html");
const SCRIPT: &str = include_str!("../../web/app.js");
const STYLE: &str = include_str!("../../web/app.css");

/// What the page may load and talk to: this origin only (no inline script or style, no
/// other host), and no framing.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(page))
        .route("/app/app.js", get(script))
        .route("/app/app.css", get(style))
}

/// One static asset with its type and the headers every asset carries.
fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            // Built into the binary: a new release is a new asset, so revalidate.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}

async fn page(
    State(state): State<AppState>,
    client: ClientAddress,
) -> Result<impl IntoResponse, ApiError> {
    state.api.limits.operations(client)?;
    Ok(asset("text/html; charset=utf-8", PAGE))
}

async fn script(
    State(state): State<AppState>,
    client: ClientAddress,
) -> Result<impl IntoResponse, ApiError> {
    state.api.limits.operations(client)?;
    Ok(asset("text/javascript; charset=utf-8", SCRIPT))
}

async fn style(
    State(state): State<AppState>,
    client: ClientAddress,
) -> Result<impl IntoResponse, ApiError> {
    state.api.limits.operations(client)?;
    Ok(asset("text/css; charset=utf-8", STYLE))
}
