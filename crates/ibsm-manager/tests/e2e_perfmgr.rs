//! PerfMgr on the simulator: counter sweeps after SUBNET UP only, every port read, the
//! counters equal what the simulator's performance agents hold, deltas over exactly
//! one sweep time, thresholds reported for the port that passed them and no other,
//! the queries in flight bounded.

use std::collections::BTreeMap;
use std::time::Duration;

use ibsm_manager::perfmgr::{Counter, PerfMgrConfig, PortPerf};
use ibsm_manager::{SmConfig, SmEvent, SubnetManager};
use ibsm_sim::{NodeIdx, Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Incoming, Instant, Transport, TransportError};
use ibsm_wire::{MadHeaderView, MgmtClass};

/// What one run saw.
#[derive(Default)]
struct Seen {
    events: Vec<SmEvent>,
    /// PerfMgt requests sent before the first SUBNET UP.
    perf_before_up: u64,
    /// Most PerfMgt requests sent and not yet answered.
    max_outstanding: u64,
    outstanding: u64,
    perf_sent: u64,
}

fn is_perf(mad: &[u8]) -> bool {
    MadHeaderView::new_checked(mad).is_ok_and(|h| h.mgmt_class() == MgmtClass::PerfMgt)
}

/// The driver loop, watching the PerfMgt MADs go out and come back, until `sweeps`
/// counter sweeps are done.
fn run(sm: &mut SubnetManager, port: &mut SimPort<SmaAgent>, seen: &mut Seen, sweeps: usize) {
    let until = port.now() + Duration::from_secs(3600);
    let done = |s: &Seen| {
        s.events
            .iter()
            .filter(|e| matches!(e, SmEvent::PerfSweepDone { .. }))
            .count()
    };
    let target = done(seen) + sweeps;
    while done(seen) < target {
        assert!(port.now() < until, "no counter sweep within an hour");
        let now = port.now();
        while let Some(out) = sm.poll_transmit(now) {
            if is_perf(&out.mad) {
                seen.perf_sent += 1;
                seen.outstanding += 1;
                seen.max_outstanding = seen.max_outstanding.max(seen.outstanding);
                // SUBNET UP is emitted (and `is_up` true) by the time the answer that
                // ends the sweep is handled; the event may still wait in the queue.
                if !sm.is_up() {
                    seen.perf_before_up += 1;
                }
            }
            if let Err(e) = port.send(&out.addr, &out.mad) {
                if let Some(id) = out.id {
                    sm.handle_send_error(now, id, e);
                }
            }
        }
        while let Some(ev) = sm.poll_event() {
            seen.events.push(ev);
        }
        let deadline = sm.poll_timeout().unwrap_or(Instant::MAX).min(until);
        match port.recv(deadline) {
            Ok(incoming) => {
                if let Incoming::Mad(rx) = &incoming {
                    if is_perf(&rx.mad) && rx.is_response() {
                        seen.outstanding = seen.outstanding.saturating_sub(1);
                    }
                }
                sm.handle_incoming(port.now(), incoming);
            }
            Err(TransportError::Timeout) => sm.handle_timeout(port.now()),
            Err(e) => panic!("{e}"),
        }
    }
    while let Some(ev) = sm.poll_event() {
        seen.events.push(ev);
    }
}

/// (node GUID, port) of every port PerfMgr should read: switch ports with a cable,
/// CA ports with a cable.
fn expected_ports(f: &Fabric) -> Vec<(u64, u8)> {
    let mut v: Vec<(u64, u8)> = f
        .nodes()
        .flat_map(|(id, n)| {
            let g = n.guid().0;
            f.links_of(id).map(move |(p, _, _)| (g, p))
        })
        .collect();
    v.sort_unstable();
    v
}

fn last_sweep(events: &[SmEvent]) -> BTreeMap<(u64, u8), PortPerf> {
    let start = events[..events.len() - 1]
        .iter()
        .rposition(|e| matches!(e, SmEvent::PerfSweepDone { .. }))
        .map_or(0, |i| i + 1);
    events[start..]
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortCounters(p) => Some(((p.guid, p.port), (**p).clone())),
            _ => None,
        })
        .collect()
}

