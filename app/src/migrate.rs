//! `vitals migrate`: moves a self-hosted embedded store to DynamoDB (the emulator, or
//! AWS) without losing an item. Every table is copied page by page with batch writes;
//! after each page the position is saved beside the data (`migrate-<prefix><digest>.json`
//! in the data directory, the digest naming the endpoint, region and prefix, so only a
//! run to the same tables resumes it), so an interrupted run resumes where it stopped.
//! Items whose TTL has passed when the run starts are gone for every reader: they are
//! not copied. Then each table is verified: the count of its unexpired items and an
//! order-independent checksum of them on both sides must agree.
//!
//! The target tables must be empty when a migration starts (a fresh stack): an item
//! already there may belong to another deployment, and a blind copy would overwrite it.
//! The embedded store must not be open in a running `vitals serve` (it refuses).

use crate::cli::AwsArgs;
use crate::storage;
use anyhow::{Context as _, bail};
use events_schema::Context;
use events_schema::time::Clock;
use infra::Store;
use infra::dynamodb::DynamoStore;
use infra::embedded::EmbeddedStore;
use infra::store::{Cursor, Item, Scan, is_expired};
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
    /// Items left behind because their TTL had passed.
    #[serde(default)]
    expired: u64,
    done: bool,
}

/// One table's verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCheck {
    pub table: Context,
    /// Items of the embedded store not expired when the run started.
    pub source_items: u64,
    /// Items of the embedded store expired when the run started: not copied, nor
    /// counted on either side.
    pub source_expired: u64,
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

/// The DynamoDB tables a migration writes to: where (the endpoint, or AWS itself when
/// `None`, and the region) and the prefix of their names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub endpoint: Option<String>,
    pub region: String,
    pub prefix: String,
}

/// Where a migration to `target` saves its position, in the data directory:
/// `migrate-<prefix><digest>.json`, the digest (SHA-256, 16 hex digits) of the endpoint,
/// region and prefix together, so a migration to other tables never resumes this one.
pub fn progress_path(data_dir: &Path, target: &Target) -> PathBuf {
    let endpoint = target.endpoint.as_deref().unwrap_or("aws");
    let named = format!(
        "{}\n{}\n{}",
        endpoint.trim_end_matches('/'),
        target.region,
        target.prefix
    );
    let digest = hex::encode(&Sha256::digest(named.as_bytes())[..8]);
    // The prefix only helps a reader tell the files apart: what names the file is the
    // digest.
    let readable: String = target
        .prefix
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    data_dir.join(format!("migrate-{readable}{digest}.json"))
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

/// Saves `progress` atomically (a crash leaves the old file or the new one), readable
/// by its owner only, as everything in the data directory is.
fn save_progress(path: &Path, progress: &Progress) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let partial = path.with_extension("partial");
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)?;
        // A partial file left by an older release may be open to others.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        file.write_all(&serde_json::to_vec_pretty(progress)?)?;
        file.sync_all()
    };
    write().with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))
}

impl Target {
    /// The tables `aws` names, in the region its configuration resolves to (the flag,
    /// else the environment, else us-east-1).
    pub fn of(aws: &AwsArgs, config: &aws_config::SdkConfig) -> Self {
        Self {
            endpoint: aws.endpoint_url.clone(),
            region: config.region().map(ToString::to_string).unwrap_or_default(),
            prefix: aws.table_prefix.clone(),
        }
    }
}

/// Where a migration from `data_dir` to the tables `aws` names saves its position.
pub async fn progress_path_of(data_dir: &Path, aws: &AwsArgs) -> PathBuf {
    let config = storage::aws_config(aws).await;
    progress_path(data_dir, &Target::of(aws, &config))
}

/// Copies the embedded store in `data_dir` into the DynamoDB tables `aws` names
/// (created if missing), resuming a previous run, then verifies every table; items
/// whose TTL has passed by the system clock stay behind.
pub async fn migrate(data_dir: &Path, aws: &AwsArgs) -> anyhow::Result<Migrated> {
    migrate_at(data_dir, aws, &Clock::System).await
}

