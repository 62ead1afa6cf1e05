//! How long clients wait for a master that sweeps heavy, ibsmd against OpenSM on the
//! same ibsim fabric (issue 25: the longest SMInfo/SA answer delay during a heavy sweep
//! of the 11,664-CA tree). For each SM in turn, on a fresh ibsim: bring the subnet up,
//! let it settle, run `sminfo` and `saquery -p` back to back from a third CA with the SM
//! idle (the baseline: the runs' own cost), then force heavy sweeps one after the other
//! (ibsmd: `ibsmd rebalance` on the control socket; OpenSM: SIGHUP, which makes it
//! re-read its configuration and sweep heavy) while they keep running. Prints each
//! sweep (request to SUBNET UP, routing wall), each client's run times idle and during
//! the sweeps, and the ratios. How to run it and what the columns mean: `tests/BUSY.md`.
//!
//! `busy-bench [--sweeps N] [--rounds R] [--ibsmd LABEL=PATH]... [--only ibsmd|opensm]
//!  [--radix R] [--levels L] [--idle S] [--settle S] [--gap S] [--limit-ms MS]
//!  [--sweep-interval S] [--logs DIR]`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ibsm_tests::busy::{
    Ask, Clock, Prober, Run, Sm, SmSettings, Stats, Sweep, Trigger, Verdict, during,
    hosts_and_cable, lid_of, line_after, ms, up_after,
};
use ibsm_tests::failover::{Kind, load_average};
use ibsm_tests::peer::{PeerFabric, net_file};
use ibsm_topology::generate;

/// Limit for an SM to bring the subnet up or finish a sweep: OpenSM takes about 80 s
/// for the 11,664-CA tree's first sweep under ibsim on 2 cores.
const PATIENCE: Duration = Duration::from_secs(900);

/// Every value after `--name`.
fn opts(args: &[String], name: &str) -> Vec<String> {
    args.windows(2)
        .filter(|w| w[0] == name)
        .map(|w| w[1].clone())
        .collect()
}

/// The last value after `--name`, if given.
fn opt(args: &[String], name: &str) -> Option<String> {
    opts(args, name).pop()
}

fn num(args: &[String], name: &str, default: u64) -> u64 {
    opt(args, name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} wants a number, got {v:?}"))
    })
}

/// One SM under test: its label in the report and what runs.
#[derive(Debug, Clone)]
struct Variant {
    label: String,
    kind: Kind,
}

/// The bench's settings.
#[derive(Debug, Clone)]
struct Plan {
    sweeps: usize,
    /// `busy-probe`, and how often it asks.
    probe: PathBuf,
    every: Duration,
    idle: Duration,
    settle: Duration,
    gap: Duration,
    limit: Duration,
    sm: SmSettings,
    logs: Option<PathBuf>,
}

