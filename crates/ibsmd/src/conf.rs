//! What the daemon runs with: [`Settings`] (the engine's `SmConfig` plus what only the
//! daemon uses), built from the defaults, then the configuration file, then the flags.

use std::path::PathBuf;
use std::time::Duration;

use ibsm::manager::partition::{Enforcement, PartitionConfig};
use ibsm::manager::perfmgr::{Counter, PerfMgrConfig};
use ibsm::manager::{MKeyMode, RoutingInputs, SmConfig};
use ibsm::routing::EngineList;

use crate::cli::{Cli, PartEnforce};

mod file;
#[cfg(test)]
mod tests;

pub(crate) use file::{FileReport, option, options, parse, write};

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
            Some(p) => ibsm::routing::read_guid_file(p).map_err(|e| Error::new(e.to_string())),
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
            log_flags: 0x03,
            log_file: LogTarget::Stderr,
            accum_log_file: true,
            dump_dir: None,
            routing_files: RoutingFiles::default(),
            perfmgr: false,
            perf: PerfMgrConfig::default(),
            perfmgr_xmit_wait_log: false,
            perfmgr_xmit_wait_threshold: 65535,
            polling_retries_as_failures: false,
        }
    }
}

/// A setting that cannot be used, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    /// What and where.
    pub(crate) msg: String,
    /// `SmConfig::validate`'s refusal, when it is one.
    pub(crate) refused: Option<ibsm::manager::ConfigError>,
}

