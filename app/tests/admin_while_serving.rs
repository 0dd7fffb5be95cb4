//! The operator's commands on a store that `vitals serve` has open (issue 39): the
//! server listens on `admin.sock` in its data directory (the directory 0700, the socket
//! 0600: only the store's owner can connect), and every command that works on the
//! embedded store (`admin curate-recipe`, `curate-meal-plan`, `residue`, `replay`,
//! `redrive`, `insights nightly`, `info`, `backup`), finding the store open in another
//! process, sends its arguments there and ends with the server's output and exit status.
//! With the server stopped the same commands open the store themselves; a socket left
//! by a server that is gone is no obstacle, and a store held by a process that answers
//! on no socket is refused with 3, naming the path.
//!
//! Run against the binary before the feature, every test here failed: the server made
//! no `admin.sock` (the first test at its socket check: were that skipped, its first
//! command through the server, `info`, exits 3 "already open in another process", as
//! `cli_exits` used to require; the raw-protocol tests at `connect`: no such file), and
//! a store held without a server was refused with 3 but without saying a process holds
//! it.

mod support;

use serde_json::Value;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::{Run, curate_recipe, register, text};

/// The exit statuses of `vitals::cli::exit::Exit`, spelled out as a script relies on them.
const OK: i32 = 0;
const FINDING: i32 = 1;
const USAGE: i32 = 2;
const STORE: i32 = 3;

/// Runs `vitals <args> --data-dir <data>` with a cleared environment; it must not panic.
fn vitals(data: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vitals"));
    command
        .args(args)
        .args(["--data-dir", text(data)])
        .env_clear()
        .env("RUST_LOG", "warn");
    support::run_to_end(command, args)
}

