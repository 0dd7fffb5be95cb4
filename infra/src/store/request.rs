//! The shapes of requests to the port: conditions, updates, transaction actions and
//! queries, and the page a query returns.

use super::{Cursor, Item, Key};
use events_schema::Context;
use events_schema::keys::prefix;
use events_schema::tables::{self, GsiDef};
use events_schema::time::Day;
use serde_json::Value;

/// DynamoDB's limit on actions in one `TransactWriteItems`.
pub const MAX_TRANSACTION_ACTIONS: usize = 100;

/// A condition on the current item, checked atomically with the write.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// An item with this key exists.
    ItemExists,
    /// No item with this key exists.
    ItemNotExists,
    AttributeExists(String),
    AttributeNotExists(String),
    /// The attribute exists and equals the value.
    AttributeEquals(String, Value),
    /// The item's `version` attribute equals this number.
    VersionEquals(u64),
    /// The write is newer than what is stored: no item, no `attr`, or a numeric `attr`
    /// below `version`. Projections use it so a redelivered or late event changes nothing.
    Newer {
        attr: String,
        version: u64,
    },
    /// Every condition holds.
    All(Vec<Condition>),
}

/// Attributes to set, numbers to add to and attributes to remove. Key attributes cannot
/// be changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Update {
    pub set: Item,
    pub remove: Vec<String>,
    /// Numbers added to attributes (an absent one counts as 0), atomically: two
    /// updates at once each add theirs (a counter shared by processes).
    pub add: Vec<(String, i64)>,
}

impl Update {
    pub fn add(mut self, attr: impl Into<String>, by: i64) -> Self {
        self.add.push((attr.into(), by));
        self
    }

    pub fn set(mut self, attr: impl Into<String>, value: impl Into<Value>) -> Self {
        self.set.insert(attr.into(), value.into());
        self
    }

    pub fn remove(mut self, attr: impl Into<String>) -> Self {
        self.remove.push(attr.into());
        self
    }

    /// The item this update leaves at `key`, given the `current` one (None: created
    /// from the key). Backends that apply updates themselves use it (the embedded store,
    /// the buffered view); key attributes cannot be set or removed.
    pub fn applied_to(&self, key: &Key, current: Option<&Item>) -> Result<Item, crate::StoreError> {
        use events_schema::tables::{PK, SK};
        let mut item = current.cloned().unwrap_or_else(|| key.to_item());
        for (attr, value) in &self.set {
            if attr == PK || attr == SK {
                return Err(crate::StoreError::Validation(format!(
                    "cannot update key attribute {attr}"
                )));
            }
            item.insert(attr.clone(), value.clone());
        }
        for attr in &self.remove {
            if attr == PK || attr == SK {
                return Err(crate::StoreError::Validation(format!(
                    "cannot remove key attribute {attr}"
                )));
            }
            item.remove(attr);
        }
        for (attr, by) in &self.add {
            let sum = match item.get(attr) {
                None => Some(*by),
                Some(Value::Number(n)) => n.as_i64().and_then(|n| n.checked_add(*by)),
                Some(_) => None,
            };
            let sum = sum.filter(|_| attr != PK && attr != SK).ok_or_else(|| {
                crate::StoreError::Validation(format!("cannot add {by} to attribute {attr}"))
            })?;
            item.insert(attr.clone(), sum.into());
        }
        Ok(item)
    }
}

/// One action of a transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum TransactAction {
    Put {
        table: Context,
        item: Item,
        condition: Option<Condition>,
    },
    Update {
        table: Context,
        key: Key,
        update: Update,
        condition: Option<Condition>,
    },
    Delete {
        table: Context,
        key: Key,
        condition: Option<Condition>,
    },
    ConditionCheck {
        table: Context,
        key: Key,
        condition: Condition,
    },
}

impl TransactAction {
    pub fn table(&self) -> Context {
        match self {
            TransactAction::Put { table, .. }
            | TransactAction::Update { table, .. }
            | TransactAction::Delete { table, .. }
            | TransactAction::ConditionCheck { table, .. } => *table,
        }
    }

    pub fn condition(&self) -> Option<&Condition> {
        match self {
            TransactAction::Put { condition, .. }
            | TransactAction::Update { condition, .. }
            | TransactAction::Delete { condition, .. } => condition.as_ref(),
            TransactAction::ConditionCheck { condition, .. } => Some(condition),
        }
    }
}

/// One unconditional write of a batch ([`crate::Store::write_batch`]).
#[derive(Debug, Clone, PartialEq)]
pub enum BatchWrite {
    Put(Item),
    Delete(Key),
}

impl BatchWrite {
    /// The key written.
    pub fn key(&self) -> Result<Key, crate::StoreError> {
        match self {
            BatchWrite::Put(item) => Key::of(item),
            BatchWrite::Delete(key) => Ok(key.clone()),
        }
    }

