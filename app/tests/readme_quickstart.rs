//! The README's first requests, run as a newcomer runs them: the `sh` block between
//! `<!-- quickstart` and `<!-- /quickstart -->` in README.md, verbatim, under
//! `bash -euo pipefail`, against a fresh `vitals serve` (the binary's defaults but for
//! its own data directory and a free port, whose address the block reads from
//! `VITALS`). The block signs up, logs a meal and prints the day's dashboard once the
//! meal shows in it; the dashboard it prints must hold that meal.

mod support;

use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The longest the block may run: a sign-up hashes a password (slow in a debug build
/// on a busy machine), then a meal and a few dashboard reads.
const BLOCK_DEADLINE: Duration = Duration::from_secs(120);

const OPENING: &str = "<!-- quickstart";
const CLOSING: &str = "<!-- /quickstart -->";

fn readme_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")
}

/// The shell block between the quickstart markers: exactly one fenced `sh` block, and
/// nothing else but blank lines.
fn quickstart_block(readme: &str) -> Result<String, String> {
    let lines: Vec<&str> = readme.lines().collect();
    let at = |marker: &str| -> Result<usize, String> {
        let found: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].trim_start().starts_with(marker))
            .collect();
        match found[..] {
            [one] => Ok(one),
            _ => Err(format!(
                "README.md has {} lines starting with {marker:?}, not one",
                found.len()
            )),
        }
    };
    let (opening, closing) = (at(OPENING)?, at(CLOSING)?);
    if opening >= closing {
        return Err(format!("{CLOSING:?} comes before {OPENING:?} in README.md"));
    }
    let inside: Vec<&str> = lines[opening + 1..closing]
        .iter()
        .copied()
        .skip_while(|l| l.trim().is_empty())
        .collect();
    let end = inside
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .ok_or("the quickstart markers enclose nothing")?;
    let fenced = &inside[..=end];
    let body = match fenced {
        [first, body @ .., last] if first.trim() == "```sh" && last.trim() == "```" => body,
        _ => {
            return Err(
                "between the quickstart markers there must be one fenced ```sh block, alone"
                    .to_owned(),
            );
        }
    };
    if body.iter().any(|l| l.trim_start().starts_with("```")) {
        return Err("the quickstart markers enclose more than one fenced block".to_owned());
    }
    Ok(body.iter().map(|l| format!("{l}\n")).collect())
}

fn block() -> String {
    let readme = std::fs::read_to_string(readme_path()).expect("README.md is readable");
    quickstart_block(&readme).unwrap_or_else(|problem| panic!("{problem}"))
}

/// What `program args` printed on standard output; it must succeed.
fn output_of(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} {args:?} runs: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The default of `flag` in a clap long help text (`[default: VALUE]`).
fn default_of(help: &str, flag: &str) -> Option<String> {
    let start = help.find(&format!("{flag} "))?;
    let rest = &help[start..];
    let section = rest[flag.len()..]
        .find("\n      --")
        .map_or(rest, |end| &rest[..flag.len() + end]);
    let value = section.split("[default: ").nth(1)?;
    Some(value.split(']').next()?.to_owned())
}

/// Waits for `child` to exit, at most `within`; `None` if it has not.
fn exit_within(child: &mut std::process::Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("waits on the block") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_quickstart_talks_to_the_address_serve_listens_on_by_default() {
    let block = block();
    let help = output_of(env!("CARGO_BIN_EXE_vitals"), &["serve", "--help"]);
    let listen = default_of(&help, "--listen").expect("`vitals serve --help` shows a default");
    let fallback = format!("${{VITALS:-http://{listen}}}");
    assert!(
        block.contains(&fallback),
        "the quickstart must reach the server through {fallback} (the address `vitals serve` \
         listens on by default, or VITALS), so a newcomer's server and this test's both \
         answer it:\n{block}"
    );
}

#[test]
fn the_quickstart_signs_up_logs_a_meal_and_sees_it_on_the_dashboard() {
    let block = block();
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("vitals-data");
    let server_log = dir.path().join("serve.log");
    let server = support::start_logging_to(
        &["--data-dir", data.to_str().expect("UTF-8 path")],
        &[],
        Stdio::from(File::create(&server_log).expect("server log")),
    );

    let (stdout_path, stderr_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut run = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &block])
        .env("VITALS", format!("http://{}", server.address))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(File::create(&stdout_path).expect("stdout file"))
        .stderr(File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("bash runs");
    let status = exit_within(&mut run, BLOCK_DEADLINE);
    if status.is_none() {
        let _ = run.kill();
        let _ = run.wait();
    }
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let (stdout, stderr) = (read(&stdout_path), read(&stderr_path));
    let report = || {
        format!(
            "\n--- the block ---\n{block}--- its output ---\n{stdout}\n--- its errors ---\n{stderr}\
             \n--- the server's log ---\n{}",
            read(&server_log)
        )
    };
    match status {
        None => panic!(
            "the quickstart did not finish within {BLOCK_DEADLINE:?}{}",
            report()
        ),
        Some(status) => assert!(
            status.success(),
            "the quickstart failed: {status}{}",
            report()
        ),
    }

    // The block's last line is the dashboard it read: the store was empty, so the one
    // meal it shows is the block's, counted on its day.
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
    let dashboard: Value = last
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("the quickstart's last line is not JSON{}", report()));
    let meals = dashboard["recent_meals"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let [meal] = &meals[..] else {
        panic!("the dashboard should show the one meal logged{}", report());
    };
    let day = &dashboard["day"];
    assert_eq!(
        meal["day"],
        day["day"],
        "the meal counts on the day shown{}",
        report()
    );
    assert_eq!(
        day["nutrition"]["meals"],
        1,
        "the day counts the meal{}",
        report()
    );
    assert_eq!(
        day["nutrition"]["totals"],
        meal["nutrients"],
        "the day's totals are the meal's{}",
        report()
    );
    server.stop();
}

#[test]
fn the_markers_must_hold_one_fenced_sh_block_alone() {
    let readme = format!("intro\n{OPENING} -->\n```sh\necho hi\n```\n{CLOSING}\n");
    assert_eq!(quickstart_block(&readme).as_deref(), Ok("echo hi\n"));
    for broken in [
        format!("{OPENING} -->\necho hi\n{CLOSING}\n"),
        format!("{OPENING} -->\n```sh\necho hi\n```\n```sh\necho again\n```\n{CLOSING}\n"),
        format!("{CLOSING}\n```sh\necho hi\n```\n{OPENING} -->\n"),
        "```sh\necho hi\n```\n".to_owned(),
    ] {
        assert!(quickstart_block(&broken).is_err(), "{broken}");
    }
}
