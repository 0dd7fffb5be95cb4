//! Erasing an account from one context's table: the tombstone that stops every later
//! write, the items the context owns of the user outside `USER#<id>` (found through the
//! partition before it is drained), and the drain itself. Each step is idempotent, so an
//! erasure interrupted anywhere is finished by running it again.

use crate::idempotency::erasure_key;
use events_schema::Context;
use events_schema::ids::{OAuthState, ProviderName, ProviderUserId, UserId};
use events_schema::keys::{PartitionKey, SortKey, prefix};
use events_schema::time::Timestamp;
use infra::store::{Condition, Item, Key, Query, SortKeyCondition, StoreError, Update};
use infra::table::{ContextTable, Table};
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
    let mut item = erasure_key(user).to_item();
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
    table.get(&erasure_key(user), true).await
}

/// Deletes what the context owns of `user` outside the user's partition, then drains
/// the partition; returns how many items it deleted.
pub async fn erase<C: ContextTable>(table: &Table<C>, user: &UserId) -> Result<u64, StoreError> {
    let pk = PartitionKey::User(user.clone()).to_string();
    let mut deleted = 0;
    for key in owned_elsewhere(table, &pk, user).await? {
        if table.delete(&key, None).await?.is_some() {
            deleted += 1;
        }
    }
    loop {
        let page = table.drain_partition_page(&pk, 25).await?;
        if page == 0 {
            return Ok(deleted);
        }
        deleted += page as u64;
    }
}

/// Items outside `USER#<id>` that hold the user: identity's email reservation, the
/// integrations context's provider-user pointers and pending OAuth states. Read from
/// the partition, so this runs before the drain (and finds nothing once it is done).
async fn owned_elsewhere<C: ContextTable>(
    table: &Table<C>,
    pk: &str,
    user: &UserId,
) -> Result<Vec<Key>, StoreError> {
    let mut keys = Vec::new();
    match C::CONTEXT {
        Context::Identity => {
            let profile = table
                .get(&Key::new(pk, SortKey::Profile.to_string()), true)
                .await?;
            if let Some(email) = profile
                .as_ref()
                .and_then(|p| p.get("email"))
                .and_then(Value::as_str)
            {
                let reservation = Key::new(
                    PartitionKey::Email(email.to_owned()).to_string(),
                    SortKey::Email.to_string(),
                );
                // Only if it is still this user's: the email may belong to someone else.
                let holder = table.get(&reservation, true).await?;
                if holder.and_then(|h| h.get("user_id").cloned()) == Some(json!(user)) {
                    keys.push(reservation);
                }
            }
        }
        Context::Integrations => {
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
        }
        _ => {}
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
        let query = Query::partition(pk)
            .sort_key(SortKeyCondition::BeginsWith(sk_prefix.to_owned()))
            .consistent()
            .after(cursor);
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
        .update(&erasure_key(user), update, Some(Condition::ItemExists))
        .await
}
