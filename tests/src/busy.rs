// Over 800 lines: one bench harness (SMs on ibsim, the probing clients, their shared clock and
// the verdicts) whose parts only make sense together.
//! A master kept busy while clients ask it things (issue 25, "always answering"): heavy
//! sweeps forced on the master SM of an ibsim fabric while a third CA runs `sminfo` and
//! `saquery` back to back, each run's wall time and what it printed recorded; for the
//! bench also `busy-probe` (`tests/src/bin/busy_probe.rs`), one process asking the same
//! questions over and over, whose times are the MADs' round trips without a process
//! start each.
//!
//! Shared by the peer test (`crates/ibsmd/tests/busy_master_ibsim.rs`, which checks
//! outcomes only: every run answered and named the master, no takeover) and the bench
//! (`tests/src/bin/busy_bench.rs`, which reports the run times against OpenSM's; see
//! `tests/BUSY.md`). A run still going after a limit is killed and counted unanswered
//! (under umad2sim a request can wait for ever): a generous limit, never a
//! measurement.

use std::io::{BufRead as _, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ibsm_topology::{Fabric, Link, NodeId};

use crate::failover::{Kind, SMINFO, line_time, now_tod, opensm_conf, rel, wait_text};
use crate::peer::{ClientEnv, OPENSM, PeerFabric, client, run_bounded, try_dotted_field};

/// `saquery` (infiniband-diags).
pub const SAQUERY: &str = "/usr/sbin/saquery";
/// `ibaddr` (infiniband-diags): a port's LID, asked from that port.
pub const IBADDR: &str = "/usr/sbin/ibaddr";

/// What a [`Prober`] asks, over and over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// `sminfo` with no address (the SM LID the client's port holds): the answer must
    /// name `master` (port GUID) with `SMINFO_MASTER`.
    SmInfo {
        /// The master's port GUID.
        master: u64,
    },
    /// `saquery -p --slid S --dlid D`: one PathRecord, what every rank of an MPI job
    /// asks at its start. One record, as ibsim cuts SA answers to one MAD (no RMPP).
    PathRecord {
        /// Source LID.
        slid: u16,
        /// Destination LID.
        dlid: u16,
    },
}

impl Ask {
    /// A short name for reports.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::SmInfo { .. } => "sminfo",
            Self::PathRecord { .. } => "saquery",
        }
    }

    fn command(&self, env: &ClientEnv, host: &str) -> Command {
        match self {
            Self::SmInfo { .. } => env.command(SMINFO, Some(host), "probe"),
            Self::PathRecord { slid, dlid } => {
                let mut c = env.command(SAQUERY, Some(host), "probe");
                c.args([
                    "-p",
                    "--slid",
                    &slid.to_string(),
                    "--dlid",
                    &dlid.to_string(),
                ]);
                c
            }
        }
    }

    /// Whether a run that exited (`ok`: status 0) and printed `out` got the answer
    /// asked for; `Err` says what it got instead.
    fn judge(&self, ok: bool, out: &str) -> Result<(), String> {
        let good = match self {
            Self::SmInfo { master } => {
                ok && out.contains(&format!("sm guid {master:#x},"))
                    && out.contains("SMINFO_MASTER")
            }
            Self::PathRecord { slid, dlid } => {
                ok && out.contains("PathRecord")
                    && try_dotted_field(out, "slid") == Some(u64::from(*slid))
                    && try_dotted_field(out, "dlid") == Some(u64::from(*dlid))
            }
        };
        if good {
            Ok(())
        } else {
            Err(format!(
                "exit {}: {}",
                if ok { "0" } else { "non-zero" },
                crate::tail(out.trim(), 3)
            ))
        }
    }
}

/// What became of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Exited with the answer asked for.
    Answered,
    /// Exited, but not with that answer (another master, an error, no record).
    Wrong(String),
    /// Still running at the limit: killed.
    Unanswered,
}

/// One run of a client.
#[derive(Debug, Clone)]
pub struct Run {
    /// Its start, after the prober's origin.
    pub from: Duration,
    /// Start to exit (or to the kill): process start-up and the answer's wait.
    pub wall: Duration,
    /// What became of it.
    pub verdict: Verdict,
}

