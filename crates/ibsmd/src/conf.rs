//! What the daemon runs with: [`Settings`] (the engine's `SmConfig` plus what only the
//! daemon uses), built from the defaults, then the configuration file, then the flags
//! ([`load`]), every option described once in [`options::OPTIONS`].

use std::path::PathBuf;

use ibsm::manager::partition::{Enforcement, PartitionConfig, PartitionLoadError};
use ibsm::manager::perfmgr::{Counter, PerfMgrConfig};
use ibsm::manager::{MKeyMode, RoutingInputs, SmConfig, SmConfigError};
use ibsm::routing::ReadGuidFileError;

mod file;
pub(crate) mod options;
#[cfg(test)]
mod tests;

pub(crate) use file::{FileReport, FileWarning, parse, write};
pub(crate) use options::{Apply, Flag, Key, OPTIONS, Setter, Takes, ValueError};

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Where log lines go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum LogTarget {
    /// Standard error (default).
    #[default]
    Stderr,
    /// Standard output (OpenSM's `-f stdout`).
    Stdout,
    /// A file, appended to unless `accum_log_file` is off; reopened on SIGUSR1.
    File(PathBuf),
}

/// Everything the daemon is told. `sm` holds the engine's settings; the others are the
/// daemon's own, some (`max_wire_smps_limit`, `routing_threads`) resolved into `sm` when
/// the port is known ([`Settings::engine_config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// The engine's configuration; the one source of defaults.
    pub(crate) sm: SmConfig,
    /// Port GUID to bind to (OpenSM `guid`; 0 = the first port whose link is up).
    pub(crate) guid: u64,
    /// Ceiling of the SMP window; 0 = automatic (the engine's default, or 128 under
    /// ibsim, whose preload deadlocks on long send bursts).
    pub(crate) max_wire_smps_limit: usize,
    /// Routing threads; 0 = one per CPU.
    pub(crate) routing_threads: usize,
    /// OpenSM's `partition_config_file`.
    pub(crate) partition_file: Option<PathBuf>,
    /// OpenSM's `part_enforce`, applied to the partition policy.
    pub(crate) part_enforce: Enforcement,
    /// OpenSM's `allow_both_pkeys`, applied to the partition policy.
    pub(crate) allow_both_pkeys: bool,
    /// Keep LIDs across restarts in this file (OpenSM's guid2lid format).
    pub(crate) guid2lid: Option<PathBuf>,
    /// `isolated_ports_file`: where the isolated ports are kept (unset: see
    /// [`Settings::isolated_ports_path`]).
    pub(crate) isolated_ports: Option<PathBuf>,
    /// OpenSM's `log_flags`: 0x01 errors, 0x02 info, 0x04 debug, 0x08 and up trace.
    pub(crate) log_flags: u8,
    /// OpenSM's `log_file`.
    pub(crate) log_file: LogTarget,
    /// OpenSM's `accum_log_file`: append to the log file (else empty it first).
    pub(crate) accum_log_file: bool,
    /// OpenSM's `dump_files_dir` (`--dump-dir`): where the dumps go; none = no dumps.
    pub(crate) dump_dir: Option<PathBuf>,
    /// OpenSM's `root_guid_file`, `cn_guid_file`, `io_guid_file` and
    /// `guid_routing_order_file`, read into `sm.routing_inputs` by
    /// [`Settings::engine_config`] (`max_reverse_hops` is set there directly).
    pub(crate) routing_files: RoutingFiles,
    /// `topology_ref_file`: the reference topology, read by
    /// [`Settings::engine_config`] into `sm.topology_ref`.
    pub(crate) topology_ref: Option<PathBuf>,
    /// `topology_ref_policy`.
    pub(crate) topology_ref_policy: ibsm::manager::topo_ref::TopoPolicy,
    /// OpenSM's `perfmgr`: run the performance manager (`perf` its settings).
    pub(crate) perfmgr: bool,
    /// The PerfMgr's settings, in force with `perfmgr` (the engine takes the SM's
    /// transaction timeout and retries).
    pub(crate) perf: PerfMgrConfig,
    /// OpenSM's `perfmgr_xmit_wait_log`: report ports whose PortXmitWait grows by more
    /// than `perfmgr_xmit_wait_threshold` in one counter sweep.
    pub(crate) perfmgr_xmit_wait_log: bool,
    /// OpenSM's `perfmgr_xmit_wait_threshold`.
    pub(crate) perfmgr_xmit_wait_threshold: u64,
    /// `polling_retry_number` (`sm.polling_retries`) as opensm.conf words it, the
    /// number of failed polls that declares the master dead, rather than OpenSM 3.3's
    /// count (one unanswered poll more); applied by [`Settings::engine_config`], so the
    /// file and `-c` keep the number as written.
    pub(crate) polling_retries_as_failures: bool,
    /// The partition API (`--rest`, `rest_*`).
    pub(crate) rest: crate::rest::RestSettings,
    /// What only the command line says.
    pub(crate) run: Run,
}

