//! `vitals api-lambda`: the HTTP router of `vitals serve`, run by the Lambda runtime
//! behind API Gateway (REST or HTTP API events, through `lambda_http`). Projectors do
//! not run here: in the Lambda shape they are their own stream-driven functions. It
//! refuses the embedded store (it would live and die with one instance) and, after its
//! secrets, a start outside Lambda, each with [`Exit::Config`].

use crate::cli::exit::{Exit, ExitOn as _};
use crate::cli::{ApiArgs, Backend, StoreArgs};
use crate::http::api::Api;
use crate::http::{self, AppState};
use crate::storage::Storage;
use crate::{setup, storage};
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::IntoResponse;
use std::collections::HashSet;
use std::sync::Arc;

pub async fn run(store: &StoreArgs, api: &ApiArgs) -> anyhow::Result<()> {
    if store.backend == Backend::Embedded {
        return Err(Exit::Config.error(
            "api-lambda runs on a shared store: --backend dynamodb (VITALS_BACKEND=dynamodb); \
             an embedded store would live and die with one function instance",
        ));
    }
    let secrets = setup::Secrets::from_args(api, setup::Shape::Deployed).or_exit(Exit::Config)?;
    crate::lambda_boot::runtime::runtime_environment(&|name| std::env::var(name).ok())?;
    let storage = storage::open(store).await?.logged();
    let api = setup::api_with(storage.store.clone(), api, secrets).or_exit(Exit::Config)?;
    lambda_http::run(router(&storage, api))
        .await
        .map_err(|error| Exit::External.error(format!("lambda runtime: {error}")))
}

/// The router this function serves: `vitals serve`'s, without in-process projectors.
pub fn router(storage: &Storage, api: Arc<Api>) -> axum::Router {
    http::app(AppState {
        store: storage.store.clone(),
        pipeline: None,
        api,
    })
}

/// [`router`], answering only the operations API Gateway routes to `function` (one of
/// [`crate::deploy::api_functions`]); any other is 404, as no route. Why: the function
/// taking `$default` gets whatever matches no route key (a `HEAD` of another function's
/// path, say), and must not run another function's handler under its own role, which
/// may not read that handler's table.
pub fn router_of(storage: &Storage, api: Arc<Api>, function: &str) -> anyhow::Result<axum::Router> {
    let served = crate::deploy::api_functions::api_functions()
        .into_iter()
        .find(|f| f.name == function)
        .ok_or_else(|| {
            anyhow::anyhow!("VITALS_API_FUNCTION {function:?} is not a function of the API")
        })?;
    let routes: Arc<HashSet<String>> = Arc::new(served.routes.into_iter().collect());
    Ok(router(storage, api).layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let routes = routes.clone();
            async move {
                let key = request
                    .extensions()
                    .get::<MatchedPath>()
                    .map(|path| format!("{} {}", request.method(), path.as_str()));
                match key {
                    Some(key) if routes.contains(&key) => next.run(request).await,
                    _ => crate::http::error::ApiError::not_found().into_response(),
                }
            }
        },
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Method, StatusCode};
    use tower::ServiceExt as _;

    async fn status(router: &axum::Router, method: Method, path: &str) -> StatusCode {
        let request = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(Body::from("{}"))
            .expect("a request");
        router
            .clone()
            .oneshot(request)
            .await
            .expect("an answer")
            .status()
    }

    /// Each function answers its own operations only; another's is 404, as no route,
    /// so the `$default` function never runs a handler its role may not serve.
    #[tokio::test]
    async fn a_function_answers_only_the_operations_routed_to_it() {
        let dir = tempfile::tempdir().expect("a directory");
        let (storage, api) = an_api(dir.path());
        let query = router_of(&storage, api.clone(), "QueryApi").expect("QueryApi");
        let nutrition = router_of(&storage, api, "NutritionApi").expect("NutritionApi");
        assert_eq!(
            status(&query, Method::GET, "/healthz").await,
            StatusCode::OK
        );
        assert_eq!(
            status(&nutrition, Method::GET, "/healthz").await,
            StatusCode::NOT_FOUND
        );
        // Reached its handler: refused for want of a token, not for want of a route.
        assert_eq!(
            status(&nutrition, Method::POST, "/v1/me/meals").await,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            status(&query, Method::POST, "/v1/me/meals").await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status(&query, Method::HEAD, "/v1/me/nutrition/daily").await,
            StatusCode::NOT_FOUND
        );
        let (storage, api) = an_api(&dir.path().join("another"));
        assert!(router_of(&storage, api, "BillingApi").is_err());
    }

    /// The API on an embedded store in `dir`.
    fn an_api(dir: &std::path::Path) -> (Storage, Arc<Api>) {
        let store: Arc<dyn infra::Store> =
            Arc::new(infra::embedded::EmbeddedStore::open(dir).expect("a store"));
        let storage = Storage {
            store: store.clone(),
            embedded: None,
        };
        let mut args = crate::cli::api_args_from_env().expect("defaults");
        args.jwt_secret = Some("a-signing-key-of-at-least-32-bytes-long".into());
        args.webhook_secret = Some("a-webhook-secret-of-at-least-32-bytes".into());
        (storage, setup::api(store, &args).expect("the api"))
    }
}
