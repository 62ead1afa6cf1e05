//! What the simulator needs from the Subnet Management Agent on each node.
//!
//! The simulator is the SMA's host: it delivers SMPs to it, tells it about link events,
//! carries the traps it raises and reads the state forwarding depends on (port states,
//! LIDs, the linear forwarding table). [`Agent`] is that contract; `ibsm-sma` is the
//! implementation every simulated node runs by default.

use ibsm_transport::Instant;

/// The node kinds the simulator runs are the model's: a fabric's nodes become agents
/// without a translation.
pub use ibsm_topology::NodeKind;

/// Everything an agent is built from: the node's identity as it would sit in
/// non-volatile memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSetup {
    /// Node GUID.
    pub guid: u64,
    /// Kind of node.
    pub kind: NodeKind,
    /// Number of external ports.
    pub num_ports: u8,
    /// NodeDescription text.
    pub description: String,
    /// System image GUID (0: same as the node GUID).
    pub system_image_guid: u64,
    /// Vendor ID (24 bits).
    pub vendor_id: u32,
    /// Device ID.
    pub device_id: u16,
    /// Port GUIDs indexed by port number (entry 0 is the switch's port-0 GUID; for
    /// CAs and routers entry 0 is unused).
    pub port_guids: Vec<u64>,
    /// LFT capacity of a switch (LinearFDBCap); 0 for other nodes.
    pub lft_cap: u16,
    /// MFT capacity of a switch (MulticastFDBCap); 0: the agent's default.
    pub mft_cap: u16,
    /// Lane speed of every port (see [`SimConfig::link_speed`](crate::SimConfig)).
    pub link_speed: ibsm_topology::ActiveSpeed,
    /// A switch's SwitchInfo.EnhancedPort0.
    pub enhanced_port0: bool,
}

impl NodeSetup {
    /// A setup with derived port GUIDs (`guid + port` for CAs, `guid` for switches).
    #[must_use]
    pub fn new(guid: u64, kind: NodeKind, num_ports: u8, description: impl Into<String>) -> Self {
        let port_guids = (0..=u64::from(num_ports))
            .map(|p| {
                if kind == NodeKind::Switch {
                    guid
                } else {
                    guid.wrapping_add(p)
                }
            })
            .collect();
        Self {
            guid,
            kind,
            num_ports,
            description: description.into(),
            system_image_guid: 0,
            vendor_id: 0,
            device_id: 0,
            port_guids,
            lft_cap: if kind == NodeKind::Switch { 0xC000 } else { 0 },
            mft_cap: 0,
            link_speed: ibsm_topology::ActiveSpeed::Qdr,
            enhanced_port0: false,
        }
    }

    /// Port GUID of `port` (0 when out of range).
    #[must_use]
    pub fn port_guid(&self, port: u8) -> u64 {
        self.port_guids.get(usize::from(port)).copied().unwrap_or(0)
    }

    /// The same node with a new node GUID; port GUIDs keep their offset from it (a
    /// board replaced by another of the same model).
    #[must_use]
    pub fn with_guid(&self, guid: u64) -> Self {
        let port_guids = self
            .port_guids
            .iter()
            .map(|g| g.wrapping_sub(self.guid).wrapping_add(guid))
            .collect();
        Self {
            guid,
            port_guids,
            system_image_guid: if self.system_image_guid == self.guid {
                guid
            } else {
                self.system_image_guid
            },
            ..self.clone()
        }
    }
}

/// Logical port state, as forwarding needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ForwardingState {
    /// No link.
    Down,
    /// Link up, SMPs only.
    Init,
    /// Configured, SMPs only.
    Armed,
    /// Everything passes.
    Active,
}

impl ForwardingState {
    /// Whether VL15 (SMP) traffic may pass: Init, Armed or Active.
    #[must_use]
    pub const fn passes_smps(self) -> bool {
        !matches!(self, Self::Down)
    }
}

/// What the agent asks of the physical link after a SubnSet(PortInfo): the SMA's own
/// requests (for `Renegotiate`, the simulator retrains the link when link training
/// would now give other active values, going down for `SimConfig::retrain_time`).
pub use ibsm_sma::LinkRequest;

