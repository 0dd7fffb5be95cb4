//! The connections of `vitals serve`, each within limits a hostile network cannot
//! outlast (issue 35): `axum::serve` had no header timeout and no cap, and 1,500 sockets
//! each holding a partial request stayed open as long as their clients liked.
//!
//! Each connection is served by hyper (HTTP/1.1) under a watch of its own, which knows
//! what the connection is doing and closes it when that takes too long:
//! - reading a request's head: from the connection's acceptance, or from the first byte
//!   of a request on a kept-alive connection, until the end of the head (the header
//!   timeout; the bytes read are seen through [`Watched`]);
//! - handling the request: its body must arrive within the body timeout ([`Deadline`]),
//!   or the request is answered `408` and the connection closed; the handler itself is
//!   only bounded, generously ([`HANDLER_SLACK`](limits::HANDLER_SLACK) beyond the body timeout), so one stuck
//!   (in the store, say) cannot hold its slot for ever: past the bound the connection is
//!   closed without an answer;
//! - waiting for the next request once a response has gone (its body dropped, see
//!   [`Answered`]): the idle timeout.
//!
//! Whatever the stage, a write the client does not take (its receive window shut: it
//! stopped reading) may stall for at most the body timeout ([`Watched`] notes when
//! writes stall and when they progress): a client that stops reading would otherwise
//! hold its slot for ever, as would a request pipelined behind an unsent response (hyper
//! does not write its response, nor drop its body, until the earlier one has gone). A
//! slow client that keeps reading is never cut: each write that progresses restarts the
//! clock.
//!
//! A connection holds one of `max_connections` slots until it closes; while none is
//! free, no connection is accepted (the kernel's listen backlog keeps them), and the
//! timeouts free slots however the clients behave.
//!
//! Layout: this module accepts and serves the connections; `limits` holds the limits,
//! `stage` what a connection is doing (its watch, and the socket that reports to it),
//! `bodies` the request and response bodies that time and report a request.

mod bodies;
mod limits;
mod stage;

pub use self::limits::ConnectionLimits;

use self::bodies::{Answered, Deadline};
use self::stage::{Stage, Watch, Watched};
use crate::http::error::ApiError;
use axum::body::{Body, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;
use tower::ServiceExt as _;

/// Serves `app` on the connections of `listener`, within `limits`, until `shutdown`
/// resolves; then stops accepting, lets each connection finish the request it is
/// handling, and returns once every connection is closed.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let max = limits.max_connections.max(1);
    let slots = Arc::new(Semaphore::new(max as usize));
    let (stop, stopping) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    loop {
        // A slot first: while every one is taken, connections wait in the backlog.
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(error).await;
                    continue;
                }
            },
        };
        let connection = Connection {
            app: app.clone(),
            peer,
            limits,
            stopping: stopping.clone(),
            _slot: slot,
        };
        tokio::spawn(connection.serve(stream));
    }
    drop(listener);
    // Connections finish their requests and close; each returns its slot as it does.
    let _ = stop.send(true);
    let _all_returned = slots.acquire_many(max).await;
}

/// After an accept failed: a connection reset before it was accepted is nothing; out of
/// file descriptors (EMFILE) and the like, the next accept would fail at once too, so it
/// waits a little for connections to close (the timeouts close them).
async fn accept_failed(error: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!(%error, "accepting a connection failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// One accepted connection.
struct Connection {
    app: axum::Router,
    peer: SocketAddr,
    limits: ConnectionLimits,
    /// Turns true when the server stops.
    stopping: watch::Receiver<bool>,
    /// Held until the connection closes.
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    /// Serves the connection's requests until the client closes it, a stage takes longer
    /// than its limit (then it is dropped: closed), or the server stops.
    async fn serve(mut self, stream: TcpStream) {
        let stage = Arc::new(Watch::new());
        let io = TokioIo::new(Watched {
            stream,
            stage: stage.clone(),
        });
        let (app, peer, limits) = (self.app.clone(), self.peer, self.limits);
        let service_stage = stage.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            // The head is in: from here the handler, and the body's own deadline.
            service_stage.set(Stage::Handling(Instant::now()));
            answer(app.clone(), peer, limits, service_stage.clone(), request)
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        // The watch times the head; hyper's own timer is not set.
        builder.header_read_timeout(None);
        let mut connection = pin!(builder.serve_connection(io, service));
        let mut stopping = *self.stopping.borrow();
        if stopping {
            connection.as_mut().graceful_shutdown();
        }
        loop {
            let deadline = stage.deadline(&limits);
            let changed = stage.changed.notified();
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%error, peer = %self.peer, "connection ended");
                    }
                    return;
                }
                () = until(deadline) => {
                    if stage.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                        tracing::debug!(peer = %self.peer, "connection timed out");
                        return;
                    }
                }
                () = changed => {}
                _ = self.stopping.changed(), if !stopping => {
                    stopping = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Resolves at `deadline`; never without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Answers one request: the router's response, or `408` (closing the connection) when
/// the body did not arrive in time. The request carries the peer's address (for the
/// per-address limits); the response tells the watch when it has gone.
async fn answer(
    app: axum::Router,
    peer: SocketAddr,
    limits: ConnectionLimits,
    stage: Arc<Watch>,
    request: Request<Incoming>,
) -> Result<Response<Body>, std::convert::Infallible> {
    let late = Arc::new(AtomicBool::new(false));
    let mut request = request.map(|body| {
        if body.is_end_stream() {
            Body::new(body)
        } else {
            Body::new(Deadline {
                body,
                expiry: Box::pin(tokio::time::sleep(limits.body_timeout)),
                late: late.clone(),
            })
        }
    });
    request.extensions_mut().insert(ConnectInfo(peer));
    let response = match app.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let response = if late.load(Ordering::Relaxed) {
        let seconds = limits.body_timeout.as_secs_f64();
        let message = format!("the request body did not arrive within {seconds} s");
        let mut response =
            ApiError::new(StatusCode::REQUEST_TIMEOUT, "request_timeout", message).into_response();
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    } else {
        response
    };
    // The handler is done: from here only the writes are timed (while they stall).
    stage.set(Stage::Responding);
    Ok(response.map(|body| Body::new(Answered { body, stage })))
}
