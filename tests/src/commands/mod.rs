//! Command handler specifications, run on every backend (see `commands_suite!`). Each
//! case reads as given / when / then: a world with a fresh user, the command, then the
//! items, events or typed error it must produce.

pub mod activity_sleep;
pub mod goals;
pub mod identity;
pub mod integrations;
pub mod nutrition;

use commands::CommandMeta;
use commands::activity::ActivityCommands;
use commands::environment::{EnvironmentCommands, SandboxEnvironment};
use commands::goals::GoalCommands;
use commands::identity::IdentityCommands;
use commands::integrations::{IntegrationCommands, Providers, SandboxProvider, Secret};
use commands::nutrition::NutritionCommands;
use commands::sleep::SleepCommands;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::ids::UserId;
use events_schema::time::Clock;
use infra::Store;
use infra::counting::CountingStore;
use infra::store::{Item, Query, SortKeyCondition};
use infra::table::Table;
use std::sync::Arc;

/// The webhook secret of the sandbox provider in tests.
pub const WEBHOOK_SECRET: &str = "test-webhook-secret";

/// Every context's command handlers over one (counting) store, and a fresh user.
pub struct World {
    pub store: Arc<CountingStore>,
    pub meta: CommandMeta,
    pub identity: IdentityCommands,
    pub nutrition: NutritionCommands,
    pub activity: ActivityCommands,
    pub sleep: SleepCommands,
    pub goals: GoalCommands,
    pub integrations: IntegrationCommands,
    pub environment: EnvironmentCommands,
}

impl World {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self::with_clock(store, Clock::System)
    }

    /// A world whose handlers tell time by `clock` (a manual one makes "now" whatever
    /// the case needs).
    pub fn with_clock(store: Arc<dyn Store>, clock: Clock) -> Self {
        let store = Arc::new(CountingStore::new(store));
        let shared: Arc<dyn Store> = store.clone();
        let providers =
            Providers::default().with(Arc::new(SandboxProvider::new(Secret::new(WEBHOOK_SECRET))));
        Self {
            meta: CommandMeta::new(UserId::generate()),
            identity: IdentityCommands::new(Table::new(shared.clone())).with_clock(clock.clone()),
            nutrition: NutritionCommands::new(Table::new(shared.clone())).with_clock(clock.clone()),
            activity: ActivityCommands::new(Table::new(shared.clone())).with_clock(clock.clone()),
            sleep: SleepCommands::new(Table::new(shared.clone())).with_clock(clock.clone()),
            goals: GoalCommands::new(Table::new(shared.clone())).with_clock(clock.clone()),
            integrations: IntegrationCommands::new(Table::new(shared.clone()), Arc::new(providers))
                .with_clock(clock),
            environment: EnvironmentCommands::new(Table::new(shared), Arc::new(SandboxEnvironment)),
            store,
        }
    }

    /// The same user, with an idempotency key.
    pub fn keyed(&self, key: &str) -> CommandMeta {
        self.meta
            .clone()
            .with_idempotency_key(key)
            .expect("valid key")
    }

    pub fn pk(&self) -> String {
        self.meta.user_pk()
    }

    /// Every item of the user's partition in a context's table whose sort key starts
    /// with `prefix`.
    pub async fn items(&self, table: Context, prefix: &str) -> Vec<Item> {
        items_of(&*self.store, table, &self.pk(), prefix).await
    }

    /// The events in the user's outbox of a context, oldest first.
    pub async fn events(&self, table: Context) -> Vec<EventEnvelope> {
        let mut events: Vec<EventEnvelope> = self
            .items(table, "EVT#")
            .await
            .iter()
            .map(|item| {
                commands::outbox::decode_event_item(item).expect("outbox item holds an envelope")
            })
            .collect();
        events.sort_by(|a, b| a.event_id.cmp(&b.event_id));
        events
    }

    pub async fn event_types(&self, table: Context) -> Vec<String> {
        self.events(table)
            .await
            .into_iter()
            .map(|e| e.event_type)
            .collect()
    }
}

pub async fn items_of(store: &dyn Store, table: Context, pk: &str, prefix: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut cursor = None;
    loop {
        let mut query = Query::partition(pk).consistent().after(cursor);
        if !prefix.is_empty() {
            query = query.sort_key(SortKeyCondition::BeginsWith(prefix.to_owned()));
        }
        let page = store.query(table, &query).await.expect("query");
        items.extend(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return items,
        }
    }
}

/// Asserts a command failed validation on `field`.
#[track_caller]
pub fn assert_invalid<T: std::fmt::Debug>(result: Result<T, commands::CommandError>, field: &str) {
    match result {
        Err(commands::CommandError::Validation { field: got, .. }) => assert_eq!(got, field),
        other => panic!("expected a validation error on {field}, got {other:?}"),
    }
}
