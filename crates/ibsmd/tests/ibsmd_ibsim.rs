//! Peer test: the `ibsmd` daemon (this crate's binary) brings ibsim fabrics up over the real umad transport under the umad2sim
//! preload, and infiniband-diags agree (`ibsm_tests::peer::verify_with_diags`: unique
//! LIDs, every link Active, every switch routes every LID through live ports, `ibtracert`
//! on sampled CA pairs, an offline LFT walk from every CA to every LID). With OpenSM on
//! another node: a lower-priority OpenSM hands over to ibsmd, and takes over again when
//! ibsmd stops on SIGTERM; ibsmd stands by for a higher-priority OpenSM and takes over
//! when it dies without changing any LID; at equal priority the lower GUID is master
//! (`sminfo` and both logs agree); with different SM_Keys neither follows the other.
//!
//! Every wait is for a line in a log (or `sminfo`'s answer) with a generous deadline,
//! [`PATIENCE`], that only a step that never comes runs into; nothing asserts how fast a
//! step came (the benches measure that). Where a test shows that something does *not*
//! happen, it waits for our light sweeps to pass, or, for a Standby that logs nothing,
//! for a stretch derived from the polling parameters.
//!
//! Not covered here: ibsmd as master handing over to a higher-priority OpenSM that joins
//! later. OpenSM first goes STANDBY and sends trap 144 to the master; ibsim drops every
//! TrapRepress at its destination ("got trap repress - dropping") and the preload ignores
//! timeouts, so that trap stays outstanding in OpenSM for ever and, once handed the
//! subnet, OpenSM never finishes a sweep. On hardware the kernel times the trap out.

use std::time::Duration;

use ibsm_tests::peer::{
    EXAMPLE_NET, PeerFabric, after, bring_up, diag, kill_other, needed, net_file, start_ibsmd,
    start_opensm, stop_ibsmd, verify_topology,
};
use ibsm_tests::{peers_present, tail, wait_for, wait_until};
use ibsm_topology::generate;
use ibsm_topology::ibnet;

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

/// Deadline for each awaited step; under ibsim each takes a few seconds at most.
const PATIENCE: Duration = Duration::from_secs(60);

/// ibsmd's polling in these tests (`start_ibsmd`): every 500 ms, 2 retries. A Standby
/// whose polls all went unanswered would give up on its Master at most
/// `500 ms + (2 + 1) × 200 ms` after it began to poll (`Config::worst_case_detection`:
/// the next poll, then three rounds of the 200 ms transaction timeout); a stretch well
/// beyond that, without a change of role, shows the polls were answered.
const IBSMD_GIVES_UP_BY: Duration = Duration::from_millis(500 * (2 + 1) + 500);

/// Whether OpenSM's log shows it leaving Standby (for Discovering or Master) again.
fn osm_left_standby(osm: &str) -> bool {
    let since = after(osm, "Entering STANDBY state");
    since.contains("Entering MASTER state") || since.contains("Entering DISCOVERING state")
}

/// Waits until ibsmd, Master, has logged `n` light sweeps after the first `mark` in its
/// log; when `osm_standby`, fails at once if OpenSM leaves Standby meanwhile. Our light
/// sweeps come every 2 s (`start_ibsmd`): they pace the test by ibsmd's own progress.
fn light_sweeps_after(f: &PeerFabric, mark: &str, n: usize, osm_standby: bool) -> String {
    wait_until(
        &format!("{n} light sweeps after {mark:?}"),
        PATIENCE,
        || {
            let osm = f.read("osm/osm.log");
            assert!(
                !(osm_standby && osm_left_standby(&osm)),
                "OpenSM left Standby while ibsmd was Master:\n{osm}"
            );
            let err = f.read("ibsmd.err");
            let seen = after(&err, mark).matches("light sweep:").count();
            if err.contains(mark) && seen >= n {
                Ok(err)
            } else {
                Err(format!("ibsmd's log:\n{}", tail(&err, 30)))
            }
        },
    )
}

