//! A storage wrapper as slow and as strict as DynamoDB: every request waits a latency
//! drawn from a distribution fitted to DynamoDB's (single-digit milliseconds, with a
//! tail), and a table asked for more capacity units per second than its budget answers
//! [`StoreError::Throttled`] without the request reaching the store it wraps.
//!
//! It exists because the embedded store and the emulators answer in microseconds and
//! never throttle: a figure measured against them flatters the pipeline. The local world
//! must be as strict as the real one (issue 37). Tests leave it off; benchmarks wrap
//! their store in it. It never changes what a request does, only when it answers and
//! whether it is let through; it prices requests with [`crate::capacity`] from what they
//! carry and return, never with a read of its own (the item before a write is unknown,
//! so a write is priced as one that creates its item).
//!
//! Layout: `latency` draws each request's latency, `budget` meters each table's
//! capacity and prices a request; this module is the wrapper itself.

mod budget;
mod latency;

pub use self::budget::Throughput;
pub use self::latency::Latency;

use self::budget::{Bucket, Charge, creating, least_read, read_cost};
use crate::capacity;
use crate::store::{
    BatchWrite, Condition, Found, SingleRead, SingleWrite, Store, StoreError, TransactAction,
    Written,
};
use async_trait::async_trait;
use events_schema::Context;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// Writes per `BatchWriteItem` request, which the DynamoDB backend sends one by one.
const BATCH_WRITES_PER_REQUEST: usize = 25;

/// What a [`SlowStore`] did since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlowStats {
    /// Requests made, throttled ones included.
    pub requests: u64,
    /// Requests answered [`StoreError::Throttled`].
    pub throttled: u64,
    /// The latency added, summed over all requests (concurrent ones overlap).
    pub waited: Duration,
}
struct State {
    rng: StdRng,
    buckets: BTreeMap<Context, [Option<Bucket>; 2]>,
}

/// See the module docs.
pub struct SlowStore {
    inner: Arc<dyn Store>,
    latency: Latency,
    throughput: Throughput,
    state: Mutex<State>,
    requests: AtomicU64,
    throttled: AtomicU64,
    waited_nanos: AtomicU64,
}

impl SlowStore {
    /// Wraps `inner` with `latency` and no capacity limit; the latencies are the same
    /// from run to run (seed 0) unless [`SlowStore::with_seed`] says otherwise.
    pub fn new(inner: Arc<dyn Store>, latency: Latency) -> Self {
        Self {
            inner,
            latency,
            throughput: Throughput::UNLIMITED,
            state: Mutex::new(State {
                rng: StdRng::seed_from_u64(0),
                buckets: BTreeMap::new(),
            }),
            requests: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            waited_nanos: AtomicU64::new(0),
        }
    }

    /// Throttles each table past `throughput`.
    pub fn with_throughput(mut self, throughput: Throughput) -> Self {
        self.throughput = throughput;
        self
    }

    /// Draws the latencies from a generator seeded with `seed`.
    pub fn with_seed(mut self, seed: u64) -> Self {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        state.rng = StdRng::seed_from_u64(seed);
        self
    }

