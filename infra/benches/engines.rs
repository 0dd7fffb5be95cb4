//! The embedded store's engine, chosen on measurements: each candidate engine runs the
//! workloads the product runs, behind the same single writer thread with group commit
//! the embedded store uses, every commit durable, against this machine's fsync floor.
//!
//! Run: `cargo bench -p infra --bench engines` (release). `BENCH_SCALE=0.25` runs a
//! quarter of the operations.
//!
//! Candidates (each stores items as JSON under `(table, pk, sk)` and change records
//! under a sequence number, as the embedded store does):
//! - `redb`: redb 4 as the store configures it (`Database::create`, one-phase commit
//!   with checksums: one `fdatasync` per commit, the fewest its options allow while
//!   durable; `Durability::None` is not durable and two-phase commit adds a sync);
//! - `sqlite`: SQLite (rusqlite, bundled) in WAL mode with `synchronous=FULL` (one
//!   `fdatasync` of the WAL per commit), `WITHOUT ROWID` tables, a savepoint per
//!   request so a refused request writes nothing, as the store's writer requires;
//! - `fjall`: fjall 2 (an LSM tree), every commit `PersistMode::SyncData` (the journal
//!   appended and `fdatasync`ed).
//!
//! Workloads:
//! - `put`: one new 300 B item per request;
//! - `txn3`: three items per request (a new meal, the day's total overwritten, a marker
//!   written only if absent, read first) and one change record;
//! - c1 is one client waiting for each answer; c32 is 32 client threads, whose requests
//!   the writer takes together into one commit (group commit);
//! - `load-ordered` / `load-scattered`: the data set in transactions of 4,096 items, in
//!   key order (a rebuild's flush) or shuffled, into a fresh store;
//! - `get`: one existing item by key; `query`: 20 items of a day of a partition.

mod support;

use anyhow::{Context as _, Result, bail, ensure};
use hdrhistogram::Histogram;
use serde_json::{Map, Value, json};
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::{Rng, histogram, record};

type Item = Map<String, Value>;

const USERS_AT_SCALE_1: f64 = 2_000.0;
const DAYS: u64 = 3;
const MEALS_PER_DAY: u64 = 40;
const ITEM_BYTES: usize = 300;
const QUERY_LIMIT: usize = 20;
const CLIENTS: usize = 32;
const LOAD_CHUNK: usize = 4096;
const WRITES_C1: f64 = 4_000.0;
const WRITES_C32: f64 = 20_000.0;
const READS: f64 = 40_000.0;
const FSYNCS: f64 = 4_000.0;
/// Requests the writer takes into one commit at most (the store's `MAX_GROUP`).
const MAX_GROUP: usize = 512;

/// The binary's allocator (`app/src/main.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    let scale: f64 = match std::env::var("BENCH_SCALE") {
        Ok(s) => s.parse().with_context(|| format!("BENCH_SCALE={s}"))?,
        Err(_) => 1.0,
    };
    ensure!(scale > 0.0, "BENCH_SCALE must be positive");
    let count = |n: f64| ((n * scale).round() as u64).max(40);
    let users = ((USERS_AT_SCALE_1 * scale).round() as usize).max(40);
    let data = Dataset::new(users);
    println!("Vitals embedded engines, durable commits, scale {scale}");
    println!(
        "  data set: {users} users x {DAYS} days x {MEALS_PER_DAY} meals = {} items of ~{ITEM_BYTES} B",
        data.items.len()
    );
    let floor = fsync_floor(count(FSYNCS))?;
    println!(
        "  fsync floor: 4 KiB overwrite + fdatasync p50 {} us ({:.0}/s); 4 KiB append + fdatasync p50 {} us ({:.0}/s)",
        floor.overwrite_p50, floor.overwrite_rate, floor.append_p50, floor.append_rate
    );
    println!();
    let mut rows = Vec::new();
    for name in ["redb", "sqlite", "fjall"] {
        bench_engine(name, &data, &count, &mut rows)?;
    }
    print_table(&rows, &floor);
    Ok(())
}