fn setup(perf: PerfMgrConfig) -> (Fabric, Sim<SmaAgent>, SimPort<SmaAgent>, SubnetManager) {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
    let (_, ca) = fabric.cas().next().unwrap();
    let port = sim
        .attach_sm(sim.node_by_guid(ca.guid().0).unwrap(), 1)
        .unwrap();
    let mut cfg = SmConfig::default();
    cfg.perfmgr = Some(perf);
    let mut sm = SubnetManager::new(cfg, port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    (fabric, sim, port, sm)
}

#[test]
fn counter_sweeps_read_every_port_after_subnet_up_and_report_deltas_and_thresholds() {
    let mut perf = PerfMgrConfig {
        sweep_time: Duration::from_secs(30),
        max_outstanding_queries: 3,
        ..PerfMgrConfig::default()
    };
    perf.set_threshold(Counter::SymbolErrors, Some(5));
    perf.set_threshold(Counter::LinkDowned, Some(0));
    let (fabric, mut sim, mut port, mut sm) = setup(perf);
    let (_, sw) = fabric.switches().next().unwrap();
    let sw_idx = sim.node_by_guid(sw.guid().0).unwrap();
    let sw_port = fabric
        .links_of(fabric.node_by_guid(sw.guid()).unwrap())
        .next()
        .unwrap()
        .0;
    // Errors from before the first sweep are its reading, not growth.
    sim.add_port_counter(sw_idx, sw_port, ibsm_sma::Counter::SymbolErrors, 2);
    let mut seen = Seen::default();
    run(&mut sm, &mut port, &mut seen, 1);

    assert_eq!(seen.perf_before_up, 0, "PerfMgt MADs before SUBNET UP");
    assert!(
        seen.max_outstanding <= 3,
        "{} in flight",
        seen.max_outstanding
    );
    assert!(seen.perf_sent > 0);
    let want = expected_ports(&fabric);
    let first = last_sweep(&seen.events);
    assert_eq!(first.keys().copied().collect::<Vec<_>>(), want);
    assert!(
        first
            .values()
            .all(|p| p.delta.is_none() && p.interval.is_none())
    );
    let stats = sm.perf_sweep_stats().unwrap();
    assert_eq!((stats.ports_read, stats.ports_failed), (want.len(), 0));
    assert_eq!((stats.failures, stats.over_threshold), (0, 0));

    // Errors on one switch port and traffic on one CA port between two sweeps.
    assert_eq!(
        first[&(sw.guid().0, sw_port)]
            .counters
            .get(Counter::SymbolErrors),
        Some(2)
    );
    sim.add_port_counter(sw_idx, sw_port, ibsm_sma::Counter::SymbolErrors, 9);
    sim.add_port_counter(sw_idx, sw_port, ibsm_sma::Counter::RcvErrors, 4);
    let (_, ca) = fabric.cas().nth(3).unwrap();
    let ca_idx: NodeIdx = sim.node_by_guid(ca.guid().0).unwrap();
    sim.add_traffic(ca_idx, 1, 4_000_000, 1_000);
    run(&mut sm, &mut port, &mut seen, 1);

    let second = last_sweep(&seen.events);
    assert_eq!(second.keys().copied().collect::<Vec<_>>(), want);
    let s = &second[&(sw.guid().0, sw_port)];
    let d = s.delta.unwrap();
    assert_eq!(d.get(Counter::SymbolErrors), Some(9));
    assert_eq!(d.get(Counter::RcvErrors), Some(4));
    assert_eq!(s.interval, Some(Duration::from_secs(30)));
    // Error counters move only by what was added: the sweep's value is the agent's.
    for (c, sc) in [
        (Counter::SymbolErrors, ibsm_sma::Counter::SymbolErrors),
        (Counter::RcvErrors, ibsm_sma::Counter::RcvErrors),
    ] {
        assert_eq!(
            s.counters.get(c),
            Some(sim.port_counter(sw_idx, sw_port, sc))
        );
    }
    assert_eq!(
        s.error_rates,
        vec![
            (Counter::SymbolErrors, 0.3),
            (Counter::RcvErrors, 4.0 / 30.0)
        ]
    );
    let c = &second[&(ca.guid().0, 1)];
    let cd = c.delta.unwrap();
    assert!(cd.get(Counter::XmitData).unwrap() >= 1_000_000, "{cd:?}");
    assert!(cd.get(Counter::XmitPkts).unwrap() >= 1_000);
    assert!(c.error_rates.is_empty());
    // Every other port saw no errors.
    let erring: Vec<_> = second
        .iter()
        .filter(|(_, p)| !p.error_rates.is_empty())
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(erring, vec![(sw.guid().0, sw_port)]);
    // Only the symbol errors passed their threshold (LinkDowned did not move).
    let over: Vec<_> = seen
        .events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortErrorThreshold(t) => Some(*t),
            _ => None,
        })
        .collect();
    assert_eq!(over.len(), 1, "{over:?}");
    assert_eq!(
        (over[0].guid, over[0].port, over[0].counter, over[0].delta),
        (sw.guid().0, sw_port, Counter::SymbolErrors, 9)
    );
    assert_eq!(sm.perf_sweep_stats().unwrap().over_threshold, 1);
    assert_eq!(sm.port_counters().count(), want.len());
    // The threshold feeds the health policy: that port, and only it, is unhealthy.
    let unhealthy: Vec<_> = seen
        .events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortUnhealthy {
                node,
                port,
                reason,
                action,
                capped,
            } => Some((*node, *port, reason.clone(), *action, *capped)),
            _ => None,
        })
        .collect();
    // The high-BER condition's default action: isolate.
    assert_eq!(
        unhealthy,
        vec![(
            sw.guid().0,
            sw_port,
            ibsm_manager::health::Reason::Counters {
                counter: "SymbolErrorCounter",
                value: 9,
                threshold: over[0].threshold,
            },
            ibsm_manager::health::Action::Isolate,
            false,
        )],
        "{:?}",
        seen.events
    );
}

