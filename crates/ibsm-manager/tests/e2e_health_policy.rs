//! The health policy's action table (`HealthConfig::actions`), the isolation cap and
//! the isolation store on the simulator: each condition leads to its configured action
//! (ignore, report, isolate, disable, no_discover); when 20 % of the ports go bad at
//! once only the cap's number are isolated; the operator's isolate / clear; an
//! isolation survives a restart (a new engine reading the isolation file) and a
//! failover (the standby reads it when it takes over).

mod common;

use std::time::Duration;

use common::{Node, Trace, ca_nodes, drive, isl_ends, sim_of, until_clean};
use ibsm_manager::health::{Action, Condition, HealthConfig, PortCommandError, PortKey, Reason};
use ibsm_manager::isolation::{FileIsolationStore, IsolationStore, MemoryIsolationStore};
use ibsm_manager::{Role, SmConfig, SmEvent, SubnetManager};
use ibsm_sim::{Fault, NodeIdx, Sim, SimConfig, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::Transport;

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

/// An SM at `ca` with its isolation store, started.
fn attach(
    sim: &mut Sim<SmaAgent>,
    ca: NodeIdx,
    cfg: SmConfig,
    store: Box<dyn IsolationStore + Send>,
) -> Node {
    let mut port = sim.attach_sm(ca, 1).expect("attach");
    port.set_is_sm(true).expect("issm");
    let mut sm = SubnetManager::new(cfg, port.local_port()).expect("valid configuration");
    sm.set_isolation_store(store);
    sm.start(port.now()).expect("start");
    Node {
        sm,
        port,
        events: Vec::new(),
        seen: 0,
        alive: true,
        trace: Trace::default(),
        sent: None,
    }
}

/// The marks of `key` in `n`'s events, as (action, capped); take-backs as `None`.
fn marks(n: &Node, key: PortKey) -> Vec<Option<(Action, bool)>> {
    n.events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortUnhealthy {
                node,
                port,
                action,
                capped,
                ..
            } if (*node, *port) == (key.node, key.port) => Some(Some((*action, *capped))),
            SmEvent::PortHealthy { node, port, .. } if (*node, *port) == (key.node, key.port) => {
                Some(None)
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

/// The fat tree simulated, one SM with `health` and `store` at its first CA brought
/// up clean, and the CAs.
fn bring_up(
    health: HealthConfig,
    store: Box<dyn IsolationStore + Send>,
) -> (Fabric, Sim<SmaAgent>, Vec<Node>, Vec<NodeIdx>) {
    let f = tree();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut nodes = vec![attach(&mut sim, cas[0], cfg(health), store)];
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    (f, sim, nodes, cas)
}

/// A simulated fabric, its SMs, and one ISL's two ends.
type Up = (Sim<SmaAgent>, Vec<Node>, (NodeIdx, u8), (NodeIdx, u8));

/// A fat tree with one SM brought up clean, and one ISL's two ends.
fn up(health: HealthConfig) -> Up {
    let (f, sim, nodes, _) = bring_up(health, Box::new(MemoryIsolationStore::default()));
    let (a, pa) = isl_ends(&sim, &f)[0];
    let (b, pb) = sim.peer(a, pa).expect("cabled");
    (sim, nodes, (a, pa), (b, pb))
}

fn flap_thrice(sim: &mut Sim<SmaAgent>, nodes: &mut [Node], (a, pa): (NodeIdx, u8)) {
    for _ in 0..3 {
        sim.apply(Fault::LinkDown { node: a, port: pa });
        idle_for(sim, nodes, Duration::from_secs(2));
        sim.apply(Fault::LinkUp { node: a, port: pa });
        idle_for(sim, nodes, Duration::from_secs(2));
    }
}

fn flapping(action: Action) -> HealthConfig {
    let mut h = HealthConfig {
        flap_count: 2,
        flap_window: Duration::from_secs(60),
        quiet_period: Duration::from_secs(30),
        ..HealthConfig::default()
    };
    h.actions.flapping = action;
    h
}

/// Planted: `bad` marking whatever the action (no `Ignore` check) -> "ignore: no
/// mark" fails.
#[test]
fn ignore_marks_nothing_and_report_leaves_the_routes() {
    for action in [Action::Ignore, Action::Report] {
        let (mut sim, mut nodes, (a, pa), (b, pb)) = up(flapping(action));
        let (ga, gb) = (guid(&sim, a), guid(&sim, b));
        flap_thrice(&mut sim, &mut nodes, (a, pa));
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(10));
        let ka = PortKey::new(ga, pa);
        match action {
            Action::Ignore => {
                assert!(marks(&nodes[0], ka).is_empty(), "ignore: no mark");
                assert!(!nodes[0].sm.health().is_unhealthy(ka));
            }
            _ => {
                assert_eq!(marks(&nodes[0], ka), [Some((Action::Report, false))]);
                assert!(nodes[0].sm.health().is_unhealthy(ka));
                assert!(!nodes[0].sm.health().isolated(ka));
            }
        }
        assert!(lft_uses(&nodes[0], ga, pa) > 0, "{action}: routes kept");
        assert!(lft_uses(&nodes[0], gb, pb) > 0, "{action}: at both ends");
    }
}

/// A CA reset twice within the window (its port read back with LID 0 each time) is
/// marked for reboots; with `disable` its link is disabled at the switch end.
/// Planted: `rebooted` comparing with the LID in force (`info.lid != l`) instead of
/// 0 -> never marked, test fails.
#[test]
fn a_rebooting_node_is_disabled() {
    let mut health = HealthConfig {
        reboot_count: 2,
        reboot_window: Duration::from_secs(300),
        quiet_period: Duration::from_secs(600),
        ..HealthConfig::default()
    };
    health.actions.reboot = Action::Disable;
    let (_, mut sim, mut nodes, cas) = bring_up(health, Box::new(MemoryIsolationStore::default()));
    let x = *cas.last().unwrap();
    let key = PortKey::new(guid(&sim, x), 1);
    let (sw, sp) = sim.peer(x, 1).expect("cabled");
    sim.apply(Fault::NodeReset { node: x });
    idle_for(&mut sim, &mut nodes, Duration::from_secs(5));
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    assert!(
        marks(&nodes[0], key).is_empty(),
        "one reboot is not repeated"
    );
    sim.apply(Fault::NodeReset { node: x });
    idle_for(&mut sim, &mut nodes, Duration::from_secs(5));
    assert_eq!(marks(&nodes[0], key), [Some((Action::Disable, false))]);
    assert!(matches!(
        nodes[0].sm.health().get(key).map(|u| &u.reason),
        Some(Reason::Reboot { reboots: 2, .. })
    ));
    assert!(!sim.link_up(sw, sp), "disabled at the switch end");
    assert!(!sim.link_up(x, 1));
}

/// A CA that loses every PortInfo Set is marked for SetErr; with `no_discover` the
/// next sweeps do not cross its link, and the rest of the subnet comes up.
/// Planted: `skips` looking only at the near port (not the far end of the cable) ->
/// the CA stays in the model, test fails.
#[test]
fn failed_sets_stop_discovery_across_the_port() {
    let mut health = HealthConfig {
        set_err_count: 2,
        set_err_window: Duration::from_secs(120),
        quiet_period: Duration::from_secs(600),
        ..HealthConfig::default()
    };
    health.actions.set_err = Action::NoDiscover;
    let (_, mut sim, mut nodes, cas) = bring_up(health, Box::new(MemoryIsolationStore::default()));
    let x = *cas.last().unwrap();
    let xg = guid(&sim, x);
    let key = PortKey::new(xg, 1);
    sim.lose_sets(x, ibsm_wire::SmAttributeId::PortInfo.into(), true);
    // Its link retrains: every heavy sweep sends it PortInfo Sets, all lost.
    sim.apply(Fault::LinkDown { node: x, port: 1 });
    idle_for(&mut sim, &mut nodes, Duration::from_secs(1));
    sim.apply(Fault::LinkUp { node: x, port: 1 });
    let t = sim.now() + Duration::from_secs(120);
    let marked = drive(&mut sim, &mut nodes, t, |_, ns| {
        ns[0].sm.health().is_unhealthy(key)
    });
    assert!(marked, "marked: {:?}", marks(&nodes[0], key));
    assert_eq!(marks(&nodes[0], key), [Some((Action::NoDiscover, false))]);
    assert!(matches!(
        nodes[0].sm.health().get(key).map(|u| &u.reason),
        Some(Reason::SetErr { .. })
    ));
    let ups = nodes[0].ups();
    let t = sim.now() + Duration::from_secs(60);
    drive(&mut sim, &mut nodes, t, |_, ns| {
        ns[0].ups() > ups && !ns[0].sm.is_sweeping()
    });
    assert!(
        !nodes[0].sm.subnet().by_guid.contains_key(&xg),
        "not discovered across"
    );
}

/// 20 % of the fabric's ports report a high bit error rate at once: only the cap's
/// number (max(10, 0.5 %) = 10 here) are isolated, the others only reported, and
/// a reported one still carries routes; when an isolation ends, the port held back
/// longest takes its place. Planted: the cap check left out of `bad` -> every port
/// isolated, test fails; no `promote` after `clear` -> the held-back port stays
/// reported, test fails.
#[test]
fn the_isolation_cap_holds_when_a_fifth_of_the_ports_go_bad() {
    let (f, mut sim, mut nodes, _) = bring_up(
        HealthConfig::default(),
        Box::new(MemoryIsolationStore::default()),
    );
    // Both ends of ISLs, a fifth of the fabric's ports, in an order that takes one
    // cable of each switch in turn: the first ten (those the cap isolates) leave every
    // switch connected, so routing around them works.
    let ports: usize = nodes[0]
        .sm
        .subnet()
        .nodes
        .iter()
        .map(|n| n.ports.len() - 1)
        .sum();
    let mut left: Vec<((NodeIdx, u8), (NodeIdx, u8))> = isl_ends(&sim, &f)
        .into_iter()
        .map(|(a, pa)| ((a, pa), sim.peer(a, pa).expect("cabled")))
        .collect();
    let mut used: std::collections::HashMap<NodeIdx, usize> = std::collections::HashMap::new();
    let mut spread = Vec::new();
    while !left.is_empty() {
        let load = |c: &((NodeIdx, u8), (NodeIdx, u8)),
                    used: &std::collections::HashMap<NodeIdx, usize>| {
            used.get(&c.0.0).copied().unwrap_or(0) + used.get(&c.1.0).copied().unwrap_or(0)
        };
        let i = (0..left.len())
            .min_by_key(|&i| load(&left[i], &used))
            .expect("not empty");
        let c = left.remove(i);
        *used.entry(c.0.0).or_default() += 1;
        *used.entry(c.1.0).or_default() += 1;
        spread.push(c.0);
    }
    let bad: Vec<PortKey> = spread
        .into_iter()
        .flat_map(|(a, pa)| {
            let (b, pb) = sim.peer(a, pa).expect("cabled");
            [
                PortKey::new(guid(&sim, a), pa),
                PortKey::new(guid(&sim, b), pb),
            ]
        })
        .take(ports / 5)
        .collect();
    assert!(bad.len() > 10, "{} of {ports} ports", bad.len());
    let now = nodes[0].port.now();
    for &k in &bad {
        let reason = Reason::Counters {
            counter: "SymbolErrorCounter",
            value: 1000,
            threshold: 10,
        };
        nodes[0].sm.report_unhealthy(now, k, reason);
    }
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(20));
    let h = nodes[0].sm.health();
    assert_eq!(h.isolation_cap(), 10);
    let isolated: Vec<PortKey> = bad.iter().copied().filter(|&k| h.isolated(k)).collect();
    assert_eq!(isolated.len(), 10, "only the cap's number isolated");
    assert!(h.cap_reached());
    let capped: Vec<PortKey> = bad.iter().copied().filter(|&k| !h.isolated(k)).collect();
    for &k in &capped {
        assert_eq!(marks(&nodes[0], k), [Some((Action::Report, true))], "{k}");
    }
    for &k in &isolated {
        assert_eq!(marks(&nodes[0], k), [Some((Action::Isolate, false))], "{k}");
        assert_eq!(
            lft_uses(&nodes[0], k.node, k.port),
            0,
            "{k} carries no route"
        );
    }
    assert!(
        capped
            .iter()
            .any(|k| lft_uses(&nodes[0], k.node, k.port) > 0),
        "a capped port still carries routes"
    );
    // The operator clears an isolated port: the port held back longest takes its
    // place (all were marked at once: the lowest GUID and port), so the cap's number
    // stay isolated.
    let first = *capped.iter().min().expect("some held back");
    let now = nodes[0].port.now();
    nodes[0].sm.clear_port(now, isolated[0]).unwrap();
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(20));
    let h = nodes[0].sm.health();
    assert!(!h.is_unhealthy(isolated[0]));
    assert!(h.isolated(first), "the first held back is isolated now");
    assert_eq!(
        marks(&nodes[0], first),
        [Some((Action::Report, true)), Some((Action::Isolate, false))]
    );
    assert_eq!(bad.iter().filter(|&&k| h.isolated(k)).count(), 10);
    assert_eq!(lft_uses(&nodes[0], first.node, first.port), 0);
}