/// Asserts `run` ended with `code` and printed each of `shown` on standard output.
#[track_caller]
fn assert_run(what: &str, run: &Run, code: i32, shown: &[&str]) {
    assert_eq!(run.code, Some(code), "{what}: {run}");
    for words in shown {
        assert!(
            run.stdout.contains(words),
            "{what}: {words:?} not shown: {run}"
        );
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// Every store command, run on `data` (a store holding `user`'s meal, the `--date` of
/// `day`), each with the exit status and output it must end with; `backup` writes to
/// `backup`.
fn every_store_command(data: &Path, user: &str, day: &str, backup: &Path, through: &str) {
    let run = vitals(data, &["info"]);
    assert_run(
        &format!("info {through}"),
        &run,
        OK,
        &[
            text(&data.join("vitals.fjall")),
            "format version",
            "created at",
        ],
    );

    let run = vitals(data, &curate_recipe("Overnight oats"));
    assert_run(&format!("curate-recipe {through}"), &run, OK, &[]);
    let recipe_id = run.stdout.trim().to_owned();
    assert!(!recipe_id.is_empty(), "prints the id: {run}");
    let plan = [
        "admin",
        "curate-meal-plan",
        "--name",
        "Easy week",
        "--category",
        "starter",
        "--recipe",
        &recipe_id,
    ];
    let run = vitals(data, &plan);
    assert_run(&format!("curate-meal-plan {through}"), &run, OK, &[]);
    assert!(!run.stdout.trim().is_empty(), "prints the id: {run}");

    // Residue: 1 with what is left of a user who has data, 2 for an id that is nobody.
    let run = vitals(data, &["admin", "residue", user]);
    assert_run(
        &format!("residue {through}"),
        &run,
        FINDING,
        &[&format!("items left of {user}"), &format!("USER#{user}")],
    );
    let run = vitals(data, &["admin", "residue", "nobody-at-all"]);
    assert_run(&format!("residue of nobody {through}"), &run, USAGE, &[]);
    assert!(run.stderr.contains("no user of this store"), "{run}");

    let run = vitals(data, &["replay", "all"]);
    assert_run(&format!("replay all {through}"), &run, OK, &["replayed "]);
    assert!(!run.stdout.contains("replayed 0 events"), "{run}");
    let run = vitals(data, &["replay", "no-such-projection"]);
    assert_run(&format!("replay of nothing {through}"), &run, USAGE, &[]);
    assert!(run.stderr.contains("no-such-projection"), "{run}");

    let run = vitals(data, &["redrive", "dashboard-from-nutrition"]);
    assert_run(
        &format!("redrive {through}"),
        &run,
        OK,
        &["dashboard-from-nutrition: 0 applied, 0 still failing"],
    );

    let run = vitals(data, &["insights", "nightly", "--date", day]);
    assert_run(
        &format!("insights nightly {through}"),
        &run,
        OK,
        &[&format!("on {day}")],
    );
    let run = vitals(data, &["insights", "nightly", "--date", "yesterday"]);
    assert_run(&format!("nightly, bad date {through}"), &run, USAGE, &[]);
    assert!(run.stderr.contains("--date"), "{run}");

    let run = vitals(data, &["backup", "--to", text(backup)]);
    assert_run(
        &format!("backup {through}"),
        &run,
        OK,
        &["consistent at change-log sequence", "nutrition"],
    );
    assert!(backup.is_file(), "no backup written: {run}");
    assert_eq!(
        format!("{:o}", mode(backup)),
        "600",
        "the backup is private"
    );
}

/// With `vitals serve` running, every store command succeeds through the socket; with
/// the server stopped (the socket gone), each runs directly.
#[test]
fn every_store_command_runs_through_a_running_server_and_directly_once_it_stops() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("data");
    let server = support::start(&["--data-dir", text(&data)]);
    let socket = data.join("admin.sock");
    let kind = std::fs::symlink_metadata(&socket)
        .unwrap_or_else(|e| panic!("no socket at {}: {e}", socket.display()))
        .file_type();
    assert!(kind.is_socket(), "{} is a socket", socket.display());
    assert_eq!(format!("{:o}", mode(&data)), "700", "the data directory");
    assert_eq!(format!("{:o}", mode(&socket)), "600", "the admin socket");

    let ana = register(&server.address, "ana@example.com");
    let (status, reply) = ana.call("POST", "/v1/me/meals", Some(support::meal(420)), &[]);
    assert_eq!(status, 201, "{reply}");
    let day = reply["day"].as_str().expect("the meal's day").to_owned();

    let served = dir.path().join("served.vbk");
    every_store_command(&data, &ana.user_id, &day, &served, "through the server");
    // What the server wrote for the operator, its API serves at once.
    let (status, recipes) = ana.call("GET", "/v1/catalog/recipes?category=breakfast", None, &[]);
    assert_eq!(status, 200, "{recipes}");
    assert_eq!(recipes["items"][0]["name"], "Overnight oats", "{recipes}");
    // A rebuild overwrites what the workers write meanwhile: refused while they run.
    let run = vitals(&data, &["replay", "all", "--rebuild"]);
    assert_run("replay --rebuild through the server", &run, STORE, &[]);
    assert!(run.stderr.contains("vitals serve"), "{run}");
    let (status, _) = support::request(&server.address, "GET", "/healthz");
    assert_eq!(status, 200, "the server still serves");

    assert!(server.stop().success(), "vitals serve exits cleanly");
    assert!(!socket.exists(), "the socket is removed at shutdown");
    let direct = dir.path().join("direct.vbk");
    every_store_command(&data, &ana.user_id, &day, &direct, "directly");
}

/// The socket answers what is not a request of a store command with exit status 2 and
/// a message (a line that is not JSON, one too long, a command that works on no store),
/// and goes on answering.
#[test]
fn a_malformed_request_is_answered_with_2_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("data");
    let server = support::start(&["--data-dir", text(&data)]);
    let socket = data.join("admin.sock");
    let long = format!("{{\"args\": [\"{}\"]}}\n", "x".repeat(200_000));
    for (request, said) in [
        ("not json\n".to_owned(), "not a request"),
        (long, "longer than"),
        ("{\"args\": [\"serve\"]}\n".to_owned(), "serve"),
        (
            "{\"args\": [\"info\", \"--bogus\"]}\n".to_owned(),
            "--bogus",
        ),
        ("{\"args\": 7}\n".to_owned(), "not a request"),
    ] {
        let answer = ask(&socket, request.as_bytes());
        let last = answer
            .last()
            .unwrap_or_else(|| panic!("no answer to {request:.40}"));
        assert_eq!(last["exit"], USAGE, "{request:.40}: {answer:?}");
        let error = last["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(said),
            "{request:.40}: {said:?} not in {error:?}"
        );
        // A command line parsed in the server holds its settings: none is told.
        assert!(!error.contains(support::JWT_SECRET_TEXT), "{error}");
    }
    // A client that says nothing and hangs up costs nothing either.
    drop(UnixStream::connect(&socket).expect("connects"));
    let run = vitals(&data, &["info"]);
    assert_run(
        "info after malformed requests",
        &run,
        OK,
        &["format version"],
    );
    let answer = ask(&socket, b"{\"args\": [\"info\"]}\n");
    assert!(
        answer.iter().any(|line| line["out"]
            .as_str()
            .is_some_and(|o| o.contains("format version"))),
        "{answer:?}"
    );
    assert_eq!(
        answer.last().map(|l| l["exit"].clone()),
        Some(Value::from(OK))
    );
    assert!(server.stop().success(), "vitals serve exits cleanly");
}

