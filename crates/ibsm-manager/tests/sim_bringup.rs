//! End-to-end: the engine brings simulated fabrics up, and the simulator's LFT walk
//! agrees.

use ibsm_manager::{SmConfig, SmEvent, SubnetManager, SweepStats, driver};
use ibsm_sim::{Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Instant, Transport};

fn bring_up(
    fabric: &Fabric,
    cfg: SmConfig,
) -> (Sim<SmaAgent>, SimPort<SmaAgent>, SubnetManager, SweepStats) {
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(fabric, SimConfig::default()).expect("sim");
    let (_, ca) = fabric.cas().next().expect("a CA");
    let idx = sim.node_by_guid(ca.guid().0).expect("CA in sim");
    let mut port = sim.attach_sm(idx, 1).expect("attach");
    port.set_is_sm(true).expect("issm");
    let mut sm = SubnetManager::new(cfg, port.local_port()).expect("valid configuration");
    sm.start(port.now()).expect("start");
    let mut stats = None;
    driver::run(&mut sm, &mut port, Instant::from_secs(120), |ev| {
        if let SmEvent::SubnetUp { stats: s } = ev {
            stats = Some(s.clone());
            return true;
        }
        false
    })
    .expect("run");
    let stats = stats.expect("subnet up within 120 s of virtual time");
    (sim, port, sm, stats)
}

/// The simulator's LFT walks: no loop, wrong endpoint or inactive hop anywhere, and every
/// path that does not arrive ends in a hole towards one of the LIDs in `gone`.
fn only_paths_to_fail(sim: &Sim<SmaAgent>, gone: &[u16]) {
    let r = sim.verify();
    assert_eq!(
        (r.loops, r.wrong_endpoint, r.not_active_hops),
        (0, 0, 0),
        "{r:?}"
    );
    assert_eq!(r.ok + r.holes, r.paths, "{r:?}");
    assert!(r.samples.iter().all(|p| gone.contains(&p.dlid)), "{r:?}");
}

#[test]
fn small_fat_tree_comes_up_verified() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (sim, _port, sm, stats) = bring_up(&fabric, SmConfig::default());
    let report = sim.verify();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(stats.switches, fabric.switch_count());
    assert_eq!(stats.nodes, fabric.node_count());
    assert_eq!(stats.links, fabric.link_count());
    assert_eq!(report.lids, fabric.switch_count() + fabric.cas().count());
    assert!(sm.is_up());
    eprintln!("{stats:?}");
}

/// What the SM wrote is the routes in force, not a copy of them: on the largest fabrics
/// a copy of every LFT is 190 MB. Each switch's programmed LFT is a row of `routes()`,
/// and holds what the switch in the simulator holds.
#[test]
fn programmed_lfts_share_the_routes_in_force() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (sim, _port, sm, _stats) = bring_up(&fabric, SmConfig::default());
    let routes = sm.routes().expect("routes in force");
    let rows: Vec<&[u8]> = (0..routes.switch_count()).map(|s| routes.lft(s)).collect();
    let mut checked = 0;
    for (_, node) in fabric.switches() {
        let guid = node.guid().0;
        let lft = sm.programmed_lft(guid).expect("switch programmed");
        assert!(
            rows.iter().any(|r| std::ptr::eq(r.as_ptr(), lft.as_ptr())),
            "{guid:#x}: the programmed LFT is a copy"
        );
        let idx = sim.node_by_guid(guid).expect("switch in sim");
        let held = sim.with_agent(idx, |a| a.sma().lft()[..lft.len()].to_vec());
        assert_eq!(held, lft, "{guid:#x}");
        checked += 1;
    }
    assert_eq!(checked, fabric.switch_count());
}

