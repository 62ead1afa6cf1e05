//! Peer test: `ibsmd port isolate|clear` on ibsim, judged by the diagnostics.
//!
//! ibsmd runs on an ibsim fat tree with a guid2lid file, so the isolated ports are
//! kept beside it (`ibsm-isolated-ports`). The operator isolates one end of a
//! switch-to-switch cable through the control socket: once the heavy sweep it asks
//! for is up, `ibroute` (through `verify_topology`) shows no LFT entry on either
//! switch pointing at the cable, while every CA still reaches every LID. ibsmd is
//! stopped and started again: the file brings the isolation back, and the tables
//! still leave the cable out. `port clear` takes it back and the cable carries routes
//! again. Bad GUID/PORT syntax is refused by the client (exit 2), an unknown node by
//! the daemon (exit 1).
//!
//! Failover: a master and a standby share the isolated-ports file; the master isolates
//! a cable end by hand and is killed (SIGKILL); the standby reads the file when it
//! takes over, and its tables leave the cable out too.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ibsm_tests::peer::{
    Daemon, PeerFabric, client, needed, net_file, start_ibsmd, stop_ibsmd, switch_link,
    verify_topology, wait_settled,
};
use ibsm_tests::peers_present;
use ibsm_topology::{generate, ibnet};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

