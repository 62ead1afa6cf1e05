//! The sans-IO SM core: sweeps as a state machine over transactions.
//!
//! Inputs are received MADs and the time; outputs are MADs to send, the next deadline
//! and events. See the crate docs for the run loop.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use ibsm_election::{Election, Event as ElectionEvent, Requester, SmAddr};
use ibsm_routing::{LidAssignment, Options as RouteOptions, Routes, route_with_fallback};
use ibsm_topology::{Csr, Fabric};
use ibsm_transport::{
    Address, DrAddress, Event as TxEvent, Incoming, Instant, LidAddress, LocalPort, Received,
    Request, Transactions, TransportError, TxConfig, TxId,
};
use ibsm_wire::{
    DrPath, DrSmp, DrSmpView, LidSmp, LinearForwardingTable, Method, Mtu, NodeDescription,
    NodeInfo, NodeType, Notice, PortInfo, PortState, SmAttributeId, SwitchInfo, VlCap,
};
use ibsm_wire::{SlToVlMap, SlToVlMappingTable, SmState};

use crate::config::SmConfig;
use crate::error::SmError;
use crate::event::{Role, SmEvent, SweepStats};
use crate::lids::{self, LidRequest};
use crate::mkey;
use crate::model::{NodeIx, NodeRec, PortRec, Subnet};
use crate::store::{LidStore, MemoryLidStore};

// The Subnet Administrator glue: a child module so it reads the engine's state.
#[path = "sa.rs"]
mod sa;
// Partitions: P_Key tables from `SmConfig::partitions` (see `pkeys.rs`).
#[path = "pkeys.rs"]
mod pkeys;

/// A request waiting for room in the window.
#[derive(Debug)]
struct Work {
    op: Op,
    method: Method,
    attr_mod: u32,
    data: Option<Box<[u8; 64]>>,
}

/// What a request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    NodeInfo {
        path: DrPath,
        from: Option<(NodeIx, u8)>,
    },
    NodeDesc {
        node: NodeIx,
    },
    SwitchInfo {
        node: NodeIx,
    },
    PortInfo {
        node: NodeIx,
        port: u8,
    },
    SetSwitchInfo {
        node: NodeIx,
    },
    SetLft {
        node: NodeIx,
        block: u16,
    },
    SetPortInfo {
        node: NodeIx,
        port: u8,
    },
    LightSwitchInfo {
        node: NodeIx,
    },
    /// Discovery clears a switch's PortStateChange latch (SwitchInfo as read, with the
    /// bit written 1) before reading its ports.
    ClearPortStateChange {
        node: NodeIx,
    },
    /// A trap 128 from a switch the sweep already read: is its latch set again? By
    /// route and GUID rather than node index, since a heavy sweep may rebuild the
    /// subnet while it is in flight; `sweep` is the heavy sweep it was sent in.
    CheckSwitchInfo {
        path: DrPath,
        guid: u64,
        sweep: u64,
    },
    SetSl2Vl {
        node: NodeIx,
        port: u8,
    },
    SetVlArb {
        node: NodeIx,
        port: u8,
    },
    /// A MulticastForwardingTable block the SA's multicast groups need.
    SetMft {
        node: NodeIx,
    },
    /// One P_KeyTable block of a port, read for the SA and the partition policy.
    PKeyTable {
        node: NodeIx,
        port: u8,
        block: u16,
    },
    /// One P_KeyTable block the partition policy writes.
    SetPKeyTable {
        node: NodeIx,
        port: u8,
        block: u16,
    },
}

/// Most P_KeyTable blocks read per port (2048 P_Keys): PartitionCap may claim up to
/// 65535 entries, and one SMP per 32 of them must stay affordable.
const MAX_PKEY_BLOCKS: u16 = 64;

impl Op {
    fn attribute(self) -> &'static str {
        match self {
            Op::NodeInfo { .. } => "NodeInfo",
            Op::NodeDesc { .. } => "NodeDescription",
            Op::SwitchInfo { .. }
            | Op::SetSwitchInfo { .. }
            | Op::LightSwitchInfo { .. }
            | Op::ClearPortStateChange { .. }
            | Op::CheckSwitchInfo { .. } => "SwitchInfo",
            Op::PortInfo { .. } | Op::SetPortInfo { .. } => "PortInfo",
            Op::SetLft { .. } => "LinearForwardingTable",
            Op::SetSl2Vl { .. } => "SLtoVLMappingTable",
            Op::SetVlArb { .. } => "VLArbitrationTable",
            Op::SetMft { .. } => "MulticastForwardingTable",
            Op::PKeyTable { .. } | Op::SetPKeyTable { .. } => "P_KeyTable",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not sweeping; waiting for the next sweep time or a trigger.
    Idle,
    Discover,
    Program,
    Activate,
    Light,
    /// Discovery is done; the election decides whether this SM configures.
    Elect,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Discover => "discover",
            Phase::Program => "program",
            Phase::Activate => "activate",
            Phase::Light => "light sweep",
            Phase::Elect => "elect",
        }
    }
}

/// Where the running (or last) heavy sweep is with one switch's PortStateChange latch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Latch {
    /// Reached; its SwitchInfo Get or the Set clearing the latch is outstanding, and
    /// its ports are read only after: a change now is still seen by this sweep.
    Pending,
    /// The latch read clear, or was cleared, before the ports were read: every change
    /// since leaves it set again, so one SwitchInfo Get tells whether the sweep missed
    /// a change on this switch.
    Clean,
    /// The SwitchInfo Get or the clearing Set got no answer: nothing can be told from
    /// the latch.
    Unknown,
}

/// A MAD to hand to the transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The transaction it belongs to, for [`SubnetManager::handle_send_error`]; `None`
    /// for MADs that expect no answer (TrapRepress, responses).
    pub id: Option<TxId>,
    /// Where to.
    pub addr: Address,
    /// The bytes.
    pub mad: Vec<u8>,
}

/// The SM engine. Sans-IO: it never reads a clock, sleeps or touches a device.
pub struct SubnetManager {
    cfg: SmConfig,
    local: LocalPort,
    tx: Transactions<Op>,
    window: usize,
    store: Box<dyn LidStore + Send>,
    stored: BTreeMap<u64, (u16, u8)>,
    phase: Phase,
    phase_started: Instant,
    sweep_started: Instant,
    heavy_pending: bool,
    /// Heavy sweeps begun so far (tags trap checks with the sweep they were sent in).
    heavy_sweeps: u64,
    /// Switch node GUID -> its latch in the running or last heavy sweep.
    latches: HashMap<u64, Latch>,
    /// SMPs sent since creation (sweeps, trap checks, election, retries).
    smps_sent: u64,
    next_sweep: Option<Instant>,
    subnet: Subnet,
    previous_guids: HashSet<u64>,
    /// Port GUID -> (base LID, LMC) in force.
    lids: BTreeMap<u64, (u16, u8)>,
    /// Switch GUID -> LFT as last written.
    programmed: HashMap<u64, Vec<u8>>,
    /// (switch GUID, output port) -> SL -> VL map as last written.
    programmed_sl2vl: HashMap<(u64, u8), [u8; 16]>,
    /// (node, port) -> PortInfo the engine wants there.
    desired: BTreeMap<(NodeIx, u8), PortInfo>,
    sm_lid: u16,
    fabric: Option<Fabric>,
    routes: Option<Routes>,
    /// The snapshot `routes` were computed on (switch order, cables, LIDs), to tell a
    /// fabric that only lost things from one that changed otherwise.
    routed_csr: Option<Csr>,
    /// The next routing recomputes from scratch (`request_rebalance`).
    rebalance_pending: bool,
    /// When the re-routed routes in force get their automatic rebalance
    /// (`SmConfig::rebalance_after` after the last change they were repaired for).
    rebalance_at: Option<Instant>,
    locked: HashSet<u64>,
    reported_locked: HashSet<u64>,
    /// M_Keys read off ports that differ from ours (a predecessor's keys, readable once
    /// its lease ran out and the protection level fell to 0): used until our Set
    /// replaces them.
    port_keys: HashMap<u64, u64>,
    /// The key to present in a NodeInfo Get along a route, from the node found there
    /// before (NodeInfo is M_Key-checked too: with key 0 a protected port drops it).
    path_keys: HashMap<DrPath, u64>,
    out: VecDeque<Outgoing>,
    work: VecDeque<Work>,
    events: VecDeque<SmEvent>,
    stats: SweepStats,
    attr_counts: BTreeMap<&'static str, u64>,
    role: Role,
    up_once: bool,
    election: Election,
    /// The Subnet Administrator, when `SmConfig::sa` asks for one (see `sa.rs`).
    sa: Option<ibsm_sa::SaServer>,
    /// The P_Key tables and enforcement bits of the last heavy sweep's partition
    /// policy (`SmConfig::partitions`; see `pkeys.rs`).
    pkey_plan: Option<crate::partition::PKeyPlan>,
    /// The partition warnings of the last plan: a warning is reported when it first
    /// appears, not again on every heavy sweep that meets it.
    partition_warnings: Vec<crate::partition::PartitionWarning>,
    /// Reply addresses (SL, P_Key index) of recent SA requesters, by (LID, QP), for
    /// what the SA sends them later (RMPP segments, Reports).
    sa_reply: HashMap<(u16, u32), Address>,
    /// The tracing span of the current sweep phase.
    span: tracing::Span,
}

