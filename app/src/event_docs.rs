//! The published event contract: the events index (`vitals docs events`, committed as
//! `docs/events.md`) and the JSON Schema of every event version (`vitals docs
//! event-schemas`, committed under `events-schema/schemas/`).

use anyhow::Context as _;
use std::path::Path;

/// The events index (Markdown).
pub fn index() -> String {
    projectors::event_index::document(&projectors::registry::described())
}

/// Every schema file: its name and its text (pretty JSON, newline-terminated).
pub fn schema_files() -> Vec<(String, String)> {
    events_schema::schemas::all()
        .into_iter()
        .map(|published| {
            let text = serde_json::to_string_pretty(&published.schema).unwrap_or_default();
            (published.file_name(), format!("{text}\n"))
        })
        .collect()
}

/// Writes every schema file into `dir` (created if needed); returns how many.
pub fn write_schemas(dir: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = schema_files();
    for (name, text) in &files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(files.len())
}
