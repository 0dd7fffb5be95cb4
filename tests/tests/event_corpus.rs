//! The stored-event corpus (`events-schema/corpus/`) is read by this release:
//! - it holds a real envelope of every event type in every version ever published, and
//!   each decodes (upcast when older) to the current type;
//! - the scenario that wrote it still makes every event type, at the version in the
//!   catalog;
//! - every stored history rebuilds, read as stored (older versions upcast on the way),
//!   the very rows the release that wrote it rebuilt (`history/<label>.rows.json`,
//!   recorded by that release: an oracle independent of today's upcasters), and the
//!   same rows again with its events all upcast first, or half of them.
//!
//! When an event type or version is added, record the missing envelopes (existing files
//! are never rewritten) and a history of this release with
//! `VITALS_WRITE_CORPUS=<label> cargo test -p vitals-tests --test event_corpus`.

use events_schema::EventEnvelope;
use events_schema::catalog::{self, schema_file};
use events_schema::envelope::outbox_item;
use infra::Store;
use infra::embedded::EmbeddedStore;
use infra::store::TransactAction;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use vitals_tests::corpus::{self, Stored};
use vitals_tests::snapshot::{Snapshot, snapshot};

const WRITE_VAR: &str = "VITALS_WRITE_CORPUS";

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../events-schema/corpus")
}

fn history_dir() -> PathBuf {
    corpus_dir().join("history")
}

fn read_envelope(path: &Path) -> EventEnvelope {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; record it with {WRITE_VAR}=<label>",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_history(path: &Path) -> Vec<Stored> {
    let text = std::fs::read_to_string(path).expect("readable history");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a stored outbox item"))
        .collect()
}

/// The rows file beside a history: `<label>.rows.json`.
fn rows_path(history: &Path) -> PathBuf {
    history.with_extension("rows.json")
}

/// Every stored history (`history/*.jsonl`) by file name, with its path.
fn histories() -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(history_dir())
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// A snapshot as a file holds it: `[table, pk, sk, item]` entries.
type StoredRows = Vec<(events_schema::Context, String, String, infra::store::Item)>;

fn stored_rows(rows: &Snapshot) -> StoredRows {
    rows.iter()
        .map(|((table, pk, sk), item)| (*table, pk.clone(), sk.clone(), item.clone()))
        .collect()
}

