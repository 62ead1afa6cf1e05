//! [`MiniAgent`]: a deliberately tiny stand-in for a node's SMA, for testing and
//! benchmarking the simulator's own machinery (forwarding, faults, counters) apart from
//! any SMA. It has no M_Key, no traps, no timers and only NodeInfo, PortInfo (LID,
//! LMC, PortState) and LinearForwardingTable. Simulations of real behaviour use
//! `ibsm-sma`.

use ibsm_transport::Instant;
use ibsm_wire::{
    DrSmpView, MadHeaderView, Method, MgmtClass, NodeInfo, NodeType, Status, dr_turn_around,
    smp_data_mut,
};

use crate::agent::{Agent, AgentTransmit, ForwardingState, LinkRequest, NodeKind, NodeSetup};

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub struct MiniAgent {
    setup: NodeSetup,
    /// Per port 0..=N: (LID, LMC, state).
    ports: Vec<(u16, u8, ForwardingState)>,
    lft: Vec<u8>,
    is_sm: Vec<bool>,
}

const STATUS_UNSUPPORTED: u16 = 0x000C;
const STATUS_INVALID: u16 = 0x001C;

impl MiniAgent {
    /// Sets a port's LID and LMC (a switch: port 0).
    pub fn set_lid(&mut self, port: u8, lid: u16, lmc: u8) {
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            p.0 = lid;
            p.1 = lmc;
        }
    }

    /// Sets a port's logical state (only meaningful while its link is up).
    pub fn set_state(&mut self, port: u8, state: ForwardingState) {
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            if p.2 != ForwardingState::Down || port == 0 {
                p.2 = state;
            }
        }
    }

    /// Sets a switch's LFT entry.
    pub fn set_lft(&mut self, lid: u16, port: u8) {
        let i = usize::from(lid);
        if i >= self.lft.len() {
            self.lft.resize(i + 1, 0xFF);
        }
        self.lft[i] = port;
    }

    /// Whether IsSM is set on `port`.
    #[must_use]
    pub fn is_sm(&self, port: u8) -> bool {
        self.is_sm.get(usize::from(port)).copied().unwrap_or(false)
    }

    fn respond(mad: &mut [u8; 256], status: u16) {
        let mut h = MadHeaderView::new_unchecked(&mut mad[..]);
        if h.mgmt_class() == MgmtClass::SubnDirected {
            if let Ok(mut v) = DrSmpView::new_checked(&mut mad[..]) {
                dr_turn_around(&mut v, status);
            }
        } else {
            // GetResp, whatever the request's method.
            h.set_response(true);
            h.set_method(Method::Get);
            h.set_status(Status(status));
        }
    }
}

impl Agent for MiniAgent {
    fn create(setup: &NodeSetup, _now: Instant) -> Result<Self, String> {
        let n = usize::from(setup.num_ports) + 1;
        let mut ports = vec![(0, 0, ForwardingState::Down); n];
        if setup.kind == NodeKind::Switch {
            ports[0].2 = ForwardingState::Active;
        }
        Ok(Self {
            setup: setup.clone(),
            ports,
            lft: Vec::new(),
            is_sm: vec![false; n],
        })
    }

    fn reset(&mut self, now: Instant) {
        let sms = self.is_sm.clone();
        if let Ok(fresh) = Self::create(&self.setup, now) {
            *self = fresh;
        }
        self.is_sm = sms;
    }