fn peers() -> bool {
    let mut need = needed();
    need.push(SMINFO);
    peers_present("ibsmd_ibsim", &need)
}

#[test]
fn ibsmd_brings_up_the_ibsim_example_net() {
    if !peers() {
        return;
    }
    let net = std::fs::read_to_string(EXAMPLE_NET).unwrap();
    let f = PeerFabric::start("ex", &net);
    let parsed = ibnet::parse(&net).expect("example net parses");
    let fab = &parsed.fabric;
    // The SM runs on ibsim's first node (a switch, management port 0).
    let json = bring_up(&f, IBSMD, None, &[]);
    assert_eq!(json["switches"], fab.switch_count(), "{json}");
    verify_topology(&f, fab, 0);
}

#[test]
fn ibsmd_brings_up_a_generated_fat_tree_with_updn_and_lmc() {
    if !peers() {
        return;
    }
    let fab = generate::fat_tree(8, 2).unwrap();
    let f = PeerFabric::start("ft", &net_file(&fab, "2-level radix-8 fat tree"));
    let (_, sm_ca) = fab.cas().next().unwrap();
    let json = bring_up(
        &f,
        IBSMD,
        Some(&sm_ca.description),
        &["--routing", "updn", "--lmc", "1"],
    );
    let cas = fab.cas().count();
    assert_eq!(json["nodes"], (cas + fab.switch_count()));
    // LMC 1: two LIDs per CA port, one per switch.
    assert_eq!(json["lids"], (2 * cas + fab.switch_count()));
    assert_eq!(json["routing"], "updn", "{json}");
    verify_topology(&f, &fab, 1);
}

const SMALL_NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Hca3\"[1]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\nHca\t1 \"Hca3\"\n[1]\t\"Sw1\"[3]\n";

#[test]
fn ibsmd_takes_over_from_lower_priority_opensm_which_returns_when_ibsmd_stops() {
    if !peers() {
        return;
    }
    let mut f = PeerFabric::start("el_hi", SMALL_NET);
    start_opensm(&mut f, "Hca1", 0, &[]);
    let sm = start_ibsmd(&f, IBSMD, "Hca2", 10, &[]);
    let err_path = f.path("ibsmd.err");
    // OpenSM hands over; ours becomes Master and sweeps.
    let err = wait_for(&err_path, "SUBNET UP", PATIENCE);
    assert!(err.contains("MASTER"), "{err}");
    wait_for(&f.path("osm/osm.log"), "Entering STANDBY state", PATIENCE);
    // Stay Master across OpenSM's polls: three of our light sweeps, 2 s apart, outlast
    // OpenSM's patience with a silent master (polls 1 s apart, 2 retries: it gives up
    // within 4 s), so an OpenSM unhappy with our answers shows it by then.
    light_sweeps_after(&f, "SUBNET UP", 3, true);
    let osm = f.read("osm/osm.log");
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["role"], "MASTER", "{json}");
    assert!(
        !osm_left_standby(&osm),
        "OpenSM took mastership back while ours was alive:\n{osm}"
    );
    // OpenSM notices the silent master and takes over again.
    wait_until("OpenSM taking over after ibsmd stopped", PATIENCE, || {
        let osm = f.read("osm/osm.log");
        let later = after(&osm, "Entering STANDBY state");
        if later.contains("Entering MASTER state") && later.contains("SUBNET UP") {
            Ok(())
        } else {
            Err(format!("OpenSM's log:\n{}", tail(&osm, 30)))
        }
    });
}

