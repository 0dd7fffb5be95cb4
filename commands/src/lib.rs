//! Command handlers, one module per context. A handler validates its input (a typed
//! error naming the field; nothing written), then makes one atomic write in its own
//! context's table: the state items and the `EVT#<event-id>` outbox item(s). Handlers
//! get a `Table<TheirContext>` only, so writing another context's table does not compile.
//!
//! Layout:
//! - [`error`]: `CommandError`, the one error type of every handler.
//! - [`meta`]: what every command carries (the user, idempotency key, correlation) and
//!   returns.
//! - [`correlation`]: the correlation id of the request or event in progress, for the
//!   events of commands that find their user themselves.
//! - [`handlers`]: `Handlers<C>`, one context's table, clock and outside services, which
//!   each context's module gives its commands (`ActivityCommands` is `Handlers<Activity>`,
//!   `IntegrationCommands` is `Handlers<Integrations, Arc<Providers>>`).
//! - [`outbox`], [`idempotency`], `optimistic` (the one read-decide-commit-retry loop),
//!   `items`, `validate`, `retry`: the shared mechanics;
//!   [`serial`]: one writer per user inside a process; [`password`]: argon2 on a bounded pool;
//!   [`secret`]: a value kept out of logs.
//! - [`identity`], [`nutrition`], [`activity`], [`sleep`], [`goals`], [`integrations`],
//!   [`environment`]: the contexts.
//! - `external_sync`: the idempotent "sync by external id" write shared by activity
//!   and sleep.

pub mod activity;
pub mod correlation;
pub mod environment;
pub mod erasure;
pub mod error;
pub(crate) mod external_sync;
pub mod goals;
pub mod handlers;
pub mod idempotency;
pub mod identity;
pub mod integrations;
pub(crate) mod items;
pub mod meta;
pub mod nutrition;
pub(crate) mod optimistic;
pub mod outbox;
pub mod password;
pub(crate) mod retry;
pub mod secret;
pub mod serial;
pub mod sleep;
pub(crate) mod validate;

pub use error::CommandError;
pub use meta::{CommandMeta, Outcome};

/// The access patterns this crate's code issues, declared beside the calls (see
/// `infra::access`).
pub fn access_patterns() -> Vec<&'static infra::access::AccessPattern> {
    let modules: &[&'static [infra::access::AccessPattern]] = &[
        idempotency::access::ACCESS,
        identity::access::ACCESS,
        identity::sessions::access::ACCESS,
        identity::tries::access::ACCESS,
        nutrition::meals::access::ACCESS,
        nutrition::scheduled::access::ACCESS,
        nutrition::catalog::access::ACCESS,
        activity::access::ACCESS,
        sleep::access::ACCESS,
        goals::access::ACCESS,
        external_sync::access::ACCESS,
        integrations::oauth::access::ACCESS,
        integrations::webhook::access::ACCESS,
        environment::access::ACCESS,
        erasure::access::ACCESS.as_flattened(),
    ];
    modules.iter().flat_map(|m| m.iter()).collect()
}
