//! `ibsm`: build InfiniBand Subnet Managers in Rust.
//!
//! This facade re-exports the workspace's crates under short names and adds a
//! [`prelude`] and [`Sm`], the SM engine paired with a transport, built with
//! [`Sm::builder`]:
//!
//! | module | crate | what |
//! | --- | --- | --- |
//! | [`wire`] | `ibsm-wire` | MAD/SMP/SA encoding and decoding |
//! | [`transport`] | `ibsm-transport` | the transport trait, addresses, transactions |
//! | [`topology`] | `ibsm-topology` | the fabric model, file formats, generators |
//! | [`routing`] | `ibsm-routing` | routing engines, validators, metrics |
//! | [`election`] | `ibsm-election` | the SM election (SMInfo state machine) |
//! | [`sa`] | `ibsm-sa` | the Subnet Administrator |
//! | [`query`] | `ibsm-query` | the client side for tools: SA queries, node-name maps |
//! | [`manager`] | `ibsm-manager` | the SM engine |
//! | [`sim`] | `ibsm-sim` (feature `sim`) | a simulated fabric |
//! | [`sma`] | `ibsm-sma` (feature `sim`) | the Subnet Management Agent |
//! | [`umad`] | `ibsm-umad` (feature `umad`) | Linux umad devices |
//!
//! Every name means one type: [`SubnetManager`] is the engine itself
//! (`ibsm_manager::SubnetManager`), [`Sm`] the engine with its transport, [`SmBuilder`]
//! what [`Sm::builder`] returns.
//!
//! # The run loop
//!
//! The engine is sans-IO ([`transport::SansIo`]); [`Sm`] owns it together with a
//! transport and a [`transport::JobRunner`], and runs it with [`transport::drive`], the
//! one loop "send what is due, wait for a MAD or the next deadline, feed it back":
//!
//! ```
//! use ibsm::prelude::*;
//!
//! let fabric = topology::generate::k_ary_n_tree(4, 2)?;
//! let mut sim: sim::Sim<sim::SmaAgent> = sim::Sim::from_fabric(&fabric, sim::SimConfig::default())?;
//! let (_, ca) = fabric.cas().next().expect("a CA");
//! let port = sim.attach_sm(sim.node_by_guid(ca.guid().0).expect("in sim"), 1)?;
//! let mut sm = Sm::builder()
//!     .transport(port)
//!     .routing(routing::EngineKind::UpDn)
//!     .lmc(1)
//!     .build()?;
//! let stats = sm.run_until_up(Instant::from_secs(60))?.expect("subnet up");
//! assert_eq!(stats.switches, 8);
//! assert!(sim.verify().is_clean());
//! let engine: &SubnetManager = sm.engine();
//! assert!(engine.is_up());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub use ibsm_election as election;
pub use ibsm_manager as manager;
pub use ibsm_query as query;
pub use ibsm_routing as routing;
pub use ibsm_sa as sa;
#[cfg(feature = "sim")]
pub use ibsm_sim as sim;
#[cfg(feature = "sim")]
pub use ibsm_sma as sma;
pub use ibsm_topology as topology;
pub use ibsm_transport as transport;
#[cfg(feature = "umad")]
pub use ibsm_umad as umad;
pub use ibsm_wire as wire;

/// The SM engine (the same type as [`manager::SubnetManager`]); [`Sm`] pairs it with
/// a transport.
pub use ibsm_manager::SubnetManager;

use ibsm_manager::{MKeyMode, SmConfig, SmError, SmEvent, SweepStats};
use ibsm_routing::EngineKind;
use ibsm_transport::{Instant, JobPolicy, JobRunner, SansIo, Transport};

/// The names most programs need.
pub mod prelude {
    pub use crate::{Sm, SmBuilder, SubnetManager};
    pub use crate::{election, manager, routing, sa, topology, transport, wire};
    #[cfg(feature = "sim")]
    pub use crate::{sim, sma};
    pub use ibsm_manager::{MKeyMode, SmConfig, SmError, SmEvent, SweepStats};
    pub use ibsm_transport::{Instant, Transport};
    pub use ibsm_transport::{JobPolicy, JobRunner, SansIo, Stop, Stopped, drive};
}

/// Collects the configuration and the transport of an [`Sm`]; [`Sm::builder`] makes
/// one with OpenSM-like defaults.
#[derive(Debug)]
pub struct SmBuilder<T> {
    transport: T,
    cfg: SmConfig,
    jobs: JobPolicy,
}

impl<T> SmBuilder<T> {
    /// The transport to run on (a simulator port, a umad device, ...).
    pub fn transport<U: Transport>(self, transport: U) -> SmBuilder<U> {
        SmBuilder {
            transport,
            cfg: self.cfg,
            jobs: self.jobs,
        }
    }

    /// Where the engine's long computations (a heavy sweep's routing, its SA snapshot)
    /// run. [`JobPolicy::Inline`] (the default): on the loop's thread, so a run is a
    /// pure function of what the transport delivers, and the SM answers nothing while
    /// one runs (a few hundred milliseconds on a 10,000-node fabric): right for the
    /// simulator, whose virtual time would run on while a worker computes.
    /// [`JobPolicy::Threads`]: on worker threads, the engine handing them out
    /// ([`SubnetManager::set_job_offload`]) and queueing its Sets in slices, so SMInfo
    /// polls, SA queries and traps are answered throughout: right for a real port.
    #[must_use]
    pub fn jobs(mut self, policy: JobPolicy) -> Self {
        self.jobs = policy;
        self
    }

