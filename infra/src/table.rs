//! Typed table handles: `Table<Nutrition>` can read and write the nutrition table and
//! nothing else. Command handlers receive only the handle of their own context, so
//! writing another context's table does not compile, as IAM forbids it in production.

use crate::store::{
    Condition, IndexQuery, Item, Key, Page, Query, Store, StoreError, TransactAction, Update,
};
use events_schema::Context;
use std::marker::PhantomData;
use std::sync::Arc;

/// A context, as a type.
pub trait ContextTable: Send + Sync + 'static {
    const CONTEXT: Context;
}

/// The nine contexts as types.
pub mod contexts {
    use super::ContextTable;
    use events_schema::Context;

    macro_rules! context_type {
        ($($name:ident),*) => {$(
            #[derive(Debug, Clone, Copy)]
            pub struct $name;
            impl ContextTable for $name {
                const CONTEXT: Context = Context::$name;
            }
        )*};
    }

    context_type!(
        Identity,
        Nutrition,
        Activity,
        Sleep,
        Goals,
        Integrations,
        Environment,
        Insights,
        Dashboard
    );
}

/// One action of a transaction on a context's own table.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Put {
        item: Item,
        condition: Option<Condition>,
    },
    Update {
        key: Key,
        update: Update,
        condition: Option<Condition>,
    },
    Delete {
        key: Key,
        condition: Option<Condition>,
    },
    Check {
        key: Key,
        condition: Condition,
    },
}

impl Action {
    /// Whether the action is on the item with `key`.
    pub fn targets(&self, key: &Key) -> bool {
        match self {
            Action::Put { item, .. } => Key::of(item).is_ok_and(|k| &k == key),
            Action::Update { key: k, .. }
            | Action::Delete { key: k, .. }
            | Action::Check { key: k, .. } => k == key,
        }
    }

    fn on(self, table: Context) -> TransactAction {
        match self {
            Action::Put { item, condition } => TransactAction::Put {
                table,
                item,
                condition,
            },
            Action::Update {
                key,
                update,
                condition,
            } => TransactAction::Update {
                table,
                key,
                update,
                condition,
            },
            Action::Delete { key, condition } => TransactAction::Delete {
                table,
                key,
                condition,
            },
            Action::Check { key, condition } => TransactAction::ConditionCheck {
                table,
                key,
                condition,
            },
        }
    }
}

/// The handle of one context's table. A handle is typed by its context, so code given a
/// nutrition handle cannot pass it where an activity handle is needed:
///
/// ```compile_fail
/// use infra::table::{Table, contexts::{Activity, Nutrition}};
/// fn record_workout(_activity: &Table<Activity>) {}
/// fn nutrition_handler(nutrition: &Table<Nutrition>) {
///     record_workout(nutrition); // error: expected `Table<Activity>`
/// }
/// ```
///
/// while the same code with the right handle compiles:
///
/// ```
/// use infra::table::{Table, contexts::Activity};
/// fn record_workout(_activity: &Table<Activity>) {}
/// fn activity_handler(activity: &Table<Activity>) {
///     record_workout(activity);
/// }
/// ```
pub struct Table<C: ContextTable> {
    store: Arc<dyn Store>,
    _context: PhantomData<fn() -> C>,
}

impl<C: ContextTable> Clone for Table<C> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            _context: PhantomData,
        }
    }
}

impl<C: ContextTable> std::fmt::Debug for Table<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Table<{}>({})", C::CONTEXT, self.store.backend())
    }
}

impl<C: ContextTable> Table<C> {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            _context: PhantomData,
        }
    }

    pub fn context(&self) -> Context {
        C::CONTEXT
    }

    pub async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        self.store.get(C::CONTEXT, key, consistent).await
    }

    pub async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.store.query(C::CONTEXT, query).await
    }

    pub async fn query_index(&self, query: &IndexQuery) -> Result<Page, StoreError> {
        self.store.query_index(C::CONTEXT, query).await
    }

    pub async fn put(&self, item: Item, condition: Option<Condition>) -> Result<(), StoreError> {
        self.store.put(C::CONTEXT, item, condition).await
    }

    pub async fn update(
        &self,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        self.store.update(C::CONTEXT, key, update, condition).await
    }

    pub async fn delete(
        &self,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        self.store.delete(C::CONTEXT, key, condition).await
    }

    /// All actions or none, all on this table.
    pub async fn transact(&self, actions: Vec<Action>) -> Result<(), StoreError> {
        self.store
            .transact(actions.into_iter().map(|a| a.on(C::CONTEXT)).collect())
            .await
    }

    pub async fn drain_partition_page(
        &self,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        self.store
            .drain_partition_page(C::CONTEXT, pk, page_size)
            .await
    }

    /// Deletes every item of a partition, page by page (see
    /// [`crate::store::drain_partition`]); returns how many.
    pub async fn drain_partition(&self, pk: &str) -> Result<usize, StoreError> {
        crate::store::drain_partition(&*self.store, C::CONTEXT, pk).await
    }
}
