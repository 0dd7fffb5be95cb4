//! Environment cache specifications beyond the basic hit and miss (those are in
//! [`super::integrations`]): a reading of an hour that has ended is final, so it stays
//! cached (its TTL counted from the handlers' clock, not from the hour).

use super::*;
use async_trait::async_trait;
use commands::environment::{AirQuality, EnvironmentProvider, SandboxEnvironment, Weather};
use events_schema::ids::Geohash;
use events_schema::time::{Hour, Timestamp};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The sandbox's readings, counting how often it is asked.
#[derive(Debug, Default)]
struct CountingProvider {
    weather: AtomicUsize,
    air: AtomicUsize,
}

#[async_trait]
impl EnvironmentProvider for CountingProvider {
    async fn weather(&self, cell: &Geohash, hour: Hour) -> Result<Weather, CommandError> {
        self.weather.fetch_add(1, Ordering::SeqCst);
        SandboxEnvironment.weather(cell, hour).await
    }

    async fn air(&self, cell: &Geohash, hour: Hour) -> Result<AirQuality, CommandError> {
        self.air.fetch_add(1, Ordering::SeqCst);
        SandboxEnvironment.air(cell, hour).await
    }
}

pub async fn a_past_hour_is_asked_of_the_provider_once(store: Arc<dyn Store>) {
    // The store's TTL sweep keeps to real time, so the handlers' clock starts there.
    let clock = Clock::manual(Timestamp::now());
    let counting = Arc::new(CountingStore::new(store));
    let provider = Arc::new(CountingProvider::default());
    let environment = EnvironmentCommands::new(Table::new(counting.clone()), provider.clone())
        .with_clock(clock.clone());
    let cell = "u09tvw";
    // Given an hour that ended two hours before now,
    let at = clock.now().datetime() - chrono::Duration::hours(3);
    // when its weather and air are asked for twice,
    let first = environment.weather(cell, at).await.expect("weather");
    environment.air(cell, at).await.expect("air");
    counting.take();
    let second = environment.weather(cell, at).await.expect("weather");
    environment.air(cell, at).await.expect("air");
    // then the provider was asked once each, and the second round only read.
    assert_eq!(second, first);
    assert_eq!(
        (
            provider.weather.load(Ordering::SeqCst),
            provider.air.load(Ordering::SeqCst)
        ),
        (1, 1),
        "a past hour's readings are final: cached, not fetched again"
    );
    let counts = counting.take();
    assert_eq!(
        (counts.gets, counts.writes()),
        (2, 0),
        "two hits: two reads"
    );
    // The row stays for an hour counted from the handlers' clock.
    let hour = Hour::containing(at);
    let row = row_of(
        &*counting,
        Context::Environment,
        format!("WEATHER#{cell}#{hour}"),
        "WEATHER",
    )
    .await
    .expect("cached");
    let now = clock.now().datetime().timestamp();
    assert_eq!(row["expires_at"].as_i64(), Some(now + 3600), "{row:?}");
}
