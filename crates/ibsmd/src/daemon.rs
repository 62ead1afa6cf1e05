//! The run loop: the engine on a umad port, driven in short slices so signals (and
//! whatever else the daemon serves between slices) are noticed within
//! [`SLICE`]. [`Daemon::housekeeping`] is the one place that runs between slices.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use ibsm::manager::isolation::FileIsolationStore;
use ibsm::manager::{FileLidStore, Role, SmError, SmEvent, SubnetManager};
use ibsm::transport::{BusyMeter, JobRunner, Metered, Transport, TransportError, drive};
use ibsm::umad::{OpenOptions, RequestSignal, Selector, StopSignals, UmadTransport};
use tracing::{debug, error, info, warn};

use crate::conf::{self, Apply, Loaded, OPTIONS, Setter, Settings, Source};
use crate::logging::Log;
use crate::no_sa::RefuseSa;
use crate::ops::Ops;
use crate::rest::RestServer;
use crate::summary::Outcome;

/// How long the engine runs between two calls of [`Daemon::housekeeping`].
pub(crate) const SLICE: Duration = Duration::from_millis(200);

/// A call into the engine this long is logged as a warning: the port went unread for
/// that long (the issue-25 target for the longest SMInfo or SA answer delay is 50 ms).
const SILENT: Duration = Duration::from_millis(50);

