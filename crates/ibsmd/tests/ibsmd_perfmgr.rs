//! Peer test: `ibsmd --perfmgr` on ibsim. After counters set from ibsim's console
//! (`PerformanceSet`), the daemon's `/metrics` shows every port's counters with
//! infiniband_exporter's names, and they are what `perfquery` reads: every error
//! counter equal, every traffic counter at most perfquery's later reading (the MADs in
//! between add to it). `/status` has the counter sweeps' figures.
//!
//! Every wait is for an answer, with a generous deadline.

use std::collections::BTreeMap;
use std::time::Duration;

use ibsm_tests::diags::fields;
use ibsm_tests::exposition::Exposition;
use ibsm_tests::peer::{PeerFabric, client, needed, run_bounded, start_ibsmd};
use ibsm_tests::{peers_present, tail, wait_until};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");
const PERFQUERY: &str = "/usr/sbin/perfquery";
const PATIENCE: Duration = Duration::from_secs(60);
const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Sw2\"[3]\n\n\
Switch\t8 \"Sw2\"\n[1]\t\"Hca3\"[1]\n[2]\t\"Hca4\"[1]\n[3]\t\"Sw1\"[3]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\n\
Hca\t1 \"Hca3\"\n[1]\t\"Sw2\"[1]\n\nHca\t1 \"Hca4\"\n[1]\t\"Sw2\"[2]\n";

fn perfquery(f: &PeerFabric, args: &[&str]) -> BTreeMap<String, u64> {
    let mut c = client(f, PERFQUERY, Some("Hca4"), "diag");
    c.args(args);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "perfquery {args:?}: {err}\n{out}");
    fields(&out)
}

#[test]
fn ibsmd_perfmgr_metrics_show_what_perfquery_reads() {
    let mut need = needed();
    need.push(PERFQUERY);
    if !peers_present("ibsmd_perfmgr", &need) {
        return;
    }
    let mut f = PeerFabric::start("perfmgr", NET);
    let set = [
        ("Sw1", 2, "SymbolErrorCounter", 17),
        ("Sw2", 3, "LinkDownedCounter", 3),
        ("Hca3", 1, "PortRcvErrors", 40),
        ("Sw1", 3, "PortXmitDiscards", 9),
    ];
    for (node, port, field, v) in set {
        f.sim.console(&format!(
            "PerformanceSet \"{node}\"[{port}] PortCounters.{field}={v}"
        ));
    }
    let _daemon = start_ibsmd(
        &f,
        IBSMD,
        "Hca1",
        0,
        &[
            "--perfmgr",
            "--perfmgr_sweep_time_s",
            "2",
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    let url = wait_until("the metrics address", PATIENCE, || {
        let err = f.read("ibsmd.err");
        err.lines()
            .find_map(|l| l.split("metrics on ").nth(1))
            .map(|u| u.trim().to_owned())
            .ok_or_else(|| tail(&err, 20))
    });
    let status_url = url.replace("/metrics", "/status");
    // A counter sweep that read every port (8 + 8 switch ports with a cable: 3 each,
    // and 4 CA ports), the console's values among them.
    let status: serde_json::Value = wait_until("a full counter sweep", PATIENCE, || {
        let json: serde_json::Value = serde_json::from_str(
            &ureq::get(&status_url)
                .call()
                .map_err(|e| format!("{e}\n{}", tail(&f.read("ibsmd.err"), 30)))?
                .into_string()
                .unwrap(),
        )
        .unwrap();
        let p = &json["perfmgr"];
        let seen17 = p["ports"].as_array().is_some_and(|ports| {
            ports
                .iter()
                .any(|q| q["counters"]["SymbolErrorCounter"] == 17)
        });
        if p["last"]["ports_read"] == 10 && seen17 {
            Ok(json)
        } else {
            Err(format!("{p}\n{}", tail(&f.read("ibsmd.err"), 10)))
        }
    });
    let perf = &status["perfmgr"];
    assert_eq!(perf["last"]["ports_failed"], 0, "{perf}");
    assert!(perf["sweeps"].as_u64() >= Some(1));
    let text = ureq::get(&url).call().unwrap().into_string().unwrap();
    let exp = Exposition::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let ports = perf["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 10, "{perf}");
    let mut errors_seen = 0;
    for q in ports {
        let (lid, port) = (q["lid"].as_u64().unwrap(), q["port"].as_u64().unwrap());
        let kind = if q["switch"] == true { "switch" } else { "hca" };
        let port_s = port.to_string();
        let labels = [("guid", q["guid"].as_str().unwrap()), ("port", &port_s)];
        let metric =
            |stem: &str| exp.value(&format!("infiniband_{kind}_port_{stem}_total"), &labels);
        // Read after the metrics: traffic only grew since.
        let theirs = perfquery(&f, &[&lid.to_string(), &port.to_string()]);
        let theirs_x = perfquery(&f, &["-x", &lid.to_string(), &port.to_string()]);
        for (stem, name) in [
            ("symbol_error", "SymbolErrorCounter"),
            ("link_error_recovery", "LinkErrorRecoveryCounter"),
            ("link_downed", "LinkDownedCounter"),
            ("receive_errors", "PortRcvErrors"),
            ("transmit_discards", "PortXmitDiscards"),
            (
                "receive_remote_physical_errors",
                "PortRcvRemotePhysicalErrors",
            ),
            ("receive_switch_relay_errors", "PortRcvSwitchRelayErrors"),
            ("vl15_dropped", "VL15Dropped"),
        ] {
            assert_eq!(
                metric(stem),
                theirs[name] as f64,
                "LID {lid} port {port} {name}"
            );
            errors_seen += theirs[name];
            // /status has perfquery's names and values too.
            assert_eq!(q["counters"][name], theirs[name]);
        }
        for (stem, name, scale) in [
            ("transmit_data_bytes", "PortXmitData", 4),
            ("receive_data_bytes", "PortRcvData", 4),
            ("transmit_packets", "PortXmitPkts", 1),
            ("receive_packets", "PortRcvPkts", 1),
        ] {
            let ours = metric(stem);
            assert!(ours > 0.0, "LID {lid} port {port} {name}: no traffic");
            assert!(
                ours <= (theirs_x[name] * scale) as f64,
                "LID {lid} port {port} {name}: ours {ours} above perfquery's later {}",
                theirs_x[name] * scale
            );
        }
    }
    assert_eq!(
        errors_seen,
        17 + 3 + 40 + 9,
        "the console's errors, and no others"
    );
    assert!(exp.value("ibsm_perfmgr_sweeps_total", &[]) >= 1.0);
    assert_eq!(
        exp.value("ibsm_perfmgr_last_sweep_ports", &[("result", "read")]),
        10.0
    );
}
