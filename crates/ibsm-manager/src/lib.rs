//! `ibsm-manager`: the Subnet Manager engine.
//!
//! It brings an InfiniBand subnet up and keeps it up: a heavy sweep discovers every node
//! with directed-route SMPs (many in flight, in a window that adapts to how the fabric
//! answers), assigns LIDs (LMC-aligned, keeping every LID a port already had, persisted
//! in OpenSM's `guid2lid` format), computes routes with an `ibsm-routing` engine, writes
//! SwitchInfo and only the LFT blocks that changed, configures every port (LID, SM
//! address, subnet prefix, per-link MTU and VLs, M_Keys), then walks the links Init ->
//! Armed -> Active. Light sweeps and traps trigger the next heavy sweep; a trap 128 from
//! a switch the sweep has already read first costs one SwitchInfo Get (discovery clears
//! each switch's PortStateChange latch before reading its ports, so a set latch is a
//! change no sweep has seen), which saves the second heavy sweep of a cut cable. When a
//! heavy sweep finds that the fabric only lost cables or nodes since the routes were
//! computed, it repairs them (`RoutingEngine::reroute`: only destinations whose routes used a dead
//! port move) instead of recomputing the whole fabric; any growth recomputes and
//! rebalances ([`SmConfig::reroute_on_loss`]). Repaired tables stay until such growth or
//! an explicit [`SubnetManager::request_rebalance`] (ibsmd: SIGHUP), or until the fabric
//! has been quiet for [`SmConfig::rebalance_after`]. An SM that sends this one an SMInfo
//! request without being known is asked for its SMInfo at once
//! ([`SubnetManager::known_sms`]), not at the next heavy sweep.
//!
//! With a partition policy ([`SmConfig::partitions`], OpenSM's `partitions.conf` syntax,
//! see [`partition`]) the heavy sweep also programs every CA, router and switch port 0
//! P_Key table from it, writing only the 32-entry blocks that differ, and has switch
//! ports cabled to end ports enforce their peer's partitions; the SA then answers
//! PathRecords only between ports that share a partition.
//!
//! The core, [`SubnetManager`], is sans-IO: it never reads a clock or touches a device.
//! Feed it what arrives and the time; take what it wants sent, its next deadline and
//! its events. It implements `ibsm_transport::SansIo`, so `ibsm_transport::drive` runs
//! it over any `ibsm_transport::Transport`; [`driver::run`] is that in one call:
//!
//! ```
//! use ibsm_manager::{SmConfig, SmEvent, SubnetManager, driver};
//! use ibsm_sim::{Sim, SimConfig, SmaAgent};
//! use ibsm_topology::generate;
//! use ibsm_transport::{Instant, Transport};
//!
//! // A small fat tree in the simulator, with our SM on the first CA.
//! let fabric = generate::k_ary_n_tree(4, 2)?;
//! let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default())?;
//! let (_, ca) = fabric.cas().next().expect("a CA");
//! let mut port = sim.attach_sm(sim.node_by_guid(ca.guid().0).expect("in sim"), 1)?;
//! let mut sm = SubnetManager::new(SmConfig::default(), port.local_port())?;
//! sm.start(port.now())?;
//! let mut up = false;
//! driver::run(&mut sm, &mut port, Instant::from_secs(60), |ev| {
//!     up = matches!(ev, SmEvent::SubnetUp { .. });
//!     up
//! })?;
//! assert!(up);
//! assert!(sim.verify().is_clean());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod config;
pub mod driver;
pub mod dump;
mod engine;
mod error;
mod event;
pub mod health;
pub mod isolation;
pub mod lids;
pub mod mkey;
pub mod model;
pub mod partition;
pub mod perfmgr;
pub mod persist;
mod reroute;
mod sansio;
pub mod store;
pub mod topo_ref;

pub use config::{ConfigField, MKeyMode, RoutingInputs, SmConfig, SmConfigError};
pub use engine::{Outgoing, SmJob, SmJobOutput, SubnetManager};
pub use error::{SharedError, SmError};
pub use event::{Missing, Phase, Role, SmEvent, SweepFailure, SweepStats};
/// The Subnet Administrator the engine can run (`SmConfig::sa`).
pub use ibsm_sa as sa;
pub use store::{FileLidStore, LidStore, MemoryLidStore, StoreError};
