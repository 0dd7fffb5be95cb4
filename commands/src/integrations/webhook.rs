//! Signed webhooks. The signature is HMAC-SHA256 over `<timestamp>.<raw body>` with the
//! provider's secret, hex-encoded, compared in constant time; the timestamp must be
//! within a tolerance of now, so a captured delivery cannot be replayed later. A
//! delivery is recorded once (`DELIVERY#<provider>#<id>`) in the same transaction as
//! the events it publishes, so a redelivered webhook publishes nothing new.

use super::IntegrationCommands;
use super::oauth::provider_user_key;
use crate::CommandError;
use crate::idempotency::Committed;
use crate::items::to_item;
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic::{self, Attempt};
use crate::outbox::{envelope, event_action};
use events_schema::events::integrations::{
    ProviderSleep, ProviderWorkout, WearableSleepReceived, WearableWorkoutReceived,
};
use events_schema::ids::{DeliveryId, ProviderName, UserId};
use events_schema::keys::SortKey;
use events_schema::time::Timestamp;
use hmac::{Hmac, Mac};
use infra::store::{CancelReason, Condition, Key};
use infra::table::Action;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;

/// How far a webhook's timestamp may be from now.
pub const SIGNATURE_TOLERANCE_SECONDS: i64 = 300;
/// Items one delivery may carry (a transaction holds 100 actions).
const MAX_ITEMS: usize = 90;

/// A provider's delivery: the wearable data of one of its users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookPayload {
    /// The provider's id of this delivery: a delivery is recorded once, so a redelivery
    /// publishes nothing new. 1 to 100 characters, no `#`.
    pub delivery_id: String,
    /// Who the data is about, at the provider: the account connected as this user.
    pub provider_user_id: String,
    #[serde(default)]
    pub workouts: Vec<ProviderWorkout>,
    #[serde(default)]
    pub sleep: Vec<ProviderSleep>,
}

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).ok()?;
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(mac)
}

/// The signature a provider sends for `body` at `timestamp` (used by the sandbox).
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    mac(secret, timestamp, body)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default()
}

fn verify(
    secret: &[u8],
    timestamp: &str,
    signature: &str,
    body: &[u8],
    now: i64,
) -> Result<(), CommandError> {
    let timestamp: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| CommandError::BadSignature)?;
    // Any i64 may arrive here: `abs_diff` cannot overflow where `(now - ts).abs()` did.
    if now.abs_diff(timestamp) > SIGNATURE_TOLERANCE_SECONDS as u64 {
        return Err(CommandError::BadSignature);
    }
    let signature = hex::decode(signature.trim()).map_err(|_| CommandError::BadSignature)?;
    let mac = mac(secret, timestamp, body).ok_or(CommandError::BadSignature)?;
    // verify_slice compares in constant time.
    mac.verify_slice(&signature)
        .map_err(|_| CommandError::BadSignature)
}

impl IntegrationCommands {
    /// Receives a webhook: verifies it, finds the connected user, records the delivery
    /// once and publishes each workout and sleep session it carries.
    pub async fn receive_webhook(
        &self,
        provider: &str,
        timestamp: &str,
        signature: &str,
        body: &[u8],
    ) -> Result<Outcome<usize>, CommandError> {
        let provider = self.providers().get(provider)?.clone();
        verify(
            provider.webhook_secret().expose().as_bytes(),
            timestamp,
            signature,
            body,
            // Freshness is a transport check against replays: real time, whatever the
            // handlers' clock says.
            infra::store::now_epoch_seconds(),
        )?;
        let delivered = parse_delivery(body)?;
        let count = delivered.count;
        optimistic::run!({
            let (user, timezone) = self
                .connected_user(provider.name(), &delivered.payload.provider_user_id)
                .await?;
            let meta = CommandMeta::new(user);
            let actions = self.delivery(&meta, provider.name(), &delivered, timezone)?;
            let (pk, request) = (meta.user_pk(), json!({}));
            let committed = optimistic::commit_through_conflicts(
                &self.table,
                &meta,
                &pk,
                &request,
                actions,
                count,
            );
            match committed.await? {
                Committed::Done(outcome) => Ok(Attempt::Done(outcome)),
                Committed::Cancelled(reasons) => match reasons.as_slice() {
                    // The delivery is recorded already: a provider's retry.
                    [CancelReason::ConditionFailed { .. }, ..] => {
                        Ok(Attempt::Done(Outcome::replayed(count)))
                    }
                    // The provider user no longer routes to the account read (it was
                    // disconnected, or connected to another, meanwhile): read again
                    // where it routes now.
                    [_, CancelReason::ConditionFailed { .. }, ..] => Ok(Attempt::LostRace),
                    other => Err(crate::idempotency::unexpected(other)),
                },
            }
        })
    }

