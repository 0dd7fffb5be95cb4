//! Builds the storage backend the configuration names. The only place in the binary
//! that knows which backends exist.

use crate::cli::{AwsArgs, Backend, StoreArgs};
use infra::Store;
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use infra::embedded::EmbeddedStore;
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
    dynamodb_on(&aws_config(args).await, args)
}

/// The DynamoDB backend on an SDK configuration already loaded.
pub fn dynamodb_on(config: &aws_config::SdkConfig, args: &AwsArgs) -> DynamoStore {
    DynamoStore::from_client(infra::aws_client::dynamodb(config), &args.table_prefix)
}

pub async fn open(args: &StoreArgs) -> anyhow::Result<Storage> {
    let aws = &args.aws;
    Ok(match args.backend {
        Backend::Embedded => {
            let store = Arc::new(EmbeddedStore::open(&args.data_dir)?);
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

impl Storage {
    /// The same storage, logging every write that took effect (the serving and
    /// projecting shapes; not the operator's bulk tools, whose writes are counted).
    pub fn logged(self) -> Self {
        Self {
            store: logged(self.store),
            embedded: self.embedded,
        }
    }
}

/// `store`, logging every write that took effect ([`infra::logged`]).
pub fn logged(store: Arc<dyn Store>) -> Arc<dyn Store> {
    Arc::new(infra::logged::LoggedStore::logging(store))
}

/// The SDK configuration the AWS arguments name.
pub async fn aws_config(args: &AwsArgs) -> aws_config::SdkConfig {
    infra::aws_client::load(&aws_settings(args)).await
}
