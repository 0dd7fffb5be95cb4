//! The HTTP API as one Lambda function per table it writes: which function serves each
//! operation of the OpenAPI document, the one table its role may write and every table
//! it reads, with the reason. The template renders functions, roles and API Gateway v2
//! routes from this; it never decides a route itself.
//!
//! Why split. One function serving the whole API needed a role writing seven tables, so
//! a bug in meal logging could write workout history. Here each function's role writes
//! exactly one table, as its command handlers (each given only its own context's
//! `infra::table::Table`) can only write one: an operation goes to the function of the
//! table it writes; a read-only one to the function of the table whose rows it reads.
//! The reads of projections (the dashboard table's home, history and profile rows, the
//! insights table's readiness) and the operations routes go to `QueryApi`, which writes
//! nothing and also takes `$default`: whatever matches no route (an unknown path, `HEAD`,
//! `OPTIONS`).
//!
//! Routes are not listed by hand: `ASSIGNMENT` sends paths (one path, or a path and
//! everything under it) to functions, and each operation of the document the router
//! serves (`crate::http::openapi::document`) becomes the route key `METHOD /path`, with
//! the document's `{param}` variables, of the first line that takes it.
//!
//! What a route touches, read off the handlers and commands:
//! - every signed-in route (bearer security in the document) reads identity: the
//!   `AuthUser` extractor checks the token's credential generation on the profile (the
//!   erasure tombstone for an external provider's token) on every request;
//! - a command's hidden writes stay in its own table: idempotency records, outbox
//!   (`EVT#`) items, sign-in and password tries, failed sign-ins, email reservations,
//!   refresh-token sessions, OAuth states, webhook deliveries, the weather and air cache
//!   a `GET /v1/me/environment` miss fills; so do its hidden reads: every commit checks
//!   the user's erasure tombstone in that table, and a retry reads its idempotency record;
//! - no route writes two tables. What is kept per process (rate limits, the sandbox
//!   provider's used codes) is in memory, in no table.

use crate::http::openapi;
use events_schema::Context;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// The route key of whatever matches no other route.
pub const DEFAULT_ROUTE: &str = "$default";

/// The path whose operation describes the identity table (`/healthz`).
const HEALTH_PATH: &str = "/healthz";

/// One function of the HTTP API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiFunction {
    /// The logical id stem, such as `NutritionApi`.
    pub name: &'static str,
    /// The physical name's suffix, such as `nutrition-api`.
    pub suffix: &'static str,
    /// The one table its role writes; `None` for the query function.
    pub writes: Option<Context>,
    /// Every table it reads, with each reason one of its routes has.
    pub reads: BTreeMap<Context, Vec<&'static str>>,
    /// Whether it may describe the identity table (`GET /healthz` does).
    pub describes_identity: bool,
    /// Its API Gateway route keys, such as `POST /v1/me/meals`.
    pub routes: Vec<String>,
    /// Whether it takes `$default`.
    pub default_route: bool,
}

impl ApiFunction {
    /// The tables it reads.
    pub fn tables_read(&self) -> BTreeSet<Context> {
        self.reads.keys().copied().collect()
    }

    /// Whether it takes the providers' signed webhooks, and so needs the webhook secret
    /// (no other function may read it).
    pub fn serves_webhooks(&self) -> bool {
        self.routes.iter().any(|r| r == WEBHOOK_ROUTE)
    }
}

/// The route of the providers' signed webhooks.
pub const WEBHOOK_ROUTE: &str = "POST /v1/integrations/{provider}/webhook";

/// Whether the API function named `function` takes webhooks (`None`: the whole API in
/// one function, which does).
pub fn serves_webhooks(function: Option<&str>) -> bool {
    function.is_none_or(|name| {
        api_functions()
            .iter()
            .any(|f| f.name == name && f.serves_webhooks())
    })
}