    /// As an action of a transaction on `table`.
    pub fn into_action(self, table: Context) -> TransactAction {
        match self {
            BatchWrite::Put(item) => TransactAction::Put {
                table,
                item,
                condition: None,
            },
            BatchWrite::Delete(key) => TransactAction::Delete {
                table,
                key,
                condition: None,
            },
        }
    }
}

/// `writes` as transaction actions on `table`, in chunks of at most `size`.
pub fn batch_chunks(
    table: Context,
    writes: Vec<BatchWrite>,
    size: usize,
) -> impl Iterator<Item = Vec<TransactAction>> {
    let mut writes = writes
        .into_iter()
        .map(move |w| w.into_action(table))
        .peekable();
    std::iter::from_fn(move || {
        writes.peek()?;
        Some(writes.by_ref().take(size.max(1)).collect())
    })
}

/// A condition on the sort key of a query (or the index sort key of an index query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortKeyCondition {
    Equals(String),
    BeginsWith(String),
    /// Both bounds inclusive.
    Between(String, String),
    LessThan(String),
    LessOrEqual(String),
    GreaterThan(String),
    GreaterOrEqual(String),
}

impl SortKeyCondition {
    /// The rows of `kind` (a sort key prefix such as `WORKOUT#`) on the days `from` to
    /// `to`, both whole.
    pub fn days(kind: &str, from: Day, to: Day) -> Self {
        Self::Between(format!("{kind}{from}"), prefix::day_end(kind, to))
    }

    /// The rows of `kind` on every day up to `day`, `day` included.
    pub fn up_to_day(kind: &str, day: Day) -> Self {
        Self::Between(kind.to_owned(), prefix::day_end(kind, day))
    }

    /// Whether a sort key satisfies the condition (byte order, as DynamoDB).
    pub fn matches(&self, sk: &str) -> bool {
        match self {
            SortKeyCondition::Equals(v) => sk == v,
            SortKeyCondition::BeginsWith(p) => sk.starts_with(p.as_str()),
            SortKeyCondition::Between(lo, hi) => lo.as_str() <= sk && sk <= hi.as_str(),
            SortKeyCondition::LessThan(v) => sk < v.as_str(),
            SortKeyCondition::LessOrEqual(v) => sk <= v.as_str(),
            SortKeyCondition::GreaterThan(v) => sk > v.as_str(),
            SortKeyCondition::GreaterOrEqual(v) => sk >= v.as_str(),
        }
    }
}

/// A query of one partition of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub pk: String,
    pub sort_key: Option<SortKeyCondition>,
    /// Ascending sort-key order when true.
    pub forward: bool,
    /// At most this many items in the page.
    pub limit: Option<usize>,
    /// Where the previous page stopped.
    pub cursor: Option<Cursor>,
    pub consistent: bool,
}

impl Query {
    pub fn partition(pk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sort_key: None,
            forward: true,
            limit: None,
            cursor: None,
            consistent: false,
        }
    }

    /// The sort key the query resumes after: the one its cursor names, which must be a
    /// cursor of this partition (None without a cursor).
    pub fn resume_after(&self) -> Result<Option<String>, crate::StoreError> {
        use events_schema::tables::{PK, SK};
        let Some(cursor) = &self.cursor else {
            return Ok(None);
        };
        let key = cursor.to_key(&[PK, SK])?;
        if key.get(PK) != Some(&self.pk) {
            return Err(crate::StoreError::Validation(
                "the cursor is not valid for this query".into(),
            ));
        }
        Ok(key.get(SK).cloned())
    }

    pub fn consistent(mut self) -> Self {
        self.consistent = true;
        self
    }
}

/// A query of one partition of a secondary index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexQuery {
    pub index: String,
    /// The value of the index's partition key attribute.
    pub pk: String,
    /// A condition on the index's sort key attribute.
    pub sort_key: Option<SortKeyCondition>,
    pub forward: bool,
    pub limit: Option<usize>,
    pub cursor: Option<Cursor>,
}

impl IndexQuery {
    /// The index of `table` the query reads, if the table has it and the query's sort
    /// key condition is one the index can take (an index without a sort key takes
    /// none): every backend's first check.
    pub fn index_of(&self, table: Context) -> Result<&'static GsiDef, crate::StoreError> {
        let gsi = table_index(table, &self.index)?;
        if gsi.sort_key.is_none() && self.sort_key.is_some() {
            return Err(crate::StoreError::Validation(format!(
                "index {} has no sort key",
                gsi.name
            )));
        }
        Ok(gsi)
    }

    pub fn partition(index: impl Into<String>, pk: impl Into<String>) -> Self {
        Self {
            index: index.into(),
            pk: pk.into(),
            sort_key: None,
            forward: true,
            limit: None,
            cursor: None,
        }
    }
}

