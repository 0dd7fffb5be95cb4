//! Integrations: OAuth connections to wearable providers and their signed webhooks.
//!
//! Items: `OAUTH_STATE#<state>` (256 random bits, TTL minutes, single use),
//! `USER#<id>/CONNECTION#<provider>` (connected or disconnected, with a version that
//! orders its changes; provider tokens are not kept: data arrives by signed webhooks),
//! `PROVIDER_USER#<provider>#<provider-user-id>` (who a webhook is about: one account at
//! a time), `USER#<id>/DELIVERY#<provider>#<delivery-id>` (a webhook delivery, recorded
//! once). Received workouts and sleep are published as events for the activity and sleep
//! contexts to sync.

pub mod oauth;
mod provider;
mod sandbox;
mod webhook;

pub use oauth::ConnectStarted;
pub use provider::{ProviderGrant, Providers, Secret, WearableProvider};
pub use sandbox::SandboxProvider;
pub use webhook::{SIGNATURE_TOLERANCE_SECONDS, WebhookPayload, sign};

use crate::serial::Writers;
use events_schema::time::Clock;
use infra::table::{Table, contexts::Integrations};
use std::sync::Arc;

#[derive(Clone)]
pub struct IntegrationCommands {
    table: Table<Integrations>,
    providers: Arc<Providers>,
    clock: Clock,
    writers: Writers,
}

impl std::fmt::Debug for IntegrationCommands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntegrationCommands")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl IntegrationCommands {
    pub fn new(table: Table<Integrations>, providers: Arc<Providers>) -> Self {
        Self {
            table,
            providers,
            clock: Clock::System,
            writers: Writers::process(),
        }
    }

    /// The same handlers, telling time by `clock`.
    pub fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }

    /// The same handlers, taking `writers`' per-user locks instead of the process's.
    pub fn with_writers(self, writers: Writers) -> Self {
        Self { writers, ..self }
    }
}
