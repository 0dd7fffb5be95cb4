//! `vitals admin residue <user-id>`: what is left of a user anywhere in storage. Every
//! table and every index is scanned in full; an item counts when it is in the user's
//! partition or holds the user id in any attribute (email reservations, provider
//! pointers, OAuth states, dead letters, events in flight). Erasure tombstones name the
//! user only by a digest and are not residue. On the embedded store the change log (its
//! stream) is searched too; where dead letters are kept in SQS, every queue is.

use events_schema::Context;
use events_schema::ids::UserId;
use events_schema::keys::PartitionKey;
use events_schema::tables;
use infra::store::{Item, Scan};
use infra::{Store, StoreError};
use serde_json::Value;

/// One item that still holds the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remnant {
    pub table: Context,
    /// The index it was found through (None: the table itself).
    pub index: Option<&'static str>,
    pub pk: String,
    pub sk: String,
}

impl std::fmt::Display for Remnant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(index) => write!(f, "{}/{index}: {} {}", self.table, self.pk, self.sk),
            None => write!(f, "{}: {} {}", self.table, self.pk, self.sk),
        }
    }
}

/// A subscription's dead letters about the user in a queue outside the tables (SQS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedLetters {
    pub subscription: String,
    pub letters: u64,
}

impl std::fmt::Display for QueuedLetters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "dead letters of {}: {} about this user",
            self.subscription, self.letters
        )
    }
}

/// Searches every subscription's queue for letters about `user` (each message is read
/// once and put back).
pub async fn find_in_queues(
    queues: &dyn infra::dlq::DeadLetterQueue,
    subscriptions: &[&str],
    user: &UserId,
) -> Result<Vec<QueuedLetters>, StoreError> {
    let partition = PartitionKey::User(user.clone()).to_string();
    let counts = queues.count_about_each(subscriptions, &partition).await?;
    let found = subscriptions
        .iter()
        .zip(counts)
        .filter(|(_, letters)| *letters > 0);
    let found = found.map(|(subscription, letters)| QueuedLetters {
        subscription: (*subscription).to_owned(),
        letters,
    });
    Ok(found.collect())
}

/// Scans every table and index for `user`.
pub async fn find(store: &dyn Store, user: &UserId) -> Result<Vec<Remnant>, StoreError> {
    let partition = PartitionKey::User(user.clone()).to_string();
    let id = user.to_string();
    let mut remnants = Vec::new();
    for table in Context::ALL {
        let indexes = tables::table(table).gsis.iter().map(|g| Some(g.name));
        for index in std::iter::once(None).chain(indexes) {
            let mut cursor = None;
            loop {
                let scan = Scan {
                    index: index.map(str::to_owned),
                    limit: Some(1000),
                    cursor,
                };
                let page = store.scan(table, &scan).await?;
                for item in &page.items {
                    let pk = text(item, "pk");
                    if pk == partition || holds(&Value::Object(item.clone()), &id) {
                        remnants.push(Remnant {
                            table,
                            index,
                            pk,
                            sk: text(item, "sk"),
                        });
                    }
                }
                match page.cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
        }
    }
    Ok(remnants)
}

fn text(item: &Item, attr: &str) -> String {
    item.get(attr)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Whether any string in `value` (keys included) contains `needle`.
fn holds(value: &Value, needle: &str) -> bool {
    match value {
        Value::String(s) => s.contains(needle),
        Value::Array(values) => values.iter().any(|v| holds(v, needle)),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.contains(needle) || holds(v, needle)),
        _ => false,
    }
}

/// A change-log record (embedded store) whose key or images hold the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedChange {
    pub seq: u64,
    pub table: Context,
    pub pk: String,
    pub sk: String,
}

impl std::fmt::Display for LoggedChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "change log #{} ({}): {} {}",
            self.seq, self.table, self.pk, self.sk
        )
    }
}

/// Searches the embedded store's change log for `user`.
pub async fn find_in_change_log(
    store: &infra::embedded::EmbeddedStore,
    user: &UserId,
) -> Result<Vec<LoggedChange>, StoreError> {
    let partition = PartitionKey::User(user.clone()).to_string();
    let id = user.to_string();
    let mut found = Vec::new();
    let mut after = 0;
    loop {
        let records = store.changes_after(after, 10_000).await?;
        let Some(last) = records.last() else {
            return Ok(found);
        };
        after = last.seq;
        for record in &records {
            let holds_user = |image: &Option<Item>| {
                image
                    .as_ref()
                    .is_some_and(|i| holds(&Value::Object(i.clone()), &id))
            };
            if record.pk == partition || holds_user(&record.old) || holds_user(&record.new) {
                found.push(LoggedChange {
                    seq: record.seq,
                    table: record.table,
                    pk: record.pk.clone(),
                    sk: record.sk.clone(),
                });
            }
        }
    }
}
