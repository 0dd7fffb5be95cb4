//! The defects a review found over HTTP (issue 11), each tried as a client would, on the
//! embedded shape: a repeated sign-up, a shared wearable identity, a goal on the user's
//! own day, an overflowing webhook timestamp, password guessing, a login storm, a
//! deleted account's token, and one user's concurrent writes.

mod support;

use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use support::{Client, Server, registration};

const CONVERGE_WITHIN: Duration = Duration::from_secs(30);
const HOOK_SECRET: &str = "test-hook-secret-32-bytes-or-more";

/// Rate limits high enough that only the tests about limits meet them.
const GENEROUS: [(&str, &str); 3] = [
    ("VITALS_AUTH_RATE_LIMIT", "100000"),
    ("VITALS_LOGIN_RATE_LIMIT", "100000"),
    ("VITALS_RATE_LIMIT", "100000"),
];

/// `vitals serve` with `extra` and the binary's own defaults for everything else (the
/// rate limits included, unless `extra` raises them).
fn serve(dir: &tempfile::TempDir, extra: &[(&str, &str)]) -> Server {
    let data_dir = dir.path().join("data");
    let mut env = vec![
        ("VITALS_JWT_SECRET", "test-jwt-secret-32-bytes-or-more"),
        ("VITALS_WEBHOOK_SECRET", HOOK_SECRET),
    ];
    env.extend_from_slice(extra);
    support::start_with_exact_env(&["--data-dir", data_dir.to_str().expect("utf-8")], &env)
}

fn register_with(address: &str, body: Value, key: Option<&str>) -> (u16, Value) {
    let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
    Client::anonymous(address).call("POST", "/v1/auth/register", Some(body), &headers)
}

/// Defect 1: a second sign-up with the same key, email and profile and any password
/// answered 201 with the first account's id and a valid token.
#[test]
fn a_repeated_sign_up_with_another_password_gets_no_token() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &GENEROUS);
    let address = server.address.clone();
    let mut body = registration("ana@example.com");
    let (status, first) = register_with(&address, body.clone(), Some("signup-1"));
    assert_eq!(status, 201, "{first}");
    // The same request again (a retry): the same account, signed in.
    let (status, retried) = register_with(&address, body.clone(), Some("signup-1"));
    assert_eq!(status, 201, "{retried}");
    assert_eq!(retried["user_id"], first["user_id"]);
    // Someone else, guessing the key, with another password: no token.
    body["password"] = json!("an entirely different password");
    let (status, stolen) = register_with(&address, body, Some("signup-1"));
    assert_ne!(status, 201, "{stolen}");
    assert!(stolen.get("token").is_none(), "{stolen}");
    assert_eq!(stolen["error"]["code"], "email_taken", "{stolen}");
}

