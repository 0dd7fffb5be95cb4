//! The `/v1` routes, one module per area.

pub mod identity;
pub mod integrations;
pub mod me;
