//! The stages driven without the simulator: every SMP the engine sends is answered from
//! a canned three-node fabric (CA A - switch S - CA B) held in a few tables, on a
//! virtual clock, so each test can see exactly which SMPs a stage sends and what its
//! answers (or their loss) make of the sweep.

use std::collections::HashMap;
use std::time::Duration;

use ibsm_transport::{Incoming, Instant, LocalPort, Received};
use ibsm_wire::{
    DrSmp, DrSmpView, Method, NodeInfo, NodeType, PortInfo, PortState, SmAttributeId, SwitchInfo,
};

use super::SubnetManager;
use crate::config::{ConfigField, SmConfig, SmConfigError};
use crate::event::{Phase, SmEvent, SweepStats};

const A: u64 = 0xA0;
const S: u64 = 0x50;
const B: u64 = 0xB0;

/// The canned fabric: routes from A to the nodes, their PortInfo as Sets leave it, the
/// switch's latch, and which SMPs get no answer.
struct Canned {
    ports: HashMap<(Vec<u8>, u8), PortInfo>,
    latch: bool,
    /// (attribute, route) pairs that are dropped.
    drop: Vec<(SmAttributeId, Vec<u8>)>,
    /// Every SMP seen: (method, attribute, route, modifier).
    seen: Vec<(Method, SmAttributeId, Vec<u8>, u32)>,
}

impl Canned {
    fn new() -> Self {
        let mut ports = HashMap::new();
        let up = PortInfo {
            port_state: PortState::Init,
            ..PortInfo::default()
        };
        ports.insert((vec![], 1), up);
        for p in 0..=4u8 {
            let state = if p == 1 || p == 2 {
                PortState::Init
            } else {
                PortState::Down
            };
            ports.insert(
                (vec![1], p),
                PortInfo {
                    port_state: state,
                    ..PortInfo::default()
                },
            );
        }
        ports.insert((vec![1, 2], 1), up);
        Self {
            ports,
            latch: false,
            drop: Vec::new(),
            seen: Vec::new(),
        }
    }

    fn node_info(route: &[u8]) -> Option<NodeInfo> {
        let (node_type, num_ports, guid) = match route {
            [] => (NodeType::Ca, 1, A),
            [1] => (NodeType::Switch, 4, S),
            [1, 2] => (NodeType::Ca, 1, B),
            _ => return None,
        };
        Some(NodeInfo {
            node_type,
            num_ports,
            node_guid: guid,
            port_guid: if node_type == NodeType::Switch {
                guid
            } else {
                guid + 1
            },
            partition_cap: 32,
            local_port_num: 1,
            ..NodeInfo::default()
        })
    }

    /// The answer to one SMP, or `None` when it is lost.
    fn answer(&mut self, mad: &[u8]) -> Option<Vec<u8>> {
        let v = DrSmpView::new_checked(mad).ok()?;
        let route = v.initial_path()[1..=usize::from(v.hop_count())].to_vec();
        let attr = SmAttributeId::from(v.attribute_id());
        let method = v.method();
        let modifier = v.attribute_modifier();
        self.seen.push((method, attr, route.clone(), modifier));
        if self.drop.contains(&(attr, route.clone())) {
            return None;
        }
        let mut data = [0u8; 64];
        match attr {
            SmAttributeId::NodeInfo => Self::node_info(&route)?.emit_into(&mut data).ok()?,
            SmAttributeId::SwitchInfo => {
                if method == Method::Set {
                    // Writing the bit 1 clears the latch.
                    let si = SwitchInfo::parse(v.attr_data()).ok()?;
                    if si.port_state_change {
                        self.latch = false;
                    }
                }
                SwitchInfo {
                    linear_fdb_cap: 0xC000,
                    port_state_change: self.latch,
                    ..SwitchInfo::default()
                }
                .emit_into(&mut data)
                .ok()?;
            }
            SmAttributeId::PortInfo => {
                let port = u8::try_from(modifier).ok()?;
                let cur = self.ports.get_mut(&(route, port))?;
                if method == Method::Set {
                    let want = PortInfo::parse(v.attr_data()).ok()?;
                    let state = match want.port_state {
                        PortState::NoChange => cur.port_state,
                        s => s,
                    };
                    *cur = PortInfo {
                        port_state: state,
                        ..want
                    };
                }
                cur.emit_into(&mut data).ok()?;
            }
            _ => data.copy_from_slice(v.attr_data()),
        }
        let mut r = DrSmp::parse(mad).ok()?;
        r.response = true;
        r.method = Method::Get;
        r.direction = true;
        r.data = data;
        Some(r.to_bytes().to_vec())
    }
}

