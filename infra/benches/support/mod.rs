//! What the store benchmarks share: deterministic data and latency recording.

use hdrhistogram::Histogram;
use std::time::Instant;

/// A small deterministic generator (SplitMix64): no dependency, same data every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A latency histogram: 1 us to 100 s, 3 significant digits.
pub fn histogram() -> anyhow::Result<Histogram<u64>> {
    Ok(Histogram::new_with_bounds(1, 100_000_000, 3)?)
}

/// Records the time since `started`, in microseconds (at least 1).
pub fn record(h: &mut Histogram<u64>, started: Instant) {
    h.saturating_record(started.elapsed().as_micros().max(1) as u64);
}
