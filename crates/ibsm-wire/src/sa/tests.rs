//! Fixed vectors, generic round trips and RMPP properties of the SA module.

// Records are built field by field, as callers fill in query templates.
#![allow(clippy::field_reassign_with_default)]

extern crate std;

use core::time::Duration;
use std::string::String;
use std::vec::Vec;

use proptest::prelude::*;

use super::rmpp::{
    Progress, Reassembler, RecordTable, RmppError, RmppLayout, Segmenter, Sender, SenderState,
    SliceBuffer, VecBuffer,
};
use super::*;
use crate::attr::{NodeDescription, NodeType};
use crate::field::{Field, FieldValue, Reflect, WireStruct, find_field, get_uint};
use crate::gid::Gid;
use crate::mad::{
    ClassPortInfo, GsMad, Method, MgmtClass, RmppFlags, RmppHeader, RmppStatus, RmppType, Status,
    Vendor2Mad,
};
use crate::time::Instant;

// ---------------------------------------------------------------------------------------
// Generic helpers over WireStruct / Reflect

/// Every leaf field of `r` as `(dotted name, position relative to the outer structure,
/// holds bytes)`.
fn leaves(r: &dyn Reflect, prefix: &str, base: u16, out: &mut Vec<(String, Field, bool)>) {
    for d in r.fields() {
        let name = std::format!("{prefix}{}", d.name);
        let pos = d.field.shifted(base);
        match r.get(d.name) {
            Some(FieldValue::Struct(s)) => {
                leaves(s, &std::format!("{name}."), pos.byte, out);
            }
            Some(FieldValue::Bytes(_)) => out.push((name, pos, true)),
            _ => out.push((name, pos, false)),
        }
    }
}

fn leaves_of<R: WireStruct + Reflect>() -> Vec<(String, Field, bool)> {
    let mut v = Vec::new();
    leaves(&R::default(), "", 0, &mut v);
    v
}

/// Sets every leaf field of a default `R` through `set_field` to values drawn from
/// `seed`, checks each reads back, then that `parse(emit(x)) == x`.
fn check_roundtrip<R: WireStruct + Reflect>(seed: &[u8]) -> Result<(), TestCaseError> {
    let mut bytes = seed.iter().copied().cycle();
    let mut x = R::default();
    for (name, f, is_bytes) in leaves_of::<R>() {
        if is_bytes {
            let v: Vec<u8> = (0..f.len / 8).map(|_| bytes.next().unwrap_or(0)).collect();
            x.set_field(&name, FieldValue::Bytes(&v)).unwrap();
            prop_assert_eq!(x.get_field(&name), Some(FieldValue::Bytes(&v)), "{}", name);
        } else {
            let raw = (0..8).fold(0u64, |a, _| (a << 8) | u64::from(bytes.next().unwrap_or(0)));
            let v = raw & f.mask();
            x.set_field(&name, FieldValue::Uint(v)).unwrap();
            prop_assert_eq!(x.get_field(&name), Some(FieldValue::Uint(v)), "{}", name);
        }
    }
    let mut buf = [0u8; 256];
    x.emit_into(&mut buf).unwrap();
    prop_assert_eq!(R::parse(&buf).unwrap(), x);
    Ok(())
}

/// No two leaf fields share a bit, and all lie inside the structure.
fn assert_no_overlap<R: WireStruct + Reflect>() {
    let mut v: Vec<(usize, usize, String)> = leaves_of::<R>()
        .into_iter()
        .map(|(n, f, _)| (f.abs_bit(), f.abs_bit() + usize::from(f.len), n))
        .collect();
    v.sort();
    for w in v.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "{}: {} overlaps {}",
            R::LABEL,
            w[0].2,
            w[1].2
        );
    }
    assert!(v.last().is_none_or(|l| l.1 <= R::SIZE * 8), "{}", R::LABEL);
}

/// The component table fits the field table. Whole-field components take their position
/// from it when the crate compiles; the checks here are about the rest: bits ascend
/// without gaps from 0, reserved components touch no field, partial ones lie inside
/// theirs, and setting a whole field (through reflection, so nested offsets are those of
/// the encoding) sets exactly the component's bits.
fn check_components<R: SaRecord + Reflect>() {
    let leaves = leaves_of::<R>();
    for (i, c) in R::COMPONENTS.iter().enumerate() {
        assert_eq!(usize::from(c.bit), i, "{}: component order", R::LABEL);
        assert!(c.field.end_byte() <= R::SIZE, "{} {}", R::LABEL, c.name);
        let (lo, hi) = (
            c.field.abs_bit(),
            c.field.abs_bit() + usize::from(c.field.len),
        );
        if c.name == "reserved" {
            for (n, f, _) in &leaves {
                let (a, b) = (f.abs_bit(), f.abs_bit() + usize::from(f.len));
                assert!(
                    b <= lo || a >= hi,
                    "{}: reserved bit {} overlaps {n}",
                    R::LABEL,
                    c.bit
                );
            }
        } else if let Some((field, _)) = c.name.split_once('[') {
            let f = find_field(R::FIELDS, field)
                .unwrap_or_else(|| panic!("{}: no field {field}", R::LABEL));
            assert!(
                f.abs_bit() <= lo && hi <= f.abs_bit() + usize::from(f.len),
                "{} {}",
                R::LABEL,
                c.name
            );
        } else {
            // Set the field to all ones in a zero record: exactly the component's bits
            // must come out set.
            let mut x = R::default();
            let v = match x.get_field(c.name) {
                // A whole nested attribute: its reserved bits stay zero whatever it is
                // set to, so there is no exact bit pattern to compare.
                Some(FieldValue::Struct(_)) => continue,
                Some(FieldValue::Bytes(b)) => FieldValue::Bytes(&[0xFF; 64][..b.len()]),
                Some(FieldValue::Uint(_)) => FieldValue::Uint(c.field.mask()),
                None => panic!("{}: no field {}", R::LABEL, c.name),
            };
            x.set_field(c.name, v).unwrap();
            let mut buf = [0u8; 256];
            x.emit_into(&mut buf).unwrap();
            for bit in 0..R::SIZE * 8 {
                let set = buf[bit / 8] & (0x80 >> (bit % 8)) != 0;
                assert_eq!(
                    set,
                    bit >= lo && bit < hi,
                    "{} {} bit {bit}",
                    R::LABEL,
                    c.name
                );
            }
        }
    }
}

macro_rules! per_record {
    ($($t:ty),* $(,)?) => {
        #[test]
        fn components_agree_with_fields() {
            $( check_components::<$t>(); )*
        }

        #[test]
        fn fields_do_not_overlap() {
            $( assert_no_overlap::<$t>(); )*
        }

        #[test]
        fn attribute_offsets() {
            $( assert_eq!(usize::from(<$t as SaRecord>::ATTRIBUTE_OFFSET) * 8, <$t>::SIZE.div_ceil(8) * 8); )*
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            #[test]
            fn every_record_roundtrips(seed in proptest::collection::vec(any::<u8>(), 1..400)) {
                $( check_roundtrip::<$t>(&seed)?; )*
            }

            #[test]
            fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..260), ao: u16) {
                $(
                    let parsed = <$t>::parse(&bytes);
                    prop_assert_eq!(parsed.is_ok(), bytes.len() >= <$t>::SIZE);
                    if let Ok(r) = parsed {
                        // Lossless for every bit the table names; re-encoding is stable.
                        let again = <$t>::parse(&r.to_bytes()).unwrap();
                        prop_assert_eq!(again, r);
                    }
                    if let Ok(it) = records::<$t>(&bytes, ao) {
                        prop_assert!(it.count() <= bytes.len() / <$t>::SIZE.max(1));
                    }
                )*
            }
        }
    };
}