    fn handle_smp(&mut self, _now: Instant, in_port: u8, _slid: u16, mad: &mut [u8; 256]) -> bool {
        let h = MadHeaderView::new_unchecked(&mad[..]);
        let (method, attr, modifier) = (h.method(), h.attribute_id(), h.attribute_modifier());
        if h.response() || !matches!(method, Method::Get | Method::Set) {
            return false;
        }
        let set = method == Method::Set;
        let Some(data) = smp_data_mut(mad) else {
            return false;
        };
        let status = match attr {
            0x0011 if !set => {
                let kind = match self.setup.kind {
                    NodeKind::Ca => NodeType::Ca,
                    NodeKind::Switch => NodeType::Switch,
                    NodeKind::Router => NodeType::Router,
                };
                let ni = NodeInfo {
                    base_version: 1,
                    class_version: 1,
                    node_type: kind,
                    num_ports: self.setup.num_ports,
                    system_image_guid: self.setup.system_image_guid,
                    node_guid: self.setup.guid,
                    port_guid: self.setup.port_guid(in_port),
                    partition_cap: 1,
                    device_id: self.setup.device_id,
                    revision: 0,
                    local_port_num: in_port,
                    vendor_id: self.setup.vendor_id,
                };
                data.fill(0);
                let _ = ni.emit_into(data);
                0
            }
            0x0015 => {
                let port = if modifier == 0 && self.setup.kind != NodeKind::Switch {
                    in_port
                } else {
                    modifier as u8
                };
                match self.ports.get_mut(usize::from(port)) {
                    None => STATUS_INVALID,
                    Some(p) => {
                        if set {
                            p.0 = u16::from_be_bytes([data[16], data[17]]);
                            p.1 = data[34] & 7;
                            let want = data[32] & 0x0F;
                            if p.2 != ForwardingState::Down {
                                p.2 = match want {
                                    1 => ForwardingState::Down,
                                    3 => ForwardingState::Armed,
                                    4 => ForwardingState::Active,
                                    _ => p.2,
                                };
                            }
                        }
                        let (lid, lmc, st) = *p;
                        data.fill(0);
                        data[16..18].copy_from_slice(&lid.to_be_bytes());
                        let code = match st {
                            ForwardingState::Down => 1,
                            ForwardingState::Init => 2,
                            ForwardingState::Armed => 3,
                            ForwardingState::Active => 4,
                        };
                        data[32] = code;
                        data[33] = if st == ForwardingState::Down {
                            0x22
                        } else {
                            0x52
                        };
                        data[34] = lmc;
                        data[28] = in_port;
                        0
                    }
                }
            }
            0x0019 if self.setup.kind == NodeKind::Switch => {
                let base = (modifier as usize) * 64;
                if base >= 0xC000 {
                    STATUS_INVALID
                } else {
                    if set {
                        if self.lft.len() < base + 64 {
                            self.lft.resize(base + 64, 0xFF);
                        }
                        self.lft[base..base + 64].copy_from_slice(data);
                    }
                    for (i, d) in data.iter_mut().enumerate() {
                        *d = self.lft.get(base + i).copied().unwrap_or(0xFF);
                    }
                    0
                }
            }
            _ => STATUS_UNSUPPORTED,
        };
        Self::respond(mad, status);
        true
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<AgentTransmit> {
        None
    }

    fn poll_link_request(&mut self) -> Option<(u8, LinkRequest)> {
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn link_up(&mut self, _now: Instant, port: u8) {
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            if p.2 == ForwardingState::Down {
                p.2 = ForwardingState::Init;
            }
        }
    }

    fn link_down(&mut self, _now: Instant, port: u8) {
        if port != 0 {
            if let Some(p) = self.ports.get_mut(usize::from(port)) {
                p.2 = ForwardingState::Down;
            }
        }
    }

    fn port_state(&self, port: u8) -> ForwardingState {
        self.ports
            .get(usize::from(port))
            .map_or(ForwardingState::Down, |p| p.2)
    }

    fn lid(&self, port: u8) -> (u16, u8) {
        let p = if self.setup.kind == NodeKind::Switch {
            0
        } else {
            port
        };
        self.ports
            .get(usize::from(p))
            .map_or((0, 0), |p| (p.0, p.1))
    }

    fn lft_port(&self, dlid: u16) -> Option<u8> {
        match self.lft.get(usize::from(dlid)) {
            Some(&p) if p != 0xFF => Some(p),
            _ => None,
        }
    }

    fn set_is_sm(&mut self, port: u8, on: bool) {
        if let Some(s) = self.is_sm.get_mut(usize::from(port)) {
            *s = on;
        }
    }
}
