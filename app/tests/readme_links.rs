//! Every relative link of the README and of `docs/` leads to a file of the repository
//! (issue 39, finding 7: the README pointed at `../shared/DESIGN.md`, which no clone has).

use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The targets of the Markdown links `[text](target)` in `text`, without anchors.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or_default().trim();
        if !target.is_empty() {
            targets.push(target.to_owned());
        }
        rest = &rest[end..];
    }
    targets
}

/// The relative links of `file` that do not lead to a file or directory of the
/// repository.
fn broken_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let base = file.parent().unwrap_or(Path::new("."));
    let root = repository().canonicalize().expect("the repository");
    link_targets(&text)
        .into_iter()
        .filter(|t| !t.contains("://") && !t.starts_with("mailto:"))
        .filter(|t| {
            let resolved = base.join(t);
            match resolved.canonicalize() {
                Ok(path) => !path.starts_with(&root),
                Err(_) => true,
            }
        })
        .collect()
}

#[test]
fn the_readme_and_the_docs_link_only_to_files_of_the_repository() {
    let mut files = vec![repository().join("README.md")];
    let docs = std::fs::read_dir(repository().join("docs")).expect("docs/");
    files.extend(
        docs.filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md")),
    );
    assert!(files.len() > 3, "{files:?}");
    for file in &files {
        let broken = broken_links(file);
        assert!(broken.is_empty(), "{}: {broken:?}", file.display());
    }
}

#[test]
fn a_link_outside_the_repository_is_found() {
    // A page beside this test (removed when dropped): two levels below the repository.
    let page = tempfile::Builder::new()
        .suffix(".md")
        .tempfile_in(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests"))
        .expect("a page");
    std::fs::write(
        page.path(),
        "See [the design](../../../shared/DESIGN.md) and [the readme](../../README.md).",
    )
    .expect("written");
    assert_eq!(broken_links(page.path()), vec!["../../../shared/DESIGN.md"]);
}
