//! Peer test: our election (the `election-umad-peer` binary, ibsm-election over
//! ibsm-umad under the umad2sim preload) and OpenSM 3.3 share an ibsim fabric.
//!
//! * OpenSM at priority 0 is Master; ours joins at priority 10: OpenSM must hand over to
//!   us (HANDOVER), accept our answers and our ACKNOWLEDGE without complaint (no
//!   `ERR 2Fxx` from its SMInfo receiver), and go Standby polling us.
//! * OpenSM at priority 10 is Master; ours joins at priority 0 and follows it, its polls
//!   answered with a moving ActCount; OpenSM is killed and ours takes over within the
//!   polling budget.
//!
//! The binary only takes part in the election (it configures nothing); the fabric is
//! configured by OpenSM before ours starts.

use std::time::Duration;

use ibsm_tests::peer::{Captured, Fabric, OPENSM, client, kill_other, start_opensm};
use ibsm_tests::{IBSIM, PRELOAD, peers_present};

const PEER: &str = env!("CARGO_BIN_EXE_election-umad-peer");

const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Hca3\"[1]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\nHca\t1 \"Hca3\"\n[1]\t\"Sw1\"[3]\n";

/// Starts ibsim and an OpenSM with `priority` on Hca1 (polling 1 s x 2, sweeps every
/// 2 s), and waits for SUBNET UP.
fn start(tag: &str, priority: u8) -> Fabric {
    let mut f = Fabric::start(&format!("election_osm_{tag}"), NET);
    start_opensm(&mut f, "Hca1", priority, &[]);
    f
}

/// Our SM on Hca2 for `secs` seconds; `during` runs while it does. Returns (stderr event
/// log, JSON summary line).
fn run_peer(
    f: &mut Fabric,
    priority: u8,
    secs: u64,
    during: impl FnOnce(&mut Fabric),
) -> (String, String) {
    let mut cmd = client(f, PEER, Some("Hca2"), "peer");
    cmd.args([
        "--priority",
        &priority.to_string(),
        "--sm-key",
        "0x1",
        "--polling-timeout",
        "500",
        "--polling-retries",
        "2",
        "--run-secs",
        &secs.to_string(),
    ]);
    let peer = Captured::spawn(&mut cmd);
    during(f);
    let (st, o, e) = peer.finish(Duration::from_secs(secs + 30), "election-umad-peer");
    assert!(st.success(), "election-umad-peer failed ({st}):\n{e}");
    let last = o.lines().last().unwrap_or_default().to_string();
    (e, last)
}

fn osm_log(f: &Fabric) -> String {
    f.read("osm/osm.log")
}

fn json_u64(json: &str, key: &str) -> u64 {
    let at = json
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("{key} in {json}"));
    json[at + key.len() + 3..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

fn peers() -> bool {
    peers_present("election_opensm", &[IBSIM, OPENSM, PRELOAD])
}

#[test]
fn opensm_hands_over_to_our_higher_priority_sm() {
    if !peers() {
        return;
    }
    let mut f = start("ho", 0);
    let (events, json) = run_peer(&mut f, 10, 8, |_| {});
    let log = osm_log(&f);
    assert!(
        json.contains("\"state\":\"Master\""),
        "ours should be Master: {json}\n{events}"
    );
    assert!(
        json_u64(&json, "handovers_received") >= 1,
        "{json}\n{events}"
    );
    assert!(
        json_u64(&json, "requests_answered") >= 2,
        "OpenSM, now Standby, polls us: {json}"
    );
    assert!(
        log.contains("Entering STANDBY state"),
        "OpenSM stepped down:\n{log}"
    );
    let sminfo_errors: Vec<&str> = log.lines().filter(|l| l.contains("ERR 2F")).collect();
    assert!(
        sminfo_errors.is_empty(),
        "OpenSM's SMInfo receiver complained about us:\n{}",
        sminfo_errors.join("\n")
    );
    // While ours ran, OpenSM did not take mastership back.
    let after_standby = log
        .split("Entering STANDBY state")
        .nth(1)
        .unwrap_or_default();
    assert!(
        !after_standby.contains("Entering MASTER state") || after_standby.contains("ERR 3113"),
        "OpenSM became Master again while ours was alive:\n{log}"
    );
}

#[test]
fn our_standby_follows_opensm_and_takes_over_when_it_dies() {
    if !peers() {
        return;
    }
    let mut f = start("fo", 10);
    let kill_after = Duration::from_secs(3);
    let (events, json) = run_peer(&mut f, 0, 8, |f| {
        std::thread::sleep(kill_after);
        kill_other(f, 0);
    });
    let ms_of = |needle: &str| -> Option<u64> {
        events
            .lines()
            .find(|l| l.contains(needle))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
    };
    let follow = ms_of("Following").unwrap_or_else(|| panic!("never followed OpenSM:\n{events}"));
    let lost =
        ms_of("MasterLost").unwrap_or_else(|| panic!("never noticed OpenSM's death:\n{events}"));
    let master = ms_of("to: Master").unwrap_or_else(|| panic!("never took over:\n{events}"));
    assert!(follow < 1_000, "followed OpenSM at once:\n{events}");
    // Killed about 3 s in (process start adds a little); 500 ms x 2 retries detects
    // within (2 + 2) x 500 ms of the last answer.
    assert!(
        (2_500..=3_000 + 2_000 + 500).contains(&lost),
        "MasterLost at {lost} ms:\n{events}"
    );
    // The probe of the dead Master's LID is not waited for: the decision is immediate.
    assert!(master >= lost && master <= lost + 1_000, "{events}");
    assert!(json.contains("\"state\":\"Master\""), "{json}");
    assert_eq!(
        json_u64(&json, "state_changes"),
        3,
        "Standby, Discovering, Master: {events}"
    );
}
