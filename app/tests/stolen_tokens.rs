//! Issue 35, defect 3, over HTTP: a stolen access token outlived a password change, and
//! with an access token alone its holder could change the email (which ends every
//! session) or delete the account, locking the owner out. Now an email change and a
//! deletion ask for the current password (a wrong one is a try at the password, counted
//! like a sign-in's), and a password or email change ends every access token issued
//! before it, on every process, whatever second it was issued in.

mod support;

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use support::{Client, Server};
use tower::ServiceExt as _;

const PASSWORD: &str = "correct horse battery";
const NEW_PASSWORD: &str = "a brand new passphrase";
/// How long the in-process projections may take.
const CONVERGE_WITHIN: Duration = Duration::from_secs(30);

/// `vitals serve` on a store in `dir`, with secrets of this test's own (32 bytes and
/// more), and the generous rate limits of `support` unless `exact` (the binary's own).
fn serve(dir: &tempfile::TempDir, exact: bool) -> Server {
    let data_dir = dir.path().join("data");
    let args = ["--data-dir", data_dir.to_str().expect("utf-8")];
    let env = [
        ("VITALS_JWT_SECRET", "stolen-tokens-signing-key-0123456789"),
        (
            "VITALS_WEBHOOK_SECRET",
            "stolen-tokens-hook-secret-0123456789",
        ),
    ];
    if exact {
        support::start_with_exact_env(&args, &env)
    } else {
        support::start_with_env(&args, &env)
    }
}

/// `POST /v1/auth/login`: (status, reply).
fn login(address: &str, email: &str, password: &str) -> (u16, Value) {
    let body = json!({"email": email, "password": password});
    Client::anonymous(address).call("POST", "/v1/auth/login", Some(body), &[])
}

/// A second device of the account (or a thief's copy of its token): a fresh sign-in.
fn another_device(address: &str, email: &str, password: &str) -> Client {
    let (status, reply) = login(address, email, password);
    assert_eq!(status, 200, "{reply}");
    Client::signed_in(address, &reply)
}

/// A read every signed-in caller gets a 200 for, projections or not.
const A_READ: &str = "/v1/me/meals?date=2026-03-01";

/// (status, error code) of `client`'s `A_READ`.
fn reads(client: &Client) -> (u16, Value) {
    let (status, reply) = client.call("GET", A_READ, None, &[]);
    (status, reply["error"]["code"].clone())
}

/// (a) The thief's token, taken before the owner changes the password, is refused from
/// the change on (and so is the token of the device that changed it), while a sign-in
/// with the new password right after the change works.
#[test]
fn a_password_change_ends_the_access_tokens_issued_before_it() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, false);
    let address = server.address.clone();
    let ana = support::register(&address, "ana@example.com");
    let stolen = another_device(&address, "ana@example.com", PASSWORD);
    assert_eq!(reads(&stolen).0, 200, "the stolen token works, for now");

    let change = json!({"current_password": PASSWORD, "new_password": NEW_PASSWORD});
    let (status, reply) = ana.call("POST", "/v1/me/password", Some(change), &[]);
    assert_eq!(status, 204, "{reply}");
    // At once (as like as not within the same second), a sign-in with the new password
    // gets a token that works;
    let fresh = another_device(&address, "ana@example.com", NEW_PASSWORD);
    assert_eq!(reads(&fresh).0, 200);
    // every token issued before the change is refused, to read and to write.
    for (whose, client) in [("the thief's", &stolen), ("the changing device's", &ana)] {
        assert_eq!(reads(client), (401, json!("unauthorized")), "{whose}");
        let (status, reply) = client.call("POST", "/v1/me/meals", Some(support::meal(300)), &[]);
        assert_eq!(status, 401, "{whose}: {reply}");
    }
    assert_eq!(reads(&fresh).0, 200, "the new one still works");
    server.stop();
}