/// The options of the command line only: which port, the daemon's endpoints, the
/// run's mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Run {
    /// RDMA device to run on (`--ca`; none: any).
    pub(crate) ca: Option<String>,
    /// Port number on the device (`--port`; none: the first whose link is up).
    pub(crate) port: Option<u8>,
    /// `--once`: configure the subnet once and exit.
    pub(crate) once: bool,
    /// `--time-limit` in seconds.
    pub(crate) time_limit: Option<u64>,
    /// `--control-socket` (none: the default path, without `--once`).
    pub(crate) control_socket: Option<PathBuf>,
    /// `--metrics` address.
    pub(crate) metrics: Option<String>,
    /// `--pid-file`.
    pub(crate) pid_file: Option<PathBuf>,
    /// `--json`: the summary as a JSON line on stdout.
    pub(crate) json: bool,
    /// `--log-format`.
    pub(crate) log_format: LogFormat,
}

/// The paths of OpenSM's routing input files (each a list of GUIDs, one a line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RoutingFiles {
    /// `root_guid_file` (`-a`).
    pub(crate) roots: Option<PathBuf>,
    /// `cn_guid_file` (`-u`).
    pub(crate) compute_nodes: Option<PathBuf>,
    /// `io_guid_file` (`-G`).
    pub(crate) io_nodes: Option<PathBuf>,
    /// `guid_routing_order_file` (`-X`).
    pub(crate) order: Option<PathBuf>,
}

impl RoutingFiles {
    /// `into` with the GUID lists of the files given (an absent file is an empty list);
    /// its other settings (`max_reverse_hops`) stay.
    ///
    /// # Errors
    /// A file that cannot be read, or its first line that is not a GUID: file, line
    /// and token.
    pub(crate) fn read_into(&self, into: &RoutingInputs) -> Result<RoutingInputs, Error> {
        let read = |p: &Option<PathBuf>| match p {
            Some(p) => ibsm::routing::read_guid_file(p).map_err(Error::GuidFile),
            None => Ok(Vec::new()),
        };
        let mut r = into.clone();
        r.roots = read(&self.roots)?;
        r.compute_nodes = read(&self.compute_nodes)?;
        r.io_nodes = read(&self.io_nodes)?;
        r.order = read(&self.order)?;
        Ok(r)
    }
}

impl Default for Settings {
    fn default() -> Self {
        let mut sm = SmConfig::default();
        // The daemon serves SA as OpenSM always does, over the port's class 0x03 agent
        // with the kernel doing RMPP; the library leaves both to its user.
        sm.sa = true;
        sm.sa_rmpp = ibsm::manager::sa::RmppMode::Kernel;
        Self {
            sm,
            guid: 0,
            max_wire_smps_limit: 0,
            routing_threads: 0,
            partition_file: None,
            part_enforce: Enforcement::default(),
            allow_both_pkeys: false,
            guid2lid: None,
            isolated_ports: None,
            log_flags: 0x03,
            log_file: LogTarget::Stderr,
            accum_log_file: true,
            dump_dir: None,
            routing_files: RoutingFiles::default(),
            topology_ref: None,
            topology_ref_policy: ibsm::manager::topo_ref::TopoPolicy::default(),
            perfmgr: false,
            perf: PerfMgrConfig::default(),
            perfmgr_xmit_wait_log: false,
            perfmgr_xmit_wait_threshold: 65535,
            polling_retries_as_failures: false,
            rest: crate::rest::RestSettings::default(),
            run: Run::default(),
        }
    }
}

