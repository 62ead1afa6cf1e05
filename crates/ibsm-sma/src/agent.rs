// Over 800 lines: one agent answering every SMP attribute over one store and M_Key state.
//! The agent: [`Sma`] answers SMPs, keeps the attribute store, raises traps.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use ibsm_wire::modifier::{
    GuidInfoMod, LftMod, MftMod, PKeyMod, PortMod, SlToVlMod, VlArbMod, VlArbPart,
    decode_sm_info_control,
};
use ibsm_wire::{
    CapabilityMask, CapabilityMask2, DrSmpView, LinkDownDefaultState, LinkSpeedExt,
    LinkSpeedExtMask, LinkSpeedMask, LinkWidthMask, MAD_SIZE, Method, MgmtClass, MlnxExtPortInfo,
    Mtu, NodeDescription, NodeType, PERMISSIVE_LID, PhysPortState, PortInfo, PortInfoExtended,
    PortInfoView, PortState, SmAttributeId, SmInfo, SmInfoView, Status, SwitchInfo, VendorDiag,
    VlCap, dr_turn_around,
};

use crate::config::{NoNvStore, NodeConfig, NodeConfigError, NvStore};
use crate::mkey::{CheckedMethod, MKeyConfig, MKeyState, Verdict};
use crate::port::{LinkRequest, LinkTransition, LogicalState, PortLink};
use crate::trap::{
    PendingTrap, Trap, TrapQueue, bad_mkey_notice, link_state_notice, local_changes_notice,
};
use ibsm_wire::{Instant, Trap144ChangeFlags};

/// Where an SMP was received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rx {
    /// Port it arrived on: a CA/router port `1..=NumPorts`, a switch's external port
    /// `1..=NumPorts`, or 0 for an SMP a switch's own SM sent to itself.
    pub port: u8,
    /// LRH source LID (0xFFFF for the directed part of a DR SMP); reported in trap 256.
    pub slid: u16,
}

impl Rx {
    /// Received on `port` with a permissive source LID (directed route).
    #[must_use]
    pub const fn port(port: u8) -> Self {
        Self {
            port,
            slid: PERMISSIVE_LID,
        }
    }
}

/// What [`Sma::handle_in_place`] did with an SMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The buffer now holds the response (SubnGetResp, same routing form); send it back.
    Respond,
    /// A correctly keyed SubnTrapRepress was accepted (no response is sent).
    Repressed {
        /// Whether it matched a pending trap.
        matched: bool,
    },
    /// Nothing is sent.
    Dropped(DropReason),
}

/// Why an SMP was dropped without a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Shorter than 256 bytes, base version not 1, or arrived on a port the node lacks.
    Malformed,
    /// Not a subnet-management class (0x01/0x81).
    NotSmp,
    /// A response (R bit set) or a returning DR SMP: not for an agent.
    NotARequest,
    /// Directed route with a hop pointer/count that does not end here.
    BadHopPointer,
    /// The M_Key check failed (violation counted, lease started, trap 256 queued).
    MKey,
    /// SMInfo on a node that hosts no SM.
    NoSm,
}

/// Something the host must act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SmaEvent {
    /// A SubnSet(PortInfo) asked for a link change on `port`.
    Link {
        /// Port number.
        port: u8,
        /// What to do.
        request: LinkRequest,
    },
    /// The SM wrote ClientReregister = 1 on `port`.
    ClientReregister {
        /// Port number.
        port: u8,
    },
    /// A SubnSet(SMInfo) for the hosted SM (the response carried the SMInfo current then).
    SmInfoSet {
        /// AttributeModifier: the control code (1 HANDOVER .. 5 DISCOVER).
        control: u32,
        /// The sender's SMInfo from the request.
        sender: SmInfo,
        /// Whether the request presented this SM's SM_Key or the port's non-zero M_Key.
        authenticated: bool,
    },
}

/// Counters of what the agent saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// SMPs given to `handle`.
    pub received: u64,
    /// Responses produced.
    pub responded: u64,
    /// SMPs dropped for a failed M_Key check.
    pub mkey_dropped: u64,
    /// SMPs dropped for any other reason.
    pub other_dropped: u64,
    /// Trap transmissions (first sends and retransmissions).
    pub traps_sent: u64,
    /// Pending traps discarded because the queue was full.
    pub traps_overflowed: u64,
}

/// One port's store.
#[derive(Debug, Clone)]
struct PortData {
    guid: u64,
    /// PortInfo as encoded bytes; the M_Key fields, PortState, PortPhysicalState,
    /// LinkDownDefaultState and LocalPortNum are overlaid from `mkey`/`link` on read.
    info: [u8; 64],
    mkey: MKeyState,
    link: PortLink,
    pkeys: Vec<u16>,
    /// Low-priority entries 0..64 then high-priority 0..64, two bytes each; `None` until
    /// the first Set (all 0): most ports never have one, and a large fabric has hundreds
    /// of thousands of ports.
    vlarb: Option<Box<[u8; 256]>>,
    /// CA/router: the port's SL-to-VL table.
    sl2vl: [u8; 8],
    guids: Vec<u64>,
    led: bool,
    ext: PortInfoExtended,
    mlnx: Option<MlnxExtPortInfo>,
}

/// Switch-only store.
#[derive(Debug, Clone)]
struct SwitchData {
    info: SwitchInfo,
    lft: Vec<u8>,
    /// RandomForwardingTable entries (4 bytes each), RandomFDBCap of them.
    rft: Vec<[u8; 4]>,
    /// `positions` masks per MLID, up to the last block written: a table of
    /// MulticastFDBCap entries is 10 KB on a 64-port switch, and a fabric uses a few of
    /// its blocks. Entries past the end are 0.
    mft: Vec<u16>,
    /// Masks the table holds (MulticastFDBCap, whole blocks, times `positions`).
    mft_cap: usize,
    positions: usize,
    /// SL-to-VL table per (input, output) port pair: index `in * (n + 1) + out`; empty
    /// until the first Set (all 0): (n + 1)^2 tables are 34 KB on a 64-port switch, and
    /// most fabrics never set them.
    sl2vl: Vec<[u8; 8]>,
}

/// Status returned by the attribute handlers.
type AttrResult = Result<(), Status>;

/// A Subnet Management Agent for one node.
///
/// See the crate docs for the driving loop. `S` is the non-volatile store for M_Keys.
#[derive(Debug, Clone)]
pub struct Sma<S: NvStore = NoNvStore> {
    cfg: NodeConfig,
    nv: S,
    is_switch: bool,
    num_ports: u8,
    /// Index = port number; a CA's index 0 is an unused placeholder.
    ports: Vec<PortData>,
    switch: Option<SwitchData>,
    sm_info: Option<SmInfo>,
    description: NodeDescription,
    now: Instant,
    /// Earliest lease deadline of any port (may be stale-early, never late).
    lease_due: Option<Instant>,
    traps: TrapQueue,
    events: VecDeque<SmaEvent>,
    stats: Stats,
}

impl Sma<NoNvStore> {
    /// An agent without non-volatile memory, in its power-on state.
    ///
    /// # Errors
    /// [`NodeConfigError`] when `cfg` is inconsistent.
    pub fn new(cfg: NodeConfig) -> Result<Self, NodeConfigError> {
        Self::with_nv_store(cfg, NoNvStore)
    }
}

