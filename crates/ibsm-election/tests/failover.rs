//! Failover and handover times on virtual time, for OpenSM's default profile and a fast
//! one. The numbers are election-level: detection of the dead Master plus the new
//! Master's decision after a discovery sweep of `SWEEP` (a stand-in for discovering a
//! 648-CA fat tree, measured at ~0.5 s by OpenSM under ibsim). Configuring the fabric
//! (LIDs, LFTs) comes on top once the SM engine exists.
//!
//! Every sample is checked against the bounds the protocol implies for the test's own
//! configuration ([`Bounds`]); run with `--nocapture` to see the table.

mod common;

use std::time::Duration;

use common::{HostParams, Net, Spec};
use ibsm_election::{Config, ElectionEvent, SmState};
use ibsm_wire::Instant;

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
    /// From the fault to the first Standby's `MasterLost`.
    detect: Vec<Duration>,
    /// From the fault to the next-highest SM's own `MasterLost`.
    detect_next: Vec<Duration>,
    /// From the fault to the next-highest SM being Master.
    takeover: Vec<Duration>,
    /// From the next-highest SM's first SMInfo request that found the crashed Master
    /// gone (its first unanswered poll, sent before or after the crash) to its own
    /// `MasterLost`.
    after_first_miss: Vec<Duration>,
}

/// A higher SM joining: from its start to Master, and from the HANDOVER leaving the
/// Master to the joining SM being Master.
#[derive(Debug, Default)]
struct Joins {
    master: Vec<Duration>,
    exchange: Vec<Duration>,
}

/// What the protocol promises, derived here from the settings and the counting rule as
/// `Config::polling_retries` states it (not from `Config::worst_case_detection`, which is
/// checked against it). With `p` the polling period, `n` OpenSM's `polling_retry_number`
/// (`polling_retries`), `R = n + 1` the unanswered rounds that lose a Master, `w` the
/// time a poll's or re-probe's answer is waited for (`transaction_timeout`, at most
/// `p`), `l` the most a MAD takes one way (latency plus as much jitter), `s` the sweep's
/// duration and `i` the Master's sweep interval:
///
/// * crash: the last Get the Master answered was sent before the crash; the next
///   regular poll goes out `p` after it and is unanswered (it reached the Master less
///   than `l` before the crash, or after it); from then on each round, re-probes sent
///   the moment the previous round's answer time ran out, fails `w` after it went out,
///   and the `R`-th declares the Master lost: `p + R w` after the last answered Get at
///   the most, and at least `R w - l` after the crash. Detection is within
///   `[R w - l, p + R w]`; with kills spread over the period, samples come within a
///   tenth of a period of both ends.
/// * hang: the hung Master's SMA answers at once from a frozen copy: no round goes
///   unanswered, so none is re-probed, and `R` regular polls in a row whose answer
///   shows the count of an answer half a period older lose it, on the last one's
///   arrival. The first frozen answer is, at the earliest, to a poll sent less than `l`
///   before the hang; at the latest to the second poll after it (the first may still
///   show the count moved since the last live answer), and an answer takes up to `2 l`.
///   Detection is within `[(R - 1) p - l, (R + 1) p + 2 l]`.
/// * takeover: the next SM, Discovering on its own detection, probes the SMs its port
///   sees (answered within `2 l`, or not probed when crashed) and decides when its sweep
///   completes: exactly `s` after its detection. A Master declared lost is not waited
///   for, so no transaction budget (`transaction_timeout × (retries + 1)`) comes on top.
/// * join: the newcomer sweeps (`s`), then stands by and polls the Master. Its first
///   poll makes the Master ask for its SMInfo (it last saw it Discovering) and hand over
///   at once: Master `s + 4 l` after the start (poll, request, answer, HANDOVER). A
///   Master whose sweep under way already saw it Standby does not ask, and hands over
///   when that sweep completes: `2 s + l`. If the Master was still waiting on a request
///   to it when the poll came, the next poll (`p` later) or the Master's next sweep (its
///   current one ending within `s`, then `i`, then `s`) does it. So within
///   `[s, min(s + p + 4 l, 3 s + i + l)]`, and the first path, `s + 4 l`, is the usual
///   one. The HANDOVER, not lost here, is accepted on its first delivery, within `l`:
///   no resend after `transaction_timeout`.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    crash: (Duration, Duration),
    /// A tenth of the polling period: how close to each crash bound the samples of kills
    /// spread over the period must come.
    step: Duration,
    /// `R w`: the unanswered rounds that lose a Master, one answer time each.
    rounds_time: Duration,
    hang: (Duration, Duration),
    sweep: Duration,
    one_way: Duration,
    join: (Duration, Duration),
    join_usual: Duration,
}