fn signed(address: &str, body: &Value) -> (u16, Value) {
    let bytes = body.to_string().into_bytes();
    let now = chrono::Utc::now().timestamp();
    let signature = commands::integrations::sign(HOOK_SECRET.as_bytes(), now, &bytes);
    let now = now.to_string();
    let (status, _, text) = support::exchange(
        address,
        "POST",
        "/v1/integrations/sandbox/webhook",
        &[
            ("Content-Type", "application/json"),
            ("X-Vitals-Timestamp", &now),
            ("X-Vitals-Signature", &signature),
        ],
        Some(&bytes),
    );
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn connect(client: &Client, provider_user: &str) -> (u16, Value) {
    client.connect_wearable(provider_user, &[])
}

fn workout_delivery(delivery: &str, provider_user: &str, external: &str) -> Value {
    json!({"delivery_id": delivery, "provider_user_id": provider_user, "workouts": [
        {"external_id": external, "sport": "run", "started_at": "2026-03-01T07:00:00.000Z",
         "duration_s": 2400, "distance_m": 8000, "calories": null,
         "updated_at": "2026-03-01T08:00:00.000Z"}]})
}

/// Defect 2: a second account connecting with the same provider user id took over the
/// first one's webhooks; a reconnect as another provider user left the old pointer.
#[test]
fn a_wearable_identity_belongs_to_one_account_at_a_time() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &GENEROUS);
    let address = server.address.clone();
    let ana = support::register(&address, "ana@example.com");
    let bob = support::register(&address, "bob@example.com");
    let (status, reply) = connect(&ana, "watch-1");
    assert_eq!(status, 200, "{reply}");
    // Bob authorizes the same provider account (a fresh code for it).
    let (status, reply) = connect(&bob, "watch-1");
    assert_eq!(status, 409, "{reply}");
    assert_eq!(reply["error"]["code"], "provider_account_taken", "{reply}");
    let (status, reply) = signed(&address, &workout_delivery("d-1", "watch-1", "run-1"));
    assert_eq!(status, 202, "{reply}");
    ana.eventually("/v1/me/workouts/latest", CONVERGE_WITHIN, |w| {
        w.to_string().contains("run-1")
    });
    let (status, reply) = bob.call("GET", "/v1/me/workouts/latest", None, &[]);
    assert_eq!(status, 404, "bob sees nothing of ana's: {reply}");
    // Ana moves to another watch: the old identity no longer routes to her.
    let (status, reply) = connect(&ana, "watch-2");
    assert_eq!(status, 200, "{reply}");
    let (status, reply) = signed(&address, &workout_delivery("d-2", "watch-1", "run-2"));
    assert_eq!(status, 404, "{reply}");
    // And the freed identity can now be Bob's.
    let (status, reply) = connect(&bob, "watch-1");
    assert_eq!(status, 200, "{reply}");
}

fn processed(address: &str, subscription: &str) -> u64 {
    let (status, _, text) = support::exchange(address, "GET", "/metrics", &[], None);
    assert_eq!(status, 200);
    support::processed_events(&text, subscription)
}

/// Defect 9: a goal created after its day's facts was evaluated on the UTC day of its
/// creation, not the user's.
#[test]
fn a_new_goal_starts_from_the_facts_of_the_users_own_day() {
    use chrono::Timelike;
    let now = chrono::Utc::now();
    // A timezone whose calendar day differs from UTC's right now.
    let timezone = if now.hour() >= 10 {
        "Pacific/Kiritimati"
    } else {
        "Pacific/Pago_Pago"
    };
    let tz: chrono_tz::Tz = timezone.parse().expect("timezone");
    let local_today = now.with_timezone(&tz).date_naive().to_string();
    assert_ne!(local_today, now.date_naive().to_string());

    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &GENEROUS);
    let address = server.address.clone();
    let mut body = registration("kai@example.com");
    body["timezone"] = json!(timezone);
    let (status, reply) = register_with(&address, body, None);
    assert_eq!(status, 201, "{reply}");
    let kai = Client::signed_in(&address, &reply);
    let eaten_at = (now - chrono::Duration::minutes(5))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let (status, reply) = kai.call(
        "POST",
        "/v1/me/meals",
        Some(json!({"name": "Eggs", "eaten_at": eaten_at, "calories": "300", "protein_g": "40", "carbs_g": "0", "fat_g": "20"})),
        &[],
    );
    assert_eq!(status, 201, "{reply}");
    // The goals projection has seen the meal before the goal exists: only the goal's
    // own evaluation at creation can count it.
    let deadline = Instant::now() + CONVERGE_WITHIN;
    while processed(&address, "goals-from-nutrition") == 0 {
        assert!(Instant::now() < deadline, "goals-from-nutrition idle");
        std::thread::sleep(Duration::from_millis(20));
    }
    let goal = kai.set_protein_goal("30");
    let goal_id = goal["goal_id"].as_str().expect("id");
    let progress = kai.eventually(
        &format!("/v1/me/goals/{goal_id}/progress"),
        CONVERGE_WITHIN,
        |p| p.to_string().contains(&local_today),
    );
    assert!(
        progress.to_string().contains("\"40\"") || progress.to_string().contains(":40"),
        "{progress}"
    );
}

