//! What the host tells the agent about its node: identity, ports and capabilities, and the
//! non-volatile store for M_Keys.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::time::Duration;

use ibsm_wire::{
    CapabilityMask, LinkSpeed, LinkSpeedMask, LinkWidth, LinkWidthMask, MlnxExtPortInfo, Mtu,
    NodeDescription, NodeInfo, NodeType, PortInfo, PortInfoExtended, SmInfo, SwitchInfo, VlCap,
};

use crate::mkey::MKeyConfig;

/// A node's identity and capabilities, from which the agent builds its power-on state.
///
/// `ports` holds one entry per port number: for a switch ports `0..=NumPorts` (port 0 is
/// the management port), for a CA or router ports `1..=NumPorts` at indexes
/// `0..NumPorts` (`ports[0]` is port 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeConfig {
    /// NodeInfo; `port_guid` and `local_port_num` are filled per request.
    pub node_info: NodeInfo,
    /// NodeDescription.
    pub description: NodeDescription,
    /// SwitchInfo of a switch (capabilities; `None` for CAs and routers). Its
    /// LinearFDBCap, MulticastFDBCap and PartitionEnforcementCap size the tables.
    pub switch_info: Option<SwitchInfo>,
    /// Per port: GUID and power-on PortInfo.
    pub ports: Vec<PortConfig>,
    /// SMInfo of an SM hosted on this node (`None`: SubnGet(SMInfo) is not answered).
    /// The host keeps it current with [`Sma::set_sm_info`](crate::Sma::set_sm_info).
    pub sm_info: Option<SmInfo>,
    /// Interval between retransmissions of an unrepressed trap.
    pub trap_resend_interval: Duration,
    /// At most this many traps wait for a TrapRepress; older ones are dropped first.
    pub max_pending_traps: usize,
}

/// One port's identity and power-on PortInfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortConfig {
    /// Port GUID (GUIDInfo entry 0; a switch's external ports have none and use 0).
    pub guid: u64,
    /// Power-on PortInfo: capabilities (CapabilityMask, widths, speeds, VLCap, MTUCap,
    /// GUIDCap, VLArb caps, RespTimeValue, ...) and initial values of the SM-set fields.
    /// PortState, PortPhysicalState, LocalPortNum and the M_Key fields are ignored: they
    /// come from the link state machine and the non-volatile store.
    pub port_info: PortInfo,
    /// Power-on PortInfoExtended, answered when the port's CapabilityMask2 has
    /// IsPortInfoExtendedSupported; the SM may write the FEC "enabled" masks (each a
    /// subset of the matching "supported" mask).
    pub port_info_extended: PortInfoExtended,
    /// MlnxExtPortInfo (Mellanox vendor attribute 0xFF90); `None`: not answered. The SM
    /// may write StateChangeEnable and LinkSpeedEnabled (a subset of LinkSpeedSupported).
    pub mlnx_ext_port_info: Option<MlnxExtPortInfo>,
}

/// The default trap retransmission interval.
const DEFAULT_TRAP_RESEND: Duration = Duration::from_secs(1);

impl PortConfig {
    /// A typical 4x QDR port: MTU 4096, 8 data VLs, VL arbitration tables of 8 entries,
    /// traps supported, 8 GUIDs, trap and SL mapping capabilities.
    #[must_use]
    pub fn typical(guid: u64) -> Self {
        let port_info = PortInfo {
            gid_prefix: ibsm_wire::DEFAULT_SUBNET_PREFIX,
            capability_mask: CapabilityMask::IS_TRAP_SUPPORTED
                | CapabilityMask::IS_SL_MAPPING_SUPPORTED
                | CapabilityMask::IS_SYSTEM_IMAGE_GUID_SUPPORTED,
            link_width_enabled: LinkWidthMask::X1 | LinkWidthMask::X4,
            link_width_supported: LinkWidthMask::X1 | LinkWidthMask::X4,
            link_width_active: LinkWidth::X4,
            link_speed_supported: LinkSpeedMask::SDR | LinkSpeedMask::DDR | LinkSpeedMask::QDR,
            link_speed_enabled: LinkSpeedMask::SDR | LinkSpeedMask::DDR | LinkSpeedMask::QDR,
            link_speed_active: LinkSpeed::Qdr,
            neighbor_mtu: Mtu::Mtu4096,
            mtu_cap: Mtu::Mtu4096,
            vl_cap: VlCap::Vl0To7,
            operational_vls: VlCap::Vl0To7,
            vl_arbitration_high_cap: 8,
            vl_arbitration_low_cap: 8,
            guid_cap: 8,
            resp_time_value: 8,
            subnet_timeout: 18,
            ..PortInfo::default()
        };
        Self {
            guid,
            port_info,
            port_info_extended: PortInfoExtended::default(),
            mlnx_ext_port_info: None,
        }
    }
}

