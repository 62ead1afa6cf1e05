//! Peer test: ibsmd's port health policy on ibsim, judged by the diagnostics.
//!
//! A switch-to-switch cable of an ibsim fat tree is pulled and put back on ibsim's
//! console (`Unlink` / `ReLink`) more often than `--flap-count` allows. ibsmd marks both
//! ends unhealthy (a warning naming the port and why), and:
//!
//! (ibsim keeps a disabled port's LinkState, and the far end's, as they were; only
//! PhysLinkState says Disabled, so ibsmd must not explore across such a cable.)
//!
//! - without `--babbling-port-policy` the cable stays up (ibnetdiscover sees every link)
//!   but no LFT entry on either switch points at it (`ibroute` via `verify_topology`),
//!   every CA still reaches every LID, and no LID moved; once the ports have been quiet
//!   for `--unhealthy-quiet-period` they are taken back and the cable carries routes again;
//! - with `--babbling-port-policy` ibsmd also disables the link: `smpquery portinfo` reads
//!   PhysLinkState Disabled on the port ibsmd disabled, the diagnostics see the fabric
//!   without that cable; after the quiet period the link is enabled, trains, and carries
//!   routes again.

use std::time::{Duration, Instant};

use ibsm_tests::diags::text_field;
use ibsm_tests::peer::{
    Daemon, PeerFabric, Verified, ca_ports, diag, needed, net_file, start_ibsmd, stop_ibsmd,
    switch_link, verify_topology, verify_with_diags, wait_settled,
};
use ibsm_tests::peers_present;
use ibsm_topology::{Link, generate, ibnet};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

/// The quiet period the tests run with, in seconds: longer than a verification of the
/// fabric with the diags takes on a loaded 2-core machine (4 s and more seen), so the
/// port is not taken back, and the tables rewritten, while they are being read.
const QUIET: u64 = 20;

/// Flaps the tests cause: one more than `--flap-count` allows.
const FLAPS: usize = 3;