impl std::fmt::Debug for SubnetManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubnetManager")
            .field("election", &self.election.state())
            .field("phase", &self.phase)
            .field("nodes", &self.subnet.nodes.len())
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

fn dur(now: Instant) -> Duration {
    Duration::from_nanos(now.as_nanos())
}

fn instant(d: Duration) -> Instant {
    Instant::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn role_of(state: SmState) -> Role {
    match state {
        SmState::Master => Role::Master,
        SmState::Standby => Role::Standby,
        SmState::NotActive => Role::NotActive,
        _ => Role::Discovering,
    }
}

fn dr_status(mad: &[u8]) -> u16 {
    DrSmpView::new_checked(mad).map_or(0x7FFF, |v| v.status())
}

impl SubnetManager {
    /// An engine for the SM on `local`, with an in-memory LID store.
    #[must_use]
    pub fn new(cfg: SmConfig, local: LocalPort) -> Self {
        Self::with_store(cfg, local, Box::new(MemoryLidStore::default()))
    }

    /// An engine with a persistent LID store (e.g. [`crate::FileLidStore`]).
    ///
    /// # Panics
    /// If the configuration is out of range (priority above 15); the `ibsm` builder
    /// checks it first.
    #[must_use]
    pub fn with_store(cfg: SmConfig, local: LocalPort, store: Box<dyn LidStore + Send>) -> Self {
        let window = cfg.max_wire_smps.max(1);
        let mut ecfg = ibsm_election::Config::with_polling(
            local.port_guid.max(1),
            cfg.polling_timeout,
            cfg.polling_retries,
        );
        ecfg.priority = cfg.priority.min(15);
        ecfg.sm_key = cfg.sm_key;
        ecfg.transaction_timeout = cfg.transaction_timeout;
        ecfg.transaction_retries = cfg.transaction_retries;
        let election =
            Election::new(ecfg, Duration::ZERO).expect("election configuration in range");
        let mut tx = Transactions::new(TxConfig {
            window,
            timeout: cfg.transaction_timeout,
            retries: cfg.transaction_retries,
            tid_high: 0x1b5e,
            assign_tids: true,
        });
        // The election allocates TIDs from 1; ours start far away from it.
        tx.set_tid_start(0x4000_0000);
        let sa = cfg.sa.then(|| {
            let mut c = ibsm_sa::SaConfig::with_sm_key(cfg.sm_key);
            c.rmpp = cfg.sa_rmpp;
            // The SA's own sends (RMPP windows, Reports) wait and retry as SMPs do
            // (OpenSM binds its SA agent with transaction_timeout / _retries too).
            c.rmpp_timeout = cfg.transaction_timeout;
            c.rmpp_retries = cfg.transaction_retries;
            c.report_timeout = cfg.transaction_timeout;
            c.report_retries = cfg.transaction_retries;
            ibsm_sa::SaServer::new(c)
        });
        Self {
            cfg,
            local,
            tx,
            window,
            store,
            stored: BTreeMap::new(),
            phase: Phase::Idle,
            phase_started: Instant::ZERO,
            sweep_started: Instant::ZERO,
            heavy_pending: false,
            heavy_sweeps: 0,
            latches: HashMap::new(),
            smps_sent: 0,
            next_sweep: None,
            subnet: Subnet::default(),
            previous_guids: HashSet::new(),
            lids: BTreeMap::new(),
            programmed: HashMap::new(),
            programmed_sl2vl: HashMap::new(),
            desired: BTreeMap::new(),
            sm_lid: local.lid,
            fabric: None,
            routes: None,
            routed_csr: None,
            rebalance_pending: false,
            rebalance_at: None,
            locked: HashSet::new(),
            reported_locked: HashSet::new(),
            port_keys: HashMap::new(),
            path_keys: HashMap::new(),
            out: VecDeque::new(),
            work: VecDeque::new(),
            events: VecDeque::new(),
            stats: SweepStats::default(),
            attr_counts: BTreeMap::new(),
            role: Role::Discovering,
            up_once: false,
            election,
            sa,
            pkey_plan: None,
            partition_warnings: Vec::new(),
            sa_reply: HashMap::new(),
            span: tracing::Span::none(),
        }
    }

    /// The SM's role (the election's state).
    #[must_use]
    pub fn role(&self) -> Role {
        self.role
    }

    /// The SMInfo this SM shows; copy it into the SM port's SMA where the host has one.
    #[must_use]
    pub fn sm_info(&self) -> ibsm_wire::SmInfo {
        self.election.sm_info()
    }

    /// The other SMs the election knows, each as it last answered (see
    /// [`ibsm_election::Election::known_sms`]): those the sweeps probed and those that
    /// sent this SM an SMInfo request since.
    pub fn known_sms(&self) -> impl Iterator<Item = ibsm_election::KnownSm> + '_ {
        self.election.known_sms()
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SmConfig {
        &self.cfg
    }

    /// What the last heavy sweep found.
    #[must_use]
    pub fn subnet(&self) -> &Subnet {
        &self.subnet
    }

    /// The fabric model of the last configured sweep (shared `ibsm-topology` type).
    #[must_use]
    pub fn fabric(&self) -> Option<&Fabric> {
        self.fabric.as_ref()
    }

    /// The routes in force.
    #[must_use]
    pub fn routes(&self) -> Option<&Routes> {
        self.routes.as_ref()
    }

    /// Port GUID -> (base LID, LMC) in force.
    #[must_use]
    pub fn lids(&self) -> &BTreeMap<u64, (u16, u8)> {
        &self.lids
    }

    /// The SM's own LID (0 until assigned).
    #[must_use]
    pub fn sm_lid(&self) -> u16 {
        self.sm_lid
    }

    /// Whether the subnet has been brought up at least once.
    #[must_use]
    pub fn is_up(&self) -> bool {
        self.up_once
    }

    /// Whether a sweep is in progress.
    #[must_use]
    pub fn is_sweeping(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// Starts (or restarts) the SM: loads the LID store and begins a heavy sweep.
    ///
    /// # Errors
    /// [`SmError::Config`] when the LID store cannot be read.
    pub fn start(&mut self, now: Instant) -> Result<(), SmError> {
        self.stored = self.store.load()?;
        self.begin_heavy(now);
        self.drain_election(now);
        Ok(())
    }

    /// Asks for a heavy sweep as soon as the current one ends (e.g. after a trap).
    pub fn request_heavy_sweep(&mut self, now: Instant) {
        if self.phase == Phase::Idle {
            self.begin_heavy(now);
        } else {
            self.heavy_pending = true;
        }
    }

    /// Asks for a heavy sweep that recomputes every route from scratch even if the fabric
    /// only lost things since the routes in force (which re-routing would only repair):
    /// rebalances after failures were repaired piecemeal (`SmConfig::reroute_on_loss`).
    pub fn request_rebalance(&mut self, now: Instant) {
        self.rebalance_pending = true;
        self.request_heavy_sweep(now);
    }

    /// Feeds what the transport received.
    pub fn handle_incoming(&mut self, now: Instant, incoming: Incoming) {
        let span = self.span.clone();
        let _in_phase = span.enter();
        self.tx.handle_incoming(incoming);
        self.process(now);
    }

    /// Reports that sending an [`Outgoing`] failed.
    pub fn handle_send_error(&mut self, now: Instant, id: TxId, error: TransportError) {
        self.tx.handle_send_error(id, error);
        self.process(now);
    }

    /// Lets time pass: retries, timeouts, periodic sweeps.
    pub fn handle_timeout(&mut self, now: Instant) {
        let span = self.span.clone();
        let _in_phase = span.enter();
        self.tx.handle_timeout(now);
        if self
            .election
            .poll_timeout()
            .is_some_and(|t| instant(t) <= now)
        {
            self.election.handle_timeout(dur(now));
        }
        self.sa_handle_timeout(now);
        if self.rebalance_at.is_some_and(|t| t <= now) {
            self.rebalance_at = None;
            // Another SM took over meanwhile: the routes are its business now.
            if self.role == Role::Master {
                tracing::info!("quiet since the last re-route: rebalancing");
                self.request_rebalance(now);
            }
        }
        if self.phase == Phase::Idle && self.next_sweep.is_some_and(|t| t <= now) {
            self.next_sweep = None;
            if self.heavy_pending {
                self.begin_heavy(now);
            } else {
                self.begin_light(now);
            }
        }
        self.process(now);
    }

    /// SMPs this SM has handed out since it was created: sweep and trap-check requests
    /// with their retries, election SMInfo, TrapRepress and answers to SMInfo requests
    /// (not the SA's MADs, which are not SMPs). Unlike [`SweepStats::smps`] it also
    /// counts what is sent between sweeps.
    #[must_use]
    pub fn smps_sent(&self) -> u64 {
        self.smps_sent
    }

    /// The next MAD to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        if let Some(o) = self.out.pop_front() {
            // The SA's answers share the queue; they are GMPs, not SMPs.
            if matches!(o.mad.get(1), Some(0x01 | 0x81)) {
                self.smps_sent += 1;
            }
            return Some(o);
        }
        if let Some(o) = self.poll_sa_transmit(now) {
            return Some(o);
        }
        self.pump();
        let t = self.tx.poll_transmit(now)?;
        self.stats.smps += 1;
        self.smps_sent += 1;
        if t.attempt > 1 {
            self.stats.retries += 1;
        }
        Some(Outgoing {
            id: Some(t.id),
            addr: t.addr,
            mad: t.mad,
        })
    }

    /// When [`Self::handle_timeout`] must be called next.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let sweep =
            if self.phase == Phase::Idle && matches!(self.role, Role::Master | Role::Discovering) {
                self.next_sweep
            } else {
                None
            };
        [
            self.tx.poll_timeout(),
            sweep,
            self.rebalance_at,
            self.election.poll_timeout().map(instant),
            self.sa_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next event for the host.
    pub fn poll_event(&mut self) -> Option<SmEvent> {
        self.events.pop_front()
    }

    // ---------------------------------------------------------------- sweeps

    fn begin_heavy(&mut self, now: Instant) {
        self.heavy_pending = false;
        self.heavy_sweeps += 1;
        self.latches.clear();
        self.previous_guids = self.subnet.by_guid.keys().copied().collect();
        self.subnet = Subnet::default();
        self.locked.clear();
        self.stats = SweepStats {
            heavy: true,
            ..SweepStats::default()
        };
        self.attr_counts.clear();
        self.sweep_started = now;
        self.enter(Phase::Discover, now);
        self.events.push_back(SmEvent::SweepStarted { heavy: true });
        self.election.begin_sweep(dur(now));
        self.submit(
            Op::NodeInfo {
                path: DrPath::local(),
                from: None,
            },
            Method::Get,
            0,
            None,
        );
    }

    fn begin_light(&mut self, now: Instant) {
        self.stats = SweepStats {
            heavy: false,
            ..SweepStats::default()
        };
        self.attr_counts.clear();
        self.sweep_started = now;
        self.enter(Phase::Light, now);
        self.events
            .push_back(SmEvent::SweepStarted { heavy: false });
        // The other SMs' SMInfo as it is now (ActCount, state) for SMInfoRecord, as
        // OpenSM's light sweep asks; no SMP when there is no other SM.
        if self.role == Role::Master {
            self.election.refresh_known_sms(dur(now));
        }
        let switches: Vec<NodeIx> = (0..self.subnet.nodes.len())
            .filter(|&n| self.subnet.nodes[n].is_switch())
            .collect();
        for node in switches {
            self.submit(Op::LightSwitchInfo { node }, Method::Get, 0, None);
        }
        // With an M_Key lease, a correctly keyed SMP to every port stops any countdown an
        // intruder's bad key started (smp.md 5), so the ports stay ours. Switches were
        // just reached through port 0; CA ports need their own Get.
        if self.lease_active() {
            let ca_ports: Vec<(NodeIx, u8)> = self
                .subnet
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| !n.is_switch())
                .flat_map(|(i, n)| {
                    n.ports
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| p.path.is_some())
                        .map(move |(p, _)| (i, p as u8))
                })
                .collect();
            for (node, port) in ca_ports {
                self.get_port_info(node, port);
            }
        }
    }

    /// Whether ports carry an M_Key with a lease that the SM must keep refreshing.
    fn lease_active(&self) -> bool {
        self.cfg.m_key != crate::config::MKeyMode::Off && self.cfg.m_key_lease > 0
    }

    /// Time to the next light sweep: the configured interval, shortened to half the
    /// M_Key lease so that no lease can run out between two refreshes.
    fn sweep_period(&self) -> Duration {
        let mut d = self.cfg.sweep_interval;
        if self.lease_active() {
            let half = Duration::from_secs(u64::from(self.cfg.m_key_lease)) / 2;
            if d.is_zero() || half < d {
                d = half.max(Duration::from_millis(100));
            }
        }
        d
    }

    fn enter(&mut self, phase: Phase, now: Instant) {
        if self.phase != Phase::Idle {
            let d = now.saturating_duration_since(self.phase_started);
            tracing::info!(
                phase = self.phase.name(),
                nodes = self.subnet.nodes.len(),
                smps = self.stats.smps,
                virtual_us = d.as_micros() as u64,
                "phase done"
            );
            self.stats.phases.push((self.phase.name(), d));
            self.events.push_back(SmEvent::PhaseDone {
                phase: self.phase.name(),
                nodes: self.subnet.nodes.len(),
                smps: self.stats.smps,
                elapsed: d,
            });
        }
        self.phase = phase;
        self.phase_started = now;
        // One span per sweep phase (its wall-clock life is the phase's); the sans-IO
        // entry points enter it, so everything logged while handling a MAD or a timeout
        // nests under the phase it belongs to.
        self.span = if phase == Phase::Idle {
            tracing::Span::none()
        } else {
            tracing::info_span!(
                "sweep_phase",
                phase = phase.name(),
                heavy = self.stats.heavy
            )
        };
    }

    fn key_for_port(&self, guid: u64) -> u64 {
        mkey::key_for(self.cfg.m_key, guid).unwrap_or(0)
    }

    /// The key to put in an SMP to this port: ours, or the one read off it.
    fn smp_key(&self, guid: u64) -> u64 {
        self.port_keys
            .get(&guid)
            .copied()
            .unwrap_or_else(|| self.key_for_port(guid))
    }

    /// Remembers the M_Key a Get or Set showed on a port that holds one (switch port 0,
    /// CA ports): a foreign key is used from now on, ours ends the exception.
    fn note_port_key(&mut self, node: NodeIx, port: u8, pi: &PortInfo) {
        let rec = &self.subnet.nodes[node];
        let key_port = if rec.is_switch() {
            port == 0
        } else {
            port != 0
        };
        let Some(guid) = rec.ports.get(usize::from(port)).map(|p| p.guid) else {
            return;
        };
        if !key_port || pi.m_key == 0 {
            return; // level 1 hides the key; nothing to learn
        }
        if pi.m_key == self.key_for_port(guid) {
            self.port_keys.remove(&guid);
        } else {
            self.port_keys.insert(guid, pi.m_key);
        }
        let path = rec.path_for(port);
        let key = self.smp_key(guid);
        self.path_keys.insert(path, key);
    }

    /// Queues one SMP. Requests wait here, as a few bytes each, until the window has
    /// room: a sweep of a large fabric queues hundreds of thousands of Sets at once, and
    /// building all their MADs up front would cost memory and hash-table time.
    /// Queues a Get of one port's PortInfo (the attribute modifier is the port number).
    fn get_port_info(&mut self, node: NodeIx, port: u8) {
        self.submit(
            Op::PortInfo { node, port },
            Method::Get,
            u32::from(port),
            None,
        );
    }

    fn submit(&mut self, op: Op, method: Method, attr_mod: u32, data: Option<[u8; 64]>) {
        self.work.push_back(Work {
            op,
            method,
            attr_mod,
            data: data.map(Box::new),
        });
    }

    /// Hands queued SMPs to the transaction layer while fewer than two windows' worth
    /// are pending there.
    fn pump(&mut self) {
        let limit = self.window.saturating_mul(2).max(8);
        while self.tx.pending() < limit {
            let Some(w) = self.work.pop_front() else {
                break;
            };
            self.dispatch(w);
        }
    }

    /// Builds one SMP and submits it.
    fn dispatch(&mut self, w: Work) {
        let Work {
            op,
            method,
            attr_mod,
            data,
        } = w;
        let data = data.map(|b| *b).or_else(|| match op {
            // LFT blocks are read from the mirror of what is being written.
            Op::SetLft { node, block } => {
                let guid = self.subnet.nodes[node].info.node_guid;
                let lft = self.programmed.get(&guid)?;
                let start = usize::from(block) * 64;
                let mut ports = [0xFFu8; 64];
                for (i, p) in ports.iter_mut().enumerate() {
                    *p = lft.get(start + i).copied().unwrap_or(0xFF);
                }
                let mut d = [0u8; 64];
                LinearForwardingTable { ports }.emit_into(&mut d).ok()?;
                Some(d)
            }
            _ => None,
        });
        let (attr, path, key_guid) = match op {
            Op::NodeInfo { path, .. } => (SmAttributeId::NodeInfo, path, None),
            Op::NodeDesc { node } => (
                SmAttributeId::NodeDescription,
                self.subnet.nodes[node].path,
                Some((node, 0)),
            ),
            Op::SwitchInfo { node }
            | Op::SetSwitchInfo { node }
            | Op::LightSwitchInfo { node }
            | Op::ClearPortStateChange { node } => (
                SmAttributeId::SwitchInfo,
                self.subnet.nodes[node].path,
                Some((node, 0)),
            ),
            Op::CheckSwitchInfo { path, .. } => (SmAttributeId::SwitchInfo, path, None),
            Op::PortInfo { node, port } | Op::SetPortInfo { node, port } => (
                SmAttributeId::PortInfo,
                self.subnet.nodes[node].path_for(port),
                Some((node, port)),
            ),
            Op::SetLft { node, .. } => (
                SmAttributeId::LinearForwardingTable,
                self.subnet.nodes[node].path,
                Some((node, 0)),
            ),
            Op::SetSl2Vl { node, .. } => (
                SmAttributeId::SlToVlMappingTable,
                self.subnet.nodes[node].path,
                Some((node, 0)),
            ),
            Op::SetVlArb { node, .. } => (
                SmAttributeId::VlArbitrationTable,
                self.subnet.nodes[node].path,
                Some((node, 0)),
            ),
            Op::SetMft { node } => (
                SmAttributeId::MulticastForwardingTable,
                self.subnet.nodes[node].path,
                Some((node, 0)),
            ),
            Op::PKeyTable { node, port, .. } | Op::SetPKeyTable { node, port, .. } => (
                SmAttributeId::PKeyTable,
                self.subnet.nodes[node].path_for(port),
                Some((node, port)),
            ),
        };
        // A switch has one M_Key (port 0); a CA port its own.
        let key = key_guid.map_or(0, |(n, p)| {
            let node = &self.subnet.nodes[n];
            let guid = if node.is_switch() {
                node.info.node_guid
            } else {
                // Node-wide attributes (NodeDescription) of a CA go through the port it
                // was reached by: its key, not that of the non-existent port 0.
                let p = if p == 0 { node.info.local_port_num } else { p };
                node.ports.get(usize::from(p)).map_or(0, |r| r.guid)
            };
            self.smp_key(guid)
        });
        let key = match op {
            Op::NodeInfo { path, .. } => self.path_keys.get(&path).copied().unwrap_or(0),
            Op::CheckSwitchInfo { guid, .. } => self.smp_key(guid),
            _ => key,
        };
        let mut smp = DrSmp::request(method, attr.into(), attr_mod, 0, key, &path);
        if let Some(d) = data {
            smp.data = d;
        }
        *self.attr_counts.entry(op.attribute()).or_default() += 1;
        let mut req = Request::new(
            Address::Directed(DrAddress::direct(path)),
            smp.to_bytes().to_vec(),
            op,
        );
        req.timeout = Some(self.cfg.transaction_timeout);
        // Only the queueing window limits submissions; a duplicate TID cannot happen
        // with assigned TIDs.
        let _ = self.tx.submit(req);
    }

    /// Drains the transaction layer's outcomes and advances phases.
    fn process(&mut self, now: Instant) {
        loop {
            while let Some(ev) = self.tx.poll_event() {
                match ev {
                    TxEvent::Completed {
                        cookie,
                        response,
                        attempts,
                        ..
                    } => {
                        if attempts == 1 {
                            self.grow_window();
                        }
                        self.on_response(now, cookie, &response, attempts);
                    }
                    TxEvent::Failed { cookie, error, .. } => {
                        self.shrink_window();
                        self.stats.timeouts += 1;
                        self.on_failure(now, cookie, &error);
                    }
                    TxEvent::Unsolicited(rx) => self.on_unsolicited(now, &rx),
                }
            }
            self.drain_election(now);
            self.pump();
            if !self.tx.is_idle() || !self.work.is_empty() || self.phase == Phase::Idle {
                return;
            }
            // The phase's work is done: move on (this may queue new work, or find none
            // and move on again).
            let before = self.phase;
            self.advance(now);
            if self.phase == before && self.tx.is_idle() && self.work.is_empty() {
                // Nothing moved (the election still waits for the SMInfo answers of
                // its probes, which are not transactions): wait for input. Without
                // this the loop spun for ever when another SM was found.
                return;
            }
        }
    }

    fn grow_window(&mut self) {
        if self.window < self.cfg.max_wire_smps_limit {
            self.window += 1;
            self.tx.set_window(self.window);
            self.stats.max_window = self.stats.max_window.max(self.window);
        }
    }

    fn shrink_window(&mut self) {
        self.window = (self.window / 2).max(self.cfg.max_wire_smps.max(1));
        self.tx.set_window(self.window);
    }

    // ---------------------------------------------------------------- discovery

    fn on_response(&mut self, now: Instant, op: Op, rx: &Received, attempts: u32) {
        if dr_status(&rx.mad) != 0 {
            self.on_failure(
                now,
                op,
                &TransportError::Unreachable {
                    reason: format!("MAD status {:#x}", dr_status(&rx.mad)),
                },
            );
            return;
        }
        let Ok(view) = DrSmpView::new_checked(&rx.mad[..]) else {
            return;
        };
        let data = view.attr_data();
        match op {
            Op::NodeInfo { path, from } => {
                if let Ok(ni) = NodeInfo::parse(data) {
                    self.on_node_info(path, from, ni);
                }
            }
            Op::NodeDesc { node } => {
                if let Ok(d) = NodeDescription::parse(data) {
                    self.subnet.nodes[node].desc =
                        String::from_utf8_lossy(d.text_bytes()).into_owned();
                }
            }
            Op::SwitchInfo { node } => {
                let si = SwitchInfo::parse(data).ok();
                self.subnet.nodes[node].switch_info = si;
                match si {
                    // A change before this read is seen by the port reads that follow
                    // the clear; one after it sets the latch again.
                    Some(si) if si.port_state_change => {
                        let mut data = [0u8; 64];
                        si.emit_into(&mut data).ok();
                        self.submit(
                            Op::ClearPortStateChange { node },
                            Method::Set,
                            0,
                            Some(data),
                        );
                    }
                    Some(_) => self.switch_latch_done(node, Latch::Clean),
                    None => self.switch_latch_done(node, Latch::Unknown),
                }
            }
            Op::ClearPortStateChange { node } => {
                self.switch_latch_done(node, Latch::Clean);
            }
            Op::CheckSwitchInfo { guid, sweep, .. } => {
                let set = SwitchInfo::parse(data).map_or(true, |si| si.port_state_change);
                // A heavy sweep begun after the check was sent reads (and clears) the
                // switch after the check read it: what the latch showed is that sweep's
                // to see. Unless the check had to be resent, which may have reached the
                // switch after the sweep did.
                let covered = sweep != self.heavy_sweeps && attempts == 1;
                tracing::debug!(guid, set, covered, "PortStateChange after trap 128");
                if set && !covered {
                    self.request_heavy_sweep(now);
                }
            }
            Op::PortInfo { node, port } => {
                if let Ok(pi) = PortInfo::parse(data) {
                    self.on_port_info(node, port, pi);
                }
            }
            Op::LightSwitchInfo { node } => {
                if SwitchInfo::parse(data).is_ok_and(|si| si.port_state_change) {
                    self.heavy_pending = true;
                }
                let _ = node;
            }
            Op::SetPortInfo { node, port } => {
                if let Ok(pi) = PortInfo::parse(data) {
                    self.note_port_key(node, port, &pi);
                    if let Some(p) = self.subnet.nodes[node].ports.get_mut(usize::from(port)) {
                        p.info = Some(pi);
                    }
                }
            }
            Op::PKeyTable { node, port, block } | Op::SetPKeyTable { node, port, block } => {
                if let Ok(t) = ibsm_wire::PKeyTable::parse(data) {
                    if let Some(p) = self.subnet.nodes[node].ports.get_mut(usize::from(port)) {
                        let at = usize::from(block) * 32;
                        if p.pkeys.len() < at + 32 {
                            p.pkeys.resize(at + 32, 0);
                        }
                        for (slot, k) in p.pkeys[at..at + 32].iter_mut().zip(t.pkeys.iter()) {
                            *slot = k.0;
                        }
                    }
                }
            }
            Op::SetSwitchInfo { .. }
            | Op::SetLft { .. }
            | Op::SetSl2Vl { .. }
            | Op::SetVlArb { .. }
            | Op::SetMft { .. } => {}
        }
    }

    /// Queues the P_KeyTable reads of a port (for the SA and the partition policy):
    /// every block up to `entries` (PartitionCap for CA ports and switch port 0,
    /// PartitionEnforcementCap for switch external ports).
    fn read_pkeys(&mut self, node: NodeIx, port: u8, entries: u16) {
        if !self.reads_pkeys() {
            return;
        }
        let blocks = entries.div_ceil(32).clamp(1, MAX_PKEY_BLOCKS);
        let sw = self.subnet.nodes[node].is_switch();
        for block in 0..blocks {
            let m = ibsm_wire::attr::modifier::PKeyMod {
                block,
                port: if sw { u16::from(port) } else { 0 },
            };
            self.submit(
                Op::PKeyTable { node, port, block },
                Method::Get,
                m.encode(),
                None,
            );
        }
    }

    fn on_failure(&mut self, now: Instant, op: Op, _error: &TransportError) {
        let guid = match op {
            // An unreachable neighbour costs one timeout and is simply not there; a
            // P_KeyTable block a port refuses (beyond its real capacity) is not a lock.
            Op::NodeInfo { .. } | Op::LightSwitchInfo { .. } | Op::PKeyTable { .. } => return,
            Op::SetPKeyTable { node, port, block } => {
                tracing::warn!(node, port, block, "P_KeyTable Set refused or lost");
                return;
            }
            // The ports are read all the same; the latch tells nothing then. (Were the
            // switch ignoring our M_Key, the SwitchInfo Get has already failed too.)
            Op::ClearPortStateChange { node } => {
                self.switch_latch_done(node, Latch::Unknown);
                return;
            }
            // No evidence either way: sweep.
            Op::CheckSwitchInfo { .. } => {
                self.request_heavy_sweep(now);
                return;
            }
            Op::SwitchInfo { node } => {
                self.switch_latch_done(node, Latch::Unknown);
                self.subnet.nodes[node].info.node_guid
            }
            Op::NodeDesc { node }
            | Op::SetSwitchInfo { node }
            | Op::SetLft { node, .. }
            | Op::SetSl2Vl { node, .. }
            | Op::SetVlArb { node, .. }
            | Op::SetMft { node } => self.subnet.nodes[node].info.node_guid,
            Op::PortInfo { node, port } | Op::SetPortInfo { node, port } => {
                let n = &self.subnet.nodes[node];
                if n.is_switch() {
                    n.info.node_guid
                } else {
                    n.ports.get(usize::from(port)).map_or(0, |p| p.guid)
                }
            }
        };
        tracing::debug!(?op, "no answer after all retries");
        // A node that answered NodeInfo but not a keyed Get/Set ignores our M_Key.
        self.locked.insert(guid);
        if self.reported_locked.insert(guid) {
            self.events.push_back(SmEvent::PortLocked { guid });
        }
    }

    fn on_node_info(&mut self, path: DrPath, from: Option<(NodeIx, u8)>, ni: NodeInfo) {
        let in_port = ni.local_port_num;
        let key_guid = if ni.node_type == NodeType::Switch {
            ni.node_guid
        } else {
            ni.port_guid
        };
        let key = self.smp_key(key_guid);
        self.path_keys.insert(path, key);
        if let Some(&n) = self.subnet.by_guid.get(&ni.node_guid) {
            if let Some(f) = from {
                self.subnet.link(f, (n, in_port));
            }
            let node = &mut self.subnet.nodes[n];
            if !node.is_switch() {
                if let Some(p) = node.ports.get_mut(usize::from(in_port)) {
                    if p.path.is_none() {
                        p.path = Some(path);
                        p.guid = ni.port_guid;
                        self.get_port_info(n, in_port);
                    }
                }
            }
            return;
        }
        let n = self.subnet.nodes.len();
        let is_switch = ni.node_type == NodeType::Switch;
        let mut ports = vec![PortRec::default(); usize::from(ni.num_ports) + 1];
        if is_switch {
            for p in &mut ports {
                p.guid = ni.node_guid;
            }
        } else if let Some(p) = ports.get_mut(usize::from(in_port)) {
            p.guid = ni.port_guid;
            p.path = Some(path);
        }
        self.subnet.nodes.push(NodeRec {
            info: ni,
            desc: String::new(),
            path,
            switch_info: None,
            ports,
        });
        self.subnet.by_guid.insert(ni.node_guid, n);
        if !self.previous_guids.contains(&ni.node_guid) && self.up_once {
            self.events.push_back(SmEvent::NodeAdded {
                guid: ni.node_guid,
                switch: is_switch,
            });
        }
        if let Some(f) = from {
            self.subnet.link(f, (n, in_port));
        }
        self.submit(Op::NodeDesc { node: n }, Method::Get, 0, None);
        if is_switch {
            // The ports are read once the PortStateChange latch is known clear (see
            // `switch_latch_done`).
            self.latches.insert(ni.node_guid, Latch::Pending);
            self.submit(Op::SwitchInfo { node: n }, Method::Get, 0, None);
        } else if usize::from(in_port) < self.subnet.nodes[n].ports.len() {
            self.get_port_info(n, in_port);
        }
    }

    /// The discovery of a switch's PortStateChange latch is over (read clear, cleared,
    /// or unknown after a lost SMP): its ports are read now, after that point, so a
    /// change before it is in what they show and one after it sets the latch again.
    fn switch_latch_done(&mut self, node: NodeIx, latch: Latch) {
        let guid = self.subnet.nodes[node].info.node_guid;
        if self.latches.insert(guid, latch) != Some(Latch::Pending) {
            return; // ports already read
        }
        for p in 0..=self.subnet.nodes[node].info.num_ports {
            self.get_port_info(node, p);
        }
    }

    fn on_port_info(&mut self, node: NodeIx, port: u8, pi: PortInfo) {
        // Another SM's port: ask it for its SMInfo (the election decides).
        let rec = &self.subnet.nodes[node];
        let sm_port = if rec.is_switch() {
            port == 0
        } else {
            port != 0
        };
        let guid = rec.ports.get(usize::from(port)).map_or(0, |p| p.guid);
        if sm_port
            && pi
                .capability_mask
                .contains(ibsm_wire::CapabilityMask::IS_SM)
            && guid != self.local.port_guid
        {
            let path = rec.path_for(port);
            self.election
                .probe(dur(self.phase_started), SmAddr::Directed(path));
        }
        self.note_port_key(node, port, &pi);
        let rec = &mut self.subnet.nodes[node];
        let Some(p) = rec.ports.get_mut(usize::from(port)) else {
            return;
        };
        p.info = Some(pi);
        let linked = p.peer.is_some();
        if rec.is_switch() {
            let enforced = port != 0
                && (pi.partition_enforcement_inbound || pi.partition_enforcement_outbound);
            if port == 0 {
                // The management port: the switch's own end port (PathRecords to it).
                let cap = rec.info.partition_cap;
                self.read_pkeys(node, 0, cap);
            } else if enforced {
                // SwitchInfo was asked before the ports; without it, one block.
                let cap = rec
                    .switch_info
                    .map_or(32, |si| si.partition_enforcement_cap.max(1));
                self.read_pkeys(node, port, cap);
            }
        } else if port != 0
            && self.subnet.nodes[node].ports[usize::from(port)]
                .pkeys
                .is_empty()
        {
            let cap = self.subnet.nodes[node].info.partition_cap;
            self.read_pkeys(node, port, cap);
        }
        let rec = &self.subnet.nodes[node];
        // Explore out of switch ports, and out of the SM's own port when the SM sits on
        // a CA (the root, reached by the empty route).
        let explore = if rec.is_switch() {
            port != 0
        } else {
            rec.path.is_local() && port == rec.info.local_port_num
        };
        let up = matches!(
            pi.port_state,
            PortState::Init | PortState::Armed | PortState::Active
        );
        if explore && up && !linked && rec.path.hops() < ibsm_wire::smp::MAX_HOPS {
            if let Ok(child) = rec.path.child(port) {
                self.submit(
                    Op::NodeInfo {
                        path: child,
                        from: Some((node, port)),
                    },
                    Method::Get,
                    0,
                    None,
                );
            }
        }
    }

    // ---------------------------------------------------------------- configuration

    fn advance(&mut self, now: Instant) {
        match self.phase {
            Phase::Idle => {}
            Phase::Discover if self.subnet.nodes.is_empty() => {
                // Not even the local node answered (our own port's M_Key is someone
                // else's, or the port is down): there is nothing to configure, and saying
                // SUBNET UP would be a lie. The lost SMP makes the next periodic sweep
                // heavy again (see `finish`).
                self.events.push_back(SmEvent::SweepFailed {
                    reason: "discovery found no node: the local port did not answer".into(),
                });
                // Close the election's sweep too: it saw no other SM.
                self.election.sweep_complete(dur(now));
                self.finish(now, false);
                self.drain_election(now);
            }
            Phase::Discover => {
                for guid in self.previous_guids.clone() {
                    if !self.subnet.by_guid.contains_key(&guid) {
                        self.events.push_back(SmEvent::NodeRemoved { guid });
                    }
                }
                self.enter(Phase::Elect, now);
                self.election.sweep_complete(dur(now));
                self.drain_election(now);
            }
            Phase::Elect => match self.election.state() {
                SmState::Master => {
                    self.enter(Phase::Program, now);
                    if let Err(e) = self.configure(now) {
                        self.events.push_back(SmEvent::RoutingFailed {
                            reason: e.to_string(),
                        });
                        self.finish(now, false);
                    }
                }
                SmState::Discovering => {} // probes outstanding: the election answers later
                _ => {
                    // Standby or NotActive: someone else configures.
                    self.enter(Phase::Idle, now);
                    self.next_sweep = None;
                }
            },
            Phase::Program => {
                self.enter(Phase::Activate, now);
                self.activate_armed();
            }
            Phase::Activate => self.finish(now, true),
            Phase::Light => {
                if self.heavy_pending {
                    self.enter(Phase::Idle, now);
                    self.begin_heavy(now);
                } else {
                    self.finish(now, false);
                }
            }
        }
    }

    fn finish(&mut self, now: Instant, up: bool) {
        let heavy = self.stats.heavy;
        self.enter(Phase::Idle, now);
        self.stats.by_attribute = self.attr_counts.iter().map(|(k, v)| (*k, *v)).collect();
        self.stats
            .phases
            .push(("total", now.saturating_duration_since(self.sweep_started)));
        let stats = std::mem::take(&mut self.stats);
        let timeouts = stats.timeouts;
        self.election
            .record_smps_sent(u32::try_from(stats.smps).unwrap_or(u32::MAX));
        if up {
            self.up_once = true;
            // The SA answers from what this sweep configured.
            self.refresh_sa();
            tracing::info!(
                nodes = stats.nodes,
                switches = stats.switches,
                lids = stats.lids,
                smps = stats.smps,
                routing = %stats.routing_engine,
                "SUBNET UP"
            );
            self.events.push_back(SmEvent::SubnetUp { stats });
        } else if !heavy {
            self.events.push_back(SmEvent::LightSweepDone { stats });
        }
        if self.heavy_pending {
            self.begin_heavy(now);
        } else if !self.sweep_period().is_zero() {
            self.next_sweep = Some(now + self.sweep_period());
            // A heavy sweep that lost SMPs (after all retries) may have left nodes
            // undiscovered or ports half-configured, and nothing in the fabric will
            // trap about it: make the next periodic sweep heavy (as OpenSM does after
            // a subnet initialization error). Not at once, so persistent loss cannot
            // keep the SM sweeping back to back.
            if heavy && timeouts > 0 {
                self.heavy_pending = true;
            }
        }
    }

    /// LIDs, routes, and the Sets that program them.
    fn configure(&mut self, now: Instant) -> Result<(), SmError> {
        self.stats.nodes = self.subnet.nodes.len();
        self.stats.switches = self.subnet.switch_count();
        self.stats.links = self.subnet.link_count();
        // LIDs.
        let mut reqs = Vec::new();
        let mut limit = lids::MAX_UNICAST_LID;
        for n in &self.subnet.nodes {
            if n.is_switch() {
                if let Some(si) = &n.switch_info {
                    if si.linear_fdb_cap > 0 {
                        limit = limit.min(si.linear_fdb_cap.saturating_sub(1));
                    }
                }
                let current = n
                    .ports
                    .first()
                    .and_then(|p| p.info.as_ref())
                    .map_or(0, |i| i.lid);
                reqs.push(LidRequest {
                    guid: n.info.node_guid,
                    lmc: 0,
                    current,
                });
            } else {
                for p in n.ports.iter().skip(1).filter(|p| p.path.is_some()) {
                    let current = p.info.as_ref().map_or(0, |i| i.lid);
                    reqs.push(LidRequest {
                        guid: p.guid,
                        lmc: self.cfg.lmc,
                        current,
                    });
                }
            }
        }
        let mut known = self.stored.clone();
        known.extend(self.lids.iter().map(|(k, v)| (*k, *v)));
        self.lids = lids::assign(&reqs, &known, limit)?;
        self.stats.lids = self.lids.values().map(|(_, lmc)| 1usize << lmc).sum();
        self.stored.extend(self.lids.iter().map(|(k, v)| (*k, *v)));
        self.store.save(&self.stored)?;
        self.sm_lid = self
            .lids
            .get(&self.local.port_guid)
            .map_or(self.sm_lid, |l| l.0);

        // Routes.
        let lids_map = &self.lids;
        let (fabric, _ids) = self.subnet.to_fabric(|g| lids_map.get(&g).copied())?;
        let csr = Csr::new(&fabric);
        let assignment = LidAssignment::from_snapshot(&csr);
        let opts = RouteOptions::default()
            .with_threads(self.cfg.routing_threads.max(1))
            .with_fallback(self.cfg.routing_fallback.clone())
            .with_allow_unreachable(true);
        let t0 = std::time::Instant::now();
        let rerouted = self.try_reroute(&csr, &assignment, &opts);
        self.stats.rerouted = rerouted.is_some();
        let routes = match rerouted {
            Some(r) => r,
            None => route_with_fallback(&*self.cfg.routing.engine(), &csr, &assignment, &opts)?,
        };
        self.stats.routing_wall = t0.elapsed();
        self.stats.routing_engine = routes.engine().to_owned();
        let max_lid = self
            .lids
            .values()
            .map(|&(l, m)| l + (1 << m) - 1)
            .max()
            .unwrap_or(1);

        // Switches: SwitchInfo, changed LFT blocks, port 0 and external ports.
        for s in 0..csr.switch_count() {
            let guid = csr.switch_guid[s].0;
            let Some(&n) = self.subnet.by_guid.get(&guid) else {
                continue;
            };
            if self.locked.contains(&guid) {
                continue;
            }
            let read = self.subnet.nodes[n].switch_info;
            let mut si = read.unwrap_or_default();
            si.linear_fdb_top = max_lid;
            si.life_time_value = self.cfg.packet_life_time;
            // Discovery cleared the latch before reading the ports; clearing it again
            // here would swallow a change made since, which that discovery missed.
            si.port_state_change = false;
            // Nothing to write when the switch already holds these values.
            let same = read.is_some_and(|r| {
                r.linear_fdb_top == si.linear_fdb_top && r.life_time_value == si.life_time_value
            });
            if !same {
                let mut data = [0u8; 64];
                si.emit_into(&mut data).ok();
                self.submit(Op::SetSwitchInfo { node: n }, Method::Set, 0, Some(data));
            }
            // The mirror of what was written is only good while the switch keeps it: one
            // that missed the previous sweep or whose port-0 LID is not the one we gave
            // it (power-cycled: LID, LFT and SL2VL are volatile) gets every table again.
            let cur_lid = self.subnet.nodes[n]
                .ports
                .first()
                .and_then(|p| p.info.as_ref())
                .map_or(0, |i| i.lid);
            let assigned = self.lids.get(&guid).map_or(0, |l| l.0);
            if cur_lid != assigned || !self.previous_guids.contains(&guid) {
                self.programmed.remove(&guid);
                self.programmed_sl2vl.retain(|&(g, _), _| g != guid);
            }
            let lft = routes.lft(s);
            let old = self.programmed.get(&guid).cloned();
            let mut written = old.clone().unwrap_or_default();
            // Whole blocks, so the mirror holds every byte that is written.
            let blocks = usize::from(max_lid) / 64 + 1;
            written.resize(lft.len().max(blocks * 64), 0xFF);
            for block in 0..=usize::from(max_lid) / 64 {
                let mut ports = [0xFFu8; 64];
                for (i, p) in ports.iter_mut().enumerate() {
                    *p = lft.get(block * 64 + i).copied().unwrap_or(0xFF);
                }
                let before = old
                    .as_ref()
                    .and_then(|o| o.get(block * 64..block * 64 + 64));
                let changed = before.map_or(ports.len(), |b| {
                    b.iter().zip(&ports).filter(|(x, y)| x != y).count()
                });
                if changed == 0 {
                    continue;
                }
                self.stats.lft_entries += changed as u64;
                self.submit(
                    Op::SetLft {
                        node: n,
                        block: block as u16,
                    },
                    Method::Set,
                    block as u32,
                    None,
                );
                self.stats.lft_blocks += 1;
                if let Some(dst) = written.get_mut(block * 64..block * 64 + 64) {
                    dst.copy_from_slice(&ports);
                }
            }
            self.programmed.insert(guid, written);
            // Engines that use VLs for deadlock freedom (DOR on tori, LASH, DFSSSP) give
            // an SL -> VL map per output port; without it on the switches the freedom
            // they computed would not exist on the wire. One Set per output port covers
            // every input port (the all-inputs wildcard) where the switch accepts the
            // wildcard (SwitchInfo.OptimizedSLtoVLMappingProgramming); elsewhere (ibsim's
            // switches, older silicon) one Set per input port (0 and every cabled one),
            // or the unset pairs keep the switch's default map.
            if routes.vls_used() > 1 || routes.has_sls() {
                let wildcard = self.subnet.nodes[n]
                    .switch_info
                    .is_some_and(|si| si.optimized_sl_to_vl_mapping_programming != 0);
                let inputs: Vec<u8> = if wildcard {
                    Vec::new()
                } else {
                    (0..=self.subnet.nodes[n].info.num_ports)
                        .filter(|&i| {
                            i == 0 || self.subnet.nodes[n].ports[usize::from(i)].peer.is_some()
                        })
                        .collect()
                };
                for p in 1..=self.subnet.nodes[n].info.num_ports {
                    if self.subnet.nodes[n].ports[usize::from(p)].peer.is_none() {
                        continue;
                    }
                    let Some(vls) = routes.sl2vl(s, p) else {
                        continue;
                    };
                    if self.programmed_sl2vl.get(&(guid, p)) == Some(&vls) {
                        continue;
                    }
                    let mut data = [0u8; 64];
                    SlToVlMappingTable {
                        map: SlToVlMap::from_vls(vls),
                    }
                    .emit_into(&mut data)
                    .ok();
                    if wildcard {
                        let modifier =
                            ibsm_wire::attr::modifier::SlToVlMod::all_inputs_to(p).encode();
                        self.submit(
                            Op::SetSl2Vl { node: n, port: p },
                            Method::Set,
                            modifier,
                            Some(data),
                        );
                    }
                    for &i in &inputs {
                        let modifier = ibsm_wire::attr::modifier::SlToVlMod::pair(i, p).encode();
                        self.submit(
                            Op::SetSl2Vl { node: n, port: p },
                            Method::Set,
                            modifier,
                            Some(data),
                        );
                    }
                    self.programmed_sl2vl.insert((guid, p), vls);
                    // Every VL in use gets an equal share of the low-priority table, so
                    // no lane the engine relies on is starved.
                    let mut block = ibsm_wire::VlArbBlock::default();
                    let used = routes.vls_used().clamp(1, 15);
                    for vl in 0..used {
                        block
                            .set(usize::from(vl), ibsm_wire::VlArbEntry { vl, weight: 64 })
                            .ok();
                    }
                    let mut data = [0u8; 64];
                    ibsm_wire::VlArbitrationTable { entries: block }
                        .emit_into(&mut data)
                        .ok();
                    let modifier = ibsm_wire::attr::modifier::VlArbMod {
                        part: ibsm_wire::attr::modifier::VlArbPart::Low0To31,
                        port: u16::from(p),
                    }
                    .encode();
                    self.submit(
                        Op::SetVlArb { node: n, port: p },
                        Method::Set,
                        modifier,
                        Some(data),
                    );
                }
            }
        }

        // P_Key tables from the partition policy, before the PortInfo Sets that turn
        // switch enforcement on.
        self.program_pkeys();

        // Every port's PortInfo: LIDs, SM address, keys, per-link MTU and VLs.
        self.desired.clear();
        for n in 0..self.subnet.nodes.len() {
            let node = &self.subnet.nodes[n];
            let ports: Vec<u8> = if node.is_switch() {
                (0..=node.info.num_ports).collect()
            } else {
                (1..=node.info.num_ports)
                    .filter(|&p| node.ports[usize::from(p)].path.is_some())
                    .collect()
            };
            for p in ports {
                if let Some(want) = self.desired_port_info(n, p) {
                    self.desired.insert((n, p), want);
                }
            }
        }
        // Ports whose link is trained (Init) are armed in the same Set that configures
        // them: Armed carries no data, so it is safe before the LFTs are written, and it
        // saves one SMP per port. Activation waits for every LFT block.
        let sets: Vec<((NodeIx, u8), PortInfo)> = self
            .desired
            .iter()
            .filter_map(|(&(n, p), want)| {
                let rec = &self.subnet.nodes[n].ports[usize::from(p)];
                let cur = rec.info.as_ref()?;
                let mut want = *want;
                let arm = p != 0 && rec.peer.is_some() && cur.port_state == PortState::Init;
                if arm {
                    want.port_state = PortState::Armed;
                }
                (arm || needs_set(cur, &want)).then_some(((n, p), want))
            })
            .collect();
        for ((n, p), want) in sets {
            self.submit_port_set(n, p, want);
        }
        // The automatic rebalance waits for quiet after the last change the routes were
        // repaired for; a sweep that finds nothing new keeps the wait, a recompute ends
        // it.
        if self.stats.rerouted {
            let changed = self
                .routed_csr
                .as_ref()
                .is_none_or(|prev| !crate::reroute::same_fabric(prev, &csr));
            if changed || self.rebalance_at.is_none() {
                self.rebalance_at = self.cfg.rebalance_after.map(|d| now + d);
            }
        } else {
            self.rebalance_at = None;
        }
        self.fabric = Some(fabric);
        self.routes = Some(routes);
        self.routed_csr = Some(csr);
        self.rebalance_pending = false;
        Ok(())
    }

    /// Repairs the routes in force for `csr` when the fabric only lost links or nodes
    /// since they were computed (see `SmConfig::reroute_on_loss`); `None` means "recompute
    /// from scratch" (option off, engine without incremental re-route, anything grew or
    /// moved, or the re-route failed).
    fn try_reroute(
        &self,
        csr: &Csr,
        assignment: &LidAssignment,
        opts: &RouteOptions,
    ) -> Option<Routes> {
        let kind = self.cfg.routing;
        if !self.cfg.reroute_on_loss || !kind.incremental_reroute() || self.rebalance_pending {
            return None;
        }
        let (prev, prev_csr) = (self.routes.as_ref()?, self.routed_csr.as_ref()?);
        // Routes a fallback engine produced are not the configured engine's to repair.
        if prev.engine() != kind.name() {
            return None;
        }
        let old_index = crate::reroute::losses_only(prev_csr, csr)?;
        let lft_len = crate::reroute::lft_len(csr);
        let live = crate::reroute::live_lids(csr, lft_len);
        let carried = prev.carry_over(&old_index, lft_len, &live);
        // Without fallback: a failed repair falls back to a full recompute, which runs
        // the configured fallback chain itself.
        let opts = opts.clone().with_fallback(Vec::new());
        kind.engine().reroute(csr, assignment, &opts, &carried).ok()
    }

    fn desired_port_info(&self, n: NodeIx, p: u8) -> Option<PortInfo> {
        let node = &self.subnet.nodes[n];
        let rec = node.ports.get(usize::from(p))?;
        let cur = rec.info?;
        let guid = if node.is_switch() {
            node.info.node_guid
        } else {
            rec.guid
        };
        if self.locked.contains(&guid) {
            return None;
        }
        let mut want = cur;
        // Fields that request no change on Set.
        want.port_state = PortState::NoChange;
        want.port_phys_state = ibsm_wire::PhysPortState::from(0);
        want.link_down_default_state = ibsm_wire::LinkDownDefaultState::from(0);
        want.link_width_enabled = ibsm_wire::LinkWidthMask(0);
        want.link_speed_enabled = ibsm_wire::LinkSpeedMask(0);
        let is_lid_port = !node.is_switch() || p == 0;
        if is_lid_port {
            let (lid, lmc) = self.lids.get(&guid).copied().unwrap_or((0, 0));
            want.lid = lid;
            want.lmc = lmc;
            want.master_sm_lid = self.sm_lid;
            want.master_sm_sl = self.cfg.sm_sl;
            want.gid_prefix = self.cfg.subnet_prefix;
            want.subnet_timeout = self.cfg.subnet_timeout;
            if let Some(k) = mkey::key_for(self.cfg.m_key, guid) {
                want.m_key = k;
                want.m_key_protect_bits = self.cfg.m_key_protect;
                want.m_key_lease_period = self.cfg.m_key_lease;
            }
            want.client_reregister = self.cfg.client_reregister && cur.lid != lid;
        }
        if p != 0 {
            if let Some((pn, pp)) = rec.peer {
                if let Some(peer) = self.subnet.nodes[pn]
                    .ports
                    .get(usize::from(pp))
                    .and_then(|r| r.info)
                {
                    want.neighbor_mtu = min_mtu(cur.mtu_cap, peer.mtu_cap);
                    want.operational_vls = VlCap::from(min_vls(cur.vl_cap, peer.vl_cap));
                }
            }
        }
        if let Some(e) = self.planned_enforcement(n, p) {
            want.partition_enforcement_inbound = e.inbound;
            want.partition_enforcement_outbound = e.outbound;
        }
        Some(want)
    }

    fn submit_port_set(&mut self, n: NodeIx, p: u8, want: PortInfo) {
        let mut data = [0u8; 64];
        want.emit_into(&mut data).ok();
        self.stats.port_sets += 1;
        self.submit(
            Op::SetPortInfo { node: n, port: p },
            Method::Set,
            u32::from(p),
            Some(data),
        );
    }

    /// Activates every linked port that is Armed (the LFTs are all written by now).
    fn activate_armed(&mut self) {
        let todo: Vec<((NodeIx, u8), PortInfo)> = self
            .desired
            .iter()
            .filter(|((n, p), _)| {
                let rec = &self.subnet.nodes[*n].ports[usize::from(*p)];
                *p != 0
                    && rec.peer.is_some()
                    && rec.info.is_some_and(|i| i.port_state == PortState::Armed)
            })
            .map(|(k, v)| (*k, *v))
            .collect();
        for ((n, p), mut want) in todo {
            want.port_state = PortState::Active;
            want.client_reregister = false;
            self.submit_port_set(n, p, want);
        }
    }

    // ---------------------------------------------------------------- traps

    fn on_unsolicited(&mut self, now: Instant, rx: &Received) {
        let mad = &rx.mad;
        if mad.len() < 64 {
            return;
        }
        // SA requests (class 0x03): answered by the SA when there is one (`sa.rs`).
        if mad[1] == 0x03 {
            self.on_sa(now, rx);
            return;
        }
        let attr = u16::from_be_bytes([mad[16], mad[17]]);
        if attr == u16::from(SmAttributeId::SmInfo) && (mad[1] == 0x01 || mad[1] == 0x81) {
            self.on_sm_info(now, rx);
            return;
        }
        if mad[1] != 0x01 || mad[3] != 0x05 {
            return;
        }
        // Answer the trap so the SMA stops re-sending it: same TID, attribute and data.
        let Ok(mut smp) = LidSmp::parse(mad) else {
            return;
        };
        smp.method = Method::TrapRepress;
        smp.response = false;
        let addr = Address::Lid(LidAddress::smp(rx.slid));
        self.out.push_back(Outgoing {
            id: None,
            addr,
            mad: smp.to_bytes().to_vec(),
        });
        let Ok(notice) = Notice::parse(&smp.data) else {
            return;
        };
        // Subscribers (InformInfo) get the trap as an SA Report.
        self.forward_to_sa_subscribers(now, &notice);
        let number = notice.trap_number;
        self.events.push_back(SmEvent::Trap {
            number,
            issuer_lid: notice.issuer_lid,
        });
        match number {
            256 => {
                let key = u64::from_be_bytes(smp.data[24..32].try_into().unwrap_or([0; 8]));
                self.events.push_back(SmEvent::MKeyViolation {
                    lid: notice.issuer_lid,
                    key,
                });
            }
            // Link state changes and local changes: nothing to do while the running
            // discovery has yet to read the issuer (it will read the new state then).
            128 | 144 | 145 | 64 | 65 if self.discovery_will_see(notice.issuer_lid) => {}
            // A switch's link went up or down: its PortStateChange latch tells whether
            // a sweep has seen that (see `on_port_state_trap`).
            128 => self.on_port_state_trap(now, notice.issuer_lid),
            // 144 (capability mask, NodeDescription or other local change: e.g. IsSM
            // set by an SM starting) and 145 (system image GUID) leave no latch to read,
            // and 64/65 (GID in/out of service, normally the SM's own Reports) are rare:
            // sweep.
            144 | 145 | 64 | 65 => self.request_heavy_sweep(now),
            _ => {}
        }
    }
}