// ---------------------------------------------------------------------------
// The fsync floor

struct Floor {
    overwrite_p50: u64,
    overwrite_rate: f64,
    append_p50: u64,
    append_rate: f64,
}

/// What one durable write of a page costs on this machine's disk, whatever the engine:
/// no engine commits durably faster than this.
fn fsync_floor(n: u64) -> Result<Floor> {
    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    let page = vec![7u8; 4096];
    let file = std::fs::File::create(dir.path().join("floor"))?;
    file.write_all_at(&page, 0)?;
    file.sync_all()?;
    let mut overwrite = histogram()?;
    let started = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        file.write_all_at(&page, 0)?;
        file.sync_data()?;
        record(&mut overwrite, t);
    }
    let overwrite_rate = n as f64 / started.elapsed().as_secs_f64();
    let mut appended = std::fs::File::create(dir.path().join("append"))?;
    let mut append = histogram()?;
    let started = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        appended.write_all(&page)?;
        appended.sync_data()?;
        record(&mut append, t);
    }
    Ok(Floor {
        overwrite_p50: overwrite.value_at_quantile(0.5),
        overwrite_rate,
        append_p50: append.value_at_quantile(0.5),
        append_rate: n as f64 / started.elapsed().as_secs_f64(),
    })
}

// ---------------------------------------------------------------------------
// Engines

/// One item write of a request.
struct Write {
    pk: String,
    sk: String,
    item: Item,
    /// Written only if no item has the key (else the request writes nothing).
    if_absent: bool,
}

/// One request: its item writes and whether it also appends a change record (of its
/// first item).
struct Request {
    writes: Vec<Write>,
    logged: bool,
}

/// What the writer thread needs of an engine, and the two reads measured.
trait Engine: Send {
    /// Applies `requests` in one durable commit; a request whose `if_absent` write finds
    /// its key writes nothing. Returns which requests were applied.
    fn commit(&mut self, requests: &[Request]) -> Result<Vec<bool>>;
    fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>>;
    /// Up to `limit` items of `pk` whose sort key starts with `prefix`, in order.
    fn query(&self, pk: &str, prefix: &str, limit: usize) -> Result<Vec<Item>>;
}

fn open(name: &str, dir: &Path) -> Result<Box<dyn Engine>> {
    Ok(match name {
        "redb" => Box::new(RedbEngine::open(dir)?),
        "sqlite" => Box::new(SqliteEngine::open(dir)?),
        "fjall" => Box::new(FjallEngine::open(dir)?),
        other => bail!("no engine {other}"),
    })
}

fn encode(item: &Item) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(item)?)
}

fn decode(bytes: &[u8]) -> Result<Item> {
    Ok(serde_json::from_slice(bytes)?)
}

/// A change record: the sequence number and the item it publishes, as JSON.
fn change_record(seq: u64, write: &Write) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(
        &json!({"seq": seq, "pk": write.pk, "sk": write.sk, "new": write.item}),
    )?)
}

