//! Discovery: the heavy sweep's Gets over directed routes. Which NodeInfo,
//! NodeDescription, SwitchInfo and PortInfo to ask next, and what their answers add to
//! the [`Discovered`] model, is ibsm-query's
//! [`Walk`] (the one discovery of the workspace); this
//! module maps its probes to [`Op`]s and keeps the SM's own work on top: the M_Keys of
//! the routes (`keys.rs`), the PortStateChange latch protocol, SMInfo probes of other
//! SMs' ports, P_KeyTable reads, NodeAdded and DuplicateGuid events.
//!
//! Each switch's PortStateChange latch is read (and cleared when set) before its ports,
//! so that a change the sweep missed leaves the latch set ([`Latches`]).

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_election::SmAddr;
use ibsm_query::discover::{PortSeen, Probe, Seen, Walk};
use ibsm_wire::attr::modifier::PKeyMod;
use ibsm_wire::{
    CapabilityMask, DrPath, NodeDescription, NodeInfo, NodeType, PortInfo, SwitchInfo,
};

use super::SubnetManager;
use super::health::HealthState;
use super::ops::{Op, SmpQueue};
use crate::event::SmEvent;
use crate::model::{Discovered, NodeIx};

/// Most P_KeyTable blocks read per port (2048 P_Keys): PartitionCap may claim up to
/// 65535 entries, and one SMP per 32 of them must stay affordable.
const MAX_PKEY_BLOCKS: u16 = 64;

/// Where the running (or last) heavy sweep is with one switch's PortStateChange latch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Latch {
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

/// The latches of one heavy sweep. They outlive the sweep (in the last heavy sweep's
/// [`Discovery`]): a trap 128 after it is checked against them.
#[derive(Debug, Default)]
pub(super) struct Latches {
    /// Switch node GUID -> its latch.
    by_guid: HashMap<u64, Latch>,
    /// The heavy sweep they belong to, counted from 1 (tags trap checks with the sweep
    /// they were sent in); 0 before the first.
    sweep: u64,
}

impl Latches {
    /// The heavy sweep these latches belong to.
    pub(super) fn sweep(&self) -> u64 {
        self.sweep
    }

    pub(super) fn get(&self, guid: u64) -> Option<Latch> {
        self.by_guid.get(&guid).copied()
    }

    /// Sets a latch; the one it replaces.
    fn set(&mut self, guid: u64, latch: Latch) -> Option<Latch> {
        self.by_guid.insert(guid, latch)
    }
}

/// One heavy sweep's discovery: the [`Discovered`] model it builds, the walk (ibsm-query's
/// discovery rules) building it, and the PortStateChange latches it read. A heavy
/// sweep starts with a fresh one ([`Discovery::new`], inside its
/// [`HeavySweep`](super::sweep::HeavySweep)) and hands it to the engine when it ends,
/// however it ends: it is then the last heavy sweep's, which [`SubnetManager::subnet`]
/// shows, light sweeps and trap checks look at, and SMPs between heavy sweeps name
/// nodes of.
#[derive(Debug, Default)]
pub(super) struct Discovery {
    pub(super) subnet: Arc<Discovered>,
    walk: Walk,
    pub(super) latches: Latches,
}

impl Discovery {
    /// The discovery of heavy sweep number `sweep`: nothing found yet, the walk at the
    /// local node.
    pub(super) fn new(sweep: u64) -> Self {
        Self {
            subnet: Arc::default(),
            walk: Walk::new(),
            latches: Latches {
                by_guid: HashMap::new(),
                sweep,
            },
        }
    }

    /// Queues the SMPs the walk wants sent, in its order; not across a port that
    /// stopped answering (`health`).
    pub(super) fn drain_walk(&mut self, health: &HealthState, smps: &mut SmpQueue) {
        while let Some((probe, _path, modifier)) =
            self.walk.poll_probe(Arc::make_mut(&mut self.subnet))
        {
            let op = match probe {
                Probe::NodeInfo {
                    from: Some((n, p)), ..
                } if health.skips(&self.subnet, n, p) => continue,
                Probe::NodeInfo { path, from } => Op::NodeInfo {
                    path: Box::new(path),
                    from,
                },
                Probe::NodeDescription { node } => Op::NodeDesc { node },
                Probe::SwitchInfo { node } => {
                    // The ports are read once the PortStateChange latch is known clear
                    // (see `switch_latch_done`).
                    if let Some(n) = self.subnet.nodes.get(node) {
                        self.latches.set(n.info.node_guid, Latch::Pending);
                    }
                    Op::SwitchInfo { node }
                }
                Probe::PortInfo { node, port } => Op::PortInfo { node, port },
            };
            smps.submit(op, modifier, None);
        }
    }

