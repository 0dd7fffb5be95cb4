//! Operator commands over a store: redrive a subscription's dead letters, run the
//! nightly readiness job, replay projections, look for a user's residue. Each opens its
//! store through the [`Place`] it runs in (its own process, or a running server), after
//! checking its arguments, and never closes a store it did not open.

mod failures;

pub use failures::{
    FailureClients, FailuresRedriven, failure_queue, redrive_failures, redrive_failures_with,
};

use crate::cli::exit::{Exit, ExitOn as _};
use crate::cli::{DlqKind, StoreArgs};
use crate::storage::{self, Storage};
use anyhow::Context as _;
use events_schema::time::Day;
use infra::Store;
use infra::dlq::{DeadLetterQueue, SqsDlq, TableDlq};
use infra::embedded::{EmbeddedStore, Open};
use infra::table::Table;
use projectors::nightly::{Budget, DayRun};
use projectors::runtime::{Redriven, redrive as redrive_letters};
use std::path::Path;
use std::sync::Arc;

/// Where a store command runs.
pub enum Place {
    /// In its own process, on the store its arguments name (opened, then closed).
    Here,
    /// Inside `vitals serve`, on the server's embedded store (whatever `--data-dir` says:
    /// the socket a client found in its data directory named the server).
    Served(Storage),
}

impl Place {
    /// The store `args` names, opened here (`mode` says whether it may be made), or the
    /// server's.
    pub async fn storage(&self, args: &StoreArgs, mode: Open) -> anyhow::Result<Storage> {
        match self {
            Place::Here => storage::open_in(args, mode).await,
            Place::Served(storage) => Ok(storage.clone()),
        }
    }

    /// The embedded store in `data_dir`, opened here, or the server's.
    pub fn embedded(&self, data_dir: &Path) -> anyhow::Result<Arc<EmbeddedStore>> {
        match self {
            Place::Here => Ok(Arc::new(storage::embedded(data_dir, Open::Existing)?)),
            Place::Served(storage) => storage
                .embedded
                .clone()
                .ok_or_else(|| Exit::Store.error("the server runs on no embedded store")),
        }
    }

    /// Closes `storage` if it was opened here (the server's stays open).
    pub fn release(&self, storage: &Storage) {
        if let (Place::Here, Some(embedded)) = (self, &storage.embedded) {
            embedded.close();
        }
    }

    /// A progress bar: drawn on standard error here, hidden in the server.
    pub fn progress_bar(&self) -> indicatif::ProgressBar {
        match self {
            Place::Here => indicatif::ProgressBar::new(0),
            Place::Served(_) => indicatif::ProgressBar::hidden(),
        }
    }
}

/// Applies a subscription's dead letters again, from its table or its SQS queue.
pub async fn redrive(
    place: &Place,
    args: &StoreArgs,
    dlq: DlqKind,
    subscription: &str,
) -> anyhow::Result<Redriven> {
    let store = place.storage(args, Open::Existing).await?.store;
    let projector = projectors::registry::find(store.clone(), subscription)
        .with_context(|| format!("no subscription named {subscription:?}"))
        .or_exit(Exit::Usage)?;
    let dlq: Box<dyn DeadLetterQueue> = match dlq {
        DlqKind::Table => Box::new(TableDlq::new(store, projector.target())),
        DlqKind::Sqs => {
            let config = storage::aws_config(&args.aws).await;
            Box::new(SqsDlq::new(
                infra::aws_client::sqs(&config),
                &args.aws.table_prefix,
            ))
        }
    };
    Ok(redrive_letters(projector.as_ref(), dlq.as_ref()).await?)
}

/// The day `--date` names; a malformed one is [`Exit::Usage`].
pub fn day(date: &str) -> anyhow::Result<Day> {
    Day::parse(date)
        .context("--date must be YYYY-MM-DD")
        .or_exit(Exit::Usage)
}

/// Scores readiness for every user active on `day`, from the first (an operator's
/// rerun); without a day, the ended days not finished yet, from where earlier runs
/// stopped, until `budget` is spent. Returns what it did for each day.
pub async fn nightly_readiness(
    store: Arc<dyn Store>,
    day: Option<Day>,
    budget: Budget,
) -> anyhow::Result<Vec<DayRun>> {
    let table = Table::new(store);
    let now = events_schema::time::Timestamp::now();
    let Some(day) = day else {
        return Ok(projectors::nightly::run(&table, now, budget).await?);
    };
    let scored = projectors::nightly::rescore_day(&table, day, now).await?;
    let finished = true;
    Ok(vec![DayRun {
        day,
        scored,
        finished,
    }])
}

/// `vitals admin curate-recipe` / `curate-meal-plan`: writes the catalog item and its
/// event; returns the new id. The operator acts as an account of its own, with no
/// idempotency key (a rerun curates a second item). The store must exist, unless the
/// command says `--create`; an invalid item is [`Exit::Usage`].
pub async fn curate(place: &Place, command: crate::cli::AdminCommand) -> anyhow::Result<String> {
    use crate::cli::AdminCommand;
    use commands::nutrition::{CurateMealPlan, CurateRecipe};
    use events_schema::events::nutrition::Nutrients;
    let operator = commands::CommandMeta::new(events_schema::ids::UserId::generate());
    match command {
        AdminCommand::CurateRecipe {
            name,
            category,
            calories,
            protein_g,
            carbs_g,
            fat_g,
            store,
            create,
        } => {
            let commands = nutrition_commands(place, &store, create).await?;
            let nutrients = Nutrients {
                calories,
                protein_g,
                carbs_g,
                fat_g,
            };
            let input = CurateRecipe {
                name,
                category,
                nutrients,
            };
            let id = commands
                .curate_recipe(&operator, input)
                .await
                .map_err(crate::cli::exit::of_command)?
                .value;
            Ok(id.to_string())
        }
        AdminCommand::CurateMealPlan {
            name,
            category,
            recipes,
            store,
            create,
        } => {
            let recipes = recipe_ids(&recipes)?;
            let commands = nutrition_commands(place, &store, create).await?;
            let input = CurateMealPlan {
                name,
                category,
                recipes,
            };
            let id = commands
                .curate_meal_plan(&operator, input)
                .await
                .map_err(crate::cli::exit::of_command)?
                .value;
            Ok(id.to_string())
        }
        other => Err(Exit::Usage.error(format!("not a curation command: {other:?}"))),
    }
}