/// The functions: one per table the API writes, then the query function.
#[rustfmt::skip]
const FUNCTIONS: [(&str, &str, Option<Context>); 8] = [
    ("IdentityApi",     "identity-api",     Some(Context::Identity)),
    ("NutritionApi",    "nutrition-api",    Some(Context::Nutrition)),
    ("ActivityApi",     "activity-api",     Some(Context::Activity)),
    ("SleepApi",        "sleep-api",        Some(Context::Sleep)),
    ("GoalsApi",        "goals-api",        Some(Context::Goals)),
    ("IntegrationsApi", "integrations-api", Some(Context::Integrations)),
    ("EnvironmentApi",  "environment-api",  Some(Context::Environment)),
    ("QueryApi",        "query-api",        None),
];

/// Which methods of its paths a line of the assignment takes.
#[derive(Debug, Clone, Copy)]
enum Methods {
    All,
    Get,
}

/// Which paths a line of the assignment takes.
#[derive(Debug, Clone, Copy)]
enum Paths {
    /// This path only.
    Exactly(&'static str),
    /// This path and every path under it (`/v1/me/meals`, `/v1/me/meals/{id}`).
    Under(&'static str),
}

impl Paths {
    fn take(self, path: &str) -> bool {
        match self {
            Paths::Exactly(exact) => path == exact,
            Paths::Under(root) => path
                .strip_prefix(root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
        }
    }
}

/// A line of the assignment: the operations it takes, the function they go to (by the
/// table it writes; `None`, the query function) and what they read, besides the
/// credential check of the signed-in ones.
#[derive(Debug)]
struct Line {
    methods: Methods,
    paths: Paths,
    to: Option<Context>,
    reads: &'static [(Context, &'static str)],
}

const fn line(
    methods: Methods,
    paths: Paths,
    to: Option<Context>,
    reads: &'static [(Context, &'static str)],
) -> Line {
    Line {
        methods,
        paths,
        to,
        reads,
    }
}

/// What the `AuthUser` extractor reads on every signed-in request.
const CREDENTIAL_CHECK: (Context, &str) = (
    Context::Identity,
    "every signed-in request checks the bearer's credential generation on the profile \
     (an external provider's token: the erasure tombstone), one consistent GetItem",
);

const IDENTITY: &[(Context, &str)] = &[(
    Context::Identity,
    "the account's items, read before each conditional write: profile and credentials, \
     email reservations, refresh-token sessions, sign-in and password tries counted across \
     processes, failed sign-ins per address, the erasure tombstone, idempotency records",
)];
const MEALS: &[(Context, &str)] = &[(
    Context::Nutrition,
    "the meal, its days' summaries and idempotency records, read before each write",
)];
const DAILY_NUTRITION: &[(Context, &str)] = &[(
    Context::Nutrition,
    "the daily summaries of a range of days (one Query)",
)];
const SCHEDULED_MEALS: &[(Context, &str)] = &[(
    Context::Nutrition,
    "scheduled meals, the curated recipe a plan names (and whose nutrients an eaten one \
     takes), the eaten meal's day summary, idempotency records",
)];
const CATALOG: &[(Context, &str)] = &[(
    Context::Nutrition,
    "the curated catalog, through the nutrition table's `catalog` index",
)];
const WORKOUTS: &[(Context, &str)] = &[(
    Context::Activity,
    "the latest workout (one reverse Query); idempotency records of a recorded workout",
)];
const CURRENT_BLOCK: &[(Context, &str)] = &[(
    Context::Activity,
    "the training block running today (one reverse Query)",
)];
const TRAINING_BLOCKS: &[(Context, &str)] = &[(
    Context::Activity,
    "training blocks, listed or read before an end; idempotency records",
)];
const SLEEP: &[(Context, &str)] = &[(
    Context::Sleep,
    "a recorded session's idempotency record and the erasure tombstone its commit checks",
)];
const GOALS: &[(Context, &str)] = &[(
    Context::Goals,
    "goals (by the `by-status` index), their progress rows, the goal read before a \
     status change, idempotency records",
)];
const INTEGRATIONS: &[(Context, &str)] = &[(
    Context::Integrations,
    "OAuth states, connections, the provider-user pointer a webhook is routed by, \
     webhook delivery records, idempotency records (the callback reads nothing)",
)];
const ENVIRONMENT: &[(Context, &str)] = &[(
    Context::Environment,
    "the weather and air cache of a geohash cell and hour, written on a miss",
)];
const PROFILE: &[(Context, &str)] = &[(
    Context::Dashboard,
    "the profile as projected into the dashboard table",
)];
const HISTORY: &[(Context, &str)] = &[(
    Context::Dashboard,
    "the history rows: a day's meals, workouts and sleep over a range of days",
)];
const HOME: &[(Context, &str)] = &[
    (
        Context::Dashboard,
        "the home screen's rows of the day (one Query)",
    ),
    (Context::Insights, "the day's readiness score (one GetItem)"),
];
const READINESS: &[(Context, &str)] =
    &[(Context::Insights, "the day's readiness score (one GetItem)")];
