//! Peer test: the `ibsmd` daemon (examples/ibsmd.rs, built here as the `ibsmd` binary of
//! this package) brings ibsim fabrics up over the real umad transport under the umad2sim
//! preload, and infiniband-diags agree: `ibnetdiscover -p` shows a unique non-zero LID on
//! every port, `iblinkinfo` every link Active, `ibroute` an entry for every LID on every
//! switch, and `ibtracert` finds paths between CAs. With OpenSM on another node: a
//! lower-priority OpenSM hands over to ibsmd, and takes over again when ibsmd stops on
//! SIGTERM; ibsmd stands by for a higher-priority OpenSM and takes over when it dies.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ibsm_tests::{IBSIM, Ibsim, PRELOAD, peers_present, wait_for};
use ibsm_topology::generate;
use ibsm_topology::ibnet::{self, Dialect, WriteOptions};

const OPENSM: &str = "/usr/sbin/opensm";
const EXAMPLE_NET: &str = "/usr/share/doc/ibsim-utils/net-examples/net";
const DIAGS: [&str; 4] = [
    "/usr/sbin/ibnetdiscover",
    "/usr/sbin/iblinkinfo",
    "/usr/sbin/ibroute",
    "/usr/sbin/ibtracert",
];
const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

/// ibsim plus whatever else a test starts, all killed by PID when dropped.
struct Fabric {
    others: Vec<Child>,
    sim: Ibsim,
}

impl Drop for Fabric {
    fn drop(&mut self) {
        for mut c in self.others.drain(..) {
            let _ = c.kill();
            let _ = c.wait();
        }
        // `sim` (declared after) is dropped next: ibsim goes last.
    }
}

fn start_sim(tag: &str, net: &str) -> Fabric {
    Fabric {
        others: Vec::new(),
        sim: Ibsim::start(&format!("ibsm_ibsmd_{tag}"), net),
    }
}

/// A client command under the preload, attached to `host` (or ibsim's first node).
fn client(f: &Fabric, program: &str, host: Option<&str>, workdir: &str) -> Command {
    let dir = f.sim.dir.join(workdir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = Command::new(program);
    c.current_dir(dir)
        .env("IBSIM_SOCKNAME", &f.sim.sock)
        .env("LD_PRELOAD", PRELOAD)
        .stdin(Stdio::null());
    if let Some(h) = host {
        c.env("SIM_HOST", h);
    }
    c
}

/// Runs a command to completion within `limit`; returns (success, stdout, stderr).
fn run_bounded(mut cmd: Command, limit: Duration) -> (bool, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn client");
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.success(), out.join().unwrap(), err.join().unwrap())
}

fn diag(f: &Fabric, program: &str, args: &[&str]) -> String {
    let mut c = client(f, program, None, "diag");
    c.args(args);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "{program} {args:?} failed:\n{err}\n{out}");
    out
}

fn json_field<'a>(json: &'a str, key: &str) -> &'a str {
    let at = json
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("{key} missing in {json}"));
    let rest = &json[at + key.len() + 3..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    &rest[..end]
}

/// Endpoint of an `ibnetdiscover -p` line: (type, lid, port, guid).
fn endpoint(fields: &[&str]) -> Option<(String, u16, u8, u64)> {
    let lid = fields.get(1)?.parse().ok()?;
    let port = fields.get(2)?.parse().ok()?;
    let guid = u64::from_str_radix(fields.get(3)?.trim_start_matches("0x"), 16).ok()?;
    Some(((*fields.first()?).to_string(), lid, port, guid))
}