per_record!(
    PathRecord,
    MultiPathRecord,
    NodeRecord,
    PortInfoRecord,
    LinkRecord,
    SwitchInfoRecord,
    SmInfoRecord,
    GuidInfoRecord,
    PKeyTableRecord,
    SlToVlMappingTableRecord,
    VlArbitrationTableRecord,
    LinearForwardingTableRecord,
    RandomForwardingTableRecord,
    MulticastForwardingTableRecord,
    McMemberRecord,
    InformInfo,
    InformInfoRecord,
    ServiceRecord,
);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn headers_roundtrip(seed in proptest::collection::vec(any::<u8>(), 1..400)) {
        check_roundtrip::<SaMad>(&seed)?;
        check_roundtrip::<ClassPortInfo>(&seed)?;
        check_roundtrip::<Vendor2Mad>(&seed)?;
        check_roundtrip::<GsMad>(&seed)?;
        check_roundtrip::<RmppHeader>(&seed)?;
    }

    #[test]
    fn sa_mad_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300), k in 0usize..40) {
        if let Ok(m) = SaMad::parse(&bytes) {
            prop_assert_eq!(SaMad::parse(&m.to_bytes()).unwrap(), m);
            let _ = m.record::<NodeRecord>(k);
            let _ = m.record::<LinkRecord>(k);
            prop_assert!(m.payload().len() <= SA_DATA_SIZE);
            let v = SaMadView::new_checked(&bytes[..]).unwrap();
            let _ = v.record_bytes(k);
            let _ = v.status().sa_status();
        } else {
            prop_assert!(bytes.len() < 256);
        }
        prop_assert_eq!(ClassPortInfo::parse(&bytes).is_ok(), bytes.len() >= 72);
        prop_assert_eq!(Vendor2Mad::parse(&bytes).is_ok(), bytes.len() >= 256);
    }
}

#[test]
fn no_overlap_in_headers() {
    assert_no_overlap::<SaMad>();
    assert_no_overlap::<ClassPortInfo>();
    assert_no_overlap::<Vendor2Mad>();
    assert_no_overlap::<GsMad>();
}

// ---------------------------------------------------------------------------------------
// Fixed vectors

/// A GetTableResp(PathRecord) single-segment RMPP answer as OpenSM would send it.
fn path_resp_bytes() -> [u8; 256] {
    let mut b = [0u8; 256];
    b[..24].copy_from_slice(&[
        0x01, 0x03, 0x02, 0x92, 0x00, 0x00, 0x00,
        0x00, // base, class, version, method, status
        0x00, 0x00, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, // TID
        0x00, 0x35, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // PathRecord, attr mod 0
    ]);
    b[24..36].copy_from_slice(&[
        0x01, 0x01, 0xE7, 0x00, // v1, DATA, RRespTime 0x1C, flags A|F|L
        0x00, 0x00, 0x00, 0x01, // segment 1
        0x00, 0x00, 0x00, 0x54, // PayloadLength 84 = 64 + 20
    ]);
    b[36..44].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
    b[44..46].copy_from_slice(&8u16.to_be_bytes());
    b[48..56].copy_from_slice(&0x180Cu64.to_be_bytes());
    b[56..120].copy_from_slice(&path_record_bytes());
    b
}

fn path_record_bytes() -> [u8; 64] {
    let mut p = [0u8; 64];
    p[0..8].copy_from_slice(&0x1000_0000_0000_0001u64.to_be_bytes());
    p[8..24].copy_from_slice(&Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0002).0);
    p[24..40].copy_from_slice(&Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001).0);
    p[40..42].copy_from_slice(&0x0002u16.to_be_bytes()); // DLID
    p[42..44].copy_from_slice(&0x0001u16.to_be_bytes()); // SLID
    p[44..48].copy_from_slice(&[0x80 | 0x01, 0x23, 0x45, 0x40]); // raw, flow 0x12345, hop 0x40
    p[48] = 0x10; // TClass
    p[49] = 0x81; // reversible, NumbPath 1
    p[50..52].copy_from_slice(&0xFFFFu16.to_be_bytes());
    p[52] = 0x12; // QoSClass 0x123 ...
    p[53] = 0x35; // ... SL 5
    p[54] = 0x80 | 0x04; // MTU exactly 2048
    p[55] = 0x80 | 0x07; // rate exactly 40G
    p[56] = 0x80 | 0x12; // lifetime exactly 18
    p[57] = 0x03; // preference
    p
}

#[test]
fn sa_header_vector() {
    let bytes = path_resp_bytes();
    let m = SaMad::parse(&bytes).unwrap();
    assert_eq!(m.base_version, 1);
    assert_eq!(m.mgmt_class, MgmtClass::SubnAdm);
    assert_eq!(m.class_version, SA_CLASS_VERSION);
    assert!(m.response);
    assert_eq!(m.method, Method::GetTable);
    assert_eq!(m.status, Status::OK);
    assert_eq!(m.transaction_id, 0x01_2345_6789);
    assert_eq!(m.attribute_id, SaAttributeId::PathRecord);
    assert_eq!(m.rmpp.version, 1);
    assert_eq!(m.rmpp.rmpp_type, RmppType::Data);
    assert_eq!(m.rmpp.resp_time, 0x1C);
    assert_eq!(
        m.rmpp.flags,
        RmppFlags::ACTIVE | RmppFlags::FIRST | RmppFlags::LAST
    );
    assert_eq!(m.rmpp.status, RmppStatus::Normal);
    assert_eq!(m.segment_number(), 1);
    assert_eq!(m.payload_length(), 84);
    assert_eq!(m.new_window_last(), 84);
    assert_eq!(m.sm_key, 0x1122_3344_5566_7788);
    assert_eq!(m.attribute_offset, PathRecord::ATTRIBUTE_OFFSET);
    assert_eq!(
        m.component_mask,
        PathRecord::CM_DGID
            | PathRecord::CM_SGID
            | PathRecord::CM_REVERSIBLE
            | PathRecord::CM_NUMB_PATH
    );
    assert_eq!(m.payload().len(), 64);
    assert_eq!(m.to_bytes(), bytes);
    // The view reads the same bits without copying.
    let v = SaMadView::new_checked(&bytes[..]).unwrap();
    assert_eq!(v.rmpp().flags, m.rmpp.flags);
    assert_eq!(v.record_bytes(0).unwrap(), &path_record_bytes()[..]);
    assert_eq!(v.record_bytes(3), None);
    // Records of the answer.
    let prs: Vec<PathRecord> = records(m.payload(), m.attribute_offset).unwrap().collect();
    assert_eq!(prs.len(), 1);
    assert_eq!(prs[0], m.record::<PathRecord>(0).unwrap());
    // The libibmad fields of the header are where `tests/fixtures/libibmad_fields.tsv`
    // says.
    for (name, byte, bit, len) in [("resp_time", 2, 0, 5), ("flags", 2, 5, 3)] {
        let d = RmppHeader::FIELDS.iter().find(|d| d.name == name).unwrap();
        assert_eq!(d.field, Field::new(byte, bit, len), "{name}");
    }
    for (name, byte, bit, len) in [
        ("header", 0, 0, 192),
        ("rmpp", 24, 0, 96),
        ("sm_key", 36, 0, 64),
        ("attribute_offset", 44, 0, 16),
        ("component_mask", 48, 0, 64),
        ("data", 56, 0, 1600),
    ] {
        let d = SaMad::FIELDS.iter().find(|d| d.name == name).unwrap();
        assert_eq!(d.field, Field::new(byte, bit, len), "{name}");
    }
}

