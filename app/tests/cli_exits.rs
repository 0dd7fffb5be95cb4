//! What `vitals` exits with, black-box through the binary (issue 39): every subcommand,
//! run with missing and bad settings (bad ids, nonexistent paths, bad addresses, outside
//! Lambda), ends with a message and the exit status `vitals::exit::Exit` defines, never
//! a panic (101); a store is opened, never conjured: a mistyped `--data-dir` or an
//! empty store is refused by every command but `serve` (which creates a store on
//! its first start) and `--create`, and nothing is made on disk.
//!
//! The binary runs with a cleared environment (and local AWS credentials that reach
//! nothing), so a developer's `VITALS_*` or AWS variables do not change what it is given.

mod support;

use support::{Run, text};

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The exit statuses of `vitals::exit::Exit`, spelled out: a script relies on the
/// numbers, so the test does too.
const OK: i32 = 0;
const USAGE: i32 = 2;
const STORE: i32 = 3;
const CONFIG: i32 = 4;
const EXTERNAL: i32 = 5;

/// A DynamoDB (or any AWS) endpoint nothing listens on.
const NOWHERE: &str = "http://127.0.0.1:9";
/// 32 bytes: the shortest secret accepted.
const SECRET: &str = "a-32-byte-secret-for-this-test-0";
/// Longest any one run may take: AWS calls to `NOWHERE` are refused at once, and their
/// retries take seconds.
const RUN_WITHIN: Duration = Duration::from_secs(90);

/// Runs `vitals <args>` with only `env` (and harmless AWS settings) to its end, within
/// [`RUN_WITHIN`]; whatever it fails with, it must not panic.
fn vitals(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .args(args)
        .env_clear()
        .envs([
            ("RUST_LOG", "warn"),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vitals starts");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + RUN_WITHIN;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "vitals {args:?} still runs after {RUN_WITHIN:?}; stderr:\n{}",
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let run = Run::checked(
        args,
        status.code(),
        out.join().expect("stdout read"),
        err.join().expect("stderr read"),
    );
    assert_ne!(run.code, Some(101), "vitals {args:?} panicked: {run}");
    run
}

/// Asserts `run` ended with `code` and said each of `said` on standard error.
#[track_caller]
fn assert_exit(what: &str, run: &Run, code: i32, said: &[&str]) {
    assert_eq!(run.code, Some(code), "{what}: {run}");
    for words in said {
        assert!(
            run.stderr.contains(words),
            "{what}: {words:?} not said: {run}"
        );
    }
}

/// Every command that works on an existing embedded store, with arguments that are
/// otherwise valid.
fn commands_on_a_store() -> Vec<Vec<&'static str>> {
    vec![
        vec!["admin", "residue", "01J0000000000000000000USER"],
        vec!["replay", "all"],
        vec![
            "replay",
            "dashboard-from-nutrition",
            "--user",
            "01J0000000000000000000USER",
        ],
        vec!["replay", "all", "--rebuild"],
        vec!["redrive", "dashboard-from-nutrition"],
        vec!["insights", "nightly"],
        vec!["insights", "nightly", "--date", "2026-03-01"],
        recipe(),
        vec![
            "admin",
            "curate-meal-plan",
            "--name",
            "Easy week",
            "--category",
            "starter",
            "--recipe",
            "01J0000000000000000RECIPE0",
        ],
        vec!["migrate", "--endpoint-url", NOWHERE],
        vec!["info"],
        vec!["backup", "--to", "/nonexistent/vitals.vbk"],
    ]
}

/// A mistyped `--data-dir` (a directory that does not exist, or one without a store in
/// it) is refused by every command with a message naming the path, and nothing is
/// created: no directory, no file.
#[test]
fn a_mistyped_data_dir_is_refused_by_every_command_and_nothing_is_made() {
    let dir = tempfile::tempdir().expect("tempdir");
    let typo = dir.path().join("vitals-dta");
    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).expect("an empty directory");
    for command in commands_on_a_store() {
        for data_dir in [&typo, &bare] {
            let args = [&command[..], &["--data-dir", text(data_dir)]].concat();
            let run = vitals(&args, &[]);
            assert_exit(&format!("{command:?}"), &run, STORE, &[text(data_dir)]);
            assert!(
                run.stderr.contains("no store"),
                "{command:?}: says there is no store: {run}"
            );
        }
        assert!(!typo.exists(), "{command:?} made {}", typo.display());
        assert_eq!(
            std::fs::read_dir(&bare).expect("read").count(),
            0,
            "{command:?} made a file in {}",
            bare.display()
        );
    }
    // The environment's data directory likewise.
    let run = vitals(&["replay", "all"], &[("VITALS_DATA_DIR", text(&typo))]);
    assert_exit("VITALS_DATA_DIR", &run, STORE, &[text(&typo)]);
    assert!(!typo.exists());
}