impl Run {
    /// Whether the run was going on at any time in `[from, to]` (after the origin).
    #[must_use]
    pub fn overlaps(&self, from: Duration, to: Duration) -> bool {
        self.from <= to && self.from + self.wall >= from
    }
}

/// A thread running one client back to back (the next run starts when the last ends)
/// until stopped, or reading the questions of one [`Prober::start_probe`] process.
#[derive(Debug)]
pub struct Prober {
    name: &'static str,
    stop: Arc<AtomicBool>,
    /// The `busy-probe` process, killed (by PID) to stop it.
    probe: Option<Child>,
    handle: JoinHandle<Vec<Run>>,
}

impl Prober {
    /// Starts asking `ask` from `host`, a process a run (`sminfo`, `saquery`); each run
    /// killed after `limit`; times after `clock`'s origin.
    #[must_use]
    pub fn start(env: ClientEnv, host: &str, ask: Ask, limit: Duration, clock: &Clock) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let host = host.to_owned();
        let origin = clock.origin;
        let handle = std::thread::spawn(move || {
            let mut runs = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                runs.push(run_once(&env, &host, ask, limit, origin));
            }
            runs
        });
        Self {
            name: ask.name(),
            stop,
            probe: None,
            handle,
        }
    }

    /// Starts one `busy-probe` process (`probe`, `tests/src/bin/busy_probe.rs`) asking
    /// `ask` from `host` every `every`, each question given `limit`: the MAD's round trip
    /// without a process start a question. Its runs are named `smi-mad` and `pr-mad`.
    ///
    /// # Errors
    /// When the process cannot be started.
    pub fn start_probe(
        env: &ClientEnv,
        probe: &Path,
        host: &str,
        ask: Ask,
        every: Duration,
        limit: Duration,
        clock: &Clock,
    ) -> Result<Self, String> {
        let mut c = env.command(&probe.to_string_lossy(), Some(host), "probe");
        let (every, limit) = (every.as_millis().to_string(), limit.as_millis().to_string());
        let name = match ask {
            Ask::SmInfo { .. } => {
                c.args(["sminfo", &every, &limit]);
                "smi-mad"
            }
            Ask::PathRecord { slid, dlid } => {
                c.args(["path", &slid.to_string(), &dlid.to_string(), &every, &limit]);
                "pr-mad"
            }
        };
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start {}: {e}", probe.display()))?;
        let out = child.stdout.take().ok_or("busy-probe's stdout")?;
        let clock = *clock;
        let handle = std::thread::spawn(move || {
            std::io::BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| probe_run(&l, ask, &clock))
                .collect()
        });
        Ok(Self {
            name,
            stop: Arc::new(AtomicBool::new(false)),
            probe: Some(child),
            handle,
        })
    }

    /// The name of its runs in reports.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Stops after the run in progress (kills the `busy-probe` process) and returns
    /// every run.
    ///
    /// # Panics
    /// When the thread panicked.
    #[must_use]
    pub fn stop(mut self) -> Vec<Run> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(mut c) = self.probe.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.handle.join().expect("prober thread")
    }
}

/// One `busy-probe` line as a run: `START_US WALL_US ok DETAIL` / `... fail WHY` (a
/// `no answer` is a question that got none within its limit).
fn probe_run(line: &str, ask: Ask, clock: &Clock) -> Option<Run> {
    let mut it = line.splitn(4, ' ');
    let start: u64 = it.next()?.parse().ok()?;
    let wall: u64 = it.next()?.parse().ok()?;
    let status = it.next()?;
    let detail = it.next().unwrap_or_default();
    let verdict = match (status, ask) {
        ("ok", Ask::SmInfo { master }) => {
            if detail == format!("{master:#x} Master") {
                Verdict::Answered
            } else {
                Verdict::Wrong(detail.to_owned())
            }
        }
        ("ok", Ask::PathRecord { slid, dlid }) => {
            if detail == format!("{slid} {dlid}") {
                Verdict::Answered
            } else {
                Verdict::Wrong(detail.to_owned())
            }
        }
        _ if detail.contains("no answer") => Verdict::Unanswered,
        _ => Verdict::Wrong(detail.to_owned()),
    };
    Some(Run {
        from: clock.of_unix(Duration::from_micros(start)),
        wall: Duration::from_micros(wall),
        verdict,
    })
}