/// A MAD the agent sends on its own (a trap), LID-routed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTransmit {
    /// Port it leaves from (0 on a switch).
    pub port: u8,
    /// LRH DLID (the master SM's LID).
    pub dlid: u16,
    /// Service level (the master SM's SL).
    pub sl: u8,
    /// The 256-byte SMP.
    pub mad: [u8; 256],
}

/// The Subnet Management Agent of one simulated node.
///
/// Ports are numbered as on the node: 0 is a switch's management port, 1..=N external.
pub trait Agent {
    /// The agent of a freshly powered node.
    ///
    /// # Errors
    /// A message naming what in `setup` the agent cannot model.
    fn create(setup: &NodeSetup, now: Instant) -> Result<Self, String>
    where
        Self: Sized;

    /// Power cycle: everything volatile is lost, non-volatile state survives. Links are
    /// reported again by the host afterwards.
    fn reset(&mut self, now: Instant);

    /// Processes an SMP (class 0x01 or 0x81) addressed to this node that arrived on
    /// `in_port` (a switch's external port, or 0 for its own SM) from LRH SLID `slid`,
    /// turning `mad` into its response in place. A directed-route SMP has passed the
    /// outbound rules (HopPointer = HopCount + 1). Returns `false` when no response is
    /// sent (M_Key violation, TrapRepress, ...).
    fn handle_smp(&mut self, now: Instant, in_port: u8, slid: u16, mad: &mut [u8; 256]) -> bool;

    /// A trap or other unsolicited SMP to send.
    fn poll_transmit(&mut self, now: Instant) -> Option<AgentTransmit>;

    /// A link change the agent wants after a SubnSet.
    fn poll_link_request(&mut self) -> Option<(u8, LinkRequest)>;

    /// The next instant [`Self::handle_timeout`] must run (M_Key lease, trap resend).
    fn poll_timeout(&self) -> Option<Instant>;

    /// Runs the timers due at `now`.
    fn handle_timeout(&mut self, now: Instant);

    /// The physical link of `port` trained.
    fn link_up(&mut self, now: Instant, port: u8);

    /// The physical link of `port` went down.
    fn link_down(&mut self, now: Instant, port: u8);

    /// A non-SMP packet arrived on `port` (moves Armed to Active).
    fn data_packet(&mut self, now: Instant, port: u8) {
        let _ = (now, port);
    }

    /// Logical state of `port`.
    fn port_state(&self, port: u8) -> ForwardingState;

    /// Base LID and LMC of `port` (a switch answers for port 0 whatever `port` is).
    fn lid(&self, port: u8) -> (u16, u8);

    /// A switch's LFT entry for `dlid`: `None` when unprogrammed (0xFF) or beyond
    /// LinearFDBTop.
    fn lft_port(&self, dlid: u16) -> Option<u8>;

    /// A switch's MFT entry for multicast LID `mlid`: the output ports, appended to
    /// `out` (nothing when unprogrammed, beyond MulticastFDBTop where the switch
    /// honours it, or for a node without an MFT).
    fn mft_ports(&self, mlid: u16, out: &mut Vec<u8>) {
        let _ = (mlid, out);
    }

    /// Sets or clears PortInfo.CapabilityMask.IsSM on `port` (an SM attached or gone).
    fn set_is_sm(&mut self, port: u8, on: bool);

    /// What `port` may train to, for link training ([`ibsm_sma::negotiate`] of both
    /// ends): its PortInfo with the supported and enabled widths and speeds. `None` (the
    /// default): the agent does not model training; its link comes up as it reports.
    fn link_info(&self, port: u8) -> Option<ibsm_wire::PortInfo> {
        let _ = port;
        None
    }

    /// The link of `port` trained to `active`: the port reports it from now on. Called
    /// before [`Self::link_up`] when both ends give [`Self::link_info`].
    fn set_link_active(&mut self, port: u8, active: ibsm_sma::LinkActive) {
        let _ = (port, active);
    }

    /// The node's performance agent, if it has one: it answers PerfMgt (class 0x04)
    /// requests and holds the port counters the simulator drives. Without one, class
    /// 0x04 MADs go to an attached SM like any other GMP and nothing is counted.
    fn pma(&self) -> Option<&ibsm_sma::Pma> {
        None
    }

    /// The performance agent, writable.
    fn pma_mut(&mut self) -> Option<&mut ibsm_sma::Pma> {
        None
    }
}
