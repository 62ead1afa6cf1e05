//! Model-based randomised test: 2-5 election machines on a virtual-time network with
//! random priorities, GUIDs, SM_Keys, start times, crashes, restarts, hangs, partitions,
//! heals, lost MADs, latency (in a third of the schedules near the transaction timeout,
//! so that answers come late), and operator commands (a Master sending DISABLE,
//! STANDBY or DISCOVER to any SM, its own key group or not). Every SM that answers an SMInfo request also
//! learns its sender (`Election::learn`), as the engine does. Checked on every step and
//! at the end:
//!
//! * no HANDOVER is ever sent to, or accepted by, an SM with another SM_Key, and none
//!   goes to an SM that does not outrank its sender; no DISABLE, STANDBY or DISCOVER is
//!   obeyed from another key group, nor by a Master from a lower-ranked sender;
//! * an SM that accepts a HANDOVER is Master; one that obeys DISABLE is NotActive, STANDBY
//!   Standby, DISCOVER Discovering; one that refuses a control keeps its state; each
//!   control answered is reported as `ControlObeyed` or `ControlRejected` accordingly;
//! * two live Masters never share a connected key group for longer than one polling
//!   period plus one sweep (plus the sweep's transaction budget), counted from the last
//!   fault event; every `transaction_retries + 1` MADs lost to or from one of them
//!   excuse one more sweep round (interval, sweep and transaction budget: the most one
//!   transaction lost in full can delay the handover that ends it), and nothing else
//!   does (a MAD lost elsewhere used to excuse any dual-Master episode);
//! * a Standby never declares a live Master it reaches lost for silence unless MADs
//!   between the two were lost during the streak (late answers clear the count);
//! * a connected key group of live SMs is never without a live Master for longer than
//!   the worst-case detection time plus one polling period and one sweep, counted from
//!   the last disturbance (so a dead or hung Master is replaced in time);
//! * after the faults stop (hangs end, loss stops; partitions and crashed SMs may stay),
//!   every connected key group has exactly one Master, its highest-ranked member, and
//!   all others are Standby;
//! * no flapping: no state change in the last stretch of the quiet period, and the
//!   number of state changes is bounded by the number of faults and SM starts.
//!
//! And over all schedules: each of those checks had something to check (HANDOVERs
//! accepted, each control code obeyed, controls refused for the sender's SM_Key and by
//! a Master from an SM it outranks).
//!
//! `ELECTION_SCHEDULES=n` runs n schedules (default 10,000); `ELECTION_SEED=s` runs one
//! schedule and prints its events.

mod common;

use std::time::Duration;

use common::{HostParams, Net, Rng, Spec};
use ibsm_election::{Config, SmInfoControl, SmState};
use ibsm_wire::Instant;

#[derive(Debug, Clone)]
enum Fault {
    Crash(usize),
    Restart(usize),
    Hang(usize),
    Unhang(usize),
    Partition(Vec<u8>),
    Heal,
    Loss(u32),
    /// The SM `0` (if Master) sends control `2` to SM `1`.
    Command(usize, usize, SmInfoControl),
    Enable(usize),
}

#[derive(Debug)]
struct Schedule {
    specs: Vec<Spec>,
    polling: Duration,
    retries: u32,
    tt: Duration,
    tr: u32,
    host: HostParams,
    starts: Vec<Instant>,
    faults: Vec<(Instant, Fault)>,
    chaos_end: Instant,
    fault_events: usize,
}