/// One run: start, wait (checking every millisecond) up to `limit`, judge.
fn run_once(env: &ClientEnv, host: &str, ask: Ask, limit: Duration, origin: Instant) -> Run {
    let mut c = ask.command(env, host);
    c.stdout(Stdio::piped()).stderr(Stdio::null());
    let from = origin.elapsed();
    let started = Instant::now();
    let mut child = match c.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Run {
                from,
                wall: started.elapsed(),
                verdict: Verdict::Wrong(format!("spawn: {e}")),
            };
        }
    };
    // The output is read after the exit: a few hundred bytes, well within a pipe's
    // buffer, so the child never blocks on it.
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break Some(st);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let wall = started.elapsed();
    let verdict = match status {
        None => Verdict::Unanswered,
        Some(st) => {
            let mut out = String::new();
            if let Some(mut so) = child.stdout.take() {
                let _ = so.read_to_string(&mut out);
            }
            match ask.judge(st.success(), &out) {
                Ok(()) => Verdict::Answered,
                Err(e) => Verdict::Wrong(e),
            }
        }
    };
    Run {
        from,
        wall,
        verdict,
    }
}

/// Order statistics of run times (nearest rank).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Runs.
    pub n: usize,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Longest.
    pub max: Duration,
}

impl Stats {
    /// Of the wall times of `runs`; `None` when there is none.
    #[must_use]
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Option<Self> {
        let mut w: Vec<Duration> = runs.into_iter().map(|r| r.wall).collect();
        if w.is_empty() {
            return None;
        }
        w.sort_unstable();
        let rank = |q: f64| {
            // Nearest rank: the smallest value with at least q of the runs at or below.
            let i = ((q * w.len() as f64).ceil() as usize).clamp(1, w.len()) - 1;
            w[i]
        };
        Some(Self {
            n: w.len(),
            p50: rank(0.5),
            p99: rank(0.99),
            max: w[w.len() - 1],
        })
    }
}

/// How to make the master sweep heavy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// ibsmd: `ibsmd sweep --heavy` on the control socket. OpenSM: SIGHUP.
    SweepHeavy,
    /// ibsmd: `ibsmd rebalance` (every route recomputed). OpenSM: SIGHUP (it re-reads
    /// its configuration and sweeps heavy, routing from scratch).
    Rebalance,
}

impl Trigger {
    /// A short name for reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::SweepHeavy => "sweep --heavy",
            Self::Rebalance => "rebalance",
        }
    }
}

/// The settings both SMs of a run share.
#[derive(Debug, Clone)]
pub struct SmSettings {
    /// The standby's poll period (`--polling-timeout`, `sminfo_polling_timeout`).
    pub polling_timeout: Duration,
    /// `--polling-retries`, `polling_retry_number`.
    pub polling_retries: u32,
    /// Periodic sweep interval, seconds.
    pub sweep_interval: u32,
}

/// A started SM (ibsmd with `-v` and a control socket, or OpenSM), killed by PID when
/// dropped. Its files are in its own directory of the fabric's.
#[derive(Debug)]
pub struct Sm {
    /// Which implementation.
    pub kind: Kind,
    /// Its directory.
    pub dir: PathBuf,
    child: Child,
}

impl Drop for Sm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A role change of ibsmd in its log (`ROLE (ms)`), or OpenSM's.
const IBSMD_ROLES: [&str; 4] = ["DISCOVERING (", "STANDBY (", "MASTER (", "NOT ACTIVE ("];
const OPENSM_ROLES: [&str; 4] = [
    "Entering DISCOVERING state",
    "Entering STANDBY state",
    "Entering MASTER state",
    "Exiting SM",
];

impl Sm {
    /// Starts an SM on `host` with `priority`, its files in `name/` of the fabric's
    /// directory (ibsmd: `err` its log, `ctl.sock`; OpenSM: `osm.log`, in UTC).
    ///
    /// # Errors
    /// When it cannot be started.
    pub fn start(
        f: &PeerFabric,
        kind: &Kind,
        host: &str,
        priority: u8,
        name: &str,
        s: &SmSettings,
    ) -> Result<Self, String> {
        Self::start_with_env(f, kind, host, priority, name, s, &[])
    }

