//! What `vitals serve` and `vitals api-lambda` accept as their secrets at start (issue
//! 35): a token signing key or webhook secret shorter than 32 bytes (an empty one
//! included) stops the start with an error naming its variable, never the value, and
//! nothing is served; `--backend dynamodb` and `api-lambda` have no default webhook
//! secret; the embedded store with no secrets at all still starts, as the README's first
//! command does, and says at start that webhooks are refused.
//!
//! The binary runs with a cleared environment, so a developer's `VITALS_*` variables do
//! not change what it is given.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// 31 bytes: one short of the minimum.
const SHORT: &str = "a-31-byte-secret-nobody-reads!!";
/// 32 bytes: the minimum.
const MINIMUM: &str = "a-32-byte-secret-for-this-test-0";
/// The webhook secret every server had by default before issue 35.
const OLD_DEFAULT: &str = "sandbox-webhook-secret";
/// A DynamoDB endpoint nothing listens on: a start that reached the store would fail
/// there, later, and differently.
const NOWHERE: &str = "http://127.0.0.1:9";

/// How a start ended.
enum Start {
    /// The process exited before serving: its status and standard error.
    Refused { status: ExitStatus, stderr: String },
    /// The process printed its address (it was then stopped): standard error.
    Served { stderr: String },
}

fn vitals(args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_vitals"))
        .args(args)
        .env_clear()
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vitals starts")
}

/// Reads `child`'s standard error to its end, in a thread.
fn collect_stderr(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut stderr = child.stderr.take().expect("piped stderr");
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    })
}

/// Runs `vitals <args>` until it exits, or until it prints its address (then stops it).
fn start(args: &[&str], env: &[(&str, &str)]) -> Start {
    let mut child = vitals(args, env);
    let stderr = collect_stderr(&mut child);
    let stdout = child.stdout.take().expect("piped stdout");
    let (lines, listened) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("listening on") && lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let stderr = stderr.join().expect("stderr read");
            return Start::Refused { status, stderr };
        }
        if listened.try_recv().is_ok() || Instant::now() >= deadline {
            support::terminate(
                &mut child,
                Duration::from_secs(20),
                Duration::from_millis(20),
            )
            .or_else(|| {
                let _ = child.kill();
                child.wait().ok()
            });
            let stderr = stderr.join().expect("stderr read");
            return Start::Served { stderr };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts the start was refused with an error naming `variable` and not the secret.
fn assert_refused(what: &str, started: Start, variable: &str, secret: &str) {
    match started {
        Start::Served { stderr } => {
            panic!("{what}: served, where it should refuse to start; its log:\n{stderr}")
        }
        Start::Refused { status, stderr } => {
            assert!(!status.success(), "{what}: exit status {status:?}");
            assert!(
                stderr.contains(variable),
                "{what}: the error names {variable}:\n{stderr}"
            );
            assert!(
                stderr.contains("32 bytes"),
                "{what}: the error says how long a secret must be:\n{stderr}"
            );
            if !secret.is_empty() {
                assert!(
                    !stderr.contains(secret),
                    "{what}: the secret is printed:\n{stderr}"
                );
            }
        }
    }
}

fn serve_embedded(dir: &std::path::Path) -> Vec<String> {
    let data = dir.join("data").to_str().expect("utf-8 path").to_owned();
    ["serve", "--listen", "127.0.0.1:0", "--data-dir", &data]
        .map(str::to_owned)
        .to_vec()
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn serve_refuses_an_empty_or_short_jwt_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = serve_embedded(dir.path());
    let args = as_strs(&args);
    for (what, secret) in [("empty", ""), ("31 bytes", SHORT)] {
        let started = start(&args, &[("VITALS_JWT_SECRET", secret)]);
        assert_refused(
            &format!("VITALS_JWT_SECRET {what}"),
            started,
            "VITALS_JWT_SECRET",
            secret,
        );
    }
    let mut flag = args.clone();
    flag.extend(["--jwt-secret", SHORT]);
    assert_refused(
        "--jwt-secret 31 bytes",
        start(&flag, &[]),
        "VITALS_JWT_SECRET",
        SHORT,
    );
    assert!(
        matches!(
            start(&args, &[("VITALS_JWT_SECRET", MINIMUM)]),
            Start::Served { .. }
        ),
        "a 32-byte VITALS_JWT_SECRET is accepted"
    );
}

#[test]
fn serve_on_dynamodb_refuses_a_missing_or_short_webhook_secret() {
    let dynamodb = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--backend",
        "dynamodb",
        "--endpoint-url",
        NOWHERE,
    ];
    let jwt = ("VITALS_JWT_SECRET", MINIMUM);
    // Every process of a shared store must verify the tokens another signed.
    assert_refused(
        "dynamodb, no jwt secret",
        start(&dynamodb, &[("VITALS_WEBHOOK_SECRET", MINIMUM)]),
        "VITALS_JWT_SECRET",
        "",
    );
    assert_refused(
        "dynamodb, no webhook secret",
        start(&dynamodb, &[jwt]),
        "VITALS_WEBHOOK_SECRET",
        "",
    );
    for (what, secret) in [("empty", ""), ("31 bytes", SHORT)] {
        assert_refused(
            &format!("dynamodb, VITALS_WEBHOOK_SECRET {what}"),
            start(&dynamodb, &[jwt, ("VITALS_WEBHOOK_SECRET", secret)]),
            "VITALS_WEBHOOK_SECRET",
            secret,
        );
    }
    assert_refused(
        "dynamodb, VITALS_JWT_SECRET 31 bytes",
        start(
            &dynamodb,
            &[
                ("VITALS_JWT_SECRET", SHORT),
                ("VITALS_WEBHOOK_SECRET", MINIMUM),
            ],
        ),
        "VITALS_JWT_SECRET",
        SHORT,
    );
    assert!(
        matches!(
            start(&dynamodb, &[jwt, ("VITALS_WEBHOOK_SECRET", MINIMUM)]),
            Start::Served { .. }
        ),
        "32-byte secrets are accepted on dynamodb"
    );
}

