//! Peer test: ibsmd, running as a daemon on an ibsim fat tree, re-routes around a cable
//! pulled on ibsim's console and back onto it when the cable returns.
//!
//! After bring-up the fabric verifies with the diagnostics (`ibsm_tests::peer`); then
//! `Unlink` of one switch-to-switch cable makes the two switches send trap 128; ibsmd
//! sweeps, and the checks pass again on the smaller fabric: no LFT entry anywhere points
//! at either dead port, every CA still reaches every LID (offline LFT walk and
//! `ibtracert`), and no LID moved. SIGHUP then makes ibsmd recompute the repaired tables
//! from scratch (the checks pass again), and `ReLink` brings the cable back and ibsmd
//! uses it again. With `--rebalance-after` ibsmd recomputes the repaired tables on its own
//! once the fabric has been quiet that long.

use std::process::Command;
use std::time::Duration;

use ibsm_tests::peer::{
    PeerFabric, Verified, ca_ports, needed, net_file, start_ibsmd, stop_ibsmd, switch_link,
    verify_topology, verify_with_diags, wait_settled,
};
use ibsm_tests::peers_present;
use ibsm_topology::{generate, ibnet};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

/// The last SUBNET UP line of ibsmd's log.
fn last_up(err: &str) -> &str {
    let from = err.rfind("SUBNET UP").expect("a SUBNET UP");
    err[from..].lines().next().unwrap_or_default()
}

/// An ibsim radix-8 2-level fat tree named `name` with ibsmd (`updn`, 1 s light sweeps,
/// then `extra`) settled on its first CA; also the fabric as written, the first
/// switch-to-switch cable (a leaf uplink: each leaf has four) and the SUBNET UP count.
fn tree_with_ibsmd(
    name: &str,
    extra: &[&str],
) -> (
    PeerFabric,
    ibsm_topology::Fabric,
    ibsm_tests::peer::Daemon,
    ibsm_topology::Link,
    usize,
) {
    let net = net_file(
        &generate::fat_tree(8, 2).unwrap(),
        "2-level radix-8 fat tree",
    );
    let f = PeerFabric::start(name, &net);
    // Read back: the net file names nodes only, and the parser gives them the GUIDs
    // ibsim gives them, which the diagnostics show.
    let topo = ibnet::parse(&net).unwrap().fabric;
    let (_, sm_ca) = topo.cas().next().unwrap();
    let mut args = vec!["--routing", "updn", "--sweep-interval", "1"];
    args.extend_from_slice(extra);
    let sm = start_ibsmd(&f, IBSMD, &sm_ca.description, 0, &args);
    let ups = wait_settled(&f, 0, Duration::from_secs(20));
    let link = switch_link(&topo);
    (f, topo, sm, link, ups)
}

/// The diagnostics' checks on `topo` with one cable cut.
fn verify_cut(f: &PeerFabric, topo: &ibsm_topology::Fabric) -> Verified {
    verify_with_diags(
        f,
        topo.link_count() - 1,
        ca_ports(topo),
        topo.switch_count(),
        0,
    )
}

