//! Golden vectors: real directed-route SMPs captured from ibsim (see
//! `tests/fixtures/golden/README.md`). Each is decoded, checked against values known from
//! the fabric file and OpenSM's configuration, and re-encoded byte for byte.

use std::path::Path;

use ibsm_wire::modifier::PortMod;
use ibsm_wire::sa::{
    ComponentMask, NodeRecord, PathRecord, PortInfoRecord, Rate, SaAttributeId, SaMad, Selector,
    records,
};
use ibsm_wire::{
    CapabilityMask, CapabilityMask2, DEFAULT_SUBNET_PREFIX, DrPath, DrSmp, DrSmpView, Gid,
    LinearForwardingTable, LinkDownDefaultState, LinkSpeed, LinkSpeedMask, LinkWidth,
    LinkWidthMask, Method, MgmtClass, Mtu, NodeInfo, NodeType, PhysPortState, PortInfo, PortState,
    SmAttributeId, SmInfo, SmState, Status, SwitchInfo, VlCap, WireStruct,
};
use ibsm_wire::{LidSmp, LidSmpView};

/// Reads `tests/fixtures/golden/<name>.hex` (16 bytes a line, `#` comments).
fn load(name: &str) -> [u8; 256] {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/golden")
        .join(format!("{name}.hex"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let bytes: Vec<u8> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(str::split_whitespace)
        .map(|h| u8::from_str_radix(h, 16).unwrap_or_else(|_| panic!("{name}: bad hex {h}")))
        .collect();
    bytes
        .try_into()
        .unwrap_or_else(|b: Vec<u8>| panic!("{name}: {} bytes, want 256", b.len()))
}

/// One captured exchange: request and response, with what both must say.
struct Exchange {
    name: &'static str,
    attr: SmAttributeId,
    modifier: u32,
    path: &'static str,
}

const EXCHANGES: &[Exchange] = &[
    Exchange {
        name: "nodeinfo",
        attr: SmAttributeId::NodeInfo,
        modifier: 0,
        path: "0,1,3",
    },
    Exchange {
        name: "portinfo",
        attr: SmAttributeId::PortInfo,
        modifier: 1,
        path: "0,1,3,1",
    },
    Exchange {
        name: "portinfo_sw",
        attr: SmAttributeId::PortInfo,
        modifier: 1,
        path: "0,1,3",
    },
    Exchange {
        name: "switchinfo",
        attr: SmAttributeId::SwitchInfo,
        modifier: 0,
        path: "0,1",
    },
    Exchange {
        name: "sminfo",
        attr: SmAttributeId::SmInfo,
        modifier: 0,
        path: "0,1,3,1",
    },
    Exchange {
        name: "lft",
        attr: SmAttributeId::LinearForwardingTable,
        modifier: 0,
        path: "0,1",
    },
];

/// Decodes an attribute from an SMP's data area and checks it re-encodes to the same
/// bytes, the rest of the 64-byte area being zero.
fn attr<T: WireStruct>(smp: &DrSmp) -> T {
    let a = T::parse(&smp.data).unwrap_or_else(|e| panic!("{}: {e}", T::LABEL));
    let mut again = [0u8; 64];
    a.emit_into(&mut again)
        .expect("64 bytes hold every SMP attribute");
    assert_eq!(again, smp.data, "{} re-encodes differently", T::LABEL);
    a
}

#[test]
fn headers_paths_and_byte_exact_reencoding() {
    for x in EXCHANGES {
        let req_bytes = load(&format!("{}.req", x.name));
        let resp_bytes = load(&format!("{}.resp", x.name));
        let path = DrPath::parse_str(x.path).unwrap();
        for (bytes, is_resp) in [(req_bytes, false), (resp_bytes, true)] {
            let smp = DrSmp::parse(&bytes).unwrap();
            assert_eq!(smp.to_bytes(), bytes, "{}: re-encoding", x.name);
            assert_eq!(smp.base_version, 1);
            assert_eq!(smp.mgmt_class, MgmtClass::SubnDirected);
            assert_eq!(smp.class_version, 1);
            assert_eq!(smp.method, Method::Get, "{}", x.name);
            assert_eq!(smp.response, is_resp, "{}", x.name);
            assert_eq!(smp.direction, is_resp, "{}: D bit", x.name);
            assert_eq!(smp.status, 0, "{}", x.name);
            assert_eq!(smp.attribute_id, u16::from(x.attr), "{}", x.name);
            assert_eq!(smp.attribute_modifier, x.modifier, "{}", x.name);
            assert_eq!((smp.dr_slid, smp.dr_dlid), (0xFFFF, 0xFFFF));
            assert_eq!(usize::from(smp.hop_count), path.hops(), "{}", x.name);
            // ibsim does not model the hop pointer: the response keeps the request's 0.
            assert_eq!(smp.hop_pointer, 0, "{}", x.name);
            let view = DrSmpView::new_checked(&bytes[..]).unwrap();
            assert_eq!(DrPath::from_smp(&view).unwrap(), path, "{}", x.name);
            assert_eq!(view.attr_data(), &smp.data[..]);
            if !is_resp {
                // libibmad builds requests exactly as DrSmp::request does.
                let mut mine = DrSmp::request(
                    Method::Get,
                    u16::from(x.attr),
                    x.modifier,
                    smp.transaction_id,
                    0,
                    &path,
                );
                mine.data = smp.data;
                assert_eq!(
                    mine.to_bytes(),
                    bytes,
                    "{}: request built by DrSmp::request",
                    x.name
                );
            }
        }
        let req = DrSmp::parse(&req_bytes).unwrap();
        let resp = DrSmp::parse(&resp_bytes).unwrap();
        // The low 32 bits of the TID survive; the simulator rewrites the upper ones.
        assert_eq!(req.transaction_id as u32, resp.transaction_id as u32);
        assert_eq!(req.initial_path, resp.initial_path);
    }
}

#[test]
fn return_paths_follow_the_fabric() {
    // h2 port 1 -> sw-b port 1; sw-b port 3 -> sw-a port 3; sw-a port 1 -> h1 port 1.
    for (name, want) in [
        ("nodeinfo", &[1u8, 3][..]),
        ("portinfo", &[1, 3, 1]),
        ("switchinfo", &[1]),
    ] {
        let r = DrSmp::parse(&load(&format!("{name}.resp"))).unwrap();
        assert_eq!(&r.return_path[1..=want.len()], want, "{name}");
    }
}

#[test]
fn nodeinfo_of_switch_a() {
    let smp = DrSmp::parse(&load("nodeinfo.resp")).unwrap();
    let ni: NodeInfo = attr(&smp);
    assert_eq!(ni.base_version, 1);
    assert_eq!(ni.class_version, 1);
    assert_eq!(ni.node_type, NodeType::Switch);
    assert_eq!(ni.num_ports, 8, "fabric.net: Switch 8 \"sw-a\"");
    assert_eq!(ni.system_image_guid, 0x20_0000);
    assert_eq!(ni.node_guid, 0x20_0000);
    assert_eq!(ni.port_guid, 0x20_0000);
    assert_eq!(ni.partition_cap, 8);
    assert_eq!(ni.device_id, 0);
    assert_eq!(ni.revision, 0xa1);
    assert_eq!(ni.local_port_num, 3, "entered from sw-b on port 3");
    assert_eq!(ni.vendor_id, 0);
    // The request's data area is empty.
    let req = DrSmp::parse(&load("nodeinfo.req")).unwrap();
    assert_eq!(NodeInfo::parse(&req.data).unwrap(), NodeInfo::default());
}

/// Fields both PortInfo captures share: what ibsim reports for every linked port.
fn common_link_fields(pi: &PortInfo, name: &str) {
    assert_eq!(pi.m_key, 0, "{name}: ibsim always reads back M_Key 0");
    assert_eq!(pi.link_width_enabled, LinkWidthMask(0x02), "{name}: 4X");
    assert_eq!(
        pi.link_width_supported,
        LinkWidthMask(0x1f),
        "{name}: 1X/4X/8X/12X/2X"
    );
    assert_eq!(pi.link_width_active, LinkWidth::X4, "{name}");
    assert_eq!(
        pi.link_speed_supported,
        LinkSpeedMask(0x7),
        "{name}: SDR/DDR/QDR"
    );
    assert_eq!(
        pi.port_state,
        PortState::Active,
        "{name}: OpenSM brought it up"
    );
    assert_eq!(pi.port_phys_state, PhysPortState::LinkUp, "{name}");
    assert_eq!(
        pi.link_down_default_state,
        LinkDownDefaultState::Polling,
        "{name}"
    );
    assert_eq!(pi.link_speed_active, LinkSpeed::Sdr, "{name}");
    assert_eq!(pi.link_speed_enabled, LinkSpeedMask(0x1), "{name}");
    assert_eq!(pi.neighbor_mtu, Mtu::Mtu2048, "{name}");
    assert_eq!(pi.vl_cap, VlCap::Vl0To7, "{name}");
    assert_eq!(pi.operational_vls, VlCap::Vl0To7, "{name}");
    assert_eq!(pi.mtu_cap, Mtu::Mtu2048, "{name}");
    assert_eq!(
        (pi.vl_arbitration_high_cap, pi.vl_arbitration_low_cap),
        (8, 8),
        "{name}"
    );
    assert_eq!(pi.vl_stall_count, 7, "{name}");
    assert_eq!(pi.lmc, 0, "{name}");
}

#[test]
fn portinfo_of_the_sm_port() {
    // h1 port 1, where OpenSM runs: LID 1, its own SM LID, IsSM among the capabilities.
    let smp = DrSmp::parse(&load("portinfo.resp")).unwrap();
    let pi: PortInfo = attr(&smp);
    common_link_fields(&pi, "h1 port 1");
    assert_eq!(pi.gid_prefix, 0xfe80_0000_0000_0000);
    assert_eq!(pi.lid, 1);
    assert_eq!(pi.master_sm_lid, 1);
    assert_eq!(pi.capability_mask, CapabilityMask(0x0050_c04a));
    assert!(pi.capability_mask.contains(CapabilityMask::IS_SM));
    assert_eq!(pi.capability_mask2, CapabilityMask2(0x0030));
    assert_eq!(pi.m_key_lease_period, 4089);
    assert_eq!(pi.local_port_num, 1);
    assert_eq!(pi.guid_cap, 32);
    assert_eq!(pi.subnet_timeout, 31);
    assert_eq!(pi.hoq_life, 0);
    assert!(pi.owns_lid(1) && !pi.owns_lid(2));
}

#[test]
fn portinfo_of_a_switch_port() {
    // sw-a port 1 (to h1): switch external ports have no LID of their own.
    let smp = DrSmp::parse(&load("portinfo_sw.resp")).unwrap();
    let pi: PortInfo = attr(&smp);
    common_link_fields(&pi, "sw-a port 1");
    assert_eq!((pi.lid, pi.master_sm_lid), (0, 0));
    assert_eq!(pi.capability_mask, CapabilityMask(0));
    assert_eq!(pi.local_port_num, 3, "the SMP entered sw-a on port 3");
    assert_eq!(pi.hoq_life, 16);
}

#[test]
fn switchinfo_of_switch_b() {
    let smp = DrSmp::parse(&load("switchinfo.resp")).unwrap();
    let si: SwitchInfo = attr(&smp);
    assert_eq!(si.linear_fdb_cap, 30720, "ibsim's default -L");
    assert_eq!(si.random_fdb_cap, 0);
    assert_eq!(si.multicast_fdb_cap, 1024);
    assert_eq!(si.linear_fdb_top, 6, "six LIDs in fabric.net");
    assert_eq!(si.default_port, 0);
    assert_eq!(si.life_time_value, 18);
    assert!(!si.port_state_change);
    assert_eq!(si.partition_enforcement_cap, 64);
    assert!(!si.inbound_enforcement_cap && !si.outbound_enforcement_cap);
    assert!(si.filter_raw_inbound_cap && si.filter_raw_outbound_cap);
    assert!(!si.enhanced_port0);
    assert_eq!(si.multicast_fdb_top, 0);
}

#[test]
fn sminfo_of_opensm() {
    let smp = DrSmp::parse(&load("sminfo.resp")).unwrap();
    let sm: SmInfo = attr(&smp);
    assert_eq!(sm.guid, 0x10_0001, "h1's port GUID");
    assert_eq!(sm.sm_key, 1, "OpenSM's default sm_key");
    assert_eq!(sm.act_count, 116);
    assert_eq!(sm.priority, 0);
    assert_eq!(sm.sm_state, SmState::Master);
}

#[test]
fn lft_block_0_of_switch_b() {
    let smp = DrSmp::parse(&load("lft.resp")).unwrap();
    let lft: LinearForwardingTable = attr(&smp);
    // From fabric.net and OpenSM's LIDs (h1=1, sw-a=2, sw-b=3, h2=4, h3=5, h4=6): sw-b
    // reaches h1, sw-a through port 3, itself on 0, h2 on 1, h3 over the port-5 link,
    // h4 on 2. LID 0 and LIDs above 6 are unrouted.
    assert_eq!(&lft.ports[..7], &[0xff, 3, 3, 0, 1, 5, 2]);
    assert!(lft.ports[7..].iter().all(|&p| p == 0xff));
    assert_eq!(smp.attribute_modifier, 0, "block 0");
    let req = DrSmp::parse(&load("lft.req")).unwrap();
    assert_eq!(
        LinearForwardingTable::parse(&req.data).unwrap().ports,
        [0; 64]
    );
}

// ---------------------------------------------------------------------------------------
// SA: GetTable requests from saquery and OpenSM's answers, cut to one MAD by ibsim (no
// RMPP), so a table holds the records that fit in the first 200 data bytes.

/// Checks the SA header of a captured exchange and returns the response.
fn sa_exchange(name: &str, attr: SaAttributeId, attribute_offset: u16) -> SaMad {
    let req_bytes = load(&format!("{name}.req"));
    let resp_bytes = load(&format!("{name}.resp"));
    for (bytes, is_resp) in [(req_bytes, false), (resp_bytes, true)] {
        let sa = SaMad::parse(&bytes).unwrap();
        assert_eq!(sa.to_bytes(), bytes, "{name}: re-encoding");
        assert_eq!(sa.mgmt_class, MgmtClass::SubnAdm);
        assert_eq!(sa.class_version, 2);
        assert_eq!(sa.method, Method::GetTable, "{name}");
        assert_eq!(sa.response, is_resp, "{name}");
        assert_eq!(sa.status, Status::OK, "{name}");
        assert_eq!(sa.attribute_id, attr, "{name}");
        assert_eq!(sa.component_mask, ComponentMask(0), "{name}: whole table");
        assert_eq!(sa.sm_key, 0, "{name}");
        let want_offset = if is_resp { attribute_offset } else { 0 };
        assert_eq!(sa.attribute_offset, want_offset, "{name}");
    }
    let req = SaMad::parse(&req_bytes).unwrap();
    let resp = SaMad::parse(&resp_bytes).unwrap();
    assert_eq!(req.transaction_id as u32, resp.transaction_id as u32);
    assert!(req.data.iter().all(|&b| b == 0), "{name}: empty template");
    resp
}

#[test]
fn sa_node_records() {
    let resp = sa_exchange("noderecord", SaAttributeId::NodeRecord, 14);
    let nr: NodeRecord = resp.record(0).unwrap();
    // h1, the first node OpenSM found (its own).
    assert_eq!(nr.lid, 1);
    assert_eq!(nr.node_info.node_type, NodeType::Ca);
    assert_eq!(nr.node_info.num_ports, 1);
    assert_eq!(nr.node_info.system_image_guid, 0x10_0000);
    assert_eq!(nr.node_info.node_guid, 0x10_0000);
    assert_eq!(nr.node_info.port_guid, 0x10_0001);
    assert_eq!(nr.node_info.partition_cap, 0x40);
    assert_eq!(nr.node_info.revision, 0xa1);
    assert_eq!(nr.node_info.local_port_num, 1);
    assert_eq!(nr.node_description.text(), Some("h1"));
    let mut again = [0u8; 112];
    nr.emit_into(&mut again).unwrap();
    assert_eq!(&again[..NodeRecord::SIZE], &resp.data[..NodeRecord::SIZE]);
    // 200 bytes hold one whole 112-byte record; the next is cut.
    let n = records::<NodeRecord>(&resp.data, resp.attribute_offset)
        .unwrap()
        .count();
    assert_eq!(n, 1);
}

#[test]
fn sa_path_records() {
    let resp = sa_exchange("pathrecord", SaAttributeId::PathRecord, 8);
    let prs: Vec<PathRecord> = records::<PathRecord>(&resp.data, resp.attribute_offset)
        .unwrap()
        .collect();
    assert_eq!(prs.len(), 3);
    let gid = |guid| Gid::new(DEFAULT_SUBNET_PREFIX, guid);
    // sw-a to itself, then h1 (LID 1) to sw-a (LID 2). Record 2 was cut by ibsim.
    for (pr, (sgid, slid, life)) in prs
        .iter()
        .zip([(0x20_0000u64, 2u16, 0u8), (0x10_0001, 1, 18)])
    {
        assert_eq!(pr.dgid, gid(0x20_0000));
        assert_eq!(pr.sgid, gid(sgid));
        assert_eq!((pr.dlid, pr.slid), (2, slid));
        assert!(pr.reversible);
        assert_eq!(pr.pkey, 0xffff);
        assert_eq!(pr.sl, 0);
        assert_eq!((pr.mtu_selector, pr.mtu), (Selector::Exactly, Mtu::Mtu1024));
        assert_eq!((pr.rate_selector, pr.rate), (Selector::Exactly, Rate::G10));
        assert_eq!(pr.packet_life_time_selector, Selector::Exactly);
        assert_eq!(pr.packet_life_time, life);
        let mut again = [0u8; 64];
        pr.emit_into(&mut again).unwrap();
        assert_eq!(PathRecord::parse(&again).unwrap(), *pr);
    }
    assert_eq!(&prs[0].to_bytes()[..], &resp.data[..64]);
    assert_eq!(&prs[1].to_bytes()[..], &resp.data[64..128]);
}

#[test]
fn sa_port_info_records() {
    let resp = sa_exchange("portinforecord", SaAttributeId::PortInfoRecord, 9);
    let pirs: Vec<PortInfoRecord> = records::<PortInfoRecord>(&resp.data, resp.attribute_offset)
        .unwrap()
        .collect();
    assert_eq!(pirs.len(), 2);
    // h1 port 1: the same PortInfo as the SMP capture (an SM port, LID 1).
    let h1 = &pirs[0];
    assert_eq!((h1.endport_lid, h1.port_num), (1, 1));
    assert_eq!(h1.port_info.lid, 1);
    assert_eq!(h1.port_info.master_sm_lid, 1);
    assert!(h1.port_info.capability_mask.contains(CapabilityMask::IS_SM));
    assert_eq!(h1.port_info.port_state, PortState::Active);
    let smp = DrSmp::parse(&load("portinfo.resp")).unwrap();
    let via_smp = PortInfo::parse(&smp.data).unwrap();
    assert_eq!(h1.port_info, via_smp, "SA and SMP views of h1 port 1 agree");
    // sw-a port 0: the switch's LID 2, no IsSM.
    let sw = &pirs[1];
    assert_eq!((sw.endport_lid, sw.port_num), (2, 0));
    assert_eq!(sw.port_info.lid, 2);
    assert!(!sw.port_info.capability_mask.contains(CapabilityMask::IS_SM));
    for (k, pir) in pirs.iter().enumerate() {
        let at = k * 72;
        assert_eq!(
            &pir.to_bytes()[..],
            &resp.data[at..at + PortInfoRecord::SIZE]
        );
    }
}

// ---------------------------------------------------------------------------------------
// A LID-routed SMP and a SubnSet.

#[test]
fn lid_routed_nodeinfo_of_switch_b() {
    for (name, is_resp) in [("nodeinfo_lid.req", false), ("nodeinfo_lid.resp", true)] {
        let bytes = load(name);
        let smp = LidSmp::parse(&bytes).unwrap();
        // Bytes 128..256 of a LID-routed SMP are reserved (no field): they encode as
        // zero, and the capture holds zeros there except the simulator's garbage tail.
        let enc = smp.to_bytes();
        assert_eq!(enc[..232], bytes[..232], "{name}: re-encoding");
        assert!(enc[128..].iter().all(|&b| b == 0));
        let mut over = bytes;
        smp.emit_into(&mut over).unwrap();
        assert_eq!(
            over, bytes,
            "{name}: encoding over the capture changes nothing"
        );
        assert_eq!(smp.mgmt_class, MgmtClass::SubnLid);
        assert_eq!((smp.method, smp.response), (Method::Get, is_resp));
        assert_eq!(smp.status, Status::OK);
        assert_eq!(smp.attribute_id, u16::from(SmAttributeId::NodeInfo));
        assert_eq!(smp.m_key, 0);
        let v = LidSmpView::new_checked(&bytes[..]).unwrap();
        assert_eq!(v.attr_data(), &smp.data[..]);
    }
    let smp = LidSmp::parse(&load("nodeinfo_lid.resp")).unwrap();
    let ni = NodeInfo::parse(&smp.data).unwrap();
    // LID 3 is sw-b; a switch answers for its management port 0.
    assert_eq!(ni.node_type, NodeType::Switch);
    assert_eq!(ni.node_guid, 0x20_0001);
    assert_eq!(ni.port_guid, 0x20_0001);
    assert_eq!(ni.num_ports, 8);
    assert_eq!(ni.local_port_num, 0);
    let mut again = [0u8; 64];
    ni.emit_into(&mut again).unwrap();
    assert_eq!(again, smp.data);
    // The request is what LidSmp::request builds.
    let req = LidSmp::parse(&load("nodeinfo_lid.req")).unwrap();
    let mine = LidSmp::request(
        Method::Get,
        SmAttributeId::NodeInfo.into(),
        0,
        req.transaction_id,
        0,
    );
    assert_eq!(mine, req);
}

#[test]
fn subnset_portinfo_speed() {
    // ibportstate -D 0,1 2 speed 1: read sw-b port 2, then Set LinkSpeedEnabled = SDR.
    let req = DrSmp::parse(&load("portinfo_set.req")).unwrap();
    let resp = DrSmp::parse(&load("portinfo_set.resp")).unwrap();
    assert_eq!(req.to_bytes(), load("portinfo_set.req"));
    assert_eq!(resp.to_bytes(), load("portinfo_set.resp"));
    assert_eq!((req.method, req.response), (Method::Set, false));
    // A Set is answered by GetResp.
    assert_eq!(
        (resp.method, resp.response, resp.direction),
        (Method::Get, true, true)
    );
    for smp in [&req, &resp] {
        assert_eq!(smp.attribute_id, u16::from(SmAttributeId::PortInfo));
        let m = PortMod::decode(smp.attribute_modifier).unwrap();
        assert_eq!(m.port, 2);
        assert!(m.sm_supports_extended_speeds, "ibportstate sets bit 31");
    }
    let set: PortInfo = attr(&req);
    let got: PortInfo = attr(&resp);
    assert_eq!(set.link_speed_enabled, LinkSpeedMask(0x1));
    assert_eq!(
        set.port_state,
        PortState::NoChange,
        "a Set leaves the state alone"
    );
    assert_eq!(set.port_phys_state, PhysPortState::NoChange);
    assert_eq!(set.link_width_enabled, LinkWidthMask(0), "0 = no change");
    // ibportstate fills LID and SM LID with a marker on switch ports; ibsim keeps them.
    assert_eq!((set.lid, set.master_sm_lid), (0x1234, 0x1234));
    assert_eq!((got.lid, got.master_sm_lid), (0x1234, 0x1234));
    assert_eq!(got.link_speed_enabled, LinkSpeedMask(0x1));
    assert_eq!(got.port_state, PortState::Active);
    assert_eq!(got.port_phys_state, PhysPortState::LinkUp);
    assert_eq!(got.link_width_enabled, LinkWidthMask(0x02));
}
