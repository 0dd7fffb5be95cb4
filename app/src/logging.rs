//! Where log lines go and in what shape: standard error, as text for a terminal or as
//! one JSON object per line (with the fields of every enclosing span, so a line written
//! while applying an event carries the request id that caused it).

use crate::cli::LogFormat;
use tracing_subscriber::EnvFilter;

/// The embedded engine's crates, which log at INFO each time a store is opened or
/// recovered: routine lines an operator has no use for, so by default only their warnings
/// show.
const QUIET_CRATES: &str = "fjall=warn,lsm_tree=warn";

/// Installs the process's subscriber; `RUST_LOG` filters (default `default_level`, with
/// [`QUIET_CRATES`] at WARN).
pub fn init(format: LogFormat, default_level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{default_level},{QUIET_CRATES}")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(false)
            .with_span_list(true)
            .init(),
    }
}
