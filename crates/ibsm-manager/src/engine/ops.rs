//! Every SMP the engine sends: the operation table, the queue in front of the
//! transaction layer, the adaptive window and the counters.
//!
//! Adding an SMP means a variant of [`Op`], its row in [`Op::spec`] (attribute, method,
//! target, what a lost answer means) and, if its answer carries something, its arm in
//! [`SubnetManager::on_answer`]; nothing else.

use std::collections::VecDeque;

use ibsm_transport::{
    Address, DrAddress, Instant, Received, Request, Transactions, TxConfig, TxEvent,
};
use ibsm_wire::{DrPath, DrSmp, DrSmpView, Method, SmAttributeId};

use super::SubnetManager;
use super::discovery::Latch;
use crate::config::SmConfig;
use crate::event::SmEvent;
use crate::health::PortKey;
use crate::model::{Discovered, NodeIx};

/// What a request is for. Routes are boxed: a sweep of the largest fabrics queues
/// hundreds of thousands of requests at once, and a 65-byte route in each (most need
/// none) would make every entry four times its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Op {
    /// Discovery: the node at the end of `path`, reached from `from` (`None`: the SM's
    /// own node).
    NodeInfo {
        path: Box<DrPath>,
        from: Option<(NodeIx, u8)>,
    },
    NodeDesc {
        node: NodeIx,
    },
    /// Discovery: a switch's SwitchInfo, read before its ports.
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
    /// One LFT block; its data comes from the mirror when the SMP is built.
    SetLft {
        node: NodeIx,
        block: u16,
    },
    SetPortInfo {
        node: NodeIx,
        port: u8,
    },
    /// A light sweep's look at a switch's PortStateChange latch.
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
        path: Box<DrPath>,
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
    /// A MulticastForwardingTable block the SA's multicast groups need. Sent whenever
    /// the groups change, between sweeps too, so by route and GUID: a heavy sweep may
    /// rebuild the subnet while it waits in the queue. `slot` names the block in the
    /// step it belongs to (`admin.rs`), which outlives each transaction sent for it.
    SetMft {
        path: Box<DrPath>,
        guid: u64,
        slot: u32,
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

/// Where an SMP goes, which names the M_Key it carries.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    /// A route discovery has not reached the end of yet: the key the node found there
    /// before had (NodeInfo is M_Key-checked too).
    Route(DrPath),
    /// A node-wide attribute: the node's route; a switch's key, or for a CA the key of
    /// the port it was reached by.
    Node(NodeIx),
    /// A port attribute: the route to the port; its key (switches: port 0's).
    Port(NodeIx, u8),
    /// A switch known by route and node GUID (not by index: the subnet may be rebuilt
    /// while the SMP is out).
    Switch(DrPath, u64),
}

/// What a request that got no answer after all retries means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnFailure {
    /// Nothing: an unreachable neighbour is simply not there, a light sweep's probe or
    /// a P_KeyTable block beyond a port's real capacity tells nothing.
    Nothing,
    /// Logged: a P_KeyTable block the policy could not write.
    Warn,
    /// The switch's latch tells nothing; its ports are read all the same.
    LatchUnknown,
    /// No evidence either way: sweep.
    Sweep,
    /// A node that answered NodeInfo but not a keyed Get/Set ignores our M_Key: stop
    /// configuring it.
    Lock,
    /// Both: the latch is unknown and the switch locked.
    LatchUnknownAndLock,
}

/// One row of the operation table.
#[derive(Debug, Clone, Copy)]
struct Spec {
    attr: SmAttributeId,
    /// The attribute's name in [`crate::SweepStats::by_attribute`].
    name: &'static str,
    method: Method,
    target: Target,
    on_failure: OnFailure,
}

