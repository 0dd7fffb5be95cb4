//! A model of one Kinesis shard's throughput limits, so that a benchmark's change feed
//! is held to what production's would be: writes past 1,000 records or 1 MiB per
//! second are refused, and readers share 5 `GetRecords` calls and 2 MiB per second.
//!
//! The model is deterministic and never reads a clock: every method takes `now`, the
//! time since an epoch of the caller's choosing (a benchmark's start, or simulated
//! time), so a test can state exact instants. A `now` earlier than one already seen
//! counts as that one. It keeps every record's arrival time and size (nothing is
//! trimmed, as within Kinesis' 24-hour retention), and each reader's position, so a
//! benchmark can tell each record's lag when it is read.
//!
//! "Per second" is read the strict way: no one-second interval ever holds more than a
//! limit (a sliding window), rather than per calendar second.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

// A shard's limits, from AWS's "Quotas and limits" of Kinesis Data Streams
// (docs.aws.amazon.com/streams/latest/dev/service-sizes-and-limits.html).

/// Records a shard accepts per second (`PutRecord`/`PutRecords`).
pub const PUT_RECORDS_PER_S: usize = 1_000;
/// Bytes (data and partition keys) a shard accepts per second.
pub const PUT_BYTES_PER_S: usize = 1024 * 1024;
/// `GetRecords` calls a shard answers per second, all its readers together.
pub const GET_CALLS_PER_S: usize = 5;
/// Bytes a shard returns per second. One call may return more (up to
/// [`GET_MAX_BYTES`]); the calls after it are refused until the rate is repaid ("if a
/// call returns 10 MB, subsequent calls made within the next 5 seconds throw").
pub const GET_BYTES_PER_S: usize = 2 * 1024 * 1024;
/// Records one `GetRecords` call returns at most.
pub const GET_MAX_RECORDS: usize = 10_000;
/// Bytes one `GetRecords` call returns at most.
pub const GET_MAX_BYTES: usize = 10 * 1024 * 1024;

const SECOND: Duration = Duration::from_secs(1);

/// A record the shard holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardRecord {
    /// Its position in the shard, from 0.
    pub sequence: u64,
    /// When the shard accepted it.
    pub arrived: Duration,
    pub bytes: usize,
}

impl ShardRecord {
    /// How long it has been in the shard at `now` (a reader's lag when it reads it).
    pub fn age(&self, now: Duration) -> Duration {
        now.saturating_sub(self.arrived)
    }
}

/// What a put did: the first `accepted` records are in the shard; the `refused` rest
/// were answered `ProvisionedThroughputExceededException`, to be sent again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Put {
    pub accepted: usize,
    pub refused: usize,
}

/// What a `GetRecords` call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    pub records: Vec<ShardRecord>,
    /// The age of the oldest record the reader has still to read (zero: caught up).
    pub behind: Duration,
}

/// A `GetRecords` call refused (`ProvisionedThroughputExceededException` on a read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("read throughput of the shard exceeded; try again in {retry_after:?}")]
pub struct ReadThrottled {
    /// How long until a call would be answered, if no other reader calls first.
    pub retry_after: Duration,
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct Shard {
    records: Vec<ShardRecord>,
    /// Puts of the last second: when, how many records, how many bytes.
    puts: VecDeque<(Duration, usize, usize)>,
    put_records: usize,
    put_bytes: usize,
    /// Answered `GetRecords` calls of the last second.
    gets: VecDeque<Duration>,
    /// When the bytes read so far are paid for at [`GET_BYTES_PER_S`]: the read
    /// allowance is a bucket of one second's bytes, full again then; a call is answered
    /// while the bucket is not empty (paid up to less than a second ahead), so many small
    /// reads in one instant pass and a 10 MiB read empties it for the next 4 s.
    reads_paid_at: Duration,
    /// Each reader's next record.
    positions: HashMap<String, usize>,
    clock: Duration,
}

impl Shard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `records` records of `bytes` bytes together (sized alike) at `now`.
    pub fn put(&mut self, now: Duration, records: usize, bytes: usize) -> Put {
        let (each, rest) = (
            bytes.checked_div(records).unwrap_or(0),
            bytes.checked_rem(records).unwrap_or(0),
        );
        self.put_sizes(now, (0..records).map(|i| each + usize::from(i < rest)))
    }

