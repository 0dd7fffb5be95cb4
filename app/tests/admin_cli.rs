//! The operator commands black-box on the embedded store, through the `vitals` binary:
//! two users log meals through `vitals serve`, one deletes her account; with the server
//! stopped (`replay --rebuild` needs the projection workers stopped), `vitals admin
//! residue` finds nothing of her and all of the other user, `vitals replay` rebuilds the
//! read models and brings nothing of her back, and bad arguments fail with a message,
//! never a panic. Served again, the other user's dashboard is exactly as before.

mod support;

use support::{Case, Client, Run, register, register_once_free, registration};

use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

/// Both `vitals serve` runs sign tokens with this, so tokens outlive the first one.
const JWT_SECRET: &str = "admin-cli-test-jwt-secret-32-bytes-or-more";
/// How long the in-process projectors may take.
const CONVERGE_WITHIN: Duration = Duration::from_secs(60);
const DAY: &str = "2026-03-01";

/// The dashboard calls of this test.
trait Dashboard {
    fn dashboard(&self) -> Value;
    fn dashboard_eventually(&self, ok: impl Fn(&Value) -> bool) -> Value;
}

impl Dashboard for Client {
    fn dashboard(&self) -> Value {
        let (status, body) = self.call("GET", &format!("/v1/me/dashboard?date={DAY}"), None, &[]);
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Asks for the dashboard until `ok` holds, with a deadline.
    fn dashboard_eventually(&self, ok: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + CONVERGE_WITHIN;
        loop {
            let body = self.dashboard();
            if ok(&body) {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "the dashboard did not converge within {CONVERGE_WITHIN:?}: {body}"
            );
            // Nothing to wait on over HTTP: ask again shortly.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Waits until every subscription of the in-process pipeline reports no lag.
fn caught_up(address: &str) {
    let deadline = Instant::now() + CONVERGE_WITHIN;
    loop {
        let (metrics, lags) = support::projector_lags(address);
        assert!(!lags.is_empty(), "no lag series in {metrics}");
        if lags.iter().all(|l| l.ends_with(" 0")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the projectors did not catch up within {CONVERGE_WITHIN:?}: {lags:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn meal(name: &str, calories: u32) -> Value {
    json!({"name": name, "eaten_at": format!("{DAY}T08:00:00.000Z"), "calories": calories.to_string(), "protein_g": "30", "carbs_g": "40", "fat_g": "5"})
}

/// Runs `vitals <args>` to the end. Whatever it fails with, it must not panic.
fn vitals(args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vitals"));
    command
        .args(args)
        .env("RUST_LOG", "warn")
        // The error alone on stderr, without anyhow's backtrace.
        .env("RUST_LIB_BACKTRACE", "0");
    support::run_to_end(command, args)
}

/// The events a `vitals replay` run reports: `replayed N events (M applications, ...)`.
fn replayed(run: &Run) -> (u64, u64) {
    let numbers: Vec<u64> = run
        .stdout
        .lines()
        .find(|l| l.starts_with("replayed "))
        .unwrap_or_else(|| panic!("no replay summary: {run}"))
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    match numbers.as_slice() {
        [events, applications, ..] => (*events, *applications),
        _ => panic!("unexpected replay summary: {run}"),
    }
}

/// The operator's walk: named cases, in order, each saying its name when it fails.
#[test]
fn residue_and_replay_after_an_erasure_leave_nothing_of_her_and_all_of_him() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().join("data");
    let data = data_dir.to_str().expect("utf-8 path");
    let serve = ["--data-dir", data, "--jwt-secret", JWT_SECRET];
    let store = ["--data-dir", data];

    let server = support::start(&serve);
    let address = server.address.clone();
    let ana = register(&address, "ana@example.com");
    let bob = register(&address, "bob@example.com");
    two_users_with_meals_converged(&ana, &bob);
    let bobs_before = ana_deletes_her_account(&address, &ana, &bob);
    let exit = server.stop();
    assert!(exit.success(), "vitals serve exits cleanly: {exit:?}");

    nothing_of_her_is_left_and_all_of_him(&store, &ana, &bob);
    replays_bring_nothing_of_her_back(&store, &ana, &bob);
    bad_arguments_fail_with_a_message(&store);
    served_again_he_sees_the_same(&serve, &store, &ana, &bob, &bobs_before);
}

/// A dashboard that has converged to `meals` meals of `calories` in all.
fn converged(meals: u64, calories: u64) -> impl Fn(&Value) -> bool {
    move |d: &Value| {
        d["profile"].is_object()
            && d["day"]["nutrition"]["meals"] == meals
            && d["day"]["nutrition"]["totals"]["calories"] == calories
            && d["recent_meals"]
                .as_array()
                .is_some_and(|m| m.len() as u64 == meals)
    }
}

/// `vitals admin residue <user> <store>`.
fn residue(store: &[&str], user: &str) -> Run {
    vitals(&[&["admin", "residue", user][..], store].concat())
}

/// Given two users with meals, their dashboards converged.
fn two_users_with_meals_converged(ana: &Client, bob: &Client) {
    let _case = Case("two users with meals");
    for (client, meals) in [
        (ana, &[("Oats", 400), ("Soup", 250), ("Apple", 100)][..]),
        (bob, &[("Eggs", 300), ("Pasta", 500)][..]),
    ] {
        for (name, calories) in meals {
            let (status, reply) =
                client.call("POST", "/v1/me/meals", Some(meal(name, *calories)), &[]);
            assert_eq!(status, 201, "{reply}");
        }
    }
    ana.dashboard_eventually(converged(3, 750));
    bob.dashboard_eventually(converged(2, 800));
}

/// When Ana deletes her account (her email is free again once the erasure is done),
/// Bob's dashboard is untouched; returns it.
fn ana_deletes_her_account(address: &str, ana: &Client, bob: &Client) -> Value {
    let _case = Case("ana deletes her account");
    let proof = json!({"current_password": "correct horse battery"});
    let (status, reply) = ana.call("DELETE", "/v1/me", Some(proof), &[]);
    assert_eq!(status, 202, "{reply}");
    let newcomer = register_once_free(address, "ana@example.com", CONVERGE_WITHIN);
    assert_ne!(newcomer.user_id, ana.user_id, "a new account, not Ana's");
    caught_up(address);
    let bobs_before = bob.dashboard();
    assert!(
        converged(2, 800)(&bobs_before),
        "Bob's dashboard is untouched by Ana's erasure: {bobs_before}"
    );
    bobs_before
}

/// Then nothing of Ana is left anywhere, and all of Bob is.
fn nothing_of_her_is_left_and_all_of_him(store: &[&str], ana: &Client, bob: &Client) {
    let _case = Case("residue");
    let nothing = residue(store, &ana.user_id);
    assert_eq!(nothing.code, Some(0), "{nothing}");
    assert!(
        nothing
            .stdout
            .contains(&format!("nothing left of {}", ana.user_id)),
        "{nothing}"
    );
    let kept = residue(store, &bob.user_id);
    assert_eq!(kept.code, Some(1), "Bob's data is there: {kept}");
    let bobs_partition = format!("USER#{}", bob.user_id);
    for table in ["identity: ", "nutrition: ", "dashboard: "] {
        assert!(
            kept.stdout
                .lines()
                .any(|l| l.starts_with(table) && l.contains(&bobs_partition)),
            "no {table}row of Bob's: {kept}"
        );
    }
    assert!(
        kept.stdout
            .contains(&format!("items left of {}", bob.user_id)),
        "{kept}"
    );
}

/// A full replay reads everyone's events and brings nothing of Ana back; a rebuild
/// likewise; one projection replays for one user.
fn replays_bring_nothing_of_her_back(store: &[&str], ana: &Client, bob: &Client) {
    let _case = Case("replays");
    let all = vitals(&[&["replay", "all"][..], store].concat());
    assert_eq!(all.code, Some(0), "{all}");
    let (events, applications) = replayed(&all);
    assert!(events > 0 && applications > 0, "{all}");
    let nothing = residue(store, &ana.user_id);
    assert_eq!(
        nothing.code,
        Some(0),
        "left of Ana after a replay: {nothing}"
    );

    // A rebuild (folded in memory, final rows written in batches) likewise.
    let rebuilt = vitals(&[&["replay", "all", "--rebuild"][..], store].concat());
    assert_eq!(rebuilt.code, Some(0), "{rebuilt}");
    let (rebuilt_events, _) = replayed(&rebuilt);
    assert!(rebuilt_events >= events, "every event again: {rebuilt}");
    let nothing = residue(store, &ana.user_id);
    assert_eq!(
        nothing.code,
        Some(0),
        "left of Ana after a rebuild: {nothing}"
    );

    // One projection, one user.
    let bobs = vitals(
        &[
            &["replay", "dashboard-from-nutrition", "--user", &bob.user_id][..],
            store,
        ]
        .concat(),
    );
    assert_eq!(bobs.code, Some(0), "{bobs}");
    let (events, _) = replayed(&bobs);
    assert!(events >= 2, "Bob's two meals at least: {bobs}");
}

/// Bad arguments fail with a message that says what is wrong.
fn bad_arguments_fail_with_a_message(store: &[&str]) {
    let _case = Case("bad arguments");
    let unknown = vitals(&[&["replay", "no-such-projection"][..], store].concat());
    assert_ne!(unknown.code, Some(0), "{unknown}");
    for named in [
        "no-such-projection",
        "dashboard-from-nutrition",
        "goals-from-activity",
    ] {
        assert!(
            unknown.stderr.contains(named),
            "{named} not named: {unknown}"
        );
    }
    // Ids are free-form (an external identity provider's subject is one) but never hold
    // the key delimiter `#`.
    let not_an_id = residue(store, "not#a-user-id");
    assert_ne!(not_an_id.code, Some(0), "{not_an_id}");
    assert!(not_an_id.stderr.contains("not a user id"), "{not_an_id}");
    assert!(
        not_an_id.stderr.contains("reserved character"),
        "{not_an_id}"
    );
    let bad_user = vitals(&[&["replay", "all", "--user", "not#a-user-id"][..], store].concat());
    assert_ne!(bad_user.code, Some(0), "{bad_user}");
    assert!(bad_user.stderr.contains("not a user id"), "{bad_user}");
}

/// Served again: Bob's dashboard is exactly as before the replays; Ana's old token
/// (still signed right) reads nothing and can write nothing.
fn served_again_he_sees_the_same(
    serve: &[&str],
    store: &[&str],
    ana: &Client,
    bob: &Client,
    bobs_before: &Value,
) {
    let _case = Case("served again");
    let server = support::start(serve);
    let bob = bob.on(&server.address);
    assert_eq!(
        &bob.dashboard(),
        bobs_before,
        "the replays changed what Bob sees"
    );
    let ana = ana.on(&server.address);
    let (status, reply) = ana.call("GET", &format!("/v1/me/dashboard?date={DAY}"), None, &[]);
    assert_eq!(
        (status, &reply["error"]["code"]),
        (401, &json!("account_deleted")),
        "Ana's token reads nothing: {reply}"
    );
    let (status, reply) = ana.call("POST", "/v1/me/meals", Some(meal("Late", 1)), &[]);
    assert_eq!(status, 401, "{reply}");
    assert_eq!(reply["error"]["code"], "account_deleted", "{reply}");
    caught_up(&server.address);
    let exit = server.stop();
    assert!(exit.success(), "vitals serve exits cleanly: {exit:?}");
    let nothing = residue(store, &ana.user_id);
    assert_eq!(
        nothing.code,
        Some(0),
        "left of Ana after serving again: {nothing}"
    );
}

/// Registering with an `Idempotency-Key` stores the response (the new user id) in
/// identity's `EMAIL#<email>` partition: the erasure must remove it too, or a retried
/// sign-up would hand back the erased account.
#[test]
fn a_registration_retried_after_the_erasure_is_a_new_account_and_leaves_nothing() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().join("data");
    let data = data_dir.to_str().expect("utf-8 path");
    let server = support::start(&["--data-dir", data, "--jwt-secret", JWT_SECRET]);
    let address = server.address.clone();
    let signup = |key: &str| {
        let body = registration("eve@example.com").to_string().into_bytes();
        let headers = [
            ("Content-Type", "application/json"),
            ("Idempotency-Key", key),
        ];
        let (status, text) =
            support::send(&address, "POST", "/v1/auth/register", &headers, Some(&body));
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    let (status, reply) = signup("signup-1");
    assert_eq!(status, 201, "{reply}");
    let eve = Client::signed_in(&address, &reply);
    let proof = json!({"current_password": "correct horse battery"});
    let (status, reply) = eve.call("DELETE", "/v1/me", Some(proof), &[]);
    assert_eq!(status, 202, "{reply}");
    // Her profile is drained last: login stops saying `account_deleted` then.
    let deadline = Instant::now() + CONVERGE_WITHIN;
    let login = json!({"email": "eve@example.com", "password": "correct horse battery"});
    loop {
        let (status, reply) =
            Client::anonymous(&address).call("POST", "/v1/auth/login", Some(login.clone()), &[]);
        assert_eq!(status, 401, "{reply}");
        if reply["error"]["code"] == "invalid_credentials" {
            break;
        }
        assert!(Instant::now() < deadline, "Eve's profile is still there");
        std::thread::sleep(Duration::from_millis(50));
    }
    caught_up(&address);

    // The app retries its sign-up with the key it used before: a new account.
    let (status, reply) = signup("signup-1");
    assert_eq!(status, 201, "{reply}");
    assert_ne!(
        reply["user_id"].as_str(),
        Some(eve.user_id.as_str()),
        "the erased account came back from the idempotency record"
    );
    let exit = server.stop();
    assert!(exit.success(), "vitals serve exits cleanly: {exit:?}");
    let nothing = vitals(&["admin", "residue", &eve.user_id, "--data-dir", data]);
    assert_eq!(nothing.code, Some(0), "{nothing}");
}
