//! End-to-end: OpenSM's routing input files (`SmConfig::routing_inputs`) reach the
//! engines, and `force_link_speed`, `force_link_speed_ext`, `force_link_width` reach the
//! ports (issue 16, sections 3 and 4), on the simulator.

mod common;

use std::time::Duration;

use common::{assert_configured, attach, until_up};
use ibsm_manager::{RoutingInputs, SmConfig};
use ibsm_sim::{NodeIdx, SimConfig};
use ibsm_topology::{ActiveSpeed, ActiveWidth, Fabric, Guid, NodeId, NodeSpec, generate};
use ibsm_wire::sa::Rate;
use ibsm_wire::{LinkSpeedExtMask, LinkSpeedMask, LinkWidthMask};

fn sw(f: &mut Fabric, i: u64, ports: u8) -> NodeId {
    f.add_node(NodeSpec::switch(0x100 + i, ports, format!("sw{i}")))
        .unwrap()
}

fn ca(f: &mut Fabric, i: u64) -> NodeId {
    f.add_node(NodeSpec::ca(0x200 + i, 1, format!("ca{i}")))
        .unwrap()
}

/// Six switches in a ring (port 1 to the next, 2 to the previous), CA `i` on port 3 of
/// switch `i`.
fn ring6() -> Fabric {
    let mut f = Fabric::new();
    let s: Vec<NodeId> = (0..6).map(|i| sw(&mut f, i, 3)).collect();
    for i in 0..6 {
        f.connect(s[i], 1, s[(i + 1) % 6], 2).unwrap();
        let c = ca(&mut f, i as u64);
        f.connect(s[i], 3, c, 1).unwrap();
    }
    f
}

fn node(sim: &ibsm_sim::Sim<ibsm_sim::SmaAgent>, guid: u64) -> NodeIdx {
    sim.node_by_guid(guid).unwrap()
}

/// Brings `f` up with `cfg` from CA 0; returns the SM and the simulator.
fn up(
    f: &Fabric,
    sim_cfg: SimConfig,
    cfg: SmConfig,
) -> (ibsm_sim::Sim<ibsm_sim::SmaAgent>, Vec<common::Node>) {
    let mut sim = common::sim_of(f, sim_cfg);
    let ca0 = common::ca_nodes(&sim, f)[0];
    let mut nodes = vec![attach(&mut sim, ca0, cfg, None)];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    (sim, nodes)
}

fn with_routing(routing: &str, inputs: RoutingInputs) -> SmConfig {
    let mut c = SmConfig::default();
    c.routing = routing.parse().unwrap();
    c.routing_inputs = inputs;
    c
}

fn roots(guids: &[u64]) -> RoutingInputs {
    let mut r = RoutingInputs::default();
    r.roots = guids.iter().map(|&g| Guid(g)).collect();
    r
}

/// Up/down on a ring forbids the turn at the switch farthest from the root: rooted at
/// switch 0, switch 2 reaches CA 4 the long way (port 2), rooted at 3 straight through
/// switch 3 (port 1). The switch's LFT in the simulator shows which root the SM used.
#[test]
fn the_root_file_reaches_updn_and_the_switches_tables() {
    let f = ring6();
    for (root, port) in [(0x100, 2), (0x103, 1)] {
        let (sim, nodes) = up(
            &f,
            SimConfig::default(),
            with_routing("updn,no_fallback", roots(&[root])),
        );
        let sm = &nodes[0].sm;
        assert_eq!(nodes[0].last_up().unwrap().routing_engine, "updn");
        assert_configured(&sim, sm, 12);
        let ca4 = sim.node_setup(node(&sim, 0x204)).unwrap();
        let lid4 = sm.lids()[&ca4.port_guid(1)].0;
        let lft = sim.with_agent(node(&sim, 0x102), |a| a.sma().lft().to_vec());
        assert_eq!(lft[usize::from(lid4)], port, "root {root:#x}");
    }
}

/// `generate::spine_storage`: `leaves` x `spines`, `cas` compute CAs per leaf, one
/// storage CA on spine 0, and the leaf-spine cables of `missing` left out.
fn storage_on_spine_0(leaves: u32, spines: u32, cas: u32, missing: &[(u32, u32)]) -> Fabric {
    generate::spine_storage(&generate::SpineStorage {
        leaves,
        spines,
        cas_per_leaf: cas,
        storage: vec![0],
        missing: missing.to_vec(),
    })
    .unwrap()
}

/// The node GUID of the spine-storage tree's CA `c` (compute CAs first, then storage).
fn ca_guid(c: u32) -> u64 {
    generate::scheme_guid(generate::KIND_CA, 0, c).0
}