impl SubnetManager {
    /// Whether a change reported by the port at `issuer_lid` will be seen by the running
    /// heavy sweep: it is still discovering and has not reached that port yet, so its
    /// NodeInfo and PortInfo Gets (and those of the links explored from it) come after
    /// the change. A port already read, an issuer the LIDs in force do not name (the
    /// first sweep, a LID we did not give), or any other phase: not seen, sweep again.
    fn discovery_will_see(&self, issuer_lid: u16) -> bool {
        if self.phase != Phase::Discover {
            return false;
        }
        let Some(guid) = self.guid_of_lid(issuer_lid) else {
            return false;
        };
        // A switch this sweep reached: its ports are read once its PortStateChange
        // latch is known (`switch_latch_done`).
        if let Some(&latch) = self.latches.get(&guid) {
            return latch == Latch::Pending;
        }
        // A switch is keyed by its node GUID; a CA port by its port GUID, recorded once
        // the sweep reached that port.
        let reached = self.subnet.by_guid.contains_key(&guid)
            || self
                .subnet
                .nodes
                .iter()
                .any(|n| !n.is_switch() && n.ports.iter().any(|p| p.guid == guid));
        !reached
    }

    /// The port GUID (switches: node GUID) whose LID range in force holds `lid`.
    fn guid_of_lid(&self, lid: u16) -> Option<u64> {
        if lid == 0 {
            return None;
        }
        self.lids
            .iter()
            .find(|&(_, &(base, lmc))| {
                lid >= base && u32::from(lid) < u32::from(base) + (1u32 << lmc)
            })
            .map(|(&g, _)| g)
    }

