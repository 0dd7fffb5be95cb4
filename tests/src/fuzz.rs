//! What the property tests (random inputs through the real handlers) share: proptest
//! runs its cases synchronously, so each test binary keeps one runtime of its own and one
//! embedded store in a temporary directory, made on first use and kept for every case.

use infra::embedded::EmbeddedStore;
use std::sync::{Arc, OnceLock};

/// A runtime, what a test built on a fresh embedded store, and the store's directory.
pub struct Fixture<T> {
    pub runtime: tokio::runtime::Runtime,
    pub under_test: T,
    _dir: tempfile::TempDir,
}

/// The fixture in `cell`, made by `build` from a fresh store the first time.
pub fn fixture<T: Send + Sync>(
    cell: &'static OnceLock<Fixture<T>>,
    build: impl FnOnce(Arc<EmbeddedStore>) -> T,
) -> &'static Fixture<T> {
    cell.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (store, dir) = crate::pipeline::open();
        Fixture {
            runtime,
            under_test: build(store),
            _dir: dir,
        }
    })
}