/// `/healthz` describes the identity table; `/metrics` answers the process's own
/// counters (no projector runs in an API function); the document is static.
const NOTHING: &[(Context, &str)] = &[];

/// Paths to functions: the first line taking an operation sends it. The reads of the
/// dashboard table's rows come first, ahead of the writes of the same paths.
#[rustfmt::skip]
static ASSIGNMENT: &[Line] = {
    use Context::{Activity, Environment, Goals, Identity, Integrations, Nutrition, Sleep};
    use Methods::{All, Get};
    use Paths::{Exactly, Under};
    &[
        // The query function: projections, readiness, operations.
        line(Get, Exactly("/v1/me/profile"),         None,               PROFILE),
        line(Get, Exactly("/v1/me/meals"),           None,               HISTORY),
        line(Get, Exactly("/v1/me/workouts"),        None,               HISTORY),
        line(Get, Exactly("/v1/me/sleep"),           None,               HISTORY),
        line(All, Exactly("/v1/me/dashboard"),       None,               HOME),
        line(All, Exactly("/v1/me/readiness"),       None,               READINESS),
        line(All, Exactly(HEALTH_PATH),              None,               NOTHING),
        line(All, Exactly("/metrics"),               None,               NOTHING),
        line(All, Exactly("/openapi.json"),          None,               NOTHING),
        // Accounts and sessions.
        line(All, Under("/v1/auth"),                 Some(Identity),     IDENTITY),
        line(All, Exactly("/v1/me"),                 Some(Identity),     IDENTITY),
        line(All, Under("/v1/me/profile"),           Some(Identity),     IDENTITY),
        line(All, Under("/v1/me/password"),          Some(Identity),     IDENTITY),
        // Meals, plans of meals and the catalog.
        line(All, Under("/v1/me/meals"),             Some(Nutrition),    MEALS),
        line(All, Under("/v1/me/nutrition"),         Some(Nutrition),    DAILY_NUTRITION),
        line(All, Under("/v1/me/scheduled-meals"),   Some(Nutrition),    SCHEDULED_MEALS),
        line(All, Under("/v1/catalog"),              Some(Nutrition),    CATALOG),
        // Workouts and training blocks.
        line(All, Under("/v1/me/workouts"),          Some(Activity),     WORKOUTS),
        line(All, Under("/v1/me/training-block"),    Some(Activity),     CURRENT_BLOCK),
        line(All, Under("/v1/me/training-blocks"),   Some(Activity),     TRAINING_BLOCKS),
        line(All, Under("/v1/me/sleep"),             Some(Sleep),        SLEEP),
        line(All, Under("/v1/me/goals"),             Some(Goals),        GOALS),
        // Connect, complete, disconnect, the OAuth callback and signed webhooks.
        line(All, Under("/v1/integrations"),         Some(Integrations), INTEGRATIONS),
        // A GET that writes: a miss fills the weather and air cache.
        line(All, Exactly("/v1/me/environment"),     Some(Environment),  ENVIRONMENT),
    ]
};

/// One operation of the OpenAPI document.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Operation {
    /// Upper case, as in a route key.
    method: String,
    path: String,
    /// Whether it takes the bearer token.
    signed_in: bool,
}