    /// Replaces the whole configuration.
    #[must_use]
    pub fn config(mut self, cfg: SmConfig) -> Self {
        self.cfg = cfg;
        self
    }

    /// Routing engine (OpenSM `routing_engine`).
    #[must_use]
    pub fn routing(mut self, engine: EngineKind) -> Self {
        self.cfg.routing = engine.into();
        self
    }

    /// Whether a sweep that finds only lost cables or nodes repairs the routes in force
    /// instead of recomputing them (default on; see [`SmConfig::reroute_on_loss`]).
    #[must_use]
    pub fn reroute_on_loss(mut self, on: bool) -> Self {
        self.cfg.reroute_on_loss = on;
        self
    }

    /// LID mask control (OpenSM `lmc`).
    #[must_use]
    pub fn lmc(mut self, lmc: u8) -> Self {
        self.cfg.lmc = lmc;
        self
    }

    /// M_Key policy, protect bits and lease in seconds (OpenSM `m_key`,
    /// `m_key_protection_level`, `m_key_lease_period`).
    #[must_use]
    pub fn mkey(mut self, mode: MKeyMode, protect: u8, lease_secs: u16) -> Self {
        self.cfg.m_key = mode;
        self.cfg.m_key_protect = protect;
        self.cfg.m_key_lease = lease_secs;
        self
    }

    /// SM priority (OpenSM `sm_priority`).
    #[must_use]
    pub fn priority(mut self, priority: u8) -> Self {
        self.cfg.priority = priority;
        self
    }

    /// Serve Subnet Administration (class 0x03) with the SM, tables sent as `rmpp`
    /// says (`Kernel` for a umad port opened with an SA agent, `Segments` for the
    /// simulator).
    #[must_use]
    pub fn subnet_administrator(mut self, rmpp: ibsm_manager::sa::RmppMode) -> Self {
        self.cfg.sa = true;
        self.cfg.sa_rmpp = rmpp;
        self
    }

    /// Program every port's P_Key table (and switch enforcement) from a partition
    /// policy, e.g. an OpenSM `partitions.conf` read with
    /// [`PartitionConfig::parse`](ibsm_manager::partition::PartitionConfig::parse).
    #[must_use]
    pub fn partitions(mut self, policy: ibsm_manager::partition::PartitionConfig) -> Self {
        self.cfg.partitions = Some(policy);
        self
    }
}

impl<T: Transport> SmBuilder<T> {
    /// Builds the SM and starts its first sweep.
    ///
    /// # Errors
    /// What [`SubnetManager::new`] refuses ([`SmError::Config`] for a configuration
    /// [`SmConfig::validate`] refuses), or the first sweep's failure.
    pub fn build(self) -> Result<Sm<T>, SmError> {
        let mut engine = SubnetManager::new(self.cfg, self.transport.local_port())?;
        engine.set_job_offload(self.jobs != JobPolicy::Inline);
        engine.start(self.transport.now())?;
        Ok(Sm {
            engine,
            transport: self.transport,
            jobs: JobRunner::new(self.jobs),
        })
    }
}

/// An SM engine with its transport and the runner of its jobs ([`SmBuilder::jobs`]).
#[derive(Debug)]
pub struct Sm<T> {
    engine: SubnetManager,
    transport: T,
    jobs: JobRunner<<SubnetManager as SansIo>::Job>,
}

impl Sm<()> {
    /// A builder with OpenSM-like defaults and no transport yet: the one way to make
    /// an [`Sm`].
    #[must_use]
    pub fn builder() -> SmBuilder<()> {
        SmBuilder {
            transport: (),
            cfg: SmConfig::default(),
            jobs: JobPolicy::Inline,
        }
    }
}

impl<T: Transport> Sm<T> {
    /// The engine (for inspection: subnet, LIDs, routes).
    pub fn engine(&self) -> &SubnetManager {
        &self.engine
    }

    /// The transport.
    pub fn transport(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Runs until the subnet is up (returns that sweep's statistics) or the transport's
    /// clock reaches `until` (returns `None`).
    ///
    /// # Errors
    /// A fatal transport error.
    pub fn run_until_up(&mut self, until: Instant) -> Result<Option<SweepStats>, SmError> {
        let mut stats = None;
        self.run(until, |ev| {
            if let SmEvent::SubnetUp { stats: s } = ev {
                stats = Some(s.clone());
                true
            } else {
                false
            }
        })?;
        Ok(stats)
    }

    /// Runs until `until`, handing every event to `on_event`; stops early when it
    /// returns `true`.
    ///
    /// # Errors
    /// A fatal transport error.
    pub fn run(
        &mut self,
        until: Instant,
        on_event: impl FnMut(&SmEvent) -> bool,
    ) -> Result<(), SmError> {
        ibsm_manager::driver::run_with(
            &mut self.engine,
            &mut self.transport,
            &mut self.jobs,
            until,
            on_event,
        )
    }
}
