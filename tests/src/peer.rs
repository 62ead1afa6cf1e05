// Over 800 lines: one harness (the ibsim, its processes, the diags that judge them) shared by every peer test.
//! Running SMs and infiniband-diags against one ibsim, and checking what they configured.
//!
//! Shared by the `ibsmd` peer tests: [`PeerFabric`] owns an ibsim and every process a test
//! starts on it (all killed by PID when dropped); [`client`] builds a command under the
//! umad2sim preload; [`verify_with_diags`] checks a configured fabric with the real
//! diagnostics and walks the dumped forwarding tables offline.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ibsm_topology::Fabric;
use ibsm_topology::ibnet::{self, Dialect, WriteOptions};

use crate::{Ibsim, PRELOAD, wait_for};

/// OpenSM.
pub const OPENSM: &str = "/usr/sbin/opensm";
/// ibsim's example net file.
pub const EXAMPLE_NET: &str = "/usr/share/doc/ibsim-utils/net-examples/net";
/// `ibnetdiscover`, `iblinkinfo`, `ibroute`, `ibtracert`.
pub const DIAGS: [&str; 4] = [
    "/usr/sbin/ibnetdiscover",
    "/usr/sbin/iblinkinfo",
    "/usr/sbin/ibroute",
    "/usr/sbin/ibtracert",
];

/// Everything the `ibsmd` peer tests need on the machine.
#[must_use]
pub fn needed() -> Vec<&'static str> {
    let mut need = vec![crate::IBSIM, OPENSM, PRELOAD, EXAMPLE_NET];
    need.extend(DIAGS);
    need
}

/// A generated topology in ibsim's net-file dialect.
///
/// # Panics
/// When the writer refuses the topology.
#[must_use]
pub fn net_file(topo: &Fabric, title: &str) -> String {
    ibnet::write(
        topo,
        &WriteOptions {
            dialect: Dialect::IbsimNet,
            title: Some(title.into()),
        },
    )
    .expect("ibsim net file")
}

/// ibsim plus whatever else a test starts, all killed by PID when dropped.
#[derive(Debug)]
pub struct PeerFabric {
    /// Other processes (OpenSM, ...), killed before ibsim.
    pub others: Vec<Child>,
    /// The simulator.
    pub sim: Ibsim,
}

impl Drop for PeerFabric {
    fn drop(&mut self) {
        for mut c in self.others.drain(..) {
            // SIGKILL: OpenSM ignores SIGTERM when ibsim is gone.
            let _ = c.kill();
            let _ = c.wait();
        }
        // `sim` (declared after) is dropped next: ibsim goes last.
    }
}

impl PeerFabric {
    /// Starts ibsim on `net` in a directory named after `tag`.
    #[must_use]
    pub fn start(tag: &str, net: &str) -> Self {
        Self {
            others: Vec::new(),
            sim: Ibsim::start(&format!("ibsm_ibsmd_{tag}"), net),
        }
    }

    /// Starts ibsim on `net` sized for `topo` (the fabric `net` was written from:
    /// [`crate::ibsim_size_args`]), in a directory named after `tag`, waiting up to 60 s
    /// for it to be ready (the 11,664-CA tree's net file takes ibsim seconds to read).
    #[must_use]
    pub fn start_sized(tag: &str, net: &str, topo: &Fabric) -> Self {
        Self {
            others: Vec::new(),
            sim: Ibsim::start_with(
                &format!("ibsm_ibsmd_{tag}"),
                net,
                &crate::ibsim_size_args(topo),
                Duration::from_secs(60),
            ),
        }
    }

    /// What a client of this fabric needs, apart from the fabric: for threads that
    /// start clients while the test holds the [`PeerFabric`].
    #[must_use]
    pub fn client_env(&self) -> ClientEnv {
        ClientEnv {
            sock: self.sim.sock.clone(),
            dir: self.sim.dir.clone(),
        }
    }

