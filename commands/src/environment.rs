//! Environment: weather and air-quality readings cached per geohash cell and hour, with
//! a TTL of about an hour past the hour they describe and at least an hour from when they
//! were fetched, by the handlers' clock (a cache, not user data; a past hour's reading is
//! final and cached like any other), behind a provider trait with a deterministic sandbox
//! provider. Items: `WEATHER#<cell>#<hour>`, `AIR#<cell>#<hour>`. Nothing here publishes
//! events.

use crate::CommandError;
use crate::items::{from_item, to_item};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use events_schema::ids::Geohash;
use events_schema::keys::{PartitionKey, SortKey};
use events_schema::time::{Clock, Hour};
use infra::store::Key;
use infra::table::{Table, contexts::Environment};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Weather {
    pub temperature_c: f64,
    pub humidity_pct: u8,
    pub wind_kph: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AirQuality {
    pub aqi: u16,
    pub pm25: f64,
}

#[async_trait]
pub trait EnvironmentProvider: Send + Sync {
    async fn weather(&self, cell: &Geohash, hour: Hour) -> Result<Weather, CommandError>;
    async fn air(&self, cell: &Geohash, hour: Hour) -> Result<AirQuality, CommandError>;
}

/// Readings derived from a hash of cell and hour: the same question always gets the
/// same answer, so tests and offline runs are deterministic.
#[derive(Debug, Clone, Default)]
pub struct SandboxEnvironment;

fn seed(cell: &Geohash, hour: Hour, what: &str) -> [u8; 32] {
    Sha256::digest(format!("{what}|{cell}|{hour}")).into()
}

#[async_trait]
impl EnvironmentProvider for SandboxEnvironment {
    async fn weather(&self, cell: &Geohash, hour: Hour) -> Result<Weather, CommandError> {
        let s = seed(cell, hour, "weather");
        Ok(Weather {
            temperature_c: f64::from(s[0]) / 255.0 * 45.0 - 10.0,
            humidity_pct: s[1] % 101,
            wind_kph: f64::from(s[2]) / 255.0 * 60.0,
        })
    }

    async fn air(&self, cell: &Geohash, hour: Hour) -> Result<AirQuality, CommandError> {
        let s = seed(cell, hour, "air");
        Ok(AirQuality {
            aqi: u16::from(s[0]) * 2,
            pm25: f64::from(s[1]) / 4.0,
        })
    }
}

/// Readings stay cached for an hour after the hour they describe, and at least that
/// long counted from when they were fetched.
const CACHE_SECONDS_AFTER_HOUR: i64 = 3600;

/// When a reading of `hour` cached at `now` (epoch seconds, by the handlers' clock)
/// expires: an hour after the hour, but never sooner than an hour from now (a past
/// hour's reading is final, so it is kept as long as a fresh one rather than written
/// already expired) and never later than two hours from now, so a reading asked for a
/// far future hour does not stay for ever.
fn cache_expiry(hour: Hour, now: i64) -> i64 {
    let after_the_hour = hour
        .start()
        .timestamp()
        .saturating_add(3600 + CACHE_SECONDS_AFTER_HOUR);
    let soonest = now.saturating_add(CACHE_SECONDS_AFTER_HOUR);
    let latest = now.saturating_add(3600 + CACHE_SECONDS_AFTER_HOUR);
    after_the_hour.clamp(soonest, latest)
}

/// A geohash: 1 to 12 characters of the geohash base32 alphabet.
pub fn geohash(raw: &str) -> Result<Geohash, CommandError> {
    const ALPHABET: &str = "0123456789bcdefghjkmnpqrstuvwxyz";
    let cell = raw.to_lowercase();
    if cell.is_empty() || cell.len() > 12 || !cell.chars().all(|c| ALPHABET.contains(c)) {
        return Err(CommandError::invalid(
            "geohash",
            "must be 1 to 12 geohash characters",
        ));
    }
    Geohash::parse(&cell).map_err(|e| CommandError::invalid("geohash", e.to_string()))
}

pub struct EnvironmentCommands {
    table: Table<Environment>,
    provider: Arc<dyn EnvironmentProvider>,
    /// Tells "now" when a reading's expiry is decided.
    clock: Clock,
}

impl std::fmt::Debug for EnvironmentCommands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvironmentCommands")
            .finish_non_exhaustive()
    }
}

