//! The engine's error type.

use ibsm_transport::TransportError;

use crate::config::SmConfigError;
use crate::partition::PartitionLoadError;
use crate::store::StoreError;

/// What can stop the SM engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SmError {
    /// The transport failed for good.
    #[error("transport: {0}")]
    Transport(#[from] TransportError),
    /// The configuration was refused ([`SmConfig::validate`](crate::SmConfig::validate)).
    #[error("configuration: {0}")]
    Config(#[from] SmConfigError),
    /// The election refused its configuration. What
    /// [`SmConfig::validate`](crate::SmConfig::validate) checks never gets here; this is
    /// the local port the transport reported (a port GUID of 0).
    #[error("election: {0}")]
    Election(#[from] ibsm_election::ElectionConfigError),
    /// The LID store could not be read or written (names the file, and the line and
    /// token of a parse error).
    #[error("LID store: {0}")]
    Store(#[from] StoreError),
    /// The isolation file ([`crate::isolation`]) could not be read (names the file,
    /// and the line and field of a parse error).
    #[error("isolation file: {0}")]
    Isolation(#[from] crate::isolation::IsolationError),
    /// A partition file could not be read or parsed.
    #[error("partitions: {0}")]
    Partitions(#[from] PartitionLoadError),
    /// Routing failed and no fallback was allowed to take over.
    #[error("routing: {0}")]
    Routing(#[from] ibsm_routing::RoutingError),
    /// The LID space is exhausted: the ports need more LIDs (2^LMC per end port, one
    /// per switch) than the subnet can address. Found before anything is written, so a
    /// configuration that cannot work fails on its first heavy sweep.
    #[error("LID space exhausted: {needed} LIDs needed, {bound} holds {available}")]
    LidsExhausted {
        /// LIDs the fabric needs.
        needed: usize,
        /// LIDs available below the bound.
        available: usize,
        /// What bounds them.
        bound: crate::lids::LidBound,
    },
    /// The fabric model could not be built from what discovery found (a broken SMA
    /// reporting a port above its NumPorts, a GUID twice, ...).
    #[error("topology: {0}")]
    Topology(#[from] ibsm_topology::FabricError),
}

/// An [`SmError`] an event carries: cheap to clone (events are `Clone`), the error
/// itself behind [`std::ops::Deref`] and [`std::error::Error::source`]. Two are equal
/// when they say the same (errors with I/O inside have no equality of their own).
#[derive(Debug, Clone)]
pub struct SharedError(std::sync::Arc<SmError>);

impl SharedError {
    /// The error.
    #[must_use]
    pub fn get(&self) -> &SmError {
        &self.0
    }
}

impl From<SmError> for SharedError {
    fn from(e: SmError) -> Self {
        Self(std::sync::Arc::new(e))
    }
}

impl std::ops::Deref for SharedError {
    type Target = SmError;
    fn deref(&self) -> &SmError {
        &self.0
    }
}

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

impl PartialEq for SharedError {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.to_string() == other.to_string()
    }
}