/// On a torus, DOR needs two VLs (datelines); the SL -> VL maps it computed must be on
/// the switches, or the deadlock freedom exists only on paper.
#[test]
fn torus_dor_programs_sl2vl_tables() {
    let p = generate::Grid {
        dims: vec![4, 4],
        torus: true,
        cas_per_switch: 1,
    };
    let fabric = generate::grid(&p).unwrap();
    let mut cfg = SmConfig::default();
    cfg.routing = ibsm_routing::EngineKind::Dor.into();
    let (sim, _port, sm, stats) = bring_up(&fabric, cfg);
    let report = sim.verify();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(stats.routing_engine, "dor");
    let routes = sm.routes().expect("routes");
    assert!(routes.vls_used() > 1, "a torus needs datelines");
    let csr = ibsm_topology::Csr::new(sm.fabric().expect("fabric"));
    let mut checked = 0;
    for s in 0..csr.switch_count() {
        let node = sim.node_by_guid(csr.switch_guid[s].0).expect("switch");
        for (port, target, _) in csr.ports_of(s as u32) {
            if target.as_switch().is_none() {
                continue;
            }
            let want = routes.sl2vl(s, port).expect("table for a switch port");
            // Every input port maps through the table written for this output port.
            for input in 1..=csr.num_ports(s as u32) {
                if input == port {
                    continue;
                }
                let got = sim
                    .with_agent(node, |a| a.sma().sl2vl(input, port))
                    .expect("sl2vl");
                assert_eq!(
                    ibsm_wire::SlToVlMap(got).vls(),
                    want,
                    "switch {s} in {input} out {port}"
                );
                checked += 1;
            }
            // Each VL in use has a share of the low-priority arbitration table.
            let arb = sim
                .with_agent(node, |a| a.sma().vl_arbitration(port).copied())
                .expect("vlarb");
            for vl in 0..routes.vls_used() {
                let e = usize::from(vl) * 2;
                assert_eq!(
                    (arb[e] & 0x0F, arb[e + 1]),
                    (vl, 64),
                    "switch {s} port {port} VL {vl}"
                );
            }
        }
    }
    assert!(checked > 0);
    assert!(
        stats
            .by_attribute
            .iter()
            .any(|(a, n)| *a == "SLtoVLMappingTable" && *n > 0)
    );
}