    /// A path in the fabric's working directory.
    #[must_use]
    pub fn path(&self, name: &str) -> PathBuf {
        self.sim.dir.join(name)
    }

    /// The text of a file in the working directory (empty if missing).
    #[must_use]
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }
}

/// A client command under the preload, attached to `host` (or ibsim's first node), run
/// in the subdirectory `workdir`.
///
/// # Panics
/// When the directory cannot be created.
#[must_use]
pub fn client(f: &PeerFabric, program: &str, host: Option<&str>, workdir: &str) -> Command {
    f.client_env().command(program, host, workdir)
}

/// An ibsim's socket name and working directory: all [`client`] needs, owned, so a
/// thread can start clients of a fabric it does not hold.
#[derive(Debug, Clone)]
pub struct ClientEnv {
    /// ibsim's `IBSIM_SOCKNAME`.
    pub sock: String,
    /// ibsim's working directory.
    pub dir: PathBuf,
}

impl ClientEnv {
    /// As [`client`].
    ///
    /// # Panics
    /// When the directory cannot be created.
    #[must_use]
    pub fn command(&self, program: &str, host: Option<&str>, workdir: &str) -> Command {
        let dir = self.dir.join(workdir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = Command::new(program);
        c.current_dir(dir)
            .env("IBSIM_SOCKNAME", &self.sock)
            .env("LD_PRELOAD", PRELOAD)
            .stdin(Stdio::null());
        if let Some(h) = host {
            c.env("SIM_HOST", h);
        }
        c
    }
}

/// A child whose stdout and stderr are collected by two threads while it runs.
#[derive(Debug)]
pub struct Captured {
    child: Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
}

impl Captured {
    /// Starts `cmd` with both outputs piped and collected.
    ///
    /// # Panics
    /// When it cannot start.
    #[must_use]
    pub fn spawn(cmd: &mut Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
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
        Captured { child, out, err }
    }

    /// Waits up to `limit` for the exit; returns (status, stdout, stderr).
    ///
    /// # Panics
    /// When it does not finish in time (it is killed first).
    pub fn finish(mut self, limit: Duration, what: &str) -> (ExitStatus, String, String) {
        let status = wait_within(&mut self.child, limit)
            .unwrap_or_else(|| panic!("{what} did not finish within {limit:?}"));
        (status, self.out.join().unwrap(), self.err.join().unwrap())
    }
}

/// Waits up to `limit` for `child` to exit; kills it (by PID) and returns `None` if it
/// does not.
pub fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a command to completion within `limit`; returns (success, stdout, stderr).
///
/// # Panics
/// When it cannot start or does not finish in time (it is killed first).
pub fn run_bounded(mut cmd: Command, limit: Duration) -> (bool, String, String) {
    let what = format!("{cmd:?}");
    let (status, out, err) = Captured::spawn(&mut cmd).finish(limit, &what);
    (status.success(), out, err)
}

/// Runs a diagnostic (attached to ibsim's first node) and returns its stdout.
///
/// # Panics
/// When it fails.
#[must_use]
pub fn diag(f: &PeerFabric, program: &str, args: &[&str]) -> String {
    run_diag(client(f, program, None, "diag"), program, args)
}

/// [`diag`] attached at ibsim's node `host`.
///
/// # Panics
/// When it fails.
#[must_use]
pub fn diag_at(f: &PeerFabric, host: &str, program: &str, args: &[&str]) -> String {
    run_diag(client(f, program, Some(host), "q"), program, args)
}

fn run_diag(mut c: Command, program: &str, args: &[&str]) -> String {
    c.args(args);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "{program} {args:?} failed:\n{err}\n{out}");
    out
}

