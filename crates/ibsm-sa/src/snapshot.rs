//! [`SaSnapshot`]: the read-only picture of the subnet the SA answers from. The SM
//! fills one after each sweep that brought the subnet up; the SA indexes it once
//! ([`crate::SaServer::load`]) and never sees the SM's live state.

use ibsm_routing::Routes;
use ibsm_wire::{NodeInfo, NodeType, PortInfo, SmInfo, SwitchInfo};

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
    /// The forwarding tables in force, indexed by [`SaNode::route_index`].
    pub routes: Option<Routes>,
    /// Subnet prefix of every port GID.
    pub subnet_prefix: u64,
    /// The SMs known: `(LID, SMInfo)`; the first is the master (ours). SM_Keys in here
    /// are shown only to trusted requesters.
    pub sms: Vec<(u16, SmInfo)>,
    /// PathRecord.PacketLifeTime (OpenSM `packet_life_time`).
    pub packet_life_time: u8,
}