/// What one SM's run showed.
#[derive(Debug)]
struct Outcome {
    label: String,
    round: usize,
    /// The first SUBNET UP after the start, seconds.
    bring_up: f64,
    sweeps: Vec<Sweep>,
    /// OpenSM: request to "tables configured on all switches" of each sweep.
    to_routes: Vec<Option<Duration>>,
    /// Each client's runs while the SM was idle, and during the sweeps.
    idle: Vec<(&'static str, Vec<Run>)>,
    busy: Vec<(&'static str, Vec<Run>)>,
    /// 1-minute load average at the idle phase's start, the first sweep and the end.
    load: [f64; 3],
}

fn fmt_ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".into(), |d| format!("{:.0}", ms(d)))
}

/// Waits until `sm` has brought the subnet up and written no further SUBNET UP for
/// `quiet` (a first sweep is often followed by another, for traps of ports it
/// activated).
fn wait_quiet(sm: &Sm, quiet: Duration) -> Result<(), String> {
    let deadline = Instant::now() + PATIENCE;
    let mut ups = sm.wait_ups(0, PATIENCE)?.matches(sm.up_mark()).count();
    let mut since = Instant::now();
    while since.elapsed() < quiet {
        if Instant::now() > deadline {
            return Err(format!("{} never went quiet", sm.log_path().display()));
        }
        std::thread::sleep(Duration::from_millis(200));
        let now = sm.ups();
        if now != ups {
            ups = now;
            since = Instant::now();
        }
    }
    Ok(())
}

/// One SM's run on a fresh ibsim.
fn run_one(
    v: &Variant,
    round: usize,
    topo: &ibsm_topology::Fabric,
    net: &str,
    p: &Plan,
) -> Result<Outcome, String> {
    let f = PeerFabric::start_sized(&format!("busy_bench_{}_{round}", v.label), net, topo);
    let r = measure(&f, v, round, topo, p);
    if let Some(dir) = &p.logs {
        keep_logs(&f, dir, &v.label, round);
    }
    r
}

fn measure(
    f: &PeerFabric,
    v: &Variant,
    round: usize,
    topo: &ibsm_topology::Fabric,
    p: &Plan,
) -> Result<Outcome, String> {
    // The hosts of the peer test: master, an idle CA the PathRecords lead to, and the
    // client, on one leaf (no client MAD crosses a cable between switches).
    let ([master_host, other_host, client_host], _) = hosts_and_cable(topo);
    let started = Instant::now();
    let master = Sm::start(f, &v.kind, &master_host, 10, "master", &p.sm)?;
    master.wait_ups(0, PATIENCE)?;
    let bring_up = started.elapsed().as_secs_f64();
    wait_quiet(&master, p.settle)?;
    let guid = master
        .port_guid()
        .ok_or("no port GUID in the master's log")?;
    let ask_path = Ask::PathRecord {
        slid: lid_of(f, &client_host)?,
        dlid: lid_of(f, &other_host)?,
    };
    let clock = Clock::now();
    let sminfo = Ask::SmInfo { master: guid };
    let env = f.client_env();
    let probes = [
        Prober::start(env.clone(), &client_host, sminfo, p.limit, &clock),
        Prober::start(env.clone(), &client_host, ask_path, p.limit, &clock),
        Prober::start_probe(
            &env,
            &p.probe,
            &client_host,
            sminfo,
            p.every,
            p.limit,
            &clock,
        )?,
        Prober::start_probe(
            &env,
            &p.probe,
            &client_host,
            ask_path,
            p.every,
            p.limit,
            &clock,
        )?,
    ];
    let load0 = load_average();
    let idle_from = clock.origin.elapsed();
    std::thread::sleep(p.idle);
    let idle_to = clock.origin.elapsed();
    let load1 = load_average();
    let mut sweeps = Vec::new();
    let mut to_routes = Vec::new();
    let mut failed = None;
    for _ in 0..p.sweeps {
        let before = master.ups();
        let from = clock.origin.elapsed();
        if let Err(e) = master
            .request(Trigger::Rebalance)
            .and_then(|()| master.wait_ups(before, PATIENCE))
        {
            failed = Some(e);
            break;
        }
        let Some((up, routing)) = up_after(&master, &clock, from) else {
            failed = Some("SUBNET UP line without a time".into());
            break;
        };
        to_routes.push(
            line_after(
                &master.log(),
                "tables configured on all switches",
                &clock,
                from,
            )
            .map(|(t, _)| t.saturating_sub(from)),
        );
        sweeps.push(Sweep {
            what: Trigger::Rebalance.name().into(),
            from,
            up,
            routing,
        });
        std::thread::sleep(p.gap);
    }
    let load2 = load_average();
    let runs = probes.map(|pr| (pr.name(), pr.stop()));
    if let Some(e) = failed {
        return Err(e);
    }
    let idle = runs
        .iter()
        .map(|(n, r)| {
            let inside = r
                .iter()
                .filter(|x| x.from >= idle_from && x.from + x.wall <= idle_to)
                .cloned()
                .collect();
            (*n, inside)
        })
        .collect();
    let busy = runs
        .iter()
        .map(|(n, r)| (*n, during(r, &sweeps).into_iter().cloned().collect()))
        .collect();
    if let Some(dir) = &p.logs {
        let to = dir.join(format!("{}-{round}", v.label));
        let _ = std::fs::create_dir_all(&to);
        // Times are after the probers' origin; its time of day places them in the log.
        let mut text = vec![format!(
            "origin {:.6} s after midnight UTC; idle {:.1} to {:.1} ms",
            clock.tod(Duration::ZERO),
            ms(idle_from),
            ms(idle_to)
        )];
        text.extend(sweeps.iter().map(|s| {
            format!(
                "sweep {} requested {:.1} SUBNET UP {:.1} routing {}",
                s.what,
                ms(s.from),
                ms(s.up),
                fmt_ms(s.routing)
            )
        }));
        let _ = std::fs::write(to.join("sweeps.txt"), text.join("\n"));
        for (name, r) in &runs {
            let text: Vec<String> = r
                .iter()
                .map(|x| format!("{:.1} {:.1} {:?}", ms(x.from), ms(x.wall), x.verdict))
                .collect();
            let _ = std::fs::write(to.join(format!("{name}.txt")), text.join("\n"));
        }
    }
    Ok(Outcome {
        label: v.label.clone(),
        round,
        bring_up,
        sweeps,
        to_routes,
        idle,
        busy,
        load: [load0, load1, load2],
    })
}

/// Copies the master's log (the fabric's directory goes with it).
fn keep_logs(f: &PeerFabric, dir: &Path, label: &str, round: usize) {
    let to = dir.join(format!("{label}-{round}"));
    let _ = std::fs::create_dir_all(&to);
    for from in ["master/err", "master/osm.log"] {
        let src = f.path(from);
        if src.exists() {
            let _ = std::fs::copy(&src, to.join("master.log"));
        }
    }
}

fn stats_line(s: Option<Stats>) -> String {
    s.map_or_else(
        || "no runs".into(),
        |s| {
            format!(
                "n {:>4}  p50 {:>6.1}  p99 {:>6.1}  max {:>6.1} ms",
                s.n,
                ms(s.p50),
                ms(s.p99),
                ms(s.max)
            )
        },
    )
}

fn bad(runs: &[Run]) -> (usize, usize) {
    let wrong = runs
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Wrong(_)))
        .count();
    let unanswered = runs
        .iter()
        .filter(|r| r.verdict == Verdict::Unanswered)
        .count();
    (wrong, unanswered)
}

