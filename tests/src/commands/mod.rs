//! Command handler specifications, run on every backend (see `commands_suite!`). Each
//! case reads as given / when / then: a world with a fresh user, the command, then the
//! items, events or typed error it must produce.

pub mod activity_sleep;
pub mod environment;
pub mod goals;
pub mod identity;
pub mod integrations;
pub mod keyed;
pub mod nutrition;

use crate::faults::PausingStore;
use commands::activity::ActivityCommands;
use commands::environment::{EnvironmentCommands, SandboxEnvironment};
use commands::goals::CreateGoal;
use commands::goals::GoalCommands;
use commands::handlers::Handlers;
use commands::identity::IdentityCommands;
use commands::integrations::ConnectStarted;
use commands::integrations::{IntegrationCommands, Providers, SandboxProvider, VerifierKey};
use commands::nutrition::NutritionCommands;
use commands::nutrition::{MealInput, SummaryRecord};
use commands::serial::Writers;
use commands::sleep::SleepCommands;
use commands::{CommandError, CommandMeta, Outcome};
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::events::integrations::{ProviderSleep, ProviderWorkout};
use events_schema::ids::{GoalId, MealId, ProviderName, SleepId, UserId, WorkoutId};
use events_schema::time::{Clock, Day};
use infra::Store;
use infra::counting::CountingStore;
use infra::observed::Row;
use infra::recorded::Recorded;
use infra::store::{Item, Key, Query, SortKeyCondition};
use infra::table::{ContextTable, Table};
use std::sync::Arc;

/// The webhook secret of the sandbox provider in tests (at least 32 bytes, as the
/// binary requires of its secrets).
pub const WEBHOOK_SECRET: &str = "test-webhook-secret-32-bytes-or-more";

tokio::task_local! {
    /// The recording every world built in a recorded spec (`commands_suite!`) calls
    /// through: the handlers' calls are matched against the declared access patterns,
    /// the spec's own reads of the store are not.
    pub static RECORDING: Arc<Recorded>;
}

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
    /// The clock every handler of this world tells time by.
    pub clock: Clock,
}

