//! Discovery: the heavy sweep's Gets over directed routes and what their answers add to
//! the [`Subnet`](crate::model::Subnet) model. Many requests are in flight at once, so
//! every answer stands on its own: a node found twice is linked, not added again.
//!
//! Each switch's PortStateChange latch is read (and cleared when set) before its ports,
//! so that a change the sweep missed leaves the latch set ([`Latches`]).

use std::collections::HashMap;

use ibsm_election::SmAddr;
use ibsm_wire::attr::modifier::{PKeyMod, PortMod};
use ibsm_wire::{
    CapabilityMask, DrPath, NodeDescription, NodeInfo, NodeType, PortInfo, PortState, SwitchInfo,
};

use super::SubnetManager;
use super::ops::Op;
use crate::event::SmEvent;
use crate::model::{NodeIx, NodeRec, PortRec};

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
    /// Queues a Get of one port's PortInfo (the attribute modifier is the port number,
    /// with bit 31, SMSupportExtendedSpeeds, where the port or its switch's port 0 is
    /// known to support extended speeds).
    pub(super) fn get_port_info(&mut self, node: NodeIx, port: u8) {
        let rec = &self.subnet.nodes[node];
        let has = |p: &crate::model::PortRec| {
            p.ext_speeds
                || p.info
                    .as_ref()
                    .is_some_and(crate::model::ext_speeds_supported)
        };
        let ext = rec.ports.get(usize::from(port)).is_some_and(has)
            || rec.is_switch()
                && rec.ports.first().is_some_and(|p| {
                    p.info
                        .as_ref()
                        .is_some_and(crate::model::ext_speeds_supported)
                });
        self.get_port_info_ext(node, port, ext);
    }

    fn get_port_info_ext(&mut self, node: NodeIx, port: u8, ext: bool) {
        if let Some(p) = self.subnet.nodes[node].ports.get_mut(usize::from(port)) {
            p.ext_speeds = ext;
        }
        let m = PortMod {
            port,
            sm_supports_extended_speeds: ext,
        };
        self.submit(Op::PortInfo { node, port }, m.encode(), None);
    }

    pub(super) fn on_node_desc(&mut self, node: NodeIx, data: &[u8]) {
        if let Ok(d) = NodeDescription::parse(data) {
            self.subnet.nodes[node].desc = String::from_utf8_lossy(d.text_bytes()).into_owned();
        }
    }

    pub(super) fn on_node_info(&mut self, path: DrPath, from: Option<(NodeIx, u8)>, data: &[u8]) {
        let Ok(ni) = NodeInfo::parse(data) else {
            return;
        };
        let in_port = ni.local_port_num;
        let key_guid = if ni.node_type == NodeType::Switch {
            ni.node_guid
        } else {
            ni.port_guid
        };
        let key = self.smp_key(key_guid);
        self.keys.remember_route(path, key);
        if let Some(&n) = self.subnet.by_guid.get(&ni.node_guid) {
            // Found again by another route: one more cable, and for a CA maybe one
            // more port.
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
        if !self.sweep.seen_before(ni.node_guid) && self.routing.up_once {
            self.event(SmEvent::NodeAdded {
                guid: ni.node_guid,
                switch: is_switch,
            });
        }
        if let Some(f) = from {
            self.subnet.link(f, (n, in_port));
        }
        self.submit(Op::NodeDesc { node: n }, 0, None);
        if is_switch {
            // The ports are read once the PortStateChange latch is known clear (see
            // `switch_latch_done`).
            self.latches.set(ni.node_guid, Latch::Pending);
            self.submit(Op::SwitchInfo { node: n }, 0, None);
        } else if usize::from(in_port) < self.subnet.nodes[n].ports.len() {
            self.get_port_info(n, in_port);
        }
    }

    pub(super) fn on_switch_info(&mut self, node: NodeIx, data: &[u8]) {
        let si = SwitchInfo::parse(data).ok();
        self.subnet.nodes[node].switch_info = si;
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
        for p in 0..=self.subnet.nodes[node].info.num_ports {
            self.get_port_info(node, p);
        }
    }

    pub(super) fn on_port_info(&mut self, node: NodeIx, port: u8, data: &[u8]) {
        let Ok(pi) = PortInfo::parse(data) else {
            return;
        };
        let asked = self.subnet.nodes[node]
            .ports
            .get(usize::from(port))
            .is_some_and(|p| p.ext_speeds);
        if !asked && crate::model::ext_speeds_supported(&pi) {
            // The port supports extended speeds but was asked without bit 31, so its
            // LinkSpeedExt* fields are blank: ask again with it (OpenSM PR 39, issue
            // 38), and take that answer for this one.
            self.get_port_info_ext(node, port, true);
            return;
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
                let from = Some((node, port));
                self.submit(Op::NodeInfo { path: child, from }, 0, None);
            }
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
        let Some(p) = self.subnet.nodes[node].ports.get_mut(usize::from(port)) else {
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