/// (b) An email change asks for the current password: without it, or with a wrong one,
/// it is refused and nothing changes (the old email still signs in, the token still
/// works); with it the email moves, and the tokens issued before end with the sessions.
#[test]
fn an_email_change_needs_the_current_password() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, false);
    let address = server.address.clone();
    let thief = support::register(&address, "ana@example.com");
    let moved = "thief@example.com";
    let refusals = [
        (json!({"email": moved}), 422, "validation"),
        (
            json!({"email": moved, "display_name": "Thief"}),
            422,
            "validation",
        ),
        (
            json!({"email": moved, "current_password": "a guess at the password"}),
            403,
            "wrong_password",
        ),
    ];
    for (body, status, code) in refusals {
        let (answered, reply) = thief.call("PATCH", "/v1/me/profile", Some(body.clone()), &[]);
        assert_eq!(
            (answered, &reply["error"]["code"]),
            (status, &json!(code)),
            "{body}: {reply}"
        );
    }
    let (status, reply) = thief.call(
        "PATCH",
        "/v1/me/profile",
        Some(json!({"email": moved})),
        &[],
    );
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("current_password")),
        "{status} {reply}"
    );
    // Nothing changed: the old email signs in, the new one does not, the token works.
    assert_eq!(login(&address, "ana@example.com", PASSWORD).0, 200);
    assert_eq!(login(&address, moved, PASSWORD).0, 401);
    assert_eq!(reads(&thief).0, 200);
    let profile = thief.eventually("/v1/me/profile", CONVERGE_WITHIN, |_| true);
    assert_eq!(
        (&profile["email"], &profile["display_name"]),
        (&json!("ana@example.com"), &json!("Ana"))
    );

    // The owner, who knows the password, moves the account.
    let owner = another_device(&address, "ana@example.com", PASSWORD);
    let body = json!({"email": "ana.new@example.com", "current_password": PASSWORD});
    let (status, reply) = owner.call("PATCH", "/v1/me/profile", Some(body), &[]);
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["email"], "ana.new@example.com");
    assert_eq!(login(&address, "ana.new@example.com", PASSWORD).0, 200);
    assert_eq!(login(&address, "ana@example.com", PASSWORD).0, 401);
    // Every token issued before the change ends with it.
    assert_eq!(reads(&thief), (401, json!("unauthorized")));
    assert_eq!(reads(&owner), (401, json!("unauthorized")));
    server.stop();
}

/// (c) Deleting the account asks for the current password: without a body, without the
/// field, or with a wrong one it is refused and nothing is erased; with it the deletion
/// proceeds.
#[test]
fn deleting_the_account_needs_the_current_password() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, false);
    let address = server.address.clone();
    let ana = support::register(&address, "ana@example.com");
    let (status, reply) = ana.log_meal(support::meal(420), "breakfast");
    assert_eq!(status, 201, "{reply}");
    let wrong = json!({"current_password": "a guess at the password"});
    let refusals = [
        (None, 400, "malformed_json"),
        (Some(json!({})), 422, "validation"),
        (Some(wrong), 403, "wrong_password"),
    ];
    for (body, status, code) in refusals {
        let (answered, reply) = ana.call("DELETE", "/v1/me", body.clone(), &[]);
        assert_eq!(
            (answered, &reply["error"]["code"]),
            (status, &json!(code)),
            "{body:?}: {reply}"
        );
    }
    // Nothing erased: the account signs in, its token works, its meal is there.
    assert_eq!(login(&address, "ana@example.com", PASSWORD).0, 200);
    assert_eq!(reads(&ana).0, 200);
    let day = support::today();
    let (status, page) = ana.call("GET", &format!("/v1/me/meals?date={day}"), None, &[]);
    assert_eq!(
        (status, page["items"].as_array().map(Vec::len)),
        (200, Some(1)),
        "{page}"
    );

    let right = json!({"current_password": PASSWORD});
    let (status, reply) = ana.call("DELETE", "/v1/me", Some(right), &[]);
    assert_eq!(status, 202, "{reply}");
    assert_eq!(reads(&ana), (401, json!("account_deleted")));
    let (status, reply) = login(&address, "ana@example.com", PASSWORD);
    assert_eq!(
        (status, &reply["error"]["code"]),
        (401, &json!("account_deleted"))
    );
    server.stop();
}

