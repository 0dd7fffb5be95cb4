//! The `bootstrap` of every deployed function: the `vitals` binary, started by the
//! Lambda runtime with no arguments. `VITALS_ROLE` chooses what it runs:
//! - `api`: the HTTP router behind API Gateway (`vitals api-lambda`'s), its token
//!   signing key and webhook secret read from Secrets Manager at start;
//! - `stream`: the projector writing `VITALS_TARGET`'s table, applying each record of a
//!   stream it reads to its subscriptions on that stream, dead letters in its table;
//! - `nightly`: the readiness job, on an EventBridge schedule.
//!
//! Inside Lambda nothing falls back to a default: an embedded backend, a missing or
//! unknown role, source or secret, or a secret shorter than 32 bytes
//! ([`crate::setup::MIN_SECRET_BYTES`], as `serve` refuses), stops the start with a
//! message naming the variable and never the secret's value (Lambda reports it as an
//! init error), never a random key or a sandbox secret. Started outside Lambda, or with
//! half the runtime's environment, it stops likewise ([`runtime`]), where the
//! runtime would panic.

pub mod runtime;

use crate::cli::AwsArgs;
use crate::cli::exit::{Exit, ExitOn as _};
use crate::storage;
use anyhow::{Context as _, bail};
use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use aws_lambda_events::event::kinesis::KinesisEvent;
use aws_lambda_events::event::streams::KinesisEventResponse;
use events_schema::Context;
use infra::Store;
use infra::feed::kinesis::stream_name;
use lambda_runtime::{LambdaEvent, service_fn};
use std::sync::Arc;

/// What a function runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// One function of the HTTP API (`VITALS_API_FUNCTION`, one of
    /// `deploy::api_functions`, answering only its routes; every route when unset); the
    /// secrets' ARNs (Secrets Manager): the webhook secret's only for the function that
    /// takes the providers' webhooks.
    Api {
        function: Option<String>,
        jwt_secret_arn: String,
        webhook_secret_arn: Option<String>,
    },
    /// The projector writing one context's table, on every stream it reads.
    Stream { target: Context },
    /// The nightly readiness job.
    Nightly,
}

/// A function's configuration, from its environment.
#[derive(Debug, Clone)]
pub struct Boot {
    pub role: Role,
    pub aws: AwsArgs,
}

/// Whether this process was started by the Lambda runtime.
pub fn in_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some()
}

/// JSON lines (CloudWatch Logs Insights reads their fields), unless `VITALS_LOG_FORMAT`
/// says `text`.
pub fn log_format() -> crate::cli::LogFormat {
    match std::env::var("VITALS_LOG_FORMAT").as_deref() {
        Ok("text") => crate::cli::LogFormat::Text,
        _ => crate::cli::LogFormat::Json,
    }
}