impl Settings {
    /// Where the isolated ports are kept: `isolated_ports_file`, else
    /// `ibsm-isolated-ports` beside `guid2lid_file` (so a standby that shares the LIDs
    /// shares the isolations), else in `dump_files_dir`; `None`: only in memory.
    pub(crate) fn isolated_ports_path(&self) -> Option<PathBuf> {
        const NAME: &str = "ibsm-isolated-ports";
        if let Some(p) = &self.isolated_ports {
            return Some(p.clone());
        }
        if let Some(g) = &self.guid2lid {
            let dir = g.parent().filter(|d| !d.as_os_str().is_empty());
            return Some(dir.map_or_else(|| PathBuf::from(NAME), |d| d.join(NAME)));
        }
        self.dump_dir.as_ref().map(|d| d.join(NAME))
    }

    /// The partition policy: `partition_file`'s, or without one the engine's default
    /// (OpenSM's: `Default=0x7fff, ipoib : ALL=full ;`), with `part_enforce` and
    /// `allow_both_pkeys` applied.
    ///
    /// # Errors
    /// A file that cannot be read or parsed: its path, line and column.
    pub(crate) fn load_partitions(&self) -> Result<Option<PartitionConfig>, Error> {
        let policy = match &self.partition_file {
            Some(path) => Some(PartitionConfig::load(path).map_err(Error::Partitions)?),
            None => self.sm.partitions.clone(),
        };
        Ok(policy.map(|mut p| {
            p.enforcement = self.part_enforce;
            p.allow_both_pkeys = self.allow_both_pkeys;
            p
        }))
    }

    /// The engine's configuration, with the partition policy and the routing input
    /// files read (the one time they are read at a start), checked by
    /// `SmConfig::validate`. The port is not known yet: [`Settings::on_port`] finishes
    /// it without reading anything.
    ///
    /// # Errors
    /// A partition or GUID file that does not load, or a value `validate` refuses
    /// ([`Error::Refused`] without a place: [`load`] adds it).
    pub(crate) fn engine_config(&self) -> Result<SmConfig, Error> {
        let mut cfg = self.sm.clone();
        if self.max_wire_smps_limit != 0 {
            cfg.max_wire_smps_limit = self.max_wire_smps_limit;
        }
        cfg.max_wire_smps = cfg.max_wire_smps.min(cfg.max_wire_smps_limit);
        if self.polling_retries_as_failures {
            // N failed polls (0 counts as 1, as before) are N - 1 retries in OpenSM
            // 3.3's count, which the election takes.
            cfg.polling_retries = cfg.polling_retries.max(1) - 1;
        }
        cfg.routing_threads = match self.routing_threads {
            0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            n => n,
        };
        cfg.partitions = self.load_partitions()?;
        cfg.routing_inputs = self.routing_files.read_into(&cfg.routing_inputs)?;
        cfg.perfmgr = self.perfmgr_config(&cfg);
        cfg.topology_ref = self.load_topology_ref()?;
        self.check(&cfg)?;
        Ok(cfg)
    }

    /// The reference topology of `topology_ref_file` (its notes, the lines the reader
    /// skipped, logged), or `None` without one.
    ///
    /// # Errors
    /// [`Error::TopologyRef`]: the file does not read, or a line of it does not parse
    /// (file and line named).
    fn load_topology_ref(&self) -> Result<Option<ibsm::manager::topo_ref::TopologyRef>, Error> {
        let Some(path) = &self.topology_ref else {
            return Ok(None);
        };
        let parsed = ibsm::topology::ibnet::read_file(path).map_err(Error::TopologyRef)?;
        for n in &parsed.notes {
            tracing::info!(file = %path.display(), line = n.line, "topology_ref_file: {}", n.message);
        }
        Ok(Some(ibsm::manager::topo_ref::TopologyRef::new(
            parsed.fabric,
            self.topology_ref_policy,
            path.display().to_string(),
        )))
    }

    /// The PerfMgr's configuration when `perfmgr` is on: `perf` with the SM's
    /// transaction timeout and retries, and the PortXmitWait threshold when
    /// `perfmgr_xmit_wait_log` asks for it.
    fn perfmgr_config(&self, cfg: &SmConfig) -> Option<PerfMgrConfig> {
        self.perfmgr.then(|| {
            let mut p = self.perf.clone();
            p.timeout = cfg.transaction_timeout;
            p.retries = cfg.transaction_retries;
            if self.perfmgr_xmit_wait_log {
                p.set_threshold(Counter::XmitWait, Some(self.perfmgr_xmit_wait_threshold));
            }
            p
        })
    }