/// The operator isolates an ISL: no route uses it at either end until cleared, and
/// the commands refuse what the fabric does not have. Planted: `clear_port` not
/// draining the change (no heavy sweep asked for) -> the routes do not come back,
/// test fails.
#[test]
fn manual_isolate_and_clear() {
    let (mut sim, mut nodes, (a, pa), (b, pb)) = up(HealthConfig::default());
    let (ga, gb) = (guid(&sim, a), guid(&sim, b));
    let ka = PortKey::new(ga, pa);
    let now = nodes[0].port.now();
    assert_eq!(nodes[0].sm.isolate_port(now, ka), Ok(true));
    assert_eq!(nodes[0].sm.isolate_port(now, ka), Ok(false), "once");
    assert_eq!(
        nodes[0].sm.isolate_port(now, PortKey::new(0xdead, 1)),
        Err(PortCommandError::UnknownNode { node: 0xdead })
    );
    assert!(matches!(
        nodes[0].sm.isolate_port(now, PortKey::new(ga, 200)),
        Err(PortCommandError::NoSuchPort { .. })
    ));
    assert!(matches!(
        nodes[0].sm.isolate_port(now, PortKey::new(ga, 0)),
        Err(PortCommandError::NotExternal { .. })
    ));
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(20));
    assert_eq!(lft_uses(&nodes[0], ga, pa), 0);
    assert_eq!(lft_uses(&nodes[0], gb, pb), 0, "at both ends");
    // Never taken back by the clock.
    idle_for(&mut sim, &mut nodes, Duration::from_secs(120));
    assert!(nodes[0].sm.health().isolated(ka));

    let now = nodes[0].port.now();
    assert_eq!(nodes[0].sm.clear_port(now, ka), Ok(Some(Reason::Manual)));
    assert_eq!(nodes[0].sm.clear_port(now, ka), Ok(None));
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(20));
    assert!(lft_uses(&nodes[0], ga, pa) > 0, "routed again");
    assert_eq!(marks(&nodes[0], ka), [Some((Action::Isolate, false)), None]);
}