/// The number after `key` and its dots (or colon) on the first line of a diagnostic's
/// output that starts with it (`smpquery`'s `Lid:.....3`, `saquery`'s
/// `\t\tdlid.....12`; hex with `0x`); `None` when no line has it or it is not a
/// number.
#[must_use]
pub fn try_dotted_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().map(str::trim).find(|l| l.starts_with(key))?;
    let v = line[key.len()..].trim_start_matches(['.', ':']).trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// [`try_dotted_field`] where the field must be there.
///
/// # Panics
/// When no line has it or it is not a number.
#[must_use]
pub fn dotted_field(text: &str, key: &str) -> u64 {
    try_dotted_field(text, key).unwrap_or_else(|| panic!("{key} not a number in:\n{text}"))
}

/// The raw value of `key` in a one-line JSON object (strings keep their quotes), for
/// the small hand-written JSON of the test peers; ibsmd's summary goes through
/// [`summary`].
///
/// # Panics
/// When the key is missing.
#[must_use]
pub fn json_field<'a>(json: &'a str, key: &str) -> &'a str {
    let at = json
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("{key} missing in {json}"));
    let rest = &json[at + key.len() + 3..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    &rest[..end]
}

/// ibsmd's `--json` summary: the last line of its stdout, parsed.
///
/// # Panics
/// When that line is not a JSON object.
#[must_use]
pub fn summary(stdout: &str) -> serde_json::Value {
    let line = stdout.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("ibsmd's summary is not JSON ({e}):\n{stdout}"));
    assert!(v.is_object(), "ibsmd's summary is not an object: {line}");
    v
}

/// The lines of a log after the first occurrence of `mark`.
#[must_use]
pub fn after<'a>(text: &'a str, mark: &str) -> &'a str {
    text.split_once(mark).map_or("", |(_, rest)| rest)
}

/// Endpoint of an `ibnetdiscover -p` line: (type, lid, port, guid).
fn endpoint(fields: &[&str]) -> Option<(String, u16, u8, u64)> {
    let lid = fields.get(1)?.parse().ok()?;
    let port = fields.get(2)?.parse().ok()?;
    let guid = u64::from_str_radix(fields.get(3)?.trim_start_matches("0x"), 16).ok()?;
    Some(((*fields.first()?).to_string(), lid, port, guid))
}

/// What the diagnostics saw on a verified fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Base LID of every port with a link: `(node GUID, port)`, port 0 for switches.
    pub lids: BTreeMap<(u64, u8), u16>,
    /// Switch node GUIDs.
    pub switches: BTreeSet<u64>,
    /// Cables as seen by `ibnetdiscover -p`: `(guid, port) -> (guid, port)`, both ways.
    pub links: BTreeMap<(u64, u8), (u64, u8)>,
    /// Each switch's LFT as dumped by `ibroute`: switch GUID -> (LID -> port).
    pub lfts: BTreeMap<u64, BTreeMap<u16, u8>>,
}

impl Verified {
    /// The entries of switch `guid`'s LFT that leave through `port`.
    #[must_use]
    pub fn lft_uses(&self, guid: u64, port: u8) -> usize {
        self.lfts
            .get(&guid)
            .map_or(0, |lft| lft.values().filter(|&&p| p == port).count())
    }

    /// The switch port on the far side of a cable from `(guid, port)`, if any.
    #[must_use]
    pub fn peer(&self, guid: u64, port: u8) -> Option<(u64, u8)> {
        self.links.get(&(guid, port)).copied()
    }
}

/// Reads an `ibroute` dump: `0x0003 006 : (...)` lines.
fn parse_lft(table: &str) -> BTreeMap<u16, u8> {
    table
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let lid = u16::from_str_radix(it.next()?.strip_prefix("0x")?, 16).ok()?;
            let port = it.next()?.parse().ok()?;
            (it.next()? == ":").then_some((lid, port))
        })
        .collect()
}