/// The smallest string greater than every string starting with `prefix` (ASCII here).
fn prefix_end(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    if let Some(last) = bytes.last_mut() {
        *last += 1;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

mod redb_engine {
    use super::*;
    use redb::{Database, ReadableDatabase as _, ReadableTable as _, TableDefinition};

    const ITEMS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("items/nutrition");
    const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");

    pub struct RedbEngine {
        db: Database,
        seq: u64,
    }

    impl RedbEngine {
        pub fn open(dir: &Path) -> Result<Self> {
            let db = Database::create(dir.join("vitals.redb"))?;
            let txn = db.begin_write()?;
            txn.open_table(ITEMS)?;
            txn.open_table(LOG)?;
            txn.commit()?;
            Ok(Self { db, seq: 0 })
        }
    }

    impl Engine for RedbEngine {
        fn commit(&mut self, requests: &[Request]) -> Result<Vec<bool>> {
            let txn = self.db.begin_write()?;
            let mut applied = Vec::with_capacity(requests.len());
            {
                let mut items = txn.open_table(ITEMS)?;
                let mut log = txn.open_table(LOG)?;
                for request in requests {
                    let mut refused = false;
                    for w in request.writes.iter().filter(|w| w.if_absent) {
                        refused |= items.get((w.pk.as_str(), w.sk.as_str()))?.is_some();
                    }
                    applied.push(!refused);
                    if refused {
                        continue;
                    }
                    for w in &request.writes {
                        items
                            .insert((w.pk.as_str(), w.sk.as_str()), encode(&w.item)?.as_slice())?;
                    }
                    if let (true, Some(first)) = (request.logged, request.writes.first()) {
                        self.seq += 1;
                        log.insert(self.seq, change_record(self.seq, first)?.as_slice())?;
                    }
                }
            }
            txn.commit()?;
            Ok(applied)
        }

        fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
            let txn = self.db.begin_read()?;
            let items = txn.open_table(ITEMS)?;
            items.get((pk, sk))?.map(|v| decode(v.value())).transpose()
        }

        fn query(&self, pk: &str, prefix: &str, limit: usize) -> Result<Vec<Item>> {
            let txn = self.db.begin_read()?;
            let items = txn.open_table(ITEMS)?;
            let end = prefix_end(prefix);
            let mut found = Vec::with_capacity(limit);
            for entry in items.range((pk, prefix)..(pk, end.as_str()))?.take(limit) {
                found.push(decode(entry?.1.value())?);
            }
            Ok(found)
        }
    }
}
use redb_engine::RedbEngine;

mod sqlite_engine {
    use super::*;
    use rusqlite::{Connection, OptionalExtension as _, params};

    pub struct SqliteEngine {
        writer: Connection,
        reader: Connection,
        seq: i64,
    }

    impl SqliteEngine {
        pub fn open(dir: &Path) -> Result<Self> {
            let path = dir.join("vitals.sqlite");
            let writer = Connection::open(&path)?;
            let mode: String =
                writer.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
            ensure!(mode.eq_ignore_ascii_case("wal"), "journal_mode {mode}");
            writer.pragma_update(None, "synchronous", "FULL")?;
            writer.execute_batch(
                "CREATE TABLE items(tbl TEXT, pk TEXT, sk TEXT, body BLOB, PRIMARY KEY(tbl, pk, sk)) WITHOUT ROWID;
                 CREATE TABLE changelog(seq INTEGER PRIMARY KEY, body BLOB);",
            )?;
            let reader = Connection::open(&path)?;
            Ok(Self {
                writer,
                reader,
                seq: 0,
            })
        }

        fn apply(&mut self, request: &Request) -> Result<bool> {
            let exists = |w: &Write| -> Result<bool> {
                Ok(self
                    .writer
                    .prepare_cached(
                        "SELECT 1 FROM items WHERE tbl = 'nutrition' AND pk = ?1 AND sk = ?2",
                    )?
                    .query_row(params![w.pk, w.sk], |_| Ok(()))
                    .optional()?
                    .is_some())
            };
            for w in request.writes.iter().filter(|w| w.if_absent) {
                if exists(w)? {
                    return Ok(false);
                }
            }
            let mut upsert = self
                .writer
                .prepare_cached("INSERT OR REPLACE INTO items VALUES ('nutrition', ?1, ?2, ?3)")?;
            for w in &request.writes {
                upsert.execute(params![w.pk, w.sk, encode(&w.item)?])?;
            }
            if let (true, Some(first)) = (request.logged, request.writes.first()) {
                self.seq += 1;
                self.writer
                    .prepare_cached("INSERT INTO changelog VALUES (?1, ?2)")?
                    .execute(params![self.seq, change_record(self.seq as u64, first)?])?;
            }
            Ok(true)
        }
    }

    impl Engine for SqliteEngine {
        fn commit(&mut self, requests: &[Request]) -> Result<Vec<bool>> {
            self.writer.execute_batch("BEGIN IMMEDIATE")?;
            let mut applied = Vec::with_capacity(requests.len());
            for request in requests {
                // A savepoint per request: one that fails writes nothing, the others
                // stay in the group's commit.
                self.writer.execute_batch("SAVEPOINT request")?;
                match self.apply(request) {
                    Ok(done) => {
                        self.writer.execute_batch("RELEASE request")?;
                        applied.push(done);
                    }
                    Err(e) => {
                        self.writer.execute_batch("ROLLBACK")?;
                        return Err(e);
                    }
                }
            }
            self.writer.execute_batch("COMMIT")?;
            Ok(applied)
        }

        fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
            let body: Option<Vec<u8>> = self
                .reader
                .prepare_cached(
                    "SELECT body FROM items WHERE tbl = 'nutrition' AND pk = ?1 AND sk = ?2",
                )?
                .query_row(params![pk, sk], |r| r.get(0))
                .optional()?;
            body.map(|b| decode(&b)).transpose()
        }

        fn query(&self, pk: &str, prefix: &str, limit: usize) -> Result<Vec<Item>> {
            let mut statement = self.reader.prepare_cached(
                "SELECT body FROM items WHERE tbl = 'nutrition' AND pk = ?1 AND sk >= ?2 AND sk < ?3 ORDER BY sk LIMIT ?4",
            )?;
            let mut rows =
                statement.query(params![pk, prefix, prefix_end(prefix), limit as i64])?;
            let mut found = Vec::with_capacity(limit);
            while let Some(row) = rows.next()? {
                let body: Vec<u8> = row.get(0)?;
                found.push(decode(&body)?);
            }
            Ok(found)
        }
    }
}
use sqlite_engine::SqliteEngine;

