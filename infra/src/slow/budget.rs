//! The capacity a [`super::SlowStore`] lets through: each table's [`Throughput`], the
//! bucket that meters one kind of unit of a table, and what a request costs a table
//! ([`crate::capacity`]'s prices, from what the request carries and returns).

use crate::capacity;
use crate::store::Item;
use events_schema::Context;
use tokio::time::Instant;

/// Capacity units per second each table answers before it throttles; `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Throughput {
    pub read_units_per_s: Option<f64>,
    pub write_units_per_s: Option<f64>,
}

impl Throughput {
    pub const UNLIMITED: Throughput = Throughput {
        read_units_per_s: None,
        write_units_per_s: None,
    };

    /// What a new on-demand table sustains before it has scaled: 12,000 reads and 4,000
    /// writes per second (AWS, "DynamoDB on-demand capacity mode: initial throughput").
    pub fn on_demand_new_table() -> Self {
        Self {
            read_units_per_s: Some(12_000.0),
            write_units_per_s: Some(4_000.0),
        }
    }
}

/// A table's budget of one kind of unit: a bucket that refills at `rate` units per second
/// and holds one second's worth. A request is let through when the bucket holds what it
/// is known to cost up front (or is full: a request dearer than a second's worth would
/// otherwise never pass); what it turns out to cost beyond that is taken afterwards and
/// may leave the bucket in debt, which throttles the requests that follow until repaid.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bucket {
    rate: f64,
    pub(super) units: f64,
    at: Instant,
}

impl Bucket {
    pub(super) fn full(rate: f64, now: Instant) -> Self {
        Self {
            rate,
            units: rate,
            at: now,
        }
    }

    pub(super) fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.units = (self.units + elapsed * self.rate).min(self.rate);
        self.at = self.at.max(now);
    }

    pub(super) fn holds(&mut self, units: f64, now: Instant) -> bool {
        self.refill(now);
        self.units >= units.min(self.rate)
    }
}

/// Units a request costs one table.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Charge {
    pub(super) read: f64,
    pub(super) write: f64,
}

impl Charge {
    pub(super) fn read(units: f64) -> Self {
        Self {
            read: units,
            write: 0.0,
        }
    }

    pub(super) fn write(units: f64) -> Self {
        Self {
            read: 0.0,
            write: units,
        }
    }
}

/// The least a read costs: one unit, half when eventually consistent.
pub(super) fn least_read(consistent: bool) -> Charge {
    Charge::read(capacity::read_units(0, consistent))
}

/// What a read returning `items` costs.
pub(super) fn read_cost(items: &[Item], consistent: bool) -> Charge {
    Charge::read(capacity::read(items, consistent).read_units)
}

/// What a write costs if it creates `item` (its item before is unknown).
pub(super) fn creating(table: Context, item: &Item, transactional: bool) -> f64 {
    capacity::write(table, None, Some(item), transactional).write_units
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bucket_lets_through_what_it_holds_and_refills_at_its_rate() {
        let start = Instant::now();
        let mut bucket = Bucket::full(10.0, start);
        assert!(bucket.holds(10.0, start));
        bucket.units -= 10.0;
        assert!(!bucket.holds(1.0, start));
        let later = start + Duration::from_millis(100);
        assert!(bucket.holds(1.0, later), "0.1 s refills one unit");
        // It holds at most one second's worth, however long it rested.
        assert!(bucket.holds(10.0, start + Duration::from_secs(60)));
        assert_eq!(bucket.units, 10.0);
        // A request dearer than a second's worth passes a full bucket, into debt.
        assert!(bucket.holds(25.0, start + Duration::from_secs(60)));
        bucket.units -= 25.0;
        assert!(!bucket.holds(1.0, start + Duration::from_secs(61)));
        assert!(bucket.holds(1.0, start + Duration::from_secs(62)));
    }
}