/// Of one client's runs during the sweeps: the longest and the 99th percentile minus
/// the median idle run (what a run costs anyway: process start, umad2sim), and how many
/// runs got no answer (gave up, as `sminfo` does after its own 1 s timeout, or were
/// killed): for those the delay is at least their run time.
#[derive(Debug, Clone, Copy)]
struct Delay {
    longest: Duration,
    p99: Duration,
    failed: usize,
}

fn delay(o: &Outcome, name: &str) -> Option<Delay> {
    let idle = o.idle.iter().find(|(n, _)| *n == name)?;
    let busy = o.busy.iter().find(|(n, _)| *n == name)?;
    let base = Stats::of(&idle.1)?.p50;
    let s = Stats::of(&busy.1)?;
    let (wrong, unanswered) = bad(&busy.1);
    Some(Delay {
        longest: s.max.saturating_sub(base),
        p99: s.p99.saturating_sub(base),
        failed: wrong + unanswered,
    })
}

/// A delay as the report shows it: `>=` when some run got no answer.
fn fmt_delay(d: Duration, failed: usize) -> String {
    format!("{}{:.1}", if failed > 0 { ">=" } else { "" }, ms(d))
}

fn print(o: &Outcome) {
    println!(
        "{:<8} round {}  up {:.1} s  load {:.2} / {:.2} / {:.2} (idle, sweeps, end)",
        o.label, o.round, o.bring_up, o.load[0], o.load[1], o.load[2]
    );
    for (i, s) in o.sweeps.iter().enumerate() {
        println!(
            "  sweep {}: SUBNET UP {:>6.0} ms after the request, routing wall {:>6} ms, routes in {:>6} ms",
            i + 1,
            ms(s.took()),
            s.routing
                .map_or_else(|| "-".into(), |d| format!("{:.1}", ms(d))),
            fmt_ms(o.to_routes.get(i).copied().flatten())
        );
    }
    for ((name, idle), (_, busy)) in o.idle.iter().zip(&o.busy) {
        let (wi, ui) = bad(idle);
        let (wb, ub) = bad(busy);
        println!(
            "  {name:<8} idle   {}  (wrong {wi}, unanswered {ui})",
            stats_line(Stats::of(idle))
        );
        let d = delay(o, name).map_or_else(
            || "-".into(),
            |d| {
                format!(
                    "{} / {}",
                    fmt_delay(d.longest, d.failed),
                    fmt_delay(d.p99, d.failed)
                )
            },
        );
        println!(
            "  {name:<8} sweeps {}  (wrong {wb}, unanswered {ub})  longest / p99 - idle p50 = {d} ms",
            stats_line(Stats::of(busy))
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "busy-bench [--sweeps N] [--rounds R] [--ibsmd LABEL=PATH]... [--only ibsmd|opensm] \
             [--radix R] [--levels L] [--idle S] [--settle S] [--gap S] [--limit-ms MS] \
             [--sweep-interval S] [--logs DIR]\n(see tests/BUSY.md)"
        );
        return;
    }
    let default_ibsmd = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ibsmd");
    let mut variants: Vec<Variant> = opts(&args, "--ibsmd")
        .iter()
        .map(|v| {
            let (label, path) = v.split_once('=').unwrap_or(("ibsmd", v.as_str()));
            // Absolute: each SM runs in a directory of its own.
            let path =
                std::fs::canonicalize(path).unwrap_or_else(|e| panic!("--ibsmd {path}: {e}"));
            Variant {
                label: label.into(),
                kind: Kind::Ibsmd(path),
            }
        })
        .collect();
    if variants.is_empty() {
        variants.push(Variant {
            label: "ibsmd".into(),
            kind: Kind::Ibsmd(PathBuf::from(default_ibsmd)),
        });
    }
    for v in &variants {
        if let Kind::Ibsmd(path) = &v.kind {
            assert!(
                path.exists(),
                "{} missing: cargo build --release -p ibsmd, or give --ibsmd LABEL=PATH",
                path.display()
            );
        }
    }
    variants.push(Variant {
        label: "opensm".into(),
        kind: Kind::OpenSm,
    });
    if let Some(only) = opt(&args, "--only") {
        variants.retain(|v| v.kind.name() == only);
    }
    let radix = u8::try_from(num(&args, "--radix", 36)).expect("--radix fits a u8");
    let levels = usize::try_from(num(&args, "--levels", 3)).unwrap_or(3);
    let rounds = usize::try_from(num(&args, "--rounds", 1)).unwrap_or(1);
    // busy-probe is built beside this binary (same package).
    let probe = std::env::current_exe()
        .expect("own path")
        .with_file_name("busy-probe");
    assert!(
        probe.exists(),
        "{} missing: cargo build -p ibsm-tests --bin busy-probe",
        probe.display()
    );
    let plan = Plan {
        sweeps: usize::try_from(num(&args, "--sweeps", 3)).unwrap_or(3),
        probe,
        every: Duration::from_millis(num(&args, "--every-ms", 10)),
        idle: Duration::from_secs(num(&args, "--idle", 15)),
        settle: Duration::from_secs(num(&args, "--settle", 12)),
        gap: Duration::from_secs(num(&args, "--gap", 3)),
        limit: Duration::from_millis(num(&args, "--limit-ms", 2000)),
        sm: SmSettings {
            polling_timeout: Duration::from_millis(500),
            polling_retries: 2,
            sweep_interval: u32::try_from(num(&args, "--sweep-interval", 10)).unwrap_or(10),
        },
        logs: opt(&args, "--logs").map(PathBuf::from),
    };
    let topo = generate::fat_tree(radix, levels).expect("fat tree");
    let net = net_file(&topo, &format!("{levels}-level radix-{radix} fat tree"));
    println!(
        "# {levels}-level radix-{radix} fat tree ({} nodes, {} switches), {} heavy sweeps per SM, sweep interval {} s, idle {} s, run limit {} ms",
        topo.node_count(),
        topo.switch_count(),
        plan.sweeps,
        plan.sm.sweep_interval,
        plan.idle.as_secs(),
        plan.limit.as_millis()
    );
    for v in &variants {
        if let Kind::Ibsmd(p) = &v.kind {
            println!("# {} = {}", v.label, p.display());
        }
    }
    let mut done = Vec::new();
    for round in 0..rounds {
        for v in &variants {
            match run_one(v, round, &topo, &net, &plan) {
                Ok(o) => {
                    print(&o);
                    done.push(o);
                }
                Err(e) => println!("{:<8} round {round} FAILED: {e}", v.label),
            }
        }
    }
    summarize(&variants, &done);
}

