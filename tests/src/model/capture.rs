//! A store that records every event it commits: the model test's change feed. It sees
//! what the real feeds see (an outbox item written in a committed write), on any
//! backend, including the events that are removed right after they are written (an
//! eraser's `PartitionDrained`), which reading the outboxes afterwards would miss.

use events_schema::envelope::{EventEnvelope, outbox_event};
use infra::Store;
use infra::observed::{Observed, Observer, Row, Write};
use infra::store::Item;
use std::sync::{Arc, Mutex};

/// The model's store: every request passed on, every committed event recorded.
pub type CapturingStore = Observed<EventCapture>;

/// The [`Observer`] that keeps the committed events.
#[derive(Default)]
pub struct EventCapture {
    events: Mutex<Vec<EventEnvelope>>,
}

/// Wraps `inner`, capturing what is committed through it.
pub fn capturing(inner: Arc<dyn Store>) -> CapturingStore {
    Observed::new(inner, EventCapture::default())
}

impl EventCapture {
    /// The events committed since the last call, in commit order.
    pub fn take(&self) -> Vec<EventEnvelope> {
        self.events
            .lock()
            .map(|mut e| std::mem::take(&mut *e))
            .unwrap_or_default()
    }
}

/// The event an item carries, if it is an outbox item.
fn event_of(item: &Item) -> Option<EventEnvelope> {
    outbox_event(item)?.ok()
}

#[async_trait::async_trait]
impl Observer for EventCapture {
    /// The events the write puts, recorded once it is committed.
    type Note = Vec<EventEnvelope>;

    async fn before(&self, write: Write<'_>) -> Self::Note {
        let put = |row: Row<'_>| match row {
            Row::Put { item, .. } => event_of(item),
            _ => None,
        };
        write.rows().into_iter().filter_map(put).collect()
    }

    fn written(&self, events: Self::Note) {
        if let Ok(mut recorded) = self.events.lock() {
            recorded.extend(events);
        }
    }
}
