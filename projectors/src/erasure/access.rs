//! The calls account erasure makes on the projector side, as declared access patterns
//! (see `infra::access`).

use events_schema::Context;
use infra::access::{AccessPattern as P, Action::*, Op, Sk, Written as W};

/// The erasure guard's first look, in `$table` (the strongly consistent second look
/// is the command side's "an erasure's tombstone").
macro_rules! guard {
    ($table:ident) => {
        P::new(
            "is the event's user erased (first look)",
            Context::$table,
            Op::get(false),
            "ERASED#",
            Sk::exact("TOMBSTONE"),
            "every event a projection applies to a user's rows",
        )
        .volume(20.0)
        .size(1, 200)
    };
}

/// A context announcing its partition drained (the outbox item is published, then
/// removed: the tombstone partition keeps no event).
macro_rules! drained {
    ($table:ident) => {
        [
            P::transact(
                "announce a partition drained",
                &[
                    W::new(Put, Context::$table, "ERASED#", "EVT#"),
                    W::new(Update, Context::$table, "ERASED#", "TOMBSTONE"),
                ],
                "account erasure (PartitionDrained)",
            )
            .volume(0.0003)
            .size(2, 400),
            P::new(
                "remove a published erasure event",
                Context::$table,
                Op::Delete,
                "ERASED#",
                Sk::exact("EVT#"),
                "account erasure (PartitionDrained, once published)",
            )
            .volume(0.0003)
            .size(1, 400),
        ]
    };
}

/// The guard's first look, table by table.
pub static GUARDS: &[P] = &[
    guard!(Identity),
    guard!(Nutrition),
    guard!(Activity),
    guard!(Sleep),
    guard!(Goals),
    guard!(Integrations),
    guard!(Insights),
    guard!(Dashboard),
];

/// The erasure chain's announcements, table by table.
pub static ANNOUNCEMENTS: &[[P; 2]] = &[
    drained!(Nutrition),
    drained!(Activity),
    drained!(Sleep),
    drained!(Goals),
    drained!(Integrations),
    drained!(Insights),
    drained!(Dashboard),
];