fn generate(seed: u64) -> Schedule {
    let mut r = Rng::new(seed);
    let n = 2 + r.below(4) as usize;
    let mut guids: Vec<u64> = Vec::new();
    while guids.len() < n {
        let g = 0x0002_c903_0000_0000 + 1 + r.below(48);
        if !guids.contains(&g) {
            guids.push(g);
        }
    }
    let same_prio = r.chance(200);
    let key_mode = r.below(3);
    let specs: Vec<Spec> = guids
        .iter()
        .map(|&guid| Spec {
            guid,
            priority: if same_prio { 5 } else { r.below(4) as u8 },
            key: match key_mode {
                0 => 0,
                1 => 0x1111,
                _ => [0x1111, 0x2222][r.below(2) as usize],
            },
        })
        .collect();
    let polling = Duration::from_millis([100, 200, 300, 500][r.below(4) as usize]);
    let retries = 1 + r.below(4) as u32;
    let tt = Duration::from_millis(10 + r.below(41));
    let tr = 1 + r.below(3) as u32;
    // A third of the schedules run with the latency near the transaction timeout: a
    // MAD takes `latency` plus up to as much again one way, so a round trip takes 0.7
    // to 1.8 timeouts: answers come late, polls are re-probed, probes resent.
    let latency = if r.chance(333) {
        tt.mul_f64(0.35) + r.duration(tt / 10)
    } else {
        Duration::from_micros(50 + r.below(950))
    };
    let host = HostParams {
        sweep_interval: polling,
        sweep_duration: Duration::from_millis(2 + r.below(30)),
        latency,
        m_key_in_use: r.chance(500),
        stale_is_sm: r.chance(500),
    };
    let starts = (0..n)
        .map(|i| {
            if i == 0 {
                Instant::ZERO
            } else {
                Instant::ZERO + r.duration(polling * 3)
            }
        })
        .collect();
    let chaos = polling * 12;
    let chaos_end = Instant::ZERO + chaos;
    let mut faults = Vec::new();
    let k = r.below(9);
    for _ in 0..k {
        let t = Instant::ZERO + r.duration(chaos);
        let i = r.below(n as u64) as usize;
        let later = |r: &mut Rng, max: Duration| t + r.duration(max);
        match r.below(6) {
            0 => {
                faults.push((t, Fault::Crash(i)));
                if r.chance(700) {
                    faults.push((later(&mut r, polling * 4), Fault::Restart(i)));
                }
            }
            1 => {
                faults.push((t, Fault::Hang(i)));
                faults.push((later(&mut r, polling * 6), Fault::Unhang(i)));
            }
            2 => {
                let comp: Vec<u8> = (0..n).map(|_| r.below(2) as u8).collect();
                faults.push((t, Fault::Partition(comp)));
                if r.chance(700) {
                    faults.push((later(&mut r, polling * 5), Fault::Heal));
                }
            }
            3 => {
                faults.push((t, Fault::Loss(50 + r.below(251) as u32)));
                faults.push((later(&mut r, polling * 3), Fault::Loss(0)));
            }
            4 => {
                faults.push((t, Fault::Crash(i)));
                faults.push((t, Fault::Restart(i)));
            }
            _ => {
                // An operator command from whoever is Master (possibly of another key
                // group), and later re-enabling anything it disabled.
                let from = r.below(n as u64) as usize;
                let to = (from + 1 + r.below(n as u64 - 1) as usize) % n;
                let code = [
                    SmInfoControl::Disable,
                    SmInfoControl::Standby,
                    SmInfoControl::Discover,
                ][r.below(3) as usize];
                faults.push((t, Fault::Command(from, to, code)));
                faults.push((later(&mut r, polling * 4), Fault::Enable(to)));
            }
        }
    }
    faults.retain(|(t, _)| *t < chaos_end);
    faults.sort_by_key(|(t, _)| *t);
    let fault_events = faults.len();
    Schedule {
        specs,
        polling,
        retries,
        tt,
        tr,
        host,
        starts,
        faults,
        chaos_end,
        fault_events,
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    max_dual_undisturbed: Duration,
    max_dual_any: Duration,
    max_masterless: Duration,
    max_changes: usize,
    handovers: u32,
    obeyed: u32,
    refused: u32,
    obeyed_by_code: [u32; 3],
    refused_unauthenticated: u32,
    refused_outranked: u32,
    mads: u64,
}

impl Stats {
    fn add(&mut self, st: &Self) {
        self.max_dual_undisturbed = self.max_dual_undisturbed.max(st.max_dual_undisturbed);
        self.max_dual_any = self.max_dual_any.max(st.max_dual_any);
        self.max_masterless = self.max_masterless.max(st.max_masterless);
        self.max_changes = self.max_changes.max(st.max_changes);
        self.handovers += st.handovers;
        self.obeyed += st.obeyed;
        self.refused += st.refused;
        for (a, b) in self.obeyed_by_code.iter_mut().zip(st.obeyed_by_code) {
            *a += b;
        }
        self.refused_unauthenticated += st.refused_unauthenticated;
        self.refused_outranked += st.refused_outranked;
        self.mads += st.mads;
    }

    /// What the schedules must have exercised for their checks to mean anything: each
    /// check on a handover or a control only looks at those that happened. Empty when
    /// all of it occurred.
    fn unexercised(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        let mut need = |ok: bool, what| {
            if !ok {
                missing.push(what);
            }
        };
        need(self.handovers > 0, "an accepted HANDOVER");
        need(self.obeyed_by_code[0] > 0, "an obeyed DISABLE");
        need(self.obeyed_by_code[1] > 0, "an obeyed STANDBY");
        need(self.obeyed_by_code[2] > 0, "an obeyed DISCOVER");
        need(
            self.refused_unauthenticated > 0,
            "a control refused for its SM_Key",
        );
        need(
            self.refused_outranked > 0,
            "a control a Master refused from an SM it outranks",
        );
        missing
    }
}

fn run(seed: u64, verbose: bool) -> Result<Stats, String> {
    let s = generate(seed);
    let cfg_of = |sp: &Spec| {
        let mut c = Config::with_polling(sp.guid, s.polling, s.retries);
        c.priority = sp.priority;
        c.sm_key = sp.key;
        c.transaction_timeout = s.tt;
        c.transaction_retries = s.tr;
        c
    };
    let mut net = Net::new(&s.specs, cfg_of, s.host, seed);
    net.keep_events = verbose;
    let n = s.specs.len();

    let mut timeline: Vec<(Instant, Option<Fault>, Option<usize>)> = Vec::new();
    for (i, t) in s.starts.iter().enumerate() {
        timeline.push((*t, None, Some(i)));
    }
    for (t, f) in &s.faults {
        timeline.push((*t, Some(f.clone()), None));
    }
    timeline.sort_by_key(|(t, _, _)| *t);
    let mut started = vec![false; n];
    for (t, fault, start) in timeline {
        net.run_until(t);
        if let Some(i) = start {
            if net.nodes[i].sm.is_none() && !started[i] {
                net.start(i);
            }
            started[i] = true;
        }
        match fault {
            None => {}
            Some(Fault::Crash(i)) => net.crash(i),
            Some(Fault::Restart(i)) if started[i] && net.nodes[i].sm.is_none() => net.start(i),
            Some(Fault::Restart(_)) => {}
            Some(Fault::Hang(i)) => net.hang(i, true),
            Some(Fault::Unhang(i)) => net.hang(i, false),
            Some(Fault::Partition(c)) => net.partition(c),
            Some(Fault::Heal) => net.partition(vec![0; n]),
            Some(Fault::Loss(p)) => net.set_loss(p),
            Some(Fault::Command(from, to, code)) => net.command(from, to, code),
            Some(Fault::Enable(i)) => net.enable(i),
        }
    }
    net.run_until(s.chaos_end);
    // Quiesce: hangs end and MADs stop getting lost; partitions and crashes may stay.
    for i in 0..n {
        net.hang(i, false);
        net.enable(i);
    }
    net.set_loss(0);
    let cfg0 = &net.nodes[0].cfg;
    let detect = cfg0.worst_case_detection();
    let budget = s.tt * (s.tr + 1);
    let round = detect + s.host.sweep_interval * 2 + s.host.sweep_duration + budget * 3;
    let quiet_start = s.chaos_end + round * 3;
    let end = quiet_start + round;
    net.run_until(quiet_start);
    net.run_until(end);
    net.check_settled();

    let mut max_changes = 0;
    for i in 0..n {
        let late = net.changes_since(i, quiet_start);
        if late > 0 {
            net.violations.push(format!(
                "node {i} still changed state {late} times in the quiet period after {quiet_start:?}"
            ));
        }
        let total = net.nodes[i].changes.len();
        max_changes = max_changes.max(total);
        // Discovering at start, then at most a few changes per fault or SM start (a start
        // can race a handover elsewhere: follow, lose, rediscover, follow, take over).
        let bound = 4 + 4 * (s.fault_events + n);
        if total > bound {
            net.violations.push(format!(
                "node {i} changed state {total} times for {} fault events (flapping)",
                s.fault_events
            ));
        }
    }

    // Every control answered is reported to the host, as obeyed or as refused.
    if (net.obeyed_events, net.refused_events) != (net.controls_obeyed, net.controls_refused) {
        net.violations.push(format!(
            "controls obeyed/refused by status {}/{}, by event {}/{}",
            net.controls_obeyed, net.controls_refused, net.obeyed_events, net.refused_events
        ));
    }
    if verbose {
        eprintln!("{s:#?}");
        for (i, node) in net.nodes.iter().enumerate() {
            eprintln!("node {i} {:?}: final {:?}", node.spec, net.state(i));
            for (t, e) in &node.events {
                eprintln!("  {t:?} {e:?}");
            }
        }
    }
    if net.violations.is_empty() {
        Ok(Stats {
            max_dual_undisturbed: net.max_dual_undisturbed,
            max_dual_any: net.max_dual_any,
            max_masterless: net.max_masterless_undisturbed,
            max_changes,
            handovers: net.handovers_accepted,
            obeyed: net.controls_obeyed,
            refused: net.controls_refused,
            obeyed_by_code: net.obeyed_by_code,
            refused_unauthenticated: net.refused_unauthenticated,
            refused_outranked: net.refused_outranked,
            mads: net.mads_sent,
        })
    } else {
        Err(format!(
            "seed {seed}: {}\nschedule: {s:#?}\nfinal states: {:?}",
            net.violations.join("\n"),
            (0..n)
                .map(|i| net.state(i))
                .collect::<Vec<Option<SmState>>>()
        ))
    }
}

#[test]
fn random_schedules() {
    if let Ok(seed) = std::env::var("ELECTION_SEED") {
        let seed: u64 = seed.parse().expect("ELECTION_SEED is a number");
        if let Err(e) = run(seed, true) {
            panic!("{e}");
        }
        return;
    }
    let count: u64 = std::env::var("ELECTION_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let mut failures = Vec::new();
    let mut agg = Stats::default();
    for seed in 0..count {
        match run(seed, false) {
            Ok(st) => agg.add(&st),
            Err(e) => failures.push(e),
        }
    }
    eprintln!(
        "{count} schedules: {} failed; longest undisturbed dual-Master episode {:?}, longest with faults {:?}; longest undisturbed masterless {:?}; \
         most state changes of one SM {}; {} handovers accepted; controls {} obeyed (DISABLE/STANDBY/DISCOVER {:?}), \
         {} refused ({} for the SM_Key, {} by a Master from an SM it outranks); {} MADs",
        failures.len(),
        agg.max_dual_undisturbed,
        agg.max_dual_any,
        agg.max_masterless,
        agg.max_changes,
        agg.handovers,
        agg.obeyed,
        agg.obeyed_by_code,
        agg.refused,
        agg.refused_unauthenticated,
        agg.refused_outranked,
        agg.mads
    );
    assert!(
        failures.is_empty(),
        "{} of {count} schedules failed; first:\n{}",
        failures.len(),
        failures[0]
    );
    let missing = agg.unexercised();
    assert!(
        missing.is_empty(),
        "{count} schedules never produced {} (a smaller ELECTION_SCHEDULES may be too few)",
        missing.join(", ")
    );
}
