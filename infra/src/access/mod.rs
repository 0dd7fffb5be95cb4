//! Access patterns: the declared shapes of the reads and writes the code issues against
//! the tables. The design asks each context for "a document mapping every access pattern
//! to its key structure, expected volumes, and the feature it supports"; here that map
//! is code. Each module that calls the store declares its patterns beside the calls
//! (`pub const ACCESS: &[AccessPattern]`), the crates list them, `vitals docs
//! access-patterns` renders them, and the tests' recording store ([`crate::recorded`])
//! fails any call that is an instance of none.
//!
//! A call is reduced to its [`Shape`]: the table, the operation (with its index, order,
//! limit and consistency), the partition key's kind and the sort key's condition, where
//! a key's kind is its tag (`MEAL#2026-12-07#01J…` is of kind `MEAL#`, `PROFILE` of kind
//! `PROFILE`). Ids and dates never enter a shape, so one pattern covers every user.

mod shape;

pub use shape::{Action, EMAIL, Op, Order, POSITION, Shape, Sk, Text, Written, intern, kind_of};

use crate::capacity;
use events_schema::Context;

/// One declared access pattern.
#[derive(Debug, Clone)]
pub struct AccessPattern {
    /// A short name, unique in the catalog: what the call is for.
    pub name: &'static str,
    pub shape: Shape,
    /// The route, subscription or job it serves.
    pub feature: &'static str,
    /// Expected calls per active user per day (a scan or a nightly job's call counts
    /// once per day for the whole table, written as such in `feature`).
    pub per_user_day: f64,
    /// The items a call reads or writes, typically.
    pub items: u32,
    /// Their typical size, in bytes of names and values (as `infra::capacity` counts).
    pub item_bytes: u32,
}

impl AccessPattern {
    /// A pattern of one item or partition: `pk` and `sk` as kinds.
    pub const fn new(
        name: &'static str,
        table: Context,
        op: Op,
        pk: &'static str,
        sk: Sk,
        feature: &'static str,
    ) -> Self {
        Self {
            name,
            shape: Shape { table, op, pk, sk },
            feature,
            per_user_day: 1.0,
            items: 1,
            item_bytes: 500,
        }
    }

    /// A transaction of `items` (its shape is named by the first).
    pub const fn transact(
        name: &'static str,
        items: &'static [Written],
        feature: &'static str,
    ) -> Self {
        Self::of_items(name, Op::transact(items), items, feature)
    }

    /// A batch of `items` (a rebuild's final rows).
    pub const fn batch(
        name: &'static str,
        items: &'static [Written],
        feature: &'static str,
    ) -> Self {
        Self::of_items(name, Op::batch(items), items, feature)
    }

    const fn of_items(
        name: &'static str,
        op: Op,
        items: &'static [Written],
        feature: &'static str,
    ) -> Self {
        let (table, pk, sk) = match items.first() {
            Some(Written { table, pk, sk, .. }) => (*table, *pk, *sk),
            _ => (Context::Identity, "?", "?"),
        };
        let mut pattern = Self::new(name, table, op, pk, Sk::exact(sk), feature);
        pattern.items = items.len() as u32;
        pattern
    }

    /// Expected calls per active user per day.
    pub const fn volume(mut self, per_user_day: f64) -> Self {
        self.per_user_day = per_user_day;
        self
    }

    /// Items per call and their typical size in bytes.
    pub const fn size(mut self, items: u32, item_bytes: u32) -> Self {
        self.items = items;
        self.item_bytes = item_bytes;
        self
    }

    /// Capacity units one call consumes, by `infra::capacity`'s arithmetic: a read
    /// sums its items' bytes (one unit per started 4 KB, half when eventually
    /// consistent), a write pays per item (one unit per started KB), twice in a
    /// transaction.
    pub fn units_per_call(&self) -> f64 {
        let bytes = self.item_bytes as usize;
        let items = f64::from(self.items.max(1));
        match &self.shape.op {
            Op::Get { consistent } => capacity::read_units(bytes, *consistent),
            Op::Query { consistent, .. } => {
                capacity::read_units(bytes * self.items.max(1) as usize, *consistent)
            }
            Op::QueryIndex { .. } | Op::Scan => {
                capacity::read_units(bytes * self.items.max(1) as usize, false)
            }
            Op::Transact(_) => 2.0 * items * capacity::write_units(bytes),
            Op::Put | Op::Update | Op::Delete | Op::Drain | Op::Batch(_) => {
                items * capacity::write_units(bytes)
            }
        }
    }