    /// Queues a light sweep's SMPs to this (the last) discovery's model: every switch's
    /// SwitchInfo (its PortStateChange latch) and, with an M_Key `lease`, every CA
    /// port's PortInfo: a correctly keyed SMP to every port stops any countdown an
    /// intruder's bad key started (IBA Vol. 1 §14.2.4), so the ports stay ours.
    /// Switches were just reached through port 0; CA ports need their own Get.
    pub(super) fn queue_light_sweep(&mut self, lease: bool, smps: &mut SmpQueue) {
        let switches: Vec<NodeIx> = (0..self.subnet.nodes.len())
            .filter(|&n| self.subnet.nodes[n].is_switch())
            .collect();
        for node in switches {
            smps.submit(Op::LightSwitchInfo { node }, 0, None);
        }
        if !lease {
            return;
        }
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
            self.get_port_info(node, port, smps);
        }
    }

    /// Queues a Get of one port's PortInfo outside the walk (the light sweep's M_Key
    /// lease refresh), with bit 31 where the model says so.
    fn get_port_info(&mut self, node: NodeIx, port: u8, smps: &mut SmpQueue) {
        let m = Arc::make_mut(&mut self.subnet).port_info_get(node, port);
        smps.submit(Op::PortInfo { node, port }, m, None);
    }

    pub(super) fn on_node_desc(&mut self, node: NodeIx, data: &[u8]) {
        if let Ok(d) = NodeDescription::parse(data) {
            self.walk
                .node_description(Arc::make_mut(&mut self.subnet), node, &d);
        }
    }

    /// A NodeInfo answer, as the walk takes it.
    fn on_node_info(&mut self, path: DrPath, from: Option<(NodeIx, u8)>, ni: &NodeInfo) -> Seen {
        self.walk
            .node_info(Arc::make_mut(&mut self.subnet), path, from, ni)
    }

    /// A SwitchInfo answer (or `None`: unreadable): the latch is cleared when set,
    /// else the switch's ports are read now.
    pub(super) fn on_switch_info(
        &mut self,
        node: NodeIx,
        data: &[u8],
        health: &HealthState,
        smps: &mut SmpQueue,
    ) {
        let si = SwitchInfo::parse(data).ok();
        match si {
            Some(si) => self
                .walk
                .switch_info(Arc::make_mut(&mut self.subnet), node, &si),
            None => {
                if let Some(n) = Arc::make_mut(&mut self.subnet).nodes.get_mut(node) {
                    n.switch_info = None;
                }
            }
        }
        match si {
            // A change before this read is seen by the port reads that follow the
            // clear; one after it sets the latch again.
            Some(si) if si.port_state_change => {
                let mut data = [0u8; 64];
                si.emit_into(&mut data).ok();
                smps.submit(Op::ClearPortStateChange { node }, 0, Some(data));
            }
            Some(_) => self.switch_latch_done(node, Latch::Clean, health, smps),
            None => self.switch_latch_done(node, Latch::Unknown, health, smps),
        }
    }

    /// The discovery of a switch's PortStateChange latch is over (read clear, cleared,
    /// or unknown after a lost SMP): its ports are read now, after that point, so a
    /// change before it is in what they show and one after it sets the latch again.
    pub(super) fn switch_latch_done(
        &mut self,
        node: NodeIx,
        latch: Latch,
        health: &HealthState,
        smps: &mut SmpQueue,
    ) {
        let guid = self.subnet.nodes[node].info.node_guid;
        if self.latches.set(guid, latch) != Some(Latch::Pending) {
            return; // ports already read
        }
        self.walk.read_ports(&self.subnet, node);
        self.drain_walk(health, smps);
    }

    /// A PortInfo Get got no answer: a switch's other ports wait for port 0's
    /// (`Walk::read_ports`).
    pub(super) fn port_info_lost(
        &mut self,
        node: NodeIx,
        port: u8,
        health: &HealthState,
        smps: &mut SmpQueue,
    ) {
        self.walk.port_info_lost(&self.subnet, node, port);
        self.drain_walk(health, smps);
    }

    /// Queues the P_KeyTable reads of a port (for the SA and the partition policy):
    /// every block up to `entries` (PartitionCap for CA ports and switch port 0,
    /// PartitionEnforcementCap for switch external ports).
    fn read_pkeys(&self, node: NodeIx, port: u8, entries: u16, smps: &mut SmpQueue) {
        let blocks = entries.div_ceil(32).clamp(1, MAX_PKEY_BLOCKS);
        let sw = self.subnet.nodes[node].is_switch();
        for block in 0..blocks {
            let m = PKeyMod {
                block,
                port: if sw { u16::from(port) } else { 0 },
            };
            smps.submit(Op::PKeyTable { node, port, block }, m.encode(), None);
        }
    }

    /// Queues the P_KeyTable reads a port's PortInfo calls for: switch port 0 (the
    /// switch's own end port, PathRecords to it), an enforcing external switch port,
    /// a CA port not read yet.
    fn read_port_pkeys(&self, node: NodeIx, port: u8, pi: &PortInfo, smps: &mut SmpQueue) {
        let rec = &self.subnet.nodes[node];
        if rec.ports.get(usize::from(port)).is_none() {
            return;
        }
        if rec.is_switch() {
            let enforced = port != 0
                && (pi.partition_enforcement_inbound || pi.partition_enforcement_outbound);
            if port == 0 {
                // The management port: the switch's own end port (PathRecords to it).
                let cap = rec.info.partition_cap;
                self.read_pkeys(node, 0, cap, smps);
            } else if enforced {
                // SwitchInfo was asked before the ports; without it, one block.
                let cap = rec
                    .switch_info
                    .map_or(32, |si| si.partition_enforcement_cap.max(1));
                self.read_pkeys(node, port, cap, smps);
            }
        } else if port != 0 && rec.ports[usize::from(port)].pkeys.is_empty() {
            let cap = rec.info.partition_cap;
            self.read_pkeys(node, port, cap, smps);
        }
    }

    /// A PortInfo Set's answer: the port as it now is.
    pub(super) fn set_port_info(&mut self, node: NodeIx, port: u8, pi: PortInfo) {
        if let Some(p) = Arc::make_mut(&mut self.subnet).nodes[node]
            .ports
            .get_mut(usize::from(port))
        {
            p.info = Some(pi);
        }
    }

    /// A P_KeyTable block as read (or as a Set's answer shows it written).
    pub(super) fn on_pkey_block(&mut self, node: NodeIx, port: u8, block: u16, data: &[u8]) {
        let Ok(t) = ibsm_wire::PKeyTable::parse(data) else {
            return;
        };
        let Some(p) = Arc::make_mut(&mut self.subnet).nodes[node]
            .ports
            .get_mut(usize::from(port))
        else {
            return;
        };
        let at = usize::from(block) * 32;
        if p.pkeys.len() < at + 32 {
            p.pkeys.resize(at + 32, 0);
        }
        for (slot, k) in p.pkeys[at..at + 32].iter_mut().zip(t.pkeys.iter()) {
            *slot = k.0;
        }
    }

    /// Whether this discovery has read the switch (node GUID) or CA port (port GUID)
    /// `guid` already (or is about to: a switch is read once its PortStateChange
    /// latch is known, `switch_latch_done`). A change there after the read is not in
    /// what it found.
    pub(super) fn has_read(&self, guid: u64) -> bool {
        if let Some(latch) = self.latches.get(guid) {
            return latch != Latch::Pending;
        }
        // A switch is keyed by its node GUID; a CA port by its port GUID, recorded once
        // the sweep reached that port.
        self.subnet.by_guid.contains_key(&guid)
            || self
                .subnet
                .nodes
                .iter()
                .any(|n| !n.is_switch() && n.ports.iter().any(|p| p.guid == guid))
    }

    /// The SwitchInfo Get that tells whether switch `guid`'s PortStateChange latch is
    /// set again since this discovery cleared it; `None` when its latch cannot tell
    /// (not read clean, not a switch found).
    pub(super) fn latch_check(&self, guid: u64) -> Option<Op> {
        if self.latches.get(guid) != Some(Latch::Clean) {
            return None;
        }
        let n = *self.subnet.by_guid.get(&guid)?;
        Some(Op::CheckSwitchInfo {
            path: Box::new(self.subnet.nodes[n].path),
            guid,
            sweep: self.latches.sweep(),
        })
    }

    /// The port of the model at the end of directed route `path` from the SM's node.
    pub(super) fn port_at_path(&self, path: &DrPath) -> Option<(NodeIx, u8)> {
        let nodes = &self.subnet.nodes;
        let mut at = nodes.iter().position(|n| n.path.is_local())?;
        let mut port = nodes[at].info.local_port_num;
        for &out in path.ports() {
            (at, port) = nodes[at].ports.get(usize::from(out))?.peer?;
        }
        Some((at, port))
    }
}

