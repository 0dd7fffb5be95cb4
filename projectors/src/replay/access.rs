//! The calls the replay tool makes, as declared access patterns (see `infra::access`),
//! and a rebuild's, generated from the subscriptions' declared writes.

use crate::Subscription;
use events_schema::Context;
use infra::access::{AccessPattern as P, Action::*, Op, Order::Forward, Sk, Written as W};

/// The replay tool's reads of a source table's outbox.
macro_rules! source {
    ($table:ident) => {
        [
            P::new(
                "every event of a table",
                Context::$table,
                Op::Scan,
                "*",
                Sk::Whole,
                "vitals replay (all users), vitals migrate, the residue check of an erasure; a page at a time; operators only",
            )
            .volume(0.0)
            .size(1000, 800),
            P::new(
                "a user's events",
                Context::$table,
                Op::query(Forward, true, true),
                "USER#",
                Sk::prefix("EVT#"),
                "vitals replay --user, a page at a time; operators only",
            )
            .volume(0.0)
            .size(100, 800),
        ]
    };
}

/// The replay tool's checkpoints in a target table: `REPLAY#<subscription>`, scoped
/// `all` or `user-<digest>`.
macro_rules! checkpoints {
    ($table:ident) => {
        [
            checkpoint!(
                $table,
                Op::get(true),
                "all",
                "where a replay of every user stopped"
            ),
            checkpoint!($table, Op::Put, "all", "save a replay's place"),
            checkpoint!($table, Op::Delete, "all", "a replay done"),
            checkpoint!(
                $table,
                Op::get(true),
                "user-",
                "where a user's replay stopped"
            ),
            checkpoint!($table, Op::Put, "user-", "save a user's replay's place"),
            checkpoint!($table, Op::Delete, "user-", "a user's replay done"),
        ]
    };
}

macro_rules! checkpoint {
    ($table:ident, $op:expr, $scope:literal, $name:literal) => {
        P::new(
            $name,
            Context::$table,
            $op,
            "REPLAY#",
            Sk::exact($scope),
            "vitals replay (a page at a time); operators only",
        )
        .volume(0.0)
        .size(1, 200)
    };
}

/// The replay tool's reads, per source table.
pub static SOURCES: &[[P; 2]] = &[
    source!(Identity),
    source!(Nutrition),
    source!(Activity),
    source!(Sleep),
    source!(Goals),
    source!(Integrations),
    source!(Insights),
    source!(Dashboard),
];

/// The replay tool's checkpoints, per target table.
pub static CHECKPOINTS: &[[P; 6]] = &[
    checkpoints!(Identity),
    checkpoints!(Nutrition),
    checkpoints!(Activity),
    checkpoints!(Sleep),
    checkpoints!(Goals),
    checkpoints!(Integrations),
    checkpoints!(Insights),
    checkpoints!(Dashboard),
];

/// A rebuild's own calls (`Mode::Rebuild`, through `infra::buffered`), generated from
/// the subscriptions' declared writes: each target table's partitions loaded a page at
/// a time, and its final rows written in batches: the kinds its subscriptions declare
/// (put or deleted), an erased user's partition drained, tombstones.
pub fn rebuild_access() -> Vec<&'static infra::access::AccessPattern> {
    static PATTERNS: std::sync::OnceLock<Vec<P>> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        let subscriptions: Vec<Subscription> = crate::registry::described()
            .iter()
            .map(|p| p.subscription())
            .collect();
        let mut patterns = Vec::new();
        for table in Context::ALL {
            let writers: Vec<&Subscription> =
                subscriptions.iter().filter(|s| s.target == table).collect();
            if !writers.is_empty() {
                patterns.extend(partition_loads(table));
                patterns.push(final_rows(table, &writers));
            }
        }
        patterns
    });
    patterns.iter().collect()
}

/// A rebuild's reads of `table`: each kind of partition loaded a page at a time.
fn partition_loads(table: Context) -> impl Iterator<Item = P> {
    ["USER#", "ERASED#", "JOB#"].into_iter().map(move |pk| {
        P::new(
            "load a partition for a rebuild",
            table,
            Op::query(Forward, true, true),
            pk,
            Sk::Whole,
            "vitals replay --rebuild (each partition read once, 100 rows a page)",
        )
        .volume(0.0)
        .size(100, 400)
    })
}

/// A rebuild's batch write of `table`'s final rows: what its `writers` declare, put or
/// deleted, an erased user's partition drained and their tombstone.
fn final_rows(table: Context, writers: &[&Subscription]) -> P {
    let mut items = vec![
        W::new(Delete, table, "USER#", W::ANY).optional(),
        W::new(Put, table, "ERASED#", "TOMBSTONE").optional(),
    ];
    for kind in writers.iter().flat_map(|s| s.writes.iter()) {
        let kind = infra::access::intern(kind);
        for pk in events_schema::item_kinds::partitions_of(table, kind) {
            // Several subscriptions write some kinds (`DAILY#`, `GOAL#`): once each.
            for action in [Put, Delete] {
                let item = W::new(action, table, pk, kind).optional();
                if !items.contains(&item) {
                    items.push(item);
                }
            }
        }
    }
    let items: &'static [W] = Box::leak(items.into_boxed_slice());
    P::batch(
        "write a rebuild's final rows",
        items,
        "vitals replay --rebuild (rows in key order, unconditional)",
    )
    .volume(0.0)
    .size(25, 400)
}
