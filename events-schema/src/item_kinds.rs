//! The item kinds of every table: each kind of item a context's table holds (a
//! partition-key kind and a sort-key kind, as `infra::access` names them), what it is,
//! its attributes with their DynamoDB types, and how long it lives. Who writes and who
//! reads each kind is not written here: `vitals docs access-patterns` derives it from
//! the declared access patterns and the subscriptions, and the recording store of the
//! tests refuses a written item of an undeclared kind, or with an attribute its kind
//! does not declare (or of another type).

use crate::Context;
use Ty::{Bool, L, M, N, Null, S};

/// An attribute's DynamoDB type, as the marshalled item stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ty {
    /// `S`
    S,
    /// `N`
    N,
    /// `BOOL`
    Bool,
    /// `M`
    M,
    /// `L`
    L,
    /// `NULL` (an optional value left empty)
    Null,
}

impl Ty {
    /// The type a JSON value is stored as.
    pub fn of(value: &serde_json::Value) -> Self {
        use serde_json::Value;
        match value {
            Value::String(_) => Ty::S,
            Value::Number(_) => Ty::N,
            Value::Bool(_) => Ty::Bool,
            Value::Object(_) => Ty::M,
            Value::Array(_) => Ty::L,
            Value::Null => Ty::Null,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Ty::S => "S",
            Ty::N => "N",
            Ty::Bool => "BOOL",
            Ty::M => "M",
            Ty::L => "L",
            Ty::Null => "NULL",
        }
    }
}

/// How long an item lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// The user's data (or a projection of it): kept until the account is erased,
    /// then drained with the user's partition.
    UserData,
    /// Expires: its `expires_at` (TTL) lets DynamoDB delete it, and reads never return
    /// it once past; erasure removes a user's earlier.
    Expires,
    /// Kept: curated rows, and an erased account's tombstone (which holds no user id).
    Kept,
    /// The system's own bookkeeping (a job's place, a replay's checkpoint, a dead
    /// letter): kept until its work is done or an operator removes it.
    Bookkeeping,
}

impl Lifetime {
    pub fn describe(self) -> &'static str {
        match self {
            Lifetime::UserData => "kept; drained when the account is erased",
            Lifetime::Expires => {
                "TTL debris: expires (`expires_at`); erasure removes a user's earlier"
            }
            Lifetime::Kept => "kept",
            Lifetime::Bookkeeping => {
                "bookkeeping: kept until its work is done or an operator removes it"
            }
        }
    }
}

/// One kind of item of a table.
#[derive(Debug, Clone, Copy)]
pub struct ItemKind {
    pub table: Context,
    /// The partition key's kind (`USER#`).
    pub pk: &'static str,
    /// The sort key's kind (`MEAL#`, `PROFILE`).
    pub sk: &'static str,
    /// What it is, in a few words.
    pub what: &'static str,
    /// Its attributes besides `pk` and `sk`, with their types (an attribute stored
    /// with more than one type, such as a value or `NULL`, is listed once per type).
    pub attributes: &'static [(&'static str, Ty)],
    pub lifetime: Lifetime,
}

impl ItemKind {
    /// Whether the kind declares `name` with type `ty`.
    pub fn declares(&self, name: &str, ty: Ty) -> bool {
        matches!(name, "pk" | "sk") || self.attributes.contains(&(name, ty))
    }
}

/// The kind of `(pk kind, sk kind)` in `table`, if declared.
pub fn find(table: Context, pk: &str, sk: &str) -> Option<&'static ItemKind> {
    ALL.iter()
        .find(|k| k.table == table && k.pk == pk && k.sk == sk)
}

/// One [`ItemKind`]: `Table "pk" "sk", Lifetime, "what", [attribute: Ty, ...]`.
macro_rules! kind {
    ($table:ident $pk:literal $sk:literal, $life:ident, $what:literal,
     [$($name:ident: $ty:ident),* $(,)?]) => {
        ItemKind {
            table: Context::$table,
            pk: $pk,
            sk: $sk,
            what: $what,
            attributes: &[$((stringify!($name), $ty)),*],
            lifetime: Lifetime::$life,
        }
    };
}

/// The partition-key kinds under which `table` holds items of sort-key kind `sk`
/// (`USER#` when none is declared: a projection's row).
pub fn partitions_of(table: Context, sk: &str) -> Vec<&'static str> {
    let found: Vec<&'static str> = ALL
        .iter()
        .filter(|k| k.table == table && k.sk == sk)
        .map(|k| k.pk)
        .collect();
    if found.is_empty() {
        vec!["USER#"]
    } else {
        found
    }
}

