//! A call reduced to its shape ([`Shape`]): the table, the operation with its index,
//! order, limit and consistency, the partition key's kind and the sort key's condition
//! (or, for a transaction or batch, the kinds of item it writes). Kinds are interned
//! `'static` text, so a declaration's shape is a `static` built by `const fn`s and a
//! recorded call's compares with it field by field.

use crate::store::{
    BatchWrite, IndexQuery, Key, Query, Scan, SortKeyCondition, TransactAction, Update,
};
use events_schema::Context;
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// A kind, index name or key of a shape. Declarations are `'static` text and a
/// recorded call's are interned ([`intern`]): shapes hold no destructor, so the
/// declarations can be `static` slices built by `const fn`s.
pub type Text = &'static str;

/// `text` as `'static`, each distinct text kept once: the kinds are a small, fixed set
/// (tags, not ids), so what this keeps is bounded.
pub fn intern(text: &str) -> Text {
    static TEXTS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let texts = TEXTS.get_or_init(Mutex::default);
    let Ok(mut texts) = texts.lock() else {
        return "?";
    };
    if let Some(kept) = texts.get(text) {
        return kept;
    }
    let kept: &'static str = Box::leak(text.to_owned().into_boxed_str());
    texts.insert(kept);
    kept
}

/// A transaction's or batch's items as `'static`, each distinct list kept once.
fn intern_items(items: Vec<Written>) -> &'static [Written] {
    static LISTS: OnceLock<Mutex<HashSet<&'static [Written]>>> = OnceLock::new();
    let lists = LISTS.get_or_init(Mutex::default);
    let Ok(mut lists) = lists.lock() else {
        return &[];
    };
    if let Some(kept) = lists.get(items.as_slice()) {
        return kept;
    }
    let kept: &'static [Written] = Box::leak(items.into_boxed_slice());
    lists.insert(kept);
    kept
}

/// The tag of a key: up to and including its first `#` (`<position>#` when it starts
/// with a feed position's digits); for a key without one, up to
/// and including its first `-` (a replay checkpoint's `user-<digest>` scope), or the
/// whole key (`PROFILE`); `<email>` for the `by-email` index's partition key, which is
/// a bare normalized email.
pub fn kind_of(key: &str) -> &str {
    match (key.find('#'), key.find('-')) {
        // A dead letter's id starts with its record's feed position, a number.
        (Some(_), _) if key.starts_with(|c: char| c.is_ascii_digit()) => POSITION,
        (Some(at), _) => &key[..=at],
        (None, _) if key.contains('@') => EMAIL,
        (None, Some(at)) => &key[..=at],
        (None, None) => key,
    }
}

/// The kind of a bare email key (see [`kind_of`]).
pub const EMAIL: &str = "<email>";

/// The kind of a key that starts with a feed position (a dead letter's id,
/// `<digits>.<position>#<pk>#<sk>`; see [`kind_of`]).
pub const POSITION: &str = "<position>#";

fn owned_kind(key: &str) -> Text {
    intern(kind_of(key))
}

/// Which items of a partition a call addresses, by sort key (or index sort key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sk {
    /// One item, of this kind (a get or a single write).
    Exact(Text),
    /// `begins_with` this kind.
    Prefix(Text),
    /// Between two keys of this kind (a range of days, say).
    Range(Text),
    /// Below this literal key (the dashboard's home screen reads `sk < "~"`).
    Below(Text),
    /// From (or after) a key of this kind onwards.
    From(Text),
    /// The whole partition.
    Whole,
}

impl Sk {
    pub const fn exact(kind: &'static str) -> Self {
        Sk::Exact(kind)
    }

    pub const fn prefix(kind: &'static str) -> Self {
        Sk::Prefix(kind)
    }

    pub const fn range(kind: &'static str) -> Self {
        Sk::Range(kind)
    }

    pub const fn below(key: &'static str) -> Self {
        Sk::Below(key)
    }

    pub const fn from(kind: &'static str) -> Self {
        Sk::From(kind)
    }

    /// The shape of a query's sort key condition.
    pub fn of_condition(condition: Option<&SortKeyCondition>) -> Self {
        use SortKeyCondition as C;
        match condition {
            None => Sk::Whole,
            Some(C::Equals(key)) => Sk::Exact(owned_kind(key)),
            Some(C::BeginsWith(prefix)) => Sk::Prefix(owned_kind(prefix)),
            Some(C::Between(low, high)) if kind_of(low) == kind_of(high) => {
                Sk::Range(owned_kind(low))
            }
            // A range across kinds is no declared shape: it is recorded as its low end's
            // kind ranged to the literal high end, which no declaration names.
            Some(C::Between(low, high)) => Sk::Range(intern(&format!("{}..{high}", kind_of(low)))),
            Some(C::LessThan(key) | C::LessOrEqual(key)) => Sk::Below(intern(key)),
            Some(C::GreaterThan(key) | C::GreaterOrEqual(key)) => Sk::From(owned_kind(key)),
        }
    }

