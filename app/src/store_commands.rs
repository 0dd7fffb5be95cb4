//! The commands that work on a store's contents: `info`, `backup`, `admin
//! curate-recipe`, `curate-meal-plan` and `residue`, `replay`, `redrive` and `insights
//! nightly`. Each runs the same code in its own process, on the store it opens, or inside
//! a running `vitals serve`, on the store the server has open (asked through its admin
//! socket: [`crate::admin_socket`]). What a command prints goes to the writer it is
//! given, never straight to standard output; it never closes a store it did not open.

use crate::admin::Place;
use crate::admin_client;
use crate::cli::exit::{self, Exit, ExitOn as _};
use crate::cli::{AdminCommand, Backend, Command, DlqKind, InsightsJob, StoreArgs};
use crate::storage;
use infra::embedded::{BackupError, Open};
use std::io::Write;
use std::path::Path;

/// Whether `command` is a store command.
pub fn is_store_command(command: &Command) -> bool {
    matches!(
        command,
        Command::Info { .. }
            | Command::Backup { .. }
            | Command::Redrive { .. }
            | Command::Replay { .. }
            | Command::Admin { .. }
            | Command::Insights { .. }
    )
}

/// Runs a store command in this process, its output on standard output. When its
/// embedded store is open in another process, the server listening on the admin socket
/// beside the store runs it (`args`, this process's command line without the program
/// name); with no server there, it is [`Exit::Store`], naming the store.
pub async fn run_here(
    command: Command,
    args: impl Iterator<Item = std::ffi::OsString>,
) -> anyhow::Result<Exit> {
    let outcome = run(command, &Place::Here, &mut std::io::stdout()).await;
    match outcome {
        Err(error) => match exit::cause::<storage::Held>(&error) {
            Some(held) => admin_client::through_server(&held.store, args).await,
            None => Err(error),
        },
        done => done,
    }
}

