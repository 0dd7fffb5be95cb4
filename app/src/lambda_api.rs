//! `vitals api-lambda`: the HTTP router of `vitals serve`, run by the Lambda runtime
//! behind API Gateway (REST or HTTP API events, through `lambda_http`). Projectors do
//! not run here: in the Lambda shape they are their own stream-driven functions.

use crate::cli::{ApiArgs, StoreArgs};
use crate::http::api::Api;
use crate::http::{self, AppState};
use crate::storage::Storage;
use crate::{setup, storage};
use std::sync::Arc;

pub async fn run(store: &StoreArgs, api: &ApiArgs) -> anyhow::Result<()> {
    let storage = storage::open(store).await?.logged();
    let api = setup::api(storage.store.clone(), api)?;
    lambda_http::run(router(&storage, api))
        .await
        .map_err(|error| anyhow::anyhow!("lambda runtime: {error}"))
}

/// The router this function serves: `vitals serve`'s, without in-process projectors.
pub fn router(storage: &Storage, api: Arc<Api>) -> axum::Router {
    http::app(AppState {
        store: storage.store.clone(),
        pipeline: None,
        api,
    })
}