impl Op {
    /// The operation table: each operation's attribute, method, target and what a
    /// request that got no answer means.
    fn spec(&self) -> Spec {
        use OnFailure::{LatchUnknown, LatchUnknownAndLock, Lock, Nothing, Sweep, Warn};
        use SmAttributeId as A;
        use Target::{Node, Port, Route, Switch};
        let (get, set) = (Method::Get, Method::Set);
        let (attr, method, target, on_failure) = match *self {
            Op::NodeInfo { ref path, .. } => (A::NodeInfo, get, Route(**path), Nothing),
            Op::NodeDesc { node } => (A::NodeDescription, get, Node(node), Lock),
            Op::SwitchInfo { node } => (A::SwitchInfo, get, Node(node), LatchUnknownAndLock),
            Op::SetSwitchInfo { node } => (A::SwitchInfo, set, Node(node), Lock),
            Op::LightSwitchInfo { node } => (A::SwitchInfo, get, Node(node), Nothing),
            Op::ClearPortStateChange { node } => (A::SwitchInfo, set, Node(node), LatchUnknown),
            Op::CheckSwitchInfo { ref path, guid, .. } => {
                (A::SwitchInfo, get, Switch(**path, guid), Sweep)
            }
            Op::PortInfo { node, port } => (A::PortInfo, get, Port(node, port), Lock),
            Op::SetPortInfo { node, port } => (A::PortInfo, set, Port(node, port), Lock),
            Op::SetLft { node, .. } => (A::LinearForwardingTable, set, Node(node), Lock),
            Op::SetSl2Vl { node, .. } => (A::SlToVlMappingTable, set, Node(node), Lock),
            Op::SetVlArb { node, .. } => (A::VlArbitrationTable, set, Node(node), Lock),
            Op::SetMft { ref path, guid, .. } => {
                (A::MulticastForwardingTable, set, Switch(**path, guid), Lock)
            }
            Op::PKeyTable { node, port, .. } => (A::PKeyTable, get, Port(node, port), Nothing),
            Op::SetPKeyTable { node, port, .. } => (A::PKeyTable, set, Port(node, port), Warn),
        };
        Spec {
            attr,
            name: attr.label().unwrap_or("other"),
            method,
            target,
            on_failure,
        }
    }
}

impl Op {
    /// The attribute's name (as in [`crate::SweepStats::by_attribute`]) and whether the
    /// request is a Set.
    pub(super) fn describe(&self) -> (&'static str, bool) {
        let spec = self.spec();
        (spec.name, spec.method == Method::Set)
    }
}

impl SubnetManager {
    /// What an answer with good status carries, handed to the module that owns it.
    fn on_answer(&mut self, now: Instant, op: Op, data: &[u8], attempts: u32) {
        match op {
            Op::NodeInfo { path, from } => self.on_node_info(*path, from, data),
            Op::NodeDesc { node } => self
                .sweep
                .found_mut(&mut self.last)
                .on_node_desc(node, data),
            Op::SwitchInfo { node } => self.sweep.found_mut(&mut self.last).on_switch_info(
                node,
                data,
                &self.health,
                &mut self.smps,
            ),
            Op::ClearPortStateChange { node } => self
                .sweep
                .found_mut(&mut self.last)
                .switch_latch_done(node, Latch::Clean, &self.health, &mut self.smps),
            Op::CheckSwitchInfo { guid, sweep, .. } => {
                self.on_switch_check(now, guid, sweep, data, attempts);
            }
            Op::PortInfo { node, port } => self.on_port_info(node, port, data),
            Op::LightSwitchInfo { .. } => self.sweep.on_light_switch_info(data),
            Op::SetPortInfo { node, port } => self.on_port_set(node, port, data),
            Op::PKeyTable { node, port, block } | Op::SetPKeyTable { node, port, block } => {
                self.sweep
                    .found_mut(&mut self.last)
                    .on_pkey_block(node, port, block, data);
            }
            Op::SetMft { slot, .. } => self.mft_confirmed(slot, data),
            Op::SetSwitchInfo { .. }
            | Op::SetLft { .. }
            | Op::SetSl2Vl { .. }
            | Op::SetVlArb { .. } => {}
        }
    }

