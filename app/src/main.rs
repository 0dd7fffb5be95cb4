//! The `vitals` command: parses the command line, runs the chosen subcommand and ends
//! with the exit status its outcome means (`vitals::cli::exit`, listed in `--help`).

use clap::Parser;
use std::process::ExitCode;
use vitals::cli::exit::{Exit, ExitOn as _};
use vitals::cli::{AdminCommand, Backend, Cli, Command, Deploy, DlqKind, Doc, InsightsJob};
use vitals::{server, storage};

#[tokio::main]
async fn main() -> ExitCode {
    // The Lambda runtime starts `bootstrap` with no arguments: the environment says
    // which function this is.
    if std::env::args_os().len() == 1 && vitals::lambda_boot::in_lambda() {
        let format = vitals::lambda_boot::log_format();
        vitals::logging::init(format, "info");
        let outcome = vitals::lambda_boot::run().await.map(|()| Exit::Ok);
        return finish(outcome, true, format);
    }
    let cli = Cli::parse();
    // `vitals cost` runs a whole user-day in-process: its report is the output, not the
    // day's log lines.
    let default_level = match cli.command {
        Command::Cost { .. } => "warn",
        _ => "info",
    };
    vitals::logging::init(cli.log_format, default_level);
    let on_aws = on_aws(&cli.command);
    finish(run(cli.command).await, on_aws, cli.log_format)
}

/// The process's exit status for `outcome`; a failure's message on standard error (the
/// command's answer, shown whatever the log level; a JSON log line where logs are JSON).
fn finish(outcome: anyhow::Result<Exit>, on_aws: bool, format: vitals::cli::LogFormat) -> ExitCode {
    match outcome {
        Ok(exit) => exit.into(),
        Err(error) => {
            let exit = vitals::cli::exit::status_of(&error, on_aws);
            match format {
                vitals::cli::LogFormat::Text => eprintln!("error: {error:#}"),
                vitals::cli::LogFormat::Json => {
                    tracing::error!(
                        exit = exit.code(),
                        error = format!("{error:#}"),
                        "vitals failed"
                    );
                }
            }
            exit.into()
        }
    }
}

/// Whether `command` works on AWS: an unexpected failure of it is [`Exit::External`].
fn on_aws(command: &Command) -> bool {
    let shared = |store: &vitals::cli::StoreArgs| store.backend == Backend::Dynamodb;
    match command {
        Command::Bootstrap(_)
        | Command::Work(_)
        | Command::Lambda { .. }
        | Command::RedriveFailures { .. }
        | Command::Migrate { .. } => true,
        Command::Serve(args) => shared(&args.store),
        Command::ApiLambda { store, .. }
        | Command::Replay { store, .. }
        | Command::Insights {
            job: InsightsJob::Nightly { store, .. },
        } => shared(store),
        Command::Redrive { store, dlq, .. }
        | Command::Admin {
            command: AdminCommand::Residue { store, dlq, .. },
        } => shared(store) || *dlq == DlqKind::Sqs,
        Command::Admin {
            command:
                AdminCommand::CurateRecipe { store, .. } | AdminCommand::CurateMealPlan { store, .. },
        } => shared(store),
        Command::Info { .. }
        | Command::Cost { .. }
        | Command::Docs { .. }
        | Command::Deploy { .. } => false,
    }
}

/// Runs `command`; how it ended.
async fn run(command: Command) -> anyhow::Result<Exit> {
    match command {
        Command::Serve(args) => serve(&args).await,
        Command::Info { data_dir } => info(&data_dir),
        Command::Bootstrap(args) => vitals::work::bootstrap(&args).await.map(|()| Exit::Ok),
        Command::Work(args) => vitals::work::work(&args).await.map(|()| Exit::Ok),
        Command::Lambda { subscription, aws } => {
            // Before anything else: outside Lambda, the runtime would panic at start.
            vitals::lambda_boot::runtime::runtime_environment(&|name| std::env::var(name).ok())?;
            vitals::work::lambda(&subscription, &aws).await?;
            Ok(Exit::Ok)
        }
        Command::ApiLambda { store, api } => vitals::lambda_api::run(&store, &api)
            .await
            .map(|()| Exit::Ok),
        Command::Docs { doc } => docs(doc),
        Command::Deploy {
            what: Deploy::Template,
        } => {
            print!("{}", vitals::deploy::template_text());
            Ok(Exit::Ok)
        }
        Command::Deploy {
            what: Deploy::Matrix,
        } => {
            print!("{}", vitals::deploy::matrix_text());
            Ok(Exit::Ok)
        }
        Command::Redrive {
            subscription,
            store,
            dlq,
        } => {
            let outcome = vitals::admin::redrive(&store, dlq, &subscription).await?;
            println!(
                "{subscription}: {} applied, {} still failing",
                outcome.applied, outcome.still_failing
            );
            Ok(Exit::Ok)
        }
        Command::Migrate { data_dir, aws } => migrate(&data_dir, &aws).await,
        Command::Cost { prices } => cost(prices.as_deref()).await,
        Command::RedriveFailures { target, aws } => redrive_failures(&target, &aws).await,
        Command::Replay {
            projection,
            user,
            rebuild,
            store,
        } => replay(&projection, user.as_deref(), rebuild, &store).await,
        Command::Admin {
            command: AdminCommand::Residue { user, store, dlq },
        } => residue(&user, &store, dlq).await,
        Command::Admin {
            command:
                curate @ (AdminCommand::CurateRecipe { .. } | AdminCommand::CurateMealPlan { .. }),
        } => {
            let id = vitals::admin::curate(curate).await?;
            println!("{id}");
            Ok(Exit::Ok)
        }
        Command::Insights {
            job: InsightsJob::Nightly { date, store },
        } => {
            // The date first: a malformed one is refused before the store is opened.
            let day = date.as_deref().map(vitals::admin::day).transpose()?;
            let storage = storage::existing(&store).await?;
            let budget = projectors::nightly::Budget::unbounded();
            let runs = vitals::admin::nightly_readiness(storage.store, day, budget);
            let runs = runs.await?;
            if runs.is_empty() {
                println!("readiness: every ended day is scored already");
            }
            for run in runs {
                let (day, scored) = (run.day, run.scored);
                println!("readiness scored for {scored} active users on {day}");
            }
            Ok(Exit::Ok)
        }
    }
}