mod fjall_engine {
    use super::*;
    use fjall::{Config, Keyspace, PartitionCreateOptions, PartitionHandle, PersistMode};

    pub struct FjallEngine {
        keyspace: Keyspace,
        items: PartitionHandle,
        log: PartitionHandle,
        seq: u64,
    }

    /// `pk`, a NUL, `sk`: byte order is `(pk, sk)` order for keys without NUL.
    fn key(pk: &str, sk: &str) -> Vec<u8> {
        let mut k = Vec::with_capacity(pk.len() + sk.len() + 1);
        k.extend_from_slice(pk.as_bytes());
        k.push(0);
        k.extend_from_slice(sk.as_bytes());
        k
    }

    impl FjallEngine {
        pub fn open(dir: &Path) -> Result<Self> {
            let keyspace = Config::new(dir.join("fjall")).open()?;
            let items = keyspace.open_partition("items", PartitionCreateOptions::default())?;
            let log = keyspace.open_partition("changelog", PartitionCreateOptions::default())?;
            Ok(Self {
                keyspace,
                items,
                log,
                seq: 0,
            })
        }
    }

    impl Engine for FjallEngine {
        fn commit(&mut self, requests: &[Request]) -> Result<Vec<bool>> {
            let mut batch = self
                .keyspace
                .batch()
                .durability(Some(PersistMode::SyncData));
            let mut applied = Vec::with_capacity(requests.len());
            // Keys this group writes, for `if_absent` within the group (the batch is
            // not readable before it commits).
            let mut written = std::collections::HashSet::new();
            for request in requests {
                let mut refused = false;
                for w in request.writes.iter().filter(|w| w.if_absent) {
                    let k = key(&w.pk, &w.sk);
                    refused |= written.contains(&k) || self.items.get(&k)?.is_some();
                }
                applied.push(!refused);
                if refused {
                    continue;
                }
                for w in &request.writes {
                    let k = key(&w.pk, &w.sk);
                    batch.insert(&self.items, k.clone(), encode(&w.item)?);
                    written.insert(k);
                }
                if let (true, Some(first)) = (request.logged, request.writes.first()) {
                    self.seq += 1;
                    batch.insert(
                        &self.log,
                        self.seq.to_be_bytes(),
                        change_record(self.seq, first)?,
                    );
                }
            }
            batch.commit()?;
            Ok(applied)
        }

        fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
            self.items.get(key(pk, sk))?.map(|v| decode(&v)).transpose()
        }

        fn query(&self, pk: &str, prefix: &str, limit: usize) -> Result<Vec<Item>> {
            let mut found = Vec::with_capacity(limit);
            for entry in self.items.prefix(key(pk, prefix)).take(limit) {
                found.push(decode(&entry?.1)?);
            }
            Ok(found)
        }
    }
}
use fjall_engine::FjallEngine;

// ---------------------------------------------------------------------------
// The writer thread (the embedded store's shape: take every waiting request, one commit)

struct Job {
    request: Request,
    reply: mpsc::Sender<Result<bool, String>>,
}

/// Runs `engine`'s writer until every sender is gone; returns the engine.
fn writer(mut engine: Box<dyn Engine>, jobs: mpsc::Receiver<Job>) -> Box<dyn Engine> {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let (requests, replies): (Vec<Request>, Vec<_>) =
            group.into_iter().map(|j| (j.request, j.reply)).unzip();
        match engine.commit(&requests) {
            Ok(applied) => {
                for (reply, done) in replies.into_iter().zip(applied) {
                    let _ = reply.send(Ok(done));
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(e.to_string()));
                }
            }
        }
    }
    engine
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Put,
    Txn3,
}

/// `ops` requests of `op` from `clients` threads through the writer thread.
fn run_writes(
    engine: Box<dyn Engine>,
    data: &Dataset,
    op: Op,
    clients: usize,
    ops: u64,
    seq: &mut u64,
) -> Result<(Box<dyn Engine>, Duration, Histogram<u64>)> {
    let (tx, rx) = mpsc::channel::<Job>();
    let handle = std::thread::spawn(move || writer(engine, rx));
    let base = *seq;
    *seq += ops;
    let started = Instant::now();
    let latencies = std::thread::scope(|scope| -> Result<Histogram<u64>> {
        let mut threads = Vec::new();
        for client in 0..clients as u64 {
            let tx = tx.clone();
            threads.push(scope.spawn(move || -> Result<Histogram<u64>> {
                let mut latency = histogram()?;
                let mut rng = Rng(base + client);
                let (reply, answer) = mpsc::channel();
                let mut n = client;
                while n < ops {
                    let request = data.request(op, &mut rng, base + n);
                    let t = Instant::now();
                    tx.send(Job {
                        request,
                        reply: reply.clone(),
                    })
                    .map_err(|_| anyhow::anyhow!("writer stopped"))?;
                    let applied = answer.recv()?.map_err(anyhow::Error::msg)?;
                    ensure!(applied, "request {n} was refused");
                    record(&mut latency, t);
                    n += clients as u64;
                }
                Ok(latency)
            }));
        }
        let mut all = histogram()?;
        for thread in threads {
            let latency = thread
                .join()
                .map_err(|_| anyhow::anyhow!("client panicked"))??;
            all.add(latency)?;
        }
        Ok(all)
    })?;
    let elapsed = started.elapsed();
    drop(tx);
    let engine = handle
        .join()
        .map_err(|_| anyhow::anyhow!("writer panicked"))?;
    Ok((engine, elapsed, latencies))
}

/// Loads `items` in commits of [`LOAD_CHUNK`]; returns the time taken.
fn load(engine: &mut dyn Engine, items: &[Write]) -> Result<Duration> {
    let started = Instant::now();
    for chunk in items.chunks(LOAD_CHUNK) {
        let requests: Vec<Request> = chunk
            .iter()
            .map(|w| Request {
                writes: vec![Write {
                    pk: w.pk.clone(),
                    sk: w.sk.clone(),
                    item: w.item.clone(),
                    if_absent: false,
                }],
                logged: false,
            })
            .collect();
        engine.commit(&requests)?;
    }
    Ok(started.elapsed())
}

