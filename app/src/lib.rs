//! The `vitals` application: configuration, the HTTP API and the server around it.
//! `main.rs` only parses the command line and calls into here.
//!
//! Layout:
//! - [`cli`]: the command line (clap), with environment-variable fallbacks.
//! - [`storage`]: builds the configured storage backend.
//! - [`http`]: the axum router (`http::app`), testable without a socket.
//! - [`server`]: binds, serves until shutdown, runs background maintenance.

pub mod cli;
pub mod http;
pub mod server;
pub mod storage;
