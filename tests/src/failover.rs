//! One failover on ibsim, as a client sees it: two SMs (two `ibsmd`, or two OpenSM) on
//! two CAs of one fabric, the master killed with SIGKILL, and `sminfo` run from a third
//! CA until it names the standby as MASTER; the LIDs of every port before and after.
//!
//! Shared by the measurement binary (`tests/src/bin/failover_bench.rs`, which times it;
//! see `tests/FAILOVER.md`) and the ibsmd peer test (`crates/ibsmd/tests/failover_ibsim.rs`,
//! which only checks the outcome). Nothing here asserts how long a step took: a step that
//! does not come within a generous limit is an error, and the times are data.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::peer::{OPENSM, PeerFabric, client};

/// `sminfo` (infiniband-diags).
pub const SMINFO: &str = "/usr/sbin/sminfo";
/// `ibnetdiscover` (infiniband-diags), for the LIDs of every port.
pub const IBNETDISCOVER: &str = "/usr/sbin/ibnetdiscover";

/// Limit for each awaited step (an SM coming up, standing by, taking over): only a step
/// that never comes reaches it.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A port: (node GUID for a switch, port GUID for a CA; port number, 0 for a switch).
pub type PortKey = (u64, u8);
/// Every port's LID.
pub type Lids = BTreeMap<PortKey, u16>;
/// A port whose LID changed: the port, its LID before and after (`None`: not seen).
pub type Moved = (PortKey, Option<u16>, Option<u16>);

/// Which SM implementation a run uses for both SMs of the pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `ibsmd` at this path.
    Ibsmd(PathBuf),
    /// OpenSM (`/usr/sbin/opensm`).
    OpenSm,
}

impl Kind {
    /// A short name for reports.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ibsmd(_) => "ibsmd",
            Self::OpenSm => "opensm",
        }
    }

    /// The log line marks of the standby's takeover, in order: (label, text). The
    /// first line with each text after the kill dates that step.
    fn marks(&self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Ibsmd(_) => &[
                ("detect", "DISCOVERING ("),
                ("master", "MASTER ("),
                ("up", "SUBNET UP"),
            ],
            Self::OpenSm => &[
                ("detect", "Entering DISCOVERING state"),
                ("master", "Entering MASTER state"),
                ("up", "SUBNET UP"),
            ],
        }
    }
}

/// The settings of a failover run.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Which SMs.
    pub kind: Kind,
    /// The standby's poll period (`--polling-timeout`, `sminfo_polling_timeout`).
    pub polling_timeout: Duration,
    /// OpenSM's `polling_retry_number` (`--polling-retries`): OpenSM 3.3 declares the
    /// master dead after this many + 1 unanswered polls, and so does ibsmd by default.
    pub polling_retries: u32,
    /// ibsmd only: `--polling-retries-as-failures`, `polling_retries` read as
    /// opensm.conf words it (that many failed polls, one fewer than OpenSM 3.3 waits
    /// for). OpenSM is not told anything different.
    pub polling_retries_as_failures: bool,
    /// Periodic sweep interval of both SMs, seconds.
    pub sweep_interval: u32,
    /// Node description of the master's CA, the standby's and the client's.
    pub hosts: [String; 3],
    /// Time the pair runs undisturbed once the standby stands by, before the kill.
    pub settle: Duration,
    /// A further wait just before the kill (after the LIDs are read): the bench spreads
    /// it over one polling period so the kills fall at every phase of the standby's
    /// polls, the same phases for both implementations.
    pub kill_delay: Duration,
    /// How long one `sminfo` may take before it is killed and started again (under
    /// umad2sim a request to a dead SM never times out).
    pub sminfo_limit: Duration,
}

/// What one failover showed.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Kill to the exit of the first `sminfo` that named the standby as MASTER.
    pub seen: Duration,
    /// Every `sminfo` run until then: start and end (ms after the kill), its output.
    pub sminfo_runs: Vec<String>,
    /// Each log mark of the standby ([`Kind`]'s marks) relative to the kill, when seen.
    pub marks: Vec<(&'static str, Option<f64>)>,
    /// The standby's port GUID.
    pub standby_guid: u64,
    /// LIDs of every port before the kill.
    pub lids_before: Lids,
    /// LIDs of every port after the new master's SUBNET UP.
    pub lids_after: Lids,
    /// The 1-minute load average at the kill.
    pub load: f64,
    /// The run's [`Setup::kill_delay`].
    pub kill_delay: Duration,
}

impl Outcome {
    /// Ports whose LID differs (or that are missing on one side): (port, before, after).
    #[must_use]
    pub fn moved_lids(&self) -> Vec<Moved> {
        let keys: std::collections::BTreeSet<_> = self
            .lids_before
            .keys()
            .chain(self.lids_after.keys())
            .copied()
            .collect();
        keys.into_iter()
            .filter_map(|k| {
                let (b, a) = (
                    self.lids_before.get(&k).copied(),
                    self.lids_after.get(&k).copied(),
                );
                (b != a).then_some((k, b, a))
            })
            .collect()
    }

