//! Port plans: the PortInfo every port should hold (LID, SM address, subnet prefix,
//! per-link MTU and VLs, M_Key, enforcement bits), the Sets that bring it there and arm
//! trained links, and the activation once every switch table is written.

use std::collections::BTreeMap;

use ibsm_wire::{Mtu, PortInfo, PortState, VlCap};

use super::SubnetManager;
use super::assign::Lids;
use super::ops::{Op, SmpQueue};
use super::partitions::Partitions;
use super::sweep::Sweep;
use crate::config::SmConfig;
use crate::mkey;
use crate::model::{Discovered, NodeIx};

/// (node, port) -> the PortInfo the heavy sweep wants there (for the activation).
#[derive(Debug, Default)]
pub(super) struct Plan(BTreeMap<(NodeIx, u8), PortInfo>);

impl Plan {
    /// The planned ports from `from` on (all of them for `None`), in order.
    pub(super) fn from(
        &self,
        from: Option<(NodeIx, u8)>,
    ) -> impl Iterator<Item = (&(NodeIx, u8), &PortInfo)> {
        let start = from.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included);
        self.0.range((start, std::ops::Bound::Unbounded))
    }
}

/// What planning a port reads.
pub(super) struct PortCtx<'a> {
    pub(super) cfg: &'a SmConfig,
    /// The model being programmed.
    pub(super) subnet: &'a Discovered,
    /// The running heavy sweep (which ports are locked).
    pub(super) sweep: &'a Sweep,
    /// The LIDs in force.
    pub(super) lids: &'a Lids,
    /// The partition policy's plan (switch enforcement bits).
    pub(super) partitions: &'a Partitions,
    /// The first sweep as master: every port re-registers.
    pub(super) first_master_sweep: bool,
}

impl Plan {
    /// Plans the ports of node `n` into the plan and queues the Sets of those that
    /// differ from it. Ports whose link is trained (Init) are armed in the same Set
    /// that configures them: Armed carries no data, so it is safe before the LFTs are
    /// written, and it saves one SMP per port. Activation waits for every LFT block.
    /// Returns the ports it looked at (the measure of its work, `program.rs`) and the
    /// Sets queued.
    pub(super) fn program_node(
        &mut self,
        ctx: &PortCtx<'_>,
        smps: &mut SmpQueue,
        n: NodeIx,
    ) -> (usize, u64) {
        let node = &ctx.subnet.nodes[n];
        let ports: Vec<u8> = if node.is_switch() {
            (0..=node.info.num_ports).collect()
        } else {
            (1..=node.info.num_ports)
                .filter(|&p| node.ports[usize::from(p)].path.is_some())
                .collect()
        };
        let looked = ports.len();
        let mut sets = 0;
        for p in ports {
            let Some(mut want) = desired_port_info(ctx, n, p) else {
                continue;
            };
            self.0.insert((n, p), want);
            let rec = &ctx.subnet.nodes[n].ports[usize::from(p)];
            let Some(cur) = rec.info.as_ref() else {
                continue;
            };
            let arm = p != 0 && rec.peer.is_some() && cur.port_state == PortState::Init;
            if arm {
                want.port_state = PortState::Armed;
            }
            // A port told to re-register gets its Set even where nothing else
            // changed (an SM restarted on its old LID).
            if arm || want.client_reregister || needs_set(cur, &want) {
                submit_port_set(ctx.subnet, smps, n, p, want);
                sets += 1;
            }
        }
        (looked, sets)
    }
}