impl Error {
    fn new(msg: String) -> Self {
        Self { msg, refused: None }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

/// OpenSM's `routing_engine` list (`ftree,updn[,no_fallback]`).
pub(crate) fn parse_engines(names: &str) -> Result<EngineList, String> {
    names.parse::<EngineList>().map_err(|e| e.to_string())
}

impl Settings {
    /// The flags over these settings.
    ///
    /// # Errors
    /// A routing engine that does not exist.
    pub(crate) fn apply_cli(&mut self, c: &Cli) -> Result<(), Error> {
        fn set<T: Clone>(to: &mut T, from: Option<&T>) {
            if let Some(v) = from {
                to.clone_from(v);
            }
        }
        let sm = &mut self.sm;
        set(&mut self.guid, c.guid.as_ref());
        set(&mut sm.priority, c.priority.as_ref());
        set(&mut sm.sm_key, c.sm_key.as_ref());
        set(&mut sm.subnet_prefix, c.subnet_prefix.as_ref());
        if let Some(names) = &c.routing_engine {
            sm.routing =
                parse_engines(names).map_err(|e| Error::new(format!("--routing_engine: {e}")))?;
        }
        set(&mut sm.lmc, c.lmc.as_ref());
        set(&mut sm.sm_sl, c.sm_sl.as_ref());
        set(&mut sm.force_link_speed, c.force_link_speed.as_ref());
        set(
            &mut sm.force_link_speed_ext,
            c.force_link_speed_ext.as_ref(),
        );
        set(&mut sm.force_link_width, c.force_link_width.as_ref());
        if let Some(k) = c.m_key {
            sm.m_key = if k == 0 {
                MKeyMode::Off
            } else {
                MKeyMode::Single(k)
            };
        }
        set(&mut sm.m_key_protect, c.m_key_protect.as_ref());
        set(&mut sm.m_key_lease, c.m_key_lease.as_ref());
        set(
            &mut sm.sweep_interval,
            c.sweep.map(Duration::from_secs).as_ref(),
        );
        set(
            &mut sm.transaction_timeout,
            c.transaction_timeout.map(Duration::from_millis).as_ref(),
        );
        set(&mut sm.transaction_retries, c.retries.as_ref());
        set(&mut sm.max_wire_smps, c.maxsmps.as_ref());
        set(
            &mut self.max_wire_smps_limit,
            c.max_wire_smps_limit.as_ref(),
        );
        set(
            &mut sm.polling_timeout,
            c.polling_timeout.map(Duration::from_millis).as_ref(),
        );
        set(&mut sm.polling_retries, c.polling_retries.as_ref());
        if c.polling_retries_as_failures {
            self.polling_retries_as_failures = true;
        }
        if c.no_reroute_on_loss {
            sm.reroute_on_loss = false;
        }
        if let Some(secs) = c.rebalance_after {
            sm.rebalance_after = (secs > 0).then(|| Duration::from_secs(secs));
        }
        let health = &mut sm.health;
        if c.babbling_port_policy {
            health.babbling_port_policy = true;
        }
        set(&mut health.flap_count, c.flap_count.as_ref());
        set(
            &mut health.flap_window,
            c.flap_window.map(Duration::from_secs).as_ref(),
        );
        set(&mut health.trap_limit, c.trap_limit.as_ref());
        set(
            &mut health.trap_window,
            c.trap_window.map(Duration::from_secs).as_ref(),
        );
        set(&mut health.no_answer_sweeps, c.no_answer_sweeps.as_ref());
        set(
            &mut health.quiet_period,
            c.unhealthy_quiet_period.map(Duration::from_secs).as_ref(),
        );
        set(&mut self.routing_threads, c.routing_threads.as_ref());
        if c.guid2lid.is_some() {
            self.guid2lid.clone_from(&c.guid2lid);
        }
        if c.dump_dir.is_some() {
            self.dump_dir.clone_from(&c.dump_dir);
        }
        let files = &mut self.routing_files;
        set(
            &mut files.roots,
            Some(&c.root_guid_file).filter(|p| p.is_some()),
        );
        set(
            &mut files.compute_nodes,
            Some(&c.cn_guid_file).filter(|p| p.is_some()),
        );
        set(
            &mut files.io_nodes,
            Some(&c.io_guid_file).filter(|p| p.is_some()),
        );
        set(
            &mut files.order,
            Some(&c.guid_routing_order_file).filter(|p| p.is_some()),
        );
        set(
            &mut self.sm.routing_inputs.max_reverse_hops,
            c.max_reverse_hops.as_ref(),
        );
        if c.partitions.is_some() {
            self.partition_file.clone_from(&c.partitions);
        }
        if let Some(e) = c.part_enforce {
            self.part_enforce = match e {
                PartEnforce::Both => Enforcement::Both,
                PartEnforce::In => Enforcement::In,
                PartEnforce::Out => Enforcement::Out,
                PartEnforce::Off => Enforcement::Off,
            };
        }
        if c.allow_both_pkeys {
            self.allow_both_pkeys = true;
        }
        if c.no_sa {
            self.sm.sa = false;
        } else if c.sa {
            self.sm.sa = true;
        }
        if let Some(path) = &c.log_file {
            self.log_file = match path.to_str() {
                Some("stderr") => LogTarget::Stderr,
                Some("stdout") => LogTarget::Stdout,
                _ => LogTarget::File(path.clone()),
            };
        }
        if c.erase_log_file {
            self.accum_log_file = false;
        }
        set(&mut self.log_flags, c.log_flags.as_ref());
        if c.perfmgr {
            self.perfmgr = true;
        }
        set(
            &mut self.perf.sweep_time,
            c.perfmgr_sweep_time_s.map(Duration::from_secs).as_ref(),
        );
        if c.max_verbose {
            self.log_flags = 0xFF;
        }
        for _ in 0..c.verbose {
            // OpenSM's -v turns on the next level above those on.
            self.log_flags |= (self.log_flags << 1) | 1;
        }
        Ok(())
    }

    /// The partition policy: `partition_file`'s, or without one the engine's default
    /// (OpenSM's: `Default=0x7fff, ipoib : ALL=full ;`), with `part_enforce` and
    /// `allow_both_pkeys` applied.
    ///
    /// # Errors
    /// A file that cannot be read or parsed: its path, line and column.
    pub(crate) fn load_partitions(&self) -> Result<Option<PartitionConfig>, Error> {
        let policy = match &self.partition_file {
            Some(path) => Some(
                PartitionConfig::load(path).map_err(|e| Error::new(format!("partitions: {e}")))?,
            ),
            None => self.sm.partitions.clone(),
        };
        Ok(policy.map(|mut p| {
            p.enforcement = self.part_enforce;
            p.allow_both_pkeys = self.allow_both_pkeys;
            p
        }))
    }

    /// The engine's configuration on a port (`under_ibsim` lowers the automatic SMP
    /// window ceiling), with the partition policy, checked by `SmConfig::validate`.
    ///
    /// # Errors
    /// A partition file that does not load, or a value `validate` refuses.
    pub(crate) fn engine_config(&self, under_ibsim: bool) -> Result<SmConfig, Error> {
        let mut cfg = self.sm.clone();
        // The umad2sim preload holds its global lock while a send blocks on ibsim's
        // full queue, and its reader thread needs that lock to take in answers: a burst
        // of 512 sends deadlocked both sides every time, 256 never did in ~280 runs.
        // Half of that leaves a margin for machines with smaller socket buffers at
        // little cost (ibsim itself answers one MAD at a time).
        cfg.max_wire_smps_limit = match self.max_wire_smps_limit {
            0 if under_ibsim => 128,
            0 => cfg.max_wire_smps_limit,
            n => n,
        };
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
        self.check(&cfg)?;
        Ok(cfg)
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
        cfg.validate().map_err(|e| Error {
            msg: e.to_string(),
            refused: Some(e),
        })?;
        if cfg.m_key == MKeyMode::Off && (cfg.m_key_protect != 0 || cfg.m_key_lease != 0) {
            return Err(Error::new(
                "m_key_protection_level and m_key_lease_period need an m_key".into(),
            ));
        }
        Ok(())
    }
}

/// The settings ibsmd runs with, and what the file said about itself.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// Defaults, then the file, then the flags.
    pub(crate) settings: Settings,
    /// Warnings and notes from the file (empty without one).
    pub(crate) report: FileReport,
}

/// The `SmConfig` field a refusal of `validate` names.
fn refused_field(e: &ibsm::manager::ConfigError) -> Option<&'static str> {
    use ibsm::manager::ConfigError as E;
    match e {
        E::OutOfRange { field, .. } | E::Zero { field, .. } => Some(field),
        E::WindowAboveLimit { .. } => Some("max_wire_smps"),
        _ => None,
    }
}

