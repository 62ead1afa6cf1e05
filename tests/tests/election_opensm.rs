//! Peer test: our election (the `election-umad-peer` binary, ibsm-election over
//! ibsm-umad under the umad2sim preload) and OpenSM 3.3 share an ibsim fabric.
//!
//! * OpenSM at priority 0 is Master; ours joins at priority 10: OpenSM must hand over to
//!   us (HANDOVER), accept our answers and our ACKNOWLEDGE without complaint (no
//!   `ERR 2Fxx` from its SMInfo receiver), and go Standby polling us; `sminfo` then
//!   reads OpenSM's port as SMINFO_STANDBY and ours as SMINFO_MASTER.
//! * OpenSM at priority 10 is Master; ours joins at priority 0 and follows it, its polls
//!   answered with a moving ActCount; OpenSM is killed and ours notices and takes over,
//!   deciding in the same step as it declares the Master lost.
//!
//! The binary only takes part in the election (it configures nothing); the fabric is
//! configured by OpenSM before ours starts. Every wait is for something the programs
//! log or `sminfo` reads, with a generous deadline ([`PATIENCE`]) that only a step that
//! never happens runs into; how fast the steps come is the benches' business.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::time::Duration;

use ibsm_tests::peer::{
    OPENSM, PeerFabric, after, client, diag, json_field, kill_other, start_opensm, wait_within,
};
use ibsm_tests::{IBSIM, PRELOAD, peers_present, tail, wait_until};

const PEER: &str = env!("CARGO_BIN_EXE_election-umad-peer");
const SMINFO: &str = "/usr/sbin/sminfo";

/// Deadline for each awaited step. Under ibsim on an idle machine each takes well under
/// 5 s; this only bounds how long a broken run hangs before it reports what it saw.
const PATIENCE: Duration = Duration::from_secs(60);

/// The peer's polling: every 500 ms, the Master lost after `RETRIES + 1` failed polls.
const POLLING_MS: u64 = 500;
const RETRIES: usize = 2;
/// OpenSM's `polling_retry_number` (set by `start_opensm`).
const OSM_RETRIES: usize = 2;

const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Hca3\"[1]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\nHca\t1 \"Hca3\"\n[1]\t\"Sw1\"[3]\n";

/// Starts ibsim and an OpenSM with `priority` on Hca1 (polling 1 s x 2, sweeps every
/// 2 s), and waits for SUBNET UP.
fn start(tag: &str, priority: u8) -> PeerFabric {
    let mut f = PeerFabric::start(&format!("election_osm_{tag}"), NET);
    start_opensm(&mut f, "Hca1", priority, &[]);
    f
}

/// Our SM on Hca2, its stderr (the event log) and stdout (the JSON summary) in files of
/// the fabric's directory; stopped by a `stop` line on its stdin, killed by PID if the
/// test fails first.
struct OurSm {
    child: Option<Child>,
    stdin: ChildStdin,
    err: PathBuf,
    out: PathBuf,
}

/// What the peer's first stderr line says about its port.
struct Port {
    guid: u64,
    lid: u16,
    sm_lid: u16,
}

