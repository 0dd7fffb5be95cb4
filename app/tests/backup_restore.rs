//! Online backup and restore of the embedded store (issue 39), black-box through the
//! binary: `vitals backup` taken through a running `vitals serve` in the middle of a
//! write load, restored with `vitals restore` into a new data directory, and checked.
//!
//! **What "a consistent snapshot" means here, checkably.** The store numbers its
//! commits' changes in its change log (gap-free, in commit order), written in the same
//! commit as the items, and `vitals backup` prints the sequence number S of the newest
//! change it holds. The backup is the source exactly as it was once the commit holding
//! change S was made, when:
//! 1. it opens (restored, as a store), and its change log ends at S;
//! 2. its meals are exactly the meals whose creation is logged at or before S (a meal's
//!    creation is logged as its `MealLogged` outbox item, written in the meal's
//!    transaction): every meal created in its log is there, as logged, and none is there whose creation its
//!    log does not hold (a copy torn between the items and the log, or taken across
//!    several commits, breaks this);
//! 3. each day summary counts exactly the meals of its day it holds (the meal and its
//!    summary are written in one transaction);
//! 4. the set of meals is closed under real-time order: a meal acknowledged (201) before
//!    another meal's request was sent was committed before it (so has a smaller
//!    sequence), and the backup holding the later one holds the earlier; in particular
//!    every meal acknowledged before the backup started is in it, and each writer's
//!    meals in it are a prefix of that writer's acknowledged meals;
//! 5. nothing in it was never acknowledged: every meal it holds was answered 201 with
//!    its id, and no meal whose request was sent after the backup ended is in it.
//!
//! The server trims the change log once a minute (to what some projector has yet to
//! process; its first trim is at its start, before any meal), so the test keeps its
//! load well within that minute: every meal's creation is still in the backup's log.
//!
//! Copying the store (`vitals.fjall`) while the server writes is what not to do (issue 39 saw one
//! unopenable copy in fifteen); it is not tested here.
//!
//! Without the feature, both tests failed at their first backup: `vitals backup` was no
//! command (exit 2, "unrecognized subcommand 'backup'"). With a torn backup instead (a
//! mutation tried once: each table copied from a read transaction of its own, 20 ms
//! apart), the first test fails at 1 (the log ends past S), and with S taken from the
//! copied log, at 2 (meals logged but not held).

mod support;

use support::{Run, text};

use infra::Store as _;
use infra::embedded::{EmbeddedStore, Open};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const WRITERS: usize = 4;
/// The load before the backup starts, and after it ends.
const BEFORE: Duration = Duration::from_millis(1500);
const AFTER: Duration = Duration::from_millis(1000);
const DAY: &str = "2026-03-01";

/// One meal a writer asked for: when it was sent, when it was answered, how, and the id
/// the answer gave.
#[derive(Debug, Clone)]
struct Attempt {
    writer: usize,
    name: String,
    sent: Instant,
    answered: Instant,
    status: u16,
    meal_id: Option<String>,
}

fn vitals(args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vitals"));
    command.args(args).env_clear().env("RUST_LOG", "warn");
    support::run_to_end(command, args)
}

/// `vitals restore --from <from> --data-dir <into> <extra>`.
fn restore(from: &Path, into: &Path, extra: &[&str]) -> Run {
    vitals(
        &[
            &["restore", "--from", text(from), "--data-dir", text(into)][..],
            extra,
        ]
        .concat(),
    )
}

/// A writer: logs meals one after the other (the next sent once the last is answered)
/// until `stop`; every attempt, answered or not.
fn writer(client: support::Client, writer: usize, stop: Arc<AtomicBool>) -> Vec<Attempt> {
    let mut attempts = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let name = format!("w{writer}-{n:05}");
        let meal = json!({"name": name, "eaten_at": format!("{DAY}T08:00:00.000Z"),
            "calories": "100", "protein_g": "1", "carbs_g": "1", "fat_g": "1"});
        let sent = Instant::now();
        let (status, reply) = client.call("POST", "/v1/me/meals", Some(meal), &[]);
        let answered = Instant::now();
        attempts.push(Attempt {
            writer,
            name,
            sent,
            answered,
            status,
            meal_id: reply["meal_id"].as_str().map(str::to_owned),
        });
        n += 1;
    }
    attempts
}

/// The sequence number `vitals backup` says its snapshot is consistent at.
fn backup_sequence(run: &Run) -> u64 {
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("consistent at change-log sequence"))
        .unwrap_or_else(|| panic!("no sequence printed: {run}"));
    line.rsplit(' ')
        .next()
        .and_then(|n| n.trim_end_matches('.').parse().ok())
        .unwrap_or_else(|| panic!("no sequence number in {line:?}"))
}

