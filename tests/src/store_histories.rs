//! What the random-history tests of the store views (the rebuild's buffered view, the
//! consumer's folded view) share: the few keys their requests address, and two stores
//! seeded alike, one behind the view and one written directly (the oracle).

use events_schema::Context;
use infra::Store;
use infra::embedded::EmbeddedStore;
use infra::store::{Item, Key};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::sync::Arc;

pub const TABLES: [Context; 2] = [Context::Dashboard, Context::Goals];
pub const PKS: [&str; 2] = ["USER#a", "USER#b"];
pub const SKS: [&str; 4] = ["DAILY#1", "DAILY#2", "RECENT#1", "ROW"];

pub fn pick<T: Copy>(rng: &mut StdRng, from: &[T]) -> T {
    from[rng.gen_range(0..from.len())]
}

/// One of the few keys the histories address.
pub fn key(rng: &mut StdRng) -> (Context, Key) {
    (
        pick(rng, &TABLES),
        Key::new(pick(rng, &PKS), pick(rng, &SKS)),
    )
}

/// A fresh embedded store holding six items made by `item`, the same for a seed.
pub async fn seeded(
    seed: u64,
    item: impl Fn(&mut StdRng, &Key) -> Item,
) -> (tempfile::TempDir, Arc<EmbeddedStore>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..6 {
        let (table, key) = key(&mut rng);
        let item = item(&mut rng, &key);
        store.put(table, item, None).await.expect("seed");
    }
    (dir, store)
}

/// A store's items as comparable rows.
pub fn rows(snapshot: crate::snapshot::Snapshot) -> Vec<(Context, String, String, Value)> {
    snapshot
        .into_iter()
        .map(|((t, pk, sk), item)| (t, pk, sk, Value::Object(item)))
        .collect()
}