/// A wrong current password, to change the email or to delete the account, is a try at
/// the password, counted with the password change's: a stolen token guesses no faster
/// than a sign-in would (ten a minute, the binary's default).
#[test]
fn wrong_current_passwords_are_counted_as_tries_at_the_password() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, true);
    let ana = support::register(&server.address, "ana@example.com");
    let guess = "a guess at the password";
    let email_change = json!({"email": "thief@example.com", "current_password": guess});
    let deletion = json!({"current_password": guess});
    let mut statuses = Vec::new();
    for n in 0..40 {
        let (status, reply) = if n % 2 == 0 {
            ana.call("PATCH", "/v1/me/profile", Some(email_change.clone()), &[])
        } else {
            ana.call("DELETE", "/v1/me", Some(deletion.clone()), &[])
        };
        assert!(status == 403 || status == 429, "{status} {reply}");
        statuses.push(status);
        if status == 429 {
            assert_eq!(reply["error"]["code"], "rate_limited", "{reply}");
            break;
        }
    }
    // Ten tries a minute, one more every six seconds: a slow run may see one or two.
    let guesses = statuses.iter().filter(|s| **s == 403).count();
    assert!(
        statuses.last() == Some(&429) && (10..=12).contains(&guesses),
        "about ten wrong guesses, then throttled: {statuses:?}"
    );
    server.stop();
}

/// The router in process on `store`: one of several processes serving the same tables.
fn process(store: &Arc<dyn infra::Store>) -> axum::Router {
    vitals::http::app(vitals::http::AppState {
        store: store.clone(),
        pipeline: None,
        api: support::api(store.clone(), 1000),
    })
}

/// One JSON request to `router`: (status, reply).
async fn exchange(
    router: &axum::Router,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let request = request.body(axum::body::Body::from(body)).expect("request");
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await;
    let reply = serde_json::from_slice(&bytes.expect("body")).unwrap_or(Value::Null);
    (status, reply)
}

/// The access token of `reply` (a sign-up's or sign-in's).
fn token_of(reply: &Value) -> String {
    reply["access_token"].as_str().expect("a token").to_owned()
}

/// Two processes on one store: a password changed through one ends the tokens issued
/// before it on the other at once (no process keeps an answer of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_change_ends_old_tokens_on_every_process_at_once() {
    let (embedded, _dir) = vitals_tests::pipeline::open();
    let store: Arc<dyn infra::Store> = embedded;
    let (one, other) = (process(&store), process(&store));
    let sign_up = json!({"email": "ana@example.com", "password": PASSWORD,
                         "display_name": "Ana", "timezone": "UTC"});
    let (status, reply) = exchange(&one, "POST", "/v1/auth/register", None, Some(sign_up)).await;
    assert_eq!(status, 201, "{reply}");
    let old = token_of(&reply);
    assert_eq!(read_with(&other, &old).await, 200);

    let change = json!({"current_password": PASSWORD, "new_password": NEW_PASSWORD});
    let (status, reply) = exchange(&one, "POST", "/v1/me/password", Some(&old), Some(change)).await;
    assert_eq!(status, 204, "{reply}");
    let (status, reply) = exchange(&other, "GET", A_READ, Some(&old), None).await;
    assert_eq!(status, 401, "refused on the other process at once: {reply}");
    let sign_in = json!({"email": "ana@example.com", "password": NEW_PASSWORD});
    let (status, reply) = exchange(&other, "POST", "/v1/auth/login", None, Some(sign_in)).await;
    assert_eq!(status, 200, "{reply}");
    let new = token_of(&reply);
    let user = reply["user_id"].as_str().expect("user id").to_owned();
    for router in [&one, &other] {
        let (fresh, stale) = (read_with(router, &new), read_with(router, &old));
        assert_eq!((fresh.await, stale.await), (200, 401));
    }
    // What tells the two apart is not the time: a token of the credentials as they were
    // before the change, issued now (after it, in its second or later), is refused all
    // the same.
    let user = events_schema::ids::UserId::parse(&user).expect("a user id");
    let before = support::local_auth().issue(&user, Some("UTC"));
    assert_eq!(read_with(&other, &before.expect("a token")).await, 401);
}

/// The status of `A_READ` on `router` with `token`.
async fn read_with(router: &axum::Router, token: &str) -> u16 {
    exchange(router, "GET", A_READ, Some(token), None).await.0
}