impl Operation {
    fn route_key(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// The operation keys of an OpenAPI path item.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

#[derive(Debug, Default, Deserialize)]
struct Document {
    #[serde(default)]
    paths: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
}

/// The operations of `document` (OpenAPI JSON), by path, then method.
fn operations_of(document: &str) -> Vec<Operation> {
    let document: Document = serde_json::from_str(document).unwrap_or_else(|error| {
        tracing::error!(%error, "reading the OpenAPI document failed");
        Document::default()
    });
    let mut operations = Vec::new();
    for (path, item) in document.paths {
        for (method, operation) in item {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            let bearer = |requirement: &serde_json::Value| requirement.get("bearer").is_some();
            let signed_in = operation
                .get("security")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|requirements| requirements.iter().any(bearer));
            operations.push(Operation {
                method: method.to_uppercase(),
                path: path.clone(),
                signed_in,
            });
        }
    }
    operations
}

/// The line of [`ASSIGNMENT`] taking `operation`, if any.
fn line_of(operation: &Operation) -> Option<&'static Line> {
    ASSIGNMENT.iter().find(|line| {
        let method = match line.methods {
            Methods::All => true,
            Methods::Get => operation.method == "GET",
        };
        method && line.paths.take(&operation.path)
    })
}

/// The functions of the API the router serves, each with its routes.
pub fn api_functions() -> Vec<ApiFunction> {
    functions_for(&operations_of(&openapi::document()))
}

