//! `ibsm-routing`: InfiniBand routing engines, validators and quality metrics.
//!
//! A routing engine is a pure function ([`RoutingEngine::route`]) from a fabric snapshot
//! ([`ibsm_topology::Csr`]) and its LIDs ([`LidAssignment`]) to [`Routes`]: one dense LFT
//! per switch and, for engines that need virtual lanes, the SL of every (source switch,
//! destination LID) pair plus SL-to-VL tables. Validators ([`check_reachability`],
//! [`check_deadlock_free`]) and metrics ([`metrics`]) work on any `Routes`, whoever made
//! them.
//!
//! Engines: `minhop`, `updn`/`dnup`, `ftree`, `dor`, `lash`, `dfsssp` ([`EngineKind`]).
//! They never fall back silently: [`EngineList`] (OpenSM's `routing_engine ftree,updn`,
//! minhop last unless `no_fallback`) or [`route_with_fallback`] (any engine, an explicit
//! chain) runs the chain and the result names the engine that produced it.
//!
//! # How the destination-based engines stay fast
//! One BFS per destination *switch* (CAs on a leaf share it), one walk per LID, no
//! switches x LIDs x ports hop matrix. At each switch the next hop is chosen among the
//! legal shortest ones by accumulated traffic flow, farthest switches first, which on a
//! full fat tree reproduces d-mod-k and gives perfectly even all-to-all link load.
//! With [`RouteOptions::threads`] = n > 1, n - 1 more threads plan destinations ahead (the
//! load-independent BFS part; switch LIDs of up/down rules too, their count-balanced
//! choice left to the placement) while the calling thread places them in a fixed order
//! and plans whenever it would wait, so the tables are identical whatever the thread
//! count, and 2 threads route a large fat tree in little more than half the time.
//!
//! # Example
//! ```
//! use ibsm_routing::{EngineKind, LidAssignment, RouteOptions, check_deadlock_free, check_reachability};
//! use ibsm_topology::{Csr, generate};
//!
//! let fabric = generate::k_ary_n_tree(4, 3).unwrap(); // 48 switches, 64 CAs
//! let csr = Csr::new(&fabric);
//! let lids = LidAssignment::sequential(&csr, 0).unwrap();
//! let routes = EngineKind::FatTree.engine().route(&csr, &lids, &RouteOptions::default()).unwrap();
//! assert_eq!(routes.engine(), "ftree");
//! assert!(check_reachability(&csr, &lids, &routes).unwrap().is_ok());
//! assert!(check_deadlock_free(&csr, &lids, &routes).unwrap().is_ok());
//! let q = ibsm_routing::metrics::all_to_all(&csr, &lids, &routes).unwrap();
//! assert!(q.imbalance() < 1.15);
//! ```
#![forbid(unsafe_code)]

mod balance;
mod dor;
mod engine;
mod error;
mod ftree;
mod guid_file;
mod inputs;
mod layered;
mod lids;
mod list;
pub mod metrics;
mod minhop;
mod net;
mod opensm;
mod reroute;
mod reverse;
mod routes;
mod updn;
mod validate;

#[cfg(test)]
mod tests;

pub use dor::Dor;
pub use engine::{Coordinates, EngineKind, RouteOptions, RoutingEngine, route_with_fallback};
pub use error::{Result, RoutingError};
pub use ftree::FatTree;
pub use guid_file::{GuidFileError, ReadGuidFileError, parse_guid_file, read_guid_file};
pub use layered::{Dfsssp, Lash};
pub use lids::{LidAssignment, MAX_UNICAST_LID};
pub use list::{EngineList, EngineListError, Routed};
pub use minhop::MinHop;
pub use opensm::{DumpError, read_opensm_lfts};
pub use routes::{NO_ROUTE, Routes};
pub use updn::UpDn;
pub use validate::{
    CdgStats, Channel, ReachStats, RouteDefect, check_deadlock_free, check_deadlock_free_with,
    check_reachability,
};
