//! Peer test: the reference topology (`--topology-ref`) on ibsim, judged by the
//! diagnostics.
//!
//! An ibsim fat tree is started with one cable trained at 1x (`w=1` in the net file); its
//! `ibnetdiscover` picture, with that cable planned at the width of the others, is the
//! reference. Then, on ibsim's console, two cables swap their far ends and a third is
//! pulled. ibsmd must name exactly those four differences, once, and `ibsm-topodiff REF`
//! (a live discovery) must print the same and exit non-zero; the plan brought up to date
//! and re-read at SIGHUP resolves all four. With
//! `--topology-ref-policy isolate` the miswired cables carry no LFT entry (`ibroute`)
//! and every CA still reaches every LID.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use ibsm_tests::peer::{
    PeerFabric, Verified, ca_ports, client, diag, needed, net_file, run_bounded, start_ibsmd,
    stop_ibsmd, verify_with_diags, wait_settled,
};
use ibsm_tests::peers_present;
use ibsm_topology::diff::{Difference, PortRef, WiredEnd};
use ibsm_topology::ibnet::{self, Dialect, WriteOptions};
use ibsm_topology::{ActiveWidth, Endpoint, Link, NodeId, generate};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

/// The fabric as planned and as cabled, the cables involved and the reference file.
struct Setup {
    f: PeerFabric,
    /// `ibnetdiscover`'s picture before the rewiring (GUIDs as ibsim gave them).
    seen: ibsm_topology::Fabric,
    /// The cables of `seen` that the test swaps (x, y), pulls and narrows.
    x: Link,
    y: Link,
    pulled: Link,
    narrow: Link,
    /// The SM's CA.
    sm_ca: String,
    reference: PathBuf,
}

/// The node of `f` described `desc`.
fn by_desc(f: &ibsm_topology::Fabric, desc: &str) -> NodeId {
    f.nodes()
        .find(|(_, n)| n.description == desc)
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no node {desc:?}"))
}

/// `l` of `from` as a cable of `to` (nodes matched by description).
fn translate(from: &ibsm_topology::Fabric, to: &ibsm_topology::Fabric, l: Link) -> Link {
    let end = |e: Endpoint| Endpoint {
        node: by_desc(to, &from.node(e.node).unwrap().description),
        port: e.port,
    };
    Link {
        a: end(l.a),
        b: end(l.b),
    }
}

fn desc(f: &ibsm_topology::Fabric, e: Endpoint) -> String {
    f.node(e.node).unwrap().description.clone()
}

fn setup(name: &str) -> Setup {
    let mut plan = generate::fat_tree(8, 2).unwrap();
    let isl: Vec<Link> = plan
        .links()
        .map(|(_, l)| *l)
        .filter(|l| {
            plan.node(l.a.node).unwrap().is_switch() && plan.node(l.b.node).unwrap().is_switch()
        })
        .collect();
    // Four cables, no two with a node in common.
    let mut picked: Vec<Link> = Vec::new();
    for l in isl {
        let used = |n| picked.iter().any(|p: &Link| p.a.node == n || p.b.node == n);
        if !used(l.a.node) && !used(l.b.node) {
            picked.push(l);
        }
    }
    assert!(picked.len() >= 4, "fat tree too small");
    let narrow = picked[3];
    for e in [narrow.a, narrow.b] {
        plan.node_mut(e.node)
            .unwrap()
            .port_mut(e.port)
            .unwrap()
            .width = ActiveWidth::X1;
    }
    let net = net_file(&plan, "2-level radix-8 fat tree, one cable at 1x");
    let f = PeerFabric::start(name, &net);
    let mut seen = ibnet::parse(&diag(&f, "ibnetdiscover", &[]))
        .unwrap()
        .fabric;
    let [x, y, pulled, narrow] =
        [picked[0], picked[1], picked[2], narrow].map(|l| translate(&plan, &seen, l));
    assert_eq!(
        seen.port(narrow.a.node, narrow.a.port).unwrap().width,
        ActiveWidth::X1,
        "ibsim did not train the narrow cable at 1x"
    );
    // The plan: the narrow cable as wide as the others.
    let planned = seen.port(x.a.node, x.a.port).unwrap().width;
    assert_ne!(planned, ActiveWidth::X1);
    for e in [narrow.a, narrow.b] {
        seen.node_mut(e.node)
            .unwrap()
            .port_mut(e.port)
            .unwrap()
            .width = planned;
    }
    let reference = f.path("reference.topo");
    let text = ibnet::write(
        &seen,
        &WriteOptions {
            dialect: Dialect::Ibnetdiscover,
            title: Some("the cabling plan".into()),
        },
    )
    .unwrap();
    std::fs::write(&reference, text).unwrap();
    let sm_ca = seen.cas().next().unwrap().1.description.clone();
    Setup {
        f,
        seen,
        x,
        y,
        pulled,
        narrow,
        sm_ca,
        reference,
    }
}

