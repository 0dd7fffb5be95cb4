//! A child process for the crash-durability test: opens the embedded store in the
//! directory given as its argument and commits 3-item transactions from several
//! concurrent writers forever, printing `ACK <writer> <n>` after each acknowledged one.
//! The test kills it with SIGKILL at an arbitrary moment and inspects what survived.

use anyhow::Context as _;
use events_schema::Context;
use infra::Store;
use infra::embedded::EmbeddedStore;
use infra::store::{Condition, TransactAction};
use serde_json::json;
use std::io::Write;
use std::sync::Arc;

/// Writers committing at once, so kills also land inside group commits.
const WRITERS: usize = 8;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .context("usage: crash-writer <data dir>")?;
    let round = std::env::args().nth(2).unwrap_or_else(|| "0".to_owned());
    let store = Arc::new(EmbeddedStore::open(std::path::Path::new(&dir))?);
    let stdout = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let (store, stdout, round) = (store.clone(), stdout.clone(), round.clone());
        tasks.push(tokio::spawn(async move {
            for n in 0u64.. {
                let pk = format!("USER#crash-{round}-{writer}");
                let actions = ["a", "b", "c"]
                    .into_iter()
                    .map(|part| TransactAction::Put {
                        table: Context::Nutrition,
                        item: json!({"pk": pk, "sk": format!("EVT#{n:08}#{part}"), "n": n, "pad": "x".repeat(200)})
                            .as_object()
                            .cloned()
                            .unwrap_or_default(),
                        condition: Some(Condition::ItemNotExists),
                    })
                    .collect();
                store.transact(actions).await?;
                let mut out = stdout.lock().map_err(|_| anyhow::anyhow!("stdout lock poisoned"))?;
                writeln!(out, "ACK {writer} {n}")?;
                out.flush()?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}
