//! The bodies that time and report a request: the request's ([`Deadline`]: it fails once
//! the body timeout has passed) and the response's ([`Answered`]: it tells the watch when
//! the response has gone).

use super::stage::{Stage, Watch};
use axum::body::{Body, Bytes, HttpBody};
use hyper::body::{Frame, Incoming, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use tokio::time::{Instant, Sleep};

/// A request body that fails once its deadline has passed, noting it in `late`.
pub(super) struct Deadline {
    pub(super) body: Incoming,
    pub(super) expiry: Pin<Box<Sleep>>,
    pub(super) late: Arc<AtomicBool>,
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
pub(super) struct Answered {
    pub(super) body: Body,
    pub(super) stage: Arc<Watch>,
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
