use super::*;
use crate::config::{ConfigField, SmConfigError};

const P: PortKey = PortKey::new(0x10, 3);
const Q: PortKey = PortKey::new(0x20, 1);

fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

fn cfg() -> HealthConfig {
    HealthConfig {
        flap_count: 2,
        flap_window: Duration::from_secs(10),
        trap_limit: 3,
        trap_window: Duration::from_secs(1),
        no_answer_sweeps: 2,
        quiet_period: Duration::from_secs(30),
        ..HealthConfig::off()
    }
}

fn changes(h: &mut Health) -> Vec<Change> {
    std::iter::from_fn(|| h.poll_change()).collect()
}

#[test]
fn more_than_n_flaps_in_the_window_mark_and_quiet_takes_back() {
    let mut h = Health::new(cfg());
    h.link_down(P, secs(0));
    h.link_down(P, secs(5));
    assert!(!h.is_unhealthy(P), "two flaps are not more than two");
    h.link_down(P, secs(9));
    assert!(h.is_unhealthy(P));
    let window = Duration::from_secs(10);
    assert_eq!(
        changes(&mut h),
        [Change::Unhealthy {
            port: P,
            reason: Reason::Flapping { flaps: 3, window },
            action: Action::Isolate,
            capped: false,
        }]
    );
    // Flapping on extends the quiet period.
    h.link_down(P, secs(20));
    assert_eq!(h.poll_timeout(), Some(secs(50)));
    h.handle_timeout(secs(49));
    assert!(h.is_unhealthy(P));
    h.handle_timeout(secs(50));
    assert!(!h.is_unhealthy(P));
    assert!(matches!(
        &changes(&mut h)[..],
        [Change::Healthy { port: P, .. }]
    ));
    assert_eq!(h.poll_timeout(), None);
    // Taken back with a clean slate: one more flap is not a fourth.
    h.link_down(P, secs(51));
    assert!(!h.is_unhealthy(P));
}

#[test]
fn flaps_spread_wider_than_the_window_do_not_mark() {
    let mut h = Health::new(cfg());
    for t in [0, 6, 12, 18, 24] {
        h.link_down(P, secs(t));
    }
    assert!(!h.is_unhealthy(P));
    assert!(changes(&mut h).is_empty());
}

#[test]
fn a_trap_flood_marks_and_silences() {
    let mut h = Health::new(cfg());
    let ms = |m: u64| Instant::from_nanos(m * 1_000_000);
    for i in 0..3 {
        assert!(!h.trap(P, ms(i * 100)));
    }
    assert!(h.trap(P, ms(300)), "the fourth trap in a second silences");
    assert!(h.silenced(P));
    assert!(!h.trap(Q, ms(300)), "other ports are not");
    assert!(matches!(
        &changes(&mut h)[..],
        [Change::Unhealthy {
            port: P,
            reason: Reason::TrapFlood { traps: 4, .. },
            ..
        }]
    ));
}

#[test]
fn no_answer_counts_sweeps_in_a_row() {
    let mut h = Health::new(cfg());
    let lost: BTreeSet<PortKey> = [P, Q].into();
    h.sweep_done(&lost, secs(1));
    // Q answers in the second sweep: its run ends.
    h.sweep_done(&[P].into(), secs(2));
    h.sweep_done(&[Q].into(), secs(3));
    assert!(h.is_unhealthy(P));
    assert!(!h.is_unhealthy(Q));
    assert!(!h.silenced(P));
    assert_eq!(
        changes(&mut h),
        [Change::Unhealthy {
            port: P,
            reason: Reason::NoAnswer { sweeps: 2 },
            action: Action::NoDiscover,
            capped: false,
        }]
    );
}

#[test]
fn reports_mark_and_extend() {
    let mut h = Health::new(HealthConfig::off());
    let r = Reason::Counters {
        counter: "SymbolErrorCounter",
        value: 500,
        threshold: 100,
    };
    h.report(Q, r.clone(), secs(1));
    h.report(Q, r.clone(), secs(40));
    assert_eq!(
        h.get(Q).map(|u| (u.since, u.last_bad)),
        Some((secs(1), secs(40)))
    );
    assert_eq!(changes(&mut h).len(), 1, "reported once");
    h.handle_timeout(secs(100));
    assert_eq!(
        changes(&mut h),
        [Change::Healthy {
            port: Q,
            reason: r,
            action: Action::Isolate
        }]
    );
}

