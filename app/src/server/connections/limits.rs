//! The limits a connection is served within: how long each of its stages may take, and
//! how many connections are served at once.

use std::time::Duration;

/// How long each stage of a connection may take, and how many connections are served at
/// once (`vitals serve` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From a connection's acceptance, or the first byte of a request on a kept-alive
    /// connection, to the end of the request's head.
    pub header_timeout: Duration,
    /// From the end of a request's head to the end of its body.
    pub body_timeout: Duration,
    /// A kept-alive connection's wait for its next request.
    pub idle_timeout: Duration,
    /// Connections served at once.
    pub max_connections: u32,
}

/// How long a handler may take beyond the body timeout (from the end of the request's
/// head) before its connection is closed unanswered: not a limit any normal request
/// comes near, only a bound, so a stuck handler cannot hold its slot for ever.
pub(super) const HANDLER_SLACK: Duration = Duration::from_secs(90);

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            // Longer than a load balancer's usual idle timeout (60 s on AWS): the balancer
            // closes an idle connection first, so it never sends a request on one this
            // server is closing.
            idle_timeout: Duration::from_secs(75),
            max_connections: 1024,
        }
    }
}
