//! `vitals migrate`: moves a self-hosted embedded store to DynamoDB (the emulator, or
//! AWS) without losing an item. Every table is copied page by page with batch writes;
//! after each page the position is saved beside the data (`migrate-<prefix>.json` in the
//! data directory), so an interrupted run resumes where it stopped. Then each table is
//! verified: the item count and an order-independent checksum of the items on both
//! sides must agree.
//!
//! The target tables must be empty when a migration starts (a fresh stack): an item
//! already there may belong to another deployment, and a blind copy would overwrite it.
//! The embedded store must not be open in a running `vitals serve` (it refuses).

use crate::cli::AwsArgs;
use crate::storage;
use anyhow::{Context as _, bail};
use events_schema::Context;
use infra::Store;
use infra::dynamodb::DynamoStore;
use infra::embedded::EmbeddedStore;
use infra::store::{Cursor, Item, Scan};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Items read from the embedded store per page (and saved position).
const PAGE: usize = 500;
/// Items per `BatchWriteItem`.
const BATCH: usize = 25;

/// How far a migration got: per table, the cursor after the last page written, or
/// done.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Progress {
    tables: BTreeMap<String, TableProgress>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct TableProgress {
    cursor: Option<String>,
    copied: u64,
    done: bool,
}

/// One table's verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCheck {
    pub table: Context,
    pub source_items: u64,
    pub target_items: u64,
    pub source_checksum: String,
    pub target_checksum: String,
}

impl TableCheck {
    pub fn matches(&self) -> bool {
        self.source_items == self.target_items && self.source_checksum == self.target_checksum
    }
}

/// What a migration did.
#[derive(Debug, Clone)]
pub struct Migrated {
    /// Items written by this run (a resumed run counts only its own).
    pub copied: u64,
    pub checks: Vec<TableCheck>,
}

fn progress_path(data_dir: &Path, prefix: &str) -> PathBuf {
    data_dir.join(format!("migrate-{prefix}json"))
}

fn load_progress(path: &Path) -> anyhow::Result<Option<Progress>> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            Ok(Some(serde_json::from_str(&text).with_context(|| {
                format!("{} is unreadable", path.display())
            })?))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Saves `progress` atomically (a crash leaves the old file or the new one).
fn save_progress(path: &Path, progress: &Progress) -> anyhow::Result<()> {
    let partial = path.with_extension("partial");
    std::fs::write(&partial, serde_json::to_vec_pretty(progress)?)
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))
}

/// Copies the embedded store in `data_dir` into the DynamoDB tables `aws` names
/// (created if missing), resuming a previous run, then verifies every table.
pub async fn migrate(data_dir: &Path, aws: &AwsArgs) -> anyhow::Result<Migrated> {
    let source = EmbeddedStore::open(data_dir)
        .with_context(|| format!("opening the embedded store in {}", data_dir.display()))?;
    let target = storage::dynamodb(aws).await;
    target
        .bootstrap()
        .await
        .context("creating the target tables")?;
    let path = progress_path(data_dir, &aws.table_prefix);
    let mut progress = match load_progress(&path)? {
        Some(progress) => progress,
        None => {
            for table in Context::ALL {
                if !is_empty(&target, table).await? {
                    bail!(
                        "the target table {} is not empty: a migration starts into empty tables \
                         (it would overwrite what is there)",
                        target.table_name(table)
                    );
                }
            }
            Progress::default()
        }
    };
    let mut copied = 0;
    for table in Context::ALL {
        copied += copy_table(&source, &target, table, &mut progress, &path).await?;
    }
    let mut checks = Vec::new();
    for table in Context::ALL {
        let (source_items, source_checksum) = digest(&source, table).await?;
        let (target_items, target_checksum) = digest(&target, table).await?;
        checks.push(TableCheck {
            table,
            source_items,
            target_items,
            source_checksum,
            target_checksum,
        });
    }
    source.close();
    Ok(Migrated { copied, checks })
}

async fn is_empty(store: &dyn Store, table: Context) -> anyhow::Result<bool> {
    let scan = Scan {
        index: None,
        limit: Some(1),
        cursor: None,
    };
    Ok(store.scan(table, &scan).await?.items.is_empty())
}

async fn copy_table(
    source: &EmbeddedStore,
    target: &DynamoStore,
    table: Context,
    progress: &mut Progress,
    path: &Path,
) -> anyhow::Result<u64> {
    let key = table.to_string();
    let mut copied = 0;
    loop {
        let state = progress.tables.get(&key).cloned().unwrap_or_default();
        if state.done {
            return Ok(copied);
        }
        let scan = Scan {
            index: None,
            limit: Some(PAGE),
            cursor: state.cursor.clone().map(Cursor::from_text),
        };
        let page = source.scan(table, &scan).await?;
        for batch in page.items.chunks(BATCH) {
            target
                .batch_put(table, batch)
                .await
                .with_context(|| format!("writing to {}", target.table_name(table)))?;
        }
        let written = page.items.len() as u64;
        copied += written;
        let next = TableProgress {
            done: page.cursor.is_none(),
            cursor: page.cursor.map(|c| c.as_str().to_owned()),
            copied: state.copied + written,
        };
        progress.tables.insert(key.clone(), next);
        // Saved only once the page is written: a crash repeats at most one page, and
        // writing an item twice leaves the same item.
        save_progress(path, progress)?;
        tracing::info!(%table, copied, "page copied");
    }
}

/// The item count of a table and a checksum of its items that does not depend on their
/// order: the sum (mod 2^128) of each item's SHA-256 over its canonical JSON (keys
/// sorted, as `serde_json` maps are here).
async fn digest(store: &dyn Store, table: Context) -> anyhow::Result<(u64, String)> {
    let mut count = 0u64;
    let mut sum = 0u128;
    let mut cursor = None;
    loop {
        let scan = Scan {
            index: None,
            limit: Some(1000),
            cursor,
        };
        let page = store.scan(table, &scan).await?;
        for item in &page.items {
            count += 1;
            sum = sum.wrapping_add(item_hash(item));
        }
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((count, format!("{sum:032x}"))),
        }
    }
}

fn item_hash(item: &Item) -> u128 {
    let mut canonical = String::new();
    write_canonical(&serde_json::Value::Object(item.clone()), &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    u128::from_be_bytes(first)
}

/// JSON with every object's keys sorted, whatever order the maps keep.
fn write_canonical(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(value: serde_json::Value) -> Item {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_checksum_ignores_key_order_but_not_values() {
        let a = item(json!({"pk": "USER#1", "sk": "X", "n": {"b": 1, "a": [1, 2]}}));
        let mut b = Item::new();
        b.insert("n".into(), json!({"a": [1, 2], "b": 1}));
        b.insert("sk".into(), json!("X"));
        b.insert("pk".into(), json!("USER#1"));
        assert_eq!(item_hash(&a), item_hash(&b));
        let c = item(json!({"pk": "USER#1", "sk": "X", "n": {"b": 2, "a": [1, 2]}}));
        assert_ne!(item_hash(&a), item_hash(&c));
        let d = item(json!({"pk": "USER#1", "sk": "X", "n": {"b": 1, "a": [2, 1]}}));
        assert_ne!(item_hash(&a), item_hash(&d), "array order is data");
    }
}
