//! The model `vitals cost` runs the user-day on: the app's real HTTP router on an
//! embedded store that counts every request and the capacity it would cost, with every
//! subscription of a stream applied after each request, as the deployed projector
//! functions do. It measures; it prices nothing.

use super::usage::Usage;
use crate::cli::ApiArgs;
use crate::http::{self, AppState};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use events_schema::Context;
use infra::Store;
use infra::counting::{CountingStore, RequestCounts};
use infra::embedded::EmbeddedStore;
use infra::feed::FeedRecord;
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

/// The app's HTTP API on a counting embedded store, with every subscription applied
/// after each request.
pub(super) struct Model {
    router: Router,
    log: Arc<EmbeddedStore>,
    counting: Arc<CountingStore>,
    handlers: Vec<projectors::runtime::Handler>,
    /// The deployed projector functions, whose mappings' filters decide which are
    /// invoked for an event.
    plan: crate::deploy::plan::Plan,
    applied_up_to: u64,
    pub(super) token: Option<String>,
}

pub(super) const WEBHOOK_SECRET: &str = "cost-model-webhook-secret-32-bytes-or-more";

impl Model {
    pub(super) fn new(dir: &std::path::Path) -> anyhow::Result<Self> {
        let log = Arc::new(EmbeddedStore::open(dir)?);
        let counting = Arc::new(CountingStore::new(log.clone()));
        let store: Arc<dyn Store> = counting.clone();
        let mut args: ApiArgs = crate::cli::api_args_from_env()?;
        args.jwt_secret = Some("cost-model-signing-key-32-bytes-or-more".into());
        args.webhook_secret = Some(WEBHOOK_SECRET.into());
        let api = crate::setup::api(store.clone(), &args)?;
        let handlers = Context::ALL
            .into_iter()
            .flat_map(|source| projectors::registry::stream_handlers(store.clone(), source))
            .collect();
        Ok(Self {
            router: http::app(AppState {
                store,
                pipeline: None,
                api,
            }),
            log,
            counting,
            handlers,
            plan: crate::deploy::plan::plan(),
            applied_up_to: 0,
            token: None,
        })
    }

    /// One request; its answer must have `expected` status.
    async fn call(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
        expected: StatusCode,
    ) -> anyhow::Result<Value> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let response = self
            .router
            .clone()
            .oneshot(request.body(Body::from(bytes))?)
            .await?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await?;
        let answer = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        anyhow::ensure!(
            status == expected,
            "{method} {path}: {status} (expected {expected}): {answer}"
        );
        Ok(answer)
    }

    /// Applies every change since the last call through the subscriptions of its
    /// table; returns the projector invocations the outbox events among them cause.
    async fn project(&mut self) -> anyhow::Result<u64> {
        let mut events = 0;
        loop {
            let changes = self.log.changes_after(self.applied_up_to, 500).await?;
            let Some(last) = changes.last() else {
                return Ok(events);
            };
            self.applied_up_to = last.seq;
            for change in changes {
                let record = FeedRecord::from(change);
                if let Some(image) = record
                    .new_image
                    .as_ref()
                    .filter(|_| record.sk.starts_with("EVT#"))
                {
                    let event_type = image
                        .get("event_type")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    events += self
                        .plan
                        .consumers
                        .iter()
                        .filter(|c| c.receives(record.table, event_type))
                        .count() as u64;
                }
                for handler in &self.handlers {
                    if handler.projector().source() == record.table {
                        handler.handle(&record).await?;
                    }
                }
            }
        }
    }

    /// One request of the app, with everything it caused: its usage.
    pub(super) async fn measure(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
        expected: StatusCode,
    ) -> anyhow::Result<(Usage, Value)> {
        self.project().await?;
        self.counting.take();
        self.counting.take_capacity();
        let answer = self.call(method, path, body, headers, expected).await?;
        let events = self.project().await?;
        let counts: RequestCounts = self.counting.take();
        let usage = Usage {
            api_requests: 1,
            reads: counts.reads() as u64,
            writes: counts.writes() as u64,
            transactions: counts.transactions as u64,
            capacity: self.counting.take_capacity(),
            consumer_invocations: events,
        };
        Ok((usage, answer))
    }
}
