//! SDK configuration shared by the AWS adapters: region, optional endpoint URL (a local
//! emulator), retries with backoff for throttling, and an HTTPS client on rustls/ring.

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use std::time::Duration;

/// Where and how to reach AWS (or an emulator).
#[derive(Debug, Clone, Default)]
pub struct AwsSettings {
    /// Region; falls back to the environment, then `us-east-1`.
    pub region: Option<String>,
    /// An endpoint URL such as `http://127.0.0.1:4566` for an emulator.
    pub endpoint_url: Option<String>,
    /// Attempts per request, the first included (default 8).
    pub max_attempts: Option<u32>,
}

/// Loads SDK configuration: credentials from the usual provider chain; with an endpoint
/// URL and no credentials in the environment, dummy ones (emulators accept any).
pub async fn load(settings: &AwsSettings) -> SdkConfig {
    let http_client = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let retry = RetryConfig::standard()
        .with_max_attempts(settings.max_attempts.unwrap_or(8))
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_secs(5));
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http_client)
        .retry_config(retry);
    let region = settings
        .region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .unwrap_or_else(|| "us-east-1".to_owned());
    loader = loader.region(Region::new(region));
    if let Some(url) = &settings.endpoint_url {
        loader = loader.endpoint_url(url);
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            loader = loader.credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "local",
                "local",
                None,
                None,
                "vitals-local-emulator",
            ));
        }
    }
    loader.load().await
}