/// The PortInfo port `p` of node `n` should hold; `None` for a port not read or
/// locked.
fn desired_port_info(ctx: &PortCtx<'_>, n: NodeIx, p: u8) -> Option<PortInfo> {
    let cfg = ctx.cfg;
    let node = &ctx.subnet.nodes[n];
    let rec = node.ports.get(usize::from(p))?;
    let cur = rec.info?;
    let guid = if node.is_switch() {
        node.info.node_guid
    } else {
        rec.guid
    };
    if ctx.sweep.is_locked(guid) {
        return None;
    }
    let mut want = cur;
    // Fields that request no change on Set.
    want.port_state = PortState::NoChange;
    want.port_phys_state = ibsm_wire::PhysPortState::from(0);
    want.link_down_default_state = ibsm_wire::LinkDownDefaultState::from(0);
    want.link_width_enabled = ibsm_wire::LinkWidthMask(0);
    want.link_speed_enabled = ibsm_wire::LinkSpeedMask(0);
    let is_lid_port = !node.is_switch() || p == 0;
    if is_lid_port {
        let (lid, lmc) = ctx.lids.assigned.get(&guid).copied().unwrap_or((0, 0));
        want.lid = lid;
        want.lmc = lmc;
        want.master_sm_lid = ctx.lids.sm_lid;
        want.master_sm_sl = cfg.sm_sl;
        want.gid_prefix = cfg.subnet_prefix;
        want.subnet_timeout = cfg.subnet_timeout;
        if let Some(k) = mkey::key_for(cfg.m_key, guid) {
            want.m_key = k;
            want.m_key_protect_bits = cfg.m_key_protect;
            want.m_key_lease_period = cfg.m_key_lease;
        }
        // Re-register where the port's clients registered with another SA, or under
        // another LID: a port new to this SM or moved, and every port on the first
        // sweep as master (OpenSM's first_time_master_sweep). Only where the port
        // says it honours the bit; elsewhere it is reserved.
        let supported = cur
            .capability_mask
            .contains(ibsm_wire::CapabilityMask::IS_CLIENT_REREGISTRATION_SUPPORTED);
        want.client_reregister =
            cfg.client_reregister && supported && (cur.lid != lid || ctx.first_master_sweep);
    }
    if p != 0 {
        if let Some((pn, pp)) = rec.peer {
            let peer_rec = ctx.subnet.nodes[pn].ports.get(usize::from(pp));
            if let Some(peer) = peer_rec.and_then(|r| r.info) {
                want.neighbor_mtu = min_mtu(cur.mtu_cap, peer.mtu_cap);
                want.operational_vls = VlCap::from(min_vls(cur.vl_cap, peer.vl_cap));
            }
            let ext = rec.ext_speeds && peer_rec.is_some_and(|r| r.ext_speeds);
            force_link(cfg, &cur, &mut want, ext);
        }
    }
    if let Some(e) = ctx.partitions.planned_enforcement(n, p) {
        want.partition_enforcement_inbound = e.inbound;
        want.partition_enforcement_outbound = e.outbound;
    }
    Some(want)
}

/// Queues the Set of `want` to port `p` of node `n` of `subnet`.
fn submit_port_set(subnet: &Discovered, smps: &mut SmpQueue, n: NodeIx, p: u8, want: PortInfo) {
    let mut data = [0u8; 64];
    want.emit_into(&mut data).ok();
    // Bit 31 where the Get had it: the port then takes the LinkSpeedExtEnabled it
    // is sent and answers with its extended speeds, which the model keeps.
    let ext = subnet.nodes[n]
        .ports
        .get(usize::from(p))
        .is_some_and(|r| r.ext_speeds);
    let m = ibsm_wire::attr::modifier::PortMod {
        port: p,
        sm_supports_extended_speeds: ext,
    };
    smps.submit(Op::SetPortInfo { node: n, port: p }, m.encode(), Some(data));
}

/// Activates port `p` of node `n` of `subnet` if it is linked and Armed (the LFTs are
/// all written by now); `want` is what the plan gave it. Whether a Set was queued.
pub(super) fn activate_port(
    subnet: &Discovered,
    smps: &mut SmpQueue,
    n: NodeIx,
    p: u8,
    want: &PortInfo,
) -> bool {
    let rec = &subnet.nodes[n].ports[usize::from(p)];
    let armed =
        p != 0 && rec.peer.is_some() && rec.info.is_some_and(|i| i.port_state == PortState::Armed);
    if armed {
        let mut want = *want;
        want.port_state = PortState::Active;
        want.client_reregister = false;
        submit_port_set(subnet, smps, n, p, want);
    }
    armed
}