/// Checks a configured fabric with the diagnostics. `links` and `cas` are what the net
/// file holds; `sm_json` is ibsmd's summary.
fn verify_with_diags(f: &Fabric, links: usize, ca_ports: usize, switches: usize) {
    // Every connected port has a unique non-zero LID (a switch has one for all ports).
    let disc = diag(f, DIAGS[0], &["-p"]);
    let mut lid_of: BTreeMap<(u64, u8), u16> = BTreeMap::new();
    let mut linked_lines = 0;
    for line in disc.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        linked_lines += 1;
        for side in [left, right] {
            let fields: Vec<&str> = side.split_whitespace().collect();
            let (ty, lid, port, guid) =
                endpoint(&fields).unwrap_or_else(|| panic!("cannot parse {line:?}"));
            assert_ne!(lid, 0, "port without a LID: {line}");
            let key = (guid, if ty == "SW" { 0 } else { port });
            if let Some(old) = lid_of.insert(key, lid) {
                assert_eq!(old, lid, "{key:?} seen with two LIDs");
            }
        }
    }
    // Each link shows once from each side.
    assert_eq!(linked_lines, 2 * links, "{disc}");
    assert_eq!(lid_of.len(), ca_ports + switches, "{lid_of:?}");
    let lids: BTreeSet<u16> = lid_of.values().copied().collect();
    assert_eq!(lids.len(), lid_of.len(), "duplicate LIDs: {lid_of:?}");

    // Every link Active (iblinkinfo lists switch ports; each linked one must be Active).
    // Lines with a neighbour end in `"name" (...)`; unconnected ones in `"" ( )`.
    let li = diag(f, DIAGS[1], &[]);
    let mut active = 0;
    for line in li.lines().filter(|l| l.contains("==(")) {
        if !line.contains("\"\" (") {
            assert!(line.contains("Active/  LinkUp"), "link not Active: {line}");
            active += 1;
        }
    }
    // iblinkinfo shows every switch port with a link (plus CA views of some links).
    let sw_ends = disc
        .lines()
        .filter(|l| l.starts_with("SW") && l.contains(" - "))
        .count();
    assert!(active >= sw_ends, "{active} Active of {sw_ends}:\n{li}");

    // Every switch routes every LID.
    let switch_lids: BTreeSet<u16> = lid_of
        .iter()
        .filter(|((guid, port), _)| {
            *port == 0
                && disc
                    .lines()
                    .any(|l| l.starts_with("SW") && l.contains(&format!("{guid:#018x}")))
        })
        .map(|(_, l)| *l)
        .collect();
    assert_eq!(switch_lids.len(), switches);
    for sw in &switch_lids {
        let table = diag(f, DIAGS[2], &[&sw.to_string()]);
        for lid in &lids {
            let row = format!("{lid:#06x} ");
            assert!(
                table.lines().any(|l| l.starts_with(&row)),
                "switch {sw} has no route to LID {lid}:\n{table}"
            );
        }
    }

    // Paths between a few CA pairs.
    let ca_lids: Vec<u16> = lid_of
        .iter()
        .filter(|(_, l)| !switch_lids.contains(l))
        .map(|(_, l)| *l)
        .collect();
    assert_eq!(ca_lids.len(), ca_ports);
    let n = ca_lids.len();
    for (a, b) in [(0, n - 1), (n - 1, 0), (0, n / 2), (n / 3, 2 * n / 3)] {
        if a == b {
            continue;
        }
        let (s, d) = (ca_lids[a].to_string(), ca_lids[b].to_string());
        let out = diag(f, DIAGS[3], &[&s, &d]);
        assert!(
            out.contains("To ca") && out.contains(&format!("lid {d}")),
            "ibtracert {s} -> {d}:\n{out}"
        );
    }
}

fn peers() -> bool {
    let mut need = vec![IBSIM, OPENSM, PRELOAD, EXAMPLE_NET];
    need.extend(DIAGS);
    peers_present("ibsmd_ibsim", &need)
}

fn bring_up(f: &Fabric, host: Option<&str>, extra: &[&str]) -> String {
    let mut c = client(f, IBSMD, host, "sm");
    c.args(["--once", "--json", "--timeout", "30"]).args(extra);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "ibsmd --once failed:\n{err}\n{out}");
    assert!(err.contains("SUBNET UP"), "{err}");
    assert!(err.contains("MASTER"), "{err}");
    let json = out.lines().last().unwrap_or_default().to_string();
    assert_eq!(json_field(&json, "subnet_up"), "true", "{json}");
    assert_eq!(json_field(&json, "timeouts"), "0", "{json}");
    json
}