/// Reads the configuration from `env` (the process environment, or a test's map).
pub fn configure(env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Boot> {
    let required = |name: &str| -> anyhow::Result<String> {
        env(name)
            .filter(|v| !v.trim().is_empty())
            .with_context(|| format!("{name} is not set: a deployed function needs it"))
    };
    let backend = required("VITALS_BACKEND")?;
    if backend != "dynamodb" {
        bail!(
            "VITALS_BACKEND is {backend:?}: a deployed function runs on dynamodb (an embedded \
             store would live and die with one instance)"
        );
    }
    let role = match required("VITALS_ROLE")?.as_str() {
        "api" => {
            let function = env("VITALS_API_FUNCTION").filter(|v| !v.trim().is_empty());
            let webhooks = crate::deploy::api_functions::serves_webhooks(function.as_deref());
            Role::Api {
                jwt_secret_arn: required("VITALS_JWT_SECRET_ARN")?,
                webhook_secret_arn: if webhooks {
                    Some(required("VITALS_WEBHOOK_SECRET_ARN")?)
                } else {
                    None
                },
                function,
            }
        }
        "stream" => {
            let target = required("VITALS_TARGET")?;
            let target = Context::ALL
                .into_iter()
                .find(|c| c.to_string() == target)
                .with_context(|| format!("VITALS_TARGET {target:?} is not a context"))?;
            Role::Stream { target }
        }
        "nightly" => Role::Nightly,
        other => bail!("VITALS_ROLE {other:?} is not one of api, stream, nightly"),
    };
    let aws = AwsArgs {
        endpoint_url: env("VITALS_ENDPOINT_URL").filter(|v| !v.is_empty()),
        region: env("VITALS_REGION").filter(|v| !v.is_empty()),
        table_prefix: required("VITALS_TABLE_PREFIX")?,
    };
    Ok(Boot { role, aws })
}

/// Logs the init phase's length (configuration, clients, secrets) since `started`: the
/// part of a cold start that is this code's, logged once before the first event is asked
/// for.
fn log_ready(started: std::time::Instant) {
    let init_ms = started.elapsed().as_secs_f64() * 1000.0;
    tracing::info!(init_ms = format!("{init_ms:.1}"), "vitals function ready");
}

/// The runtime's failure, as this binary reports it.
fn runtime_error(e: lambda_runtime::Error) -> anyhow::Error {
    anyhow::anyhow!("lambda runtime: {e}")
}

/// Runs the function the environment describes, until the runtime stops it.
pub async fn run() -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let env = |name: &str| std::env::var(name).ok();
    let boot = configure(&env).or_exit(Exit::Config)?;
    runtime::runtime_environment(&env)?;
    tracing::info!(role = ?boot.role, prefix = %boot.aws.table_prefix, "vitals function starting");
    let config = storage::aws_config(&boot.aws).await;
    let store = storage::logged(Arc::new(storage::dynamodb_on(&config, &boot.aws)));
    match boot.role {
        Role::Api {
            function,
            jwt_secret_arn,
            webhook_secret_arn,
        } => {
            let secrets = ApiSecrets {
                client: infra::aws_client::secrets_manager(&config),
                jwt_secret_arn,
                webhook_secret_arn,
            };
            run_api(store, function.as_deref(), secrets, started).await
        }
        Role::Stream { target } => run_stream(store, target, boot.aws.table_prefix, started).await,
        Role::Nightly => {
            log_ready(started);
            run_nightly(store).await
        }
    }
}

/// Where an API function's secrets are: the Secrets Manager client and their ARNs.
struct ApiSecrets {
    client: aws_sdk_secretsmanager::Client,
    jwt_secret_arn: String,
    webhook_secret_arn: Option<String>,
}

/// The HTTP API (the routes of `function`, every route when `None`), its secrets read
/// from Secrets Manager, until the runtime stops it.
async fn run_api(
    store: Arc<dyn Store>,
    function: Option<&str>,
    secrets: ApiSecrets,
    started: std::time::Instant,
) -> anyhow::Result<()> {
    let mut args = crate::cli::api_args_from_env().or_exit(Exit::Config)?;
    let signing = Arc::new(SigningSecret {
        client: secrets.client.clone(),
        arn: secrets.jwt_secret_arn.clone(),
    });
    let mut keys = signing.read().await?.into_iter();
    args.jwt_secret = keys.next();
    args.jwt_previous_secret = keys.next();
    args.webhook_secret = Some(match &secrets.webhook_secret_arn {
        Some(arn) => secret(&secrets.client, arn, "VITALS_WEBHOOK_SECRET_ARN").await?,
        // A function that takes no webhook never reads the secret (its role may
        // not): a random one of its own refuses any webhook that reached it.
        None => hex::encode(crate::setup::random_secret()),
    });
    let storage = storage::Storage {
        store: store.clone(),
        embedded: None,
    };
    let api = crate::setup::api_refreshing(store, &args, signing).or_exit(Exit::Config)?;
    let router = match function {
        Some(function) => {
            crate::lambda_api::router_of(&storage, api, function).or_exit(Exit::Config)?
        }
        None => crate::lambda_api::router(&storage, api),
    };
    log_ready(started);
    lambda_http::run(router).await.map_err(runtime_error)
}