#[test]
fn ibsmd_reroutes_around_an_unlinked_cable_and_back_when_it_returns() {
    if !peers_present("ibsmd_reroute", &needed()) {
        return;
    }
    let (mut f, topo, sm, link, ups) = tree_with_ibsmd("reroute", &[]);
    let before = verify_topology(&f, &topo, 0);
    let (a, b) = (link.a, link.b);
    let (na, nb) = (topo.node(a.node).unwrap(), topo.node(b.node).unwrap());
    let (ga, gb) = (na.guid().0, nb.guid().0);
    assert_eq!(before.peer(ga, a.port), Some((gb, b.port)));
    assert!(
        before.lft_uses(ga, a.port) > 0 && before.lft_uses(gb, b.port) > 0,
        "the cable carried no route before it was pulled"
    );

    let mark = f.read("ibsmd.err").len();
    f.sim
        .console(&format!("Unlink \"{}\"[{}]", na.description, a.port));
    let ups = wait_settled(&f, ups, Duration::from_secs(20));
    let err = f.read("ibsmd.err");
    assert!(err.contains("trap 128"), "no trap 128 seen:\n{err}");
    // Both switches trap; the second trap's issuer has been read (or is still to be
    // read) by the sweep the first one started, or its PortStateChange latch shows
    // nothing new: one heavy sweep.
    let heavy = err[mark..].matches("SweepStarted { heavy: true }").count();
    assert_eq!(heavy, 1, "heavy sweeps after the Unlink:\n{}", &err[mark..]);
    let cut = verify_cut(&f, &topo);
    assert_eq!(cut.peer(ga, a.port), None);
    assert_eq!(cut.lft_uses(ga, a.port), 0, "LFT still uses the dead port");
    assert_eq!(cut.lft_uses(gb, b.port), 0, "LFT still uses the dead port");
    assert_eq!(cut.lids, before.lids, "LIDs moved on re-route");
    assert!(
        last_up(&err).contains("re-routed after a loss"),
        "the cut was not repaired by re-routing:\n{err}"
    );

    // SIGHUP: the repaired tables are recomputed from scratch on the same cut fabric.
    let pid = sm.0.as_ref().expect("running").id();
    let st = Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
    let ups = wait_settled(&f, ups, Duration::from_secs(20));
    let err = f.read("ibsmd.err");
    assert!(
        err.contains("SIGHUP: rebalancing"),
        "SIGHUP not taken:\n{err}"
    );
    assert!(
        last_up(&err).contains("(computed)"),
        "SIGHUP did not recompute the routes:\n{err}"
    );
    let rebalanced = verify_cut(&f, &topo);
    assert_eq!(rebalanced.lft_uses(ga, a.port), 0, "LFT uses the dead port");
    assert_eq!(rebalanced.lft_uses(gb, b.port), 0, "LFT uses the dead port");
    assert_eq!(rebalanced.lids, before.lids, "LIDs moved on rebalance");

    f.sim
        .console(&format!("ReLink \"{}\"[{}]", na.description, a.port));
    wait_settled(&f, ups, Duration::from_secs(20));
    let back = verify_topology(&f, &topo, 0);
    assert!(
        back.lft_uses(ga, a.port) > 0 && back.lft_uses(gb, b.port) > 0,
        "the returned cable carries no route"
    );
    assert_eq!(back.lids, before.lids, "LIDs moved on re-route");

    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["role"], "MASTER", "{json}");
    assert_eq!(json["routing_failures"], 0, "{json}");
}

/// `--rebalance-after`: after the Unlink's re-route, ibsmd recomputes the repaired tables
/// on its own once nothing has changed for that long, without a SIGHUP, and only once.
#[test]
fn ibsmd_rebalances_on_its_own_after_a_quiet_period() {
    if !peers_present("ibsmd_reroute", &needed()) {
        return;
    }
    let (mut f, topo, sm, link, ups) =
        tree_with_ibsmd("rebalance-after", &["--rebalance-after", "5"]);
    let na = topo.node(link.a.node).unwrap();
    f.sim
        .console(&format!("Unlink \"{}\"[{}]", na.description, link.a.port));
    let ups = wait_settled(&f, ups, Duration::from_secs(20));
    let err = f.read("ibsmd.err");
    assert!(
        last_up(&err).contains("re-routed after a loss"),
        "the cut was not repaired by re-routing:\n{err}"
    );
    // Five quiet seconds later: a recompute nobody asked for.
    let ups = wait_settled(&f, ups, Duration::from_secs(20));
    let err = f.read("ibsmd.err");
    assert!(
        last_up(&err).contains("(computed)"),
        "no rebalance after the quiet period:\n{err}"
    );
    assert!(!err.contains("SIGHUP"), "{err}");
    // Only once: more quiet seconds bring light sweeps only.
    std::thread::sleep(Duration::from_secs(4));
    let err = f.read("ibsmd.err");
    assert_eq!(err.matches("SUBNET UP").count(), ups, "{err}");
    let after = verify_cut(&f, &topo);
    assert_eq!(after.peer(na.guid().0, link.a.port), None);
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["routing_failures"], 0, "{json}");
}
