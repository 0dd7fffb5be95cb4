//! Account erasure on the projector side: the contexts erase a user one after another
//! ([`ERASURE_CHAIN`]), then identity completes the erasure.
//!
//! - [`Eraser`] (`erase-<context>`, one per link of the chain): set off by the link
//!   before it (identity's `AccountDeletionRequested` for the first link, the previous
//!   context's `PartitionDrained` for the others), it writes the context's tombstone,
//!   removes the user's dead letters of every subscription writing its table, deletes
//!   what the context owns of the user (see `commands::erasure`), drains `USER#<id>` in
//!   pages and publishes `PartitionDrained`, carrying on when the deletion was requested
//!   and every context drained so far. Redelivered after a crash, it simply finishes:
//!   the tombstone and the event's id derive from the request, not from the run.
//! - [`Completer`] (`identity-from-dashboard-erasure`, on the chain's last context):
//!   ticks off on identity's tombstone every context the last `PartitionDrained` lists
//!   (a tick is an idempotent set); once every link is ticked it deletes the email
//!   reservation, drains identity's partition and marks the erasure `complete`.
//! - [`Guarded`]: wraps every projection so nothing of an erased user comes back: an
//!   event of a user with a tombstone in the target table is not applied, and sweeps the
//!   user's partition instead (a worker that died between its write and its second look
//!   may have left a row: the redelivery removes it); a write that raced the tombstone is
//!   swept away right after (the tombstone is checked again once the event is applied;
//!   any write that landed after the eraser's drain passed is therefore seen and
//!   drained). A context later in the chain keeps projecting the user's events until its
//!   own link runs, and its drain takes them.
//!
//! Layout: [`chain`] (the order and the names), [`guard`], [`eraser`], [`completer`],
//! and the declared [`access`] patterns.

pub(crate) mod access;
mod chain;
mod completer;
mod eraser;
mod guard;

pub(crate) use chain::eraser_name;
pub use chain::{ERASURE_CHAIN, LAST, is_erasure_subscription, set_off_by};
pub use completer::{Completer, drained_attr, is_complete};
pub use eraser::Eraser;
pub use guard::Guarded;