    /// A trap 128 (a switch port's link went up or down) whose issuer the running or
    /// last heavy sweep has already read.
    ///
    /// Both switches of a cut cable trap, and the second trap often arrives after the
    /// sweep the first one started has read its issuer. Discovery clears each switch's
    /// PortStateChange latch before reading its ports (`switch_latch_done`), so a change
    /// the sweep did not see leaves the latch set: one SwitchInfo Get (as a light sweep
    /// does) tells whether another heavy sweep is needed. When the latch cannot tell
    /// (not Master, an issuer we gave no switch LID, a switch whose latch read failed)
    /// or the Get fails, sweep.
    fn on_port_state_trap(&mut self, now: Instant, issuer_lid: u16) {
        let target = self
            .guid_of_lid(issuer_lid)
            .filter(|_| self.role == Role::Master)
            .filter(|g| self.latches.get(g) == Some(&Latch::Clean))
            .and_then(|g| {
                let n = *self.subnet.by_guid.get(&g)?;
                Some((self.subnet.nodes[n].path, g))
            });
        match target {
            Some((path, guid)) => self.submit(
                Op::CheckSwitchInfo {
                    path,
                    guid,
                    sweep: self.heavy_sweeps,
                },
                Method::Get,
                0,
                None,
            ),
            None => self.request_heavy_sweep(now),
        }
    }
}

