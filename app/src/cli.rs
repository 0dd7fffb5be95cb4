//! The command line. Every option also reads an environment variable, so the same
//! binary is configured by flags on a laptop and by environment in a deployment. How a
//! command ends is part of it too: [`exit`] defines the exit statuses.

pub mod exit;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
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

#[derive(Debug, Args)]
pub struct BootstrapArgs {
    #[command(flatten)]
    pub aws: AwsArgs,
    /// Also create a Kinesis stream per publishing table and stream the table into it.
    #[arg(long)]
    pub kinesis: bool,
    /// With `--kinesis`: create the streams only; a bridge (`vitals work --bridge`) will
    /// forward table changes, for emulators that cannot (moto).
    #[arg(long)]
    pub bridge: bool,
    /// Also create an SQS dead-letter queue per subscription.
    #[arg(long)]
    pub dlq_queues: bool,
}

#[derive(Debug, Args)]
pub struct WorkArgs {
    #[command(flatten)]
    pub aws: AwsArgs,
    /// Where dead letters go: SQS queues, or rows of each subscriber's table.
    #[arg(long, value_enum, default_value_t = DlqKind::Sqs)]
    pub dlq: DlqKind,
    /// Also forward table streams to Kinesis in-process (for emulators without
    /// forwarding, such as moto).
    #[arg(long)]
    pub bridge: bool,
    /// Where `GET /metrics` (Prometheus text, the families of `vitals serve`) is served
    /// (port 0 picks a free port; the address is printed on standard output).
    #[arg(long, env = "VITALS_METRICS_LISTEN", default_value = "127.0.0.1:9464")]
    pub metrics_listen: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DlqKind {
    Sqs,
    Table,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The embedded store in `--data-dir` (no AWS, no server).
    Embedded,
    /// DynamoDB, on AWS or at `--endpoint-url`.
    Dynamodb,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on: `IP:PORT`, `[IPv6]:PORT` or `HOST:PORT` (a host name is
    /// resolved at start, and the first of its addresses that can be bound is used); port
    /// 0 picks a free port.
    #[arg(long, env = "VITALS_LISTEN", default_value = "127.0.0.1:8080",
          value_parser = listen_address)]
    pub listen: String,
    /// Longest a client may take to send a request's headers, from the connection's
    /// acceptance (or the first byte of a request on a kept-alive connection); then the
    /// connection is closed. `10s`, `500ms`, `2m`.
    #[arg(long, env = "VITALS_HEADER_TIMEOUT", default_value = "10s",
          value_parser = timeout)]
    pub header_timeout: std::time::Duration,
    /// Longest a client may take to send a request's body, from the end of its headers;
    /// then it is answered `408` and the connection closed.
    #[arg(long, env = "VITALS_BODY_TIMEOUT", default_value = "30s",
          value_parser = timeout)]
    pub body_timeout: std::time::Duration,
    /// Longest a kept-alive connection may wait for its next request.
    #[arg(long, env = "VITALS_IDLE_TIMEOUT", default_value = "75s",
          value_parser = timeout)]
    pub idle_timeout: std::time::Duration,
    /// Connections served at once; more wait to be accepted until one closes (the open
    /// files limit, `ulimit -n`, must allow them).
    #[arg(long, env = "VITALS_MAX_CONNECTIONS", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub api: ApiArgs,
}