/// LinearFDBTop from an `ibroute` header: `Unicast lids [0x0-0x40] of switch ...`.
fn lft_top(table: &str) -> u16 {
    table
        .lines()
        .find_map(|l| {
            let range = l.strip_prefix("Unicast lids [")?.split(']').next()?;
            let top = range.split('-').nth(1)?;
            u16::from_str_radix(top.strip_prefix("0x")?, 16).ok()
        })
        .unwrap_or_else(|| panic!("no LID range in ibroute's output:\n{table}"))
}

/// The output port of the first hop in an `ibtracert` answer: the line `[8] -> ...`.
fn first_hop(trace: &str) -> u8 {
    trace
        .lines()
        .find_map(|l| l.strip_prefix('[')?.split_once("] ->")?.0.parse().ok())
        .unwrap_or_else(|| panic!("no first hop in ibtracert's output:\n{trace}"))
}

/// Checks a configured fabric with the diagnostics: `links` cables, `ca_ports` CA ports
/// and `switches` switches are up, every port has a unique LID (CA ports own `2^lmc`
/// LIDs), every link is Active, every switch's LFT (`ibroute`) has every LID and only
/// ports with a live cable (or 0 for its own LID), `ibtracert` succeeds for sampled CA
/// pairs, and an offline walk of the dumped LFTs reaches every LID from every CA.
///
/// # Panics
/// On the first check that fails, with the diagnostic's output.
pub fn verify_with_diags(
    f: &PeerFabric,
    links: usize,
    ca_ports: usize,
    switches: usize,
    lmc: u8,
) -> Verified {
    // Every connected port has a unique non-zero LID (a switch has one for all ports).
    let disc = diag(f, DIAGS[0], &["-p"]);
    let mut lid_of: BTreeMap<(u64, u8), u16> = BTreeMap::new();
    let mut cables = BTreeMap::new();
    let mut sw_guids = BTreeSet::new();
    let mut linked_lines = 0;
    for line in disc.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        linked_lines += 1;
        let mut ends = Vec::new();
        for side in [left, right] {
            let fields: Vec<&str> = side.split_whitespace().collect();
            let (ty, lid, port, guid) =
                endpoint(&fields).unwrap_or_else(|| panic!("cannot parse {line:?}"));
            assert_ne!(lid, 0, "port without a LID: {line}");
            if ty == "SW" {
                sw_guids.insert(guid);
            }
            let key = (guid, if ty == "SW" { 0 } else { port });
            if let Some(old) = lid_of.insert(key, lid) {
                assert_eq!(old, lid, "{key:?} seen with two LIDs");
            }
            ends.push((guid, port));
        }
        cables.insert(ends[0], ends[1]);
        cables.insert(ends[1], ends[0]);
    }
    // Each link shows once from each side.
    assert_eq!(linked_lines, 2 * links, "{disc}");
    assert_eq!(cables.len(), 2 * links, "{disc}");
    assert_eq!(lid_of.len(), ca_ports + switches, "{lid_of:?}");
    assert_eq!(sw_guids.len(), switches, "{disc}");
    // Every LID in use: a switch's one, a CA port's 2^lmc.
    let mut owner: BTreeMap<u16, (u64, u8)> = BTreeMap::new();
    for (&key, &base) in &lid_of {
        let span = if key.1 == 0 { 1 } else { 1u16 << lmc };
        assert_eq!(
            base % span,
            0,
            "{key:?}: LID {base} not aligned to LMC {lmc}"
        );
        for lid in base..base + span {
            if let Some(other) = owner.insert(lid, key) {
                panic!("LID {lid} used by {other:?} and {key:?}");
            }
        }
    }

    // Every link Active (iblinkinfo lists switch ports; each linked one must be Active).
    // Lines with a neighbour end in `"name" (...)`; unconnected ones in `"" ( )`, and a
    // port disabled by the SM (which ibsim leaves in its LinkState) in `/Disabled)==>
    // "Port not available"`.
    let li = diag(f, DIAGS[1], &[]);
    let mut active = 0;
    for line in li.lines().filter(|l| l.contains("==(")) {
        if !line.contains("\"\" (") && !line.contains("/Disabled)") {
            assert!(line.contains("Active/  LinkUp"), "link not Active: {line}");
            active += 1;
        }
    }
    // iblinkinfo shows every switch port with a link (plus CA views of some links).
    let sw_ends = cables.keys().filter(|(g, _)| sw_guids.contains(g)).count();
    assert!(active >= sw_ends, "{active} Active of {sw_ends}:\n{li}");

    // Every switch routes every LID, through a port with a live cable (0: itself).
    let mut lfts = BTreeMap::new();
    for &sw in &sw_guids {
        let lid = lid_of[&(sw, 0)];
        let table = diag(f, DIAGS[2], &[&lid.to_string()]);
        let mut lft = parse_lft(&table);
        // ibroute (infiniband-diags 5x) never prints the entry of LinearFDBTop when that
        // is a multiple of 64 (seen with OpenSM's tables too: "63 valid lids dumped" for
        // LIDs 1..=64). Ask ibtracert for that one LID: its first hop is the LFT entry.
        let top = lft_top(&table);
        if top.is_multiple_of(64) && owner.contains_key(&top) && !lft.contains_key(&top) {
            let port = if owner[&top] == (sw, 0) {
                0
            } else {
                first_hop(&diag(f, DIAGS[3], &[&lid.to_string(), &top.to_string()]))
            };
            lft.insert(top, port);
        }
        for (&dlid, &who) in &owner {
            let port = *lft
                .get(&dlid)
                .unwrap_or_else(|| panic!("switch {sw:#x} has no route to LID {dlid}:\n{table}"));
            if port == 0 {
                assert_eq!(who, (sw, 0), "switch {sw:#x} keeps LID {dlid} of {who:?}");
            } else {
                assert!(
                    cables.contains_key(&(sw, port)),
                    "switch {sw:#x} routes LID {dlid} to port {port}, which has no live cable:\n{table}"
                );
            }
        }
        lfts.insert(sw, lft);
    }

    // Offline: from every CA port, follow the LFTs to every LID.
    let ca_keys: Vec<(u64, u8)> = lid_of.keys().copied().filter(|k| k.1 != 0).collect();
    assert_eq!(ca_keys.len(), ca_ports);
    for &src in &ca_keys {
        let first = cables[&src];
        for (&dlid, &dst) in &owner {
            if dst == src {
                continue;
            }
            let (mut at, mut hops) = (first, 0);
            loop {
                assert!(
                    sw_guids.contains(&at.0),
                    "{src:?} -> {dlid}: reached CA {at:?}"
                );
                hops += 1;
                assert!(hops <= 64, "{src:?} -> LID {dlid}: loop");
                let out = lfts[&at.0][&dlid];
                if out == 0 {
                    assert_eq!(dst, (at.0, 0), "{src:?} -> LID {dlid} ends at {at:?}");
                    break;
                }
                let next = cables[&(at.0, out)];
                if !sw_guids.contains(&next.0) {
                    assert_eq!(next, dst, "{src:?} -> LID {dlid} delivered to {next:?}");
                    break;
                }
                at = next;
            }
        }
    }

    // Paths between a few CA pairs, by the real tracer.
    let ca_lids: Vec<u16> = ca_keys.iter().map(|k| lid_of[k]).collect();
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
    Verified {
        lids: lid_of,
        switches: sw_guids,
        links: cables,
        lfts,
    }
}

