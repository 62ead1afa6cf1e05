//! Peer test (issue 25, "always answering"): a master that sweeps heavy is still the
//! master for its standby and its clients.
//!
//! Two ibsmd on ibsim's 3-level radix-36 fat tree (11,664 CAs, 1,620 switches; ibsim
//! started with `-N 16384 -S 2048 -P 131072`), the standby polling 500 ms x 2. Once the
//! standby stands by, heavy sweeps are forced on the master one after the other, each
//! waited for until the master has settled (SUBNET UP, then a light sweep with nothing
//! to do): `ibsmd sweep --heavy` on its control socket, a switch-to-switch cable cut on
//! ibsim's console, the cable put back, `ibsmd rebalance`. Every routing job sleeps 2 s
//! first (`IBSMD_TEST_JOB_DELAY_MS`): the tree's own routing takes 100 to 300 ms, less
//! than the standby's detection time (about 1.1 s), so without the delay an SM that
//! goes silent while it routes would pass too. Meanwhile a third CA runs `sminfo` and
//! `saquery -p` (one PathRecord, as an MPI job start asks) back to back.
//!
//! Asserted, outcomes only: every `sminfo` names the master with SMINFO_MASTER and
//! every `saquery` returns the PathRecord asked for (a run that gives up, as `sminfo`
//! does after its own timeout with `iberror: failed: query`, or that still runs after
//! 2 s, when it is killed, fails: a limit for a question nobody answers, not a
//! measurement); both clients ran during every sweep; the standby never leaves STANDBY,
//! the master never leaves MASTER and says so on its control socket. The median,
//! 99th-percentile and longest run times are printed, never asserted: `busy-bench`
//! (`tests/BUSY.md`) measures them against OpenSM. With the routing job run on the
//! engine's thread instead (`JobRunner::inline()` in `daemon.rs`) the standby takes
//! over during the first sweep and `sminfo` fails.
//!
//! The three CAs are on one leaf switch and the cable cut is away from it: no path
//! between them crosses a switch-to-switch cable, so neither the cut nor a table being
//! rewritten can lose one of their MADs; only the master's silence can.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ibsm_tests::busy::{
    Ask, Clock, IBADDR, Prober, Run, SAQUERY, Sm, SmSettings, Stats, Sweep, Trigger, Verdict,
    cut_and_mend, during, hosts_and_cable, lid_of, ms, up_after,
};
use ibsm_tests::failover::{Kind, SMINFO};
use ibsm_tests::peer::{PeerFabric, needed, net_file};
use ibsm_tests::peers_present;
use ibsm_topology::generate;

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

/// Limit for a step that should come (an SM up, a sweep settled): only one that never
/// comes reaches it. The debug ibsmd brings the tree up in about 12 s.
const PATIENCE: Duration = Duration::from_secs(240);

/// Limit for one client run before it is killed and counted unanswered.
const UNANSWERED: Duration = Duration::from_secs(2);

/// How long each routing job sleeps first (see the module's doc).
const JOB_DELAY_MS: &str = "2000";

/// One forced heavy sweep.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Through the control socket.
    Ask(Trigger),
    /// Cut the cable on ibsim's console.
    Cut,
    /// Put it back.
    Mend,
}