/// `vitals info`: what the embedded store in `data_dir` is.
fn info(data_dir: &std::path::Path) -> anyhow::Result<Exit> {
    let store = storage::embedded(data_dir, infra::embedded::Open::Existing)?;
    let info = store.info().or_exit(Exit::Store)?;
    store.close();
    let created = info
        .created_at
        .unwrap_or_else(|| "unknown (made before stores recorded it)".to_owned());
    let size = info.size_bytes;
    let mib = size as f64 / (1024.0 * 1024.0);
    println!("path            {}", info.path.display());
    println!("format version  {}", info.format_version);
    println!("created at      {created}");
    println!("size            {size} bytes ({mib:.1} MiB)");
    Ok(Exit::Ok)
}

/// `vitals serve`: the HTTP API and, on the embedded store, the projectors. Every
/// setting is checked before anything is made or bound, and the address is printed only
/// once all is ready.
async fn serve(args: &vitals::cli::ServeArgs) -> anyhow::Result<Exit> {
    // The secrets first: a refused one stops the start before anything is opened or
    // bound (the error names its variable).
    let shape = vitals::setup::Shape::serving(args.store.backend);
    let secrets = vitals::setup::Secrets::from_args(&args.api, shape).or_exit(Exit::Config)?;
    // Read here too, before the store is made: the API reads it again when it is built.
    check_jwks_file(&args.api)?;
    let listener = server::listen(&args.listen).await?;
    let address = listener.local_addr().or_exit(Exit::Config)?;
    let storage = storage::open(&args.store).await?.logged();
    // Without VITALS_JWT_SECRET (the embedded store only: a shared one refused to start
    // above), the key kept beside the store, so a restart signs no one out.
    let (secrets, signing) = match &args.api.jwt_secret {
        Some(_) => (secrets, vitals::setup::SigningKey::Configured),
        None => {
            let (key, kept) =
                vitals::setup::kept_signing_key(&args.store.data_dir).or_exit(Exit::Config)?;
            (secrets.sign_with(&key), kept)
        }
    };
    let api =
        vitals::setup::api_with(storage.store.clone(), &args.api, secrets).or_exit(Exit::Config)?;
    // The start line says which key signs the tokens (a generated one is kept for the
    // next start); standard output holds only the address line scripts read.
    tracing::info!(backend = storage.store.backend(), %address, signing = %signing, "vitals serving");
    // The address on stdout, so scripts and tests can find a port-0 server.
    println!("listening on http://{address}");
    // Built here, not by the server from `ServeArgs`: the command line depends on the
    // server (its timeout parser), never the other way round.
    let limits = server::ConnectionLimits {
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        idle_timeout: args.idle_timeout,
        max_connections: args.max_connections,
    };
    server::run_with(listener, storage, api, limits, server::shutdown_signal()).await?;
    Ok(Exit::Ok)
}

/// A `--jwks-file` that cannot be read, or holds no JWKS document with a key, is
/// [`Exit::Config`], naming the file.
fn check_jwks_file(api: &vitals::cli::ApiArgs) -> anyhow::Result<()> {
    let Some(path) = &api.jwks_file else {
        return Ok(());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Exit::Config.error(format!("reading the JWKS document {}: {e}", path.display()))
    })?;
    let keys: jsonwebtoken::jwk::JwkSet = serde_json::from_str(&text).map_err(|e| {
        Exit::Config.error(format!("{} is not a JWKS document: {e}", path.display()))
    })?;
    if keys.keys.is_empty() {
        return Err(Exit::Config.error(format!("{} holds no keys", path.display())));
    }
    Ok(())
}