#[test]
fn a_backup_taken_under_write_load_is_the_source_at_one_commit() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("data");
    let server = support::start(&["--data-dir", text(&data)]);
    let clients: Vec<support::Client> = (0..WRITERS)
        .map(|w| support::register(&server.address, &format!("writer{w}@example.com")))
        .collect();
    let users: BTreeMap<String, usize> = clients
        .iter()
        .enumerate()
        .map(|(w, c)| (c.user_id.clone(), w))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(w, client)| {
            let stop = stop.clone();
            std::thread::spawn(move || writer(client, w, stop))
        })
        .collect();

    std::thread::sleep(BEFORE);
    let file = dir.path().join("backups").join("vitals.vbk");
    std::fs::create_dir(file.parent().expect("a parent")).expect("backups directory");
    let started = Instant::now();
    let backup = vitals(&["backup", "--data-dir", text(&data), "--to", text(&file)]);
    let ended = Instant::now();
    std::thread::sleep(AFTER);
    stop.store(true, Ordering::Relaxed);
    let attempts: Vec<Attempt> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("a writer"))
        .collect();
    assert!(server.stop().success(), "vitals serve exits cleanly");
    assert_eq!(
        backup.code,
        Some(0),
        "the backup through the server: {backup}"
    );
    let sequence = backup_sequence(&backup);
    let acknowledged: Vec<&Attempt> = attempts.iter().filter(|a| a.status == 201).collect();
    let before = acknowledged.iter().filter(|a| a.answered < started).count();
    let after = attempts.iter().filter(|a| a.sent > ended).count();
    assert!(
        before >= WRITERS && after >= WRITERS,
        "a load around the backup: {before} meals acknowledged before it, {after} sent after"
    );

    // Restored into a new data directory, and opened there.
    let restored = dir.path().join("restored");
    let run = restore(&file, &restored, &[]);
    assert_eq!(run.code, Some(0), "restore: {run}");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (log, meals, summaries) = runtime.block_on(read_back(&restored));

    // 1. Its change log ends at S.
    assert_eq!(
        log.last().map(|c| c.seq),
        Some(sequence),
        "the log ends at S"
    );
    // 2. Its meals are exactly those created in its log, as logged: a meal's creation is
    // logged as its `MealLogged` event, written in the meal's transaction.
    let mut created: BTreeMap<String, (u64, Value)> = BTreeMap::new();
    for change in &log {
        let event = change
            .new
            .as_ref()
            .filter(|_| change.table == events_schema::Context::Nutrition)
            .and_then(events_schema::envelope::outbox_event)
            .map(|decoded| decoded.expect("an event that decodes"));
        if let Some(event) = event.filter(|e| e.event_type == "MealLogged") {
            let meal = event.payload["meal"].clone();
            let id = meal["meal_id"].as_str().expect("a meal id").to_owned();
            created.insert(id, (change.seq, meal));
        }
    }
    let held: BTreeSet<&String> = meals.keys().collect();
    let logged: BTreeSet<&String> = created.keys().collect();
    let unlogged: Vec<_> = held.difference(&logged).take(3).collect();
    let missing: Vec<_> = logged.difference(&held).take(3).collect();
    assert!(
        unlogged.is_empty() && missing.is_empty(),
        "the meals held are not the meals its log created: {} held but not logged \
         ({unlogged:?}...), {} logged but not held ({missing:?}...)",
        held.difference(&logged).count(),
        logged.difference(&held).count()
    );
    for (id, (_, logged)) in &created {
        // The event carries the stored meal's fields: each is held as logged.
        let held = &meals[id].1;
        let fields = logged.as_object().expect("the event's meal");
        for (field, value) in fields {
            assert_eq!(
                held.get(field),
                Some(value),
                "meal {id}'s {field} as logged"
            );
        }
    }
    // 3. Each day summary counts the meals of its day held.
    let mut per_user: BTreeMap<&str, u64> = BTreeMap::new();
    for (user, _) in meals.values() {
        *per_user.entry(user.as_str()).or_default() += 1;
    }
    for (user, counted) in &summaries {
        assert_eq!(
            per_user.get(user.as_str()).copied().unwrap_or(0),
            *counted,
            "{user}'s summary of {DAY} counts the meals held"
        );
    }
    // 4 and 5: acknowledged, closed under real-time order, within the backup's window.
    let by_id: BTreeMap<&str, &Attempt> = acknowledged
        .iter()
        .filter_map(|a| a.meal_id.as_deref().map(|id| (id, *a)))
        .collect();
    for (id, (user, item)) in &meals {
        let attempt = by_id
            .get(id.as_str())
            .unwrap_or_else(|| panic!("meal {id} ({item:?}) was never acknowledged"));
        assert_eq!(users.get(user), Some(&attempt.writer), "meal {id}'s owner");
        assert_eq!(item["name"], json!(attempt.name), "meal {id}'s name");
        assert!(
            attempt.sent <= ended,
            "meal {id} was sent after the backup ended"
        );
    }
    for attempt in &acknowledged {
        let id = attempt
            .meal_id
            .as_deref()
            .expect("an acknowledged meal's id");
        let held = meals.contains_key(id);
        if attempt.answered < started {
            assert!(
                held,
                "{} was acknowledged before the backup started",
                attempt.name
            );
        }
        if !held {
            continue;
        }
        for earlier in acknowledged.iter().filter(|e| e.answered < attempt.sent) {
            let earlier_id = earlier.meal_id.as_deref().expect("an id");
            assert!(
                meals.contains_key(earlier_id),
                "{} is held, {} acknowledged before it was sent is not",
                attempt.name,
                earlier.name
            );
            assert!(
                created[earlier_id].0 < created[id].0,
                "{} committed after {}, sent after it was acknowledged",
                earlier.name,
                attempt.name
            );
        }
    }
    let held_count = meals.len();
    eprintln!(
        "{} meals acknowledged ({before} before the backup, {after} sent after it); the \
         backup holds {held_count}, consistent at change-log sequence {sequence}",
        acknowledged.len()
    );
    assert!(
        held_count < acknowledged.len(),
        "the backup holds {held_count} of {} meals: taken mid-load, it cannot hold all",
        acknowledged.len()
    );
}