/// The projector writing `target`'s table, on every stream it reads, until the runtime
/// stops it.
async fn run_stream(
    store: Arc<dyn Store>,
    target: Context,
    prefix: String,
    started: std::time::Instant,
) -> anyhow::Result<()> {
    let folding = projectors::fold::Folding::new(store.clone(), events_schema::time::Clock::System);
    let handlers = Arc::new(by_source(projectors::registry::projector_handlers(
        store, target,
    )));
    log_ready(started);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<KinesisEvent>| {
        let (handlers, prefix) = (handlers.clone(), prefix.clone());
        let folding = folding.clone();
        async move { apply_batch(&handlers, &prefix, folding, target, event).await }
    }))
    .await
    .map_err(runtime_error)
}

/// Applies one batch of a stream to the subscriptions of `handlers` on it, printing
/// their metrics; a batch of a stream the projector writing `target` does not read is
/// an error.
async fn apply_batch(
    handlers: &BySource,
    prefix: &str,
    folding: projectors::fold::Folding,
    target: Context,
    event: LambdaEvent<KinesisEvent>,
) -> Result<KinesisEventResponse, lambda_runtime::Error> {
    // A batch comes from one mapping: one stream, one source.
    let Some(first) = event.payload.records.first() else {
        return Ok(Default::default());
    };
    let arn = first.event_source_arn.clone().unwrap_or_default();
    let Some((source, mine)) = handlers
        .iter()
        .find(|(source, _)| arn.ends_with(&format!("/{}", stream_name(prefix, **source))))
    else {
        return Err(lambda_runtime::Error::from(format!(
            "a batch of {arn:?}, a stream the {target} projector does not read"
        )));
    };
    let delivery = projectors::lambda::Delivery {
        deadline: Some(invocation_deadline(&event)),
        margin: DEADLINE_MARGIN,
        fold: Some(folding),
        ..Default::default()
    };
    let (response, metrics) =
        projectors::lambda::fan_out_measured(mine, *source, &event.payload, prefix, &delivery)
            .await;
    // Embedded Metric Format: one JSON document a line on standard
    // output, which CloudWatch Logs turns into metrics.
    for document in metrics {
        println!("{document}");
    }
    Ok(response)
}

/// A projector's handlers, grouped by the stream each applies records of.
type BySource = std::collections::BTreeMap<Context, Vec<projectors::runtime::Handler>>;

/// `handlers` grouped by the stream each applies records of.
fn by_source(handlers: Vec<projectors::runtime::Handler>) -> BySource {
    let mut grouped = std::collections::BTreeMap::<Context, Vec<_>>::new();
    for handler in handlers {
        grouped
            .entry(handler.projector().source())
            .or_default()
            .push(handler);
    }
    grouped
}

/// The nightly readiness job, one run per scheduled EventBridge event (hourly): it
/// goes on from where the last run stopped and stops [`NIGHTLY_MARGIN`] before the
/// invocation's deadline, leaving the rest to the next.
async fn run_nightly(store: Arc<dyn Store>) -> anyhow::Result<()> {
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<EventBridgeEvent<serde_json::Value>>| {
            let store = store.clone();
            async move {
                let budget = projectors::nightly::Budget::until(nightly_deadline(&event));
                let runs = crate::admin::nightly_readiness(store, None, budget)
                    .await
                    .map_err(|e| lambda_runtime::Error::from(e.to_string()))?;
                let mut report = Vec::new();
                for run in runs {
                    let (day, scored, finished) = (run.day, run.scored, run.finished);
                    tracing::info!(%day, scored, finished, "readiness scored");
                    report.push(
                        serde_json::json!({"day": day, "scored": scored, "finished": finished}),
                    );
                }
                Ok::<_, lambda_runtime::Error>(serde_json::json!({"runs": report}))
            }
        },
    ))
    .await
    .map_err(|e| anyhow::anyhow!("lambda runtime: {e}"))
}

/// How long before its invocation's deadline the nightly job stops taking pages: a page
/// (100 users, a few requests each) takes seconds; this leaves room for the slowest.
const NIGHTLY_MARGIN: std::time::Duration = std::time::Duration::from_secs(60);

/// When the nightly job stops taking pages in this invocation.
fn nightly_deadline<T>(event: &LambdaEvent<T>) -> std::time::Instant {
    invocation_deadline(event)
        .checked_sub(NIGHTLY_MARGIN)
        .unwrap_or_else(std::time::Instant::now)
}

