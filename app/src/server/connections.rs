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
//!   only bounded, generously ([`HANDLER_SLACK`] beyond the body timeout), so one stuck
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

use crate::http::error::ApiError;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::{Instant, Sleep};
use tower::ServiceExt as _;

/// How long each stage of a connection may take, and how many connections are served at
/// once (`vitals serve` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From a connection's acceptance, or the first byte of a request on a kept-alive
    /// connection, to the end of the request's head.
    pub header_timeout: Duration,
    /// From the end of a request's head to the end of its body.
    pub body_timeout: Duration,
    /// A kept-alive connection's wait for its next request.
    pub idle_timeout: Duration,
    /// Connections served at once.
    pub max_connections: u32,
}

/// How long a handler may take beyond the body timeout (from the end of the request's
/// head) before its connection is closed unanswered: not a limit any normal request
/// comes near, only a bound, so a stuck handler cannot hold its slot for ever.
const HANDLER_SLACK: Duration = Duration::from_secs(90);

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            // Longer than a load balancer's usual idle timeout (60 s on AWS): the balancer
            // closes an idle connection first, so it never sends a request on one this
            // server is closing.
            idle_timeout: Duration::from_secs(75),
            max_connections: 1024,
        }
    }
}

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

/// What a connection is doing, and since when.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// Waiting for a request's head, or reading it (since the acceptance, or the first
    /// byte after an idle wait).
    Head(Instant),
    /// Handling a request since the end of its head (its body timed by [`Deadline`],
    /// the handler bounded by [`HANDLER_SLACK`]).
    Handling(Instant),
    /// Sending the response the handler returned (timed only while writes stall).
    Responding,
    /// Waiting for the next request since the last response went.
    Idle(Instant),
}

/// A connection's stage, shared by its IO, its service and its task.
struct Watch {
    stage: Mutex<Stage>,
    /// Since when writes have not progressed (the client does not read), if they stall.
    stalled_since: Mutex<Option<Instant>>,
    /// Signalled on every change of stage or stall (the task's deadline moves).
    changed: Notify,
}

impl Watch {
    fn new() -> Self {
        Self {
            stage: Mutex::new(Stage::Head(Instant::now())),
            stalled_since: Mutex::new(None),
            changed: Notify::new(),
        }
    }

    fn set(&self, stage: Stage) {
        *self.stage.lock().unwrap_or_else(PoisonError::into_inner) = stage;
        self.changed.notify_one();
    }

    /// Bytes arrived: after an idle wait, they start a request's head.
    fn received(&self) {
        let mut stage = self.stage.lock().unwrap_or_else(PoisonError::into_inner);
        if let Stage::Idle(_) = *stage {
            *stage = Stage::Head(Instant::now());
            drop(stage);
            self.changed.notify_one();
        }
    }

    /// A write could not go (the socket's send buffer is full): a stall starts, unless
    /// one has.
    fn write_stalled(&self) {
        let mut stalled = self
            .stalled_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if stalled.is_none() {
            *stalled = Some(Instant::now());
            drop(stalled);
            self.changed.notify_one();
        }
    }

    /// A write went (some bytes at least): no stall.
    fn wrote(&self) {
        let mut stalled = self
            .stalled_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if stalled.take().is_some() {
            drop(stalled);
            self.changed.notify_one();
        }
    }

    /// When the current stage has lasted too long, or writes have stalled too long
    /// (whichever comes first).
    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        let stage = match *self.stage.lock().unwrap_or_else(PoisonError::into_inner) {
            Stage::Head(since) => Some(since + limits.header_timeout),
            Stage::Handling(since) => Some(since + limits.body_timeout + HANDLER_SLACK),
            Stage::Responding => None,
            Stage::Idle(since) => Some(since + limits.idle_timeout),
        };
        let stalled = *self
            .stalled_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let stall = stalled.map(|since| since + limits.body_timeout);
        match (stage, stall) {
            (Some(stage), Some(stall)) => Some(stage.min(stall)),
            (stage, stall) => stage.or(stall),
        }
    }
}

