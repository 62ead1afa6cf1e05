//! What the daemon serves between two slices of the engine: the dumps after each heavy
//! sweep (`--dump-dir`), the control socket (`--control-socket`) and the metrics
//! endpoint (`--metrics`). The run loop feeds every engine event to [`Ops::observe`]
//! and calls [`Ops::tick`] between slices.
//!
//! Dumps are rendered on the engine's thread (they read the engine) and written by
//! [`DumpWriter`]'s thread, so a slow disk (fsync, a hung NFS mount) never holds the
//! SM between slices.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use ibsm::manager::dump::Dumps;
use ibsm::manager::{Role, SmEvent, SubnetManager};
use ibsm::transport::Instant;

use ibsm::manager::health::PortKey;

use crate::control::{self, ControlServer, Host, Level, Outcome, PortOp, PortTarget, Refusal};
use crate::metrics::MetricsServer;
use crate::status::{Status, Tracker, role_name};

/// Changes the log level for `log-level` requests.
pub(crate) type SetLevel<'a> = &'a mut dyn FnMut(Level) -> Outcome;

/// Why the daemon's endpoints cannot be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpsError {
    /// The control socket.
    #[error(transparent)]
    Control(#[from] control::BindError),
    /// The metrics endpoint.
    #[error(transparent)]
    Metrics(#[from] crate::metrics::MetricsError),
    /// The dump writer's thread.
    #[error("dump writer thread: {0}")]
    DumpWriter(#[source] std::io::Error),
}

/// The dumps, the control socket and the metrics endpoint of a running daemon.
#[derive(Debug)]
pub(crate) struct Ops {
    control: Option<ControlServer>,
    metrics: Option<MetricsServer>,
    tracker: Tracker,
    dump_dir: Option<PathBuf>,
    /// Writes the dumps (with a dump directory).
    writer: Option<DumpWriter>,
    /// A heavy sweep brought the subnet up since the last dump.
    dump_due: bool,
    /// The fabric picture's source is out of date (a heavy sweep brought the subnet up).
    picture_due: bool,
    /// PerfMgr's port rates for the picture.
    rates: crate::picture::Rates,
    /// Unhealthy ports when the picture was last made.
    picture_unhealthy: usize,
    started: std::time::Instant,
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
    ) -> Result<Self, OpsError> {
        let control = control.map(ControlServer::bind).transpose()?;
        if let Some(c) = &control {
            tracing::info!("control socket {}", c.path().display());
        }
        let metrics = metrics
            .map(|addr| MetricsServer::start(addr, Status::default()))
            .transpose()?;
        if let Some(m) = &metrics {
            tracing::info!("metrics on http://{}/metrics", m.addr());
        }
        let writer = dump_dir
            .as_ref()
            .map(|_| DumpWriter::start(write_dumps))
            .transpose()
            .map_err(OpsError::DumpWriter)?;
        Ok(Self {
            control,
            metrics,
            tracker: Tracker::default(),
            dump_dir,
            writer,
            dump_due: false,
            picture_due: false,
            rates: crate::picture::Rates::default(),
            picture_unhealthy: 0,
            started: std::time::Instant::now(),
        })
    }

    /// Counts one engine event.
    /// The engine's call times as they stand (after a slice of the run loop).
    pub(crate) fn note_busy(&mut self, meter: &ibsm::transport::BusyMeter) {
        self.tracker.engine = crate::status::EngineBusy::of(meter);
    }

    pub(crate) fn observe(&mut self, ev: &SmEvent) {
        self.tracker.observe(ev);
        if matches!(ev, SmEvent::SubnetUp { stats } if stats.heavy) {
            self.dump_due = true;
            self.picture_due = true;
        }
    }

    fn uptime_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1e3
    }

    /// Writes the dumps a heavy sweep made due, answers the control socket's requests
    /// and publishes the status for the metrics endpoint.
    pub(crate) fn tick(&mut self, sm: &mut SubnetManager, now: Instant, set_level: SetLevel<'_>) {
        if std::mem::take(&mut self.dump_due) {
            if let (Some(dir), Some(w)) = (&self.dump_dir, &self.writer) {
                w.submit(Dumps::of(sm), dir.clone(), None);
            }
        }
        let uptime = self.uptime_ms();
        if let Some(server) = self.control.as_mut() {
            let mut host = DaemonHost {
                sm: &mut *sm,
                now,
                tracker: &self.tracker,
                dump_dir: self.dump_dir.as_deref(),
                writer: self.writer.as_ref(),
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
            let status = self.tracker.status(sm, uptime);
            let rated = status
                .perfmgr
                .as_ref()
                .is_some_and(|p| self.rates.update(p, std::time::Instant::now()));
            let unhealthy = sm.health().unhealthy().count();
            let marks_changed = unhealthy != self.picture_unhealthy;
            if std::mem::take(&mut self.picture_due) || rated || marks_changed {
                // A copy of the fabric and the tables; drawn on the HTTP thread.
                if let Some(src) = crate::picture::Source::of(sm, self.rates.get()) {
                    self.picture_unhealthy = unhealthy;
                    m.publish_picture(src);
                }
            }
            m.publish(status);
        }
    }

    /// At the end of a run: writes the dumps if due (`--once` ends before a tick sees
    /// the SUBNET UP) and waits until every dump handed to the writer is on disk.
    pub(crate) fn dump_if_due(&mut self, sm: &SubnetManager) {
        let Some(w) = &self.writer else {
            return;
        };
        if std::mem::take(&mut self.dump_due) {
            if let Some(dir) = &self.dump_dir {
                w.submit(Dumps::of(sm), dir.clone(), None);
            }
        }
        w.wait_idle();
    }
}

/// Writes `dumps` into `dir`: what [`DumpWriter`] runs in the daemon.
fn write_dumps(dumps: &Dumps, dir: &Path) -> Outcome {
    dumps
        .write_to(dir)
        .map(|_| format!("dumps written to {}", dir.display()))
        .map_err(|e| Refusal::Dump(Arc::new(e)))
}

/// How a [`DumpWriter`] writes one set of dumps.
type WriteFn = Box<dyn Fn(&Dumps, &Path) -> Outcome + Send>;

/// One set of dumps to write, and who waits for the outcome.
struct Job {
    dumps: Dumps,
    dir: PathBuf,
    replies: Vec<Sender<Outcome>>,
}

/// What the engine's thread and the writer share.
#[derive(Default)]
struct Queue {
    /// The next dumps to write: a newer set replaces one not started yet (only the
    /// latest subnet is worth the disk), taking over who waits for it.
    next: Option<Job>,
    /// A set is being written.
    busy: bool,
    /// No more sets come: the thread ends when `next` is written.
    closed: bool,
}

/// A thread that writes dumps handed to it, so that the engine's thread only renders
/// them. At most two sets are held: the one being written and the newest waiting.
pub(crate) struct DumpWriter {
    shared: Arc<(Mutex<Queue>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for DumpWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DumpWriter").finish_non_exhaustive()
    }
}

/// The queue, even if the writer panicked while holding it (no update of it can be
/// left half done: each is a few plain assignments with nothing that can panic).
fn lock(m: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl DumpWriter {
    /// Starts the thread, which writes with `write`.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub(crate) fn start(
        write: impl Fn(&Dumps, &Path) -> Outcome + Send + 'static,
    ) -> std::io::Result<Self> {
        let shared = Arc::new((Mutex::new(Queue::default()), Condvar::new()));
        let theirs = Arc::clone(&shared);
        let write: WriteFn = Box::new(write);
        let thread = std::thread::Builder::new()
            .name("ibsmd-dumps".into())
            .spawn(move || Self::run(&theirs, &write))?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    fn run(shared: &(Mutex<Queue>, Condvar), write: &WriteFn) {
        let (m, cv) = shared;
        loop {
            let job = {
                let mut q = lock(m);
                loop {
                    if let Some(job) = q.next.take() {
                        q.busy = true;
                        break job;
                    }
                    if q.closed {
                        return;
                    }
                    q = cv.wait(q).unwrap_or_else(PoisonError::into_inner);
                }
            };
            let outcome = write(&job.dumps, &job.dir);
            match &outcome {
                Ok(m) => tracing::debug!("{m}"),
                Err(e) => tracing::warn!("{e}"),
            }
            for r in job.replies {
                // A client that left no longer listens.
                let _ = r.send(outcome.clone());
            }
            lock(m).busy = false;
            cv.notify_all();
        }
    }

    /// Hands `dumps` to the thread for `dir`; `reply`, if given, gets the outcome.
    /// Returns at once.
    pub(crate) fn submit(&self, dumps: Dumps, dir: PathBuf, reply: Option<Sender<Outcome>>) {
        let (m, cv) = &*self.shared;
        let mut q = lock(m);
        let mut replies: Vec<_> = q.next.take().map(|j| j.replies).unwrap_or_default();
        replies.extend(reply);
        q.next = Some(Job {
            dumps,
            dir,
            replies,
        });
        drop(q);
        cv.notify_all();
    }

    /// Blocks until every set handed over is written (the end of a run only).
    pub(crate) fn wait_idle(&self) {
        let (m, cv) = &*self.shared;
        let mut q = lock(m);
        while q.next.is_some() || q.busy {
            q = cv.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for DumpWriter {
    fn drop(&mut self) {
        let (m, cv) = &*self.shared;
        lock(m).closed = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            // What was handed over is written before the daemon goes.
            let _ = t.join();
        }
    }
}

/// The daemon's side of the requests, for one poll.
struct DaemonHost<'a> {
    sm: &'a mut SubnetManager,
    now: Instant,
    tracker: &'a Tracker,
    dump_dir: Option<&'a Path>,
    writer: Option<&'a DumpWriter>,
    set_level: SetLevel<'a>,
    uptime: f64,
}

impl DaemonHost<'_> {
    fn master(&self) -> Result<(), Refusal> {
        match self.sm.role() {
            Role::Master => Ok(()),
            r => Err(Refusal::NotMaster(role_name(r))),
        }
    }
}

impl Host for DaemonHost<'_> {
    fn status(&mut self) -> Status {
        self.tracker.status(self.sm, self.uptime)
    }

    fn sweep(&mut self, heavy: bool) -> Outcome {
        self.master()?;
        if heavy {
            self.sm.request_heavy_sweep(self.now);
            Ok("heavy sweep requested".into())
        } else if self.sm.request_light_sweep(self.now) {
            Ok("light sweep started".into())
        } else {
            Err(Refusal::SweepRunning)
        }
    }

    fn rebalance(&mut self) -> Outcome {
        self.master()?;
        self.sm.request_rebalance(self.now);
        Ok("rebalance requested (every route recomputed at a heavy sweep)".into())
    }

    fn dump(&mut self) -> Result<Receiver<Outcome>, Refusal> {
        let (Some(dir), Some(w)) = (self.dump_dir, self.writer) else {
            return Err(Refusal::NoDumpDir);
        };
        let (tx, rx) = mpsc::channel();
        w.submit(Dumps::of(self.sm), dir.to_owned(), Some(tx));
        Ok(rx)
    }

    fn set_log_level(&mut self, level: Level) -> Outcome {
        (self.set_level)(level)
    }

    fn port(&mut self, op: PortOp, target: PortTarget) -> Outcome {
        let key = PortKey::new(target.node, target.port);
        match op {
            PortOp::Isolate => Ok(if self.sm.isolate_port(self.now, key)? {
                format!("{key} isolated (routed around from the next heavy sweep)")
            } else {
                format!("{key} was isolated already")
            }),
            PortOp::Clear => Ok(match self.sm.clear_port(self.now, key)? {
                Some(was) => format!("{key} cleared (was: {was})"),
                None => format!("{key} was not marked"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn dumps(text: &str) -> Dumps {
        Dumps {
            lfts: text.into(),
            subnet: String::new(),
            mfts: String::new(),
            sl2vl: String::new(),
            guid2lid: String::new(),
            slurm: String::new(),
        }
    }

    /// A slow disk: the write of a set waits until the test lets it go. Whoever
    /// submits is not held meanwhile, a newer set replaces one not started yet (its
    /// waiters get the newer one's outcome), and what was handed over is written
    /// before the writer goes.
    #[test]
    fn dumps_are_written_off_the_callers_thread() {
        let (gate, opened) = mpsc::channel::<()>();
        let (started_tx, started) = mpsc::channel::<String>();
        let (wrote_tx, wrote) = mpsc::channel::<(String, bool)>();
        let w = DumpWriter::start(move |d, _| {
            started_tx.send(d.lfts.clone()).unwrap();
            // Not a timing assertion: a way out if the write ran on the test's thread.
            let let_go = opened.recv_timeout(Duration::from_secs(10)).is_ok();
            wrote_tx.send((d.lfts.clone(), let_go)).unwrap();
            Ok(format!("wrote {}", d.lfts))
        })
        .unwrap();
        let dir = PathBuf::from("/nonexistent");
        let (tx1, rx1) = mpsc::channel();
        w.submit(dumps("first"), dir.clone(), Some(tx1));
        assert_eq!(started.recv().unwrap(), "first");
        // While it is written: these wait, and the newer replaces the older.
        let (tx2, rx2) = mpsc::channel();
        let (tx3, rx3) = mpsc::channel();
        w.submit(dumps("second"), dir.clone(), Some(tx2));
        w.submit(dumps("third"), dir.clone(), Some(tx3));
        gate.send(()).unwrap();
        assert_eq!(
            wrote.recv().unwrap(),
            ("first".into(), true),
            "held the caller"
        );
        assert_eq!(rx1.recv().unwrap().unwrap(), "wrote first");
        assert_eq!(started.recv().unwrap(), "third");
        gate.send(()).unwrap();
        assert_eq!(wrote.recv().unwrap(), ("third".into(), true));
        assert_eq!(rx2.recv().unwrap().unwrap(), "wrote third");
        assert_eq!(rx3.recv().unwrap().unwrap(), "wrote third");
        w.wait_idle();
        // Handed over, then the writer dropped: written before it goes.
        let (tx4, rx4) = mpsc::channel();
        w.submit(dumps("last"), dir, Some(tx4));
        gate.send(()).unwrap();
        drop(w);
        assert_eq!(rx4.try_recv().unwrap().unwrap(), "wrote last");
    }
}