/// An empty `vitals.redb` (an older release's store, which a command migrates: a copy
/// that failed, a crash while it was made) is not a store: every command refuses it,
/// `serve` too, and it is left as it is, never replaced by a fresh store.
#[test]
fn an_empty_store_file_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data directory");
    let file = data.join("vitals.redb");
    std::fs::write(&file, b"").expect("an empty file");
    let store = ["--data-dir", text(&data)];
    for command in commands_on_a_store() {
        let run = vitals(&[&command[..], &store].concat(), &[]);
        assert_exit(
            &format!("{command:?}"),
            &run,
            STORE,
            &[text(&file), "empty"],
        );
    }
    let serve = vitals(
        &[&["serve", "--listen", "127.0.0.1:0"][..], &store].concat(),
        &[],
    );
    assert_exit("serve", &serve, STORE, &[text(&file), "empty"]);
    assert!(!serve.stdout.contains("listening"), "{serve}");
    let created = vitals(&[&recipe()[..], &store, &["--create"]].concat(), &[]);
    assert_exit("curate --create", &created, STORE, &[text(&file), "empty"]);
    assert_eq!(
        std::fs::metadata(&file).expect("still there").len(),
        0,
        "the empty file was replaced"
    );
}

/// `--create` makes the store a command needs (`serve` makes its own); `vitals info`
/// then shows what it is: its path, format version, when it was created and its size.
#[test]
fn create_makes_a_store_and_info_shows_what_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let store = ["--data-dir", text(&data)];
    let curated = vitals(&[&recipe()[..], &store, &["--create"]].concat(), &[]);
    assert_exit("curate --create", &curated, OK, &[]);
    assert!(
        !curated.stdout.trim().is_empty(),
        "prints the id: {curated}"
    );
    // Once made, a second `--create` opens it: the recipe is still there.
    let again = vitals(&[&recipe()[..], &store, &["--create"]].concat(), &[]);
    assert_exit("curate --create again", &again, OK, &[]);
    let info = vitals(&[&["info"][..], &store].concat(), &[]);
    assert_exit("info", &info, OK, &[]);
    let path = data.join("vitals.fjall");
    for shown in [text(&path), "format version", "created at"] {
        assert!(info.stdout.contains(shown), "info shows {shown:?}: {info}");
    }
    // The size is what its files take: more than nothing, no more than they hold.
    let size: u64 = info
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("size"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size shown: {info}"));
    assert!(size > 0 && size <= bytes_under(&path), "{size}: {info}");
    let created_line = info
        .stdout
        .lines()
        .find(|l| l.contains("created at"))
        .unwrap_or_default();
    let year = chrono::Utc::now().format("%Y").to_string();
    assert!(created_line.contains(&year), "{info}");
    // The other commands open it now.
    let nightly = vitals(
        &[&["insights", "nightly", "--date", "2026-03-01"][..], &store].concat(),
        &[],
    );
    assert_exit("nightly", &nightly, OK, &[]);
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => bytes_under(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// Exit statuses a script can tell apart: a bad id or name is 2 (not 0 with a warning),
/// a store that cannot be opened is 3 (not 1, which means residue found).
#[test]
fn exit_codes_a_script_can_trust() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let store = ["--data-dir", text(&data)];
    let made = vitals(&[&recipe()[..], &store, &["--create"]].concat(), &[]);
    assert_exit("curate --create", &made, OK, &[]);
    let on_store = |args: &[&str]| vitals(&[args, &store[..]].concat(), &[]);

    let run = on_store(&["admin", "residue", "not#an-id"]);
    assert_exit("residue of a malformed id", &run, USAGE, &["not a user id"]);
    // Ids are free-form (an identity provider's subject is one): an id no erasure and
    // no item knows is not "nothing left", it is no user of this store.
    let run = on_store(&["admin", "residue", "not-an-id"]);
    assert_exit("residue of an unknown id", &run, USAGE, &["not-an-id"]);
    assert!(!run.stdout.contains("nothing left"), "{run}");
    let run = on_store(&["replay", "no-such-projection"]);
    assert_exit(
        "replay of no projection",
        &run,
        USAGE,
        &["no-such-projection"],
    );
    let run = on_store(&["replay", "all", "--user", "not#an-id"]);
    assert_exit("replay --user malformed", &run, USAGE, &["not a user id"]);
    let run = on_store(&["insights", "nightly", "--date", "yesterday"]);
    assert_exit("nightly --date malformed", &run, USAGE, &["--date"]);
    let run = on_store(&["redrive", "no-such-subscription"]);
    assert_exit(
        "redrive of no subscription",
        &run,
        USAGE,
        &["no-such-subscription"],
    );
    let run = on_store(&[
        "admin",
        "curate-meal-plan",
        "--name",
        "x",
        "--category",
        "starter",
        "--recipe",
        "not#a-recipe",
    ]);
    assert_exit(
        "curate-meal-plan, bad recipe id",
        &run,
        USAGE,
        &["not#a-recipe"],
    );
    let run = on_store(&[
        "admin",
        "curate-recipe",
        "--name",
        "",
        "--category",
        "Not A Slug",
        "--calories",
        "1",
        "--protein-g",
        "1",
        "--carbs-g",
        "1",
        "--fat-g",
        "1",
    ]);
    assert_exit("curate-recipe, invalid fields", &run, USAGE, &[]);

    // A running server holds the store: a store command runs there (through its admin
    // socket) and ends with its own status (what no server answers for is in
    // admin_while_serving.rs).
    let mut server = serve_quietly("127.0.0.1:0", &data);
    let served = support::served_address(&mut server);
    let nobody = on_store(&["admin", "residue", "01J0000000000000000000USER"]);
    let info = on_store(&["info"]);
    let exit = support::terminate(
        &mut server,
        Duration::from_secs(20),
        Duration::from_millis(20),
    );
    served.unwrap_or_else(|line| panic!("serve did not start: {line:?}"));
    assert!(exit.is_some_and(|s| s.success()), "serve stops: {exit:?}");
    assert_exit("residue, through the server", &nobody, USAGE, &["no user"]);
    assert_exit("info, through the server", &info, OK, &[]);
}

/// The exit statuses are listed where an operator looks: `vitals --help`.
#[test]
fn help_lists_the_exit_statuses() {
    let help = vitals(&["--help"], &[]);
    assert_eq!(help.code, Some(OK), "{help}");
    for line in ["Exit status", "0 ", "1 ", "2 ", "3 ", "4 ", "5 "] {
        assert!(help.stdout.contains(line), "{line:?} in: {help}");
    }
}

/// `api-lambda` and `lambda` outside Lambda, and the function's own start without the
/// runtime's variables, stop with a message (no panic in the runtime); `api-lambda`
/// refuses the embedded store (it would live and die with one instance).
#[test]
fn the_lambda_commands_outside_lambda_say_so() {
    let secrets = [
        ("VITALS_JWT_SECRET", SECRET),
        ("VITALS_WEBHOOK_SECRET", SECRET),
    ];
    let dynamodb = ["--backend", "dynamodb", "--endpoint-url", NOWHERE];
    let run = vitals(&[&["api-lambda"][..], &dynamodb].concat(), &secrets);
    assert_exit(
        "api-lambda outside Lambda",
        &run,
        CONFIG,
        &["AWS_LAMBDA_RUNTIME_API"],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let run = vitals(&["api-lambda", "--data-dir", text(&data)], &secrets);
    assert_exit(
        "api-lambda on the embedded store",
        &run,
        CONFIG,
        &["embedded"],
    );
    assert!(!data.exists(), "api-lambda made a store: {run}");
    let run = vitals(
        &["lambda", "--subscription", "dashboard-from-nutrition"],
        &[],
    );
    assert_exit(
        "lambda outside Lambda",
        &run,
        CONFIG,
        &["AWS_LAMBDA_RUNTIME_API"],
    );
    let run = vitals(&["lambda", "--subscription", "no-such-subscription"], &[]);
    assert!(
        matches!(run.code, Some(USAGE | CONFIG)),
        "lambda of no subscription: {run}"
    );
    // Half a Lambda environment: the runtime API without the function's variables.
    let half = [("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")];
    let run = vitals(
        &["lambda", "--subscription", "dashboard-from-nutrition"],
        &half,
    );
    assert_exit(
        "lambda, half an environment",
        &run,
        CONFIG,
        &["AWS_LAMBDA_FUNCTION_NAME"],
    );
    // The deployed bootstrap (no arguments): its settings, then the runtime's.
    let run = vitals(&[], &half);
    assert_exit(
        "bootstrap without settings",
        &run,
        CONFIG,
        &["VITALS_BACKEND"],
    );
    let nightly = [
        ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9"),
        ("VITALS_ROLE", "nightly"),
        ("VITALS_BACKEND", "dynamodb"),
        ("VITALS_TABLE_PREFIX", "vitals-"),
        ("VITALS_ENDPOINT_URL", NOWHERE),
    ];
    let run = vitals(&[], &nightly);
    assert_exit(
        "bootstrap, half an environment",
        &run,
        CONFIG,
        &["AWS_LAMBDA_FUNCTION_NAME"],
    );
}

/// `serve` checks every setting before it binds and prints its address, and says what
/// is wrong: a JWKS file that is not there, a port in use (naming the address), an
/// address that does not resolve, a rate limit of 0. A host name is resolved.
#[test]
fn serve_checks_its_settings_before_it_listens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let serve = ["serve", "--data-dir", text(&data)];
    let with = |extra: &[&str], env: &[(&str, &str)]| vitals(&[&serve[..], extra].concat(), env);

    let run = with(
        &[
            "--listen",
            "127.0.0.1:0",
            "--jwks-file",
            "/nonexistent.json",
            "--jwt-issuer",
            "https://issuer.example",
            "--jwt-audience",
            "vitals",
        ],
        &[],
    );
    assert_exit(
        "serve --jwks-file missing",
        &run,
        CONFIG,
        &["/nonexistent.json"],
    );
    assert!(!run.stdout.contains("listening"), "{run}");
    assert!(!data.exists(), "a refused start made a store: {run}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = taken.local_addr().expect("its address").to_string();
    let run = with(&["--listen", &address], &[]);
    assert_exit("serve on a port in use", &run, CONFIG, &[&address]);
    assert!(!run.stdout.contains("listening"), "{run}");

    let run = with(&["--listen", "no-such-host.invalid:8080"], &[]);
    assert_exit(
        "serve on a host that does not resolve",
        &run,
        CONFIG,
        &["no-such-host.invalid"],
    );
    let run = with(&["--listen", "not an address"], &[]);
    assert_exit("serve --listen malformed", &run, USAGE, &["--listen"]);

    for (flag, variable) in [
        ("--rate-limit", "VITALS_RATE_LIMIT"),
        ("--auth-rate-limit", "VITALS_AUTH_RATE_LIMIT"),
        ("--login-rate-limit", "VITALS_LOGIN_RATE_LIMIT"),
        ("--webhook-rate-limit", "VITALS_WEBHOOK_RATE_LIMIT"),
        ("--operations-rate-limit", "VITALS_OPERATIONS_RATE_LIMIT"),
    ] {
        let run = with(&["--listen", "127.0.0.1:0", flag, "0"], &[]);
        assert_exit(
            &format!("serve {flag} 0"),
            &run,
            USAGE,
            &[flag, "at least 1"],
        );
        let run = with(&["--listen", "127.0.0.1:0"], &[(variable, "0")]);
        assert_exit(&format!("{variable}=0"), &run, USAGE, &["at least 1"]);
    }
    drop(taken);

    // A host name is resolved.
    let mut child = serve_quietly("localhost:0", &data);
    let served = support::served_address(&mut child);
    let health = served
        .as_ref()
        .ok()
        .map(|a| support::request(a, "GET", "/healthz"));
    let exit = support::terminate(
        &mut child,
        Duration::from_secs(20),
        Duration::from_millis(20),
    );
    let address = served.unwrap_or_else(|line| panic!("--listen localhost:0: {line:?}"));
    assert_eq!(health.map(|(status, _)| status), Some(200), "on {address}");
    assert!(exit.is_some_and(|s| s.success()), "stops: {exit:?}");
}

/// No subcommand panics, whatever it is given; each ends with the status of what went
/// wrong.
#[test]
fn no_subcommand_panics_on_bad_settings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    let missing = text(&missing);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let taken = taken.local_addr().expect("its address").to_string();
    let nowhere = ["--endpoint-url", NOWHERE];
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec![], USAGE),
        (vec!["no-such-command"], USAGE),
        (vec!["serve", "--max-connections", "0"], USAGE),
        (vec!["serve", "--header-timeout", "0s"], USAGE),
        (vec!["serve", "--backend", "sqlite"], USAGE),
        (vec!["serve", "--connect-return-url", "/relative"], USAGE),
        (vec!["serve", "--jwks-file", "/nonexistent.json"], USAGE),
        (
            [
                &["serve", "--backend", "dynamodb", "--listen", "127.0.0.1:0"][..],
                &nowhere,
            ]
            .concat(),
            CONFIG,
        ),
        ([&["bootstrap"][..], &nowhere].concat(), EXTERNAL),
        (
            [&["work", "--metrics-listen", &taken][..], &nowhere].concat(),
            CONFIG,
        ),
        (vec!["work", "--metrics-listen", "nowhere"], USAGE),
        (vec!["redrive-failures", "no-such-context"], USAGE),
        (
            [&["redrive-failures", "dashboard"][..], &nowhere].concat(),
            EXTERNAL,
        ),
        (vec!["migrate", "--data-dir", missing], STORE),
        (vec!["cost", "--prices", "/nonexistent.json"], USAGE),
        (vec!["info", "--data-dir", missing], STORE),
        (
            vec!["admin", "residue", "not#an-id", "--data-dir", missing],
            USAGE,
        ),
        (
            [
                &["admin", "residue", "someone", "--backend", "dynamodb"][..],
                &nowhere,
            ]
            .concat(),
            EXTERNAL,
        ),
        (
            [&["replay", "all", "--backend", "dynamodb"][..], &nowhere].concat(),
            EXTERNAL,
        ),
        (
            vec![
                "insights",
                "nightly",
                "--date",
                "2026-02-30",
                "--data-dir",
                missing,
            ],
            USAGE,
        ),
        (vec!["deploy"], USAGE),
        (vec!["docs"], USAGE),
        (vec!["backup", "--data-dir", missing], USAGE),
        (
            vec!["backup", "--data-dir", missing, "--to", missing],
            STORE,
        ),
        (vec!["restore", "--from", "/nonexistent.vbk"], USAGE),
        (
            vec![
                "restore",
                "--from",
                "/nonexistent.vbk",
                "--data-dir",
                missing,
            ],
            USAGE,
        ),
    ];
    for (args, code) in cases {
        let run = vitals(&args, &[]);
        assert_eq!(run.code, Some(code), "vitals {args:?}: {run}");
        if code != OK {
            assert!(
                !run.stderr.trim().is_empty(),
                "vitals {args:?} says why: {run}"
            );
        }
        assert!(
            !Path::new(missing).exists(),
            "vitals {args:?} made {missing}"
        );
    }
}

/// `admin curate-recipe` with valid fields (it writes, so needs a store).
fn recipe() -> Vec<&'static str> {
    support::curate_recipe("Overnight oats")
}

/// `vitals serve --listen <listen> --data-dir <data>` with nothing but `RUST_LOG=warn`
/// in its environment, its address line piped, its log dropped.
fn serve_quietly(listen: &str, data: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_vitals"))
        .args(["serve", "--listen", listen, "--data-dir", text(data)])
        .env_clear()
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts")
}
