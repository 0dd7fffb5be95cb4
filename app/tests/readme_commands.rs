//! The README's command table against the built binary, both ways:
//! - every command a row names exists: its first cell (`vitals replay NAME\|all
//!   [--user ID]`), and every `vitals ...` span of its description, name a subcommand
//!   of `vitals --help` (and, for a command with subcommands, one of those), and every
//!   `--flag` they show is in that command's `--help`; so is every `--flag` span of the
//!   description (the row's own command's), every span that starts with a subcommand
//!   of the row's command (`curate-meal-plan --name N`), and every `VITALS_...`
//!   variable the row names (shown as `[env: VITALS_...]` in the command's help);
//! - every subcommand of `vitals --help`, and every subcommand of those, is named by
//!   some row, so a new command cannot go undocumented;
//! - every row has two cells: a `|` inside a code span must be escaped (`\|`), or
//!   GitHub splits the row there and drops the rest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// One row of the command table: its cells, split on unescaped `|`.
struct Row {
    line: usize,
    cells: Vec<String>,
}

impl Row {
    fn command(&self) -> &str {
        self.cells[0].trim().trim_matches('`')
    }

    fn text(&self) -> String {
        self.cells.join("|")
    }
}

/// The rows of the README's command table: lines starting ``| `vitals ``.
fn command_rows(readme: &str) -> Vec<Row> {
    readme
        .lines()
        .enumerate()
        .filter(|(_, line)| line.starts_with("| `vitals"))
        .map(|(i, line)| Row {
            line: i + 1,
            cells: cells(line),
        })
        .collect()
}

/// The cells of a Markdown table row, split on the `|` not escaped by `\`.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in inner.chars() {
        match c {
            '|' if !escaped => cells.push(String::new()),
            _ => cells.last_mut().expect("a cell").push(c),
        }
        escaped = c == '\\';
    }
    cells
}

/// The code spans of `text` (between single backticks).
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The `VITALS_...` names in `text`.
fn variables(text: &str) -> BTreeSet<&str> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("VITALS_") {
        let name = &rest[at..];
        let end = name
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(name.len());
        names.insert(&name[..end]);
        rest = &name[end..];
    }
    names
}

/// The `--flags` among `words` (`[--date`, `--user=ID]` give `--date`, `--user`).
fn flags<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    words
        .into_iter()
        .map(|w| w.trim_start_matches('['))
        .filter(|w| w.starts_with("--"))
        .map(|w| w.split(['=', ']']).next().unwrap_or(w))
        .collect()
}

/// The built binary's help, by command path, asked once each.
#[derive(Default)]
struct Helps(BTreeMap<Vec<String>, Option<String>>);

impl Helps {
    /// `vitals <path> --help`, or `None` when that is not a command.
    fn of(&mut self, path: &[&str]) -> Option<&str> {
        let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        self.0
            .entry(key)
            .or_insert_with(|| {
                let output = Command::new(env!("CARGO_BIN_EXE_vitals"))
                    .args(path)
                    .arg("--help")
                    .output()
                    .expect("vitals runs");
                output
                    .status
                    .success()
                    .then(|| String::from_utf8(output.stdout).expect("UTF-8 help"))
            })
            .as_deref()
    }

    /// The subcommands a help text lists under `Commands:` (not `help`).
    fn subcommands(&mut self, path: &[&str]) -> Vec<String> {
        let Some(help) = self.of(path) else {
            return Vec::new();
        };
        help.lines()
            .skip_while(|l| l.trim() != "Commands:")
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(str::to_owned)
            .collect()
    }
}

