//! [`SmaAgent`]: `ibsm-sma` as the agent of every simulated node.

use ibsm_sma::{MemNvStore, NodeConfig, Outcome, Pma, PmaConfig, Rx, Sma, SmaEvent};
use ibsm_transport::Instant;
use ibsm_wire::{MadHeaderView, Method, NodeDescription, NodeType};

use crate::agent::{Agent, AgentTransmit, ForwardingState, LinkRequest, NodeKind, NodeSetup};

/// A node's spec-exact Subnet Management Agent (`ibsm_sma::Sma`) with non-volatile
/// M_Key storage, so a reset keeps what the SM saved there and loses the rest.
///
/// Forwarding reads LIDs, LMCs and LinearFDBTop on every LID-routed hop; they change
/// only through SubnSet, so they are cached here and refreshed after each Set and reset.
#[derive(Debug, Clone)]
pub struct SmaAgent {
    sma: Sma<MemNvStore>,
    /// The node's performance agent (PerfMgt counters), reset with the node.
    pma: Pma,
    is_switch: bool,
    /// Per port number: (base LID, LMC). A switch uses entry 0.
    lids: Vec<(u16, u8)>,
    lft_top: u16,
    /// The highest MLID the MFT forwards: MulticastFDBTop where port 0 says
    /// IsMulticastFDBTopSupported, else the end of the MFT.
    mft_top: u16,
    /// Ports the SM wrote ClientReregister = 1 to, oldest first, until a client
    /// ([`crate::HostSaClient`]) takes them.
    reregisters: Vec<u8>,
}

impl SmaAgent {
    /// The agent.
    #[must_use]
    pub fn sma(&self) -> &Sma<MemNvStore> {
        &self.sma
    }

    /// The agent, writable (test setups: preset keys, LIDs, tables).
    pub fn sma_mut(&mut self) -> &mut Sma<MemNvStore> {
        &mut self.sma
    }

    /// The ports the SM asked to re-register with the SA (PortInfo.ClientReregister)
    /// since the last call, oldest first.
    pub fn take_client_reregisters(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.reregisters)
    }

    /// The `ibsm-sma` configuration a simulated node gets: a typical CA or switch
    /// of the setup's identity (GUIDs, description, vendor/device, LFT capacity).
    #[must_use]
    pub fn node_config(setup: &NodeSetup) -> NodeConfig {
        let mut cfg = match setup.kind {
            NodeKind::Switch => NodeConfig::switch(setup.guid, setup.num_ports),
            NodeKind::Ca | NodeKind::Router => NodeConfig::ca(setup.guid, setup.num_ports),
        };
        if setup.kind == NodeKind::Router {
            cfg.node_info.node_type = NodeType::Router;
        }
        cfg.description = NodeDescription::from_text(&setup.description);
        for p in &mut cfg.ports {
            set_speed(&mut p.port_info, setup.link_speed);
        }
        cfg.node_info.system_image_guid = if setup.system_image_guid == 0 {
            setup.guid
        } else {
            setup.system_image_guid
        };
        if setup.vendor_id != 0 {
            cfg.node_info.vendor_id = setup.vendor_id;
        }
        if setup.device_id != 0 {
            cfg.node_info.device_id = setup.device_id;
        }
        if setup.kind == NodeKind::Switch {
            if let Some(p0) = cfg.ports.first_mut() {
                p0.guid = setup.port_guid(0);
            }
            if let Some(si) = cfg.switch_info.as_mut() {
                if setup.lft_cap != 0 {
                    si.linear_fdb_cap = setup.lft_cap;
                }
                if setup.mft_cap != 0 {
                    si.multicast_fdb_cap = setup.mft_cap;
                }
                si.enhanced_port0 = setup.enhanced_port0;
            }
            // As current switches: MLIDs above SwitchInfo.MulticastFDBTop are not
            // forwarded, so an SM must write it (OpenSM `use_mfttop`).
            if let Some(p0) = cfg.ports.first_mut() {
                p0.port_info.capability_mask |=
                    ibsm_wire::CapabilityMask::IS_MULTICAST_FDB_TOP_SUPPORTED;
            }
        } else {
            for (i, p) in cfg.ports.iter_mut().enumerate() {
                p.guid = setup.port_guid(i as u8 + 1);
                // The SMA honours ClientReregister (it raises the event a host's SA
                // clients act on), so its CA ports say so, as a real HCA's do.
                p.port_info.capability_mask |=
                    ibsm_wire::CapabilityMask::IS_CLIENT_REREGISTRATION_SUPPORTED;
            }
        }
        cfg
    }

    fn refresh(&mut self) {
        let n = self.lids.len();
        for p in 0..n {
            let p8 = p as u8;
            if self.is_switch && p != 0 {
                continue;
            }
            self.lids[p] = self.sma.lid_lmc(p8).unwrap_or((0, 0));
        }
        self.lft_top = self.sma.switch_info().map_or(0, |si| si.linear_fdb_top);
        let honours_top = self
            .sma
            .capability_mask(0)
            .is_some_and(|m| m.contains(ibsm_wire::CapabilityMask::IS_MULTICAST_FDB_TOP_SUPPORTED));
        self.mft_top = self.sma.switch_info().map_or(0, |si| {
            if honours_top {
                si.multicast_fdb_top
            } else {
                u16::MAX
            }
        });
    }
}

