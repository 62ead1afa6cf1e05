//! Query matching against a brute-force reference over generated fabrics, PathRecords
//! against an independent LFT walk over the fabric model, request validation, keys,
//! registrations.

use std::time::Duration;

use ibsm_routing::{EngineKind, LidAssignment, RouteOptions, route_with_fallback};
use ibsm_topology::{Csr, Fabric, generate};
use ibsm_wire::sa::rmpp::{Reassembler, VecBuffer};
use ibsm_wire::sa::{
    ComponentMask, GuidInfoRecord, InformInfo, LinkRecord, McMemberRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, Rate, SaAttributeId, SaMad, SaRecord, SaStatus,
    Selector, ServiceRecord, SmInfoRecord, SwitchInfoRecord, join_state,
};
use ibsm_wire::{Gid, Instant, Method, Mtu, Notice, SmInfo, SmState, Status};
use proptest::prelude::*;

use crate::{Requester, RmppMode, SaConfig, SaServer, SaSnapshot};

mod linux;

const KEY: u64 = 0xfeed_beef;
const PREFIX: u64 = ibsm_wire::DEFAULT_SUBNET_PREFIX;
const T0: Instant = Instant::ZERO;

struct Fix {
    fabric: Fabric,
    csr: Csr,
    lids: LidAssignment,
    routes: ibsm_routing::Routes,
}

fn fixture(fabric: Fabric, engine: EngineKind, lmc: u8) -> Fix {
    let csr = Csr::new(&fabric);
    let lids = LidAssignment::sequential(&csr, lmc).unwrap();
    let mut o = RouteOptions::default();
    o.max_vls = 8;
    let routes = route_with_fallback(&*engine.engine(), &csr, &lids, &o).unwrap();
    Fix {
        fabric,
        csr,
        lids,
        routes,
    }
}

fn server(f: &Fix) -> SaServer {
    server_with(f, |_| {})
}

/// [`server`] over a snapshot `edit` changed first.
fn server_with(f: &Fix, edit: impl FnOnce(&mut SaSnapshot)) -> SaServer {
    let mut snap = SaSnapshot::from_routed(&f.fabric, &f.lids, f.routes.clone(), PREFIX);
    snap.sms.push((
        f.lids.switch_lid(0),
        SmInfo {
            guid: 0x1111,
            sm_key: KEY,
            act_count: 3,
            priority: 5,
            sm_state: SmState::Master,
        },
    ));
    // An M_Key on every port, to see it hidden.
    for n in &mut snap.nodes {
        for p in &mut n.ports {
            if let Some(i) = p.info.as_mut() {
                i.m_key = 0xABCD_0000 ^ p.guid;
            }
        }
    }
    edit(&mut snap);
    let mut sa = SaServer::new(SaConfig::with_sm_key(KEY));
    sa.load(snap);
    sa
}

fn tree() -> Fix {
    fixture(generate::k_ary_n_tree(4, 2).unwrap(), EngineKind::MinHop, 0)
}

fn from(lid: u16) -> Requester {
    Requester { lid, qpn: 1 }
}

/// Runs a request and reassembles a GetTable answer: (status, records).
fn table<R: SaRecord>(sa: &mut SaServer, mask: u64, t: &R, key: u64, lid: u16) -> (Status, Vec<R>) {
    let mut req = SaMad::request(Method::GetTable, 5, ComponentMask(mask), t).unwrap();
    req.sm_key = key;
    let out = sa.handle(T0, &req.to_bytes(), &from(lid));
    assert!(!out.is_empty());
    let (rx, out) = receive(sa, T0, out, lid);
    let h = SaMad::parse(&out[0]).unwrap();
    assert!(h.response);
    assert_eq!(h.sm_key, 0, "the key is never echoed");
    let recs = if h.status.is_ok() {
        rx.records::<R>().unwrap().collect()
    } else {
        Vec::new()
    };
    (h.status, recs)
}

/// The receiving side of RMPP: takes the segments the SA sent first, ACKs with a
/// window of 8 until the Last segment, and returns the reassembler and every segment.
fn receive(
    sa: &mut SaServer,
    now: Instant,
    first: Vec<Vec<u8>>,
    lid: u16,
) -> (Reassembler<VecBuffer>, Vec<Vec<u8>>) {
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 24));
    let mut all = Vec::new();
    let mut batch = first;
    for _ in 0..100_000 {
        for m in &batch {
            assert_eq!(m.len(), 256);
            rx.push(m).unwrap();
        }
        all.extend(batch);
        let ack = rx.ack(8);
        batch = sa.handle(now, &ack, &from(lid));
        if rx.is_complete() {
            assert!(batch.is_empty(), "segments after the last");
            break;
        }
        assert!(!batch.is_empty(), "the SA stalled before the last segment");
    }
    assert!(rx.is_complete());
    assert_eq!(
        sa.transfers_in_progress(),
        0,
        "the final ACK ends the transfer"
    );
    (rx, all)
}

fn get<R: SaRecord>(sa: &mut SaServer, m: Method, mask: u64, t: &R, lid: u16) -> (Status, R) {
    let req = SaMad::request(m, 6, ComponentMask(mask), t).unwrap();
    let out = sa.handle(Instant::from_secs(1), &req.to_bytes(), &from(lid));
    assert_eq!(out.len(), 1);
    let h = SaMad::parse(&out[0]).unwrap();
    (h.status, h.record(0).unwrap())
}

/// ComponentMask matching written out field by field from the record layouts of IBA
/// Vol. 1 §15.2.5 (component bit i = the record's i-th field, reserved fields included,
/// §15.2.1), without the wire crate's component table the SA matches with: bits a
/// record does not define, and reserved components (always 0 in a parsed template),
/// select nothing.
trait BruteForce {
    /// `(bit, whether self equals the template in that component)` for every defined,
    /// non-reserved component.
    fn components(&self, t: &Self) -> Vec<(u32, bool)>;

    fn brute_match(&self, t: &Self, mask: u64) -> bool {
        self.components(t)
            .into_iter()
            .all(|(bit, eq)| mask & (1 << bit) == 0 || eq)
    }
}

impl BruteForce for NodeRecord {
    fn components(&self, t: &Self) -> Vec<(u32, bool)> {
        let (a, b) = (&self.node_info, &t.node_info);
        vec![
            (0, self.lid == t.lid),
            (2, a.base_version == b.base_version),
            (3, a.class_version == b.class_version),
            (4, a.node_type == b.node_type),
            (5, a.num_ports == b.num_ports),
            (6, a.system_image_guid == b.system_image_guid),
            (7, a.node_guid == b.node_guid),
            (8, a.port_guid == b.port_guid),
            (9, a.partition_cap == b.partition_cap),
            (10, a.device_id == b.device_id),
            (11, a.revision == b.revision),
            (12, a.local_port_num == b.local_port_num),
            (13, a.vendor_id == b.vendor_id),
            (
                14,
                self.node_description.node_string == t.node_description.node_string,
            ),
        ]
    }
}

impl BruteForce for PortInfoRecord {
    fn components(&self, t: &Self) -> Vec<(u32, bool)> {
        let (a, b) = (&self.port_info, &t.port_info);
        // The capability masks match a record holding every bit the template sets.
        let cap = a.capability_mask.bits() & b.capability_mask.bits() == b.capability_mask.bits();
        let cap2 =
            a.capability_mask2.bits() & b.capability_mask2.bits() == b.capability_mask2.bits();
        vec![
            (0, self.endport_lid == t.endport_lid),
            (1, self.port_num == t.port_num),
            (2, self.options == t.options),
            (3, a.m_key == b.m_key),
            (4, a.gid_prefix == b.gid_prefix),
            (5, a.lid == b.lid),
            (6, a.master_sm_lid == b.master_sm_lid),
            (7, cap),
            (8, a.diag_code == b.diag_code),
            (9, a.m_key_lease_period == b.m_key_lease_period),
            (10, a.local_port_num == b.local_port_num),
            (11, a.link_width_enabled == b.link_width_enabled),
            (12, a.link_width_supported == b.link_width_supported),
            (13, a.link_width_active == b.link_width_active),
            (14, a.link_speed_supported == b.link_speed_supported),
            (15, a.port_state == b.port_state),
            (16, a.port_phys_state == b.port_phys_state),
            (17, a.link_down_default_state == b.link_down_default_state),
            (18, a.m_key_protect_bits == b.m_key_protect_bits),
            (20, a.lmc == b.lmc),
            (21, a.link_speed_active == b.link_speed_active),
            (22, a.link_speed_enabled == b.link_speed_enabled),
            (23, a.neighbor_mtu == b.neighbor_mtu),
            (24, a.master_sm_sl == b.master_sm_sl),
            (25, a.vl_cap == b.vl_cap),
            (26, a.init_type == b.init_type),
            (27, a.vl_high_limit == b.vl_high_limit),
            (28, a.vl_arbitration_high_cap == b.vl_arbitration_high_cap),
            (29, a.vl_arbitration_low_cap == b.vl_arbitration_low_cap),
            (30, a.init_type_reply == b.init_type_reply),
            (31, a.mtu_cap == b.mtu_cap),
            (32, a.vl_stall_count == b.vl_stall_count),
            (33, a.hoq_life == b.hoq_life),
            (34, a.operational_vls == b.operational_vls),
            (
                35,
                a.partition_enforcement_inbound == b.partition_enforcement_inbound,
            ),
            (
                36,
                a.partition_enforcement_outbound == b.partition_enforcement_outbound,
            ),
            (37, a.filter_raw_inbound == b.filter_raw_inbound),
            (38, a.filter_raw_outbound == b.filter_raw_outbound),
            (39, a.m_key_violations == b.m_key_violations),
            (40, a.p_key_violations == b.p_key_violations),
            (41, a.q_key_violations == b.q_key_violations),
            (42, a.guid_cap == b.guid_cap),
            (43, a.client_reregister == b.client_reregister),
            (
                44,
                a.multicast_pkey_trap_suppression_enabled
                    == b.multicast_pkey_trap_suppression_enabled,
            ),
            (45, a.subnet_timeout == b.subnet_timeout),
            (47, a.resp_time_value == b.resp_time_value),
            (48, a.local_phy_errors == b.local_phy_errors),
            (49, a.overrun_errors == b.overrun_errors),
            (50, a.max_credit_hint == b.max_credit_hint),
            // PortInfo byte 56, reserved in older specs, holds the XDR extensions.
            (
                51,
                (
                    a.link_speed_ext_active2,
                    a.link_speed_ext_supported2,
                    a.link_speed_ext_enabled2,
                ) == (
                    b.link_speed_ext_active2,
                    b.link_speed_ext_supported2,
                    b.link_speed_ext_enabled2,
                ),
            ),
            (52, a.link_round_trip_latency == b.link_round_trip_latency),
            (53, cap2),
            (54, a.link_speed_ext_active == b.link_speed_ext_active),
            (55, a.link_speed_ext_supported == b.link_speed_ext_supported),
            (57, a.link_speed_ext_enabled == b.link_speed_ext_enabled),
        ]
    }
}

