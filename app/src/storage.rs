//! Builds the storage backend the configuration names. The only place in the binary
//! that knows which backends exist.
//!
//! An embedded store is opened, never conjured: [`existing`] (every command but `serve`)
//! refuses a missing or empty one with [`Exit::Store`] and a message naming its path;
//! only [`open`] (`vitals serve`'s first start) and `--create` make one.

use crate::cli::exit::Exit;
use crate::cli::{AwsArgs, Backend, StoreArgs};
use infra::Store;
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use infra::embedded::{EmbeddedStore, Open, OpenError};
use std::sync::Arc;

/// The live store, and the embedded one when that is the backend (for maintenance).
#[derive(Clone)]
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

/// The store as `vitals serve` opens it: an embedded one is made in `--data-dir` when
/// none is there (its first start).
pub async fn open(args: &StoreArgs) -> anyhow::Result<Storage> {
    open_in(args, Open::OrCreate).await
}

/// The store a command works on, which must exist: a missing or empty embedded store is
/// refused ([`Exit::Store`], naming its path), never made.
pub async fn existing(args: &StoreArgs) -> anyhow::Result<Storage> {
    open_in(args, Open::Existing).await
}

/// The store `args` names; `mode` says whether an embedded one may be made.
pub async fn open_in(args: &StoreArgs, mode: Open) -> anyhow::Result<Storage> {
    let aws = &args.aws;
    Ok(match args.backend {
        Backend::Embedded => {
            let store = Arc::new(embedded(&args.data_dir, mode)?);
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

/// The embedded store is open in another process: a running `vitals serve` (a store
/// command then runs through its admin socket), or another command.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is already open in another process (a running `vitals serve`? An embedded store \
     is one process's at a time: stop it first)",
    store.display()
)]
pub struct Held {
    /// The store's file.
    pub store: std::path::PathBuf,
}

/// The embedded store in `data_dir`; a refusal is [`Exit::Store`], its message naming
/// the path and what to do (a store open in another process is [`Held`]).
pub fn embedded(data_dir: &std::path::Path, mode: Open) -> anyhow::Result<EmbeddedStore> {
    EmbeddedStore::open_in(data_dir, mode).map_err(|error| {
        if let OpenError::Locked { path } = error {
            return Exit::Store.error_of(Held { store: path });
        }
        let hint = match &error {
            OpenError::Missing { .. } => {
                " (is --data-dir, or VITALS_DATA_DIR, right? A store is made by the first \
                 `vitals serve`, or by `--create` where a command has it)"
            }
            OpenError::Empty { .. } => " (move it away to make a new store)",
            _ => "",
        };
        Exit::Store.error(format!("{error}{hint}"))
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