/// The port GUID (port 1) of the CA with node GUID `node`.
fn port_guid(sim: &ibsm_sim::Sim<ibsm_sim::SmaAgent>, node_guid: u64) -> Guid {
    Guid(sim.node_setup(node(sim, node_guid)).unwrap().port_guid(1))
}

/// Two leaves with two CAs each, two spines, and a storage CA on spine 0: ftree takes it
/// only when told which CAs are compute nodes.
#[test]
fn the_compute_node_file_lets_ftree_route_a_tree_with_storage_on_a_spine() {
    let f = storage_on_spine_0(2, 2, 2, &[]);
    let (_, nodes) = up(
        &f,
        SimConfig::default(),
        with_routing("ftree", RoutingInputs::default()),
    );
    assert_eq!(nodes[0].last_up().unwrap().routing_engine, "minhop");
    let sim = common::sim_of(&f, SimConfig::default());
    let mut inputs = RoutingInputs::default();
    inputs.compute_nodes = (0..4).map(|i| port_guid(&sim, ca_guid(i))).collect();
    let (sim, nodes) = up(&f, SimConfig::default(), with_routing("ftree", inputs));
    assert_eq!(nodes[0].last_up().unwrap().routing_engine, "ftree");
    assert_configured(&sim, &nodes[0].sm, 9);
}

/// Leaf 2 has no cable to spine 0, where the storage hangs: without reverse hops ftree
/// finds no up/down path between them and the SM falls back to minhop; with
/// `max_reverse_hops` 1 ftree routes it, leaf 2 climbing to spine 1 on its way to the
/// storage and spine 0 coming down to leaf 0 on its way to leaf 2's CA.
#[test]
fn max_reverse_hops_lets_ftree_reach_storage_on_a_spine_from_every_leaf() {
    let f = storage_on_spine_0(3, 2, 1, &[(2, 0)]);
    let sim = common::sim_of(&f, SimConfig::default());
    let mut inputs = RoutingInputs::default();
    inputs.io_nodes = vec![port_guid(&sim, ca_guid(3))];
    let (sim, nodes) = up(
        &f,
        SimConfig::default(),
        with_routing("ftree", inputs.clone()),
    );
    assert_eq!(nodes[0].last_up().unwrap().routing_engine, "minhop");
    assert_configured(&sim, &nodes[0].sm, 9);
    inputs.max_reverse_hops = 1;
    let (sim, nodes) = up(&f, SimConfig::default(), with_routing("ftree", inputs));
    let sm = &nodes[0].sm;
    assert_eq!(nodes[0].last_up().unwrap().routing_engine, "ftree");
    assert_configured(&sim, sm, 9);
    let lid_of = |c: u32| sm.lids()[&port_guid(&sim, ca_guid(c)).0].0;
    // The LFT of switch `i` of level `level` (1 leaves, 2 spines).
    let lft = |level: u16, i: u32| {
        let g = generate::scheme_guid(generate::KIND_SWITCH, level, i);
        sim.with_agent(node(&sim, g.0), |a| a.sma().lft().to_vec())
    };
    // Leaf 2's port 3 is its cable to spine 1; spine 0's port 1 its cable to leaf 0.
    assert_eq!(lft(1, 2)[usize::from(lid_of(3))], 3);
    assert_eq!(lft(2, 0)[usize::from(lid_of(2))], 1);
}

/// What every linked port enables and what its link trained to, as its SMA holds them.
struct Link {
    port: String,
    enabled: (LinkSpeedMask, LinkSpeedExtMask, LinkWidthMask),
    active: (ActiveSpeed, ActiveWidth),
}

fn links(sim: &ibsm_sim::Sim<ibsm_sim::SmaAgent>) -> Vec<Link> {
    let mut out = Vec::new();
    for i in 0..sim.node_count() {
        let n = NodeIdx(i as u32);
        let setup = sim.node_setup(n).unwrap();
        for p in 1..=setup.num_ports {
            if sim.peer(n, p).is_none() {
                continue;
            }
            let pi = sim.with_agent(n, |a| a.sma().port_info(p)).unwrap();
            out.push(Link {
                port: format!("{} port {p}", setup.description),
                enabled: (
                    pi.link_speed_enabled,
                    pi.link_speed_ext_enabled,
                    pi.link_width_enabled,
                ),
                active: (active_speed(&pi), width_of(pi.link_width_active)),
            });
        }
    }
    out
}

