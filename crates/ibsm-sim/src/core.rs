// Over 800 lines: the event loop and the port/link table every event mutates are one state.
//! The simulation proper: nodes, the port/link table, the event queue and forwarding.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use ibsm_transport::{Incoming, Instant, Received};
use ibsm_wire::{
    DrAction, DrDiscard, DrNode, DrSmpView, MadHeaderView, MgmtClass, PERMISSIVE_LID, dr_outbound,
    dr_returning,
};

use crate::SimConfig;
use crate::agent::{Agent, LinkRequest, NodeKind, NodeSetup};
use crate::counters::{AttrCounters, Counters, DropReason};
use crate::fault::Fault;
use crate::queue::EventQueue;
use crate::rng::SplitMix64;
use ibsm_sma::Counter;

const NONE: u32 = u32::MAX;
const ATTR_SM_INFO: u16 = 0x0020;
const METHOD_TRAP: u8 = 0x05;
const CLASS_PERF: u8 = 0x04;
/// Octets a MAD occupies on the wire between the packet delimiters: LRH 8, BTH 12,
/// DETH 8, the 256-byte MAD, ICRC 4, VCRC 2 (no GRH inside a subnet). What the port
/// counters count per forwarded MAD.
pub const MAD_PACKET_OCTETS: u64 = 290;
/// LID-routed hops after which a packet is declared looping (IB has no TTL; real
/// fabrics drop it on the head-of-queue lifetime).
pub(crate) const LID_HOP_LIMIT: u8 = 64;

/// One port's end of the cabling.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) node: u32,
    pub(crate) num: u8,
    /// Global slot index of the peer port, NONE without a cable.
    pub(crate) peer: u32,
    /// A link-down fault holds this port's link down.
    cut: bool,
    /// The agent disabled the port.
    disabled: bool,
    /// Retraining (reset, GUID change, SubnSet PortState=Down) until a LinkTrain event.
    training: bool,
    /// The physical link is up (derived from the above at both ends).
    pub(crate) up: bool,
    drop_ppm: u32,
    /// Per-link latency override in ns; NONE: the global hop latency.
    latency_ns: u32,
}

pub(crate) struct Node<A> {
    pub(crate) setup: NodeSetup,
    pub(crate) agent: A,
    pub(crate) base: u32,
    pub(crate) removed: bool,
    /// Bumped on reset/replacement: SMA work scheduled before is void.
    epoch: u32,
    timer_at: Option<Instant>,
}

impl<A> Node<A> {
    pub(crate) fn is_switch(&self) -> bool {
        self.setup.kind == NodeKind::Switch
    }
}

/// A packet in flight: LRH fields that matter plus the 256-byte MAD.
#[derive(Clone)]
pub(crate) struct Packet {
    pub(crate) mad: [u8; 256],
    slid: u16,
    dlid: u16,
    sl: u8,
    lid_hops: u8,
    /// Port of the handle or agent that injected it (for local delivery).
    src_port: u8,
    /// The request reached the SMA over a LID-routed leg (answer goes back by LID).
    arrived_by_lid: bool,
}

/// Event-queue lanes: packets arriving after a hop, SMAs answering after their
/// processing time.
const LANES: usize = 2;
const LANE_HOP: usize = 0;
const LANE_SMA: usize = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Arrive {
        node: u32,
        port: u8,
        pkt: u32,
    },
    Process {
        node: u32,
        port: u8,
        pkt: u32,
        epoch: u32,
    },
    AgentTimer {
        node: u32,
    },
    LinkTrain {
        slot: u32,
    },
    Fault(Fault),
    Babble {
        node: u32,
        port: u8,
        left: u32,
        interval: Duration,
    },
}

/// An SM attachment point.
pub(crate) struct Attach {
    pub(crate) node: u32,
    pub(crate) port: u8,
    pub(crate) inbox: VecDeque<Incoming>,
    pub(crate) detached: bool,
    /// The SM announced itself (IsSM), to be restored after a node reset.
    pub(crate) is_sm: bool,
    /// A tool sharing the port (gets only answers to its own requests).
    pub(crate) shared: bool,
    /// TIDs of the requests it sent recently, to route answers back to it.
    pub(crate) sent: VecDeque<u64>,
}

/// One record of the optional trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceRecord {
    /// When.
    pub t: Instant,
    /// Node index.
    pub node: u32,
    /// Port involved (arrival or departure).
    pub port: u8,
    /// What happened.
    pub kind: TraceKind,
    /// AttributeID of the MAD.
    pub attr: u16,
    /// Low 32 bits of its TID.
    pub tid: u32,
}

/// What a [`TraceRecord`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// Put on the link out of `port`.
    Send,
    /// Handed to the SMA or an SM.
    Deliver,
    /// Dropped.
    Drop(DropReason),
}

pub(crate) struct Core<A> {
    pub(crate) cfg: SimConfig,
    pub(crate) now: Instant,
    rng: SplitMix64,
    pub(crate) nodes: Vec<Node<A>>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) by_guid: HashMap<u64, u32>,
    queue: EventQueue<Ev, LANES>,
    packets: Vec<Packet>,
    free: Vec<u32>,
    pub(crate) attach: Vec<Attach>,
    /// Everything of [`Counters`] but `attrs` (kept empty): [`Core::counters`] fills
    /// them from `by_attr`.
    pub(crate) counters: Counters,
    /// Per AttributeID (the index), grown to the highest seen: every send and delivery
    /// counts here (three times an SMP), a slot instead of a map search.
    by_attr: Vec<AttrCounters>,
    pub(crate) trace: Option<Vec<TraceRecord>>,
    digest: u64,
    /// The hosts' multicast memberships (what a host attaches its QPs to after an SA
    /// join): MLID -> (node, port) -> whether it receives (send-only members do not).
    pub(crate) mcast: BTreeMap<u16, BTreeMap<(u32, u8), bool>>,
    /// Multicast copies delivered: (node, port, MLID) -> how many.
    pub(crate) mcast_rx: HashMap<(u32, u8, u16), u64>,
    /// Multicast packets sent by [`Core::send_multicast`] (their TIDs).
    mcast_sent: u64,
    /// (node, attribute): that node's agent never takes a SubnSet of the attribute
    /// ([`crate::Sim::lose_sets`]).
    pub(crate) lose_sets: HashSet<(u32, u16)>,
    /// The attribute whose SubnSets end [`Core::advance`] once an agent took one
    /// ([`crate::Sim::pause_after_sets`]).
    pub(crate) pause_after: Option<u16>,
    /// An agent took a SubnSet of `pause_after` since `advance` last returned.
    pub(crate) paused: bool,
}