/// `ibsmd ARGS --control-socket SOCK --json`: exit code and what it printed.
fn ctl(sock: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(IBSMD)
        .args(args)
        .arg("--control-socket")
        .arg(sock)
        .arg("--json")
        .output()
        .expect("run ibsmd client");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// Waits until ibsmd's log, from byte `from` on, holds `text`, then a SUBNET UP and a
/// light sweep that found nothing to do: the change is in the tables.
fn wait_applied(f: &PeerFabric, from: usize, text: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let err = f.read("ibsmd.err");
        let tail = err.get(from..).unwrap_or_default();
        if let Some(at) = tail.find(text) {
            let after = &tail[at..];
            if after
                .rfind("SUBNET UP")
                .is_some_and(|up| after[up..].contains("light sweep: nothing to do"))
            {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no {text:?} then a settled SUBNET UP within {limit:?}:\n{tail}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_port_isolated_by_hand_stays_isolated_across_a_restart_until_cleared() {
    if !peers_present("isolate_ibsim", &needed()) {
        return;
    }
    let net = net_file(
        &generate::fat_tree(8, 2).unwrap(),
        "2-level radix-8 fat tree",
    );
    let f = PeerFabric::start("isolate", &net);
    let topo = ibnet::parse(&net).unwrap().fabric;
    let (_, sm_ca) = topo.cas().next().unwrap();
    let sock = f.path("ctl.sock");
    let guid2lid = f.path("guid2lid");
    let args = [
        "--routing",
        "updn",
        "--sweep-interval",
        "1",
        "--time-limit",
        "300",
        "--control-socket",
        sock.to_str().unwrap(),
        "--guid2lid",
        guid2lid.to_str().unwrap(),
    ];
    let sm = start_ibsmd(&f, IBSMD, &sm_ca.description, 0, &args);
    wait_settled(&f, 0, Duration::from_secs(30));
    let link = switch_link(&topo);
    let g = |e: ibsm_topology::Endpoint| topo.node(e.node).unwrap().guid().0;
    let (ga, pa, gb, pb) = (g(link.a), link.a.port, g(link.b), link.b.port);
    let before = verify_topology(&f, &topo, 0);
    assert!(
        before.lft_uses(ga, pa) > 0 && before.lft_uses(gb, pb) > 0,
        "the cable carried no route before"
    );

    // Refused: bad syntax by the client, an unknown node by the daemon.
    let (code, out) = ctl(&sock, &["port", "isolate", "zz/1"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("not hexadecimal"), "{out}");
    let (code, out) = ctl(&sock, &["port", "isolate", "0xdead/1"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no node 0x000000000000dead"), "{out}");

    let target = format!("{ga:#x}/{pa}");
    let mark = f.read("ibsmd.err").len();
    let (code, out) = ctl(&sock, &["port", "isolate", &target]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("isolated"), "{out}");
    let line = format!("port unhealthy port={ga:#018x}/{pa} reason=isolated by the operator");
    wait_applied(&f, mark, &line, Duration::from_secs(30));
    let now = verify_topology(&f, &topo, 0);
    assert_eq!(now.peer(ga, pa), Some((gb, pb)), "the cable is up");
    assert_eq!(now.lft_uses(ga, pa), 0, "LFT uses the isolated port");
    assert_eq!(
        now.lft_uses(gb, pb),
        0,
        "LFT uses the isolated cable's far end"
    );
    assert_eq!(now.lids, before.lids, "LIDs moved");
    let (code, out) = ctl(&sock, &["status"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("\"manual\":1"), "{out}");
    let kept = std::fs::read_to_string(f.path("ibsm-isolated-ports")).unwrap();
    assert!(
        kept.contains(&format!("{ga:#018x} {pa} manual isolate ")),
        "{kept}"
    );

    // Restart: the file brings the isolation back.
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["routing_failures"], 0, "{json}");
    let sm = start_ibsmd(&f, IBSMD, &sm_ca.description, 0, &args);
    wait_settled(&f, 0, Duration::from_secs(30));
    assert!(
        f.read("ibsmd.err").contains(&line),
        "not isolated again at start:\n{}",
        f.read("ibsmd.err")
    );
    let again = verify_topology(&f, &topo, 0);
    assert_eq!(again.lft_uses(ga, pa), 0, "isolation lost at the restart");
    assert_eq!(again.lft_uses(gb, pb), 0, "isolation lost at the restart");
    assert_eq!(again.lids, before.lids, "LIDs moved");

    // Cleared: the cable carries routes again, and the file forgets it.
    let mark = f.read("ibsmd.err").len();
    let (code, out) = ctl(&sock, &["port", "clear", &target]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("cleared"), "{out}");
    wait_applied(&f, mark, "port healthy again", Duration::from_secs(30));
    let back = verify_topology(&f, &topo, 0);
    assert!(
        back.lft_uses(ga, pa) > 0 && back.lft_uses(gb, pb) > 0,
        "the cable carries no route after clear"
    );
    let kept = std::fs::read_to_string(f.path("ibsm-isolated-ports")).unwrap();
    assert!(!kept.contains(&format!("{ga:#018x}")), "{kept}");
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["routing_failures"], 0, "{json}");
}

/// Starts ibsmd on `host` with `priority`, its log in `<tag>.err`, plus `extra`.
fn start_as(f: &PeerFabric, host: &str, tag: &str, priority: u8, extra: &[&str]) -> Daemon {
    let out = std::fs::File::create(f.path(&format!("{tag}.out"))).unwrap();
    let err = std::fs::File::create(f.path(&format!("{tag}.err"))).unwrap();
    let mut c = client(f, IBSMD, Some(host), tag);
    c.args([
        "--priority",
        &priority.to_string(),
        "--polling-timeout",
        "500",
        "--polling-retries",
        "2",
        "--routing",
        "updn",
        "--sweep-interval",
        "1",
        "--time-limit",
        "300",
        "-v",
    ])
    .args(extra)
    .stdout(out)
    .stderr(err);
    Daemon(Some(c.spawn().expect("start ibsmd")))
}

/// Waits until `<tag>.err` satisfies `done`; returns the log.
fn wait_log(f: &PeerFabric, tag: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = f.read(&format!("{tag}.err"));
        if done(&log) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "{tag}: no {what} within 60 s:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A SUBNET UP after `text`, then a light sweep that found nothing to do.
fn settled_after(log: &str, text: &str) -> bool {
    log.find(text).is_some_and(|at| {
        let after = &log[at..];
        after
            .rfind("SUBNET UP")
            .is_some_and(|up| after[up..].contains("light sweep: nothing to do"))
    })
}

#[test]
fn a_standby_that_takes_over_keeps_the_isolation() {
    if !peers_present("isolate_ibsim", &needed()) {
        return;
    }
    let net = net_file(
        &generate::fat_tree(8, 2).unwrap(),
        "2-level radix-8 fat tree",
    );
    let f = PeerFabric::start("isolate-failover", &net);
    let topo = ibnet::parse(&net).unwrap().fabric;
    let cas: Vec<String> = topo.cas().map(|(_, n)| n.description.clone()).collect();
    let sock = f.path("master.sock");
    let iso = f.path("isolated-ports");
    let (sock_s, iso_s) = (sock.to_str().unwrap(), iso.to_str().unwrap());
    let master = start_as(
        &f,
        &cas[0],
        "master",
        10,
        &["--control-socket", sock_s, "--isolated-ports", iso_s],
    );
    wait_log(&f, "master", "SUBNET UP", |t| t.contains("SUBNET UP"));
    let standby = start_as(&f, &cas[1], "standby", 5, &["--isolated-ports", iso_s]);
    wait_log(&f, "standby", "STANDBY", |t| t.contains("STANDBY ("));
    let link = switch_link(&topo);
    let g = |e: ibsm_topology::Endpoint| topo.node(e.node).unwrap().guid().0;
    let (ga, pa, gb, pb) = (g(link.a), link.a.port, g(link.b), link.b.port);
    let line = format!("port unhealthy port={ga:#018x}/{pa} reason=isolated by the operator");
    let (code, out) = ctl(&sock, &["port", "isolate", &format!("{ga:#x}/{pa}")]);
    assert_eq!(code, 0, "{out}");
    wait_log(&f, "master", "the isolation applied", |t| {
        settled_after(t, &line)
    });
    let before = verify_topology(&f, &topo, 0);
    assert_eq!(before.lft_uses(ga, pa), 0, "the master isolated it");

    // SIGKILL: the master writes nothing more; the standby takes over.
    let mut m = master;
    let child = m.0.as_mut().expect("running");
    let st = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
    let log = wait_log(&f, "standby", "a settled takeover", |t| {
        t.find("MASTER (")
            .is_some_and(|m| settled_after(&t[m..], "SUBNET UP"))
    });
    // It started before the isolation: only the takeover can have read it.
    assert!(
        log.contains(&line),
        "the standby did not read the isolation at takeover:\n{log}"
    );
    let after = verify_topology(&f, &topo, 0);
    assert_eq!(after.peer(ga, pa), Some((gb, pb)), "the cable is up");
    assert_eq!(
        after.lft_uses(ga, pa),
        0,
        "the new master routes over the isolated port"
    );
    assert_eq!(
        after.lft_uses(gb, pb),
        0,
        "the new master routes over its far end"
    );
    drop(standby);
}