impl EnvironmentCommands {
    pub fn new(table: Table<Environment>, provider: Arc<dyn EnvironmentProvider>) -> Self {
        Self {
            table,
            provider,
            clock: Clock::System,
        }
    }

    /// The same cache, telling time by `clock` (the handlers' clock).
    pub fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }

    /// The reading cached under `(pk, sk)` for `hour`, or else `fetch`ed and cached.
    async fn cached<T, F>(
        &self,
        (pk, sk): (PartitionKey, SortKey),
        hour: Hour,
        fetch: F,
    ) -> Result<T, CommandError>
    where
        T: Serialize + serde::de::DeserializeOwned,
        F: std::future::Future<Output = Result<T, CommandError>>,
    {
        let key = Key::new(pk.to_string(), sk.to_string());
        if let Some(item) = self.table.get(&key, false).await? {
            return from_item(item);
        }
        let reading = fetch.await?;
        let mut item = to_item(&key, &reading)?;
        let expires_at = cache_expiry(hour, self.clock.now().datetime().timestamp());
        item.insert("expires_at".into(), expires_at.into());
        // Concurrent misses write the same deterministic-per-hour row; last one wins.
        self.table.put(item, None).await?;
        Ok(reading)
    }

    /// The weather in `cell` at `at`, from the cache or the provider.
    pub async fn weather(&self, cell: &str, at: DateTime<Utc>) -> Result<Weather, CommandError> {
        let (cell, hour) = (geohash(cell)?, Hour::containing(at));
        let keys = (PartitionKey::Weather(cell.clone(), hour), SortKey::Weather);
        self.cached(keys, hour, self.provider.weather(&cell, hour))
            .await
    }

    /// The air quality in `cell` at `at`, from the cache or the provider.
    pub async fn air(&self, cell: &str, at: DateTime<Utc>) -> Result<AirQuality, CommandError> {
        let (cell, hour) = (geohash(cell)?, Hour::containing(at));
        let keys = (PartitionKey::Air(cell.clone(), hour), SortKey::Air);
        self.cached(keys, hour, self.provider.air(&cell, hour))
            .await
    }
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use events_schema::Context::Environment as ENVIRONMENT;
    use infra::access::{AccessPattern as P, Op, Sk};

    /// The environment cache's calls (shared by every user near the same place and hour).
    pub static ACCESS: &[P] = &[
        P::new(
            "cached weather",
            ENVIRONMENT,
            Op::get(false),
            "WEATHER#",
            Sk::exact("WEATHER"),
            "GET /v1/me/environment",
        )
        .volume(1.0)
        .size(1, 400),
        P::new(
            "cache weather",
            ENVIRONMENT,
            Op::Put,
            "WEATHER#",
            Sk::exact("WEATHER"),
            "GET /v1/me/environment (a miss; expires in hours)",
        )
        .volume(0.1)
        .size(1, 400),
        P::new(
            "cached air quality",
            ENVIRONMENT,
            Op::get(false),
            "AIR#",
            Sk::exact("AIR"),
            "GET /v1/me/environment",
        )
        .volume(1.0)
        .size(1, 300),
        P::new(
            "cache air quality",
            ENVIRONMENT,
            Op::Put,
            "AIR#",
            Sk::exact("AIR"),
            "GET /v1/me/environment (a miss; expires in hours)",
        )
        .volume(0.1)
        .size(1, 300),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(raw: &str) -> Hour {
        let at = events_schema::time::Timestamp::parse(raw).expect("timestamp");
        Hour::containing(at.datetime())
    }

    #[test]
    fn a_cached_reading_expires_an_hour_after_its_hour_at_least_an_hour_from_now() {
        let now = hour("2026-03-02T08:30:00.000Z").start().timestamp() + 1800;
        // Given the hour now: cached until an hour after it ends;
        let current = hour("2026-03-02T08:30:00.000Z");
        assert_eq!(
            cache_expiry(current, now),
            current.start().timestamp() + 7200
        );
        // a past hour, final: an hour from now (not already expired, so it is cached),
        let past = hour("2026-03-01T08:00:00.000Z");
        assert_eq!(cache_expiry(past, now), now + 3600);
        // as is the hour that ended half an hour ago;
        let last = hour("2026-03-02T07:00:00.000Z");
        assert_eq!(cache_expiry(last, now), now + 3600);
        // a far future hour (asked for by anyone): two hours from now at most.
        let far = hour("9000-01-01T00:00:00.000Z");
        assert_eq!(cache_expiry(far, now), now + 7200);
    }
}