impl BruteForce for LinkRecord {
    fn components(&self, t: &Self) -> Vec<(u32, bool)> {
        vec![
            (0, self.from_lid == t.from_lid),
            (1, self.from_port == t.from_port),
            (2, self.to_port == t.to_port),
            (3, self.to_lid == t.to_lid),
        ]
    }
}

impl BruteForce for GuidInfoRecord {
    fn components(&self, t: &Self) -> Vec<(u32, bool)> {
        let (a, b) = (&self.guid_info, &t.guid_info);
        vec![
            (0, self.lid == t.lid),
            (1, self.block_num == t.block_num),
            (4, a.guid0 == b.guid0),
            (5, a.guid1 == b.guid1),
            (6, a.guid2 == b.guid2),
            (7, a.guid3 == b.guid3),
            (8, a.guid4 == b.guid4),
            (9, a.guid5 == b.guid5),
            (10, a.guid6 == b.guid6),
            (11, a.guid7 == b.guid7),
        ]
    }
}

impl BruteForce for SwitchInfoRecord {
    fn components(&self, t: &Self) -> Vec<(u32, bool)> {
        // The SwitchInfo itself has no ComponentMask bits.
        vec![(0, self.lid == t.lid)]
    }
}

impl BruteForce for SmInfoRecord {
    fn components(&self, t: &Self) -> Vec<(u32, bool)> {
        let (a, b) = (&self.sm_info, &t.sm_info);
        vec![
            (0, self.lid == t.lid),
            (2, a.guid == b.guid),
            (3, a.sm_key == b.sm_key),
            (4, a.act_count == b.act_count),
            (5, a.priority == b.priority),
            (6, a.sm_state == b.sm_state),
        ]
    }
}

/// A template built from record `base`, with the bytes of `flip` changed, queried with
/// `mask` (all 64 bits: those the record does not define are ignored): SA answer ==
/// brute force.
fn check_query<R: SaRecord + BruteForce + Copy + PartialEq + std::fmt::Debug>(
    sa: &mut SaServer,
    all: &[R],
    base: usize,
    mask: u64,
    flip: Option<(usize, u8)>,
    key: u64,
) {
    let mut tmpl = all[base % all.len()];
    if let Some((at, x)) = flip {
        let mut b = [0u8; 256];
        tmpl.emit_into(&mut b).unwrap();
        b[at % R::SIZE] ^= x | 1;
        tmpl = R::parse(&b).unwrap();
    }
    let (st, got) = table(sa, mask, &tmpl, key, 1);
    assert!(st.is_ok());
    let want: Vec<R> = all
        .iter()
        .filter(|r| r.brute_match(&tmpl, mask))
        .copied()
        .collect();
    assert_eq!(got, want, "mask {mask:#x}");
}

/// Every component alone, against a template differing from a record in one byte at
/// each offset in turn (and not at all): a component compared at the wrong place, or
/// not compared, lets the wrong records through.
fn each_component_each_byte<R: SaRecord + BruteForce + Copy + PartialEq + std::fmt::Debug>(
    sa: &mut SaServer,
    key: u64,
) {
    let (_, all) = table(sa, 0, &R::default(), key, 1);
    assert!(all.len() > 1);
    let base = all.len() / 2;
    for bit in 0..64 {
        check_query(sa, &all, base, 1 << bit, None, key);
        for at in 0..R::SIZE {
            check_query(sa, &all, base, 1 << bit, Some((at, 0x80)), key);
        }
    }
}