#[test]
fn checks_off_mark_nothing() {
    let mut h = Health::new(HealthConfig::off());
    for t in 0..100 {
        h.link_down(P, Instant::from_nanos(t));
        h.trap(P, Instant::from_nanos(t));
        h.sweep_done(&[P].into(), Instant::from_nanos(t));
    }
    assert_eq!(h.unhealthy().count(), 0);
    assert!(h.ports.is_empty(), "nothing kept");
}

#[test]
fn config_validation() {
    HealthConfig::default().validate().unwrap();
    HealthConfig {
        quiet_period: Duration::ZERO,
        ..HealthConfig::off()
    }
    .validate()
    .unwrap();
    let zero = |edit: fn(&mut HealthConfig)| {
        let mut c = HealthConfig::default();
        edit(&mut c);
        match c.validate() {
            Err(SmConfigError::Zero { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        zero(|c| c.flap_window = Duration::ZERO),
        ConfigField::HealthFlapWindow
    );
    assert_eq!(
        zero(|c| c.trap_window = Duration::ZERO),
        ConfigField::HealthTrapWindow
    );
    assert_eq!(
        zero(|c| c.quiet_period = Duration::ZERO),
        ConfigField::HealthQuietPeriod
    );
}

#[test]
fn each_condition_takes_its_action() {
    let mut c = HealthConfig {
        reboot_count: 2,
        reboot_window: Duration::from_secs(100),
        set_err_count: 2,
        set_err_window: Duration::from_secs(10),
        ..cfg()
    };
    c.actions.flapping = Action::Ignore;
    c.actions.noisy_traps = Action::Report;
    c.actions.reboot = Action::Disable;
    c.actions.set_err = Action::NoDiscover;
    let mut h = Health::new(c);
    for t in 0..5 {
        h.link_down(P, secs(t));
    }
    assert!(!h.is_unhealthy(P), "ignore: not even marked");
    for i in 0..5 {
        assert!(!h.trap(Q, Instant::from_nanos(i)), "report: not silenced");
    }
    assert!(
        h.is_unhealthy(Q) && !h.isolated(Q),
        "report: marked, routed"
    );
    let (r, s) = (PortKey::new(0x30, 1), PortKey::new(0x40, 2));
    h.rebooted(r, secs(1));
    assert!(!h.is_unhealthy(r), "one reboot is not repeated");
    h.rebooted(r, secs(50));
    assert_eq!(h.get(r).map(|u| u.action), Some(Action::Disable));
    h.set_failed(s, secs(1));
    h.set_failed(s, secs(20));
    assert!(!h.is_unhealthy(s), "failures wider apart than the window");
    h.set_failed(s, secs(25));
    assert_eq!(h.get(s).map(|u| u.action), Some(Action::NoDiscover));
    assert!(matches!(
        h.get(s).map(|u| &u.reason),
        Some(Reason::SetErr { errors: 2, .. })
    ));
}

#[test]
fn babbling_port_policy_turns_isolate_into_disable() {
    let c = HealthConfig {
        babbling_port_policy: true,
        ..HealthConfig::default()
    };
    assert_eq!(c.action(Condition::Flapping), Action::Disable);
    assert_eq!(c.action(Condition::NoisyTraps), Action::Disable);
    assert_eq!(c.action(Condition::HighBer), Action::Isolate);
    let mut d = c;
    d.actions.flapping = Action::Report;
    assert_eq!(
        d.action(Condition::Flapping),
        Action::Report,
        "only isolate"
    );
}

#[test]
fn the_cap_reports_past_max_of_min_and_share() {
    let mut c = cfg();
    c.isolation_cap = IsolationCap {
        min_ports: 2,
        per_mille: 5,
    };
    assert_eq!(c.isolation_cap.limit(100), 2);
    assert_eq!(c.isolation_cap.limit(1000), 5);
    let mut h = Health::new(c);
    h.set_fabric_ports(100);
    let r = || Reason::Counters {
        counter: "SymbolErrorCounter",
        value: 9,
        threshold: 1,
    };
    for n in 0..5 {
        h.report(PortKey::new(n, 1), r(), secs(1));
    }
    assert_eq!(h.auto_isolated(), 2);
    assert!(h.cap_reached());
    let capped: Vec<bool> = changes(&mut h)
        .into_iter()
        .map(|c| match c {
            Change::Unhealthy { capped, action, .. } => {
                assert_eq!(action.isolates(), !capped);
                capped
            }
            Change::Healthy { .. } => panic!(),
        })
        .collect();
    assert_eq!(capped, [false, false, true, true, true]);
    // Manual isolations are never capped, nor counted.
    assert!(h.isolate(PortKey::new(9, 1), secs(2)));
    assert!(h.isolated(PortKey::new(9, 1)));
    assert_eq!(h.auto_isolated(), 2);
    // An isolation ends: the longest held back (port 2) takes its place.
    assert_eq!(h.clear(PortKey::new(0, 1)), Some(r()));
    assert!(h.isolated(PortKey::new(2, 1)));
    assert!(!h.isolated(PortKey::new(3, 1)));
    assert_eq!(h.auto_isolated(), 2);
    let ch = changes(&mut h);
    assert!(
        matches!(
            &ch[1..],
            [
                Change::Healthy { .. },
                Change::Unhealthy {
                    port: PortKey { node: 2, port: 1 },
                    action: Action::Isolate,
                    capped: false,
                    ..
                }
            ]
        ),
        "{ch:?}"
    );
    // A grown fabric grows the cap: the rest are isolated too.
    h.set_fabric_ports(1000);
    assert_eq!(h.auto_isolated(), 4);
    assert!(!h.cap_reached());
}

#[test]
fn manual_isolations_stay_until_cleared() {
    let mut h = Health::new(cfg());
    for t in [0, 1, 2] {
        h.link_down(P, secs(t));
    }
    assert!(h.isolated(P));
    assert!(h.isolate(P, secs(3)), "a marked port becomes manual");
    assert!(!h.isolate(P, secs(4)), "once");
    assert_eq!(h.get(P).map(|u| u.reason.clone()), Some(Reason::Manual));
    assert_eq!(h.poll_timeout(), None, "never taken back by the clock");
    h.handle_timeout(secs(10_000));
    assert!(h.isolated(P));
    let ch = changes(&mut h);
    assert!(
        matches!(
            &ch[..],
            [
                Change::Unhealthy { .. },
                Change::Healthy { .. },
                Change::Unhealthy {
                    reason: Reason::Manual,
                    ..
                }
            ]
        ),
        "{ch:?}"
    );
    assert_eq!(h.clear(P), Some(Reason::Manual));
    assert_eq!(h.clear(P), None);
    assert!(!h.is_unhealthy(P));
    assert!(matches!(
        &changes(&mut h)[..],
        [Change::Healthy {
            reason: Reason::Manual,
            ..
        }]
    ));
}

#[test]
fn restored_marks_follow_the_configuration_of_now() {
    let mut c = cfg();
    c.actions.high_ber = Action::Ignore;
    let mut h = Health::new(c);
    h.restore(P, Condition::Flapping, secs(5));
    h.restore(Q, Condition::HighBer, secs(5));
    h.restore(PortKey::new(7, 7), Condition::Manual, secs(5));
    assert!(h.isolated(P));
    assert_eq!(
        h.get(P).map(|u| u.reason.condition()),
        Some(Condition::Flapping)
    );
    assert!(!h.is_unhealthy(Q), "high_ber is ignored now");
    assert!(h.get(PortKey::new(7, 7)).is_some_and(Unhealthy::manual));
    assert_eq!(h.poll_timeout(), Some(secs(35)), "quiet period from now");
}

#[test]
fn names_round_trip() {
    for c in Condition::ALL {
        assert_eq!(Condition::from_name(c.name()), Some(c));
    }
    for a in Action::ALL {
        assert_eq!(Action::from_name(a.name()), Some(a));
    }
    assert_eq!(Action::from_name("Isolate"), None);
}

/// One observation of the model test.
#[derive(Debug, Clone)]
enum Obs {
    Flap(u8),
    Trap(u8),
    Sweep(Vec<u8>),
    Wait(u64),
}

fn obs() -> impl proptest::strategy::Strategy<Value = Obs> {
    use proptest::prelude::*;
    prop_oneof![
        (0u8..3).prop_map(Obs::Flap),
        (0u8..3).prop_map(Obs::Trap),
        proptest::collection::vec(0u8..3, 0..3).prop_map(Obs::Sweep),
        (0u64..20_000).prop_map(Obs::Wait),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Against a reference that keeps every observation: a port is unhealthy
    /// exactly when, at some time since it was last taken back, one check's
    /// threshold was exceeded, and it is taken back exactly `quiet_period` after
    /// its last observation since (any flap, trap or loss); each mark and each
    /// take-back is one change.
    #[test]
    fn matches_a_reference(steps in proptest::collection::vec(obs(), 1..200)) {
        let c = cfg();
        let mut h = Health::new(c);
        let key = |p: u8| PortKey::new(0x100 + u64::from(p), 1);
        // Reference: per port, all times since last taken back, the streak, and
        // the unhealthy window (since, last_bad).
        #[derive(Default, Clone)]
        struct Ref { flaps: Vec<Instant>, traps: Vec<Instant>, streak: u32, bad: Option<Instant> }
        let mut r: Vec<Ref> = vec![Ref::default(); 3];
        let mut now = Instant::ZERO;
        let (mut marks, mut backs) = (0usize, 0usize);
        let within = |ts: &[Instant], now: Instant, w: Duration| {
            ts.iter().filter(|&&t| now.saturating_duration_since(t) < w).count()
        };
        for s in steps {
            // Take back first what is due, in both.
            h.handle_timeout(now);
            for x in &mut r {
                if x.bad.is_some_and(|b| b + c.quiet_period <= now) {
                    *x = Ref::default();
                    backs += 1;
                }
            }
            let mark = |x: &mut Ref, now: Instant, marks: &mut usize| {
                if x.bad.is_none() { *marks += 1; }
                x.bad = Some(x.bad.map_or(now, |b| b.max(now)));
            };
            match s {
                Obs::Flap(p) => {
                    h.link_down(key(p), now);
                    let x = &mut r[usize::from(p)];
                    x.flaps.push(now);
                    if x.bad.is_some() || within(&x.flaps, now, c.flap_window) > c.flap_count as usize {
                        mark(x, now, &mut marks);
                    }
                }
                Obs::Trap(p) => {
                    let silenced = h.trap(key(p), now);
                    let x = &mut r[usize::from(p)];
                    x.traps.push(now);
                    let was_bad = x.bad.is_some();
                    if was_bad || within(&x.traps, now, c.trap_window) > c.trap_limit as usize {
                        mark(x, now, &mut marks);
                    }
                    // Silenced only when the trap flood is the first reason.
                    if silenced {
                        proptest::prop_assert!(x.bad.is_some());
                    } else if !was_bad {
                        proptest::prop_assert!(x.bad.is_none());
                    }
                }
                Obs::Sweep(lost) => {
                    let set: BTreeSet<PortKey> = lost.iter().map(|&p| key(p)).collect();
                    h.sweep_done(&set, now);
                    for (i, x) in r.iter_mut().enumerate() {
                        if lost.contains(&(i as u8)) {
                            x.streak += 1;
                            if x.bad.is_some() || x.streak >= c.no_answer_sweeps {
                                mark(x, now, &mut marks);
                            }
                        } else {
                            x.streak = 0;
                        }
                    }
                }
                Obs::Wait(ms) => now += Duration::from_millis(ms),
            }
            for (i, x) in r.iter().enumerate() {
                let u = h.get(key(i as u8));
                proptest::prop_assert_eq!(u.is_some(), x.bad.is_some(), "port {}", i);
                if let (Some(u), Some(b)) = (u, x.bad) {
                    proptest::prop_assert_eq!(u.last_bad, b);
                }
            }
            let next = r.iter().filter_map(|x| x.bad).map(|b| b + c.quiet_period).min();
            proptest::prop_assert_eq!(h.poll_timeout(), next);
            // Bounded memory: at most limit + 1 times per check.
            for rec in h.ports.values() {
                proptest::prop_assert!(rec.flaps.len() <= c.flap_count as usize + 1);
                proptest::prop_assert!(rec.traps.len() <= c.trap_limit as usize + 1);
            }
        }
        let got: Vec<Change> = std::iter::from_fn(|| h.poll_change()).collect();
        let m = got.iter().filter(|c| matches!(c, Change::Unhealthy { .. })).count();
        proptest::prop_assert_eq!((m, got.len() - m), (marks, backs));
    }
}
