//! Peer test: switches whose port 0 is enhanced (SwitchInfo.EnhancedPort0, which ibsim's
//! switches never set) are printed `enhanced port 0` by `ibsm-netdiscover` exactly where
//! `ibnetdiscover` prints it. The fabric runs in ibsm-sim behind its ibsim-compatible
//! server (every node our SMA), both tools under ibsim's umad2sim preload.

#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ibsm_sim::server::IbsimServer;
use ibsm_sim::{Sim, SimConfig};
use ibsm_tests::{PRELOAD, peers_present};
use ibsm_topology::generate;

const IBNETDISCOVER: &str = "/usr/sbin/ibnetdiscover";

/// Runs `program` against the server at `sock` from `dir`; its stdout.
fn run(program: &str, sock: &str, dir: &Path) -> String {
    let out = Command::new("timeout")
        .args(["60", program])
        .current_dir(dir)
        .env("IBSIM_SOCKNAME", sock)
        .env("LD_PRELOAD", PRELOAD)
        .stdin(Stdio::null())
        .output()
        .expect("run the tool");
    assert!(
        out.status.success(),
        "{program}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The switch header lines, without the LID (no SM ran), sorted.
fn headers(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with("Switch"))
        .map(|l| l.split(" lid ").next().unwrap_or(l).trim_end().to_owned())
        .collect()
}

#[test]
fn enhanced_port_0_is_printed_where_ibnetdiscover_prints_it() {
    if !peers_present("netdiscover_sim", &[IBNETDISCOVER, PRELOAD]) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ibsm_netdiscover_sim_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = format!("ibsm_ndsim_{}", std::process::id());
    let mut fabric = generate::fat_tree(8, 2).unwrap();
    let switches: Vec<_> = fabric.switches().map(|(id, _)| id).collect();
    // Every other switch enhanced.
    for &id in switches.iter().step_by(2) {
        fabric.node_mut(id).unwrap().enhanced_port0 = true;
    }
    let enhanced: BTreeSet<u64> = switches
        .iter()
        .step_by(2)
        .map(|&id| fabric.guid_of(id).0)
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = {
        let (stop, sock) = (Arc::clone(&stop), sock.clone());
        let fabric = fabric.clone();
        std::thread::spawn(move || {
            let sim = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
            let mut srv = IbsimServer::bind(sim, &sock).unwrap();
            ready_tx.send(()).unwrap();
            srv.run(&stop).unwrap();
        })
    };
    ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let theirs = run(IBNETDISCOVER, &sock, &dir);
    let ours = run(env!("CARGO_BIN_EXE_ibsm-netdiscover"), &sock, &dir);
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    let marked = |text: &str| -> BTreeSet<u64> {
        headers(text)
            .iter()
            .filter(|h| h.contains(" enhanced port 0"))
            .filter_map(|h| {
                let name = h.split('"').nth(1)?;
                u64::from_str_radix(name.strip_prefix("S-")?, 16).ok()
            })
            .collect()
    };
    assert_eq!(marked(&theirs), enhanced, "ibnetdiscover:\n{theirs}");
    assert_eq!(
        headers(&ours),
        headers(&theirs),
        "ours:\n{ours}\ntheirs:\n{theirs}"
    );
}
