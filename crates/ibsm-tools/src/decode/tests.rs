use super::*;
use ibsm_wire::{DrPath, DrSmp, Method, NodeDescription, NodeInfo};

#[test]
fn hex() {
    assert_eq!(
        parse_hex("01 81\n0a:FF").unwrap(),
        vec![1, 0x81, 0x0a, 0xff]
    );
    assert_eq!(parse_hex("0x0102").unwrap(), vec![1, 2]);
    assert_eq!(parse_hex("0g"), Err(HexError::NotHex { position: 1 }));
    assert_eq!(parse_hex("012"), Err(HexError::OddDigits { digits: 3 }));
}

fn nodeinfo_resp() -> Vec<u8> {
    let path = DrPath::parse_str("0,1,3").unwrap();
    let mut smp = DrSmp::request(Method::Get, 0x11, 0, 0x1234, 0, &path);
    smp.response = true;
    smp.direction = true;
    smp.return_path[1] = 1;
    smp.return_path[2] = 3;
    let ni = NodeInfo {
        base_version: 1,
        class_version: 1,
        node_type: NodeType::Switch,
        num_ports: 8,
        node_guid: 0x0002_c903_0000_1234,
        vendor_id: 0x02c9,
        ..NodeInfo::default()
    };
    ni.emit_into(&mut smp.data).unwrap();
    smp.to_bytes().to_vec()
}

fn find<'a>(d: &'a Decoded, section: &str, field: &str) -> &'a Value {
    let s = d
        .sections
        .iter()
        .find(|s| s.title == section)
        .unwrap_or_else(|| panic!("no section {section}"));
    &s.items
        .iter()
        .find(|i| i.name == field)
        .unwrap_or_else(|| panic!("no field {field}"))
        .value
}

#[test]
fn dr_smp_nodeinfo_text() {
    let d = decode_mad(&nodeinfo_resp()).unwrap();
    let titles: Vec<&str> = d.sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles, ["MAD header", "Directed-route SMP", "NodeInfo"]);
    let t = d.to_text();
    assert!(t.contains("mgmt_class:"), "{t}");
    assert!(t.contains("0x81 (SubnDirected)"), "{t}");
    assert!(t.contains("status:.....") && t.contains("0x8000\n"), "{t}");
    assert!(t.contains("node_type:"), "{t}");
    assert!(t.contains("2 (Switch)"), "{t}");
    assert!(t.contains("0x0002c90300001234"), "{t}");
    assert!(t.contains("initial_path:"), "{t}");
    assert!(t.contains("0,1,3\n"), "{t}");
    assert!(t.contains("attribute_id:"), "{t}");
    assert!(t.contains("(NodeInfo)"), "{t}");
    assert_eq!(
        find(&d, "Directed-route SMP", "hop_count"),
        &Value::Uint {
            value: 2,
            bits: 8,
            name: None
        }
    );
}

#[test]
fn json_is_one_object_with_exact_numbers() {
    let d = decode_mad(&nodeinfo_resp()).unwrap();
    let text = d.to_json();
    assert!(!text.contains('\n'));
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sections = j["sections"].as_array().unwrap();
    assert_eq!(j["notes"], serde_json::json!([]));
    let titles: Vec<&str> = sections
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["MAD header", "Directed-route SMP", "NodeInfo"]);
    // Fields keep wire order in the text (the parsed map sorts its keys).
    let at: Vec<usize> = d.sections[0]
        .items
        .iter()
        .map(|i| text.find(&format!("\"{}\":", i.name)).unwrap())
        .collect();
    assert!(at.is_sorted(), "{text}");
    let ni = &sections[2]["fields"];
    assert_eq!(ni["node_guid"], "0x0002c90300001234");
    assert_eq!(ni["num_ports"], 8);
    assert_eq!(
        ni["node_type"],
        serde_json::json!({"value": 2, "name": "Switch"})
    );
    assert_eq!(
        sections[0]["fields"]["transaction_id"],
        "0x0000000000001234"
    );
    assert_eq!(sections[1]["fields"]["return_path"], "0,1,3");
}