/// Folds `v` into the running digest `h` with one multiply a word. The byte-wise FNV-1a
/// it replaced took eight dependent multiplies a word, and three words are folded for
/// every send, delivery and drop (25 million on the 45,056-CA tree's bring-up). A step is
/// a bijection of `h` for a given `v` and of `v` for a given `h`, so a run that differs in
/// one record gets another digest.
fn mix(h: u64, v: u64) -> u64 {
    (h.rotate_left(23) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl<A: Agent> Core<A> {
    pub(crate) fn new(cfg: SimConfig) -> Self {
        Self {
            rng: SplitMix64::new(cfg.seed),
            cfg,
            now: Instant::ZERO,
            nodes: Vec::new(),
            slots: Vec::new(),
            by_guid: HashMap::new(),
            queue: EventQueue::new(),
            packets: Vec::new(),
            free: Vec::new(),
            attach: Vec::new(),
            counters: Counters::default(),
            by_attr: Vec::new(),
            trace: None,
            digest: 0xCBF2_9CE4_8422_2325,
            mcast: BTreeMap::new(),
            mcast_rx: HashMap::new(),
            mcast_sent: 0,
            lose_sets: HashSet::new(),
            pause_after: None,
            paused: false,
        }
    }

    pub(crate) fn digest(&self) -> u64 {
        self.digest
    }

    pub(crate) fn add_node(&mut self, setup: NodeSetup) -> Result<u32, String> {
        let agent = A::create(&setup, self.now)?;
        let idx = self.nodes.len() as u32;
        let base = self.slots.len() as u32;
        for num in 0..=setup.num_ports {
            self.slots.push(Slot {
                node: idx,
                num,
                peer: NONE,
                cut: false,
                disabled: false,
                training: false,
                up: false,
                drop_ppm: 0,
                latency_ns: NONE,
            });
        }
        // A clone (`Sim::add_clone`) leaves the GUID naming the first node.
        self.by_guid.entry(setup.guid).or_insert(idx);
        self.nodes.push(Node {
            setup,
            agent,
            base,
            removed: false,
            epoch: 0,
            timer_at: None,
        });
        self.counters.nodes.push(Default::default());
        Ok(idx)
    }

    /// Applies `set` to both ends of the link at `port` of `node` (one end when the port
    /// is not cabled; nothing when there is no such port).
    fn set_link(&mut self, node: u32, port: u8, set: impl Fn(&mut Slot)) {
        if let Some(s) = self.slot_of(node, port) {
            set(&mut self.slots[s as usize]);
            let peer = self.slots[s as usize].peer;
            if peer != NONE {
                set(&mut self.slots[peer as usize]);
            }
        }
    }

    pub(crate) fn slot_of(&self, node: u32, port: u8) -> Option<u32> {
        let n = self.nodes.get(node as usize)?;
        (port <= n.setup.num_ports).then_some(n.base + u32::from(port))
    }

    /// Cables two ports (without training the link; [`Self::refresh_link`] does).
    pub(crate) fn cable(&mut self, a: u32, b: u32) {
        self.slots[a as usize].peer = b;
        self.slots[b as usize].peer = a;
    }

    // ----- the event queue -----

    fn push(&mut self, t: Instant, ev: Ev) {
        // A lane per kind that is scheduled a fixed delay after `now` (see `queue`).
        let lane = match ev {
            Ev::Arrive { .. } => Some(LANE_HOP),
            Ev::Process { .. } => Some(LANE_SMA),
            _ => None,
        };
        self.queue.push(t, lane, ev);
    }

    pub(crate) fn next_event_time(&self) -> Option<Instant> {
        self.queue.peek_time()
    }

    pub(crate) fn schedule_fault(&mut self, at: Instant, f: Fault) {
        self.push(at.max(self.now), Ev::Fault(f));
    }

    /// Processes one event; `false` when the queue is empty.
    pub(crate) fn step(&mut self) -> bool {
        let Some((t, ev)) = self.queue.pop() else {
            return false;
        };
        self.handle(t, ev);
        true
    }

    /// Processes the next event if it is due by `deadline`; whether it did.
    pub(crate) fn step_due(&mut self, deadline: Instant) -> bool {
        let Some((t, ev)) = self.queue.pop_due(deadline) else {
            return false;
        };
        self.handle(t, ev);
        true
    }

    fn handle(&mut self, t: Instant, ev: Ev) {
        if t > self.now {
            self.now = t;
        }
        self.counters.events += 1;
        match ev {
            Ev::Arrive { node, port, pkt } => self.arrive(node, port, pkt),
            Ev::Process {
                node,
                port,
                pkt,
                epoch,
            } => self.process(node, port, pkt, epoch),
            Ev::AgentTimer { node } => {
                let n = &mut self.nodes[node as usize];
                if n.timer_at == Some(t) && !n.removed {
                    n.timer_at = None;
                    n.agent.handle_timeout(self.now);
                    self.after_agent(node);
                }
            }
            Ev::LinkTrain { slot } => {
                self.slots[slot as usize].training = false;
                self.refresh_link(slot);
            }
            Ev::Fault(f) => self.apply_fault(f),
            Ev::Babble {
                node,
                port,
                left,
                interval,
            } => self.babble(node, port, left, interval),
        }
    }

    /// Runs events until some attached SM has input waiting or the next event is after
    /// `deadline`; returns whether an SM has input.
    pub(crate) fn advance(&mut self, deadline: Instant) -> bool {
        loop {
            if self
                .attach
                .iter()
                .any(|a| !a.detached && !a.inbox.is_empty())
            {
                return true;
            }
            if std::mem::take(&mut self.paused) {
                return false;
            }
            if !self.step_due(deadline) {
                if deadline > self.now && deadline != Instant::MAX {
                    self.now = deadline;
                }
                return false;
            }
        }
    }

    pub(crate) fn run_until(&mut self, t: Instant) {
        while self.step_due(t) {}
        if t > self.now && t != Instant::MAX {
            self.now = t;
        }
    }

    // ----- port counters (the nodes' performance agents) -----

    /// Adds to a counter of (node, port) if the node has a performance agent.
    pub(crate) fn count(&mut self, node: u32, port: u8, c: Counter, n: u64) {
        if let Some(pma) = self
            .nodes
            .get_mut(node as usize)
            .and_then(|n| n.agent.pma_mut())
        {
            pma.add(port, c, n);
        }
    }

    /// Counts traffic on (node, port): sent when `xmit`, else received.
    pub(crate) fn count_traffic(
        &mut self,
        node: u32,
        port: u8,
        xmit: bool,
        octets: u64,
        packets: u64,
        multicast: bool,
    ) {
        if let Some(pma) = self
            .nodes
            .get_mut(node as usize)
            .and_then(|n| n.agent.pma_mut())
        {
            if xmit {
                pma.count_xmit(port, octets, packets, multicast);
            } else {
                pma.count_rcv(port, octets, packets, multicast);
            }
        }
    }

    /// Synthetic traffic out of (node, port): counted as sent there and, when the link
    /// is up, as received at the other end.
    pub(crate) fn add_traffic(&mut self, node: u32, port: u8, octets: u64, packets: u64) {
        let Some(s) = self.slot_of(node, port) else {
            return;
        };
        self.count_traffic(node, port, true, octets, packets, false);
        let slot = self.slots[s as usize];
        if slot.up && slot.peer != NONE {
            let peer = self.slots[slot.peer as usize];
            self.count_traffic(peer.node, peer.num, false, octets, packets, false);
        }
    }

    /// A packet (node, port) could not send: the port was down or not in a state that
    /// passes it.
    fn count_discard(&mut self, node: u32, port: u8) {
        self.count(node, port, Counter::XmitDiscards, 1);
        self.count(node, port, Counter::XmitInactiveDiscards, 1);
    }

    fn is_multicast(dlid: u16) -> bool {
        (0xC000..PERMISSIVE_LID).contains(&dlid)
    }

    // ----- packets -----

    fn alloc(&mut self, p: Packet) -> u32 {
        if let Some(i) = self.free.pop() {
            self.packets[i as usize] = p;
            i
        } else {
            self.packets.push(p);
            (self.packets.len() - 1) as u32
        }
    }

    fn release(&mut self, pkt: u32) {
        self.free.push(pkt);
    }

    /// The AttributeID and the low 32 bits of the TID (what the trace records).
    fn attr_of(&self, pkt: u32) -> (u16, u32) {
        let h = header(&self.packets[pkt as usize].mad);
        (h.attribute_id(), h.transaction_id() as u32)
    }

    fn record(&mut self, node: u32, port: u8, kind: TraceKind, pkt: u32) {
        let (attr, tid) = self.attr_of(pkt);
        let code = match kind {
            TraceKind::Send => 1,
            TraceKind::Deliver => 2,
            TraceKind::Drop(r) => 3 + r as u64,
        };
        let mut h = mix(self.digest, self.now.as_nanos());
        h = mix(h, (u64::from(node) << 16) | (u64::from(port) << 8) | code);
        self.digest = mix(h, (u64::from(attr) << 32) | u64::from(tid));
        if let Some(tr) = &mut self.trace {
            tr.push(TraceRecord {
                t: self.now,
                node,
                port,
                kind,
                attr,
                tid,
            });
        }
    }

    fn drop_pkt(&mut self, node: u32, port: u8, pkt: u32, why: DropReason) {
        let (attr, _) = self.attr_of(pkt);
        *self.counters.drops.entry(why).or_insert(0) += 1;
        self.attr_counts(attr).dropped += 1;
        if let Some(c) = self.counters.nodes.get_mut(node as usize) {
            c.dropped += 1;
        }
        self.record(node, port, TraceKind::Drop(why), pkt);
        self.release(pkt);
    }

    fn attr_counts(&mut self, attr: u16) -> &mut AttrCounters {
        let i = usize::from(attr);
        if i >= self.by_attr.len() {
            self.by_attr.resize(i + 1, AttrCounters::default());
        }
        &mut self.by_attr[i]
    }

    /// Every counter of the run so far.
    pub(crate) fn counters(&self) -> Counters {
        let mut c = self.counters.clone();
        c.attrs = self
            .by_attr
            .iter()
            .enumerate()
            .filter(|(_, a)| **a != AttrCounters::default())
            .map(|(id, a)| (id as u16, *a))
            .collect();
        c
    }

    fn note_sent(&mut self, pkt: u32) {
        let (attr, _) = self.attr_of(pkt);
        self.attr_counts(attr).sent += 1;
    }

    fn note_delivered(&mut self, node: u32, port: u8, pkt: u32) {
        let (attr, _) = self.attr_of(pkt);
        self.attr_counts(attr).delivered += 1;
        self.counters.nodes[node as usize].delivered += 1;
        self.record(node, port, TraceKind::Deliver, pkt);
    }

    fn is_smp(mad: &[u8; 256]) -> bool {
        header(mad).mgmt_class().is_smp()
    }

    /// Whether `node` owns `dlid` when it arrives on `port`.
    fn owns(&self, node: u32, port: u8, dlid: u16) -> bool {
        if dlid == PERMISSIVE_LID {
            return true;
        }
        let n = &self.nodes[node as usize];
        let p = if n.is_switch() { 0 } else { port };
        let (base, lmc) = n.agent.lid(p);
        if base == 0 {
            return false;
        }
        let span = 1u32 << lmc.min(7);
        let d = u32::from(dlid);
        d >= u32::from(base) && d < u32::from(base) + span
    }

    /// Puts `pkt` on the link out of (node, port).
    fn transmit(&mut self, node: u32, port: u8, pkt: u32) {
        let n = &self.nodes[node as usize];
        if port == 0 || port > n.setup.num_ports {
            return self.drop_pkt(node, port, pkt, DropReason::NoSuchPort);
        }
        let si = (n.base + u32::from(port)) as usize;
        let slot = self.slots[si];
        if !slot.up {
            self.count_discard(node, port);
            return self.drop_pkt(node, port, pkt, DropReason::PortDown);
        }
        let p = &self.packets[pkt as usize];
        let smp = Self::is_smp(&p.mad);
        let state = n.agent.port_state(port);
        let passes = if smp {
            state.passes_smps()
        } else {
            state == crate::agent::ForwardingState::Active
        };
        if !passes {
            self.count_discard(node, port);
            return self.drop_pkt(node, port, pkt, DropReason::PortState);
        }
        let lid_routed = p.dlid != PERMISSIVE_LID;
        let multicast = Self::is_multicast(p.dlid);
        let peer = self.slots[slot.peer as usize];
        self.count_traffic(node, port, true, MAD_PACKET_OCTETS, 1, multicast);
        if self.rng.chance_ppm(self.cfg.drop_ppm) || self.rng.chance_ppm(slot.drop_ppm) {
            // Sent, but it reaches the other end corrupted: a local physical error there.
            self.count(peer.node, peer.num, Counter::RcvErrors, 1);
            self.count(peer.node, peer.num, Counter::RcvLocalPhysicalErrors, 1);
            return self.drop_pkt(node, port, pkt, DropReason::Loss);
        }
        self.counters.nodes[node as usize].forwarded += 1;
        if lid_routed {
            self.counters.lid_hops += 1;
        } else {
            self.counters.dr_hops += 1;
        }
        if self.trace.is_some() {
            self.record(node, port, TraceKind::Send, pkt);
        }
        let lat = if slot.latency_ns == NONE {
            self.cfg.hop_latency
        } else {
            Duration::from_nanos(u64::from(slot.latency_ns))
        };
        let at = self.now + lat;
        self.push(
            at,
            Ev::Arrive {
                node: peer.node,
                port: peer.num,
                pkt,
            },
        );
    }

    fn arrive(&mut self, node: u32, port: u8, pkt: u32) {
        if self.nodes[node as usize].removed {
            return self.drop_pkt(node, port, pkt, DropReason::NodeGone);
        }
        let dlid = self.packets[pkt as usize].dlid;
        self.count_traffic(
            node,
            port,
            false,
            MAD_PACKET_OCTETS,
            1,
            Self::is_multicast(dlid),
        );
        if Self::is_multicast(dlid) {
            if self.nodes[node as usize].is_switch() {
                return self.mcast_forward(node, port, pkt);
            }
            return self.mcast_deliver(node, port, pkt);
        }
        if dlid != PERMISSIVE_LID {
            if !self.owns(node, port, dlid) {
                if self.nodes[node as usize].is_switch() {
                    return self.lid_forward(node, port, pkt);
                }
                return self.drop_pkt(node, port, pkt, DropReason::WrongEndpoint);
            }
            return self.at_destination(node, Some(port), true, pkt);
        }
        self.at_destination(node, Some(port), false, pkt);
    }

    /// Counts one more switch hop of LID-routed `pkt`; past [`LID_HOP_LIMIT`] it is
    /// looping and is dropped (false).
    fn count_hop(&mut self, node: u32, in_port: u8, pkt: u32) -> bool {
        let p = &mut self.packets[pkt as usize];
        p.lid_hops = p.lid_hops.saturating_add(1);
        if p.lid_hops > LID_HOP_LIMIT {
            self.drop_pkt(node, in_port, pkt, DropReason::Loop);
            return false;
        }
        true
    }

    /// Forwards a multicast packet out of every port of the switch's MFT entry for its
    /// DLID but the one it came in by (port 0: the switch itself receives it).
    fn mcast_forward(&mut self, node: u32, in_port: u8, pkt: u32) {
        if !self.count_hop(node, in_port, pkt) {
            return;
        }
        let p = &self.packets[pkt as usize];
        let mlid = p.dlid;
        let n = &self.nodes[node as usize];
        if in_port != 0 && n.agent.port_state(in_port) != crate::agent::ForwardingState::Active {
            return self.drop_pkt(node, in_port, pkt, DropReason::PortState);
        }
        let mut out = Vec::new();
        n.agent.mft_ports(mlid, &mut out);
        out.retain(|&p| p != in_port);
        if out.is_empty() {
            return self.drop_pkt(node, in_port, pkt, DropReason::NoRoute);
        }
        let copy = self.packets[pkt as usize].clone();
        for p in out {
            if p == 0 {
                let c = self.alloc(copy.clone());
                self.mcast_deliver(node, 0, c);
            } else {
                let c = self.alloc(copy.clone());
                self.transmit(node, p, c);
            }
        }
        self.release(pkt);
    }

    /// A multicast packet at an end port (or a switch's port 0): delivered to a member
    /// that receives, dropped elsewhere.
    fn mcast_deliver(&mut self, node: u32, port: u8, pkt: u32) {
        let mlid = self.packets[pkt as usize].dlid;
        if port != 0 {
            self.nodes[node as usize].agent.data_packet(self.now, port);
        }
        let member = self
            .mcast
            .get(&mlid)
            .and_then(|m| m.get(&(node, port)))
            .copied()
            .unwrap_or(false);
        if !member {
            return self.drop_pkt(node, port, pkt, DropReason::WrongEndpoint);
        }
        *self.mcast_rx.entry((node, port, mlid)).or_default() += 1;
        self.note_delivered(node, port, pkt);
        self.release(pkt);
    }

    /// Sends a data packet to multicast LID `mlid` from (node, port) (port 0: a
    /// switch's own), as a host's UD QP would.
    pub(crate) fn send_multicast(&mut self, node: u32, port: u8, mlid: u16) {
        self.mcast_sent += 1;
        let mut mad = [0u8; 256];
        // Not a MAD of any class the nodes answer: plain data.
        let mut h = MadHeaderView::new_unchecked(&mut mad[..]);
        h.set_base_version(1);
        h.set_mgmt_class(MgmtClass::from(0xFF));
        h.set_transaction_id(self.mcast_sent);
        let slid = self.nodes[node as usize].agent.lid(port).0;
        let pkt = self.alloc(Packet {
            mad,
            slid,
            dlid: mlid,
            sl: 0,
            lid_hops: 0,
            src_port: port,
            arrived_by_lid: false,
        });
        self.note_sent(pkt);
        if self.nodes[node as usize].is_switch() {
            self.mcast_forward(node, 0, pkt);
        } else {
            self.transmit(node, port, pkt);
        }
    }

    /// LID-routes `pkt` onwards from switch `node` (which does not own the DLID).
    fn lid_forward(&mut self, node: u32, in_port: u8, pkt: u32) {
        if !self.count_hop(node, in_port, pkt) {
            return;
        }
        let p = &self.packets[pkt as usize];
        let dlid = p.dlid;
        let smp = Self::is_smp(&p.mad);
        let n = &self.nodes[node as usize];
        let Some(out) = n.agent.lft_port(dlid) else {
            self.count(node, in_port, Counter::RcvSwitchRelayErrors, 1);
            self.count(node, in_port, Counter::RcvErrors, 1);
            self.count(node, in_port, Counter::RcvDlidMappingErrors, 1);
            return self.drop_pkt(node, in_port, pkt, DropReason::NoRoute);
        };
        if out == 0 {
            // The management port only owns the switch's own LIDs.
            return self.drop_pkt(node, in_port, pkt, DropReason::WrongEndpoint);
        }
        if !smp
            && in_port != 0
            && n.agent.port_state(in_port) != crate::agent::ForwardingState::Active
        {
            return self.drop_pkt(node, in_port, pkt, DropReason::PortState);
        }
        self.transmit(node, out, pkt);
    }

    /// The packet's LRH destination is this node: apply directed-route rules or deliver.
    fn at_destination(&mut self, node: u32, in_port: Option<u8>, via_lid: bool, pkt: u32) {
        let class = header(&self.packets[pkt as usize].mad).mgmt_class();
        let port_here = in_port.unwrap_or(self.packets[pkt as usize].src_port);
        if class != MgmtClass::SubnDirected {
            return self.dispatch(node, port_here, via_lid, pkt);
        }
        let n = &self.nodes[node as usize];
        let dn = DrNode {
            is_switch: n.is_switch(),
            num_ports: n.setup.num_ports,
            in_port,
            via_lid,
        };
        let returning = DrSmpView::new_unchecked(&self.packets[pkt as usize].mad[..]).direction();
        let action = {
            let Ok(mut v) = DrSmpView::new_checked(&mut self.packets[pkt as usize].mad[..]) else {
                return self.drop_pkt(node, port_here, pkt, DropReason::Malformed);
            };
            if returning {
                dr_returning(&mut v, dn)
            } else {
                dr_outbound(&mut v, dn)
            }
        };
        match action {
            DrAction::Forward { port } => {
                self.packets[pkt as usize].dlid = PERMISSIVE_LID;
                self.transmit(node, port, pkt);
            }
            DrAction::ForwardLid { dlid } => {
                let own = self.nodes[node as usize].agent.lid(0).0;
                let p = &mut self.packets[pkt as usize];
                p.dlid = dlid;
                p.slid = own;
                p.lid_hops = 0;
                if self.owns(node, 0, dlid) {
                    return self.at_destination(node, Some(0), true, pkt);
                }
                self.lid_forward(node, 0, pkt);
            }
            DrAction::Deliver => {
                if returning {
                    self.deliver_to_sm(node, port_here, pkt);
                } else {
                    self.dispatch(node, port_here, via_lid, pkt);
                }
            }
            DrAction::Discard(d) => {
                let why = match d {
                    DrDiscard::NotASwitch => DropReason::NotASwitch,
                    DrDiscard::NoSuchPort => DropReason::NoSuchPort,
                    _ => DropReason::BadHopPointer,
                };
                self.drop_pkt(node, port_here, pkt, why);
            }
        }
    }

    /// Who receives a request (SMInfo, trap, GSI) at (node, port): an attachment that
    /// announced IsSM, else one that owns the port; shared tool attachments only get
    /// the answers to their own requests (as ibsim does).
    fn sm_at(&self, node: u32, port: u8) -> Option<usize> {
        let here = |a: &&Attach| !a.detached && a.node == node && a.port == port;
        let idx = |a: &Attach| self.attach.iter().position(|b| std::ptr::eq(a, b));
        self.attach
            .iter()
            .filter(here)
            .find(|a| a.is_sm)
            .or_else(|| self.attach.iter().filter(here).find(|a| !a.shared))
            .and_then(idx)
    }

    /// Who receives a response at (node, port): the attachment that sent the request.
    fn requester_at(&self, node: u32, port: u8, tid: u64) -> Option<usize> {
        let here = |a: &Attach| !a.detached && a.node == node && a.port == port;
        let mut it = self.attach.iter().enumerate().filter(|(_, a)| here(a));
        let first = it.next()?.0;
        if it.next().is_none() {
            // The usual case, one SM on the port: no need to look at TIDs.
            return Some(first);
        }
        self.attach
            .iter()
            .position(|a| here(a) && a.sent.contains(&tid))
            .or_else(|| self.sm_at(node, port))
    }

    /// Hands a packet to the SM attached at (node, port).
    fn deliver_to_sm(&mut self, node: u32, port: u8, pkt: u32) {
        let port = if self.nodes[node as usize].is_switch() {
            0
        } else {
            port
        };
        let m = &self.packets[pkt as usize].mad;
        let h = header(m);
        // A directed-route SMP on its way back is an answer too (D bit), whatever its
        // method says.
        let response = h.response()
            || (h.mgmt_class() == MgmtClass::SubnDirected
                && DrSmpView::new_unchecked(&m[..]).direction());
        let tid = h.transaction_id();
        let who = if response {
            self.requester_at(node, port, tid)
        } else {
            self.sm_at(node, port)
        };
        let Some(a) = who else {
            return self.drop_pkt(node, port, pkt, DropReason::NoSm);
        };
        self.note_delivered(node, port, pkt);
        let p = &self.packets[pkt as usize];
        let rx = Received {
            mad: p.mad.to_vec(),
            slid: p.slid,
            sl: p.sl,
            qpn: if Self::is_smp(&p.mad) { 0 } else { 1 },
            pkey_index: 0,
            at: self.now,
        };
        self.attach[a].inbox.push_back(Incoming::Mad(rx));
        self.release(pkt);
    }

    /// A packet reached its destination node: to the SMA or to an attached SM.
    fn dispatch(&mut self, node: u32, port: u8, via_lid: bool, pkt: u32) {
        // The SMA learns the real arrival port (NodeInfo.LocalPortNum); SMs on a
        // switch sit on port 0 (`deliver_to_sm` maps it).
        let p = &mut self.packets[pkt as usize];
        p.arrived_by_lid = via_lid;
        let mad = &p.mad;
        let h = header(mad);
        let response = h.response();
        let method = u8::from(h.method());
        let attr = h.attribute_id();
        if !Self::is_smp(mad) {
            let to_pma = u8::from(h.mgmt_class()) == CLASS_PERF && !response;
            self.nodes[node as usize].agent.data_packet(self.now, port);
            if to_pma && self.nodes[node as usize].agent.pma().is_some() {
                return self.schedule_process(node, port, pkt);
            }
            return self.deliver_to_sm(node, port, pkt);
        }
        if h.base_version() != 1 {
            return self.drop_pkt(node, port, pkt, DropReason::Malformed);
        }
        let for_sm = response
            || method == METHOD_TRAP
            || (attr == ATTR_SM_INFO && self.sm_at(node, port).is_some());
        if for_sm {
            return self.deliver_to_sm(node, port, pkt);
        }
        self.schedule_process(node, port, pkt);
    }

    /// The node's agent answers the packet after its processing time.
    fn schedule_process(&mut self, node: u32, port: u8, pkt: u32) {
        let epoch = self.nodes[node as usize].epoch;
        let at = self.now + self.cfg.sma_time;
        self.push(
            at,
            Ev::Process {
                node,
                port,
                pkt,
                epoch,
            },
        );
    }

    /// The SMA of `node` answers the SMP that arrived on `port`.
    fn process(&mut self, node: u32, port: u8, pkt: u32, epoch: u32) {
        let n = &self.nodes[node as usize];
        if n.removed || n.epoch != epoch {
            return self.drop_pkt(node, port, pkt, DropReason::NodeGone);
        }
        let set_of = ibsm_wire::MadHeaderView::new_checked(&self.packets[pkt as usize].mad[..])
            .ok()
            .filter(|h| {
                h.mgmt_class().is_smp() && !h.response() && h.method() == ibsm_wire::Method::Set
            })
            .map(|h| h.attribute_id());
        if let Some(attr) = set_of {
            if self.lose_sets.contains(&(node, attr)) {
                return self.drop_pkt(node, port, pkt, DropReason::NoResponse);
            }
            self.paused |= self.pause_after == Some(attr);
        }
        self.note_delivered(node, port, pkt);
        let now = self.now;
        let slid = self.packets[pkt as usize].slid;
        let mad = &mut self.packets[pkt as usize].mad;
        let agent = &mut self.nodes[node as usize].agent;
        let answered = if u8::from(header(mad).mgmt_class()) == CLASS_PERF {
            agent
                .pma_mut()
                .is_some_and(|pma| pma.handle_in_place(now, mad))
        } else {
            agent.handle_smp(now, port, slid, mad)
        };
        if !answered {
            // Counted apart from losses: the SMA chose silence.
            *self
                .counters
                .drops
                .entry(DropReason::NoResponse)
                .or_insert(0) += 1;
            self.release(pkt);
            self.after_agent(node);
            return;
        }
        self.counters.nodes[node as usize].answered += 1;
        self.note_sent(pkt);
        let p = &mut self.packets[pkt as usize];
        p.src_port = port;
        let class = header(&p.mad).mgmt_class();
        let dr_dlid = DrSmpView::new_unchecked(&p.mad[..]).dr_dlid();
        if class == MgmtClass::SubnDirected && !(p.arrived_by_lid && dr_dlid != PERMISSIVE_LID) {
            self.at_destination(node, None, false, pkt);
        } else {
            // LID-routed answer back to the requester (for a DR SMP that came over a
            // final LID-routed leg: back to the switch that started that leg).
            let own = self.nodes[node as usize].agent.lid(port).0;
            let p = &mut self.packets[pkt as usize];
            p.dlid = p.slid;
            p.slid = own;
            p.lid_hops = 0;
            self.route_from(node, port, pkt);
        }
        self.after_agent(node);
    }

    /// Sends a LID-routed packet (LRH DLID already set) from (node, port).
    pub(crate) fn route_from(&mut self, node: u32, port: u8, pkt: u32) {
        let dlid = self.packets[pkt as usize].dlid;
        if self.owns(node, port, dlid) {
            return self.at_destination(node, Some(port), true, pkt);
        }
        if self.nodes[node as usize].is_switch() {
            self.lid_forward(node, 0, pkt);
        } else {
            self.transmit(node, port, pkt);
        }
    }

    /// Drains what the agent wants after any input: traps, link requests, its timer.
    fn after_agent(&mut self, node: u32) {
        let now = self.now;
        loop {
            let n = &mut self.nodes[node as usize];
            let Some(tx) = n.agent.poll_transmit(now) else {
                break;
            };
            let slid = n.agent.lid(tx.port).0;
            let pkt = self.alloc(Packet {
                mad: tx.mad,
                slid,
                dlid: tx.dlid,
                sl: tx.sl,
                lid_hops: 0,
                src_port: tx.port,
                arrived_by_lid: false,
            });
            self.note_sent(pkt);
            self.route_from(node, tx.port, pkt);
        }
        while let Some((port, req)) = self.nodes[node as usize].agent.poll_link_request() {
            if let Some(s) = self.slot_of(node, port) {
                match req {
                    LinkRequest::Retrain => self.retrain(s),
                    LinkRequest::Disable => {
                        self.slots[s as usize].disabled = true;
                        self.refresh_link(s);
                    }
                    LinkRequest::Enable => {
                        self.slots[s as usize].disabled = false;
                        self.refresh_link(s);
                    }
                    LinkRequest::Renegotiate => self.renegotiate(s),
                }
            }
        }
        let n = &mut self.nodes[node as usize];
        if let Some(t) = n.agent.poll_timeout() {
            if n.timer_at.is_none_or(|cur| t < cur) {
                n.timer_at = Some(t);
                self.push(t.max(now), Ev::AgentTimer { node });
            }
        }
    }

    // ----- links -----

    fn want_up(&self, s: u32) -> bool {
        let a = self.slots[s as usize];
        if a.peer == NONE || a.num == 0 {
            return false;
        }
        let b = self.slots[a.peer as usize];
        let alive =
            |x: &Slot| !x.cut && !x.disabled && !x.training && !self.nodes[x.node as usize].removed;
        alive(&a) && alive(&b) && !matches!(self.negotiate(s), Some(None))
    }

    /// Link training's outcome for the cable through slot `s`: `None` when an end does
    /// not model training, `Some(None)` when the ends share no width or speed (the link
    /// does not train).
    fn negotiate(&self, s: u32) -> Option<Option<ibsm_sma::LinkActive>> {
        let a = self.slots[s as usize];
        let b = self.slots[a.peer as usize];
        let x = self.nodes[a.node as usize].agent.link_info(a.num)?;
        let y = self.nodes[b.node as usize].agent.link_info(b.num)?;
        Some(ibsm_sma::negotiate(&x, &y))
    }

    /// An end's enabled widths or speeds changed: a trained link retrains when training
    /// would now give other active values (hardware negotiates them only while a link
    /// trains, so the active values never change in LinkUp); a link that could not
    /// train may now.
    fn renegotiate(&mut self, s: u32) {
        let a = self.slots[s as usize];
        if a.peer == NONE {
            return;
        }
        if !a.up {
            return self.refresh_link(s);
        }
        let Some(Some(want)) = self.negotiate(s) else {
            // No common width or speed any more: the link cannot train again.
            return self.retrain(s);
        };
        let b = self.slots[a.peer as usize];
        let now_active = |x: &Slot| {
            self.nodes[x.node as usize]
                .agent
                .link_info(x.num)
                .map(|pi| ibsm_sma::LinkActive::of(&pi))
        };
        if now_active(&a) != Some(want) || now_active(&b) != Some(want) {
            self.retrain(s);
        }
    }

    /// Brings the physical state of the link through slot `s` in line with its causes,
    /// telling both agents when it changes.
    pub(crate) fn refresh_link(&mut self, s: u32) {
        let up = self.want_up(s);
        let a = self.slots[s as usize];
        if a.peer == NONE || a.up == up {
            return;
        }
        let peer = a.peer;
        self.slots[s as usize].up = up;
        self.slots[peer as usize].up = up;
        let trained = if up {
            self.negotiate(s).flatten()
        } else {
            None
        };
        let now = self.now;
        for slot in [s, peer] {
            let Slot { node, num, .. } = self.slots[slot as usize];
            let n = &mut self.nodes[node as usize];
            if n.removed {
                continue;
            }
            if up {
                if let Some(active) = trained {
                    n.agent.set_link_active(num, active);
                }
                n.agent.link_up(now, num);
            } else {
                n.agent.link_down(now, num);
                // A link that goes down was seen failing by both ends' PHYs.
                if let Some(pma) = n.agent.pma_mut() {
                    pma.add(num, Counter::LinkDowned, 1);
                    pma.add(num, Counter::SymbolErrors, 1);
                }
            }
            self.after_agent(node);
        }
    }

    fn retrain(&mut self, s: u32) {
        self.slots[s as usize].training = true;
        self.refresh_link(s);
        let at = self.now + self.cfg.retrain_time;
        self.push(at, Ev::LinkTrain { slot: s });
    }

    fn flap_node(&mut self, node: u32) {
        let n = &self.nodes[node as usize];
        let (base, np) = (n.base, n.setup.num_ports);
        for p in 1..=np {
            let s = base + u32::from(p);
            if self.slots[s as usize].peer != NONE {
                self.retrain(s);
            }
        }
    }

    // ----- faults -----

    pub(crate) fn apply_fault(&mut self, f: Fault) {
        match f {
            Fault::LinkDown { node, port } | Fault::LinkUp { node, port } => {
                let down = matches!(f, Fault::LinkDown { .. });
                if let Some(s) = self.slot_of(node.0, port) {
                    self.slots[s as usize].cut = down;
                    let peer = self.slots[s as usize].peer;
                    if peer != NONE {
                        self.slots[peer as usize].cut = down;
                    }
                    self.refresh_link(s);
                }
            }
            Fault::NodeReset { node } => {
                if let Some(n) = self.nodes.get_mut(node.0 as usize) {
                    n.epoch += 1;
                    n.timer_at = None;
                    n.agent.reset(self.now);
                    self.restore_is_sm(node.0);
                    self.flap_node(node.0);
                }
            }
            Fault::NodeRemove { node } => {
                if let Some(n) = self.nodes.get_mut(node.0 as usize) {
                    n.removed = true;
                    let (base, np) = (n.base, n.setup.num_ports);
                    for p in 1..=np {
                        self.refresh_link(base + u32::from(p));
                    }
                    for a in &mut self.attach {
                        if a.node == node.0 {
                            a.detached = true;
                        }
                    }
                }
            }
            Fault::GuidChange { node, guid } => {
                if let Some(n) = self.nodes.get_mut(node.0 as usize) {
                    let setup = n.setup.with_guid(guid);
                    if self.by_guid.contains_key(&guid) {
                        return;
                    }
                    let Ok(agent) = A::create(&setup, self.now) else {
                        return;
                    };
                    self.by_guid.remove(&n.setup.guid);
                    n.agent = agent;
                    n.setup = setup;
                    n.epoch += 1;
                    n.timer_at = None;
                    self.by_guid.insert(guid, node.0);
                    self.restore_is_sm(node.0);
                    self.flap_node(node.0);
                }
            }
            Fault::DropRate { ppm } => self.cfg.drop_ppm = ppm,
            Fault::LinkDropRate { node, port, ppm } => {
                self.set_link(node.0, port, |s| s.drop_ppm = ppm);
            }
            Fault::HopLatency { latency } => self.cfg.hop_latency = latency,
            Fault::LinkLatency {
                node,
                port,
                latency,
            } => {
                let ns = u32::try_from(latency.as_nanos()).unwrap_or(NONE - 1);
                self.set_link(node.0, port, |s| s.latency_ns = ns);
            }
            Fault::SmaTime { time } => self.cfg.sma_time = time,
            Fault::Babble {
                node,
                port,
                interval,
                count,
            } => {
                if count > 0 && (node.0 as usize) < self.nodes.len() {
                    let now = self.now;
                    self.push(
                        now,
                        Ev::Babble {
                            node: node.0,
                            port,
                            left: count,
                            interval,
                        },
                    );
                }
            }
        }
    }

    fn restore_is_sm(&mut self, node: u32) {
        let ports: Vec<u8> = self
            .attach
            .iter()
            .filter(|a| a.node == node && !a.detached && a.is_sm)
            .map(|a| a.port)
            .collect();
        for p in ports {
            self.nodes[node as usize].agent.set_is_sm(p, true);
        }
    }

    /// One garbage SMP out of a babbling port: random bytes shaped just enough to
    /// travel (base version 1, an SMP class), so every receiver's checks are exercised.
    fn babble(&mut self, node: u32, port: u8, left: u32, interval: Duration) {
        if self.nodes[node as usize].removed {
            return;
        }
        let mut mad = [0u8; 256];
        self.rng.fill(&mut mad);
        let mut h = MadHeaderView::new_unchecked(&mut mad[..]);
        h.set_base_version(1);
        let directed = u8::from(h.mgmt_class()) & 1 == 1;
        h.set_mgmt_class(if directed {
            MgmtClass::SubnDirected
        } else {
            MgmtClass::SubnLid
        });
        // A random LID from two of the random bytes: ClassVersion and the status's low
        // byte.
        let dlid = if directed {
            PERMISSIVE_LID
        } else {
            u16::from_be_bytes([h.class_version(), h.status().0 as u8])
        };
        h.set_class_version(1);
        let pkt = self.alloc(Packet {
            mad,
            slid: PERMISSIVE_LID,
            dlid,
            sl: 0,
            lid_hops: 0,
            src_port: port,
            arrived_by_lid: false,
        });
        self.note_sent(pkt);
        self.transmit(node, port, pkt);
        if left > 1 {
            let at = self.now + interval;
            self.push(
                at,
                Ev::Babble {
                    node,
                    port,
                    left: left - 1,
                    interval,
                },
            );
        }
    }

    // ----- SM handles -----

    /// Injects a MAD from the SM attached as `a`. The caller has validated and
    /// prepared the bytes; `dlid` is the first leg's LRH DLID.
    pub(crate) fn inject(&mut self, a: usize, mad: [u8; 256], dlid: u16, sl: u8) {
        let (node, port) = (self.attach[a].node, self.attach[a].port);
        let h = header(&mad);
        let response = h.response()
            || (h.mgmt_class() == MgmtClass::SubnDirected
                && DrSmpView::new_unchecked(&mad[..]).direction());
        if !response {
            let sent = &mut self.attach[a].sent;
            if sent.len() >= 1024 {
                sent.pop_front();
            }
            sent.push_back(h.transaction_id());
        }
        let slid = if dlid == PERMISSIVE_LID {
            PERMISSIVE_LID
        } else {
            self.nodes[node as usize].agent.lid(port).0
        };
        let pkt = self.alloc(Packet {
            mad,
            slid,
            dlid,
            sl,
            lid_hops: 0,
            src_port: port,
            arrived_by_lid: false,
        });
        self.note_sent(pkt);
        if dlid == PERMISSIVE_LID {
            self.at_destination(node, None, false, pkt);
        } else {
            self.route_from(node, port, pkt);
        }
    }
}

/// The common header of a packet's MAD (every packet holds a whole 256-byte MAD).
fn header(mad: &[u8; 256]) -> MadHeaderView<&[u8]> {
    MadHeaderView::new_unchecked(&mad[..])
}

#[cfg(test)]
mod digest_tests {
    use super::mix;
    use proptest::prelude::*;

    proptest! {
        /// A record that differs in one word, or a digest that differed before it, gives
        /// another digest.
        #[test]
        fn one_different_word_changes_the_digest(h: u64, a: u64, b: u64) {
            prop_assume!(a != b);
            prop_assert_ne!(mix(h, a), mix(h, b));
            prop_assert_ne!(mix(a, h), mix(b, h));
        }
    }
}