/// Defect 10: `X-Vitals-Timestamp: -9223372036854775808` overflowed `(now - ts).abs()`.
#[test]
fn an_overflowing_webhook_timestamp_is_refused() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &GENEROUS);
    let body = workout_delivery("d-1", "watch-1", "run-1").to_string();
    for timestamp in ["-9223372036854775808", "9223372036854775807"] {
        let (status, _, reply) = support::exchange(
            &server.address,
            "POST",
            "/v1/integrations/sandbox/webhook",
            &[
                ("Content-Type", "application/json"),
                ("X-Vitals-Timestamp", timestamp),
                ("X-Vitals-Signature", "00"),
            ],
            Some(body.as_bytes()),
        );
        assert_eq!(status, 401, "{timestamp}: {reply}");
    }
    let (status, _) = support::request(&server.address, "GET", "/healthz");
    assert_eq!(status, 200, "the server is still up");
}

/// Defect 11: login, register, callback and webhook had no rate limit.
#[test]
fn password_guessing_is_throttled_with_retry_after() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &[]);
    let address = server.address.clone();
    support::register(&address, "ana@example.com");
    let guess = json!({"email": "ana@example.com", "password": "not the password"}).to_string();
    let mut throttled = None;
    for _ in 0..40 {
        let (status, headers, body) = log_in(&address, &guess);
        if status == 429 {
            throttled = Some((headers, body));
            break;
        }
        assert_eq!(status, 401, "{body}");
    }
    let (headers, body) = throttled.expect("guessing is throttled within 40 tries");
    let wait: u64 = headers
        .get("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After in seconds");
    assert!(wait >= 1, "{wait}");
    assert!(body.contains("rate_limited"), "{body}");
    // Registration from the same address is limited too.
    let mut limited = false;
    for n in 0..200 {
        let (status, _) = register_with(&address, registration(&format!("u{n}@example.com")), None);
        if status == 429 {
            limited = true;
            break;
        }
        assert_eq!(status, 201);
    }
    assert!(limited, "registration is throttled per client address");
}

/// A stolen access token could guess the password through `POST /v1/me/password` at the
/// per-user request rate (50 a second), where a sign-in allows 10 tries a minute.
#[test]
fn password_guessing_through_a_password_change_is_throttled_like_a_sign_in() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &[]);
    let ana = support::register(&server.address, "ana@example.com");
    let guess = json!({"current_password": "not the password",
                       "new_password": "taken over by a thief"});
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let (status, body) = ana.call("POST", "/v1/me/password", Some(guess.clone()), &[]);
        assert!(status == 422 || status == 429, "{status} {body}");
        statuses.push(status);
        if status == 429 {
            assert_eq!(body["error"]["code"], "rate_limited", "{body}");
            break;
        }
    }
    // Ten tries a minute, one more every six seconds: a slow run may see one or two.
    let guesses = statuses.iter().filter(|s| **s == 422).count();
    assert!(
        statuses.last() == Some(&429) && (10..=12).contains(&guesses),
        "about ten wrong guesses, then throttled: {statuses:?}"
    );
}

/// The operations routes and the web app answer without a token, and health and metrics
/// read the store:
/// limited per address too (here 5 a second, so the test outruns the refill).
#[test]
fn operations_routes_are_throttled_per_address() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &[("VITALS_OPERATIONS_RATE_LIMIT", "5")]);
    for path in [
        "/healthz",
        "/metrics",
        "/openapi.json",
        "/",
        "/app/app.js",
        "/docs",
    ] {
        let mut statuses = Vec::new();
        for _ in 0..40 {
            let (status, headers, body) =
                support::exchange(&server.address, "GET", path, &[], None);
            if status == 429 {
                assert!(headers.contains_key("retry-after"), "{path}: {body}");
                break;
            }
            statuses.push(status);
        }
        assert!(
            statuses.len() < 40 && statuses.iter().all(|s| *s == 200),
            "{path}: answered, then throttled: {statuses:?}"
        );
    }
}

