//! Operator commands over a store: redrive a subscription's dead letters, run the
//! nightly readiness job.

use crate::cli::{DlqKind, StoreArgs};
use crate::storage;
use anyhow::Context as _;
use events_schema::time::Day;
use infra::Store;
use infra::dlq::{DeadLetterQueue, SqsDlq, TableDlq};
use infra::table::Table;
use projectors::runtime::{Redriven, redrive as redrive_letters};
use std::sync::Arc;

/// Applies a subscription's dead letters again, from its table or its SQS queue.
pub async fn redrive(
    args: &StoreArgs,
    dlq: DlqKind,
    subscription: &str,
) -> anyhow::Result<Redriven> {
    let store = storage::open(args).await?.store;
    let projector = projectors::registry::find(store.clone(), subscription)
        .with_context(|| format!("no subscription named {subscription:?}"))?;
    let dlq: Box<dyn DeadLetterQueue> = match dlq {
        DlqKind::Table => Box::new(TableDlq::new(store, projector.target())),
        DlqKind::Sqs => {
            let config = storage::aws_config(&args.aws).await;
            Box::new(SqsDlq::new(
                aws_sdk_sqs::Client::new(&config),
                &args.aws.table_prefix,
            ))
        }
    };
    Ok(redrive_letters(projector.as_ref(), dlq.as_ref()).await?)
}

pub async fn nightly_readiness(store: Arc<dyn Store>, date: &str) -> anyhow::Result<usize> {
    let day = Day::parse(date).context("--date must be YYYY-MM-DD")?;
    Ok(projectors::insights::nightly_readiness(&Table::new(store), day).await?)
}
