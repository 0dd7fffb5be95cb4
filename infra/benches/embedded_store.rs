//! Throughput and latency of the embedded store, compared with SQLite and raw redb.
//!
//! Run: `cargo bench -p infra --bench embedded_store` (release). `BENCH_SCALE=0.1`
//! runs a tenth of the operations (and a smaller data set) to check that it works.
//!
//! Every engine commits durably (fsync before a write returns) and stores items as
//! JSON: each measured operation includes encoding the item (writes) or decoding the
//! items (reads), so engines differ only by storage engine and layer.

mod support;

use anyhow::{Context as _, Result, bail, ensure};
use events_schema::Context;
use hdrhistogram::Histogram;
use infra::embedded::EmbeddedStore;
use infra::logged::LoggedStore;
use infra::store::{
    BatchWrite, Condition, Item, Key, Query, SortKeyCondition, Store, TransactAction,
};
use redb::{ReadableDatabase as _, TableDefinition};
use rusqlite::{Connection, OptionalExtension as _, params};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::{Rng, histogram, record};

/// Table of every benchmark item.
const TABLE: Context = Context::Nutrition;
/// Preloaded data: `users` partitions, each with `DAYS` days of `MEALS_PER_DAY` meals.
const USERS_AT_SCALE_1: f64 = 2_000.0;
const DAYS: u64 = 3;
const MEALS_PER_DAY: u64 = 40;
/// Items a query returns (each queried day holds `MEALS_PER_DAY` > this).
const QUERY_LIMIT: usize = 20;
/// Size an item is padded to, in bytes of JSON.
const ITEM_BYTES: usize = 300;
/// Tasks of the concurrent runs.
const CONCURRENCY: usize = 32;

/// Operation counts at scale 1.
const WRITES_C1: f64 = 5_000.0;
const WRITES_C32: f64 = 20_000.0;
const READS_C1: f64 = 50_000.0;
const READS_C32: f64 = 100_000.0;

/// The binary's allocator (`app/src/main.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    let scale: f64 = match std::env::var("BENCH_SCALE") {
        Ok(s) => s
            .parse()
            .with_context(|| format!("BENCH_SCALE={s} is not a number"))?,
        Err(_) => 1.0,
    };
    ensure!(scale > 0.0, "BENCH_SCALE must be positive");
    let count = |n: f64| ((n * scale).round() as u64).max(20);
    let users = ((USERS_AT_SCALE_1 * scale).round() as usize).max(20);
    let data = Dataset::new(users);

    println!("Vitals embedded store benchmark");
    println!(
        "  scale {scale} (BENCH_SCALE); {} cores",
        std::thread::available_parallelism()?
    );
    println!(
        "  data set: {users} users x {DAYS} days x {MEALS_PER_DAY} meals = {} items of ~{ITEM_BYTES} B in {TABLE}",
        data.preload_count()
    );
    println!("  every commit durable (fsync); latencies per operation, in microseconds");
    println!("  put:   one {ITEM_BYTES} B item, unconditional, new key");
    println!("  txn3:  3 puts in one transaction (meal, day total, dedup marker if not exists)");
    println!("  get:   one existing item by key");
    println!(
        "  query: {QUERY_LIMIT} items of a day (begins_with MEAL#<date>#, limit {QUERY_LIMIT}) of a partition of {} items",
        DAYS * MEALS_PER_DAY
    );
    println!("  embedded: EmbeddedStore through the Store trait, tokio multi-thread runtime;");
    println!("            c{CONCURRENCY} = {CONCURRENCY} tasks issuing operations in a loop");
    println!(
        "  embedded+log: the same store through the write log of `vitals serve` (writes only)"
    );
    println!(
        "  sqlite:   rusqlite (bundled), WAL, synchronous=FULL, one connection, WITHOUT ROWID table"
    );
    println!("  redb-raw: redb alone, one write transaction per put (Durability::Immediate)");
    println!();

    let mut rows = Vec::new();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench_embedded(&data, count, &mut rows))?;
    drop(runtime);
    bench_sqlite(&data, count, &mut rows)?;
    bench_redb(&data, count, &mut rows)?;

    println!();
    print_table(&rows);
    println!();
    ceiling(&data, count(CEILING_ITEMS))?;
    Ok(())
}