    fn describe(&self) -> String {
        match self {
            Sk::Exact(kind) => format!("`{kind}…`"),
            Sk::Prefix(kind) => format!("begins_with `{kind}`"),
            Sk::Range(kind) => format!("between two `{kind}…`"),
            Sk::Below(key) => format!("< `{key}`"),
            Sk::From(kind) => format!(">= `{kind}…`"),
            Sk::Whole => "whole partition".into(),
        }
    }
}

/// A query's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    Forward,
    Backward,
}

impl Order {
    fn of(forward: bool) -> Self {
        if forward {
            Order::Forward
        } else {
            Order::Backward
        }
    }
}

/// One item a transaction or batch writes (or checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Written {
    pub action: Action,
    pub table: Context,
    /// The partition key's kind.
    pub pk: Text,
    /// The sort key's kind.
    pub sk: Text,
    /// In a declaration: whether a call may leave it out (an idempotency record is
    /// written only for a request with a key). A call must write every item its
    /// pattern does not mark optional.
    pub optional: bool,
}

/// What an action of a transaction does to its item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Put,
    Update,
    Delete,
    Check,
}

impl Written {
    pub const fn new(action: Action, table: Context, pk: &'static str, sk: &'static str) -> Self {
        Self {
            action,
            table,
            pk,
            sk,
            optional: false,
        }
    }

    /// The same item, which a call may leave out.
    pub const fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    fn of_key(action: Action, table: Context, key: &Key) -> Self {
        Self {
            action,
            table,
            pk: owned_kind(&key.pk),
            sk: owned_kind(&key.sk),
            optional: false,
        }
    }

    fn of_action(action: &TransactAction) -> Self {
        let (kind, key) = match action {
            TransactAction::Put { item, .. } => (Action::Put, Key::of(item).ok()),
            TransactAction::Update { key, .. } => (Action::Update, Some(key.clone())),
            TransactAction::Delete { key, .. } => (Action::Delete, Some(key.clone())),
            TransactAction::ConditionCheck { key, .. } => (Action::Check, Some(key.clone())),
        };
        let key = key.unwrap_or_else(|| Key::new("?", "?"));
        Self::of_key(kind, action.table(), &key)
    }
}

/// The operation of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Get {
        consistent: bool,
    },
    Query {
        order: Order,
        limited: bool,
        consistent: bool,
    },
    QueryIndex {
        index: Text,
        order: Order,
        limited: bool,
    },
    /// A whole table or index, page by page: operators' tools only.
    Scan,
    Put,
    Update,
    Delete,
    /// A partition deleted page by page (`drain_partition_page`).
    Drain,
    /// `TransactWriteItems` of these items, each optional: a call matches when every
    /// item it writes is one of them.
    Transact(&'static [Written]),
    /// `BatchWriteItem` of these items, each optional, as [`Op::Transact`].
    Batch(&'static [Written]),
}

impl Op {
    pub const fn get(consistent: bool) -> Self {
        Op::Get { consistent }
    }

    pub const fn query(order: Order, limited: bool, consistent: bool) -> Self {
        Op::Query {
            order,
            limited,
            consistent,
        }
    }

    pub const fn query_index(index: &'static str, order: Order, limited: bool) -> Self {
        Op::QueryIndex {
            index,
            order,
            limited,
        }
    }

    pub const fn transact(items: &'static [Written]) -> Self {
        Op::Transact(items)
    }

    pub const fn batch(items: &'static [Written]) -> Self {
        Op::Batch(items)
    }

    /// Whether it writes (a transaction, a batch, a single write or a drain).
    pub fn writes(&self) -> bool {
        !matches!(
            self,
            Op::Get { .. } | Op::Query { .. } | Op::QueryIndex { .. } | Op::Scan
        )
    }

    fn name(&self) -> String {
        let order = |o: &Order| match o {
            Order::Forward => "forward",
            Order::Backward => "backward",
        };
        let limit = |l: &bool| if *l { ", limit" } else { "" };
        let strong = |c: &bool| if *c { ", consistent" } else { "" };
        match self {
            Op::Get { consistent } => format!("GetItem{}", strong(consistent)),
            Op::Query {
                order: o,
                limited,
                consistent,
            } => format!("Query {}{}{}", order(o), limit(limited), strong(consistent)),
            Op::QueryIndex {
                index,
                order: o,
                limited,
            } => format!("Query index `{index}` {}{}", order(o), limit(limited)),
            Op::Scan => "Scan".into(),
            Op::Put => "PutItem".into(),
            Op::Update => "UpdateItem".into(),
            Op::Delete => "DeleteItem".into(),
            Op::Drain => "Query + DeleteItem (drain)".into(),
            Op::Transact(_) => "TransactWriteItems".into(),
            Op::Batch(_) => "BatchWriteItem".into(),
        }
    }
}

/// A call reduced to what a pattern declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    pub table: Context,
    pub op: Op,
    /// The partition key's kind (`*` for a scan, which reads every partition).
    pub pk: Text,
    pub sk: Sk,
}

