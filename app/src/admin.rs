//! Operator commands over a store: redrive a subscription's dead letters, run the
//! nightly readiness job, replay projections, look for a user's residue. Each opens its
//! store through the [`Place`] it runs in (its own process, or a running server), after
//! checking its arguments, and never closes a store it did not open.

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
use std::collections::HashSet;
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

/// The on-failure queue of the projector function writing `target`'s table (see
/// `deploy::template`): every mapping of that function fails over to it.
pub fn failure_queue(prefix: &str, target: events_schema::Context) -> String {
    format!("{prefix}{target}-projector-failures")
}

/// What `vitals redrive-failures` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FailuresRedriven {
    /// Batches whose records were all fetched and applied (their messages deleted).
    pub batches: usize,
    /// Records applied (to every subscription of the projector on the record's stream, or
    /// dead-lettered there).
    pub records: usize,
    /// Batches the stream no longer retains (in part or whole), left in the queue:
    /// `shard start..end` of each.
    pub expired: Vec<String>,
    /// Messages that are not batch descriptions, left in the queue.
    pub unreadable: usize,
    /// Batches whose last record was not reached within the pages a batch is read in
    /// (the shard answered empty while behind), left in the queue for a later pass:
    /// `shard start..end` of each.
    pub incomplete: Vec<String>,
}

/// Seconds a message being redriven stays hidden from other readers.
const REDRIVE_VISIBILITY_S: i32 = 120;

/// What tells a message apart across receives: its id (a receipt handle changes with
/// every receive), or else its body's digest and the body itself.
fn message_identity(message: &aws_sdk_sqs::types::Message) -> String {
    match message.message_id() {
        Some(id) => format!("id:{id}"),
        None => format!(
            "body:{}:{}",
            message.md5_of_body().unwrap_or_default(),
            message.body().unwrap_or_default()
        ),
    }
}

/// What `vitals redrive-failures` talks to: the tables the records are applied to, the
/// on-failure queues and the streams.
#[derive(Clone)]
pub struct FailureClients {
    pub store: Arc<dyn Store>,
    pub sqs: aws_sdk_sqs::Client,
    pub kinesis: aws_sdk_kinesis::Client,
    pub table_prefix: String,
}

impl std::fmt::Debug for FailureClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailureClients")
            .field("table_prefix", &self.table_prefix)
            .finish_non_exhaustive()
    }
}

impl FailureClients {
    /// The clients of the AWS configuration `aws` names.
    pub async fn of(aws: &crate::cli::AwsArgs) -> Self {
        let config = storage::aws_config(aws).await;
        Self {
            store: Arc::new(storage::dynamodb_on(&config, aws)),
            sqs: infra::aws_client::sqs(&config),
            kinesis: infra::aws_client::kinesis(&config),
            table_prefix: aws.table_prefix.clone(),
        }
    }
}

/// Reads the on-failure queue of `target`'s projector function, fetches each described
/// batch back from its Kinesis shard and applies its records through the function's own
/// code (the subscriptions writing `target` of the stream the record came from). One pass: every
/// message is handled at most once (one that reappears is hidden again, not handled
/// twice), and the queue is taken for read through only when a long poll finds nothing
/// more (see [`infra::dlq::read_on`]).
pub async fn redrive_failures(
    aws: &crate::cli::AwsArgs,
    target: events_schema::Context,
) -> anyhow::Result<FailuresRedriven> {
    redrive_failures_with(&FailureClients::of(aws).await, target).await
}