/// Defect 11, the OAuth callback: an unauthenticated route, limited per address.
#[test]
fn oauth_callbacks_are_throttled_per_address() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &[]);
    let mut statuses = Vec::new();
    for n in 0..40 {
        let path = format!("/v1/integrations/sandbox/callback?state=s{n}&code=code-x");
        let (status, headers, body) = support::exchange(&server.address, "GET", &path, &[], None);
        if status == 429 {
            assert!(headers.contains_key("retry-after"), "{body}");
        }
        statuses.push(status);
    }
    assert!(
        statuses.contains(&303),
        "callbacks are handed on to the app: {statuses:?}"
    );
    assert!(
        statuses.contains(&429),
        "and many from one address are throttled: {statuses:?}"
    );
}

/// The OAuth callback completed the connect of whoever the state named, with no token:
/// anyone could send someone else their own authorize URL and, once that person
/// authorized at the provider, receive their wearable data. Now the callback hands the
/// code to the app of the device that authorized, which completes as its own user: a
/// state another account started is refused there and connects nothing.
#[test]
fn an_authorize_url_sent_to_someone_else_connects_nothing() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &GENEROUS);
    let address = server.address.clone();
    let mallory = support::register(&address, "mallory@example.com");
    let bob = support::register(&address, "bob@example.com");
    let (status, started) = mallory.start_connect();
    assert_eq!(status, 200, "{started}");
    let state = started["state"].as_str().expect("state");
    // Bob authorizes Mallory's URL as his own watch; the provider redirects his phone.
    let code = support::approved("bobs-watch", &started);
    let carried = support::follow_callback(&address, state, &code);
    assert_eq!(carried["state"], state);
    let complete = json!({"state": carried["state"], "code": carried["code"]});
    let path = "/v1/integrations/sandbox/complete";
    let (status, reply) = bob.call("POST", path, Some(complete), &[]);
    assert_eq!(status, 422, "{reply}");
    assert_eq!(reply["error"]["code"], "validation", "{reply}");
    // Nothing routes Bob's watch anywhere: a delivery about it finds no account.
    let (status, reply) = signed(&address, &workout_delivery("d-1", "bobs-watch", "run-1"));
    assert_eq!(status, 404, "{reply}");
    // Nothing was consumed either: the state still completes for Mallory, with a code
    // the provider gives her (Bob's went to Bob's phone).
    let own = json!({"state": state, "code": support::approved("mallorys-watch", &started)});
    let (status, reply) = mallory.call("POST", path, Some(own), &[]);
    assert_eq!(status, 200, "{reply}");
}

/// A login with the JSON `body`; (status, headers, body).
fn log_in(address: &str, body: &str) -> (u16, HashMap<String, String>, String) {
    support::exchange(
        address,
        "POST",
        "/v1/auth/login",
        &[("Content-Type", "application/json")],
        Some(body.as_bytes()),
    )
}

fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// Defect 12: 256 failed logins from 64 concurrent clients ran every argon2 hash (about
/// 19 MiB each) at once; the server's memory went from 14 MB to 4.9 GB.
#[test]
fn a_login_storm_keeps_the_server_under_200_mb() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &GENEROUS);
    let address = server.address.clone();
    support::register(&address, "ana@example.com");
    let before = peak_rss_kib(server.child.id());
    let guess = json!({"email": "ana@example.com", "password": "not the password"}).to_string();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..64)
            .map(|_| {
                let (address, guess) = (address.clone(), guess.clone());
                scope.spawn(move || {
                    (0..4)
                        .map(|_| {
                            let (status, headers, body) = log_in(&address, &guess);
                            if status == 503 {
                                assert!(headers.contains_key("retry-after"), "{body}");
                            }
                            status
                        })
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().expect("client"))
            .collect()
    });
    assert_eq!(statuses.len(), 256);
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 503),
        "{statuses:?}"
    );
    assert!(statuses.contains(&401), "some guesses were checked");
    let peak = peak_rss_kib(server.child.id());
    eprintln!("peak RSS: {before} KiB before the storm, {peak} KiB after");
    assert!(peak < 200 * 1024, "peak RSS {peak} KiB");
}

