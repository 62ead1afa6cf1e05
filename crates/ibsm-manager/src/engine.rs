//! The sans-IO SM core: sweeps as a state machine over transactions.
//!
//! Inputs are received MADs and the time; outputs are MADs to send, the next deadline
//! and events. See the crate docs for the run loop.
//!
//! This file holds only the public surface and the engine's fields, each a sub-state
//! owned by one module (the layout of quinn-proto's `connection/`). The logic lives on
//! the sub-states, as methods taking what else they touch as arguments (the model as
//! `&Discovered`, `&mut SmpQueue`, `&mut Outbox`, the config, `now`); `SubnetManager`'s
//! own methods coordinate: they call the sub-states in order and pass them the pieces.
//!
//! | module | owns | does |
//! |---|---|---|
//! | [`ops`] | [`ops::SmpQueue`] | the operation table (per SMP: attribute, method, target, what its answer and its failure do), the adaptive window, dispatch, counters |
//! | [`sweep`] | [`sweep::Sweep`] | `Idle` / `Heavy` (discover, elect, program, activate) / `Light`, each stage's data inside it |
//! | [`discovery`] | [`discovery::Discovery`]: the [`Discovered`] model, the walk, [`discovery::Latches`] (a heavy sweep's, inside it; the last one's, as `last`) | NodeInfo / SwitchInfo / PortInfo / P_KeyTable answers, the PortStateChange latches |
//! | [`keys`] | [`keys::Keys`] | which M_Key each SMP carries, foreign keys learnt, locked ports |
//! | [`assign`] | [`assign::Lids`] | LID assignment and its persistence |
//! | [`health`] | [`health::HealthState`] | port health: flaps, traps and silence fed to [`crate::health`], unhealthy links routed around, babbling links disabled |
//! | [`resweep`] | [`resweep::Resweeps`] | what a heavy sweep lost; an incomplete sweep re-sweeps at once instead of SUBNET UP |
//! | [`routing`] | [`routing::RouteState`] | routes computed or repaired, the rebalance policy |
//! | [`switches`] | [`switches::Mirror`] | SwitchInfo, LFT blocks, SL2VL and VLArb Sets |
//! | [`ports`] | the stage's port plan | the PortInfo every port should hold, arming, activation |
//! | [`program`] | [`program::Programming`] | the Program stage's Sets queued a slice at a time (when jobs are offloaded), then the routes in force |
//! | [`partitions`] | [`partitions::Partitions`] | P_Key tables and enforcement from the policy |
//! | [`traps`] | | traps: TrapRepress, the latch check, which traps sweep |
//! | [`smi`] | [`smi::Smi`] | the election: SMInfo requests and answers, role changes |
//! | [`admin`] | [`admin::Admin`] | the Subnet Administrator: snapshot, requests, Reports, MFTs |
//! | [`runtime`] | | settings changed while running (priority, SMP window floor) |
//! | [`timers`] | [`timers::Timers`] | every deadline, so [`SubnetManager::poll_timeout`] reads them |
//! | [`perfmgr`] | [`perfmgr::PerfMgr`] | the PerfMgr's counter sweeps (PerfMgt MADs after SUBNET UP), their events |
//! | [`jobs`] | [`jobs::Jobs`] | long computations (routing) as jobs the host may run on other threads, their outputs applied by [`SubnetManager::handle_job`] |

use std::collections::{BTreeMap, VecDeque};

use ibsm_routing::Routes;
use ibsm_topology::Fabric;
use ibsm_transport::{Incoming, Instant, LocalPort, SansIo, TransportError, TxId};

use crate::config::SmConfig;
use crate::error::SmError;
use crate::event::{Role, SmEvent};
use crate::model::Discovered;
use crate::store::{LidStore, MemoryLidStore};

mod admin;
mod assign;
mod discovery;
mod health;
mod jobs;
mod keys;
mod ops;
mod partitions;
mod perfmgr;
mod ports;
mod program;
mod publish;
mod resweep;
mod routing;
mod runtime;
mod smi;
mod sweep;
mod switches;
mod timers;
mod topo_ref;
mod traps;

#[cfg(test)]
mod tests;

pub use jobs::{SmJob, SmJobOutput};
use timers::Timer;

/// A MAD to hand to the transport: the one type every sans-IO core returns.
pub use ibsm_transport::Outgoing;