impl SubnetManager {
    /// SMInfo from another SM: an answer to the election's probes and polls, or a
    /// request (Get, or a Set with a control code) to answer.
    fn on_sm_info(&mut self, now: Instant, rx: &Received) {
        let mad = &rx.mad;
        if mad[3] & 0x80 != 0 {
            let _ = self.election.handle_response(dur(now), mad);
        } else {
            let key = u64::from_be_bytes(mad[24..32].try_into().unwrap_or([0; 8]));
            let ours = self.key_for_port(self.local.port_guid);
            let (addr, guid) = self.requester_of(rx);
            let requester = Requester {
                m_key_authenticated: ours == 0 || key == ours,
                guid,
                addr,
            };
            if let Ok(resp) = self.election.handle_request(dur(now), mad, &requester) {
                self.out.push_back(Outgoing {
                    id: None,
                    addr: rx.reply_address(),
                    mad: resp.to_vec(),
                });
                // An SM we do not know yet (one started on a port that was already up:
                // no trap, and no sweep of ours has probed it): ask for its SMInfo now
                // rather than at the next heavy sweep.
                self.election.learn(dur(now), &requester);
            }
        }
        self.drain_election(now);
    }

    /// What this SM can tell about the sender of a request: how to reach it (its source
    /// LID; for a directed-route request, the return path read backwards, a route from
    /// here to it) and its port GUID (from the LIDs in force, or the port that route
    /// ends at in the last sweep's model).
    fn requester_of(&self, rx: &Received) -> (Option<SmAddr>, Option<u64>) {
        let by_lid = |lid: u16| {
            (lid != 0 && lid != ibsm_wire::PERMISSIVE_LID)
                .then(|| (Some(SmAddr::Lid(lid)), self.guid_of_lid(lid)))
        };
        if rx.mad.get(1) != Some(&0x81) {
            return by_lid(rx.slid).unwrap_or((None, None));
        }
        let Ok(v) = DrSmpView::new_checked(&rx.mad[..]) else {
            return (None, None);
        };
        // A request whose first part was LID-routed: its sender has that LID.
        if let Some(found) = by_lid(v.dr_slid()) {
            return found;
        }
        let n = usize::from(v.hop_count());
        let back = v.return_path();
        if n == 0 || n > ibsm_wire::smp::MAX_HOPS {
            return (None, None);
        }
        let ports: Vec<u8> = (1..=n).rev().map(|i| back[i]).collect();
        let Ok(path) = DrPath::from_ports(&ports) else {
            return (None, None);
        };
        let guid = self.port_at_path(&path).map(|(node, port)| {
            let rec = &self.subnet.nodes[node];
            if rec.is_switch() {
                rec.info.node_guid
            } else {
                rec.ports[usize::from(port)].guid
            }
        });
        (Some(SmAddr::Directed(path)), guid)
    }

