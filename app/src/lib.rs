//! The `vitals` application: configuration, the HTTP API and the server around it.
//! `main.rs` only parses the command line and calls into here.
//!
//! Layout:
//! - [`cli`]: the command line (clap), with environment-variable fallbacks.
//! - [`storage`]: builds the configured storage backend.
//! - [`http`]: the axum router (`http::app`), testable without a socket.
//! - [`server`]: binds, serves until shutdown, runs the projector workers and TTL purge.
//! - [`store_commands`]: the commands on a store's contents (info, backup, admin,
//!   replay, redrive, insights), run here or by a running server.
//! - [`admin_socket`]: where a running `vitals serve` takes those commands.
//! - [`admin`]: operator commands (redrive, nightly readiness, replay, residue).
//! - [`deploy`]: the CloudFormation stack of the AWS shape, generated.
//! - [`cost`]: what a user and the stack cost on AWS (`vitals cost`, `docs/cost.md`).
//! - [`event_docs`]: the events index and the event JSON Schema files.
//! - [`migrate`]: copies an embedded store into DynamoDB, resumable and verified.
//! - [`residue`]: what is left of a user in every table and index.
//! - [`work`]: the projectors on Kinesis (`vitals work`) and as a Lambda (`vitals lambda`).
//! - [`setup`]: the API's handlers and authentication from the command line.
//! - [`lambda_boot`]: the `bootstrap` of every deployed function (no arguments; the
//!   role from `VITALS_ROLE`), refusing to start on a missing secret or setting.
//! - [`lambda_api`]: the same router behind API Gateway (`vitals api-lambda`).
//! - [`logging`]: log lines as text or JSON on standard error.

pub mod access;
pub mod access_doc;
pub mod admin;
pub mod admin_client;
pub mod admin_socket;
pub mod cli;
pub mod cost;
pub mod deploy;
pub mod event_docs;
pub mod http;
pub mod lambda_api;
pub mod lambda_boot;
pub mod logging;
pub mod migrate;
pub mod residue;
pub mod server;
pub mod setup;
pub mod storage;
pub mod store_commands;
pub mod work;