/// The lane speed a port reports active, in the model's terms.
fn active_speed(pi: &ibsm_wire::PortInfo) -> ActiveSpeed {
    use ibsm_wire::{LinkSpeed, LinkSpeedExt};
    match (pi.link_speed_active, pi.link_speed_ext_active) {
        (LinkSpeed::Sdr, _) => ActiveSpeed::Sdr,
        (LinkSpeed::Ddr, _) => ActiveSpeed::Ddr,
        (LinkSpeed::Qdr, _) => ActiveSpeed::Qdr,
        (_, LinkSpeedExt::Fdr) => ActiveSpeed::Fdr,
        (_, LinkSpeedExt::Edr) => ActiveSpeed::Edr,
        (_, LinkSpeedExt::Hdr) => ActiveSpeed::Hdr,
        (_, LinkSpeedExt::Ndr) => ActiveSpeed::Ndr,
        other => panic!("unexpected active speed {other:?}"),
    }
}

fn width_of(w: ibsm_wire::LinkWidth) -> ActiveWidth {
    match w.lanes() {
        Some(1) => ActiveWidth::X1,
        Some(4) => ActiveWidth::X4,
        other => panic!("unexpected active width {other:?}"),
    }
}

/// Brings `f` up on NDR ports with `cfg` and waits until it verifies clean (links the
/// SM's forced masks retrain go down and come back at Init, so the first SUBNET UP is
/// not the last); checks every link and the SM's model run at `speed` x `width`, and
/// that a PathRecord between two CAs carries `rate`.
fn forced(cfg: SmConfig, speed: ActiveSpeed, width: ActiveWidth, rate: Rate) -> Vec<Link> {
    let f = generate::k_ary_n_tree(2, 2).unwrap();
    let ndr = SimConfig {
        link_speed: ActiveSpeed::Ndr,
        ..SimConfig::default()
    };
    let (mut sim, mut nodes) = up(&f, ndr, cfg);
    common::until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    assert_configured(&sim, &nodes[0].sm, f.switch_count() + f.cas().count());
    let got = links(&sim);
    for l in &got {
        assert_eq!(l.active, (speed, width), "{} active", l.port);
    }
    let sm = &nodes[0].sm;
    let model = sm.fabric().expect("model");
    let mut linked = 0;
    for (id, n) in model.nodes() {
        for (p, port) in n.ports().filter(|(p, _)| *p != 0) {
            if model.port_peer(id, p).is_some() {
                linked += 1;
                assert_eq!((port.speed, port.width), (speed, width), "model {id:?}/{p}");
            }
        }
    }
    assert_eq!(linked, got.len());
    let cas = common::ca_nodes(&sim, &f);
    let lid = |n: NodeIdx| sm.lids()[&sim.node_setup(n).unwrap().port_guid(1)].0;
    let (a, b) = (lid(cas[0]), lid(cas[cas.len() - 1]));
    let pr = sm.sa().expect("SA").path_record(a, b).expect("PathRecord");
    assert_eq!(pr.rate, rate);
    got
}

/// OpenSM's defaults keep what every port enables (all it supports), so the links stay
/// at NDR 4x. Forced masks are what every port enables, and the links retrain to the
/// best both ends enable: an extended speed both enable wins over the base speeds
/// (EDR 1x); with extended speeds off (30), the base speed (DDR 1x). The SM's model
/// and the SA's PathRecord rates follow.
#[test]
fn forced_link_speeds_and_widths_are_what_every_port_enables_and_trains_to() {
    let before = forced(
        SmConfig::default(),
        ActiveSpeed::Ndr,
        ActiveWidth::X4,
        Rate::G400,
    );
    for l in &before {
        assert_eq!(
            l.enabled,
            (
                LinkSpeedMask::SDR | LinkSpeedMask::DDR | LinkSpeedMask::QDR,
                LinkSpeedExtMask::FDR
                    | LinkSpeedExtMask::EDR
                    | LinkSpeedExtMask::HDR
                    | LinkSpeedExtMask::NDR,
                LinkWidthMask::X1 | LinkWidthMask::X4
            ),
            "{}",
            l.port
        );
    }
    let mut cfg = SmConfig::default();
    cfg.force_link_speed = 1;
    cfg.force_link_speed_ext = 2;
    cfg.force_link_width = 1;
    let after = forced(cfg, ActiveSpeed::Edr, ActiveWidth::X1, Rate::G25);
    assert_eq!(after.len(), before.len());
    for l in after {
        assert_eq!(
            l.enabled,
            (LinkSpeedMask::SDR, LinkSpeedExtMask::EDR, LinkWidthMask::X1),
            "{}",
            l.port
        );
    }
    let mut cfg = SmConfig::default();
    cfg.force_link_speed = 2;
    cfg.force_link_speed_ext = LinkSpeedExtMask::DISABLE_ALL.bits();
    cfg.force_link_width = 1;
    let base = forced(cfg, ActiveSpeed::Ddr, ActiveWidth::X1, Rate::G5);
    for l in base {
        assert_eq!(
            l.enabled,
            (LinkSpeedMask::DDR, LinkSpeedExtMask(0), LinkWidthMask::X1),
            "{}",
            l.port
        );
    }
}