    /// The node and port a directed route from this SM ends at, walked along the
    /// cables of the current model (`None` where it leaves what the model knows).
    fn port_at_path(&self, path: &DrPath) -> Option<(NodeIx, u8)> {
        let mut at = self.subnet.nodes.iter().position(|n| n.path.is_local())?;
        let mut port = self.subnet.nodes[at].info.local_port_num;
        for &out in path.ports() {
            (at, port) = self.subnet.nodes[at].ports.get(usize::from(out))?.peer?;
        }
        Some((at, port))
    }

    /// Sends what the election wants sent and acts on what it decided.
    fn drain_election(&mut self, now: Instant) {
        while let Some(t) = self.election.poll_transmit() {
            let addr = match t.to {
                SmAddr::Lid(lid) => Address::Lid(LidAddress::smp(lid)),
                SmAddr::Directed(path) => Address::Directed(DrAddress::direct(path)),
            };
            self.out.push_back(Outgoing {
                id: None,
                addr,
                mad: t.mad.to_vec(),
            });
        }
        while let Some(ev) = self.election.poll_event() {
            match ev {
                ElectionEvent::StateChanged { to, .. } => {
                    self.role = role_of(to);
                    self.events
                        .push_back(SmEvent::RoleChanged { role: self.role });
                    if to == SmState::Master && self.phase == Phase::Idle {
                        // Taking over (handover or a lost master): configure now, keeping
                        // the LIDs the ports carry.
                        self.request_heavy_sweep(now);
                    }
                }
                // The election asks for a sweep to learn which SMs share the subnet
                // (begin_sweep, a probe per IsSM port, sweep_complete). A heavy sweep
                // still discovering is that sweep: the election collects every SM
                // probed until our sweep_complete, whenever it asked. Queuing another
                // one made every start sweep twice, since the election's first request
                // (it is born Discovering) arrives right after `start` began sweeping.
                // Once discovery has passed (elect, program, activate, light), the
                // running sweep can no longer see what prompted the request: sweep
                // again when it ends.
                // (A lost Master always comes with a SweepNeeded: the Standby is
                // Discovering again.)
                ElectionEvent::SweepNeeded | ElectionEvent::MasterLost { .. }
                    if self.phase != Phase::Discover =>
                {
                    self.request_heavy_sweep(now);
                }
                ElectionEvent::UnauthenticatedHigherPrioritySm { guid, .. } => {
                    self.events.push_back(SmEvent::UnauthenticatedSm { guid });
                }
                _ => {}
            }
        }
    }
}

