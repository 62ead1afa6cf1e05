//! The crate's error type.

/// Why an engine could not produce routes. Engines never fall back silently: a fallback
/// chain is an explicit [`RouteOptions::fallback`](crate::RouteOptions::fallback) and every failure
/// along it is reported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoutingError {
    /// The snapshot or LID assignment is inconsistent (which item, and why).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The fat-tree engine found a structure that is not a fat tree (and why).
    #[error("not a fat tree: {0}")]
    NotAFatTree(String),
    /// Deadlock freedom needs more virtual lanes than the options allow.
    #[error("needs {needed} virtual lanes, only {available} available")]
    NotEnoughVls {
        /// Lanes the engine would need (a lower bound when it gave up early).
        needed: u8,
        /// [`RouteOptions::max_vls`](crate::RouteOptions::max_vls).
        available: u8,
    },
    /// A destination cannot be reached from a switch (under the engine's restrictions).
    #[error("switch #{switch} cannot reach LID {lid}{why}")]
    Disconnected {
        /// Index of the switch in the snapshot's switch order.
        switch: usize,
        /// The destination LID.
        lid: u16,
        /// Extra context (e.g. "with up/down paths").
        why: String,
    },
    /// The dimension-order engine found no usable coordinates.
    #[error("no mesh/torus coordinates: {0}")]
    NoCoordinates(String),
    /// Every engine of a fallback chain failed; each failure in order.
    #[error("every engine failed: {}", .0.iter().map(|(e, r)| format!("{e}: {r}")).collect::<Vec<_>>().join("; "))]
    AllFailed(Vec<(String, RoutingError)>),
}

/// Result alias for the crate.
pub type Result<T, E = RoutingError> = core::result::Result<T, E>;