#[test]
fn ignore_cas_reads_switches_only() {
    let perf = PerfMgrConfig {
        ignore_cas: true,
        ..PerfMgrConfig::default()
    };
    let (fabric, _sim, mut port, mut sm) = setup(perf);
    let mut seen = Seen::default();
    run(&mut sm, &mut port, &mut seen, 1);
    let read = last_sweep(&seen.events);
    let switch_ports = expected_ports(&fabric)
        .into_iter()
        .filter(|(g, _)| fabric.switches().any(|(_, s)| s.guid().0 == *g))
        .collect::<Vec<_>>();
    assert_eq!(read.keys().copied().collect::<Vec<_>>(), switch_ports);
    assert!(read.values().all(|p| p.switch));
}

#[test]
fn without_perfmgr_no_perfmgt_mad_is_sent() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
    let (_, ca) = fabric.cas().next().unwrap();
    let mut port = sim
        .attach_sm(sim.node_by_guid(ca.guid().0).unwrap(), 1)
        .unwrap();
    let mut sm = SubnetManager::new(SmConfig::default(), port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    let until = port.now() + Duration::from_secs(600);
    let mut perf = 0;
    while port.now() < until {
        let now = port.now();
        while let Some(out) = sm.poll_transmit(now) {
            perf += u32::from(is_perf(&out.mad));
            let _ = port.send(&out.addr, &out.mad);
        }
        while sm.poll_event().is_some() {}
        match port.recv(sm.poll_timeout().unwrap_or(until).min(until)) {
            Ok(i) => sm.handle_incoming(port.now(), i),
            Err(_) => sm.handle_timeout(port.now()),
        }
    }
    assert!(sm.is_up());
    assert_eq!(perf, 0);
    assert!(sm.perf_sweep_stats().is_none());
}
