//! What the AWS stack runs, derived from the table definitions (`events-schema`) and the
//! subscription registry (`projectors`): which tables publish, one projector function per
//! table that subscriptions write (with a mapping on each stream it reads), and what each
//! function may read and write. The template ([`super::template`]) only renders this.
//!
//! Why one function per written table. The design's first promise is that a context's
//! code can write only its own table, so a bug in meal logging physically cannot corrupt
//! workout history: each function's role may write exactly one table. A subscription
//! writes one table (its target), so the subscriptions are grouped by target: the
//! `dashboard` projector runs the six `dashboard-from-*` subscriptions, one event source
//! mapping per stream it reads.
//!
//! Why that fits Kinesis. A shard serves 5 `GetRecords` calls a second, shared by every
//! standard consumer, and a mapping polls each shard about once a second: a stream read
//! by more than [`MAX_MAPPINGS_PER_STREAM`] mappings would throttle its readers and lag,
//! with nothing left for `vitals redrive-failures` or an operator. Account erasure is
//! what once put seven writers on the identity stream (an eraser per context); it runs as
//! a chain instead (`projectors::erasure::ERASURE_CHAIN`: each context's eraser starts
//! on its predecessor's `PartitionDrained`, mostly on streams its table already reads),
//! which keeps every stream at 4 readers or fewer with standard consumers: no enhanced
//! fan-out (per consumer-shard-hour) is needed. `docs/cost.md` has the arithmetic.

use events_schema::Context;
use events_schema::tables::{TABLES, TableDef};
use projectors::Projector;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Records per batch handed to a consumer. A record costs each subscription a few
/// conditional writes (~5-10 ms each on DynamoDB), so 100 records x up to 8
/// subscriptions stays within seconds, far from the function's timeout, while
/// amortising the invocation over many records.
pub const BATCH_SIZE: u32 = 100;
/// Concurrent batches per shard. Lambda keeps the order of records with the same
/// partition key (one user's item) across them, which is the only order projections
/// need; 4 lets a hot shard's users be projected in parallel.
pub const PARALLELIZATION_FACTOR: u32 = 4;
/// Retries of a failing batch (halved each time: bisect on error) before the batch's
/// description goes to the on-failure queue.
pub const MAXIMUM_RETRY_ATTEMPTS: u32 = 5;
/// A record older than this is not retried again but sent to the on-failure queue,
/// leaving 23 of the stream's 24 hours of retention for `vitals redrive` to fetch it.
pub const MAXIMUM_RECORD_AGE_SECONDS: u32 = 3_600;
/// Kinesis retention of the change streams.
pub const RETENTION_HOURS: u32 = 24;
/// Shards of each change stream unless the stack's `StreamShards` parameter says
/// otherwise (0: on demand).
///
/// Why provisioned, one shard. An on-demand stream costs $0.04 an hour before it
/// carries a record: eight of them were $233.60 of the stack's $238 monthly floor
/// (`docs/cost.md`), the price of ~50,000 active users. A provisioned shard costs
/// $0.015 an hour and takes 1,000 records and 1 MB a second. The busiest stream is
/// nutrition's: a logged meal changes 4 items of its table, so it puts 4 records into it,
/// 3.3 KB with both item images (`cargo bench -p vitals-tests --bench consumer` counts
/// both from the real command's changes), so a
/// shard takes 250 meals a second, records first (1,000 / 4), bytes next (1,024 / 3.3 =
/// 310). A breakfast spike of 30% of 100,000 users within ten minutes is 50 meals a
/// second on average, 150 bunched: one shard, 60% full. Past that, raise `StreamShards`
/// in doubling steps (`UpdateShardCount` at most doubles a stream a call, 10 calls a
/// day; the README's runbook), or set it to 0.
pub const DEFAULT_STREAM_SHARDS: u32 = 1;

/// The contexts the HTTP API writes: every context that owns commands. Dashboard and
/// insights rows are written only by their projections (and the nightly job).
pub const API_WRITES: [Context; 7] = [
    Context::Identity,
    Context::Nutrition,
    Context::Activity,
    Context::Sleep,
    Context::Goals,
    Context::Integrations,
    Context::Environment,
];

/// The nightly readiness job reads the insights markers (through the `active-day`
/// index) and writes readiness rows to the same table.
pub const NIGHTLY_WRITES: [Context; 1] = [Context::Insights];

