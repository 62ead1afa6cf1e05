//! Discovery against real SMAs on `ibsm-sim`: the fabric it returns is the fabric the
//! simulator runs (nodes, GUIDs, descriptions, every cable with both ends), down ports
//! are kept, loss costs retries, and an unanswered route is reported.

use std::collections::BTreeSet;
use std::time::Duration;

use super::*;
use ibsm_sim::{Fault, Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::{Fabric, Guid, generate};
use ibsm_transport::TxConfig;

fn shape(f: &Fabric) -> BTreeSet<(u64, u8, u64, u8)> {
    f.links()
        .map(|(_, l)| {
            let a = (f.guid_of(l.a.node).0, l.a.port);
            let b = (f.guid_of(l.b.node).0, l.b.port);
            let (x, y) = if a < b { (a, b) } else { (b, a) };
            (x.0, x.1, y.0, y.1)
        })
        .collect()
}

fn nodes(f: &Fabric) -> BTreeSet<(u64, bool, u8, String)> {
    f.nodes()
        .map(|(_, n)| {
            (
                n.guid().0,
                n.is_switch(),
                n.num_ports(),
                n.description.clone(),
            )
        })
        .collect()
}

fn sim_of(fabric: &Fabric) -> (Sim<SmaAgent>, SimPort<SmaAgent>) {
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(fabric, SimConfig::default()).unwrap();
    let first = fabric.cas().next().unwrap().1.guid().0;
    let port = sim.attach_sm(sim.node_by_guid(first).unwrap(), 1).unwrap();
    (sim, port)
}

fn run(port: &mut SimPort<SmaAgent>, cfg: SmpConfig) -> (Discovered, TxStats) {
    let mut d = Discovery::new(cfg);
    let until = port.now() + Duration::from_secs(120);
    crate::run_to_idle(&mut d, port, until).unwrap();
    assert!(d.is_done());
    let stats = d.stats();
    (d.into_found(), stats)
}

#[test]
fn a_fat_tree_is_found_as_the_simulator_runs_it() {
    let fabric = generate::k_ary_n_tree(4, 3).unwrap();
    let (_sim, mut port) = sim_of(&fabric);
    let (found, stats) = run(&mut port, SmpConfig::default());
    let got = found.to_fabric().unwrap();
    assert_eq!(nodes(&got), nodes(&fabric));
    assert_eq!(shape(&got), shape(&fabric));
    assert!(found.unreachable.is_empty());
    // Every port of every switch was read, CA ports through their own cable.
    for n in &found.nodes {
        for (p, port) in n.ports.iter().enumerate() {
            if n.is_switch() || p == usize::from(n.info.local_port_num) {
                assert!(port.info.is_some(), "{:#x} port {p}", n.info.node_guid);
            }
        }
    }
    // No SMP twice: NodeInfo per cable end reached, one NodeDescription per node, one
    // PortInfo per switch port and CA port.
    assert_eq!(stats.retried, 0);
    // Each port answers Active/Init with a width and speed the model keeps.
    let (_, sw) = got.switches().next().unwrap();
    let p1 = sw.port(1).unwrap();
    assert_ne!(p1.state, ibsm_topology::LinkState::Unknown);
    assert_ne!(p1.width, ibsm_topology::ActiveWidth::Unknown);
    assert_ne!(p1.speed, ibsm_topology::ActiveSpeed::Unknown);
}

#[test]
fn a_torus_is_found_too() {
    let fabric = generate::grid(&generate::Grid {
        dims: vec![3, 3],
        torus: true,
        cas_per_switch: 1,
    })
    .unwrap();
    let (_sim, mut port) = sim_of(&fabric);
    let (found, _) = run(&mut port, SmpConfig::default());
    let got = found.to_fabric().unwrap();
    assert_eq!(nodes(&got), nodes(&fabric));
    assert_eq!(shape(&got), shape(&fabric));
}

#[test]
fn down_ports_are_kept_and_cut_cables_are_not_crossed() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (mut sim, mut port) = sim_of(&fabric);
    // Cut one leaf-to-spine cable.
    let (_, leaf) = fabric.switches().next().unwrap();
    let (up, peer) = leaf
        .ports()
        .filter_map(|(p, port)| Some((p, port.peer()?)))
        .find(|(_, e)| fabric.node(e.node).unwrap().is_switch())
        .unwrap();
    let leaf_ix = sim.node_by_guid(leaf.guid().0).unwrap();
    sim.apply(Fault::LinkDown {
        node: leaf_ix,
        port: up,
    });
    let (found, _) = run(&mut port, SmpConfig::default());
    let got = found.to_fabric().unwrap();
    let mut want = shape(&fabric);
    let cut = {
        let a = (leaf.guid().0, up);
        let b = (fabric.guid_of(peer.node).0, peer.port);
        let (x, y) = if a < b { (a, b) } else { (b, a) };
        (x.0, x.1, y.0, y.1)
    };
    assert!(want.remove(&cut));
    assert_eq!(shape(&got), want);
    // The port is in the model, Down, with no cable.
    let n = found.by_guid[&leaf.guid().0];
    let p = &found.nodes[n].ports[usize::from(up)];
    assert_eq!(p.info.map(|i| i.port_state), Some(PortState::Down));
    assert!(p.peer.is_none());
    let gp = got
        .node(got.node_by_guid(leaf.guid()).unwrap())
        .unwrap()
        .port(up)
        .unwrap();
    assert_eq!(gp.state, ibsm_topology::LinkState::Down);
}