/// The engine and its canned fabric on one virtual clock.
struct Bench {
    sm: SubnetManager,
    fabric: Canned,
    now: Instant,
    events: Vec<SmEvent>,
}

impl Bench {
    fn new(cfg: SmConfig) -> Self {
        let local = LocalPort {
            port_guid: A + 1,
            ..LocalPort::default()
        };
        let mut sm = SubnetManager::new(cfg, local).expect("valid configuration");
        sm.start(Instant::ZERO).expect("start");
        Self {
            sm,
            fabric: Canned::new(),
            now: Instant::ZERO,
            events: Vec::new(),
        }
    }

    /// Sends, answers (1 µs later) and lets time pass until `until`.
    fn run(&mut self, until: Instant) {
        loop {
            let mut answers = Vec::new();
            while let Some(out) = self.sm.poll_transmit(self.now) {
                // Only the sweep's SMPs get answers; the election's SMInfo finds no
                // other SM.
                if out.id.is_some() {
                    if let Some(a) = self.fabric.answer(&out.mad) {
                        answers.push(a);
                    }
                }
            }
            while let Some(e) = self.sm.poll_event() {
                self.events.push(e);
            }
            if !answers.is_empty() {
                self.now += Duration::from_micros(1);
                for mad in answers {
                    let rx = Received {
                        mad,
                        slid: 0xFFFF,
                        sl: 0,
                        qpn: 0,
                        pkey_index: 0,
                        at: self.now,
                    };
                    self.sm.handle_incoming(self.now, Incoming::Mad(rx));
                }
                continue;
            }
            match self.sm.poll_timeout() {
                Some(t) if t <= until => {
                    self.now = self.now.max(t);
                    self.sm.handle_timeout(self.now);
                }
                _ => return,
            }
        }
    }

    fn count(&self, f: impl Fn(&SmEvent) -> bool) -> usize {
        self.events.iter().filter(|e| f(e)).count()
    }

    /// The stats of the last SUBNET UP.
    fn last_up(&self) -> Option<&SweepStats> {
        self.events.iter().rev().find_map(|e| match e {
            SmEvent::SubnetUp { stats } => Some(stats),
            _ => None,
        })
    }

    fn phases(&self) -> Vec<Phase> {
        self.events
            .iter()
            .filter_map(|e| match e {
                SmEvent::PhaseDone { phase, .. } => Some(*phase),
                _ => None,
            })
            .collect()
    }
}

/// No periodic sweeps.
fn quiet() -> SmConfig {
    every(Duration::ZERO)
}

/// Light sweeps every `interval`.
fn every(interval: Duration) -> SmConfig {
    SmConfig {
        sweep_interval: interval,
        ..SmConfig::default()
    }
}

#[test]
fn a_heavy_sweep_walks_its_stages_in_order() {
    let mut b = Bench::new(quiet());
    b.run(Instant::from_secs(5));
    let heavy = [
        Phase::Discover,
        Phase::Elect,
        Phase::Program,
        Phase::Activate,
    ];
    assert_eq!(b.phases(), heavy);
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 1);
    let stats = b.last_up().expect("up");
    assert_eq!(
        (stats.nodes, stats.switches, stats.links, stats.lids),
        (3, 1, 2, 3)
    );
    // Discovery read the switch's latch before its ports, and explored out of port 2
    // only after reading it.
    let seen = &b.fabric.seen;
    let at = |attr, route: &[u8], m: u32| {
        seen.iter()
            .position(|(_, a, r, x)| *a == attr && r == route && *x == m)
            .unwrap_or_else(|| panic!("{attr:?} {route:?} {m} not sent"))
    };
    assert!(at(SmAttributeId::SwitchInfo, &[1], 0) < at(SmAttributeId::PortInfo, &[1], 2));
    assert!(at(SmAttributeId::PortInfo, &[1], 2) < at(SmAttributeId::NodeInfo, &[1, 2], 0));
    // Every linked port ends Active; the unlinked switch ports are left alone.
    for (key, pi) in &b.fabric.ports {
        let linked = !matches!(key, (r, 3 | 4) if r == &[1]);
        let want = if linked {
            PortState::Active
        } else {
            PortState::Down
        };
        if key.1 != 0 {
            assert_eq!(pi.port_state, want, "{key:?}");
        }
    }
    assert!(!b.sm.is_sweeping());
    assert_eq!(b.sm.lids().len(), 3);
}