/// Whether a port's current PortInfo differs from what the SM wants in a field the
/// SM owns.
fn needs_set(cur: &PortInfo, want: &PortInfo) -> bool {
    cur.lid != want.lid
        || cur.lmc != want.lmc
        || cur.master_sm_lid != want.master_sm_lid
        || cur.master_sm_sl != want.master_sm_sl
        || cur.gid_prefix != want.gid_prefix
        || cur.subnet_timeout != want.subnet_timeout
        || cur.neighbor_mtu != want.neighbor_mtu
        || cur.operational_vls != want.operational_vls
        || cur.m_key_protect_bits != want.m_key_protect_bits
        || cur.m_key_lease_period != want.m_key_lease_period
        || cur.partition_enforcement_inbound != want.partition_enforcement_inbound
        || cur.partition_enforcement_outbound != want.partition_enforcement_outbound
        // Level 1 hides the key on reads; protect bits and lease still tell.
        || (cur.m_key != 0 && cur.m_key != want.m_key)
}

fn min_mtu(a: Mtu, b: Mtu) -> Mtu {
    let (x, y) = (u8::from(a), u8::from(b));
    Mtu::from(match (x, y) {
        (0, v) | (v, 0) => v,
        _ => x.min(y),
    })
}

fn min_vls(a: VlCap, b: VlCap) -> u8 {
    let (x, y) = (u8::from(a), u8::from(b));
    match (x, y) {
        (0, v) | (v, 0) => v,
        _ => x.min(y),
    }
}