    /// Puts records of these sizes at `now`, in order: the shard accepts them until
    /// one would pass a limit, and refuses that one and the rest.
    pub fn put_sizes(&mut self, now: Duration, sizes: impl IntoIterator<Item = usize>) -> Put {
        let now = self.tick(now);
        while let Some(&(at, records, bytes)) = self.puts.front() {
            if at + SECOND > now {
                break;
            }
            self.puts.pop_front();
            self.put_records -= records;
            self.put_bytes -= bytes;
        }
        let (mut accepted, mut refused, mut accepted_bytes) = (0, 0, 0);
        for bytes in sizes {
            let fits = refused == 0
                && self.put_records + accepted < PUT_RECORDS_PER_S
                && self.put_bytes + accepted_bytes + bytes <= PUT_BYTES_PER_S;
            if !fits {
                refused += 1;
                continue;
            }
            self.records.push(ShardRecord {
                sequence: self.records.len() as u64,
                arrived: now,
                bytes,
            });
            accepted += 1;
            accepted_bytes += bytes;
        }
        if accepted > 0 {
            self.puts.push_back((now, accepted, accepted_bytes));
            self.put_records += accepted;
            self.put_bytes += accepted_bytes;
        }
        Put { accepted, refused }
    }

    /// A `GetRecords` call by `reader` at `now`: up to `max_records` records after the
    /// reader's position (at most [`GET_MAX_RECORDS`] and [`GET_MAX_BYTES`]), which
    /// moves past them. A reader not seen before starts at the first record. Refused
    /// when [`GET_CALLS_PER_S`] calls were answered in the last second or the bytes read
    /// are not yet paid for; a refused call does not count as one.
    pub fn get_records(
        &mut self,
        now: Duration,
        reader: &str,
        max_records: usize,
    ) -> Result<Got, ReadThrottled> {
        let now = self.tick(now);
        while self.gets.front().is_some_and(|&at| at + SECOND <= now) {
            self.gets.pop_front();
        }
        let calls_free_at = match self.gets.front() {
            Some(&oldest) if self.gets.len() >= GET_CALLS_PER_S => oldest + SECOND,
            _ => now,
        };
        let free_at = calls_free_at.max(self.reads_paid_at.saturating_sub(SECOND));
        if free_at > now {
            return Err(ReadThrottled {
                retry_after: free_at - now,
            });
        }
        self.gets.push_back(now);
        let position = self.positions.entry(reader.to_owned()).or_default();
        let (mut end, mut bytes) = (*position, 0);
        let max_records = max_records.min(GET_MAX_RECORDS);
        while let Some(record) = self.records.get(end) {
            if end - *position == max_records || bytes + record.bytes > GET_MAX_BYTES {
                break;
            }
            bytes += record.bytes;
            end += 1;
        }
        let records = self.records[*position..end].to_vec();
        *position = end;
        let behind = self.records.get(end).map_or(Duration::ZERO, |r| r.age(now));
        self.reads_paid_at = self.reads_paid_at.max(now) + paid_in(bytes);
        Ok(Got { records, behind })
    }

    /// Records `reader` has still to read.
    pub fn backlog(&self, reader: &str) -> usize {
        self.records.len() - self.positions.get(reader).copied().unwrap_or(0)
    }

    /// `now`, or the latest instant already seen if later.
    fn tick(&mut self, now: Duration) -> Duration {
        self.clock = self.clock.max(now);
        self.clock
    }
}