impl SubnetManager {
    pub(super) fn on_node_info(&mut self, path: DrPath, from: Option<(NodeIx, u8)>, data: &[u8]) {
        let Ok(ni) = NodeInfo::parse(data) else {
            return;
        };
        let key_guid = if ni.node_type == NodeType::Switch {
            ni.node_guid
        } else {
            ni.port_guid
        };
        let key = self.keys.smp_key(&self.cfg, key_guid);
        self.keys.remember_route(path, key);
        let found = self.sweep.found_mut(&mut self.last);
        match found.on_node_info(path, from, &ni) {
            Seen::New(_) => {
                if !self.sweep.seen_before(&self.last, ni.node_guid) && self.routing.up_once {
                    self.event(SmEvent::NodeAdded {
                        guid: ni.node_guid,
                        switch: ni.node_type == NodeType::Switch,
                    });
                }
            }
            Seen::Again(_) => {}
            Seen::Duplicate(d) => self.report_duplicate(d),
        }
        self.sweep
            .found_mut(&mut self.last)
            .drain_walk(&self.health, &mut self.smps);
    }

    fn report_duplicate(&mut self, d: ibsm_query::discover::Duplicate) {
        tracing::warn!(
            guid = format_args!("{:#018x}", d.guid),
            kind = ?d.kind,
            first = %d.first,
            second = %d.second,
            "two nodes or ports answer with one GUID: the second is left out"
        );
        self.event(SmEvent::DuplicateGuid {
            guid: d.guid,
            port: d.kind == ibsm_query::discover::DuplicateKind::Port,
            first: d.first,
            second: d.second,
        });
    }

