//! Serving: bind, serve the router until the shutdown future resolves (in-flight
//! requests finish first). On the embedded store it also runs every projector worker,
//! the TTL purge and the trimming of processed change records in-process, and answers
//! operators' store commands on its admin socket ([`crate::admin_socket`]).
//!
//! Connections are served over HTTP/1.1 with limits a hostile network cannot outlast
//! ([`ConnectionLimits`]): a request's headers must arrive within the header timeout
//! (a slowloris holding partial requests is closed), its body within the body timeout
//! (else `408`), a kept-alive connection may wait the idle timeout for its next request,
//! and at most so many connections are served at once: more wait in the listen backlog
//! until one closes, which the timeouts see to.

use crate::admin_socket::AdminSocket;
use crate::cli::exit::Exit;
use crate::http::{self, AppState};
use crate::storage::Storage;
use infra::embedded::EmbeddedStore;
use infra::feed::embedded::EmbeddedFeed;
use infra::store::now_epoch_seconds;
use projectors::pipeline::Pipeline;
use projectors::registry;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

mod connections;
pub use connections::ConnectionLimits;
pub(crate) use connections::serve as serve_connections;

/// How often `vitals serve` (embedded) looks for days to score readiness for: a tick
/// that finds every ended day finished costs a read of each day's checkpoint.
const NIGHTLY_CHECK_EVERY: Duration = Duration::from_secs(600);

/// How often the embedded store purges items whose TTL has passed.
const PURGE_EVERY: Duration = Duration::from_secs(60);
const PURGE_BATCH: usize = 1000;

/// Binds `address` (`IP:PORT`, or `HOST:PORT` with a host name, resolved: the first of
/// its addresses that can be bound is used). An address that does not resolve or cannot
/// be bound (in use, not this machine's, a port the process may not take) is
/// [`Exit::Config`], its message naming the address.
pub async fn listen(address: &str) -> anyhow::Result<TcpListener> {
    let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host(address)
        .await
        .map_err(|e| {
            Exit::Config.error(format!("cannot resolve the listen address {address}: {e}"))
        })?
        .collect();
    let mut failures = Vec::new();
    let mut in_use = false;
    for candidate in &resolved {
        match TcpListener::bind(candidate).await {
            Ok(listener) => return Ok(listener),
            Err(e) => {
                in_use |= e.kind() == std::io::ErrorKind::AddrInUse;
                if resolved.len() == 1 && candidate.to_string() == address {
                    failures.push(e.to_string());
                } else {
                    failures.push(format!("{candidate}: {e}"));
                }
            }
        }
    }
    if failures.is_empty() {
        return Err(Exit::Config.error(format!(
            "the listen address {address} resolves to no address"
        )));
    }
    let hint = if in_use {
        " (another process holds the port: a `vitals serve` running already?)"
    } else {
        ""
    };
    Err(Exit::Config.error(format!(
        "cannot listen on {address}: {}{hint}",
        failures.join("; ")
    )))
}

/// Serves on `listener` until `shutdown` resolves, with the default connection limits.
pub async fn run(
    listener: TcpListener,
    storage: Storage,
    api: Arc<crate::http::api::Api>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let limits = ConnectionLimits::default();
    run_with(listener, storage, api, limits, None, shutdown).await
}

/// Serves on `listener` until `shutdown` resolves, within `limits`, answering store
/// commands on `admin` (bound beside the embedded store, see [`crate::admin_socket`]) if
/// given.
pub async fn run_with(
    listener: TcpListener,
    storage: Storage,
    api: Arc<crate::http::api::Api>,
    limits: ConnectionLimits,
    admin: Option<AdminSocket>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let subscriptions = registry::all(storage.store.clone());
    let consumers: Vec<&'static str> = subscriptions.iter().map(|p| p.name()).collect();
    let purger = storage
        .embedded
        .clone()
        .map(|store| tokio::spawn(purge_and_trim(store, consumers.clone())));
    // The embedded shape has no scheduler: the nightly readiness job runs here (on AWS
    // a scheduled rule runs it).
    let nightly = storage
        .embedded
        .as_ref()
        .map(|_| tokio::spawn(nightly_readiness(storage.store.clone())));
    // The embedded shape runs every projector in-process, fed by the store's change log.
    let pipeline = storage.embedded.clone().map(|store| {
        let feed = Arc::new(EmbeddedFeed::new(store));
        Arc::new(Pipeline::start(storage.store.clone(), feed, subscriptions))
    });
    let (stop_admin, admin) = spawn_admin(admin, storage.embedded.clone());
    let app = http::app_with_web(AppState {
        store: storage.store.clone(),
        pipeline: pipeline.clone(),
        api,
    });
    connections::serve(listener, app, limits, shutdown).await;
    // The commands in flight finish before the store closes.
    let _ = stop_admin.send(());
    if let Some(admin) = admin {
        let _ = admin.await;
    }
    if let Some(purger) = purger {
        purger.abort();
    }
    if let Some(nightly) = nightly {
        nightly.abort();
    }
    if let Some(pipeline) = &pipeline {
        pipeline.stop().await;
    }
    if let Some(embedded) = &storage.embedded {
        close_embedded(embedded, &consumers).await;
    }
    Ok(())
}