/// Items of the engine-ceiling runs at scale 1.
const CEILING_ITEMS: f64 = 400_000.0;
/// Items per durable transaction in the ceiling runs.
const CEILING_CHUNK: usize = 4096;

/// The engine's own write ceiling on this machine: the same items inserted into raw
/// fjall (the store's engine) in large durable batches, and through the embedded store's batch write
/// (`Store::write_batch`, what a rebuild flushes with), so every write figure can be
/// read as a fraction of it.
fn ceiling(data: &Dataset, items: u64) -> Result<()> {
    let mut rng = Rng(11);
    let batch: Vec<Item> = (0..items)
        .map(|n| put_item(data, &mut rng, 10_000_000 + n))
        .collect();

    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    let keyspace = fjall::Config::new(dir.path().join("ceiling")).open()?;
    let table = keyspace.open_partition("items", fjall::PartitionCreateOptions::default())?;
    let started = Instant::now();
    for chunk in batch.chunks(CEILING_CHUNK) {
        let mut txn = keyspace
            .batch()
            .durability(Some(fjall::PersistMode::SyncData));
        for item in chunk {
            let (pk, sk) = key_of(item);
            let key = [pk.as_bytes(), &[0], sk.as_bytes()].concat();
            txn.insert(&table, key, serde_json::to_vec(item)?);
        }
        txn.commit()?;
    }
    let raw = items as f64 / started.elapsed().as_secs_f64();
    drop(table);
    drop(keyspace);
    dir.close()?;

    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    let store = Arc::new(EmbeddedStore::open(dir.path())?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let writes: Vec<BatchWrite> = batch.into_iter().map(BatchWrite::Put).collect();
    let started = Instant::now();
    runtime.block_on(store.write_batch(TABLE, writes))?;
    let layered = items as f64 / started.elapsed().as_secs_f64();
    store.close();
    dir.close()?;

    println!(
        "engine ceiling: {items} items of ~{ITEM_BYTES} B, durable transactions of {CEILING_CHUNK}"
    );
    println!("  fjall-raw inserts:             {raw:>10.0} items/s");
    println!(
        "  embedded Store::write_batch:   {layered:>10.0} items/s ({:.0}% of raw: the layer adds the change log and index upkeep)",
        100.0 * layered / raw
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// Data

/// A ULID-like id: 26 Crockford base32 characters, millisecond time first.
fn ulid_like(rng: &mut Rng) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let time_ms: u128 = 1_767_225_600_000 + u128::from(rng.below(86_400_000));
    let value = (time_ms << 80) | (u128::from(rng.next()) << 16) | u128::from(rng.next() & 0xFFFF);
    (0..26)
        .rev()
        .map(|i| char::from(ALPHABET[((value >> (i * 5)) & 31) as usize]))
        .collect()
}

struct Dataset {
    users: Vec<String>,
}

impl Dataset {
    fn new(users: usize) -> Self {
        let mut rng = Rng(42);
        Self {
            users: (0..users)
                .map(|_| format!("USER#{}", ulid_like(&mut rng)))
                .collect(),
        }
    }

    fn preload_count(&self) -> u64 {
        self.users.len() as u64 * DAYS * MEALS_PER_DAY
    }

    /// Every preloaded item, in key order within each user.
    fn preload(&self) -> impl Iterator<Item = Item> + '_ {
        self.users.iter().flat_map(|pk| {
            (1..=DAYS)
                .flat_map(move |day| (0..MEALS_PER_DAY).map(move |n| meal(pk, &meal_sk(day, n), n)))
        })
    }

    fn user(&self, rng: &mut Rng) -> &str {
        &self.users[rng.below(self.users.len() as u64) as usize]
    }

    /// The key of a random preloaded item.
    fn existing_key(&self, rng: &mut Rng) -> Key {
        let pk = self.user(rng).to_owned();
        Key::new(pk, meal_sk(1 + rng.below(DAYS), rng.below(MEALS_PER_DAY)))
    }

    /// A random user and the sort-key prefix of one of its preloaded days.
    fn query_target(&self, rng: &mut Rng) -> (String, String) {
        (self.user(rng).to_owned(), day_prefix(1 + rng.below(DAYS)))
    }
}

fn day_prefix(day: u64) -> String {
    format!("MEAL#2026-01-{day:02}#")
}

fn meal_sk(day: u64, n: u64) -> String {
    format!("{}{n:06}", day_prefix(day))
}

fn object(value: Value) -> Item {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("json! of an object literal"),
    }
}

