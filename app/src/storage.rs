//! Builds the storage backend the configuration names. The only place in the binary
//! that knows which backends exist.

use crate::cli::{AwsArgs, Backend};
use infra::Store;
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use infra::embedded::EmbeddedStore;
use std::path::Path;
use std::sync::Arc;

/// The live store, and the embedded one when that is the backend (for maintenance).
pub struct Storage {
    pub store: Arc<dyn Store>,
    pub embedded: Option<Arc<EmbeddedStore>>,
}

pub fn aws_settings(args: &AwsArgs) -> AwsSettings {
    AwsSettings {
        region: args.region.clone(),
        endpoint_url: args.endpoint_url.clone(),
        max_attempts: None,
    }
}

pub async fn dynamodb(args: &AwsArgs) -> DynamoStore {
    let config = aws_config(args).await;
    DynamoStore::from_client(aws_sdk_dynamodb::Client::new(&config), &args.table_prefix)
}

pub async fn open(backend: Backend, data_dir: &Path, aws: &AwsArgs) -> anyhow::Result<Storage> {
    Ok(match backend {
        Backend::Embedded => {
            let store = Arc::new(EmbeddedStore::open(data_dir)?);
            Storage {
                store: store.clone(),
                embedded: Some(store),
            }
        }
        Backend::Dynamodb => Storage {
            store: Arc::new(dynamodb(aws).await),
            embedded: None,
        },
    })
}

/// The embedded store of a data directory, alone (for admin commands).
pub fn embedded(data_dir: &Path) -> anyhow::Result<Arc<dyn Store>> {
    Ok(Arc::new(EmbeddedStore::open(data_dir)?))
}

/// The SDK configuration the AWS arguments name.
pub async fn aws_config(args: &AwsArgs) -> aws_config::SdkConfig {
    infra::aws_client::load(&aws_settings(args)).await
}