/// The functions serving `operations`. An operation no line takes goes to no function
/// (API Gateway would send it to `$default`): the tests refuse that.
fn functions_for(operations: &[Operation]) -> Vec<ApiFunction> {
    let mut functions: Vec<ApiFunction> = FUNCTIONS
        .into_iter()
        .map(|(name, suffix, writes)| ApiFunction {
            name,
            suffix,
            writes,
            reads: BTreeMap::new(),
            describes_identity: false,
            routes: Vec::new(),
            default_route: writes.is_none(),
        })
        .collect();
    for operation in operations {
        let Some(line) = line_of(operation) else {
            continue;
        };
        let Some(function) = functions.iter_mut().find(|f| f.writes == line.to) else {
            continue;
        };
        function.routes.push(operation.route_key());
        let credentials = operation.signed_in.then_some(&CREDENTIAL_CHECK);
        for (table, reason) in credentials.into_iter().chain(line.reads) {
            let reasons = function.reads.entry(*table).or_default();
            if !reasons.contains(reason) {
                reasons.push(*reason);
            }
        }
        function.describes_identity |= operation.path == HEALTH_PATH;
    }
    functions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed document: the route keys must use its paths as they are written.
    const COMMITTED: &str = include_str!("../../../docs/openapi.json");

    fn operations() -> Vec<Operation> {
        operations_of(&openapi::document())
    }

    fn function_of<'a>(functions: &'a [ApiFunction], route: &str) -> &'a str {
        let mut serving = functions
            .iter()
            .filter(|f| f.routes.iter().any(|r| r == route));
        serving.next().map_or("none", |f| f.name)
    }

    #[test]
    fn every_operation_goes_to_exactly_one_function() {
        let functions = api_functions();
        let operations = operations();
        assert!(operations.len() > 40, "{} operations", operations.len());
        for operation in &operations {
            let key = operation.route_key();
            let serving: Vec<&str> = functions
                .iter()
                .filter(|f| f.routes.contains(&key))
                .map(|f| f.name)
                .collect();
            assert_eq!(serving.len(), 1, "{key} is served by {serving:?}");
        }
        let routes: usize = functions.iter().map(|f| f.routes.len()).sum();
        assert_eq!(routes, operations.len(), "a route no operation has");
    }

    #[test]
    fn each_function_writes_one_table_and_each_table_has_one_writer() {
        let functions = api_functions();
        let writers: Vec<Context> = functions.iter().filter_map(|f| f.writes).collect();
        let distinct: BTreeSet<Context> = writers.iter().copied().collect();
        assert_eq!(writers.len(), distinct.len(), "two functions write a table");
        let api_writes: BTreeSet<Context> = super::super::plan::API_WRITES.into_iter().collect();
        assert_eq!(
            distinct, api_writes,
            "the API's written tables, one function each"
        );
        assert_eq!(functions.iter().filter(|f| f.writes.is_none()).count(), 1);
        for function in &functions {
            if let Some(table) = function.writes {
                assert!(
                    function.reads.contains_key(&table),
                    "{} writes {table} without reading it",
                    function.name
                );
            }
        }
    }

    #[test]
    fn every_function_has_routes_and_every_line_takes_an_operation() {
        for function in api_functions() {
            assert!(
                !function.routes.is_empty(),
                "{} serves nothing",
                function.name
            );
        }
        let operations = operations();
        for line in ASSIGNMENT {
            let takes = operations
                .iter()
                .any(|o| line_of(o).is_some_and(|taken| std::ptr::eq(taken, line)));
            assert!(takes, "{line:?} takes no operation");
        }
    }

    #[test]
    fn route_keys_are_the_documents_methods_and_paths() {
        let committed: BTreeSet<String> = operations_of(COMMITTED)
            .iter()
            .map(Operation::route_key)
            .collect();
        let routes: BTreeSet<String> = api_functions().into_iter().flat_map(|f| f.routes).collect();
        assert_eq!(routes, committed);
        for route in &routes {
            let (method, path) = route.split_once(' ').unwrap_or_default();
            assert!(METHODS.contains(&method.to_lowercase().as_str()), "{route}");
            assert!(path.starts_with('/') && !path.contains(':'), "{route}");
        }
        assert!(routes.contains("DELETE /v1/me/scheduled-meals/{day}/{id}"));
    }

    #[test]
    fn the_default_route_goes_to_one_function_that_writes_nothing() {
        let functions = api_functions();
        let default: Vec<&ApiFunction> = functions.iter().filter(|f| f.default_route).collect();
        assert_eq!(default.len(), 1);
        assert_eq!((default[0].name, default[0].writes), ("QueryApi", None));
        assert!(
            functions
                .iter()
                .all(|f| !f.routes.iter().any(|r| r == DEFAULT_ROUTE))
        );
    }

    #[test]
    fn signed_in_routes_read_identity_and_only_health_describes_it() {
        let functions = api_functions();
        for function in &functions {
            assert!(
                function.reads.contains_key(&Context::Identity),
                "{} serves signed-in routes without reading identity",
                function.name
            );
        }
        let describing: Vec<&str> = functions
            .iter()
            .filter(|f| f.describes_identity)
            .map(|f| f.name)
            .collect();
        assert_eq!(describing, ["QueryApi"]);
    }

    /// The routes a reader would check first: each write with its table's function, the
    /// projections' reads with the query function, and the GET that writes.
    #[test]
    fn routes_go_to_the_table_they_write_or_read() {
        let functions = api_functions();
        for (route, function) in [
            ("POST /v1/auth/login", "IdentityApi"),
            ("PATCH /v1/me/profile", "IdentityApi"),
            ("GET /v1/me/profile", "QueryApi"),
            ("POST /v1/me/meals", "NutritionApi"),
            ("GET /v1/me/meals", "QueryApi"),
            (
                "POST /v1/me/scheduled-meals/{day}/{id}/eaten",
                "NutritionApi",
            ),
            ("GET /v1/catalog/recipes", "NutritionApi"),
            ("GET /v1/me/workouts", "QueryApi"),
            ("GET /v1/me/workouts/latest", "ActivityApi"),
            (
                "POST /v1/me/training-blocks/{start_day}/{id}/end",
                "ActivityApi",
            ),
            ("GET /v1/me/training-block/current", "ActivityApi"),
            ("POST /v1/me/sleep", "SleepApi"),
            ("GET /v1/me/goals/{id}/progress", "GoalsApi"),
            (
                "POST /v1/integrations/{provider}/webhook",
                "IntegrationsApi",
            ),
            (
                "GET /v1/integrations/{provider}/callback",
                "IntegrationsApi",
            ),
            ("GET /v1/me/environment", "EnvironmentApi"),
            ("GET /v1/me/dashboard", "QueryApi"),
            ("GET /healthz", "QueryApi"),
        ] {
            assert_eq!(function_of(&functions, route), function, "{route}");
        }
        let query = functions.iter().find(|f| f.writes.is_none());
        let reads = query.map(ApiFunction::tables_read).unwrap_or_default();
        let expected = [Context::Identity, Context::Insights, Context::Dashboard];
        assert_eq!(reads, expected.into_iter().collect());
    }
}