/// Defect 13: after `DELETE /v1/me` the same token still read the profile for seconds,
/// the other routes indefinitely, and got 404 once the email was registered again.
#[test]
fn a_deleted_accounts_token_reads_nothing() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &GENEROUS);
    let address = server.address.clone();
    let ana = support::register(&address, "ana@example.com");
    let (status, _) = ana.call(
        "POST",
        "/v1/me/meals",
        Some(json!({"name": "Oats", "eaten_at": "2026-03-01T08:00:00.000Z", "calories": "300", "protein_g": "10", "carbs_g": "50", "fat_g": "5"})),
        &[],
    );
    assert_eq!(status, 201);
    ana.eventually("/v1/me/profile", CONVERGE_WITHIN, |_| true);
    let proof = json!({"current_password": "correct horse battery"});
    let (status, _) = ana.call("DELETE", "/v1/me", Some(proof), &[]);
    assert_eq!(status, 202);
    let routes = [
        ("GET", "/v1/me/profile"),
        ("GET", "/v1/me/dashboard?date=2026-03-01"),
        (
            "GET",
            "/v1/me/nutrition/daily?from=2026-03-01&to=2026-03-01",
        ),
        ("GET", "/v1/me/goals"),
        ("GET", "/v1/me/workouts/latest"),
        ("DELETE", "/v1/me"),
    ];
    let refused = |client: &Client| {
        for (method, path) in routes {
            let (status, reply) = client.call(method, path, None, &[]);
            assert_eq!(
                (status, reply["error"]["code"].as_str()),
                (401, Some("account_deleted")),
                "{method} {path}: {reply}"
            );
        }
        let (status, reply) = client.call(
            "POST",
            "/v1/me/meals",
            Some(json!({"name": "Oats", "eaten_at": "2026-03-01T08:00:00.000Z", "calories": "300", "protein_g": "10", "carbs_g": "50", "fat_g": "5"})),
            &[],
        );
        assert_eq!(
            (status, reply["error"]["code"].as_str()),
            (401, Some("account_deleted"))
        );
    };
    refused(&ana);
    // The email, free again once the erasure completes, makes a new account; the old
    // token still reads nothing.
    support::register_once_free(&address, "ana@example.com", CONVERGE_WITHIN);
    refused(&ana);
}

/// Defect 14: eight concurrent meal logs of one user (a phone flushing its offline
/// queue) got 409 `contention` on about one request in ten.
#[test]
fn one_users_concurrent_writes_all_succeed() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = serve(&dir, &GENEROUS);
    let address = server.address.clone();
    let ana = support::register(&address, "ana@example.com");
    let token = ana.token.clone().expect("token");
    for round in 0..10 {
        let statuses: Vec<(u16, Value)> = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..8)
                .map(|n| {
                    let client = Client {
                        address: address.clone(),
                        token: Some(token.clone()),
                        user_id: String::new(),
                    };
                    scope.spawn(move || {
                        // As an offline queue sends them: each with its own key.
                        let key = format!("offline-{round}-{n}");
                        client.call(
                            "POST",
                            "/v1/me/meals",
                            Some(json!({"name": format!("queued {round}.{n}"), "eaten_at": "2026-03-01T08:00:00.000Z",
                                        "calories": "100", "protein_g": "1", "carbs_g": "1", "fat_g": "1"})),
                            &[("Idempotency-Key", &key)],
                        )
                    })
                })
                .collect();
            writers
                .into_iter()
                .map(|w| w.join().expect("writer"))
                .collect()
        });
        for (status, reply) in statuses {
            assert_eq!(status, 201, "round {round}: {reply}");
        }
    }
    let daily = ana.eventually(
        "/v1/me/nutrition/daily?from=2026-03-01&to=2026-03-01",
        CONVERGE_WITHIN,
        |d| d.to_string().contains("\"meals\":80"),
    );
    assert!(daily.to_string().contains("\"calories\":8000"), "{daily}");
}
