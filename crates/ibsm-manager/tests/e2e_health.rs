//! Unhealthy ports (`SmConfig::health`, `ibsm_manager::health`) on the simulator: a
//! flapping cable is marked after more than `flap_count` flaps, the LFTs route around
//! it and it is taken back after the quiet period; a port flooding traps is marked,
//! silenced and (with `babbling_port_policy`) disabled, then enabled again; a port
//! behind which nothing answers is marked after `no_answer_sweeps` sweeps in a row, so
//! the rest of the subnet comes up.

mod common;

use std::time::Duration;

use common::{Node, attach, ca_nodes, drive, isl_ends, sim_of, until_clean};
use ibsm_manager::health::{HealthConfig, PortKey, Reason};
use ibsm_manager::{SmConfig, SmEvent};
use ibsm_sim::{Fault, NodeIdx, Sim, SimConfig, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Address, DrAddress, Transport};
use ibsm_wire::{CapabilityMask, DrPath, DrSmp, Method, SmAttributeId};

fn cfg(health: HealthConfig) -> SmConfig {
    let mut c = SmConfig::default();
    c.sweep_interval = Duration::from_secs(1);
    c.health = health;
    c
}

fn guid(sim: &Sim<SmaAgent>, n: NodeIdx) -> u64 {
    sim.node_setup(n).expect("node").guid
}

fn tree() -> Fabric {
    generate::fat_tree(8, 2).unwrap()
}

/// The events of `n` that mark or take back `key`, as (unhealthy?, reason).
fn health_events(n: &Node, key: PortKey) -> Vec<(bool, Reason)> {
    n.events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortUnhealthy {
                node, port, reason, ..
            } if (*node, *port) == (key.node, key.port) => Some((true, reason.clone())),
            SmEvent::PortHealthy { node, port, reason }
                if (*node, *port) == (key.node, key.port) =>
            {
                Some((false, reason.clone()))
            }
            _ => None,
        })
        .collect()
}

/// LFT entries of switch `guid` that forward out of `port`.
fn lft_uses(n: &Node, guid: u64, port: u8) -> usize {
    n.sm.programmed_lft(guid)
        .map_or(0, |lft| lft.iter().filter(|&&p| p == port).count())
}

fn idle_for(sim: &mut Sim<SmaAgent>, nodes: &mut [Node], d: Duration) {
    let t = sim.now() + d;
    drive(sim, nodes, t, |_, _| false);
}

#[test]
fn a_flapping_link_is_routed_around_and_taken_back() {
    let f = tree();
    let mut sim = sim_of(&f, SimConfig::default());
    let ca = ca_nodes(&sim, &f)[0];
    let health = HealthConfig {
        flap_count: 2,
        flap_window: Duration::from_secs(60),
        quiet_period: Duration::from_secs(30),
        ..HealthConfig::default()
    };
    let mut nodes = vec![attach(&mut sim, ca, cfg(health), None)];
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    let (a, pa) = isl_ends(&sim, &f)[0];
    let (b, pb) = sim.peer(a, pa).expect("cabled");
    let (ga, gb) = (guid(&sim, a), guid(&sim, b));
    let (ka, kb) = (PortKey::new(ga, pa), PortKey::new(gb, pb));
    assert!(
        lft_uses(&nodes[0], ga, pa) > 0,
        "the ISL carries routes at first"
    );

    // Three flaps: more than two within the window.
    for _ in 0..3 {
        sim.apply(Fault::LinkDown { node: a, port: pa });
        idle_for(&mut sim, &mut nodes, Duration::from_secs(2));
        sim.apply(Fault::LinkUp { node: a, port: pa });
        idle_for(&mut sim, &mut nodes, Duration::from_secs(2));
    }
    for key in [ka, kb] {
        let ev = health_events(&nodes[0], key);
        assert!(
            matches!(&ev[..], [(true, Reason::Flapping { flaps: 3, .. })]),
            "{key}: {ev:?}"
        );
        assert!(nodes[0].sm.health().is_unhealthy(key));
    }
    // The cable is up and its ports Active, but no route uses it.
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(10));
    assert!(sim.link_up(a, pa));
    assert_eq!(
        lft_uses(&nodes[0], ga, pa),
        0,
        "routes avoid the flapping link"
    );
    assert_eq!(lft_uses(&nodes[0], gb, pb), 0, "at both ends");

    // Quiet for the quiet period: taken back and routed again.
    idle_for(&mut sim, &mut nodes, Duration::from_secs(31));
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(10));
    for key in [ka, kb] {
        let ev = health_events(&nodes[0], key);
        assert!(matches!(&ev[..], [(true, _), (false, _)]), "{key}: {ev:?}");
        assert!(!nodes[0].sm.health().is_unhealthy(key));
    }
    assert!(
        lft_uses(&nodes[0], ga, pa) > 0,
        "the link carries routes again"
    );
}

