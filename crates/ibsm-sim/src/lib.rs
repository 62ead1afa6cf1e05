//! `ibsm-sim`: a deterministic InfiniBand fabric simulator for SM development and tests.
//!
//! Every node runs a Subnet Management Agent (the [`Agent`] trait; `ibsm-sma` by
//! default), links carry SMPs with per-hop latency and loss, and time is virtual: an
//! event queue that [`Sim::run_until`] / [`Sim::step`] drain, so a 60 s M_Key lease
//! expires without waiting and one seed always gives the bit-identical run.
//!
//! * **Directed routing** follows the hop-by-hop rules of IBA Vol. 1 §14.2.2 in both
//!   directions (hop pointer, ReturnPath, DrSLID/DrDLID LID-routed legs); SMPs are
//!   dropped where a port is down or the path is invalid.
//! * **LID routing** follows the LFTs the SM programmed into the switches' SMAs and
//!   the port states: SMPs (VL15) pass ports in Init/Armed/Active, other traffic needs
//!   Active. A wrong LFT really breaks delivery.
//! * **SMs attach** at any port ([`Sim::attach_sm`]), each getting its own
//!   [`SimPort`], an `ibsm_transport::Transport`. SMInfo requests and traps go to the
//!   attached SM, everything else to the node's SMA.
//! * **Faults** ([`Fault`]), applied now or scheduled on the timeline, also from a
//!   small text script ([`Sim::load_script`]).
//! * **Counters** per node, per attribute and per drop reason, an optional trace, a
//!   digest of the whole run, and [`Sim::verify`], the checks the diagnostics make.
//! * **Port counters**: every node's performance agent (`ibsm_sma::Pma` in
//!   [`SmaAgent`]) answers PerfMgt (class 0x04) MADs; its counters count what the
//!   simulator forwards, drops and the link faults ([`Sim::port_counter`]), plus
//!   synthetic traffic ([`Sim::add_traffic`]).
//! * **Building** from an `ibsm-topology` fabric ([`Sim::from_fabric`]), an ibsim or
//!   ibnetdiscover file ([`Sim::from_net`]) or node by node ([`Sim::add_node`]).
//! * **An ibsim-compatible server** (`server`, Linux): OpenSM and infiniband-diags
//!   under ibsim's umad2sim preload run against these SMAs (example `ibsim_server`).
//!
//! Memory: the simulator itself needs about 700 bytes per node, ports included (9 MiB for
//! the 13,284-node 3-level radix-36 fat tree); with [`SmaAgent`] each switch also holds
//! its LFT ([`SimConfig::lft_cap`] bytes, 48 KiB by default), SL-to-VL tables
//! (8 x (ports + 1)^2 bytes) and MFT, and every node its PMA's counters (about 270 bytes
//! per port), so that fat tree takes about 170 MiB, 76 MiB of
//! it LFTs.
//!
//! # Example
//!
//! ```
//! use ibsm_sim::{Sim, SimConfig, NodeSetup, NodeKind};
//! use ibsm_transport::{Address, DrAddress, Incoming, Instant, Transport};
//! use ibsm_wire::{DrPath, DrSmp, Method, SmAttributeId, NodeInfo, DrSmpView};
//!
//! // Every node runs ibsm-sma (the default agent).
//! let mut sim: Sim = Sim::new(SimConfig::default());
//! let ca = sim.add_node(NodeSetup::new(0x10, NodeKind::Ca, 1, "host"))?;
//! let sw = sim.add_node(NodeSetup::new(0x20, NodeKind::Switch, 8, "switch"))?;
//! sim.connect(ca, 1, sw, 5)?;
//! let mut sm = sim.attach_sm(ca, 1)?;
//!
//! // SubnGet(NodeInfo) of the switch, one hop away through port 1.
//! let path = DrPath::from_ports(&[1])?;
//! let req = DrSmp::request(Method::Get, SmAttributeId::NodeInfo.into(), 0, 7, 0, &path);
//! sm.send(&Address::Directed(DrAddress::direct(path)), &req.to_bytes())?;
//! let Ok(Incoming::Mad(rx)) = sm.recv(Instant::from_millis(1)) else { panic!() };
//! let view = DrSmpView::new_checked(&rx.mad[..])?;
//! assert_eq!(view.return_path()[1], 5); // the switch saw it arrive on port 5
//! assert_eq!(NodeInfo::parse(view.attr_data())?.node_guid, 0x20);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod agent;
mod client;
mod core;
mod counters;
mod error;
mod fabric;
mod fault;
mod handle;
mod queue;
mod rng;
#[cfg(target_os = "linux")]
pub mod server;
mod sma;
pub mod testing;
mod verify;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use ibsm_transport::Instant;

