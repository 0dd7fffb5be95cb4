//! Password hashing with bounded memory. An argon2id hash needs about 19 MiB of working
//! memory; run one per request on the blocking pool and a storm of logins holds hundreds
//! of them at once, and the allocator keeps that memory afterwards (measured: 14 MB to
//! 4.9 GB for 256 failed logins). Here a fixed set of threads (one per core) does all the
//! hashing, each reusing one working buffer; requests wait in a short queue and are
//! refused as `Busy` when it is full or their wait passes [`QUEUE_DEADLINE`]. Memory for
//! hashing is therefore at most `threads x 19 MiB`, whatever the load.

use crate::CommandError;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;

/// Requests that may wait for a hashing thread; more are refused at once.
const QUEUE_LEN: usize = 64;
/// How long a request may wait for a hashing thread before it is refused.
pub const QUEUE_DEADLINE: Duration = Duration::from_secs(3);
/// What a refused caller is told to wait, in seconds.
const RETRY_AFTER_S: u64 = 1;

enum Work {
    Hash(String),
    Verify { password: String, phc: String },
}

enum Done {
    Hashed(Result<String, String>),
    Verified(bool),
}

struct Job {
    work: Work,
    queued_at: Instant,
    reply: oneshot::Sender<Option<Done>>,
}

/// The process's hashing threads and their queue.
struct Pool {
    jobs: SyncSender<Job>,
}

fn busy() -> CommandError {
    CommandError::Busy {
        retry_after_s: RETRY_AFTER_S,
    }
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let (jobs, queue) = sync_channel::<Job>(QUEUE_LEN);
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads {
            let queue = queue.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("vitals-password-{n}"))
                .spawn(move || work(&queue));
            if let Err(error) = spawned {
                tracing::error!(%error, "cannot start a password hashing thread");
            }
        }
        Pool { jobs }
    })
}

/// One hashing thread: takes jobs until the queue closes, with one working buffer.
fn work(queue: &Mutex<Receiver<Job>>) {
    let mut memory: Vec<Block> = Vec::new();
    loop {
        let job = match queue.lock() {
            Ok(queue) => match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
            Err(_) => return,
        };
        // The caller has given up (or will, before this finishes): skip the work.
        if job.queued_at.elapsed() > QUEUE_DEADLINE {
            let _ = job.reply.send(None);
            continue;
        }
        let done = match job.work {
            Work::Hash(password) => Done::Hashed(hash_with(&mut memory, &password)),
            Work::Verify { password, phc } => {
                Done::Verified(verify_with(&mut memory, &password, &phc))
            }
        };
        let _ = job.reply.send(Some(done));
    }
}

async fn run(work: Work) -> Result<Done, CommandError> {
    let (reply, answer) = oneshot::channel();
    let job = Job {
        work,
        queued_at: Instant::now(),
        reply,
    };
    match pool().jobs.try_send(job) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => return Err(busy()),
        Err(TrySendError::Disconnected(_)) => {
            return Err(CommandError::Internal("no password hashing thread".into()));
        }
    }
    match answer.await {
        Ok(Some(done)) => Ok(done),
        Ok(None) => Err(busy()),
        Err(_) => Err(CommandError::Internal(
            "a password hashing thread stopped".into(),
        )),
    }
}

/// The argon2id PHC string of `password` with a fresh salt.
pub async fn hash(password: String) -> Result<String, CommandError> {
    match run(Work::Hash(password)).await? {
        Done::Hashed(result) => {
            result.map_err(|e| CommandError::Internal(format!("password hashing failed: {e}")))
        }
        Done::Verified(_) => Err(CommandError::Internal("unexpected answer".into())),
    }
}

/// Whether `password` matches the PHC string `phc` (compared in constant time).
pub async fn verify(password: String, phc: String) -> Result<bool, CommandError> {
    match run(Work::Verify { password, phc }).await? {
        Done::Verified(ok) => Ok(ok),
        Done::Hashed(_) => Err(CommandError::Internal("unexpected answer".into())),
    }
}

fn argon2(params: Params) -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// The working buffer for `params`, grown (never shrunk) as needed.
fn blocks(memory: &mut Vec<Block>, params: &Params) -> Result<(), String> {
    let needed = params.block_count();
    if needed > 1 << 22 {
        return Err("memory cost out of range".into());
    }
    if memory.len() < needed {
        memory.resize(needed, Block::default());
    }
    Ok(())
}

fn hash_with(memory: &mut Vec<Block>, password: &str) -> Result<String, String> {
    let params = Params::default();
    blocks(memory, &params)?;
    let salt = SaltString::generate(&mut OsRng);
    let mut salt_bytes = [0u8; 64];
    let raw_salt = salt
        .as_salt()
        .decode_b64(&mut salt_bytes)
        .map_err(|e| e.to_string())?;
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    argon2(params.clone())
        .hash_password_into_with_memory(password.as_bytes(), raw_salt, &mut out, &mut memory[..])
        .map_err(|e| e.to_string())?;
    let phc = PasswordHash {
        algorithm: argon2::ARGON2ID_IDENT,
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(&params).map_err(|e| e.to_string())?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&out).map_err(|e| e.to_string())?),
    };
    Ok(phc.to_string())
}

fn verify_with(memory: &mut Vec<Block>, password: &str, phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    if parsed.algorithm != argon2::ARGON2ID_IDENT {
        return false;
    }
    let (Ok(params), Some(salt), Some(expected)) =
        (Params::try_from(&parsed), parsed.salt, parsed.hash)
    else {
        return false;
    };
    if blocks(memory, &params).is_err() {
        return false;
    }
    let mut salt_bytes = [0u8; 64];
    let Ok(raw_salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut out = vec![0u8; expected.len()];
    let params = match Params::new(
        params.m_cost(),
        params.t_cost(),
        params.p_cost(),
        Some(expected.len()),
    ) {
        Ok(params) => params,
        Err(_) => return false,
    };
    argon2(params)
        .hash_password_into_with_memory(password.as_bytes(), raw_salt, &mut out, &mut memory[..])
        .is_ok()
        && bool::from(out.as_slice().ct_eq(expected.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::PasswordVerifier;

    #[tokio::test]
    async fn hashes_verify_and_are_standard_phc_strings() {
        let phc = hash("correct horse battery".into()).await.expect("hashed");
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(
            verify("correct horse battery".into(), phc.clone())
                .await
                .expect("ran")
        );
        assert!(
            !verify("wrong horse battery".into(), phc.clone())
                .await
                .expect("ran")
        );
        assert!(
            !verify("x".into(), "not a phc string".into())
                .await
                .expect("ran")
        );
        // The standard verifier agrees, so hashes stored before this pool still verify
        // and hashes made here verify elsewhere.
        let parsed = PasswordHash::new(&phc).expect("parses");
        assert!(
            Argon2::default()
                .verify_password(b"correct horse battery", &parsed)
                .is_ok()
        );
    }

    #[tokio::test]
    async fn hashes_made_by_the_standard_hasher_verify() {
        use argon2::PasswordHasher;
        let salt = SaltString::generate(&mut OsRng);
        let phc = Argon2::default()
            .hash_password(b"older account", &salt)
            .expect("hash")
            .to_string();
        assert!(verify("older account".into(), phc).await.expect("ran"));
    }
}