    /// `SmConfig::validate`, and the one combination it cannot see: protect bits or a
    /// lease without a key to protect.
    fn check(&self, cfg: &SmConfig) -> Result<(), Error> {
        cfg.validate()
            .map_err(|source| Error::Refused { at: None, source })?;
        if cfg.m_key == MKeyMode::Off && (cfg.m_key_protect != 0 || cfg.m_key_lease != 0) {
            return Err(Error::MKeyNeeded);
        }
        Ok(())
    }

    /// `engine` (this configuration's [`Settings::engine_config`]) on the port it runs
    /// on: only what the port decides changes, nothing is read again.
    #[must_use]
    pub(crate) fn on_port(&self, mut engine: SmConfig, under_ibsim: bool) -> SmConfig {
        if self.max_wire_smps_limit == 0 && under_ibsim {
            // The umad2sim preload holds its global lock while a send blocks on ibsim's
            // full queue, and its reader thread needs that lock to take in answers: a
            // burst of 512 sends deadlocked both sides every time, 256 never did in
            // ~280 runs. Half of that leaves a margin for machines with smaller socket
            // buffers at little cost (ibsim itself answers one MAD at a time). Lower
            // than the checked ceiling and the window with it: still valid.
            engine.max_wire_smps_limit = engine.max_wire_smps_limit.min(128);
            engine.max_wire_smps = engine.max_wire_smps.min(engine.max_wire_smps_limit);
        }
        engine
    }
}

/// Where a value came from: a line of the file or a flag.
#[derive(Debug, Clone)]
pub(crate) enum At {
    /// `file:line: key token`.
    File {
        /// The configuration file.
        file: PathBuf,
        /// Its line (from 1).
        line: usize,
        /// The option.
        key: Key,
        /// The value as written.
        token: String,
    },
    /// `command line: --flag token`.
    Flag {
        /// The flag.
        flag: &'static Flag,
        /// Its value (a switch's: the token it stands for, not shown).
        token: String,
    },
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File {
                file,
                line,
                key,
                token,
            } => write!(f, "{}:{line}: {key} {token}", file.display()),
            Self::Flag { flag, token } => match flag.takes {
                Takes::Value(_) => write!(f, "command line: --{} {token}", flag.long),
                Takes::Switch(_) | Takes::Count(_) => write!(f, "command line: --{}", flag.long),
            },
        }
    }
}

/// `"{at}: "`, or nothing where the place is not known.
fn prefix(at: &Option<Box<At>>) -> String {
    at.as_ref().map_or_else(String::new, |a| format!("{a}: "))
}

