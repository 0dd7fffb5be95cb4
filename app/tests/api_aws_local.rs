//! The HTTP API black-box on the aws-local shape, against the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT` (required: this suite never passes by skipping).
//! `vitals bootstrap --kinesis --dlq-queues`, then `vitals work` (the projectors, on
//! Kinesis) and `vitals serve --backend dynamodb` as child processes; then the mobile
//! app's core flow: register, log two meals (one retried with its Idempotency-Key), see
//! the dashboard converge, and another user gets 404 for the first user's meal. Then the
//! first user deletes her account: login is refused at once, her email registers again
//! once every context has drained her, `vitals admin residue` finds nothing of her (and
//! the other user's data still there), and `vitals replay all` brings nothing back.
//! With `VITALS_TEST_FORWARDING=bridge` (moto) `vitals work --bridge` forwards the table
//! streams to Kinesis, as in `work_aws_local.rs`.

mod support;

use support::aws_local::{Tables, Worker, forwarding};
use support::{Case, Client, meal, register, register_once_free};

use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long the projections may take through the emulator's streams and Kinesis.
const CONVERGE_WITHIN: Duration = Duration::from_secs(60);

/// The mobile app's walk on one server, `vitals work` behind it: named cases, in order,
/// each saying its name when it fails.
#[test]
fn the_mobile_app_flow_converges_through_kinesis_and_other_users_see_nothing() {
    let tables = Tables::new("a");
    tables.bootstrap(forwarding());
    let mut worker = Worker::spawn(&[&tables.args()[..], forwarding()].concat());
    let store = tables.store_args();
    let server = support::start_with_env(
        &store,
        &[("VITALS_JWT_SECRET", "test-jwt-secret-32-bytes-or-more")],
    );
    let address = server.address.clone();
    let (status, health) = support::request(&address, "GET", "/healthz");
    assert_eq!(status, 200, "{health}");

    let walk = Walk {
        ana: register(&address, "ana@example.com"),
        bob: register(&address, "bob@example.com"),
        address,
        store,
    };
    let meal_id = two_meals_one_retried(&walk);
    the_dashboard_converges(&walk);
    bob_sees_nothing_of_anas(&walk, &meal_id);
    ana_deletes_her_account(&walk);
    residue_finds_nothing_of_her_and_all_of_him(&walk);
    a_replay_brings_nothing_of_her_back(&walk);

    assert!(server.stop().success(), "vitals serve exits cleanly");
    let status = worker.stop();
    assert!(status.success(), "vitals work exits cleanly: {status:?}");
}

/// The server's address, its users, and the store flags of the `vitals` commands.
struct Walk<'a> {
    address: String,
    ana: Client,
    bob: Client,
    store: Vec<&'a str>,
}

/// Two meals; the first sent twice with the same Idempotency-Key, as a retrying app
/// would, gets the same meal id back and is logged once. Returns its id.
fn two_meals_one_retried(walk: &Walk) -> String {
    let _case = Case("two meals, one retried");
    let ana = &walk.ana;
    let (status, first) = ana.log_meal(meal(400), "meal-1");
    assert_eq!(status, 201, "{first}");
    let meal_id = first["meal_id"].as_str().expect("meal id").to_owned();
    let (status, retried) = ana.log_meal(meal(400), "meal-1");
    assert_eq!(status, 201, "{retried}");
    assert_eq!(
        retried["meal_id"], first["meal_id"],
        "a retry returns the first meal id"
    );
    let (status, second) = ana.log_meal(meal(250), "meal-2");
    assert_eq!(status, 201, "{second}");
    assert_ne!(second["meal_id"], first["meal_id"]);
    meal_id
}

/// The dashboard converges through the table streams, Kinesis and `vitals work`.
fn the_dashboard_converges(walk: &Walk) {
    let _case = Case("the dashboard converges");
    let dashboard = walk.ana.eventually(
        &format!("/v1/me/dashboard?date={today}", today = support::today()),
        CONVERGE_WITHIN,
        |d| {
            d["day"]["nutrition"]["meals"] == 2
                && d["recent_meals"].as_array().is_some_and(|m| m.len() == 2)
        },
    );
    assert_eq!(dashboard["day"]["nutrition"]["totals"]["calories"], 650);
    assert_eq!(dashboard["day"]["nutrition"]["totals"]["protein_g"], 60);
}