/// Sends `request` on the socket and reads the answer to its end: one JSON value a line.
fn ask(socket: &Path, request: &[u8]) -> Vec<Value> {
    let mut stream = UnixStream::connect(socket).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    // A server may answer a request too long before reading all of it.
    let _ = stream.write_all(request);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut text = String::new();
    let _ = BufReader::new(&stream).read_to_string(&mut text);
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}

/// A socket left behind by a server that is gone: with the store free, the command opens
/// it directly; with the store held by a process that does not answer (no server), it
/// is refused with 3, naming the store and saying a process holds it; the next `serve`
/// replaces the stale socket with its own.
#[test]
fn a_stale_socket_is_no_obstacle_and_a_store_held_without_a_server_is_named() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("data");
    let created = vitals(
        &data,
        &[&curate_recipe("Porridge")[..], &["--create"]].concat(),
    );
    assert_run("curate --create", &created, OK, &[]);
    let socket = data.join("admin.sock");
    drop(UnixListener::bind(&socket).expect("a socket"));
    assert!(socket.exists(), "the stale socket stays");

    let run = vitals(&data, &["info"]);
    assert_run("info beside a stale socket", &run, OK, &["format version"]);

    let store_file = data.join("vitals.fjall");
    let held = infra::embedded::EmbeddedStore::open_in(&data, infra::embedded::Open::Existing)
        .expect("the test holds the store");
    for socket_there in [true, false] {
        if !socket_there {
            std::fs::remove_file(&socket).expect("socket removed");
        }
        let run = vitals(&data, &["admin", "residue", "01J0000000000000000000USER"]);
        assert_run(&format!("held, socket {socket_there}"), &run, STORE, &[]);
        for said in [text(&store_file), "holds the store"] {
            assert!(run.stderr.contains(said), "{said:?} not said: {run}");
        }
    }
    drop(held);

    drop(UnixListener::bind(&socket).expect("a stale socket again"));
    let server = support::start(&["--data-dir", text(&data)]);
    let run = vitals(&data, &["info"]);
    assert_run(
        "info through a server that replaced the stale socket",
        &run,
        OK,
        &[],
    );
    assert!(server.stop().success(), "vitals serve exits cleanly");
    assert!(!socket.exists(), "the socket is removed at shutdown");
}

/// The last line of an answer is the command's exit status and message, sent raw on
/// the socket as the CLI sends it.
#[test]
fn the_answer_ends_with_the_exit_status_and_message() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("data");
    let server = support::start(&["--data-dir", text(&data)]);
    let mut stream = UnixStream::connect(data.join("admin.sock")).expect("connects");
    stream
        .write_all(b"{\"args\": [\"admin\", \"residue\", \"nobody-at-all\"]}\n")
        .expect("writes");
    let mut lines = Vec::new();
    for line in BufReader::new(&stream).lines() {
        lines.push(serde_json::from_str::<Value>(&line.expect("a line")).expect("JSON"));
    }
    let last = lines.last().expect("an answer");
    assert_eq!(last["exit"], USAGE, "{lines:?}");
    assert!(
        last["error"]
            .as_str()
            .is_some_and(|e| e.contains("nobody-at-all")),
        "{lines:?}"
    );
    assert!(server.stop().success(), "vitals serve exits cleanly");
}