/// OpenSM configures a fat tree (its own LID assignment); ibsmd joins at a lower
/// priority and stands by; OpenSM is killed: ibsmd takes over, and after its sweep
/// every port keeps the LID OpenSM gave it and the fabric verifies.
#[test]
fn ibsmd_stands_by_for_higher_priority_opensm_and_takes_over_when_it_is_killed() {
    if !peers() {
        return;
    }
    let fab = generate::fat_tree(8, 2).unwrap();
    let mut f = PeerFabric::start("el_lo", &net_file(&fab, "2-level radix-8 fat tree"));
    let mut cas = fab.cas().map(|(_, n)| n.description.clone());
    let (osm_host, our_host) = (cas.next().unwrap(), cas.last().unwrap());
    let osm = start_opensm(&mut f, &osm_host, 10, &[]);
    let by_opensm = verify_topology(&f, &fab, 0);
    let sm = start_ibsmd(&f, IBSMD, &our_host, 0, &[]);
    let err_path = f.path("ibsmd.err");
    wait_for(&err_path, "STANDBY", PATIENCE);
    // Following, not configuring, for longer than failing polls would allow.
    std::thread::sleep(IBSMD_GIVES_UP_BY);
    let err = f.read("ibsmd.err");
    let since = after(&err, "STANDBY (");
    assert!(
        !since.contains("DISCOVERING (") && !since.contains("MASTER ("),
        "left Standby under a live OpenSM:\n{err}"
    );
    kill_other(&mut f, osm);
    let err = wait_for(&err_path, "SUBNET UP", PATIENCE);
    let since = after(&err, "STANDBY (");
    assert!(
        after(since, "DISCOVERING (").contains("MASTER ("),
        "lost the dead OpenSM, rediscovered, and took over: {err}"
    );
    let by_us = verify_topology(&f, &fab, 0);
    for (port, lid) in &by_opensm.lids {
        assert_eq!(
            by_us.lids.get(port),
            Some(lid),
            "port {port:?} had LID {lid} from OpenSM"
        );
    }
    assert_eq!(by_us.lids.len(), by_opensm.lids.len());
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["role"], "MASTER", "{json}");
    assert_eq!(json["subnet_up"], true, "{json}");
}

/// OpenSM's SM_Key in the SM_Key tests; ibsmd runs with another.
const OSM_KEY: &str = "0x0000000000001111";
/// ibsmd's SM_Key there.
const OUR_KEY: &str = "0x2222";

/// With different SM_Keys neither SM may follow the other: ibsmd reports OpenSM (port
/// GUID 0x100001, ibsim's GUID for Hca1's port) as unauthenticated and stays or becomes
/// MASTER whatever the priorities, never STANDBY (it neither hands over to OpenSM nor
/// accepts it as master), and OpenSM, which ignores SMInfo with a foreign key (ERR 2F18),
/// never goes STANDBY either. Two masters is the misconfiguration both report; neither
/// gives the subnet away to an SM it cannot authenticate.
fn sm_keys_differ(tag: &str, ibsmd_first: bool) {
    let mut f = PeerFabric::start(tag, SMALL_NET);
    let key = [("sm_key", OSM_KEY)];
    let sm = if ibsmd_first {
        let sm = start_ibsmd(&f, IBSMD, "Hca2", 0, &["--sm-key", OUR_KEY]);
        wait_for(&f.path("ibsmd.err"), "SUBNET UP", PATIENCE);
        start_opensm(&mut f, "Hca1", 10, &key);
        sm
    } else {
        start_opensm(&mut f, "Hca1", 10, &key);
        start_ibsmd(&f, IBSMD, "Hca2", 0, &["--sm-key", OUR_KEY])
    };
    wait_for(
        &f.path("ibsmd.err"),
        "SM 0x0000000000100001 has a different SM_Key; never handing over",
        PATIENCE,
    );
    // The warning comes while the first sweep discovers; the role is decided when its
    // discovery ends, a moment later.
    let err = wait_for(&f.path("ibsmd.err"), "MASTER (", PATIENCE);
    assert!(!err.contains("STANDBY ("), "{err}");
    wait_for(&f.path("osm/osm.log"), "with non-matching sm_key", PATIENCE);
    // Several of OpenSM's sweeps (2 s apart, as ours) go by while we sweep twice.
    light_sweeps_after(&f, "different SM_Key", 2, false);
    let json = stop_ibsmd(&f, sm);
    let err = f.read("ibsmd.err");
    assert!(!err.contains("STANDBY"), "ibsmd followed OpenSM:\n{err}");
    assert_eq!(json["role"], "MASTER", "{json}");
    assert_ne!(json["unauthenticated_sms"], 0, "{json}");
    let osm = f.read("osm/osm.log");
    assert!(osm.contains("Entering MASTER state"), "{osm}");
    assert!(
        !osm.contains("Entering STANDBY state"),
        "OpenSM followed ibsmd:\n{osm}"
    );
}