    /// What a request without an answer (after all retries, or refused with a bad
    /// status) does, from its row of the table.
    pub(super) fn on_failure(&mut self, now: Instant, op: &Op) {
        if let Some(key) = set_target(&self.sweep.found(&self.last).subnet, op) {
            self.health.set_failed(key, now);
            self.drain_health(now);
        }
        let subnet = &self.sweep.found(&self.last).subnet;
        self.mirror.forget_unwritten(subnet, op);
        if let Op::PortInfo { node, port } = *op {
            // A switch's other ports wait for port 0's answer (`Walk::read_ports`).
            self.sweep.found_mut(&mut self.last).port_info_lost(
                node,
                port,
                &self.health,
                &mut self.smps,
            );
        }
        // An MFT block is sent again (or held) until its switch confirms it; only
        // one given up on for good means what the table says.
        if let Op::SetMft { slot, .. } = *op {
            if !self.mft_unconfirmed(slot) {
                return;
            }
        }
        let spec = op.spec();
        // The switch's latch tells nothing: its ports are read all the same.
        if matches!(
            spec.on_failure,
            OnFailure::LatchUnknown | OnFailure::LatchUnknownAndLock
        ) && let Target::Node(n) = spec.target
        {
            self.sweep.found_mut(&mut self.last).switch_latch_done(
                n,
                Latch::Unknown,
                &self.health,
                &mut self.smps,
            );
        }
        match spec.on_failure {
            OnFailure::Nothing | OnFailure::LatchUnknown => return,
            OnFailure::Warn => {
                tracing::warn!(?op, "P_KeyTable Set refused or lost");
                return;
            }
            OnFailure::Sweep => {
                self.heavy_sweep_wanted(now);
                return;
            }
            OnFailure::LatchUnknownAndLock | OnFailure::Lock => {}
        }
        let guid = match spec.target {
            // A CA's node-wide attribute went through the port it was reached by, with
            // that port's key: it is that port that ignores us.
            // (An SMP sent for a model a heavy sweep has since rebuilt names no node.)
            Target::Node(n) => match self.sweep.found(&self.last).subnet.nodes.get(n) {
                Some(node) => node.key_guid(0),
                None => return,
            },
            Target::Port(n, p) => match self.sweep.found(&self.last).subnet.nodes.get(n) {
                Some(node) => node.key_guid(p),
                None => return,
            },
            Target::Switch(_, guid) => guid,
            Target::Route(_) => return,
        };
        tracing::debug!(?op, "no answer after all retries");
        self.lock_port(guid);
    }
}

/// The port a Set configures, for the health policy's SetErr check: the port of a
/// PortInfo Set, a switch's port 0 for its switch-wide tables, a CA's port for its
/// own. `None` for what is no Set, and for MFT blocks (sent again until confirmed, and
/// reported on their own, `MftSetUnconfirmed`).
fn set_target(subnet: &Discovered, op: &Op) -> Option<PortKey> {
    let (node, port) = match *op {
        Op::SetPortInfo { node, port } => (node, Some(port)),
        Op::SetSwitchInfo { node } | Op::SetLft { node, .. } => (node, None),
        Op::SetSl2Vl { node, port }
        | Op::SetVlArb { node, port }
        | Op::SetPKeyTable { node, port, .. } => (node, Some(port)),
        _ => return None,
    };
    let n = subnet.nodes.get(node)?;
    let port = match port {
        Some(p)
            if !n.is_switch() || matches!(op, Op::SetPortInfo { .. } | Op::SetPKeyTable { .. }) =>
        {
            p
        }
        _ => 0,
    };
    Some(PortKey::new(n.info.node_guid, port))
}

