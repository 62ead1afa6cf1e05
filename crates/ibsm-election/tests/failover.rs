//! Failover and handover times on virtual time, for OpenSM's default profile and a fast
//! one. The numbers are election-level: detection of the dead Master plus the new
//! Master's decision after a discovery sweep of `SWEEP` (a stand-in for discovering a
//! 648-CA fat tree, measured at ~0.5 s by OpenSM under ibsim). Configuring the fabric
//! (LIDs, LFTs) comes on top once the SM engine exists.
//!
//! Run with `--nocapture` to see the table.

mod common;

use std::time::Duration;

use common::{HostParams, Net, Spec};
use ibsm_election::{Config, Event, SmState};

const KEY: u64 = 0x0000_0000_0000_0001;

fn specs() -> Vec<Spec> {
    vec![
        Spec {
            guid: 0x0002_c903_0000_0001,
            priority: 10,
            key: KEY,
        },
        Spec {
            guid: 0x0002_c903_0000_0002,
            priority: 5,
            key: KEY,
        },
        Spec {
            guid: 0x0002_c903_0000_0003,
            priority: 1,
            key: KEY,
        },
    ]
}

#[derive(Debug, Default)]
struct Sample {
    detect: Vec<Duration>,
    takeover: Vec<Duration>,
}

fn stats(v: &[Duration]) -> (Duration, Duration, Duration) {
    let min = *v.iter().min().expect("samples");
    let max = *v.iter().max().expect("samples");
    let mean = v.iter().sum::<Duration>() / v.len() as u32;
    (min, mean, max)
}

/// Kills (or hangs) the Master at ten phases of the polling period and measures, from
/// that moment, when a Standby reports `MasterLost` and when the next Master is elected.
fn measure(base: &Config, host: HostParams, hang: bool) -> Sample {
    let mut out = Sample::default();
    let p = base.polling_timeout;
    for phase in 0..10u32 {
        let cfg_of = |s: &Spec| {
            let mut c = base.clone();
            c.guid = s.guid;
            c.priority = s.priority;
            c.sm_key = s.key;
            c
        };
        let mut net = Net::new(&specs(), cfg_of, host, u64::from(phase));
        net.keep_events = true;
        for i in 0..3 {
            net.start(i);
        }
        let settle = p * 4 + host.sweep_interval * 4;
        net.run_until(settle);
        assert_eq!(net.state(0), Some(SmState::Master), "highest SM leads");
        let kill = settle + p * phase / 10;
        net.run_until(kill);
        if hang {
            net.hang(0, true);
        } else {
            net.crash(0);
        }
        net.run_until(kill + base.worst_case_detection() * 3 + host.sweep_interval * 3);
        let lost = net.nodes[1..]
            .iter()
            .flat_map(|n| n.events.iter())
            .filter(|(t, e)| *t >= kill && matches!(e, Event::MasterLost { .. }))
            .map(|(t, _)| *t)
            .min()
            .expect("a Standby noticed");
        let new_master = net.nodes[1]
            .changes
            .iter()
            .filter(|(t, s)| *t >= kill && *s == SmState::Master)
            .map(|(t, _)| *t)
            .next()
            .expect("the next-highest SM took over");
        assert_eq!(net.state(1), Some(SmState::Master));
        assert_eq!(net.state(2), Some(SmState::Standby));
        assert!(net.violations.is_empty(), "{:?}", net.violations);
        out.detect.push(lost - kill);
        out.takeover.push(new_master - kill);
    }
    out
}

/// A higher-priority SM joins a running subnet: time until it is Master by HANDOVER.
fn measure_handover(base: &Config, host: HostParams) -> Vec<Duration> {
    let mut out = Vec::new();
    let p = base.polling_timeout;
    for phase in 0..10u32 {
        let cfg_of = |s: &Spec| {
            let mut c = base.clone();
            c.guid = s.guid;
            c.priority = s.priority;
            c.sm_key = s.key;
            c
        };
        let mut net = Net::new(&specs(), cfg_of, host, 100 + u64::from(phase));
        net.start(1);
        net.start(2);
        let settle = p * 4 + host.sweep_interval * 4;
        net.run_until(settle);
        let join = settle + host.sweep_interval * phase / 10;
        net.run_until(join);
        net.start(0);
        net.run_until(join + (host.sweep_interval + host.sweep_duration) * 4 + p * 4);
        let t = net.nodes[0]
            .changes
            .iter()
            .find(|(_, s)| *s == SmState::Master)
            .map(|(t, _)| *t)
            .expect("the higher SM took over");
        assert!(net.violations.is_empty(), "{:?}", net.violations);
        assert_eq!(net.state(1), Some(SmState::Standby));
        out.push(t - join);
    }
    out
}

/// Discovery of a 648-CA two-level fat tree, the stand-in until the SM engine exists.
const SWEEP: Duration = Duration::from_millis(500);

fn host_for(c: &Config, sweep_interval: Duration) -> HostParams {
    let _ = c;
    HostParams {
        sweep_interval,
        sweep_duration: SWEEP,
        latency: Duration::from_micros(20),
        m_key_in_use: false,
        stale_is_sm: false,
    }
}

fn report(name: &str, s: &Sample, ho: &[Duration]) {
    let (a, b, c) = stats(&s.detect);
    let (d, e, f) = stats(&s.takeover);
    let (g, h, i) = stats(ho);
    eprintln!(
        "{name}: detection min/mean/max {a:?}/{b:?}/{c:?}; new Master elected {d:?}/{e:?}/{f:?}; \
         higher SM joining becomes Master {g:?}/{h:?}/{i:?}"
    );
}

#[test]
fn opensm_default_profile() {
    let c = Config::opensm_defaults(1);
    let host = host_for(&c, Duration::from_secs(10));
    let crash = measure(&c, host, false);
    let hung = measure(&c, host, true);
    let ho = measure_handover(&c, host);
    report("OpenSM defaults (10 s x 4), crash", &crash, &ho);
    report("OpenSM defaults (10 s x 4), hang ", &hung, &ho);
    // OpenSM's own figure: a dead Master is replaced after 50-60 s.
    for d in &crash.detect {
        assert!(
            *d >= Duration::from_secs(50) && *d <= Duration::from_secs(60),
            "{d:?}"
        );
    }
    for (d, t) in crash.detect.iter().zip(&crash.takeover) {
        assert_eq!(*t, *d + SWEEP, "takeover = detection + one discovery sweep");
    }
}

#[test]
fn fast_profile() {
    let c = Config::fast(1);
    let host = host_for(&c, Duration::from_millis(200));
    let crash = measure(&c, host, false);
    let hung = measure(&c, host, true);
    let ho = measure_handover(&c, host);
    report("fast (200 ms x 2), crash", &crash, &ho);
    report("fast (200 ms x 2), hang ", &hung, &ho);
    for d in &crash.detect {
        assert!(
            *d >= Duration::from_millis(600) && *d <= Duration::from_millis(800),
            "{d:?}"
        );
    }
    // With 100 ms x 2 the election alone leaves ~600 ms of the 1 s budget for
    // discovery and configuration.
    let c = Config::with_polling(1, Duration::from_millis(100), 2);
    let host = host_for(&c, Duration::from_millis(100));
    let faster = measure(&c, host, false);
    let ho = measure_handover(&c, host);
    report("faster (100 ms x 2), crash", &faster, &ho);
    for d in &faster.detect {
        assert!(
            *d >= Duration::from_millis(300) && *d <= Duration::from_millis(400),
            "{d:?}"
        );
    }
}
