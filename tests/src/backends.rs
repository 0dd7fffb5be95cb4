//! Backends for tests: a fresh embedded store in a temporary directory, or the DynamoDB
//! backend on the emulator named by `VITALS_TEST_DYNAMODB_ENDPOINT`, with tables created
//! once per test process under a prefix of its own.

use infra::Store;
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use infra::embedded::EmbeddedStore;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The variable naming the emulator's endpoint URL for the DynamoDB suites.
pub const ENDPOINT_VAR: &str = "VITALS_TEST_DYNAMODB_ENDPOINT";

/// A store for one test, and what keeps it alive.
pub struct TestBackend {
    pub store: Arc<dyn Store>,
    /// The embedded store's directory (removed when the test ends).
    pub dir: Option<tempfile::TempDir>,
}

pub async fn embedded() -> TestBackend {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = EmbeddedStore::open(dir.path()).expect("embedded store opens");
    TestBackend {
        store: Arc::new(store),
        dir: Some(dir),
    }
}

/// Every table buffered in memory ([`infra::buffered::Buffered`]) over a fresh embedded
/// store: what a rebuild's projectors write to.
pub async fn buffered_embedded() -> TestBackend {
    let backend = embedded().await;
    TestBackend {
        store: Arc::new(infra::buffered::Buffered::new(
            backend.store,
            events_schema::Context::ALL,
        )),
        dir: backend.dir,
    }
}

/// The emulator's endpoint. Panics with instructions when it is not set: the DynamoDB
/// suites must never pass by silently skipping.
pub fn dynamodb_endpoint() -> String {
    match std::env::var(ENDPOINT_VAR) {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!(
            "{ENDPOINT_VAR} is not set: the DynamoDB suite needs an emulator. Run \
             `scripts/test-all` (it installs and starts one), or start one with \
             `scripts/emulator.sh start` and export {ENDPOINT_VAR}=<the URL it prints>."
        ),
    }
}

static PREFIX: OnceCell<String> = OnceCell::const_new();

pub async fn dynamodb() -> TestBackend {
    TestBackend {
        store: Arc::new(dynamodb_store().await),
        dir: None,
    }
}

/// The DynamoDB backend itself (for what only it has, such as its request metrics).
pub async fn dynamodb_store() -> DynamoStore {
    let endpoint = dynamodb_endpoint();
    let settings = AwsSettings {
        endpoint_url: Some(endpoint),
        ..AwsSettings::default()
    };
    let prefix = PREFIX
        .get_or_init(|| async {
            let prefix = format!("t{}-", ulid::Ulid::new().to_string().to_lowercase());
            let store = DynamoStore::connect(&settings, &prefix).await;
            store
                .bootstrap()
                .await
                .expect("tables are created on the emulator");
            prefix
        })
        .await;
    DynamoStore::connect(&settings, prefix).await
}