/// A meal item padded to about `ITEM_BYTES` of JSON.
fn meal(pk: &str, sk: &str, n: u64) -> Item {
    let mut item = object(json!({
        "pk": pk,
        "sk": sk,
        "type": "MEAL",
        "name": "Grilled chicken salad with quinoa",
        "kcal": 420 + n % 300,
        "protein_g": 38.5,
        "carbs_g": 41.0,
        "fat_g": 12.25,
        "logged_at": "2026-01-01T12:34:56.789Z",
        "source": "manual",
        "version": 1,
    }));
    let size = serde_json::to_vec(&item).map(|v| v.len()).unwrap_or(0);
    let pad = ITEM_BYTES.saturating_sub(size + r#","notes":"""#.len());
    item.insert("notes".into(), Value::String("n".repeat(pad)));
    item
}

fn day_total(pk: &str, sk: &str, seq: u64) -> Item {
    object(
        json!({"pk": pk, "sk": sk, "type": "DAY_TOTAL", "kcal": 1800 + seq % 700, "meals": 4, "version": seq}),
    )
}

fn dedup_marker(pk: &str, seq: u64) -> Item {
    object(json!({"pk": pk, "sk": format!("DEDUP#{seq:010}"), "request": format!("req-{seq}")}))
}

/// The three items of a `txn3` operation: a new meal, the day's total (overwritten),
/// and a dedup marker that must not exist yet.
fn txn_items(data: &Dataset, rng: &mut Rng, seq: u64) -> [Item; 3] {
    let pk = data.user(rng);
    [
        meal(pk, &format!("MEAL#2026-02-02#{seq:08}"), seq),
        day_total(pk, "DAY#2026-02-02", seq),
        dedup_marker(pk, seq),
    ]
}

fn put_item(data: &Dataset, rng: &mut Rng, seq: u64) -> Item {
    meal(data.user(rng), &format!("MEAL#2026-02-01#{seq:08}"), seq)
}

fn key_of(item: &Item) -> (&str, &str) {
    let attr = |name| item.get(name).and_then(Value::as_str).unwrap_or_default();
    (attr("pk"), attr("sk"))
}

// ---------------------------------------------------------------------------
// Measurement

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Put,
    Txn3,
    Get,
    Query,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Txn3 => "txn3",
            Op::Get => "get",
            Op::Query => "query",
        }
    }

    fn is_write(self) -> bool {
        matches!(self, Op::Put | Op::Txn3)
    }
}

struct Row {
    engine: &'static str,
    op: Op,
    concurrency: usize,
    ops: u64,
    elapsed: Duration,
    latency: Histogram<u64>,
}

/// Keeps the row of a measured run (`engine`, `op`, clients, operations) and says it is
/// done.
fn report(
    rows: &mut Vec<Row>,
    (engine, op, concurrency, ops): (&'static str, Op, usize, u64),
    elapsed: Duration,
    latency: Histogram<u64>,
) {
    let row = Row {
        engine,
        op,
        concurrency,
        ops,
        elapsed,
        latency,
    };
    let r = &row;
    eprintln!(
        "  done: {:<12} {:<6} c{:<3} {:>7} ops in {:>6.2} s",
        r.engine,
        r.op.name(),
        r.concurrency,
        r.ops,
        r.elapsed.as_secs_f64()
    );
    rows.push(row);
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<12} {:<6} {:>5} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "engine", "op", "conc", "ops", "secs", "ops/s", "p50 us", "p99 us", "max us"
    );
    println!("{}", "-".repeat(87));
    for r in rows {
        let secs = r.elapsed.as_secs_f64();
        println!(
            "{:<12} {:<6} {:>5} {:>7} {:>8.2} {:>9.0} {:>9} {:>9} {:>9}",
            r.engine,
            r.op.name(),
            r.concurrency,
            r.ops,
            secs,
            r.ops as f64 / secs,
            r.latency.value_at_quantile(0.50),
            r.latency.value_at_quantile(0.99),
            r.latency.max(),
        );
    }
}

// ---------------------------------------------------------------------------
// Embedded store

