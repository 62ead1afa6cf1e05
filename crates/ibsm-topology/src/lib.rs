//! `ibsm-topology`: one picture of an InfiniBand subnet.
//!
//! Discovery fills a [`Fabric`], the simulator runs it, routing engines read it and users
//! load and save it (ARCHITECTURE.md principle 3). This crate holds
//!
//! * the model: [`Fabric`] with [`Node`]s (GUID, type, description, port table),
//!   [`Port`]s (GUID, LID/LMC, state, width/speed) and [`Link`]s between (node, port)
//!   pairs, on a petgraph `StableGraph`, with O(1) port -> peer lookup, a GUID index and
//!   GUID-ordered (reproducible) iteration; mutations checked with typed
//!   [`FabricError`]s;
//! * queries: components, switch hop distances, [`DegreeStats`], and the [`Csr`]
//!   snapshot that routing engines iterate;
//! * generators ([`generate`]): fat trees (k-ary n-tree, XGFT, two levels with storage
//!   on the spines), mesh/torus, dragonfly,
//!   Jellyfish, and `degrade`;
//! * files ([`ibnet`]): the `ibnetdiscover` format and ibsim net files, read and written;
//!   Slurm's tree `topology.conf` ([`slurm`]), written; the comment and line rule of
//!   the small GUID-keyed files ([`lines`]);
//! * the comparison with a reference topology ([`diff`]): missing, extra and miswired
//!   cables, missing and unexpected nodes, links below plan;
//! * pictures ([`dot`]): Graphviz export with per-link weights.
//!
//! # Example
//!
//! ```
//! use ibsm_topology::{generate, Csr, Fabric, NodeSpec, NodeKind};
//!
//! // The radix-36 two-level fat tree: 18 spines, 36 leaves, 648 CAs.
//! let fabric = generate::fat_tree(36, 2)?;
//! assert_eq!(fabric.switch_count(), 54);
//! assert_eq!(fabric.cas().count(), 648);
//! assert!(fabric.is_connected());
//!
//! // Build one by hand: two switches with two parallel cables, one CA.
//! let mut f = Fabric::new();
//! let s1 = f.add_node(NodeSpec::switch(0x10, 8, "sw1"))?;
//! let s2 = f.add_node(NodeSpec::switch(0x20, 8, "sw2"))?;
//! let h = f.add_node(NodeSpec::ca(0x30, 1, "host"))?;
//! f.connect(s1, 1, s2, 1)?;
//! f.connect(s1, 2, s2, 2)?;
//! f.connect(h, 1, s1, 8)?;
//! assert_eq!(f.neighbour(s1, 8), Some(h));
//! assert!(f.connect(s1, 9, s2, 3).is_err()); // port out of range
//! let csr = Csr::new(&f);
//! assert_eq!(csr.terminal_count(), 1);
//! # Ok::<(), ibsm_topology::FabricError>(())
//! ```
#![forbid(unsafe_code)]

mod algo;
pub mod csr;
pub mod diff;
pub mod dot;
mod error;
mod fabric;
pub mod generate;
pub mod ibnet;
pub mod lines;
#[cfg(feature = "serde")]
mod serde_impl;
pub mod slurm;
pub mod svg;
mod types;

pub use algo::{DegreeStats, Summary};
pub use csr::{Csr, Target};
pub use error::{FabricError, ParseError, ParseErrorKind};
pub use fabric::{Fabric, Link, MAX_PORTS, Node, NodeSpec, Port};
pub use types::{
    ActiveSpeed, ActiveWidth, Endpoint, Guid, LinkId, LinkState, NodeId, NodeKind, PortNum,
};
