//! What a connection is doing and since when ([`Stage`]), the watch that knows it and
//! says when the connection has taken too long ([`Watch`]), and the socket that tells
//! the watch when bytes arrive and when writes stall ([`Watched`]).

use super::limits::{ConnectionLimits, HANDLER_SLACK};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

/// What a connection is doing, and since when.
#[derive(Debug, Clone, Copy)]
pub(super) enum Stage {
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
pub(super) struct Watch {
    stage: Mutex<Stage>,
    /// Since when writes have not progressed (the client does not read), if they stall.
    stalled_since: Mutex<Option<Instant>>,
    /// Signalled on every change of stage or stall (the task's deadline moves).
    pub(super) changed: Notify,
}

impl Watch {
    pub(super) fn new() -> Self {
        Self {
            stage: Mutex::new(Stage::Head(Instant::now())),
            stalled_since: Mutex::new(None),
            changed: Notify::new(),
        }
    }

    pub(super) fn set(&self, stage: Stage) {
        *self.stage.lock().unwrap_or_else(PoisonError::into_inner) = stage;
        self.changed.notify_one();
    }

    /// Bytes arrived: after an idle wait, they start a request's head.
    pub(super) fn received(&self) {
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
    pub(super) fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
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
pub(super) struct Watched {
    pub(super) stream: TcpStream,
    pub(super) stage: Arc<Watch>,
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