impl Bounds {
    fn new(c: &Config, host: HostParams) -> Self {
        let p = c.polling_timeout;
        let rounds = c.polling_retries + 1;
        let w = if c.transaction_timeout < p {
            c.transaction_timeout
        } else {
            p
        };
        let l = host.latency * 2;
        let (s, i) = (host.sweep_duration, host.sweep_interval);
        let crash = (w * rounds - l, p + w * rounds);
        assert_eq!(
            c.worst_case_detection(),
            crash.1,
            "Config::worst_case_detection against the rule"
        );
        Self {
            crash,
            step: p / 10,
            rounds_time: w * rounds,
            hang: (
                (p * (rounds - 1)).saturating_sub(l),
                p * (rounds + 1) + l * 2,
            ),
            sweep: s,
            one_way: l,
            join: (s, (s + p + l * 4).min(s * 3 + i + l)),
            join_usual: s + l * 4,
        }
    }

    /// Checks crash samples against the crash bounds: inside, reaching near both ends
    /// (a rule quicker or slower than promised by more than a tenth of a period shows),
    /// and each exactly where the rule puts it: `R w` after the first poll the dead
    /// Master did not answer, to the nanosecond of virtual time.
    fn check_crash(&self, what: &str, s: &Sample) {
        self.check(what, self.crash, s);
        for (d, after) in s.detect_next.iter().zip(&s.after_first_miss) {
            assert_eq!(
                *after, self.rounds_time,
                "{what}: Master lost {after:?} after the first unanswered poll (detection {d:?})"
            );
        }
        let (lo, hi) = self.crash;
        let (min, _, max) = stats(&s.detect_next);
        assert!(
            min <= lo + self.step + self.one_way && max + self.step + self.one_way >= hi,
            "{what}: detections {min:?}..{max:?} do not span the promised {lo:?}..{hi:?}"
        );
    }

    /// Checks crash or hang samples against `fault`, their detection bounds.
    fn check(&self, what: &str, fault: (Duration, Duration), s: &Sample) {
        let within = |d: Duration, (lo, hi): (Duration, Duration)| lo <= d && d <= hi;
        for ((d, d1), t) in s.detect.iter().zip(&s.detect_next).zip(&s.takeover) {
            assert!(
                within(*d, fault) && within(*d1, fault),
                "{what}: detection {d:?} (the next SM's own {d1:?}) outside {fault:?}"
            );
            assert!(d <= d1, "{what}: the first detection is the earliest");
            assert_eq!(
                *t,
                *d1 + self.sweep,
                "{what}: takeover = the next SM's detection + its discovery sweep"
            );
        }
    }