/// Defaults, then the file of `-F` (if any), then the flags; checked as the engine will
/// check them. A refused value names where it came from: the file's line and token, or
/// the command line.
///
/// # Errors
/// A file that cannot be read, a value that does not read or is refused.
pub(crate) fn load(cli: &Cli) -> Result<Loaded, Error> {
    let mut s = Settings::default();
    let mut report = FileReport::default();
    let mut name = String::new();
    if let Some(path) = &cli.config {
        name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::new(format!("{name}: {e}")))?;
        report = parse(&text, &name, &mut s)?;
    }
    // Which options the flags set: those the flags change on the defaults.
    let mut flags_only = Settings::default();
    flags_only.apply_cli(cli)?;
    let defaults = Settings::default();
    let by_flag =
        |key: &str| option(key).is_some_and(|o| (o.get)(&flags_only) != (o.get)(&defaults));
    s.apply_cli(cli)?;
    // OpenSM runs its default policy when the partition file is not there (its default
    // configuration names one); so does ibsmd when the file names it, not the flag.
    if let Some(p) = &s.partition_file {
        if !by_flag("partition_config_file") && !p.exists() {
            let (n, _) = report.line_of("partition_config_file").unwrap_or((0, ""));
            report.warnings.push(format!(
                "{name}:{n}: partition_config_file {}: no such file; OpenSM's default policy is in force",
                p.display()
            ));
            s.partition_file = None;
        }
    }
    if let Err(e) = s.engine_config(false) {
        let key = e
            .refused
            .as_ref()
            .and_then(refused_field)
            .and_then(|f| options().find(|o| o.field == f))
            .map(|o| o.key);
        let Some(key) = key else { return Err(e) };
        if by_flag(key) {
            return Err(Error::new(format!("command line: {e}")));
        }
        if let Some((n, token)) = report.line_of(key) {
            return Err(Error::new(format!("{name}:{n}: {key} {token}: {e}")));
        }
        return Err(e);
    }
    Ok(Loaded {
        settings: s,
        report,
    })
}