pub use agent::{Agent, AgentTransmit, ForwardingState, LinkRequest, NodeKind, NodeSetup};
pub use client::{HostSaClient, SaAnswer};
pub use core::{MAD_PACKET_OCTETS, TraceKind, TraceRecord};
pub use counters::{AttrCounters, Counters, DropReason, NodeCounters};
pub use error::SimError;
pub use fault::{Fault, parse_duration};
pub use handle::SimPort;
pub use rng::{SplitMix64, ppm};
pub use sma::SmaAgent;
pub use verify::{McastFault, McastProblem, PathFault, PathProblem, VerifyReport};

use crate::core::{Attach, Core};

/// A node of the simulation (its index, stable for the simulation's life).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeIdx(pub u32);

/// Knobs of a simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimConfig {
    /// Seed of every random choice (drops, babble bytes).
    pub seed: u64,
    /// Time to cross one link.
    pub hop_latency: Duration,
    /// Time an SMA takes to answer.
    pub sma_time: Duration,
    /// Time a link takes to train again after a retrain request, reset or replacement.
    pub retrain_time: Duration,
    /// Loss on every link, parts per million.
    pub drop_ppm: u32,
    /// LinearFDBCap of the switches [`Sim::from_fabric`] creates. The default, 49152,
    /// is the whole unicast LID space, as on real switches; with `SmaAgent` each
    /// switch holds that many LFT bytes, which dominates memory on big fabrics
    /// (1,620 switches: 76 MiB). A cap just above the highest LID the SM will assign
    /// cuts it to switches x LIDs bytes.
    pub lft_cap: u16,
    /// Lane speed of every port [`Sim::from_fabric`] creates (all 4x): `Qdr` (default)
    /// as before; `Fdr`, `Edr`, `Hdr`, `Ndr` and `Xdr` give ports that advertise
    /// IsExtendedSpeedsSupported (and the HDR/NDR CapabilityMask2 bits) and answer
    /// LinkSpeedExt* (XDR: LinkSpeedExt*2) to an SM that sets attribute-modifier bit 31.
    pub link_speed: ibsm_topology::ActiveSpeed,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            hop_latency: Duration::from_nanos(100),
            sma_time: Duration::from_micros(1),
            retrain_time: Duration::from_millis(10),
            drop_ppm: 0,
            lft_cap: 0xC000,
            link_speed: ibsm_topology::ActiveSpeed::Qdr,
        }
    }
}

/// A simulated fabric; see the [crate docs](crate).
///
/// `Sim` and its [`SimPort`]s share one state (`Rc<RefCell<..>>`): they live in one
/// thread, which is what makes runs deterministic.
pub struct Sim<A: Agent = SmaAgent> {
    core: Rc<RefCell<Core<A>>>,
}

impl<A: Agent> std::fmt::Debug for Sim<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.core.borrow();
        write!(f, "Sim({} nodes, now {})", c.nodes.len(), c.now)
    }
}

impl<A: Agent> Sim<A> {
    /// An empty fabric.
    #[must_use]
    pub fn new(cfg: SimConfig) -> Self {
        Self {
            core: Rc::new(RefCell::new(Core::new(cfg))),
        }
    }