/// What the engine has for its host: MADs that bypass the transaction layer (answers,
/// TrapRepress, the election's SMInfo) and events.
#[derive(Debug, Default)]
struct Outbox {
    mads: VecDeque<Outgoing>,
    events: VecDeque<SmEvent>,
}

impl Outbox {
    /// An event for the host.
    fn event(&mut self, ev: SmEvent) {
        self.events.push_back(ev);
    }
}

/// The SM engine. Sans-IO: it never reads a clock, sleeps or touches a device.
pub struct SubnetManager {
    cfg: SmConfig,
    local: LocalPort,
    /// SMPs queued, in flight, counted.
    smps: ops::SmpQueue,
    /// The sweep running (its data lives and dies with it).
    sweep: sweep::Sweep,
    /// What the last heavy sweep found (its model, walk and latches), as it stood when
    /// that sweep ended: what [`Self::subnet`] shows. A heavy sweep builds its own
    /// inside [`sweep::Sweep::Heavy`] and hands it over when it ends.
    last: discovery::Discovery,
    keys: keys::Keys,
    lids: assign::Lids,
    /// Incomplete heavy sweeps in a row (re-sweeps, `resweep.rs`).
    resweeps: resweep::Resweeps,
    routing: routing::RouteState,
    /// Port health (`health.rs`).
    health: health::HealthState,
    /// The reference topology's last report (`topo_ref.rs`).
    topo_ref: topo_ref::TopoRefState,
    mirror: switches::Mirror,
    partitions: partitions::Partitions,
    smi: smi::Smi,
    admin: admin::Admin,
    timers: timers::Timers,
    /// The PerfMgr's counter sweeps (`SmConfig::perfmgr`).
    perf: perfmgr::PerfMgr,
    /// Long computations, run here or by the host (`jobs.rs`).
    jobs: jobs::Jobs,
    out: Outbox,
}

impl std::fmt::Debug for SubnetManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubnetManager")
            .field("election", &self.smi.election.state())
            .field("phase", &self.sweep.phase())
            .field("nodes", &self.sweep.found(&self.last).subnet.nodes.len())
            .field("role", &self.smi.role)
            .finish_non_exhaustive()
    }
}

impl SubnetManager {
    /// An engine for the SM on `local`, with an in-memory LID store.
    ///
    /// # Errors
    /// As [`Self::with_store`].
    pub fn new(cfg: SmConfig, local: LocalPort) -> Result<Self, SmError> {
        Self::with_store(cfg, local, Box::new(MemoryLidStore::default()))
    }

    /// An engine with a persistent LID store (e.g. [`crate::FileLidStore`]).
    ///
    /// # Errors
    /// [`SmError::Config`] when [`SmConfig::validate`] refuses `cfg`;
    /// [`SmError::Election`] when the election refuses the local port (port GUID 0).
    pub fn with_store(
        cfg: SmConfig,
        local: LocalPort,
        store: Box<dyn LidStore + Send>,
    ) -> Result<Self, SmError> {
        cfg.validate()?;
        let smi = smi::Smi::new(&cfg, &local)?;
        let smps = ops::SmpQueue::new(&cfg);
        let admin = admin::Admin::new(&cfg);
        Ok(Self {
            smps,
            sweep: sweep::Sweep::default(),
            last: discovery::Discovery::default(),
            keys: keys::Keys::default(),
            lids: assign::Lids::new(store, local.lid),
            resweeps: resweep::Resweeps::default(),
            routing: routing::RouteState::default(),
            health: health::HealthState::new(cfg.health),
            topo_ref: topo_ref::TopoRefState::default(),
            mirror: switches::Mirror::default(),
            partitions: partitions::Partitions::default(),
            smi,
            admin,
            timers: timers::Timers::default(),
            perf: perfmgr::PerfMgr::default(),
            jobs: jobs::Jobs::default(),
            out: Outbox::default(),
            cfg,
            local,
        })
    }

    /// The SM's role (the election's state).
    #[must_use]
    pub fn role(&self) -> Role {
        self.smi.role
    }

    /// The SMInfo this SM shows; copy it into the SM port's SMA where the host has one.
    #[must_use]
    pub fn sm_info(&self) -> ibsm_wire::SmInfo {
        self.smi.election.sm_info()
    }