#[test]
fn a_new_sweep_interval_paces_the_next_light_sweeps() {
    let mut b = Bench::new(quiet());
    b.run(Instant::from_secs(5));
    let light = |b: &Bench| b.count(|e| matches!(e, SmEvent::LightSweepDone { .. }));
    assert_eq!(light(&b), 0, "no periodic sweep at interval 0");
    let start = b.now;
    b.sm.set_sweep_interval(start, Duration::from_secs(1));
    b.run(start + Duration::from_millis(3_500));
    assert_eq!(
        light(&b),
        3,
        "1, 2 and 3 s after the change: {:?}",
        b.events
    );
    let now = b.now;
    b.sm.set_sweep_interval(now, Duration::ZERO);
    b.run(now + Duration::from_secs(20));
    assert_eq!(light(&b), 3, "stopped");
}

#[test]
fn a_heavy_request_during_a_sweep_waits_for_its_end() {
    let mut b = Bench::new(quiet());
    // Mid-discovery: kept in the running sweep, not started over it.
    b.sm.request_heavy_sweep(Instant::ZERO);
    b.run(Instant::from_secs(5));
    let started = b.count(|e| matches!(e, SmEvent::SweepStarted { heavy: true }));
    assert_eq!(started, 2, "{:?}", b.events);
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 2);
    // The second sweep found everything configured: no PortInfo Set.
    assert_eq!(b.last_up().expect("up").port_sets, 0);
}

#[test]
fn a_lost_answer_resweeps_at_once_and_only_a_complete_sweep_is_subnet_up() {
    let mut b = Bench::new(every(Duration::from_secs(10)));
    b.fabric.drop.push((SmAttributeId::PortInfo, vec![1, 2]));
    b.run(Instant::from_millis(900));
    assert_eq!(
        b.count(|e| matches!(e, SmEvent::PortLocked { guid } if *guid == B + 1)),
        1
    );
    // The lost Get's retries took the sweep to 0.8 s: it says what it lost, not SUBNET
    // UP, and the next heavy sweep starts at once (not at the periodic 10 s).
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 0);
    let lost: Vec<_> = b
        .events
        .iter()
        .filter_map(|e| match e {
            SmEvent::SweepIncomplete {
                sweep,
                lost,
                missing,
                ..
            } => Some((*sweep, *lost, missing.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(lost.len(), 1, "{:?}", b.events);
    assert_eq!((lost[0].0, lost[0].1), (1, 1));
    let m = &lost[0].2[0];
    assert_eq!(
        (m.attribute, m.set, m.node, m.port),
        ("PortInfo", false, B, 1)
    );
    assert_eq!(
        b.count(|e| matches!(e, SmEvent::SweepStarted { heavy: true })),
        2
    );
    // The locked CA got no PortInfo Set.
    assert!(
        !b.fabric
            .seen
            .iter()
            .any(|(m, a, r, _)| *m == Method::Set && *a == SmAttributeId::PortInfo && r == &[1, 2])
    );
    // The fabric answers again while the re-sweep (twice the attempts) still retries.
    b.fabric.drop.clear();
    b.run(Instant::from_millis(2500));
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 1);
    assert_eq!(b.count(|e| matches!(e, SmEvent::SweepIncomplete { .. })), 1);
    assert_eq!(
        b.fabric.ports[&(vec![1, 2], 1)].port_state,
        PortState::Active
    );
}

#[test]
fn a_light_sweep_finding_a_set_latch_turns_heavy() {
    let mut b = Bench::new(every(Duration::from_secs(1)));
    b.run(Instant::from_millis(1500));
    // Up, then one quiet light sweep.
    assert_eq!(b.count(|e| matches!(e, SmEvent::LightSweepDone { .. })), 1);
    assert_eq!(b.phases().last(), Some(&Phase::Light));
    b.fabric.latch = true;
    b.run(Instant::from_millis(2500));
    assert_eq!(
        b.count(|e| matches!(e, SmEvent::LightSweepDone { .. })),
        1,
        "the light sweep that saw the latch hands over to a heavy one"
    );
    assert_eq!(
        b.count(|e| matches!(e, SmEvent::SweepStarted { heavy: true })),
        2
    );
    assert!(
        !b.fabric.latch,
        "the heavy sweep's discovery cleared the latch"
    );
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 2);
}

#[test]
fn no_local_answer_fails_the_sweep_and_retries_heavy() {
    let mut b = Bench::new(every(Duration::from_secs(1)));
    b.fabric.drop.push((SmAttributeId::NodeInfo, vec![]));
    b.run(Instant::from_millis(900));
    assert_eq!(
        b.count(|e| matches!(
            e,
            SmEvent::SweepFailed {
                reason: crate::SweepFailure::LocalPortSilent
            }
        )),
        1
    );
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 0);
    // Closing the failed sweep told the election it is alone: Master, and a Master
    // that is idle sweeps at once.
    let role = b
        .events
        .iter()
        .position(|e| matches!(e, SmEvent::RoleChanged { .. }));
    let failed = b
        .events
        .iter()
        .position(|e| matches!(e, SmEvent::SweepFailed { .. }));
    assert!(failed < role, "{:?}", b.events);
    assert_eq!(
        b.count(|e| matches!(e, SmEvent::SweepStarted { heavy: true })),
        2
    );
    assert!(b.sm.is_sweeping());
    b.fabric.drop.clear();
    b.run(Instant::from_millis(1500));
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 1);
}