/// A request waiting for room in the window.
#[derive(Debug)]
struct Work {
    op: Op,
    attr_mod: u32,
    data: Option<Box<[u8; 64]>>,
    /// Re-sends, when not the queue's ([`SmpQueue::retries`]).
    retries: Option<u32>,
    /// [`Op::SetLft`] only: the next `more` blocks of the same switch follow, each its
    /// own SMP in this order. A sweep of a large fabric queues millions of LFT blocks
    /// (2.9 million on the 45,056-CA tree, 500 MB as one entry each); they come in runs
    /// of consecutive blocks per switch.
    more: u16,
}

/// The SMPs between the engine and the transaction layer.
#[derive(Debug)]
pub(super) struct SmpQueue {
    pub(super) tx: Transactions<Op>,
    /// The adaptive window: grows on every first-try answer, halves on every loss.
    window: usize,
    /// Requests not yet built (a few bytes each: see [`SmpQueue::submit`]).
    work: VecDeque<Work>,
    /// SMPs handed out since creation.
    sent: u64,
    /// Re-sends per SMP of the running heavy sweep when it re-sweeps after an
    /// incomplete one (`resweep.rs`); `None`: `SmConfig::transaction_retries`.
    pub(super) retries: Option<u32>,
    /// When the window last halved: at most once per transaction timeout, since the
    /// losses of one timeout period are one event, not one per SMP.
    last_shrink: Option<Instant>,
}

impl SmpQueue {
    /// Opens the window to at least `floor` (a raised `max_wire_smps`).
    pub(super) fn raise_window_to(&mut self, floor: usize) {
        if self.window < floor {
            self.window = floor;
            self.tx.set_window(floor);
        }
    }

    /// The window now.
    #[cfg(test)]
    pub(super) fn window(&self) -> usize {
        self.window
    }

    /// `cfg` has passed [`SmConfig::validate`] (`max_wire_smps` at least 1).
    pub(super) fn new(cfg: &SmConfig) -> Self {
        let window = cfg.max_wire_smps;
        let mut tx = Transactions::new(TxConfig {
            window,
            timeout: cfg.transaction_timeout,
            retries: cfg.transaction_retries,
            tid_high: 0x1b5e,
            assign_tids: true,
        });
        // The election allocates TIDs from 1; ours start far away from it.
        tx.set_tid_start(0x4000_0000);
        Self {
            tx,
            window,
            work: VecDeque::new(),
            sent: 0,
            retries: None,
            last_shrink: None,
        }
    }

    pub(super) fn sent(&self) -> u64 {
        self.sent
    }

    /// Nothing queued and nothing in flight.
    pub(super) fn is_idle(&self) -> bool {
        self.tx.is_idle() && self.work.is_empty()
    }
}

impl SmpQueue {
    /// Queues one SMP. Requests wait here, as a few bytes each, until the window has
    /// room: a sweep of a large fabric queues hundreds of thousands of Sets at once, and
    /// building all their MADs up front would cost memory and hash-table time.
    pub(super) fn submit(&mut self, op: Op, attr_mod: u32, data: Option<[u8; 64]>) {
        if let (&Op::SetLft { node, block }, None) = (&op, data) {
            // The block after a queued run of the same switch's blocks joins the run.
            if let Some(Work {
                op: Op::SetLft { node: n, block: b },
                attr_mod: m,
                data: None,
                retries: None,
                more,
            }) = self.work.back_mut()
                && *n == node
                && attr_mod == u32::from(block)
                && *m == u32::from(*b)
                && u32::from(*b) + u32::from(*more) + 1 == attr_mod
                && *more < u16::MAX
            {
                *more += 1;
                return;
            }
        }
        self.work.push_back(Work {
            op,
            attr_mod,
            data: data.map(Box::new),
            retries: None,
            more: 0,
        });
    }

