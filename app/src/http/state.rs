//! What every handler may use: the store, the in-process projector workers and the
//! command and query handlers. Its own module (not the router's) so that the handlers,
//! which the router composes, do not import the router's file back.

use super::api::Api;
use infra::Store;
use projectors::pipeline::Pipeline;
use std::sync::Arc;

/// What every handler may use.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    /// The in-process projector workers, when this process runs them.
    pub pipeline: Option<Arc<Pipeline>>,
    pub api: Arc<Api>,
}
