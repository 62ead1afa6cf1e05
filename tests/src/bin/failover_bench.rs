//! Failover as clients see it, ibsmd against OpenSM on the same ibsim fabric: runs
//! `ibsm_tests::failover::run_once` alternately for an ibsmd pair and an OpenSM pair
//! (ours, theirs, ours, ...; with `--wordings count,failures` both readings of
//! `--polling-retries` for ibsmd, then OpenSM), prints one line per run and the
//! medians. How to run it and what the columns mean: `tests/FAILOVER.md`.
//!
//! `failover-bench [--pairs N] [--ibsmd PATH] [--radix R] [--levels L]
//!  [--polling-timeout MS] [--polling-retries N] [--wordings count,failures]
//!  [--sweep-interval S] [--settle MS] [--sminfo-limit MS] [--only ibsmd|opensm]
//!  [--logs DIR]`

use std::path::PathBuf;
use std::time::Duration;

use ibsm_tests::failover::{Kind, Outcome, Setup, run_once};
use ibsm_tests::peer::{PeerFabric, net_file};
use ibsm_topology::generate;

/// The value after `--name`, if given.
fn opt(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn num(args: &[String], name: &str, default: u64) -> u64 {
    opt(args, name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} wants a number, got {v:?}"))
    })
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    })
}

fn ms(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |s| format!("{:.0}", s * 1e3))
}

/// Who runs: the label of its lines, the SMs, and for ibsmd the reading of
/// `--polling-retries` (`count`: OpenSM 3.3's, `failures`: opensm.conf's words,
/// `--polling-retries-as-failures`).
struct Variant {
    label: &'static str,
    kind: Kind,
    as_failures: bool,
}

/// One run's line: kind, run, load, kill→sminfo MASTER, and the standby's log marks.
fn line(kind: &str, run: usize, o: &Outcome) -> String {
    let moved = o.moved_lids();
    format!(
        "{kind:<7} {run:>3} load {:>5.2}  delay {:>3} ms  seen {:>5} ms  detect {:>5}  master {:>5}  up {:>5}  after-detect {:>5}  sminfo runs {:>3}  LIDs {} ({} moved)",
        o.load,
        o.kill_delay.as_millis(),
        o.seen.as_millis(),
        ms(o.mark("detect")),
        ms(o.mark("master")),
        ms(o.mark("up")),
        ms(o.mark("detect").map(|d| o.seen.as_secs_f64() - d)),
        o.sminfo_runs.len(),
        o.lids_before.len(),
        moved.len()
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "failover-bench [--pairs N] [--ibsmd PATH] [--radix R] [--levels L] [--polling-timeout MS] \
             [--polling-retries N] [--wordings count,failures] [--sweep-interval S] [--settle MS] \
             [--sminfo-limit MS] [--only ibsmd|opensm] [--logs DIR]\n(see tests/FAILOVER.md)"
        );
        return;
    }
    let pairs = usize::try_from(num(&args, "--pairs", 5)).unwrap_or(5);
    let ibsmd = opt(&args, "--ibsmd").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../target/release/ibsmd"
            ))
        },
        PathBuf::from,
    );
    assert!(
        ibsmd.exists(),
        "{} missing: cargo build --release -p ibsmd, or give --ibsmd",
        ibsmd.display()
    );
    let radix = u8::try_from(num(&args, "--radix", 12)).expect("--radix fits a u8");
    let levels = usize::try_from(num(&args, "--levels", 2)).unwrap_or(2);
    let logs = opt(&args, "--logs").map(PathBuf::from);
    let only = opt(&args, "--only");
    let fab = generate::fat_tree(radix, levels).expect("fat tree");
    let net = net_file(&fab, &format!("{levels}-level radix-{radix} fat tree"));
    let cas: Vec<String> = fab.cas().map(|(_, n)| n.description.clone()).collect();
    assert!(cas.len() >= 3, "the fabric needs three CAs");
    let base = Setup {
        kind: Kind::OpenSm,
        polling_timeout: Duration::from_millis(num(&args, "--polling-timeout", 500)),
        polling_retries: u32::try_from(num(&args, "--polling-retries", 2)).unwrap_or(2),
        polling_retries_as_failures: false,
        sweep_interval: u32::try_from(num(&args, "--sweep-interval", 10)).unwrap_or(10),
        hosts: [cas[0].clone(), cas[1].clone(), cas[2].clone()],
        settle: Duration::from_millis(num(&args, "--settle", 3000)),
        sminfo_limit: Duration::from_millis(num(&args, "--sminfo-limit", 200)),
        kill_delay: Duration::ZERO,
    };
    let wordings = opt(&args, "--wordings").unwrap_or_else(|| "count".into());
    println!(
        "# {levels}-level radix-{radix} fat tree ({} nodes), polling {} ms x {} retries (ibsmd: {wordings}), sweep {} s, ibsmd {}",
        fab.node_count(),
        base.polling_timeout.as_millis(),
        base.polling_retries,
        base.sweep_interval,
        ibsmd.display()
    );
    let mut kinds: Vec<Variant> = wordings
        .split(',')
        .map(|w| match w.trim() {
            "count" => Variant {
                label: "ibsmd",
                kind: Kind::Ibsmd(ibsmd.clone()),
                as_failures: false,
            },
            "failures" => Variant {
                label: "ibsmd-f",
                kind: Kind::Ibsmd(ibsmd.clone()),
                as_failures: true,
            },
            other => panic!("--wordings: {other:?} is neither count nor failures"),
        })
        .collect();
    kinds.push(Variant {
        label: "opensm",
        kind: Kind::OpenSm,
        as_failures: false,
    });
    kinds.retain(|v| only.as_deref().is_none_or(|o| o == v.kind.name()));
    let mut results: Vec<(String, Outcome)> = Vec::new();
    for run in 0..pairs {
        // Pair `run` kills at the same phase of the polls for both: a low-discrepancy
        // sequence over one period (the golden ratio's fractional multiples).
        let phase = (run as f64 * 0.618_034).fract();
        for v in &kinds {
            let setup = Setup {
                kind: v.kind.clone(),
                polling_retries_as_failures: v.as_failures,
                kill_delay: base.polling_timeout.mul_f64(phase),
                ..base.clone()
            };
            let f = PeerFabric::start(&format!("failover_bench_{}_{run}", v.label), &net);
            let r = run_once(&f, &setup);
            if let Some(dir) = &logs {
                keep_logs(&f, dir, v.label, run);
                if let Ok(o) = &r {
                    let to = dir.join(format!("{}-{run}/sminfo.txt", v.label));
                    let _ = std::fs::write(to, o.sminfo_runs.join("\n"));
                }
            }
            match r {
                Ok(o) => {
                    println!("{}", line(v.label, run, &o));
                    for (port, b, a) in o.moved_lids() {
                        println!("  LID moved: {port:x?} {b:?} -> {a:?}");
                    }
                    results.push((v.label.to_string(), o));
                }
                Err(e) => println!("{:<7} {run:>3} FAILED: {e}", v.label),
            }
        }
    }
    let labels: Vec<&str> = kinds.iter().map(|v| v.label).collect();
    summarize(&labels, &results);
}

