//! Erasing an account from one context's table: the tombstone that stops every later
//! write, the items the context owns of the user outside `USER#<id>` (found through the
//! partition before it is drained; in insights, where the readiness job stopped if that
//! names the user), and the drain itself. Each step is idempotent, so an erasure
//! interrupted anywhere is finished by running it again.

use events_schema::Context;
use events_schema::ids::{OAuthState, ProviderName, ProviderUserId, UserId};
use events_schema::keys::{PartitionKey, SortKey, prefix};
use events_schema::rows::JobRunRow;
use events_schema::time::Timestamp;
use infra::store::{Condition, Item, Key, Query, SortKeyCondition, StoreError, Update};
use infra::table::{Action, ContextTable, Table, contexts};
use serde::Deserialize as _;
use serde_json::{Value, json};

/// Tombstone attribute: `erasing` until the context's partition is drained, then
/// `drained` (`complete` in identity's table once every context is done).
pub const STATUS: &str = "status";

/// Writes the context's tombstone unless it exists. From then on the context's commands
/// refuse the user and its projectors skip (or sweep away) the user's events.
/// `requested_at` is the request's time (from its event), so the row is the same however
/// often the erasure runs.
pub async fn begin<C: ContextTable>(
    table: &Table<C>,
    user: &UserId,
    requested_at: Timestamp,
) -> Result<(), StoreError> {
    let mut item = Key::tombstone(user).to_item();
    item.insert(STATUS.into(), json!("erasing"));
    item.insert("requested_at".into(), json!(requested_at));
    match table.put(item, Some(Condition::ItemNotExists)).await {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The tombstone of `user` in this table, if any (strongly consistent).
pub async fn tombstone<C: ContextTable>(
    table: &Table<C>,
    user: &UserId,
) -> Result<Option<Item>, StoreError> {
    table.get(&Key::tombstone(user), true).await
}

/// The erasure's status in this table's tombstone (`erasing`, `drained`, `complete`),
/// or None when no erasure of `user` was ever requested here.
pub async fn status<C: ContextTable>(
    table: &Table<C>,
    user: &UserId,
) -> Result<Option<String>, StoreError> {
    Ok(tombstone(table, user)
        .await?
        .and_then(|t| t.get(STATUS).and_then(Value::as_str).map(str::to_owned)))
}

/// Deletes what the context owns of `user` outside the user's partition, then drains
/// the partition; returns how many items it deleted.
pub async fn erase<C: ContextTable>(table: &Table<C>, user: &UserId) -> Result<u64, StoreError> {
    let pk = PartitionKey::User(user.clone()).to_string();
    let mut deleted = 0;
    for key in owned_elsewhere(table, &pk).await? {
        // Only if it is still this user's: another account may hold it now, and nothing
        // another account owns is ever deleted here.
        let still_theirs = Condition::AttributeEquals("user_id".into(), json!(user));
        match table.delete(&key, Some(still_theirs)).await {
            Ok(Some(_)) => deleted += 1,
            Ok(None) | Err(StoreError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    if C::CONTEXT == Context::Insights {
        forget_job_cursors(table, &pk).await?;
    }
    Ok(deleted + table.drain_partition(&pk).await? as u64)
}

/// Removes the next-page cursor of every readiness job checkpoint (insights,
/// `JOB#readiness`) that names the partition `pk`: a page's cursor is the last key it
/// read, a user's `ACTIVE_DAY` marker. The next run of that day goes through it from its
/// first user (a score is an idempotent put). The job makes the same call when the
/// user its cursor names is erased by then, for a checkpoint written as the erasure
/// ran. Returns how many it changed.
pub async fn forget_job_cursors<C: ContextTable>(
    table: &Table<C>,
    pk: &str,
) -> Result<u64, StoreError> {
    const CURSOR: &str = JobRunRow::CURSOR;
    let job = PartitionKey::ReadinessJob.to_string();
    let mut forgotten = 0;
    for checkpoint in partition(table, &job, "").await? {
        let run = JobRunRow::deserialize(&checkpoint);
        let Some(cursor) = run.ok().and_then(|run| run.cursor) else {
            continue;
        };
        let names = infra::store::Cursor::from_text(&cursor)
            .to_key(&["pk"])
            .is_ok_and(|key| key.get("pk").map(String::as_str) == Some(pk));
        if !names {
            continue;
        }
        // Only that cursor: a run may have moved on meanwhile.
        let unchanged = Condition::AttributeEquals(CURSOR.into(), json!(cursor));
        let update = Update::default().remove(CURSOR);
        match table
            .update(&Key::of(&checkpoint)?, update, Some(unchanged))
            .await
        {
            Ok(_) => forgotten += 1,
            Err(StoreError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(forgotten)
}

/// Items outside `USER#<id>` that hold the user: the integrations context's
/// provider-user pointers and pending OAuth states (identity's are handled by
/// [`finish_identity`]). Read from
/// the partition, so this runs before the drain (and finds nothing once it is done).
async fn owned_elsewhere<C: ContextTable>(
    table: &Table<C>,
    pk: &str,
) -> Result<Vec<Key>, StoreError> {
    let mut keys = Vec::new();
    if C::CONTEXT != Context::Integrations {
        return Ok(keys);
    }
    for item in partition(table, pk, "CONNECTION#").await? {
        let provider = item
            .get("provider")
            .and_then(Value::as_str)
            .and_then(|p| ProviderName::parse(p).ok());
        let provider_user = item
            .get("provider_user_id")
            .and_then(Value::as_str)
            .and_then(|p| ProviderUserId::parse(p).ok());
        if let (Some(provider), Some(provider_user)) = (provider, provider_user) {
            keys.push(Key::new(
                PartitionKey::ProviderUser(provider, provider_user).to_string(),
                SortKey::ProviderUser.to_string(),
            ));
        }
    }
    for item in partition(table, pk, prefix::OAUTH_STATE).await? {
        let state = item
            .get("sk")
            .and_then(Value::as_str)
            .and_then(|sk| sk.strip_prefix(prefix::OAUTH_STATE))
            .and_then(|s| OAuthState::parse(s).ok());
        if let Some(state) = state {
            keys.push(crate::integrations::oauth::state_key(&state));
        }
    }
    Ok(keys)
}

async fn partition<C: ContextTable>(
    table: &Table<C>,
    pk: &str,
    sk_prefix: &str,
) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    let mut cursor = None;
    loop {
        let mut query = Query::partition(pk).consistent().after(cursor);
        if !sk_prefix.is_empty() {
            query = query.sort_key(SortKeyCondition::BeginsWith(sk_prefix.to_owned()));
        }
        let page = table.query(&query).await?;
        items.extend(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(items),
        }
    }
}

/// Marks the tombstone: `status = drained`, or in identity's table records that
/// `context` is drained. Returns the tombstone as written.
pub async fn mark<C: ContextTable>(
    table: &Table<C>,
    user: &UserId,
    update: Update,
) -> Result<Item, StoreError> {
    table
        .update(&Key::tombstone(user), update, Some(Condition::ItemExists))
        .await
}

/// Identity's part, once every other context is drained: the registration's request
/// records (kept under the email's partition), every item of the user's partition but
/// the profile, and then in one transaction the profile, the email reservation and the
/// tombstone's `complete`. The email becomes free exactly when the erasure is complete,
/// and until then the profile (which names the email) survives any interruption.
pub async fn finish_identity(
    table: &Table<contexts::Identity>,
    user: &UserId,
) -> Result<(), StoreError> {
    let pk = PartitionKey::User(user.clone()).to_string();
    let profile_key = Key::new(&pk, SortKey::Profile.to_string());
    let email = table
        .get(&profile_key, true)
        .await?
        .and_then(|p| p.get("email").and_then(Value::as_str).map(str::to_owned));
    let reservation = email.as_ref().map(|email| {
        Key::new(
            PartitionKey::Email(email.clone()).to_string(),
            SortKey::Email.to_string(),
        )
    });
    if let Some(reservation) = &reservation {
        for record in partition(table, &reservation.pk, "IDEMPOTENCY#").await? {
            if record.get("response") == Some(&json!(user)) {
                table.delete(&Key::of(&record)?, None).await?;
            }
        }
    }
    for item in partition(table, &pk, "").await? {
        let key = Key::of(&item)?;
        if key != profile_key {
            table.delete(&key, None).await?;
        }
    }
    let mut actions = vec![
        Action::Delete {
            key: profile_key,
            condition: None,
        },
        Action::Update {
            key: Key::tombstone(user),
            update: Update::default().set(STATUS, json!("complete")),
            condition: Some(Condition::ItemExists),
        },
    ];
    if let Some(reservation) = reservation {
        // Only if it is still this user's: after an email change it may be someone else's.
        if table
            .get(&reservation, true)
            .await?
            .is_some_and(|r| r.get("user_id") == Some(&json!(user)))
        {
            actions.push(Action::Delete {
                key: reservation,
                condition: Some(Condition::AttributeEquals("user_id".into(), json!(user))),
            });
        }
    }
    table.transact(actions).await
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::{self, Identity as IDENTITY, Insights, Integrations};
    use infra::access::{AccessPattern as P, Action::*, Op, Order::Forward, Sk, Written as W};

    /// The per-table steps of an erasure, in `$table`.
    macro_rules! erasure_steps {
        ($table:ident) => {
            [
                P::new(
                    "an erasure's tombstone",
                    Context::$table,
                    Op::get(true),
                    "ERASED#",
                    Sk::exact("TOMBSTONE"),
                    "account erasure (and every check that a user is not being erased)",
                )
                .volume(0.0003)
                .size(1, 200),
                P::new(
                    "mark an erasure's progress",
                    Context::$table,
                    Op::Update,
                    "ERASED#",
                    Sk::exact("TOMBSTONE"),
                    "account erasure",
                )
                .volume(0.0003)
                .size(1, 200),
            ]
        };
    }

    /// The steps of a context erasing a user's partition.
    macro_rules! partition_steps {
        ($table:ident) => {
            [
                P::new(
                    "begin an erasure",
                    Context::$table,
                    Op::Put,
                    "ERASED#",
                    Sk::exact("TOMBSTONE"),
                    "account erasure (the context's subscription to AccountDeletionRequested)",
                )
                .volume(0.0003)
                .size(1, 200),
                P::new(
                    "drain a user's partition",
                    Context::$table,
                    Op::Drain,
                    "USER#",
                    Sk::Whole,
                    "account erasure",
                )
                .volume(0.0003)
                .size(1000, 400),
            ]
        };
    }

    /// Erasure's calls, table by table.
    pub static ACCESS: &[[P; 2]] = &[
        erasure_steps!(Identity),
        erasure_steps!(Nutrition),
        erasure_steps!(Activity),
        erasure_steps!(Sleep),
        erasure_steps!(Goals),
        erasure_steps!(Integrations),
        erasure_steps!(Insights),
        erasure_steps!(Dashboard),
        partition_steps!(Nutrition),
        partition_steps!(Activity),
        partition_steps!(Sleep),
        partition_steps!(Goals),
        partition_steps!(Integrations),
        partition_steps!(Insights),
        partition_steps!(Dashboard),
        [
            P::new(
                "a user's connections, to unlink them",
                Integrations,
                Op::query(Forward, false, true),
                "USER#",
                Sk::prefix("CONNECTION#"),
                "account erasure",
            )
            .volume(0.0003),
            P::new(
                "a user's pending connects",
                Integrations,
                Op::query(Forward, false, true),
                "USER#",
                Sk::prefix("OAUTH_STATE#"),
                "account erasure",
            )
            .volume(0.0003),
        ],
        [
            P::new(
                "unlink a provider's account",
                Integrations,
                Op::Delete,
                "PROVIDER_USER#",
                Sk::exact("PROVIDER_USER"),
                "account erasure (only while it is still this user's)",
            )
            .volume(0.0003),
            P::new(
                "forget a pending connect",
                Integrations,
                Op::Delete,
                "OAUTH_STATE#",
                Sk::exact("OAUTH_STATE"),
                "account erasure (only while it is still this user's)",
            )
            .volume(0.0003),
        ],
        [
            P::new(
                "the readiness job's runs",
                Insights,
                Op::query(Forward, false, true),
                "JOB#",
                Sk::Whole,
                "account erasure (a run's cursor naming the user is forgotten), the nightly job",
            )
            .volume(0.0003)
            .size(7, 200),
            P::new(
                "forget a run's cursor",
                Insights,
                Op::Update,
                "JOB#",
                Sk::exact("RUN#"),
                "account erasure",
            )
            .volume(0.0003)
            .size(1, 200),
        ],
        [
            P::new(
                "the rest of an identity partition",
                IDENTITY,
                Op::query(Forward, false, true),
                "USER#",
                Sk::Whole,
                "account erasure (identity's last step)",
            )
            .volume(0.0003)
            .size(10, 300),
            P::new(
                "an email's reservation",
                IDENTITY,
                Op::get(true),
                "EMAIL#",
                Sk::exact("EMAIL"),
                "account erasure (identity's last step)",
            )
            .volume(0.0003)
            .size(1, 200),
        ],
        [
            P::new(
                "forget a sign-up's idempotency record",
                IDENTITY,
                Op::Delete,
                "EMAIL#",
                Sk::exact("IDEMPOTENCY#"),
                "account erasure (identity's last step)",
            )
            .volume(0.0003),
            P::new(
                "delete an identity item",
                IDENTITY,
                Op::Delete,
                "USER#",
                Sk::exact("EVT#"),
                "account erasure (identity's last step)",
            )
            .volume(0.0003),
        ],
        [
            P::new(
                "delete an idempotency record",
                IDENTITY,
                Op::Delete,
                "USER#",
                Sk::exact("IDEMPOTENCY#"),
                "account erasure (identity's last step)",
            )
            .volume(0.0003),
            P::transact(
                "finish an identity's erasure",
                &[
                    W::new(Delete, IDENTITY, "USER#", "PROFILE"),
                    W::new(Update, IDENTITY, "ERASED#", "TOMBSTONE"),
                    W::new(Delete, IDENTITY, "EMAIL#", "EMAIL").optional(),
                ],
                "account erasure (identity's last step: the email is free again)",
            )
            .volume(0.0003)
            .size(3, 300),
        ],
    ];
}