/// The time `bytes` take to read at [`GET_BYTES_PER_S`].
fn paid_in(bytes: usize) -> Duration {
    let nanos = bytes as u128 * 1_000_000_000 / GET_BYTES_PER_S as u128;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: usize = 1024;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    fn put(accepted: usize, refused: usize) -> Put {
        Put { accepted, refused }
    }

    #[test]
    fn of_1500_records_put_within_a_second_a_shard_accepts_1000() {
        let mut at_once = Shard::new();
        assert_eq!(at_once.put(ms(0), 1_500, 1_500), put(1_000, 500));
        let mut spread = Shard::new();
        let accepted: usize = (0..15)
            .map(|i| spread.put(ms(66 * i), 100, 100).accepted)
            .sum();
        assert_eq!(accepted, 1_000);
    }

    #[test]
    fn the_records_window_rolls_over() {
        let mut shard = Shard::new();
        assert_eq!(shard.put(ms(0), 600, 600), put(600, 0));
        assert_eq!(shard.put(ms(500), 900, 900), put(400, 500));
        assert_eq!(shard.put(ms(999), 1, 1), put(0, 1));
        // The window rolls over: the first 600 are a second old at 1.0 s.
        assert_eq!(shard.put(ms(1_000), 700, 700), put(600, 100));
        assert_eq!(shard.put(ms(1_500), 500, 500), put(400, 100));
        assert_eq!(shard.backlog("reader"), 2_000);
    }

    #[test]
    fn a_shard_accepts_1_mib_a_second_and_refuses_from_the_first_that_does_not_fit() {
        let mut shard = Shard::new();
        assert_eq!(shard.put_sizes(ms(0), [300 * KIB; 5]), put(3, 2));
        // 900 KiB in the window: a 100 KiB record fits, the one after it and a small
        // one behind it do not (the shard keeps the order).
        assert_eq!(
            shard.put_sizes(ms(500), [100 * KIB, 100 * KIB, 1]),
            put(1, 2)
        );
        assert_eq!(shard.put_sizes(ms(1_000), [900 * KIB]), put(1, 0));
        assert_eq!(shard.put(ms(1_200), 1, PUT_BYTES_PER_S), put(0, 1));
        assert_eq!(shard.put(ms(2_000), 1, PUT_BYTES_PER_S), put(1, 0));
    }

    #[test]
    fn readers_share_five_calls_a_second() {
        let mut shard = Shard::new();
        shard.put(ms(0), 10, 100);
        let readers = ["a", "b", "c"];
        for call in 0..5 {
            let reader = readers[call % 3];
            let got = shard.get_records(ms(100 * call as u64), reader, 100);
            assert!(got.is_ok(), "call {call}: {got:?}");
        }
        // The 6th call within the second is refused until the first is a second old.
        assert_eq!(
            shard.get_records(ms(900), "c", 100),
            Err(ReadThrottled {
                retry_after: ms(100)
            })
        );
        let got = shard
            .get_records(ms(1_000), "c", 100)
            .expect("a new second");
        assert!(got.records.is_empty(), "c read everything before");
    }

    #[test]
    fn each_reader_reads_from_its_position_and_sees_each_records_age() {
        let mut shard = Shard::new();
        shard.put(ms(0), 3, 30);
        shard.put(ms(400), 2, 20);
        let got = shard.get_records(ms(1_000), "a", 4).expect("read");
        let ages: Vec<_> = got.records.iter().map(|r| r.age(ms(1_000))).collect();
        assert_eq!(ages, [ms(1_000), ms(1_000), ms(1_000), ms(600)]);
        assert_eq!(got.behind, ms(600), "the fifth record is unread");
        assert_eq!(shard.backlog("a"), 1);
        let rest = shard.get_records(ms(1_200), "a", 4).expect("read");
        assert_eq!(
            rest.records.iter().map(|r| r.sequence).collect::<Vec<_>>(),
            [4]
        );
        assert_eq!(rest.behind, Duration::ZERO);
        // Another reader starts at the first record.
        let other = shard.get_records(ms(1_400), "b", 100).expect("read");
        assert_eq!(other.records.len(), 5);
    }

    #[test]
    fn a_call_returns_at_most_10_000_records_or_10_mib() {
        let mut shard = Shard::new();
        for second in 0..12 {
            shard.put(ms(1_000 * second), 1_000, 1_000);
        }
        let got = shard.get_records(ms(12_000), "a", 50_000).expect("read");
        assert_eq!(got.records.len(), GET_MAX_RECORDS);

        let mut big = Shard::new();
        for second in 0..11 {
            big.put_sizes(ms(1_000 * second), [PUT_BYTES_PER_S]);
        }
        let got = big.get_records(ms(11_000), "a", 100).expect("read");
        assert_eq!(got.records.len(), 10, "10 MiB");
        assert_eq!(got.behind, ms(1_000));
    }

    #[test]
    fn bytes_read_past_2_mib_a_second_are_paid_for_by_refused_calls() {
        let mut shard = Shard::new();
        for second in 0..5 {
            shard.put_sizes(ms(1_000 * second), [PUT_BYTES_PER_S]);
        }
        // 5 MiB in one call, 2 MiB of it the full bucket's: the calls of the next 1.5 s
        // are refused.
        let got = shard.get_records(ms(5_000), "a", 100).expect("read");
        assert_eq!(got.records.len(), 5);
        assert_eq!(
            shard.get_records(ms(6_000), "b", 100),
            Err(ReadThrottled {
                retry_after: ms(500)
            })
        );
        assert!(shard.get_records(ms(6_500), "b", 1).is_ok());
        // 1 MiB more read: paid at 8.0 s, the bucket empty until 7.0 s.
        assert!(shard.get_records(ms(6_999), "b", 1).is_err());
        assert!(shard.get_records(ms(7_000), "b", 1).is_ok());
        // Small reads in one instant pass while the bucket holds bytes.
        let mut small = Shard::new();
        small.put(ms(0), 400, 400 * KIB);
        for reader in ["a", "b", "c", "d"] {
            assert!(
                small.get_records(ms(1_000), reader, 10_000).is_ok(),
                "{reader}"
            );
        }
    }

    #[test]
    fn time_does_not_run_backwards() {
        let mut shard = Shard::new();
        shard.put(ms(2_000), 1_000, 1_000);
        // An earlier `now` counts as 2.0 s: the window is still full.
        assert_eq!(shard.put(ms(0), 1, 1), put(0, 1));
        assert_eq!(shard.put(ms(3_000), 1, 1), put(1, 0));
    }
}
