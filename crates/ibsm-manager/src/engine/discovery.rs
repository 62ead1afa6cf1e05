//! Discovery: the heavy sweep's Gets over directed routes. Which NodeInfo,
//! NodeDescription, SwitchInfo and PortInfo to ask next, and what their answers add to
//! the [`Subnet`](crate::model::Subnet) model, is ibsm-query's
//! [`Walk`](ibsm_query::discover::Walk) (the one discovery of the workspace); this
//! module maps its probes to [`Op`]s and keeps the SM's own work on top: the M_Keys of
//! the routes (`keys.rs`), the PortStateChange latch protocol, SMInfo probes of other
//! SMs' ports, P_KeyTable reads, NodeAdded and DuplicateGuid events.
//!
//! Each switch's PortStateChange latch is read (and cleared when set) before its ports,
//! so that a change the sweep missed leaves the latch set ([`Latches`]).

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_election::SmAddr;
use ibsm_query::discover::{PortSeen, Probe, Seen};
use ibsm_wire::attr::modifier::PKeyMod;
use ibsm_wire::{
    CapabilityMask, DrPath, NodeDescription, NodeInfo, NodeType, PortInfo, SwitchInfo,
};

use super::SubnetManager;
use super::ops::Op;
use crate::event::SmEvent;
use crate::model::NodeIx;
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

/// The latches of the running or last heavy sweep. They outlive the sweep: a trap 128
/// after it is checked against them.
#[derive(Debug, Default)]
pub(super) struct Latches {
    /// Switch node GUID -> its latch.
    by_guid: HashMap<u64, Latch>,
    /// Heavy sweeps begun so far (tags trap checks with the sweep they were sent in).
    sweeps: u64,
}

impl Latches {
    pub(super) fn begin_sweep(&mut self) {
        self.sweeps += 1;
        self.by_guid.clear();
    }

    pub(super) fn sweeps(&self) -> u64 {
        self.sweeps
    }

    pub(super) fn get(&self, guid: u64) -> Option<Latch> {
        self.by_guid.get(&guid).copied()
    }

    /// Sets a latch; the one it replaces.
    fn set(&mut self, guid: u64, latch: Latch) -> Option<Latch> {
        self.by_guid.insert(guid, latch)
    }
}

impl SubnetManager {
    /// Queues the SMPs the walk wants sent, in its order.
    pub(super) fn drain_walk(&mut self) {
        while let Some((probe, _path, modifier)) =
            self.walk.poll_probe(Arc::make_mut(&mut self.subnet))
        {
            let op = match probe {
                // Not across a port that stopped answering (`health.rs`).
                Probe::NodeInfo {
                    from: Some((n, p)), ..
                } if self.health_skips(n, p) => continue,
                Probe::NodeInfo { path, from } => Op::NodeInfo { path, from },
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
            self.submit(op, modifier, None);
        }
    }

    /// Queues a Get of one port's PortInfo outside the walk (the light sweep's M_Key
    /// lease refresh), with bit 31 where the model says so.
    pub(super) fn get_port_info(&mut self, node: NodeIx, port: u8) {
        let m = Arc::make_mut(&mut self.subnet).port_info_get(node, port);
        self.submit(Op::PortInfo { node, port }, m, None);
    }

    pub(super) fn on_node_desc(&mut self, node: NodeIx, data: &[u8]) {
        if let Ok(d) = NodeDescription::parse(data) {
            self.walk
                .node_description(Arc::make_mut(&mut self.subnet), node, &d);
        }
    }

    pub(super) fn on_node_info(&mut self, path: DrPath, from: Option<(NodeIx, u8)>, data: &[u8]) {
        let Ok(ni) = NodeInfo::parse(data) else {
            return;
        };
        let key_guid = if ni.node_type == NodeType::Switch {
            ni.node_guid
        } else {
            ni.port_guid
        };
        let key = self.smp_key(key_guid);
        self.keys.remember_route(path, key);
        match self
            .walk
            .node_info(Arc::make_mut(&mut self.subnet), path, from, &ni)
        {
            Seen::New(_) => {
                if !self.sweep.seen_before(ni.node_guid) && self.routing.up_once {
                    self.event(SmEvent::NodeAdded {
                        guid: ni.node_guid,
                        switch: ni.node_type == NodeType::Switch,
                    });
                }
            }
            Seen::Again(_) => {}
            Seen::Duplicate(d) => self.report_duplicate(d),
        }
        self.drain_walk();
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

    pub(super) fn on_switch_info(&mut self, node: NodeIx, data: &[u8]) {
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
                self.submit(Op::ClearPortStateChange { node }, 0, Some(data));
            }
            Some(_) => self.switch_latch_done(node, Latch::Clean),
            None => self.switch_latch_done(node, Latch::Unknown),
        }
    }

    /// The discovery of a switch's PortStateChange latch is over (read clear, cleared,
    /// or unknown after a lost SMP): its ports are read now, after that point, so a
    /// change before it is in what they show and one after it sets the latch again.
    pub(super) fn switch_latch_done(&mut self, node: NodeIx, latch: Latch) {
        let guid = self.subnet.nodes[node].info.node_guid;
        if self.latches.set(guid, latch) != Some(Latch::Pending) {
            return; // ports already read
        }
        self.walk.read_ports(&self.subnet, node);
        self.drain_walk();
    }

    pub(super) fn on_port_info(&mut self, node: NodeIx, port: u8, data: &[u8]) {
        let Ok(pi) = PortInfo::parse(data) else {
            return;
        };
        match self
            .walk
            .port_info(Arc::make_mut(&mut self.subnet), node, port, &pi)
        {
            PortSeen::AskedAgain => {
                self.drain_walk();
                return;
            }
            PortSeen::Duplicate(d) => self.report_duplicate(d),
            PortSeen::Taken => {}
        }
        // Another SM's port: ask it for its SMInfo (the election decides).
        let rec = &self.subnet.nodes[node];
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
        self.note_port_key(node, port, &pi);
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
                self.read_pkeys(node, 0, cap);
            } else if enforced {
                // SwitchInfo was asked before the ports; without it, one block.
                let cap = rec
                    .switch_info
                    .map_or(32, |si| si.partition_enforcement_cap.max(1));
                self.read_pkeys(node, port, cap);
            }
        } else if port != 0 && rec.ports[usize::from(port)].pkeys.is_empty() {
            let cap = rec.info.partition_cap;
            self.read_pkeys(node, port, cap);
        }
        // What lies behind the port, after its P_Keys.
        self.drain_walk();
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
            let m = PKeyMod {
                block,
                port: if sw { u16::from(port) } else { 0 },
            };
            self.submit(Op::PKeyTable { node, port, block }, m.encode(), None);
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
}