/// How the HTTP API authenticates and limits callers (`serve` and `api-lambda`).
#[derive(Debug, Clone, Args)]
pub struct ApiArgs {
    /// Secret signing the bearer tokens this server issues, and deriving the key of the
    /// connects' PKCE verifiers: at least 32 bytes (an empty or shorter one stops the
    /// start). When absent, a random 32-byte key (tokens and connects in flight end with
    /// the process).
    #[arg(long, env = "VITALS_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// The signing secret before the current one, during a rotation: the tokens it
    /// signed are still accepted (until they expire), new ones are signed with
    /// `--jwt-secret`. At least 32 bytes.
    #[arg(
        long,
        env = "VITALS_JWT_PREVIOUS_SECRET",
        hide_env_values = true,
        requires = "jwt_secret"
    )]
    pub jwt_previous_secret: Option<String>,
    /// Accept tokens of an external identity provider instead: a JWKS document (JSON
    /// file) with its RS256 public keys. Requires `--jwt-issuer` and `--jwt-audience`.
    #[arg(long, env = "VITALS_JWKS_FILE", requires_all = ["jwt_issuer", "jwt_audience"])]
    pub jwks_file: Option<PathBuf>,
    /// The `iss` claim external tokens must carry.
    #[arg(long, env = "VITALS_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// The `aud` claim external tokens must carry.
    #[arg(long, env = "VITALS_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// Secret the sandbox provider signs its webhooks with: at least 32 bytes (an empty
    /// or shorter one stops the start). No default: required with `--backend dynamodb`
    /// and by `api-lambda`; when absent on the embedded store (a local sandbox), webhooks
    /// are refused (checked against a random secret of the process), as a warning says
    /// at start.
    #[arg(long, env = "VITALS_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,
    /// Where the OAuth callback redirects (an absolute URL without a fragment), with
    /// `provider`, `state` and `code` added to the query: the app, which completes the
    /// connect signed in.
    #[arg(long, env = "VITALS_CONNECT_RETURN_URL", value_parser = return_url,
          default_value = crate::http::api::DEFAULT_CONNECT_RETURN)]
    pub connect_return_url: String,
    /// Requests per second allowed per user.
    #[arg(long, env = "VITALS_RATE_LIMIT", default_value_t = 50,
          value_parser = rate_limit)]
    pub rate_limit: u32,
    /// Register, login and OAuth callback requests per minute allowed per client
    /// address.
    #[arg(long, env = "VITALS_AUTH_RATE_LIMIT", default_value_t = 30,
          value_parser = rate_limit)]
    pub auth_rate_limit: u32,
    /// Login and register attempts per minute allowed per account (email).
    #[arg(long, env = "VITALS_LOGIN_RATE_LIMIT", default_value_t = 10,
          value_parser = rate_limit)]
    pub login_rate_limit: u32,
    /// Webhook deliveries per second allowed per client address.
    #[arg(long, env = "VITALS_WEBHOOK_RATE_LIMIT", default_value_t = 100,
          value_parser = rate_limit)]
    pub webhook_rate_limit: u32,
    /// `/healthz`, `/metrics` and `/openapi.json` requests per second allowed per client
    /// address.
    #[arg(long, env = "VITALS_OPERATIONS_RATE_LIMIT", default_value_t = 50,
          value_parser = rate_limit)]
    pub operations_rate_limit: u32,
}

/// A timeout as the command line gives it: `10s`, `500ms`, `2m` (humantime's forms), or
/// whole seconds (`10`, as an environment variable often says it); more than zero.
fn timeout(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let duration = match text.parse::<u64>() {
        Ok(seconds) => std::time::Duration::from_secs(seconds),
        Err(_) => humantime::parse_duration(text)
            .map_err(|e| format!("{text:?} is not a duration such as 10s, 500ms or 2m: {e}"))?,
    };
    if duration.is_zero() {
        return Err("a timeout is longer than zero".to_owned());
    }
    // A bound keeps a deadline (an Instant plus the timeout) from overflowing.
    if duration > std::time::Duration::from_secs(24 * 3600) {
        return Err(format!("{text:?}: a timeout is at most a day"));
    }
    Ok(duration)
}

/// A rate limit: at least 1 (0 is refused: there is no setting for "no limit", and
/// none for "nothing allowed").
fn rate_limit(text: &str) -> Result<u32, String> {
    let limit: u32 = text
        .trim()
        .parse()
        .map_err(|e| format!("{text:?} is not a whole number: {e}"))?;
    if limit == 0 {
        return Err(
            "a rate limit is at least 1 (0 is refused: it would read as no limit, or \
                    as nothing allowed)"
                .to_owned(),
        );
    }
    Ok(limit)
}

