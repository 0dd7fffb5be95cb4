//! One writer per user inside a process. A user's own writes contend for the same items
//! (a day's summary, a goal, the profile): a phone flushing its offline queue sends them
//! all at once. Optimistic retries resolve that eventually, but under load some run out
//! of attempts and the phone sees an error for a write that was never in conflict with
//! anyone else. So write commands take their user's lock first: within a process one
//! user's writes run one after the other, and the optimistic condition remains the
//! guard against other processes (other API instances, Lambda). Different users never
//! wait for each other, except for the rare pair that shares one of the stripes.

use events_schema::ids::UserId;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};
use tokio::sync::{Mutex, MutexGuard};

/// Locks in a set; a user's lock is the one their id hashes to.
const STRIPES: usize = 4096;

/// The write locks of one process, one per stripe of user ids.
#[derive(Clone)]
pub struct Writers(Arc<[Mutex<()>]>);

impl std::fmt::Debug for Writers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writers").finish_non_exhaustive()
    }
}

/// The set every handler of this process shares.
static PROCESS: LazyLock<Writers> = LazyLock::new(Writers::separate);

impl Writers {
    /// The locks every handler of this process shares: what handlers take by default.
    pub fn process() -> Self {
        PROCESS.clone()
    }

    /// A set of locks of its own: handlers given it write as another process would, so
    /// a test can race two "processes" over one store.
    pub fn separate() -> Self {
        Self((0..STRIPES).map(|_| Mutex::new(())).collect())
    }

    /// Waits for `user`'s write lock; it is released when the guard drops. A command
    /// holds at most one such lock, so two commands can never wait for each other in a
    /// cycle.
    pub(crate) async fn user(&self, user: &UserId) -> MutexGuard<'_, ()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        user.hash(&mut hasher);
        let stripe = (hasher.finish() % STRIPES as u64) as usize;
        self.0[stripe].lock().await
    }
}
