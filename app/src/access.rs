//! Every declared access pattern of the system: the libraries' (commands, read models,
//! projectors) and the binary's own operators' tools. `vitals docs access-patterns`
//! renders them; the HTTP walk's recording store holds the code to them.

use infra::access::AccessPattern;

/// The binary's own patterns: the operators' whole-table reads (`vitals migrate` copies
/// every table; the residue check after an erasure reads every table and index). The
/// scans of the tables with an outbox are the replay tool's too, declared with it
/// (`projectors::replay`); the environment table, which has none, is only theirs. The
/// migration's writes go to DynamoDB's `BatchWriteItem` directly, not through the port.
pub static ACCESS: &[AccessPattern] = &[AccessPattern::new(
    "every item of a table",
    events_schema::Context::Environment,
    infra::access::Op::Scan,
    "*",
    infra::access::Sk::Whole,
    "vitals migrate, the residue check of an erasure; operators only",
)
.volume(0.0)
.size(1000, 400)];

/// Every declared pattern.
pub fn catalog() -> Vec<&'static AccessPattern> {
    let mut all = Vec::new();
    all.extend(infra::access_patterns());
    all.extend(commands::access_patterns());
    all.extend(readmodels::access_patterns());
    all.extend(projectors::access_patterns());
    all.extend(ACCESS.iter());
    all
}

/// The declared patterns no log in `logs` names (each line of a log is a pattern's
/// shape, as the recording store writes them): what no test exercised.
pub fn unexercised(logs: &std::path::Path) -> std::io::Result<Vec<&'static AccessPattern>> {
    let mut exercised = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(logs)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "txt") {
            let text = std::fs::read_to_string(&path)?;
            exercised.extend(text.lines().map(str::to_owned));
        }
    }
    Ok(catalog()
        .into_iter()
        .filter(|p| !exercised.contains(&p.shape.to_string()))
        .collect())
}
