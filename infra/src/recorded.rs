//! The tests' access-pattern recording: an [`Observer`] (so a [`Recorded`] store passes
//! every call on) that matches each call, reads included, against a catalog of declared
//! access patterns ([`crate::access`]), and each written item against the declared item
//! kinds (`events_schema::item_kinds`). A call that matches no pattern is kept with the
//! code that made it (the first frames of the workspace's own code in its backtrace), so
//! a test fails naming both; the patterns the calls matched are kept too, to report the
//! declared ones nothing exercised.

use crate::access::{AccessPattern, Shape, kind_of, matching};
use crate::observed::{Observed, Observer, Row, Write};
use crate::store::{BatchWrite, Item, Key, SingleRead, Store, TransactAction, Update};
use async_trait::async_trait;
use events_schema::Context;
use events_schema::item_kinds::{self, Ty};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// A call no declared pattern admits, and where it came from.
#[derive(Debug, Clone)]
pub struct Undeclared {
    pub shape: Shape,
    pub caller: String,
}

#[derive(Default)]
struct Record {
    /// Calls per pattern, by its shape (which no two patterns share).
    exercised: BTreeMap<String, u64>,
    /// One entry per distinct undeclared shape.
    undeclared: Vec<Undeclared>,
    /// The attributes written, per item kind (`table pk-kind sk-kind`), with their types.
    written: BTreeMap<String, BTreeSet<(String, Ty)>>,
    /// Items of an undeclared kind, and attributes their kind does not declare.
    strays: BTreeSet<String>,
}

/// What a write sets on one item: its key and the attributes it writes.
struct Written<'a> {
    table: Context,
    key: Key,
    attributes: Vec<(&'a str, Ty)>,
}

impl<'a> Written<'a> {
    fn put(table: Context, item: &'a Item) -> Option<Self> {
        let key = Key::of(item).ok()?;
        let attributes = item.iter().map(|(n, v)| (n.as_str(), Ty::of(v))).collect();
        Some(Self {
            table,
            key,
            attributes,
        })
    }

    fn update(table: Context, key: &Key, update: &'a Update) -> Self {
        let set = update.set.iter().map(|(n, v)| (n.as_str(), Ty::of(v)));
        let added = update.add.iter().map(|(n, _)| (n.as_str(), Ty::N));
        Self {
            table,
            key: key.clone(),
            attributes: set.chain(added).collect(),
        }
    }

    fn of_action(action: &'a TransactAction) -> Option<Self> {
        match action {
            TransactAction::Put { table, item, .. } => Self::put(*table, item),
            TransactAction::Update {
                table, key, update, ..
            } => Some(Self::update(*table, key, update)),
            TransactAction::Delete { .. } | TransactAction::ConditionCheck { .. } => None,
        }
    }
}

/// What a [`Recorded`] store's observer keeps: shared by every view of one recording.
#[derive(Clone)]
pub struct Recorder {
    catalog: Arc<Vec<&'static AccessPattern>>,
    record: Arc<Mutex<Record>>,
}

/// A store whose calls are recorded (see the module docs).
pub type Recorded = Observed<Recorder>;

impl Recorded {
    /// `inner`, its calls recorded against `catalog`.
    pub fn recording(inner: Arc<dyn Store>, catalog: Vec<&'static AccessPattern>) -> Self {
        Observed::new(
            inner,
            Recorder {
                catalog: Arc::new(catalog),
                record: Arc::default(),
            },
        )
    }

    /// The same recording, of the calls made to `inner`: for code whose store is
    /// `inner` seen through a test's own wrapper (a request counter, whose pricing
    /// reads are the test's, not the code's).
    pub fn over(&self, inner: Arc<dyn Store>) -> Self {
        Observed::new(inner, self.observer().clone())
    }

    /// The patterns the calls matched, by shape (as `Shape`'s `Display` writes it).
    pub fn exercised(&self) -> BTreeSet<String> {
        self.observer().exercised()
    }