fn bench_engine(
    name: &'static str,
    data: &Dataset,
    count: &impl Fn(f64) -> u64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let n = data.items.len() as u64;
    // Scattered: into a fresh store, dropped after.
    {
        let dir = tempfile::tempdir_in(std::env::temp_dir())?;
        let mut engine = open(name, dir.path())?;
        let elapsed = load(&mut *engine, &data.shuffled())?;
        rows.push(Row::rate(name, "load-scattered", 1, n, elapsed));
    }
    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    let mut engine = open(name, dir.path())?;
    let elapsed = load(&mut *engine, &data.items)?;
    rows.push(Row::rate(name, "load-ordered", 1, n, elapsed));
    eprintln!("{name}: loaded");

    let mut seq = 0;
    for (op, label) in [(Op::Put, "put"), (Op::Txn3, "txn3")] {
        for clients in [1, CLIENTS] {
            let ops = count(if clients == 1 { WRITES_C1 } else { WRITES_C32 });
            let (warm, _, _) = run_writes(engine, data, op, clients, ops / 20, &mut seq)?;
            let (measured, elapsed, latency) = run_writes(warm, data, op, clients, ops, &mut seq)?;
            engine = measured;
            rows.push(Row::measured(name, label, clients, ops, (elapsed, latency)));
            eprintln!("{name}: {label} c{clients} done");
        }
    }
    let reads = count(READS);
    let mut rng = Rng(99);
    let latency = measure_reads(reads, &mut rng, |rng| {
        let (pk, sk) = data.existing(rng);
        ensure!(engine.get(pk, sk)?.is_some(), "{name}: no {pk} {sk}");
        Ok(())
    })?;
    rows.push(Row::measured(name, "get", 1, reads, latency));
    let latency = measure_reads(reads, &mut rng, |rng| {
        let (pk, prefix) = data.day(rng);
        let found = engine.query(pk, &prefix, QUERY_LIMIT)?.len();
        ensure!(found == QUERY_LIMIT, "{name}: query found {found}");
        Ok(())
    })?;
    rows.push(Row::measured(name, "query", 1, reads, latency));
    drop(engine);
    dir.close()?;
    Ok(())
}

/// Runs `read` `n` times from one client; the time taken and each read's latency.
fn measure_reads(
    n: u64,
    rng: &mut Rng,
    mut read: impl FnMut(&mut Rng) -> Result<()>,
) -> Result<(Duration, Histogram<u64>)> {
    let mut latency = histogram()?;
    let started = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        read(rng)?;
        record(&mut latency, t);
    }
    Ok((started.elapsed(), latency))
}

// ---------------------------------------------------------------------------
// Data

struct Dataset {
    users: Vec<String>,
    /// Every preloaded item, in key order.
    items: Vec<Write>,
}

