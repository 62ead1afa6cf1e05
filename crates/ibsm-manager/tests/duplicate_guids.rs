//! Duplicate GUIDs (issue #16 §5): a second node answering with a node GUID another
//! node has, and a CA whose two ports answer with one port GUID. The engine reports
//! each with both routes, leaves the second out (no LID, no configuration) and brings
//! the rest of the subnet up, where OpenSM would stop.

use ibsm_manager::{SmConfig, SmEvent, SubnetManager, driver};
use ibsm_sim::{NodeIdx, NodeKind, NodeSetup, Sim, SimConfig, SmaAgent};
use ibsm_transport::{Instant, Transport};
use ibsm_wire::DrPath;

const SW: u64 = 0x100;
const SM_CA: u64 = 0x200;
const B: u64 = 0x300;
const C: u64 = 0x400;
const D: u64 = 0x500;
/// The port GUID both of D's ports answer with.
const D_PORT: u64 = 0x5555;

struct Subnet {
    sim: Sim<SmaAgent>,
    sm: SubnetManager,
    events: Vec<SmEvent>,
    /// The clone of B (same node and port GUIDs), on switch port 4.
    clone: NodeIdx,
    d: NodeIdx,
    b: NodeIdx,
    c: NodeIdx,
}

/// One 8-port switch: the SM's CA on port 1, B on 2, C on 3, a clone of B on 4, and D
/// (two ports, one port GUID) on 5 and 6.
fn bring_up() -> Subnet {
    let mut sim: Sim<SmaAgent> = Sim::new(SimConfig::default());
    let sw = sim
        .add_node(NodeSetup::new(SW, NodeKind::Switch, 8, "switch"))
        .unwrap();
    let ca = |sim: &mut Sim<SmaAgent>, g, name: &str| {
        sim.add_node(NodeSetup::new(g, NodeKind::Ca, 1, name))
            .unwrap()
    };
    let sm_ca = ca(&mut sim, SM_CA, "sm");
    let b = ca(&mut sim, B, "b");
    let c = ca(&mut sim, C, "c");
    let clone = sim
        .add_clone(NodeSetup::new(B, NodeKind::Ca, 1, "clone of b"))
        .unwrap();
    let mut d_setup = NodeSetup::new(D, NodeKind::Ca, 2, "d");
    d_setup.port_guids = vec![0, D_PORT, D_PORT];
    let d = sim.add_node(d_setup).unwrap();
    for (n, p) in [(sm_ca, 1), (b, 2), (c, 3), (clone, 4), (d, 5)] {
        sim.connect(n, 1, sw, p).unwrap();
    }
    sim.connect(d, 2, sw, 6).unwrap();
    let mut port = sim.attach_sm(sm_ca, 1).unwrap();
    port.set_is_sm(true).unwrap();
    let mut sm = SubnetManager::new(SmConfig::default(), port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    let mut events = Vec::new();
    driver::run(&mut sm, &mut port, Instant::from_secs(60), |ev| {
        events.push(ev.clone());
        matches!(ev, SmEvent::SubnetUp { .. })
    })
    .unwrap();
    Subnet {
        sim,
        sm,
        events,
        clone,
        d,
        b,
        c,
    }
}

fn route(s: &str) -> DrPath {
    DrPath::parse_str(s).unwrap()
}

#[test]
fn duplicates_are_reported_left_out_and_the_rest_comes_up() {
    let s = bring_up();
    assert!(s.sm.is_up(), "{:?}", s.events);
    let dups: Vec<_> = s
        .events
        .iter()
        .filter_map(|e| match e {
            SmEvent::DuplicateGuid {
                guid,
                port,
                first,
                second,
            } => Some((*guid, *port, *first, *second)),
            _ => None,
        })
        .collect();
    assert_eq!(
        dups,
        [
            (B, false, route("0,1,2"), route("0,1,4")),
            (D_PORT, true, route("0,1,5"), route("0,1,6")),
        ]
    );
    // Not merged: one B, D with its first port only.
    let subnet = s.sm.subnet();
    assert_eq!(subnet.nodes.len(), 5);
    let d = &subnet.nodes[subnet.by_guid[&D]];
    assert_eq!(d.ports[1].guid, D_PORT);
    assert_eq!((d.ports[2].guid, d.ports[2].path.clone()), (0, None));
    // Not configured: no LID on the clone or D's second port; the others have theirs.
    let lid = |n: NodeIdx, p: u8| s.sim.with_agent(n, |a| a.sma().lid(p)).unwrap_or(0);
    assert_eq!(lid(s.clone, 1), 0);
    assert_eq!(lid(s.d, 2), 0);
    for (n, p, guid) in [(s.b, 1, B + 1), (s.c, 1, C + 1), (s.d, 1, D_PORT)] {
        assert_eq!(Some(lid(n, p)), s.sm.lids().get(&guid).map(|l| l.0));
        assert_ne!(lid(n, p), 0);
    }
    // The simulator's judgement: every problem is the two ports left out (and the
    // switch ports facing them); every path between the others arrives.
    let r = s.sim.verify();
    let left_out = [(s.clone, 1), (s.d, 2)];
    assert_eq!(r.no_lid, left_out, "{r:?}");
    assert!(r.duplicate_lids.is_empty(), "{r:?}");
    assert!(
        r.not_active
            .iter()
            .all(|&(n, p)| left_out.contains(&(n, p)) || n == NodeIdx(0) && [4, 6].contains(&p)),
        "{r:?}"
    );
    // Paths walked from the two ports left out start on an inactive port; every other
    // path arrives.
    let failed = usize::try_from(r.paths - r.ok).unwrap();
    assert!(
        r.ok > 0 && failed < ibsm_sim::VerifyReport::SAMPLES,
        "{r:?}"
    );
    assert_eq!(r.samples.len(), failed, "{r:?}");
    assert!(
        r.samples
            .iter()
            .all(|p| left_out.contains(&(p.src, p.src_port))),
        "{r:?}"
    );
}

/// A switch's clone met through a port of the original that has no cable: before, it
/// was taken for the original reached again and merged unreported (a cable into the
/// uncabled port). Now it is reported with both routes and left out; the rest comes up.
#[test]
fn a_switch_clone_met_on_an_uncabled_port_is_reported_not_merged() {
    const S2: u64 = 0x600;
    let mut sim: Sim<SmaAgent> = Sim::new(SimConfig::default());
    let s1 = sim
        .add_node(NodeSetup::new(SW, NodeKind::Switch, 8, "s1"))
        .unwrap();
    let sm_ca = sim
        .add_node(NodeSetup::new(SM_CA, NodeKind::Ca, 1, "sm"))
        .unwrap();
    let s2 = sim
        .add_node(NodeSetup::new(S2, NodeKind::Switch, 4, "s2"))
        .unwrap();
    let clone = sim
        .add_clone(NodeSetup::new(S2, NodeKind::Switch, 4, "clone of s2"))
        .unwrap();
    let b = sim
        .add_node(NodeSetup::new(B, NodeKind::Ca, 1, "b"))
        .unwrap();
    sim.connect(sm_ca, 1, s1, 1).unwrap();
    sim.connect(s2, 1, s1, 2).unwrap();
    sim.connect(b, 1, s2, 3).unwrap();
    // Port 2 of the original has no cable; the clone answers on its port 2.
    sim.connect(clone, 2, s1, 3).unwrap();
    let mut port = sim.attach_sm(sm_ca, 1).unwrap();
    port.set_is_sm(true).unwrap();
    let mut sm = SubnetManager::new(SmConfig::default(), port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    let mut events = Vec::new();
    driver::run(&mut sm, &mut port, Instant::from_secs(60), |ev| {
        events.push(ev.clone());
        matches!(ev, SmEvent::SubnetUp { .. })
    })
    .unwrap();
    assert!(sm.is_up(), "{events:?}");
    let dups: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::DuplicateGuid {
                guid,
                port,
                first,
                second,
            } => Some((*guid, *port, *first, *second)),
            _ => None,
        })
        .collect();
    assert_eq!(dups, [(S2, false, route("0,1,2"), route("0,1,3"))]);
    let subnet = sm.subnet();
    assert_eq!(subnet.nodes.len(), 4);
    let n = &subnet.nodes[subnet.by_guid[&S2]];
    assert_eq!(n.ports[2].peer, None, "merged into the uncabled port");
    let n1 = &subnet.nodes[subnet.by_guid[&SW]];
    assert_eq!(n1.ports[3].peer, None);
    // The clone got no LID; B behind the original did.
    let lid = |n: NodeIdx, p: u8| sim.with_agent(n, |a| a.sma().lid(p)).unwrap_or(0);
    assert_eq!(lid(clone, 0), 0);
    assert_ne!(lid(b, 1), 0);
    let _ = s2;
}
