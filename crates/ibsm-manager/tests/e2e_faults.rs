//! End-to-end under faults: SMP loss, link flaps during and after a sweep, nodes
//! removed, unplugged and power-cycled. Each run must converge to a verified subnet
//! (traps 128 and light sweeps trigger the heavy sweeps that repair it), and every port
//! that stayed keeps its LID.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{
    assert_configured, assert_lids_kept, attach, ca_nodes, drive, isl_ends, sim_of, until_clean,
    until_up,
};
use ibsm_manager::{SmConfig, SmEvent};
use ibsm_sim::{Fault, SimConfig};
use ibsm_topology::{Fabric, generate};

fn tree() -> Fabric {
    generate::fat_tree(8, 2).unwrap() // 32 CAs, 8 leaves, 4 spines
}

fn all_lids(f: &Fabric) -> usize {
    f.switch_count() + f.cas().count()
}

/// A short sweep interval so light sweeps come often in virtual time.
fn cfg() -> SmConfig {
    let mut c = SmConfig::default();
    c.sweep_interval = Duration::from_secs(1);
    c
}

#[test]
fn five_percent_smp_loss_converges() {
    let f = tree();
    let mut retries = 0;
    for seed in 1..=4u64 {
        let sc = SimConfig {
            seed,
            drop_ppm: 50_000,
            ..SimConfig::default()
        };
        let mut sim = sim_of(&f, sc);
        let ca = ca_nodes(&sim, &f)[0];
        let mut nodes = vec![attach(&mut sim, ca, cfg(), None)];
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(120));
        retries += nodes[0]
            .events
            .iter()
            .filter_map(|e| match e {
                SmEvent::SubnetUp { stats } => Some(stats.retries),
                _ => None,
            })
            .sum::<u64>();
        // Loss stays on: the LIDs handed out must not move in later sweeps either.
        let before = nodes[0].sm.lids().clone();
        let t = sim.now() + Duration::from_secs(5);
        drive(&mut sim, &mut nodes, t, |_, _| false);
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
        assert_lids_kept(&before, nodes[0].sm.lids(), &HashSet::new());
        // Clean walk with loss still on: drop loss for the port-state checks only.
        sim.apply(Fault::DropRate { ppm: 0 });
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f));
    }
    assert!(retries > 0, "5% loss must have cost retries");
}

#[test]
fn link_flaps_during_and_after_sweeps() {
    let f = tree();
    for seed in 1..=4u64 {
        let mut sim = sim_of(
            &f,
            SimConfig {
                seed,
                ..SimConfig::default()
            },
        );
        let ca = ca_nodes(&sim, &f)[0];
        let isls = isl_ends(&sim, &f);
        // During the first sweep: a link drops after a few hundred microseconds and
        // comes back while the SM is still programming.
        let (n1, p1) = isls[(seed as usize * 7) % isls.len()];
        let t0 = sim.now();
        sim.schedule(
            t0 + Duration::from_micros(50 * seed),
            Fault::LinkDown { node: n1, port: p1 },
        );
        sim.schedule(
            t0 + Duration::from_micros(400 + 100 * seed),
            Fault::LinkUp { node: n1, port: p1 },
        );
        let mut nodes = vec![attach(&mut sim, ca, cfg(), None)];
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(60));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f));
        let before = nodes[0].sm.lids().clone();

        // After the sweep: a flap that traps (128) into a heavy sweep.
        let (n2, p2) = isls[(seed as usize * 13 + 3) % isls.len()];
        sim.apply(Fault::LinkDown { node: n2, port: p2 });
        let t = sim.now() + Duration::from_millis(300);
        drive(&mut sim, &mut nodes, t, |_, _| false);
        assert!(
            nodes[0]
                .events
                .iter()
                .any(|e| matches!(e, SmEvent::Trap { number: 128, .. })),
            "link down must trap"
        );
        // Converged with the link down, then up again.
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f));
        sim.apply(Fault::LinkUp { node: n2, port: p2 });
        let t = sim.now() + Duration::from_millis(100);
        drive(&mut sim, &mut nodes, t, |_, _| false);
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f));
        assert_eq!(nodes[0].sm.subnet().link_count(), f.link_count());
        assert_lids_kept(&before, nodes[0].sm.lids(), &HashSet::new());

        // A second heavy sweep with a flap in the middle of it.
        nodes[0].sm.request_heavy_sweep(sim.now());
        let (n3, p3) = isls[(seed as usize * 5 + 1) % isls.len()];
        let t0 = sim.now();
        sim.schedule(
            t0 + Duration::from_micros(30 * seed),
            Fault::LinkDown { node: n3, port: p3 },
        );
        sim.schedule(
            t0 + Duration::from_micros(200 * seed),
            Fault::LinkUp { node: n3, port: p3 },
        );
        let t = sim.now() + Duration::from_millis(100);
        drive(&mut sim, &mut nodes, t, |_, _| false);
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f));
        assert_lids_kept(&before, nodes[0].sm.lids(), &HashSet::new());
    }
}

