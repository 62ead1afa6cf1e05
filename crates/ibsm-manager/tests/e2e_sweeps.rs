//! What a change in the fabric costs in sweeps: a cut cable makes both of its switches
//! trap (128), and the second trap usually arrives after the heavy sweep the first one
//! started has read its issuer. That second trap must not cost a second heavy sweep
//! (one SwitchInfo Get shows its PortStateChange latch clear), but a real change right
//! after the first still gets its own. A trap with nothing behind it costs one SwitchInfo
//! Get; when the latch cannot tell (an issuer we gave no switch LID, a check that gets no
//! answer) the SM sweeps.
//!
//! Quickstart tree (radix 36, 2 levels), one cut leaf-spine cable: before the check, two
//! heavy sweeps of 4,817 and 4,752 SMPs; now one of 4,765 (its discovery clears the two
//! latched switches' PortStateChange, 2 SwitchInfo Sets, and skips the 54 programming
//! SwitchInfo Sets whose values the switches already hold) plus at most two SwitchInfo
//! Gets for the traps.

mod common;

use std::time::Duration;

use common::{Node, assert_configured, attach, ca_nodes, drive, sim_of, until_clean};
use ibsm_manager::{SmConfig, SmEvent};
use ibsm_sim::{Fault, NodeIdx, Sim, SimConfig, SmaAgent};
use ibsm_topology::{Fabric, generate};

fn cfg() -> SmConfig {
    let mut c = SmConfig::default();
    c.sweep_interval = Duration::from_secs(1);
    c
}

/// The switch-to-switch cables, as (switch node, port), one end each.
fn isls(sim: &Sim<SmaAgent>, f: &Fabric) -> Vec<(NodeIdx, u8)> {
    let mut v = Vec::new();
    for (_, n) in f.nodes().filter(|(_, n)| n.is_switch()) {
        let idx = sim.node_by_guid(n.guid().0).unwrap();
        for p in 1..=n.num_ports() {
            if let Some((peer, pp)) = sim.peer(idx, p) {
                let sw = sim.node_setup(peer).unwrap().kind == ibsm_sim::NodeKind::Switch;
                if sw && !v.contains(&(peer, pp)) {
                    v.push((idx, p));
                }
            }
        }
    }
    v
}

/// Sweeps started and SMPs sent since event `from` / SMP count `smps`.
#[derive(Debug, Default, Clone, Copy)]
struct Cost {
    heavy: usize,
    light: usize,
    smps: u64,
}

fn cost(n: &Node, from: usize, smps: u64) -> Cost {
    let mut c = Cost {
        smps: n.sm.smps_sent() - smps,
        ..Cost::default()
    };
    for e in &n.events[from..] {
        match e {
            SmEvent::SweepStarted { heavy: true } => c.heavy += 1,
            SmEvent::SweepStarted { heavy: false } => c.light += 1,
            _ => {}
        }
    }
    c
}

/// A subnet up and settled (a few light sweeps after bring-up).
fn settled(f: &Fabric) -> (Sim<SmaAgent>, Vec<Node>) {
    let mut sim = sim_of(f, SimConfig::default());
    let cas = ca_nodes(&sim, f);
    let mut nodes = vec![attach(&mut sim, cas[0], cfg(), None)];
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    let t = sim.now() + Duration::from_millis(2500);
    drive(&mut sim, &mut nodes, t, |_, _| false);
    (sim, nodes)
}

/// Lets light sweeps run for a while, then waits for the SM to be idle and the subnet
/// clean.
fn settle(sim: &mut Sim<SmaAgent>, nodes: &mut [Node]) {
    let t = sim.now() + Duration::from_millis(3500);
    drive(sim, nodes, t, |_, _| false);
    until_clean(sim, nodes, 0, Duration::from_secs(30));
}

fn lids(f: &Fabric) -> usize {
    f.switch_count() + f.cas().count()
}

/// Cuts one cable of a settled subnet: exactly one heavy sweep follows, and it sees the
/// loss.
fn cut_one(f: &Fabric) -> Cost {
    let (mut sim, mut nodes) = settled(f);
    let (from, smps) = (nodes[0].events.len(), nodes[0].sm.smps_sent());
    let (node, port) = isls(&sim, f)[5];
    sim.apply(Fault::LinkDown { node, port });
    settle(&mut sim, &mut nodes);
    let c = cost(&nodes[0], from, smps);
    let traps = nodes[0].events[from..]
        .iter()
        .filter(|e| matches!(e, SmEvent::Trap { number: 128, .. }))
        .count();
    assert_eq!(traps, 2, "both switches of the cable trap");
    assert_eq!(c.heavy, 1, "{c:?}");
    // Beyond the sweeps: the two TrapRepresses and at most two SwitchInfo checks.
    let in_sweeps: u64 = nodes[0].events[from..]
        .iter()
        .filter_map(|e| match e {
            SmEvent::SubnetUp { stats } | SmEvent::LightSweepDone { stats } => Some(stats.smps),
            _ => None,
        })
        .sum();
    assert!(
        c.smps >= in_sweeps && c.smps - in_sweeps <= 4,
        "{c:?}: {in_sweeps} in sweeps"
    );
    assert_eq!(nodes[0].sm.subnet().link_count(), f.link_count() - 1);
    assert_configured(&sim, &nodes[0].sm, lids(f));
    c
}

#[test]
fn a_cut_cable_costs_one_heavy_sweep() {
    let c = cut_one(&generate::fat_tree(8, 2).unwrap());
    eprintln!("radix-8 tree, cut cable: {c:?}");
}