impl SubnetManager {
    /// A PortInfo Set's answer: the port as it now is.
    pub(super) fn on_port_set(&mut self, node: NodeIx, port: u8, data: &[u8]) {
        let Ok(pi) = PortInfo::parse(data) else {
            return;
        };
        let found = self.sweep.found_mut(&mut self.last);
        self.keys
            .note_port_key(&self.cfg, &found.subnet, node, port, &pi);
        found.set_port_info(node, port, pi);
    }
}

/// OpenSM's `force_link_speed`, `force_link_speed_ext` and `force_link_width` on a
/// linked port (`ext`: both ends support extended speeds): the enabled masks its Set
/// writes. 0 leaves a mask alone (the Set says "no change"); the "supported" values
/// (15, 31, 255) are written only where the port enables less than it supports; bits
/// the port does not support are dropped, since an SMA refuses the whole Set for them.
fn force_link(cfg: &crate::SmConfig, cur: &PortInfo, want: &mut PortInfo, ext: bool) {
    use ibsm_wire::{LinkSpeedExtMask, LinkSpeedMask, LinkWidthMask};
    /// The mask to write for option value `v`, if any.
    fn forced(v: u8, all: u8, enabled: u8, supported: u8) -> Option<u8> {
        match v {
            0 => None,
            _ if v == all => (enabled != supported).then_some(all),
            _ => Some(v & supported).filter(|&m| m != 0),
        }
    }
    if let Some(m) = forced(
        cfg.force_link_speed,
        LinkSpeedMask::SET_TO_SUPPORTED.bits(),
        cur.link_speed_enabled.bits(),
        cur.link_speed_supported.bits(),
    ) {
        want.link_speed_enabled = LinkSpeedMask(m);
    }
    if let Some(m) = forced(
        cfg.force_link_width,
        LinkWidthMask::SET_TO_SUPPORTED.bits(),
        cur.link_width_enabled.bits(),
        cur.link_width_supported.bits(),
    ) {
        want.link_width_enabled = LinkWidthMask(m);
    }
    if ext {
        let v = cfg.force_link_speed_ext;
        let (enabled, supported) = (
            cur.link_speed_ext_enabled.bits(),
            cur.link_speed_ext_supported.bits(),
        );
        let m = if v == LinkSpeedExtMask::DISABLE_ALL.bits() {
            (enabled != 0).then_some(v)
        } else {
            forced(
                v,
                LinkSpeedExtMask::SET_TO_SUPPORTED.bits(),
                enabled,
                supported,
            )
        };
        if let Some(m) = m {
            want.link_speed_ext_enabled = LinkSpeedExtMask(m);
        }
    }
}

/// Whether a port's current PortInfo differs from what the SM wants in a field the
/// SM owns (an enabled mask only where the SM writes one, 0 being "no change").
fn needs_set(cur: &PortInfo, want: &PortInfo) -> bool {
    let forced = |w: u8, c: u8| w != 0 && w != c;
    forced(want.link_speed_enabled.bits(), cur.link_speed_enabled.bits())
        || forced(want.link_width_enabled.bits(), cur.link_width_enabled.bits())
        || cur.link_speed_ext_enabled != want.link_speed_ext_enabled
        || cur.lid != want.lid
        || cur.lmc != want.lmc
        || cur.master_sm_lid != want.master_sm_lid
        || cur.master_sm_sl != want.master_sm_sl
        || cur.gid_prefix != want.gid_prefix
        || cur.subnet_timeout != want.subnet_timeout
        || cur.neighbor_mtu != want.neighbor_mtu
        || cur.operational_vls != want.operational_vls
        || cur.m_key_protect_bits != want.m_key_protect_bits
        || cur.m_key_lease_period != want.m_key_lease_period
        || cur.partition_enforcement_inbound != want.partition_enforcement_inbound
        || cur.partition_enforcement_outbound != want.partition_enforcement_outbound
        // Level 1 hides the key on reads; protect bits and lease still tell.
        || (cur.m_key != 0 && cur.m_key != want.m_key)
}

