//! Durability of the embedded store under SIGKILL: a real child process commits 3-item
//! transactions from 8 concurrent writers and is killed mid-stream, several times. After
//! each kill, every acknowledged transaction is present, and no transaction is present
//! in part (items or change log).

use events_schema::Context;
use infra::embedded::EmbeddedStore;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use vitals_tests::commands::items_of;

const WRITERS: usize = 8;
const ROUNDS: usize = 3;

/// Runs the writer until it has acknowledged `acks_before_kill` transactions, kills it,
/// and returns every acknowledgement it printed (writer -> highest n).
fn run_and_kill(
    dir: &std::path::Path,
    round: usize,
    acks_before_kill: usize,
) -> BTreeMap<usize, u64> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash-writer"))
        .arg(dir)
        .arg(round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("crash-writer starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked: BTreeMap<usize, u64> = BTreeMap::new();
    let mut count = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    let record = |line: &str, acked: &mut BTreeMap<usize, u64>| {
        let mut parts = line.split_whitespace().skip(1);
        let writer: usize = parts
            .next()
            .and_then(|w| w.parse().ok())
            .expect("writer number");
        let n: u64 = parts
            .next()
            .and_then(|n| n.parse().ok())
            .expect("transaction number");
        let highest = acked.entry(writer).or_insert(n);
        *highest = (*highest).max(n);
    };
    while count < acks_before_kill {
        assert!(
            Instant::now() < deadline,
            "the writer acknowledged only {count} transactions in time"
        );
        let line = lines.next().expect("writer output").expect("readable line");
        record(&line, &mut acked);
        count += 1;
    }
    child.kill().expect("SIGKILL");
    // Acknowledgements already printed before the kill count too.
    for line in lines.map_while(Result::ok) {
        if line.starts_with("ACK ") {
            record(&line, &mut acked);
        }
    }
    child.wait().expect("reaped");
    acked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loses_no_acknowledged_transaction_and_leaves_none_half_applied() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut all_acked = Vec::new();
    for round in 0..ROUNDS {
        // Vary the moment of the kill between rounds.
        let acked = run_and_kill(dir.path(), round, 150 + 137 * round);
        all_acked.push(acked);
    }

    let store = EmbeddedStore::open(dir.path()).expect("reopens after the kills");
    let mut change_records: BTreeMap<(String, u64), usize> = BTreeMap::new();
    let mut after = 0;
    loop {
        let batch = store.changes_after(after, 1000).await.expect("change log");
        let Some(last) = batch.last() else { break };
        after = last.seq;
        for record in batch {
            let n: u64 = record.sk[4..12].parse().expect("numbered sort key");
            *change_records.entry((record.pk.clone(), n)).or_default() += 1;
        }
    }
    let mut total = 0;
    for (round, acked) in all_acked.iter().enumerate() {
        for writer in 0..WRITERS {
            let pk = format!("USER#crash-{round}-{writer}");
            let items = items_of(&store, Context::Nutrition, &pk, "").await;
            let mut parts: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
            for item in &items {
                let sk = item["sk"].as_str().expect("sk");
                let n: u64 = sk[4..12].parse().expect("numbered sort key");
                parts.entry(n).or_default().insert(sk[13..].to_owned());
            }
            // Nothing half-applied: every present transaction has all three items and
            // three change records.
            for (n, present) in &parts {
                assert_eq!(
                    present.len(),
                    3,
                    "{pk} transaction {n} is half-applied: {present:?}"
                );
                assert_eq!(
                    change_records.get(&(pk.clone(), *n)),
                    Some(&3),
                    "{pk} transaction {n} change records"
                );
            }
            // Each writer commits one after the other: what survived is a prefix.
            let numbers: Vec<u64> = parts.keys().copied().collect();
            assert_eq!(
                numbers,
                (0..numbers.len() as u64).collect::<Vec<_>>(),
                "{pk} has a gap"
            );
            // Nothing acknowledged is lost.
            if let Some(highest) = acked.get(&writer) {
                assert!(
                    parts.contains_key(highest),
                    "{pk}: acknowledged transaction {highest} was lost"
                );
            }
            total += parts.len();
        }
    }
    assert!(total >= 150, "only {total} transactions survived");
    println!("crash durability: {ROUNDS} kills, {total} transactions checked");
}