/// `vitals migrate`: copies the embedded store to DynamoDB and checks the copy.
async fn migrate(data_dir: &std::path::Path, aws: &vitals::cli::AwsArgs) -> anyhow::Result<Exit> {
    // The source must be a store: checked (and closed again) before the copy opens it.
    storage::embedded(data_dir, infra::embedded::Open::Existing)?.close();
    let migrated = vitals::migrate::migrate(data_dir, aws).await?;
    println!("copied {} items", migrated.copied);
    for check in &migrated.checks {
        println!(
            "{}\t{} items\t{} in DynamoDB\tchecksum {}\t{}",
            check.table,
            check.source_items,
            check.target_items,
            check.source_checksum,
            if check.matches() { "ok" } else { "MISMATCH" }
        );
    }
    if !migrated
        .checks
        .iter()
        .all(vitals::migrate::TableCheck::matches)
    {
        eprintln!("the copy does not match the embedded store");
        return Ok(Exit::Finding);
    }
    Ok(Exit::Ok)
}

/// `vitals cost`, at default prices or those of a JSON file.
async fn cost(prices: Option<&std::path::Path>) -> anyhow::Result<Exit> {
    let prices = match prices {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Exit::Usage.error(format!("reading {}: {e}", path.display())))?;
            serde_json::from_str(&text)
                .map_err(|e| Exit::Usage.error(format!("{}: {e}", path.display())))?
        }
        None => vitals::cost::Prices::default(),
    };
    print!("{}", vitals::cost::report(&prices).await?);
    Ok(Exit::Ok)
}

/// `vitals redrive-failures TARGET`: the batches described in the on-failure queue of
/// the projector writing TARGET's table, fetched back from their streams and applied.
async fn redrive_failures(target: &str, aws: &vitals::cli::AwsArgs) -> anyhow::Result<Exit> {
    let context = events_schema::Context::ALL
        .into_iter()
        .find(|c| c.to_string() == target)
        .ok_or_else(|| Exit::Usage.error(format!("{target:?} is not a context")))?;
    let outcome = vitals::admin::redrive_failures(aws, context).await?;
    println!(
        "{target}: {} batches redriven ({} records), {} unreadable messages left",
        outcome.batches, outcome.records, outcome.unreadable
    );
    for batch in &outcome.expired {
        println!(
            "expired: {batch} is no longer retained by the stream (left in the queue); \
             rebuild the affected read models with `vitals replay NAME --user ID` \
             (or `vitals replay all`), then delete the message"
        );
    }
    for batch in &outcome.incomplete {
        println!(
            "incomplete: {batch} could not be read to its end (the shard stayed behind); \
             left in the queue for the next run"
        );
    }
    Ok(Exit::Ok)
}

/// `vitals admin residue USER`: what is left of a user anywhere; [`Exit::Finding`] if
/// anything. An id that no erasure and no item knows names no user of this store: that
/// is [`Exit::Usage`], not "nothing left".
async fn residue(
    user: &str,
    store: &vitals::cli::StoreArgs,
    dlq: vitals::cli::DlqKind,
) -> anyhow::Result<Exit> {
    let residue = vitals::admin::residue(store, user, dlq).await?;
    for remnant in &residue.remnants {
        println!("{remnant}");
    }
    for letters in &residue.dead_letters {
        println!("{letters}");
    }
    for change in &residue.logged {
        println!("{change}");
    }
    let left = residue.remnants.len()
        + residue.logged.len()
        + residue.dead_letters.iter().map(|d| d.letters).sum::<u64>() as usize;
    match &residue.erasure {
        Some(status) => println!("erasure of {user}: {status}"),
        None if left == 0 => {
            return Err(Exit::Usage.error(format!(
                "{user:?} is no user of this store: no erasure is recorded for it and nothing \
                 holds it (is it the right id, and the right store?)"
            )));
        }
        None => println!("no erasure is recorded for {user}"),
    }
    if left == 0 {
        println!("nothing left of {user}");
        Ok(Exit::Ok)
    } else {
        println!("{left} items left of {user}");
        Ok(Exit::Finding)
    }
}

/// `vitals docs ...`: the generated documents.
fn docs(doc: Doc) -> anyhow::Result<Exit> {
    match doc {
        Doc::AccessPatterns => print!("{}", events_schema::tables::access_pattern_document()),
        Doc::Events => print!("{}", vitals::event_docs::index()),
        Doc::EventSchemas { out } => {
            let written = vitals::event_docs::write_schemas(&out)?;
            println!("wrote {written} event schemas to {}", out.display());
        }
    }
    Ok(Exit::Ok)
}

/// `vitals replay NAME|all [--user ID] [--rebuild]`.
async fn replay(
    projection: &str,
    user: Option<&str>,
    rebuild: bool,
    store: &vitals::cli::StoreArgs,
) -> anyhow::Result<Exit> {
    let mode = if rebuild {
        projectors::replay::Mode::Rebuild
    } else {
        projectors::replay::Mode::Incremental
    };
    let replayed = vitals::admin::replay(store, projection, user, mode).await?;
    println!(
        "replayed {} events ({} applications, {} refused)",
        replayed.events, replayed.applications, replayed.rejected
    );
    Ok(Exit::Ok)
}