/// When the runtime cuts this invocation off, on the monotonic clock.
fn invocation_deadline<T>(event: &LambdaEvent<T>) -> std::time::Instant {
    let left = event
        .context
        .deadline()
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    std::time::Instant::now() + left
}

/// How long before its invocation's deadline a projector begins no more records: the
/// slowest record (a few requests, each retried with backoff) fits in it, and the rest
/// are reported for Lambda to deliver again rather than lost with a timed-out batch.
const DEADLINE_MARGIN: std::time::Duration = std::time::Duration::from_secs(10);

/// A secret's value; a missing, empty or short one is an error naming `variable`.
async fn secret(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
    variable: &str,
) -> anyhow::Result<String> {
    let value = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .with_context(|| format!("reading the secret {variable} names"))?;
    usable(value.secret_string(), variable)
}

/// The token signing secret in Secrets Manager: its current value signs, and the one
/// before it (the `AWSPREVIOUS` stage, which a `put-secret-value` leaves behind) still
/// verifies, so rotating it signs no one out; read again when a token names a key the
/// function does not hold (a rotation while it was warm).
struct SigningSecret {
    client: aws_sdk_secretsmanager::Client,
    arn: String,
}

impl SigningSecret {
    const VARIABLE: &str = "VITALS_JWT_SECRET_ARN";

    /// The current value, then the previous one if there is one.
    async fn read(&self) -> anyhow::Result<Vec<String>> {
        let mut values = vec![secret(&self.client, &self.arn, Self::VARIABLE).await?];
        let previous = self
            .client
            .get_secret_value()
            .secret_id(&self.arn)
            .version_stage("AWSPREVIOUS")
            .send()
            .await;
        match previous {
            Ok(value) => values.push(usable(value.secret_string(), Self::VARIABLE)?),
            // A secret never rotated has no previous value.
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_not_found_exception()) => {}
            Err(error) => {
                return Err(
                    anyhow::Error::new(error).context("reading the previous token signing secret")
                );
            }
        }
        Ok(values)
    }
}

#[async_trait::async_trait]
impl crate::http::auth::KeySource for SigningSecret {
    async fn keys(&self) -> anyhow::Result<Vec<Vec<u8>>> {
        Ok(self
            .read()
            .await?
            .into_iter()
            .map(String::into_bytes)
            .collect())
    }
}

/// A fetched secret's string, refused when it has none or one shorter than
/// [`crate::setup::MIN_SECRET_BYTES`] (an empty one included): the error names
/// `variable`, never the value.
fn usable(value: Option<&str>, variable: &str) -> anyhow::Result<String> {
    let what = format!("the secret {variable} names");
    let value = value
        .with_context(|| format!("{what} has no string value"))
        .or_exit(Exit::Config)?;
    crate::setup::check_secret(value, &what).or_exit(Exit::Config)?;
    Ok(value.to_owned())
}

/// An environment of `pairs` for the configuration readers' tests.
#[cfg(test)]
fn test_env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: std::collections::HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

#[cfg(test)]
mod tests {
    use super::test_env as env;
    use super::*;