/// Makes a port's power-on PortInfo that of a port running at `speed` (4x), with the
/// capability bits and LinkSpeedExt* fields such a port reports. QDR and slower keep
/// the typical port as it is.
fn set_speed(pi: &mut ibsm_wire::PortInfo, speed: ibsm_topology::ActiveSpeed) {
    use ibsm_wire::{CapabilityMask, CapabilityMask2, LinkSpeed, LinkSpeedExt, LinkSpeedExtMask};
    let (ext, supported) = match speed {
        ibsm_topology::ActiveSpeed::Fdr => (LinkSpeedExt::Fdr, LinkSpeedExtMask::FDR),
        ibsm_topology::ActiveSpeed::Edr => (
            LinkSpeedExt::Edr,
            LinkSpeedExtMask::FDR | LinkSpeedExtMask::EDR,
        ),
        ibsm_topology::ActiveSpeed::Hdr => (
            LinkSpeedExt::Hdr,
            LinkSpeedExtMask::FDR | LinkSpeedExtMask::EDR | LinkSpeedExtMask::HDR,
        ),
        // XDR ports still support NDR and below in LinkSpeedExtSupported.
        ibsm_topology::ActiveSpeed::Ndr | ibsm_topology::ActiveSpeed::Xdr => (
            if speed == ibsm_topology::ActiveSpeed::Xdr {
                LinkSpeedExt::None
            } else {
                LinkSpeedExt::Ndr
            },
            LinkSpeedExtMask::FDR
                | LinkSpeedExtMask::EDR
                | LinkSpeedExtMask::HDR
                | LinkSpeedExtMask::NDR,
        ),
        _ => return,
    };
    pi.capability_mask |= CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED
        | CapabilityMask::IS_CAPABILITY_MASK2_SUPPORTED;
    if supported.contains(LinkSpeedExtMask::HDR) {
        pi.capability_mask2 |= CapabilityMask2::IS_LINK_SPEED_HDR_SUPPORTED;
    }
    if supported.contains(LinkSpeedExtMask::NDR) {
        pi.capability_mask2 |= CapabilityMask2::IS_LINK_SPEED_NDR_SUPPORTED;
    }
    pi.link_speed_active = LinkSpeed::Extended;
    pi.link_speed_ext_active = ext;
    pi.link_speed_ext_supported = supported;
    pi.link_speed_ext_enabled = supported;
    if speed == ibsm_topology::ActiveSpeed::Xdr {
        pi.link_speed_ext_active2 = 1;
        pi.link_speed_ext_supported2 = 1;
        pi.link_speed_ext_enabled2 = 1;
    }
}

