//! End-to-end M_Key protection: per-port keys with protection level 2 and a lease.
//! An SM without the keys can neither read nor change anything while the master
//! lives (its SMPs are dropped and counted as violations); once the master is gone and
//! the lease has run out, a successor takes over with no LID changes.

mod common;

use std::time::Duration;

use common::{assert_configured, attach, ca_nodes, drive, sim_of, until_clean, until_up};
use ibsm_manager::{MKeyMode, SmConfig, SmEvent, mkey};
use ibsm_sim::{NodeIdx, Sim, SimConfig, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Address, DrAddress, Incoming, Transport};
use ibsm_wire::{DrPath, DrSmp, DrSmpView, Method, PortInfo, SmAttributeId};

const SECRET: [u64; 2] = [0x0123_4567_89ab_cdef, 0x0fed_cba9_8765_4321];
const LEASE: u16 = 5;

fn keyed(secret: [u64; 2], priority: u8) -> SmConfig {
    let mut c = SmConfig::default();
    c.m_key = MKeyMode::PerPort { secret };
    c.m_key_protect = 2;
    c.m_key_lease = LEASE;
    c.priority = priority;
    c.sweep_interval = Duration::from_secs(10);
    c
}

fn fabric() -> Fabric {
    generate::fat_tree(8, 2).unwrap()
}

/// (node, auth port, expected key) of every port that carries an M_Key.
fn key_ports(sim: &Sim<SmaAgent>, f: &Fabric, secret: [u64; 2]) -> Vec<(NodeIdx, u8, u64)> {
    f.nodes()
        .map(|(_, n)| {
            let idx = sim.node_by_guid(n.guid().0).unwrap();
            let setup = sim.node_setup(idx).unwrap();
            let (port, guid) = if n.is_switch() {
                (0, setup.guid)
            } else {
                (1, setup.port_guid(1))
            };
            let key = mkey::key_for(MKeyMode::PerPort { secret }, guid).unwrap();
            (idx, port, key)
        })
        .collect()
}

