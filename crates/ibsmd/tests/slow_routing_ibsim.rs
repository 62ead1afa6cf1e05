//! Peer test, on the wall clock: a Master whose routing takes longer than its Standby
//! needs to declare it dead is never taken over, and a client's `sminfo` and `saquery`
//! are answered while it routes.
//!
//! Two `ibsmd` on an ibsim fat tree; the master's every engine job sleeps 2.5 s first
//! (`IBSMD_TEST_JOB_DELAY_MS`, ibsmd's `jobs.rs`: a routing engine slower than the
//! standby's 0.6-1.1 s detection at 500 ms x 2). Once the standby stands by, `ibsmd
//! rebalance` makes the master recompute every route, and a third CA runs `sminfo` and
//! `saquery` back to back until the master's routing comes back. Each run must answer
//! (each is killed after 1 s: under umad2sim a request nobody answers never times out),
//! the standby must stay Standby, and the routing must really have been out the whole
//! time (the rebalance's SUBNET UP comes after the last run). How long the runs took is
//! printed, never asserted. (Planted: ibsmd's jobs run inline on the engine's thread
//! (`JobPolicy::Inline` in `jobs::runner`) -> the runs hang and the standby takes over.)

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ibsm_tests::failover::SMINFO;
use ibsm_tests::peer::{PeerFabric, client, needed, net_file, wait_within};
use ibsm_tests::peers_present;
use ibsm_topology::generate;

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");
const SAQUERY: &str = "/usr/sbin/saquery";
/// How long each of the master's jobs sleeps before it runs.
const DELAY: Duration = Duration::from_millis(2500);
/// Only a step that never comes reaches this.
const PATIENCE: Duration = Duration::from_secs(60);

struct Sm {
    child: Child,
    log: PathBuf,
}

impl Drop for Sm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(f: &PeerFabric, host: &str, priority: u8, name: &str, extra: &[&str], delay: bool) -> Sm {
    let log = f.path(&format!("{name}.err"));
    let err = std::fs::File::create(&log).unwrap();
    let mut c = client(f, IBSMD, Some(host), name);
    c.args([
        "--priority",
        &priority.to_string(),
        "--polling-timeout",
        "500",
        "--polling-retries",
        "2",
        "--sweep-interval",
        "2",
        "--time-limit",
        "120",
        "-v",
    ])
    .args(extra)
    .stdout(Stdio::null())
    .stderr(err);
    if delay {
        c.env("IBSMD_TEST_JOB_DELAY_MS", DELAY.as_millis().to_string());
    }
    Sm {
        child: c.spawn().expect("start ibsmd"),
        log,
    }
}

fn read(p: &PathBuf) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn wait_for(sm: &Sm, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let t = read(&sm.log);
        if ok(&t) {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "no {what} within {PATIENCE:?}:\n{t}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `cmd` to its end or kills it after 1 s: (answered, wall time, stdout).
fn run(mut cmd: Command) -> (bool, Duration, String) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawn a diagnostic");
    let status = wait_within(&mut child, Duration::from_secs(1));
    let took = t.elapsed();
    let mut out = String::new();
    if let Some(mut so) = child.stdout.take() {
        use std::io::Read as _;
        let _ = so.read_to_string(&mut out);
    }
    let answered = status.is_some_and(|s| s.success());
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    (answered, took, out)
}

#[test]
fn a_master_routing_longer_than_the_standbys_detection_keeps_answering() {
    let mut need = needed();
    need.extend([SMINFO, SAQUERY]);
    if !peers_present("slow_routing_ibsim", &need) {
        return;
    }
    let fab = generate::fat_tree(12, 2).unwrap();
    let f = PeerFabric::start("slowroute", &net_file(&fab, "2-level radix-12 fat tree"));
    let cas: Vec<String> = fab.cas().map(|(_, n)| n.description.clone()).collect();
    let sock = f.path("master.sock");
    let sock_arg = sock.to_str().unwrap().to_owned();
    let master = start(
        &f,
        &cas[0],
        10,
        "master",
        &["--control-socket", &sock_arg],
        true,
    );
    wait_for(&master, "master's SUBNET UP", |t| t.contains("SUBNET UP"));
    let standby = start(&f, &cas[1], 5, "standby", &[], false);
    wait_for(&standby, "standby", |t| t.contains("STANDBY ("));
    // The standby's arrival may start a heavy sweep on the master (its routing held
    // like any other): wait until a light sweep after the last SUBNET UP finds nothing.
    let settled = wait_for(&master, "a settled master", |t| {
        t.rfind("SUBNET UP")
            .is_some_and(|last| t[last..].contains("light sweep: nothing to do"))
    });
    let ups = settled.matches("SUBNET UP").count();

    let (ok, _, out) = run({
        let mut c = Command::new(IBSMD);
        c.args(["rebalance", "--control-socket", &sock_arg]);
        c
    });
    assert!(ok, "ibsmd rebalance: {out}");
    let t0 = Instant::now();
    // Back to back until just before the routing can come back.
    let mut runs: Vec<(&str, bool, Duration, String)> = Vec::new();
    while t0.elapsed() < DELAY - Duration::from_millis(500) {
        let (ok, took, out) = run(client(&f, SMINFO, Some(&cas[2]), "client"));
        runs.push(("sminfo", ok, took, out));
        let (ok, took, out) = run(client(&f, SAQUERY, Some(&cas[2]), "client"));
        runs.push(("saquery", ok, took, out));
    }
    let routed_meanwhile = read(&master.log).matches("SUBNET UP").count() > ups;
    let longest = |tool: &str| {
        runs.iter()
            .filter(|r| r.0 == tool)
            .map(|r| r.2)
            .max()
            .unwrap_or_default()
    };
    eprintln!(
        "while routing: {} runs, longest sminfo {:?}, longest saquery {:?}",
        runs.len(),
        longest("sminfo"),
        longest("saquery")
    );
    assert!(
        !routed_meanwhile,
        "the routing came back before the runs ended: the test measured nothing"
    );
    for (tool, ok, took, out) in &runs {
        assert!(
            *ok,
            "{tool} unanswered ({took:?}) while the master routed: {out}"
        );
        if *tool == "sminfo" {
            assert!(out.contains("SMINFO_MASTER"), "{out}");
        }
    }
    assert!(runs.len() >= 4, "{} runs", runs.len());
    // The routing comes back and programs the subnet; nobody took over.
    let ups_after = ups;
    let log = wait_for(&master, "the rebalance's SUBNET UP", |t| {
        t.matches("SUBNET UP").count() > ups_after
    });
    let standby_log = read(&standby.log);
    let since = &standby_log[standby_log.find("STANDBY (").unwrap()..];
    assert!(
        !since.contains("DISCOVERING (") && !since.contains("MASTER ("),
        "the standby took over while the master routed:\n{standby_log}"
    );
    let first_up = &log[log.find("SUBNET UP").unwrap()..];
    assert!(
        !first_up.contains("STANDBY (") && !first_up.contains("DISCOVERING ("),
        "the master left MASTER:\n{log}"
    );
}