/// Waits until ibsmd's log holds `text` at least `n` times.
fn wait_for(f: &PeerFabric, text: &str, n: usize, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let err = f.read("ibsmd.err");
        if err.matches(text).count() >= n {
            return err;
        }
        assert!(
            Instant::now() < deadline,
            "no {n} x {text:?} in ibsmd's log within {limit:?}:\n{err}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `PhysLinkState` as `smpquery portinfo` prints it (`PhysLinkState:....LinkUp`).
fn phys_state(portinfo: &str) -> &str {
    text_field(portinfo, "PhysLinkState").unwrap_or_default()
}

/// `smpquery portinfo` of port `port` of the switch with GUID `guid`.
fn portinfo(f: &PeerFabric, v: &Verified, guid: u64, port: u8) -> String {
    let lid = v.lids[&(guid, 0)].to_string();
    diag(f, "smpquery", &["portinfo", &lid, &port.to_string()])
}

struct Setup {
    f: PeerFabric,
    topo: ibsm_topology::Fabric,
    sm: Daemon,
    link: Link,
    before: Verified,
    ups: usize,
}

/// An ibsim radix-8 2-level fat tree with ibsmd (updn, 1 s light sweeps, flap count 2 in
/// 120 s, the quiet period) on its first CA, settled and verified; the cable flapped is
/// the first switch-to-switch one, which carries routes.
fn setup(name: &str, extra: &[&str]) -> Setup {
    let net = net_file(
        &generate::fat_tree(8, 2).unwrap(),
        "2-level radix-8 fat tree",
    );
    let f = PeerFabric::start(name, &net);
    let topo = ibnet::parse(&net).unwrap().fabric;
    let (_, sm_ca) = topo.cas().next().unwrap();
    let quiet = QUIET.to_string();
    let mut args = vec![
        "--routing",
        "updn",
        "--sweep-interval",
        "1",
        "--flap-count",
        "2",
        "--flap-window",
        "120",
        "--unhealthy-quiet-period",
        &quiet,
    ];
    args.extend_from_slice(extra);
    let sm = start_ibsmd(&f, IBSMD, &sm_ca.description, 0, &args);
    let ups = wait_settled(&f, 0, Duration::from_secs(20));
    let link = switch_link(&topo);
    let before = verify_topology(&f, &topo, 0);
    let (ga, gb) = guids(&topo, link);
    assert!(
        before.lft_uses(ga, link.a.port) > 0 && before.lft_uses(gb, link.b.port) > 0,
        "the cable carried no route before it flapped"
    );
    Setup {
        f,
        topo,
        sm,
        link,
        before,
        ups,
    }
}

fn guids(topo: &ibsm_topology::Fabric, link: Link) -> (u64, u64) {
    let g = |e: ibsm_topology::Endpoint| topo.node(e.node).unwrap().guid().0;
    (g(link.a), g(link.b))
}

/// Pulls and replaces the cable `FLAPS` times, letting ibsmd see each pull; returns
/// where in ibsmd's log the first pull is.
fn flap(s: &mut Setup) -> usize {
    let na = s.topo.node(s.link.a.node).unwrap().description.clone();
    let mark = s.f.read("ibsmd.err").len();
    let mut ups = s.ups;
    for _ in 0..FLAPS {
        s.f.sim
            .console(&format!("Unlink \"{na}\"[{}]", s.link.a.port));
        ups = wait_settled(&s.f, ups, Duration::from_secs(20));
        s.f.sim
            .console(&format!("ReLink \"{na}\"[{}]", s.link.a.port));
        ups = wait_settled(&s.f, ups, Duration::from_secs(20));
    }
    mark
}

/// The engine's unhealthy warnings for both cable ends (flapping), in the log after
/// `mark`.
fn check_marked(f: &PeerFabric, topo: &ibsm_topology::Fabric, link: Link, mark: usize) {
    let err = f.read("ibsmd.err");
    let (ga, gb) = guids(topo, link);
    for (g, p) in [(ga, link.a.port), (gb, link.b.port)] {
        let line = format!("port unhealthy port={g:#018x}/{p} reason=link went down");
        assert!(
            err[mark..].contains(&line),
            "no {line:?} in ibsmd's log:\n{}",
            &err[mark..]
        );
    }
}

/// Waits until ibsmd's log, from byte `from` on, holds a SUBNET UP followed by a light
/// sweep that found nothing to do.
fn wait_settled_after(f: &PeerFabric, from: usize, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let err = f.read("ibsmd.err");
        if let Some(up) = err.get(from..).and_then(|t| t.rfind("SUBNET UP")) {
            if err[from + up..].contains("light sweep: nothing to do") {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "ibsmd did not settle within {limit:?}:\n{}",
            err.get(from..).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until both cable ends are taken back (from where in ibsmd's log the later
/// of the two lines is).
fn wait_taken_back(s: &Setup) -> usize {
    let (ga, gb) = guids(&s.topo, s.link);
    let mut from = 0;
    for (g, p) in [(ga, s.link.a.port), (gb, s.link.b.port)] {
        let text = format!("port healthy again port={g:#018x}/{p} was=link went down");
        let err = wait_for(&s.f, &text, 1, Duration::from_secs(QUIET + 15));
        from = from.max(err.find(&text).unwrap());
    }
    from
}

/// Once ibsmd has settled after `from`, the cable carries routes again.
fn check_used_again(s: &Setup, from: usize) {
    let (ga, gb) = guids(&s.topo, s.link);
    wait_settled_after(&s.f, from, Duration::from_secs(20));
    let back = verify_topology(&s.f, &s.topo, 0);
    assert!(
        back.lft_uses(ga, s.link.a.port) > 0 && back.lft_uses(gb, s.link.b.port) > 0,
        "the cable carries no route after its ports were taken back"
    );
    assert_eq!(back.lids, s.before.lids, "LIDs moved");
}

#[test]
fn a_flapping_cable_is_routed_around_until_quiet_then_used_again() {
    if !peers_present("health_ibsim", &needed()) {
        return;
    }
    let mut s = setup("health-route", &[]);
    let mark = flap(&mut s);
    check_marked(&s.f, &s.topo, s.link, mark);
    // The mark makes a heavy sweep route around the cable, which may still be writing
    // the tables (a table half old, half new can loop for a moment): read them once the
    // sweep after the mark is up and a light sweep found nothing more to do.
    let marked_at =
        s.f.read("ibsmd.err")
            .rfind("port unhealthy port=")
            .unwrap_or(mark);
    wait_settled_after(&s.f, marked_at, Duration::from_secs(30));
    // The cable is back and up, but left out of every route.
    let (ga, gb) = guids(&s.topo, s.link);
    let now = verify_topology(&s.f, &s.topo, 0);
    assert!(
        !s.f.read("ibsmd.err")[mark..].contains("port healthy again"),
        "the quiet period ended while the tables were read: raise QUIET"
    );
    assert_eq!(now.peer(ga, s.link.a.port), Some((gb, s.link.b.port)));
    assert_eq!(
        now.lft_uses(ga, s.link.a.port),
        0,
        "LFT uses an unhealthy port"
    );
    assert_eq!(
        now.lft_uses(gb, s.link.b.port),
        0,
        "LFT uses an unhealthy port"
    );
    assert_eq!(now.lids, s.before.lids, "LIDs moved");
    let from = wait_taken_back(&s);
    check_used_again(&s, from);
    let json = stop_ibsmd(&s.f, s.sm);
    assert_eq!(json["routing_failures"], 0, "{json}");
}

#[test]
fn babbling_port_policy_disables_a_flapping_link_until_quiet() {
    if !peers_present("health_ibsim", &needed()) {
        return;
    }
    let mut s = setup("health-disable", &["--babbling-port-policy"]);
    let mark = flap(&mut s);
    check_marked(&s.f, &s.topo, s.link, mark);
    // ibsmd disabled the link: one end reads Disabled, and the fabric as the
    // diagnostics see it lacks that cable; routes and LIDs are whole otherwise.
    let (ga, gb) = guids(&s.topo, s.link);
    let wait = Instant::now() + Duration::from_secs(10);
    let (pa, pb) = loop {
        let (pa, pb) = (
            portinfo(&s.f, &s.before, ga, s.link.a.port),
            portinfo(&s.f, &s.before, gb, s.link.b.port),
        );
        if phys_state(&pa) == "Disabled" || phys_state(&pb) == "Disabled" || Instant::now() > wait {
            break (pa, pb);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        phys_state(&pa) == "Disabled" || phys_state(&pb) == "Disabled",
        "neither end is Disabled:\n{pa}\n{pb}"
    );
    let cut = verify_with_diags(
        &s.f,
        s.topo.link_count() - 1,
        ca_ports(&s.topo),
        s.topo.switch_count(),
        0,
    );
    assert_eq!(cut.peer(ga, s.link.a.port), None);
    assert_eq!(cut.lft_uses(ga, s.link.a.port), 0);
    assert_eq!(cut.lft_uses(gb, s.link.b.port), 0);
    assert_eq!(cut.lids, s.before.lids, "LIDs moved");
    // Taken back: ibsmd enables what it disabled (PhysLinkState leaves Disabled).
    let from = wait_taken_back(&s);
    let wait = Instant::now() + Duration::from_secs(10);
    while [
        portinfo(&s.f, &s.before, ga, s.link.a.port),
        portinfo(&s.f, &s.before, gb, s.link.b.port),
    ]
    .iter()
    .any(|p| phys_state(p) == "Disabled")
    {
        assert!(Instant::now() < wait, "ibsmd did not enable the link again");
        std::thread::sleep(Duration::from_millis(200));
    }
    // ibsim does not train a link that is enabled again (it stays Polling, which ibsmd
    // does not explore across); pulling and replacing the cable on its console does.
    let na = s.topo.node(s.link.a.node).unwrap().description.clone();
    let mark = s.f.read("ibsmd.err").len().max(from);
    s.f.sim
        .console(&format!("Unlink \"{na}\"[{}]", s.link.a.port));
    s.f.sim
        .console(&format!("ReLink \"{na}\"[{}]", s.link.a.port));
    check_used_again(&s, mark);
    assert_eq!(
        phys_state(&portinfo(&s.f, &s.before, ga, s.link.a.port)),
        "LinkUp"
    );
    let json = stop_ibsmd(&s.f, s.sm);
    assert_eq!(json["routing_failures"], 0, "{json}");
}
