//! The command line. Every option also reads an environment variable, so the same
//! binary is configured by flags on a laptop and by environment in a deployment. How a
//! command ends is part of it too: [`exit`] defines the exit statuses.
//!
//! Layout: this module holds the top level ([`Cli`], [`Command`]); `subcommands` the
//! nested command groups (admin, insights, deploy, docs); `args` the option groups
//! commands share (the store, AWS, the API's limits, the server's connections); `parsers`
//! the checks of option values clap cannot express.

mod args;
pub mod exit;
mod parsers;
mod subcommands;

pub use self::args::{
    ApiArgs, AwsArgs, Backend, BootstrapArgs, DlqKind, ServeArgs, StoreArgs, WorkArgs,
    api_args_from_env,
};
pub use self::subcommands::{AdminCommand, Deploy, Doc, InsightsJob};

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "vitals",
    version,
    about = "Vitals: health data API and tools",
    after_help = exit::Exit::help()
)]
pub struct Cli {
    /// How log lines are written to standard error: `text` for a terminal, `json` (one
    /// object per line, with the request and event ids of its spans) for a collector.
    /// A function inside Lambda logs json.
    #[arg(long, global = true, value_enum, env = "VITALS_LOG_FORMAT", default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API. On the embedded store, the first start creates the store in
    /// `--data-dir`; every other command opens an existing one.
    Serve(ServeArgs),
    /// Show what the embedded store in `--data-dir` is: its path, format version, when it
    /// was created and its size (a missing store is refused).
    Info {
        /// Data directory of the embedded store.
        #[arg(long, env = "VITALS_DATA_DIR", default_value = "./vitals-data")]
        data_dir: PathBuf,
    },
    /// Back up the embedded store in `--data-dir` to a file, while it serves: one
    /// consistent snapshot of every table (the change log and `meta` too), written beside
    /// the file and renamed into place; prints what it copied and the change-log
    /// sequence it is consistent at. Through a running `vitals serve` when one has the
    /// store.
    Backup {
        /// Data directory of the embedded store.
        #[arg(long, env = "VITALS_DATA_DIR", default_value = "./vitals-data")]
        data_dir: PathBuf,
        /// The backup file to write (replaced if there).
        #[arg(long)]
        to: PathBuf,
    },
    /// Install a backup as the embedded store of `--data-dir` (made if missing), once
    /// checked: it opens, its format version is one this release reads, its tables read
    /// through. A store in use is never replaced, one holding data only with `--force`
    /// (it is then kept beside the new one as `vitals.fjall.before-restore`).
    Restore {
        /// The backup file (written by `vitals backup`).
        #[arg(long)]
        from: PathBuf,
        /// Data directory to restore into (no default: name it).
        #[arg(long, env = "VITALS_DATA_DIR")]
        data_dir: PathBuf,
        /// Replace a store that holds data (kept as `vitals.fjall.before-restore`).
        #[arg(long)]
        force: bool,
    },
    /// Create the DynamoDB tables (with indexes, streams and TTL) from their definitions.
    Bootstrap(BootstrapArgs),
    /// Run every projector worker on the Kinesis streams (the aws-local shape).
    Work(WorkArgs),
    /// Run one subscription as a Lambda function on Kinesis events.
    Lambda {
        /// The subscription, such as `dashboard-from-nutrition`.
        #[arg(long, env = "VITALS_SUBSCRIPTION")]
        subscription: String,
        #[command(flatten)]
        aws: AwsArgs,
    },
    /// Serve the HTTP API as a Lambda function behind API Gateway (the same router as
    /// `serve`; the projectors run as their own Lambdas).
    ApiLambda {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// The AWS deployment.
    Deploy {
        #[command(subcommand)]
        what: Deploy,
    },
    /// Print generated documentation.
    Docs {
        #[command(subcommand)]
        doc: Doc,
    },
    /// Apply a subscription's dead letters again (on an embedded store a running `vitals
    /// serve` has open, the server does it).
    Redrive {
        /// The subscription, such as `dashboard-from-nutrition`.
        subscription: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Where the letters are: the subscriber's table, or its SQS queue.
        #[arg(long, value_enum, default_value_t = DlqKind::Table)]
        dlq: DlqKind,
    },
    /// Apply again the batches a projector function's on-failure queue describes (the
    /// deployed shape): each is fetched back from its Kinesis shard while the stream
    /// retains it; an expired one is reported and left in the queue.
    RedriveFailures {
        /// The table the projector writes, such as `dashboard`.
        target: String,
        #[command(flatten)]
        aws: AwsArgs,
    },
    /// What a user costs on AWS: a realistic user-day through the real handlers and
    /// projectors, priced as DynamoDB, Kinesis, Lambda and API Gateway bill it, and the
    /// stack's fixed monthly floor (committed as `docs/cost.md`).
    Cost {
        /// A JSON object overriding some of the prices (the output lists them all).
        #[arg(long)]
        prices: Option<PathBuf>,
    },
    /// Copy an embedded store into DynamoDB tables (created if missing, empty at the
    /// start): batch writes, resumable, verified per table by count and checksum.
    Migrate {
        /// Data directory of the embedded store (not open in a running `vitals serve`).
        #[arg(long, env = "VITALS_DATA_DIR", default_value = "./vitals-data")]
        data_dir: std::path::PathBuf,
        #[command(flatten)]
        aws: AwsArgs,
    },
    /// Rebuild read models from the outbox events of their source tables, through the
    /// same projector code as live (safe while workers run; resumable).
    Replay {
        /// A projection's subscription name, or `all` (an unknown name lists them).
        projection: String,
        /// Only this user's events.
        #[arg(long)]
        user: Option<String>,
        /// Fold each batch of events in memory and write only the final rows, in large
        /// batches: many times faster, but only with the projection workers stopped
        /// (it overwrites what they write meanwhile).
        #[arg(long)]
        rebuild: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Operator tools.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Insights jobs.
    Insights {
        #[command(subcommand)]
        job: InsightsJob,
    },
}
