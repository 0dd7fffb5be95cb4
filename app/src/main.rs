//! The `vitals` command: parses the command line and runs the chosen subcommand.

use clap::Parser;
use vitals::cli::{AdminCommand, Cli, Command, Deploy, Doc, InsightsJob};
use vitals::{server, storage};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The Lambda runtime starts `bootstrap` with no arguments: the environment says
    // which function this is.
    if std::env::args_os().len() == 1 && vitals::lambda_boot::in_lambda() {
        vitals::logging::init(vitals::lambda_boot::log_format(), "info");
        return vitals::lambda_boot::run().await;
    }
    let cli = Cli::parse();
    // `vitals cost` runs a whole user-day in-process: its report is the output, not the
    // day's log lines.
    let default_level = match cli.command {
        Command::Cost { .. } => "warn",
        _ => "info",
    };
    vitals::logging::init(cli.log_format, default_level);
    match cli.command {
        Command::Serve(args) => serve(&args).await,
        Command::Bootstrap(args) => vitals::work::bootstrap(&args).await,
        Command::Work(args) => vitals::work::work(&args).await,
        Command::Lambda { subscription, aws } => vitals::work::lambda(&subscription, &aws).await,
        Command::ApiLambda { store, api } => vitals::lambda_api::run(&store, &api).await,
        Command::Docs { doc } => docs(doc),
        Command::Deploy {
            what: Deploy::Template,
        } => {
            print!("{}", vitals::deploy::template_text());
            Ok(())
        }
        Command::Deploy {
            what: Deploy::Matrix,
        } => {
            print!("{}", vitals::deploy::matrix_text());
            Ok(())
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
            Ok(())
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
            Ok(())
        }
        Command::Insights {
            job: InsightsJob::Nightly { date, store },
        } => {
            let storage = storage::open(&store).await?;
            let budget = projectors::nightly::Budget::unbounded();
            let runs = vitals::admin::nightly_readiness(storage.store, date.as_deref(), budget);
            let runs = runs.await?;
            if runs.is_empty() {
                println!("readiness: every ended day is scored already");
            }
            for run in runs {
                let (day, scored) = (run.day, run.scored);
                println!("readiness scored for {scored} active users on {day}");
            }
            Ok(())
        }
    }
}

/// `vitals serve`: the HTTP API and, on the embedded store, the projectors.
async fn serve(args: &vitals::cli::ServeArgs) -> anyhow::Result<()> {
    // The secrets first: a refused one stops the start before anything is opened or
    // bound (the error names its variable; main exits non-zero).
    let shape = vitals::setup::Shape::serving(args.store.backend);
    let secrets = vitals::setup::Secrets::from_args(&args.api, shape)?;
    let storage = storage::open(&args.store).await?.logged();
    let api = vitals::setup::api_with(storage.store.clone(), &args.api, secrets)?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let address = listener.local_addr()?;
    tracing::info!(backend = storage.store.backend(), %address, "vitals serving");
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
    server::run_with(listener, storage, api, limits, server::shutdown_signal()).await
}

/// `vitals migrate`: copies the embedded store to DynamoDB and checks the copy.
async fn migrate(data_dir: &std::path::Path, aws: &vitals::cli::AwsArgs) -> anyhow::Result<()> {
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
    anyhow::ensure!(
        migrated
            .checks
            .iter()
            .all(vitals::migrate::TableCheck::matches),
        "the copy does not match the embedded store"
    );
    Ok(())
}

/// `vitals cost`, at default prices or those of a JSON file.
async fn cost(prices: Option<&std::path::Path>) -> anyhow::Result<()> {
    let prices = match prices {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        None => vitals::cost::Prices::default(),
    };
    print!("{}", vitals::cost::report(&prices).await?);
    Ok(())
}

/// `vitals redrive-failures TARGET`: the batches described in the on-failure queue of
/// the projector writing TARGET's table, fetched back from their streams and applied.
async fn redrive_failures(target: &str, aws: &vitals::cli::AwsArgs) -> anyhow::Result<()> {
    let context = events_schema::Context::ALL
        .into_iter()
        .find(|c| c.to_string() == target)
        .ok_or_else(|| anyhow::anyhow!("{target:?} is not a context"))?;
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
    Ok(())
}

/// `vitals admin residue USER`: what is left of a user anywhere; exits 1 if anything.
async fn residue(
    user: &str,
    store: &vitals::cli::StoreArgs,
    dlq: vitals::cli::DlqKind,
) -> anyhow::Result<()> {
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
    match &residue.erasure {
        Some(status) => println!("erasure of {user}: {status}"),
        None => println!("no erasure is recorded for {user} (is it the right id?)"),
    }
    let left = residue.remnants.len()
        + residue.logged.len()
        + residue.dead_letters.iter().map(|d| d.letters).sum::<u64>() as usize;
    if left == 0 {
        println!("nothing left of {user}");
        Ok(())
    } else {
        println!("{left} items left of {user}");
        std::process::exit(1);
    }
}

/// `vitals docs ...`: the generated documents.
fn docs(doc: Doc) -> anyhow::Result<()> {
    match doc {
        Doc::AccessPatterns => print!("{}", events_schema::tables::access_pattern_document()),
        Doc::Events => print!("{}", vitals::event_docs::index()),
        Doc::EventSchemas { out } => {
            let written = vitals::event_docs::write_schemas(&out)?;
            println!("wrote {written} event schemas to {}", out.display());
        }
    }
    Ok(())
}

/// `vitals replay NAME|all [--user ID] [--rebuild]`.
async fn replay(
    projection: &str,
    user: Option<&str>,
    rebuild: bool,
    store: &vitals::cli::StoreArgs,
) -> anyhow::Result<()> {
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
    Ok(())
}
