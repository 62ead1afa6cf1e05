//! Peer test: `ibsmd --no-sa` under ibsim answers `saquery` with "unsupported class"
//! and keeps sweeping (before, without an SA agent on the port, the umad2sim preload
//! crashed the process on the first SA request: exit 139); `saquery` is answered by
//! default (`sa_saquery.rs` checks the answers).

use std::time::Duration;

use ibsm_tests::peer::{PeerFabric, after, client, needed, run_bounded, start_ibsmd, stop_ibsmd};
use ibsm_tests::{peers_present, wait_for, wait_until};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");
const SAQUERY: &str = "/usr/sbin/saquery";
const PATIENCE: Duration = Duration::from_secs(60);

const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n";

/// `saquery` (NodeRecords) from Hca2: whether it succeeded, and its output.
fn saquery(f: &PeerFabric) -> (bool, String) {
    let mut c = client(f, SAQUERY, Some("Hca2"), "q");
    c.args(["--smkey", "1"]);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    (ok, format!("{out}\n{err}"))
}

fn peers() -> bool {
    let mut need = needed();
    need.push(SAQUERY);
    peers_present("no_sa", &need)
}

#[test]
fn saquery_against_no_sa_ibsmd_is_refused_and_ibsmd_keeps_sweeping() {
    if !peers() {
        return;
    }
    let f = PeerFabric::start("no_sa", NET);
    let mut sm = start_ibsmd(&f, IBSMD, "Hca1", 0, &["--no-sa"]);
    wait_for(&f.path("ibsmd.err"), "SUBNET UP", PATIENCE);
    let (ok, out) = saquery(&f);
    assert!(!ok, "saquery succeeded against --no-sa:\n{out}");
    // Answered, not dropped: the refusal is in our log.
    let err = wait_for(&f.path("ibsmd.err"), "refused (--no-sa)", PATIENCE);
    let mark = err.len();
    wait_until("two light sweeps after the SA request", PATIENCE, || {
        let child = sm.0.as_mut().expect("running");
        if let Some(st) = child.try_wait().unwrap() {
            panic!("ibsmd died ({st}):\n{}", f.read("ibsmd.err"));
        }
        let err = f.read("ibsmd.err");
        if err[mark..].matches("light sweep:").count() >= 2 {
            Ok(())
        } else {
            Err(err[mark..].to_owned())
        }
    });
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["role"], "MASTER", "{json}");
    assert!(f.read("ibsmd.err").contains("SA off: 1 requests refused"));
}

#[test]
fn saquery_is_answered_by_default() {
    if !peers() {
        return;
    }
    let f = PeerFabric::start("sa_default", NET);
    let sm = start_ibsmd(&f, IBSMD, "Hca1", 0, &[]);
    wait_for(&f.path("ibsmd.err"), "SUBNET UP", PATIENCE);
    let (ok, out) = saquery(&f);
    assert!(ok, "saquery failed against ibsmd:\n{out}");
    assert!(out.contains("NodeRecord dump"), "{out}");
    let _ = stop_ibsmd(&f, sm);
    assert!(!after(&f.read("ibsmd.err"), "SUBNET UP").contains("refused"));
}