/// The restored store's change log, its meals (id -> owner and item) and its day
/// summaries' meal counts (owner -> meals).
async fn read_back(
    data: &Path,
) -> (
    Vec<infra::embedded::ChangeRecord>,
    BTreeMap<String, (String, infra::store::Item)>,
    BTreeMap<String, u64>,
) {
    let store = EmbeddedStore::open_in(data, Open::Existing).expect("the restored store opens");
    let log = store
        .changes_after(0, usize::MAX)
        .await
        .expect("its change log");
    let mut meals = BTreeMap::new();
    let mut summaries = BTreeMap::new();
    let mut scan = infra::store::Scan::default();
    loop {
        let page = store
            .scan(events_schema::Context::Nutrition, &scan)
            .await
            .expect("a page");
        for item in page.items {
            let pk = item["pk"].as_str().unwrap_or_default();
            let sk = item["sk"].as_str().unwrap_or_default();
            let Some(user) = pk.strip_prefix("USER#").map(str::to_owned) else {
                continue;
            };
            if sk.starts_with("MEAL#") {
                let id = item["meal_id"].as_str().expect("a meal id").to_owned();
                meals.insert(id, (user, item));
            } else if sk == format!("DAILY_SUMMARY#{DAY}") {
                summaries.insert(user, item["meals"].as_u64().expect("a meal count"));
            }
        }
        match page.cursor {
            Some(cursor) => scan.cursor = Some(cursor),
            None => break,
        }
    }
    store.close();
    (log, meals, summaries)
}

/// A restore checks the backup and refuses what would lose data: a file that is not a
/// backup (3), a missing one (2), a store in use (3, even with `--force`), a store that
/// holds data (2 unless `--force`, which keeps the old store aside). A backup taken with
/// no server running is taken directly.
#[test]
fn a_restore_checks_the_backup_and_keeps_what_it_replaces() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("data");
    let made = vitals(
        &[
            &support::curate_recipe("Oats")[..],
            &["--data-dir", text(&data), "--create"],
        ]
        .concat(),
    );
    assert_eq!(made.code, Some(0), "{made}");
    let file = dir.path().join("first.vbk");
    let run = vitals(&["backup", "--data-dir", text(&data), "--to", text(&file)]);
    assert_eq!(run.code, Some(0), "a backup with no server: {run}");
    assert!(run.stdout.contains("nutrition"), "{run}");

    // Not a backup, and no file at all.
    let junk = dir.path().join("junk.vbk");
    std::fs::write(&junk, b"not a store at all").expect("junk");
    let target = dir.path().join("target");
    let run = restore(&junk, &target, &[]);
    assert_eq!(run.code, Some(3), "junk: {run}");
    assert!(run.stderr.contains(text(&junk)), "{run}");
    assert!(
        !target.join("vitals.fjall").exists(),
        "nothing installed: {run}"
    );
    let missing = dir.path().join("missing.vbk");
    let run = restore(&missing, &target, &[]);
    assert_eq!(run.code, Some(2), "missing: {run}");
    assert!(run.stderr.contains(text(&missing)), "{run}");

    // Into a new directory, then again over the store it made.
    let run = restore(&file, &target, &[]);
    assert_eq!(run.code, Some(0), "restore: {run}");
    let run = restore(&file, &target, &[]);
    assert_eq!(run.code, Some(2), "over a store with data: {run}");
    assert!(run.stderr.contains("--force"), "{run}");
    let run = restore(&file, &target, &["--force"]);
    assert_eq!(run.code, Some(0), "--force: {run}");
    assert!(
        target.join("vitals.fjall.before-restore").is_dir(),
        "kept aside: {run}"
    );
    let info = vitals(&["info", "--data-dir", text(&target)]);
    assert_eq!(info.code, Some(0), "{info}");

    // A store in use is never replaced.
    let server = support::start(&["--data-dir", text(&data)]);
    let run = restore(&file, &data, &["--force"]);
    assert!(server.stop().success(), "vitals serve exits cleanly");
    assert_eq!(run.code, Some(3), "a store in use: {run}");
    assert!(
        run.stderr.contains("in use") || run.stderr.contains("holds the store"),
        "{run}"
    );
}