impl Shape {
    pub fn get(table: Context, key: &Key, consistent: bool) -> Self {
        Self::one(table, Op::Get { consistent }, key)
    }

    pub fn query(table: Context, query: &Query) -> Self {
        Self {
            table,
            op: Op::Query {
                order: Order::of(query.forward),
                limited: query.limit.is_some(),
                consistent: query.consistent,
            },
            pk: owned_kind(&query.pk),
            sk: Sk::of_condition(query.sort_key.as_ref()),
        }
    }

    pub fn query_index(table: Context, query: &IndexQuery) -> Self {
        Self {
            table,
            op: Op::QueryIndex {
                index: intern(&query.index),
                order: Order::of(query.forward),
                limited: query.limit.is_some(),
            },
            pk: owned_kind(&query.pk),
            sk: Sk::of_condition(query.sort_key.as_ref()),
        }
    }

    pub fn scan(table: Context, _scan: &Scan) -> Self {
        Self {
            table,
            op: Op::Scan,
            pk: "*",
            sk: Sk::Whole,
        }
    }

    pub fn put(table: Context, key: &Key) -> Self {
        Self::one(table, Op::Put, key)
    }

    pub fn update(table: Context, key: &Key, _update: &Update) -> Self {
        Self::one(table, Op::Update, key)
    }

    pub fn delete(table: Context, key: &Key) -> Self {
        Self::one(table, Op::Delete, key)
    }

    pub fn drain(table: Context, pk: &str) -> Self {
        Self {
            table,
            op: Op::Drain,
            pk: owned_kind(pk),
            sk: Sk::Whole,
        }
    }

    /// A transaction, named by the table and key of its first action.
    pub fn transact(actions: &[TransactAction]) -> Self {
        let items: Vec<Written> = actions.iter().map(Written::of_action).collect();
        Self::of_items(Op::Transact(intern_items(items)))
    }

    pub fn batch(table: Context, writes: &[BatchWrite]) -> Self {
        let items = writes
            .iter()
            .map(|write| {
                let action = match write {
                    BatchWrite::Put(_) => Action::Put,
                    BatchWrite::Delete(_) => Action::Delete,
                };
                let key = write.key().unwrap_or_else(|_| Key::new("?", "?"));
                Written::of_key(action, table, &key)
            })
            .collect();
        Self::of_items(Op::Batch(intern_items(items)))
    }

    fn one(table: Context, op: Op, key: &Key) -> Self {
        Self {
            table,
            op,
            pk: owned_kind(&key.pk),
            sk: Sk::Exact(owned_kind(&key.sk)),
        }
    }

    fn of_items(op: Op) -> Self {
        let first = match &op {
            Op::Transact(items) | Op::Batch(items) => items.first().copied(),
            _ => None,
        };
        let first = first.unwrap_or(Written::new(Action::Put, Context::Identity, "?", "?"));
        Self {
            table: first.table,
            pk: first.pk,
            sk: Sk::Exact(first.sk),
            op,
        }
    }

    /// Whether the declared shape `self` admits the call `call`: the same shape, except
    /// that a transaction or batch writes every declared item not marked optional and
    /// no item that is not declared.
    pub fn admits(&self, call: &Shape) -> bool {
        match (&self.op, &call.op) {
            (Op::Transact(declared), Op::Transact(made))
            | (Op::Batch(declared), Op::Batch(made)) => {
                let each_declared = made.iter().all(|m| declared.iter().any(|d| d.covers(m)));
                let required = declared
                    .iter()
                    .filter(|d| !d.optional)
                    .all(|d| made.iter().any(|m| d.covers(m)));
                !made.is_empty() && each_declared && required
            }
            _ => self == call,
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.op {
            Op::Transact(items) | Op::Batch(items) => {
                let items: Vec<String> = items.iter().map(Written::describe).collect();
                write!(f, "{} of [{}]", self.op.name(), items.join(", "))
            }
            op => write!(
                f,
                "{} on {}: pk `{}…`, sk {}",
                op.name(),
                self.table,
                self.pk,
                self.sk.describe()
            ),
        }
    }
}

impl Written {
    /// Any sort-key kind, in a declaration: a rebuild's flush or a drain writes every
    /// kind its table holds.
    pub const ANY: &'static str = "*";

    /// Whether the declared item `self` covers the written `item`.
    fn covers(&self, item: &Written) -> bool {
        (self.action, self.table, self.pk) == (item.action, item.table, item.pk)
            && (self.sk == item.sk || self.sk == Self::ANY)
    }

    fn describe(&self) -> String {
        let action = match self.action {
            Action::Put => "put",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::Check => "check",
        };
        let optional = if self.optional { " (optional)" } else { "" };
        format!(
            "{action} {} `{}…`/`{}…`{optional}",
            self.table, self.pk, self.sk
        )
    }
}