    /// The attributes written per item kind, with their types (to declare a kind).
    pub fn written_attributes(&self) -> BTreeMap<String, BTreeSet<(String, Ty)>> {
        let record = self.observer().record.lock();
        record.map(|r| r.written.clone()).unwrap_or_default()
    }

    /// Every call was declared, and every written item; otherwise a report naming each
    /// undeclared call and the code that made it, and each stray item or attribute.
    pub fn all_declared(&self) -> Result<(), String> {
        self.observer().all_declared()
    }
}

impl Recorder {
    fn note(&self, shape: Shape) {
        let found = matching(&self.catalog, &shape);
        let Ok(mut record) = self.record.lock() else {
            return;
        };
        match found {
            Some(pattern) => {
                *record
                    .exercised
                    .entry(pattern.shape.to_string())
                    .or_default() += 1
            }
            None if record.undeclared.iter().any(|u| u.shape == shape) => {}
            None => record.undeclared.push(Undeclared {
                shape,
                caller: caller(),
            }),
        }
    }

    /// Checks what writes set against the declared item kinds.
    fn note_items<'a>(&self, items: impl IntoIterator<Item = Written<'a>>) {
        let Ok(mut record) = self.record.lock() else {
            return;
        };
        for item in items {
            let (pk, sk) = (kind_of(&item.key.pk), kind_of(&item.key.sk));
            let named = format!("{} `{pk}`/`{sk}`", item.table);
            let seen = record.written.entry(named.clone()).or_default();
            seen.extend(item.attributes.iter().map(|(n, t)| ((*n).to_owned(), *t)));
            let Some(kind) = item_kinds::find(item.table, pk, sk) else {
                record
                    .strays
                    .insert(format!("an item of an undeclared kind: {named}"));
                continue;
            };
            for (name, ty) in &item.attributes {
                if !kind.declares(name, *ty) {
                    record.strays.insert(format!(
                        "{named}: attribute `{name}` ({}) is not declared",
                        ty.name()
                    ));
                }
            }
        }
    }

    fn exercised(&self) -> BTreeSet<String> {
        let record = self.record.lock();
        record
            .map(|r| r.exercised.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn undeclared(&self) -> Vec<Undeclared> {
        let record = self.record.lock();
        record.map(|r| r.undeclared.clone()).unwrap_or_default()
    }

    fn all_declared(&self) -> Result<(), String> {
        let undeclared = self.undeclared();
        let strays = self
            .record
            .lock()
            .map(|r| r.strays.clone())
            .unwrap_or_default();
        if undeclared.is_empty() && strays.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = undeclared
            .iter()
            .map(|u| format!("- {}\n  made by:\n{}", u.shape, u.caller))
            .collect();
        let strays: Vec<String> = strays.iter().map(|s| format!("- {s}")).collect();
        Err(format!(
            "{} call shape(s) match no declared access pattern (declare each beside the \
             code that makes it, in its module's ACCESS list):\n{}\n\
             {} written item(s) or attribute(s) no item kind declares \
             (events_schema::item_kinds):\n{}",
            undeclared.len(),
            lines.join("\n"),
            strays.len(),
            strays.join("\n")
        ))
    }
}

/// The first frames of the workspace's own code (not the storage layer's, not a
/// dependency's or the standard library's) on the current stack.
fn caller() -> String {
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    let lines: Vec<&str> = trace.lines().collect();
    // The recorder's own frames and those of the dependencies and the standard library
    // say nothing of who called.
    let ours = |function: &str, path: &str| {
        !(path.contains("/.cargo/")
            || path.contains("/rustc/")
            || path.contains("recorded.rs:")
            || path.contains("/infra/src/")
            || path.contains("observed.rs:")
            || function.contains("infra::recorded"))
    };
    let mut frames = Vec::new();
    for pair in lines.windows(2) {
        let (function, location) = (pair[0].trim(), pair[1].trim());
        let Some(path) = location.strip_prefix("at ") else {
            continue;
        };
        let name = function.split_once(": ").map_or(function, |(_, name)| name);
        if ours(name, path) && frames.len() < 5 {
            frames.push(format!("    {name}\n      at {path}"));
        }
    }
    if frames.is_empty() {
        "    (no frame of the workspace's code: build with debug info to see it)".into()
    } else {
        frames.join("\n")
    }
}

#[async_trait]
impl Observer for Recorder {
    type Note = ();

    async fn before(&self, write: Write<'_>) {
        let shape = match &write {
            Write::Single(Row::Put { table, item }) => match Key::of(item) {
                Ok(key) => Shape::put(*table, &key),
                // The store refuses an item without a key: no call to record.
                Err(_) => return,
            },
            Write::Single(Row::Update { table, key, update }) => Shape::update(*table, key, update),
            Write::Single(Row::Delete { table, key }) => Shape::delete(*table, key),
            Write::Transaction(actions) => Shape::transact(actions),
            Write::Batch { table, writes } => Shape::batch(*table, writes),
        };
        self.note(shape);
        let items: Vec<Written<'_>> = match write {
            Write::Single(Row::Put { table, item }) => {
                Written::put(table, item).into_iter().collect()
            }
            Write::Single(Row::Update { table, key, update }) => {
                vec![Written::update(table, key, update)]
            }
            Write::Single(Row::Delete { .. }) => vec![],
            Write::Transaction(actions) => actions.iter().filter_map(Written::of_action).collect(),
            Write::Batch { table, writes } => writes
                .iter()
                .filter_map(|w| match w {
                    BatchWrite::Put(item) => Written::put(table, item),
                    BatchWrite::Delete(_) => None,
                })
                .collect(),
        };
        self.note_items(items);
    }

    fn written(&self, _note: ()) {}

    fn drained(&self, table: Context, pk: &str, _deleted: usize) {
        self.note(Shape::drain(table, pk));
    }

    fn read(&self, table: Context, read: SingleRead<'_>) {
        self.note(match read {
            SingleRead::Get { key, consistent } => Shape::get(table, key, consistent),
            SingleRead::Query(query) => Shape::query(table, query),
            SingleRead::QueryIndex(query) => Shape::query_index(table, query),
            SingleRead::Scan(scan) => Shape::scan(table, scan),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Op, Order, Sk};
    use crate::embedded::EmbeddedStore;
    use crate::store::Query;

    static PROFILE: AccessPattern = AccessPattern::new(
        "a profile",
        Context::Identity,
        Op::get(true),
        "USER#",
        Sk::exact("PROFILE"),
        "GET /v1/me",
    );

    #[tokio::test]
    async fn an_undeclared_call_is_named_with_the_code_that_made_it() {
        let dir = tempfile::tempdir().expect("dir");
        let inner: Arc<dyn Store> =
            Arc::new(EmbeddedStore::open(&dir.path().join("s")).expect("store"));
        let recorded = Recorded::recording(inner, vec![&PROFILE]);
        let profile = Key::new("USER#1", "PROFILE");
        recorded
            .get(Context::Identity, &profile, true)
            .await
            .expect("get");
        assert!(recorded.all_declared().is_ok());
        assert_eq!(
            recorded.exercised(),
            BTreeSet::from([PROFILE.shape.to_string()])
        );

        // The same item read eventually consistent is another pattern, and undeclared.
        recorded
            .get(Context::Identity, &profile, false)
            .await
            .expect("get");
        let query = Query::partition("USER#1").reverse();
        recorded
            .query(Context::Identity, &query)
            .await
            .expect("query");
        let report = recorded.all_declared().expect_err("two undeclared shapes");
        assert!(report.contains("2 call shape(s)"), "{report}");
        assert!(report.contains("GetItem on identity"), "{report}");
        assert!(
            report.contains(&format!("{:?}", Order::Backward).to_lowercase()),
            "{report}"
        );
        assert!(report.contains("made by:"), "{report}");
    }
}