/// One SM alone on a fabric: exactly one heavy sweep up to SUBNET UP, then only light
/// sweeps (one SwitchInfo Get per switch) while nothing changes, on the wire too; a
/// cable pulled later (both ends trap, the light sweep sees PortStateChange) brings
/// exactly one heavy sweep, and light sweeps again after it.
#[test]
fn one_heavy_sweep_then_light_sweeps_until_a_change() {
    const NODE_INFO: u16 = 0x0011;
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).expect("sim");
    let (_, ca) = fabric.cas().next().expect("a CA");
    let idx = sim.node_by_guid(ca.guid().0).expect("CA in sim");
    let mut port = sim.attach_sm(idx, 1).expect("attach");
    port.set_is_sm(true).expect("issm");
    let cfg = SmConfig::default();
    let interval = cfg.sweep_interval;
    let mut sm = SubnetManager::new(cfg, port.local_port()).expect("valid configuration");
    sm.start(port.now()).expect("start");
    let mut events = Vec::new();
    // Six sweep intervals of quiet.
    let quiet = Instant::ZERO + interval * 6 + interval / 2;
    driver::run(&mut sm, &mut port, quiet, |ev| {
        events.push(ev.clone());
        false
    })
    .expect("run");
    let heavy_starts = |ev: &[SmEvent]| {
        ev.iter()
            .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
            .count()
    };
    let lights = |ev: &[SmEvent]| -> Vec<SweepStats> {
        ev.iter()
            .filter_map(|e| match e {
                SmEvent::LightSweepDone { stats } => Some(stats.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(heavy_starts(&events), 1, "{events:?}");
    let ups: Vec<&SweepStats> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::SubnetUp { stats } => Some(stats),
            _ => None,
        })
        .collect();
    assert_eq!(ups.len(), 1);
    let up = ups[0].clone();
    assert!(sim.verify().is_clean());
    let light = lights(&events);
    assert_eq!(light.len(), 6, "one light sweep per interval");
    let switches = fabric.switch_count() as u64;
    for l in &light {
        assert!(!l.heavy);
        assert_eq!(l.smps, switches);
        assert_eq!(l.by_attribute, vec![("SwitchInfo", switches)]);
    }
    // On the wire: the NodeInfo Gets of that one sweep and nothing more (each SMP counts
    // once as a request and once as its response).
    let ni = up
        .by_attribute
        .iter()
        .find(|(a, _)| *a == "NodeInfo")
        .map(|(_, n)| *n)
        .expect("NodeInfo Gets");
    assert_eq!(sim.counters().attr(NODE_INFO).sent, 2 * ni);

    // Pull the cable of another CA: its leaf switch traps (128), and the light sweep
    // would see PortStateChange. (An inter-switch cable makes both ends trap, and the
    // far end's trap can be lost on its old route through that cable and resent after
    // the heavy sweep is over: a second heavy sweep, rightly, since the SM cannot tell
    // when a late trap's change happened.)
    let other = fabric
        .cas()
        .map(|(_, c)| sim.node_by_guid(c.guid().0).expect("CA"))
        .find(|&n| n != idx)
        .expect("a second CA");
    let (sw, sw_port) = sim.peer(other, 1).expect("cabled CA");
    sim.apply(ibsm_sim::Fault::LinkDown {
        node: sw,
        port: sw_port,
    });
    let mark = events.len();
    let until = quiet + interval * 3;
    driver::run(&mut sm, &mut port, until, |ev| {
        events.push(ev.clone());
        false
    })
    .expect("run");
    let after = &events[mark..];
    assert_eq!(heavy_starts(after), 1, "{after:?}");
    assert!(
        after
            .iter()
            .any(|e| matches!(e, SmEvent::Trap { number: 128, .. }))
    );
    assert!(after.iter().any(|e| matches!(e, SmEvent::SubnetUp { .. })));
    assert!(!lights(after).is_empty(), "light sweeps resume");
    // Every path works but those to the CA that is gone (its LID has no route now).
    let gone = sim.with_agent(other, |a| a.sma().lid(1)).expect("LID");
    only_paths_to_fail(&sim, &[gone]);
}

/// A trap that arrives while a heavy sweep is still discovering, from a switch that sweep
/// has not reached yet, is satisfied by it (the switch is read after the change); a
/// trap about a part already read would need another sweep. Two cables pulled one after
/// the other: one heavy sweep sees both.
#[test]
fn a_trap_from_a_switch_not_yet_discovered_joins_the_running_sweep() {
    let fabric = generate::fat_tree(8, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).expect("sim");
    let cas: Vec<ibsm_sim::NodeIdx> = fabric
        .cas()
        .map(|(_, c)| sim.node_by_guid(c.guid().0).expect("CA"))
        .collect();
    let mut port = sim.attach_sm(cas[0], 1).expect("attach");
    port.set_is_sm(true).expect("issm");
    let mut sm =
        SubnetManager::new(SmConfig::default(), port.local_port()).expect("valid configuration");
    sm.start(port.now()).expect("start");
    let mut events = Vec::new();
    driver::run(&mut sm, &mut port, Instant::from_secs(1), |ev| {
        events.push(ev.clone());
        false
    })
    .expect("run");
    assert!(sm.is_up());
    // The CA next to the SM's and the last CA (on the leaf farthest in discovery order).
    let (near, far) = (cas[1], *cas.last().unwrap());
    let (near_sw, near_port) = sim.peer(near, 1).expect("cabled");
    let (far_sw, far_port) = sim.peer(far, 1).expect("cabled");
    assert_ne!(near_sw, far_sw);
    let gone: Vec<u16> = [near, far]
        .iter()
        .map(|&n| sim.with_agent(n, |a| a.sma().lid(1)).expect("LID"))
        .collect();
    let mark = events.len();
    sim.apply(ibsm_sim::Fault::LinkDown {
        node: near_sw,
        port: near_port,
    });
    // Until the near leaf's trap starts a heavy sweep, then the far cable goes.
    driver::run(&mut sm, &mut port, Instant::from_secs(2), |ev| {
        events.push(ev.clone());
        matches!(ev, SmEvent::SweepStarted { heavy: true })
    })
    .expect("run");
    assert!(sm.is_sweeping());
    sim.apply(ibsm_sim::Fault::LinkDown {
        node: far_sw,
        port: far_port,
    });
    driver::run(&mut sm, &mut port, Instant::from_secs(25), |ev| {
        events.push(ev.clone());
        false
    })
    .expect("run");
    let after = &events[mark..];
    let heavy = after
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
        .count();
    // The far leaf's trap came during that sweep (else this test proves nothing).
    let up_at = after
        .iter()
        .position(|e| matches!(e, SmEvent::SubnetUp { .. }))
        .expect("up again");
    let traps_before_up = after[..up_at]
        .iter()
        .filter(|e| matches!(e, SmEvent::Trap { number: 128, .. }))
        .count();
    assert_eq!(traps_before_up, 2, "{after:?}");
    assert_eq!(heavy, 1, "{after:?}");
    // That one sweep saw both cables gone: only paths to the two CAs fail.
    let removed = after
        .iter()
        .filter(|e| matches!(e, SmEvent::NodeRemoved { .. }))
        .count();
    assert_eq!(removed, 2, "{after:?}");
    only_paths_to_fail(&sim, &gone);
}