    /// As [`Sm::start`], with `env` added to its environment.
    ///
    /// # Errors
    /// When it cannot be started.
    pub fn start_with_env(
        f: &PeerFabric,
        kind: &Kind,
        host: &str,
        priority: u8,
        name: &str,
        s: &SmSettings,
        env: &[(&str, &str)],
    ) -> Result<Self, String> {
        let dir = f.path(name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let out = std::fs::File::create(dir.join("out")).map_err(|e| e.to_string())?;
        let err = std::fs::File::create(dir.join("err")).map_err(|e| e.to_string())?;
        let poll_ms = s.polling_timeout.as_millis().to_string();
        let mut c = match kind {
            Kind::Ibsmd(bin) => {
                let mut c = client(f, &bin.to_string_lossy(), Some(host), name);
                c.args(["--priority", &priority.to_string()])
                    .args(["--polling-timeout", &poll_ms])
                    .args(["--polling-retries", &s.polling_retries.to_string()])
                    .args(["--sweep-interval", &s.sweep_interval.to_string()])
                    .args(["--time-limit", "3600", "-v"])
                    .arg("--control-socket")
                    .arg(dir.join("ctl.sock"));
                c
            }
            Kind::OpenSm => {
                let conf = dir.join("opensm.conf");
                opensm_conf(
                    &conf,
                    &[
                        ("sm_priority", priority.to_string()),
                        ("sminfo_polling_timeout", poll_ms),
                        ("polling_retry_number", s.polling_retries.to_string()),
                        ("sweep_interval", s.sweep_interval.to_string()),
                        // Each line reaches the file when written, so its times are read
                        // in time. The default log level (errors and info): verbose (0x04)
                        // writes some 25 lines a node per sweep, which would slow OpenSM.
                        ("force_log_flush", "TRUE".into()),
                    ],
                )?;
                let mut c = client(f, OPENSM, Some(host), name);
                c.arg("-F")
                    .arg(&conf)
                    .args(["-f", "osm.log"])
                    .env("OSM_TMP_DIR", ".")
                    .env("OSM_CACHE_DIR", ".")
                    .env("TZ", "UTC");
                c
            }
        };
        c.envs(env.iter().copied()).stdout(out).stderr(err);
        let child = c.spawn().map_err(|e| format!("start {name}: {e}"))?;
        Ok(Self {
            kind: kind.clone(),
            dir,
            child,
        })
    }

    /// Its log file.
    #[must_use]
    pub fn log_path(&self) -> PathBuf {
        match self.kind {
            Kind::Ibsmd(_) => self.dir.join("err"),
            Kind::OpenSm => self.dir.join("osm.log"),
        }
    }

    /// Its log's text (empty before the first line).
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The text of the log line that says the subnet is up after a heavy sweep.
    #[must_use]
    pub fn up_mark(&self) -> &'static str {
        match self.kind {
            Kind::Ibsmd(_) => "ibsmd::daemon: SUBNET UP (",
            Kind::OpenSm => "-> SUBNET UP",
        }
    }

    /// The log line texts of its roles: discovering, standby, master, and ibsmd's NOT
    /// ACTIVE or OpenSM's exit.
    #[must_use]
    pub fn role_marks(&self) -> [&'static str; 4] {
        match self.kind {
            Kind::Ibsmd(_) => IBSMD_ROLES,
            Kind::OpenSm => OPENSM_ROLES,
        }
    }

    /// SUBNET UPs in its log so far.
    #[must_use]
    pub fn ups(&self) -> usize {
        self.log().matches(self.up_mark()).count()
    }

    /// Waits until its log holds more than `ups` SUBNET UPs; returns the log.
    ///
    /// # Errors
    /// When `limit` passes first.
    pub fn wait_ups(&self, ups: usize, limit: Duration) -> Result<String, String> {
        let mark = self.up_mark();
        wait_text(
            &self.log_path(),
            &format!("SUBNET UP number {}", ups + 1),
            limit,
            |t| t.matches(mark).count() > ups,
        )
    }