    /// Whether the units are write units.
    pub fn writes(&self) -> bool {
        self.shape.op.writes()
    }
}

/// The pattern of `catalog` that admits `call`: of several, the narrowest (the
/// transaction declaring the fewest items), so a broader pattern does not hide a
/// narrower one from the report of what was exercised.
pub fn matching<'a>(catalog: &[&'a AccessPattern], call: &Shape) -> Option<&'a AccessPattern> {
    let breadth = |p: &&AccessPattern| match &p.shape.op {
        Op::Transact(items) | Op::Batch(items) => items.len(),
        _ => 0,
    };
    catalog
        .iter()
        .copied()
        .filter(|p| p.shape.admits(call))
        .min_by_key(breadth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Item;
    use crate::store::{Query, SortKeyCondition, TransactAction};

    const MEAL: &[Written] = &[
        Written::new(Action::Put, Context::Nutrition, "USER#", "MEAL#"),
        Written::new(Action::Put, Context::Nutrition, "USER#", "EVT#"),
        Written::new(Action::Put, Context::Nutrition, "USER#", "IDEMPOTENCY#").optional(),
    ];

    #[test]
    fn kinds_are_tags() {
        assert_eq!(kind_of("MEAL#2026-12-07#01J"), "MEAL#");
        assert_eq!(kind_of("PROFILE"), "PROFILE");
        assert_eq!(kind_of("~MEAL#x"), "~MEAL#");
        assert_eq!(kind_of("ana@example.com"), EMAIL);
        assert_eq!(kind_of("user-5f3a"), "user-");
        assert_eq!(kind_of("003.412#USER#01J#EVT#01K"), POSITION);
    }

    #[test]
    fn a_query_matches_only_its_declared_shape() {
        let declared = AccessPattern::new(
            "meals of a day",
            Context::Nutrition,
            Op::query(Order::Forward, false, false),
            "USER#",
            Sk::prefix("MEAL#"),
            "GET /v1/me/meals",
        );
        let query = Query::partition("USER#01J")
            .sort_key(SortKeyCondition::BeginsWith("MEAL#2026-12-07#".into()));
        assert!(
            declared
                .shape
                .admits(&Shape::query(Context::Nutrition, &query))
        );
        let backward = query.clone().reverse();
        assert!(
            !declared
                .shape
                .admits(&Shape::query(Context::Nutrition, &backward))
        );
        assert!(!declared.shape.admits(&Shape::query(Context::Sleep, &query)));
        let other =
            Query::partition("USER#01J").sort_key(SortKeyCondition::BeginsWith("SLEEP#".into()));
        assert!(
            !declared
                .shape
                .admits(&Shape::query(Context::Nutrition, &other))
        );
    }

    #[test]
    fn a_transaction_matches_when_every_item_is_declared() {
        let declared = AccessPattern::transact("log a meal", MEAL, "POST /v1/me/meals");
        let item = |sk: &str| -> Item {
            let mut item = Item::new();
            item.insert("pk".into(), "USER#1".into());
            item.insert("sk".into(), sk.into());
            item
        };
        let put = |sk: &str| TransactAction::Put {
            table: Context::Nutrition,
            item: item(sk),
            condition: None,
        };
        let made = Shape::transact(&[put("MEAL#2026-12-07#1"), put("EVT#1")]);
        assert!(declared.shape.admits(&made));
        // The meal is required: the event alone is another transaction.
        assert!(!declared.shape.admits(&Shape::transact(&[put("EVT#2")])));
        let keyed =
            Shape::transact(&[put("MEAL#2026-12-07#1"), put("EVT#1"), put("IDEMPOTENCY#k")]);
        assert!(declared.shape.admits(&keyed));
        let undeclared = Shape::transact(&[put("MEAL#2026-12-07#1"), put("SLEEP#x")]);
        assert!(!declared.shape.admits(&undeclared));
        assert!(!declared.shape.admits(&Shape::transact(&[])));
    }

    #[test]
    fn units_follow_the_capacity_model() {
        let get = AccessPattern::new(
            "a profile",
            Context::Identity,
            Op::get(true),
            "USER#",
            Sk::exact("PROFILE"),
            "GET /v1/me",
        )
        .size(1, 5000);
        assert_eq!(get.units_per_call(), 2.0);
        let tx = AccessPattern::transact("log a meal", MEAL, "POST").size(2, 1500);
        assert_eq!(tx.units_per_call(), 8.0);
    }
}