/// Copies the SMs' logs of a run (the fabric's directory goes with it).
fn keep_logs(f: &PeerFabric, dir: &std::path::Path, kind: &str, run: usize) {
    let to = dir.join(format!("{kind}-{run}"));
    let _ = std::fs::create_dir_all(&to);
    for (from, name) in [
        ("a/err", "master.log"),
        ("a/osm.log", "master.log"),
        ("b/err", "standby.log"),
        ("b/osm.log", "standby.log"),
    ] {
        let p = f.path(from);
        if p.exists() && std::fs::metadata(&p).is_ok_and(|m| m.len() > 0) {
            let _ = std::fs::copy(&p, to.join(name));
        }
    }
}

fn summarize(labels: &[&str], results: &[(String, Outcome)]) {
    let col = |kind: &str, f: &dyn Fn(&Outcome) -> Option<f64>| {
        median(
            results
                .iter()
                .filter(|(k, _)| k == kind)
                .filter_map(|(_, o)| f(o))
                .collect(),
        )
    };
    println!("# medians (ms):      seen  detect  master      up  after-detect  load");
    for &kind in labels {
        let n = results.iter().filter(|(k, _)| k == kind).count();
        if n == 0 {
            continue;
        }
        println!(
            "# {kind:<7} ({n:>2} runs) {:>6}  {:>6}  {:>6}  {:>6}  {:>12}  {:.2}",
            ms(col(kind, &|o| Some(o.seen.as_secs_f64()))),
            ms(col(kind, &|o| o.mark("detect"))),
            ms(col(kind, &|o| o.mark("master"))),
            ms(col(kind, &|o| o.mark("up"))),
            ms(col(kind, &|o| o
                .mark("detect")
                .map(|d| o.seen.as_secs_f64() - d))),
            col(kind, &|o| Some(o.load)).unwrap_or(f64::NAN)
        );
    }
    let theirs = col("opensm", &|o| Some(o.seen.as_secs_f64()));
    for &kind in labels.iter().filter(|k| k.starts_with("ibsmd")) {
        let ours = col(kind, &|o| Some(o.seen.as_secs_f64()));
        if let (Some(a), Some(b)) = (ours, theirs) {
            println!(
                "# ratio of medians ({kind} / OpenSM), kill to sminfo MASTER: {:.2}",
                a / b
            );
        }
    }
    let moved: usize = results.iter().map(|(_, o)| o.moved_lids().len()).sum();
    println!("# LIDs moved over all runs: {moved}");
}
