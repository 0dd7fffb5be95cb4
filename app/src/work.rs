//! The aws-local and aws shapes of the projectors: `vitals work` runs every subscription
//! on the Kinesis streams (checkpoints in the subscriber's table, dead letters in SQS or
//! the table); `vitals lambda` runs one subscription as a Lambda function.

use crate::cli::{AwsArgs, BootstrapArgs, DlqKind, WorkArgs};
use crate::storage;
use anyhow::Context as _;
use infra::Store;
use infra::dlq::{DeadLetterStore, SqsDlq};
use infra::feed::ChangeFeed;
use infra::feed::bridge::StreamBridge;
use infra::feed::kinesis::{KinesisFeed, provision};
use projectors::Projector;
use projectors::pipeline::Pipeline;
use std::sync::Arc;

pub async fn bootstrap(args: &BootstrapArgs) -> anyhow::Result<()> {
    let config = storage::aws_config(&args.aws).await;
    let store = storage::dynamodb_on(&config, &args.aws);
    for table in store.bootstrap().await? {
        let what = if table.created { "created" } else { "exists" };
        println!("{what}\t{}", table.name);
    }
    if args.kinesis {
        let kinesis = infra::aws_client::kinesis(&config);
        for stream in provision(
            store.client(),
            &kinesis,
            &args.aws.table_prefix,
            !args.bridge,
        )
        .await?
        {
            println!("streaming\t{stream}");
        }
    }
    if args.dlq_queues {
        let dlq = SqsDlq::new(infra::aws_client::sqs(&config), &args.aws.table_prefix);
        for projector in projectors::registry::all(Arc::new(store.clone())) {
            dlq.provision(projector.name()).await?;
            println!("queue\t{}", dlq.queue_name(projector.name()));
        }
    }
    Ok(())
}

/// Starts every subscription on the Kinesis streams.
pub fn start(config: &aws_config::SdkConfig, aws: &AwsArgs, dlq: DlqKind) -> Pipeline {
    start_with_store(config, aws, dlq).0
}

/// [`start`], and the store the workers write through (for its metrics).
pub fn start_with_store(
    config: &aws_config::SdkConfig,
    aws: &AwsArgs,
    dlq: DlqKind,
) -> (Pipeline, Arc<dyn Store>) {
    let store = storage::logged(Arc::new(storage::dynamodb_on(config, aws)));
    let kinesis = infra::aws_client::kinesis(config);
    let dead_letters = dead_letters(config, aws, dlq, &store);
    let prefix = aws.table_prefix.clone();
    let feed_store = store.clone();
    let queues = dead_letters.clone();
    let pipeline = Pipeline::start_with(
        projectors::registry::all_with(store.clone(), &dead_letters),
        move |projector: &Arc<dyn Projector>| {
            Arc::new(KinesisFeed::new(
                kinesis.clone(),
                &prefix,
                projector.source(),
                feed_store.clone(),
                projector.target(),
            )) as Arc<dyn ChangeFeed>
        },
        move |projector: &Arc<dyn Projector>| queues.queue_for(projector.target()),
    );
    (pipeline, store)
}

/// Where dead letters are kept: SQS queues, or rows of the subscribers' tables.
pub fn dead_letters(
    config: &aws_config::SdkConfig,
    aws: &AwsArgs,
    dlq: DlqKind,
    store: &Arc<dyn Store>,
) -> DeadLetterStore {
    match dlq {
        DlqKind::Sqs => DeadLetterStore::Sqs(SqsDlq::new(
            infra::aws_client::sqs(config),
            &aws.table_prefix,
        )),
        DlqKind::Table => DeadLetterStore::Tables(store.clone()),
    }
}

pub async fn work(args: &WorkArgs) -> anyhow::Result<()> {
    let config = storage::aws_config(&args.aws).await;
    let listener = tokio::net::TcpListener::bind(args.metrics_listen)
        .await
        .with_context(|| format!("binding the metrics address {}", args.metrics_listen))?;
    let address = listener.local_addr()?;
    let (pipeline, store) = start_with_store(&config, &args.aws, args.dlq);
    let pipeline = Arc::new(pipeline);
    let (stop_metrics, metrics_stopped) = tokio::sync::watch::channel(false);
    let metrics = tokio::spawn(serve_metrics(
        listener,
        pipeline.clone(),
        store,
        metrics_stopped,
    ));
    // The address on stdout, so scripts and tests can find a port-0 listener.
    println!("metrics on http://{address}/metrics");
    let (stop_bridge, bridge_stopped) = tokio::sync::watch::channel(false);
    let bridge = if args.bridge {
        Some(tokio::spawn(
            StreamBridge::new(&config, &args.aws.table_prefix).run(bridge_stopped),
        ))
    } else {
        None
    };
    tracing::info!(bridge = args.bridge, "projector workers running on Kinesis");
    crate::server::shutdown_signal().await;
    let _ = stop_bridge.send(true);
    if let Some(bridge) = bridge {
        let _ = bridge.await;
    }
    let _ = stop_metrics.send(true);
    let _ = metrics.await;
    pipeline.stop().await;
    Ok(())
}

/// `GET /metrics` of the workers: the same families, from the same snapshot, as
/// `vitals serve`'s.
async fn serve_metrics(
    listener: tokio::net::TcpListener,
    pipeline: Arc<Pipeline>,
    store: Arc<dyn Store>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let (pipeline, store) = (pipeline.clone(), store.clone());
            async move { crate::http::metrics_text(pipeline.stats().await, &*store) }
        }),
    );
    let shutdown = async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    // The same connection handling as `vitals serve`'s (header, body and idle
    // timeouts, a cap on connections): a scrape port is no less exposed.
    crate::server::serve_connections(
        listener,
        router,
        crate::server::ConnectionLimits::default(),
        shutdown,
    )
    .await;
}

pub async fn lambda(subscription: &str, aws: &AwsArgs) -> anyhow::Result<()> {
    let store = storage::logged(Arc::new(storage::dynamodb(aws).await));
    let projector = projectors::registry::find(store, subscription)
        .with_context(|| format!("no subscription named {subscription:?}"))?;
    let prefix = aws.table_prefix.clone();
    let handler = lambda_runtime::service_fn(
        move |event: lambda_runtime::LambdaEvent<
            aws_lambda_events::event::kinesis::KinesisEvent,
        >| {
            let (projector, prefix) = (projector.clone(), prefix.clone());
            async move {
                Ok::<_, lambda_runtime::Error>(
                    projectors::lambda::handle_kinesis_event(
                        projector.as_ref(),
                        &event.payload,
                        &prefix,
                    )
                    .await,
                )
            }
        },
    );
    lambda_runtime::run(handler)
        .await
        .map_err(|e| anyhow::anyhow!("lambda runtime: {e}"))
}