    /// A mark's time after the kill, seconds.
    #[must_use]
    pub fn mark(&self, label: &str) -> Option<f64> {
        self.marks
            .iter()
            .find(|(l, _)| *l == label)
            .and_then(|m| m.1)
    }
}

/// A started SM, killed (by PID) when dropped.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Seconds since midnight UTC (the clock of [`line_time`]).
#[must_use]
pub fn now_tod() -> f64 {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    t.as_secs_f64() % 86_400.0
}

/// The time of day (seconds since midnight) a log line starts with: ibsmd's
/// `2026-12-01T15:18:50.801418Z ...` or OpenSM's `Dec 01 15:18:50 771918 [...]`
/// (OpenSM writes local time: the runs set `TZ=UTC` for it).
#[must_use]
pub fn line_time(line: &str) -> Option<f64> {
    let hms = |s: &str| -> Option<f64> {
        let mut it = s.split(':');
        let h: f64 = it.next()?.parse().ok()?;
        let m: f64 = it.next()?.parse().ok()?;
        let sec: f64 = it.next()?.parse().ok()?;
        Some(h * 3600.0 + m * 60.0 + sec)
    };
    let first = line.split_whitespace().next()?;
    if let Some((_, t)) = first.split_once('T') {
        return hms(t.trim_end_matches('Z'));
    }
    let f: Vec<&str> = line.split_whitespace().take(4).collect();
    if f.len() == 4 && f[3].len() == 6 {
        let us: f64 = f[3].parse().ok()?;
        return Some(hms(f[2])? + us / 1e6);
    }
    None
}

/// `t` relative to `since` (both times of day), wrapped into ±12 h.
#[must_use]
pub fn rel(t: f64, since: f64) -> f64 {
    let mut d = t - since;
    if d > 43_200.0 {
        d -= 86_400.0;
    } else if d < -43_200.0 {
        d += 86_400.0;
    }
    d
}

/// The first line after `since` (time of day) containing each mark, relative to `since`.
fn find_marks(
    text: &str,
    since: f64,
    marks: &[(&'static str, &'static str)],
) -> Vec<(&'static str, Option<f64>)> {
    marks
        .iter()
        .map(|(label, needle)| {
            let at = text
                .lines()
                .filter(|l| l.contains(needle))
                .filter_map(line_time)
                .map(|t| rel(t, since))
                .find(|d| *d >= 0.0);
            (*label, at)
        })
        .collect()
}

/// Waits until `ok` accepts the text of `path` (a log), reading it every 20 ms; returns
/// that text.
///
/// # Errors
/// When `limit` passes first: names `what` and shows the last 30 lines.
pub fn wait_text(
    path: &Path,
    what: &str,
    limit: Duration,
    ok: impl Fn(&str) -> bool,
) -> Result<String, String> {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if ok(&text) {
            return Ok(text);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{what}: not within {limit:?}; {}:\n{}",
                path.display(),
                crate::tail(&text, 30)
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The text after the last occurrence of `mark` (empty when absent).
fn after_last<'a>(text: &'a str, mark: &str) -> &'a str {
    text.rfind(mark).map_or("", |i| &text[i + mark.len()..])
}

/// The 1-minute load average.
#[must_use]
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Every port's LID and every CA's port GUID by node description, as `ibnetdiscover -p`
/// run from `host` sees them (switches under port 0).
///
/// # Errors
/// When ibnetdiscover fails or prints nothing parseable.
pub fn port_lids(f: &PeerFabric, host: &str) -> Result<(Lids, BTreeMap<String, u64>), String> {
    let mut c = client(f, IBNETDISCOVER, Some(host), "disc");
    c.arg("-p");
    let (ok, out, err) = crate::peer::run_bounded(c, Duration::from_secs(60));
    if !ok {
        return Err(format!("ibnetdiscover -p failed:\n{err}\n{out}"));
    }
    let mut lids = BTreeMap::new();
    let mut guids = BTreeMap::new();
    for line in out.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let names: Vec<&str> = right.split('\'').collect();
        for (side, name) in [(left, names.get(1)), (right, names.get(3))] {
            let f: Vec<&str> = side.split_whitespace().collect();
            let (Some(ty), Some(lid), Some(port), Some(guid)) =
                (f.first(), f.get(1), f.get(2), f.get(3))
            else {
                continue;
            };
            let (Ok(lid), Ok(port), Ok(guid)) = (
                lid.parse::<u16>(),
                port.parse::<u8>(),
                u64::from_str_radix(guid.trim_start_matches("0x"), 16),
            ) else {
                continue;
            };
            let port = if *ty == "SW" { 0 } else { port };
            lids.insert((guid, port), lid);
            if *ty == "CA"
                && let Some(n) = name
            {
                guids.insert((*n).to_string(), guid);
            }
        }
    }
    if lids.is_empty() {
        return Err(format!("ibnetdiscover -p showed no port:\n{out}"));
    }
    Ok((lids, guids))
}