fn pi_view(b: &[u8; 64]) -> PortInfoView<&[u8]> {
    PortInfoView::new_unchecked(&b[..])
}

fn pi_view_mut(b: &mut [u8; 64]) -> PortInfoView<&mut [u8]> {
    PortInfoView::new_unchecked(&mut b[..])
}

impl<S: NvStore> Sma<S> {
    /// An agent whose M_Keys come from (and are saved to) `nv`, in its power-on state.
    ///
    /// # Errors
    /// [`NodeConfigError`] when `cfg` is inconsistent.
    pub fn with_nv_store(cfg: NodeConfig, nv: S) -> Result<Self, NodeConfigError> {
        let node_type = cfg.node_info.node_type;
        let is_switch = match node_type {
            NodeType::Switch => true,
            NodeType::Ca | NodeType::Router => false,
            other => return Err(NodeConfigError::NodeType { node_type: other }),
        };
        if is_switch != cfg.switch_info.is_some() {
            return Err(NodeConfigError::SwitchInfo { node_type });
        }
        let n = cfg.node_info.num_ports;
        let expected = usize::from(n) + usize::from(is_switch);
        if cfg.ports.len() != expected {
            return Err(NodeConfigError::PortCount {
                num_ports: n,
                expected,
                got: cfg.ports.len(),
            });
        }
        if !is_switch && n == 0 {
            return Err(NodeConfigError::NoPorts);
        }
        if cfg.max_pending_traps == 0 || cfg.trap_resend_interval.is_zero() {
            return Err(NodeConfigError::TrapQueue);
        }
        let mut sma = Self {
            nv,
            is_switch,
            num_ports: n,
            ports: Vec::new(),
            switch: None,
            sm_info: cfg.sm_info,
            description: cfg.description,
            now: Instant::ZERO,
            lease_due: None,
            traps: TrapQueue::new(cfg.max_pending_traps),
            events: VecDeque::new(),
            stats: Stats::default(),
            cfg,
        };
        sma.power_on();
        Ok(sma)
    }

    /// Builds every table from the configuration and the non-volatile store.
    fn power_on(&mut self) {
        let cfg = &self.cfg;
        let n = usize::from(self.num_ports);
        let is_switch = self.is_switch;
        let pkey_cap = usize::from(cfg.node_info.partition_cap);
        let ext_pkey_cap = cfg
            .switch_info
            .map_or(0, |s| usize::from(s.partition_enforcement_cap));
        let mut ports = Vec::with_capacity(n + 1);
        if !is_switch {
            ports.push(PortData::placeholder());
        }
        for (i, pc) in cfg.ports.iter().enumerate() {
            let num = if is_switch { i } else { i + 1 };
            let mut info = pc.port_info.to_bytes();
            {
                let mut v = pi_view_mut(&mut info);
                // Volatile SM-set values start at their reset values.
                v.set_client_reregister(false);
            }
            let cap = if is_switch && num != 0 {
                ext_pkey_cap
            } else {
                pkey_cap
            };
            let mut pkeys = vec![0u16; cap];
            if let Some(first) = pkeys.first_mut() {
                *first = 0xFFFF;
            }
            let guid_cap = usize::from(pc.port_info.guid_cap);
            let mut guids = vec![0u64; guid_cap];
            if let Some(first) = guids.first_mut() {
                *first = pc.guid;
            }
            let link = if is_switch && num == 0 {
                PortLink::new_management()
            } else {
                PortLink::new_external()
            };
            ports.push(PortData {
                guid: pc.guid,
                info,
                mkey: MKeyState::new(MKeyConfig::default()),
                link,
                pkeys,
                vlarb: None,
                sl2vl: [0; 8],
                guids,
                led: false,
                ext: pc.port_info_extended,
                mlnx: pc.mlnx_ext_port_info,
            });
        }
        for (num, p) in ports.iter_mut().enumerate() {
            if !is_switch && num == 0 {
                continue;
            }
            let saved = self.nv.load(num as u8).unwrap_or_default();
            p.mkey = MKeyState::new(saved);
        }
        self.ports = ports;
        self.switch = cfg.switch_info.map(|si| {
            let lft_len = usize::from(si.linear_fdb_cap).div_ceil(64) * 64;
            let positions = n / 16 + 1;
            let mft_len = usize::from(si.multicast_fdb_cap).div_ceil(32) * 32 * positions;
            SwitchData {
                info: SwitchInfo {
                    port_state_change: false,
                    ..si
                },
                lft: vec![0xFF; lft_len],
                rft: vec![[0; 4]; usize::from(si.random_fdb_cap)],
                mft: Vec::new(),
                mft_cap: mft_len,
                positions,
                sl2vl: Vec::new(),
            }
        });
        self.sm_info = cfg.sm_info;
        self.description = cfg.description;
    }

    // ----- host interface -------------------------------------------------------------

    /// Resets the node: every attribute returns to its power-on value, M_Keys come from
    /// the non-volatile store, all external ports go Down (the host reports links that
    /// train again with [`Self::link_up`]), pending traps and events are discarded.
    pub fn reset(&mut self, now: Instant) {
        self.now = self.now.max(now);
        self.traps.clear();
        self.events.clear();
        self.lease_due = None;
        self.power_on();
    }

    /// The physical link of `port` trained: a Down port goes to Init (a switch sets
    /// PortStateChange and raises trap 128). Ignored for port numbers the node lacks.
    pub fn link_up(&mut self, now: Instant, port: u8) {
        self.advance(now);
        if let Some(t) = self.external_port_mut(port).and_then(PortLink::link_up) {
            self.link_transition(t);
        }
    }

    /// The physical link of `port` was lost: the port goes Down.
    pub fn link_down(&mut self, now: Instant, port: u8) {
        self.advance(now);
        if let Some(t) = self.external_port_mut(port).and_then(PortLink::link_down) {
            self.link_transition(t);
        }
    }

    /// An Armed `port` received a data packet: it becomes Active.
    pub fn data_packet(&mut self, now: Instant, port: u8) {
        self.advance(now);
        if let Some(p) = self.external_port_mut(port) {
            p.data_packet();
        }
    }

    /// The link of `port` trained to `active` (the host negotiated it, see
    /// [`crate::negotiate`]): PortInfo reports it as the port's active width and speed.
    /// Call it before [`Self::link_up`]. Ignored for port numbers the node lacks and for
    /// a switch's port 0.
    pub fn set_link_active(&mut self, port: u8, active: crate::LinkActive) {
        let Some(p) = self.port_data_mut(port) else {
            return;
        };
        if p.link.management {
            return;
        }
        let mut v = pi_view_mut(&mut p.info);
        v.set_link_width_active(active.width);
        v.set_link_speed_active(active.speed);
        v.set_link_speed_ext_active(active.speed_ext);
        v.set_link_speed_ext_active2(active.speed_ext2);
    }

    /// Replaces the hosted SM's SMInfo (`None`: no SM here, SMInfo is not answered).
    pub fn set_sm_info(&mut self, sm_info: Option<SmInfo>) {
        self.sm_info = sm_info;
    }