/// Why the daemon could not run on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The configuration is unusable (exit 2).
    #[error(transparent)]
    Config(#[from] conf::Error),
    /// The engine refused its configuration on this port (exit 2).
    #[error(transparent)]
    Engine(SmError),
    /// The control socket or the metrics endpoint cannot be opened (exit 2).
    #[error(transparent)]
    Ops(#[from] crate::ops::OpsError),
    /// The partition API cannot start (exit 2).
    #[error(transparent)]
    Rest(#[from] crate::rest::RestError),
    /// No usable port, or a signal handler that cannot be installed (exit 3).
    #[error(transparent)]
    Umad(#[from] ibsm::umad::Error),
    /// The engine's start or its transport failed (exit 3).
    #[error(transparent)]
    Port(SmError),
}

impl Failure {
    /// Whether it is the configuration's fault (exit 2) rather than the port's (3).
    pub(crate) fn is_config(&self) -> bool {
        matches!(
            self,
            Self::Config(_) | Self::Engine(_) | Self::Ops(_) | Self::Rest(_)
        )
    }
}

/// A run-time option's setter that did not take the new value.
#[derive(Debug, thiserror::Error)]
enum SetterError {
    /// The log.
    #[error(transparent)]
    Log(#[from] crate::logging::LogError),
    /// The engine.
    #[error(transparent)]
    Engine(#[from] ibsm::manager::SmConfigError),
}

/// Why the loop ended without a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// SIGINT or SIGTERM (its number).
    Signal(i32),
    /// `--time-limit` passed (or `--once`'s default one).
    TimeLimit,
    /// `--once` saw SUBNET UP.
    SubnetUp,
}

/// A transport failure as the daemon reports it (worded as the engine's error).
fn port_failure(e: TransportError) -> Failure {
    Failure::Port(SmError::from(e))
}

/// The name the log and the summary use for a role.
pub(crate) fn role_name(r: Role) -> &'static str {
    match r {
        Role::Discovering => "DISCOVERING",
        Role::Standby => "STANDBY",
        Role::Master => "MASTER",
        Role::NotActive => "NOT ACTIVE",
    }
}

/// A running SM on a port.
pub(crate) struct Daemon {
    /// The engine.
    pub(crate) sm: SubnetManager,
    /// Its port.
    pub(crate) port: UmadTransport,
    /// Runs the engine's jobs; kept across slices, so that a job still running when a
    /// slice ends is fed back in a later one.
    jobs: JobRunner<crate::jobs::Timed>,
    /// How long each job sleeps first (a testing aid, `jobs.rs`).
    job_delay: Duration,
    /// The wall time of every call into the engine.
    busy: BusyMeter,
    /// The settings in force (their run-time options replaced by a SIGHUP re-read).
    pub(crate) settings: Settings,
    /// Where they came from, read again at a SIGHUP.
    source: Source,
    /// SA requests refused (`--no-sa`).
    pub(crate) sa_refused: u64,
    /// What the run saw, for the summary.
    pub(crate) out: Outcome,
    /// When the daemon started (wall clock, for log times and the time limit).
    pub(crate) wall: Instant,
    log: Log,
    /// Dumps, control socket, metrics.
    ops: Ops,
    /// The partition API (`--rest`).
    rest: Option<RestServer>,
    stop: StopSignals,
    hangup: RequestSignal,
    user1: RequestSignal,
    end: Option<Instant>,
    limit: Option<u64>,
}

impl Daemon {
    /// Opens the port, builds the engine from the loaded configuration and starts it;
    /// `source` is kept for SIGHUP re-reads.
    ///
    /// # Errors
    /// [`Failure::Umad`] or [`Failure::Port`] when no port opens or the engine cannot
    /// start on it, [`Failure::Engine`] when it refuses the configuration,
    /// [`Failure::Ops`] when the control socket or metrics endpoint cannot be opened,
    /// [`Failure::Rest`] when the partition API's options or files are refused or its
    /// address cannot be bound.
    pub(crate) fn start(loaded: Loaded, source: Source, log: Log) -> Result<Self, Failure> {
        let Loaded {
            settings, engine, ..
        } = loaded;
        let wall = Instant::now();
        let stop = StopSignals::install()?;
        let hangup = RequestSignal::hangup()?;
        let user1 = RequestSignal::user1()?;
        // Its files are read (and refused) before the port is opened.
        let rest = RestServer::prepare(&settings.rest, settings.partition_file.as_deref())?;
        let run = &settings.run;
        let opts = OpenOptions {
            selector: Selector {
                ca: run.ca.clone(),
                port: run.port,
                guid: (settings.guid != 0).then_some(settings.guid),
            },
            // Always: without a class 0x03 agent an SA request reaching the port finds no
            // receiver (under ibsim the preload then crashes the process).
            sa_agent: true,
            // The PerfMgr's counter queries go out through a class 0x04 client agent.
            perf_agent: settings.perfmgr,
            ..OpenOptions::default()
        };
        let mut port = UmadTransport::open(&opts)?;
        port.set_is_sm(true).map_err(port_failure)?;
        let local = port.local_port();
        let desc = port.port().desc().clone();
        let under_ibsim = port.port().under_ibsim();
        let cfg = settings.on_port(engine, under_ibsim);
        info!(
            "ibsmd on {} port {} (umad{}, port GUID {:#018x}, priority {}, routing {}{}{})",
            desc.ca,
            desc.port,
            desc.umad_index,
            local.port_guid,
            cfg.priority,
            cfg.routing,
            if cfg.sa { ", SA" } else { ", no SA" },
            if under_ibsim { ", under ibsim" } else { "" }
        );
        let mut sm = match &settings.guid2lid {
            Some(path) => SubnetManager::with_store(cfg, local, Box::new(FileLidStore::new(path))),
            None => SubnetManager::new(cfg, local),
        }
        .map_err(Failure::Engine)?;
        if let Some(path) = settings.isolated_ports_path() {
            info!("isolated ports kept in {}", path.display());
            sm.set_isolation_store(Box::new(FileIsolationStore::new(path)));
        }
        // Routing runs on a worker thread (`jobs.rs`): the SM answers while it routes.
        sm.set_job_offload(true);
        sm.start(port.now()).map_err(Failure::Port)?;
        let limit = run.time_limit.or(run.once.then_some(60)).filter(|s| *s > 0);
        // A --once run has no socket unless asked for one; a daemon has the default one.
        let socket = run
            .control_socket
            .clone()
            .or_else(|| (!run.once).then(crate::control::default_path));
        let metrics = run.metrics.as_deref();
        let ops = match Ops::start(socket.as_deref(), metrics, settings.dump_dir.clone()) {
            Ok(o) => o,
            // The default socket may not be creatable (no /run access): run without it.
            Err(e) if run.control_socket.is_none() && socket.is_some() => {
                warn!("{e}; no control socket (give --control-socket)");
                Ops::start(None, metrics, settings.dump_dir.clone())?
            }
            Err(e) => return Err(e.into()),
        };
        let rest = rest.map(RestServer::start).transpose()?;
        if let Some(r) = &rest {
            info!("partition API on {}://{}/ufmRest/", r.scheme(), r.addr());
        }
        Ok(Self {
            sm,
            port,
            jobs: crate::jobs::runner(),
            job_delay: crate::jobs::test_delay(),
            busy: BusyMeter::default(),
            out: Outcome::new(desc.ca.clone(), desc.port, local.port_guid),
            settings,
            source,
            sa_refused: 0,
            wall,
            log,
            ops,
            rest,
            stop,
            hangup,
            user1,
            end: limit.map(|s| wall + Duration::from_secs(s)),
            limit,
        })
    }

    /// Milliseconds since the start, for log lines.
    fn ms(&self) -> f64 {
        self.wall.elapsed().as_secs_f64() * 1e3
    }

    /// Runs until a stop signal, the time limit, or (`--once`) SUBNET UP.
    ///
    /// # Errors
    /// [`Failure::Port`] when the transport fails.
    pub(crate) fn run(&mut self) -> Result<Stop, Failure> {
        loop {
            if let Some(stop) = self.housekeeping() {
                return Ok(stop);
            }
            if self.slice()? {
                return Ok(Stop::SubnetUp);
            }
        }
    }

    /// Runs between two slices of the engine: signals, the time limit. Add what else the
    /// daemon serves between sweeps here (it runs at least every [`SLICE`]).
    pub(crate) fn housekeeping(&mut self) -> Option<Stop> {
        if let Some(sig) = self.stop.caught() {
            info!("{}: stopping", StopSignals::name(sig));
            self.out.signal = Some(StopSignals::name(sig));
            return Some(Stop::Signal(sig));
        }
        if self.hangup.take() {
            self.on_hangup();
        }
        self.take_api_changes();
        if self.user1.take() {
            match self.log.reopen() {
                Ok(Some(path)) => info!("SIGUSR1: log file {} reopened", path.display()),
                Ok(None) => info!("SIGUSR1: no log file to reopen"),
                Err(e) => error!("SIGUSR1: {e}; logging on to the file in use"),
            }
        }
        let log = &self.log;
        let mut set_level = |l: crate::control::Level| {
            log.set_level(l.as_str())
                .map(|()| format!("log level {}", l.as_str()))
                .map_err(|e| crate::control::Refusal::Log(std::sync::Arc::new(e)))
        };
        self.ops.tick(&mut self.sm, self.port.now(), &mut set_level);
        if self.end.is_some_and(|e| Instant::now() >= e) {
            if self.settings.run.once {
                error!(
                    "subnet not up within {} s (role {})",
                    self.limit.unwrap_or(0),
                    role_name(self.sm.role())
                );
            }
            return Some(Stop::TimeLimit);
        }
        None
    }

    /// One [`SLICE`] of the engine; whether `--once` is done.
    fn slice(&mut self) -> Result<bool, Failure> {
        let until = self.port.now() + SLICE;
        let once = self.settings.run.once;
        let wall = self.wall;
        let out = &mut self.out;
        let ops = &mut self.ops;
        let mut done = false;
        let on = |ev: SmEvent| {
            let ms = wall.elapsed().as_secs_f64() * 1e3;
            on_event(&ev, ms, out);
            ops.observe(&ev);
            done = once && matches!(ev, SmEvent::SubnetUp { .. });
            if done {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let stop = ibsm::transport::Stop::at(until);
        let sa = self.sm.config().sa;
        let mut engine = crate::jobs::Engine::new(&mut self.sm, self.job_delay);
        let mut engine = Metered::new(&mut engine, &mut self.busy);
        let ran = if sa {
            drive(&mut engine, &mut self.port, &mut self.jobs, stop, on)
        } else {
            let mut port = RefuseSa {
                inner: &mut self.port,
                refused: &mut self.sa_refused,
            };
            drive(&mut engine, &mut port, &mut self.jobs, stop, on)
        };
        ran.map_err(port_failure)?;
        if let Some((call, took)) = self.busy.take_window().filter(|&(_, d)| d >= SILENT) {
            warn!(
                "the engine kept the port unread for {:.0} ms in one call ({call})",
                took.as_secs_f64() * 1e3
            );
        }
        self.ops.note_busy(&self.busy);
        Ok(done)
    }

    /// SIGHUP, as OpenSM: re-read the configuration file (with the flags over it) and
    /// the partitions file, apply what can change at run time, and rebalance.
    fn on_hangup(&mut self) {
        let source = &self.source;
        // With the partition API the re-read runs under its lock: no change can be
        // written between the read and the drop of what the API left for the loop.
        let loaded = match &self.rest {
            Some(r) => r.reload(
                || conf::load(source),
                |l: &Loaded| l.settings.partition_file.clone(),
            ),
            None => conf::load(source),
        };
        match loaded {
            Ok(loaded) => self.reconfigure(&loaded),
            Err(e) => error!("SIGHUP: {e}; the configuration in force stays"),
        }
        if let Some(r) = &self.rest {
            match r.reload_credentials() {
                Ok(()) => info!("SIGHUP: the partition API's users read again"),
                Err(e) => error!("SIGHUP: {e}; the partition API's users in force stay"),
            }
        }
        if self.sm.role() == Role::Master {
            info!("SIGHUP: rebalancing (every route recomputed at a heavy sweep)");
            self.sm.request_rebalance(self.port.now());
        } else {
            info!(
                "SIGHUP: not Master ({}), nothing to rebalance",
                role_name(self.sm.role())
            );
        }
    }

    /// Hands the policy the partition API wrote since the last call (every change
    /// since, as one policy) to the engine: one heavy sweep applies them all.
    fn take_api_changes(&mut self) {
        let Some(mut policy) = self.rest.as_ref().and_then(RestServer::take_pending) else {
            return;
        };
        policy.enforcement = self.settings.part_enforce;
        policy.allow_both_pkeys = self.settings.allow_both_pkeys;
        info!("partition API: partitions changed, applied at a heavy sweep");
        self.sm.set_partitions(self.port.now(), Some(policy));
    }

    /// Applies a re-read configuration as the option table says: each changed run-time
    /// option through its setter (its value in force only once the setter took it),
    /// each other change reported as waiting for a restart.
    fn reconfigure(&mut self, loaded: &Loaded) {
        for w in &loaded.report.warnings {
            warn!("SIGHUP: {w}");
        }
        let new = &loaded.settings;
        let mut due = std::collections::BTreeSet::new();
        for o in OPTIONS {
            let (old, now) = ((o.access.get)(&self.settings), (o.access.get)(new));
            if old == now {
                continue;
            }
            match o.apply {
                Apply::Live(setter) => {
                    info!("SIGHUP: {} {old} -> {now}", o.name);
                    due.insert(setter);
                }
                Apply::Restart => warn!(
                    "SIGHUP: {} {old} -> {now} takes effect at the next start",
                    o.name
                ),
            }
        }
        // The partitions file is read again even when its name stayed: its text may
        // not have. Without a file the policy changes only with part_enforce or
        // allow_both_pkeys (a needless set_partitions would add a heavy sweep).
        if new.partition_file.is_some() || self.settings.partition_file.is_some() {
            due.insert(Setter::Partitions);
        }
        // The reference topology likewise: the plan may have been edited in place.
        if new.topology_ref.is_some() || self.settings.topology_ref.is_some() {
            due.insert(Setter::TopologyRef);
        }
        for setter in due {
            match self.set(setter, loaded) {
                Ok(()) => {
                    for o in OPTIONS.iter().filter(|o| o.apply == Apply::Live(setter)) {
                        // Spelled and read back: the table's round trip, which the
                        // file's tests prove for every option.
                        let _ = (o.access.set)(&mut self.settings, &(o.access.get)(new));
                    }
                }
                Err(e) => error!("SIGHUP: {setter:?}: {e}; the value in force stays"),
            }
        }
    }

    /// Runs one run-time setter with the re-read configuration.
    fn set(&mut self, setter: Setter, loaded: &Loaded) -> Result<(), SetterError> {
        let (new, now) = (&loaded.settings, self.port.now());
        match setter {
            Setter::LogFlags => self.log.set_flags(new.log_flags)?,
            Setter::SweepInterval => self.sm.set_sweep_interval(now, new.sm.sweep_interval),
            Setter::Priority => self.sm.set_priority(new.sm.priority)?,
            Setter::MaxWireSmps => self.sm.set_max_wire_smps(new.sm.max_wire_smps)?,
            Setter::Partitions => {
                // Read by `conf::load` a moment ago, not again.
                info!("SIGHUP: partitions re-read");
                self.sm
                    .set_partitions(now, loaded.engine.partitions.clone());
            }
            Setter::TopologyRef => {
                info!("SIGHUP: reference topology re-read");
                self.sm
                    .set_topology_ref(now, loaded.engine.topology_ref.clone());
            }
        }
        Ok(())
    }

    /// After `--once` came up: absorb what is still on its way (traps of ports going
    /// Active, late answers) before closing, for the umad2sim preload crashes now and
    /// then when a MAD arrives while it tears down.
    ///
    /// # Errors
    /// [`Failure::Port`] when the transport fails.
    pub(crate) fn drain(&mut self) -> Result<(), Failure> {
        let until = self.port.now() + Duration::from_millis(100);
        let stop = ibsm::transport::Stop::at(until);
        let mut engine = crate::jobs::Engine::new(&mut self.sm, self.job_delay);
        drive(&mut engine, &mut self.port, &mut self.jobs, stop, |_| {
            ControlFlow::Continue(())
        })
        .map_err(port_failure)?;
        Ok(())
    }

    /// The run's end in the log (and the summary's last fields).
    pub(crate) fn finish(&mut self) {
        // --once ends at SUBNET UP, before a housekeeping pass could write the dumps.
        self.ops.dump_if_due(&self.sm);
        self.out.wall_ms = self.ms();
        self.out.role = role_name(self.sm.role());
        self.out.sm_lid = self.sm.sm_lid();
        if let Some(sa) = self.sm.sa() {
            info!("SA: {:?}", sa.counters());
        } else {
            info!("SA off: {} requests refused", self.sa_refused);
        }
        if let Some((ms, s)) = &self.out.first_up {
            let by_attr: Vec<String> = s
                .by_attribute
                .iter()
                .map(|(a, n)| format!("{a} {n}"))
                .collect();
            info!(
                "first sweep: {ms:.0} ms to SUBNET UP, {} nodes ({} switches), {} links, {} LIDs",
                s.nodes, s.switches, s.links, s.lids
            );
            info!(
                "  SMPs {} (retries {}, timeouts {}), window up to {}, LFT blocks {}, PortInfo sets {}, P_Key blocks {}, routing {} {:.1} ms",
                s.smps,
                s.retries,
                s.timeouts,
                s.max_window,
                s.lft_blocks,
                s.port_sets,
                s.pkey_blocks,
                s.routing_engine,
                s.routing_wall.as_secs_f64() * 1e3
            );
            info!("  by attribute: {}", by_attr.join(", "));
        }
    }
}

/// Logs one event and counts it in the summary. SUBNET UP, role changes and problems
/// at info and above; the routine ones at debug (`-v`).
fn on_event(ev: &SmEvent, ms: f64, out: &mut Outcome) {
    match ev {
        SmEvent::SubnetUp { stats } => {
            info!(
                "SUBNET UP ({ms:.0} ms): {} nodes ({} switches), {} LIDs, {} SMPs, routing {} ({}), routing wall {:.1} ms, LFT blocks {} ({} entries changed), P_Key blocks {}",
                stats.nodes,
                stats.switches,
                stats.lids,
                stats.smps,
                stats.routing_engine,
                if stats.rerouted {
                    "re-routed after a loss"
                } else {
                    "computed"
                },
                // Every heavy sweep's, not only the first's (the summary at exit): what
                // an operator compares when a sweep got slow.
                stats.routing_wall.as_secs_f64() * 1e3,
                stats.lft_blocks,
                stats.lft_entries,
                stats.pkey_blocks
            );
        }
        SmEvent::RoleChanged { role } => info!("{} ({ms:.0} ms)", role_name(*role)),
        SmEvent::LightSweepDone { stats } => {
            debug!(
                "{ms:>9.0} ms light sweep: nothing to do ({} SMPs)",
                stats.smps
            );
        }
        SmEvent::Trap { number, issuer_lid } => {
            debug!("{ms:>9.0} ms trap {number} from LID {issuer_lid:#x}");
        }
        SmEvent::PortLocked { guid } => {
            warn!("port {guid:#018x} ignores our M_Key; not configuring it");
        }
        SmEvent::DuplicateGuid {
            guid,
            port,
            first,
            second,
        } => {
            let what = if *port { "port" } else { "node" };
            warn!(
                "{what} GUID {guid:#018x} answered at route {first} and at {second}; leaving the second out"
            );
        }
        SmEvent::UnauthenticatedSm { guid } => {
            warn!("SM {guid:#018x} has a different SM_Key; never handing over");
        }
        SmEvent::PartitionWarning { warning } => warn!("partitions: {warning}"),
        SmEvent::RoutingFailed { error } => error!("routing failed: {error}"),
        SmEvent::SweepFailed { reason } => warn!("sweep failed: {reason}"),
        other => debug!("{ms:>9.0} ms {other:?}"),
    }
    out.count(ev, ms);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_failures_are_told_from_port_failures() {
        // Exit 2 (the configuration) against exit 3 (the port): by the error's type.
        let config = [
            Failure::from(conf::Error::MKeyNeeded),
            Failure::from(crate::ops::OpsError::DumpWriter(std::io::Error::other(
                "no threads",
            ))),
        ];
        for f in &config {
            assert!(f.is_config(), "{f}");
        }
        let port = port_failure(TransportError::Timeout);
        assert!(!port.is_config(), "{port}");
        // Worded as the engine words it, as before the types.
        assert_eq!(
            port.to_string(),
            SmError::from(TransportError::Timeout).to_string()
        );
    }
}