    /// Waits until its log shows the role (`STANDBY` or `MASTER`: index 1 or 2 of
    /// [`Sm::role_marks`]).
    ///
    /// # Errors
    /// When `limit` passes first.
    pub fn wait_role(&self, role: usize, limit: Duration) -> Result<String, String> {
        let mark = self.role_marks()[role];
        wait_text(&self.log_path(), mark, limit, |t| t.contains(mark))
    }

    /// The role changes in its log after the first line containing `since`: the role
    /// marks found, in order of the lines.
    #[must_use]
    pub fn roles_after(&self, since: &str) -> Vec<String> {
        let log = self.log();
        let Some(at) = log.find(since) else {
            return Vec::new();
        };
        let rest = &log[at + since.len()..];
        let marks = self.role_marks();
        rest.lines()
            .filter(|l| marks.iter().any(|m| l.contains(m)))
            .map(str::to_owned)
            .collect()
    }

    /// Its port GUID as its log states it (ibsmd's first line, OpenSM's bind lines).
    #[must_use]
    pub fn port_guid(&self) -> Option<u64> {
        let log = self.log();
        let hex = log.split("port GUID 0x").nth(1)?;
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        u64::from_str_radix(&hex[..end], 16).ok()
    }

    /// Whether it still runs.
    #[must_use]
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Asks it for a heavy sweep: ibsmd through its control socket (the client is the
    /// same binary), OpenSM by SIGHUP to its PID.
    ///
    /// # Errors
    /// When the request is refused or the signal cannot be sent.
    pub fn request(&self, t: Trigger) -> Result<(), String> {
        let (c, what) = match &self.kind {
            Kind::Ibsmd(bin) => {
                let mut c = Command::new(bin);
                match t {
                    Trigger::SweepHeavy => c.args(["sweep", "--heavy"]),
                    Trigger::Rebalance => c.arg("rebalance"),
                };
                c.arg("--control-socket").arg(self.dir.join("ctl.sock"));
                (c, t.name())
            }
            Kind::OpenSm => {
                let mut c = Command::new("kill");
                c.args(["-HUP", &self.child.id().to_string()]);
                (c, "SIGHUP")
            }
        };
        let (ok, out, err) = run_bounded(c, Duration::from_secs(30));
        if ok {
            Ok(())
        } else {
            Err(format!("{what} refused:\n{out}\n{err}"))
        }
    }

    /// ibsmd's status over its control socket (`ibsmd status --json`).
    ///
    /// # Errors
    /// When it is not ibsmd or does not answer.
    pub fn status(&self) -> Result<serde_json::Value, String> {
        let Kind::Ibsmd(bin) = &self.kind else {
            return Err("OpenSM has no control socket".into());
        };
        let mut c = Command::new(bin);
        c.args(["status", "--json", "--control-socket"])
            .arg(self.dir.join("ctl.sock"));
        let (ok, out, err) = run_bounded(c, Duration::from_secs(30));
        let line = out.lines().last().unwrap_or_default();
        match serde_json::from_str(line) {
            Ok(v) if ok => Ok(v),
            _ => Err(format!("ibsmd status: {out}\n{err}")),
        }
    }
}

/// A forced heavy sweep, as the master's log and the bench's clock saw it.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// What forced it (a [`Trigger`]'s name or a cable's cut).
    pub what: String,
    /// The request, after the probers' origin.
    pub from: Duration,
    /// The master's next SUBNET UP line, after the origin (its log's timestamp).
    pub up: Duration,
    /// Routing wall time, when the log says (ibsmd's SUBNET UP line).
    pub routing: Option<Duration>,
}

impl Sweep {
    /// Request to SUBNET UP.
    #[must_use]
    pub fn took(&self) -> Duration {
        self.up.saturating_sub(self.from)
    }
}

/// A fixed pair of clocks: an [`Instant`] (the probers' origin) and the time of day at
/// that instant, to place log lines on the probers' time line.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The origin.
    pub origin: Instant,
    tod: f64,
    /// The wall clock at the origin, since the Unix epoch.
    unix: Duration,
}