    fn check_joins(&self, what: &str, j: &Joins) {
        for (m, x) in j.master.iter().zip(&j.exchange) {
            assert!(
                self.join.0 <= *m && *m <= self.join.1,
                "{what}: joining SM Master after {m:?}, outside {:?}",
                self.join
            );
            assert!(
                *x <= self.one_way,
                "{what}: HANDOVER accepted {x:?} after it left (one way takes at most {:?})",
                self.one_way
            );
        }
        let fastest = j.master.iter().min().expect("samples");
        assert!(
            *fastest <= self.join_usual,
            "{what}: no join took the poll-and-ask path (fastest {fastest:?}, that path {:?})",
            self.join_usual
        );
    }
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
        let settle = Instant::ZERO + p * 4 + host.sweep_interval * 4;
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
        let lost_at = |n: &common::Node| {
            n.events
                .iter()
                .filter(|(t, e)| *t >= kill && matches!(e, ElectionEvent::MasterLost { .. }))
                .map(|(t, _)| *t)
                .min()
        };
        let lost = net.nodes[1..]
            .iter()
            .filter_map(lost_at)
            .min()
            .expect("a Standby noticed");
        let lost_next = lost_at(&net.nodes[1]).expect("the next-highest SM noticed");
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
        out.detect_next.push(lost_next - kill);
        if !hang {
            let miss = net
                .undelivered
                .iter()
                .filter(|(_, from, to)| (*from, *to) == (1, 0))
                .map(|(sent, _, _)| *sent)
                .min()
                .expect("the next SM polled the crashed Master");
            out.after_first_miss.push(lost_next - miss);
        }
        out.takeover.push(new_master - kill);
    }
    out
}

/// A higher-priority SM joins a running subnet: time until it is Master by HANDOVER.
fn measure_handover(base: &Config, host: HostParams) -> Joins {
    let mut out = Joins::default();
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
        net.keep_events = true;
        net.start(1);
        net.start(2);
        let settle = Instant::ZERO + p * 4 + host.sweep_interval * 4;
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
        let sent = net.nodes[1]
            .events
            .iter()
            .rev()
            .filter(|(at, e)| *at <= t && matches!(e, ElectionEvent::HandoverSent { .. }))
            .map(|(at, _)| *at)
            .next()
            .expect("the Master sent HANDOVER");
        assert!(net.violations.is_empty(), "{:?}", net.violations);
        assert_eq!(net.state(1), Some(SmState::Standby));
        out.master.push(t - join);
        out.exchange.push(t - sent);
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

fn report(name: &str, s: &Sample, ho: &Joins) {
    let (a, b, c) = stats(&s.detect);
    let (d, e, f) = stats(&s.takeover);
    let (g, h, i) = stats(&ho.master);
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
    let b = Bounds::new(&c, host);
    // The next poll (up to 10 s away) and 5 unanswered rounds of 200 ms: a dead Master
    // is lost after 1.0-11.0 s (OpenSM 3.3: 50-60 s).
    assert_eq!(
        (b.crash.0 + b.one_way, b.crash.1),
        (Duration::from_millis(1_000), Duration::from_millis(11_000))
    );
    b.check_crash("defaults, crash", &crash);
    b.check("defaults, hang", b.hang, &hung);
    b.check_joins("defaults", &ho);
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
    let b = Bounds::new(&c, host);
    // The profile's promise: a dead Master is noticed after 150 to 350 ms (up to one
    // period to the next poll, then 3 unanswered rounds of 50 ms).
    assert_eq!(
        (b.crash.0 + b.one_way, b.crash.1),
        (Duration::from_millis(150), Duration::from_millis(350))
    );
    b.check_crash("fast, crash", &crash);
    b.check("fast, hang", b.hang, &hung);
    b.check_joins("fast", &ho);
    // With 100 ms x 2 (answers waited for one period, 100 ms, not 200) the election
    // alone leaves ~600 ms of the 1 s budget for discovery and configuration.
    let c = Config::with_polling(1, Duration::from_millis(100), 2);
    let host = host_for(&c, Duration::from_millis(100));
    let faster = measure(&c, host, false);
    let hung = measure(&c, host, true);
    let ho = measure_handover(&c, host);
    report("faster (100 ms x 2), crash", &faster, &ho);
    report("faster (100 ms x 2), hang ", &hung, &ho);
    let b = Bounds::new(&c, host);
    assert_eq!(
        (b.crash.0 + b.one_way, b.crash.1),
        (Duration::from_millis(300), Duration::from_millis(400))
    );
    b.check_crash("faster, crash", &faster);
    b.check("faster, hang", b.hang, &hung);
    b.check_joins("faster", &ho);
}