    /// [`Self::submit`] with `retries` re-sends instead of the queue's.
    pub(super) fn submit_with_retries(
        &mut self,
        op: Op,
        attr_mod: u32,
        data: Option<[u8; 64]>,
        retries: u32,
    ) {
        self.work.push_back(Work {
            op,
            attr_mod,
            data: data.map(Box::new),
            retries: Some(retries),
            more: 0,
        });
    }
}

impl SubnetManager {
    /// The next MAD for the host: answers and election SMPs first, then the SA's own
    /// sends, then the window's.
    pub(super) fn next_transmit(&mut self, now: Instant) -> Option<super::Outgoing> {
        if let Some(o) = self.out.mads.pop_front() {
            // The SA's answers share the queue; they are GMPs, not SMPs.
            let smp = ibsm_wire::MadHeaderView::new_checked(&o.mad[..])
                .is_ok_and(|h| h.mgmt_class().is_smp());
            if smp {
                self.smps.count_sent();
            }
            return Some(o);
        }
        if let Some(o) = self.admin.poll_transmit(now) {
            return Some(o);
        }
        self.pump();
        let t = self.smps.tx.next_attempt(now)?;
        self.smps.count_sent();
        self.sweep.count(|s| {
            s.smps += 1;
            if t.attempt > 1 {
                s.retries += 1;
            }
        });
        Some(super::Outgoing {
            id: Some(t.id),
            addr: t.addr,
            mad: t.mad,
        })
    }

    /// Hands queued SMPs to the transaction layer while fewer than two windows' worth
    /// are pending there.
    pub(super) fn pump(&mut self) {
        while let Some(w) = self.smps.next_work() {
            let subnet = &self.sweep.found(&self.last).subnet;
            let keys = &self.keys;
            let cfg = &self.cfg;
            let lft = |node, block| self.mirror.lft_block(subnet, node, block);
            let key = |t: &Target| keys.target_key(cfg, subnet, t);
            if let Some(name) = self.smps.dispatch(w, subnet, key, lft, cfg) {
                self.sweep.count_attribute(name);
            }
        }
    }

    /// Drains the transaction layer's outcomes and moves the sweep on until it waits
    /// for input.
    pub(super) fn process(&mut self, now: Instant) {
        loop {
            while let Some(ev) = self.smps.tx.poll_event() {
                match ev {
                    TxEvent::Completed {
                        cookie,
                        response,
                        attempts,
                        ..
                    } => {
                        if attempts == 1
                            && let Some(w) = self.smps.grow_window(self.cfg.max_wire_smps_limit)
                        {
                            self.sweep.count(|s| s.max_window = s.max_window.max(w));
                        }
                        self.on_response(now, cookie, &response, attempts);
                    }
                    TxEvent::Failed { cookie, .. } => {
                        self.smps.shrink_window(now, &self.cfg);
                        self.sweep.count(|s| s.timeouts += 1);
                        self.note_lost(&cookie);
                        self.on_failure(now, &cookie);
                    }
                    TxEvent::Unsolicited(rx) => self.on_unsolicited(now, &rx),
                }
            }
            self.drain_election(now);
            self.pump();
            if !self.smps.is_idle() || !self.advance(now) {
                return;
            }
        }
    }

    fn on_response(&mut self, now: Instant, op: Op, rx: &Received, attempts: u32) {
        let Ok(view) = DrSmpView::new_checked(&rx.mad[..]) else {
            // Too short to be an SMP at all: as a refusal.
            self.on_failure(now, &op);
            return;
        };
        if view.status() != 0 {
            tracing::debug!(?op, status = view.status(), "SMP refused");
            self.on_failure(now, &op);
            return;
        }
        self.on_answer(now, op, view.attr_data(), attempts);
    }

    /// A port that ignores our M_Key: reported once, and not configured again in this
    /// heavy sweep.
    fn lock_port(&mut self, guid: u64) {
        self.sweep.lock(guid);
        if self.keys.note_locked(guid) {
            self.event(SmEvent::PortLocked { guid });
        }
    }
}