impl Clock {
    /// Now as the origin.
    #[must_use]
    pub fn now() -> Self {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            origin: Instant::now(),
            tod: now_tod(),
            unix,
        }
    }

    /// A wall-clock time (since the Unix epoch) after the origin (zero before it).
    #[must_use]
    pub fn of_unix(&self, t: Duration) -> Duration {
        t.saturating_sub(self.unix)
    }

    /// Time of day of `at` (after the origin).
    #[must_use]
    pub fn tod(&self, at: Duration) -> f64 {
        self.tod + at.as_secs_f64()
    }

    /// A log line's time after the origin (zero for a line before it).
    #[must_use]
    pub fn of_line(&self, line: &str) -> Option<Duration> {
        let t = line_time(line)?;
        Some(Duration::from_secs_f64(rel(t, self.tod).max(0.0)))
    }
}

/// The first line of `log` holding `needle` at or after `from` (after `clock`'s
/// origin): its time and text.
#[must_use]
pub fn line_after<'a>(
    log: &'a str,
    needle: &str,
    clock: &Clock,
    from: Duration,
) -> Option<(Duration, &'a str)> {
    log.lines()
        .filter(|l| l.contains(needle))
        .filter_map(|l| Some((clock.of_line(l)?, l)))
        .find(|(at, _)| *at >= from)
}

/// The first SUBNET UP line of `sm` at or after `from` (after `clock`'s origin), and
/// the routing wall it states (ibsmd's, [`routing_wall`]).
#[must_use]
pub fn up_after(sm: &Sm, clock: &Clock, from: Duration) -> Option<(Duration, Option<Duration>)> {
    let log = sm.log();
    line_after(&log, sm.up_mark(), clock, from).map(|(at, l)| (at, routing_wall(l)))
}

/// The routing wall time stated on an ibsmd SUBNET UP line: `routing wall 164.2 ms`.
#[must_use]
pub fn routing_wall(line: &str) -> Option<Duration> {
    let (_, rest) = line.split_once("routing wall ")?;
    let ms: f64 = rest.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_secs_f64(ms / 1e3))
}

/// A port's LID as `ibaddr` run on `host` reads it (`LID start 0x3 end 0x3`).
///
/// # Errors
/// When ibaddr fails or prints no LID.
pub fn lid_of(f: &PeerFabric, host: &str) -> Result<u16, String> {
    let c = client(f, IBADDR, Some(host), "probe");
    let (ok, out, err) = run_bounded(c, Duration::from_secs(30));
    let lid = out
        .split("LID start 0x")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|h| u16::from_str_radix(h, 16).ok());
    match lid {
        Some(l) if ok => Ok(l),
        _ => Err(format!("ibaddr on {host:?}: {out}\n{err}")),
    }
}

/// The leaf switch of CA `ca` (its port 1's neighbour).
#[must_use]
pub fn leaf_of(topo: &Fabric, ca: NodeId) -> Option<NodeId> {
    topo.neighbour(ca, 1)
}

/// Three CAs on one leaf switch (master, standby, client), by node description, and
/// a cable between two switches that touches none of that leaf's: no path between the
/// three crosses a switch-to-switch cable (a leaf forwards its own CAs' traffic
/// itself), so cutting that cable or rewriting any table can lose none of their MADs,
/// and only the master's silence can leave a question unanswered.
///
/// # Panics
/// When the fabric has no leaf with three CAs or no such cable.
#[must_use]
pub fn hosts_and_cable(topo: &Fabric) -> ([String; 3], Link) {
    let cas: Vec<NodeId> = topo.cas().map(|(id, _)| id).collect();
    let leaf = leaf_of(topo, cas[0]).expect("the first CA has a cable");
    let on_leaf: Vec<NodeId> = cas
        .iter()
        .copied()
        .filter(|&c| leaf_of(topo, c) == Some(leaf))
        .take(3)
        .collect();
    assert_eq!(on_leaf.len(), 3, "no three CAs on the first CA's leaf");
    let name = |id: NodeId| topo.node(id).unwrap().description.clone();
    let is_switch = |id: NodeId| topo.node(id).is_some_and(ibsm_topology::Node::is_switch);
    let (_, cable) = topo
        .links()
        .find(|(_, l)| {
            is_switch(l.a.node) && is_switch(l.b.node) && l.a.node != leaf && l.b.node != leaf
        })
        .expect("a switch-to-switch cable away from the SMs' leaf");
    (
        [name(on_leaf[0]), name(on_leaf[1]), name(on_leaf[2])],
        *cable,
    )
}