/// Runs a store command at `place`, printing to `out`; how it ended.
pub async fn run(
    command: Command,
    place: &Place,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<Exit> {
    match command {
        Command::Info { data_dir } => info(place, &data_dir, out),
        Command::Backup { data_dir, to } => backup(place, &data_dir, &to, out).await,
        Command::Redrive {
            subscription,
            store,
            dlq,
        } => redrive(place, &subscription, &store, dlq, out).await,
        Command::Replay {
            projection,
            user,
            rebuild,
            store,
        } => replay(place, &projection, user.as_deref(), rebuild, &store, out).await,
        Command::Admin {
            command: AdminCommand::Residue { user, store, dlq },
        } => residue(place, &user, &store, dlq, out).await,
        Command::Admin { command: curate } => {
            let id = crate::admin::curate(place, curate).await?;
            writeln!(out, "{id}")?;
            Ok(Exit::Ok)
        }
        Command::Insights {
            job: InsightsJob::Nightly { date, store },
        } => nightly(place, date.as_deref(), &store, out).await,
        _ => Err(Exit::Usage.error("not a command on a store")),
    }
}

/// `redrive`: applies `subscription`'s dead letters again and says how many applied.
async fn redrive(
    place: &Place,
    subscription: &str,
    store: &StoreArgs,
    dlq: DlqKind,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<Exit> {
    let outcome = crate::admin::redrive(place, store, dlq, subscription).await?;
    let (applied, failing) = (outcome.applied, outcome.still_failing);
    writeln!(
        out,
        "{subscription}: {applied} applied, {failing} still failing"
    )?;
    Ok(Exit::Ok)
}

/// `replay`: applies the events again to `projection` (of `user` alone if given),
/// folding in memory if `rebuild`, and says how many.
async fn replay(
    place: &Place,
    projection: &str,
    user: Option<&str>,
    rebuild: bool,
    store: &StoreArgs,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<Exit> {
    let mode = if rebuild {
        projectors::replay::Mode::Rebuild
    } else {
        projectors::replay::Mode::Incremental
    };
    let replayed = crate::admin::replay(place, store, projection, user, mode).await?;
    writeln!(
        out,
        "replayed {} events ({} applications, {} refused)",
        replayed.events, replayed.applications, replayed.rejected
    )?;
    Ok(Exit::Ok)
}

/// `insights nightly`: scores readiness for `date` (or every ended day not scored yet)
/// and says for how many users.
async fn nightly(
    place: &Place,
    date: Option<&str>,
    store: &StoreArgs,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<Exit> {
    // The date first: a malformed one is refused before the store is opened.
    let day = date.map(crate::admin::day).transpose()?;
    let storage = place.storage(store, Open::Existing).await?;
    let budget = projectors::nightly::Budget::unbounded();
    let runs = crate::admin::nightly_readiness(storage.store.clone(), day, budget);
    let runs = runs.await?;
    if runs.is_empty() {
        writeln!(out, "readiness: every ended day is scored already")?;
    }
    for run in runs {
        let (day, scored) = (run.day, run.scored);
        writeln!(out, "readiness scored for {scored} active users on {day}")?;
    }
    Ok(Exit::Ok)
}

/// `command` as the server runs it for a client in `cwd`: a store command on the
/// embedded store, its relative `--to` resolved in `cwd`. What the server does not run
/// is refused: another command ([`Exit::Usage`]), a command on DynamoDB or SQS
/// (likewise: it runs by itself), `replay --rebuild` ([`Exit::Store`]: it needs the
/// projection workers stopped, which the server runs).
pub fn served(command: Command, cwd: Option<&Path>) -> anyhow::Result<Command> {
    // Never the command's `Debug`: parsed in the server, it holds the server's settings.
    if !is_store_command(&command) {
        return Err(Exit::Usage.error(
            "not a command a running `vitals serve` runs: it runs info, backup, admin, \
             replay, redrive and insights",
        ));
    }
    let aside = |what: &str| {
        Err(Exit::Usage.error(format!(
            "{what}: the running `vitals serve` has neither (it serves the embedded store, \
             its dead letters in its tables); run the command without it"
        )))
    };
    match &command {
        Command::Redrive { store, dlq, .. }
        | Command::Admin {
            command: AdminCommand::Residue { store, dlq, .. },
        } if store.backend == Backend::Dynamodb || *dlq == DlqKind::Sqs => {
            aside("--backend dynamodb or --dlq sqs")
        }
        Command::Replay { store, .. }
        | Command::Insights {
            job: InsightsJob::Nightly { store, .. },
        }
        | Command::Admin {
            command:
                AdminCommand::CurateRecipe { store, .. } | AdminCommand::CurateMealPlan { store, .. },
        } if store.backend == Backend::Dynamodb => aside("--backend dynamodb"),
        Command::Replay { rebuild: true, .. } => Err(Exit::Store.error(
            "`replay --rebuild` overwrites what the projection workers write meanwhile, and \
             the running `vitals serve` runs them: stop the server, then rebuild (or replay \
             without --rebuild, which is safe while it serves)",
        )),
        Command::Backup { data_dir, to } if to.is_relative() => match cwd {
            Some(cwd) => Ok(Command::Backup {
                data_dir: data_dir.clone(),
                to: cwd.join(to),
            }),
            None => Err(Exit::Usage.error("a relative --to needs the client's directory (cwd)")),
        },
        _ => Ok(command),
    }
}

/// `vitals info`: what the embedded store in `data_dir` is.
fn info(place: &Place, data_dir: &Path, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let store = place.embedded(data_dir)?;
    let info = store.info().or_exit(Exit::Store)?;
    let created = info
        .created_at
        .unwrap_or_else(|| "unknown (made before stores recorded it)".to_owned());
    let size = info.size_bytes;
    let mib = size as f64 / (1024.0 * 1024.0);
    writeln!(out, "path            {}", info.path.display())?;
    writeln!(out, "format version  {}", info.format_version)?;
    writeln!(out, "created at      {created}")?;
    writeln!(out, "size            {size} bytes ({mib:.1} MiB)")?;
    Ok(Exit::Ok)
}

/// `vitals backup`: a consistent snapshot of the embedded store in `data_dir` written to
/// `to`; what it copied, per table, and the change-log sequence it is consistent at.
async fn backup(
    place: &Place,
    data_dir: &Path,
    to: &Path,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<Exit> {
    let store = place.embedded(data_dir)?;
    let snapshot = store.backup_to(to).await.map_err(backup_error)?;
    writeln!(
        out,
        "backed up {} to {} (format version {})",
        store.path().display(),
        to.display(),
        snapshot.format_version
    )?;
    print_tables(&snapshot, out)?;
    writeln!(
        out,
        "consistent at change-log sequence {}",
        snapshot.sequence
    )?;
    Ok(Exit::Ok)
}

/// Each table of `snapshot` and its entries, one a line (the empty indexes aside).
pub fn print_tables(
    snapshot: &infra::embedded::Snapshot,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    for (table, entries) in &snapshot.tables {
        if table.starts_with("index/") && *entries == 0 {
            continue;
        }
        writeln!(out, "  {table:<40} {entries:>10}")?;
    }
    writeln!(out, "  {:<40} {:>10}", "items in all", snapshot.items())?;
    Ok(())
}

/// A backup's or a restore's failure with its status: a backup file that is not there,
/// or a store to replace that holds data, is [`Exit::Usage`]; a file that is not a
/// backup, a store in use or failing is [`Exit::Store`]; a file not written is
/// [`Exit::Failed`].
pub fn backup_error(error: BackupError) -> anyhow::Error {
    let exit = match &error {
        BackupError::Missing { .. }
        | BackupError::Occupied { .. }
        | BackupError::AsideTaken { .. } => Exit::Usage,
        BackupError::NotABackup(_) | BackupError::InUse { .. } | BackupError::Store(_) => {
            Exit::Store
        }
        BackupError::Write { .. } => Exit::Failed,
    };
    exit.error_of(error)
}

/// `vitals admin residue USER`: what is left of a user anywhere; [`Exit::Finding`] if
/// anything. An id that no erasure and no item knows names no user of this store: that
/// is [`Exit::Usage`], not "nothing left".
async fn residue(
    place: &Place,
    user: &str,
    store: &StoreArgs,
    dlq: DlqKind,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<Exit> {
    let residue = crate::admin::residue(place, store, user, dlq).await?;
    for remnant in &residue.remnants {
        writeln!(out, "{remnant}")?;
    }
    for letters in &residue.dead_letters {
        writeln!(out, "{letters}")?;
    }
    for change in &residue.logged {
        writeln!(out, "{change}")?;
    }
    let left = residue.remnants.len()
        + residue.logged.len()
        + residue.dead_letters.iter().map(|d| d.letters).sum::<u64>() as usize;
    match &residue.erasure {
        Some(status) => writeln!(out, "erasure of {user}: {status}")?,
        None if left == 0 => {
            return Err(Exit::Usage.error(format!(
                "{user:?} is no user of this store: no erasure is recorded for it and nothing \
                 holds it (is it the right id, and the right store?)"
            )));
        }
        None => writeln!(out, "no erasure is recorded for {user}")?,
    }
    if left == 0 {
        writeln!(out, "nothing left of {user}")?;
        Ok(Exit::Ok)
    } else {
        writeln!(out, "{left} items left of {user}")?;
        Ok(Exit::Finding)
    }
}
