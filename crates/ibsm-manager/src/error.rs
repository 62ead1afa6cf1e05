//! The engine's error type.

use ibsm_transport::TransportError;

/// What can stop the SM engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SmError {
    /// The transport failed for good.
    #[error("transport: {0}")]
    Transport(#[from] TransportError),
    /// Bad configuration or persisted state (names the file and line).
    #[error("configuration: {0}")]
    Config(String),
    /// Routing failed and no fallback was allowed to take over.
    #[error("routing: {0}")]
    Routing(#[from] ibsm_routing::RoutingError),
    /// The LID space is exhausted.
    #[error("LID space exhausted: {needed} LIDs needed, at most {available} available")]
    LidsExhausted {
        /// LIDs the fabric needs.
        needed: usize,
        /// LIDs available (LinearFDBCap and the unicast range).
        available: usize,
    },
    /// The fabric model could not be built from what discovery found.
    #[error("topology: {0}")]
    Topology(String),
}
