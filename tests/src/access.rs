//! The access-pattern check of the suites that drive the real code (the HTTP walk, the
//! projector fixtures, the model-based test): their code runs on a [`Recorded`] store
//! holding every declared pattern, a call that matches none fails the suite with the
//! code that made it, and the patterns each run exercised are kept in
//! `target/test-logs/access-patterns/`, where `scripts/test-all` reports the declared
//! patterns no suite exercised.

use infra::Store;
use infra::access::AccessPattern;
use infra::recorded::Recorded;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// Every pattern the libraries declare (the binary's own, its operators' tools, are
/// added by `vitals::access::catalog`).
pub fn catalog() -> Vec<&'static AccessPattern> {
    let mut all = Vec::new();
    all.extend(infra::access_patterns());
    all.extend(commands::access_patterns());
    all.extend(readmodels::access_patterns());
    all.extend(projectors::access_patterns());
    all
}

/// `store`, recorded against `catalog`.
pub fn recording(store: Arc<dyn Store>, catalog: Vec<&'static AccessPattern>) -> Arc<Recorded> {
    Arc::new(Recorded::recording(store, catalog))
}

/// Fails (naming each call and its caller) if the code made an undeclared call; keeps
/// the names of the patterns it exercised under `suite`.
pub fn finish(recorded: &Recorded, suite: &str) {
    let dir = log_dir();
    let kept = std::fs::create_dir_all(&dir).and_then(|()| {
        let path = dir.join(format!("{suite}-{}.txt", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        for name in recorded.exercised() {
            writeln!(file, "{name}")?;
        }
        Ok(())
    });
    if let Err(error) = kept {
        eprintln!("could not keep the exercised patterns: {error}");
    }
    if std::env::var_os("VITALS_DUMP_ATTRIBUTES").is_some() {
        let path = dir.join(format!("{suite}-{}.attributes", std::process::id()));
        let lines: Vec<String> = recorded
            .written_attributes()
            .into_iter()
            .flat_map(|(kind, attrs)| {
                attrs
                    .into_iter()
                    .map(move |(name, ty)| format!("{kind}\t{name}\t{}", ty.name()))
            })
            .collect();
        let _ = std::fs::write(path, lines.join("\n") + "\n");
    }
    if let Err(report) = recorded.all_declared() {
        panic!("{suite}: {report}");
    }
}

/// Where the exercised patterns are kept: the repository's
/// `target/test-logs/access-patterns`, beside the other test logs (whatever the build's
/// target directory).
pub fn log_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-logs/access-patterns")
}