#[test]
fn node_description_is_text() {
    let path = DrPath::local();
    let mut smp = DrSmp::request(Method::Get, 0x10, 0, 1, 0, &path);
    NodeDescription::from_text("sw-a \"core\"")
        .emit_into(&mut smp.data)
        .unwrap();
    let d = decode_mad(&smp.to_bytes()).unwrap();
    assert!(d.to_text().contains("\"sw-a \"core\"\""), "{}", d.to_text());
    let j: serde_json::Value = serde_json::from_str(&d.to_json()).unwrap();
    assert_eq!(j["sections"][2]["fields"]["node_string"], "sw-a \"core\"");
}

#[test]
fn bad_input_is_one_line_errors() {
    let e = decode_mad(&[1, 0x81, 1]).unwrap_err();
    assert!(e.0.contains("truncated") && e.0.contains('3'), "{e}");
    let mut short = nodeinfo_resp();
    short.truncate(100);
    let e = decode_mad(&short).unwrap_err();
    assert!(e.0.contains("256") && e.0.contains("100"), "{e}");
    assert!(decode_mad(&[0u8; 300]).unwrap_err().0.contains("300"));
    assert!(!e.0.contains('\n'));
}

#[test]
fn unknown_class_and_attribute_are_raw_not_errors() {
    let mut b = nodeinfo_resp();
    b[16] = 0x7f;
    b[17] = 0x7f;
    let d = decode_mad(&b).unwrap();
    assert!(d.notes[0].contains("0x7f7f"));
    assert_eq!(d.sections.last().unwrap().title, "Attribute data");
    b[1] = 0x22;
    let d = decode_mad(&b).unwrap();
    assert!(d.notes[0].contains("0x22"));
    assert!(d.to_text().contains("# Data"));
    // Vendor range 2: its header with the OUI, then the data.
    b[1] = 0x42;
    b[37..40].copy_from_slice(&[0x00, 0x02, 0xc9]);
    let t = decode_mad(&b).unwrap().to_text();
    assert!(
        t.contains("# Vendor range-2 header") && t.contains("oui:"),
        "{t}"
    );
    assert!(t.contains("0x0002c9"), "{t}");
    // PerfMgt ClassPortInfo.
    b[1] = 0x04;
    b[16..18].copy_from_slice(&[0x00, 0x01]);
    let d = decode_mad(&b).unwrap();
    assert_eq!(d.sections.last().unwrap().title, "ClassPortInfo");
}

#[test]
fn golden_portinfo_names_code_points() {
    let text = include_str!("../../../../tests/fixtures/golden/portinfo.resp.hex");
    let bytes = parse_hex(&strip_comments(text)).unwrap();
    let t = decode_mad(&bytes).unwrap().to_text();
    assert!(t.contains("# PortInfo\n"), "{t}");
    assert!(t.contains("4 (Active)"), "{t}");
    assert!(t.contains("5 (LinkUp)"), "{t}");
    assert!(t.contains("(Mtu2048)"), "{t}");
    assert!(t.contains("IS_SM"), "{t}");
    assert!(t.contains("lid:") && t.contains("gid_prefix:"), "{t}");
}

#[test]
fn notice_with_trap_details() {
    use ibsm_wire::{ProducerType, Trap128Details};
    let n = Notice::generic_with(ProducerType::from(2), 7, &Trap128Details { lid: 0x1234 });
    let mut smp = DrSmp::request(Method::Trap, 0x0002, 0, 1, 0, &DrPath::local());
    n.emit_into(&mut smp.data).unwrap();
    let d = decode_mad(&smp.to_bytes()).unwrap();
    let titles: Vec<&str> = d.sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles[2..], ["Notice", "Notice trap 128"]);
    assert!(d.to_text().contains("4660"), "{}", d.to_text());
}

