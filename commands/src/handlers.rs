//! The handlers of one context: its table, the outside services its commands call (the
//! wearable providers for integrations, none for the other contexts built on it), the
//! clock they tell time by and the per-user write locks they take (by default, the
//! process's). Each context's module adds its commands to `Handlers<ItsContext>`
//! (`ActivityCommands` is `Handlers<Activity>`), so its commands reach their own table
//! only. The environment's reading cache is a struct of its own: it needs neither
//! clock nor locks.

use crate::CommandError;
use crate::items::from_item;
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic;
use crate::outbox::{envelope, event_action};
use crate::serial::Writers;
use events_schema::envelope::{EventEnvelope, EventPayload};
use events_schema::time::{Clock, Timestamp};
use infra::store::{Condition, Item, Key};
use infra::table::{Action, ContextTable, Table};
use serde::Serialize;
use serde::de::DeserializeOwned;

#[derive(Clone)]
pub struct Handlers<C: ContextTable, S = ()> {
    pub(crate) table: Table<C>,
    pub(crate) services: S,
    pub(crate) clock: Clock,
    pub(crate) writers: Writers,
}

// By hand: the services need not be `Debug` (a provider holds its secret).
impl<C: ContextTable, S> std::fmt::Debug for Handlers<C, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("table", &self.table)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl<C: ContextTable> Handlers<C> {
    pub fn new(table: Table<C>) -> Self {
        Self {
            table,
            services: (),
            clock: Clock::System,
            writers: Writers::process(),
        }
    }
}

impl<C: ContextTable, S> Handlers<C, S> {
    /// The same handlers, their commands calling `services`.
    pub fn with_services<T>(self, services: T) -> Handlers<C, T> {
        let Self {
            table,
            clock,
            writers,
            ..
        } = self;
        Handlers {
            table,
            services,
            clock,
            writers,
        }
    }

    /// The same handlers, telling time by `clock`.
    pub fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }

    /// The same handlers, taking `writers`' per-user locks instead of the process's
    /// (given [`Writers::separate`], they write as another process would).
    pub fn with_writers(self, writers: Writers) -> Self {
        Self { writers, ..self }
    }

    /// The item at `key` (a strongly consistent read), or [`CommandError::NotFound`]
    /// naming `what`.
    pub(crate) async fn existing(
        &self,
        key: &Key,
        what: &'static str,
    ) -> Result<Item, CommandError> {
        let item = self.table.get(key, true).await?;
        item.ok_or(CommandError::NotFound(what))
    }

    /// The record at `key`, decoded, or [`CommandError::NotFound`] naming `what`.
    pub(crate) async fn record<T: DeserializeOwned>(
        &self,
        key: &Key,
        what: &'static str,
    ) -> Result<T, CommandError> {
        from_item(self.existing(key, what).await?)
    }

    /// What every command that creates one record does: under the user's writer, the
    /// new `item` (it must not exist yet) and the event of `payload` at `occurred_at`,
    /// in one transaction, idempotent by the command's key; `answer` is what it returns
    /// (and what a retry is answered with).
    pub(crate) async fn create<P: EventPayload, T: Serialize + DeserializeOwned + Clone>(
        &self,
        meta: &CommandMeta,
        item: Item,
        (occurred_at, payload): (Timestamp, &P),
        input: &impl Serialize,
        answer: T,
    ) -> Result<Outcome<T>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        let event = envelope(meta, &self.clock, occurred_at, payload)?;
        let pk = meta.user_pk();
        let actions = vec![
            Action::Put {
                item,
                condition: Some(Condition::ItemNotExists),
            },
            event_action(&pk, &event)?,
        ];
        optimistic::commit_through_conflicts(&self.table, meta, &pk, input, actions, answer)
            .await?
            .or_unexpected()
    }

    /// The event of `payload`, occurring now.
    pub(crate) fn event_now<P: EventPayload>(
        &self,
        meta: &CommandMeta,
        payload: &P,
    ) -> Result<EventEnvelope, CommandError> {
        envelope(meta, &self.clock, self.clock.now(), payload)
    }
}
