//! Quantities written in scientific notation, through the real router on the embedded
//! store (issue 35, defect 8): a number is read exactly or refused, whichever notation
//! it is in. `1.00000000000000000000000000001e0` is not stored as 1, nor
//! `99.99999999999999999999999999999e0` as 100 (the plain forms of both are refused for
//! too many digits); `1.5e2` is 150.

mod support;

use axum::body::Body;
use axum::http::Request;
use commands::CommandMeta;
use events_schema::Context;
use events_schema::ids::UserId;
use std::sync::Arc;
use tower::ServiceExt as _;
use vitals::http::{AppState, app};

/// The router on a fresh embedded store, the store, and a signed-in user's id and token.
struct World {
    router: axum::Router,
    store: Arc<dyn infra::Store>,
    user: UserId,
    token: String,
    _dir: tempfile::TempDir,
}

fn world() -> World {
    let (embedded, dir) = vitals_tests::pipeline::open();
    let store: Arc<dyn infra::Store> = embedded;
    let user = UserId::generate();
    let token = support::local_auth()
        .issue(&user, Some("UTC"))
        .expect("token");
    let state = AppState {
        store: store.clone(),
        pipeline: None,
        api: support::api(store.clone(), 1000),
    };
    World {
        router: app(state),
        store,
        user,
        token,
        _dir: dir,
    }
}

impl World {
    /// `POST /v1/me/meals` of a meal whose calories are the JSON text `calories`; the
    /// status and the body.
    async fn log_meal(&self, calories: &str) -> (u16, String) {
        let body = format!(
            r#"{{"name": "Oats", "eaten_at": "2026-03-01T08:00:00.000Z", "calories": {calories}, "protein_g": 10, "carbs_g": 50, "fat_g": 5}}"#
        );
        let request = Request::post("/v1/me/meals")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", self.token))
            .body(Body::from(body))
            .expect("request");
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("infallible");
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Every item of the user's nutrition partition.
    async fn items(&self) -> Vec<infra::store::Item> {
        let pk = CommandMeta::new(self.user.clone()).user_pk();
        vitals_tests::commands::items_of(&*self.store, Context::Nutrition, &pk, "").await
    }
}

#[tokio::test]
async fn scientific_notation_that_would_round_is_refused_and_nothing_is_written() {
    let world = world();
    for calories in [
        "1.00000000000000000000000000001e0",
        "99.99999999999999999999999999999e0",
        r#""1.00000000000000000000000000001e0""#,
    ] {
        let (status, body) = world.log_meal(calories).await;
        assert_eq!(status, 422, "{calories}: {body}");
        assert!(body.contains("calories"), "{calories}: {body}");
    }
    let items = world.items().await;
    assert!(items.is_empty(), "nothing written: {items:?}");
}

#[tokio::test]
async fn scientific_notation_that_is_exact_is_read_as_its_value() {
    let world = world();
    let (status, body) = world.log_meal("1.5e2").await;
    assert_eq!(status, 201, "{body}");
    let meal: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(meal["nutrients"]["calories"], 150, "{meal}");
    let items = world.items().await;
    let stored: Vec<_> = items
        .iter()
        .filter(|item| {
            item["sk"]
                .as_str()
                .is_some_and(|sk| sk.starts_with("MEAL#"))
        })
        .collect();
    assert_eq!(stored.len(), 1, "{items:?}");
    assert_eq!(stored[0]["nutrients"]["calories"], "150", "{stored:?}");
}