#[test]
fn ibsmd_brings_up_the_ibsim_example_net() {
    if !peers() {
        return;
    }
    let net = std::fs::read_to_string(EXAMPLE_NET).unwrap();
    let f = start_sim("ex", &net);
    let parsed = ibnet::parse(&net).expect("example net parses");
    let fab = &parsed.fabric;
    // The SM runs on ibsim's first node (a switch, management port 0).
    let json = bring_up(&f, None, &[]);
    assert_eq!(
        json_field(&json, "switches"),
        fab.switch_count().to_string(),
        "{json}"
    );
    let ca_ports = fab
        .links()
        .flat_map(|(_, l)| [l.a, l.b])
        .filter(|e| fab.node(e.node).is_some_and(|n| !n.is_switch()))
        .count();
    verify_with_diags(&f, fab.link_count(), ca_ports, fab.switch_count());
}

#[test]
fn ibsmd_brings_up_a_generated_fat_tree_with_updn_and_lmc() {
    if !peers() {
        return;
    }
    let fab = generate::fat_tree(8, 2).unwrap();
    let net = ibnet::write(
        &fab,
        &WriteOptions {
            dialect: Dialect::IbsimNet,
            title: Some("2-level radix-8 fat tree".into()),
        },
    )
    .unwrap();
    let f = start_sim("ft", &net);
    let (_, sm_ca) = fab.cas().next().unwrap();
    let json = bring_up(
        &f,
        Some(&sm_ca.description),
        &["--routing", "updn", "--lmc", "1"],
    );
    let cas = fab.cas().count();
    assert_eq!(
        json_field(&json, "nodes"),
        (cas + fab.switch_count()).to_string()
    );
    // LMC 1: two LIDs per CA port, one per switch.
    assert_eq!(
        json_field(&json, "lids"),
        (2 * cas + fab.switch_count()).to_string()
    );
    assert_eq!(json_field(&json, "routing"), "\"updn\"", "{json}");
    verify_with_diags(&f, fab.link_count(), cas, fab.switch_count());
}

const SMALL_NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Hca3\"[1]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\nHca\t1 \"Hca3\"\n[1]\t\"Sw1\"[3]\n";

/// Starts OpenSM with `priority` on Hca1 (polls 1 s x 2, sweeps every 2 s); returns its
/// index in `f.others`.
fn start_opensm(f: &mut Fabric, priority: u8) -> usize {
    let conf = f.sim.dir.join("osm.conf");
    let st = Command::new(OPENSM)
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("opensm -c");
    assert!(st.success() || conf.exists(), "opensm -c failed: {st}");
    let text = std::fs::read_to_string(&conf).unwrap();
    let edited: Vec<String> = text
        .lines()
        .map(|l| match l.split_whitespace().next().unwrap_or("") {
            "sm_priority" => format!("sm_priority {priority}"),
            "sminfo_polling_timeout" => "sminfo_polling_timeout 1000".into(),
            "polling_retry_number" => "polling_retry_number 2".into(),
            "sweep_interval" => "sweep_interval 2".into(),
            _ => l.to_string(),
        })
        .collect();
    std::fs::write(&conf, edited.join("\n")).unwrap();
    let out = std::fs::File::create(f.sim.dir.join("osm.out")).unwrap();
    let mut c = client(f, OPENSM, Some("Hca1"), "osm");
    c.arg("-F")
        .arg(&conf)
        .args(["-d2", "-f", "osm.log"])
        .env("OSM_TMP_DIR", ".")
        .env("OSM_CACHE_DIR", ".")
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    f.others.push(c.spawn().expect("start opensm"));
    wait_for(
        &f.sim.dir.join("osm/osm.log"),
        "SUBNET UP",
        Duration::from_secs(30),
    );
    f.others.len() - 1
}

/// Starts ibsmd as a daemon on Hca2 (stdout and stderr to files in `sm/`).
/// A daemon child killed (by PID) if the test fails before stopping it.
struct Daemon(Option<Child>);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn start_ibsmd(f: &Fabric, priority: u8) -> Daemon {
    let out = std::fs::File::create(f.sim.dir.join("ibsmd.out")).unwrap();
    let err = std::fs::File::create(f.sim.dir.join("ibsmd.err")).unwrap();
    let mut c = client(f, IBSMD, Some("Hca2"), "sm");
    c.args([
        "--priority",
        &priority.to_string(),
        "--polling-timeout",
        "500",
        "--polling-retries",
        "2",
        "--sweep-interval",
        "2",
        "--timeout",
        "60",
        "--json",
        "-v",
    ])
    .stdout(out)
    .stderr(err);
    Daemon(Some(c.spawn().expect("start ibsmd")))
}

