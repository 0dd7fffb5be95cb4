//! Throttling on the DynamoDB backend, over the real wire protocol: a scripted endpoint
//! answers `ThrottlingException` a given number of times. The adapter retries with
//! backoff (the SDK's standard retry strategy) and succeeds, or, when throttling
//! persists, reports the port's typed `StoreError::Throttled`.

use events_schema::Context;
use infra::Store;
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use infra::store::{Key, StoreError};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const THROTTLED: &str = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#;

/// Serves DynamoDB JSON-protocol responses: the first `throttle` requests are throttled,
/// the rest get an empty GetItem result. Returns the endpoint and the request counter.
async fn scripted_endpoint(throttle: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let address = listener.local_addr().expect("address");
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    // One request per iteration: headers, then Content-Length bytes.
                    let header_end = loop {
                        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                            break end + 4;
                        }
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let headers = String::from_utf8_lossy(&buffer[..header_end]).to_lowercase();
                    let length: usize = headers
                        .lines()
                        .find_map(|l| {
                            l.strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    while buffer.len() < header_end + length {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buffer.drain(..header_end + length);
                    let seen = counter.fetch_add(1, Ordering::SeqCst);
                    let (status, body) = if seen < throttle {
                        ("400 Bad Request", THROTTLED)
                    } else {
                        ("200 OK", "{}")
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if socket.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{address}"), requests)
}

async fn store_at(endpoint: String, max_attempts: u32) -> DynamoStore {
    let settings = AwsSettings {
        endpoint_url: Some(endpoint),
        max_attempts: Some(max_attempts),
        region: None,
    };
    DynamoStore::connect(&settings, "vitals-").await
}

#[tokio::test]
async fn throttled_requests_are_retried_with_backoff_until_they_succeed() {
    let (endpoint, requests) = scripted_endpoint(2).await;
    let store = store_at(endpoint, 4).await;
    let found = store
        .get(Context::Identity, &Key::new("USER#1", "PROFILE"), true)
        .await;
    assert_eq!(found.expect("succeeds after retries"), None);
    assert_eq!(
        requests.load(Ordering::SeqCst),
        3,
        "two throttled attempts, then success"
    );
    let stats = store.metrics().snapshot()["GetItem"];
    assert_eq!((stats.requests, stats.throttled), (1, 0), "{stats:?}");
}

#[tokio::test]
async fn persistent_throttling_is_a_typed_error() {
    let (endpoint, requests) = scripted_endpoint(usize::MAX).await;
    let store = store_at(endpoint, 3).await;
    let result = store
        .get(Context::Identity, &Key::new("USER#1", "PROFILE"), true)
        .await;
    assert!(matches!(result, Err(StoreError::Throttled)), "{result:?}");
    assert!(result.is_err_and(|e| e.is_retryable()));
    assert_eq!(
        requests.load(Ordering::SeqCst),
        3,
        "every allowed attempt was made"
    );
    // Reported on /metrics: one request that stayed throttled.
    let text = infra::store::metrics_text(&store);
    assert!(
        text.contains("vitals_dynamodb_requests_total{operation=\"GetItem\"} 1\n")
            && text.contains("vitals_dynamodb_throttled_total{operation=\"GetItem\"} 1\n"),
        "{text}"
    );
}