#[test]
fn loss_costs_retries_not_nodes() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (mut sim, mut port) = sim_of(&fabric);
    sim.apply(Fault::DropRate { ppm: 50_000 });
    let cfg = SmpConfig {
        tx: TxConfig {
            retries: 8,
            ..SmpConfig::default().tx
        },
        ..SmpConfig::default()
    };
    let (found, stats) = run(&mut port, cfg);
    assert!(stats.retried > 0, "{stats:?}");
    let got = found.to_fabric().unwrap();
    assert_eq!(nodes(&got), nodes(&fabric));
    assert_eq!(shape(&got), shape(&fabric));
}

#[test]
fn a_route_nobody_answers_is_reported_and_the_rest_found() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (mut sim, mut port) = sim_of(&fabric);
    // Every SMP to or through one spine switch vanishes.
    let spine = fabric
        .switches()
        .find(|(_, s)| {
            s.ports().all(|(_, p)| {
                p.peer()
                    .is_none_or(|e| fabric.node(e.node).unwrap().is_switch())
            })
        })
        .unwrap()
        .1
        .guid()
        .0;
    let ix = sim.node_by_guid(spine).unwrap();
    for p in 1..=fabric
        .node(fabric.node_by_guid(Guid(spine)).unwrap())
        .unwrap()
        .num_ports()
    {
        sim.apply(Fault::LinkDropRate {
            node: ix,
            port: p,
            ppm: 1_000_000,
        });
    }
    let cfg = SmpConfig {
        tx: TxConfig {
            retries: 1,
            ..SmpConfig::default().tx
        },
        ..SmpConfig::default()
    };
    let (found, _) = run(&mut port, cfg);
    assert!(!found.by_guid.contains_key(&spine));
    assert!(!found.unreachable.is_empty());
    assert!(
        found
            .unreachable
            .iter()
            .all(|(_, e)| matches!(e, SmpError::Timeout { attempts: 2, .. }))
    );
    assert_eq!(found.nodes.len(), fabric.node_count() - 1);
}

#[test]
fn extended_speeds_are_asked_for_and_kept() {
    use ibsm_topology::ActiveSpeed;
    for speed in [ActiveSpeed::Ndr, ActiveSpeed::Xdr] {
        let fabric = generate::k_ary_n_tree(2, 2).unwrap();
        let cfg = SimConfig {
            link_speed: speed,
            ..SimConfig::default()
        };
        let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, cfg).unwrap();
        let first = fabric.cas().next().unwrap().1.guid().0;
        let mut port = sim.attach_sm(sim.node_by_guid(first).unwrap(), 1).unwrap();
        let (found, _) = run(&mut port, SmpConfig::default());
        // Every port read was read with bit 31, so its LinkSpeedExt* fields are there.
        let mut read = 0;
        for n in &found.nodes {
            for port in n.ports.iter().filter(|p| p.info.is_some()) {
                let pi = port.info.unwrap();
                assert!(port.ext_speeds, "{:#x}", n.info.node_guid);
                assert!(!pi.link_speed_ext_supported.is_empty(), "{pi:?}");
                read += 1;
            }
        }
        assert!(read > 0);
        // The fabric keeps the extended speed of every cable.
        let got = found.to_fabric().unwrap();
        assert_eq!(shape(&got), shape(&fabric));
        for (_, l) in got.links() {
            for end in [l.a, l.b] {
                let p = got.node(end.node).unwrap().port(end.port).unwrap();
                assert_eq!(p.speed, speed, "{speed:?}");
            }
        }
    }
}

