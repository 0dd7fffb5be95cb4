//! Everything the HTTP handlers use: every context's command handlers, the query
//! handlers, and authentication. Built once from a store.

use super::auth::Auth;
use super::limits::Limits;
use commands::activity::ActivityCommands;
use commands::environment::{EnvironmentCommands, SandboxEnvironment};
use commands::goals::GoalCommands;
use commands::handlers::Handlers;
use commands::identity::IdentityCommands;
use commands::integrations::{IntegrationCommands, Providers};
use commands::nutrition::NutritionCommands;
use commands::sleep::SleepCommands;
use infra::Store;
use infra::table::Table;
use readmodels::{activity, catalog, dashboard, goals, history, insights, nutrition, planning};
use std::sync::Arc;

/// The read models, each over the table it reads.
#[derive(Debug, Clone)]
pub struct ReadModels {
    pub dashboard: dashboard::Dashboard,
    pub history: history::History,
    pub nutrition: nutrition::Nutrition,
    pub activity: activity::Activity,
    pub goals: goals::Goals,
    pub scheduled_meals: planning::ScheduledMeals,
    pub training_blocks: planning::TrainingBlocks,
    pub catalog: catalog::Catalog,
    pub insights: insights::Insights,
}

impl ReadModels {
    pub fn new(store: &Arc<dyn Store>) -> Self {
        Self {
            dashboard: dashboard::Dashboard::new(Table::new(store.clone())),
            history: history::History::new(Table::new(store.clone())),
            nutrition: nutrition::Nutrition::new(Table::new(store.clone())),
            activity: activity::Activity::new(Table::new(store.clone())),
            goals: goals::Goals::new(Table::new(store.clone())),
            scheduled_meals: planning::ScheduledMeals::new(Table::new(store.clone())),
            training_blocks: planning::TrainingBlocks::new(Table::new(store.clone())),
            catalog: catalog::Catalog::new(Table::new(store.clone())),
            insights: insights::Insights::new(Table::new(store.clone())),
        }
    }
}

pub struct Api {
    pub identity: IdentityCommands,
    pub nutrition: NutritionCommands,
    pub activity: ActivityCommands,
    pub sleep: SleepCommands,
    pub goals: GoalCommands,
    pub integrations: IntegrationCommands,
    /// The weather and air cache; the sandbox provider fills it on a miss.
    pub environment: EnvironmentCommands,
    pub reads: ReadModels,
    pub auth: Auth,
    pub limits: Limits,
    /// Where the OAuth callback sends the provider's redirect on: the app, which
    /// completes the connect as its signed-in user.
    pub connect_return: String,
}

/// The app's return URL when none is configured: its own URL scheme.
pub const DEFAULT_CONNECT_RETURN: &str = "vitals://integrations/callback";

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").finish_non_exhaustive()
    }
}

impl Api {
    /// `providers`: the wearable providers connects and webhooks reach.
    pub fn new(store: Arc<dyn Store>, auth: Auth, providers: Providers, limits: Limits) -> Self {
        Self {
            identity: IdentityCommands::new(Table::new(store.clone())),
            nutrition: NutritionCommands::new(Table::new(store.clone())),
            activity: ActivityCommands::new(Table::new(store.clone())),
            sleep: SleepCommands::new(Table::new(store.clone())),
            goals: GoalCommands::new(Table::new(store.clone())),
            integrations: Handlers::new(Table::new(store.clone()))
                .with_services(Arc::new(providers)),
            environment: EnvironmentCommands::new(
                Table::new(store.clone()),
                Arc::new(SandboxEnvironment),
            ),
            reads: ReadModels::new(&store),
            auth,
            limits,
            connect_return: DEFAULT_CONNECT_RETURN.to_owned(),
        }
    }
}
