//! Peer test: `ibsm-exporter` on ibsim (OpenSM gives the LIDs). The run-once textfile
//! and the HTTP endpoint (scraped with a real HTTP client) parse as Prometheus text
//! exposition, carry infiniband_exporter's metric names and labels, one uplink per
//! cable end, and counters that lie between two `perfquery -x` readings (in bytes).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibsm_tests::diags::fields;
use ibsm_tests::exposition::Exposition;
use ibsm_tests::peer::{PeerFabric, client, run_bounded, start_opensm};
use ibsm_tests::{IBSIM, PRELOAD, peers_present};

const OPENSM: &str = "/usr/sbin/opensm";
const PERFQUERY: &str = "/usr/sbin/perfquery";
const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Sw2\"[3]\n\n\
Switch\t8 \"Sw2\"\n[1]\t\"Hca3\"[1]\n[2]\t\"Hca4\"[1]\n[3]\t\"Sw1\"[3]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\n\
Hca\t1 \"Hca3\"\n[1]\t\"Sw2\"[1]\n\nHca\t1 \"Hca4\"\n[1]\t\"Sw2\"[2]\n";

/// The exposition, read; a malformed line fails the test with its number.
fn parse(text: &str) -> Exposition {
    Exposition::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn perfquery_x(p: &PeerFabric, lid: &str, port: &str) -> BTreeMap<String, u64> {
    let mut c = client(p, PERFQUERY, Some("Hca4"), "diag");
    c.args(["-x", lid, port]);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "{err}");
    fields(&out)
}

fn check(text: &str) {
    let exp = parse(text);
    for fam in [
        "infiniband_switch_port_transmit_data_bytes",
        "infiniband_switch_port_receive_packets",
        "infiniband_switch_port_symbol_error",
        "infiniband_hca_port_transmit_data_bytes",
    ] {
        assert_eq!(exp.kind(fam), Some("counter"), "{fam}");
    }
    for fam in [
        "infiniband_switch_info",
        "infiniband_switch_uplink_info",
        "infiniband_exporter_collect_errors",
    ] {
        assert_eq!(exp.kind(fam), Some("gauge"), "{fam}");
    }
    let count = |name: &str| exp.named(name).count();
    assert_eq!(count("infiniband_switch_info"), 2);
    assert_eq!(count("infiniband_hca_info"), 4);
    // Each switch has 3 cabled ports, each CA one.
    assert_eq!(count("infiniband_switch_uplink_info"), 6);
    assert_eq!(count("infiniband_hca_uplink_info"), 4);
    assert_eq!(
        count("infiniband_switch_port_transmit_data_bytes_total"),
        16
    );
    for s in exp.named("infiniband_exporter_collect_errors") {
        assert_eq!(s.value, 0.0, "{s:?}");
    }
    let up = exp
        .named("infiniband_switch_uplink_info")
        .find(|s| s.labels["uplink_type"] == "CA")
        .unwrap();
    for k in [
        "guid",
        "port",
        "switch",
        "uplink",
        "uplink_guid",
        "uplink_lid",
        "uplink_port",
    ] {
        assert!(up.labels.contains_key(k), "{k} in {up:?}");
    }
}

