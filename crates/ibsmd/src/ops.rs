//! What the daemon serves between two slices of the engine: the dumps after each heavy
//! sweep (`--dump-dir`), the control socket (`--control-socket`) and the metrics
//! endpoint (`--metrics`). The run loop feeds every engine event to [`Ops::observe`]
//! and calls [`Ops::tick`] between slices.

use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;

use ibsm::manager::dump::Dumps;
use ibsm::manager::{Role, SmEvent, SubnetManager};
use ibsm::transport::Instant;

use crate::control::{self, ControlServer, Host, Level};
use crate::metrics::MetricsServer;
use crate::status::{Status, Tracker, role_name};

/// Changes the log level for `log-level` requests.
pub(crate) type SetLevel<'a> = &'a mut dyn FnMut(Level) -> Result<String, String>;

/// The dumps, the control socket and the metrics endpoint of a running daemon.
#[derive(Debug)]
pub(crate) struct Ops {
    control: Option<ControlServer>,
    metrics: Option<MetricsServer>,
    tracker: Tracker,
    dump_dir: Option<PathBuf>,
    /// A heavy sweep brought the subnet up since the last dump.
    dump_due: bool,
    started: WallInstant,
}

impl Ops {
    /// Opens the control socket at `control` and the metrics endpoint at `metrics`
    /// (each when given); dumps go to `dump_dir`.
    ///
    /// # Errors
    /// The socket or the endpoint cannot be opened.
    pub(crate) fn start(
        control: Option<&Path>,
        metrics: Option<&str>,
        dump_dir: Option<PathBuf>,
    ) -> Result<Self, String> {
        let control = control
            .map(ControlServer::bind)
            .transpose()
            .map_err(|e| e.to_string())?;
        if let Some(c) = &control {
            tracing::info!("control socket {}", c.path().display());
        }
        let metrics = metrics
            .map(|addr| MetricsServer::start(addr, Status::default()))
            .transpose()
            .map_err(|e| e.to_string())?;
        if let Some(m) = &metrics {
            tracing::info!("metrics on http://{}/metrics", m.addr());
        }
        Ok(Self {
            control,
            metrics,
            tracker: Tracker::default(),
            dump_dir,
            dump_due: false,
            started: WallInstant::now(),
        })
    }

    /// Counts one engine event.
    pub(crate) fn observe(&mut self, ev: &SmEvent) {
        self.tracker.observe(ev);
        if matches!(ev, SmEvent::SubnetUp { stats } if stats.heavy) {
            self.dump_due = true;
        }
    }

    fn uptime_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1e3
    }

    /// Writes the dumps a heavy sweep made due, answers the control socket's requests
    /// and publishes the status for the metrics endpoint.
    pub(crate) fn tick(&mut self, sm: &mut SubnetManager, now: Instant, set_level: SetLevel<'_>) {
        if std::mem::take(&mut self.dump_due) {
            if let Some(dir) = &self.dump_dir {
                match write_dumps(sm, dir) {
                    Ok(m) => tracing::debug!("{m}"),
                    Err(e) => tracing::warn!("{e}"),
                }
            }
        }
        let uptime = self.uptime_ms();
        if let Some(server) = self.control.as_mut() {
            let mut host = DaemonHost {
                sm: &mut *sm,
                now,
                tracker: &self.tracker,
                dump_dir: self.dump_dir.as_deref(),
                set_level: &mut *set_level,
                uptime,
            };
            server.poll(|req| {
                if let Ok(r) = &req {
                    tracing::info!("control: {r}");
                }
                control::answer(&mut host, req)
            });
        }
        if let Some(m) = &self.metrics {
            m.publish(self.tracker.status(sm, uptime));
        }
    }

    /// Writes the dumps now, if a dump directory is set (`--once` calls this at the end:
    /// its run ends before a tick sees the SUBNET UP).
    pub(crate) fn dump_if_due(&mut self, sm: &SubnetManager) {
        if std::mem::take(&mut self.dump_due) {
            if let Some(dir) = &self.dump_dir {
                if let Err(e) = write_dumps(sm, dir) {
                    tracing::warn!("{e}");
                }
            }
        }
    }
}

fn write_dumps(sm: &SubnetManager, dir: &Path) -> Result<String, String> {
    Dumps::of(sm)
        .write_to(dir)
        .map(|_| format!("dumps written to {}", dir.display()))
        .map_err(|e| format!("dump: {e}"))
}

/// The daemon's side of the requests, for one poll.
struct DaemonHost<'a> {
    sm: &'a mut SubnetManager,
    now: Instant,
    tracker: &'a Tracker,
    dump_dir: Option<&'a Path>,
    set_level: SetLevel<'a>,
    uptime: f64,
}

impl DaemonHost<'_> {
    fn master(&self) -> Result<(), String> {
        match self.sm.role() {
            Role::Master => Ok(()),
            r => Err(format!("not Master ({}): the master sweeps", role_name(r))),
        }
    }
}

impl Host for DaemonHost<'_> {
    fn status(&mut self) -> Status {
        self.tracker.status(self.sm, self.uptime)
    }

    fn sweep(&mut self, heavy: bool) -> Result<String, String> {
        self.master()?;
        if heavy {
            self.sm.request_heavy_sweep(self.now);
            Ok("heavy sweep requested".into())
        } else if self.sm.request_light_sweep(self.now) {
            Ok("light sweep started".into())
        } else {
            Err("a sweep is running; no light sweep started".into())
        }
    }

    fn rebalance(&mut self) -> Result<String, String> {
        self.master()?;
        self.sm.request_rebalance(self.now);
        Ok("rebalance requested (every route recomputed at a heavy sweep)".into())
    }

    fn dump(&mut self) -> Result<String, String> {
        let dir = self
            .dump_dir
            .ok_or("no dump directory (--dump-dir or dump_files_dir)")?;
        write_dumps(self.sm, dir)
    }

    fn set_log_level(&mut self, level: Level) -> Result<String, String> {
        (self.set_level)(level)
    }
}
