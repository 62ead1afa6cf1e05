//! ibsm-umad under ibsim's umad2sim preload: what the preload does wrong must not crash
//! our processes.

use std::process::{Command, Stdio};
use std::time::Duration;

use ibsm_tests::peer::run_bounded;
use ibsm_tests::{IBSIM, Ibsim, PRELOAD, peers_present};

const PEER: &str = env!("CARGO_BIN_EXE_umad-drop-peer");
const LATE: &str = env!("CARGO_BIN_EXE_umad-late-recv-peer");

const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n";

/// Dropping a `UmadPort` while answers to its requests are still arriving: closing the
/// umad fd made the preload's reader thread route them to a freed queue and crash the
/// process (SIGSEGV, NULL mutex) in most runs; the port now leaves that fd open under
/// the preload. Several runs, since the crash depended on timing.
#[test]
fn dropping_a_port_with_answers_in_flight_does_not_crash_under_the_preload() {
    if !peers_present("umad_preload", &[IBSIM, PRELOAD]) {
        return;
    }
    let sim = Ibsim::start("ibsm_umad_drop", NET);
    for run in 0..4 {
        let dir = sim.dir.join(format!("peer{run}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = Command::new(PEER);
        cmd.current_dir(&dir)
            .env("IBSIM_SOCKNAME", &sim.sock)
            .env("SIM_HOST", "Hca1")
            .env("LD_PRELOAD", PRELOAD)
            .stdin(Stdio::null());
        let (ok, out, err) = run_bounded(cmd, Duration::from_secs(30));
        assert!(
            ok,
            "run {run}: umad-drop-peer failed\nstdout: {out}\nstderr: {err}"
        );
        assert!(out.contains("sent 128"), "run {run}: {out}\n{err}");
    }
}

/// `UmadTransport::recv` with a deadline already past reads a MAD that is waiting
/// instead of giving up at once: the engine's host calls it that way between two
/// slices of work, and SMInfo polls and SA queries went unread for as long as the
/// slicing lasted. (Planted: the timeout check before the read -> `timeout`.)
#[test]
fn a_waiting_mad_is_read_with_a_past_deadline() {
    if !peers_present("umad_preload", &[IBSIM, PRELOAD]) {
        return;
    }
    let sim = Ibsim::start("ibsm_umad_late", NET);
    let dir = sim.dir.join("late");
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new(LATE);
    cmd.current_dir(&dir)
        .env("IBSIM_SOCKNAME", &sim.sock)
        .env("SIM_HOST", "Hca1")
        .env("LD_PRELOAD", PRELOAD)
        .stdin(Stdio::null());
    let (ok, out, err) = run_bounded(cmd, Duration::from_secs(30));
    assert!(
        ok && out.contains("answered"),
        "stdout: {out}\nstderr: {err}"
    );
}