/// Swaps the far ends of x and y and pulls `pulled`, on ibsim's console.
fn rewire(s: &mut Setup) {
    let g = &s.seen;
    let (xa, xb, ya, yb) = (
        desc(g, s.x.a),
        desc(g, s.x.b),
        desc(g, s.y.a),
        desc(g, s.y.b),
    );
    let (xp, xq, yp, yq) = (s.x.a.port, s.x.b.port, s.y.a.port, s.y.b.port);
    for cmd in [
        format!("Unlink \"{xa}\"[{xp}]"),
        format!("Unlink \"{ya}\"[{yp}]"),
        format!("Link \"{xa}\"[{xp}] \"{yb}\"[{yq}]"),
        format!("Link \"{ya}\"[{yp}] \"{xb}\"[{xq}]"),
        format!("Unlink \"{}\"[{}]", desc(g, s.pulled.a), s.pulled.a.port),
    ] {
        s.f.sim.console(&cmd);
    }
}

fn at(f: &ibsm_topology::Fabric, e: Endpoint) -> PortRef {
    PortRef::new(f.guid_of(e.node), e.port)
}

/// What must be named, as the SM and the tool print it.
fn expected(s: &Setup) -> BTreeSet<String> {
    let f = &s.seen;
    let miswire = |p: Endpoint, should: Endpoint, q: Endpoint, should_q: Endpoint| {
        let (a, b) = if at(f, p) < at(f, q) {
            ((p, should), (q, should_q))
        } else {
            ((q, should_q), (p, should))
        };
        Difference::Miswired {
            a: WiredEnd {
                port: at(f, a.0),
                expected: Some(at(f, a.1)),
            },
            b: WiredEnd {
                port: at(f, b.0),
                expected: Some(at(f, b.1)),
            },
        }
    };
    let (pa, pb) = (at(f, s.pulled.a), at(f, s.pulled.b));
    let (na, nb) = (at(f, s.narrow.a), at(f, s.narrow.b));
    let planned = f.port(s.narrow.a.node, s.narrow.a.port).unwrap();
    [
        miswire(s.x.a, s.x.b, s.y.b, s.y.a),
        miswire(s.y.a, s.y.b, s.x.b, s.x.a),
        Difference::MissingCable {
            a: pa.min(pb),
            b: pa.max(pb),
        },
        Difference::Degraded {
            a: na.min(nb),
            b: na.max(nb),
            expected: (planned.width, planned.speed),
            actual: (ActiveWidth::X1, planned.speed),
        },
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

/// The lines of ibsmd's log that name a difference (`reference topology: ...`
/// warnings; the message is followed by the event's fields).
fn logged(f: &PeerFabric) -> Vec<String> {
    f.read("ibsmd.err")
        .lines()
        .filter_map(|l| {
            let d = l.split("reference topology: ").nth(1)?;
            (!d.starts_with("resolved")).then(|| d.trim().to_owned())
        })
        .collect()
}

fn wait_logged(f: &PeerFabric, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let l = logged(f);
        if l.len() >= n {
            return l;
        }
        assert!(
            Instant::now() < deadline,
            "ibsmd named {} of {n} differences:\n{}",
            l.len(),
            f.read("ibsmd.err")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Which of `want` the `lines` name, each line naming exactly one; panics on a line that
/// names none (an unexpected difference).
fn named(lines: &[String], want: &BTreeSet<String>) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            let hits: Vec<&String> = want
                .iter()
                .filter(|w| l == *w || l.starts_with(&format!("{w} ")))
                .collect();
            assert_eq!(hits.len(), 1, "{l:?} names none (or several) of {want:#?}");
            hits[0].clone()
        })
        .collect()
}

/// The tool beside ibsmd (built with the workspace).
fn topodiff() -> Option<PathBuf> {
    let p = PathBuf::from(IBSMD).with_file_name("ibsm-topodiff");
    p.exists().then_some(p)
}

/// `ibsm-topodiff REF` (a live discovery from the SM's CA) prints `want` and fails.
fn check_tool(s: &Setup, reference: &str, want: &BTreeSet<String>) {
    let Some(tool) = topodiff() else {
        assert!(
            std::env::var_os("IBSM_REQUIRE_PEERS").is_none(),
            "ibsm-topodiff not built beside ibsmd"
        );
        eprintln!("SKIPPED: ibsm-topodiff not built (run the workspace's tests)");
        return;
    };
    let mut c = client(&s.f, tool.to_str().unwrap(), Some(&s.sm_ca), "tool");
    c.arg(reference);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(!ok, "ibsm-topodiff found no difference:\n{out}\n{err}");
    let lines: Vec<String> = out.lines().map(|l| l.trim().to_owned()).collect();
    let printed: Vec<String> = named(&lines, want);
    let printed: BTreeSet<String> = printed.into_iter().collect();
    assert_eq!(printed, *want, "ibsm-topodiff's differences:\n{out}\n{err}");
}

#[test]
fn the_sm_and_the_tool_name_exactly_the_differences() {
    if !peers_present("topo_ref_ibsim", &needed()) {
        return;
    }
    let mut s = setup("toporef_report");
    rewire(&mut s);
    let want = expected(&s);
    let reference = s.reference.to_str().unwrap().to_owned();
    let sm = start_ibsmd(
        &s.f,
        IBSMD,
        &s.sm_ca,
        0,
        &["--topology-ref", &reference, "--sweep-interval", "1"],
    );
    wait_settled(&s.f, 0, Duration::from_secs(30));
    let got = named(&wait_logged(&s.f, want.len()), &want);
    // Named once each, however many sweeps ran since.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        named(&logged(&s.f), &want),
        got,
        "a difference was reported again"
    );
    let got_set: BTreeSet<String> = got.iter().cloned().collect();
    assert_eq!(
        got_set.len(),
        got.len(),
        "a difference named twice: {got:?}"
    );
    assert_eq!(got_set, want, "ibsmd's differences");

    check_tool(&s, &reference, &want);

    // The plan is brought up to date and re-read at SIGHUP: everything resolved.
    std::fs::write(&s.reference, diag(&s.f, "ibnetdiscover", &[])).unwrap();
    let pid = sm.0.as_ref().unwrap().id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s
        .f
        .read("ibsmd.err")
        .contains("fabric matches the reference topology")
    {
        assert!(
            Instant::now() < deadline,
            "no match after SIGHUP:\n{}",
            s.f.read("ibsmd.err")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let err = s.f.read("ibsmd.err");
    assert!(err.contains("SIGHUP: reference topology re-read"), "{err}");
    let resolved: Vec<String> = err
        .lines()
        .filter_map(|l| l.split("reference topology: resolved: ").nth(1))
        .map(|d| d.trim().to_owned())
        .collect();
    let resolved: BTreeSet<String> = named(&resolved, &want).into_iter().collect();
    assert_eq!(resolved, want, "resolved at SIGHUP");
    let _ = stop_ibsmd(&s.f, sm);
}

#[test]
fn isolate_routes_nothing_over_miswired_cables() {
    if !peers_present("topo_ref_ibsim", &needed()) {
        return;
    }
    let mut s = setup("toporef_isolate");
    rewire(&mut s);
    let reference = s.reference.to_str().unwrap().to_owned();
    let sm = start_ibsmd(
        &s.f,
        IBSMD,
        &s.sm_ca,
        0,
        &[
            "--topology-ref",
            &reference,
            "--topology-ref-policy",
            "isolate",
            "--routing",
            "updn",
        ],
    );
    wait_settled(&s.f, 0, Duration::from_secs(30));
    wait_logged(&s.f, 4);
    let g = &s.seen;
    // One cable fewer than planned; every CA port cabled.
    let v: Verified = verify_with_diags(&s.f, g.link_count() - 1, ca_ports(g), g.switch_count(), 0);
    for e in [s.x.a, s.x.b, s.y.a, s.y.b] {
        let guid = g.guid_of(e.node).0;
        assert!(v.peer(guid, e.port).is_some(), "{e:?} has no cable");
        assert_eq!(
            v.lft_uses(guid, e.port),
            0,
            "a miswired cable end ({}) carries routes",
            desc(g, e)
        );
    }
    // The narrow cable is where it belongs: only slow, so it still carries routes.
    let n = s.narrow.a;
    assert!(
        v.lft_uses(g.guid_of(n.node).0, n.port) > 0,
        "the narrow cable was isolated"
    );
    let _ = stop_ibsmd(&s.f, sm);
}