/// Two CAs with one node GUID (the second a clone of the first) and a CA whose two
/// ports answer with one port GUID: both are reported with their routes, the second of
/// each is left out, and the rest is found as it is.
#[test]
fn duplicate_guids_are_reported_and_left_out() {
    use ibsm_sim::{NodeKind, NodeSetup};
    let mut sim: Sim<SmaAgent> = Sim::new(SimConfig::default());
    let sw = sim
        .add_node(NodeSetup::new(0x100, NodeKind::Switch, 8, "switch"))
        .unwrap();
    let mut ca = |g, name: &str| {
        sim.add_node(NodeSetup::new(g, NodeKind::Ca, 1, name))
            .unwrap()
    };
    let (me, b, c) = (ca(0x200, "me"), ca(0x300, "b"), ca(0x400, "c"));
    let clone = sim
        .add_clone(NodeSetup::new(0x300, NodeKind::Ca, 1, "clone of b"))
        .unwrap();
    let mut d = NodeSetup::new(0x500, NodeKind::Ca, 2, "d");
    d.port_guids = vec![0, 0x5555, 0x5555];
    let d = sim.add_node(d).unwrap();
    for (n, p) in [(me, 1), (b, 2), (c, 3), (clone, 4), (d, 5)] {
        sim.connect(n, 1, sw, p).unwrap();
    }
    sim.connect(d, 2, sw, 6).unwrap();
    let mut port = sim.attach_sm(me, 1).unwrap();
    let (found, _) = run(&mut port, SmpConfig::default());
    let r = |s| DrPath::parse_str(s).unwrap();
    assert_eq!(
        found.duplicates,
        [
            Duplicate {
                guid: 0x300,
                kind: DuplicateKind::Node,
                first: r("0,1,2"),
                second: r("0,1,4"),
            },
            Duplicate {
                guid: 0x5555,
                kind: DuplicateKind::Port,
                first: r("0,1,5"),
                second: r("0,1,6"),
            },
        ]
    );
    let got = found.to_fabric().unwrap();
    assert_eq!(got.node_count(), 5);
    let links: BTreeSet<_> = shape(&got).into_iter().collect();
    let want: BTreeSet<_> = [
        (0x100, 1, 0x200, 1),
        (0x100, 2, 0x300, 1),
        (0x100, 3, 0x400, 1),
        (0x100, 5, 0x500, 1),
    ]
    .into_iter()
    .collect();
    assert_eq!(links, want);
    let dn = &found.nodes[found.by_guid[&0x500]];
    assert_eq!((dn.ports[2].guid, dn.ports[2].path.clone()), (0, None));
    // The node left out has the description of the one kept, not its own.
    assert_eq!(found.nodes[found.by_guid[&0x300]].description, "b");
}

/// A clone of a switch reached through a port of the original that has no cable (so
/// no peer in the model when the clone answers): reported with both routes, not merged
/// into the original (no cable into its uncabled port), whichever of the clone's
/// NodeInfo and the original port's PortInfo comes first.
#[test]
fn a_switch_clone_met_on_an_uncabled_port_is_reported_not_merged() {
    use ibsm_sim::{NodeKind, NodeSetup};
    let mut sim: Sim<SmaAgent> = Sim::new(SimConfig::default());
    let s1 = sim
        .add_node(NodeSetup::new(0x100, NodeKind::Switch, 8, "s1"))
        .unwrap();
    let me = sim
        .add_node(NodeSetup::new(0x200, NodeKind::Ca, 1, "me"))
        .unwrap();
    let s2 = sim
        .add_node(NodeSetup::new(0x600, NodeKind::Switch, 4, "s2"))
        .unwrap();
    let clone = sim
        .add_clone(NodeSetup::new(0x600, NodeKind::Switch, 4, "clone of s2"))
        .unwrap();
    sim.connect(me, 1, s1, 1).unwrap();
    sim.connect(s2, 1, s1, 2).unwrap();
    // The clone answers on its port 2, which on s2 has no cable.
    sim.connect(clone, 2, s1, 3).unwrap();
    let mut port = sim.attach_sm(me, 1).unwrap();
    let (found, _) = run(&mut port, SmpConfig::default());
    let r = |s| DrPath::parse_str(s).unwrap();
    assert_eq!(
        found.duplicates,
        [Duplicate {
            guid: 0x600,
            kind: DuplicateKind::Node,
            first: r("0,1,2"),
            second: r("0,1,3"),
        }]
    );
    let got = found.to_fabric().unwrap();
    let links: BTreeSet<_> = shape(&got).into_iter().collect();
    let want: BTreeSet<_> = [(0x100, 1, 0x200, 1), (0x100, 2, 0x600, 1)]
        .into_iter()
        .collect();
    assert_eq!(links, want);
    let s2n = &found.nodes[found.by_guid[&0x600]];
    assert_eq!(s2n.ports[2].peer, None);

    // The original port's PortInfo first: the walk fed by hand, the port read Down
    // before the clone answers through s1's port 3.
    let mut walk = Walk::default();
    let mut f = found.clone();
    f.duplicates.clear();
    let s1i = f.by_guid[&0x100];
    let mut ni = f.nodes[f.by_guid[&0x600]].info;
    ni.local_port_num = 2;
    let seen = walk.node_info(&mut f, r("0,1,3"), Some((s1i, 3)), &ni);
    assert!(matches!(seen, Seen::Duplicate(_)), "{seen:?}");
    assert_eq!(f.nodes[f.by_guid[&0x600]].ports[2].peer, None);
}

