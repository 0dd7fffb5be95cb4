//! The `vitals` application: configuration, the HTTP API and the server around it.
//! `main.rs` only parses the command line and calls into here.
//!
//! Layout:
//! - [`cli`]: the command line (clap), with environment-variable fallbacks.
//! - [`storage`]: builds the configured storage backend.
//! - [`http`]: the axum router (`http::app`), testable without a socket.
//! - [`server`]: binds, serves until shutdown, runs the projector workers and TTL purge.
//! - [`admin`]: operator commands (redrive, nightly readiness).
//! - [`work`]: the projectors on Kinesis (`vitals work`) and as a Lambda (`vitals lambda`).

pub mod admin;
pub mod cli;
pub mod http;
pub mod server;
pub mod storage;
pub mod work;