/// The builder methods a query of a table and a query of an index share: which sort
/// keys, in which order, how many, and after which cursor.
macro_rules! range_builders {
    ($($query:ty),+) => {$(
        impl $query {
            /// Only the items whose sort key satisfies `condition`.
            pub fn sort_key(mut self, condition: SortKeyCondition) -> Self {
                self.sort_key = Some(condition);
                self
            }

            /// Descending sort-key order.
            pub fn reverse(mut self) -> Self {
                self.forward = false;
                self
            }

            /// At most `limit` items in the page.
            pub fn limit(mut self, limit: usize) -> Self {
                self.limit = Some(limit);
                self
            }

            /// Resumes after `cursor`, the previous page's (from the start if `None`).
            pub fn after(mut self, cursor: Option<Cursor>) -> Self {
                self.cursor = cursor;
                self
            }
        }
    )+};
}

range_builders!(Query, IndexQuery);

/// The index `name` of `table`, or a validation error naming both.
fn table_index(table: Context, name: &str) -> Result<&'static GsiDef, crate::StoreError> {
    tables::table(table)
        .gsi(name)
        .ok_or_else(|| crate::StoreError::Validation(format!("table {table} has no index {name}")))
}

/// A full read of a table or one of its indexes, one page at a time, in key order. For
/// operators' tools (replay, residue), never for a request: it reads everything.
/// Unlike queries it also returns items whose TTL has passed but that are still stored.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// An index of the table instead of the table itself.
    pub index: Option<String>,
    /// At most this many items in the page.
    pub limit: Option<usize>,
    /// Where the previous page stopped.
    pub cursor: Option<Cursor>,
}

impl Scan {
    /// The index the scan reads (`None`: the table itself), if `table` has it.
    pub fn index_of(&self, table: Context) -> Result<Option<&'static GsiDef>, crate::StoreError> {
        let index = self.index.as_deref();
        index.map(|name| table_index(table, name)).transpose()
    }
}

/// One page of query results. `cursor` is set when more items may follow; pass it to
/// the next query. A page may hold fewer items than the limit and still have a cursor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub items: Vec<Item>,
    pub cursor: Option<Cursor>,
}

impl Condition {
    /// Whether the condition holds on `current` (None when no item has the key).
    /// The embedded backend evaluates conditions with this; DynamoDB evaluates the
    /// equivalent expression server-side.
    pub fn holds(&self, current: Option<&Item>) -> bool {
        use events_schema::tables::VERSION;
        match self {
            Condition::ItemExists => current.is_some(),
            Condition::ItemNotExists => current.is_none(),
            Condition::AttributeExists(attr) => current.is_some_and(|i| i.contains_key(attr)),
            Condition::AttributeNotExists(attr) => !current.is_some_and(|i| i.contains_key(attr)),
            Condition::AttributeEquals(attr, value) => current
                .and_then(|i| i.get(attr))
                .is_some_and(|v| v == value),
            Condition::VersionEquals(version) => current
                .and_then(|i| i.get(VERSION))
                .and_then(Value::as_u64)
                .is_some_and(|v| v == *version),
            Condition::Newer { attr, version } => match current.and_then(|i| i.get(attr)) {
                None => true,
                Some(stored) => stored.as_u64().is_some_and(|v| v < *version),
            },
            Condition::All(all) => all.iter().all(|c| c.holds(current)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(raw: &str) -> Day {
        Day::parse(raw).expect("a day")
    }

    #[test]
    fn a_range_of_days_holds_both_whole_end_days_and_nothing_else() {
        let range = SortKeyCondition::days("WORKOUT#", day("2026-03-02"), day("2026-03-04"));
        for inside in [
            "WORKOUT#2026-03-02",
            "WORKOUT#2026-03-02#01ARZ",
            "WORKOUT#2026-03-04#zzzz",
            "WORKOUT#2026-03-04#\u{FFFF}",
        ] {
            assert!(range.matches(inside), "{inside}");
        }
        for outside in [
            "WORKOUT#2026-03-01#zzzz",
            "WORKOUT#2026-03-05",
            "WORKOUT#2026-03-05#01ARZ",
            "SLEEP#2026-03-03#01ARZ",
        ] {
            assert!(!range.matches(outside), "{outside}");
        }
        let up_to = SortKeyCondition::up_to_day("DAILY#", day("2026-03-04"));
        assert!(up_to.matches("DAILY#2020-01-01") && up_to.matches("DAILY#2026-03-04"));
        assert!(!up_to.matches("DAILY#2026-03-05") && !up_to.matches("DAILX#2026-03-01"));
    }
}