impl Agent for SmaAgent {
    fn create(setup: &NodeSetup, now: Instant) -> Result<Self, String> {
        let cfg = Self::node_config(setup);
        let mut sma = Sma::with_nv_store(cfg, MemNvStore::default()).map_err(|e| e.to_string())?;
        sma.handle_timeout(now);
        let pma = Pma::new(if setup.kind == NodeKind::Switch {
            PmaConfig::switch(setup.num_ports)
        } else {
            PmaConfig::ca(setup.num_ports)
        });
        let mut a = Self {
            sma,
            pma,
            is_switch: setup.kind == NodeKind::Switch,
            lids: vec![(0, 0); usize::from(setup.num_ports) + 1],
            lft_top: 0,
            mft_top: 0,
            reregisters: Vec::new(),
        };
        a.refresh();
        Ok(a)
    }

    fn reset(&mut self, now: Instant) {
        self.sma.reset(now);
        self.pma.reset();
        self.refresh();
    }

    fn handle_smp(&mut self, now: Instant, in_port: u8, slid: u16, mad: &mut [u8; 256]) -> bool {
        let h = MadHeaderView::new_unchecked(&mad[..]);
        let set = !h.response() && h.method() == Method::Set;
        let out = self.sma.handle_in_place(
            now,
            Rx {
                port: in_port,
                slid,
            },
            mad,
        );
        if set {
            self.refresh();
        }
        out == Outcome::Respond
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<AgentTransmit> {
        let t = self.sma.poll_trap(now)?;
        Some(AgentTransmit {
            port: t.port,
            dlid: t.dlid,
            sl: t.sl,
            mad: t.mad,
        })
    }

    fn poll_link_request(&mut self) -> Option<(u8, LinkRequest)> {
        while let Some(ev) = self.sma.poll_event() {
            match ev {
                SmaEvent::Link { port, request } => return Some((port, request)),
                // Bounded: nobody may be taking them.
                SmaEvent::ClientReregister { port } if self.reregisters.len() < 1024 => {
                    self.reregisters.push(port);
                }
                _ => {}
            }
        }
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.sma.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.sma.handle_timeout(now);
    }

    fn link_up(&mut self, now: Instant, port: u8) {
        self.sma.link_up(now, port);
    }

    fn link_down(&mut self, now: Instant, port: u8) {
        self.sma.link_down(now, port);
    }

    fn link_info(&self, port: u8) -> Option<ibsm_wire::PortInfo> {
        if port == 0 {
            return None;
        }
        self.sma.port_info(port)
    }

    fn set_link_active(&mut self, port: u8, active: ibsm_sma::LinkActive) {
        self.sma.set_link_active(port, active);
    }

    fn data_packet(&mut self, now: Instant, port: u8) {
        self.sma.data_packet(now, port);
    }

    fn port_state(&self, port: u8) -> ForwardingState {
        match self.sma.port_state(port) {
            Some(ibsm_sma::LogicalState::Init) => ForwardingState::Init,
            Some(ibsm_sma::LogicalState::Armed) => ForwardingState::Armed,
            Some(ibsm_sma::LogicalState::Active) => ForwardingState::Active,
            _ => ForwardingState::Down,
        }
    }

    fn lid(&self, port: u8) -> (u16, u8) {
        let p = if self.is_switch { 0 } else { usize::from(port) };
        self.lids.get(p).copied().unwrap_or((0, 0))
    }

    fn lft_port(&self, dlid: u16) -> Option<u8> {
        if dlid > self.lft_top {
            return None;
        }
        match self.sma.lft().get(usize::from(dlid)) {
            Some(&p) if p != 0xFF => Some(p),
            _ => None,
        }
    }

    fn mft_ports(&self, mlid: u16, out: &mut Vec<u8>) {
        if mlid > self.mft_top {
            return;
        }
        let Some(masks) = self.sma.mft(mlid) else {
            return;
        };
        for (pos, &m) in masks.iter().enumerate() {
            for bit in 0..16 {
                if m & (1 << bit) != 0 {
                    out.push((pos * 16 + bit) as u8);
                }
            }
        }
    }

    fn set_is_sm(&mut self, port: u8, on: bool) {
        self.sma.set_is_sm(port, on);
    }

    fn pma(&self) -> Option<&Pma> {
        Some(&self.pma)
    }

    fn pma_mut(&mut self) -> Option<&mut Pma> {
        Some(&mut self.pma)
    }
}
