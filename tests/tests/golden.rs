//! Golden vectors: real directed-route SMPs captured from ibsim (see
//! `tests/fixtures/golden/README.md`). Each is decoded, checked against values known from
//! the fabric file and OpenSM's configuration, and re-encoded byte for byte.

use std::path::Path;

use ibsm_wire::{
    DrPath, DrSmp, DrSmpView, Method, MgmtClass, NodeInfo, NodeType, SmAttributeId, WireStruct,
};

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