/// The lower of two MTU codes, where 0 (unknown) yields to the other.
fn min_mtu(a: Mtu, b: Mtu) -> Mtu {
    let (x, y) = (u8::from(a), u8::from(b));
    Mtu::from(match (x, y) {
        (0, v) | (v, 0) => v,
        _ => x.min(y),
    })
}

/// The lower of two VL capabilities, where 0 (unknown) yields to the other.
fn min_vls(a: VlCap, b: VlCap) -> u8 {
    let (x, y) = (u8::from(a), u8::from(b));
    match (x, y) {
        (0, v) | (v, 0) => v,
        _ => x.min(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_capabilities_yield() {
        assert_eq!(min_mtu(Mtu::from(0), Mtu::from(4)), Mtu::from(4));
        assert_eq!(min_mtu(Mtu::from(5), Mtu::from(3)), Mtu::from(3));
        assert_eq!(min_vls(VlCap::from(4), VlCap::from(0)), 4);
        assert_eq!(min_vls(VlCap::from(2), VlCap::from(3)), 2);
    }

    #[test]
    fn forced_masks_follow_opensm_values() {
        use ibsm_wire::{LinkSpeedExtMask, LinkSpeedMask, LinkWidthMask};
        let cur = PortInfo {
            link_speed_supported: LinkSpeedMask::SDR | LinkSpeedMask::DDR | LinkSpeedMask::QDR,
            link_speed_enabled: LinkSpeedMask::SDR,
            link_width_supported: LinkWidthMask::X1 | LinkWidthMask::X4,
            link_width_enabled: LinkWidthMask::X1 | LinkWidthMask::X4,
            link_speed_ext_supported: LinkSpeedExtMask::FDR | LinkSpeedExtMask::EDR,
            link_speed_ext_enabled: LinkSpeedExtMask::FDR | LinkSpeedExtMask::EDR,
            ..PortInfo::default()
        };
        let run = |speed, ext_v, width, ext| {
            let mut cfg = crate::SmConfig::default();
            (
                cfg.force_link_speed,
                cfg.force_link_speed_ext,
                cfg.force_link_width,
            ) = (speed, ext_v, width);
            let mut want = cur;
            want.link_speed_enabled = LinkSpeedMask(0);
            want.link_width_enabled = LinkWidthMask(0);
            force_link(&cfg, &cur, &mut want, ext);
            (
                want.link_speed_enabled.bits(),
                want.link_speed_ext_enabled.bits(),
                want.link_width_enabled.bits(),
            )
        };
        // Defaults: "supported" only where less is enabled (speed here, not width).
        assert_eq!(run(15, 31, 255, true), (15, 3, 0));
        // 0: no change; explicit values, less what the port cannot do.
        assert_eq!(run(0, 0, 0, true), (0, 3, 0));
        assert_eq!(run(9, 2, 9, true), (1, 2, 1));
        // Nothing the port supports: left alone rather than refused by the SMA.
        assert_eq!(run(8, 4, 4, true), (0, 3, 0));
        // 30 turns extended speeds off; without both ends supporting them, untouched.
        assert_eq!(run(15, 30, 255, true).1, 30);
        assert_eq!(run(15, 30, 255, false).1, 3);
    }

    #[test]
    fn a_set_is_needed_only_for_fields_the_sm_owns() {
        let cur = PortInfo::default();
        let mut want = cur;
        want.port_state = PortState::NoChange;
        want.vl_high_limit = 3;
        assert!(!needs_set(&cur, &want), "fields the SM does not own");
        // An enabled mask counts where the SM writes one (0: no change).
        want.link_width_enabled = ibsm_wire::LinkWidthMask(0x3);
        assert!(needs_set(&cur, &want));
        let mut same = cur;
        same.link_width_enabled = ibsm_wire::LinkWidthMask(0x3);
        assert!(!needs_set(&same, &want));
        want.lid = 7;
        assert!(needs_set(&cur, &want));
        // A key hidden by protection level 1 reads as 0: no Set for it alone.
        let mut want = cur;
        want.m_key = 0x55;
        assert!(!needs_set(&cur, &want));
        let mut shown = cur;
        shown.m_key = 0x66;
        assert!(needs_set(&shown, &want));
    }
}