/// Runs `sminfo` on `host` until one names `guid` as MASTER (each run killed after
/// `limit`); returns the time from `t0` to that run's exit and every run as a line
/// (start and end after `t0`, what it printed).
///
/// # Errors
/// When none does within [`PATIENCE`].
pub fn watch_sminfo(
    f: &PeerFabric,
    host: &str,
    guid: u64,
    t0: Instant,
    limit: Duration,
) -> Result<(Duration, Vec<String>), String> {
    let want = format!("sm guid {guid:#x},");
    let mut runs = Vec::new();
    let mut last = String::new();
    while t0.elapsed() < PATIENCE {
        let mut c = client(f, SMINFO, Some(host), "client");
        c.stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = c.spawn().map_err(|e| format!("spawn sminfo: {e}"))?;
        let started = Instant::now();
        let from = t0.elapsed();
        let done = loop {
            if let Ok(Some(_)) = child.try_wait() {
                break true;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let at = t0.elapsed();
        if done {
            let mut out = String::new();
            if let Some(mut so) = child.stdout.take() {
                let _ = so.read_to_string(&mut out);
            }
            runs.push(format!(
                "{:>6} {:>6} {}",
                from.as_millis(),
                at.as_millis(),
                out.trim()
            ));
            if out.contains(&want) && out.contains("SMINFO_MASTER") {
                return Ok((at, runs));
            }
            last = out;
        } else {
            runs.push(format!(
                "{:>6} {:>6} (killed)",
                from.as_millis(),
                at.as_millis()
            ));
        }
    }
    Err(format!(
        "sminfo never named {guid:#x} MASTER within {PATIENCE:?}; last answer: {last}"
    ))
}

/// Starts one SM of the pair on `host` with `priority`, its files named after `name`
/// in the fabric's directory.
fn start(
    f: &PeerFabric,
    s: &Setup,
    host: &str,
    priority: u8,
    name: &str,
) -> Result<Running, String> {
    let dir = f.path(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = std::fs::File::create(dir.join("out")).map_err(|e| e.to_string())?;
    let err = std::fs::File::create(dir.join("err")).map_err(|e| e.to_string())?;
    let poll_ms = s.polling_timeout.as_millis().to_string();
    let (mut c, log) = match &s.kind {
        Kind::Ibsmd(bin) => {
            let mut c = client(f, &bin.to_string_lossy(), Some(host), name);
            c.args(["--priority", &priority.to_string()])
                .args(["--polling-timeout", &poll_ms])
                .args(["--polling-retries", &s.polling_retries.to_string()])
                .args(
                    s.polling_retries_as_failures
                        .then_some("--polling-retries-as-failures"),
                )
                .args(["--sweep-interval", &s.sweep_interval.to_string()])
                .args(["--time-limit", "600", "-v"])
                .arg("--control-socket")
                .arg(dir.join("ctl.sock"));
            (c, dir.join("err"))
        }
        Kind::OpenSm => {
            let conf = dir.join("opensm.conf");
            write_opensm_conf(&conf, s, priority)?;
            let mut c = client(f, OPENSM, Some(host), name);
            c.arg("-F")
                .arg(&conf)
                .args(["-f", "osm.log"])
                .env("OSM_TMP_DIR", ".")
                .env("OSM_CACHE_DIR", ".")
                .env("TZ", "UTC");
            (c, dir.join("osm.log"))
        }
    };
    c.stdout(out).stderr(err);
    let child = c.spawn().map_err(|e| format!("start {name}: {e}"))?;
    Ok(Running { child, log })
}

/// OpenSM's default configuration (`opensm -c`) with the run's settings.
fn write_opensm_conf(path: &Path, s: &Setup, priority: u8) -> Result<(), String> {
    opensm_conf(
        path,
        &[
            ("sm_priority", priority.to_string()),
            (
                "sminfo_polling_timeout",
                s.polling_timeout.as_millis().to_string(),
            ),
            ("polling_retry_number", s.polling_retries.to_string()),
            ("sweep_interval", s.sweep_interval.to_string()),
            // Each line reaches the file when written, so its timestamps are read in time.
            ("force_log_flush", "TRUE".into()),
        ],
    )
}

/// Writes OpenSM's default configuration (`opensm -c`) to `path` with each `(key,
/// value)` of `set` in place of the default.
///
/// # Errors
/// When `opensm -c` fails or lacks one of the keys (a misspelt key would otherwise
/// leave the default in force unnoticed).
pub fn opensm_conf(path: &Path, set: &[(&str, String)]) -> Result<(), String> {
    let st = Command::new(OPENSM)
        .arg("-c")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("opensm -c: {e}"))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("opensm -c ({st}): {e}"))?;
    let mut seen = 0;
    let edited: Vec<String> = text
        .lines()
        .map(|l| {
            let key = l.split_whitespace().next().unwrap_or("");
            match set.iter().find(|(k, _)| *k == key) {
                Some((k, v)) => {
                    seen += 1;
                    format!("{k} {v}")
                }
                None => l.to_string(),
            }
        })
        .collect();
    if seen != set.len() {
        return Err(format!("opensm -c lacks one of {set:?}"));
    }
    std::fs::write(path, edited.join("\n")).map_err(|e| e.to_string())
}

/// One failover: starts the master (priority 10) and, once the subnet is up, the
/// standby (priority 5); lets them run for `settle`; reads every LID; kills the master
/// (SIGKILL); runs `sminfo` from the third host until it names the standby MASTER; waits
/// for the standby's SUBNET UP and reads every LID again. The SMs' files stay in the
/// fabric's directory (`a/`, `b/`) until `f` is dropped.
///
/// # Errors
/// When a step does not come within [`PATIENCE`] or a diagnostic fails.
pub fn run_once(f: &PeerFabric, s: &Setup) -> Result<Outcome, String> {
    let [master_host, standby_host, client_host] = &s.hosts;
    let mut master = start(f, s, master_host, 10, "a")?;
    let up = |t: &str| t.contains("SUBNET UP");
    wait_text(&master.log, "master's SUBNET UP", PATIENCE, up)?;
    let standby = start(f, s, standby_host, 5, "b")?;
    let standing = match s.kind {
        Kind::Ibsmd(_) => "STANDBY (",
        Kind::OpenSm => "Entering STANDBY state",
    };
    wait_text(&standby.log, "standby", PATIENCE, |t| t.contains(standing))?;
    std::thread::sleep(s.settle);
    let (lids_before, guids) = port_lids(f, client_host)?;
    let standby_guid = *guids
        .get(standby_host.as_str())
        .ok_or_else(|| format!("no CA {standby_host:?} in ibnetdiscover's output"))?;
    std::thread::sleep(s.kill_delay);
    let load = load_average();
    let t0 = Instant::now();
    let tod0 = now_tod();
    let _ = master.child.kill();
    let _ = master.child.wait();
    let (seen, sminfo_runs) = watch_sminfo(f, client_host, standby_guid, t0, s.sminfo_limit)?;
    let took_over = match s.kind {
        Kind::Ibsmd(_) => "MASTER (",
        Kind::OpenSm => "Entering MASTER state",
    };
    let text = wait_text(
        &standby.log,
        "standby's SUBNET UP as master",
        PATIENCE,
        |t| {
            let since = after_last(t, standing);
            crate::peer::after(since, took_over).contains("SUBNET UP")
        },
    )?;
    let marks = find_marks(&text, tod0, s.kind.marks());
    let (lids_after, _) = port_lids(f, client_host)?;
    drop(standby);
    Ok(Outcome {
        seen,
        sminfo_runs,
        marks,
        standby_guid,
        lids_before,
        lids_after,
        load,
        kill_delay: s.kill_delay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_times_of_both_formats() {
        let ours = "2026-12-01T15:18:50.801418Z  INFO ibsmd::daemon: MASTER (1234 ms)";
        let t = line_time(ours).unwrap();
        assert!((t - (15.0 * 3600.0 + 18.0 * 60.0 + 50.801_418)).abs() < 1e-6);
        let theirs = "Dec 01 15:18:50 771918 [8A4F76C0] 0x80 -> Entering MASTER state";
        let t = line_time(theirs).unwrap();
        assert!((t - (15.0 * 3600.0 + 18.0 * 60.0 + 50.771_918)).abs() < 1e-6);
        assert_eq!(line_time("no time here"), None);
        assert!((rel(10.0, 86_390.0) - 20.0).abs() < 1e-9);
    }

    #[test]
    fn marks_are_the_first_after_the_kill() {
        let log = "2026-12-01T10:00:00.000000Z INFO DISCOVERING (1 ms)\n\
                   2026-12-01T10:00:05.500000Z INFO DISCOVERING (5500 ms)\n\
                   2026-12-01T10:00:05.600000Z INFO MASTER (5600 ms)\n";
        let m = find_marks(
            log,
            36_003.0,
            &[("detect", "DISCOVERING ("), ("up", "SUBNET UP")],
        );
        assert!((m[0].1.unwrap() - 2.5).abs() < 1e-6, "{m:?}");
        assert_eq!(m[1].1, None);
    }
}