/// ibsim's console commands that cut `cable` and put it back: `Unlink "sw"[port]`,
/// `ReLink "sw"[port]`, at its first end.
#[must_use]
pub fn cut_and_mend(topo: &Fabric, cable: Link) -> (String, String) {
    let sw = &topo.node(cable.a.node).expect("cable end").description;
    (
        format!("Unlink \"{sw}\"[{}]", cable.a.port),
        format!("ReLink \"{sw}\"[{}]", cable.a.port),
    )
}

/// Runs of `runs` that overlap any of `sweeps` (request to SUBNET UP).
#[must_use]
pub fn during<'a>(runs: &'a [Run], sweeps: &[Sweep]) -> Vec<&'a Run> {
    runs.iter()
        .filter(|r| sweeps.iter().any(|s| r.overlaps(s.from, s.up)))
        .collect()
}

/// Milliseconds of a duration, for reports.
#[must_use]
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(from_ms: u64, wall_ms: u64) -> Run {
        Run {
            from: Duration::from_millis(from_ms),
            wall: Duration::from_millis(wall_ms),
            verdict: Verdict::Answered,
        }
    }

    #[test]
    fn stats_are_nearest_rank() {
        let runs: Vec<Run> = (1..=100).map(|i| run(0, i)).collect();
        let s = Stats::of(&runs).unwrap();
        assert_eq!(s.n, 100);
        assert_eq!(s.p50, Duration::from_millis(50));
        assert_eq!(s.p99, Duration::from_millis(99));
        assert_eq!(s.max, Duration::from_millis(100));
        let one = Stats::of(&runs[..1]).unwrap();
        assert_eq!((one.p50, one.p99, one.max), (one.max, one.max, one.max));
        assert_eq!(Stats::of(&[]), None);
    }

    #[test]
    fn a_run_overlaps_a_window_it_touches() {
        let r = run(100, 50);
        let ms = Duration::from_millis;
        assert!(r.overlaps(ms(0), ms(100)));
        assert!(r.overlaps(ms(150), ms(200)));
        assert!(r.overlaps(ms(120), ms(130)));
        assert!(!r.overlaps(ms(0), ms(99)));
        assert!(!r.overlaps(ms(151), ms(300)));
    }

    #[test]
    fn answers_are_judged_by_what_they_name() {
        let ask = Ask::SmInfo { master: 0x10_0001 };
        let good = "sminfo: sm lid 1 sm guid 0x100001, activity count 643336 priority 10 state 3 SMINFO_MASTER";
        assert_eq!(ask.judge(true, good), Ok(()));
        assert!(ask.judge(false, good).is_err());
        assert!(
            ask.judge(true, &good.replace("0x100001", "0x100003"))
                .is_err()
        );
        assert!(
            ask.judge(true, &good.replace("SMINFO_MASTER", "SMINFO_STANDBY"))
                .is_err()
        );
        let pr = Ask::PathRecord { slid: 3, dlid: 12 };
        let out = "PathRecord dump:\n\t\tservice_id..............0x0000000000000000\n\
                   \t\tdgid....................fe80::10:5\n\t\tdlid....................12\n\
                   \t\tslid....................3\n";
        assert_eq!(pr.judge(true, out), Ok(()));
        assert!(pr.judge(true, &out.replace(".12\n", ".13\n")).is_err());
        assert!(pr.judge(false, out).is_err());
    }

    #[test]
    fn routing_wall_from_a_subnet_up_line() {
        let l = "2026-12-02T05:20:00.862941Z  INFO ibsmd::daemon: SUBNET UP (9090 ms): 13284 nodes \
                 (1620 switches), 13284 LIDs, 641521 SMPs, routing minhop (computed), routing wall 164.2 ms, LFT blocks 3";
        assert_eq!(routing_wall(l), Some(Duration::from_micros(164_200)));
        assert_eq!(
            routing_wall("SUBNET UP (9090 ms): routing minhop (computed)"),
            None
        );
    }
}
