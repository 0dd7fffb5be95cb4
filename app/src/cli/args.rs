//! The option groups of the commands: what `bootstrap`, `work` and `serve` take, how the
//! HTTP API authenticates and limits callers ([`ApiArgs`]), which store a command works
//! on ([`StoreArgs`]) and where AWS is ([`AwsArgs`]). Each option also reads an
//! environment variable.

use super::parsers::{listen_address, rate_limit, return_url, timeout};
use clap::{Args, Parser, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

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
