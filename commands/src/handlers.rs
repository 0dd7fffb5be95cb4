//! The handlers of one context: its table and the clock they tell time by. Each
//! context's module adds its commands to `Handlers<ItsContext>` (`ActivityCommands` is
//! `Handlers<Activity>`), so its commands reach their own table only.

use events_schema::time::Clock;
use infra::table::{ContextTable, Table};

#[derive(Debug, Clone)]
pub struct Handlers<C: ContextTable> {
    pub(crate) table: Table<C>,
    pub(crate) clock: Clock,
}

impl<C: ContextTable> Handlers<C> {
    pub fn new(table: Table<C>) -> Self {
        Self {
            table,
            clock: Clock::System,
        }
    }

    /// The same handlers, telling time by `clock`.
    pub fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }
}
