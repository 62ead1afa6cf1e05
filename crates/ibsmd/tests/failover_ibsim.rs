//! Peer test: failover as a client sees it. Two `ibsmd` on two CAs of an ibsim fat tree
//! (polls 500 ms x 2 retries), the master killed with SIGKILL; `sminfo` run from a third
//! CA must name the standby as MASTER, and every port keeps its LID
//! (`ibnetdiscover -p` before and after). How long it took is printed, never asserted:
//! `tests/src/bin/failover_bench.rs` measures it against OpenSM (`tests/FAILOVER.md`).

use std::path::PathBuf;
use std::time::Duration;

use ibsm_tests::failover::{IBNETDISCOVER, Kind, SMINFO, Setup, run_once};
use ibsm_tests::peer::{PeerFabric, needed, net_file};
use ibsm_tests::peers_present;
use ibsm_topology::generate;

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

#[test]
fn standby_ibsmd_is_master_for_clients_after_sigkill_and_no_lid_moves() {
    let mut need = needed();
    need.extend([SMINFO, IBNETDISCOVER]);
    if !peers_present("failover_ibsim", &need) {
        return;
    }
    let fab = generate::fat_tree(12, 2).unwrap();
    let f = PeerFabric::start("failover", &net_file(&fab, "2-level radix-12 fat tree"));
    let cas: Vec<String> = fab.cas().map(|(_, n)| n.description.clone()).collect();
    let setup = Setup {
        kind: Kind::Ibsmd(PathBuf::from(IBSMD)),
        polling_timeout: Duration::from_millis(500),
        polling_retries: 2,
        polling_retries_as_failures: false,
        sweep_interval: 10,
        hosts: [cas[0].clone(), cas[1].clone(), cas[2].clone()],
        settle: Duration::from_secs(2),
        kill_delay: Duration::ZERO,
        sminfo_limit: Duration::from_millis(500),
    };
    let o = run_once(&f, &setup).unwrap_or_else(|e| panic!("failover: {e}"));
    // Every port of the fabric was seen both times (the dead master's CA keeps its LID:
    // ibsim's SMA still answers for it).
    assert_eq!(o.lids_before.len(), fab.node_count(), "{:?}", o.lids_before);
    assert!(
        o.moved_lids().is_empty(),
        "LIDs moved in the failover: {:?}",
        o.moved_lids()
    );
    // The standby's log shows the takeover in order: lost the master, Master, SUBNET UP.
    let (detect, master, up) = (o.mark("detect"), o.mark("master"), o.mark("up"));
    assert!(
        detect.is_some() && master >= detect && up >= master,
        "{:?}",
        o.marks
    );
    eprintln!(
        "failover: sminfo saw {:#x} MASTER {} ms after the kill ({} sminfo runs); marks {:?}",
        o.standby_guid,
        o.seen.as_millis(),
        o.sminfo_runs.len(),
        o.marks
    );
}