#[test]
fn ca_removed_leaf_unplugged_and_switch_power_cycled() {
    let f = tree();
    for seed in 1..=3u64 {
        let mut sim = sim_of(
            &f,
            SimConfig {
                seed,
                ..SimConfig::default()
            },
        );
        let cas = ca_nodes(&sim, &f);
        let mut nodes = vec![attach(&mut sim, cas[0], cfg(), None)];
        until_up(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f));
        let before = nodes[0].sm.lids().clone();

        // 1. A CA goes away for good.
        let gone = cas[cas.len() - 1 - seed as usize];
        let gone_guid = sim.node_setup(gone).unwrap().port_guid(1);
        let old_lid = before[&gone_guid].0;
        sim.apply(Fault::NodeRemove { node: gone });
        let t = sim.now() + Duration::from_millis(300);
        let gone_node = sim.node_setup(gone).unwrap().guid;
        drive(&mut sim, &mut nodes, t, |_, ns| {
            ns[0]
                .events
                .contains(&SmEvent::NodeRemoved { guid: gone_node })
        });
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f) - 1);
        assert!(
            !nodes[0]
                .sm
                .subnet()
                .by_guid
                .contains_key(&sim.node_setup(gone).unwrap().guid)
        );
        let skip: HashSet<u64> = [gone_guid].into();
        assert_lids_kept(&before, nodes[0].sm.lids(), &skip);
        assert!(
            nodes[0].sm.lids().values().all(|l| l.0 != old_lid),
            "the removed CA's LID is not reused"
        );

        // 2. A leaf switch (not the SM's) is unplugged: every cable out, then back.
        let sm_leaf = sim.peer(cas[0], 1).unwrap().0;
        let leaf = (1..cas.len())
            .filter_map(|i| sim.peer(cas[(i * seed as usize * 3) % cas.len()], 1))
            .map(|(n, _)| n)
            .find(|&n| n != sm_leaf && Some(n) != sim.peer(gone, 1).map(|p| p.0))
            .expect("another leaf");
        let ports = sim.node_setup(leaf).unwrap().num_ports;
        let cabled: Vec<u8> = (1..=ports)
            .filter(|&p| sim.peer(leaf, p).is_some())
            .collect();
        for &p in &cabled {
            sim.apply(Fault::LinkDown {
                node: leaf,
                port: p,
            });
        }
        // While it is out the LIDs behind it stay in their SMAs but are unreachable, so
        // the walk cannot be clean; the SM must notice and re-sweep without it.
        let leaf_guid = sim.node_setup(leaf).unwrap().guid;
        let t = sim.now() + Duration::from_secs(2);
        drive(&mut sim, &mut nodes, t, |_, _| false);
        assert!(
            nodes[0]
                .events
                .contains(&SmEvent::NodeRemoved { guid: leaf_guid }),
            "unplugged leaf noticed"
        );
        assert!(!nodes[0].sm.subnet().by_guid.contains_key(&leaf_guid));
        for &p in &cabled {
            sim.apply(Fault::LinkUp {
                node: leaf,
                port: p,
            });
        }
        let t = sim.now() + Duration::from_millis(300);
        drive(&mut sim, &mut nodes, t, |_, _| false);
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f) - 1);
        assert_lids_kept(&before, nodes[0].sm.lids(), &skip);

        // 3. The same leaf is power-cycled: it forgets its LID, LFT and port states.
        sim.apply(Fault::NodeReset { node: leaf });
        assert_eq!(sim.with_agent(leaf, |a| a.sma().lid(0)), Some(0));
        let t = sim.now() + Duration::from_millis(300);
        drive(&mut sim, &mut nodes, t, |_, _| false);
        until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        assert_configured(&sim, &nodes[0].sm, all_lids(&f) - 1);
        assert_lids_kept(&before, nodes[0].sm.lids(), &skip);
    }
}

#[test]
fn silent_link_flap_is_repaired() {
    // A CA link goes down and up again while every SMP to and from the SM is lost, so
    // the SM hears no trap when it happens: the port sits in Init. The latched
    // PortStateChange bit found by a light sweep (or the SMA re-sending its trap) must
    // still lead to a heavy sweep that activates it again.
    let f = tree();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut nodes = vec![attach(&mut sim, cas[0], cfg(), None)];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    // Settle: the first sweep's own traps (ports going Active) cause a second one.
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    assert!(!nodes[0].sm.is_sweeping());
    let before = nodes[0].sm.lids().clone();
    let heavy_before = nodes[0]
        .events
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
        .count();
    let victim = cas[5];
    sim.apply(Fault::LinkDropRate {
        node: cas[0],
        port: 1,
        ppm: 1_000_000,
    });
    sim.apply(Fault::LinkDown {
        node: victim,
        port: 1,
    });
    sim.run_for(Duration::from_millis(2));
    sim.apply(Fault::LinkUp {
        node: victim,
        port: 1,
    });
    sim.run_for(Duration::from_millis(50));
    sim.apply(Fault::LinkDropRate {
        node: cas[0],
        port: 1,
        ppm: 0,
    });
    // The SM saw nothing: the port sits in Init until a sweep finds it.
    assert_eq!(
        sim.with_agent(victim, |a| a.sma().port_state(1)),
        Some(ibsm_sma::LogicalState::Init)
    );
    assert!(!sim.verify().is_clean());
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(10));
    let heavy_after = nodes[0]
        .events
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
        .count();
    assert!(
        heavy_after > heavy_before,
        "a heavy sweep repaired the port"
    );
    assert_configured(&sim, &nodes[0].sm, all_lids(&f));
    assert_lids_kept(&before, nodes[0].sm.lids(), &HashSet::new());
}