/// Records what the corpus lacks: envelopes of versions it has none of, this release's
/// history under `label`, and the rows this release rebuilds from it.
async fn write(label: &str, recorded: &corpus::Recorded) {
    std::fs::create_dir_all(history_dir()).expect("corpus directory");
    for event in &recorded.events {
        let path = corpus_dir().join(schema_file(&event.event_type, event.schema_version));
        if !path.exists() {
            let text = serde_json::to_string_pretty(event).expect("envelope");
            std::fs::write(&path, format!("{text}\n")).expect("envelope written");
        }
    }
    let path = history_dir().join(format!("{label}.jsonl"));
    if !path.exists() {
        let lines: Vec<String> = recorded
            .history
            .iter()
            .map(|s| serde_json::to_string(s).expect("stored item"))
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").expect("history written");
    }
    let rows = rows_path(&path);
    if !rows.exists() {
        let rebuilt = rebuilt_rows(&read_history(&path), |_, e| e.clone()).await;
        let text = serde_json::to_string_pretty(&stored_rows(&rebuilt)).expect("rows");
        std::fs::write(&rows, format!("{text}\n")).expect("rows written");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scenario_makes_every_event_type_at_its_current_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let recorded = corpus::record(store.clone()).await;
    let made: BTreeSet<(String, u32)> = recorded
        .events
        .iter()
        .map(|e| (e.event_type.clone(), e.schema_version))
        .collect();
    for spec in catalog::all() {
        assert!(
            made.contains(&(spec.event_type.to_owned(), spec.version)),
            "the corpus scenario makes no {} v{}: add it to vitals_tests::corpus",
            spec.event_type,
            spec.version
        );
    }
    assert!(
        recorded.history.len() > 30,
        "history of {} events",
        recorded.history.len()
    );
    if let Ok(label) = std::env::var(WRITE_VAR) {
        write(&label, &recorded).await;
    }
    store.close();
}

#[test]
fn every_published_version_has_a_stored_envelope_that_decodes_as_the_current_type() {
    let mut files = 0;
    for spec in catalog::all() {
        for version in spec.versions() {
            let path = corpus_dir().join(schema_file(spec.event_type, version));
            let stored = read_envelope(&path);
            assert_eq!(
                (stored.event_type.as_str(), stored.schema_version),
                (spec.event_type, version),
                "{} holds another event",
                path.display()
            );
            let current = catalog::upcast(&stored)
                .expect("a cataloged type")
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(current.schema_version, spec.version);
            assert_eq!(current.event_id, stored.event_id);
            files += 1;
        }
    }
    let on_disk = std::fs::read_dir(corpus_dir())
        .expect("corpus directory")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(
        on_disk, files,
        "an envelope in the corpus is of no published version"
    );
}

/// The read rows `history` rebuilds into a fresh store, with each event transformed by
/// `read` first. Outbox items are left out of the comparison (they are the input, and
/// what the goals projections publish carries fresh ids); so are the wearables
/// subscriptions, which run sync commands rather than write read rows.
async fn rebuilt_rows(
    history: &[Stored],
    read: impl Fn(usize, &EventEnvelope) -> EventEnvelope,
) -> Snapshot {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedded = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let store: Arc<dyn Store> = embedded.clone();
    for (i, stored) in history.iter().enumerate() {
        let envelope = read(i, &stored.envelope);
        let item = outbox_item(&stored.pk, &envelope).expect("outbox item");
        let put = TransactAction::Put {
            table: envelope.context,
            item,
            condition: None,
        };
        store.transact(vec![put]).await.expect("stored");
    }
    let projections: Vec<_> = projectors::registry::projections(store.clone())
        .into_iter()
        .filter(|p| !p.name().ends_with("-from-integrations") || p.name().starts_with("dashboard"))
        .collect();
    let replayed = projectors::replay::replay(
        store.clone(),
        &projections,
        None,
        &projectors::replay::Quiet,
    )
    .await
    .expect("replay");
    assert_eq!(replayed.rejected, 0, "events refused");
    let rows = snapshot(&*store)
        .await
        .into_iter()
        .filter(|((_, _, sk), _)| !sk.starts_with("EVT#"))
        .collect();
    embedded.close();
    rows
}

fn upcast(event: &EventEnvelope) -> EventEnvelope {
    catalog::upcast(event)
        .expect("a cataloged type")
        .unwrap_or_else(|e| panic!("{} {}: {e}", event.event_type, event.event_id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stored_history_replays_to_the_same_rows_in_any_mix_of_versions() {
    let histories = histories();
    assert!(
        !histories.is_empty(),
        "no stored history: record one with {WRITE_VAR}=<label>"
    );
    for (name, path) in histories {
        let history = read_history(&path);
        let as_stored = rebuilt_rows(&history, |_, e| e.clone()).await;
        let rows_file = rows_path(&path);
        let text = std::fs::read_to_string(&rows_file).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; record it with {WRITE_VAR}=<label>",
                rows_file.display()
            )
        });
        let then: StoredRows = serde_json::from_str(&text).expect("stored rows");
        let now = stored_rows(&as_stored);
        let changed: Vec<_> = then
            .iter()
            .filter(|row| !now.contains(row))
            .chain(now.iter().filter(|row| !then.contains(row)))
            .collect();
        assert!(
            changed.is_empty(),
            "{name}: the rows this release rebuilds differ from those of the release that \
             wrote it (an upcaster reads old events wrong?): {changed:#?}"
        );
        let current = rebuilt_rows(&history, |_, e| upcast(e)).await;
        let mixed = rebuilt_rows(
            &history,
            |i, e| if i % 2 == 0 { upcast(e) } else { e.clone() },
        )
        .await;
        assert!(
            as_stored.len() > 20,
            "{name}: only {} rows rebuilt",
            as_stored.len()
        );
        for (label, rows) in [("all upcast first", &current), ("half upcast", &mixed)] {
            let differing: Vec<_> = as_stored
                .keys()
                .chain(rows.keys())
                .filter(|k| as_stored.get(*k) != rows.get(*k))
                .collect();
            assert!(
                differing.is_empty(),
                "{name}, {label}: rows differ from as stored: {differing:#?}"
            );
        }
        let versions: BTreeSet<String> = history
            .iter()
            .map(|s| format!("{} v{}", s.envelope.event_type, s.envelope.schema_version))
            .collect();
        eprintln!(
            "{name}: {} events ({versions:?}), {} rows",
            history.len(),
            as_stored.len()
        );
    }
}
