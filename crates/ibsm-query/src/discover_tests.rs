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
    d.drive(port, until).unwrap();
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
    assert_ne!(p1.state, ibsm_topology::PortState::Unknown);
    assert_ne!(p1.width, ibsm_topology::LinkWidth::Unknown);
    assert_ne!(p1.speed, ibsm_topology::LinkSpeed::Unknown);
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
    assert_eq!(gp.state, ibsm_topology::PortState::Down);
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
