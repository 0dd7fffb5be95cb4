//! The `vitals` command: parses the command line, runs the chosen subcommand and ends
//! with the exit status its outcome means (`vitals::cli::exit`, listed in `--help`).

use clap::Parser;
use std::process::ExitCode;
use vitals::cli::exit::{Exit, ExitOn as _};
use vitals::cli::{AdminCommand, Backend, Cli, Command, Deploy, DlqKind, Doc, InsightsJob};
use vitals::{server, storage, store_commands};

/// mimalloc rather than glibc's malloc: measured, a rebuild spent a third of its time in
/// malloc and free (docs/embedded-engine.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        | Command::Backup { .. }
        | Command::Restore { .. }
        | Command::Cost { .. }
        | Command::Docs { .. }
        | Command::Deploy { .. } => false,
    }
}

/// Runs `command`; how it ended.
async fn run(command: Command) -> anyhow::Result<Exit> {
    if store_commands::is_store_command(&command) {
        return store_commands::run_here(command, std::env::args_os().skip(1)).await;
    }
    match command {
        Command::Serve(args) => serve(&args).await,
        Command::Restore {
            from,
            data_dir,
            force,
        } => restore(&from, &data_dir, force),
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
        Command::Deploy {
            what: Deploy::Tables,
        } => {
            print!("{}", vitals::deploy::tables_text());
            Ok(Exit::Ok)
        }
        Command::Deploy {
            what: Deploy::Grafana,
        } => {
            print!("{}", vitals::deploy::grafana::dashboard_text());
            Ok(Exit::Ok)
        }
        Command::Migrate { data_dir, aws } => migrate(&data_dir, &aws).await,
        Command::Cost { prices } => cost(prices.as_deref()).await,
        Command::RedriveFailures { target, aws } => redrive_failures(&target, &aws).await,
        _ => Err(Exit::Failed.error("a store command runs in store_commands")),
    }
}

/// `vitals restore`: the backup `from`, checked, installed as the store of `data_dir`.
fn restore(
    from: &std::path::Path,
    data_dir: &std::path::Path,
    force: bool,
) -> anyhow::Result<Exit> {
    let restored = infra::embedded::restore(from, data_dir, force).map_err(restore_error)?;
    let snapshot = &restored.snapshot;
    println!(
        "restored {} into {} (format version {})",
        from.display(),
        restored.store.display(),
        snapshot.format_version
    );
    store_commands::print_tables(snapshot, &mut std::io::stdout())?;
    println!("consistent at change-log sequence {}", snapshot.sequence);
    if let Some(kept) = &restored.kept {
        println!("the store it replaced is kept as {}", kept.display());
    }
    Ok(Exit::Ok)
}

/// A restore's failure with its status (see [`store_commands::backup_error`]); a store
/// holding data names the flag that replaces it.
fn restore_error(error: infra::embedded::BackupError) -> anyhow::Error {
    use infra::embedded::{BackupError, KEPT_ASIDE};
    match error {
        BackupError::Occupied { path, what } => Exit::Usage.error(format!(
            "{} holds {what}: restoring over it needs --force (which keeps it beside the new \
             store as {KEPT_ASIDE})",
            path.display()
        )),
        other => store_commands::backup_error(other),
    }
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
    // Bound before the address is printed: once it is, store commands reach the server.
    let admin = storage.embedded.as_deref().and_then(server::admin_socket);
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
    // next start); standard output holds only the address lines scripts read.
    tracing::info!(backend = storage.store.backend(), %address, signing = %signing, "vitals serving");
    // A signal from whoever read the address line stops the server cleanly.
    let shutdown = server::shutdown_signal();
    // The address on stdout, so scripts and tests can find a port-0 server, then where
    // the web app is. One write, whose failure is ignored: a reader may close standard
    // output once it has the first line, and `println!` would panic on the closed pipe.
    {
        use std::io::Write as _;
        let lines = format!(
            "listening on http://{address}\nthe app: http://{address}/ (the API: http://{address}/openapi.json)\n"
        );
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(lines.as_bytes())
            .and_then(|()| stdout.flush());
    }
    // Built here, not by the server from `ServeArgs`: the command line depends on the
    // server (its timeout parser), never the other way round.
    let limits = server::ConnectionLimits {
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        idle_timeout: args.idle_timeout,
        max_connections: args.max_connections,
    };
    server::run_with(listener, storage, api, limits, admin, shutdown).await?;
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

/// `vitals docs ...`: the generated documents.
fn docs(doc: Doc) -> anyhow::Result<Exit> {
    match doc {
        Doc::AccessPatterns => print!("{}", vitals::access_doc::document()),
        Doc::UnexercisedPatterns { logs } => {
            let declared = vitals::access::catalog().len();
            let left = vitals::access::unexercised(&logs)?;
            let mut report = format!(
                "{} of {declared} declared access patterns exercised by the recorded suites\n",
                declared - left.len()
            );
            for p in left {
                report += &format!("not exercised: {} ({}): {}\n", p.name, p.feature, p.shape);
            }
            // One write, its error ignored: a reader that closed early (`| head`) is no
            // failure of the report.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes());
        }
        Doc::Events => print!("{}", vitals::event_docs::index()),
        Doc::EventSchemas { out } => {
            let written = vitals::event_docs::write_schemas(&out)?;
            println!("wrote {written} event schemas to {}", out.display());
        }
    }
    Ok(Exit::Ok)
}