/// The connection's socket, telling its watch when bytes arrive, and when writes stall
/// (`Pending`: the client's window is shut) or progress.
struct Watched {
    stream: TcpStream,
    stage: Arc<Watch>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.stage.received();
        }
        read
    }
}

impl Watched {
    /// Tells the watch how a write went: stalled, or progressed.
    fn note(&self, written: &Poll<io::Result<usize>>) {
        match written {
            Poll::Pending => self.stage.write_stalled(),
            Poll::Ready(Ok(n)) if *n > 0 => self.stage.wrote(),
            Poll::Ready(_) => {}
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.note(&written);
        written
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.note(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.stream).poll_flush(cx);
        // A flush that waits is a stall; one that is done is no progress of its own (a
        // socket's always is), so only a write clears a stall.
        if flushed.is_pending() {
            this.stage.write_stalled();
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// A request body that fails once its deadline has passed, noting it in `late`.
struct Deadline {
    body: Incoming,
    expiry: Pin<Box<Sleep>>,
    late: Arc<AtomicBool>,
}

/// The error of a body that did not arrive in time.
#[derive(Debug)]
struct BodyTimedOut;

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimedOut {}

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        // What has arrived is taken first: a body that came in time is never refused
        // because the handler read it late; only a body still awaited past the deadline.
        let frame = Pin::new(&mut this.body)
            .poll_frame(cx)
            .map_err(axum::BoxError::from);
        if frame.is_pending() && this.expiry.as_mut().poll(cx).is_ready() {
            this.late.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut))));
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A response body that tells the watch, when hyper is done with it (the response has
/// gone, or the connection with it), that the connection waits for its next request.
struct Answered {
    body: Body,
    stage: Arc<Watch>,
}

impl HttpBody for Answered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Answered {
    fn drop(&mut self) {
        self.stage.set(Stage::Idle(Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stage_has_its_deadline() {
        let limits = ConnectionLimits::default();
        let watch = Watch::new();
        let head = watch.deadline(&limits).expect("a head is timed");
        assert!(head <= Instant::now() + limits.header_timeout);
        watch.received();
        assert_eq!(
            watch.deadline(&limits),
            Some(head),
            "bytes of the same head"
        );
        let handling = Instant::now();
        watch.set(Stage::Handling(handling));
        let bound = handling + limits.body_timeout + HANDLER_SLACK;
        assert_eq!(watch.deadline(&limits), Some(bound), "a handler is bounded");
        watch.received();
        assert_eq!(watch.deadline(&limits), Some(bound), "bytes of a body");
        watch.set(Stage::Responding);
        assert_eq!(watch.deadline(&limits), None, "a response that goes");
        let idle = Instant::now();
        watch.set(Stage::Idle(idle));
        assert_eq!(watch.deadline(&limits), Some(idle + limits.idle_timeout));
        watch.received();
        let next = watch.deadline(&limits).expect("the next head is timed");
        assert!(next >= idle + limits.header_timeout && next < idle + limits.idle_timeout);
    }

    #[test]
    fn a_stalled_write_is_timed_whatever_the_stage() {
        let limits = ConnectionLimits::default();
        let watch = Watch::new();
        watch.set(Stage::Responding);
        watch.write_stalled();
        let stalled = watch.deadline(&limits).expect("a stall is timed");
        assert!(stalled <= Instant::now() + limits.body_timeout);
        watch.write_stalled();
        assert_eq!(watch.deadline(&limits), Some(stalled), "the same stall");
        watch.set(Stage::Idle(Instant::now()));
        assert_eq!(watch.deadline(&limits), Some(stalled), "sooner than idle");
        watch.set(Stage::Responding);
        watch.wrote();
        assert_eq!(watch.deadline(&limits), None, "a write that went");
    }
}
