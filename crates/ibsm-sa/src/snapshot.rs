//! [`SaSnapshot`]: the read-only picture of the subnet the SA answers from. The SM
//! fills one after each sweep that brought the subnet up; the SA indexes it once
//! ([`crate::SaServer::load`]) and never sees the SM's live state.

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_routing::{LidAssignment, Routes};
use ibsm_topology::{Csr, Fabric, NodeKind};
use ibsm_wire::{
    LinkSpeed, LinkWidth, Mtu, NodeInfo, NodeType, PortInfo, PortState, SmInfo, SwitchInfo,
};

/// Index of a node in [`SaSnapshot::nodes`].
pub type NodeIx = u32;

/// A port as the SM last saw (and configured) it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaPort {
    /// Port GUID (switch ports: the node GUID).
    pub guid: u64,
    /// PortInfo, with the M_Key the SM configured (the SA hides it from untrusted
    /// requesters); `None` for ports never read.
    pub info: Option<PortInfo>,
    /// The other end of the cable.
    pub peer: Option<(NodeIx, u8)>,
    /// The P_Key table (empty: unknown, the SA assumes the default full-member
    /// 0xFFFF the SMA starts with).
    pub pkeys: Vec<u16>,
}

/// A node as the SM last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaNode {
    /// NodeInfo (PortGUID and LocalPortNum as first read; the SA fixes them per port).
    pub info: NodeInfo,
    /// NodeDescription text.
    pub desc: String,
    /// SwitchInfo (switches).
    pub switch_info: Option<SwitchInfo>,
    /// Ports `0..=NumPorts` (port 0 of a CA unused).
    pub ports: Vec<SaPort>,
    /// Switches: index of this switch in [`SaSnapshot::routes`].
    pub route_index: Option<u32>,
}

impl SaNode {
    /// Whether the node is a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::Switch
    }
}

/// Everything the SA serves, as one value.
#[derive(Debug, Clone, Default)]
pub struct SaSnapshot {
    /// Nodes (any order; [`SaPort::peer`] indexes this vector).
    pub nodes: Vec<SaNode>,
    /// The forwarding tables in force, indexed by [`SaNode::route_index`]. Shared
    /// with the SM, which keeps them in force until its next routing: the tables of a
    /// large fabric run to tens of megabytes, and every heavy sweep hands the SA a
    /// new snapshot.
    pub routes: Option<Arc<Routes>>,
    /// Subnet prefix of every port GID.
    pub subnet_prefix: u64,
    /// The SMs known: `(LID, SMInfo)`; the first is the master (ours). SM_Keys in here
    /// are shown only to trusted requesters.
    pub sms: Vec<(u16, SmInfo)>,
    /// PathRecord.PacketLifeTime (OpenSM `packet_life_time`).
    pub packet_life_time: u8,
}

impl SaSnapshot {
    /// A snapshot of a fabric model routed offline (no SM, no SMAs): every connected
    /// port Active at 4x QDR with a 4096-byte MTU, switches whose MFTs hold every
    /// MLID, LIDs from `lids`, the LFTs of
    /// `routes` (computed on `Csr::new(fabric)` with `lids`). For tools, benches and
    /// tests that want an SA without bringing a subnet up.
    #[must_use]
    pub fn from_routed(
        fabric: &Fabric,
        lids: &LidAssignment,
        routes: Routes,
        subnet_prefix: u64,
    ) -> Self {
        let csr = Csr::new(fabric);
        let mut ix = HashMap::new();
        for (i, (id, _)) in fabric.nodes().enumerate() {
            ix.insert(id, i as NodeIx);
        }
        let mut lid_of: HashMap<(NodeIx, u8), (u16, u8)> = HashMap::new();
        for s in 0..csr.switch_node.len() {
            lid_of.insert((ix[&csr.switch_node[s]], 0), (lids.switch_lid(s), 0));
        }
        for t in 0..csr.term_node.len() {
            lid_of.insert(
                (ix[&csr.term_node[t]], csr.term_port[t]),
                lids.terminal_lid(t),
            );
        }
        let route_of: HashMap<NodeIx, u32> = csr
            .switch_node
            .iter()
            .enumerate()
            .map(|(s, id)| (ix[id], s as u32))
            .collect();
        let mut nodes = Vec::with_capacity(fabric.node_count());
        for (id, n) in fabric.nodes() {
            let me = ix[&id];
            let sw = n.is_switch();
            let node_type = match n.node_type() {
                NodeKind::Switch => NodeType::Switch,
                NodeKind::Router => NodeType::Router,
                _ => NodeType::Ca,
            };
            let first_port_guid = if sw {
                n.guid().0
            } else {
                n.port(1).map_or(n.guid().0, |p| p.guid.0)
            };
            let info = NodeInfo {
                base_version: 1,
                class_version: 1,
                node_type,
                num_ports: n.num_ports(),
                system_image_guid: n.system_image_guid.0,
                node_guid: n.guid().0,
                port_guid: first_port_guid,
                partition_cap: 32,
                device_id: n.device_id,
                revision: 0,
                local_port_num: if sw { 0 } else { 1 },
                vendor_id: n.vendor_id,
            };
            let mut ports = Vec::with_capacity(usize::from(n.num_ports()) + 1);
            for p in 0..=n.num_ports() {
                let fp = n.port(p);
                let peer = fabric
                    .port_peer(id, p)
                    .filter(|_| p != 0)
                    .map(|e| (ix[&e.node], e.port));
                let exists = p != 0 || sw;
                let (lid, lmc) = lid_of.get(&(me, p)).copied().unwrap_or((0, 0));
                let info = exists.then(|| PortInfo {
                    gid_prefix: subnet_prefix,
                    lid: if sw {
                        lid_of.get(&(me, 0)).map_or(0, |l| l.0)
                    } else {
                        lid
                    },
                    lmc,
                    local_port_num: p,
                    link_width_active: LinkWidth::X4,
                    link_speed_active: LinkSpeed::Qdr,
                    port_state: if peer.is_some() || p == 0 {
                        PortState::Active
                    } else {
                        PortState::Down
                    },
                    mtu_cap: Mtu::Mtu4096,
                    neighbor_mtu: Mtu::Mtu4096,
                    ..PortInfo::default()
                });
                ports.push(SaPort {
                    guid: if sw {
                        n.guid().0
                    } else {
                        fp.map_or(0, |x| x.guid.0)
                    },
                    info,
                    peer,
                    pkeys: Vec::new(),
                });
            }
            nodes.push(SaNode {
                info,
                desc: n.description.clone(),
                switch_info: sw.then(|| SwitchInfo {
                    linear_fdb_cap: 49_152,
                    linear_fdb_top: lids.max_lid(),
                    // The fabric model knows no MFT sizes: every MLID the SA hands out.
                    multicast_fdb_cap: crate::MLID_LAST - crate::MLID_BASE + 1,
                    ..SwitchInfo::default()
                }),
                ports,
                route_index: route_of.get(&me).copied(),
            });
        }
        SaSnapshot {
            nodes,
            routes: Some(Arc::new(routes)),
            subnet_prefix,
            sms: Vec::new(),
            packet_life_time: 0x12,
        }
    }
}