/// The delays of each SM over every round (the longest, and the largest p99), with the
/// runs that got no answer, and their ratios to OpenSM's.
fn summarize(variants: &[Variant], done: &[Outcome]) {
    println!(
        "# delay beyond the idle median over every round: longest, p99 (ms); runs without an answer; ratios to OpenSM"
    );
    let worst = |label: &str, name: &str| {
        let ds: Vec<Delay> = done
            .iter()
            .filter(|o| o.label == label)
            .filter_map(|o| delay(o, name))
            .collect();
        (!ds.is_empty()).then(|| Delay {
            longest: ds.iter().map(|d| d.longest).max().unwrap_or_default(),
            p99: ds.iter().map(|d| d.p99).max().unwrap_or_default(),
            failed: ds.iter().map(|d| d.failed).sum(),
        })
    };
    let ratio = |a: Duration, b: Duration| {
        if b.is_zero() {
            "-".into()
        } else {
            format!("{:.2}", a.as_secs_f64() / b.as_secs_f64())
        }
    };
    for name in ["sminfo", "saquery", "smi-mad", "pr-mad"] {
        let theirs = worst("opensm", name);
        for v in variants {
            let Some(ours) = worst(&v.label, name) else {
                println!("{name:<8} {:<8} no runs", v.label);
                continue;
            };
            let (rl, rp) = theirs.map_or_else(
                || ("-".into(), "-".into()),
                |t| (ratio(ours.longest, t.longest), ratio(ours.p99, t.p99)),
            );
            println!(
                "{name:<8} {:<8} longest {:>7} ms  p99 {:>7} ms  no answer {:>3}  ratio longest {rl}  p99 {rp}",
                v.label,
                fmt_delay(ours.longest, ours.failed),
                fmt_delay(ours.p99, ours.failed),
                ours.failed
            );
        }
    }
}