/// [`migrate`], items expired by `clock` (read once, when the run starts) left behind.
pub async fn migrate_at(data_dir: &Path, aws: &AwsArgs, clock: &Clock) -> anyhow::Result<Migrated> {
    let now = clock.now().datetime().timestamp();
    // An existing store only: a mistyped directory is an error, never an empty copy.
    let source = EmbeddedStore::open_in(data_dir, infra::embedded::Open::Existing)
        .with_context(|| format!("opening the embedded store in {}", data_dir.display()))?;
    let config = storage::aws_config(aws).await;
    let target = storage::dynamodb_on(&config, aws);
    target
        .bootstrap()
        .await
        .context("creating the target tables")?;
    let path = progress_path(data_dir, &Target::of(aws, &config));
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
        copied += copy_table(&source, &target, table, &mut progress, &path, now).await?;
    }
    let mut checks = Vec::new();
    for table in Context::ALL {
        let source_digest = digest(&source, table, now).await?;
        let target_digest = digest(&target, table, now).await?;
        checks.push(TableCheck {
            table,
            source_items: source_digest.items,
            source_expired: source_digest.expired,
            target_items: target_digest.items,
            source_checksum: source_digest.checksum,
            target_checksum: target_digest.checksum,
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
    now: i64,
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
        // An expired item is gone for every reader already (the store's sweep has not
        // reached it yet): it stays behind, as the verification leaves it out.
        let scanned = page.items.len() as u64;
        let live: Vec<Item> = page
            .items
            .into_iter()
            .filter(|item| !is_expired(item, now))
            .collect();
        for batch in live.chunks(BATCH) {
            target
                .batch_put(table, batch)
                .await
                .with_context(|| format!("writing to {}", target.table_name(table)))?;
        }
        let written = live.len() as u64;
        copied += written;
        let next = TableProgress {
            done: page.cursor.is_none(),
            cursor: page.cursor.map(|c| c.as_str().to_owned()),
            copied: state.copied + written,
            expired: state.expired + (scanned - written),
        };
        progress.tables.insert(key.clone(), next);
        // Saved only once the page is written: a crash repeats at most one page, and
        // writing an item twice leaves the same item.
        save_progress(path, progress)?;
        tracing::info!(%table, copied, "page copied");
    }
}

/// A table's live items: how many, their checksum, and how many expired ones were left
/// out.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tally {
    items: u64,
    expired: u64,
    checksum: String,
}

/// The count of a table's items not expired at `now` (the expired ones are counted
/// apart) and a checksum of them that does not depend on their order: the sum (mod 2^128) of each item's SHA-256 over its canonical JSON (keys
/// sorted, as `serde_json` maps are here).
async fn digest(store: &dyn Store, table: Context, now: i64) -> anyhow::Result<Tally> {
    let mut count = 0u64;
    let mut expired = 0u64;
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
            if is_expired(item, now) {
                expired += 1;
                continue;
            }
            count += 1;
            sum = sum.wrapping_add(item_hash(item));
        }
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => {
                return Ok(Tally {
                    items: count,
                    expired,
                    checksum: format!("{sum:032x}"),
                });
            }
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

    #[test]
    fn a_migration_to_another_endpoint_or_region_keeps_its_own_position() {
        let dir = Path::new("/data");
        let target = Target {
            endpoint: Some("http://127.0.0.1:4566".to_owned()),
            region: "us-east-1".to_owned(),
            prefix: "vitals-".to_owned(),
        };
        let path = progress_path(dir, &target);
        assert_eq!(path, progress_path(dir, &target.clone()), "the same target");
        assert_eq!(path.parent(), Some(dir), "beside the data");
        let others = [
            Target {
                endpoint: Some("http://127.0.0.1:4567".to_owned()),
                ..target.clone()
            },
            Target {
                endpoint: None,
                ..target.clone()
            },
            Target {
                region: "eu-west-1".to_owned(),
                ..target.clone()
            },
            Target {
                prefix: "other-".to_owned(),
                ..target.clone()
            },
        ];
        for other in &others {
            assert_ne!(progress_path(dir, other), path, "{other:?}");
        }
    }

    #[test]
    fn the_saved_position_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("migrate-x.json");
        save_progress(&path, &Progress::default()).expect("saved");
        let mode = std::fs::metadata(&path)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(format!("{:o}", mode & 0o777), "600");
        assert_eq!(
            load_progress(&path).expect("read"),
            Some(Progress::default())
        );
    }

    #[tokio::test]
    async fn expired_items_are_left_out_of_the_verification() {
        let now = 1_800_000_000;
        let dir = tempfile::tempdir().expect("tempdir");
        let store = EmbeddedStore::open(dir.path()).expect("store");
        let live = item(json!({"pk": "WEATHER#u09#1", "sk": "WEATHER", "expires_at": now + 1}));
        let expired = item(json!({"pk": "WEATHER#u09#0", "sk": "WEATHER", "expires_at": now}));
        let without_ttl = item(json!({"pk": "WEATHER#u09#2", "sk": "WEATHER"}));
        for item in [&live, &expired, &without_ttl] {
            store
                .put(Context::Environment, item.clone(), None)
                .await
                .expect("put");
        }
        let digest = digest(&store, Context::Environment, now)
            .await
            .expect("digest");
        let checksum = item_hash(&live).wrapping_add(item_hash(&without_ttl));
        assert_eq!(
            digest,
            Tally {
                items: 2,
                expired: 1,
                checksum: format!("{checksum:032x}"),
            }
        );
        store.close();
    }
}