/// The quickstart fabric (radix 36, 2 levels: 648 CAs, 54 switches). Before trap 128
/// was checked against the latch, the cut cost two heavy sweeps here (the second trap
/// arrived after the first sweep had read its switch).
#[test]
fn quickstart_tree_cut_cable_costs_one_heavy_sweep() {
    let c = cut_one(&generate::fat_tree(36, 2).unwrap());
    eprintln!("quickstart tree, cut cable: {c:?}");
}

/// A second cable cut once the first cut's sweep has read every switch (while it
/// programs them, or right after it is done): its traps find the latch set again, and a
/// second heavy sweep sees it.
#[test]
fn a_second_cut_right_after_the_first_gets_its_own_sweep() {
    let f = generate::fat_tree(8, 2).unwrap();
    // Discovery done: the first sweep is programming (election is instant here).
    let programming = |e: &SmEvent| {
        matches!(
            e,
            SmEvent::PhaseDone {
                phase: ibsm_manager::Phase::Discover,
                ..
            }
        )
    };
    let done = |e: &SmEvent| matches!(e, SmEvent::SubnetUp { .. });
    for (when, sweeping) in [
        (&programming as &dyn Fn(&SmEvent) -> bool, true),
        (&done, false),
    ] {
        let (mut sim, mut nodes) = settled(&f);
        let (from, smps) = (nodes[0].events.len(), nodes[0].sm.smps_sent());
        let cables = isls(&sim, &f);
        let (node, port) = cables[5];
        sim.apply(Fault::LinkDown { node, port });
        let t = sim.now() + Duration::from_secs(10);
        let ok = drive(&mut sim, &mut nodes, t, |_, ns| {
            ns[0].events[from..].iter().any(when)
        });
        assert!(ok, "the first cut's sweep did not get there");
        assert_eq!(nodes[0].sm.is_sweeping(), sweeping);
        let (node, port) = cables[11];
        sim.apply(Fault::LinkDown { node, port });
        settle(&mut sim, &mut nodes);
        let c = cost(&nodes[0], from, smps);
        assert_eq!(c.heavy, 2, "second cut while sweeping: {sweeping}: {c:?}");
        assert_eq!(nodes[0].sm.subnet().link_count(), f.link_count() - 2);
        assert_configured(&sim, &nodes[0].sm, lids(&f));
    }
}

/// Hands the SM a trap 128 as if the switch at `lid` had sent it.
fn inject_trap_128(n: &mut Node, lid: u16, tid: u64) {
    use ibsm_wire::{LidSmp, Method, Notice, ProducerType, SmAttributeId, Trap128Details};
    let notice = Notice::generic_with(ProducerType::Switch, lid, &Trap128Details { lid });
    let mut smp = LidSmp::request(Method::Trap, SmAttributeId::Notice.into(), 0, tid, 0);
    notice.emit_into(&mut smp.data).unwrap();
    let now = ibsm_transport::Transport::now(&n.port);
    n.sm.handle_incoming(
        now,
        ibsm_transport::Incoming::Mad(ibsm_transport::Received {
            mad: smp.to_bytes().to_vec(),
            slid: lid,
            sl: 0,
            qpn: 0,
            pkey_index: 0,
            at: now,
        }),
    );
}

fn heavy_since(n: &Node, from: usize) -> usize {
    n.events[from..]
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
        .count()
}

/// A trap 128 with nothing behind it (a resend whose TrapRepress was lost) from a switch
/// the last sweep read costs one SwitchInfo Get; one naming a LID that is no switch of
/// ours, or whose check gets no answer, costs a heavy sweep.
#[test]
fn a_stale_trap_costs_one_get_and_doubt_costs_a_sweep() {
    let f = generate::fat_tree(8, 2).unwrap();
    let (mut sim, mut nodes) = settled(&f);
    let (_, sw) = f.switches().next().unwrap();
    let lid = nodes[0].sm.lids()[&sw.guid().0].0;
    let short = |sim: &mut Sim<SmaAgent>, nodes: &mut [Node]| {
        let t = sim.now() + Duration::from_millis(300);
        drive(sim, nodes, t, |_, _| false);
    };

    let from = nodes[0].events.len();
    let smps = nodes[0].sm.smps_sent();
    inject_trap_128(&mut nodes[0], lid, 0x51);
    short(&mut sim, &mut nodes);
    assert_eq!(heavy_since(&nodes[0], from), 0);
    let light: u64 = nodes[0].events[from..]
        .iter()
        .filter_map(|e| match e {
            SmEvent::LightSweepDone { stats } => Some(stats.smps),
            _ => None,
        })
        .sum();
    // TrapRepress and the SwitchInfo Get (the latter counted in a light sweep's stats
    // when one started meanwhile).
    assert!(nodes[0].sm.smps_sent() - smps - light <= 2);

    // A LID that names no switch we configured.
    let from = nodes[0].events.len();
    inject_trap_128(&mut nodes[0], 0xBEE, 0x52);
    short(&mut sim, &mut nodes);
    assert_eq!(heavy_since(&nodes[0], from), 1);
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));

    // The check lost: the SM's own link drops everything for a while.
    let (sm_ca, sm_port) = (ca_nodes(&sim, &f)[0], 1);
    sim.apply(Fault::LinkDropRate {
        node: sm_ca,
        port: sm_port,
        ppm: 1_000_000,
    });
    let from = nodes[0].events.len();
    inject_trap_128(&mut nodes[0], lid, 0x53);
    let t = sim.now() + Duration::from_secs(2);
    let swept = drive(&mut sim, &mut nodes, t, |_, ns| {
        heavy_since(&ns[0], from) > 0
    });
    assert!(swept, "no heavy sweep after a lost check");
    sim.apply(Fault::LinkDropRate {
        node: sm_ca,
        port: sm_port,
        ppm: 0,
    });
    settle(&mut sim, &mut nodes);
    assert_configured(&sim, &nodes[0].sm, lids(&f));
}