#[test]
fn path_record_vector() {
    let bytes = path_record_bytes();
    let p = PathRecord::parse(&bytes).unwrap();
    assert_eq!(p.service_id, 0x1000_0000_0000_0001);
    assert_eq!(p.dgid.interface_id(), 0x0002_c903_0000_0002);
    assert_eq!(p.sgid.interface_id(), 0x0002_c903_0000_0001);
    assert_eq!((p.dlid, p.slid), (2, 1));
    assert!(p.raw_traffic);
    assert_eq!(p.flow_label, 0x1_2345);
    assert_eq!(p.hop_limit, 0x40);
    assert_eq!(p.tclass, 0x10);
    assert!(p.reversible);
    assert_eq!(p.numb_path, 1);
    assert_eq!(p.pkey, 0xFFFF);
    assert_eq!(p.qos_class, 0x123);
    assert_eq!(p.sl, 5);
    assert_eq!((p.mtu_selector, p.mtu), (Selector::Exactly, Mtu::Mtu2048));
    assert_eq!((p.rate_selector, p.rate), (Selector::Exactly, Rate::G40));
    assert_eq!(
        (p.packet_life_time_selector, p.packet_life_time),
        (Selector::Exactly, 18)
    );
    assert_eq!(p.preference, 3);
    assert_eq!(p.to_bytes(), bytes);
    // Reserved bits are dropped on re-encode (sent as 0).
    let mut dirty = bytes;
    dirty[44] |= 0x70;
    dirty[60] = 0xEE;
    assert_eq!(PathRecord::parse(&dirty).unwrap().to_bytes(), bytes);
}

fn node_record_bytes() -> [u8; 108] {
    let mut b = [0u8; 108];
    b[0..2].copy_from_slice(&0x0011u16.to_be_bytes());
    b[4..8].copy_from_slice(&[1, 1, 2, 36]); // base, class, switch, 36 ports
    b[8..16].copy_from_slice(&0x0008_f105_0020_0000u64.to_be_bytes());
    b[16..24].copy_from_slice(&0x0008_f105_0020_0001u64.to_be_bytes());
    b[24..32].copy_from_slice(&0x0008_f105_0020_0002u64.to_be_bytes());
    b[32..34].copy_from_slice(&8u16.to_be_bytes());
    b[34..36].copy_from_slice(&0xC738u16.to_be_bytes());
    b[36..40].copy_from_slice(&0x0000_00A1u32.to_be_bytes());
    b[40] = 5;
    b[41..44].copy_from_slice(&[0x00, 0x08, 0xF1]);
    b[44..44 + 14].copy_from_slice(b"ibsim switch 1");
    b
}

#[test]
fn node_record_vector() {
    let bytes = node_record_bytes();
    let r = NodeRecord::parse(&bytes).unwrap();
    assert_eq!(r.lid, 0x11);
    let ni = &r.node_info;
    assert_eq!((ni.base_version, ni.class_version), (1, 1));
    assert_eq!(ni.node_type, NodeType::Switch);
    assert_eq!(ni.num_ports, 36);
    assert_eq!(ni.system_image_guid, 0x0008_f105_0020_0000);
    assert_eq!(ni.node_guid, 0x0008_f105_0020_0001);
    assert_eq!(ni.port_guid, 0x0008_f105_0020_0002);
    assert_eq!(ni.partition_cap, 8);
    assert_eq!(ni.device_id, 0xC738);
    assert_eq!(ni.revision, 0xA1);
    assert_eq!(ni.local_port_num, 5);
    assert_eq!(ni.vendor_id, 0x0008F1);
    assert_eq!(r.node_description.text(), Some("ibsim switch 1"));
    assert_eq!(r.to_bytes(), bytes);
    // libibmad's IB_SA_NR_* positions (from `tests/fixtures/libibmad_fields.tsv`) are the
    // nested fields.
    for (dotted, ib, byte, len) in [
        ("node_info.base_version", "IB_SA_NR_BASEVER_F", 4, 8),
        ("node_info.node_type", "IB_SA_NR_TYPE_F", 6, 8),
        (
            "node_info.system_image_guid",
            "IB_SA_NR_SYSTEM_GUID_F",
            8,
            64,
        ),
        ("node_info.node_guid", "IB_SA_NR_GUID_F", 16, 64),
        ("node_info.revision", "IB_SA_NR_REVISION_F", 36, 32),
        ("node_info.vendor_id", "IB_SA_NR_VENDORID_F", 41, 24),
        (
            "node_description.node_string",
            "IB_SA_NR_NODEDESC_F",
            44,
            512,
        ),
    ] {
        assert!(NodeRecord::LIBIBMAD_ALIASES.contains(&(dotted, ib)));
        let (_, f, _) = leaves_of::<NodeRecord>()
            .into_iter()
            .find(|(n, _, _)| n == dotted)
            .unwrap();
        assert_eq!(f, Field::new(byte, 0, len), "{dotted}");
    }
    for (dotted, _) in NodeRecord::LIBIBMAD_ALIASES {
        assert!(r.get_field(dotted).is_some(), "{dotted}");
    }
}