/// An address to listen on, as written: `IP:PORT`, `[IPv6]:PORT` or `HOST:PORT` with a
/// host name (resolved at start: see `vitals serve`).
fn listen_address(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.parse::<SocketAddr>().is_ok() {
        return Ok(text.to_owned());
    }
    let refused = || {
        format!(
            "{text:?} is not an address to listen on: HOST:PORT, such as 127.0.0.1:8080, \
             [::]:8080 or localhost:8080"
        )
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(refused)?;
    port.parse::<u16>().map_err(|_| refused())?;
    let host_name = !host.is_empty()
        && host.len() <= 253
        && host
            .split('.')
            .all(|label| !label.is_empty() && label.len() <= 63)
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if !host_name {
        return Err(refused());
    }
    Ok(text.to_owned())
}

/// An absolute URL (a scheme, then `:`) that fits in a `Location` header, without a
/// fragment: the callback appends its query, which after a `#` the app would not read.
fn return_url(value: &str) -> Result<String, String> {
    let uri: axum::http::Uri = value.parse().map_err(|e| format!("not a URL: {e}"))?;
    if uri.scheme().is_none() {
        return Err("an absolute URL, with a scheme, is needed".into());
    }
    if value.contains('#') {
        return Err("a URL without a fragment (`#...`) is needed".into());
    }
    Ok(value.to_owned())
}

impl ApiArgs {
    pub fn limits(&self) -> crate::http::limits::LimitSettings {
        crate::http::limits::LimitSettings {
            user_per_second: self.rate_limit,
            auth_per_minute: self.auth_rate_limit,
            account_per_minute: self.login_rate_limit,
            webhook_per_second: self.webhook_rate_limit,
            operations_per_second: self.operations_rate_limit,
        }
    }
}

/// Which store a command works on.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Storage backend.
    #[arg(long, env = "VITALS_BACKEND", value_enum, default_value_t = Backend::Embedded)]
    pub backend: Backend,
    /// Data directory of the embedded store.
    #[arg(long, env = "VITALS_DATA_DIR", default_value = "./vitals-data")]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, Clone, Args)]
pub struct AwsArgs {
    /// DynamoDB endpoint URL (a local emulator); AWS itself when absent.
    #[arg(long, env = "VITALS_ENDPOINT_URL")]
    pub endpoint_url: Option<String>,
    /// AWS region (default: from the environment, then us-east-1).
    #[arg(long, env = "VITALS_REGION")]
    pub region: Option<String>,
    /// Prefix of the physical table names.
    #[arg(long, env = "VITALS_TABLE_PREFIX", default_value = events_schema::tables::DEFAULT_TABLE_PREFIX)]
    pub table_prefix: String,
}

/// The API's arguments from the environment and their defaults alone, as a function
/// started with no arguments has them.
pub fn api_args_from_env() -> anyhow::Result<ApiArgs> {
    #[derive(Debug, Parser)]
    struct ApiOnly {
        #[command(flatten)]
        api: ApiArgs,
    }
    Ok(ApiOnly::try_parse_from(["bootstrap"])?.api)
}

#[cfg(test)]
mod tests {
    #[test]
    fn timeouts_are_read_with_their_unit() {
        use std::time::Duration;
        assert_eq!(super::timeout("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(super::timeout("10"), Ok(Duration::from_secs(10)));
        assert_eq!(super::timeout("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(super::timeout("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(super::timeout("1.5s"), Ok(Duration::from_millis(1500)));
        for refused in [
            "0s",
            "0",
            "",
            "s",
            "-1s",
            "10 parsecs",
            "18446744073709551615",
            "25h",
            "99999999999999999999999s",
        ] {
            assert!(super::timeout(refused).is_err(), "{refused:?}");
        }
    }

    use super::return_url;

    #[test]
    fn a_listen_address_is_an_ip_or_a_host_name_and_a_port() {
        for good in [
            "127.0.0.1:8080",
            "[::]:0",
            "localhost:8080",
            "api.internal.example:443",
        ] {
            assert_eq!(super::listen_address(good).as_deref(), Ok(good));
        }
        for bad in [
            "localhost",
            "localhost:http",
            "localhost:65536",
            ":8080",
            "not an address:80",
            "a..b:80",
            "::1:80",
        ] {
            assert!(super::listen_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_rate_limit_is_at_least_1() {
        assert_eq!(super::rate_limit("1"), Ok(1));
        assert_eq!(super::rate_limit("50"), Ok(50));
        for bad in ["0", "-1", "", "ten"] {
            assert!(super::rate_limit(bad).is_err(), "{bad}");
        }
        assert!(
            super::rate_limit("0")
                .err()
                .unwrap_or_default()
                .contains("at least 1")
        );
    }

    #[test]
    fn a_return_url_is_absolute_and_has_no_fragment() {
        for good in [
            "vitals://integrations/callback",
            "https://app.example/connect?from=settings",
        ] {
            assert_eq!(return_url(good).as_deref(), Ok(good));
        }
        for bad in ["/relative", "https://app.example/x#y", "vitals://cb#"] {
            assert!(return_url(bad).is_err(), "{bad}");
        }
    }
}