/// Standard consumers (event source mappings) a stream may have: of a shard's 5
/// `GetRecords` calls a second, one is left for `vitals redrive-failures` and an
/// operator's reads.
pub const MAX_MAPPINGS_PER_STREAM: usize = 4;

/// What a projector function applies from one stream it reads.
#[derive(Debug, Clone)]
pub struct Source {
    pub context: Context,
    /// Its subscriptions on this stream, by name.
    pub subscriptions: Vec<&'static str>,
    /// The event types any of them applies: the mapping passes only these.
    pub event_types: BTreeSet<&'static str>,
}

/// A projector function: every subscription writing one table, fed by a mapping on each
/// stream those subscriptions read.
#[derive(Debug, Clone)]
pub struct Consumer {
    /// The one table it writes (its subscriptions' dead letters live there too).
    pub target: Context,
    /// The streams it reads, in context order.
    pub sources: Vec<Source>,
}

impl Consumer {
    /// The tables it writes: its target alone.
    pub fn writes(&self) -> BTreeSet<Context> {
        BTreeSet::from([self.target])
    }

    /// The tables it reads: its target only (every projection checks the erasure
    /// tombstone in the table it writes, and reads the rows it merges into there).
    pub fn reads(&self) -> BTreeSet<Context> {
        self.writes()
    }

    /// Whether a change of `source` carrying `event_type` is delivered to it.
    pub fn receives(&self, source: Context, event_type: &str) -> bool {
        self.sources
            .iter()
            .any(|s| s.context == source && s.event_types.contains(event_type))
    }
}

/// What the stack runs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Tables whose changes something consumes: each streams into its own Kinesis stream.
    pub published: Vec<&'static TableDef>,
    pub consumers: Vec<Consumer>,
}

impl Plan {
    /// The mappings on `source`'s stream: one per function reading it.
    pub fn readers(&self, source: Context) -> usize {
        self.consumers
            .iter()
            .filter(|c| c.sources.iter().any(|s| s.context == source))
            .count()
    }
}

/// The plan for the whole registry.
pub fn plan() -> Plan {
    plan_for(&projectors::registry::described())
}

/// The plan for `subscriptions`.
pub fn plan_for(subscriptions: &[Arc<dyn Projector>]) -> Plan {
    let consumers: Vec<Consumer> = Context::ALL
        .into_iter()
        .filter_map(|target| {
            let sources: Vec<Source> = TABLES
                .iter()
                .filter(|def| def.stream)
                .filter_map(|def| {
                    let mine: Vec<&Arc<dyn Projector>> = subscriptions
                        .iter()
                        .filter(|s| s.target() == target && s.source() == def.context)
                        .collect();
                    (!mine.is_empty()).then(|| Source {
                        context: def.context,
                        subscriptions: mine.iter().map(|s| s.name()).collect(),
                        event_types: mine.iter().flat_map(|s| s.consumes()).copied().collect(),
                    })
                })
                .collect();
            (!sources.is_empty()).then_some(Consumer { target, sources })
        })
        .collect();
    let published = TABLES
        .iter()
        .filter(|def| {
            consumers
                .iter()
                .any(|c| c.sources.iter().any(|s| s.context == def.context))
        })
        .collect();
    Plan {
        published,
        consumers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_writes_one_table() {
        let plan = plan();
        assert!(!plan.consumers.is_empty());
        for consumer in &plan.consumers {
            assert_eq!(consumer.writes().len(), 1, "{consumer:?}");
            assert!(!consumer.sources.is_empty());
        }
    }

    #[test]
    fn no_stream_has_more_readers_than_its_shards_serve() {
        let plan = plan();
        for def in &plan.published {
            let readers = plan.readers(def.context);
            assert!(
                (1..=MAX_MAPPINGS_PER_STREAM).contains(&readers),
                "{} is read by {readers} mappings",
                def.context
            );
        }
    }

    #[test]
    fn every_subscription_runs_in_exactly_one_function() {
        let plan = plan();
        for subscription in projectors::registry::described() {
            let runs = plan
                .consumers
                .iter()
                .flat_map(|c| &c.sources)
                .filter(|s| s.subscriptions.contains(&subscription.name()))
                .count();
            assert_eq!(runs, 1, "{}", subscription.name());
        }
    }
}