#[test]
fn component_mask_usage() {
    // A client's query: all paths from SGID to DGID, one path, reversible.
    let mut t = PathRecord::default();
    t.sgid = Gid::new(0xfe80_0000_0000_0000, 1);
    t.dgid = Gid::new(0xfe80_0000_0000_0000, 2);
    t.reversible = true;
    t.numb_path = 1;
    let mask =
        ComponentMask::of::<PathRecord>(&["sgid", "dgid", "reversible", "numb_path"]).unwrap();
    assert_eq!(
        mask,
        PathRecord::CM_SGID
            | PathRecord::CM_DGID
            | PathRecord::CM_REVERSIBLE
            | PathRecord::CM_NUMB_PATH
    );
    assert_eq!(mask.0, 0x180C);
    assert_eq!(ComponentMask::of::<PathRecord>(&["nope"]), None);
    let req = SaMad::request(Method::GetTable, 9, mask, &t).unwrap();
    let b = req.to_bytes();
    assert_eq!(&b[48..56], &0x180Cu64.to_be_bytes());
    assert_eq!(b[2], 2);
    assert_eq!(&b[16..18], &[0x00, 0x35]);
    assert_eq!(req.attribute_offset, 0);

    // The SA side: a candidate matches when the selected components are equal.
    let mut cand = t;
    cand.dlid = 7;
    cand.slid = 3;
    cand.numb_path = 1;
    assert!(cand.matches(&t, mask));
    cand.sgid = Gid::new(0xfe80_0000_0000_0000, 5);
    assert!(!cand.matches(&t, mask));
    assert!(cand.matches(&t, mask & !PathRecord::CM_SGID));
    // A template built once gives the same answers, on owned records and on bytes.
    let tpl = Template::new(&t, mask);
    assert!(!tpl.matches(&cand));
    assert!(tpl.matches(&t));
    assert!(tpl.matches_bytes(&t.to_bytes()));
    assert!(!tpl.matches_bytes(&t.to_bytes()[..63]));
    let from_req = Template::<PathRecord>::from_bytes(&req.data, mask).unwrap();
    assert!(from_req.matches(&t) && !from_req.matches(&cand));
    assert!(Template::<PathRecord>::from_bytes(&req.data[..10], mask).is_err());
    assert!(Template::new(&t, ComponentMask::NONE).matches(&cand));
    // ServiceID halves are separate components.
    let mut s = PathRecord::default();
    s.service_id = 0x1111_2222_3333_4444;
    let mut u = s;
    u.service_id = 0x1111_2222_0000_0000;
    assert!(u.matches(&s, PathRecord::CM_SERVICE_ID_MSB));
    assert!(!u.matches(&s, PathRecord::CM_SERVICE_ID));

    // Nested components: PortInfoRecord by LID, NodeRecord by node type.
    let mut n = NodeRecord::default();
    n.node_info.node_type = NodeType::Switch;
    let mut sw = n;
    sw.lid = 4;
    sw.node_description = NodeDescription::from_text("sw");
    assert!(sw.matches(&n, NodeRecord::CM_NODE_TYPE));
    assert!(!sw.matches(&n, NodeRecord::CM_NODE_TYPE | NodeRecord::CM_LID));
    assert_eq!(NodeRecord::all_components().0, (1 << 15) - 1);
    // ServiceData pieces.
    let mut a = ServiceRecord::default();
    assert!(a.set_data16(3, 0xBEEF));
    assert!(!a.set_data16(8, 1));
    assert_eq!(a.data16(3), Some(0xBEEF));
    let b2 = ServiceRecord::default();
    assert!(a.matches(
        &b2,
        ServiceRecord::cm_data16(2) | ServiceRecord::cm_data8(0)
    ));
    assert!(!a.matches(&b2, ServiceRecord::cm_data16(3)));
    assert_eq!(ServiceRecord::cm_data16(3), ServiceRecord::CM_DATA16_3);
}