    /// Sets or clears CapabilityMask.IsSM of `port` (an SM opened or closed it); see
    /// [`Self::set_capability_mask`].
    pub fn set_is_sm(&mut self, port: u8, is_sm: bool) {
        if let Some(p) = self.port_data(port) {
            let mut cm = pi_view(&p.info).capability_mask();
            cm.set(CapabilityMask::IS_SM, is_sm);
            let now = self.now;
            self.set_capability_mask(now, port, cm);
        }
    }

    /// Replaces the CapabilityMask of `port` (the host's own capabilities changed). A
    /// change raises trap 144 from that port when it has IsCapabilityMaskNoticeSupported.
    pub fn set_capability_mask(&mut self, now: Instant, port: u8, mask: CapabilityMask) {
        self.advance(now);
        let Some(p) = self.port_data_mut(port) else {
            return;
        };
        let mut v = pi_view_mut(&mut p.info);
        if v.capability_mask() == mask {
            return;
        }
        v.set_capability_mask(mask);
        if mask.contains(CapabilityMask::IS_CAPABILITY_MASK_NOTICE_SUPPORTED) {
            self.local_change_trap(port, Trap144ChangeFlags::EMPTY);
        }
    }

    /// The host renamed the node: NodeDescription changes and every port that has
    /// IsOtherLocalChangesNoticeSupported (a switch: port 0) raises trap 144.
    pub fn set_node_description(&mut self, now: Instant, description: NodeDescription) {
        self.advance(now);
        if self.description == description {
            return;
        }
        self.description = description;
        self.node_description_changed();
    }

    fn node_description_changed(&mut self) {
        let ports: Vec<u8> = if self.is_switch {
            vec![0]
        } else {
            (1..=self.num_ports).collect()
        };
        for port in ports {
            let cm = pi_view(&self.ports[usize::from(port)].info).capability_mask();
            if cm.contains(CapabilityMask::IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED) {
                self.local_change_trap(port, Trap144ChangeFlags::NODE_DESCRIPTION);
            }
        }
    }

    fn local_change_trap(&mut self, port: u8, flags: Trap144ChangeFlags) {
        let p = &self.ports[usize::from(port)];
        if let Some((_, lid)) = Self::trap_route(p) {
            let v = pi_view(&p.info);
            let notice = local_changes_notice(
                self.cfg.node_info.node_type,
                lid,
                v.capability_mask(),
                v.capability_mask2(),
                flags,
            );
            self.traps.push(
                PendingTrap::new(port, notice, self.now),
                &mut self.stats.traps_overflowed,
            );
        }
    }

    fn external_port_mut(&mut self, port: u8) -> Option<&mut PortLink> {
        if port == 0 || port > self.num_ports {
            return None;
        }
        Some(&mut self.ports[usize::from(port)].link)
    }

    fn port_data(&self, port: u8) -> Option<&PortData> {
        let ok = if self.is_switch {
            port <= self.num_ports
        } else {
            port >= 1 && port <= self.num_ports
        };
        ok.then(|| &self.ports[usize::from(port)])
    }

    fn port_data_mut(&mut self, port: u8) -> Option<&mut PortData> {
        let ok = if self.is_switch {
            port <= self.num_ports
        } else {
            port >= 1 && port <= self.num_ports
        };
        if ok {
            Some(&mut self.ports[usize::from(port)])
        } else {
            None
        }
    }

    fn link_transition(&mut self, _t: LinkTransition) {
        let Some(sw) = self.switch.as_mut() else {
            return;
        };
        sw.info.port_state_change = true;
        if let Some((_, lid)) = Self::trap_route(&self.ports[0]) {
            let notice = link_state_notice(lid);
            self.traps.push(
                PendingTrap::new(0, notice, self.now),
                &mut self.stats.traps_overflowed,
            );
        }
    }

    /// `Some((MasterSMLID, LID))` when `port` may raise a trap: traps supported, the SM
    /// LID known and the port not Down.
    fn trap_route(p: &PortData) -> Option<(u16, u16)> {
        let v = pi_view(&p.info);
        let sm_lid = v.master_sm_lid();
        (v.capability_mask()
            .contains(CapabilityMask::IS_TRAP_SUPPORTED)
            && sm_lid != 0
            && p.link.state != LogicalState::Down)
            .then(|| (sm_lid, v.lid()))
    }

    // ----- time -------------------------------------------------------------------------

