//! Operator commands over a store: redrive a subscription's dead letters, run the
//! nightly readiness job.

use anyhow::Context as _;
use events_schema::time::Day;
use infra::Store;
use infra::dlq::TableDlq;
use infra::table::Table;
use projectors::runtime::{Redriven, redrive as redrive_letters};
use std::sync::Arc;

pub async fn redrive(store: Arc<dyn Store>, subscription: &str) -> anyhow::Result<Redriven> {
    let projector = projectors::registry::find(store.clone(), subscription)
        .with_context(|| format!("no subscription named {subscription:?}"))?;
    let dlq = TableDlq::new(store, projector.target());
    Ok(redrive_letters(projector.as_ref(), &dlq).await?)
}

pub async fn nightly_readiness(store: Arc<dyn Store>, date: &str) -> anyhow::Result<usize> {
    let day = Day::parse(date).context("--date must be YYYY-MM-DD")?;
    Ok(projectors::insights::nightly_readiness(&Table::new(store), day).await?)
}
