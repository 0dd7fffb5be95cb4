//! The correlation id of the work in progress (an HTTP request, or the event a projector
//! is applying), for the events of commands whose caller built their `CommandMeta`
//! without one (the webhooks find their user inside the command; a wearable
//! subscription syncs on behalf of an event). The HTTP layer and the projector
//! runtime run their work inside [`scope`]; an explicit `CommandMeta::correlation_id`
//! always wins.

use std::future::Future;

tokio::task_local! {
    static CURRENT: String;
}

/// Runs `work` with `id` as the correlation id of what it records.
pub async fn scope<F: Future>(id: String, work: F) -> F::Output {
    CURRENT.scope(id, work).await
}

/// The correlation id of the work in progress, if any.
pub fn current() -> Option<String> {
    CURRENT.try_with(Clone::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn inside_a_scope_its_id_outside_none() {
        assert_eq!(current(), None);
        let inside = scope("abc".into(), async { current() }).await;
        assert_eq!(inside.as_deref(), Some("abc"));
        assert_eq!(current(), None);
    }
}
