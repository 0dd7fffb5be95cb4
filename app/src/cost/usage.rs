//! What requests used: their counts, the capacity units DynamoDB would bill and the
//! projector invocations their events cause ([`Usage`]), summed into the lines of the
//! user-day ([`Line`]).

use infra::capacity::Capacity;

/// What some requests used, with the events they caused applied.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub api_requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub transactions: u64,
    pub capacity: Capacity,
    /// Projector invocations (one per outbox event and function it is delivered to, an
    /// upper bound).
    pub consumer_invocations: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.api_requests += other.api_requests;
        self.reads += other.reads;
        self.writes += other.writes;
        self.transactions += other.transactions;
        self.capacity += other.capacity;
        self.consumer_invocations += other.consumer_invocations;
    }
}

/// One line of the user-day: what the app does, how often a day, and what it used.
#[derive(Debug, Clone)]
pub struct Line {
    pub what: &'static str,
    pub per_day: u32,
    /// All occurrences of the day together.
    pub usage: Usage,
}

/// `usage` times `factor` (a day scaled to a month).
pub(super) fn scale(usage: &Usage, factor: f64) -> Usage {
    let times = |n: u64| (n as f64 * factor).round() as u64;
    Usage {
        api_requests: times(usage.api_requests),
        reads: times(usage.reads),
        writes: times(usage.writes),
        transactions: times(usage.transactions),
        capacity: Capacity {
            read_units: usage.capacity.read_units * factor,
            write_units: usage.capacity.write_units * factor,
            cdc_units: usage.capacity.cdc_units * factor,
            unchanged_write_units: usage.capacity.unchanged_write_units * factor,
        },
        consumer_invocations: times(usage.consumer_invocations),
    }
}