#[test]
fn a_ca_ignoring_its_key_for_node_description_locks_that_port() {
    let mut b = Bench::new(quiet());
    // Answers every Get of its port, but not the node-wide one sent with that port's key.
    b.fabric
        .drop
        .push((SmAttributeId::NodeDescription, vec![1, 2]));
    b.run(Instant::from_secs(120));
    // Reported by the port GUID (the key's owner), not the node GUID.
    assert_eq!(
        b.count(|e| matches!(e, SmEvent::PortLocked { guid } if *guid == B + 1)),
        1,
        "{:?}",
        b.events
    );
    assert_eq!(b.count(|e| matches!(e, SmEvent::PortLocked { .. })), 1);
    let set_to_b = b
        .fabric
        .seen
        .iter()
        .any(|(m, a, r, _)| *m == Method::Set && *a == SmAttributeId::PortInfo && r == &[1, 2]);
    assert!(!set_to_b, "a locked port is not configured");
    // Never complete: no SUBNET UP, and the re-sweeps in a row stop at their limit
    // (no periodic sweep is configured here).
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 0);
    let limit = super::resweep::MAX_RESWEEPS as usize;
    assert_eq!(
        b.count(|e| matches!(e, SmEvent::SweepIncomplete { .. })),
        limit
    );
    assert!(!b.sm.is_sweeping());
}

#[test]
fn work_for_a_node_the_model_no_longer_has_is_dropped() {
    let mut b = Bench::new(quiet());
    b.run(Instant::from_secs(5));
    // Queued for the model of the last sweep, then a heavy sweep rebuilt it: the index
    // names nothing now. Neither sending nor losing it may panic.
    let gone = super::ops::Op::NodeDesc { node: 99 };
    b.sm.smps.submit(gone.clone(), 0, None);
    let before = b.fabric.seen.len();
    b.sm.request_heavy_sweep(b.now);
    b.run(Instant::from_secs(10));
    let desc = b.fabric.seen[before..]
        .iter()
        .filter(|(_, a, _, _)| *a == SmAttributeId::NodeDescription)
        .count();
    assert_eq!(
        desc, 3,
        "one per node of the new sweep, none for the gone one"
    );
    b.sm.on_failure(b.now, &gone);
    assert_eq!(b.count(|e| matches!(e, SmEvent::SubnetUp { .. })), 2);
}

#[test]
fn a_new_priority_is_in_force_and_a_bad_one_changes_nothing() {
    let mut b = Bench::new(quiet());
    b.run(Instant::from_secs(1));
    b.sm.set_priority(7).expect("7 is a priority");
    assert_eq!(b.sm.config().priority, 7);
    assert_eq!(
        b.sm.smi.election.sm_info().priority,
        7,
        "SMInfo answers carry it"
    );
    let e = b.sm.set_priority(16).expect_err("4-bit field");
    assert!(
        matches!(
            e,
            SmConfigError::OutOfRange {
                field: ConfigField::Priority,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(b.sm.config().priority, 7);
    assert_eq!(b.sm.smi.election.sm_info().priority, 7);
}

#[test]
fn a_raised_smp_window_floor_opens_the_window_and_a_bad_one_changes_nothing() {
    let mut b = Bench::new(quiet());
    let start = b.sm.smps.window();
    b.sm.set_max_wire_smps(start + 10).expect("below the limit");
    assert_eq!(b.sm.smps.window(), start + 10);
    assert_eq!(b.sm.config().max_wire_smps, start + 10);
    // A lower floor leaves the window where it is; shrinking stops at the new floor.
    b.sm.set_max_wire_smps(2).expect("2 is a window");
    assert_eq!(b.sm.smps.window(), start + 10);
    for bad in [0, b.sm.config().max_wire_smps_limit + 1] {
        assert!(b.sm.set_max_wire_smps(bad).is_err(), "{bad}");
        assert_eq!(b.sm.config().max_wire_smps, 2);
    }
}