impl SmpQueue {
    /// The next request to build, while fewer than two windows' worth are pending in
    /// the transaction layer. A run of LFT blocks gives its first; the rest waits at
    /// the front, in order.
    fn next_work(&mut self) -> Option<Work> {
        let limit = self.window.saturating_mul(2).max(8);
        if self.tx.pending() >= limit {
            return None;
        }
        let mut w = self.work.pop_front()?;
        if let (&Op::SetLft { node, block }, 1..) = (&w.op, w.more) {
            self.work.push_front(Work {
                op: Op::SetLft {
                    node,
                    block: block + 1,
                },
                attr_mod: w.attr_mod + 1,
                data: None,
                retries: w.retries,
                more: w.more - 1,
            });
            w.more = 0;
        }
        Some(w)
    }

    /// Builds one SMP from its row of the table and submits it: its route and key from
    /// `subnet` (the model SMPs index into) and `key`, an LFT block's data from `lft`.
    /// The attribute's name to count, `None` when the SMP names a node the model no
    /// longer has.
    fn dispatch(
        &mut self,
        w: Work,
        subnet: &Discovered,
        key: impl Fn(&Target) -> u64,
        lft: impl Fn(NodeIx, u16) -> Option<[u8; 64]>,
        cfg: &SmConfig,
    ) -> Option<&'static str> {
        let Work {
            op,
            attr_mod,
            data,
            retries,
            more: _,
        } = w;
        let spec = op.spec();
        let data = data.map(|b| *b).or_else(|| match op {
            Op::SetLft { node, block } => lft(node, block),
            _ => None,
        });
        let path = match spec.target {
            Target::Route(path) | Target::Switch(path, _) => path,
            // Work queued for a model a restarted heavy sweep has since dropped (an MFT
            // block the SA asked for between sweeps): its node is gone.
            Target::Node(n) | Target::Port(n, _) if n >= subnet.nodes.len() => {
                tracing::debug!(?op, "node gone before the SMP left");
                return None;
            }
            Target::Node(n) => subnet.nodes[n].path,
            Target::Port(n, p) => subnet.nodes[n].path_for(p),
        };
        let key = key(&spec.target);
        let mad = DrSmp::request_bytes(
            spec.method,
            spec.attr.into(),
            attr_mod,
            0,
            key,
            &path,
            &data.unwrap_or([0; 64]),
        );
        let mut req = Request::new(Address::Directed(DrAddress::direct(path)), mad.to_vec(), op);
        req.timeout = Some(cfg.transaction_timeout);
        req.retries = retries.or(self.retries);
        // Only the queueing window limits submissions; a duplicate TID cannot happen
        // with assigned TIDs.
        let _ = self.tx.submit(req);
        Some(spec.name)
    }

    /// Grows the window by one on a first-try answer, up to `limit`; the new window
    /// when it grew.
    fn grow_window(&mut self, limit: usize) -> Option<usize> {
        if self.window >= limit {
            return None;
        }
        self.window += 1;
        self.tx.set_window(self.window);
        Some(self.window)
    }

    /// Halves the window on a loss, once per transaction timeout: every SMP in flight
    /// when the fabric started dropping times out within one timeout period, and
    /// halving once per lost SMP would take the window to its floor on a fabric that
    /// merely loses a few per cent at random (4 SMPs in flight, each loss waiting out
    /// its timeout, would take hours of virtual time on the 11,664-CA tree).
    fn shrink_window(&mut self, now: Instant, cfg: &SmConfig) {
        if self
            .last_shrink
            .is_some_and(|t| now < t + cfg.transaction_timeout)
        {
            return;
        }
        self.last_shrink = Some(now);
        self.window = (self.window / 2).max(cfg.max_wire_smps);
        self.tx.set_window(self.window);
    }

    /// Counts an SMP handed out that bypassed the window (answers, election SMInfo).
    pub(super) fn count_sent(&mut self) {
        self.sent += 1;
    }
}