impl NodeConfig {
    /// A channel adapter with `num_ports` typical ports; port `p` has GUID
    /// `node_guid + p`.
    #[must_use]
    pub fn ca(node_guid: u64, num_ports: u8) -> Self {
        let node_info = NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::Ca,
            num_ports,
            system_image_guid: node_guid,
            node_guid,
            partition_cap: 64,
            device_id: 0x1003,
            revision: 1,
            vendor_id: 0x0002C9,
            ..NodeInfo::default()
        };
        Self {
            node_info,
            description: NodeDescription::from_text("ibsm-sma CA"),
            switch_info: None,
            ports: (1..=num_ports)
                .map(|p| PortConfig::typical(node_guid + u64::from(p)))
                .collect(),
            sm_info: None,
            trap_resend_interval: DEFAULT_TRAP_RESEND,
            max_pending_traps: 16,
        }
    }

    /// A switch with `num_ports` external ports: a full unicast LID space
    /// (LinearFDBCap 49152), 1024 MLIDs, 32 P_Keys per external port. Port 0 has GUID
    /// `node_guid`; external ports carry no GUID.
    #[must_use]
    pub fn switch(node_guid: u64, num_ports: u8) -> Self {
        let node_info = NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::Switch,
            num_ports,
            system_image_guid: node_guid,
            node_guid,
            partition_cap: 32,
            device_id: 0xC738,
            revision: 1,
            vendor_id: 0x0002C9,
            ..NodeInfo::default()
        };
        let switch_info = SwitchInfo {
            linear_fdb_cap: 49152,
            multicast_fdb_cap: 1024,
            linear_fdb_top: 0,
            default_port: 0,
            default_multicast_primary_port: 0xFF,
            default_multicast_not_primary_port: 0xFF,
            life_time_value: 18,
            optimized_sl_to_vl_mapping_programming: 1,
            partition_enforcement_cap: 32,
            inbound_enforcement_cap: true,
            outbound_enforcement_cap: true,
            multicast_fdb_top: 0xBFFF,
            ..SwitchInfo::default()
        };
        let mut ports: Vec<PortConfig> = (0..=num_ports)
            .map(|p| PortConfig::typical(if p == 0 { node_guid } else { 0 }))
            .collect();
        // The management port has no link of its own and no VL arbitration.
        let p0 = &mut ports[0].port_info;
        p0.vl_arbitration_high_cap = 0;
        p0.vl_arbitration_low_cap = 0;
        for p in ports.iter_mut().skip(1) {
            p.port_info.guid_cap = 0;
            p.port_info.capability_mask = CapabilityMask::EMPTY;
        }
        Self {
            node_info,
            description: NodeDescription::from_text("ibsm-sma switch"),
            switch_info: Some(switch_info),
            ports,
            sm_info: None,
            trap_resend_interval: DEFAULT_TRAP_RESEND,
            max_pending_traps: 16,
        }
    }

    /// Whether this node is a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.node_info.node_type == NodeType::Switch
    }
}

/// Why a [`NodeConfig`] cannot make an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeConfigError {
    /// `ports` has the wrong length for the node type and NumPorts.
    #[error("node has {num_ports} ports, so {expected} port entries are needed, got {got}")]
    PortCount {
        /// NodeInfo.NumPorts.
        num_ports: u8,
        /// Entries expected.
        expected: usize,
        /// Entries given.
        got: usize,
    },
    /// A switch without SwitchInfo, or a CA/router with one.
    #[error("switch_info must be given exactly for switches (node type {node_type:?})")]
    SwitchInfo {
        /// NodeInfo.NodeType.
        node_type: NodeType,
    },
    /// A node type the agent does not emulate.
    #[error("unsupported node type {node_type:?}")]
    NodeType {
        /// NodeInfo.NodeType.
        node_type: NodeType,
    },
    /// A CA or router with no port.
    #[error("a CA or router needs at least one port")]
    NoPorts,
    /// `max_pending_traps` is 0 or `trap_resend_interval` is 0.
    #[error("trap queue: max_pending_traps and trap_resend_interval must be non-zero")]
    TrapQueue,
}

/// Where a node keeps its M_Keys across resets (PortInfo.CapabilityMask IsMKeyNVRAM).
///
/// The agent loads every port's key, protection level and lease period at power-on and
/// reset, and saves them whenever a correctly keyed SubnSet(PortInfo) changes them.
/// A lease expiry is not saved: after a reset the SM's last setting applies again.
pub trait NvStore {
    /// The saved values of `port`, if any (0 = a switch's management port).
    fn load(&mut self, port: u8) -> Option<MKeyConfig>;
    /// Saves the values of `port`.
    fn save(&mut self, port: u8, config: MKeyConfig);
}

/// No non-volatile memory: every reset starts with M_Key 0, protection 0, lease 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoNvStore;

impl NvStore for NoNvStore {
    fn load(&mut self, _port: u8) -> Option<MKeyConfig> {
        None
    }
    fn save(&mut self, _port: u8, _config: MKeyConfig) {}
}

/// A non-volatile store in memory (for simulators and tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemNvStore {
    /// Saved values by port number.
    pub saved: BTreeMap<u8, MKeyConfig>,
}

impl NvStore for MemNvStore {
    fn load(&mut self, port: u8) -> Option<MKeyConfig> {
        self.saved.get(&port).copied()
    }
    fn save(&mut self, port: u8, config: MKeyConfig) {
        self.saved.insert(port, config);
    }
}