/// Answers the operators' store commands on `admin` over the `embedded` store, when both
/// are given, until the returned sender sends (or is dropped): the commands run on the
/// store itself, their writes counted, not logged one by one (as when they run by
/// themselves). Returns that sender and the task serving them.
fn spawn_admin(
    admin: Option<AdminSocket>,
    embedded: Option<Arc<EmbeddedStore>>,
) -> (oneshot::Sender<()>, Option<JoinHandle<()>>) {
    let (stop_admin, admin_stopped) = oneshot::channel::<()>();
    let admin = admin.zip(embedded).map(|(socket, embedded)| {
        let store: Arc<dyn infra::Store> = embedded.clone();
        let embedded = Some(embedded);
        let stopped = async {
            let _ = admin_stopped.await;
        };
        tokio::spawn(socket.serve(Storage { store, embedded }, stopped))
    });
    (stop_admin, admin)
}

/// Trims the change log a last time, so what the workers of `consumers` finished before
/// stopping is not kept, then closes the `embedded` store.
async fn close_embedded(embedded: &Arc<EmbeddedStore>, consumers: &[&'static str]) {
    if let Err(error) = EmbeddedFeed::new(embedded.clone())
        .trim_processed(consumers)
        .await
    {
        tracing::warn!(%error, "trimming the change log failed");
    }
    embedded.close();
}

/// Every `PURGE_EVERY`: purges the items whose TTL has passed, then trims the change
/// records every subscription has processed.
async fn purge_and_trim(store: Arc<infra::embedded::EmbeddedStore>, consumers: Vec<&'static str>) {
    let feed = EmbeddedFeed::new(store.clone());
    let mut tick = tokio::time::interval(PURGE_EVERY);
    loop {
        tick.tick().await;
        // Purge in batches until nothing is due, so one tick does all the work.
        loop {
            match store.purge_expired(now_epoch_seconds(), PURGE_BATCH).await {
                Ok(n) if n == PURGE_BATCH => continue,
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(%error, "purging expired items failed");
                    break;
                }
            }
        }
        // The change log keeps only what some subscription has yet to process (like a
        // stream's retention), so erased data does not linger in it.
        if let Err(error) = feed.trim_processed(&consumers).await {
            tracing::warn!(%error, "trimming the change log failed");
        }
    }
}

/// Every `NIGHTLY_CHECK_EVERY`: scores readiness for each day once it has ended in
/// every timezone.
async fn nightly_readiness(store: Arc<dyn infra::Store>) {
    use projectors::nightly::{Budget, run};
    let table = infra::table::Table::new(store);
    let mut tick = tokio::time::interval(NIGHTLY_CHECK_EVERY);
    loop {
        tick.tick().await;
        let now = events_schema::time::Timestamp::now();
        match run(&table, now, Budget::unbounded()).await {
            Ok(runs) => {
                for run in runs {
                    let (day, users) = (run.day, run.scored);
                    tracing::info!(%day, users, finished = run.finished, "readiness scored");
                }
            }
            Err(error) => tracing::warn!(%error, "the nightly readiness job failed"),
        }
    }
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM. The handlers are installed when this is
/// called, not when it is first awaited: called before a server says it listens, a
/// signal sent as soon as it has said so stops it cleanly instead of killing it.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::SignalKind;
    let interrupt = on_signal(SignalKind::interrupt(), "SIGINT");
    let terminate = on_signal(SignalKind::terminate(), "SIGTERM");
    async move {
        tokio::select! {
            () = interrupt => {},
            () = terminate => {},
        }
        tracing::info!("shutting down");
    }
}

/// Resolves when `kind` arrives; its handler is installed now (never, with a warning,
/// when it cannot be).
fn on_signal(
    kind: tokio::signal::unix::SignalKind,
    name: &'static str,
) -> impl Future<Output = ()> + Send + 'static {
    let signal = tokio::signal::unix::signal(kind);
    async move {
        match signal {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for {name}");
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The admin socket beside the embedded store `embedded` (see [`crate::admin_socket`]);
/// none, with a warning, when it cannot be bound (store commands then need the server
/// stopped).
pub fn admin_socket(embedded: &infra::embedded::EmbeddedStore) -> Option<AdminSocket> {
    let data_dir = embedded.path().parent()?;
    match AdminSocket::bind(data_dir) {
        Ok(socket) => {
            tracing::info!(socket = %socket.path().display(), "store commands are answered on the admin socket");
            Some(socket)
        }
        Err(error) => {
            tracing::warn!(
                error = format!("{error:#}"),
                "no admin socket: store commands need the server stopped"
            );
            None
        }
    }
}