#[test]
fn service_data_arrays_sit_where_the_spec_puts_them() {
    // 16 x 8-bit at bytes 0..16, 8 x 16-bit at 16..32, 4 x 32-bit at 32..48,
    // 2 x 64-bit at 48..64, each big-endian; one index past each array is refused.
    let mut r = ServiceRecord::default();
    assert!(r.set_data8(15, 0xA1));
    assert!(r.set_data16(7, 0xB2C3));
    assert!(r.set_data32(3, 0xD4E5_F607));
    assert!(r.set_data64(1, 0x0102_0304_0506_0708));
    assert!(!r.set_data8(16, 1) && !r.set_data16(8, 1));
    assert!(!r.set_data32(4, 1) && !r.set_data64(2, 1));
    let d = r.service_data;
    assert_eq!(d[15], 0xA1);
    assert_eq!(d[30..32], [0xB2, 0xC3]);
    assert_eq!(d[44..48], [0xD4, 0xE5, 0xF6, 0x07]);
    assert_eq!(d[56..64], [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(d.iter().filter(|&&b| b != 0).count(), 15);
    assert_eq!(
        (r.data8(15), r.data16(7), r.data32(3), r.data64(1)),
        (
            Some(0xA1),
            Some(0xB2C3),
            Some(0xD4E5_F607),
            Some(0x0102_0304_0506_0708)
        )
    );
    assert_eq!(
        (r.data8(16), r.data16(8), r.data32(4), r.data64(2)),
        (None, None, None, None)
    );
}

#[test]
fn response_header_and_status() {
    let req = SaMad::request(
        Method::Set,
        5,
        McMemberRecord::CM_MGID,
        &McMemberRecord::default(),
    )
    .unwrap();
    let mut resp = req.response_header::<McMemberRecord>();
    assert!(resp.response);
    assert_eq!(resp.method, Method::Get); // GetResp answers a Set
    assert_eq!(resp.attribute_offset, 7);
    assert_eq!(resp.transaction_id, 5);
    resp.status = SaStatus::NoRecords.into();
    assert_eq!(resp.to_bytes()[4..6], [0x03, 0x00]);
    assert_eq!(
        SaMad::parse(&resp.to_bytes()).unwrap().status.sa_status(),
        SaStatus::NoRecords
    );
    resp.set_record(
        0,
        &McMemberRecord {
            mlid: 0xC001,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(resp.data[36..38], [0xC0, 0x01]);
    assert!(resp.set_record(4, &McMemberRecord::default()).is_err());
    assert!(resp.record::<McMemberRecord>(4).is_err());
}

#[test]
fn multipath_gid_list() {
    let mut mp = MultiPathRecord::default();
    mp.set_service_id(0xAB00_0000_0000_00CD);
    assert_eq!((mp.service_id_msb, mp.service_id_lsb), (0xAB, 0xCD));
    assert_eq!(mp.service_id(), 0xAB00_0000_0000_00CD);
    let s = [Gid::new(1, 2)];
    let d = [Gid::new(3, 4), Gid::new(5, 6)];
    let mp = mp.with_gids(&s, &d).unwrap();
    assert_eq!((mp.sgid_count, mp.dgid_count), (1, 2));
    assert_eq!(mp.wire_size(), 24 + 48);
    let buf = mp.to_bytes();
    // SDGID[0] is libibmad's IB_SA_MP_GID0_F at byte 24; the others follow.
    assert_eq!(&buf[24..40], &s[0].0);
    assert_eq!(&buf[40..56], &d[0].0);
    assert_eq!(&buf[56..72], &d[1].0);
    assert!(buf[72..].iter().all(|&b| b == 0));
    let back = MultiPathRecord::parse(&buf).unwrap();
    assert_eq!(back.gids().collect::<Vec<_>>(), [s[0], d[0], d[1]]);
    assert_eq!(back.gid(10), Some(Gid::default()));
    assert_eq!(back.gid(11), None);
    let mut full = back;
    assert!(full.set_gid(10, Gid::new(9, 9)).is_ok());
    assert_eq!(full.to_bytes()[184..200], Gid::new(9, 9).0);
    assert!(full.set_gid(11, Gid::new(9, 9)).is_err());
    assert!(
        mp.with_gids(&[Gid::default(); 6], &[Gid::default(); 6])
            .is_err()
    );
    // A GetMulti request carries it whole.
    let req = SaMad::request(Method::GetMulti, 3, MultiPathRecord::CM_SGID_COUNT, &mp).unwrap();
    assert_eq!(req.record::<MultiPathRecord>(0).unwrap(), mp);
}

#[test]
fn table_records_nest_attributes() {
    let mut p = PKeyTableRecord::default();
    p.pkey_table.pkeys.0[2..4].copy_from_slice(&0x7FFFu16.to_be_bytes());
    let b = p.to_bytes();
    assert_eq!(b[10..12], [0x7F, 0xFF]);
    assert_eq!(
        PKeyTableRecord::parse(&b)
            .unwrap()
            .pkey_table
            .pkeys
            .get(1)
            .map(|k| k.0),
        Some(0x7FFF)
    );
    let mut s = SlToVlMappingTableRecord::default();
    s.sl_to_vl_table.map.0[1] = 0x3F;
    assert_eq!(s.to_bytes()[9], 0x3F);
    assert_eq!(
        (s.sl_to_vl_table.map.vl(2), s.sl_to_vl_table.map.vl(3)),
        (Some(3), Some(15))
    );
    let mut m = MulticastForwardingTableRecord::default();
    m.block_num = 0x1FF;
    m.position = 0xF;
    assert_eq!(m.to_bytes()[2..4], [0xF1, 0xFF]);
    let mut l = LinearForwardingTableRecord::default();
    l.lft.ports[63] = 9;
    assert_eq!(l.to_bytes()[71], 9);
    let mut g = GuidInfoRecord::default();
    g.guid_info.guid7 = 0x0102_0304_0506_0708;
    assert_eq!(g.to_bytes()[64..72], [1, 2, 3, 4, 5, 6, 7, 8]);
    for (dotted, _) in GuidInfoRecord::LIBIBMAD_ALIASES {
        assert!(g.get_field(dotted).is_some(), "{dotted}");
    }
    let mut sm = SmInfoRecord::default();
    sm.sm_info.priority = 0xE;
    sm.sm_info.sm_state = crate::attr::SmState::Master;
    assert_eq!(sm.to_bytes()[24], 0xE3);
    let mut pi = PortInfoRecord::default();
    pi.port_info.lid = 0x1234;
    pi.port_info.lmc = 2;
    assert_eq!(pi.to_bytes()[20..22], [0x12, 0x34]);
    assert_eq!(pi.to_bytes()[38] & 7, 2);
    let mut sr = ServiceRecord::default();
    sr.set_name("ibsm.test");
    assert_eq!(sr.name(), Some("ibsm.test"));
    assert_eq!(
        get_uint(&sr.to_bytes(), Field::new(48, 0, 8)),
        u64::from(b'i')
    );
    let req = SaMad::request(
        Method::Get,
        1,
        ComponentMask::NONE,
        &ClassPortInfo::default(),
    )
    .unwrap();
    assert_eq!(req.attribute_id, SaAttributeId::ClassPortInfo);
}

// ---------------------------------------------------------------------------------------
// RMPP

fn link(i: u16) -> LinkRecord {
    LinkRecord {
        from_lid: i,
        from_port: (i % 36) as u8,
        to_port: (i % 7) as u8,
        to_lid: i ^ 0x5555,
    }
}

fn table_header<R: SaRecord>() -> SaMad {
    let req = SaMad::request(Method::GetTable, 0xABCD, ComponentMask::NONE, &R::default()).unwrap();
    req.response_header::<R>()
}

#[test]
fn segment_payload_lengths() {
    // 40 LinkRecords = 320 bytes: 2 segments, pad 80.
    let links: Vec<LinkRecord> = (0..40).map(link).collect();
    let seg = Segmenter::sa(&table_header::<LinkRecord>(), RecordTable::new(&links)).unwrap();
    assert_eq!(seg.segment_count(), 2);
    let s1 = SaMad::parse(&seg.segment(1).unwrap()).unwrap();
    let s2 = SaMad::parse(&seg.segment(2).unwrap()).unwrap();
    assert_eq!(s1.rmpp.flags, RmppFlags::ACTIVE | RmppFlags::FIRST);
    assert_eq!(s2.rmpp.flags, RmppFlags::ACTIVE | RmppFlags::LAST);
    assert_eq!((s1.segment_number(), s2.segment_number()), (1, 2));
    assert_eq!(s1.payload_length(), 320 + 20 * 2);
    assert_eq!(s2.payload_length(), 220 - 80);
    assert_eq!(s1.rmpp.rmpp_type, RmppType::Data);
    assert_eq!(s1.rmpp.version, 1);
    assert_eq!(s1.attribute_offset, 1);
    assert_eq!(s1.record::<LinkRecord>(24).unwrap(), links[24]);
    assert_eq!(s2.record::<LinkRecord>(0).unwrap(), links[25]);
    assert!(seg.segment(0).is_err());
    assert!(seg.segment(3).is_err());
    // A middle segment carries PayloadLength 0.
    let many: Vec<LinkRecord> = (0..100).map(link).collect();
    let seg = Segmenter::sa(&table_header::<LinkRecord>(), RecordTable::new(&many)).unwrap();
    assert_eq!(seg.segment_count(), 4);
    let mid = SaMad::parse(&seg.segment(2).unwrap()).unwrap();
    assert_eq!(
        (mid.rmpp.flags, mid.payload_length()),
        (RmppFlags::ACTIVE, 0)
    );
    // An empty table is one segment with PayloadLength 20.
    let seg = Segmenter::sa(
        &table_header::<LinkRecord>(),
        RecordTable::<LinkRecord>::new(&[]),
    )
    .unwrap();
    assert_eq!(seg.segment_count(), 1);
    let only = SaMad::parse(&seg.segment(1).unwrap()).unwrap();
    assert_eq!(only.payload_length(), 20);
    assert!(only.payload().is_empty());
    // Records straddle segment boundaries: NodeRecords are 112 bytes apart.
    let nodes: Vec<NodeRecord> = (0..3u16)
        .map(|i| NodeRecord {
            lid: i + 1,
            ..Default::default()
        })
        .collect();
    let seg = Segmenter::sa(&table_header::<NodeRecord>(), RecordTable::new(&nodes)).unwrap();
    assert_eq!(seg.segment_count(), 2);
    let s2 = seg.segment(2).unwrap();
    // Record 1 spans bytes 112..224: its last 24 bytes open segment 2, then record 2.
    assert_eq!(&s2[56 + 24..56 + 26], &[0x00, 0x03]);
}

#[test]
fn reassembly_errors_leave_state_unchanged() {
    let links: Vec<LinkRecord> = (0..80).map(link).collect(); // 640 bytes: 4 segments
    let seg = Segmenter::sa(&table_header::<LinkRecord>(), RecordTable::new(&links)).unwrap();
    let s: Vec<[u8; 256]> = seg.iter().collect();
    assert_eq!(s.len(), 4);
    let mut store = [0u8; 800];
    let mut rx = Reassembler::sa(SliceBuffer::new(&mut store));
    assert!(matches!(
        rx.records::<LinkRecord>(),
        Err(RmppError::Incomplete)
    ));
    assert_eq!(
        rx.push(&s[1]),
        Err(RmppError::OutOfOrder {
            expected: 1,
            got: 2
        })
    );
    assert_eq!(rx.push(&s[0]), Ok(Progress::NeedMore { last: 1 }));
    assert_eq!(rx.expected_segments(), Some(4));
    assert_eq!(
        rx.push(&s[0]),
        Err(RmppError::Duplicate {
            segment: 1,
            expected: 2
        })
    );
    assert_eq!(
        rx.push(&s[2]),
        Err(RmppError::OutOfOrder {
            expected: 2,
            got: 3
        })
    );
    // Another transaction's segment 2.
    let mut foreign = s[1];
    foreign[15] ^= 1;
    assert_eq!(
        rx.push(&foreign),
        Err(RmppError::Foreign {
            segment: 2,
            field: "TransactionID"
        })
    );
    // Segment 2 claiming to be First, or Last.
    let mut bad = s[1];
    bad[26] |= 0x02;
    assert_eq!(
        rx.push(&bad),
        Err(RmppError::FirstFlag {
            segment: 2,
            first: true
        })
    );
    let mut bad = s[1];
    bad[26] |= 0x04;
    bad[32..36].copy_from_slice(&100u32.to_be_bytes());
    assert!(matches!(
        rx.push(&bad),
        Err(RmppError::LastFlag {
            segment: 2,
            last: true,
            expected: 4
        })
    ));
    // An ACK is not data; a truncated MAD is a wire error.
    let ack = rx.ack(8);
    assert_eq!(rx.push(&ack), Err(RmppError::NotData(RmppType::Ack)));
    assert!(matches!(rx.push(&s[1][..100]), Err(RmppError::Wire(_))));
    assert_eq!(rx.last_segment(), 1);
    assert_eq!(rx.data().len(), 200);
    // The ACK: R bit flipped, ACK type, window.
    let a = SaMad::parse(&ack).unwrap();
    assert_eq!(a.rmpp.rmpp_type, RmppType::Ack);
    assert_eq!((a.segment_number(), a.new_window_last()), (1, 9));
    assert!(!a.response);
    // The rest arrives and completes.
    assert_eq!(rx.push(&s[1]), Ok(Progress::NeedMore { last: 2 }));
    assert_eq!(rx.push(&s[2]), Ok(Progress::NeedMore { last: 3 }));
    assert_eq!(rx.push(&s[3]), Ok(Progress::Complete));
    assert_eq!(
        rx.push(&s[3]),
        Err(RmppError::Duplicate {
            segment: 4,
            expected: 5
        })
    );
    let mut beyond = s[3];
    beyond[28..32].copy_from_slice(&5u32.to_be_bytes());
    assert!(matches!(
        rx.push(&beyond),
        Err(RmppError::TooManySegments { segment: 5, .. })
    ));
    let back: Vec<LinkRecord> = rx.records().unwrap().collect();
    assert_eq!(back, links);
    assert_eq!(rx.header()[44..46], [0, 1]);
    assert_eq!(
        RmppError::TooManySegments {
            segment: 5,
            last: 4
        }
        .abort_status(),
        Some(RmppStatus::SegmentNumberTooBig)
    );
    assert_eq!(
        RmppError::Duplicate {
            segment: 1,
            expected: 2
        }
        .abort_status(),
        None
    );
}

#[test]
fn reassembly_overflow_and_bad_lengths() {
    let links: Vec<LinkRecord> = (0..80).map(link).collect();
    let seg = Segmenter::sa(&table_header::<LinkRecord>(), RecordTable::new(&links)).unwrap();
    let s: Vec<[u8; 256]> = seg.iter().collect();
    let mut small = [0u8; 450];
    let mut rx = Reassembler::sa(SliceBuffer::new(&mut small));
    rx.push(&s[0]).unwrap();
    rx.push(&s[1]).unwrap();
    assert_eq!(
        rx.push(&s[2]),
        Err(RmppError::Overflow {
            need: 600,
            capacity: 450
        })
    );
    let err = rx.push(&s[2]).unwrap_err();
    assert_eq!(err.abort_status(), Some(RmppStatus::ResourcesExhausted));
    // A last PayloadLength that disagrees with the first segment's.
    let mut store = [0u8; 1000];
    let mut rx = Reassembler::sa(SliceBuffer::new(&mut store));
    for m in &s[..3] {
        rx.push(m).unwrap();
    }
    let mut last = s[3];
    last[32..36].copy_from_slice(&200u32.to_be_bytes());
    assert_eq!(
        rx.push(&last),
        Err(RmppError::PayloadLength {
            segment: 4,
            value: 200
        })
    );
    last[32..36].copy_from_slice(&300u32.to_be_bytes());
    assert_eq!(
        rx.push(&last),
        Err(RmppError::PayloadLength {
            segment: 4,
            value: 300
        })
    );
    rx.push(&s[3]).unwrap();
    assert!(rx.is_complete());
    // A first segment without a PayloadLength: the Last flag alone ends the message.
    let mut store = [0u8; 1000];
    let mut rx = Reassembler::sa(SliceBuffer::new(&mut store));
    let mut first = s[0];
    first[32..36].copy_from_slice(&0u32.to_be_bytes());
    rx.push(&first).unwrap();
    assert_eq!(rx.expected_segments(), None);
    for m in &s[1..] {
        rx.push(m).unwrap();
    }
    assert_eq!(rx.records::<LinkRecord>().unwrap().count(), 80);
    rx.reset();
    assert_eq!(
        (rx.last_segment(), rx.data().len(), rx.is_complete()),
        (0, 0, false)
    );
}

#[test]
fn vendor2_layout_roundtrip() {
    let mut h = Vendor2Mad::default();
    h.mgmt_class = MgmtClass::from(0x30);
    h.oui = 0x001405;
    h.transaction_id = 77;
    let payload: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    let seg = Segmenter::new(RmppLayout::VENDOR2, &h.to_bytes(), &payload[..]).unwrap();
    assert_eq!(seg.segment_count(), 5); // 216 bytes each
    let first = Vendor2Mad::parse(&seg.segment(1).unwrap()).unwrap();
    assert_eq!(first.oui, 0x001405);
    assert_eq!(first.rmpp.data2 as usize, 1000 + 4 * 5);
    let last = Vendor2Mad::parse(&seg.segment(5).unwrap()).unwrap();
    assert_eq!(last.rmpp.data2 as usize, 220 - (5 * 216 - 1000));
    let mut rx = Reassembler::new(RmppLayout::VENDOR2, VecBuffer::with_limit(4096));
    for m in seg.iter() {
        rx.push(&m).unwrap();
    }
    assert!(rx.is_complete());
    assert_eq!(rx.data(), &payload[..]);
    assert!(Segmenter::new(RmppLayout::VENDOR2, &[0u8; 30], &payload[..]).is_err());
}

fn rmpp_roundtrip<R: SaRecord>(recs: &[R]) -> Result<(), TestCaseError> {
    let hdr = table_header::<R>();
    let seg = Segmenter::sa(&hdr, RecordTable::new(recs)).unwrap();
    let d = recs.len() * usize::from(R::ATTRIBUTE_OFFSET) * 8;
    let s = seg.segment_count() as usize;
    prop_assert_eq!(s, d.div_ceil(200).max(1));
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
    let mut last_paylen = 0;
    for (i, m) in seg.iter().enumerate() {
        let v = SaMad::parse(&m).unwrap();
        prop_assert_eq!(v.segment_number() as usize, i + 1);
        prop_assert_eq!(v.rmpp.flags.first(), i == 0);
        prop_assert_eq!(v.rmpp.flags.last(), i + 1 == s);
        prop_assert!(v.rmpp.flags.active());
        let want = if i == 0 { d + 20 * s } else { 0 };
        if i + 1 < s {
            prop_assert_eq!(v.payload_length() as usize, want);
        } else {
            last_paylen = v.payload_length() as usize;
        }
        // Retransmitted segments are reported as duplicates and ignored.
        if i > 0 {
            let prev = seg.segment(i as u32).unwrap();
            let dup = rx.push(&prev);
            prop_assert!(matches!(dup, Err(RmppError::Duplicate { .. })), "{:?}", dup);
        }
        let p = rx.push(&m).unwrap();
        prop_assert_eq!(p == Progress::Complete, i + 1 == s);
    }
    // umad's view: 56 + 200 * S - pad bytes, pad = 220 - last PayloadLength.
    prop_assert_eq!(200 * s - (220 - last_paylen), d);
    prop_assert_eq!(rx.data().len(), d);
    let back: Vec<R> = rx.records::<R>().unwrap().collect();
    prop_assert_eq!(&back[..], recs);
    Ok(())
}

fn arb<R: WireStruct + Reflect>(seed: &[u8], salt: u8) -> R {
    let mut bytes = seed.iter().map(|b| b ^ salt).cycle();
    let mut buf = [0u8; 256];
    for b in &mut buf {
        *b = bytes.next().unwrap_or(salt);
    }
    R::parse(&buf).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn rmpp_segment_reassemble(seed in proptest::collection::vec(any::<u8>(), 1..64), n in 0usize..60) {
        let links: Vec<LinkRecord> = (0..n).map(|i| arb(&seed, i as u8)).collect();
        rmpp_roundtrip(&links)?;
        let nodes: Vec<NodeRecord> = (0..n).map(|i| arb(&seed, i as u8)).collect();
        rmpp_roundtrip(&nodes)?;
        let paths: Vec<PathRecord> = (0..n).map(|i| arb(&seed, i as u8)).collect();
        rmpp_roundtrip(&paths)?;
        let sm: Vec<SmInfoRecord> = (0..n).map(|i| arb(&seed, i as u8)).collect();
        rmpp_roundtrip(&sm)?;
    }

    #[test]
    fn reassembler_survives_garbage(mads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..12)) {
        let mut store = [0u8; 2048];
        let mut rx = Reassembler::sa(SliceBuffer::new(&mut store));
        for m in &mads {
            let before = (rx.last_segment(), rx.data().len());
            match rx.push(m) {
                Ok(_) => prop_assert_eq!(rx.last_segment(), before.0 + 1),
                Err(_) => prop_assert_eq!((rx.last_segment(), rx.data().len()), before),
            }
            prop_assert!(rx.data().len() <= 2048);
        }
        let _ = rx.records::<LinkRecord>().map(Iterator::count);
    }
}

// ---------------------------------------------------------------------------------------
// RMPP sender against the reassembler over a lossy channel, in virtual time.

/// A tiny deterministic PRNG for loss patterns.
struct Lossy(u64);

impl Lossy {
    fn drop(&mut self, percent: u64) -> bool {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % 100 < percent
    }
}

const TIMEOUT: Duration = Duration::from_millis(1);
const T0: Instant = Instant::ZERO;
const NS: Duration = Duration::from_nanos(1);

/// The instant `d` after the origin.
fn at(d: Duration) -> Instant {
    T0 + d
}

/// Runs a whole transfer; returns the sender's final state, the receiver's data if it
/// completed, and the virtual time taken.
fn transfer(
    links: &[LinkRecord],
    window: u32,
    loss: u64,
    seed: u64,
    max_retries: u32,
) -> (SenderState, Option<Vec<u8>>, Duration) {
    let seg = Segmenter::sa(&table_header::<LinkRecord>(), RecordTable::new(links)).unwrap();
    let mut tx = Sender::new(seg, TIMEOUT, max_retries);
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
    let mut net = Lossy(seed | 1);
    let mut now = T0;
    for _ in 0..100_000 {
        let mut acks = Vec::new();
        while let Some(m) = tx.poll_transmit(now) {
            if net.drop(loss) {
                continue;
            }
            match rx.push(&m) {
                Ok(_) | Err(RmppError::Duplicate { .. } | RmppError::OutOfOrder { .. }) => {
                    acks.push(rx.ack(window));
                }
                Err(RmppError::NotData(RmppType::Abort)) => {}
                Err(e) => panic!("receiver: {e:?}"),
            }
        }
        for a in acks {
            if !net.drop(loss) {
                tx.handle(&a, now).unwrap();
            }
        }
        match tx.state() {
            SenderState::Sending => {}
            st => {
                let data = rx.is_complete().then(|| rx.data().to_vec());
                return (st, data, now - T0);
            }
        }
        if let Some(t) = tx.poll_timeout() {
            now = now.max(t);
            tx.handle_timeout(now);
        }
    }
    panic!("transfer did not end");
}

#[test]
fn sender_lossless_and_windows() {
    let links: Vec<LinkRecord> = (0..300).map(link).collect(); // 2400 bytes, 12 segments
    let want = {
        let mut v = Vec::new();
        for l in &links {
            let mut b = [0u8; 8];
            l.emit_into(&mut b).unwrap();
            v.extend_from_slice(&b);
        }
        v
    };
    for window in [1, 4, 64] {
        let (st, data, t) = transfer(&links, window, 0, 1, 3);
        assert_eq!(st, SenderState::Complete);
        assert_eq!(data.as_deref(), Some(&want[..]));
        assert_eq!(t, Duration::ZERO, "no time-out without loss");
    }
}

#[test]
fn sender_gives_up_and_aborts() {
    let links: Vec<LinkRecord> = (0..100).map(link).collect();
    let seg = Segmenter::sa(&table_header::<LinkRecord>(), RecordTable::new(&links)).unwrap();
    let mut tx = Sender::new(seg, TIMEOUT, 2);
    let first = tx.poll_transmit(T0).unwrap();
    assert_eq!(SaMad::parse(&first).unwrap().segment_number(), 1);
    assert!(
        tx.poll_transmit(T0).is_none(),
        "window of one before the first ACK"
    );
    assert_eq!(tx.poll_timeout(), Some(at(TIMEOUT)));
    tx.handle_timeout(at(TIMEOUT - NS));
    assert!(tx.poll_transmit(at(TIMEOUT - NS)).is_none());
    for k in 1..=2 {
        tx.handle_timeout(at(k * TIMEOUT));
        let again = tx.poll_transmit(at(k * TIMEOUT)).unwrap();
        assert_eq!(again, first);
    }
    tx.handle_timeout(at(3 * TIMEOUT));
    assert_eq!(tx.state(), SenderState::Aborted(RmppStatus::TooManyRetries));
    let abort = SaMad::parse(&tx.poll_transmit(at(3 * TIMEOUT)).unwrap()).unwrap();
    assert_eq!(
        (abort.rmpp.rmpp_type, abort.rmpp.status),
        (RmppType::Abort, RmppStatus::TooManyRetries)
    );
    assert!(tx.poll_transmit(at(3 * TIMEOUT)).is_none());
    assert_eq!(tx.poll_timeout(), None);
}

#[test]
fn sender_total_timer_cuts_off_a_slow_receiver() {
    let links: Vec<LinkRecord> = (0..300).map(link).collect(); // 12 segments
    let seg = Segmenter::sa(&table_header::<LinkRecord>(), RecordTable::new(&links)).unwrap();
    // The whole transfer may take 5 ACK time-outs.
    let mut tx = Sender::new(seg, TIMEOUT, 2).with_total_timeout(5 * TIMEOUT);
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
    let start = Instant::from_nanos(7);
    let mut now = start;
    let mut sent = 0;
    // The receiver ACKs one segment at a time, each just before the ACK time-out.
    while tx.state() == SenderState::Sending {
        while let Some(m) = tx.poll_transmit(now) {
            if SaMad::parse(&m).unwrap().rmpp.rmpp_type == RmppType::Abort {
                assert_eq!(m[27], 118);
                continue;
            }
            sent += 1;
            rx.push(&m).unwrap();
        }
        let due = tx.poll_timeout().unwrap();
        if due - now >= TIMEOUT {
            // Only the ACK timer is running: ACK just before it fires.
            now += TIMEOUT - NS;
            tx.handle(&rx.ack(1), now).unwrap();
        } else {
            now = due;
            tx.handle_timeout(now);
        }
        assert!(now <= start + 5 * TIMEOUT, "never past the total timer");
    }
    assert_eq!(
        tx.state(),
        SenderState::Aborted(RmppStatus::TotalTimeTooLong)
    );
    assert_eq!(now, start + 5 * TIMEOUT, "timed from the first segment");
    assert!((5..12).contains(&sent), "{sent} segments, none resent");
    let abort = SaMad::parse(&tx.poll_transmit(now).unwrap()).unwrap();
    assert_eq!(
        (abort.rmpp.rmpp_type, abort.rmpp.status),
        (RmppType::Abort, RmppStatus::TotalTimeTooLong)
    );
    assert_eq!(tx.poll_timeout(), None);
    // Without a total timer the same receiver gets everything.
    let (st, data, _) = transfer(&links, 1, 0, 1, 2);
    assert_eq!(st, SenderState::Complete);
    assert!(data.is_some());
}

#[test]
fn sender_handles_bad_acks_stop_and_abort() {
    let links: Vec<LinkRecord> = (0..100).map(link).collect();
    let seg = Segmenter::sa(&table_header::<LinkRecord>(), RecordTable::new(&links)).unwrap();
    let mk = |tx: &Sender<_>, kind, seg_num: u32, nwl: u32, status| {
        let mut m = tx.control(kind, status);
        m[28..32].copy_from_slice(&seg_num.to_be_bytes());
        m[32..36].copy_from_slice(&nwl.to_be_bytes());
        m
    };
    // ACK of a segment never sent.
    let mut tx = Sender::new(seg.clone(), TIMEOUT, 3);
    tx.poll_transmit(T0).unwrap();
    let st = tx
        .handle(&mk(&tx, RmppType::Ack, 2, 4, RmppStatus::Normal), T0)
        .unwrap();
    assert_eq!(st, SenderState::Aborted(RmppStatus::SegmentNumberTooBig));
    assert_eq!(
        SaMad::parse(&tx.poll_transmit(T0).unwrap())
            .unwrap()
            .rmpp
            .rmpp_type,
        RmppType::Abort
    );
    // A window ending before the acknowledged segment.
    let mut tx = Sender::new(seg.clone(), TIMEOUT, 3);
    tx.poll_transmit(T0).unwrap();
    let st = tx
        .handle(&mk(&tx, RmppType::Ack, 1, 0, RmppStatus::Normal), T0)
        .unwrap();
    assert_eq!(st, SenderState::Aborted(RmppStatus::NewWindowLastTooSmall));
    // The window opens: segments 2..=4 go out; a stale ACK changes nothing.
    let mut tx = Sender::new(seg.clone(), TIMEOUT, 3);
    tx.poll_transmit(T0).unwrap();
    tx.handle(&mk(&tx, RmppType::Ack, 1, 4, RmppStatus::Normal), T0)
        .unwrap();
    let sent: Vec<u32> = core::iter::from_fn(|| tx.poll_transmit(T0))
        .map(|m| SaMad::parse(&m).unwrap().segment_number())
        .collect();
    assert_eq!(sent, [2, 3, 4]);
    assert_eq!(
        tx.handle(&mk(&tx, RmppType::Ack, 0, 1, RmppStatus::Normal), T0)
            .unwrap(),
        SenderState::Sending
    );
    assert_eq!(tx.acked(), 1);
    // Another transaction's ACK is rejected; a DATA MAD is not an answer.
    let mut other = mk(&tx, RmppType::Ack, 2, 4, RmppStatus::Normal);
    other[15] ^= 1;
    assert!(matches!(
        tx.handle(&other, T0),
        Err(RmppError::Foreign {
            field: "TransactionID",
            ..
        })
    ));
    let data = seg.segment(1).unwrap();
    assert_eq!(
        tx.handle(&data, T0),
        Err(RmppError::NotData(RmppType::Data))
    );
    // STOP and ABORT from the receiver end the transfer.
    let st = tx
        .handle(
            &mk(&tx, RmppType::Stop, 0, 0, RmppStatus::ResourcesExhausted),
            T0,
        )
        .unwrap();
    assert_eq!(st, SenderState::Stopped(RmppStatus::ResourcesExhausted));
    assert!(tx.poll_transmit(T0).is_none());
    let mut tx = Sender::new(seg, TIMEOUT, 3);
    let st = tx
        .handle(&mk(&tx, RmppType::Abort, 0, 0, RmppStatus::Unspecified), T0)
        .unwrap();
    assert_eq!(st, SenderState::Aborted(RmppStatus::Unspecified));
    assert!(
        tx.poll_transmit(T0).is_none(),
        "no ABORT back for the receiver's ABORT"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// Whatever is lost (up to 30 % of MADs each way), the transfer completes with the
    /// exact data, or, with a dead link, gives up with TooManyRetries.
    #[test]
    fn sender_over_lossy_link(n in 0u16..400, window in 1u32..16, loss in 0u64..30, seed: u64) {
        let links: Vec<LinkRecord> = (0..n).map(link).collect();
        let (st, data, _) = transfer(&links, window, loss, seed, 60);
        prop_assert_eq!(st, SenderState::Complete);
        let want: Vec<u8> = links.iter().flat_map(|l| {
            let mut b = [0u8; 8];
            l.emit_into(&mut b).unwrap();
            b
        }).collect();
        prop_assert_eq!(data, Some(want));
        let (st, data, t) = transfer(&links, window, 100, seed, 4);
        prop_assert_eq!(st, SenderState::Aborted(RmppStatus::TooManyRetries));
        prop_assert_eq!(data, None);
        prop_assert_eq!(t, 5 * TIMEOUT);
    }
}

/// What the sans-IO pieces cost in memory: none of them allocates, the reassembler's
/// storage is the caller's (exactly the message's data length).
#[test]
fn state_sizes() {
    use core::mem::size_of;
    let seg = size_of::<Segmenter<RecordTable<'_, NodeRecord>>>();
    let tx = size_of::<Sender<RecordTable<'_, NodeRecord>>>();
    let rx = size_of::<Reassembler<SliceBuffer<'_>>>();
    let tpl = size_of::<Template<PortInfoRecord>>();
    std::println!("Segmenter {seg} B, Sender {tx} B, Reassembler {rx} B, Template {tpl} B");
    assert!(seg <= 128 && tx <= 192 && rx <= 160 && tpl <= 1024);
}