/// The nutrition commands on the store `store` names in `place` (made if `create`).
async fn nutrition_commands(
    place: &Place,
    store: &StoreArgs,
    create: bool,
) -> anyhow::Result<commands::nutrition::NutritionCommands> {
    let store = place.storage(store, open_mode(create)).await?.store;
    Ok(commands::nutrition::NutritionCommands::new(Table::new(
        store,
    )))
}

/// The recipe ids `recipes` names; one that is not an id is [`Exit::Usage`].
fn recipe_ids(recipes: &[String]) -> anyhow::Result<Vec<events_schema::ids::RecipeId>> {
    recipes
        .iter()
        .map(|r| {
            r.parse()
                .with_context(|| format!("{r:?} is not a recipe id"))
                .or_exit(Exit::Usage)
        })
        .collect()
}

/// Whether `--create` lets a command make the store.
fn open_mode(create: bool) -> Open {
    if create {
        Open::OrCreate
    } else {
        Open::Existing
    }
}

/// A progress bar on stderr: events/s and time left.
struct Bar(indicatif::ProgressBar);

impl projectors::replay::Progress for Bar {
    fn total(&self, events: u64) {
        self.0.set_length(events);
    }
    fn advance(&self, events: u64) {
        self.0.inc(events);
    }
}

/// `vitals replay`: `projection` is a subscription name or `all`.
pub async fn replay(
    place: &Place,
    args: &StoreArgs,
    projection: &str,
    user: Option<&str>,
    mode: projectors::replay::Mode,
) -> anyhow::Result<projectors::replay::Replayed> {
    let user = user
        .map(|u| events_schema::ids::UserId::parse(u).context("--user is not a user id"))
        .transpose()
        .or_exit(Exit::Usage)?;
    let storage = place.storage(args, Open::Existing).await?;
    let store = storage.store.clone();
    let all = projectors::registry::projections(store.clone());
    let selected: Vec<_> = if projection == "all" {
        all
    } else {
        let one: Vec<_> = all.into_iter().filter(|p| p.name() == projection).collect();
        if one.is_empty() {
            return Err(Exit::Usage.error(format!(
                "no projection named {projection:?}; one of: {}",
                projectors::registry::projections(store.clone())
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        one
    };
    let bar = place.progress_bar().with_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} events  {per_sec}  ETA {eta}",
        )
        .context("progress template")?,
    );
    let replayed = projectors::replay::replay_with(
        store,
        &selected,
        user.as_ref(),
        &Bar(bar.clone()),
        projectors::replay::BATCH_EVENTS,
        mode,
    )
    .await?;
    bar.finish();
    place.release(&storage);
    Ok(replayed)
}

/// What `vitals admin residue` found: the remnants, and the erasure's status in
/// identity's tombstone (None when no erasure was ever requested for this id).
pub struct Residue {
    pub remnants: Vec<crate::residue::Remnant>,
    /// Change-log records holding the user (embedded store only).
    pub logged: Vec<crate::residue::LoggedChange>,
    /// Dead letters about the user in SQS queues (with `--dlq sqs`).
    pub dead_letters: Vec<crate::residue::QueuedLetters>,
    pub erasure: Option<String>,
}

/// `vitals admin residue`: everything left of a user.
pub async fn residue(
    place: &Place,
    args: &StoreArgs,
    user: &str,
    dlq: DlqKind,
) -> anyhow::Result<Residue> {
    let user = events_schema::ids::UserId::parse(user)
        .context("not a user id")
        .or_exit(Exit::Usage)?;
    let storage = place.storage(args, Open::Existing).await?;
    let remnants = crate::residue::find(&*storage.store, &user).await?;
    let dead_letters = match dlq {
        // Table letters are rows: the scan above finds them.
        DlqKind::Table => Vec::new(),
        DlqKind::Sqs => {
            let config = storage::aws_config(&args.aws).await;
            let queues = SqsDlq::new(infra::aws_client::sqs(&config), &args.aws.table_prefix);
            let subscriptions = projectors::registry::all(storage.store.clone());
            let names: Vec<&str> = subscriptions.iter().map(|s| s.name()).collect();
            crate::residue::find_in_queues(&queues, &names, &user).await?
        }
    };
    let identity = Table::<infra::table::contexts::Identity>::new(storage.store.clone());
    let erasure = commands::erasure::status(&identity, &user).await?;
    let logged = match &storage.embedded {
        Some(embedded) => crate::residue::find_in_change_log(embedded, &user).await?,
        None => Vec::new(),
    };
    place.release(&storage);
    Ok(Residue {
        remnants,
        logged,
        dead_letters,
        erasure,
    })
}