#[test]
fn api_lambda_refuses_short_secrets_before_anything_else() {
    let lambda = [
        "api-lambda",
        "--backend",
        "dynamodb",
        "--endpoint-url",
        NOWHERE,
    ];
    for (what, env, variable, secret) in [
        (
            "empty jwt secret",
            vec![
                ("VITALS_JWT_SECRET", ""),
                ("VITALS_WEBHOOK_SECRET", MINIMUM),
            ],
            "VITALS_JWT_SECRET",
            "",
        ),
        (
            "31-byte jwt secret",
            vec![
                ("VITALS_JWT_SECRET", SHORT),
                ("VITALS_WEBHOOK_SECRET", MINIMUM),
            ],
            "VITALS_JWT_SECRET",
            SHORT,
        ),
        (
            "no webhook secret",
            vec![("VITALS_JWT_SECRET", MINIMUM)],
            "VITALS_WEBHOOK_SECRET",
            "",
        ),
        (
            "31-byte webhook secret",
            vec![
                ("VITALS_JWT_SECRET", MINIMUM),
                ("VITALS_WEBHOOK_SECRET", SHORT),
            ],
            "VITALS_WEBHOOK_SECRET",
            SHORT,
        ),
    ] {
        assert_refused(
            &format!("api-lambda, {what}"),
            start(&lambda, &env),
            variable,
            secret,
        );
    }
}

#[test]
fn serve_on_the_embedded_store_with_no_secrets_starts_and_refuses_webhooks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = serve_embedded(dir.path());
    let mut child = vitals(&as_strs(&args), &[]);
    let stderr = collect_stderr(&mut child);
    let address = support::served_address(&mut child)
        .unwrap_or_else(|line| panic!("no secrets at all still serves; first line {line:?}"));
    let (status, _) = support::request(&address, "GET", "/healthz");
    assert_eq!(status, 200);
    // A delivery signed with the old public default puts nothing in anyone's history.
    let body = br#"{"delivery_id":"d-1","provider_user_id":"nobody","workouts":[],"sleep":[]}"#;
    let now = infra::store::now_epoch_seconds();
    let signature = commands::integrations::sign(OLD_DEFAULT.as_bytes(), now, body);
    let timestamp = now.to_string();
    let (status, answer) = support::send(
        &address,
        "POST",
        "/v1/integrations/sandbox/webhook",
        &[
            ("content-type", "application/json"),
            ("x-vitals-timestamp", &timestamp),
            ("x-vitals-signature", &signature),
        ],
        Some(body),
    );
    assert_eq!(
        status, 401,
        "a webhook signed with {OLD_DEFAULT:?} is refused: {answer}"
    );
    let exit = support::terminate(
        &mut child,
        Duration::from_secs(20),
        Duration::from_millis(20),
    );
    assert!(exit.is_some_and(|s| s.success()), "stops: {exit:?}");
    let log = stderr.join().expect("stderr read");
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("VITALS_WEBHOOK_SECRET")),
        "a warning at start names VITALS_WEBHOOK_SECRET:\n{log}"
    );
    // No VITALS_JWT_SECRET: the start line says which key signs, one generated and kept
    // in the data directory for the next start (app/tests/kept_signing_key.rs).
    assert!(
        log.lines()
            .any(|l| l.contains("vitals serving") && l.contains("a new key, kept in")),
        "the start line says which key signs:\n{log}"
    );
}