/// Whether `help` shows `flag` (not as the prefix of a longer flag).
fn shows_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        !help[at + flag.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// The command a span names: `vitals <top> [<sub>]`, the rest of its words (with the
/// flags to check), or what is wrong with it.
fn resolve<'a>(
    helps: &mut Helps,
    words: &[&'a str],
) -> Result<(Vec<&'a str>, Vec<&'a str>), String> {
    let [_vitals, top, rest @ ..] = words else {
        return Err("names no subcommand".to_owned());
    };
    let tops = helps.subcommands(&[]);
    if !tops.iter().any(|t| t == top) {
        return Err(format!(
            "`{top}` is not a subcommand of `vitals --help` ({tops:?})"
        ));
    }
    let subs = helps.subcommands(&[top]);
    if subs.is_empty() {
        return Ok((vec![top], rest.to_vec()));
    }
    match rest {
        [sub, rest @ ..] if subs.iter().any(|s| s == sub) => Ok((vec![top, sub], rest.to_vec())),
        _ => Err(format!("`vitals {top}` takes a subcommand of {subs:?}")),
    }
}

/// Every problem of the README's command table against the built binary.
fn problems(readme: &str) -> Vec<String> {
    let mut helps = Helps::default();
    let mut problems = Vec::new();
    let mut named: BTreeSet<Vec<String>> = BTreeSet::new();
    let rows = command_rows(readme);
    if rows.is_empty() {
        problems.push("README.md has no command table (rows starting | `vitals)".to_owned());
    }
    for row in &rows {
        let at = format!("README.md:{} `{}`", row.line, row.command());
        if row.cells.len() != 2 {
            problems.push(format!(
                "{at}: {} cells, not 2 (escape a `|` inside a code span as `\\|`)",
                row.cells.len()
            ));
        }
        let words: Vec<&str> = row.command().split_whitespace().collect();
        let (path, rest) = match resolve(&mut helps, &words) {
            Ok(found) => found,
            Err(problem) => {
                problems.push(format!("{at}: {problem}"));
                continue;
            }
        };
        named.insert(path.iter().map(|s| s.to_string()).collect());
        // What to check in which help: the row's command with its flags, then whatever
        // its description names.
        let mut checks: Vec<(Vec<&str>, Vec<&str>)> = vec![(path.clone(), flags(rest))];
        let subs = helps.subcommands(&path[..1]);
        for span in row.cells.iter().skip(1).flat_map(|c| code_spans(c)) {
            let span_words: Vec<&str> = span.split_whitespace().collect();
            match span_words[..] {
                ["vitals", ..] => match resolve(&mut helps, &span_words) {
                    Ok((path, rest)) => {
                        named.insert(path.iter().map(|s| s.to_string()).collect());
                        checks.push((path, flags(rest)));
                    }
                    Err(problem) => problems.push(format!("{at}: `{span}` {problem}")),
                },
                [first, ..] if first.starts_with("--") => {
                    checks.push((path.clone(), flags([first])));
                }
                [first, ref rest @ ..] if subs.iter().any(|s| s == first) => {
                    let sub = vec![path[0], first];
                    named.insert(sub.iter().map(|s| s.to_string()).collect());
                    checks.push((sub, flags(rest.iter().copied())));
                }
                _ => {}
            }
        }
        for (path, flags) in checks {
            let help = helps.of(&path).unwrap_or_default().to_owned();
            for flag in flags {
                if !shows_flag(&help, flag) {
                    problems.push(format!(
                        "{at}: `vitals {} --help` shows no {flag}",
                        path.join(" ")
                    ));
                }
            }
        }
        let help = helps.of(&path).unwrap_or_default().to_owned();
        for name in variables(&row.text()) {
            // `[env: NAME=value]`, or `[env: NAME]` for a secret, its value hidden.
            let shown = [format!("[env: {name}="), format!("[env: {name}]")];
            if !shown.iter().any(|s| help.contains(s)) {
                problems.push(format!(
                    "{at}: `vitals {} --help` reads no {name}",
                    path.join(" ")
                ));
            }
        }
    }
    // The other way: every command of the binary has a row, or a mention in one.
    for top in helps.subcommands(&[]) {
        let subs = helps.subcommands(&[&top]);
        if !named.iter().any(|p| p[0] == top) {
            problems.push(format!(
                "`vitals {top}` has no row in README.md's command table"
            ));
        }
        for sub in subs {
            if !named.contains(&vec![top.clone(), sub.clone()]) {
                problems.push(format!(
                    "`vitals {top} {sub}` is named nowhere in README.md's command table"
                ));
            }
        }
    }
    problems
}

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
        .expect("README.md is readable")
}

#[test]
fn the_command_table_names_exactly_the_commands_of_the_binary() {
    let problems = problems(&readme());
    assert!(
        problems.is_empty(),
        "README.md's command table and `vitals --help` disagree:\n- {}",
        problems.join("\n- ")
    );
}

#[test]
fn a_drifted_table_is_caught_both_ways() {
    let readme = readme();
    let row = |command: &str| format!("| `vitals {command}` |");
    // A command that does not exist, a flag it does not take, a row cut by a `|`.
    let spoiled = readme
        .replacen(
            &row("cost [--prices FILE]"),
            &row("costs [--prices FILE]"),
            1,
        )
        .replacen(
            &row("lambda --subscription NAME"),
            &row("lambda --subscriptions NAME"),
            1,
        )
        .replacen("`--dlq table\\|sqs`", "`--dlq table|sqs`", 1);
    assert_ne!(
        spoiled, readme,
        "the rows this test spoils are in README.md"
    );
    let found = problems(&spoiled).join("\n");
    for expected in [
        "`costs` is not a subcommand",
        "`vitals cost` has no row",
        "shows no --subscriptions",
        "3 cells, not 2",
    ] {
        assert!(found.contains(expected), "{expected:?} not in:\n{found}");
    }
    // A subcommand named nowhere.
    let without_matrix = readme.replacen(&row("deploy matrix"), "| `vitals deploy template` |", 1);
    assert!(
        problems(&without_matrix)
            .iter()
            .any(|p| p.contains("`vitals deploy matrix` is named nowhere")),
    );
}