    /// What `delivered` writes in the partition of `meta`'s account, connected as its
    /// provider user: its record (see [`publication`]); a check that the provider user
    /// still routes there (a disconnect committing meanwhile wins, as if the delivery
    /// came after it); an event per workout and per sleep session.
    fn delivery(
        &self,
        meta: &CommandMeta,
        provider: &ProviderName,
        delivered: &Delivered,
        timezone: Option<String>,
    ) -> Result<Vec<Action>, CommandError> {
        let still_routed = Action::Check {
            key: provider_user_key(provider, &delivered.payload.provider_user_id)?,
            condition: Condition::AttributeEquals("user_id".into(), json!(meta.user)),
        };
        let pk = meta.user_pk();
        let publication = publication(&pk, provider, delivered, timezone, self.clock.now())?;
        let mut actions = vec![publication.record, still_routed];
        for received in &publication.workouts {
            let at = received.workout.started_at;
            actions.push(event_action(
                &pk,
                &envelope(meta, &self.clock, at, received)?,
            )?);
        }
        for received in &publication.sleep {
            let at = received.sleep.start;
            actions.push(event_action(
                &pk,
                &envelope(meta, &self.clock, at, received)?,
            )?);
        }
        Ok(actions)
    }

    /// The account connected as `provider_user_id` of `provider`, and the timezone it
    /// had when it connected (it names the days of what arrives).
    async fn connected_user(
        &self,
        provider: &ProviderName,
        provider_user_id: &str,
    ) -> Result<(UserId, Option<String>), CommandError> {
        let pointer = self
            .table
            .get(&provider_user_key(provider, provider_user_id)?, true)
            .await?
            .ok_or(CommandError::NotFound("connection"))?;
        let user = pointer
            .get("user_id")
            .and_then(Value::as_str)
            .and_then(|u| UserId::parse(u).ok())
            .ok_or(CommandError::NotFound("connection"))?;
        let timezone = pointer
            .get("timezone")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok((user, timezone))
    }
}

/// A parsed delivery: its body, its id as sent and as a key part, how many items.
#[derive(Debug)]
struct Delivered {
    payload: WebhookPayload,
    delivery_id: String,
    delivery: DeliveryId,
    count: usize,
}

/// What a verified delivery publishes in the partition `pk` of the account connected
/// as its provider user: its record, received `now` (written only if it was not
/// recorded before: a redelivery publishes nothing), and an event per workout and per
/// sleep session, in the timezone the account connected with.
struct Publication {
    record: Action,
    workouts: Vec<WearableWorkoutReceived>,
    sleep: Vec<WearableSleepReceived>,
}

fn publication(
    pk: &str,
    provider: &ProviderName,
    delivered: &Delivered,
    timezone: Option<String>,
    now: Timestamp,
) -> Result<Publication, CommandError> {
    let key = Key::new(
        pk,
        SortKey::Delivery(provider.clone(), delivered.delivery.clone()).to_string(),
    );
    let record = Action::Put {
        item: to_item(&key, &json!({"received_at": now, "items": delivered.count}))?,
        condition: Some(Condition::ItemNotExists),
    };
    let payload = &delivered.payload;
    let workouts = payload
        .workouts
        .iter()
        .map(|workout| WearableWorkoutReceived {
            provider: provider.clone(),
            delivery_id: delivered.delivery_id.clone(),
            workout: workout.clone(),
            timezone: timezone.clone(),
        })
        .collect();
    let sleep = payload
        .sleep
        .iter()
        .map(|sleep| WearableSleepReceived {
            provider: provider.clone(),
            delivery_id: delivered.delivery_id.clone(),
            sleep: sleep.clone(),
            timezone: timezone.clone(),
        })
        .collect();
    Ok(Publication {
        record,
        workouts,
        sleep,
    })
}