    const BASE: [(&str, &str); 2] = [
        ("VITALS_BACKEND", "dynamodb"),
        ("VITALS_TABLE_PREFIX", "vitals-"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        BASE.iter().chain(extra).copied().collect()
    }

    fn error(pairs: &[(&str, &str)]) -> String {
        configure(&env(pairs))
            .map(|b| format!("{b:?}"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn each_role_reads_what_it_needs() {
        let api = configure(&env(&with(&[
            ("VITALS_ROLE", "api"),
            ("VITALS_JWT_SECRET_ARN", "arn:jwt"),
            ("VITALS_WEBHOOK_SECRET_ARN", "arn:webhook"),
        ])))
        .expect("api");
        assert_eq!(
            api.role,
            Role::Api {
                function: None,
                jwt_secret_arn: "arn:jwt".into(),
                webhook_secret_arn: Some("arn:webhook".into())
            }
        );
        // Only the function that takes the webhooks needs (and may read) their secret.
        let query = configure(&env(&with(&[
            ("VITALS_ROLE", "api"),
            ("VITALS_API_FUNCTION", "QueryApi"),
            ("VITALS_JWT_SECRET_ARN", "arn:jwt"),
        ])))
        .expect("the query function");
        assert!(matches!(
            query.role,
            Role::Api {
                webhook_secret_arn: None,
                ..
            }
        ));
        assert!(
            error(&with(&[
                ("VITALS_ROLE", "api"),
                ("VITALS_API_FUNCTION", "IntegrationsApi"),
                ("VITALS_JWT_SECRET_ARN", "arn:jwt"),
            ]))
            .contains("VITALS_WEBHOOK_SECRET_ARN")
        );
        let stream = configure(&env(&with(&[
            ("VITALS_ROLE", "stream"),
            ("VITALS_TARGET", "dashboard"),
        ])))
        .expect("stream");
        assert_eq!(
            stream.role,
            Role::Stream {
                target: Context::Dashboard
            }
        );
        assert_eq!(stream.aws.table_prefix, "vitals-");
        let nightly = configure(&env(&with(&[("VITALS_ROLE", "nightly")]))).expect("nightly");
        assert_eq!(nightly.role, Role::Nightly);
    }

    #[test]
    fn a_fetched_secret_shorter_than_32_bytes_is_refused() {
        let (short, minimum) = (
            "a-31-byte-secret-nobody-reads!!",
            "a-32-byte-secret-for-this-test-0",
        );
        for (value, problem) in [
            (None, "no string value"),
            (Some(""), "is empty"),
            (Some(short), "shorter than 32 bytes"),
        ] {
            let error = usable(value, "VITALS_JWT_SECRET_ARN")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                error.contains("VITALS_JWT_SECRET_ARN"),
                "{value:?}: {error}"
            );
            assert!(error.contains(problem), "{value:?}: {error}");
            assert!(!error.contains(short), "the value is not shown: {error}");
        }
        assert_eq!(
            usable(Some(minimum), "VITALS_WEBHOOK_SECRET_ARN").expect("32 bytes"),
            minimum
        );
    }

    #[test]
    fn nothing_missing_falls_back_to_a_default() {
        assert!(
            error(&with(&[
                ("VITALS_ROLE", "api"),
                ("VITALS_WEBHOOK_SECRET_ARN", "arn:w")
            ]))
            .contains("VITALS_JWT_SECRET_ARN")
        );
        assert!(
            error(&with(&[
                ("VITALS_ROLE", "api"),
                ("VITALS_JWT_SECRET_ARN", "arn:j")
            ]))
            .contains("VITALS_WEBHOOK_SECRET_ARN")
        );
        assert!(error(&with(&[("VITALS_ROLE", "stream")])).contains("VITALS_TARGET"));
        assert!(
            error(&with(&[
                ("VITALS_ROLE", "stream"),
                ("VITALS_TARGET", "billing")
            ]))
            .contains("billing")
        );
        assert!(error(&with(&[])).contains("VITALS_ROLE"));
        assert!(error(&with(&[("VITALS_ROLE", "worker")])).contains("worker"));
        assert!(
            error(&[("VITALS_ROLE", "nightly"), ("VITALS_TABLE_PREFIX", "v-")])
                .contains("VITALS_BACKEND")
        );
        assert!(
            error(&[
                ("VITALS_ROLE", "nightly"),
                ("VITALS_BACKEND", "embedded"),
                ("VITALS_TABLE_PREFIX", "v-")
            ])
            .contains("runs on dynamodb")
        );
        assert!(
            error(&[("VITALS_ROLE", "nightly"), ("VITALS_BACKEND", "dynamodb")])
                .contains("VITALS_TABLE_PREFIX")
        );
        assert!(
            error(&with(&[
                ("VITALS_ROLE", "api"),
                ("VITALS_JWT_SECRET_ARN", " "),
                ("VITALS_WEBHOOK_SECRET_ARN", "arn:w")
            ]))
            .contains("VITALS_JWT_SECRET_ARN"),
            "a blank value is a missing one"
        );
    }
}