/// A configuration that cannot be used, with where it came from.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The configuration file cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A line of the file names an option and no value.
    #[error("{}:{line}: {key}: no value", file.display())]
    NoValue {
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
        /// The option.
        key: Key,
    },
    /// A value that does not read.
    #[error("{at}: {source}")]
    Value {
        /// Where it was written.
        at: Box<At>,
        /// Why it does not read.
        #[source]
        source: ValueError,
    },
    /// A value `SmConfig::validate` refuses.
    #[error("{}{source}", prefix(.at))]
    Refused {
        /// Where the option it names was set (none: its default, or an option the
        /// refusal does not name).
        at: Option<Box<At>>,
        /// The refusal.
        #[source]
        source: SmConfigError,
    },
    /// Protect bits or a lease without a key to protect.
    #[error("m_key_protection_level and m_key_lease_period need an m_key")]
    MKeyNeeded,
    /// The partitions file does not load (its path, line and column).
    #[error("partitions: {0}")]
    Partitions(#[source] PartitionLoadError),
    /// A routing GUID file does not load (its path, line and token).
    #[error(transparent)]
    GuidFile(ReadGuidFileError),
    /// The reference topology does not load (its path, and the line that does not
    /// parse).
    #[error("topology_ref_file: {0}")]
    TopologyRef(#[source] ibsm::topology::ibnet::LoadError),
}

/// Where the settings come from: the file of `-F` and the command line's settings (in
/// table order). A SIGHUP reads both again.
#[derive(Debug, Clone, Default)]
pub(crate) struct Source {
    /// The configuration file (`-F`).
    pub(crate) file: Option<PathBuf>,
    /// The flags given, each with its option.
    pub(crate) flags: Vec<Given>,
}

/// One flag of the command line.
#[derive(Debug, Clone)]
pub(crate) struct Given {
    /// Its option.
    pub(crate) key: Key,
    /// The flag.
    pub(crate) flag: &'static Flag,
    /// Its value (a switch's: the token it stands for; a count's: empty).
    pub(crate) token: String,
}

impl Given {
    /// Applies it to `s`, as the file's value would be.
    fn apply(&self, s: &mut Settings) -> Result<(), Error> {
        let r = match self.flag.takes {
            Takes::Value(_) | Takes::Switch(_) => (self.key.spec().access.set)(s, &self.token),
            Takes::Count(step) => {
                step(s);
                Ok(())
            }
        };
        r.map_err(|source| Error::Value {
            at: Box::new(self.at()),
            source,
        })
    }

    fn at(&self) -> At {
        At::Flag {
            flag: self.flag,
            token: self.token.clone(),
        }
    }
}

impl Source {
    /// The command line's settings over the defaults, without a file: what a client
    /// command needs (its control socket).
    pub(crate) fn flags_only(&self) -> Settings {
        let mut s = Settings::default();
        for g in &self.flags {
            // The parser checked every value with the same function: cannot fail.
            let _ = g.apply(&mut s);
        }
        s
    }

    /// Where `key` was set last: a flag (which wins), else the file's line.
    fn origin(&self, key: Key, report: &FileReport) -> Option<At> {
        if let Some(g) = self.flags.iter().rev().find(|g| g.key == key) {
            return Some(g.at());
        }
        let file = self.file.as_deref()?;
        report.line_of(key).map(|(line, token)| At::File {
            file: file.to_owned(),
            line,
            key,
            token: token.to_owned(),
        })
    }
}

/// The option a refusal of `SmConfig::validate` is about.
fn refused_key(e: &SmConfigError) -> Option<Key> {
    match e {
        SmConfigError::OutOfRange { field, .. } | SmConfigError::Zero { field, .. } => OPTIONS
            .iter()
            .find(|o| o.engine_field == Some(*field))
            .map(|o| o.key),
        SmConfigError::WindowAboveLimit { .. } => Some(Key::MaxWireSmps),
        _ => None,
    }
}

/// The configuration ibsmd runs with: loaded once, at the start or a SIGHUP.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// Defaults, then the file, then the flags.
    pub(crate) settings: Settings,
    /// The engine's configuration from them: files read, checked
    /// ([`Settings::engine_config`]).
    pub(crate) engine: SmConfig,
    /// Warnings and notes from the file (empty without one).
    pub(crate) report: FileReport,
}

/// Defaults, then the file (if any), then the flags; the files they name read and the
/// whole checked as the engine will check it. A refused value names where it came
/// from: the file's line and token, or the flag.
///
/// # Errors
/// A file that cannot be read, a value that does not read or is refused.
pub(crate) fn load(source: &Source) -> Result<Loaded, Error> {
    let mut s = Settings::default();
    let mut report = FileReport::default();
    if let Some(path) = &source.file {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Read {
            path: path.clone(),
            source: e,
        })?;
        report = parse(&text, path, &mut s)?;
    }
    for g in &source.flags {
        g.apply(&mut s)?;
    }
    // OpenSM runs its default policy when the partition file is not there (its default
    // configuration names one); so does ibsmd when the file names it, not the flag.
    if let Some(p) = &s.partition_file {
        let by_flag = source
            .flags
            .iter()
            .any(|g| g.key == Key::PartitionConfigFile);
        if !by_flag && !p.exists() {
            let line = report
                .line_of(Key::PartitionConfigFile)
                .map_or(0, |(n, _)| n);
            report.warnings.push(FileWarning::NoPartitionFile {
                file: source.file.clone().unwrap_or_default(),
                line,
                path: p.clone(),
            });
            s.partition_file = None;
        }
    }
    let engine = s.engine_config().map_err(|e| match e {
        Error::Refused {
            at: None,
            source: refusal,
        } => Error::Refused {
            at: refused_key(&refusal)
                .and_then(|k| source.origin(k, &report))
                .map(Box::new),
            source: refusal,
        },
        other => other,
    })?;
    Ok(Loaded {
        settings: s,
        engine,
        report,
    })
}
