//! The reference topology (`SmConfig::topology_ref`) on the simulator: a fabric cabled
//! with two cables' ends swapped, one cable missing and one link below its planned
//! width; the SM names exactly those, once (not at every sweep), reports the change
//! when a cable is pulled, and with `isolate` routes nothing over the miswired cables
//! while every CA still reaches every LID.

mod common;

use std::time::Duration;

use common::{Node, attach, ca_nodes, drive, sim_of, until_clean};
use ibsm_manager::topo_ref::{Difference, PortRef, TopoPolicy, TopologyRef, WiredEnd};
use ibsm_manager::{SmConfig, SmEvent};
use ibsm_sim::{Fault, Sim, SimConfig, SmaAgent};
use ibsm_topology::{ActiveSpeed, ActiveWidth, Endpoint, Fabric, Link, generate};

/// The plan, the fabric as cabled, and the cables involved: (swapped x, swapped y,
/// pulled, narrow).
struct Setup {
    plan: Fabric,
    cabled: Fabric,
    x: Link,
    y: Link,
    pulled: Link,
    narrow: Link,
}

fn setup() -> Setup {
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
    let (x, y, pulled, narrow) = (picked[0], picked[1], picked[2], picked[3]);
    // The plan says the narrow cable is 12x; the simulator trains it 4xQDR.
    for e in [narrow.a, narrow.b] {
        plan.node_mut(e.node)
            .unwrap()
            .port_mut(e.port)
            .unwrap()
            .width = ActiveWidth::X12;
    }
    let mut cabled = plan.clone();
    cabled.disconnect(x.a.node, x.a.port).unwrap();
    cabled.disconnect(y.a.node, y.a.port).unwrap();
    cabled
        .connect(x.a.node, x.a.port, y.b.node, y.b.port)
        .unwrap();
    cabled
        .connect(y.a.node, y.a.port, x.b.node, x.b.port)
        .unwrap();
    cabled.disconnect(pulled.a.node, pulled.a.port).unwrap();
    Setup {
        plan,
        cabled,
        x,
        y,
        pulled,
        narrow,
    }
}

fn at(f: &Fabric, e: Endpoint) -> PortRef {
    PortRef::new(f.guid_of(e.node), e.port)
}

/// What the SM should name, sorted as `diff` sorts.
fn expected(s: &Setup) -> Vec<Difference> {
    let f = &s.plan;
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
    let mut v = vec![
        miswire(s.x.a, s.x.b, s.y.b, s.y.a),
        miswire(s.y.a, s.y.b, s.x.b, s.x.a),
        Difference::MissingCable {
            a: at(f, s.pulled.a),
            b: at(f, s.pulled.b),
        },
    ];
    v.push(degraded(s));
    v.sort();
    v
}

fn degraded(s: &Setup) -> Difference {
    let f = &s.plan;
    let port = f.port(s.narrow.a.node, s.narrow.a.port).unwrap();
    Difference::Degraded {
        a: at(f, s.narrow.a),
        b: at(f, s.narrow.b),
        expected: (ActiveWidth::X12, port.speed),
        actual: (ActiveWidth::X4, ActiveSpeed::Qdr),
    }
}

fn cfg(s: &Setup, policy: TopoPolicy) -> SmConfig {
    let mut c = SmConfig::default();
    c.sweep_interval = Duration::from_secs(1);
    c.topology_ref = Some(TopologyRef::new(s.plan.clone(), policy, "plan.topo"));
    c
}

/// The reference-topology events of `n`, as (appeared, resolved, total).
fn reports(n: &Node) -> Vec<(Vec<Difference>, Vec<Difference>, usize)> {
    n.events
        .iter()
        .filter_map(|e| match e {
            SmEvent::TopologyChanged {
                appeared,
                resolved,
                total,
            } => Some((appeared.clone(), resolved.clone(), *total)),
            _ => None,
        })
        .collect()
}

fn sweeps(sim: &mut Sim<SmaAgent>, nodes: &mut [Node], d: Duration) {
    let t = sim.now() + d;
    drive(sim, nodes, t, |_, _| false);
}

#[test]
fn the_reference_check_names_exactly_the_changes_once() {
    let s = setup();
    let mut sim = sim_of(&s.cabled, SimConfig::default());
    let ca = ca_nodes(&sim, &s.cabled)[0];
    let mut nodes = vec![attach(&mut sim, ca, cfg(&s, TopoPolicy::Report), None)];
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    let want = expected(&s);
    assert_eq!(reports(&nodes[0]), [(want.clone(), vec![], 4)]);
    assert_eq!(nodes[0].sm.topology_differences(), Some(want.as_slice()));
    // Heavy sweeps that find the same: no new report.
    for _ in 0..3 {
        let now = sim.now();
        nodes[0].sm.request_heavy_sweep(now);
        sweeps(&mut sim, &mut nodes, Duration::from_secs(2));
    }
    assert_eq!(reports(&nodes[0]).len(), 1, "{:?}", reports(&nodes[0]));
    // The narrow cable pulled: no longer degraded but missing, reported once.
    let n = sim.node_by_guid(s.plan.guid_of(s.narrow.a.node).0).unwrap();
    sim.apply(Fault::LinkDown {
        node: n,
        port: s.narrow.a.port,
    });
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    sweeps(&mut sim, &mut nodes, Duration::from_secs(3));
    let r = reports(&nodes[0]);
    assert_eq!(r.len(), 2, "{r:?}");
    let missing = Difference::MissingCable {
        a: at(&s.plan, s.narrow.a),
        b: at(&s.plan, s.narrow.b),
    };
    assert_eq!(r[1], (vec![missing], vec![degraded(&s)], 4));
}

#[test]
fn isolate_routes_nothing_over_miswired_cables() {
    let s = setup();
    let mut sim = sim_of(&s.cabled, SimConfig::default());
    let ca = ca_nodes(&sim, &s.cabled)[0];
    let mut nodes = vec![attach(&mut sim, ca, cfg(&s, TopoPolicy::Isolate), None)];
    // Clean: every CA reaches every LID, around the isolated cables.
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    assert_eq!(reports(&nodes[0])[0].0, expected(&s));
    let f = &s.plan;
    for e in [s.x.a, s.y.a, s.x.b, s.y.b] {
        let guid = f.guid_of(e.node).0;
        let lft = nodes[0].sm.programmed_lft(guid).expect("switch programmed");
        let over = lft.iter().filter(|&&p| p == e.port).count();
        assert_eq!(over, 0, "{guid:#x} port {} carries {over} routes", e.port);
    }
    // The same fabric with `report`: the miswired cables do carry routes (the check
    // above can fail).
    let mut sim = sim_of(&s.cabled, SimConfig::default());
    let mut nodes = vec![attach(&mut sim, ca, cfg(&s, TopoPolicy::Report), None)];
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    let used: usize = [s.x.a, s.y.a, s.x.b, s.y.b]
        .iter()
        .map(|e| {
            let lft = nodes[0].sm.programmed_lft(f.guid_of(e.node).0).unwrap();
            lft.iter().filter(|&&p| p == e.port).count()
        })
        .sum();
    assert!(used > 0);
}
