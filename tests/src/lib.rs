//! Helpers for the cross-crate and peer tests in `tests/tests/`.
//!
//! Peer tests need programs and libraries from Debian packages (libibmad, ibsim,
//! OpenSM, infiniband-diags). Without them a test prints a loud `SKIP` line and passes,
//! unless `IBSM_REQUIRE_PEERS=1` is set (as `.ci/run` does), in which case it fails.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `IBSM_REQUIRE_PEERS=1` is set.
#[must_use]
pub fn peers_required() -> bool {
    std::env::var("IBSM_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Checks that every path in `needed` exists. Returns `true` when the test may run; when
/// something is missing it prints a loud SKIP and returns `false`, or panics when peers
/// are required.
///
/// # Panics
/// When a peer is missing and `IBSM_REQUIRE_PEERS=1`.
#[must_use]
pub fn peers_present(test: &str, needed: &[&str]) -> bool {
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|p| !Path::new(p).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!(
        "SKIP {test}: peer missing: {} (install: apt-get install ibsim-utils opensm infiniband-diags libibmad-dev libibumad-dev)",
        missing.join(", ")
    );
    assert!(
        !peers_required(),
        "{msg} -- and IBSM_REQUIRE_PEERS=1 forbids skipping"
    );
    eprintln!("\n!!!!!!!! {msg}\n");
    false
}

/// Waits until the file at `path` (a peer's log) contains `needle`, polling every 50 ms,
/// and returns its text.
///
/// # Panics
/// When `limit` passes first; the message shows the log's last 30 lines.
pub fn wait_for(path: &Path, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{needle:?} not seen in {} within {limit:?}; its last lines:\n{}",
            path.display(),
            tail(&text, 30)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls `probe` every 100 ms until it returns `Ok`, and returns that value. `Err`
/// carries what the probe saw instead (a log tail, a diagnostic's output) for the
/// failure message. `limit` is a deadline for giving up, never a measurement: make it
/// generous, so that only something that does not happen at all fails.
///
/// # Panics
/// When `limit` passes first; the message names `what` and shows the last thing seen.
pub fn wait_until<T>(
    what: &str,
    limit: Duration,
    mut probe: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match probe() {
            Ok(v) => return v,
            Err(seen) => assert!(
                Instant::now() < deadline,
                "gave up after {limit:?} waiting for {what}; last seen:\n{seen}"
            ),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The last `n` lines of `text`, in order.
#[must_use]
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The ibsim binary (package ibsim-utils).
pub const IBSIM: &str = "/usr/bin/ibsim";
/// The umad2sim preload that connects umad clients to ibsim.
pub const PRELOAD: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

pub mod busy;
pub mod diags;
pub mod exposition;
pub mod failover;
pub mod peer;

/// One ibsim of one test: its own socket name and working directory, killed by PID
/// and cleaned up when dropped. Its console (stdin) is a pipe: [`Ibsim::console`].
#[derive(Debug)]
pub struct Ibsim {
    child: Child,
    console: ChildStdin,
    /// `IBSIM_SOCKNAME` every client of this ibsim must use.
    pub sock: String,
    /// The working directory (holds `net` and `ibsim.log`).
    pub dir: PathBuf,
}

impl Ibsim {
    /// Writes `net` to a fresh directory named after `name` and the process id, starts
    /// ibsim on it and waits until it is ready.
    ///
    /// # Panics
    /// When ibsim cannot be started or does not become ready within 20 s.
    #[must_use]
    pub fn start(name: &str, net: &str) -> Self {
        Self::start_with(name, net, &[], Duration::from_secs(20))
    }

    /// As [`Ibsim::start`], with more ibsim flags (`args`, e.g. [`ibsim_size_args`] for a
    /// fabric beyond ibsim's default node, switch and port counts) and `ready` as the
    /// limit for "simulator ready" (a large net file takes seconds to parse).
    ///
    /// # Panics
    /// When ibsim cannot be started or does not become ready within `ready`.
    #[must_use]
    pub fn start_with(name: &str, net: &str, args: &[String], ready: Duration) -> Self {
        let tag = format!("{name}_{}", std::process::id());
        let dir = std::env::temp_dir().join(&tag);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("ibsim dir");
        std::fs::write(dir.join("net"), net).expect("net file");
        let log = std::fs::File::create(dir.join("ibsim.log")).expect("ibsim log");
        // No `-n`: the console reads commands from our pipe (it must not see EOF, so
        // the write end lives as long as ibsim).
        let mut child = Command::new(IBSIM)
            .arg("-s")
            .args(args)
            .arg("net")
            .current_dir(&dir)
            .env("IBSIM_SOCKNAME", &tag)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start ibsim");
        let console = child.stdin.take().expect("ibsim stdin");
        let sim = Self {
            child,
            console,
            sock: tag,
            dir,
        };
        wait_for(&sim.dir.join("ibsim.log"), "simulator ready", ready);
        sim
    }
}

impl Ibsim {
    /// Sends one console command, e.g. `Unlink "Sw1"[3]` or `ReLink "Sw1"[3]`. Its answer
    /// goes to `ibsim.log`.
    ///
    /// # Panics
    /// When ibsim's stdin is closed (ibsim died).
    pub fn console(&mut self, command: &str) {
        writeln!(self.console, "{command}")
            .and_then(|()| self.console.flush())
            .expect("ibsim console");
    }
}

/// ibsim's `-N` (nodes), `-S` (switches) and `-P` (ports, each node's port 0 counted)
/// for `topo`, each the next power of two at or above the count; empty when ibsim's
/// built-in limits (2048 nodes, 256 switches, 13312 ports in ibsim 0.10) hold it, so a
/// small fabric starts as it always did. For the 3-level radix-36 fat tree (13,284
/// nodes, 1,620 switches): `-N 16384 -S 2048 -P 131072`.
#[must_use]
pub fn ibsim_size_args(topo: &ibsm_topology::Fabric) -> Vec<String> {
    let nodes = topo.node_count();
    let switches = topo.switch_count();
    let ports: usize = topo
        .nodes()
        .map(|(_, n)| usize::from(n.num_ports()) + 1)
        .sum();
    if nodes <= 2048 && switches <= 256 && ports <= 13_312 {
        return Vec::new();
    }
    [
        ("-N", nodes.next_power_of_two()),
        ("-S", switches.next_power_of_two()),
        ("-P", ports.next_power_of_two()),
    ]
    .into_iter()
    .flat_map(|(flag, n)| [flag.to_string(), n.to_string()])
    .collect()
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // IBSM_KEEP_PEER_DIRS=1 keeps the working directory (logs, dumps) of every run,
        // to read after a failure.
        if std::env::var_os("IBSM_KEEP_PEER_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