#[test]
fn the_textfile_and_the_http_endpoint_hold_the_fabrics_counters() {
    if !peers_present("exporter_ibsim", &[IBSIM, PRELOAD, OPENSM, PERFQUERY]) {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_ibsm-exporter");
    let mut p = PeerFabric::start("exporter", NET);
    start_opensm(&mut p, "Hca1", 0, &[]);

    // Run once, sandwiched by perfquery on one switch port, checked in bytes.
    let file = p.path("ib.prom");
    let first = {
        let mut c = client(&p, bin, Some("Hca4"), "diag");
        c.args(["--hca", "--textfile", file.to_str().unwrap()]);
        let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
        assert!(ok, "{err}\n{out}");
        std::fs::read_to_string(&file).unwrap()
    };
    let first = parse(&first);
    let info = first.named("infiniband_switch_info").next().unwrap();
    let (guid, lid) = (info.labels["guid"].clone(), info.labels["lid"].clone());
    let before = perfquery_x(&p, &lid, "3");
    let mut c = client(&p, bin, Some("Hca4"), "diag");
    c.args(["--hca", "--textfile", file.to_str().unwrap()]);
    let (ok, _, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    let after = perfquery_x(&p, &lid, "3");
    let v = parse(&text).value(
        "infiniband_switch_port_transmit_data_bytes_total",
        &[("guid", &guid), ("port", "3")],
    );
    let (lo, hi) = (before["PortXmitData"] * 4, after["PortXmitData"] * 4);
    #[allow(clippy::cast_precision_loss)]
    let (lo, hi) = (lo as f64, hi as f64);
    assert!(lo <= v && v <= hi, "{lo} <= {v} <= {hi}");
    check(&text);

    // HTTP: a free port, the exporter serving, /healthz then /metrics.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut c = client(&p, bin, Some("Hca4"), "http");
    c.args(["--hca", "--web.listen-address", &addr.to_string()]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Stopped by PID below; the Fabric kills ibsim after it.
    let mut server = c.spawn().expect("start ibsm-exporter");
    let deadline = Instant::now() + Duration::from_secs(30);
    let health = loop {
        match ureq::get(&format!("http://{addr}/healthz")).call() {
            Ok(r) => break r.into_string().unwrap(),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => panic!("exporter not serving: {e}"),
        }
    };
    assert_eq!(health, "ok\n");
    let metrics = ureq::get(&format!("http://{addr}/metrics"))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    check(&metrics);
    assert!(matches!(
        ureq::get(&format!("http://{addr}/nothing")).call(),
        Err(ureq::Error::Status(404, _))
    ));
    server.kill().unwrap();
    server.wait().unwrap();
}

/// The exporter serving on a free localhost port with `extra` flags, and its address;
/// stopped by PID by the caller.
fn serve(p: &PeerFabric, extra: &[&str]) -> (std::process::Child, std::net::SocketAddr) {
    let bin = env!("CARGO_BIN_EXE_ibsm-exporter");
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut c = client(p, bin, Some("Hca4"), "serve");
    c.args(["--web.listen-address", &addr.to_string()])
        .args(extra);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let server = c.spawn().expect("start ibsm-exporter");
    let deadline = Instant::now() + Duration::from_secs(30);
    while ureq::get(&format!("http://{addr}/healthz")).call().is_err() {
        assert!(Instant::now() < deadline, "exporter not serving");
        std::thread::sleep(Duration::from_millis(50));
    }
    (server, addr)
}

#[test]
fn concurrent_requests_share_one_collection_and_only_get_is_served() {
    if !peers_present("exporter_ibsim", &[IBSIM, PRELOAD, OPENSM]) {
        return;
    }
    let mut p = PeerFabric::start("exporter_cache", NET);
    start_opensm(&mut p, "Hca1", 0, &[]);
    let (mut server, addr) = serve(&p, &["--hca", "--min-interval", "3600"]);
    let url = format!("http://{addr}/metrics");
    // Four at once, then one more: every answer is the same collection, to the byte
    // (its durations included).
    let bodies: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| ureq::get(&url).call().unwrap().into_string().unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let again = ureq::get(&url).call().unwrap().into_string().unwrap();
    check(&again);
    for b in &bodies {
        assert_eq!(b, &again);
    }
    for method in ["POST", "PUT", "DELETE"] {
        match ureq::request(method, &url).call() {
            Err(ureq::Error::Status(405, r)) => {
                assert_eq!(r.header("Allow"), Some("GET"), "{method}");
            }
            other => panic!("{method}: {other:?}"),
        }
    }
    server.kill().unwrap();
    server.wait().unwrap();
}

/// ibsim's `Error "NODE"[PORT] 100 ATTR`: every MAD of attribute ATTR (decimal) through
/// that port is lost.
fn lose(p: &mut PeerFabric, node: &str, port: u8, attribute: u16) {
    p.sim
        .console(&format!("Error \"{node}\"[{port}] 100 {attribute}"));
}

#[test]
fn a_port_that_does_not_answer_is_reported_and_the_rest_exported() {
    if !peers_present("exporter_ibsim", &[IBSIM, PRELOAD, OPENSM]) {
        return;
    }
    let mut p = PeerFabric::start("exporter_timeout", NET);
    start_opensm(&mut p, "Hca1", 0, &[]);
    // Hca3 answers every SMP but no PortCounters (attribute 0x12). ibsim reports the
    // loss at once (umad status 110, "unreachable"), where a real fabric times out
    // (the unit tests of the exposition cover that label).
    lose(&mut p, "Hca3", 1, 0x12);
    let bin = env!("CARGO_BIN_EXE_ibsm-exporter");
    let file = p.path("timeout.prom");
    let mut c = client(&p, bin, Some("Hca4"), "timeout");
    c.args(["--hca", "-t", "50", "--retries", "1", "--textfile"])
        .arg(&file);
    let (ok, _, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "{err}");
    let exp = parse(&std::fs::read_to_string(&file).unwrap());
    let failed: Vec<_> = exp
        .named("infiniband_exporter_port_collect_error")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let f = &failed[0];
    assert_eq!(
        (
            f.labels["collector"].as_str(),
            f.labels["port"].as_str(),
            f.labels["error"].as_str()
        ),
        ("hca", "1", "unreachable")
    );
    assert!(
        err.contains("port counters not read") && err.contains(&f.labels["guid"]),
        "no log line for {}: {err}",
        f.labels["guid"]
    );
    assert!(
        exp.value(
            "infiniband_exporter_collect_errors",
            &[("collector", "hca")]
        ) >= 1.0
    );
    // Every switch port and the three other CA ports are there.
    assert_eq!(
        exp.named("infiniband_switch_port_transmit_data_bytes_total")
            .count(),
        16
    );
    assert_eq!(
        exp.named("infiniband_hca_port_transmit_data_bytes_total")
            .count(),
        3
    );
    assert!(
        exp.get(
            "infiniband_hca_port_transmit_data_bytes_total",
            &[("guid", &f.labels["guid"]), ("port", "1")]
        )
        .is_none()
    );
    assert!(
        exp.get("infiniband_exporter_scrape_duration_seconds", &[])
            .is_some()
    );
}

#[test]
fn a_node_discovery_cannot_reach_is_logged_and_counted_and_the_rest_exported() {
    if !peers_present("exporter_ibsim", &[IBSIM, PRELOAD, OPENSM]) {
        return;
    }
    let mut p = PeerFabric::start("exporter_discovery", NET);
    start_opensm(&mut p, "Hca1", 0, &[]);
    // Hca2 answers no NodeInfo (attribute 0x11): its route is unreachable.
    lose(&mut p, "Hca2", 1, 0x11);
    let bin = env!("CARGO_BIN_EXE_ibsm-exporter");
    let file = p.path("discovery.prom");
    let mut c = client(&p, bin, Some("Hca4"), "discovery");
    c.args(["--hca", "--textfile"]).arg(&file);
    let (ok, _, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "{err}");
    assert!(err.contains("route not answered"), "{err}");
    let exp = parse(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(
        exp.value(
            "infiniband_exporter_collect_errors",
            &[("collector", "ibnetdiscover")]
        ),
        1.0
    );
    assert_eq!(exp.named("infiniband_hca_info").count(), 3);
    assert_eq!(exp.named("infiniband_switch_info").count(), 2);
    assert_eq!(
        exp.named("infiniband_switch_port_transmit_data_bytes_total")
            .count(),
        16
    );
}
