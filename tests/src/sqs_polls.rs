//! SQS as a reader of a queue may meet it, for the tests of the passes over a queue
//! (an erasure's sweep of a dead-letter queue, `vitals redrive-failures`): an SDK
//! interceptor that answers the first short poll empty, or leaves every received message
//! visible again at once.

use aws_sdk_sqs::config::interceptors::{
    BeforeDeserializationInterceptorContextMut, BeforeTransmitInterceptorContextMut,
};
use aws_sdk_sqs::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_sqs::error::BoxError;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What a pass over a queue meets. `miss_first_short_poll`: the first short-polled
/// receive (no `WaitTimeSeconds`) is answered empty, as SQS's documentation says a short
/// poll that asked only some of its servers may be, and leaves what it did receive
/// visible (its visibility timeout set to 0), as a poll of the other servers would have.
/// `reappear_at_once`: every receive leaves what it received visible again at once, as a
/// pass longer than the visibility timeout sees it. `receives` counts the receives.
#[derive(Debug, Clone, Default)]
pub struct SqsPolls {
    miss_first_short_poll: bool,
    reappear_at_once: bool,
    pub receives: Arc<AtomicUsize>,
    missed: Arc<AtomicBool>,
    missing: Arc<AtomicBool>,
}

impl SqsPolls {
    /// Only the first short poll answered empty.
    pub fn missing_the_first_short_poll() -> Self {
        Self {
            miss_first_short_poll: true,
            ..Self::default()
        }
    }

    /// Every received message visible again at once.
    pub fn reappearing_at_once() -> Self {
        Self {
            reappear_at_once: true,
            ..Self::default()
        }
    }
}

impl Intercept for SqsPolls {
    fn name(&self) -> &'static str {
        "SqsPolls"
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        let target = request.headers().get("x-amz-target").unwrap_or_default();
        if !target.ends_with(".ReceiveMessage") {
            return Ok(());
        }
        self.receives.fetch_add(1, Ordering::SeqCst);
        let mut body: Value = request
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        let short_poll = body["WaitTimeSeconds"].as_i64().unwrap_or(0) == 0;
        let miss =
            self.miss_first_short_poll && short_poll && !self.missed.swap(true, Ordering::SeqCst);
        self.missing.store(miss, Ordering::SeqCst);
        if miss || self.reappear_at_once {
            body["VisibilityTimeout"] = json!(0);
            let body = body.to_string();
            request
                .headers_mut()
                .insert("content-length", body.len().to_string());
            *request.body_mut() = body.into();
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if self.missing.swap(false, Ordering::SeqCst) {
            *context.response_mut().body_mut() = String::from("{}").into();
        }
        Ok(())
    }
}