/// Verifies a fabric built from `topo` (every cable up).
///
/// # Panics
/// See [`verify_with_diags`].
pub fn verify_topology(f: &PeerFabric, topo: &Fabric, lmc: u8) -> Verified {
    verify_with_diags(
        f,
        topo.link_count(),
        ca_ports(topo),
        topo.switch_count(),
        lmc,
    )
}

/// CA ports with a cable in `topo`.
#[must_use]
pub fn ca_ports(topo: &Fabric) -> usize {
    topo.links()
        .flat_map(|(_, l)| [l.a, l.b])
        .filter(|e| topo.node(e.node).is_some_and(|n| !n.is_switch()))
        .count()
}

/// `ibsmd --once --json` on `host` with `extra` flags; asserts SUBNET UP, MASTER and no
/// timeouts, and returns the JSON summary (parsed).
///
/// # Panics
/// When ibsmd fails.
#[must_use]
pub fn bring_up(
    f: &PeerFabric,
    ibsmd: &str,
    host: Option<&str>,
    extra: &[&str],
) -> serde_json::Value {
    let mut c = client(f, ibsmd, host, "sm");
    c.args(["--once", "--json", "--time-limit", "30"])
        .args(extra);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "ibsmd --once failed:\n{err}\n{out}");
    assert!(err.contains("SUBNET UP"), "{err}");
    assert!(err.contains("MASTER"), "{err}");
    let json = summary(&out);
    assert_eq!(json["subnet_up"], true, "{json}");
    assert_eq!(json["timeouts"], 0, "{json}");
    assert_eq!(json["routing_failures"], 0, "{json}");
    json
}