    pub fn stats(&self) -> SlowStats {
        SlowStats {
            requests: self.requests.load(Ordering::Relaxed),
            throttled: self.throttled.load(Ordering::Relaxed),
            waited: Duration::from_nanos(self.waited_nanos.load(Ordering::Relaxed)),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets the request through if every table in `charges` holds what it costs up
    /// front (and takes it), or throttles it; either way after `round_trips` latencies
    /// (DynamoDB answers a throttled request after a round trip too).
    async fn admit(
        &self,
        round_trips: usize,
        charges: &[(Context, Charge)],
    ) -> Result<(), StoreError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let admitted = self.take(charges, true);
        self.wait(round_trips).await;
        if !admitted {
            self.throttled.fetch_add(1, Ordering::Relaxed);
            return Err(StoreError::Throttled);
        }
        Ok(())
    }

    /// Takes `charges` from the tables' buckets: only if every bucket holds its share
    /// when `checked`, unconditionally (into debt) otherwise. Whether it took them.
    fn take(&self, charges: &[(Context, Charge)], checked: bool) -> bool {
        let mut per_table = BTreeMap::<Context, [f64; 2]>::new();
        for (table, charge) in charges {
            let units = per_table.entry(*table).or_default();
            units[0] += charge.read;
            units[1] += charge.write;
        }
        let now = Instant::now();
        let rates = [
            self.throughput.read_units_per_s,
            self.throughput.write_units_per_s,
        ];
        let full = || rates.map(|rate| rate.map(|rate| Bucket::full(rate, now)));
        let mut state = self.state();
        if checked {
            for (table, units) in &per_table {
                let slots = state.buckets.entry(*table).or_insert_with(full);
                for (bucket, units) in slots.iter_mut().zip(units) {
                    if let Some(bucket) = bucket
                        && *units > 0.0
                        && !bucket.holds(*units, now)
                    {
                        return false;
                    }
                }
            }
        }
        for (table, units) in per_table {
            let slots = state.buckets.entry(table).or_insert_with(full);
            for (bucket, units) in slots.iter_mut().zip(units) {
                if let Some(bucket) = bucket {
                    bucket.refill(now);
                    bucket.units -= units;
                }
            }
        }
        true
    }

    /// Takes what a request cost beyond what it was charged up front (a refund if less).
    fn settle(&self, table: Context, charged: Charge, cost: Charge) {
        let more = Charge {
            read: cost.read - charged.read,
            write: cost.write - charged.write,
        };
        self.take(&[(table, more)], false);
    }

    /// Sleeps `round_trips` latencies, summed.
    async fn wait(&self, round_trips: usize) {
        let pause: Duration = {
            let mut state = self.state();
            (0..round_trips).fold(Duration::ZERO, |sum, _| {
                sum.saturating_add(self.latency.sample(&mut state.rng))
            })
        };
        let nanos = u64::try_from(pause.as_nanos()).unwrap_or(u64::MAX);
        self.waited_nanos.fetch_add(nanos, Ordering::Relaxed);
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }

    /// A single write to `table`: charged `charged` up front, then what its outcome
    /// cost (an update the item it wrote, a delete the item it deleted, a write refused
    /// by its condition the item it found; a put, or any other failure, what it was
    /// charged).
    fn settle_write(&self, table: Context, charged: f64, outcome: &Result<Written, StoreError>) {
        let cost = match outcome {
            Ok(Written::Updated(item)) => creating(table, item, false),
            Ok(Written::Deleted(old)) => {
                capacity::write(table, old.as_ref(), None, false).write_units
            }
            Err(StoreError::ConditionFailed { existing }) => {
                capacity::refused_write(existing.as_ref(), false).write_units
            }
            Ok(Written::Put) | Err(_) => charged,
        };
        self.settle(table, Charge::write(charged), Charge::write(cost));
    }
}
#[async_trait]
impl Store for SlowStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.inner.register_metrics(registry);
    }

    async fn health(&self) -> Result<(), StoreError> {
        self.admit(1, &[]).await?;
        self.inner.health().await
    }

    async fn read(&self, table: Context, read: SingleRead<'_>) -> Result<Found, StoreError> {
        let consistent = read.consistent();
        let charged = least_read(consistent);
        self.admit(1, &[(table, charged)]).await?;
        let found = self.inner.read(table, read).await?;
        self.settle(table, charged, read_cost(found.items(), consistent));
        Ok(found)
    }

    async fn write(
        &self,
        table: Context,
        write: SingleWrite,
        condition: Option<Condition>,
    ) -> Result<Written, StoreError> {
        let charged = match &write {
            SingleWrite::Put { item } => creating(table, item, false),
            SingleWrite::Update { .. } | SingleWrite::Delete { .. } => capacity::write_units(0),
        };
        self.admit(1, &[(table, Charge::write(charged))]).await?;
        let outcome = self.inner.write(table, write, condition).await;
        self.settle_write(table, charged, &outcome);
        outcome
    }

    async fn transact(&self, actions: Vec<TransactAction>) -> Result<(), StoreError> {
        // Capacity: twice a single write per action (a condition check as a write of
        // its item), as DynamoDB bills transactions; only a put's item is known.
        let charges: Vec<(Context, Charge)> = actions
            .iter()
            .map(|action| {
                let units = match action {
                    TransactAction::Put { table, item, .. } => creating(*table, item, true),
                    _ => capacity::refused_write(None, true).write_units,
                };
                (action.table(), Charge::write(units))
            })
            .collect();
        // Latency: a TransactWriteItems takes roughly twice a single write (it prepares,
        // then commits): modelled as two draws summed.
        self.admit(2, &charges).await?;
        self.inner.transact(actions).await
    }

    async fn write_batch(&self, table: Context, writes: Vec<BatchWrite>) -> Result<(), StoreError> {
        let units = writes
            .iter()
            .map(|write| match write {
                BatchWrite::Put(item) => creating(table, item, false),
                BatchWrite::Delete(_) => capacity::write_units(0),
            })
            .sum();
        // One round trip per `BatchWriteItem`, sent one after another.
        let requests = writes.len().div_ceil(BATCH_WRITES_PER_REQUEST);
        self.admit(requests, &[(table, Charge::write(units))])
            .await?;
        self.inner.write_batch(table, writes).await
    }

    async fn drain_partition_page(
        &self,
        table: Context,
        pk: &str,
        page_size: usize,
    ) -> Result<usize, StoreError> {
        // A query for the keys, then `BatchWriteItem`s deleting them.
        let charged = least_read(false);
        self.admit(1, &[(table, charged)]).await?;
        let deleted = self
            .inner
            .drain_partition_page(table, pk, page_size)
            .await?;
        let cost = Charge {
            read: charged.read,
            write: deleted as f64 * capacity::write_units(0),
        };
        self.settle(table, charged, cost);
        self.wait(deleted.div_ceil(BATCH_WRITES_PER_REQUEST)).await;
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::EmbeddedStore;
    use crate::store::Key;

    fn embedded() -> (tempfile::TempDir, Arc<dyn Store>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
        (dir, store)
    }

    #[tokio::test]
    async fn past_its_budget_a_table_answers_throttled_and_the_store_sees_nothing() {
        let (_dir, inner) = embedded();
        // A hundredth of a write unit per second: the first write empties the bucket
        // into debt for about a hundred seconds; the test needs no waiting.
        let budget = Throughput {
            read_units_per_s: None,
            write_units_per_s: Some(0.01),
        };
        let slow = SlowStore::new(inner.clone(), Latency::ZERO).with_throughput(budget);
        let (table, a, b) = (
            Context::Goals,
            Key::new("USER#u", "A"),
            Key::new("USER#u", "B"),
        );

        slow.put(table, a.to_item(), None).await.expect("first put");
        let refused = slow.put(table, b.to_item(), None).await;

        assert!(matches!(refused, Err(StoreError::Throttled)), "{refused:?}");
        assert_eq!(inner.get(table, &b, true).await.expect("get"), None);
        // Another table has its own budget; reads are not limited.
        slow.put(Context::Sleep, b.to_item(), None)
            .await
            .expect("another table");
        assert!(slow.get(table, &a, true).await.expect("read").is_some());
        assert_eq!(
            slow.stats(),
            SlowStats {
                requests: 4,
                throttled: 1,
                waited: Duration::ZERO
            }
        );
    }

    #[tokio::test]
    async fn each_round_trip_waits_a_latency_and_a_transaction_two() {
        let (_dir, inner) = embedded();
        let ms = Duration::from_millis(1);
        let slow = SlowStore::new(inner, Latency::new(ms, ms));
        let (table, key) = (Context::Goals, Key::new("USER#u", "A"));

        slow.get(table, &key, false).await.expect("get");
        let put = TransactAction::Put {
            table,
            item: key.to_item(),
            condition: None,
        };
        slow.transact(vec![put]).await.expect("transaction");
        let writes = (0..30)
            .map(|i| BatchWrite::Put(Key::new("USER#u", format!("B{i}")).to_item()))
            .collect();
        slow.write_batch(table, writes).await.expect("batch");

        // 1 (get) + 2 (transaction) + 2 (30 writes: two BatchWriteItems).
        assert_eq!(slow.stats().waited, 5 * ms);
        assert_eq!(slow.stats().requests, 3);
    }
}
