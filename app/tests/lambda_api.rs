//! The HTTP API as a Lambda function: API Gateway HTTP API (v2) events, decoded by
//! `lambda_http` exactly as the Lambda runtime does, through the router of
//! `vitals api-lambda`, answered as API Gateway responses.

mod support;

use lambda_http::Adapter;
use lambda_http::request::LambdaRequest;
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use support::Case;
use tower::{Service, ServiceExt};
use vitals::cli::{ApiArgs, AwsArgs, Backend, StoreArgs};

fn event(
    method: &str,
    target: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> LambdaEvent<LambdaRequest> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = json!({
        "accept": "application/json",
        "host": "abc123.execute-api.eu-west-1.amazonaws.com",
        "x-forwarded-proto": "https",
    });
    if let Some(token) = token {
        headers["authorization"] = json!(format!("Bearer {token}"));
    }
    if body.is_some() {
        headers["content-type"] = json!("application/json");
    }
    let event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.eu-west-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.7", "userAgent": "vitals-mobile/1.0"},
            "requestId": "id-1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "02/Dec/2026:10:00:00 +0000",
            "timeEpoch": 1796205600000_u64
        },
        "body": body.map(|b| b.to_string()),
        "isBase64Encoded": false
    });
    let request: LambdaRequest = serde_json::from_value(event).expect("an API Gateway v2 event");
    LambdaEvent::new(request, Context::default())
}

/// Sends one event through the `lambda_http` adapter (what `lambda_http::run` wraps the
/// router in); returns the API Gateway response's status and JSON body.
async fn invoke(router: &axum::Router, event: LambdaEvent<LambdaRequest>) -> (u16, Value) {
    let mut adapter = Adapter::from(router.clone());
    let response = adapter
        .ready()
        .await
        .expect("ready")
        .call(event)
        .await
        .expect("the router is infallible");
    let response = serde_json::to_value(response).expect("responses serialize");
    let status = response["statusCode"].as_u64().expect("a status code") as u16;
    let body = response["body"].as_str().unwrap_or_default();
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).expect("JSON body")
    };
    (status, body)
}

/// The router of `vitals api-lambda` on an embedded store, API Gateway events through
/// it: named cases, in order, each saying its name when it fails.
#[tokio::test]
async fn api_gateway_events_reach_the_router_and_come_back_as_responses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store_args = StoreArgs {
        backend: Backend::Embedded,
        data_dir: dir.path().to_path_buf(),
        aws: AwsArgs {
            endpoint_url: None,
            region: None,
            table_prefix: "vitals-".into(),
        },
    };
    let api_args = ApiArgs {
        jwt_secret: Some("lambda-test-signing-secret-32-bytes-or-more".into()),
        jwt_previous_secret: None,
        jwks_file: None,
        jwt_issuer: None,
        jwt_audience: None,
        webhook_secret: Some("lambda-test-webhook-secret-32-bytes-or-more".into()),
        connect_return_url: "vitals://integrations/callback".into(),
        rate_limit: 100,
        auth_rate_limit: 100,
        login_rate_limit: 100,
        webhook_rate_limit: 100,
        operations_rate_limit: 100,
    };
    let storage = vitals::storage::open(&store_args)
        .await
        .expect("store opens");
    let api = vitals::setup::api(storage.store.clone(), &api_args).expect("api");
    let router = vitals::lambda_api::router(&storage, api);

    let token = a_registration_answers_with_a_token(&router).await;
    a_command_then_a_read_of_the_row_it_wrote(&router, &token).await;
    no_token_is_unauthorized(&router).await;
    an_invalid_meal_is_unprocessable(&router, &token).await;
    drop(router);
    if let Some(embedded) = &storage.embedded {
        embedded.close();
    }
}

/// `POST /v1/me/meals` with `token`.
async fn log_meal(router: &axum::Router, token: &str, meal: Value) -> (u16, Value) {
    invoke(
        router,
        event("POST", "/v1/me/meals", Some(token), Some(meal)),
    )
    .await
}

/// Registration answers 201 with an access token, which it returns.
async fn a_registration_answers_with_a_token(router: &axum::Router) -> String {
    let _case = Case("a registration answers with a token");
    let (status, body) = invoke(
        router,
        event(
            "POST",
            "/v1/auth/register",
            None,
            Some(
                json!({"email": "lambda@example.com", "password": "correct horse battery",
                        "display_name": "Lam", "timezone": "Europe/Paris"}),
            ),
        ),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["access_token"].as_str().expect("a token").to_owned()
}

/// A command, then a read of the summary row it wrote (no projector runs here).
async fn a_command_then_a_read_of_the_row_it_wrote(router: &axum::Router, token: &str) {
    let _case = Case("a command, then a read of the row it wrote");
    let (status, body) = log_meal(
        router,
        token,
        json!({"name": "Oats", "eaten_at": "2026-12-01T08:00:00.000Z",
                "calories": "350", "protein_g": "12", "carbs_g": "60", "fat_g": "6"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert!(body["meal_id"].is_string());
    let (status, body) = invoke(
        router,
        event(
            "GET",
            "/v1/me/nutrition/daily?from=2026-12-01&to=2026-12-01",
            Some(token),
            None,
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["days"][0]["totals"]["calories"], 350, "{body}");
}

/// A request without a token is answered 401 with the documented error.
async fn no_token_is_unauthorized(router: &axum::Router) {
    let _case = Case("no token is unauthorized");
    let (status, body) = invoke(router, event("GET", "/v1/me/profile", None, None)).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "unauthorized");
}

/// A meal without its fields is answered 422.
async fn an_invalid_meal_is_unprocessable(router: &axum::Router, token: &str) {
    let _case = Case("an invalid meal is unprocessable");
    let (status, body) = log_meal(router, token, json!({"name": ""})).await;
    assert_eq!(status, 422, "{body}");
}