/// Starts OpenSM on `host` with `priority` (polls 1 s x 2, sweeps every 2 s) and
/// `extra` lines of configuration (`key value`, replacing the default), logging to
/// `osm/osm.log`, and waits for SUBNET UP. Returns its index in `f.others`.
///
/// # Panics
/// When OpenSM does not start or bring the subnet up within 30 s.
pub fn start_opensm(f: &mut PeerFabric, host: &str, priority: u8, extra: &[(&str, &str)]) -> usize {
    let conf = f.path("osm.conf");
    let st = Command::new(OPENSM)
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("opensm -c");
    assert!(st.success() || conf.exists(), "opensm -c failed: {st}");
    let text = std::fs::read_to_string(&conf).unwrap();
    let mut set: Vec<(&str, String)> = vec![
        ("sm_priority", priority.to_string()),
        ("sminfo_polling_timeout", "1000".into()),
        ("polling_retry_number", "2".into()),
        ("sweep_interval", "2".into()),
    ];
    set.extend(extra.iter().map(|(k, v)| (*k, (*v).to_string())));
    let edited: Vec<String> = text
        .lines()
        .map(|l| {
            let key = l.split_whitespace().next().unwrap_or("");
            set.iter()
                .find(|(k, _)| *k == key)
                .map_or_else(|| l.to_string(), |(k, v)| format!("{k} {v}"))
        })
        .collect();
    for (k, _) in &set {
        assert!(
            edited.iter().any(|l| l.starts_with(&format!("{k} "))),
            "{k} not in OpenSM's default config"
        );
    }
    std::fs::write(&conf, edited.join("\n")).unwrap();
    let out = std::fs::File::create(f.path("osm.out")).unwrap();
    let mut c = client(f, OPENSM, Some(host), "osm");
    c.arg("-F")
        .arg(&conf)
        .args(["-d2", "-f", "osm.log"])
        .env("OSM_TMP_DIR", ".")
        .env("OSM_CACHE_DIR", ".")
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    f.others.push(c.spawn().expect("start opensm"));
    wait_for(&f.path("osm/osm.log"), "SUBNET UP", Duration::from_secs(30));
    f.others.len() - 1
}

/// Kills `f.others[index]` by PID (SIGKILL) and reaps it.
pub fn kill_other(f: &mut PeerFabric, index: usize) {
    let mut o = f.others.remove(index);
    let _ = o.kill();
    let _ = o.wait();
}