/// [`redrive_failures`] through `clients`.
pub async fn redrive_failures_with(
    clients: &FailureClients,
    target: events_schema::Context,
) -> anyhow::Result<FailuresRedriven> {
    let handlers = projectors::registry::projector_handlers(clients.store.clone(), target);
    let queue = failure_queue(&clients.table_prefix, target);
    let url = queue_url(&clients.sqs, &queue).await?;
    let mut outcome = FailuresRedriven::default();
    // The messages this pass has received: one it left in the queue (unreadable, expired,
    // not read to its end) reappears once its visibility timeout has passed, and is not
    // handled again, so the pass ends.
    let mut seen = HashSet::new();
    loop {
        let messages = infra::dlq::read_on(&clients.sqs, &url, 10, REDRIVE_VISIBILITY_S)
            .await
            .context("reading the on-failure queue")?;
        if messages.is_empty() {
            return Ok(outcome);
        }
        for message in messages {
            if !seen.insert(message_identity(&message)) {
                // Hidden again for as long as a pass keeps what it received: the reads
                // that follow find what this pass has not seen yet.
                hide_again(&clients.sqs, &url, &message).await?;
                continue;
            }
            redrive_message(clients, &handlers, &queue, &url, &message, &mut outcome).await?;
        }
    }
}

/// The URL of the SQS queue named `queue`.
async fn queue_url(sqs: &aws_sdk_sqs::Client, queue: &str) -> anyhow::Result<String> {
    sqs.get_queue_url()
        .queue_name(queue)
        .send()
        .await
        .with_context(|| format!("finding the queue {queue}"))?
        .queue_url
        .with_context(|| format!("no URL for the queue {queue}"))
}

/// Hides `message` of the queue at `url` again for [`REDRIVE_VISIBILITY_S`]: this pass
/// has handled it already.
async fn hide_again(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    message: &aws_sdk_sqs::types::Message,
) -> anyhow::Result<()> {
    sqs.change_message_visibility()
        .queue_url(url)
        .receipt_handle(message.receipt_handle().unwrap_or_default())
        .visibility_timeout(REDRIVE_VISIBILITY_S)
        .send()
        .await
        .context("hiding a message already handled in this pass")?;
    Ok(())
}

/// Redrives the batch that `message` (of the queue named `queue`, at `url`) describes,
/// counted in `outcome`: fetches its records back from the stream and applies them
/// through `handlers`, then deletes the message unless the stream no longer retains the
/// whole batch. A message that is not a batch description, or a batch not read to its
/// end, is left in the queue.
async fn redrive_message(
    clients: &FailureClients,
    handlers: &[projectors::runtime::Handler],
    queue: &str,
    url: &str,
    message: &aws_sdk_sqs::types::Message,
    outcome: &mut FailuresRedriven,
) -> anyhow::Result<()> {
    let batch = match infra::feed::failures::parse(message.body().unwrap_or_default()) {
        Ok(batch) => batch,
        Err(error) => {
            tracing::warn!(%queue, %error, "leaving a message that is not a batch description");
            outcome.unreadable += 1;
            return Ok(());
        }
    };
    let described = format!(
        "{} {}..{}",
        batch.shard_id, batch.start_sequence_number, batch.end_sequence_number
    );
    let fetched =
        infra::feed::failures::fetch(&clients.kinesis, &batch, &clients.table_prefix).await?;
    if fetched.incomplete {
        // Read again, whole, by a later pass.
        outcome.incomplete.push(described);
        return Ok(());
    }
    if fetched.expired {
        outcome.expired.push(described);
    }
    outcome.records += apply_fetched(handlers, &fetched).await?;
    if !fetched.expired {
        clients
            .sqs
            .delete_message()
            .queue_url(url)
            .receipt_handle(message.receipt_handle().unwrap_or_default())
            .send()
            .await
            .context("deleting a redriven batch's message")?;
        outcome.batches += 1;
    }
    Ok(())
}

/// Applies each decoded record of `fetched` through those of `handlers` on the stream it
/// came from; returns how many records at least one handler applied.
async fn apply_fetched(
    handlers: &[projectors::runtime::Handler],
    fetched: &infra::feed::failures::Fetched,
) -> anyhow::Result<usize> {
    let mut records = 0;
    for (_, record) in &fetched.records {
        let Ok(record) = record else { continue };
        let mine = handlers
            .iter()
            .filter(|h| h.projector().source() == record.table);
        let mut applied = false;
        for handler in mine {
            handler.handle(record).await?;
            applied = true;
        }
        records += usize::from(applied);
    }
    Ok(records)
}