    /// The other SMs the election knows, each as it last answered (see
    /// [`ibsm_election::Election::known_sms`]): those the sweeps probed and those that
    /// sent this SM an SMInfo request since.
    pub fn known_sms(&self) -> impl Iterator<Item = ibsm_election::KnownSm> + '_ {
        self.smi.election.known_sms()
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SmConfig {
        &self.cfg
    }

    /// What the last heavy sweep found, as it stood when that sweep ended. A heavy
    /// sweep in progress works on a model of its own (half built while it discovers,
    /// not yet configured while it programs); this stays the one before it until the
    /// sweep ends, so a status or a metric read during a sweep neither drops to
    /// nothing nor shows what is not in force yet. Empty until the first heavy sweep
    /// ends.
    #[must_use]
    pub fn subnet(&self) -> &Discovered {
        &self.last.subnet
    }

    /// The fabric model of the last configured sweep (shared `ibsm-topology` type).
    #[must_use]
    pub fn fabric(&self) -> Option<&Fabric> {
        self.routing.fabric.as_ref()
    }

    /// The routes in force.
    #[must_use]
    pub fn routes(&self) -> Option<&Routes> {
        self.routing.routes.as_deref()
    }

    /// The LFT this SM last wrote to the switch with node GUID `guid`, indexed by LID
    /// (up to the highest LID in use; 0xFF: no route); `None` for
    /// a switch it has not programmed (locked, or not seen by a configuring sweep).
    /// What OpenSM's `opensm-lfts.dump` shows ([`crate::dump`]).
    #[must_use]
    pub fn programmed_lft(&self, guid: u64) -> Option<&[u8]> {
        self.mirror
            .lft
            .get(&guid)
            .map(switches::WrittenLft::entries)
    }

    /// The SL -> VL maps this SM wrote to the output ports of the switch with node GUID
    /// `guid`, sorted by port (empty when the routing engine uses one VL).
    #[must_use]
    pub fn programmed_sl2vl(&self, guid: u64) -> Vec<(u8, [u8; 16])> {
        let mut maps: Vec<(u8, [u8; 16])> = self
            .mirror
            .sl2vl
            .iter()
            .filter(|((g, _), _)| *g == guid)
            .map(|(&(_, port), &vls)| (port, vls))
            .collect();
        maps.sort_unstable();
        maps
    }

    /// Port GUID -> (base LID, LMC) in force.
    #[must_use]
    pub fn lids(&self) -> &BTreeMap<u64, (u16, u8)> {
        &self.lids.assigned
    }

    /// The SM's own LID (0 until assigned).
    #[must_use]
    pub fn sm_lid(&self) -> u16 {
        self.lids.sm_lid
    }

    /// The port health policy ([`crate::health`]): its thresholds and every unhealthy
    /// port with why and since when ([`Health::unhealthy`](crate::health::Health::unhealthy)).
    #[must_use]
    pub fn health(&self) -> &crate::health::Health {
        &self.health.policy
    }

    /// Whether the subnet has been brought up at least once.
    #[must_use]
    pub fn is_up(&self) -> bool {
        self.routing.up_once
    }

    /// Whether a sweep is in progress.
    #[must_use]
    pub fn is_sweeping(&self) -> bool {
        !self.sweep.is_idle()
    }

    /// SMPs this SM has handed out since it was created: sweep and trap-check requests
    /// with their retries, election SMInfo, TrapRepress and answers to SMInfo requests
    /// (not the SA's MADs, which are not SMPs). Unlike [`SweepStats::smps`] it also
    /// counts what is sent between sweeps.
    ///
    /// [`SweepStats::smps`]: crate::SweepStats::smps
    #[must_use]
    pub fn smps_sent(&self) -> u64 {
        self.smps.sent()
    }

    /// Starts (or restarts) the SM: loads the LID store and the isolated ports
    /// ([`Self::set_isolation_store`]) and begins a heavy sweep.
    ///
    /// # Errors
    /// [`SmError::Store`] when the LID store cannot be read; [`SmError::Isolation`]
    /// when the isolation store cannot be read.
    pub fn start(&mut self, now: Instant) -> Result<(), SmError> {
        self.lids.load()?;
        self.load_isolations(now, false)?;
        self.begin_heavy(now);
        self.drain_election(now);
        self.refresh_timers();
        Ok(())
    }

    /// Asks for a heavy sweep as soon as the current one ends (e.g. after a trap).
    pub fn request_heavy_sweep(&mut self, now: Instant) {
        self.heavy_sweep_wanted(now);
        self.refresh_timers();
    }