/// A daemon child killed (by PID) if the test fails before stopping it.
#[derive(Debug)]
pub struct Daemon(pub Option<Child>);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The first cable of `topo` between two switches (the one the peer tests pull).
///
/// # Panics
/// When `topo` has none.
#[must_use]
pub fn switch_link(topo: &ibsm_topology::Fabric) -> ibsm_topology::Link {
    let (_, link) = topo
        .links()
        .find(|(_, l)| {
            [l.a, l.b].iter().all(|e| {
                topo.node(e.node)
                    .is_some_and(ibsm_topology::Node::is_switch)
            })
        })
        .expect("a switch-to-switch cable");
    *link
}

/// Waits until ibsmd (started by [`start_ibsmd`]) has reported more than `ups` SUBNET
/// UPs in `ibsmd.err` and then a light sweep that found nothing to do (the fabric is
/// settled); returns the new SUBNET UP count.
///
/// # Panics
/// When that does not happen within `limit`, with the log.
pub fn wait_settled(f: &PeerFabric, ups: usize, limit: Duration) -> usize {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let err = f.read("ibsmd.err");
        let now = err.matches("SUBNET UP").count();
        let settled = err
            .rfind("SUBNET UP")
            .is_some_and(|last| err[last..].contains("light sweep: nothing to do"));
        if now > ups && settled {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "ibsmd did not settle after {ups} SUBNET UPs within {limit:?}:\n{err}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts ibsmd as a daemon on `host` with `priority` (polls 500 ms x 2, light sweep
/// every 2 s, `-v --json`) plus `extra` flags (later flags win); stdout and stderr go to
/// `ibsmd.out` and `ibsmd.err`.
///
/// # Panics
/// When it cannot be started.
#[must_use]
pub fn start_ibsmd(
    f: &PeerFabric,
    ibsmd: &str,
    host: &str,
    priority: u8,
    extra: &[&str],
) -> Daemon {
    let out = std::fs::File::create(f.path("ibsmd.out")).unwrap();
    let err = std::fs::File::create(f.path("ibsmd.err")).unwrap();
    let mut c = client(f, ibsmd, Some(host), "sm");
    c.args([
        "--priority",
        &priority.to_string(),
        "--polling-timeout",
        "500",
        "--polling-retries",
        "2",
        "--sweep-interval",
        "2",
        "--time-limit",
        "60",
        "--json",
        "-v",
    ])
    .args(extra)
    .stdout(out)
    .stderr(err);
    Daemon(Some(c.spawn().expect("start ibsmd")))
}

/// SIGTERM by PID; ibsmd must stop cleanly (exit 0, JSON naming the signal). Returns the
/// JSON summary.
///
/// # Panics
/// When it does not stop within 10 s or stops uncleanly.
#[must_use]
pub fn stop_ibsmd(f: &PeerFabric, mut daemon: Daemon) -> serde_json::Value {
    let mut child = daemon.0.take().expect("running");
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
    let status = wait_within(&mut child, Duration::from_secs(10)).expect("ibsmd ignored SIGTERM");
    let err = f.read("ibsmd.err");
    assert!(status.success(), "ibsmd exit {status}:\n{err}");
    assert!(err.contains("SIGTERM: stopping"), "{err}");
    let json = summary(&f.read("ibsmd.out"));
    assert_eq!(json["signal"], "SIGTERM", "{json}");
    json
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_fields_of_smpquery_and_saquery() {
        let smp = "# Port info: Lid 3 port 1\nLid:.............................3\nSMLid:...........................0x1\n";
        assert_eq!(try_dotted_field(smp, "Lid"), Some(3));
        assert_eq!(dotted_field(smp, "SMLid"), 1);
        let sa =
            "PathRecord dump:\n\t\tdlid....................12\n\t\tslid....................0xA\n";
        assert_eq!(try_dotted_field(sa, "dlid"), Some(12));
        assert_eq!(try_dotted_field(sa, "slid"), Some(10));
        assert_eq!(try_dotted_field(sa, "pkey"), None);
        assert_eq!(try_dotted_field("dlid....busy", "dlid"), None);
    }
}