#[test]
fn sa_get_table_response_lists_records() {
    use ibsm_wire::sa::ComponentMask;
    let tmpl = NodeRecord {
        lid: 5,
        ..NodeRecord::default()
    };
    let req = SaMad::request(Method::GetTable, 9, ComponentMask(1), &tmpl).unwrap();
    let d = decode_mad(&req.to_bytes()).unwrap();
    let t = d.to_text();
    assert!(t.contains("0x0011 (NodeRecord)"), "{t}");
    assert!(t.contains("# SA header"), "{t}");
    assert!(t.contains("# NodeRecord\n"), "{t}");
    assert!(t.contains("(lid)"), "component names: {t}");

    let mut resp = req.response_header::<NodeRecord>();
    resp.method = Method::GetTable;
    let stride = usize::from(resp.attribute_offset) * 8;
    for k in 0..200 / stride {
        let mut r = NodeRecord {
            lid: 10 + k as u16,
            ..NodeRecord::default()
        };
        r.node_info.node_type = NodeType::Ca;
        resp.set_record(k, &r).unwrap();
    }
    let d = decode_mad(&resp.to_bytes()).unwrap();
    let titles: Vec<&str> = d.sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles, ["MAD header", "SA header", "NodeRecord [0]"]);
    let t = d.to_text();
    assert!(t.contains("node_info: (NodeInfo)"), "{t}");
    assert!(
        t.contains("  node_type:"),
        "nested fields are indented: {t}"
    );
    let j: serde_json::Value = serde_json::from_str(&d.to_json()).unwrap();
    let nested = &j["sections"][2]["fields"]["node_info"];
    assert_eq!(nested["title"], "NodeInfo");
    assert!(nested["fields"]["node_type"].is_object(), "{nested}");
}

/// Every MAD captured from ibsim decodes, with the attribute or records it carries.
#[test]
fn every_golden_capture_decodes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/golden");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".hex") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let bytes = parse_hex(&strip_comments(&text)).unwrap();
        let d = decode_mad(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let last = &d.sections.last().unwrap().title;
        let want = match name.split('.').next().unwrap() {
            "nodeinfo" | "nodeinfo_lid" => "NodeInfo",
            "portinfo" | "portinfo_sw" | "portinfo_set" => "PortInfo",
            "switchinfo" => "SwitchInfo",
            "sminfo" => "SMInfo",
            "lft" => "LinearForwardingTable",
            "noderecord" => "NodeRecord",
            "pathrecord" => "PathRecord",
            "portinforecord" => "PortInfoRecord",
            other => panic!("fixture {other} not known to this test"),
        };
        assert!(last.starts_with(want), "{name}: last section {last}");
        let j: serde_json::Value = serde_json::from_str(&d.to_json()).unwrap();
        assert_eq!(j["sections"].as_array().unwrap().len(), d.sections.len());
        seen += 1;
    }
    assert_eq!(seen, 22, "11 exchanges, request and response each");
}

#[test]
fn comments_are_stripped() {
    assert_eq!(strip_comments("# x\n01 02 # y\n03"), "\n01 02 \n03");
}

#[test]
fn every_known_attribute_has_its_layout() {
    let zero = [0u8; 256];
    let label = |p: Parser| p(&zero).unwrap().label();
    for (id, want) in [
        (SmAttributeId::Notice, "Notice"),
        (SmAttributeId::NodeInfo, "NodeInfo"),
        (SmAttributeId::PKeyTable, "P_KeyTable"),
        (
            SmAttributeId::LinkSpeedWidthPairsTable,
            "LinkSpeedWidthPairsTable",
        ),
        (SmAttributeId::MlnxExtPortInfo, "MlnxExtPortInfo"),
    ] {
        assert_eq!(smp_attribute(id.into()).map(label), Some(want), "{id:?}");
    }
    assert!(smp_attribute(SmAttributeId::CableInfo.into()).is_none());
    for (id, want) in [
        (PerfAttributeId::PortCounters, "PortCounters"),
        (
            PerfAttributeId::PortExtendedSpeedsCounters,
            "PortExtendedSpeedsCounters",
        ),
    ] {
        assert_eq!(perf_attribute(id.into()).map(label), Some(want), "{id:?}");
    }
    assert!(perf_attribute(PerfAttributeId::ClassPortInfo.into()).is_none());
}