    /// Starts a light sweep now, as the periodic timer would (heavy if one was asked for
    /// meanwhile), unless a sweep is running or this SM does not sweep (Standby, Not
    /// Active). Returns whether a sweep started.
    pub fn request_light_sweep(&mut self, now: Instant) -> bool {
        let sweeps = matches!(self.smi.role, Role::Master | Role::Discovering);
        if !sweeps || !self.sweep.is_idle() {
            return false;
        }
        self.periodic_sweep(now);
        self.process(now);
        self.refresh_timers();
        true
    }

    /// Asks for a heavy sweep that recomputes every route from scratch even if the fabric
    /// only lost things since the routes in force (which re-routing would only repair):
    /// rebalances after failures were repaired piecemeal (`SmConfig::reroute_on_loss`).
    pub fn request_rebalance(&mut self, now: Instant) {
        self.rebalance_wanted(now);
        self.refresh_timers();
    }

    /// Feeds what the transport received.
    pub fn handle_incoming(&mut self, now: Instant, incoming: Incoming) {
        let span = self.sweep.span();
        let _in_phase = span.enter();
        if let Some(incoming) = self.perf.handle_incoming(&self.cfg, now, incoming) {
            SansIo::handle_incoming(&mut self.smps.tx, now, incoming);
            self.process(now);
        }
        self.perf_tick(now);
        self.refresh_timers();
    }

    /// Reports that sending an [`Outgoing`] failed.
    pub fn handle_send_error(&mut self, now: Instant, id: TxId, error: TransportError) {
        if !self.perf.handle_send_error(now, id, error.clone()) {
            SansIo::handle_send_error(&mut self.smps.tx, now, id, error);
            self.process(now);
        }
        self.perf_tick(now);
        self.refresh_timers();
    }

    /// Lets time pass: retries, timeouts, periodic sweeps.
    pub fn handle_timeout(&mut self, now: Instant) {
        let span = self.sweep.span();
        let _in_phase = span.enter();
        self.smps.tx.handle_timeout(now);
        self.smi.handle_timeout(now);
        self.admin.handle_timeout(now);
        if self.timers.due(Timer::Rebalance, now) {
            self.timers.clear(Timer::Rebalance);
            self.rebalance_due(now);
        }
        if self.timers.due(Timer::Health, now) && self.health.handle_timeout(now) {
            self.drain_health(now);
        }
        if self.timers.due(Timer::Program, now) {
            self.stage_slice(now);
        }
        if self.sweep.is_idle() && self.timers.due(Timer::Sweep, now) {
            self.timers.clear(Timer::Sweep);
            self.periodic_sweep(now);
        }
        self.process(now);
        self.perf_tick(now);
        self.refresh_timers();
    }

    /// The next MAD to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        // PerfMgt MADs only when no SMP is waiting for the window.
        let out = self
            .next_transmit(now)
            .or_else(|| self.perf.poll_transmit(now));
        self.refresh_timers();
        out
    }

    /// When [`Self::handle_timeout`] must be called next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // The periodic sweep waits while a sweep runs, and a Standby does not sweep.
        let sweeps =
            self.sweep.is_idle() && matches!(self.smi.role, Role::Master | Role::Discovering);
        self.timers.next(|t| t != Timer::Sweep || sweeps)
    }

    /// The next event for the host.
    pub fn poll_event(&mut self) -> Option<SmEvent> {
        self.out.events.pop_front()
    }

    /// Caches the deadlines the engine's parts keep themselves, so that
    /// [`Self::poll_timeout`] can read them all without `&mut`. Called at the end of
    /// every entry point that takes `&mut self`.
    fn refresh_timers(&mut self) {
        let tx = self.smps.tx.poll_timeout();
        self.timers.set(Timer::Transactions, tx);
        let election = self.smi.election.poll_timeout();
        self.timers.set(Timer::Election, election);
        let admin = self.admin.poll_timeout();
        self.timers.set(Timer::Admin, admin);
        let can_start =
            self.smi.role == Role::Master && self.routing.up_once && self.sweep.is_idle();
        let perf = self.perf.poll_timeout(&self.cfg, can_start);
        self.timers.set(Timer::PerfMgr, perf);
        let health = self.health.policy.poll_timeout();
        self.timers.set(Timer::Health, health);
    }

    fn event(&mut self, ev: SmEvent) {
        self.out.event(ev);
    }
}
