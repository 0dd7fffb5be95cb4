//! No request of any shape makes the router answer 5xx or panic: random methods, paths,
//! headers and bodies, with and without a valid token, through the real router on the
//! embedded store.

mod support;

use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};
use tower::ServiceExt as _;
use vitals::http::{AppState, app};
use vitals_tests::fuzz::{self, Fixture};

/// The router's state, and a valid token of a user.
struct Router {
    state: AppState,
    token: String,
}

fn fixture() -> &'static Fixture<Router> {
    static FIXTURE: OnceLock<Fixture<Router>> = OnceLock::new();
    fuzz::fixture(&FIXTURE, |store| {
        let store: Arc<dyn infra::Store> = store;
        let token = support::local_auth()
            .issue(&events_schema::ids::UserId::generate(), Some("UTC"))
            .expect("token");
        let api = support::api(store.clone(), 100000);
        let state = AppState {
            store,
            pipeline: None,
            api,
        };
        Router { state, token }
    })
}

fn method() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("GET"),
        Just("POST"),
        Just("PUT"),
        Just("PATCH"),
        Just("DELETE"),
        Just("OPTIONS")
    ]
}

fn path() -> impl Strategy<Value = String> {
    let known = prop_oneof![
        Just("/v1/auth/register"),
        Just("/v1/auth/login"),
        Just("/v1/me"),
        Just("/v1/me/profile"),
        Just("/v1/me/meals"),
        Just("/v1/me/meals/01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        Just("/v1/me/nutrition/daily?from=2026-01-01&to=2026-01-05"),
        Just("/v1/me/workouts"),
        Just("/v1/me/workouts/latest"),
        Just("/v1/me/training-block/current"),
        Just("/v1/me/sleep"),
        Just("/v1/me/goals"),
        Just("/v1/me/goals?status=active"),
        Just("/v1/me/goals/G1"),
        Just("/v1/me/goals/G1/progress"),
        Just("/v1/me/dashboard?date=2026-01-01"),
        Just("/v1/integrations/sandbox/connect"),
        Just("/v1/integrations/sandbox/callback?state=a&code=b"),
        Just("/v1/integrations/sandbox/complete"),
        Just("/v1/integrations/sandbox/webhook"),
        Just("/healthz"),
    ];
    prop_oneof![
        known.prop_map(str::to_owned),
        "/v1/me/[a-z/%#?=&.-]{0,40}".prop_map(|p| p.replace('#', "%23")),
        "/v1/me/meals/[^/?# ]{0,60}".prop_map(|p| p.replace(['%', ' '], "")),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<Vec<u8>>(),
        Just(b"{}".to_vec()),
        Just(br#"{"name":"x","eaten_at":"2026-01-01T00:00:00.000Z","calories":"1e30","protein_g":"1","carbs_g":"1","fat_g":"1"}"#.to_vec()),
        Just(br#"{"email":"a@b.co","password":"0123456789","display_name":"A","timezone":"UTC"}"#.to_vec()),
        Just(br#"{"kind":"weekly_workout_count","target":"99999999999999999999999999","title":"t"}"#.to_vec()),
        "\\{\"[a-z_]{1,12}\": ?(\"[^\"]{0,20}\"|-?[0-9]{1,30}|null|true|\\[\\]|\\{\\})\\}".prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn no_request_gets_a_5xx(method in method(), path in path(), body in body(), authed in any::<bool>(), junk_header in "[ -~]{0,40}", key in prop::option::of("[ -~]{0,140}")) {
        let f = fixture();
        let mut request = Request::builder().method(method).uri(path.as_str()).header("content-type", "application/json").header("x-vitals-signature", junk_header.as_str());
        if authed {
            request = request.header("authorization", format!("Bearer {}", f.under_test.token));
        }
        if let Some(key) = &key {
            request = request.header("idempotency-key", key.as_str());
        }
        let Ok(request) = request.body(Body::from(body)) else { return Ok(()) };
        let status = f.runtime.block_on(app(f.under_test.state.clone()).oneshot(request)).expect("infallible").status();
        prop_assert!(!status.is_server_error(), "{method} {path} -> {status}");
    }
}
