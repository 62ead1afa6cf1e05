//! `ibsm-mad-decode` as a user runs it: arguments, stdin, `--json`, exit codes.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ibsm-mad-decode"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ibsm-mad-decode");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("ibsm-mad-decode output")
}

fn golden(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/golden")
        .join(format!("{name}.hex"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn decodes_a_capture_from_stdin() {
    let out = run(&[], &golden("nodeinfo.resp"));
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("# MAD header\n"), "{text}");
    assert!(text.contains("# Directed-route SMP\n"), "{text}");
    assert!(text.contains("# NodeInfo\n"), "{text}");
    assert!(text.contains("2 (Switch)"), "{text}");
    assert!(out.stderr.is_empty());
}

#[test]
fn hex_arguments_and_json() {
    // The same MAD as arguments, split anywhere, comments stripped first.
    let hex: String = golden("sminfo.resp")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let words: Vec<&str> = hex.split_whitespace().collect();
    let mut args = vec!["--json"];
    args.extend(words.iter().copied());
    let out = run(&args, "");
    assert!(out.status.success(), "{out:?}");
    let json = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        json.lines().count(),
        1,
        "one JSON object on one line: {json}"
    );
    let j = parse(&json);
    let sminfo = section(&j, "SMInfo");
    assert_eq!(
        sminfo["sm_state"],
        serde_json::json!({"value": 3, "name": "Master"}),
        "{json}"
    );
}

fn parse(json: &str) -> serde_json::Value {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

/// The fields of the section titled `title`.
fn section<'a>(j: &'a serde_json::Value, title: &str) -> &'a serde_json::Value {
    let s = j["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == title)
        .unwrap_or_else(|| panic!("no section {title}: {j}"));
    &s["fields"]
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for (args, stdin, want) in [
        (&["01 81 zz"][..], "", "not a hex digit"),
        (&[][..], "0181", "truncated"),
        (&[][..], "", "no hex digits"),
    ] {
        let out = run(args, stdin);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("ibsm-mad-decode: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
    // An unknown option is clap's usage error: exit 2, the option named.
    let out = run(&["--frobnicate"], "");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--frobnicate"), "{err}");
    assert!(out.stdout.is_empty());
    // --help is help, not hex.
    let out = run(&["--help"], "");
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8(out.stdout).unwrap().contains("--json"));
}

/// A PerfMgt GetResp(PortCounters) as a PMA sends it, in hex.
fn port_counters_resp() -> String {
    use ibsm_wire::perf::{CounterSelect, PerfAttributeId, PortCounters, perf_request};
    use ibsm_wire::{Method, Status};
    let pc = PortCounters {
        port_select: 3,
        counter_select: CounterSelect::DATA,
        symbol_error_counter: 12,
        link_downed_counter: 2,
        excessive_buffer_overrun_errors: 0xF,
        port_xmit_data: 0x0123_4567,
        port_rcv_pkts: 99,
        ..PortCounters::default()
    };
    let mut mad = perf_request(
        Method::Get,
        PerfAttributeId::PortCounters,
        7,
        &pc.to_bytes(),
    );
    mad.response = true;
    mad.status = Status::OK;
    mad.to_bytes().iter().map(|b| format!("{b:02x} ")).collect()
}

#[test]
fn perf_mgt_port_counters_text_and_json() {
    let hex = port_counters_resp();
    let out = run(&[], &hex);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("# GS class header\n"), "{text}");
    assert!(text.contains("# PortCounters\n"), "{text}");
    assert!(text.contains("PortCounters"), "attribute named: {text}");
    for want in ["symbol_error_counter", "port_xmit_data", "port_rcv_pkts"] {
        assert!(text.contains(want), "{want} missing: {text}");
    }
    assert!(!text.contains("has no decoder"), "{text}");

    let out = run(&["--json"], &hex);
    assert!(out.status.success(), "{out:?}");
    let json = String::from_utf8(out.stdout).unwrap();
    let j = parse(&json);
    let gs = section(&j, "MAD header");
    assert_eq!(
        gs["attribute_id"],
        serde_json::json!({"value": 18, "name": "PortCounters"}),
        "{json}"
    );
    let pc = section(&j, "PortCounters");
    assert_eq!(pc["port_select"], 3);
    assert_eq!(pc["symbol_error_counter"], 12);
    assert_eq!(pc["link_downed_counter"], 2);
    assert_eq!(pc["excessive_buffer_overrun_errors"], 15);
    assert_eq!(pc["port_xmit_data"], 19_088_743);
    assert_eq!(pc["port_rcv_pkts"], 99);
    assert_eq!(
        pc["counter_select"]["name"], "PORT_XMIT_DATA|PORT_RCV_DATA|PORT_XMIT_PKTS|PORT_RCV_PKTS",
        "CounterSelect named: {json}"
    );
}

#[test]
fn perf_mgt_class_port_info_names_pm_capabilities() {
    use ibsm_wire::perf::{PerfAttributeId, perf_request};
    use ibsm_wire::{ClassPortInfo, Method};
    let cpi = ClassPortInfo {
        base_version: 1,
        class_version: 1,
        capability_mask: 0x1300,
        ..ClassPortInfo::default()
    };
    let mut mad = perf_request(
        Method::Get,
        PerfAttributeId::ClassPortInfo,
        1,
        &cpi.to_bytes(),
    );
    mad.response = true;
    let hex: String = mad.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
    let out = run(&["--json", &hex], "");
    assert!(out.status.success(), "{out:?}");
    let json = String::from_utf8(out.stdout).unwrap();
    let j = parse(&json);
    let cpi = section(&j, "ClassPortInfo");
    assert_eq!(
        cpi["capability_mask"]["name"], "ALL_PORT_SELECT|EXT_WIDTH|XMIT_WAIT",
        "{json}"
    );
}