/// Makes the port of `ca` raise trap 144 (a CapabilityMask change it notices) and has
/// its SMA send it now (a local SMP wakes the agent, as a host's request would).
fn raise_trap(sim: &mut Sim<SmaAgent>, ca: NodeIdx, toggle: bool) {
    let now = sim.now();
    sim.with_agent_mut(ca, |a| {
        let sma = a.sma_mut();
        let mut cm = sma.port_info(1).expect("port 1").capability_mask;
        cm.set(CapabilityMask::IS_CAPABILITY_MASK_NOTICE_SUPPORTED, true);
        cm.set(CapabilityMask::IS_SNMP_TUNNELING_SUPPORTED, toggle);
        sma.set_capability_mask(now, 1, cm);
    });
    let mut tool = sim.attach_tool(ca, 1).expect("tool");
    let smp = DrSmp::request(
        Method::Get,
        SmAttributeId::NodeInfo.into(),
        0,
        0x77,
        0,
        &DrPath::local(),
    );
    let addr = Address::Directed(DrAddress::direct(DrPath::local()));
    tool.send(&addr, &smp.to_bytes()).expect("local SMP");
    // Dropped: detached, its answer is discarded.
}

fn traps_from(n: &Node, from: usize) -> usize {
    n.events[from..]
        .iter()
        .filter(|e| matches!(e, SmEvent::Trap { number: 144, .. }))
        .count()
}

#[test]
fn a_babbling_port_is_silenced_disabled_and_enabled_again() {
    let f = tree();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let health = HealthConfig {
        trap_limit: 5,
        trap_window: Duration::from_secs(2),
        quiet_period: Duration::from_secs(20),
        babbling_port_policy: true,
        ..HealthConfig::default()
    };
    let mut nodes = vec![attach(&mut sim, cas[0], cfg(health), None)];
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    let x = *cas.last().unwrap();
    let key = PortKey::new(guid(&sim, x), 1);
    let (sw, sp) = sim.peer(x, 1).expect("cabled");

    // 20 traps, 50 ms apart.
    let before = nodes[0].events.len();
    for i in 0..20 {
        raise_trap(&mut sim, x, i % 2 == 0);
        idle_for(&mut sim, &mut nodes, Duration::from_millis(50));
    }
    let ev = health_events(&nodes[0], key);
    assert!(
        matches!(&ev[..], [(true, Reason::TrapFlood { traps: 6, .. })]),
        "{ev:?}"
    );
    // Silenced: the traps past the limit were not acted on.
    assert_eq!(
        traps_from(&nodes[0], before),
        5,
        "only the traps up to the limit"
    );
    // Disabled at the switch end, the end nearer the SM.
    idle_for(&mut sim, &mut nodes, Duration::from_secs(2));
    assert!(!sim.link_up(x, 1), "the babbling link is disabled");
    assert!(!sim.link_up(sw, sp));

    // Quiet for the quiet period (it cannot babble now): enabled again, configured.
    idle_for(&mut sim, &mut nodes, Duration::from_secs(20));
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(20));
    assert!(sim.link_up(x, 1), "enabled again");
    let ev = health_events(&nodes[0], key);
    assert!(matches!(&ev[..], [(true, _), (false, _)]), "{ev:?}");
}

#[test]
fn a_port_that_stops_answering_is_marked_and_the_rest_comes_up() {
    let f = tree();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let x = *cas.last().unwrap();
    let (sw, sp) = sim.peer(x, 1).expect("cabled");
    // The link trains but every packet across it is lost: the SMA behind it never
    // answers.
    sim.apply(Fault::LinkDropRate {
        node: x,
        port: 1,
        ppm: 1_000_000,
    });
    let health = HealthConfig {
        no_answer_sweeps: 3,
        quiet_period: Duration::from_secs(30),
        ..HealthConfig::default()
    };
    let mut nodes = vec![attach(&mut sim, cas[0], cfg(health), None)];
    let t = sim.now() + Duration::from_secs(120);
    let up = drive(&mut sim, &mut nodes, t, |_, ns| ns[0].ups() > 0);
    let key = PortKey::new(guid(&sim, sw), sp);
    let ev = health_events(&nodes[0], key);
    assert!(
        matches!(&ev[..], [(true, Reason::NoAnswer { sweeps: 3 })]),
        "{ev:?}"
    );
    assert!(up, "SUBNET UP without the silent node");
    let incomplete = nodes[0]
        .events
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepIncomplete { .. }))
        .count();
    assert_eq!(
        incomplete, 3,
        "three incomplete sweeps, then it is left out"
    );
    let x_guid = guid(&sim, x);
    assert!(
        !nodes[0].sm.subnet().by_guid.contains_key(&x_guid),
        "the silent node is not configured"
    );

    // It answers again: taken back after the quiet period and configured.
    sim.apply(Fault::LinkDropRate {
        node: x,
        port: 1,
        ppm: 0,
    });
    idle_for(&mut sim, &mut nodes, Duration::from_secs(31));
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    assert!(nodes[0].sm.subnet().by_guid.contains_key(&x_guid));
    let ev = health_events(&nodes[0], key);
    assert!(matches!(&ev[..], [(true, _), (false, _)]), "{ev:?}");
}