async fn bench_embedded(
    data: &Dataset,
    count: impl Fn(f64) -> u64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path())?);
    let data = Arc::new(Dataset {
        users: data.users.clone(),
    });

    let started = Instant::now();
    preload_embedded(&store, &data).await?;
    eprintln!(
        "embedded: preloaded {} items in {:.1} s ({})",
        data.preload_count(),
        started.elapsed().as_secs_f64(),
        dir.path().display()
    );

    let seq = Arc::new(AtomicU64::new(0));
    // `vitals serve` writes through its write log (`LoggedStore`, an `Observed` store):
    // the writes again through it show what the wrapper adds to a write. Reads pass
    // through it unseen.
    let logged: Arc<dyn Store> = Arc::new(LoggedStore::logging(store.clone()));
    let runs = [Op::Put, Op::Txn3, Op::Get, Op::Query]
        .map(|op| ("embedded", &store, op))
        .into_iter()
        .chain([Op::Put, Op::Txn3].map(|op| ("embedded+log", &logged, op)));
    for (engine, store, op) in runs {
        for concurrency in [1, CONCURRENCY] {
            let ops = match (op.is_write(), concurrency) {
                (true, 1) => count(WRITES_C1),
                (true, _) => count(WRITES_C32),
                (false, 1) => count(READS_C1),
                (false, _) => count(READS_C32),
            };
            // Warm up (caches, threads) without measuring.
            run_embedded(store, &data, &seq, op, concurrency, (ops / 20).max(10), 7).await?;
            let started = Instant::now();
            let latency = run_embedded(store, &data, &seq, op, concurrency, ops, 1).await?;
            report(
                rows,
                (engine, op, concurrency, ops),
                started.elapsed(),
                latency,
            );
        }
    }
    drop((logged, store));
    dir.close()?;
    Ok(())
}

