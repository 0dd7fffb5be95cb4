//! The reference web app at `/` (issue 42) and the API reference at `/docs`: their
//! pages, scripts and styles. The app is built from
//! `clients/web` (the script bundled by esbuild into `app/web/app.js`, committed and
//! checked against its sources by `scripts/client-test`) and compiled into the binary,
//! so the app needs no CDN and no file beside the binary.
//!
//! These are not API operations, so the OpenAPI document does not list them, and only
//! `vitals serve` hosts them (`http::app_with_web`; the Lambda functions serve the API
//! alone). Like the operations routes they answer without a token and are rate-limited
//! per client address.

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
/// The API reference (issue 41): Swagger UI, vendored from the pinned `swagger-ui-dist`
/// (checked against it by `scripts/client-test`), over this server's `/openapi.json`.
const DOCS_PAGE: &str = include_str!("../../web/docs/index.html");
const DOCS_INIT: &str = include_str!("../../web/docs/docs.js");
const SWAGGER_UI: &str = include_str!("../../web/docs/swagger-ui-bundle.js");
const SWAGGER_UI_STYLE: &str = include_str!("../../web/docs/swagger-ui.css");

/// What the page may load and talk to: this origin only (no inline script or style, no
/// other host), and no framing.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(|s, c| served(s, c, HTML, PAGE)))
        .route("/app/app.js", get(|s, c| served(s, c, JS, SCRIPT)))
        .route("/app/app.css", get(|s, c| served(s, c, CSS, STYLE)))
        .route("/docs", get(|s, c| served(s, c, HTML, DOCS_PAGE)))
        .route("/docs/docs.js", get(|s, c| served(s, c, JS, DOCS_INIT)))
        .route(
            "/docs/swagger-ui-bundle.js",
            get(|s, c| served(s, c, JS, SWAGGER_UI)),
        )
        .route(
            "/docs/swagger-ui.css",
            get(|s, c| served(s, c, CSS, SWAGGER_UI_STYLE)),
        )
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

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

/// One asset, once the client's allowance lets it through.
async fn served(
    State(state): State<AppState>,
    client: ClientAddress,
    content_type: &'static str,
    body: &'static str,
) -> Result<impl IntoResponse, ApiError> {
    state.api.limits.operations(client)?;
    Ok(asset(content_type, body))
}