/// One raw SubnGet/SubnSet(PortInfo) with `key` from a tool port, along `path`;
/// returns the answer's PortInfo, or None if nothing came back within 10 ms.
fn probe(
    sim: &mut Sim<SmaAgent>,
    tool: &mut ibsm_sim::SimPort<SmaAgent>,
    path: &[u8],
    method: Method,
    key: u64,
    data: Option<PortInfo>,
    tid: u64,
) -> Option<PortInfo> {
    let path = DrPath::from_ports(path).unwrap();
    let mut smp = DrSmp::request(method, SmAttributeId::PortInfo.into(), 0, tid, key, &path);
    if let Some(pi) = data {
        pi.emit_into(&mut smp.data).unwrap();
    }
    tool.send(&Address::Directed(DrAddress::direct(path)), &smp.to_bytes())
        .unwrap();
    let deadline = sim.now() + Duration::from_millis(10);
    loop {
        match tool.recv(deadline) {
            Ok(Incoming::Mad(rx)) => {
                let v = DrSmpView::new_checked(&rx.mad[..]).unwrap();
                if v.transaction_id() == tid {
                    return PortInfo::parse(v.attr_data()).ok();
                }
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

#[test]
fn keys_lock_out_intruders_until_the_lease_runs_out() {
    let f = fabric();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let lids = f.switch_count() + f.cas().count();
    let mut nodes = vec![attach(&mut sim, cas[0], keyed(SECRET, 5), None)];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    assert_configured(&sim, &nodes[0].sm, lids);
    let ports = key_ports(&sim, &f, SECRET);
    let distinct: std::collections::HashSet<u64> = ports.iter().map(|p| p.2).collect();
    assert_eq!(distinct.len(), ports.len(), "a different key per port");
    for &(n, p, key) in &ports {
        let st = *sim
            .with_agent(n, |a| a.sma().m_key_state(p).copied())
            .as_ref()
            .unwrap();
        assert_eq!(st.config.m_key, key);
        assert_eq!(st.config.protect_bits, 2);
        assert_eq!(st.config.lease_period, LEASE);
        assert_eq!(st.violations, 0);
    }
    let before = nodes[0].sm.lids().clone();

    // An intruder on another CA, with a key of its own: its Gets and Sets vanish, and
    // each is counted where it was refused.
    let intruder_ca = cas[cas.len() - 1];
    let mut tool = sim.attach_tool(intruder_ca, 1).unwrap();
    let leaf = sim.peer(intruder_ca, 1).unwrap().0;
    let wrong = 0xBAD0_BAD0_BAD0_BAD0u64;
    assert!(probe(&mut sim, &mut tool, &[], Method::Get, wrong, None, 1).is_none());
    assert!(probe(&mut sim, &mut tool, &[1], Method::Get, wrong, None, 2).is_none());
    let mut evil = sim.with_agent(leaf, |a| a.sma().port_info(0)).unwrap();
    let leaf_lid = evil.lid;
    evil.lid = 0x7777;
    assert!(probe(&mut sim, &mut tool, &[1], Method::Set, wrong, Some(evil), 3).is_none());
    assert_eq!(sim.with_agent(leaf, |a| a.sma().lid(0)), Some(leaf_lid));
    let v_ca = sim.with_agent(intruder_ca, |a| a.sma().m_key_state(1).unwrap().violations);
    let v_leaf = sim.with_agent(leaf, |a| a.sma().m_key_state(0).unwrap().violations);
    assert_eq!((v_ca, v_leaf), (1, 2));

    // A rogue SM engine with other keys (higher priority even) gets nowhere while the
    // master lives, for longer than a lease: the master's keyed SMPs keep stopping the
    // countdowns the rogue starts.
    let mut rogue_cfg = keyed([7, 7], 15);
    rogue_cfg.sweep_interval = Duration::from_secs(1);
    drop(tool);
    nodes.push(attach(&mut sim, cas[cas.len() - 2], rogue_cfg, None));
    let t = sim.now() + Duration::from_secs(u64::from(LEASE) * 3);
    drive(&mut sim, &mut nodes, t, |_, _| false);
    // It sees nothing (not even its own port answers it), so it configures nothing.
    for e in &nodes[1].events {
        if let SmEvent::SubnetUp { stats } = e {
            assert_eq!((stats.nodes, stats.port_sets, stats.lft_blocks), (0, 0, 0));
        }
    }
    assert!(nodes[1].sm.lids().is_empty());
    for &(n, p, key) in &ports {
        let st = sim
            .with_agent(n, |a| a.sma().m_key_state(p).copied())
            .unwrap();
        assert_eq!((st.config.m_key, st.config.protect_bits), (key, 2));
    }
    assert!(
        sim.with_agent(cas[cas.len() - 2], |a| a
            .sma()
            .m_key_state(1)
            .unwrap()
            .violations)
            > 0
    );
    assert!(sim.verify().is_clean());
    assert_eq!(&before, nodes[0].sm.lids());
    nodes[1].port.detach();
    nodes[1].alive = false;

    // The master dies. Nobody refreshes; a successor that knows nothing of the keys
    // is refused until the leases it trips have run out, then it reads the keys
    // (protection level 0 shows them) and takes over with the same LIDs.
    nodes[0].port.detach();
    nodes[0].alive = false;
    let mut succ = keyed([9, 9], 1);
    succ.sweep_interval = Duration::from_secs(2);
    nodes.push(attach(&mut sim, cas[5], succ, None));
    let died = sim.now();
    let all = f.node_count();
    let full_up = |e: &SmEvent| matches!(e, SmEvent::SubnetUp { stats } if stats.nodes == all);
    let ok = drive(
        &mut sim,
        &mut nodes,
        died + Duration::from_secs(180),
        |_, ns| ns[2].events.iter().any(full_up),
    );
    assert!(ok, "successor never saw the whole subnet");
    let took = sim.now().saturating_duration_since(died);
    assert!(
        took >= Duration::from_secs(u64::from(LEASE)),
        "not before the lease: {took:?}"
    );
    until_clean(&mut sim, &mut nodes, 2, Duration::from_secs(60));
    assert_configured(&sim, &nodes[2].sm, lids);
    assert_eq!(&before, nodes[2].sm.lids(), "no LID changes");
    // And the ports now carry the successor's keys, protected again.
    for &(n, p, key) in &key_ports(&sim, &f, [9, 9]) {
        let st = sim
            .with_agent(n, |a| a.sma().m_key_state(p).copied())
            .unwrap();
        assert_eq!((st.config.m_key, st.config.protect_bits), (key, 2));
    }
    assert!(
        !nodes[2]
            .events
            .iter()
            .any(|e| matches!(e, SmEvent::RoutingFailed { .. }))
    );
    eprintln!("successor up {took:?} after the master died");
}
