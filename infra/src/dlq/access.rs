//! The dead-letter rows' calls ([`super::TableDlq`]), declared as access patterns
//! beside the code that makes them (see `infra::access`).

use crate::access::{AccessPattern as P, Op, Order::Forward, Sk};
use events_schema::Context;

/// The dead-letter rows' calls in `$table`: `DLQ#<subscription>` partitions whose sort
/// key is the letter's id: its record's feed position and key (`DeadLetter::id_for`).
macro_rules! letters {
    ($table:ident) => {
        [
            P::new(
                "dead-letter an event",
                Context::$table,
                Op::Put,
                "DLQ#",
                Sk::exact(crate::access::POSITION),
                "a projection failing an event past its retries",
            )
            .volume(0.0)
            .size(1, 2000),
            P::new(
                "a subscription's dead letters",
                Context::$table,
                Op::query(Forward, false, true),
                "DLQ#",
                Sk::Whole,
                "/metrics (queue depth), erasure (letters about the user), vitals dlq",
            )
            .volume(0.0)
            .size(1, 2000),
            P::new(
                "a page of a subscription's dead letters",
                Context::$table,
                Op::query(Forward, true, true),
                "DLQ#",
                Sk::Whole,
                "vitals dlq list, redrive",
            )
            .volume(0.0)
            .size(10, 2000),
            P::new(
                "remove a dead letter",
                Context::$table,
                Op::Delete,
                "DLQ#",
                Sk::exact(crate::access::POSITION),
                "redrive, erasure",
            )
            .volume(0.0)
            .size(1, 2000),
        ]
    };
}

/// The dead-letter rows' calls, table by table (every table a subscription writes).
pub static ACCESS: &[[P; 4]] = &[
    letters!(Identity),
    letters!(Nutrition),
    letters!(Activity),
    letters!(Sleep),
    letters!(Goals),
    letters!(Integrations),
    letters!(Insights),
    letters!(Dashboard),
];
