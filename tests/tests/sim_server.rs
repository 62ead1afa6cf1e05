//! Peer test: OpenSM and ibnetdiscover, under ibsim's umad2sim preload, run against
//! ibsm-sim's ibsim-compatible server, where every node is our spec-exact SMA. OpenSM
//! must bring the subnet up, and the simulator's own verification (LFT walks from every
//! CA to every LID, LID uniqueness, port states) must find the result clean.

#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ibsm_sim::server::IbsimServer;
use ibsm_sim::{Sim, SimConfig};
use ibsm_tests::peers_present;
use ibsm_topology::generate;

const OPENSM: &str = "/usr/sbin/opensm";
const IBNETDISCOVER: &str = "/usr/sbin/ibnetdiscover";
const PRELOAD: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

#[test]
fn opensm_brings_up_a_fat_tree_of_ibsm_smas() {
    if !peers_present(
        "opensm_brings_up_a_fat_tree_of_ibsm_smas",
        &[OPENSM, IBNETDISCOVER, PRELOAD],
    ) {
        return;
    }
    let dir: PathBuf = std::env::temp_dir().join(format!("ibsm_sim_server_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = format!("ibsm_simsrv_{}", std::process::id());

    // The server owns the (single-threaded) simulation in its own thread.
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = {
        let stop = Arc::clone(&stop);
        let sock = sock.clone();
        std::thread::spawn(move || {
            let fabric = generate::fat_tree(8, 2).unwrap();
            let sim: Sim = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
            let mut srv = IbsimServer::bind(sim, &sock).unwrap();
            ready_tx.send(()).unwrap();
            srv.run(&stop).unwrap();
            let sim = srv.into_sim();
            (
                sim.verify(),
                sim.counters().total_dropped(),
                fabric.switch_count(),
            )
        })
    };
    ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();

    let mut osm = Command::new(OPENSM)
        .args(["-d2", "-f", "osm.log", "-s", "0", "-o"])
        .current_dir(&dir)
        .env("IBSIM_SOCKNAME", &sock)
        .env("OSM_TMP_DIR", ".")
        .env("OSM_CACHE_DIR", ".")
        .env("LD_PRELOAD", PRELOAD)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start opensm");
    let deadline = Instant::now() + Duration::from_secs(90);
    let up = loop {
        let log = std::fs::read_to_string(dir.join("osm.log")).unwrap_or_default();
        if log.contains("SUBNET UP") {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let log = std::fs::read_to_string(dir.join("osm.log")).unwrap_or_default();
    // OpenSM ignores SIGTERM under the preload: SIGKILL, by PID.
    let _ = osm.kill();
    let _ = osm.wait();

    let disc = if up {
        let out = Command::new("timeout")
            .args(["60", IBNETDISCOVER])
            .current_dir(&dir)
            .env("IBSIM_SOCKNAME", &sock)
            .env("LD_PRELOAD", PRELOAD)
            .stdin(Stdio::null())
            .output()
            .expect("run ibnetdiscover");
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        String::new()
    };
    stop.store(true, Ordering::Relaxed);
    let (report, _dropped, switches) = server.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    assert!(up, "OpenSM did not bring the subnet up:\n{log}");
    let listed = disc.lines().filter(|l| l.starts_with("Switch\t")).count();
    assert_eq!(listed, switches, "ibnetdiscover output:\n{disc}");
    assert!(!disc.contains(" lid 0 "), "unassigned LIDs:\n{disc}");
    assert!(report.is_clean(), "{report:?}");
    assert!(report.paths > 0);
}