#[test]
fn ibsmd_never_stands_by_for_a_higher_priority_opensm_with_another_sm_key() {
    if !peers() {
        return;
    }
    sm_keys_differ("key_osm_first", false);
}

#[test]
fn ibsmd_master_never_hands_over_to_a_joining_opensm_with_another_sm_key() {
    if !peers() {
        return;
    }
    sm_keys_differ("key_ibsmd_first", true);
}

const SMINFO: &str = "/usr/sbin/sminfo";

/// Equal priorities: the lower port GUID is master (ibsim gives Hca1's port 0x100001,
/// Hca2's 0x100003). OpenSM starts first on `osm_host` and brings the subnet up; ibsmd
/// joins on the other host. Exactly one MASTER: both logs and `sminfo` agree.
fn equal_priority(tag: &str, osm_host: &str, ours_wins: bool) {
    let mut f = PeerFabric::start(tag, SMALL_NET);
    let our_host = if osm_host == "Hca1" { "Hca2" } else { "Hca1" };
    let (osm_guid, our_guid) = if osm_host == "Hca1" {
        ("0x100001", "0x100003")
    } else {
        ("0x100003", "0x100001")
    };
    start_opensm(&mut f, osm_host, 5, &[]);
    let sm = start_ibsmd(&f, IBSMD, our_host, 5, &[]);
    let osm_log = f.path("osm/osm.log");
    if ours_wins {
        // OpenSM hands over to the lower GUID, then polls us for three of our sweeps
        // (longer than its 4 s of patience with a silent master).
        wait_for(&f.path("ibsmd.err"), "SUBNET UP", PATIENCE);
        wait_for(&osm_log, "Entering STANDBY state", PATIENCE);
        light_sweeps_after(&f, "SUBNET UP", 3, true);
    } else {
        // Ours follows for longer than failing polls would allow.
        wait_for(&f.path("ibsmd.err"), "STANDBY", PATIENCE);
        std::thread::sleep(IBSMD_GIVES_UP_BY);
    }
    let master = if ours_wins { our_guid } else { osm_guid };
    let info = diag(&f, SMINFO, &[]);
    assert!(
        info.contains(&format!("sm guid {master},")) && info.contains("SMINFO_MASTER"),
        "sminfo does not name {master} as master: {info}"
    );
    let osm = f.read("osm/osm.log");
    let json = stop_ibsmd(&f, sm);
    let err = f.read("ibsmd.err");
    if ours_wins {
        assert_eq!(json["role"], "MASTER", "{json}\n{err}");
        // Joining, it stands by for the master it finds, which then hands over.
        assert!(!after(&err, "MASTER (").contains("STANDBY"), "{err}");
        assert!(
            !osm_left_standby(&osm),
            "OpenSM took mastership back while ours was alive:\n{osm}"
        );
    } else {
        assert_eq!(json["role"], "STANDBY", "{json}\n{err}");
        assert!(!err.contains("MASTER"), "{err}");
        // Nor did it lose the live OpenSM and find it again.
        assert!(!err.contains("DISCOVERING ("), "{err}");
        assert!(!osm.contains("Entering STANDBY state"), "{osm}");
    }
}

#[test]
fn equal_priority_ibsmd_with_the_lower_guid_takes_over_from_opensm() {
    if !peers() {
        return;
    }
    equal_priority("eq_ours", "Hca2", true);
}

#[test]
fn equal_priority_ibsmd_with_the_higher_guid_stands_by_for_opensm() {
    if !peers() {
        return;
    }
    equal_priority("eq_osm", "Hca1", false);
}
