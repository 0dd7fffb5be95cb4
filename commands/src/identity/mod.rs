//! Identity: accounts, emails, profiles, passwords, deletion requests, and the
//! signed-in sessions (`sessions`).
//!
//! Items: `USER#<id>/PROFILE` (with `email_pk` for the `by-email` index, the argon2
//! password hash, status, version, the id of the session started last, the generation
//! of the credentials that access tokens carry) and the reservation `EMAIL#<email>/EMAIL`,
//! which commits together with the profile so two accounts can never share an email;
//! and the tries at a credential this minute, `TRIES#<digest>#<minute>/TRIES` (`tries`),
//! counted by every process together.
//!
//! What a stolen access token could do without the password, it cannot: an email change
//! and a deletion request take the current password, and commit only while it is still
//! the account's; a password or email change moves the credentials on a generation,
//! which ends every access token issued before it (`sessions`).
//!
//! Layout: `profile` (the stored profile, its keys, the password rule, its reads),
//! `signup` and `signin`, `changes` (profile and email), `deletion` (the request),
//! `sessions` and `tries`; here the commands' type and their access patterns.

mod changes;
mod deletion;
mod profile;
pub(crate) mod sessions;
mod signin;
mod signup;
pub(crate) mod tries;

pub use changes::UpdateProfile;
pub use profile::{AccountStatus, Profile};
pub use sessions::{Access, RefreshToken, SESSION_DAYS, SignedIn};
pub use signup::Register;
pub use tries::Tried;

use infra::table::contexts::Identity;

/// The identity context's commands: sign-up, sessions, profile, email, deletion.
pub type IdentityCommands = crate::handlers::Handlers<Identity>;

/// The calls of the commands in this module's files (the sessions and the tries declare
/// their own), as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Identity as IDENTITY;
    use infra::access::{AccessPattern as P, Action::*, Op, Order::Forward, Sk, Written as W};

    /// The identity commands' calls: sign-up, profile changes, the deletion request.
    pub static ACCESS: &[P] = &[
        P::transact(
            "sign up",
            command_tx!(Identity, "EMAIL#", [
                W::new(Put, IDENTITY, "USER#", "PROFILE"),
                W::new(Put, IDENTITY, "EMAIL#", "EMAIL"),
                W::new(Put, IDENTITY, "USER#", "EVT#"),
            ]),
            "POST /v1/auth/register",
        )
        .volume(0.01)
        .size(3, 600),
        P::new(
            "a sign-up retried",
            IDENTITY,
            Op::query(Forward, false, true),
            "EMAIL#",
            Sk::prefix("IDEMPOTENCY#"),
            "POST /v1/auth/register with an Idempotency-Key; erasure's last step (the user's records)",
        )
        .volume(0.01),
        P::new(
            "the account of an email",
            IDENTITY,
            Op::query_index("by-email", Forward, true),
            infra::access::EMAIL,
            Sk::Whole,
            "POST /v1/auth/login",
        )
        .volume(0.3)
        .size(1, 400),
        P::new(
            "the profile, to decide",
            IDENTITY,
            Op::get(true),
            "USER#",
            Sk::exact("PROFILE"),
            "PATCH /v1/me/profile, POST /v1/me/password, DELETE /v1/me, token checks, erasure's last step",
        )
        .volume(2.0)
        .size(1, 600),
        P::transact(
            "change the profile",
            command_tx!(Identity, "USER#", [
                W::new(Update, IDENTITY, "USER#", "PROFILE"),
                W::new(Put, IDENTITY, "USER#", "EVT#"),
            ]),
            "PATCH /v1/me/profile",
        )
        .volume(0.05)
        .size(2, 700),
        P::transact(
            "change the email",
            command_tx!(Identity, "USER#", [
                W::new(Update, IDENTITY, "USER#", "PROFILE"),
                W::new(Delete, IDENTITY, "EMAIL#", "EMAIL"),
                W::new(Put, IDENTITY, "EMAIL#", "EMAIL"),
                W::new(Put, IDENTITY, "USER#", "EVT#"),
                W::new(Delete, IDENTITY, "USER#", "SESSION#").optional(),
                // The old email's sign-up record: a retried sign-up must not replay it.
                W::new(Delete, IDENTITY, "EMAIL#", "IDEMPOTENCY#").optional(),
            ]),
            "PATCH /v1/me/profile with an email (other sessions end)",
        )
        .volume(0.001)
        .size(5, 600),
        P::transact(
            "ask for the account's deletion",
            &[
                W::new(Update, IDENTITY, "USER#", "PROFILE"),
                W::new(Put, IDENTITY, "USER#", "EVT#"),
                W::new(Put, IDENTITY, "ERASED#", "TOMBSTONE"),
                W::new(Delete, IDENTITY, "USER#", "SESSION#").optional(),
                W::new(Put, IDENTITY, "USER#", "IDEMPOTENCY#").optional(),
            ],
            "DELETE /v1/me",
        )
        .volume(0.0003)
        .size(4, 500),
    ];
}
