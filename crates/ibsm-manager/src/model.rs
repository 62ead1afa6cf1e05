//! What a sweep found: nodes, their attributes, ports and cables, and how to reach
//! each of them with a directed route. The model is ibsm-query's
//! ([`ibsm_query::discover::Discovered`]): the engine's discovery is that crate's
//! [`Walk`](ibsm_query::discover::Walk), so the two cannot drift apart.

pub use ibsm_query::discover::{Discovered, FoundNode, FoundPort, ext_speeds_supported};

/// Index of a node in [`Discovered::nodes`].
pub type NodeIx = usize;
