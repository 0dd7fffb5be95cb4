//! Backoff between optimistic retries. Writers that lost a version race wait a random,
//! growing moment before trying again, so a burst of writers on one summary spreads out
//! instead of colliding again in lockstep.

use rand::Rng;
use std::time::Duration;

/// Attempts an optimistic command makes before reporting contention.
pub const MAX_ATTEMPTS: usize = 25;

/// Waits before attempt `attempt` (0 = the first, which does not wait): a random
/// duration up to 2^attempt milliseconds, capped at 32 ms ("full jitter"). With 25
/// attempts a command gives up after about 0.4 s of losing races on average.
pub async fn backoff(attempt: usize) {
    if attempt == 0 {
        return;
    }
    let cap_ms = 1u64 << attempt.min(5);
    let wait = rand::thread_rng().gen_range(0..=cap_ms * 1000);
    tokio::time::sleep(Duration::from_micros(wait)).await;
}
