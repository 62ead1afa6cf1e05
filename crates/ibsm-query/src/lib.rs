//! `ibsm-query`: the client side of InfiniBand management, for fabric tools.
//!
//! Monitoring tools, exporters and diagnostics need to ask a fabric questions without
//! being a Subnet Manager. This crate holds the asking, sans-IO like the rest of ibsm:
//! every client ([`sa::SaClient`], [`smp::SmpClient`], [`perf::PerfClient`],
//! [`perf::Scrape`], [`discover::Discovery`]) is an [`ibsm_transport::SansIo`] core,
//! run over any [`ibsm_transport::Transport`] (`ibsm-umad` on a real port, `ibsm-sim`
//! in tests) by [`ibsm_transport::drive`] or by a host's own loop:
//!
//! * [`discover`]: read-only discovery over directed routes (`ibnetdiscover`): every
//!   node, port (down ports kept) and cable, as an `ibsm_topology::Fabric`; its `Walk`
//!   holds the rules apart from the I/O, and is the SM engine's discovery too.
//! * [`sa`]: Subnet Administration queries (Get, GetTable, Set, Delete of any SA
//!   record: NodeRecord, PortInfoRecord, PathRecord, MCMemberRecord, ServiceRecord,
//!   ...) with RMPP reassembly, many queries in flight, retries, per-query errors.
//! * [`smp`]: typed SMP Get/Set of any attribute by LID or directed route
//!   (`smpquery`), many in flight, retries, per-query errors.
//! * [`perf`]: performance counters (`perfquery`, `ibqueryerrors`): typed PerfMgt
//!   Get/Set and resets, and `Scrape`, a whole-fabric read that follows each agent's
//!   ClassPortInfo (PortCountersExtended where supported, AllPortSelect sums first
//!   where allowed).
//! * [`counters`]: one port's counters as 64-bit values by name (`perfquery`'s and
//!   infiniband_exporter's), whichever attribute they came from, and their deltas.
//! * [`nodemap`]: node-name maps in the infiniband-diags format.
//!
//! # Example
//!
//! Reading a node-name map and naming a node as `ibnetdiscover --node-name-map` does:
//!
//! ```
//! use ibsm_query::nodemap::NodeNameMap;
//!
//! let map = NodeNameMap::parse("# rack 3\n0x0002c90300a1b2c3 \"leaf-3a\"\n")?;
//! assert_eq!(map.name_or(0x0002_c903_00a1_b2c3, b"MT4123 ConnectX6"), "leaf-3a");
//! assert_eq!(map.name_or(0x1234, b"node\x01 7\0junk"), "node  7");
//! # Ok::<(), ibsm_query::nodemap::NodeMapError>(())
//! ```
//!
//! Asking the SA for every NodeRecord over a transport:
//!
//! ```no_run
//! # fn demo<T: ibsm_transport::Transport>(port: &mut T) -> Result<(), ibsm_query::sa::QueryError> {
//! use ibsm_query::sa::{query_table, SaClientConfig};
//! use ibsm_wire::sa::{ComponentMask, NodeRecord};
//!
//! let nodes: Vec<NodeRecord> =
//!     query_table(port, SaClientConfig::new(1), &NodeRecord::default(), ComponentMask::NONE)?;
//! for n in &nodes {
//!     println!("LID {:#x} {:#018x}", n.lid, n.node_info.node_guid);
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

use std::ops::ControlFlow;

use ibsm_transport::{Instant, JobRunner, NoJob, SansIo, Stop, Transport, TransportError};

// For `sans_io_over_smps!`, which other crates expand.
#[doc(hidden)]
pub use ibsm_transport as __transport;

pub mod counters;
pub mod discover;
pub mod nodemap;
mod outcome;
pub mod perf;
pub mod sa;
pub mod smp;

/// Runs a client until it has nothing outstanding or the clock reaches `until`: its
/// events, in order. The one-call forms (`smp::query`, `sa::query_table`, `discover`)
/// are this over one client; call it yourself to run a client you built (a
/// [`perf::Scrape`], a [`discover::Discovery`] with your own settings) to the end.
///
/// # Errors
/// A fatal transport error.
pub fn run_to_idle<C, T>(
    core: &mut C,
    transport: &mut T,
    until: Instant,
) -> Result<Vec<C::Event>, TransportError>
where
    C: SansIo<Job = NoJob> + ?Sized,
    T: Transport + ?Sized,
{
    let mut events = Vec::new();
    ibsm_transport::drive(
        core,
        transport,
        &mut JobRunner::inline(),
        Stop::when_idle(until),
        |ev| {
            events.push(ev);
            ControlFlow::Continue(())
        },
    )?;
    Ok(events)
}
