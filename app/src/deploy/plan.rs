//! What the AWS stack runs, derived from the table definitions (`events-schema`) and the
//! subscription registry (`projectors`): which tables publish, one consumer function per
//! published stream with the subscriptions it fans out to, and what each function may
//! read and write. The template ([`super::template`]) only renders this.
//!
//! Why one consumer per stream. A Kinesis shard serves 5 `GetRecords` calls per second
//! and 2 MB/s, shared by every standard consumer, and a Lambda event source mapping
//! polls each shard about once a second. One mapping per subscription would put 8
//! pollers on the identity stream (the dashboard and 7 erasers), 5 on nutrition and 5 on
//! activity: 8 calls/s against a budget of 5, so they would throttle each other and lag.
//! One mapping per stream makes it 1 call/s per shard whatever the number of
//! subscriptions (the function applies each record to every subscription of the stream),
//! leaving 4 calls/s for `vitals redrive` and an operator's `vitals work`. Enhanced
//! fan-out (2 MB/s per consumer, pushed) is not needed at this size and costs per
//! consumer-shard-hour; it becomes the answer if one stream's subscriptions need
//! different batch sizes.

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
/// $0.015 an hour and takes 1,000 records (1 MB) a second. An active user makes about
/// 80 changes a day over all streams (`docs/cost.md`: ~2,400 CDC units a month), 0.001
/// a second, so even with every change on one stream and the busiest hour at ten times
/// the average, one shard carries ~100,000 active users. Past that, raise
/// `StreamShards` (a stack update resharding in place) or set it to 0.
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

/// One stream consumer: a function on one context's stream.
#[derive(Debug, Clone)]
pub struct Consumer {
    pub source: Context,
    /// The subscriptions it applies each record to, by name.
    pub subscriptions: Vec<&'static str>,
    /// The tables those subscriptions write (their dead letters live there too).
    pub writes: BTreeSet<Context>,
}

impl Consumer {
    /// The tables it reads: those it writes, and identity (every projection checks the
    /// user's erasure tombstone before writing).
    pub fn reads(&self) -> BTreeSet<Context> {
        let mut reads = self.writes.clone();
        reads.insert(Context::Identity);
        reads
    }
}

/// What the stack runs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Tables whose changes something consumes: each streams into its own Kinesis stream.
    pub published: Vec<&'static TableDef>,
    pub consumers: Vec<Consumer>,
}

/// The plan for the whole registry.
pub fn plan() -> Plan {
    plan_for(&projectors::registry::described())
}

/// The plan for `subscriptions`.
pub fn plan_for(subscriptions: &[Arc<dyn Projector>]) -> Plan {
    let consumers: Vec<Consumer> = TABLES
        .iter()
        .filter(|def| def.stream)
        .filter_map(|def| {
            let mine: Vec<&Arc<dyn Projector>> = subscriptions
                .iter()
                .filter(|s| s.source() == def.context)
                .collect();
            (!mine.is_empty()).then(|| Consumer {
                source: def.context,
                subscriptions: mine.iter().map(|s| s.name()).collect(),
                writes: mine.iter().map(|s| s.target()).collect(),
            })
        })
        .collect();
    let published = TABLES
        .iter()
        .filter(|def| consumers.iter().any(|c| c.source == def.context))
        .collect();
    Plan {
        published,
        consumers,
    }
}