fn meal(pk: &str, sk: &str, n: u64) -> Item {
    let mut item = json!({
        "pk": pk, "sk": sk, "type": "MEAL", "name": "Grilled chicken salad with quinoa",
        "kcal": 420 + n % 300, "protein_g": 38.5, "carbs_g": 41.0, "fat_g": 12.25,
        "logged_at": "2026-01-01T12:34:56.789Z", "source": "manual", "version": 1,
    });
    let size = item.to_string().len();
    let pad = ITEM_BYTES.saturating_sub(size + r#","notes":"""#.len());
    item["notes"] = Value::String("n".repeat(pad));
    match item {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn write(pk: &str, sk: String, item: Item, if_absent: bool) -> Write {
    Write {
        pk: pk.to_owned(),
        sk,
        item,
        if_absent,
    }
}

impl Dataset {
    fn new(users: usize) -> Self {
        let mut users: Vec<String> = (0..users as u64)
            .map(|n| format!("USER#{:016X}", Rng(n).next()))
            .collect();
        users.sort();
        let items = users
            .iter()
            .flat_map(|pk| {
                (1..=DAYS).flat_map(move |day| {
                    (0..MEALS_PER_DAY).map(move |n| {
                        let sk = format!("MEAL#2026-01-{day:02}#{n:06}");
                        write(pk, sk.clone(), meal(pk, &sk, n), false)
                    })
                })
            })
            .collect();
        Self { users, items }
    }

    fn shuffled(&self) -> Vec<Write> {
        let mut order: Vec<usize> = (0..self.items.len()).collect();
        let mut rng = Rng(5);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        order
            .into_iter()
            .map(|i| {
                let w = &self.items[i];
                write(&w.pk, w.sk.clone(), w.item.clone(), false)
            })
            .collect()
    }

    fn user(&self, rng: &mut Rng) -> &str {
        &self.users[rng.below(self.users.len() as u64) as usize]
    }

    fn existing(&self, rng: &mut Rng) -> (&str, &str) {
        let w = &self.items[rng.below(self.items.len() as u64) as usize];
        (&w.pk, &w.sk)
    }

    fn day(&self, rng: &mut Rng) -> (&str, String) {
        let day = 1 + rng.below(DAYS);
        (self.user(rng), format!("MEAL#2026-01-{day:02}#"))
    }

    fn request(&self, op: Op, rng: &mut Rng, seq: u64) -> Request {
        let pk = self.user(rng);
        let sk = format!("MEAL#2026-02-02#{seq:010}");
        let new_meal = write(pk, sk.clone(), meal(pk, &sk, seq), false);
        match op {
            Op::Put => Request {
                writes: vec![new_meal],
                logged: false,
            },
            Op::Txn3 => {
                let total = json!({"pk": pk, "sk": "DAY#2026-02-02", "kcal": 1800 + seq % 700, "version": seq});
                let marker = json!({"pk": pk, "sk": format!("DEDUP#{seq:010}"), "request": seq});
                let object = |v: Value| match v {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                Request {
                    writes: vec![
                        new_meal,
                        write(pk, "DAY#2026-02-02".into(), object(total), false),
                        write(pk, format!("DEDUP#{seq:010}"), object(marker), true),
                    ],
                    logged: true,
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Reporting

struct Row {
    engine: &'static str,
    workload: &'static str,
    clients: usize,
    ops: u64,
    elapsed: Duration,
    latency: Option<Histogram<u64>>,
}

impl Row {
    fn rate(
        engine: &'static str,
        workload: &'static str,
        clients: usize,
        ops: u64,
        elapsed: Duration,
    ) -> Self {
        Self {
            engine,
            workload,
            clients,
            ops,
            elapsed,
            latency: None,
        }
    }

    fn measured(
        engine: &'static str,
        workload: &'static str,
        clients: usize,
        ops: u64,
        (elapsed, latency): (Duration, Histogram<u64>),
    ) -> Self {
        Self {
            latency: Some(latency),
            ..Self::rate(engine, workload, clients, ops, elapsed)
        }
    }
}

fn print_table(rows: &[Row], floor: &Floor) {
    println!(
        "{:<7} {:<15} {:>4} {:>7} {:>10} {:>8} {:>8} {:>10}",
        "engine", "workload", "conc", "ops", "ops/s", "p50 us", "p99 us", "x floor"
    );
    println!("{}", "-".repeat(76));
    for r in rows {
        let rate = r.ops as f64 / r.elapsed.as_secs_f64();
        let (p50, p99) = match &r.latency {
            Some(h) => (
                h.value_at_quantile(0.5).to_string(),
                h.value_at_quantile(0.99).to_string(),
            ),
            None => ("-".into(), "-".into()),
        };
        // Single-client durable commits against the fsync floor: what fraction of the
        // disk's own rate the engine reaches.
        let of_floor = if r.clients == 1
            && !r.workload.starts_with("load")
            && r.workload != "get"
            && r.workload != "query"
        {
            format!("{:.2}", rate / floor.overwrite_rate)
        } else {
            "-".into()
        };
        println!(
            "{:<7} {:<15} {:>4} {:>7} {:>10.0} {:>8} {:>8} {:>10}",
            r.engine, r.workload, r.clients, r.ops, rate, p50, p99, of_floor
        );
    }
}
