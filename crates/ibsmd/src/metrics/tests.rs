use std::collections::BTreeMap;

use ibsm_tests::exposition::Exposition;

use super::*;
use crate::status::{FabricCounts, Master, Smps, Sweeps};

/// The exposition, read; a malformed line fails the test with its number.
fn parse(text: &str) -> Exposition {
    Exposition::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn status() -> Status {
    Status {
        role: "MASTER".into(),
        port_guid: "0x0000000000000021".into(),
        sm_lid: 3,
        master: Some(Master {
            guid: "0x0000000000000021".into(),
            lid: 3,
            local: true,
        }),
        subnet_up: true,
        sweeps: Sweeps {
            heavy: 2,
            light: 5,
            last_heavy_ms: Some(1500.0),
            last_light_ms: None,
        },
        smps: Smps {
            sweeps: 400,
            total: 420,
            retries: 4,
            timeouts: 1,
            by_attribute: BTreeMap::from([("NodeInfo".into(), 30), ("PortInfo".into(), 200)]),
        },
        traps: BTreeMap::from([(128, 3), (144, 1)]),
        fabric: FabricCounts {
            nodes: 12,
            switches: 4,
            cas: 8,
            routers: 0,
            links: 16,
            lids: 12,
        },
        partition_warnings: vec!["w".into()],
        isolation: crate::status::Isolation {
            by_condition: BTreeMap::from([("manual".into(), 2), ("flapping".into(), 1)]),
            cap: 10,
            cap_reached: true,
        },
        ..Status::default()
    }
}

#[test]
fn a_real_http_client_scrapes_metrics_and_status() {
    let server = MetricsServer::start("127.0.0.1:0", Status::default()).unwrap();
    let base = format!("http://{}", server.addr());
    // Before the first publish: the initial snapshot.
    let text = ureq::get(&format!("{base}/metrics"))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    let s = parse(&text);
    assert_eq!(s.value("ibsm_subnet_up", &[]), 0.0);
    server.publish(status());
    let resp = ureq::get(&format!("{base}/metrics")).call().unwrap();
    assert!(
        resp.content_type().contains("openmetrics"),
        "{}",
        resp.content_type()
    );
    let text = resp.into_string().unwrap();
    let s = parse(&text);
    assert_eq!(s.kind("ibsm_sweeps"), Some("counter"), "{text}");
    assert_eq!(s.kind("ibsm_role"), Some("gauge"));
    assert_eq!(s.value("ibsm_role", &[("role", "MASTER")]), 1.0);
    assert_eq!(s.value("ibsm_role", &[("role", "STANDBY")]), 0.0);
    assert_eq!(s.value("ibsm_master_lid", &[]), 3.0);
    assert_eq!(s.value("ibsm_sweeps_total", &[("kind", "heavy")]), 2.0);
    assert_eq!(s.value("ibsm_sweeps_total", &[("kind", "light")]), 5.0);
    assert_eq!(
        s.value("ibsm_sweep_last_duration_seconds", &[("kind", "heavy")]),
        1.5
    );
    assert_eq!(
        s.value("ibsm_smps_total", &[("attribute", "PortInfo")]),
        200.0
    );
    assert_eq!(s.value("ibsm_smps_sent_total", &[]), 420.0);
    assert_eq!(s.value("ibsm_smp_retries_total", &[]), 4.0);
    assert_eq!(s.value("ibsm_smp_timeouts_total", &[]), 1.0);
    assert_eq!(s.value("ibsm_traps_total", &[("number", "128")]), 3.0);
    assert_eq!(s.value("ibsm_fabric_nodes", &[("type", "switch")]), 4.0);
    assert_eq!(s.value("ibsm_fabric_nodes", &[("type", "ca")]), 8.0);
    assert_eq!(s.value("ibsm_fabric_links", &[]), 16.0);
    assert_eq!(s.value("ibsm_fabric_lids", &[]), 12.0);
    assert_eq!(s.value("ibsm_unhealthy_ports", &[]), 0.0);
    assert_eq!(
        s.value("ibsm_isolated_ports", &[("condition", "manual")]),
        2.0
    );
    assert_eq!(
        s.value("ibsm_isolated_ports", &[("condition", "flapping")]),
        1.0
    );
    assert_eq!(
        s.value("ibsm_isolated_ports", &[("condition", "high_ber")]),
        0.0
    );
    assert_eq!(s.value("ibsm_isolation_cap", &[]), 10.0);
    assert_eq!(s.value("ibsm_isolation_cap_reached", &[]), 1.0);
    assert_eq!(s.value("ibsm_partition_warnings", &[]), 1.0);
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    // The JSON status is the snapshot.
    let json = ureq::get(&format!("{base}/status"))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    let back: Status = serde_json::from_str(&json).unwrap();
    assert_eq!(back, status());
    match ureq::get(&format!("{base}/nothing")).call() {
        Err(ureq::Error::Status(404, _)) => {}
        other => panic!("{other:?}"),
    }
    drop(server);
    assert!(
        ureq::get(&format!("{base}/metrics")).call().is_err(),
        "stopped"
    );
}

#[test]
fn a_bad_address_is_an_error() {
    let e = MetricsServer::start("nowhere:xx", Status::default()).unwrap_err();
    assert!(e.to_string().starts_with("--metrics nowhere:xx: "), "{e}");
}

#[test]
fn perfmgr_counters_have_the_exporters_names_and_data_in_bytes() {
    use crate::status::{Perf, PerfSweep, PortCounters};
    let port = |guid: &str, port: u8, switch: bool, xmit_words: u64, sym: u64| PortCounters {
        node_guid: guid.into(),
        guid: guid.into(),
        port,
        lid: 1,
        switch,
        counters: BTreeMap::from([
            ("PortXmitData".into(), xmit_words),
            ("SymbolErrorCounter".into(), sym),
        ]),
    };
    let mut st = status();
    st.perfmgr = Some(Perf {
        sweeps: 3,
        sweeping: false,
        last: Some(PerfSweep {
            agents: 2,
            ports_read: 2,
            ports_failed: 1,
            queries: 9,
            failures: 2,
            timeouts: 1,
            duration_ms: 250.0,
        }),
        over_threshold: 4,
        ports: vec![
            port("0x0000000000000010", 3, true, 100, 7),
            port("0x0000000000000021", 1, false, 5, 0),
        ],
    });
    let text = exposition(&st);
    let s = parse(&text);
    assert_eq!(
        s.kind("infiniband_switch_port_transmit_data_bytes"),
        Some("counter")
    );
    let sw = [("guid", "0x0000000000000010"), ("port", "3")];
    let ca = [("guid", "0x0000000000000021"), ("port", "1")];
    assert_eq!(
        s.value("infiniband_switch_port_transmit_data_bytes_total", &sw),
        400.0
    );
    assert_eq!(
        s.value("infiniband_switch_port_symbol_error_total", &sw),
        7.0
    );
    assert_eq!(
        s.value("infiniband_hca_port_transmit_data_bytes_total", &ca),
        20.0
    );
    assert_eq!(s.value("infiniband_hca_port_symbol_error_total", &ca), 0.0);
    assert_eq!(s.value("ibsm_perfmgr_sweeps_total", &[]), 3.0);
    assert_eq!(s.value("ibsm_perfmgr_over_threshold_total", &[]), 4.0);
    assert_eq!(
        s.value("ibsm_perfmgr_last_sweep_ports", &[("result", "failed")]),
        1.0
    );
    assert_eq!(
        s.value("ibsm_perfmgr_last_sweep_duration_seconds", &[]),
        0.25
    );
    assert_eq!(s.value("ibsm_perfmgr_query_timeouts_total", &[]), 1.0);
    // The SM's own metrics keep their prefix beside the unprefixed port counters.
    assert_eq!(s.value("ibsm_subnet_up", &[]), 1.0);
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    // Without --perfmgr: none of it.
    let plain = exposition(&status());
    assert!(
        !plain.contains("infiniband_") && !plain.contains("perfmgr"),
        "{plain}"
    );
}

#[test]
fn the_reference_topology_is_counted_by_kind_and_shown() {
    use crate::status::Topology;
    let mut s = status();
    assert!(s.topology.is_none());
    let text = exposition(&s);
    assert!(!text.contains("ibsm_topology"), "{text}");
    let by_kind: BTreeMap<String, usize> = ibsm::topology::diff::Difference::KINDS
        .iter()
        .map(|k| ((*k).to_owned(), usize::from(*k == "miswired") * 2))
        .collect();
    s.topology = Some(Topology {
        reference: "/etc/plan.topo".into(),
        policy: "isolate".into(),
        checked: true,
        changes: 3,
        by_kind,
        differences: vec!["miswired cable a".into(), "miswired cable b".into()],
    });
    let text = exposition(&s);
    let e = parse(&text);
    assert_eq!(
        e.value("ibsm_topology_differences", &[("kind", "miswired")]),
        2.0
    );
    assert_eq!(
        e.value("ibsm_topology_differences", &[("kind", "degraded")]),
        0.0
    );
    assert_eq!(e.value("ibsm_topology_changes_total", &[]), 3.0);
    let human = s.human();
    assert!(
        human.contains("reference topology: /etc/plan.topo (isolate): 2 differences (miswired 2)\n  miswired cable a\n"),
        "{human}"
    );
}