async fn preload_embedded(store: &Arc<dyn Store>, data: &Arc<Dataset>) -> Result<()> {
    // Transactions of 100 puts, issued by a few tasks so they share commits.
    let batches: Vec<Vec<Item>> = {
        let items: Vec<Item> = data.preload().collect();
        items.chunks(100).map(<[Item]>::to_vec).collect()
    };
    let batches = Arc::new(std::sync::Mutex::new(batches));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (store, batches) = (store.clone(), batches.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let batch = batches
                    .lock()
                    .map_err(|_| anyhow::anyhow!("poisoned"))?
                    .pop();
                let Some(batch) = batch else {
                    return anyhow::Ok(());
                };
                let actions = batch
                    .into_iter()
                    .map(|item| TransactAction::Put {
                        table: TABLE,
                        item,
                        condition: None,
                    })
                    .collect();
                store.transact(actions).await?;
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Runs `ops` operations split over `concurrency` tasks; returns their latencies.
async fn run_embedded(
    store: &Arc<dyn Store>,
    data: &Arc<Dataset>,
    seq: &Arc<AtomicU64>,
    op: Op,
    concurrency: usize,
    ops: u64,
    seed: u64,
) -> Result<Histogram<u64>> {
    let mut tasks = Vec::with_capacity(concurrency);
    for task in 0..concurrency as u64 {
        let share = ops / concurrency as u64 + u64::from(task < ops % concurrency as u64);
        let (store, data, seq) = (store.clone(), data.clone(), seq.clone());
        let mut rng = Rng(seed * 1_000_003 + task);
        tasks.push(tokio::spawn(async move {
            let mut latency = histogram()?;
            for _ in 0..share {
                let started = Instant::now();
                embedded_op(&*store, &data, &seq, op, &mut rng).await?;
                record(&mut latency, started);
            }
            anyhow::Ok(latency)
        }));
    }
    let mut latency = histogram()?;
    for task in tasks {
        latency.add(task.await??)?;
    }
    Ok(latency)
}

async fn embedded_op(
    store: &dyn Store,
    data: &Dataset,
    seq: &AtomicU64,
    op: Op,
    rng: &mut Rng,
) -> Result<()> {
    match op {
        Op::Put => {
            let item = put_item(data, rng, seq.fetch_add(1, Ordering::Relaxed));
            store.put(TABLE, item, None).await?;
        }
        Op::Txn3 => {
            let [meal, total, marker] = txn_items(data, rng, seq.fetch_add(1, Ordering::Relaxed));
            let put = |item, condition| TransactAction::Put {
                table: TABLE,
                item,
                condition,
            };
            store
                .transact(vec![
                    put(meal, None),
                    put(total, None),
                    put(marker, Some(Condition::ItemNotExists)),
                ])
                .await?;
        }
        Op::Get => {
            let key = data.existing_key(rng);
            if store.get(TABLE, &key, false).await?.is_none() {
                bail!("embedded get: no item {key:?}");
            }
        }
        Op::Query => {
            let (pk, prefix) = data.query_target(rng);
            let query = Query::partition(pk)
                .sort_key(SortKeyCondition::BeginsWith(prefix))
                .limit(QUERY_LIMIT);
            let page = store.query(TABLE, &query).await?;
            ensure!(
                page.items.len() == QUERY_LIMIT,
                "embedded query returned {} items",
                page.items.len()
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// SQLite

fn bench_sqlite(data: &Dataset, count: impl Fn(f64) -> u64, rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    let conn = Connection::open(dir.path().join("vitals.sqlite"))?;
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    ensure!(
        mode.eq_ignore_ascii_case("wal"),
        "sqlite journal_mode is {mode}, not WAL"
    );
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(
        "CREATE TABLE items(tbl TEXT, pk TEXT, sk TEXT, body BLOB, PRIMARY KEY(tbl, pk, sk)) WITHOUT ROWID;",
    )?;

    let started = Instant::now();
    {
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare("INSERT INTO items VALUES (?1, ?2, ?3, ?4)")?;
            for item in data.preload() {
                let (pk, sk) = key_of(&item);
                insert.execute(params![TABLE.as_str(), pk, sk, serde_json::to_vec(&item)?])?;
            }
        }
        tx.commit()?;
    }
    eprintln!(
        "sqlite: preloaded {} items in {:.1} s ({})",
        data.preload_count(),
        started.elapsed().as_secs_f64(),
        dir.path().display()
    );

    let mut seq = 0_u64;
    for op in [Op::Put, Op::Txn3, Op::Get, Op::Query] {
        let ops = count(if op.is_write() { WRITES_C1 } else { READS_C1 });
        single_client(rows, ("sqlite", op, ops), |n, rng| {
            sqlite_run(&conn, data, &mut seq, op, n, rng)
        })?;
    }
    drop(conn);
    dir.close()?;
    Ok(())
}

/// Measures `op` from one client: a warm-up of a twentieth of `ops` (not measured),
/// then `ops` operations, reported as `engine`'s. `run(n, rng)` runs `n` of them.
fn single_client(
    rows: &mut Vec<Row>,
    (engine, op, ops): (&'static str, Op, u64),
    mut run: impl FnMut(u64, &mut Rng) -> Result<Histogram<u64>>,
) -> Result<()> {
    run((ops / 20).max(10), &mut Rng(7))?;
    let started = Instant::now();
    let latency = run(ops, &mut Rng(1))?;
    report(rows, (engine, op, 1, ops), started.elapsed(), latency);
    Ok(())
}

fn sqlite_run(
    conn: &Connection,
    data: &Dataset,
    seq: &mut u64,
    op: Op,
    ops: u64,
    rng: &mut Rng,
) -> Result<Histogram<u64>> {
    let mut latency = histogram()?;
    for _ in 0..ops {
        let started = Instant::now();
        match op {
            Op::Put => {
                *seq += 1;
                let item = put_item(data, rng, *seq);
                let (pk, sk) = key_of(&item);
                conn.prepare_cached("INSERT OR REPLACE INTO items VALUES (?1, ?2, ?3, ?4)")?
                    .execute(params![TABLE.as_str(), pk, sk, serde_json::to_vec(&item)?])?;
            }
            Op::Txn3 => {
                *seq += 1;
                let [meal, total, marker] = txn_items(data, rng, *seq);
                let tx = conn.unchecked_transaction()?;
                {
                    let mut upsert =
                        tx.prepare_cached("INSERT OR REPLACE INTO items VALUES (?1, ?2, ?3, ?4)")?;
                    for item in [&meal, &total] {
                        let (pk, sk) = key_of(item);
                        upsert.execute(params![
                            TABLE.as_str(),
                            pk,
                            sk,
                            serde_json::to_vec(item)?
                        ])?;
                    }
                    let (pk, sk) = key_of(&marker);
                    let inserted = tx
                        .prepare_cached(
                            "INSERT INTO items VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                        )?
                        .execute(params![
                            TABLE.as_str(),
                            pk,
                            sk,
                            serde_json::to_vec(&marker)?
                        ])?;
                    // The condition failing would cancel the transaction (dropping `tx`).
                    ensure!(inserted == 1, "sqlite txn3: marker {pk} {sk} exists");
                }
                tx.commit()?;
            }
            Op::Get => {
                let key = data.existing_key(rng);
                let body: Option<Vec<u8>> = conn
                    .prepare_cached(
                        "SELECT body FROM items WHERE tbl = ?1 AND pk = ?2 AND sk = ?3",
                    )?
                    .query_row(params![TABLE.as_str(), key.pk, key.sk], |row| row.get(0))
                    .optional()?;
                let Some(body) = body else {
                    bail!("sqlite get: no item {key:?}")
                };
                let _item: Item = serde_json::from_slice(&body)?;
            }
            Op::Query => {
                let (pk, prefix) = data.query_target(rng);
                // begins_with(prefix) as a range: prefix <= sk < prefix with '#' -> '$'.
                let end = format!("{}$", prefix.trim_end_matches('#'));
                let mut statement = conn.prepare_cached(
                    "SELECT body FROM items WHERE tbl = ?1 AND pk = ?2 AND sk >= ?3 AND sk < ?4 ORDER BY sk LIMIT ?5",
                )?;
                // One more than the page, to know whether a cursor is needed (as the store does).
                let mut found = statement.query(params![
                    TABLE.as_str(),
                    pk,
                    prefix,
                    end,
                    QUERY_LIMIT as i64 + 1
                ])?;
                let mut items = Vec::with_capacity(QUERY_LIMIT);
                while let Some(row) = found.next()? {
                    if items.len() == QUERY_LIMIT {
                        break;
                    }
                    let body: Vec<u8> = row.get(0)?;
                    items.push(serde_json::from_slice::<Item>(&body)?);
                }
                ensure!(
                    items.len() == QUERY_LIMIT,
                    "sqlite query returned {} items",
                    items.len()
                );
            }
        }
        record(&mut latency, started);
    }
    Ok(latency)
}

// ---------------------------------------------------------------------------
// Raw redb

const RAW_ITEMS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("items");

fn bench_redb(data: &Dataset, count: impl Fn(f64) -> u64, rows: &mut Vec<Row>) -> Result<()> {
    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    let db = redb::Database::create(dir.path().join("raw.redb"))?;
    let started = Instant::now();
    {
        let txn = db.begin_write()?;
        {
            let mut table = txn.open_table(RAW_ITEMS)?;
            for item in data.preload() {
                table.insert(key_of(&item), serde_json::to_vec(&item)?.as_slice())?;
            }
        }
        txn.commit()?;
    }
    eprintln!(
        "redb-raw: preloaded {} items in {:.1} s ({})",
        data.preload_count(),
        started.elapsed().as_secs_f64(),
        dir.path().display()
    );

    let mut seq = 0_u64;
    for op in [Op::Put, Op::Get] {
        let ops = count(if op.is_write() { WRITES_C1 } else { READS_C1 });
        single_client(rows, ("redb-raw", op, ops), |n, rng| {
            redb_run(&db, data, &mut seq, op, n, rng)
        })?;
    }
    drop(db);
    dir.close()?;
    Ok(())
}

fn redb_run(
    db: &redb::Database,
    data: &Dataset,
    seq: &mut u64,
    op: Op,
    ops: u64,
    rng: &mut Rng,
) -> Result<Histogram<u64>> {
    let mut latency = histogram()?;
    for _ in 0..ops {
        let started = Instant::now();
        match op {
            Op::Put => {
                *seq += 1;
                let item = put_item(data, rng, *seq);
                // Default durability: Immediate (fsync on commit).
                let txn = db.begin_write()?;
                {
                    let mut table = txn.open_table(RAW_ITEMS)?;
                    table.insert(key_of(&item), serde_json::to_vec(&item)?.as_slice())?;
                }
                txn.commit()?;
            }
            Op::Get => {
                let key = data.existing_key(rng);
                let txn = db.begin_read()?;
                let table = txn.open_table(RAW_ITEMS)?;
                let Some(body) = table.get((key.pk.as_str(), key.sk.as_str()))? else {
                    bail!("redb get: no item {key:?}")
                };
                let _item: Item = serde_json::from_slice(body.value())?;
            }
            Op::Txn3 | Op::Query => bail!("redb-raw measures put and get only"),
        }
        record(&mut latency, started);
    }
    Ok(latency)
}