    /// Adds a powered node with no links.
    ///
    /// # Errors
    /// [`SimError::DuplicateGuid`].
    pub fn add_node(&mut self, setup: NodeSetup) -> Result<NodeIdx, SimError> {
        let mut c = self.core.borrow_mut();
        if c.by_guid.contains_key(&setup.guid) {
            return Err(SimError::DuplicateGuid(setup.guid));
        }
        let guid = setup.guid;
        c.add_node(setup)
            .map(NodeIdx)
            .map_err(|msg| SimError::Fabric(format!("node {guid:#018x}: {msg}")))
    }

    /// Adds a powered node with no links even when another node already has its GUID
    /// (a cloned board, a broken SMA: what an SM's duplicate-GUID handling is tested
    /// against). [`Self::node_by_guid`] keeps naming the node added first.
    ///
    /// # Errors
    /// [`SimError::Fabric`] when the agent refuses the setup.
    pub fn add_clone(&mut self, setup: NodeSetup) -> Result<NodeIdx, SimError> {
        let mut c = self.core.borrow_mut();
        let guid = setup.guid;
        c.add_node(setup)
            .map(NodeIdx)
            .map_err(|msg| SimError::Fabric(format!("node {guid:#018x}: {msg}")))
    }

    /// Cables (a, pa) to (b, pb); the link trains at once (both SMAs see it come up).
    ///
    /// # Errors
    /// [`SimError::NoSuchNode`] / [`SimError::NoSuchPort`] (port 0 included),
    /// [`SimError::BadLink`] for a port already cabled or a loop-back cable.
    pub fn connect(&mut self, a: NodeIdx, pa: u8, b: NodeIdx, pb: u8) -> Result<(), SimError> {
        let mut c = self.core.borrow_mut();
        let sa = Self::ext_slot(&c, a, pa)?;
        let sb = Self::ext_slot(&c, b, pb)?;
        if sa == sb
            || c.slots[sa as usize].peer != u32::MAX
            || c.slots[sb as usize].peer != u32::MAX
        {
            return Err(SimError::BadLink {
                what: format!("node {} port {pa} to node {} port {pb}", a.0, b.0),
            });
        }
        c.cable(sa, sb);
        c.refresh_link(sa);
        Ok(())
    }

    fn ext_slot(c: &Core<A>, n: NodeIdx, p: u8) -> Result<u32, SimError> {
        let node = c
            .nodes
            .get(n.0 as usize)
            .ok_or_else(|| SimError::NoSuchNode(format!("index {}", n.0)))?;
        if p == 0 || p > node.setup.num_ports {
            return Err(SimError::NoSuchPort {
                node: format!("{:#018x}", node.setup.guid),
                port: p,
            });
        }
        Ok(node.base + u32::from(p))
    }

    /// Attaches an SM at (node, port) (port 0 on a switch) and returns its transport.
    /// The SM announces itself with [`Transport::set_is_sm`](ibsm_transport::Transport::set_is_sm).
    ///
    /// # Errors
    /// [`SimError::NoSuchNode`], [`SimError::NoSuchPort`],
    /// [`SimError::AlreadyAttached`].
    pub fn attach_sm(&mut self, node: NodeIdx, port: u8) -> Result<SimPort<A>, SimError> {
        self.attach(node, port, false)
    }

    /// Attaches a tool (a diagnostic, a second client) at (node, port), beside the SM
    /// there if any: it receives the answers to its own requests only, or requests too
    /// once it announces IsSM. Any number may share a port, as under ibsim.
    ///
    /// # Errors
    /// [`SimError::NoSuchNode`], [`SimError::NoSuchPort`].
    pub fn attach_tool(&mut self, node: NodeIdx, port: u8) -> Result<SimPort<A>, SimError> {
        self.attach(node, port, true)
    }