/// An isolation (manual and automatic) kept in the isolation file survives a
/// restart: a new engine reading the file isolates the same ports from its first
/// sweep. Planted: `start` not loading the isolation store -> the new engine routes
/// over the link, test fails.
#[test]
fn isolation_survives_a_restart() {
    let dir = std::env::temp_dir().join(format!("ibsm-iso-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("isolated-ports");
    let (f, mut sim, mut nodes, cas) = bring_up(
        flapping(Action::Isolate),
        Box::new(FileIsolationStore::new(&file)),
    );
    let isls = isl_ends(&sim, &f);
    let (a, pa) = isls[0];
    let (c, pc) = isls[isls.len() - 1];
    let (ka, kc) = (
        PortKey::new(guid(&sim, a), pa),
        PortKey::new(guid(&sim, c), pc),
    );
    let now = nodes[0].port.now();
    nodes[0].sm.isolate_port(now, ka).unwrap();
    flap_thrice(&mut sim, &mut nodes, (c, pc));
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(20));
    assert!(nodes[0].sm.health().isolated(kc), "flapping: isolated");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(" manual isolate "), "{text}");
    assert!(text.contains(" flapping isolate "), "{text}");

    // Restart: the old engine goes away, a new one reads the file.
    nodes[0].port.detach();
    drop(nodes);
    let mut nodes = vec![attach(
        &mut sim,
        cas[0],
        cfg(flapping(Action::Isolate)),
        Box::new(FileIsolationStore::new(&file)),
    )];
    assert!(nodes[0].sm.health().isolated(ka), "manual, read back");
    assert!(nodes[0].sm.health().isolated(kc), "flapping, read back");
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    for k in [ka, kc] {
        assert_eq!(lft_uses(&nodes[0], k.node, k.port), 0, "{k}: no route");
    }
    assert!(matches!(
        nodes[0].sm.health().get(kc).map(|u| &u.reason),
        Some(Reason::Restored {
            condition: Condition::Flapping
        })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The master isolates an ISL by hand and dies; the standby that takes over reads the
/// shared isolation store and keeps the link out of its routes. Planted: no
/// `took_over` at the Standby -> Master change -> the new master routes over the link,
/// test fails.
#[test]
fn isolation_survives_a_failover() {
    let f = tree();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let store = MemoryIsolationStore::default();
    let poll = Duration::from_millis(500);
    let sm_cfg = |priority: u8| {
        let mut c = cfg(HealthConfig::default());
        c.priority = priority;
        c.polling_timeout = poll;
        c
    };
    let mut nodes = vec![
        attach(&mut sim, cas[0], sm_cfg(10), Box::new(store.clone())),
        attach(
            &mut sim,
            *cas.last().unwrap(),
            sm_cfg(3),
            Box::new(store.clone()),
        ),
    ];
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    common::settle_master_standby(&mut sim, &mut nodes, poll * 2);
    assert_eq!(common::roles(&nodes), [Role::Master, Role::Standby]);
    let (a, pa) = isl_ends(&sim, &f)[0];
    let ka = PortKey::new(guid(&sim, a), pa);
    let now = nodes[1].port.now();
    assert!(
        matches!(
            nodes[1].sm.isolate_port(now, ka),
            Err(PortCommandError::NotMaster { .. })
        ),
        "the standby refuses"
    );
    let now = nodes[0].port.now();
    nodes[0].sm.isolate_port(now, ka).unwrap();
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(20));
    assert_eq!(lft_uses(&nodes[0], ka.node, ka.port), 0);

    nodes[0].port.detach();
    nodes[0].alive = false;
    let t = sim.now() + Duration::from_secs(60);
    let ok = drive(&mut sim, &mut nodes, t, |_, ns| ns[1].ups() > 0);
    assert!(ok, "the standby took over");
    assert!(nodes[1].sm.health().isolated(ka), "read at takeover");
    until_clean(&mut sim, &mut nodes, 1, Duration::from_secs(30));
    assert_eq!(
        lft_uses(&nodes[1], ka.node, ka.port),
        0,
        "the new master keeps the link out of its routes"
    );
    assert!(store.clone().load().unwrap().iter().any(|p| p.port == ka));
}

/// Isolations never cut a switch off the subnet: with every cable of one switch
/// isolated (the cap counts ports, not what they carry), the last one to be left out
/// keeps its routes, and every CA still reaches every LID. Planted: the route job
/// cutting every isolated cable -> routing fails, the old tables stay in force and the
/// other cables keep their routes (test fails).
#[test]
fn isolations_never_cut_a_switch_off() {
    let (mut sim, mut nodes, (a, _), _) = up(HealthConfig::default());
    let ga = guid(&sim, a);
    let num_ports = sim.node_setup(a).expect("switch").num_ports;
    let isls: Vec<u8> = (1..=num_ports)
        .filter(|&p| {
            sim.peer(a, p).is_some_and(|(peer, _)| {
                sim.node_setup(peer)
                    .is_some_and(|s| s.kind == ibsm_sim::NodeKind::Switch)
            })
        })
        .collect();
    assert!(isls.len() >= 2, "{isls:?}");
    let now = nodes[0].port.now();
    for &p in &isls {
        assert_eq!(nodes[0].sm.isolate_port(now, PortKey::new(ga, p)), Ok(true));
    }
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    let carrying: Vec<u8> = isls
        .iter()
        .copied()
        .filter(|&p| lft_uses(&nodes[0], ga, p) > 0)
        .collect();
    assert_eq!(
        carrying.len(),
        1,
        "cables of {ga:#x} still routed: {carrying:?}"
    );
    assert!(sim.verify().is_clean());
}
