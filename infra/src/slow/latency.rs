//! The latency a [`super::SlowStore`] adds to each request: a log-normal distribution
//! fitted to a median and a 99th percentile, drawn from a seeded generator (the same seed,
//! the same latencies).

use rand::Rng;
use std::time::Duration;

/// The 99th percentile of the standard normal distribution.
const Z_99: f64 = 2.326_347_874_040_841;

/// A log-normal latency distribution fitted to a median and a 99th percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    median: Duration,
    /// The standard deviation of the latency's logarithm.
    sigma: f64,
}

impl Latency {
    /// No latency at all.
    pub const ZERO: Latency = Latency {
        median: Duration::ZERO,
        sigma: 0.0,
    };

    /// DynamoDB's, within a region: p50 5 ms, p99 15 ms.
    pub fn dynamodb() -> Self {
        Self::new(Duration::from_millis(5), Duration::from_millis(15))
    }

    /// The log-normal whose median is `p50` and 99th percentile `p99` (a `p99` not above
    /// `p50` makes every sample `p50`).
    pub fn new(p50: Duration, p99: Duration) -> Self {
        // ln(latency) ~ N(mu, sigma²): the median is e^mu, the p99 e^(mu + Z_99 sigma).
        let sigma = if p50.is_zero() || p99 <= p50 {
            0.0
        } else {
            (p99.as_secs_f64() / p50.as_secs_f64()).ln() / Z_99
        };
        Self { median: p50, sigma }
    }

    /// One latency. Pure: the same seeded generator gives the same latencies.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        if self.sigma == 0.0 {
            return self.median;
        }
        let factor = (self.sigma * standard_normal(rng)).exp();
        Duration::try_from_secs_f64(self.median.as_secs_f64() * factor).unwrap_or(Duration::MAX)
    }
}

/// A standard normal draw (Box–Muller; `1 - u` keeps the logarithm finite).
fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let (u, v): (f64, f64) = (rng.r#gen(), rng.r#gen());
    (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    /// The empirical `q` quantile of sorted durations.
    fn quantile(sorted: &[Duration], q: f64) -> Duration {
        sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
    }

    #[test]
    fn dynamodbs_latency_has_a_5_ms_median_and_a_15_ms_p99() {
        let mut rng = StdRng::seed_from_u64(37);
        let latency = Latency::dynamodb();
        let mut samples: Vec<Duration> = (0..100_000).map(|_| latency.sample(&mut rng)).collect();
        samples.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let (p50, p99) = (ms(quantile(&samples, 0.5)), ms(quantile(&samples, 0.99)));
        assert!((p50 - 5.0).abs() < 0.1, "p50 {p50} ms");
        assert!((p99 - 15.0).abs() < 0.5, "p99 {p99} ms");
    }

    #[test]
    fn a_latency_without_spread_is_constant_and_a_seed_repeats_the_draws() {
        let mut rng = StdRng::seed_from_u64(1);
        let fixed = Latency::new(Duration::from_millis(3), Duration::from_millis(3));
        assert!((0..100).all(|_| fixed.sample(&mut rng) == Duration::from_millis(3)));
        assert_eq!(Latency::ZERO.sample(&mut rng), Duration::ZERO);
        let draws = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..10)
                .map(|_| Latency::dynamodb().sample(&mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
    }
}