/// Bob cannot touch Ana's meal, and does not learn that it exists; his own meal is his.
fn bob_sees_nothing_of_anas(walk: &Walk, meal_id: &str) {
    let _case = Case("bob sees nothing of ana's");
    let (ana, bob) = (&walk.ana, &walk.bob);
    for (method, body) in [("PUT", Some(meal(1))), ("DELETE", None)] {
        let path = format!("/v1/me/meals/{meal_id}");
        let (status, reply) = bob.call(method, &path, body, &[]);
        assert_eq!(status, 404, "{method} {path}: {reply}");
        assert_eq!(reply["error"]["code"], "not_found", "{reply}");
    }
    // Ana's day is untouched (her summary is written with the meals, no projection).
    let (status, days) = ana.call(
        "GET",
        &format!(
            "/v1/me/nutrition/daily?from={today}&to={today}",
            today = support::today()
        ),
        None,
        &[],
    );
    assert_eq!(status, 200, "{days}");
    assert_eq!(days["days"][0]["meals"], 2, "{days}");
    assert_eq!(days["days"][0]["totals"]["calories"], 650, "{days}");
    let (status, bobs) = bob.call(
        "GET",
        &format!("/v1/me/dashboard?date={today}", today = support::today()),
        None,
        &[],
    );
    assert_eq!(status, 200, "{bobs}");
    assert_eq!(bobs["recent_meals"], json!([]), "{bobs}");
    let (status, logged) = bob.log_meal(meal(300), "bob-1");
    assert_eq!(status, 201, "{logged}");
}

/// Ana deletes her account; login is refused from the moment it is accepted, and her
/// email is released only when every context has drained her data.
fn ana_deletes_her_account(walk: &Walk) {
    let _case = Case("ana deletes her account");
    let (address, ana) = (&walk.address, &walk.ana);
    let proof = json!({"current_password": "correct horse battery"});
    let (status, reply) = ana.call("DELETE", "/v1/me", Some(proof), &[]);
    assert_eq!(status, 202, "{reply}");
    let login = json!({"email": "ana@example.com", "password": "correct horse battery"});
    let (status, reply) =
        Client::anonymous(address).call("POST", "/v1/auth/login", Some(login), &[]);
    assert_eq!(status, 401, "{reply}");
    assert_eq!(reply["error"]["code"], "account_deleted", "{reply}");
    let newcomer = register_once_free(address, "ana@example.com", CONVERGE_WITHIN);
    assert_ne!(newcomer.user_id, ana.user_id, "a new account, not Ana's");
}

/// `vitals admin residue` finds nothing of Ana, and all of Bob.
fn residue_finds_nothing_of_her_and_all_of_him(walk: &Walk) {
    let _case = Case("residue");
    let (ana, bob, store) = (&walk.ana, &walk.bob, &walk.store);
    // The email is released just before identity's own partition is drained, so allow
    // that last step a moment.
    let nothing = residue_eventually(&ana.user_id, store);
    assert!(
        nothing.contains(&format!("nothing left of {}", ana.user_id)),
        "{nothing}"
    );
    let (code, kept) = residue(&bob.user_id, store);
    assert_eq!(code, Some(1), "Bob's data is all there: {kept}");
    assert!(
        kept.contains(&format!("USER#{}", bob.user_id)) && kept.contains("items left of"),
        "{kept}"
    );
}

/// A full replay, workers still running, rebuilds Bob's read models and brings nothing
/// of Ana back.
fn a_replay_brings_nothing_of_her_back(walk: &Walk) {
    let _case = Case("a replay brings nothing of her back");
    let (ana, bob, store) = (&walk.ana, &walk.bob, &walk.store);
    let replay = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .args(["replay", "all"])
        .args(store)
        .output()
        .expect("vitals replay runs");
    let replayed = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success(),
        "replay failed: {replayed}{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert!(replayed.contains("replayed "), "{replayed}");
    assert!(!replayed.contains("replayed 0 events"), "{replayed}");
    let (code, left) = residue(&ana.user_id, store);
    assert_eq!(code, Some(0), "left of Ana after a replay: {left}");
    let bobs = bob.eventually(
        &format!("/v1/me/dashboard?date={today}", today = support::today()),
        CONVERGE_WITHIN,
        |d| d["recent_meals"].as_array().is_some_and(|m| m.len() == 1),
    );
    assert_eq!(
        bobs["day"]["nutrition"]["totals"]["calories"], 300,
        "{bobs}"
    );
}

/// `vitals admin residue <user> <store>`: its exit code and stdout.
fn residue(user: &str, store: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .args(["admin", "residue", user])
        .args(store)
        .output()
        .expect("vitals admin residue runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// Runs `vitals admin residue` until it finds nothing (exit 0), with a deadline.
fn residue_eventually(user: &str, store: &[&str]) -> String {
    let deadline = Instant::now() + CONVERGE_WITHIN;
    loop {
        let (code, stdout) = residue(user, store);
        if code == Some(0) {
            return stdout;
        }
        assert_eq!(code, Some(1), "residue failed: {stdout}");
        assert!(
            Instant::now() < deadline,
            "still left of {user} after its email was released: {stdout}"
        );
        eprintln!("residue of {user} not empty yet: {stdout}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