    /// Lets virtual time pass (time never goes backwards: an earlier `now` is ignored);
    /// lapses M_Key leases whose countdown ended.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
        // Only walk the ports when some countdown may have ended.
        if self.lease_due.is_some_and(|d| self.now >= d) {
            let now = self.now;
            for p in &mut self.ports {
                p.mkey.advance(now);
            }
            self.lease_due = self
                .ports
                .iter()
                .filter_map(|p| p.mkey.lease_deadline)
                .min();
        }
    }

    /// The next instant at which something happens by itself: a lease lapses or a trap
    /// is (re)sent.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Hosts ask after every SMP; a countdown only starts in `handle_in_place`, which
        // then sets `lease_due`, so without it no port's lease runs and the (switch-wide)
        // walk is skipped.
        let lease = self.lease_due.and_then(|_| {
            self.ports
                .iter()
                .filter_map(|p| p.mkey.lease_deadline)
                .min()
        });
        let trap = self.traps.next_due();
        match (lease, trap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next trap due at `now` (first transmission or retransmission), as a
    /// LID-routed SubnTrap(Notice) to the issuing port's MasterSMLID. Call until `None`.
    pub fn poll_trap(&mut self, now: Instant) -> Option<Trap> {
        self.advance(now);
        let interval = self.cfg.trap_resend_interval;
        let now = self.now;
        let ports = &self.ports;
        let trap = self.traps.poll(now, interval, |port| {
            let p = &ports[usize::from(port)];
            let v = pi_view(&p.info);
            (
                v.lid(),
                v.master_sm_lid(),
                v.master_sm_sl(),
                p.mkey.config.m_key,
            )
        })?;
        self.stats.traps_sent += 1;
        Some(trap)
    }

    /// The next host event, if any.
    pub fn poll_event(&mut self) -> Option<SmaEvent> {
        self.events.pop_front()
    }

    // ----- read access for simulators and tests ---------------------------------------

    /// The linear forwarding table, indexed by LID (empty for CAs and routers). Entries
    /// above SwitchInfo.LinearFDBTop are to be ignored by forwarding.
    #[must_use]
    pub fn lft(&self) -> &[u8] {
        self.switch.as_ref().map_or(&[], |s| &s.lft[..])
    }

    /// The port masks of multicast LID `mlid` (one 16-bit mask per position), if the
    /// switch has an entry for it.
    #[must_use]
    pub fn mft(&self, mlid: u16) -> Option<&[u16]> {
        let sw = self.switch.as_ref()?;
        let idx = usize::from(mlid.checked_sub(0xC000)?);
        let start = idx * sw.positions;
        if start + sw.positions > sw.mft_cap {
            return None;
        }
        // Never more than 16 positions (255 ports).
        static UNWRITTEN: [u16; 16] = [0; 16];
        Some(
            sw.mft
                .get(start..start + sw.positions)
                .unwrap_or(&UNWRITTEN[..sw.positions]),
        )
    }

    /// The SwitchInfo as the SM would read it (`None` for CAs and routers).
    #[must_use]
    pub fn switch_info(&self) -> Option<SwitchInfo> {
        self.switch.as_ref().map(|s| s.info)
    }

    /// The P_Key table of `port` (a switch's port 0 or external port, a CA's port).
    #[must_use]
    pub fn pkeys(&self, port: u8) -> &[u16] {
        self.port_data(port).map_or(&[], |p| &p.pkeys[..])
    }

    /// The SL-to-VL table used for packets from `in_port` to `out_port` (a CA or router
    /// has one per port: `in_port` is ignored), as 8 bytes of two 4-bit entries each.
    #[must_use]
    pub fn sl2vl(&self, in_port: u8, out_port: u8) -> Option<[u8; 8]> {
        if let Some(sw) = &self.switch {
            let n = usize::from(self.num_ports) + 1;
            let (i, o) = (usize::from(in_port), usize::from(out_port));
            (i < n && o < n).then(|| sw.sl2vl.get(i * n + o).copied().unwrap_or_default())
        } else {
            self.port_data(out_port).map(|p| p.sl2vl)
        }
    }

    /// The VL arbitration tables of `port`: 128 two-byte entries (VL in the low nibble of
    /// the first byte, weight in the second), low-priority entries 0..64 first, then
    /// high-priority entries 0..64; entries beyond the port's caps stay 0.
    #[must_use]
    pub fn vl_arbitration(&self, port: u8) -> Option<&[u8; 256]> {
        static NONE_SET: [u8; 256] = [0; 256];
        self.port_data(port)
            .map(|p| p.vlarb.as_deref().unwrap_or(&NONE_SET))
    }

    /// The GUIDInfo entries of `port` (entry 0 is the port GUID; a switch: port 0 only).
    #[must_use]
    pub fn guids(&self, port: u8) -> &[u64] {
        self.port_data(port).map_or(&[], |p| &p.guids[..])
    }

    /// Logical state of `port`.
    #[must_use]
    pub fn port_state(&self, port: u8) -> Option<LogicalState> {
        self.port_data(port).map(|p| p.link.state)
    }

    /// The PortInfo of `port` as an authenticated SubnGet would return it.
    #[must_use]
    pub fn port_info(&self, port: u8) -> Option<PortInfo> {
        let p = self.port_data(port)?;
        let mut b = [0u8; 64];
        Self::render_port_info(p, port, false, &mut b);
        PortInfo::parse(&b).ok()
    }

    /// M_Key state of `port` (the one that guards the node: port 0 of a switch, each
    /// port of a CA).
    #[must_use]
    pub fn m_key_state(&self, port: u8) -> Option<&MKeyState> {
        self.port_data(port).map(|p| &p.mkey)
    }

    /// Base LID of `port` (for a switch, port 0 holds the LID).
    #[must_use]
    pub fn lid(&self, port: u8) -> Option<u16> {
        self.port_data(port).map(|p| pi_view(&p.info).lid())
    }

    /// Base LID and LMC of `port`, as [`Self::port_info`] shows them, without building
    /// the whole PortInfo (hosts that forward on them read them often).
    #[must_use]
    pub fn lid_lmc(&self, port: u8) -> Option<(u16, u8)> {
        self.port_data(port).map(|p| {
            let v = pi_view(&p.info);
            (v.lid(), v.lmc())
        })
    }

    /// PortInfo.CapabilityMask of `port`, as [`Self::port_info`] shows it.
    #[must_use]
    pub fn capability_mask(&self, port: u8) -> Option<CapabilityMask> {
        self.port_data(port)
            .map(|p| pi_view(&p.info).capability_mask())
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The non-volatile store.
    #[must_use]
    pub fn nv_store(&self) -> &S {
        &self.nv
    }

    /// The configuration the agent was built from.
    #[must_use]
    pub fn config(&self) -> &NodeConfig {
        &self.cfg
    }

    /// Bytes this agent occupies (its own size plus the tables on the heap), for sizing
    /// simulations: a 36-port switch with a full LFT (49,152 LIDs) and 1,024 MLIDs
    /// takes about 90 KB, a 1-port CA under 2 KB.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        use core::mem::size_of;
        let ports: usize = self
            .ports
            .iter()
            .map(|p| {
                size_of::<PortData>()
                    + p.pkeys.capacity() * 2
                    + p.guids.capacity() * 8
                    + p.vlarb.as_ref().map_or(0, |_| 256)
            })
            .sum();
        let switch = self.switch.as_ref().map_or(0, |s| {
            s.lft.capacity() + s.mft.capacity() * 2 + s.sl2vl.capacity() * 8
        });
        let cfg = self.cfg.ports.capacity() * size_of::<crate::config::PortConfig>();
        size_of::<Self>()
            + ports
            + switch
            + cfg
            + self.events.capacity() * size_of::<SmaEvent>()
            + self.traps.memory_bytes()
    }

    /// Number of traps waiting for a TrapRepress.
    #[must_use]
    pub fn pending_traps(&self) -> usize {
        self.traps.len()
    }

    // ----- SMP processing ---------------------------------------------------------------

    /// Processes one received SMP and returns the response to send, if any.
    ///
    /// Accepts LID-routed (class 0x01) and directed-route (class 0x81) requests; a DR
    /// request must already have passed the outbound rules (HopPointer = HopCount + 1),
    /// its response is turned around with [`dr_turn_around`] and must then follow the
    /// returning rules.
    #[inline]
    pub fn handle(&mut self, now: Instant, rx: Rx, request: &[u8]) -> Option<[u8; MAD_SIZE]> {
        crate::answer_in_copy(request, |buf| match buf {
            Some(buf) => self.handle_in_place(now, rx, buf) == Outcome::Respond,
            None => {
                self.stats.received += 1;
                self.stats.other_dropped += 1;
                false
            }
        })
    }

    /// As [`Self::handle`], turning the request buffer into the response in place.
    pub fn handle_in_place(&mut self, now: Instant, rx: Rx, buf: &mut [u8; MAD_SIZE]) -> Outcome {
        self.advance(now);
        self.stats.received += 1;
        let out = self.process(rx, buf);
        match out {
            Outcome::Respond => self.stats.responded += 1,
            Outcome::Dropped(DropReason::MKey) => self.stats.mkey_dropped += 1,
            Outcome::Dropped(_) => self.stats.other_dropped += 1,
            Outcome::Repressed { .. } => {}
        }
        out
    }

    fn process(&mut self, rx: Rx, buf: &mut [u8; MAD_SIZE]) -> Outcome {
        let rx_ok = if self.is_switch {
            rx.port <= self.num_ports
        } else {
            rx.port >= 1 && rx.port <= self.num_ports
        };
        if buf[0] != 1 || !rx_ok {
            return Outcome::Dropped(DropReason::Malformed);
        }
        let class = MgmtClass::from(buf[1]);
        let directed = match class {
            MgmtClass::SubnLid => false,
            MgmtClass::SubnDirected => true,
            _ => return Outcome::Dropped(DropReason::NotSmp),
        };
        if buf[3] & 0x80 != 0 {
            return Outcome::Dropped(DropReason::NotARequest);
        }
        if directed {
            let v = DrSmpView::new_unchecked(&buf[..]);
            if v.direction() {
                return Outcome::Dropped(DropReason::NotARequest);
            }
            let n = v.hop_count();
            if n > 63 || v.hop_pointer() != n + 1 {
                return Outcome::Dropped(DropReason::BadHopPointer);
            }
        }
        let (method_byte, attr, am, smp_key) = {
            let v = DrSmpView::new_unchecked(&buf[..]);
            (buf[3], v.attribute_id(), v.attribute_modifier(), v.m_key())
        };
        if buf[2] != 1 {
            return self.respond(buf, directed, Status::BAD_VERSION, None);
        }
        let method = match Method::from(method_byte & 0x7F) {
            Method::Get => CheckedMethod::Get,
            Method::Set => CheckedMethod::Set,
            Method::TrapRepress => CheckedMethod::TrapRepress,
            _ => {
                return self.respond(buf, directed, Status::METHOD_UNSUPPORTED, Some(method_byte));
            }
        };
        // All SMPs to a switch are checked against port 0's key; a CA port checks its own.
        let auth_port = if self.is_switch { 0 } else { rx.port };
        let now = self.now;
        let mk = &mut self.ports[usize::from(auth_port)].mkey;
        let verdict = mk.check(now, smp_key, method);
        if let Some(d) = mk.lease_deadline {
            self.lease_due = Some(self.lease_due.map_or(d, |x| x.min(d)));
        }
        let hide_key = match verdict {
            Verdict::Keyed => false,
            Verdict::Unkeyed { hide_key } => hide_key,
            Verdict::Fail => {
                self.bad_mkey_trap(auth_port, rx, buf, directed);
                return Outcome::Dropped(DropReason::MKey);
            }
        };
        if method == CheckedMethod::TrapRepress {
            let tid = DrSmpView::new_unchecked(&buf[..]).transaction_id();
            let matched = attr == u16::from(SmAttributeId::Notice) && self.traps.repress(tid);
            return Outcome::Repressed { matched };
        }
        let keyed = verdict == Verdict::Keyed;
        let ctx = Ctx {
            rx,
            am,
            set: method == CheckedMethod::Set,
            hide_key,
            keyed,
            smp_key,
            auth_port,
        };
        let data: &mut [u8; 64] = (&mut buf[64..128]).try_into().expect("64-byte data area");
        let status = match self.dispatch(attr, &ctx, data) {
            Ok(()) => Status::OK,
            Err(s) if s == DROP_NO_SM => return Outcome::Dropped(DropReason::NoSm),
            Err(s) => s,
        };
        self.respond(buf, directed, status, None)
    }

    fn respond(
        &mut self,
        buf: &mut [u8; MAD_SIZE],
        directed: bool,
        status: Status,
        keep_method: Option<u8>,
    ) -> Outcome {
        if directed {
            let mut v = DrSmpView::new_unchecked(&mut buf[..]);
            dr_turn_around(&mut v, status.0);
        } else {
            buf[3] = 0x81;
            buf[4..6].copy_from_slice(&status.0.to_be_bytes());
        }
        if let Some(m) = keep_method {
            buf[3] = m | 0x80;
        }
        Outcome::Respond
    }

    fn bad_mkey_trap(&mut self, auth_port: u8, rx: Rx, buf: &[u8; MAD_SIZE], directed: bool) {
        let p = &self.ports[usize::from(auth_port)];
        if let Some((_, lid)) = Self::trap_route(p) {
            let node_type = self.cfg.node_info.node_type;
            let notice = bad_mkey_notice(node_type, lid, rx.slid, buf, directed);
            self.traps.push(
                PendingTrap::new(auth_port, notice, self.now),
                &mut self.stats.traps_overflowed,
            );
        }
    }

    fn dispatch(&mut self, attr: u16, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        match SmAttributeId::from(attr) {
            SmAttributeId::NodeDescription => self.node_description(ctx, data),
            SmAttributeId::NodeInfo => self.node_info(ctx, data),
            SmAttributeId::SwitchInfo => self.switch_info_attr(ctx, data),
            SmAttributeId::GuidInfo => self.guid_info(ctx, data),
            SmAttributeId::PortInfo => self.port_info_attr(ctx, data),
            SmAttributeId::PKeyTable => self.pkey_table(ctx, data),
            SmAttributeId::SlToVlMappingTable => self.sl2vl_attr(ctx, data),
            SmAttributeId::VlArbitrationTable => self.vlarb(ctx, data),
            SmAttributeId::LinearForwardingTable => self.lft_attr(ctx, data),
            SmAttributeId::MulticastForwardingTable => self.mft_attr(ctx, data),
            SmAttributeId::SmInfo => self.sm_info_attr(ctx, data),
            SmAttributeId::LedInfo => self.led_info(ctx, data),
            SmAttributeId::PortInfoExtended => self.port_info_extended(ctx, data),
            SmAttributeId::MlnxExtPortInfo => self.mlnx_ext_port_info(ctx, data),
            SmAttributeId::RandomForwardingTable => self.rft_attr(ctx, data),
            SmAttributeId::VendorDiag => Self::vendor_diag(ctx, data),
            _ => Err(Status::METHOD_ATTR_UNSUPPORTED),
        }
    }

    fn node_description(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        if ctx.am != 0 {
            return Err(Status::INVALID_VALUE);
        }
        if ctx.set {
            let p = &self.ports[usize::from(ctx.auth_port)];
            if !pi_view(&p.info)
                .capability_mask2()
                .contains(CapabilityMask2::IS_SET_NODE_DESCRIPTION_SUPPORTED)
            {
                return Err(Status::METHOD_ATTR_UNSUPPORTED);
            }
            let new = NodeDescription { node_string: *data };
            if new != self.description {
                self.description = new;
                self.node_description_changed();
            }
        }
        *data = self.description.node_string;
        Ok(())
    }

    fn node_info(&self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        if ctx.set {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        }
        if ctx.am != 0 {
            return Err(Status::INVALID_VALUE);
        }
        let mut ni = self.cfg.node_info;
        ni.port_guid = self.ports[usize::from(ctx.auth_port)].guid;
        ni.local_port_num = ctx.rx.port;
        *data = [0; 64];
        let _ = ni.emit_into(&mut data[..]);
        Ok(())
    }

    fn switch_info_attr(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let Some(sw) = self.switch.as_mut() else {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        };
        if ctx.am != 0 {
            return Err(Status::INVALID_VALUE);
        }
        if ctx.set {
            let req = SwitchInfo::parse(&data[..]).map_err(|_| Status::INVALID_VALUE)?;
            let cur = &sw.info;
            let lft_ok = req.linear_fdb_top < cur.linear_fdb_cap.max(1);
            let mft_ok = req.multicast_fdb_top < 0xC000
                || u32::from(req.multicast_fdb_top) < 0xC000 + u32::from(cur.multicast_fdb_cap);
            if !lft_ok || !mft_ok {
                Self::emit_switch_info(&sw.info, data);
                return Err(Status::INVALID_VALUE);
            }
            let info = &mut sw.info;
            info.linear_fdb_top = req.linear_fdb_top;
            info.default_port = req.default_port;
            info.default_multicast_primary_port = req.default_multicast_primary_port;
            info.default_multicast_not_primary_port = req.default_multicast_not_primary_port;
            info.life_time_value = req.life_time_value;
            info.multicast_fdb_top = req.multicast_fdb_top;
            // PortStateChange is cleared by writing 1.
            if req.port_state_change {
                info.port_state_change = false;
            }
        }
        Self::emit_switch_info(&sw.info, data);
        Ok(())
    }

    fn emit_switch_info(si: &SwitchInfo, data: &mut [u8; 64]) {
        *data = [0; 64];
        let _ = si.emit_into(&mut data[..]);
    }

    fn guid_info(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        // GUIDInfo belongs to the receiving port of a CA and to port 0 of a switch.
        let p = &mut self.ports[usize::from(ctx.auth_port)];
        let blocks = p.guids.len().div_ceil(8);
        let block = GuidInfoMod::decode(ctx.am).block as usize;
        if block >= blocks {
            return Err(Status::INVALID_VALUE);
        }
        for i in 0..8 {
            let idx = block * 8 + i;
            let Some(slot) = p.guids.get_mut(idx) else {
                break;
            };
            if ctx.set && idx != 0 {
                *slot = u64::from_be_bytes(data[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            }
        }
        *data = [0; 64];
        for i in 0..8 {
            if let Some(g) = p.guids.get(block * 8 + i) {
                data[i * 8..i * 8 + 8].copy_from_slice(&g.to_be_bytes());
            }
        }
        Ok(())
    }

    /// The port a PortInfo-style modifier selects: 0 on a CA means the receiving port.
    fn select_port(&self, ctx: &Ctx, port: u8) -> Result<u8, Status> {
        if port > self.num_ports {
            Err(Status::INVALID_VALUE)
        } else if port == 0 && !self.is_switch {
            Ok(ctx.rx.port)
        } else {
            Ok(port)
        }
    }

    /// The port a per-port table's modifier (P_KeyTable, VLArbitrationTable) names: on a
    /// switch the modifier's port, on a CA or router the receiving port (the modifier's
    /// port field is ignored there).
    fn table_port(&self, ctx: &Ctx, port: u16) -> Result<u8, Status> {
        if !self.is_switch {
            Ok(ctx.rx.port)
        } else if port > u16::from(self.num_ports) {
            Err(Status::INVALID_VALUE)
        } else {
            Ok(port as u8)
        }
    }

    fn render_port_info(p: &PortData, local_port: u8, hide_key: bool, out: &mut [u8; 64]) {
        *out = p.info;
        let mut v = pi_view_mut(out);
        let mk = &p.mkey;
        v.set_m_key(if hide_key { 0 } else { mk.config.m_key });
        v.set_m_key_protect_bits(mk.config.protect_bits);
        v.set_m_key_lease_period(mk.config.lease_period);
        v.set_m_key_violations(mk.violations);
        v.set_port_state(PortState::from(p.link.state.code()));
        v.set_port_phys_state(PhysPortState::from(p.link.phys));
        v.set_link_down_default_state(LinkDownDefaultState::from(p.link.link_down_default));
        v.set_local_port_num(local_port);
    }

    fn port_info_attr(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let m = PortMod::decode(ctx.am).map_err(|_| Status::INVALID_VALUE)?;
        let port = self.select_port(ctx, m.port)?;
        let ext = m.sm_supports_extended_speeds;
        let mut status = Ok(());
        if ctx.set {
            status = self.set_port_info(port, data, ext);
        }
        Self::render_port_info(
            &self.ports[usize::from(port)],
            ctx.rx.port,
            ctx.hide_key,
            data,
        );
        if !ext {
            // An SM that did not say it supports extended speeds (attribute modifier
            // bit 31) gets the LinkSpeedExt* and LinkSpeedExt*2 fields as reserved
            // zeros, as the spec has ports answer it (OpenSM issue 38).
            let mut v = pi_view_mut(data);
            v.set_link_speed_ext_active(LinkSpeedExt::None);
            v.set_link_speed_ext_supported(LinkSpeedExtMask::EMPTY);
            v.set_link_speed_ext_enabled(LinkSpeedExtMask::EMPTY);
            v.set_link_speed_ext_active2(0);
            v.set_link_speed_ext_supported2(0);
            v.set_link_speed_ext_enabled2(0);
        }
        status
    }

    /// Validates the whole request first; applies nothing if any field is invalid.
    /// The LinkSpeedExtEnabled fields count only with `ext` (modifier bit 31).
    fn set_port_info(&mut self, port: u8, data: &[u8; 64], ext: bool) -> AttrResult {
        let req = pi_view(data);
        let p = &mut self.ports[usize::from(port)];
        let cur = pi_view(&p.info);
        let state = u8::from(req.port_state());
        let phys = u8::from(req.port_phys_state());
        let ldd = u8::from(req.link_down_default_state());
        if p.link.validate(state, phys, ldd).is_err() {
            return Err(Status::INVALID_VALUE);
        }
        let width = resolve_mask(
            req.link_width_enabled().bits(),
            cur.link_width_supported().bits(),
            LinkWidthMask::SET_TO_SUPPORTED.bits(),
            None,
        )
        .ok_or(Status::INVALID_VALUE)?;
        let speed = resolve_mask(
            req.link_speed_enabled().bits(),
            cur.link_speed_supported().bits(),
            LinkSpeedMask::SET_TO_SUPPORTED.bits(),
            None,
        )
        .ok_or(Status::INVALID_VALUE)?;
        let speed_ext = if ext {
            resolve_mask(
                req.link_speed_ext_enabled().bits(),
                cur.link_speed_ext_supported().bits(),
                LinkSpeedExtMask::SET_TO_SUPPORTED.bits(),
                Some(LinkSpeedExtMask::DISABLE_ALL.bits()),
            )
            .ok_or(Status::INVALID_VALUE)?
        } else {
            None
        };
        let mtu = u8::from(req.neighbor_mtu());
        if mtu == 0 || mtu > u8::from(cur.mtu_cap()) {
            return Err(Status::INVALID_VALUE);
        }
        let op_vls = u8::from(req.operational_vls());
        if op_vls > u8::from(cur.vl_cap()) {
            return Err(Status::INVALID_VALUE);
        }
        // Everything is valid: apply.
        let new_mkey = MKeyConfig {
            m_key: req.m_key(),
            protect_bits: req.m_key_protect_bits(),
            lease_period: req.m_key_lease_period(),
        };
        let reregister = req.client_reregister();
        let mut w = pi_view_mut(&mut p.info);
        w.set_gid_prefix(req.gid_prefix());
        w.set_lid(req.lid());
        w.set_master_sm_lid(req.master_sm_lid());
        w.set_lmc(req.lmc());
        w.set_master_sm_sl(req.master_sm_sl());
        w.set_init_type(req.init_type());
        w.set_vl_high_limit(req.vl_high_limit());
        w.set_vl_stall_count(req.vl_stall_count());
        w.set_hoq_life(req.hoq_life());
        w.set_partition_enforcement_inbound(req.partition_enforcement_inbound());
        w.set_partition_enforcement_outbound(req.partition_enforcement_outbound());
        w.set_filter_raw_inbound(req.filter_raw_inbound());
        w.set_filter_raw_outbound(req.filter_raw_outbound());
        w.set_p_key_violations(req.p_key_violations());
        w.set_q_key_violations(req.q_key_violations());
        w.set_multicast_pkey_trap_suppression_enabled(
            req.multicast_pkey_trap_suppression_enabled(),
        );
        w.set_subnet_timeout(req.subnet_timeout());
        w.set_local_phy_errors(req.local_phy_errors());
        w.set_overrun_errors(req.overrun_errors());
        w.set_neighbor_mtu(Mtu::from(mtu));
        if op_vls != 0 {
            w.set_operational_vls(VlCap::from(op_vls));
        }
        let before = (
            w.link_width_enabled(),
            w.link_speed_enabled(),
            w.link_speed_ext_enabled(),
        );
        if let Some(x) = width {
            w.set_link_width_enabled(LinkWidthMask(x));
        }
        if let Some(x) = speed {
            w.set_link_speed_enabled(LinkSpeedMask(x));
        }
        if let Some(x) = speed_ext {
            w.set_link_speed_ext_enabled(LinkSpeedExtMask(x));
        }
        let masks_changed = before
            != (
                w.link_width_enabled(),
                w.link_speed_enabled(),
                w.link_speed_ext_enabled(),
            );
        w.set_client_reregister(false);
        p.mkey.violations = req.m_key_violations();
        if p.mkey.config != new_mkey {
            p.mkey.config = new_mkey;
            self.nv.save(port, new_mkey);
        }
        let mut link_req = p.link.apply(state, phys, ldd);
        if link_req.is_none() && masks_changed && !p.link.management {
            link_req = Some(LinkRequest::Renegotiate);
        }
        if let Some(request) = link_req {
            self.events.push_back(SmaEvent::Link { port, request });
        }
        if reregister {
            self.events.push_back(SmaEvent::ClientReregister { port });
        }
        Ok(())
    }

    fn pkey_table(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let m = PKeyMod::decode(ctx.am);
        let block = usize::from(m.block);
        let port = self.table_port(ctx, m.port)?;
        let p = &mut self.ports[usize::from(port)];
        if block >= p.pkeys.len().div_ceil(32) {
            return Err(Status::INVALID_VALUE);
        }
        let base = block * 32;
        let end = (base + 32).min(p.pkeys.len());
        if ctx.set {
            for (i, slot) in p.pkeys[base..end].iter_mut().enumerate() {
                *slot = u16::from_be_bytes([data[2 * i], data[2 * i + 1]]);
            }
        }
        *data = [0; 64];
        for (i, k) in p.pkeys[base..end].iter().enumerate() {
            data[2 * i..2 * i + 2].copy_from_slice(&k.to_be_bytes());
        }
        Ok(())
    }

    fn sl2vl_attr(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let mut table = [0u8; 8];
        table.copy_from_slice(&data[..8]);
        if let Some(sw) = self.switch.as_mut() {
            let m = SlToVlMod::decode(ctx.am).map_err(|_| Status::INVALID_VALUE)?;
            let (all_out, all_in) = (m.all_outputs, m.all_inputs);
            let n = usize::from(self.num_ports) + 1;
            let out_p = usize::from(m.output_port);
            let in_p = usize::from(m.input_port);
            if (all_out || all_in)
                && (!ctx.set || sw.info.optimized_sl_to_vl_mapping_programming == 0)
            {
                return Err(Status::INVALID_VALUE);
            }
            if (!all_out && out_p >= n) || (!all_in && in_p >= n) {
                return Err(Status::INVALID_VALUE);
            }
            if ctx.set {
                if sw.sl2vl.is_empty() {
                    sw.sl2vl = vec![[0; 8]; n * n];
                }
                let ins = if all_in { 0..n } else { in_p..in_p + 1 };
                for i in ins {
                    let outs = if all_out { 0..n } else { out_p..out_p + 1 };
                    for o in outs {
                        sw.sl2vl[i * n + o] = table;
                    }
                }
            } else {
                table = sw.sl2vl.get(in_p * n + out_p).copied().unwrap_or_default();
            }
        } else {
            let p = &mut self.ports[usize::from(ctx.rx.port)];
            if !pi_view(&p.info)
                .capability_mask()
                .contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED)
            {
                return Err(Status::METHOD_ATTR_UNSUPPORTED);
            }
            if ctx.am != 0 {
                return Err(Status::INVALID_VALUE);
            }
            if ctx.set {
                p.sl2vl = table;
            }
            table = p.sl2vl;
        }
        *data = [0; 64];
        data[..8].copy_from_slice(&table);
        Ok(())
    }

    fn vlarb(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let m = VlArbMod::decode(ctx.am).map_err(|_| Status::INVALID_VALUE)?;
        let port = self.table_port(ctx, m.port)?;
        let p = &mut self.ports[usize::from(port)];
        let v = pi_view(&p.info);
        let (low, high) = (
            usize::from(v.vl_arbitration_low_cap()),
            usize::from(v.vl_arbitration_high_cap()),
        );
        if low == 0 && high == 0 {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        }
        // Entries of this block that exist: the table's cap minus the block's start.
        let (cap, first, off) = match m.part {
            VlArbPart::Low0To31 => (low, 0, 0),
            VlArbPart::Low32To63 => (low, 32, 64),
            VlArbPart::High0To31 => (high, 0, 128),
            _ => (high, 32, 192),
        };
        if cap <= first {
            return Err(Status::INVALID_VALUE);
        }
        let entries = (cap - first).min(32);
        if ctx.set {
            let table = p.vlarb.get_or_insert_with(|| Box::new([0; 256]));
            let dst = &mut table[off..off + 2 * entries];
            dst.copy_from_slice(&data[..2 * entries]);
            // The 4 bits above each VL are reserved.
            for e in dst.chunks_exact_mut(2) {
                e[0] &= 0x0F;
            }
        }
        *data = [0; 64];
        if let Some(table) = &p.vlarb {
            data[..2 * entries].copy_from_slice(&table[off..off + 2 * entries]);
        }
        Ok(())
    }

    fn lft_attr(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let Some(sw) = self.switch.as_mut() else {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        };
        let m = LftMod::decode(ctx.am).map_err(|_| Status::INVALID_VALUE)?;
        let start = usize::from(m.block) * usize::from(LftMod::PER_BLOCK);
        let Some(block) = sw.lft.get_mut(start..start + 64) else {
            return Err(Status::INVALID_VALUE);
        };
        if ctx.set {
            block.copy_from_slice(&data[..]);
        } else {
            data.copy_from_slice(block);
        }
        Ok(())
    }

    fn mft_attr(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let Some(sw) = self.switch.as_mut() else {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        };
        if sw.mft_cap == 0 {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        }
        let m = MftMod::decode(ctx.am).map_err(|_| Status::INVALID_VALUE)?;
        let pos = usize::from(m.position);
        let block = usize::from(m.block);
        let blocks = sw.mft_cap / (32 * sw.positions);
        if pos >= sw.positions || block >= blocks {
            return Err(Status::INVALID_VALUE);
        }
        let end = (block + 1) * 32 * sw.positions;
        if ctx.set && sw.mft.len() < end {
            sw.mft.resize(end, 0);
        }
        // Bits for ports the switch does not have stay 0.
        let n = usize::from(self.num_ports);
        let valid: u16 = (0..16)
            .filter(|j| pos * 16 + j <= n)
            .fold(0, |m, j| m | (1 << j));
        for i in 0..32 {
            let idx = (block * 32 + i) * sw.positions + pos;
            if ctx.set {
                sw.mft[idx] = u16::from_be_bytes([data[2 * i], data[2 * i + 1]]) & valid;
            }
            let mask = sw.mft.get(idx).copied().unwrap_or(0);
            data[2 * i..2 * i + 2].copy_from_slice(&mask.to_be_bytes());
        }
        Ok(())
    }

    fn sm_info_attr(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let Some(info) = self.sm_info else {
            return Err(DROP_NO_SM);
        };
        let port_key = self.ports[usize::from(ctx.auth_port)].mkey.config.m_key;
        let authenticated =
            (info.sm_key != 0 && ctx.smp_key == info.sm_key) || (ctx.keyed && port_key != 0);
        if ctx.set {
            decode_sm_info_control(ctx.am).map_err(|_| Status::INVALID_VALUE)?;
            let sender = SmInfo::from_view(&SmInfoView::new_unchecked(&data[..]));
            self.events.push_back(SmaEvent::SmInfoSet {
                control: ctx.am,
                sender,
                authenticated,
            });
        } else if ctx.am != 0 {
            return Err(Status::INVALID_VALUE);
        }
        let mut out = info;
        if !authenticated {
            out.sm_key = 0;
        }
        *data = [0; 64];
        let _ = out.emit_into(&mut data[..]);
        Ok(())
    }

    /// The port a per-port optional attribute's modifier (a [`PortMod`]) names, when its
    /// PortInfo says (`has`) that it supports the attribute.
    fn optional_port(
        &mut self,
        ctx: &Ctx,
        has: impl FnOnce(&PortInfoView<&[u8]>) -> bool,
    ) -> Result<&mut PortData, Status> {
        let m = PortMod::decode(ctx.am).map_err(|_| Status::INVALID_VALUE)?;
        let port = self.select_port(ctx, m.port)?;
        let p = &mut self.ports[usize::from(port)];
        if has(&pi_view(&p.info)) {
            Ok(p)
        } else {
            Err(Status::METHOD_ATTR_UNSUPPORTED)
        }
    }

    fn port_info_extended(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let p = self.optional_port(ctx, |pi| {
            pi.capability_mask2()
                .contains(CapabilityMask2::IS_PORT_INFO_EXTENDED_SUPPORTED)
        })?;
        let mut status = Ok(());
        if ctx.set {
            let req = PortInfoExtended::parse(&data[..]).map_err(|_| Status::INVALID_VALUE)?;
            let cur = p.ext;
            let ok = [
                (req.fdr_fec_mode_enabled, cur.fdr_fec_mode_supported),
                (req.edr_fec_mode_enabled, cur.edr_fec_mode_supported),
                (req.hdr_fec_mode_enabled, cur.hdr_fec_mode_supported),
                (req.ndr_fec_mode_enabled, cur.ndr_fec_mode_supported),
            ]
            .iter()
            .all(|(en, sup)| sup.contains(*en));
            if ok {
                p.ext.fdr_fec_mode_enabled = req.fdr_fec_mode_enabled;
                p.ext.edr_fec_mode_enabled = req.edr_fec_mode_enabled;
                p.ext.hdr_fec_mode_enabled = req.hdr_fec_mode_enabled;
                p.ext.ndr_fec_mode_enabled = req.ndr_fec_mode_enabled;
            } else {
                status = Err(Status::INVALID_VALUE);
            }
        }
        *data = p.ext.to_bytes();
        status
    }

    fn mlnx_ext_port_info(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let m = PortMod::decode(ctx.am).map_err(|_| Status::INVALID_VALUE)?;
        let port = self.select_port(ctx, m.port)?;
        let p = &mut self.ports[usize::from(port)];
        let Some(cur) = p.mlnx.as_mut() else {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        };
        let mut status = Ok(());
        if ctx.set {
            let req = MlnxExtPortInfo::parse(&data[..]).map_err(|_| Status::INVALID_VALUE)?;
            if cur.link_speed_supported.contains(req.link_speed_enabled) {
                cur.state_change_enable = req.state_change_enable;
                cur.link_speed_enabled = req.link_speed_enabled;
            } else {
                status = Err(Status::INVALID_VALUE);
            }
        }
        *data = cur.to_bytes();
        status
    }

    fn rft_attr(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let Some(sw) = self.switch.as_mut().filter(|s| !s.rft.is_empty()) else {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        };
        let start = (ctx.am as usize).saturating_mul(16);
        if start >= sw.rft.len() {
            return Err(Status::INVALID_VALUE);
        }
        let end = (start + 16).min(sw.rft.len());
        for (i, e) in sw.rft[start..end].iter_mut().enumerate() {
            if ctx.set {
                e.copy_from_slice(&data[4 * i..4 * i + 4]);
            }
        }
        *data = [0; 64];
        for (i, e) in sw.rft[start..end].iter().enumerate() {
            data[4 * i..4 * i + 4].copy_from_slice(e);
        }
        Ok(())
    }

    /// VendorDiag: block 0 exists, holds no vendor data and ends the chain.
    fn vendor_diag(ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        if ctx.set {
            return Err(Status::METHOD_ATTR_UNSUPPORTED);
        }
        if ctx.am != 0 {
            return Err(Status::INVALID_VALUE);
        }
        *data = VendorDiag::default().to_bytes();
        Ok(())
    }

    fn led_info(&mut self, ctx: &Ctx, data: &mut [u8; 64]) -> AttrResult {
        let p = self.optional_port(ctx, |pi| {
            pi.capability_mask()
                .contains(CapabilityMask::IS_LED_INFO_SUPPORTED)
        })?;
        if ctx.set {
            p.led = data[0] & 0x80 != 0;
        }
        *data = [0; 64];
        data[0] = if p.led { 0x80 } else { 0 };
        Ok(())
    }
}

#[cfg(test)]
mod tests;

/// Internal marker: SMInfo on a node without an SM is dropped, not answered.
const DROP_NO_SM: Status = Status(0xFFFF);

/// Per-request facts the attribute handlers need.
struct Ctx {
    rx: Rx,
    am: u32,
    set: bool,
    hide_key: bool,
    keyed: bool,
    smp_key: u64,
    auth_port: u8,
}

/// Resolves an "enabled" mask of a Set: 0 = no change (`Some(None)`), `all` = supported,
/// `none` (if given) = empty, otherwise a non-empty subset of `supported`.
fn resolve_mask(req: u8, supported: u8, all: u8, none: Option<u8>) -> Option<Option<u8>> {
    if req == 0 {
        Some(None)
    } else if req == all {
        Some(Some(supported))
    } else if Some(req) == none {
        Some(Some(0))
    } else if req & !supported == 0 {
        Some(Some(req))
    } else {
        None
    }
}

impl PortData {
    fn placeholder() -> Self {
        Self {
            guid: 0,
            info: [0; 64],
            mkey: MKeyState::default(),
            link: PortLink::new_external(),
            pkeys: Vec::new(),
            vlarb: None,
            sl2vl: [0; 8],
            guids: Vec::new(),
            led: false,
            ext: PortInfoExtended::default(),
            mlnx: None,
        }
    }
}