impl OurSm {
    fn start(f: &PeerFabric, priority: u8) -> Self {
        let (err, out) = (f.path("peer.err"), f.path("peer.out"));
        let mut cmd = client(f, PEER, Some("Hca2"), "peer");
        cmd.args([
            "--priority",
            &priority.to_string(),
            "--sm-key",
            "0x1",
            "--polling-timeout",
            &POLLING_MS.to_string(),
            "--polling-retries",
            &RETRIES.to_string(),
            // Only a backstop: the test stops it.
            "--run-secs",
            "600",
        ])
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
        let mut child = cmd.spawn().expect("start election-umad-peer");
        let stdin = child.stdin.take().expect("piped stdin");
        Self {
            child: Some(child),
            stdin,
            err,
            out,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Waits until `ready` holds for the event log; returns the log.
    fn wait_log(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        wait_until(what, PATIENCE, || {
            let log = self.log();
            if ready(&log) {
                Ok(log)
            } else {
                Err(format!("our SM's log:\n{}", excerpt(&log)))
            }
        })
    }

    fn port(&self) -> Port {
        let log = self.wait_log("the peer's port line", |l| l.contains(" sm_lid "));
        let line = log.lines().next().unwrap_or_default();
        let field = |name: &str| -> &str {
            line.split_whitespace()
                .skip_while(|w| *w != name)
                .nth(1)
                .unwrap_or_else(|| panic!("no {name} in {line:?}"))
        };
        Port {
            guid: u64::from_str_radix(field("guid").trim_start_matches("0x"), 16).unwrap(),
            lid: field("lid").parse().unwrap(),
            sm_lid: field("sm_lid").parse().unwrap(),
        }
    }

    /// Stops it and returns (event log, JSON summary line).
    fn stop(mut self) -> (String, String) {
        let mut child = self.child.take().expect("running");
        writeln!(self.stdin, "stop").expect("peer's stdin");
        let st = wait_within(&mut child, PATIENCE)
            .unwrap_or_else(|| panic!("election-umad-peer ignored stop:\n{}", self.log()));
        let log = self.log();
        assert!(st.success(), "election-umad-peer failed ({st}):\n{log}");
        let out = std::fs::read_to_string(&self.out).unwrap_or_default();
        (log, out.lines().last().unwrap_or_default().to_string())
    }
}

impl Drop for OurSm {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The first 20 and last 40 lines of a log: where it started and where it got to.
fn excerpt(log: &str) -> String {
    let n = log.lines().count();
    if n <= 60 {
        return log.to_string();
    }
    let head: Vec<&str> = log.lines().take(20).collect();
    format!(
        "{}\n[... {} lines ...]\n{}",
        head.join("\n"),
        n - 60,
        tail(log, 40)
    )
}

/// Whether OpenSM's log shows it leaving Standby (for Discovering or Master) again.
fn left_standby(osm: &str) -> bool {
    let since = after(osm, "Entering STANDBY state");
    since.contains("Entering MASTER state") || since.contains("Entering DISCOVERING state")
}

fn osm_log(f: &PeerFabric) -> String {
    f.read("osm/osm.log")
}

fn json_u64(json: &str, key: &str) -> u64 {
    json_field(json, key)
        .parse()
        .unwrap_or_else(|e| panic!("{key} in {json}: {e}"))
}

/// `sminfo <lid>`: the SMInfo of the SM at that LID, as (port GUID, state name).
fn sminfo(f: &PeerFabric, lid: u16) -> (u64, String) {
    let out = diag(f, SMINFO, &[&lid.to_string()]);
    let guid = out
        .split("sm guid 0x")
        .nth(1)
        .and_then(|r| u64::from_str_radix(r.split(',').next()?, 16).ok())
        .unwrap_or_else(|| panic!("no sm guid in {out:?}"));
    let state = out
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .to_string();
    (guid, state)
}

/// The step number of the first log line containing `needle` (`<ms> ms [<step>] ...`).
fn step_of(log: &str, needle: &str) -> Option<u64> {
    let line = log.lines().find(|l| l.contains(needle))?;
    line.split_once('[')?.1.split_once(']')?.0.parse().ok()
}

fn peers() -> bool {
    peers_present("election_opensm", &[IBSIM, OPENSM, PRELOAD, SMINFO])
}

#[test]
fn opensm_hands_over_to_our_higher_priority_sm() {
    if !peers() {
        return;
    }
    let f = start("ho", 0);
    let ours = OurSm::start(&f, 10);
    let me = ours.port();
    let osm_lid = me.sm_lid;
    let (osm_guid, _) = sminfo(&f, osm_lid);
    // The handover as our side sees it: OpenSM's HANDOVER arrives, our ACKNOWLEDGE goes
    // back and is answered, and OpenSM, now Standby, polls us. OpenSM sends its SMInfo
    // requests by directed route; nothing else here does (`sminfo` below asks by LID,
    // and only later). Had OpenSM found our answers wanting, it would have failed
    // `OSM_RETRIES + 1` polls and left Standby (logging it) before sending another: so
    // after `OSM_RETRIES + 3` polls its log shows whether it still follows us.
    let handover = format!("HandoverReceived {{ from: {osm_guid} }}");
    let polled_by_osm = "answered SubnGet by directed route";
    let events = ours.wait_log(
        "OpenSM's HANDOVER, our answered ACKNOWLEDGE and OSM_RETRIES + 3 polls from OpenSM",
        |log| {
            let osm = osm_log(&f);
            assert!(
                !left_standby(&osm),
                "OpenSM left Standby while ours was alive:\n{osm}\nours:\n{}",
                excerpt(log)
            );
            let ho = after(log, &handover);
            let ack = after(ho, "sent SubnSet(Acknowledge)");
            ack.contains(&format!("response from LID {osm_lid}"))
                && ho.matches(polled_by_osm).count() >= OSM_RETRIES + 3
        },
    );
    assert!(
        events.contains("to: Master"),
        "a HANDOVER makes ours Master:\n{events}"
    );
    // OpenSM logs its step down; `sminfo` reads both SMs as they are now.
    let osm = wait_until("OpenSM's STANDBY in its log", PATIENCE, || {
        let log = osm_log(&f);
        if log.contains("Entering STANDBY state") {
            Ok(log)
        } else {
            Err(tail(&log, 40))
        }
    });
    assert_eq!(
        sminfo(&f, osm_lid),
        (osm_guid, "SMINFO_STANDBY".to_string()),
        "OpenSM's port"
    );
    assert_eq!(
        sminfo(&f, me.lid),
        (me.guid, "SMINFO_MASTER".to_string()),
        "our port"
    );
    let sminfo_errors: Vec<&str> = osm.lines().filter(|l| l.contains("ERR 2F")).collect();
    assert!(
        sminfo_errors.is_empty(),
        "OpenSM's SMInfo receiver complained about us:\n{}",
        sminfo_errors.join("\n")
    );
    // Read while ours still runs: OpenSM did not give up on a live SM.
    let osm = osm_log(&f);
    assert!(
        !left_standby(&osm),
        "OpenSM left Standby while ours was alive:\n{osm}"
    );
    let (events, json) = ours.stop();
    assert_eq!(json_field(&json, "state"), "\"Master\"", "{json}\n{events}");
    assert_eq!(json_u64(&json, "handovers_received"), 1, "{json}\n{events}");
    assert!(
        json_u64(&json, "requests_answered") >= 2,
        "OpenSM, now Standby, polls us: {json}"
    );
}

#[test]
fn our_standby_follows_opensm_and_takes_over_when_it_dies() {
    if !peers() {
        return;
    }
    let mut f = start("fo", 10);
    let ours = OurSm::start(&f, 0);
    let osm_lid = ours.port().sm_lid;
    let (osm_guid, osm_state) = sminfo(&f, osm_lid);
    assert_eq!(osm_state, "SMINFO_MASTER");
    let following = format!("Following {{ guid: {osm_guid} }}");
    let answer = format!("response from LID {osm_lid}");
    // A Standby polls only its Master. Had it found OpenSM's ActCount frozen at every
    // answer, the answer to poll `RETRIES + 2` would have made it lose OpenSM and poll no
    // more: `RETRIES + 3` answered polls without MasterLost show it judged them live.
    let before_kill = ours.wait_log(
        "ours following OpenSM through RETRIES + 3 answered polls",
        |log| after(log, &following).matches(&answer).count() >= RETRIES + 3,
    );
    assert!(
        !before_kill.contains("MasterLost"),
        "lost a live OpenSM:\n{before_kill}"
    );
    kill_other(&mut f, 0);
    let events = ours.wait_log("ours taking over from the dead OpenSM", |log| {
        after(log, "MasterLost").contains("to: Master")
    });
    let lost = format!("MasterLost {{ guid: {osm_guid}, stalled: false }}");
    assert!(
        after(&events, &following).contains(&lost),
        "the silent OpenSM is lost (not stalled) after being followed:\n{events}"
    );
    assert!(
        after(&events, &lost).contains("StateChanged { from: Standby, to: Discovering }"),
        "{events}"
    );
    // The probe of the dead Master's LID is not waited for: the decision comes from the
    // same input (the poll timer) that declared the Master lost.
    let lost_step = step_of(&events, &lost).expect("MasterLost logged");
    let master_step = step_of(&events, "to: Master").expect("Master logged");
    assert_eq!(
        lost_step, master_step,
        "decided Master only on a later input, after waiting for the dead Master's probe:\n{events}"
    );
    let (events, json) = ours.stop();
    assert_eq!(json_field(&json, "state"), "\"Master\"", "{json}");
    assert_eq!(
        json_u64(&json, "state_changes"),
        3,
        "Standby, Discovering, Master: {events}"
    );
}