/// SIGTERM by PID; ibsmd must stop cleanly (exit 0, JSON naming the signal).
fn stop_ibsmd(f: &Fabric, mut daemon: Daemon) -> String {
    let mut child = daemon.0.take().expect("running");
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ibsmd ignored SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(f.sim.dir.join("ibsmd.err")).unwrap_or_default();
    assert!(status.success(), "ibsmd exit {status}:\n{err}");
    assert!(err.contains("SIGTERM: stopping"), "{err}");
    let out = std::fs::read_to_string(f.sim.dir.join("ibsmd.out")).unwrap_or_default();
    let json = out.lines().last().unwrap_or_default().to_string();
    assert_eq!(json_field(&json, "signal"), "\"SIGTERM\"", "{json}");
    json
}

/// The lines of a log after the first occurrence of `mark`.
fn after<'a>(text: &'a str, mark: &str) -> &'a str {
    text.split_once(mark).map_or("", |(_, rest)| rest)
}

#[test]
fn ibsmd_takes_over_from_lower_priority_opensm_which_returns_when_ibsmd_stops() {
    if !peers() {
        return;
    }
    let mut f = start_sim("el_hi", SMALL_NET);
    start_opensm(&mut f, 0);
    let sm = start_ibsmd(&f, 10);
    let err_path = f.sim.dir.join("ibsmd.err");
    // OpenSM hands over; ours becomes Master and sweeps.
    let err = wait_for(&err_path, "SUBNET UP", Duration::from_secs(20));
    assert!(err.contains("MASTER"), "{err}");
    wait_for(
        &f.sim.dir.join("osm/osm.log"),
        "Entering STANDBY state",
        Duration::from_secs(10),
    );
    // Stay Master across a few of OpenSM's polls and our light sweeps.
    std::thread::sleep(Duration::from_secs(3));
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json_field(&json, "role"), "\"MASTER\"", "{json}");
    let osm = std::fs::read_to_string(f.sim.dir.join("osm/osm.log")).unwrap_or_default();
    assert!(
        !after(&osm, "Entering STANDBY state").contains("Entering MASTER state"),
        "OpenSM took mastership back while ours was alive:\n{osm}"
    );
    // OpenSM notices the silent master (1 s x 2 polls) and takes over again.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let osm = std::fs::read_to_string(f.sim.dir.join("osm/osm.log")).unwrap_or_default();
        let later = after(&osm, "Entering STANDBY state");
        if later.contains("Entering MASTER state") && later.contains("SUBNET UP") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "OpenSM did not take over after ibsmd stopped:\n{osm}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn ibsmd_stands_by_for_higher_priority_opensm_and_takes_over_when_it_is_killed() {
    if !peers() {
        return;
    }
    let mut f = start_sim("el_lo", SMALL_NET);
    let osm = start_opensm(&mut f, 10);
    let sm = start_ibsmd(&f, 0);
    let err_path = f.sim.dir.join("ibsmd.err");
    wait_for(&err_path, "STANDBY", Duration::from_secs(25));
    // Following, not configuring, for a few polls.
    std::thread::sleep(Duration::from_secs(2));
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(!err.contains("MASTER"), "{err}");
    let mut o = f.others.remove(osm);
    let _ = o.kill();
    let _ = o.wait();
    let killed = Instant::now();
    let err = wait_for(&err_path, "SUBNET UP", Duration::from_secs(15));
    let took = killed.elapsed();
    assert!(after(&err, "STANDBY").contains("MASTER"), "{err}");
    // 500 ms x 2 polls, plus the sweep.
    assert!(
        took < Duration::from_secs(6),
        "took over after {took:?}:\n{err}"
    );
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json_field(&json, "role"), "\"MASTER\"", "{json}");
    assert_eq!(json_field(&json, "subnet_up"), "true", "{json}");
}