    pub(super) fn on_port_info(&mut self, node: NodeIx, port: u8, data: &[u8]) {
        let Ok(pi) = PortInfo::parse(data) else {
            return;
        };
        let found = self.sweep.found_mut(&mut self.last);
        match found
            .walk
            .port_info(Arc::make_mut(&mut found.subnet), node, port, &pi)
        {
            PortSeen::AskedAgain => {
                found.drain_walk(&self.health, &mut self.smps);
                return;
            }
            PortSeen::Duplicate(d) => self.report_duplicate(d),
            PortSeen::Taken => {}
        }
        // Another SM's port: ask it for its SMInfo (the election decides).
        let found = self.sweep.found(&self.last);
        let rec = &found.subnet.nodes[node];
        let sm_port = if rec.is_switch() {
            port == 0
        } else {
            port != 0
        };
        let guid = rec.ports.get(usize::from(port)).map_or(0, |p| p.guid);
        if sm_port
            && pi.capability_mask.contains(CapabilityMask::IS_SM)
            && guid != self.local.port_guid
        {
            let path = rec.path_for(port);
            let at = self.sweep.stage_started();
            self.smi.election.probe(at, SmAddr::Directed(path));
        }
        self.keys
            .note_port_key(&self.cfg, &found.subnet, node, port, &pi);
        if found.subnet.nodes[node]
            .ports
            .get(usize::from(port))
            .is_none()
        {
            return;
        }
        if super::partitions::reads_pkeys(&self.cfg) {
            found.read_port_pkeys(node, port, &pi, &mut self.smps);
        }
        // What lies behind the port, after its P_Keys.
        self.sweep
            .found_mut(&mut self.last)
            .drain_walk(&self.health, &mut self.smps);
    }
}