/// On an extended-speed fabric a switch's external ports are asked once, with bit 31,
/// since port 0's CapabilityMask told (OpenSM PR 39 asked every port twice): only each
/// switch's port 0 and each CA port (nothing told before them) are asked again, so the
/// walk sends that many SMPs more than on QDR, and finds the same subnet.
#[test]
fn extended_speed_switch_ports_are_asked_once() {
    use ibsm_topology::ActiveSpeed;
    let fabric = generate::k_ary_n_tree(2, 2).unwrap();
    let walk = |speed| {
        let cfg = SimConfig {
            link_speed: speed,
            ..SimConfig::default()
        };
        let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, cfg).unwrap();
        let first = fabric.cas().next().unwrap().1.guid().0;
        let mut port = sim.attach_sm(sim.node_by_guid(first).unwrap(), 1).unwrap();
        run(&mut port, SmpConfig::default())
    };
    let (qdr, qs) = walk(ActiveSpeed::Qdr);
    let (ndr, ns) = walk(ActiveSpeed::Ndr);
    let switches = ndr.nodes.iter().filter(|n| n.is_switch()).count() as u64;
    let ca_ports: u64 = ndr
        .nodes
        .iter()
        .filter(|n| !n.is_switch())
        .map(|n| n.ports.iter().filter(|p| p.info.is_some()).count() as u64)
        .sum();
    assert!(switches > 0 && ca_ports > 0);
    assert_eq!(ns.sent, qs.sent + switches + ca_ports);
    let (q, n) = (qdr.to_fabric().unwrap(), ndr.to_fabric().unwrap());
    assert_eq!(shape(&n), shape(&q));
    assert_eq!(nodes(&n), nodes(&q));
}

#[test]
fn ports_disabled_polling_or_asleep_are_not_crossed_whatever_their_link_state() {
    // ibsim leaves a port's LinkState as it was when the port is disabled, or enabled
    // again (then Polling for good): only PortPhysicalState says there is no link.
    for (phys, crossed) in [
        (PhysPortState::LinkUp, true),
        (PhysPortState::Disabled, false),
        (PhysPortState::Polling, false),
        (PhysPortState::Sleep, false),
    ] {
        let mut found = Discovered::default();
        let mut walk = Walk::new();
        assert!(walk.poll_probe(&mut found).is_some(), "the local NodeInfo");
        let mut ni = NodeInfo::parse(&[0u8; NodeInfo::SIZE]).unwrap();
        ni.node_type = NodeType::Switch;
        ni.num_ports = 4;
        ni.node_guid = 0x10;
        ni.port_guid = 0x10;
        walk.node_info(&mut found, DrPath::local(), None, &ni);
        while walk.poll_probe(&mut found).is_some() {}
        let mut pi = PortInfo::parse(&[0u8; PortInfo::SIZE]).unwrap();
        pi.port_state = PortState::Init;
        pi.port_phys_state = phys;
        assert_eq!(walk.port_info(&mut found, 0, 1, &pi), PortSeen::Taken);
        let next = walk.poll_probe(&mut found);
        assert_eq!(
            matches!(next, Some((Probe::NodeInfo { .. }, _, _))),
            crossed,
            "{phys:?}: {next:?}"
        );
    }
}