#[test]
fn single_components_match_brute_force() {
    let f = tree();
    // Nested capability masks (none, IsSM, IsSM + IsNoticeSupported, ...) so that
    // "every template bit set" and "equal" select different records.
    let mut sa = server_with(&f, |snap| {
        for n in &mut snap.nodes {
            for (num, p) in n.ports.iter_mut().enumerate() {
                if let Some(i) = p.info.as_mut() {
                    let k = num % 4;
                    i.capability_mask = ibsm_wire::CapabilityMask((1u32 << (k + 1)) - 2);
                    i.capability_mask2 = ibsm_wire::CapabilityMask2((1u16 << k) - 1);
                }
            }
        }
    });
    each_component_each_byte::<NodeRecord>(&mut sa, 0);
    each_component_each_byte::<PortInfoRecord>(&mut sa, KEY);
    each_component_each_byte::<PortInfoRecord>(&mut sa, 0);
    each_component_each_byte::<LinkRecord>(&mut sa, 0);
    each_component_each_byte::<GuidInfoRecord>(&mut sa, 0);
    each_component_each_byte::<SwitchInfoRecord>(&mut sa, 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn component_masks_match_brute_force(
        which in 0usize..6, base in 0usize..1000, mask in any::<u64>(),
        flip in proptest::option::of((0usize..256, any::<u8>())), trusted in any::<bool>(),
    ) {
        let f = tree();
        let mut sa = server(&f);
        let key = if trusted { KEY } else { 0 };
        match which {
            0 => { let (_, all) = table(&mut sa, 0, &NodeRecord::default(), key, 1);
                   check_query(&mut sa, &all, base, mask, flip, key); }
            1 => { let (_, all) = table(&mut sa, 0, &PortInfoRecord::default(), key, 1);
                   check_query(&mut sa, &all, base, mask, flip, key); }
            2 => { let (_, all) = table(&mut sa, 0, &LinkRecord::default(), key, 1);
                   check_query(&mut sa, &all, base, mask, flip, key); }
            3 => { let (_, all) = table(&mut sa, 0, &GuidInfoRecord::default(), key, 1);
                   check_query(&mut sa, &all, base, mask, flip, key); }
            4 => { let (_, all) = table(&mut sa, 0, &SwitchInfoRecord::default(), key, 1);
                   check_query(&mut sa, &all, base, mask, flip, key); }
            _ => { let (_, all) = table(&mut sa, 0, &SmInfoRecord::default(), key, 1);
                   check_query(&mut sa, &all, base, mask, flip, key); }
        }
    }
}

/// Walks the LFTs over the fabric model itself (not the SA's index): hop count.
fn reference_hops(f: &Fix, src: (ibsm_topology::NodeId, u8), dlid: u16) -> Option<u8> {
    let sw_ix = |id| f.csr.switch_node.iter().position(|&s| s == id);
    let owns = |id: ibsm_topology::NodeId, p: u8| {
        let port = f.fabric.port(id, p).unwrap();
        let base = u32::from(port.lid);
        port.lid != 0 && (base..base + (1 << port.lmc)).contains(&u32::from(dlid))
    };
    let (mut node, mut hops) = (src.0, 0u8);
    if sw_ix(node).is_none() && owns(src.0, src.1) {
        // A port to itself: loopback, no link crossed.
        return Some(0);
    }
    if sw_ix(node).is_none() {
        let peer = f.fabric.port_peer(node, src.1)?;
        node = peer.node;
        hops = 1;
    }
    loop {
        let s = sw_ix(node)?;
        if f.lids.switch_lid(s) == dlid {
            return Some(hops);
        }
        let out = f.routes.port(s, dlid);
        if out == 0 || out == ibsm_routing::NO_ROUTE {
            return None;
        }
        let peer = f.fabric.port_peer(node, out)?;
        hops += 1;
        if sw_ix(peer.node).is_none() {
            return owns(peer.node, peer.port).then_some(hops);
        }
        node = peer.node;
        if hops > 64 {
            return None;
        }
    }
}

fn set_lids(f: &mut Fix) {
    // The fabric model carries the LIDs for the reference walk.
    for t in 0..f.csr.term_node.len() {
        let (l, m) = f.lids.terminal_lid(t);
        let p = f
            .fabric
            .node_mut(f.csr.term_node[t])
            .unwrap()
            .port_mut(f.csr.term_port[t])
            .unwrap();
        p.lid = l;
        p.lmc = m;
    }
}

#[test]
fn path_records_follow_the_lfts_on_trees_and_tori() {
    let torus = generate::grid(&generate::Grid {
        dims: vec![5, 5],
        torus: true,
        cas_per_switch: 2,
    })
    .unwrap();
    for (fab, engine, lmc) in [
        (generate::k_ary_n_tree(4, 2).unwrap(), EngineKind::MinHop, 0),
        (generate::k_ary_n_tree(3, 3).unwrap(), EngineKind::UpDn, 1),
        (torus, EngineKind::Lash, 0),
    ] {
        let mut f = fixture(fab, engine, lmc);
        set_lids(&mut f);
        let sa = server(&f);
        let terms = f.csr.term_node.len();
        let mut seen = 0;
        for a in 0..terms {
            for b in 0..terms {
                let (sl, _) = f.lids.terminal_lid(a);
                let (dl, _) = f.lids.terminal_lid(b);
                let src = (f.csr.term_node[a], f.csr.term_port[a]);
                let want = reference_hops(&f, src, dl);
                let got = sa.path_facts(sl, dl);
                assert_eq!(got.map(|g| g.hops), want, "{engine:?} {sl} -> {dl}");
                let pr = sa.path_record(sl, dl).unwrap();
                assert_eq!((pr.slid, pr.dlid), (sl, dl));
                assert_eq!(pr.mtu, Mtu::Mtu4096);
                assert_eq!(pr.rate, Rate::G40);
                let sw = f.csr.term_switch[a] as usize;
                if a != b {
                    assert_eq!(pr.sl, f.routes.sl(sw, dl), "engine SL");
                }
                assert!(pr.reversible);
                seen += 1;
            }
        }
        assert_eq!(seen, terms * terms);
        if engine == EngineKind::Lash {
            assert!(f.routes.has_sls());
        }
    }
}

#[test]
fn path_record_queries_saquery_style() {
    let f = tree();
    let mut sa = server(&f);
    let (l1, _) = f.lids.terminal_lid(0);
    let (l2, _) = f.lids.terminal_lid(7);
    let g2 = Gid::new(
        PREFIX,
        f.fabric
            .port(f.csr.term_node[7], f.csr.term_port[7])
            .unwrap()
            .guid
            .0,
    );
    let g1 = Gid::new(
        PREFIX,
        f.fabric
            .port(f.csr.term_node[0], f.csr.term_port[0])
            .unwrap()
            .guid
            .0,
    );
    // By LIDs, by GIDs, mixed; one path each.
    for (mask, t) in [
        (
            PathRecord::CM_SLID | PathRecord::CM_DLID,
            PathRecord {
                slid: l1,
                dlid: l2,
                ..Default::default()
            },
        ),
        (
            PathRecord::CM_SGID
                | PathRecord::CM_DGID
                | PathRecord::CM_REVERSIBLE
                | PathRecord::CM_NUMB_PATH,
            PathRecord {
                sgid: g1,
                dgid: g2,
                reversible: true,
                numb_path: 1,
                ..Default::default()
            },
        ),
        (
            PathRecord::CM_SGID | PathRecord::CM_DLID,
            PathRecord {
                sgid: g1,
                dlid: l2,
                ..Default::default()
            },
        ),
    ] {
        let (st, prs) = table(&mut sa, mask.0, &t, 0, l1);
        assert!(st.is_ok());
        assert_eq!(prs.len(), 1, "{mask:?}");
        assert_eq!(
            (prs[0].slid, prs[0].dlid, prs[0].sgid, prs[0].dgid),
            (l1, l2, g1, g2)
        );
    }
    // From one source to everyone (16 CAs + 4 + 4 switches).
    let (_, all) = table(
        &mut sa,
        PathRecord::CM_SLID.0,
        &PathRecord {
            slid: l1,
            ..Default::default()
        },
        0,
        l1,
    );
    assert_eq!(all.len(), f.csr.term_node.len() + f.csr.switch_node.len());
    // Selectors: MTU > 4096 impossible; MTU < 4096 gives 2048; rate exactly 10 Gb/s.
    let base = PathRecord {
        slid: l1,
        dlid: l2,
        ..Default::default()
    };
    let ends = PathRecord::CM_SLID | PathRecord::CM_DLID;
    let sel = PathRecord::CM_MTU | PathRecord::CM_MTU_SELECTOR;
    let t = PathRecord {
        mtu: Mtu::Mtu4096,
        mtu_selector: Selector::GreaterThan,
        ..base
    };
    assert!(table(&mut sa, (ends | sel).0, &t, 0, l1).1.is_empty());
    let t = PathRecord {
        mtu: Mtu::Mtu4096,
        mtu_selector: Selector::LessThan,
        ..base
    };
    assert_eq!(
        table(&mut sa, (ends | sel).0, &t, 0, l1).1[0].mtu,
        Mtu::Mtu2048
    );
    let t = PathRecord {
        rate: Rate::G10,
        rate_selector: Selector::Exactly,
        ..base
    };
    let r = table(
        &mut sa,
        (ends | PathRecord::CM_RATE | PathRecord::CM_RATE_SELECTOR).0,
        &t,
        0,
        l1,
    )
    .1;
    assert_eq!(r[0].rate, Rate::G10);
    // A P_Key nobody has: no path. An unknown SGID: ERR_REQ_INVALID_GID.
    let t = PathRecord {
        pkey: 0x8123,
        ..base
    };
    assert!(
        table(&mut sa, (ends | PathRecord::CM_PKEY).0, &t, 0, l1)
            .1
            .is_empty()
    );
    let t = PathRecord {
        sgid: Gid::new(PREFIX, 0xdead),
        ..base
    };
    let (st, _) = table(
        &mut sa,
        (PathRecord::CM_SGID | PathRecord::CM_DLID).0,
        &t,
        0,
        l1,
    );
    assert_eq!(st.sa_status(), SaStatus::ReqInvalidGid);
    // Get: one record.
    let (st, pr) = get(&mut sa, Method::Get, ends.0, &base, l1);
    assert!(st.is_ok());
    assert_eq!(pr.dlid, l2);
}

#[test]
fn lmc_gives_every_lid_pair_and_numb_path_caps_it() {
    let f = fixture(generate::k_ary_n_tree(2, 2).unwrap(), EngineKind::MinHop, 2);
    let mut sa = server(&f);
    let port = |t: usize| {
        let g = f
            .fabric
            .port(f.csr.term_node[t], f.csr.term_port[t])
            .unwrap()
            .guid
            .0;
        Gid::new(PREFIX, g)
    };
    let (base_a, lmc) = f.lids.terminal_lid(0);
    assert_eq!(lmc, 2);
    let t = PathRecord {
        sgid: port(0),
        dgid: port(3),
        ..Default::default()
    };
    let m = PathRecord::CM_SGID | PathRecord::CM_DGID;
    let (_, all) = table(&mut sa, m.0, &t, 0, base_a);
    assert_eq!(all.len(), 16, "4 source LIDs x 4 destination LIDs");
    assert_eq!(all[0].preference, 0);
    assert_eq!(all[0].slid, base_a);
    assert!(all[1..].iter().all(|p| p.preference == 1));
    let t = PathRecord { numb_path: 3, ..t };
    let (_, some) = table(&mut sa, (m | PathRecord::CM_NUMB_PATH).0, &t, 0, base_a);
    assert_eq!(some.len(), 3);
    assert_eq!(some[..], all[..3]);
}

#[test]
fn secrets_need_the_sm_key() {
    let f = tree();
    let mut sa = server(&f);
    let (own, _) = f.lids.terminal_lid(3);
    let (_, open) = table(&mut sa, 0, &PortInfoRecord::default(), 0, own);
    assert!(open.iter().all(|r| r.port_info.m_key == 0));
    let (_, shut) = table(&mut sa, 0, &PortInfoRecord::default(), KEY, own);
    assert!(shut.iter().all(|r| r.port_info.m_key != 0));
    let (_, sms) = table(&mut sa, 0, &SmInfoRecord::default(), 0, own);
    assert_eq!(sms[0].sm_info.sm_key, 0);
    let (_, sms) = table(&mut sa, 0, &SmInfoRecord::default(), KEY, own);
    assert_eq!(sms[0].sm_info.sm_key, KEY);
    // P_Keys: untrusted requesters see their own port's table only.
    let (_, pk) = table(&mut sa, 0, &PKeyTableRecord::default(), 0, own);
    assert_eq!(pk.len(), 1);
    assert_eq!(pk[0].lid, own);
    assert_eq!(pk[0].pkey_table.pkeys.get(0).unwrap().0, 0xFFFF);
    let (_, pk) = table(&mut sa, 0, &PKeyTableRecord::default(), KEY, own);
    assert!(pk.len() > 16);
    // A wrong key: ERR_REQ_DENIED, counted; Get and GetTable alike.
    let (st, r) = table(&mut sa, 0, &NodeRecord::default(), 0x77, own);
    assert_eq!(st.sa_status(), SaStatus::ReqDenied);
    assert!(r.is_empty());
    let mut req =
        SaMad::request(Method::Get, 1, ComponentMask::NONE, &NodeRecord::default()).unwrap();
    req.sm_key = 0x77;
    let out = sa.handle(T0, &req.to_bytes(), &from(own));
    assert_eq!(
        SaMad::parse(&out[0]).unwrap().status.sa_status(),
        SaStatus::ReqDenied
    );
    assert_eq!(sa.counters().bad_sm_key, 2);
    assert!(sa.counters().trusted >= 3);
}

#[test]
fn malformed_and_unsupported_requests_get_statuses() {
    let f = tree();
    let mut sa = server(&f);
    let req = SaMad::request(
        Method::Get,
        1,
        NodeRecord::CM_LID,
        &NodeRecord {
            lid: 1,
            ..Default::default()
        },
    )
    .unwrap();
    let bytes = req.to_bytes();
    // Too short to answer: dropped and counted.
    assert!(sa.handle(T0, &bytes[..40], &from(1)).is_empty());
    // Shorter than a MAD: ERR_REQ_INVALID.
    let out = sa.handle(T0, &bytes[..200], &from(1));
    assert_eq!(
        SaMad::parse(&pad(&out[0])).unwrap().status.sa_status(),
        SaStatus::ReqInvalid
    );
    // Class version 1: bad version.
    let mut b = bytes;
    b[2] = 1;
    let out = sa.handle(T0, &b, &from(1));
    assert_eq!(SaMad::parse(&out[0]).unwrap().status, Status::BAD_VERSION);
    // Unknown attribute; Set of a NodeRecord.
    let mut b = bytes;
    b[16..18].copy_from_slice(&0x0099u16.to_be_bytes());
    let out = sa.handle(T0, &b, &from(1));
    assert_eq!(
        SaMad::parse(&out[0]).unwrap().status,
        Status::METHOD_ATTR_UNSUPPORTED
    );
    let set = SaMad::request(Method::Set, 1, ComponentMask::NONE, &NodeRecord::default()).unwrap();
    let out = sa.handle(T0, &set.to_bytes(), &from(1));
    assert_eq!(
        SaMad::parse(&out[0]).unwrap().status,
        Status::METHOD_ATTR_UNSUPPORTED
    );
    // Get of many / of none.
    let (st, _) = get(&mut sa, Method::Get, 0, &NodeRecord::default(), 1);
    assert_eq!(st.sa_status(), SaStatus::TooManyRecords);
    let (st, _) = get(
        &mut sa,
        Method::Get,
        NodeRecord::CM_LID.0,
        &NodeRecord {
            lid: 999,
            ..Default::default()
        },
        1,
    );
    assert_eq!(st.sa_status(), SaStatus::NoRecords);
    // Responses and RMPP ACKs are not requests.
    let mut b = bytes;
    b[3] |= 0x80;
    assert!(sa.handle(T0, &b, &from(1)).is_empty());
    // ClassPortInfo.
    let mut cpi = req;
    cpi.attribute_id = SaAttributeId::ClassPortInfo.into();
    let out = sa.handle(T0, &cpi.to_bytes(), &from(1));
    let r = SaMad::parse(&out[0]).unwrap();
    assert!(r.status.is_ok());
    assert_eq!(r.data[1], 2, "class version");
    assert!(sa.counters().malformed >= 2 && sa.counters().errors >= 5);
}

fn pad(m: &[u8]) -> [u8; 256] {
    let mut b = [0u8; 256];
    b[..m.len().min(256)].copy_from_slice(&m[..m.len().min(256)]);
    b
}

#[test]
fn kernel_rmpp_sends_one_message() {
    let f = tree();
    let mut snap = SaSnapshot::from_routed(&f.fabric, &f.lids, f.routes.clone(), PREFIX);
    snap.sms.clear();
    let mut cfg = SaConfig::with_sm_key(KEY);
    cfg.rmpp = RmppMode::Kernel;
    let mut sa = SaServer::new(cfg);
    sa.load(snap);
    let req = SaMad::request(
        Method::GetTable,
        1,
        ComponentMask::NONE,
        &NodeRecord::default(),
    )
    .unwrap();
    let out = sa.handle(T0, &req.to_bytes(), &from(1));
    assert_eq!(out.len(), 1);
    let ends = f.csr.term_node.len() + f.csr.switch_node.len();
    // 108-byte records, 112 apart (AttributeOffset 14).
    assert_eq!(out[0].len(), 56 + ends * 112);
    // An empty table is the header alone.
    let t = NodeRecord {
        lid: 999,
        ..Default::default()
    };
    let none = SaMad::request(Method::GetTable, 2, NodeRecord::CM_LID, &t).unwrap();
    assert_eq!(sa.handle(T0, &none.to_bytes(), &from(1))[0].len(), 56);
    assert_eq!(u16::from_be_bytes([out[0][44], out[0][45]]), 14);
    assert_eq!(out[0][25], 1, "RMPP DATA");
    assert_eq!(out[0][26] & 1, 1, "Active");
}

#[test]
fn multicast_groups_and_mfts() {
    let f = tree();
    let mut sa = server(&f);
    let port = |t: usize| {
        let (lid, _) = f.lids.terminal_lid(t);
        let g = f
            .fabric
            .port(f.csr.term_node[t], f.csr.term_port[t])
            .unwrap()
            .guid
            .0;
        (lid, Gid::new(PREFIX, g))
    };
    let (la, ga) = port(0);
    let (lb, gb) = port(15);
    let mask = McMemberRecord::CM_PORT_GID
        | McMemberRecord::CM_QKEY
        | McMemberRecord::CM_PKEY
        | McMemberRecord::CM_JOIN_STATE;
    let t = McMemberRecord {
        port_gid: ga,
        qkey: 0x11,
        pkey: 0xFFFF,
        join_state: join_state::FULL_MEMBER,
        ..Default::default()
    };
    let (st, g) = get(&mut sa, Method::Set, mask.0, &t, la);
    assert!(st.is_ok());
    assert_eq!(g.mlid, 0xC000);
    // Another port joins the same MGID; joining for someone else needs the key.
    let t2 = McMemberRecord {
        mgid: g.mgid,
        port_gid: gb,
        ..t
    };
    let (st, _) = get(
        &mut sa,
        Method::Set,
        (mask | McMemberRecord::CM_MGID).0,
        &t2,
        la,
    );
    assert_eq!(st.sa_status(), SaStatus::ReqDenied);
    let (st, g2) = get(
        &mut sa,
        Method::Set,
        (mask | McMemberRecord::CM_MGID).0,
        &t2,
        lb,
    );
    assert!(st.is_ok());
    assert_eq!(g2.mlid, 0xC000);
    // A second group gets the next MLID.
    let (_, g3) = get(
        &mut sa,
        Method::Set,
        mask.0,
        &McMemberRecord { qkey: 0x22, ..t },
        la,
    );
    assert_eq!(g3.mlid, 0xC001);
    // MFTs: every switch on the tree between the two members forwards 0xC000; the
    // members' leaf switches to their ports.
    let ups = sa.take_mft_updates();
    assert!(!ups.is_empty());
    let leaf_a = f
        .fabric
        .port_peer(f.csr.term_node[0], f.csr.term_port[0])
        .unwrap();
    let guid_a = f.fabric.node(leaf_a.node).unwrap().guid().0;
    let u = ups
        .iter()
        .find(|u| u.switch_guid == guid_a && u.block == 0 && u.position == 0)
        .unwrap();
    assert!(u.mft.port_masks.get(0).unwrap() & (1 << leaf_a.port) != 0);
    assert!(sa.take_mft_updates().is_empty(), "nothing changed");
    // Untrusted view: groups without the other members.
    let (_, recs) = table(&mut sa, 0, &McMemberRecord::default(), 0, la);
    assert_eq!(recs.len(), 2);
    let (_, recs) = table(&mut sa, 0, &McMemberRecord::default(), KEY, la);
    assert_eq!(recs.len(), 3);
    // Leaves: the first group empties, its MFT entries are cleared.
    let leave = McMemberRecord { mgid: g.mgid, ..t };
    let m = mask | McMemberRecord::CM_MGID;
    assert!(get(&mut sa, Method::Delete, m.0, &leave, la).0.is_ok());
    assert!(get(&mut sa, Method::Delete, m.0, &t2, lb).0.is_ok());
    assert_eq!(
        get(&mut sa, Method::Delete, m.0, &t2, lb).0.sa_status(),
        SaStatus::ReqInvalid
    );
    let ups = sa.take_mft_updates();
    let u = ups
        .iter()
        .find(|u| u.switch_guid == guid_a && u.block == 0 && u.position == 0)
        .unwrap();
    assert_eq!(u.mft.port_masks.get(0).unwrap(), 0);
    // Creating without a Q_Key: insufficient components.
    let (st, _) = get(
        &mut sa,
        Method::Set,
        (McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE).0,
        &t,
        la,
    );
    assert_eq!(st.sa_status(), SaStatus::ReqInsufficientComponents);
}

/// MLIDs only within the smallest MulticastFDBCap of the switches: a group that
/// cannot get one is refused ERR_NO_RESOURCES (as OpenSM), and so is a predefined one
/// left out; MulticastFDBTop covers the blocks in use.
#[test]
fn mlids_within_the_smallest_mft_cap() {
    let f = tree();
    let mut first = true;
    let mut sa = server_with(&f, |snap| {
        for n in &mut snap.nodes {
            if let Some(si) = n.switch_info.as_mut() {
                // One small switch bounds the subnet.
                si.multicast_fdb_cap = if first { 2 } else { 1024 };
                first = false;
            }
        }
    });
    let port = |t: usize| {
        let (lid, _) = f.lids.terminal_lid(t);
        let g = f
            .fabric
            .port(f.csr.term_node[t], f.csr.term_port[t])
            .unwrap()
            .guid
            .0;
        (lid, Gid::new(PREFIX, g))
    };
    let (la, ga) = port(0);
    let mask = McMemberRecord::CM_PORT_GID
        | McMemberRecord::CM_QKEY
        | McMemberRecord::CM_PKEY
        | McMemberRecord::CM_JOIN_STATE;
    let t = |qkey: u32| McMemberRecord {
        port_gid: ga,
        qkey,
        pkey: 0xFFFF,
        join_state: join_state::FULL_MEMBER,
        ..Default::default()
    };
    let (st, g1) = get(&mut sa, Method::Set, mask.0, &t(1), la);
    assert!(st.is_ok());
    let (st, g2) = get(&mut sa, Method::Set, mask.0, &t(2), la);
    assert!(st.is_ok());
    assert_eq!((g1.mlid, g2.mlid), (0xC000, 0xC001));
    let (st, _) = get(&mut sa, Method::Set, mask.0, &t(3), la);
    assert_eq!(st.sa_status(), SaStatus::NoResources);
    let mut mgid = [0u8; 16];
    mgid[0] = 0xFF;
    mgid[1] = 0x12;
    mgid[15] = 9;
    let pre = McMemberRecord {
        mgid: Gid(mgid),
        qkey: 4,
        pkey: 0xFFFF,
        ..Default::default()
    };
    assert_eq!(sa.set_predefined_groups(&[pre]), vec![Gid(mgid)]);
    // Both groups have entries in block 0: its last MLID is the top, but never above
    // what the switch's cap holds (an SMA refuses that SwitchInfo Set).
    assert!(!sa.take_mft_updates().is_empty());
    let tops = sa.mft_tops();
    assert!(!tops.is_empty());
    let caps: std::collections::HashMap<u64, u16> = sa
        .snapshot()
        .nodes
        .iter()
        .filter_map(|n| Some((n.info.node_guid, n.switch_info?.multicast_fdb_cap)))
        .collect();
    for (sw, &t) in &tops {
        let want = if caps[sw] == 2 { 0xC001 } else { 0xC01F };
        assert_eq!(t, want, "{tops:?}");
    }
}

#[test]
fn services_register_expire_and_delete() {
    let f = tree();
    let mut sa = server(&f);
    let (lid, _) = f.lids.terminal_lid(2);
    let guid = f
        .fabric
        .port(f.csr.term_node[2], f.csr.term_port[2])
        .unwrap()
        .guid
        .0;
    let mut s = ServiceRecord {
        service_id: 0x42,
        service_gid: Gid::new(PREFIX, guid),
        service_pkey: 0xFFFF,
        service_lease: 10,
        ..Default::default()
    };
    s.set_name("ibsm test");
    let m = ServiceRecord::CM_SERVICE_ID | ServiceRecord::CM_SERVICE_GID;
    let req = SaMad::request(Method::Set, 1, m, &s).unwrap();
    let at = Instant::from_secs;
    assert!(
        SaMad::parse(&sa.handle(at(0), &req.to_bytes(), &from(lid))[0])
            .unwrap()
            .status
            .is_ok()
    );
    // Someone else may not register for that port.
    let out = sa.handle(at(0), &req.to_bytes(), &from(lid + 1));
    assert_eq!(
        SaMad::parse(&out[0]).unwrap().status.sa_status(),
        SaStatus::ReqDenied
    );
    let q = SaMad::request(Method::GetTable, 2, ServiceRecord::CM_SERVICE_ID, &s).unwrap();
    let n = |sa: &mut SaServer, t| {
        let out = sa.handle(at(t), &q.to_bytes(), &from(1));
        let (rx, _) = receive(sa, at(t), out, 1);
        rx.records::<ServiceRecord>().unwrap().count()
    };
    assert_eq!(n(&mut sa, 5), 1);
    assert_eq!(n(&mut sa, 11), 0, "lease over");
    sa.handle(at(20), &req.to_bytes(), &from(lid));
    let del = SaMad::request(Method::Delete, 3, m, &s).unwrap();
    assert!(
        SaMad::parse(&sa.handle(at(21), &del.to_bytes(), &from(lid))[0])
            .unwrap()
            .status
            .is_ok()
    );
    assert_eq!(n(&mut sa, 21), 0);
}

#[test]
fn inform_info_subscribers_get_reports() {
    let f = tree();
    let mut sa = server(&f);
    let (lid, _) = f.lids.terminal_lid(4);
    let ii = InformInfo {
        lid_range_begin: InformInfo::ALL_LIDS,
        is_generic: 1,
        subscribe: 1,
        notice_type: InformInfo::ALL,
        trap_number: 64,
        qpn: 7,
        producer_type: InformInfo::ALL_PRODUCERS,
        ..Default::default()
    };
    let req = SaMad::request(Method::Set, 1, ComponentMask::NONE, &ii).unwrap();
    let out = sa.handle(T0, &req.to_bytes(), &from(lid));
    assert!(SaMad::parse(&out[0]).unwrap().status.is_ok());
    let n64 = Notice::generic(
        ibsm_wire::TrapNumber::from(64),
        ibsm_wire::ProducerType::from(4),
        9,
    );
    let reps = sa.notice(T0, &n64);
    assert_eq!(reps.len(), 1);
    assert_eq!((reps[0].dlid, reps[0].qpn), (lid, 7));
    let m = SaMad::parse(&reps[0].mad).unwrap();
    assert_eq!(m.method, Method::Report);
    assert_eq!(m.attribute_id, SaAttributeId::Notice);
    let n65 = Notice::generic(
        ibsm_wire::TrapNumber::from(65),
        ibsm_wire::ProducerType::from(4),
        9,
    );
    assert!(sa.notice(T0, &n65).is_empty(), "other trap number");
    // Unsubscribe.
    let un = SaMad::request(
        Method::Set,
        2,
        ComponentMask::NONE,
        &InformInfo { subscribe: 0, ..ii },
    )
    .unwrap();
    assert!(
        SaMad::parse(&sa.handle(T0, &un.to_bytes(), &from(lid))[0])
            .unwrap()
            .status
            .is_ok()
    );
    assert!(sa.notice(T0, &n64).is_empty());
}

/// The PathRecord components saquery can set.
const PR_BITS: [ComponentMask; 19] = [
    PathRecord::CM_SERVICE_ID_MSB,
    PathRecord::CM_SERVICE_ID_LSB,
    PathRecord::CM_DGID,
    PathRecord::CM_SGID,
    PathRecord::CM_DLID,
    PathRecord::CM_SLID,
    PathRecord::CM_FLOW_LABEL,
    PathRecord::CM_HOP_LIMIT,
    PathRecord::CM_TCLASS,
    PathRecord::CM_REVERSIBLE,
    PathRecord::CM_NUMB_PATH,
    PathRecord::CM_PKEY,
    PathRecord::CM_SL,
    PathRecord::CM_MTU_SELECTOR,
    PathRecord::CM_MTU,
    PathRecord::CM_RATE_SELECTOR,
    PathRecord::CM_RATE,
    PathRecord::CM_PACKET_LIFE_TIME_SELECTOR,
    PathRecord::CM_PACKET_LIFE_TIME,
];

fn cmp_ok(sel: Option<Selector>, got: u32, want: u32) -> bool {
    match sel.unwrap_or(Selector::Exactly) {
        Selector::GreaterThan => got > want,
        Selector::LessThan => got < want,
        Selector::Exactly => got == want,
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Any mask saquery can send: every returned path honours every selected component
    /// (selectors included), and a template that is an actual path with exact selectors
    /// finds exactly that path.
    #[test]
    fn path_record_masks_are_honoured(
        a in 0usize..16, b in 0usize..16, bits in any::<u32>(), mtu in 1u8..6,
        rate in 2u8..25, plt in 0u8..40, sels in any::<[u8; 3]>(), sl in 0u8..16,
        pkey in prop_oneof![Just(0xFFFFu16), Just(0x7FFF), Just(0x8001)],
    ) {
        let f = tree();
        let mut sa = server(&f);
        let (sl_a, _) = f.lids.terminal_lid(a);
        let (dl_b, _) = f.lids.terminal_lid(b);
        let real = sa.path_record(sl_a, dl_b).unwrap();
        // The real path, exactly: found once.
        let exact = PathRecord::CM_SLID | PathRecord::CM_DLID | PathRecord::CM_MTU
            | PathRecord::CM_MTU_SELECTOR | PathRecord::CM_RATE | PathRecord::CM_RATE_SELECTOR
            | PathRecord::CM_SL | PathRecord::CM_PKEY | PathRecord::CM_REVERSIBLE;
        let (_, got) = table(&mut sa, exact.0, &real, 0, sl_a);
        prop_assert_eq!(got, vec![real]);
        // A random template around it.
        let mut mask = ComponentMask::NONE;
        for (i, m) in PR_BITS.iter().enumerate() {
            if bits & (1 << i) != 0 {
                mask |= *m;
            }
        }
        let sel = |x: u8| Selector::from(x & 3);
        let t = PathRecord {
            mtu: Mtu::from(mtu),
            mtu_selector: sel(sels[0]),
            rate: Rate::from(rate),
            rate_selector: sel(sels[1]),
            packet_life_time: plt,
            packet_life_time_selector: sel(sels[2]),
            sl,
            pkey,
            numb_path: 1,
            ..real
        };
        let (st, got) = table(&mut sa, mask.0, &t, 0, sl_a);
        prop_assert!(st.is_ok());
        let has = |m: ComponentMask| mask.contains(m);
        let sel_of = |bit: ComponentMask, s: Selector| has(bit).then_some(s);
        for p in &got {
            if has(PathRecord::CM_SLID) { prop_assert_eq!(p.slid, t.slid); }
            if has(PathRecord::CM_DLID) { prop_assert_eq!(p.dlid, t.dlid); }
            if has(PathRecord::CM_SGID) { prop_assert_eq!(p.sgid, t.sgid); }
            if has(PathRecord::CM_DGID) { prop_assert_eq!(p.dgid, t.dgid); }
            if has(PathRecord::CM_SL) { prop_assert_eq!(p.sl, t.sl); }
            if has(PathRecord::CM_PKEY) { prop_assert_eq!(p.pkey, t.pkey); }
            if has(PathRecord::CM_TCLASS) { prop_assert_eq!(p.tclass, t.tclass); }
            if has(PathRecord::CM_FLOW_LABEL) { prop_assert_eq!(p.flow_label, t.flow_label); }
            if has(PathRecord::CM_HOP_LIMIT) { prop_assert_eq!(p.hop_limit, t.hop_limit); }
            if has(PathRecord::CM_REVERSIBLE) && t.reversible { prop_assert!(p.reversible); }
            if has(PathRecord::CM_MTU) {
                let s = sel_of(PathRecord::CM_MTU_SELECTOR, t.mtu_selector);
                prop_assert!(cmp_ok(s, u32::from(u8::from(p.mtu)), u32::from(mtu)), "{:?}", p);
            }
            if has(PathRecord::CM_RATE) && Rate::from(rate).mbps().is_some() {
                let s = sel_of(PathRecord::CM_RATE_SELECTOR, t.rate_selector);
                prop_assert!(cmp_ok(s, p.rate.mbps().unwrap(), Rate::from(rate).mbps().unwrap()), "{:?}", p);
            }
            if has(PathRecord::CM_PACKET_LIFE_TIME) {
                let s = sel_of(PathRecord::CM_PACKET_LIFE_TIME_SELECTOR, t.packet_life_time_selector);
                prop_assert!(cmp_ok(s, u32::from(p.packet_life_time), u32::from(plt)), "{:?}", p);
            }
            // Never better than the links allow.
            let facts = sa.path_facts(p.slid, p.dlid).unwrap();
            prop_assert!(u8::from(p.mtu) <= facts.mtu);
        }
        // With both ends fixed and nothing else asked, exactly one path.
        if mask & !(PathRecord::CM_SLID | PathRecord::CM_DLID | PathRecord::CM_SGID | PathRecord::CM_DGID | PathRecord::CM_NUMB_PATH | PathRecord::CM_SERVICE_ID | PathRecord::CM_TCLASS | PathRecord::CM_FLOW_LABEL | PathRecord::CM_HOP_LIMIT | PathRecord::CM_REVERSIBLE) == ComponentMask::NONE
            && has(PathRecord::CM_SLID | PathRecord::CM_DLID)
        {
            prop_assert_eq!(got.len(), 1);
        }
    }
}

/// A NodeRecord GetTable of every node of a 4-ary 3-tree (64 CAs + 48 switches, about
/// 60 segments) from `lid`; returns the first window.
fn big_table(sa: &mut SaServer, lid: u16, tid: u64) -> (SaMad, Vec<Vec<u8>>) {
    let req = SaMad::request(
        Method::GetTable,
        tid,
        ComponentMask::NONE,
        &NodeRecord::default(),
    )
    .unwrap();
    let out = sa.handle(T0, &req.to_bytes(), &from(lid));
    (req, out)
}

fn seg_no(m: &[u8]) -> u32 {
    u32::from_be_bytes(m[28..32].try_into().unwrap())
}

fn rmpp_type(m: &[u8]) -> u8 {
    m[25]
}

#[test]
fn rmpp_window_follows_acks_and_time_outs_resend() {
    let f = fixture(generate::k_ary_n_tree(4, 3).unwrap(), EngineKind::MinHop, 0);
    let mut sa = server(&f);
    let (lid, _) = f.lids.terminal_lid(0);
    let (_, first) = big_table(&mut sa, lid, 0x42);
    // The window starts at one segment.
    assert_eq!(first.len(), 1);
    assert_eq!(seg_no(&first[0]), 1);
    assert_eq!(sa.transfers_in_progress(), 1);
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
    rx.push(&first[0]).unwrap();
    let total = rx.expected_segments().unwrap();
    assert!(total > 40, "{total} segments");
    // ACK 1 with a window of 4: segments 2..=5 and no more.
    let next = sa.handle(T0, &rx.ack(4), &from(lid));
    assert_eq!(
        next.iter().map(|m| seg_no(m)).collect::<Vec<_>>(),
        [2, 3, 4, 5]
    );
    // Segment 3 is "lost": 2 arrives, 4 and 5 are out of order.
    rx.push(&next[0]).unwrap();
    assert!(rx.push(&next[2]).is_err() && rx.push(&next[3]).is_err());
    // The receiver re-ACKs 2 with a window ending at 5: nothing new may be sent.
    let mut ack = rx.ack(3);
    assert!(sa.handle(T0, &ack, &from(lid)).is_empty());
    // The time-out resends from the first unacknowledged segment (go-back-N).
    let due = sa.poll_timeout().unwrap();
    assert!(due > T0);
    sa.handle_timeout(due);
    let mut resent = Vec::new();
    while let Some(t) = sa.poll_transmit(due) {
        assert_eq!(t.to, from(lid));
        resent.push(t.mad);
    }
    assert_eq!(
        resent.iter().map(|m| seg_no(m)).collect::<Vec<_>>(),
        [3, 4, 5]
    );
    assert_eq!(sa.counters().rmpp_resends, 1);
    let mut batch = resent;
    let mut now = due;
    while !rx.is_complete() {
        for m in &batch {
            rx.push(m).unwrap();
        }
        ack = rx.ack(16);
        batch = sa.handle(now, &ack, &from(lid));
        now += Duration::from_micros(10);
    }
    assert!(batch.is_empty());
    assert_eq!(sa.transfers_in_progress(), 0);
    assert_eq!(sa.counters().rmpp_completed, 1);
    assert_eq!(sa.poll_timeout(), None);
    // The reassembled table is every node, by brute force over the fabric.
    let recs: Vec<NodeRecord> = rx.records::<NodeRecord>().unwrap().collect();
    let want = f.fabric.cas().count() + f.fabric.switches().count();
    assert_eq!(recs.len(), want);
}

/// A receiver that ACKs one segment at a time, each ACK a little before the ACK
/// time-out: no single time-out ever fires, but the total timer ends the transfer with
/// ABORT 118 and frees its table.
#[test]
fn rmpp_total_timer_aborts_a_receiver_that_acks_too_slowly() {
    let f = fixture(generate::k_ary_n_tree(4, 3).unwrap(), EngineKind::MinHop, 0);
    let snap = server(&f).snapshot().clone();
    let mut cfg = SaConfig::with_sm_key(KEY);
    cfg.rmpp_timeout = Duration::from_millis(200);
    cfg.rmpp_total_timeout = Duration::from_secs(2);
    let mut sa = SaServer::new(cfg);
    sa.load(snap);
    let (lid, _) = f.lids.terminal_lid(0);
    let t0 = Instant::from_millis(3);
    let req = SaMad::request(
        Method::GetTable,
        0x77,
        ComponentMask::NONE,
        &NodeRecord::default(),
    )
    .unwrap();
    let mut batch = sa.handle(t0, &req.to_bytes(), &from(lid));
    assert!(sa.transfer_bytes() > 0);
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
    let mut now = t0;
    let mut abort = None;
    let mut acks = 0;
    loop {
        for m in batch.drain(..) {
            rx.push(&m).unwrap();
        }
        let due = sa.poll_timeout().expect("the transfer is still running");
        let ack_at = now + Duration::from_millis(150);
        if ack_at < due {
            now = ack_at;
            batch = sa.handle(now, &rx.ack(1), &from(lid));
            acks += 1;
            assert_eq!(batch.len(), 1, "one new segment per ACK");
            continue;
        }
        now = due;
        sa.handle_timeout(now);
        while let Some(t) = sa.poll_transmit(now) {
            assert_eq!(rmpp_type(&t.mad), 4, "no resend: only the ABORT");
            abort = Some(t.mad);
        }
        break;
    }
    let abort = abort.expect("an ABORT when the total time ran out");
    assert_eq!(abort[27], 118, "total transfer time too long");
    assert_eq!(now, t0 + Duration::from_secs(2));
    assert!(!rx.is_complete());
    assert!(acks >= 12, "{acks} ACKs");
    assert_eq!(sa.transfers_in_progress(), 0);
    assert_eq!(sa.transfer_bytes(), 0);
    assert_eq!(sa.poll_timeout(), None);
    let c = sa.counters();
    assert_eq!(
        (c.rmpp_total_timeouts, c.rmpp_aborted, c.rmpp_resends),
        (1, 1, 0)
    );
    // A late ACK finds nothing and sends nothing.
    assert!(sa.handle(now, &rx.ack(1), &from(lid)).is_empty());
}

#[test]
fn rmpp_gives_up_with_an_abort_and_obeys_stop_and_abort() {
    let f = tree();
    let mut sa = server(&f);
    let (lid, _) = f.lids.terminal_lid(1);
    // Nobody ACKs: 1 + rmpp_retries sends of segment 1, then our ABORT (status 126).
    let (_, first) = big_table(&mut sa, lid, 1);
    assert_eq!(first.len(), 1);
    let mut sends = 1;
    let mut abort = None;
    while let Some(t) = sa.poll_timeout() {
        sa.handle_timeout(t);
        while let Some(x) = sa.poll_transmit(t) {
            match rmpp_type(&x.mad) {
                1 => sends += 1,
                4 => abort = Some(x.mad),
                other => panic!("RMPP type {other}"),
            }
        }
    }
    assert_eq!(sends, 1 + sa.config().rmpp_retries);
    let abort = abort.expect("an ABORT after the last retry");
    assert_eq!(abort[27], 126, "too many retries");
    assert_eq!(sa.transfers_in_progress(), 0);
    assert_eq!(sa.counters().rmpp_aborted, 1);
    // The receiver STOPs (or ABORTs) a transfer: it ends at once, nothing more is sent.
    for (tid, kind) in [(2u64, 3u8), (3, 4)] {
        let (_, first) = big_table(&mut sa, lid, tid);
        let mut ctl = first[0].clone();
        ctl[3] ^= 0x80;
        ctl[25] = kind;
        ctl[27] = if kind == 3 { 1 } else { 127 };
        assert!(sa.handle(T0, &ctl, &from(lid)).is_empty());
        assert_eq!(sa.transfers_in_progress(), 0);
        assert_eq!(sa.poll_timeout(), None);
    }
    assert_eq!(sa.counters().rmpp_aborted, 3);
    // An ACK past what was sent is a protocol error: we ABORT (123).
    let (_, first) = big_table(&mut sa, lid, 4);
    let mut bad = first[0].clone();
    bad[3] ^= 0x80;
    bad[25] = 2;
    bad[28..32].copy_from_slice(&9u32.to_be_bytes());
    bad[32..36].copy_from_slice(&20u32.to_be_bytes());
    let out = sa.handle(T0, &bad, &from(lid));
    assert_eq!(out.len(), 1);
    assert_eq!((rmpp_type(&out[0]), out[0][27]), (4, 123));
    assert_eq!(sa.transfers_in_progress(), 0);
    // Transfers hold their tables until they end; a byte budget caps them.
    let held = sa.transfer_bytes();
    assert_eq!(held, 0);
    let (_, t40) = big_table(&mut sa, lid, 40);
    let one = sa.transfer_bytes();
    assert!(one > 2000, "{one}");
    let mut cfg = SaConfig::with_sm_key(KEY);
    cfg.max_transfer_bytes = one + one / 2;
    let mut small = SaServer::new(cfg);
    small.load(sa.snapshot().clone());
    let (_, first) = big_table(&mut small, lid, 1);
    assert_eq!(rmpp_type(&first[0]), 1);
    let (_, second) = big_table(&mut small, lid, 2);
    assert_eq!(second.len(), 1);
    let h = SaMad::parse(&second[0]).unwrap();
    assert_eq!(h.status.sa_status(), SaStatus::NoResources);
    // The same request again restarts its own transfer: no budget needed twice.
    let (_, again) = big_table(&mut small, lid, 1);
    assert_eq!(rmpp_type(&again[0]), 1);
    assert_eq!(small.transfer_bytes(), one);
    let mut stop = again[0].clone();
    stop[3] ^= 0x80;
    stop[25] = 3;
    small.handle(T0, &stop, &from(lid));
    assert_eq!(small.transfer_bytes(), 0);
    let mut stop = t40[0].clone();
    stop[3] ^= 0x80;
    stop[25] = 3;
    sa.handle(T0, &stop, &from(lid));
    assert_eq!(sa.transfer_bytes(), 0);
    // Someone else's ACK for that TID moves nothing.
    let (_, _) = big_table(&mut sa, lid, 5);
    let mut other = first[0].clone();
    other[3] ^= 0x80;
    other[25] = 2;
    other[8..16].copy_from_slice(&5u64.to_be_bytes());
    other[28..32].copy_from_slice(&1u32.to_be_bytes());
    other[32..36].copy_from_slice(&8u32.to_be_bytes());
    assert!(sa.handle(T0, &other, &from(lid + 1)).is_empty());
    assert_eq!(sa.transfers_in_progress(), 1);
}

#[test]
fn reports_are_resent_until_the_subscriber_answers() {
    let f = tree();
    let mut sa = server(&f);
    let (lid, _) = f.lids.terminal_lid(4);
    let ii = InformInfo {
        lid_range_begin: InformInfo::ALL_LIDS,
        is_generic: 1,
        subscribe: 1,
        notice_type: InformInfo::ALL,
        trap_number: InformInfo::ALL,
        qpn: 7,
        producer_type: InformInfo::ALL_PRODUCERS,
        ..Default::default()
    };
    let req = SaMad::request(Method::Set, 1, ComponentMask::NONE, &ii).unwrap();
    sa.handle(T0, &req.to_bytes(), &from(lid));
    let n = Notice::generic(
        ibsm_wire::TrapNumber::from(64),
        ibsm_wire::ProducerType::from(4),
        9,
    );
    let reps = sa.notice(T0, &n);
    assert_eq!(reps.len(), 1);
    assert_eq!(sa.reports_pending(), 1);
    // Unanswered: resent after the time-out, same TID.
    let t = sa.poll_timeout().unwrap();
    assert_eq!(t, T0 + sa.config().report_timeout);
    sa.handle_timeout(t);
    let again = sa.poll_transmit(t).unwrap();
    assert_eq!(again.to, Requester { lid, qpn: 7 });
    assert_eq!(again.mad, reps[0].mad);
    // The ReportResp ends it.
    let mut resp = SaMad::parse(&reps[0].mad).unwrap();
    resp.response = true;
    // A ReportResp from another port does not count.
    sa.handle(t, &resp.to_bytes(), &from(lid + 1));
    assert_eq!(sa.reports_pending(), 1);
    // The kernel that sent the Report may have put its agent number into the upper
    // half of the TID: the answer still counts.
    resp.transaction_id = (resp.transaction_id & 0xFFFF_FFFF) | (0x77 << 32);
    sa.handle(t, &resp.to_bytes(), &from(lid));
    assert_eq!(sa.reports_pending(), 0);
    assert_eq!(sa.poll_timeout(), None);
    assert_eq!(
        (sa.counters().report_resends, sa.counters().report_acks),
        (1, 1)
    );
    // Never answered: given up after report_retries resends; the subscription stays.
    sa.notice(t, &n);
    let mut resends = 0;
    while let Some(d) = sa.poll_timeout() {
        sa.handle_timeout(d);
        while sa.poll_transmit(d).is_some() {
            resends += 1;
        }
    }
    assert_eq!(resends, sa.config().report_retries);
    assert_eq!(sa.counters().reports_failed, 1);
    assert_eq!(sa.notice(t, &n).len(), 1, "still subscribed");
}

#[test]
fn path_p_keys_come_from_the_tables_read() {
    let f = tree();
    let mut snap = SaSnapshot::from_routed(&f.fabric, &f.lids, f.routes.clone(), PREFIX);
    let lid = |t: usize| f.lids.terminal_lid(t).0;
    let tables: [(usize, Vec<u16>); 4] = [
        (0, vec![0xFFFF, 0x8001, 0, 0]),
        (1, vec![0x7FFF, 0x0001]),
        (2, vec![0x0001]),
        (3, vec![0x8002]),
    ];
    for (t, keys) in &tables {
        let port = snap
            .nodes
            .iter_mut()
            .filter(|n| !n.is_switch())
            .flat_map(|n| n.ports.iter_mut())
            .find(|p| p.info.is_some_and(|i| i.lid == lid(*t)))
            .unwrap();
        port.pkeys.clone_from(keys);
    }
    let mut sa = SaServer::new(SaConfig::with_sm_key(KEY));
    sa.load(snap);
    let pr = |sa: &mut SaServer, s: usize, d: usize, pkey: Option<u16>| {
        let mut t = PathRecord {
            slid: lid(s),
            dlid: lid(d),
            ..PathRecord::default()
        };
        let mut mask = PathRecord::CM_SLID | PathRecord::CM_DLID;
        if let Some(k) = pkey {
            t.pkey = k;
            mask |= PathRecord::CM_PKEY;
        }
        let (st, recs) = table(sa, mask.0, &t, 0, lid(s));
        assert!(st.is_ok());
        assert!(recs.len() <= 1);
        recs.first().map(|r| r.pkey)
    };
    // The first shared partition, a full member on one side at least.
    assert_eq!(pr(&mut sa, 0, 1, None), Some(0xFFFF));
    assert_eq!(pr(&mut sa, 0, 2, None), Some(0x8001));
    assert_eq!(pr(&mut sa, 0, 2, Some(0x8001)), Some(0x8001));
    // Two limited members of a partition share nothing.
    assert_eq!(pr(&mut sa, 1, 2, None), None);
    assert_eq!(pr(&mut sa, 1, 2, Some(0x0001)), None);
    // No common partition at all; a port never read counts as 0xFFFF.
    assert_eq!(pr(&mut sa, 3, 0, None), None);
    assert_eq!(pr(&mut sa, 3, 5, None), None);
    assert_eq!(pr(&mut sa, 5, 0, None), Some(0xFFFF));
    assert_eq!(pr(&mut sa, 5, 0, Some(0x8001)), None);
    // P_KeyTableRecord: port 0's table (two entries that count, in one block) only for
    // the SM_Key or port 0 itself.
    let want = PKeyTableRecord {
        lid: lid(0),
        ..PKeyTableRecord::default()
    };
    let mask = PKeyTableRecord::CM_LID.0;
    let (_, other) = table(&mut sa, mask, &want, 0, lid(1));
    assert!(other.is_empty(), "another port's P_Keys without the SM_Key");
    for (key, from_lid) in [(KEY, lid(1)), (0, lid(0))] {
        let (_, recs) = table(&mut sa, mask, &want, key, from_lid);
        assert_eq!(recs.len(), 1);
        let keys: Vec<u16> = recs[0].pkey_table.pkeys.iter().map(|k| k.0).collect();
        assert_eq!(&keys[..3], &[0xFFFF, 0x8001, 0]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The RMPP sender against a lossy receiver with any window: segments and ACKs are
    /// lost at random (a seeded coin per MAD), time jumps to the SA's deadline when
    /// nothing is in flight. The table arrives whole and exact, the window is never
    /// overrun, and an ABORT only ever follows `rmpp_retries` fruitless resends.
    #[test]
    fn rmpp_transfers_survive_loss(
        window in 1u32..12, seg_loss in 0u32..40, ack_loss in 0u32..40, seed in any::<u64>(),
    ) {
        let f = tree();
        let mut snap = SaSnapshot::from_routed(&f.fabric, &f.lids, f.routes.clone(), PREFIX);
        snap.sms.clear();
        let mut cfg = SaConfig::with_sm_key(KEY);
        cfg.rmpp_retries = 8;
        let mut sa = SaServer::new(cfg);
        sa.load(snap);
        let (lid, _) = f.lids.terminal_lid(2);
        let req = SaMad::request(Method::GetTable, 9, ComponentMask::NONE, &NodeRecord::default())
            .unwrap();
        let mut rng = seed | 1;
        let mut coin = |pct: u32| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % 100) < u64::from(pct)
        };
        let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
        let mut now = T0;
        let mut in_flight = sa.handle(now, &req.to_bytes(), &from(lid));
        let mut granted = 1u32; // highest segment the receiver allowed so far
        let mut aborted = false;
        for _ in 0..10_000 {
            if in_flight.is_empty() {
                match sa.poll_timeout() {
                    None => break,
                    Some(t) => {
                        now = t;
                        sa.handle_timeout(now);
                        while let Some(x) = sa.poll_transmit(now) {
                            in_flight.push(x.mad);
                        }
                        continue;
                    }
                }
            }
            let mut arrived = false;
            for m in std::mem::take(&mut in_flight) {
                if m[25] == 4 {
                    // Too many retries, or (loss making every window slow) the total
                    // timer, and that never before it ran out.
                    let total = sa.config().rmpp_total_timeout;
                    prop_assert!(
                        m[27] == 126 || (m[27] == 118 && now >= T0 + total),
                        "ABORT {} at {:?}", m[27], now
                    );
                    aborted = true;
                    continue;
                }
                let seg = u32::from_be_bytes(m[28..32].try_into().unwrap());
                prop_assert!(seg <= granted, "segment {} past the window {}", seg, granted);
                if coin(seg_loss) {
                    continue;
                }
                arrived = true;
                let _ = rx.push(&m);
            }
            if arrived && rx.last_segment() > 0 {
                granted = granted.max(rx.last_segment() + window);
                if !coin(ack_loss) {
                    in_flight = sa.handle(now, &rx.ack(window), &from(lid));
                }
            }
            now += Duration::from_micros(5);
        }
        prop_assert_eq!(sa.transfers_in_progress(), 0);
        let c = sa.counters();
        if aborted {
            prop_assert_eq!(c.rmpp_aborted, 1);
        } else {
            prop_assert!(rx.is_complete());
            prop_assert_eq!(c.rmpp_completed, 1);
            let n = rx.records::<NodeRecord>().unwrap().count();
            prop_assert_eq!(n, f.fabric.cas().count() + f.fabric.switches().count());
            // Byte for byte what a loss-free fetch gets.
            let mut again = req;
            again.transaction_id = 10;
            let again = sa.handle(now, &again.to_bytes(), &from(lid));
            let (clean, _) = receive(&mut sa, now, again, lid);
            prop_assert_eq!(clean.data(), rx.data());
        }
    }
}

#[test]
fn predefined_groups_stay_and_only_their_partition_joins() {
    let f = tree();
    let mut snap = SaSnapshot::from_routed(&f.fabric, &f.lids, f.routes.clone(), PREFIX);
    let lid = |t: usize| f.lids.terminal_lid(t).0;
    let gid = |t: usize| {
        let g = f
            .fabric
            .port(f.csr.term_node[t], f.csr.term_port[t])
            .unwrap()
            .guid
            .0;
        Gid::new(PREFIX, g)
    };
    // Terminal 0 is in partition 0x0005, terminal 1 is not.
    for (t, keys) in [(0, vec![0xFFFF, 0x8005]), (1, vec![0xFFFF])] {
        let port = snap
            .nodes
            .iter_mut()
            .filter(|n| !n.is_switch())
            .flat_map(|n| n.ports.iter_mut())
            .find(|p| p.info.is_some_and(|i| i.lid == lid(t)))
            .unwrap();
        port.pkeys = keys;
    }
    let mut sa = SaServer::new(SaConfig::with_sm_key(KEY));
    sa.load(snap);
    let mut mgid = [0u8; 16];
    mgid[..6].copy_from_slice(&[0xFF, 0x12, 0x40, 0x1B, 0x80, 0x05]);
    mgid[12..].copy_from_slice(&[0xFF; 4]);
    let bcast = McMemberRecord {
        mgid: Gid(mgid),
        qkey: 0x0B1B,
        pkey: 0x8005,
        mtu: ibsm_wire::Mtu::Mtu2048,
        rate: ibsm_wire::sa::Rate::from(3),
        scope: 2,
        mlid: 0x1234, // ignored
        ..Default::default()
    };
    assert!(sa.set_predefined_groups(&[bcast]).is_empty());
    // Listed with no member, on the first MLID.
    let (_, recs) = table(&mut sa, 0, &McMemberRecord::default(), KEY, lid(0));
    assert_eq!(recs.len(), 1);
    assert_eq!(
        (recs[0].mgid, recs[0].mlid, recs[0].qkey),
        (bcast.mgid, 0xC000, 0x0B1B)
    );
    // A join without create rights (no Q_Key, no P_Key in the mask) works for a member
    // of the partition and is refused to a port outside it.
    let mask =
        McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
    let join = |t: usize| McMemberRecord {
        mgid: bcast.mgid,
        port_gid: gid(t),
        join_state: join_state::FULL_MEMBER,
        ..Default::default()
    };
    let (st, r) = get(&mut sa, Method::Set, mask.0, &join(0), lid(0));
    assert!(st.is_ok());
    assert_eq!((r.mlid, r.pkey), (0xC000, 0x8005));
    let (st, _) = get(&mut sa, Method::Set, mask.0, &join(1), lid(1));
    assert_eq!(st.sa_status(), SaStatus::ReqInvalid);
    // New parameters for the group (a policy re-read): kept off while it has a member.
    let changed = McMemberRecord {
        qkey: 0x1111,
        ..bcast
    };
    assert!(sa.set_predefined_groups(&[changed]).is_empty());
    let (_, recs) = table(&mut sa, 0, &McMemberRecord::default(), KEY, lid(0));
    assert_eq!(recs[0].qkey, 0x0B1B);
    // The last member leaves: the group stays.
    assert!(
        get(&mut sa, Method::Delete, mask.0, &join(0), lid(0))
            .0
            .is_ok()
    );
    let (_, recs) = table(&mut sa, 0, &McMemberRecord::default(), KEY, lid(0));
    assert_eq!(recs.len(), 1);
    // Empty: the new parameters apply, on the same MLID.
    assert!(sa.set_predefined_groups(&[changed]).is_empty());
    let (_, recs) = table(&mut sa, 0, &McMemberRecord::default(), KEY, lid(0));
    assert_eq!((recs[0].qkey, recs[0].mlid), (0x1111, 0xC000));
    // No longer predefined and empty: gone.
    assert!(sa.set_predefined_groups(&[]).is_empty());
    let (_, recs) = table(&mut sa, 0, &McMemberRecord::default(), KEY, lid(0));
    assert!(recs.is_empty());
}