    fn attach(&mut self, node: NodeIdx, port: u8, shared: bool) -> Result<SimPort<A>, SimError> {
        let mut c = self.core.borrow_mut();
        let n = c
            .nodes
            .get(node.0 as usize)
            .ok_or_else(|| SimError::NoSuchNode(format!("index {}", node.0)))?;
        let guid = format!("{:#018x}", n.setup.guid);
        let valid = if n.is_switch() {
            port == 0
        } else {
            port >= 1 && port <= n.setup.num_ports
        };
        if !valid {
            return Err(SimError::NoSuchPort { node: guid, port });
        }
        if !shared
            && c.attach
                .iter()
                .any(|a| !a.detached && !a.shared && a.node == node.0 && a.port == port)
        {
            return Err(SimError::AlreadyAttached { node: guid, port });
        }
        c.attach.push(Attach {
            node: node.0,
            port,
            inbox: VecDeque::new(),
            detached: false,
            is_sm: false,
            shared,
            sent: VecDeque::new(),
        });
        Ok(SimPort {
            core: Rc::clone(&self.core),
            id: c.attach.len() - 1,
        })
    }

    /// The virtual clock.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.core.borrow().now
    }

    /// When the next event is due (`None`: the fabric is quiet).
    #[must_use]
    pub fn next_event_time(&self) -> Option<Instant> {
        self.core.borrow().next_event_time()
    }

    /// Processes one event; `false` if there was none.
    pub fn step(&mut self) -> bool {
        self.core.borrow_mut().step()
    }

    /// Processes every event due at or before `t`, then sets the clock to `t`.
    pub fn run_until(&mut self, t: Instant) {
        self.core.borrow_mut().run_until(t);
    }

    /// Runs the simulation until some attached SM has a MAD waiting or the clock
    /// reaches `deadline`, whichever is first (or an agent took a Set
    /// [`Self::pause_after_sets`] names); returns whether an SM has input. This is
    /// the heart of a driver for several SMs in one thread: each SM's earliest timer is
    /// a candidate deadline; after `advance`, poll every SM without blocking
    /// (`recv(now)`), let each react, repeat.
    pub fn advance(&mut self, deadline: Instant) -> bool {
        self.core.borrow_mut().advance(deadline)
    }

    /// [`Self::run_until`] `now + d`.
    pub fn run_for(&mut self, d: Duration) {
        let t = self.now() + d;
        self.run_until(t);
    }

    /// Processes events until none is left or `max_events` have run; returns how many
    /// ran.
    pub fn run_until_idle(&mut self, max_events: u64) -> u64 {
        let mut c = self.core.borrow_mut();
        let mut n = 0;
        while n < max_events && c.step() {
            n += 1;
        }
        n
    }

    /// Makes `node`'s agent lose every SubnSet of attribute `attr` (`lose: false` ends
    /// it): the SMP reaches the node and is dropped there, nothing is applied and no
    /// answer goes back, as from a board that fails to take that table. Gets of the
    /// attribute, and every other SMP, are served as before. What an SM's handling of
    /// a Set lost for good is tested against.
    pub fn lose_sets(&mut self, node: NodeIdx, attr: u16, lose: bool) {
        let mut c = self.core.borrow_mut();
        if lose {
            c.lose_sets.insert((node.0, attr));
        } else {
            c.lose_sets.remove(&(node.0, attr));
        }
    }

    /// Makes [`Self::advance`] return right after an agent has taken a SubnSet of
    /// attribute `attr` (applied or refused; `None`: never), so that a test can look
    /// at the fabric after every such Set, e.g. at the MFTs after each
    /// MulticastForwardingTable block, while the SM is changing them. Only `advance`
    /// pauses; [`Self::run_until`], [`Self::step`] and a port's `recv` run on (a Set
    /// taken under them makes the next `advance` return at once).
    pub fn pause_after_sets(&mut self, attr: Option<u16>) {
        let mut c = self.core.borrow_mut();
        c.pause_after = attr;
        c.paused = false;
    }

    /// Applies a fault now.
    pub fn apply(&mut self, fault: Fault) {
        self.core.borrow_mut().apply_fault(fault);
    }

    /// Schedules a fault at `at` (now, if `at` is past).
    pub fn schedule(&mut self, at: Instant, fault: Fault) {
        self.core.borrow_mut().schedule_fault(at, fault);
    }

    /// Schedules the faults of a script, times relative to now. One line each,
    /// `<time> <action> <args>`, `#` starts a comment; times as `1.5s`, `20ms`, `5us`;
    /// nodes as a GUID (`0x...`), an index (`n12`) or a description without spaces:
    ///
    /// ```text
    /// 1s     link-down 0x0002c90000000010 3
    /// 1.5s   link-up   0x0002c90000000010 3
    /// 2s     reset n12          # power-cycle
    /// 3s     remove n13
    /// 4s     guid n14 0x1234    # board replaced
    /// 0      drop-rate 0.01     # every link
    /// 0      link-drop-rate n1 2 0.5
    /// 0      latency 200ns      # per hop
    /// 0      link-latency n1 2 5us
    /// 0      sma-time 2us
    /// 5s     babble n3 1 1ms 100
    /// ```
    ///
    /// # Errors
    /// [`SimError::Script`] with the line number; nothing is scheduled then.
    pub fn load_script(&mut self, text: &str) -> Result<usize, SimError> {
        let lines = fault::split_script(text)?;
        let mut out = Vec::with_capacity(lines.len());
        {
            let c = self.core.borrow();
            for l in &lines {
                out.push((c.now + l.at, Self::script_fault(&c, l)?));
            }
        }
        let n = out.len();
        for (t, f) in out {
            self.schedule(t, f);
        }
        Ok(n)
    }

    fn script_fault(c: &Core<A>, l: &fault::ScriptLine) -> Result<Fault, SimError> {
        let err = |msg: String| SimError::Script { line: l.line, msg };
        let need = |n: usize| {
            if l.args.len() == n {
                Ok(())
            } else {
                Err(err(format!(
                    "{} takes {n} arguments, got {}",
                    l.action,
                    l.args.len()
                )))
            }
        };
        let node = |s: &str| -> Result<NodeIdx, SimError> {
            let found = if let Some(h) = s.strip_prefix("0x") {
                u64::from_str_radix(h, 16)
                    .ok()
                    .and_then(|g| c.by_guid.get(&g).copied())
            } else if let Some(i) = s.strip_prefix('n').and_then(|i| i.parse::<u32>().ok()) {
                ((i as usize) < c.nodes.len()).then_some(i)
            } else {
                c.nodes
                    .iter()
                    .position(|n| n.setup.description == s)
                    .map(|i| i as u32)
            };
            found
                .map(NodeIdx)
                .ok_or_else(|| err(format!("no node {s:?}")))
        };
        let port = |s: &str| s.parse::<u8>().map_err(|_| err(format!("bad port {s:?}")));
        let frac = |s: &str| {
            s.parse::<f64>()
                .ok()
                .filter(|f| (0.0..=1.0).contains(f))
                .map(ppm)
                .ok_or_else(|| err(format!("bad rate {s:?} (0..1)")))
        };
        let dur = |s: &str| parse_duration(s, l.line);
        let a = &l.args;
        Ok(match l.action.as_str() {
            "link-down" | "link-up" => {
                need(2)?;
                let (node, port) = (node(&a[0])?, port(&a[1])?);
                if l.action == "link-down" {
                    Fault::LinkDown { node, port }
                } else {
                    Fault::LinkUp { node, port }
                }
            }
            "reset" => {
                need(1)?;
                Fault::NodeReset { node: node(&a[0])? }
            }
            "remove" => {
                need(1)?;
                Fault::NodeRemove { node: node(&a[0])? }
            }
            "guid" => {
                need(2)?;
                let g = a[1]
                    .strip_prefix("0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .ok_or_else(|| err(format!("bad GUID {:?}", a[1])))?;
                Fault::GuidChange {
                    node: node(&a[0])?,
                    guid: g,
                }
            }
            "drop-rate" => {
                need(1)?;
                Fault::DropRate { ppm: frac(&a[0])? }
            }
            "link-drop-rate" => {
                need(3)?;
                Fault::LinkDropRate {
                    node: node(&a[0])?,
                    port: port(&a[1])?,
                    ppm: frac(&a[2])?,
                }
            }
            "latency" => {
                need(1)?;
                Fault::HopLatency {
                    latency: dur(&a[0])?,
                }
            }
            "link-latency" => {
                need(3)?;
                Fault::LinkLatency {
                    node: node(&a[0])?,
                    port: port(&a[1])?,
                    latency: dur(&a[2])?,
                }
            }
            "sma-time" => {
                need(1)?;
                Fault::SmaTime { time: dur(&a[0])? }
            }
            "babble" => {
                need(4)?;
                Fault::Babble {
                    node: node(&a[0])?,
                    port: port(&a[1])?,
                    interval: dur(&a[2])?,
                    count: a[3]
                        .parse()
                        .map_err(|_| err(format!("bad count {:?}", a[3])))?,
                }
            }
            other => return Err(err(format!("unknown action {other:?}"))),
        })
    }

    /// The node with this node GUID.
    #[must_use]
    pub fn node_by_guid(&self, guid: u64) -> Option<NodeIdx> {
        self.core.borrow().by_guid.get(&guid).copied().map(NodeIdx)
    }

    /// Number of nodes ever added (removed ones included).
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.core.borrow().nodes.len()
    }

    /// The node's identity.
    #[must_use]
    pub fn node_setup(&self, node: NodeIdx) -> Option<NodeSetup> {
        self.core
            .borrow()
            .nodes
            .get(node.0 as usize)
            .map(|n| n.setup.clone())
    }

    /// Whether the link through (node, port) is physically up.
    #[must_use]
    pub fn link_up(&self, node: NodeIdx, port: u8) -> bool {
        let c = self.core.borrow();
        c.slot_of(node.0, port)
            .is_some_and(|s| c.slots[s as usize].up)
    }

    /// The (node, port) cabled to (node, port).
    #[must_use]
    pub fn peer(&self, node: NodeIdx, port: u8) -> Option<(NodeIdx, u8)> {
        let c = self.core.borrow();
        let s = c.slot_of(node.0, port)?;
        let p = c.slots[s as usize].peer;
        (p != u32::MAX && port != 0).then(|| {
            let ps = c.slots[p as usize];
            (NodeIdx(ps.node), ps.num)
        })
    }

    /// Reads a node's agent (its SMA).
    ///
    /// # Panics
    /// If `node` is out of range.
    pub fn with_agent<R>(&self, node: NodeIdx, f: impl FnOnce(&A) -> R) -> R {
        f(&self.core.borrow().nodes[node.0 as usize].agent)
    }

    /// Changes a node's agent directly (test setups: preset keys, LIDs, tables).
    ///
    /// # Panics
    /// If `node` is out of range.
    pub fn with_agent_mut<R>(&mut self, node: NodeIdx, f: impl FnOnce(&mut A) -> R) -> R {
        f(&mut self.core.borrow_mut().nodes[node.0 as usize].agent)
    }

    /// Synthetic traffic: `octets` octets in `packets` packets sent out of (node, port),
    /// counted in its port counters and, when the link is up, as received by the other
    /// end (deterministic, no packets are simulated). Ignored for a port the node lacks.
    pub fn add_traffic(&mut self, node: NodeIdx, port: u8, octets: u64, packets: u64) {
        self.core
            .borrow_mut()
            .add_traffic(node.0, port, octets, packets);
    }

    /// Adds `n` to one port counter of (node, port) (data counters: 4-byte words), as a
    /// fault the simulator does not model would.
    pub fn add_port_counter(
        &mut self,
        node: NodeIdx,
        port: u8,
        counter: ibsm_sma::Counter,
        n: u64,
    ) {
        self.core.borrow_mut().count(node.0, port, counter, n);
    }

    /// The 64-bit value of one port counter of (node, port), as the node's performance
    /// agent holds it (0 without an agent or for a port the node lacks). What the
    /// simulator counts: every MAD put on a link counts [`MAD_PACKET_OCTETS`] octets
    /// and one packet at the sending port, and at the receiving port when it arrives;
    /// a packet lost on a link counts PortRcvErrors (PortLocalPhysicalErrors) at the
    /// receiver, one a port cannot send (down, or not Active for data) PortXmitDiscards
    /// (PortInactiveDiscards), a switch without a route for the DLID
    /// PortRcvSwitchRelayErrors (PortRcvErrors, PortDLIDMappingErrors) at the input
    /// port; a link going down counts LinkDowned and SymbolErrorCounter at both ends.
    #[must_use]
    pub fn port_counter(&self, node: NodeIdx, port: u8, counter: ibsm_sma::Counter) -> u64 {
        self.core
            .borrow()
            .nodes
            .get(node.0 as usize)
            .and_then(|n| n.agent.pma())
            .map_or(0, |p| p.get(port, counter))
    }

    /// A copy of the counters.
    #[must_use]
    pub fn counters(&self) -> Counters {
        self.core.borrow().counters()
    }

    /// A digest of every send, delivery and drop so far (time, node, port, attribute,
    /// TID): equal digests mean identical runs.
    #[must_use]
    pub fn digest(&self) -> u64 {
        self.core.borrow().digest()
    }

    /// Starts recording a [`TraceRecord`] per send, delivery and drop.
    pub fn enable_trace(&mut self) {
        let mut c = self.core.borrow_mut();
        if c.trace.is_none() {
            c.trace = Some(Vec::new());
        }
    }

    /// The records so far (recording continues).
    pub fn take_trace(&mut self) -> Vec<TraceRecord> {
        self.core
            .borrow_mut()
            .trace
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Makes (node, port) a member of multicast LID `mlid`, as a host attaches a QP
    /// to a group it joined (`receives: false` for a send-only member, which sends to
    /// the group but does not take its traffic). [`crate::HostSaClient`] does this for
    /// every join the SA accepts; [`Self::verify`] checks every group so made.
    pub fn join_multicast(&mut self, node: NodeIdx, port: u8, mlid: u16, receives: bool) {
        self.core
            .borrow_mut()
            .mcast
            .entry(mlid)
            .or_default()
            .insert((node.0, port), receives);
    }

    /// Ends (node, port)'s membership of `mlid`.
    pub fn leave_multicast(&mut self, node: NodeIdx, port: u8, mlid: u16) {
        let mut c = self.core.borrow_mut();
        if let Some(m) = c.mcast.get_mut(&mlid) {
            m.remove(&(node.0, port));
            if m.is_empty() {
                c.mcast.remove(&mlid);
            }
        }
    }

    /// The multicast memberships: `(MLID, node, port, receives)`, by MLID.
    #[must_use]
    pub fn multicast_members(&self) -> Vec<(u16, NodeIdx, u8, bool)> {
        let c = self.core.borrow();
        c.mcast
            .iter()
            .flat_map(|(&mlid, m)| m.iter().map(move |(&(n, p), &r)| (mlid, NodeIdx(n), p, r)))
            .collect()
    }

    /// Sends one data packet to multicast LID `mlid` from (node, port) (0 on a switch);
    /// the switches replicate it by their MFTs as the simulation runs.
    pub fn send_multicast(&mut self, node: NodeIdx, port: u8, mlid: u16) {
        self.core.borrow_mut().send_multicast(node.0, port, mlid);
    }

    /// How many packets to `mlid` (node, port) has received as a member.
    #[must_use]
    pub fn multicast_received(&self, node: NodeIdx, port: u8, mlid: u16) -> u64 {
        self.core
            .borrow()
            .mcast_rx
            .get(&(node.0, port, mlid))
            .copied()
            .unwrap_or(0)
    }

    /// Walks the programmed LFTs from every CA port to every LID and checks LID
    /// uniqueness and port states, and walks every multicast group's MFTs from each of
    /// its members ([`Self::join_multicast`]); see [`VerifyReport`].
    #[must_use]
    pub fn verify(&self) -> VerifyReport {
        verify::verify(&self.core.borrow())
    }

    /// Only the multicast part of [`Self::verify`] (the `mcast_*` fields), cheap
    /// enough to check the MFTs while an SM is changing them.
    #[must_use]
    pub fn verify_multicast(&self) -> VerifyReport {
        verify::verify_multicast(&self.core.borrow())
    }
}

#[cfg(test)]
mod tests;