/// Every port of the model with a cable: (node GUID, port) -> (state, width, speed, LID).
fn port_facts(
    f: &Fabric,
) -> std::collections::BTreeMap<
    (u64, u8),
    (
        ibsm_topology::LinkState,
        ibsm_topology::ActiveWidth,
        ibsm_topology::ActiveSpeed,
        u16,
    ),
> {
    f.nodes()
        .flat_map(|(_, n)| {
            n.ports()
                .filter(|(_, p)| p.is_connected())
                .map(move |(q, p)| ((n.guid().0, q), (p.state, p.width, p.speed, p.lid)))
        })
        .collect()
}

fn run_lean(port: &mut SimPort<SmaAgent>, cfg: SmpConfig) -> (Discovered, TxStats) {
    let mut d = Discovery::lean(cfg);
    let until = port.now() + Duration::from_secs(120);
    crate::run_to_idle(&mut d, port, until).unwrap();
    assert!(d.is_done());
    let stats = d.stats();
    (d.into_found(), stats)
}

#[test]
fn a_lean_walk_finds_the_same_fabric_with_one_smp_per_fact() {
    for (tag, fabric) in [
        ("tree", generate::k_ary_n_tree(4, 3).unwrap()),
        (
            "torus",
            generate::grid(&generate::Grid {
                dims: vec![3, 4],
                torus: true,
                cas_per_switch: 2,
            })
            .unwrap(),
        ),
    ] {
        let (_sim, mut port) = sim_of(&fabric);
        let (full, full_stats) = run(&mut port, SmpConfig::default());
        let (lean, lean_stats) = run_lean(&mut port, SmpConfig::default());
        let (full, lean_f) = (full.to_fabric().unwrap(), lean.to_fabric().unwrap());
        assert_eq!(nodes(&lean_f), nodes(&full), "{tag}");
        assert_eq!(shape(&lean_f), shape(&full), "{tag}");
        // Ports not read take their peer's state, width and speed: the same as read.
        assert_eq!(port_facts(&lean_f), port_facts(&full), "{tag}");
        // One NodeInfo per cable (and the local node), one NodeDescription per node,
        // a SwitchInfo (for `enhanced port 0`) and port 0 of each switch, one end of
        // each switch-to-switch cable, both ends of each CA cable but the local CA's
        // (read from the CA): nothing twice, no second Get for extended speeds.
        let sw = fabric.switch_count();
        let links = fabric.link_count();
        let ca_links = fabric
            .links()
            .filter(|(_, l)| {
                !fabric.node(l.a.node).unwrap().is_switch()
                    || !fabric.node(l.b.node).unwrap().is_switch()
            })
            .count();
        let sw_links = links - ca_links;
        let want = (links + 1) + fabric.node_count() + 2 * sw + sw_links + 2 * ca_links - 1;
        // A torus's rings let both ends of a cable be read before either NodeInfo
        // is back; a tree walked from a CA never does.
        if tag == "tree" {
            assert_eq!(lean_stats.sent as usize, want, "{tag}: {lean_stats:?}");
        } else {
            assert!(
                lean_stats.sent as usize <= want + want / 10,
                "{tag}: {lean_stats:?}"
            );
        }
        assert_eq!(lean_stats.retried, 0);
        assert!(lean_stats.sent < full_stats.sent, "{tag}");
    }
}

#[test]
fn a_lean_walk_keeps_down_ports_and_cut_cables() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (mut sim, mut port) = sim_of(&fabric);
    let (_, leaf) = fabric.switches().next().unwrap();
    let up = leaf
        .ports()
        .filter_map(|(p, port)| Some((p, port.peer()?)))
        .find(|(_, e)| fabric.node(e.node).unwrap().is_switch())
        .unwrap()
        .0;
    let leaf_ix = sim.node_by_guid(leaf.guid().0).unwrap();
    sim.apply(Fault::LinkDown {
        node: leaf_ix,
        port: up,
    });
    let (full, _) = run(&mut port, SmpConfig::default());
    let (lean, _) = run_lean(&mut port, SmpConfig::default());
    let (full, lean) = (full.to_fabric().unwrap(), lean.to_fabric().unwrap());
    assert_eq!(shape(&lean), shape(&full));
    assert_eq!(shape(&lean).len() + 1, fabric.link_count());
    assert_eq!(port_facts(&lean), port_facts(&full));
    let id = lean.node_by_guid(leaf.guid()).unwrap();
    let p = lean.node(id).unwrap().port(up).unwrap();
    assert_eq!(p.state, ibsm_topology::LinkState::Down);
}