/// A delivery's body, its id (as sent and as a key part) and how many items it carries;
/// an invalid request error, naming the field, for anything else.
fn parse_delivery(body: &[u8]) -> Result<Delivered, CommandError> {
    let payload: WebhookPayload =
        serde_json::from_slice(body).map_err(|e| CommandError::invalid("body", e.to_string()))?;
    let delivery_id = crate::validate::text("delivery_id", &payload.delivery_id, 1, 100)?;
    let delivery = DeliveryId::parse(&delivery_id)
        .map_err(|e| CommandError::invalid("delivery_id", e.to_string()))?;
    let count = payload.workouts.len() + payload.sleep.len();
    if count > MAX_ITEMS {
        return Err(CommandError::invalid(
            "body",
            format!("carries {count} items, at most {MAX_ITEMS}"),
        ));
    }
    Ok(Delivered {
        payload,
        delivery_id,
        delivery,
        count,
    })
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Integrations as INTEGRATIONS;
    use infra::access::{AccessPattern as P, Action::*, Written as W};

    /// A webhook delivery's call: recorded once, for a linked account only.
    pub static ACCESS: &[P] = &[P::transact(
        "record a webhook delivery",
        command_tx!(
            Integrations,
            "USER#",
            [
                W::new(Put, INTEGRATIONS, "USER#", "DELIVERY#"),
                W::new(Check, INTEGRATIONS, "PROVIDER_USER#", "PROVIDER_USER"),
                W::new(Put, INTEGRATIONS, "USER#", "EVT#"),
            ]
        ),
        "POST /v1/integrations/{provider}/webhook",
    )
    .volume(2.0)
    .size(3, 600)];
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn delivery_body() -> Vec<u8> {
        json!({
            "delivery_id": "delivery-1",
            "provider_user_id": "athlete-1",
            "workouts": [
                {"external_id": "w-1", "sport": "run", "started_at": "2026-03-02T07:00:00.000Z",
                 "duration_s": 1800, "distance_m": 5000, "calories": 300},
                {"external_id": "w-2", "sport": "ride", "started_at": "2026-03-02T17:00:00.000Z",
                 "duration_s": 3600, "distance_m": null, "calories": null},
            ],
            "sleep": [
                {"external_id": "s-1", "start": "2026-03-01T22:30:00.000Z",
                 "end": "2026-03-02T06:30:00.000Z", "score": 81,
                 "stages": {"awake_min": 20, "light_min": 250, "deep_min": 90, "rem_min": 120}},
            ],
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_delivery_is_recorded_once_and_publishes_an_event_per_item() {
        let provider = ProviderName::parse("strava").expect("provider");
        let delivered = parse_delivery(&delivery_body()).expect("a valid delivery");
        assert_eq!(delivered.count, 3);
        let (payload, delivery) = (&delivered.payload, delivered.delivery.clone());
        let now = Timestamp::parse("2026-03-02T18:00:00.000Z").expect("now");
        let timezone = Some("Europe/Paris".to_owned());
        let published =
            publication("USER#u", &provider, &delivered, timezone.clone(), now).expect("decided");
        // The record: written only if this delivery was never recorded.
        let Action::Put { item, condition } = &published.record else {
            panic!("a put: {:?}", published.record);
        };
        assert_eq!(condition, &Some(Condition::ItemNotExists));
        assert_eq!(
            item["sk"],
            SortKey::Delivery(provider.clone(), delivery)
                .to_string()
                .as_str()
        );
        assert_eq!(item["items"], 3);
        // The events: one per item, as sent, in the account's timezone.
        let workouts: Vec<_> = published.workouts.iter().map(|w| &w.workout).collect();
        assert_eq!(workouts, payload.workouts.iter().collect::<Vec<_>>());
        assert_eq!(published.sleep.len(), 1);
        assert_eq!(published.sleep[0].sleep, payload.sleep[0]);
        for (provider_of, delivery_of, timezone_of) in published
            .workouts
            .iter()
            .map(|w| (&w.provider, &w.delivery_id, &w.timezone))
            .chain(
                published
                    .sleep
                    .iter()
                    .map(|s| (&s.provider, &s.delivery_id, &s.timezone)),
            )
        {
            assert_eq!(
                (provider_of, delivery_of.as_str(), timezone_of),
                (&provider, "delivery-1", &timezone)
            );
        }
    }

    #[test]
    fn a_delivery_over_the_item_limit_or_without_an_id_is_refused() {
        let mut body: Value = serde_json::from_slice(&delivery_body()).expect("json");
        let workout = body["workouts"][0].clone();
        body["workouts"] = Value::Array(vec![workout; MAX_ITEMS + 1]);
        let error = parse_delivery(body.to_string().as_bytes()).expect_err("too many");
        assert!(error.to_string().contains("at most"), "{error}");
        let mut body: Value = serde_json::from_slice(&delivery_body()).expect("json");
        body["delivery_id"] = json!("");
        let error = parse_delivery(body.to_string().as_bytes()).expect_err("no id");
        assert!(error.to_string().contains("delivery_id"), "{error}");
    }

    #[test]
    fn signatures_verify_only_with_secret_body_and_fresh_timestamp() {
        let (secret, body, now) = (
            b"s3cret".as_slice(),
            br#"{"a":1}"#.as_slice(),
            1_700_000_000,
        );
        let signature = sign(secret, now, body);
        assert!(verify(secret, &now.to_string(), &signature, body, now + 10).is_ok());
        assert!(verify(b"other", &now.to_string(), &signature, body, now).is_err());
        assert!(verify(secret, &now.to_string(), &signature, br#"{"a":2}"#, now).is_err());
        assert!(
            verify(
                secret,
                &now.to_string(),
                &signature,
                body,
                now + SIGNATURE_TOLERANCE_SECONDS + 1
            )
            .is_err()
        );
        assert!(verify(secret, "soon", &signature, body, now).is_err());
        for extreme in [i64::MIN, i64::MAX] {
            assert!(verify(secret, &extreme.to_string(), &signature, body, now).is_err());
            assert!(verify(secret, &now.to_string(), &signature, body, extreme).is_err());
        }
    }

    proptest! {
        #[test]
        fn verify_never_panics(ts in any::<String>(), sig in any::<String>(), body in any::<Vec<u8>>(), now in any::<i64>()) {
            let _ = verify(b"k", &ts, &sig, &body, now);
        }
    }
}