/// Every declared kind, table by table.
#[rustfmt::skip]
pub static ALL: &[ItemKind] = &[
    kind!(Identity "USER#" "EVT#", UserData, "an outbox event (the change's event, published by the stream)",
        [envelope: M, event_type: S]),
    kind!(Identity "USER#" "IDEMPOTENCY#", Expires, "a request recorded under its idempotency key (its answer, for a retry)",
        [expires_at: N, request_hash: S, response: L, response: M, response: N, response: Null,
         response: S]),
    kind!(Identity "USER#" "PROFILE", UserData, "the user's profile",
        [credential_generation: N, display_name: S, display_name: Null, email: S, email_pk: S,
         latest_session: S, password_hash: S, status: S, timezone: S, timezone: Null, units: S,
         units: Null, user_id: S, version: N]),
    kind!(Identity "USER#" "SESSION#", Expires, "a signed-in session (its refresh token's hash)",
        [expires_at: N, secret_hash: S, started_at: S, used_at: S]),
    kind!(Identity "EMAIL#" "EMAIL", UserData, "an email's reservation (which user holds it)",
        [user_id: S]),
    kind!(Identity "EMAIL#" "IDEMPOTENCY#", Expires, "a request recorded under its idempotency key (its answer, for a retry)",
        [expires_at: N, request_hash: S, response: L, response: M, response: N, response: Null,
         response: S]),
    kind!(Identity "TRIES#" "TRIES", Expires, "a credential's tries in one minute",
        [expires_at: N, failures: N, tries: N]),
    kind!(Identity "ERASED#" "TOMBSTONE", Kept, "an erased account's tombstone (and its progress)",
        [drained_activity: Bool, drained_dashboard: Bool, drained_goals: Bool,
         drained_insights: Bool, drained_integrations: Bool, drained_nutrition: Bool,
         drained_sleep: Bool, requested_at: S, status: S]),
    kind!(Identity "REPLAY#" "all", Bookkeeping, "a replay's checkpoint (every user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Identity "REPLAY#" "user-", Bookkeeping, "a replay's checkpoint (one user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Identity "DLQ#" "<position>#", Bookkeeping, "a dead letter: an event a subscription failed past its retries",
        [attempts: N, error: S, id: S, record: M, subscription: S]),
    kind!(Nutrition "USER#" "DAILY_SUMMARY#", UserData, "a day's nutrition totals",
        [day: S, meals: N, totals: M, version: N]),
    kind!(Nutrition "USER#" "EVT#", UserData, "an outbox event (the change's event, published by the stream)",
        [envelope: M, event_type: S]),
    kind!(Nutrition "USER#" "IDEMPOTENCY#", Expires, "a request recorded under its idempotency key (its answer, for a retry)",
        [expires_at: N, request_hash: S, response: L, response: M, response: N, response: Null,
         response: S]),
    kind!(Nutrition "USER#" "MEAL#", UserData, "a logged meal",
        [day: S, eaten_at: S, meal_id: S, name: S, nutrients: M, nutrients: Null, version: N]),
    kind!(Nutrition "USER#" "MEAL_REF#", UserData, "the day a meal is filed under",
        [day: S]),
    kind!(Nutrition "USER#" "SCHEDULED_MEAL#", UserData, "a meal planned for a day",
        [day: S, name: S, recipe_id: Null, recipe_id: S, scheduled_meal_id: S]),
    kind!(Nutrition "USER#" "TRAINING_LOAD#", UserData, "a day's training load (projected from activity)",
        [active_minutes: N, calories: N, calories: Null, entries: M, rev: N, workouts: N]),
    kind!(Nutrition "RECIPE#" "EVT#", Kept, "a curation's outbox event",
        [envelope: M, event_type: S]),
    kind!(Nutrition "RECIPE#" "RECIPE", Kept, "a curated recipe",
        [catalog_pk: S, catalog_sk: S, category: S, name: S, nutrients: M, nutrients: Null,
         recipe_id: Null, recipe_id: S]),
    kind!(Nutrition "MEAL_PLAN#" "EVT#", Kept, "a curation's outbox event",
        [envelope: M, event_type: S]),
    kind!(Nutrition "MEAL_PLAN#" "MEAL_PLAN", Kept, "a curated meal plan",
        [catalog_pk: S, catalog_sk: S, category: S, meal_plan_id: S, name: S, recipes: L]),
    kind!(Nutrition "ERASED#" "EVT#", Bookkeeping, "an erasure step's outbox event (removed once published)",
        [envelope: M, event_type: S]),
    kind!(Nutrition "ERASED#" "TOMBSTONE", Kept, "an erased account's tombstone (and its progress)",
        [requested_at: S, status: S]),
    kind!(Nutrition "REPLAY#" "all", Bookkeeping, "a replay's checkpoint (every user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Nutrition "REPLAY#" "user-", Bookkeeping, "a replay's checkpoint (one user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Nutrition "DLQ#" "<position>#", Bookkeeping, "a dead letter: an event a subscription failed past its retries",
        [attempts: N, error: S, id: S, record: M, subscription: S]),
    kind!(Activity "USER#" "EVT#", UserData, "an outbox event (the change's event, published by the stream)",
        [envelope: M, event_type: S]),
    kind!(Activity "USER#" "EXTERNAL#", UserData, "a wearable's record, by its external id (which item it became)",
        [entity_id: S, fingerprint: S, revision: N, revision: Null, target_sk: S, version: N]),
    kind!(Activity "USER#" "IDEMPOTENCY#", Expires, "a request recorded under its idempotency key (its answer, for a retry)",
        [expires_at: N, request_hash: S, response: L, response: M, response: N, response: Null,
         response: S]),
    kind!(Activity "USER#" "INTAKE#", UserData, "a day's intake (projected from nutrition)",
        [day: S, meals: N, totals: M, version: N]),
    kind!(Activity "USER#" "TRAINING_BLOCK#", UserData, "a training block",
        [ended_on: Null, ended_on: S, focus: S, start_day: S, training_block_id: S, weeks: N]),
    kind!(Activity "USER#" "WORKOUT#", UserData, "a workout",
        [calories: N, calories: Null, day: S, distance_m: N, distance_m: Null, duration_s: N,
         perceived_effort: N, perceived_effort: Null, source: M, source: Null, sport: S,
         started_at: S, version: N, workout_id: S]),
    kind!(Activity "ERASED#" "EVT#", Bookkeeping, "an erasure step's outbox event (removed once published)",
        [envelope: M, event_type: S]),
    kind!(Activity "ERASED#" "TOMBSTONE", Kept, "an erased account's tombstone (and its progress)",
        [requested_at: S, status: S]),
    kind!(Activity "REPLAY#" "all", Bookkeeping, "a replay's checkpoint (every user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Activity "REPLAY#" "user-", Bookkeeping, "a replay's checkpoint (one user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Activity "DLQ#" "<position>#", Bookkeeping, "a dead letter: an event a subscription failed past its retries",
        [attempts: N, error: S, id: S, record: M, subscription: S]),
    kind!(Sleep "USER#" "EVT#", UserData, "an outbox event (the change's event, published by the stream)",
        [envelope: M, event_type: S]),
    kind!(Sleep "USER#" "EXTERNAL#", UserData, "a wearable's record, by its external id (which item it became)",
        [entity_id: S, fingerprint: S, revision: N, revision: Null, target_sk: S, version: N]),
    kind!(Sleep "USER#" "IDEMPOTENCY#", Expires, "a request recorded under its idempotency key (its answer, for a retry)",
        [expires_at: N, request_hash: S, response: L, response: M, response: N, response: Null,
         response: S]),
    kind!(Sleep "USER#" "SLEEP#", UserData, "a night's sleep session",
        [end: S, night: S, score: N, score: Null, sleep_id: S, sleep_id: Null, source: M,
         source: Null, stages: M, stages: Null, start: S, version: N]),
    kind!(Sleep "ERASED#" "EVT#", Bookkeeping, "an erasure step's outbox event (removed once published)",
        [envelope: M, event_type: S]),
    kind!(Sleep "ERASED#" "TOMBSTONE", Kept, "an erased account's tombstone (and its progress)",
        [requested_at: S, status: S]),
    kind!(Sleep "REPLAY#" "all", Bookkeeping, "a replay's checkpoint (every user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Sleep "REPLAY#" "user-", Bookkeeping, "a replay's checkpoint (one user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Sleep "DLQ#" "<position>#", Bookkeeping, "a dead letter: an event a subscription failed past its retries",
        [attempts: N, error: S, id: S, record: M, subscription: S]),
    kind!(Goals "USER#" "ACT_WORKOUT#", UserData, "a workout, as the goals count it (projected)",
        [day: S, deleted: Bool, distance_m: N, distance_m: Null, duration_s: N, sport: S,
         version: N, workout_id: S]),
    kind!(Goals "USER#" "EVT#", UserData, "an outbox event (the change's event, published by the stream)",
        [envelope: M, event_type: S]),
    kind!(Goals "USER#" "GOAL#", UserData, "a goal (with its current period's progress)",
        [created_on: Null, created_on: S, current_period_rank: N, current_period_start: Null,
         current_period_start: S, current_value: Null, current_value: S, goal_id: S, kind: S,
         period: S, progress_rev: N, status: S, status_pk: S, status_sk: S, target: S,
         title: S, version: N]),
    kind!(Goals "USER#" "IDEMPOTENCY#", Expires, "a request recorded under its idempotency key (its answer, for a retry)",
        [expires_at: N, request_hash: S, response: L, response: M, response: N, response: Null,
         response: S]),
    kind!(Goals "USER#" "NUT_DAILY#", UserData, "a day's nutrition, as the goals count it (projected)",
        [day: S, meals: N, totals: M, version: N]),
    kind!(Goals "USER#" "PROGRESS#", UserData, "a goal's progress in one period",
        [goal_id: S, met: Bool, period_start: S, target: S, value: S]),
    kind!(Goals "USER#" "SLEEP_NIGHT#", UserData, "a night's sleep, as the goals count it (projected)",
        [entries: M, minutes: N, night: S, rev: N, sessions: N]),
    kind!(Goals "ERASED#" "EVT#", Bookkeeping, "an erasure step's outbox event (removed once published)",
        [envelope: M, event_type: S]),
    kind!(Goals "ERASED#" "TOMBSTONE", Kept, "an erased account's tombstone (and its progress)",
        [requested_at: S, status: S]),
    kind!(Goals "REPLAY#" "all", Bookkeeping, "a replay's checkpoint (every user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Goals "REPLAY#" "user-", Bookkeeping, "a replay's checkpoint (one user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Goals "DLQ#" "<position>#", Bookkeeping, "a dead letter: an event a subscription failed past its retries",
        [attempts: N, error: S, id: S, record: M, subscription: S]),
    kind!(Integrations "USER#" "CONNECTION#", UserData, "a wearable connection",
        [connected_at: Null, connected_at: S, provider: S, provider_user_id: S, scopes: L,
         status: S, timezone: Null, timezone: S, version: N]),
    kind!(Integrations "USER#" "DELIVERY#", UserData, "a webhook delivery, recorded once",
        [items: N, received_at: S]),
    kind!(Integrations "USER#" "EVT#", UserData, "an outbox event (the change's event, published by the stream)",
        [envelope: M, event_type: S]),
    kind!(Integrations "USER#" "IDEMPOTENCY#", Expires, "a request recorded under its idempotency key (its answer, for a retry)",
        [expires_at: N, request_hash: S, response: L, response: M, response: N, response: Null,
         response: S]),
    kind!(Integrations "USER#" "OAUTH_STATE#", Expires, "a pointer to a pending connect (so erasure finds it)",
        [expires_at: N]),
    kind!(Integrations "OAUTH_STATE#" "OAUTH_STATE", Expires, "a pending OAuth connect",
        [expires_at: N, provider: S, timezone: Null, timezone: S, user_id: S]),
    kind!(Integrations "PROVIDER_USER#" "PROVIDER_USER", UserData, "which user a provider's account is linked to",
        [timezone: Null, timezone: S, user_id: S]),
    kind!(Integrations "ERASED#" "EVT#", Bookkeeping, "an erasure step's outbox event (removed once published)",
        [envelope: M, event_type: S]),
    kind!(Integrations "ERASED#" "TOMBSTONE", Kept, "an erased account's tombstone (and its progress)",
        [requested_at: S, status: S]),
    kind!(Integrations "REPLAY#" "all", Bookkeeping, "a replay's checkpoint (every user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Integrations "REPLAY#" "user-", Bookkeeping, "a replay's checkpoint (one user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Integrations "DLQ#" "<position>#", Bookkeeping, "a dead letter: an event a subscription failed past its retries",
        [attempts: N, error: S, id: S, record: M, subscription: S]),
    kind!(Environment "WEATHER#" "WEATHER", Expires, "cached weather of a place and hour",
        [expires_at: N, humidity_pct: N, temperature_c: N, wind_kph: N]),
    kind!(Environment "AIR#" "AIR", Expires, "cached air quality of a place and hour",
        [aqi: N, expires_at: N, pm25: N]),
    kind!(Insights "USER#" "ACTIVE_DAY#", UserData, "a day the user was active (what the readiness job reads)",
        [active_day_pk: S, active_day_sk: S, active_minutes: N, day: S, entries: M, meals: N,
         rev: N, sleep_minutes: N]),
    kind!(Insights "USER#" "READINESS#", UserData, "a day's readiness score",
        [day: S, days_with_data: N, score: N, score: Null]),
    kind!(Insights "JOB#" "RUN#", Expires, "a day's run of the readiness job (where it is)",
        [cursor: S, expires_at: N, finished: Bool]),
    kind!(Insights "ERASED#" "EVT#", Bookkeeping, "an erasure step's outbox event (removed once published)",
        [envelope: M, event_type: S]),
    kind!(Insights "ERASED#" "TOMBSTONE", Kept, "an erased account's tombstone (and its progress)",
        [requested_at: S, status: S]),
    kind!(Insights "REPLAY#" "all", Bookkeeping, "a replay's checkpoint (every user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Insights "REPLAY#" "user-", Bookkeeping, "a replay's checkpoint (one user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Insights "DLQ#" "<position>#", Bookkeeping, "a dead letter: an event a subscription failed past its retries",
        [attempts: N, error: S, id: S, record: M, subscription: S]),
    kind!(Dashboard "USER#" "ACTIVE_GOAL#", UserData, "an active goal on the home screen",
        [deleted: Bool, goal_id: S, kind: S, period: S, target: S, title: S, version: N]),
    kind!(Dashboard "USER#" "CONNECTION#", UserData, "a connection as shown",
        [connected: Bool, connected_at: S, connected_at: Null, provider: S, scopes: L,
         version: N]),
    kind!(Dashboard "USER#" "DAILY#", UserData, "a day on the home screen (nutrition, activity, sleep)",
        [activity: M, activity: Null, activity_entries: M, activity_rev: N, day: S,
         nutrition: M, nutrition: Null, nutrition_version: N, sleep: M, sleep: Null,
         sleep_entries: M, sleep_rev: N]),
    kind!(Dashboard "USER#" "PROFILE", UserData, "the profile as shown",
        [display_name: Null, display_name: S, email: S, timezone: Null, timezone: S,
         units: Null, units: S, version: N]),
    kind!(Dashboard "USER#" "RECENT_MEAL#", UserData, "a recent meal on the home screen",
        [day: S, deleted: Bool, eaten_at: S, meal_id: S, name: S, nutrients: M,
         nutrients: Null, version: N]),
    kind!(Dashboard "USER#" "RECENT_WORKOUT#", UserData, "a recent workout on the home screen",
        [calories: N, calories: Null, day: S, deleted: Bool, distance_m: N, distance_m: Null,
         duration_s: N, perceived_effort: N, perceived_effort: Null, source: M, source: Null,
         sport: S, started_at: S, version: N, workout_id: S]),
    kind!(Dashboard "USER#" "WINDOW", UserData, "which days the home screen keeps",
        [hwm: N]),
    kind!(Dashboard "USER#" "~MEAL#", UserData, "a meal in the history",
        [day: S, deleted: Bool, eaten_at: S, meal_id: S, name: S, nutrients: M,
         nutrients: Null, version: N]),
    kind!(Dashboard "USER#" "~SLEEP#", UserData, "a night in the history",
        [deleted: Bool, end: S, night: S, score: N, score: Null, sleep_id: S, sleep_id: Null,
         source: M, source: Null, stages: M, stages: Null, start: S, version: N]),
    kind!(Dashboard "USER#" "~WORKOUT#", UserData, "a workout in the history",
        [calories: N, calories: Null, day: S, deleted: Bool, distance_m: N, distance_m: Null,
         duration_s: N, perceived_effort: N, perceived_effort: Null, source: M, source: Null,
         sport: S, started_at: S, version: N, workout_id: S]),
    kind!(Dashboard "ERASED#" "EVT#", Bookkeeping, "an erasure step's outbox event (removed once published)",
        [envelope: M, event_type: S]),
    kind!(Dashboard "ERASED#" "TOMBSTONE", Kept, "an erased account's tombstone (and its progress)",
        [requested_at: S, status: S]),
    kind!(Dashboard "REPLAY#" "all", Bookkeeping, "a replay's checkpoint (every user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Dashboard "REPLAY#" "user-", Bookkeeping, "a replay's checkpoint (one user's)",
        [cursor: Null, cursor: S, done: Bool]),
    kind!(Dashboard "DLQ#" "<position>#", Bookkeeping, "a dead letter: an event a subscription failed past its retries",
        [attempts: N, error: S, id: S, record: M, subscription: S]),
];