impl World {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self::with_clock(store, Clock::System)
    }

    /// A world whose handlers tell time by `clock` (a manual one makes "now" whatever
    /// the case needs).
    pub fn with_clock(store: Arc<dyn Store>, clock: Clock) -> Self {
        Self::of_process(store, clock, Writers::process())
    }

    /// A world whose handlers write as another process would (per-user write locks of
    /// their own), on the same store: worlds built so race each other for real.
    pub fn in_another_process(store: Arc<dyn Store>) -> Self {
        Self::of_process(store, Clock::System, Writers::separate())
    }

    /// A world whose handlers' calls are recorded by `recorded` (against the declared
    /// access patterns), the request counter's own reads left out.
    pub fn recorded(store: Arc<dyn Store>, clock: Clock, recorded: &Recorded) -> Self {
        Self::of_process_seen(store, clock, Writers::process(), |counting| {
            Arc::new(recorded.over(counting))
        })
    }

    /// In a recorded spec ([`RECORDING`]), the handlers' calls are recorded.
    fn of_process(store: Arc<dyn Store>, clock: Clock, writers: Writers) -> Self {
        match RECORDING.try_with(Arc::clone) {
            Ok(recorded) => Self::of_process_seen(store, clock, writers, move |counting| {
                Arc::new(recorded.over(counting))
            }),
            Err(_) => Self::of_process_seen(store, clock, writers, |counting| counting),
        }
    }

    /// The handlers call `seen(counting store)`.
    fn of_process_seen(
        store: Arc<dyn Store>,
        clock: Clock,
        writers: Writers,
        seen: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>,
    ) -> Self {
        let store = Arc::new(CountingStore::new(store));
        let shared: Arc<dyn Store> = seen(store.clone());
        // One server secret for every world, as every process of a deployment holds it.
        let providers = Providers::sandbox(WEBHOOK_SECRET).with_verifier_key(
            VerifierKey::derived_from(b"test-server-secret-32-bytes-or-more"),
        );
        Self {
            meta: CommandMeta::new(UserId::generate()),
            identity: context_handlers(&shared, &clock, &writers),
            nutrition: context_handlers(&shared, &clock, &writers),
            activity: context_handlers(&shared, &clock, &writers),
            sleep: context_handlers(&shared, &clock, &writers),
            goals: context_handlers(&shared, &clock, &writers),
            integrations: context_handlers(&shared, &clock, &writers)
                .with_services(Arc::new(providers)),
            environment: EnvironmentCommands::new(
                Table::new(shared.clone()),
                Arc::new(SandboxEnvironment),
            )
            .with_clock(clock.clone()),
            store,
            clock,
        }
    }

    /// The same handlers, acting as `user`.
    pub fn as_user(self, user: UserId) -> Self {
        Self {
            meta: CommandMeta::new(user),
            ..self
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

    /// Asserts the user's partition of `table` has one row under `prefix` and that the
    /// table's outbox holds only `event_type`.
    pub async fn assert_one_row_and_event(&self, table: Context, prefix: &str, event_type: &str) {
        assert_eq!(self.count(table, prefix).await, 1);
        assert_eq!(self.event_types(table).await, vec![event_type]);
    }

    /// Asserts the user's command went through on its second transaction (`self` is a
    /// world on [`ConflictOnce`](crate::faults::ConflictOnce), its first cancelled as a
    /// conflict) and that the table's outbox then holds `event_types`, oldest first.
    pub async fn assert_second_attempt_and_events(&self, table: Context, event_types: &[&str]) {
        assert_eq!(self.store.counts().transactions, 2);
        assert_eq!(self.event_types(table).await, event_types);
    }

    /// How many items of the user's partition in a context's table have a sort key
    /// starting with `prefix`.
    pub async fn count(&self, table: Context, prefix: &str) -> usize {
        self.items(table, prefix).await.len()
    }

    /// The events in the user's outbox of a context, oldest first.
    pub async fn events(&self, table: Context) -> Vec<EventEnvelope> {
        let mut events: Vec<EventEnvelope> = self
            .items(table, "EVT#")
            .await
            .iter()
            .map(|item| {
                events_schema::envelope::outbox_event(item)
                    .expect("an outbox item")
                    .expect("its envelope decodes")
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

    /// Logs `input` as the user, without a key; the new meal's id.
    pub async fn log_meal(&self, input: MealInput) -> MealId {
        value(self.nutrition.log_meal(&self.meta, input).await).meal_id
    }

    /// Syncs `workout` from garmin (in UTC) as the user.
    pub async fn sync_workout(
        &self,
        workout: &ProviderWorkout,
    ) -> Result<Outcome<WorkoutId>, CommandError> {
        self.activity
            .sync_workout(&self.meta, &garmin(), "UTC", workout)
            .await
    }

    /// Syncs `session` from garmin (in UTC) as the user.
    pub async fn sync_sleep(
        &self,
        session: &ProviderSleep,
    ) -> Result<Outcome<SleepId>, CommandError> {
        self.sleep
            .sync_sleep(&self.meta, &garmin(), "UTC", session)
            .await
    }

    /// The stored nutrition summary of the user's `day`.
    pub async fn summary(&self, day: Day) -> SummaryRecord {
        self.nutrition
            .summary(&self.meta, day)
            .await
            .expect("summary")
    }

    /// Creates `input` as the user, without a key; the new goal's id.
    pub async fn create_goal(&self, input: CreateGoal) -> GoalId {
        value(self.goals.create_goal(&self.meta, input).await).goal_id
    }

    /// Starts connecting the user to the sandbox provider.
    pub async fn start_connect(&self) -> ConnectStarted {
        value(self.integrations.start_connect(&self.meta, "sandbox").await)
    }

    /// Completes, as the user, a connect to the sandbox provider with `state` and `code`.
    pub async fn complete_connect(
        &self,
        state: &str,
        code: &str,
    ) -> Result<Outcome<UserId>, CommandError> {
        self.integrations
            .complete_connect(&self.meta, "sandbox", state, code)
            .await
    }

    /// The whole OAuth round trip to the sandbox provider as `provider_user`; the user
    /// the callback connected, or why it refused.
    pub async fn connect_as(&self, provider_user: &str) -> Result<UserId, CommandError> {
        let started = self.start_connect().await;
        let code = SandboxProvider::code_for(provider_user, &started.authorize_url);
        let connected = self.complete_connect(&started.state, &code).await;
        connected.map(|o| o.value)
    }

    /// Receives `body` as a sandbox webhook signed with the test secret at `at` (epoch
    /// seconds).
    pub async fn receive_signed(
        &self,
        body: &[u8],
        at: i64,
    ) -> Result<Outcome<usize>, CommandError> {
        let signature = commands::integrations::sign(WEBHOOK_SECRET.as_bytes(), at, body);
        self.integrations
            .receive_webhook("sandbox", &at.to_string(), &signature, body)
            .await
    }
}

/// A command of a world of its own on `store`, its first write that `paused` matches
/// held at the store until [`Held::release`]: what another writer does meanwhile lands
/// first, deterministically.
pub struct Held<T> {
    pub world: Arc<World>,
    pausing: Arc<PausingStore>,
    command: tokio::task::JoinHandle<Result<T, CommandError>>,
}

impl<T: Send + 'static> Held<T> {
    /// Starts `command` and waits (30 s at most) until its write is held.
    pub async fn start<F, Fut>(
        store: &Arc<dyn Store>,
        paused: fn(&Row<'_>) -> bool,
        command: F,
    ) -> Self
    where
        F: FnOnce(Arc<World>) -> Fut,
        Fut: Future<Output = Result<T, CommandError>> + Send + 'static,
    {
        let pausing = Arc::new(crate::faults::gated(store.clone(), paused));
        let world = Arc::new(World::new(pausing.clone()));
        let reached = pausing.observer().reached.notified();
        let command = tokio::spawn(command(world.clone()));
        tokio::time::timeout(std::time::Duration::from_secs(30), reached)
            .await
            .expect("the command's write reaches the store");
        Self {
            world,
            pausing,
            command,
        }
    }

    /// Lets the held write go; what the command answered.
    pub async fn release(self) -> Result<T, CommandError> {
        self.pausing.observer().release.notify_one();
        self.command.await.expect("the held command's task")
    }
}

/// Runs `work` while a command is [`Held`]: it must finish without waiting for the held
/// one (30 s at most).
pub async fn meanwhile<T>(work: impl Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(30), work)
        .await
        .expect("the other writer does not wait for the held one")
}

/// One context's handlers on `store`, telling time by `clock`, taking `writers`' locks.
fn context_handlers<C: ContextTable>(
    store: &Arc<dyn Store>,
    clock: &Clock,
    writers: &Writers,
) -> Handlers<C> {
    Handlers::new(Table::new(store.clone()))
        .with_clock(clock.clone())
        .with_writers(writers.clone())
}

/// The wearable provider the activity and sleep cases sync from.
pub fn garmin() -> ProviderName {
    ProviderName::parse("garmin").expect("provider")
}

/// Asserts a command failed because something it names does not exist.
#[track_caller]
pub fn assert_not_found<T: std::fmt::Debug>(result: Result<T, CommandError>) {
    assert!(
        matches!(result, Err(CommandError::NotFound(_))),
        "{result:?}"
    );
}

/// The value of a command that must succeed.
#[track_caller]
pub fn value<T>(outcome: Result<Outcome<T>, CommandError>) -> T {
    outcome.expect("the command succeeds").value
}

/// Whether a retried command answered with its first result (it must succeed).
#[track_caller]
pub fn replayed<T>(retry: Result<Outcome<T>, CommandError>) -> bool {
    retry.expect("retry").replayed
}

/// Runs a keyed `command` and then its retry: the first value, once the retry has
/// answered from it.
pub async fn with_retry<T, Fut>(command: impl Fn() -> Fut) -> T
where
    Fut: Future<Output = Result<Outcome<T>, CommandError>>,
{
    let first = value(command().await);
    assert!(
        replayed(command().await),
        "the retry is answered from the first"
    );
    first
}

/// Every item of partition `pk` of a context's table whose sort key starts with `prefix`
/// (every item of the partition when empty), read consistently.
pub async fn items_of(store: &dyn Store, table: Context, pk: &str, prefix: &str) -> Vec<Item> {
    crate::snapshot::every_page(crate::snapshot::WHOLE_TABLE_PAGES, |cursor| {
        let mut query = Query::partition(pk).consistent().after(cursor);
        if !prefix.is_empty() {
            query = query.sort_key(SortKeyCondition::BeginsWith(prefix.to_owned()));
        }
        async move { store.query(table, &query).await.expect("query") }
    })
    .await
}

/// The item at (`pk`, `sk`) of a context's table, read consistently.
pub async fn row_of(
    store: &dyn Store,
    table: Context,
    pk: impl Into<String>,
    sk: impl Into<String>,
) -> Option<Item> {
    crate::conformance::read_item(store, table, &Key::new(pk, sk)).await
}

/// Asserts a command failed validation on `field`.
#[track_caller]
pub fn assert_invalid<T: std::fmt::Debug>(result: Result<T, commands::CommandError>, field: &str) {
    match result {
        Err(commands::CommandError::Validation { field: got, .. }) => assert_eq!(got, field),
        other => panic!("expected a validation error on {field}, got {other:?}"),
    }
}
