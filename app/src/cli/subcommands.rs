//! The nested command groups: `vitals admin`, `vitals insights`, `vitals deploy` and
//! `vitals docs`, each a subcommand of its own.

use super::args::{DlqKind, StoreArgs};
use clap::Subcommand;

#[derive(Debug, Clone, Subcommand)]
pub enum AdminCommand {
    /// Scan every table and index for what is left of a user; exit status 0 only when
    /// nothing is.
    Residue {
        user: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Where dead letters are kept: rows of the subscribers' tables (scanned with
        /// them), or SQS queues (each is searched too).
        #[arg(long, value_enum, default_value_t = DlqKind::Table)]
        dlq: DlqKind,
    },
    /// Add a recipe to the curated catalog (recorded as a `RecipeCurated` event);
    /// prints its id.
    CurateRecipe {
        /// 1 to 120 characters.
        #[arg(long)]
        name: String,
        /// A lowercase slug: 1 to 40 of a-z, 0-9 and `-`.
        #[arg(long)]
        category: String,
        /// kcal per serving.
        #[arg(long)]
        calories: rust_decimal::Decimal,
        #[arg(long)]
        protein_g: rust_decimal::Decimal,
        #[arg(long)]
        carbs_g: rust_decimal::Decimal,
        #[arg(long)]
        fat_g: rust_decimal::Decimal,
        #[command(flatten)]
        store: StoreArgs,
        /// Create the embedded store in `--data-dir` if none is there (to curate before
        /// the first `vitals serve`); without it, a missing store is refused.
        #[arg(long)]
        create: bool,
    },
    /// Add a meal plan (recipes in order) to the curated catalog (recorded as a
    /// `MealPlanCurated` event); prints its id.
    CurateMealPlan {
        #[arg(long)]
        name: String,
        #[arg(long)]
        category: String,
        /// A recipe's id; repeat it for each recipe, in order (1 to 50).
        #[arg(long = "recipe", required = true)]
        recipes: Vec<String>,
        #[command(flatten)]
        store: StoreArgs,
        /// Create the embedded store in `--data-dir` if none is there; without it, a
        /// missing store is refused.
        #[arg(long)]
        create: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum InsightsJob {
    /// Score readiness for every user active on a day (found through the active-day
    /// index, never a scan).
    Nightly {
        /// The day, `YYYY-MM-DD`, scored from its first user; without it, the days
        /// ended in every timezone that are not finished yet (the last two), each from
        /// where earlier runs stopped (what a scheduled run, such as an EventBridge
        /// rule, wants).
        #[arg(long)]
        date: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum Deploy {
    /// Prints the CloudFormation template of the whole stack (committed as
    /// `deploy/template.json`).
    Template,
    /// Prints the access matrix: what each function's role may do on every table,
    /// stream, queue, secret and log group (committed as `docs/access-matrix.md`).
    Matrix,
    /// Prints the Grafana dashboard of the self-hosted shape's `/metrics` (committed as
    /// `deploy/grafana/vitals.json`).
    Grafana,
    /// Prints the nine tables alone (no stream attached), to adopt tables restored from
    /// point-in-time recovery into a new stack (README, "Restoring from point-in-time
    /// recovery").
    Tables,
}

#[derive(Debug, Subcommand)]
pub enum Doc {
    /// The access-pattern map, generated from the declared access patterns, item kinds,
    /// indexes and subscriptions.
    AccessPatterns,
    /// Reports the declared access patterns that no recorded test run exercised.
    UnexercisedPatterns {
        /// The recording store's logs (`target/test-logs/access-patterns`).
        logs: std::path::PathBuf,
    },
    /// The events index: each event's context, versions and subscriptions.
    Events,
    /// Writes the JSON Schema of every event version into a directory.
    EventSchemas {
        /// Where to write them (the committed ones are in `events-schema/schemas`).
        #[arg(long)]
        out: std::path::PathBuf,
    },
}