/// Waits until the master has more than `ups` SUBNET UPs and its last one is followed
/// by a light sweep that found nothing to do; returns its SUBNET UP count.
fn settled(sm: &Sm, ups: usize) -> usize {
    let text = ibsm_tests::failover::wait_text(&sm.log_path(), "master settled", PATIENCE, |t| {
        t.matches(sm.up_mark()).count() > ups
            && t.rfind(sm.up_mark())
                .is_some_and(|at| t[at..].contains("light sweep: nothing to do"))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    text.matches(sm.up_mark()).count()
}

/// Runs that did not get their answer, as lines for a failure message.
fn failures(name: &str, runs: &[Run]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.verdict != Verdict::Answered)
        .map(|r| {
            format!(
                "{name} at {:.0} ms ({:.0} ms): {:?}",
                ms(r.from),
                ms(r.wall),
                r.verdict
            )
        })
        .collect()
}

fn report(name: &str, runs: &[Run], sweeps: &[Sweep]) {
    let all = Stats::of(runs);
    let busy = Stats::of(during(runs, sweeps));
    let line = |s: Option<Stats>| {
        s.map_or_else(
            || "none".into(),
            |s| {
                format!(
                    "{} runs, median {:.0} ms, p99 {:.0} ms, longest {:.0} ms",
                    s.n,
                    ms(s.p50),
                    ms(s.p99),
                    ms(s.max)
                )
            },
        )
    };
    eprintln!("busy_master: {name}: all: {}", line(all));
    eprintln!("busy_master: {name}: during heavy sweeps: {}", line(busy));
}

#[test]
fn a_master_sweeping_heavy_answers_sminfo_and_sa_and_is_not_taken_over() {
    let mut need = needed();
    need.extend([SMINFO, SAQUERY, IBADDR]);
    if !peers_present("busy_master_ibsim", &need) {
        return;
    }
    let began = Instant::now();
    let topo = generate::fat_tree(36, 3).expect("fat tree");
    let net = net_file(&topo, "3-level radix-36 fat tree");
    let ([master_host, standby_host, client_host], cable) = hosts_and_cable(&topo);
    let (cut, mend) = cut_and_mend(&topo, cable);
    let mut f = PeerFabric::start_sized("busy", &net, &topo);
    let kind = Kind::Ibsmd(PathBuf::from(IBSMD));
    let settings = SmSettings {
        polling_timeout: Duration::from_millis(500),
        polling_retries: 2,
        sweep_interval: 2,
    };
    let start = |host: &str, priority: u8, name: &str| {
        Sm::start_with_env(
            &f,
            &kind,
            host,
            priority,
            name,
            &settings,
            &[("IBSMD_TEST_JOB_DELAY_MS", JOB_DELAY_MS)],
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let mut master = start(&master_host, 10, "master");
    let mut ups = settled(&master, 0);
    let master_guid = master
        .port_guid()
        .expect("the master's port GUID in its log");
    let mut standby = start(&standby_host, 5, "standby");
    standby
        .wait_role(1, PATIENCE)
        .unwrap_or_else(|e| panic!("{e}"));
    let up_at = began.elapsed();

    let ask_path = Ask::PathRecord {
        slid: lid_of(&f, &client_host).unwrap_or_else(|e| panic!("{e}")),
        dlid: lid_of(&f, &standby_host).unwrap_or_else(|e| panic!("{e}")),
    };
    let clock = Clock::now();
    let probes = [
        Prober::start(
            f.client_env(),
            &client_host,
            Ask::SmInfo {
                master: master_guid,
            },
            UNANSWERED,
            &clock,
        ),
        Prober::start(f.client_env(), &client_host, ask_path, UNANSWERED, &clock),
    ];
    let steps = [
        Step::Ask(Trigger::SweepHeavy),
        Step::Cut,
        Step::Mend,
        Step::Ask(Trigger::Rebalance),
    ];
    let mut sweeps = Vec::new();
    for step in steps {
        let from = clock.origin.elapsed();
        let what = match step {
            Step::Ask(t) => {
                master.request(t).unwrap_or_else(|e| panic!("{e}"));
                t.name().to_owned()
            }
            Step::Cut => {
                f.sim.console(&cut);
                cut.clone()
            }
            Step::Mend => {
                f.sim.console(&mend);
                mend.clone()
            }
        };
        ups = settled(&master, ups);
        let up = clock.origin.elapsed();
        let (first_up, routing) = up_after(&master, &clock, from).unzip();
        eprintln!(
            "busy_master: {what}: SUBNET UP {} ms after it was asked for (routing wall {} ms), settled after {:.0} ms",
            first_up.map_or_else(
                || "?".into(),
                |t| format!("{:.0}", ms(t.saturating_sub(from)))
            ),
            routing
                .flatten()
                .map_or_else(|| "?".into(), |t| format!("{:.0}", ms(t))),
            ms(up - from)
        );
        sweeps.push(Sweep {
            what,
            from,
            up,
            routing: routing.flatten(),
        });
    }
    std::thread::sleep(Duration::from_secs(1));
    let [sminfo, saquery] = probes.map(|p| (p.name(), p.stop()));

    for (name, runs) in [&sminfo, &saquery] {
        report(name, runs, &sweeps);
    }
    eprintln!(
        "busy_master: fabric up and standby standing by after {:.1} s; whole test {:.1} s",
        up_at.as_secs_f64(),
        began.elapsed().as_secs_f64()
    );

    // Every question answered, by the master.
    let bad: Vec<String> = [&sminfo, &saquery]
        .iter()
        .flat_map(|(name, runs)| failures(name, runs))
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} client runs not answered as asked; the first:\n{}",
        bad.len(),
        sminfo.1.len() + saquery.1.len(),
        bad[..bad.len().min(20)].join("\n")
    );
    // And asked while the master was busy: each sweep saw runs of both clients.
    for s in &sweeps {
        for (name, runs) in [&sminfo, &saquery] {
            assert!(
                runs.iter().any(|r| r.overlaps(s.from, s.up)),
                "no {name} ran during the sweep after {}",
                s.what
            );
        }
    }
    // No takeover: the standby stayed STANDBY, the master MASTER.
    assert!(standby.running() && master.running(), "an SM exited");
    let standby_roles = standby.roles_after("STANDBY (");
    assert!(
        standby_roles.is_empty(),
        "the standby left STANDBY:\n{}",
        standby_roles.join("\n")
    );
    let master_roles = master.roles_after("MASTER (");
    assert!(
        master_roles.is_empty(),
        "the master left MASTER:\n{}",
        master_roles.join("\n")
    );
    let status = master.status().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status["status"]["role"], "MASTER", "{status}");
    // The master's own view of its silences (printed, not asserted: a wall time).
    let engine = &status["status"]["engine"];
    assert!(engine["calls"].as_u64().unwrap_or(0) > 0, "{status}");
    eprintln!(
        "master: longest call into the engine {} ms ({}), 99.99 % under {} ms, {} calls",
        engine["longest_ms"], engine["longest_call"], engine["p9999_ms"], engine["calls"]
    );
}
