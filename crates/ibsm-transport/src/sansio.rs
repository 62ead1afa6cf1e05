//! The one sans-IO contract ([`SansIo`]) and the one run loop over it ([`drive`]).
//!
//! Every protocol core of the workspace (the SM engine, the SA, SMP and PerfMgt
//! clients, the discovery walk, the counter scrape, the transaction layer) is a state
//! machine that never reads a clock, sleeps or touches a device: every input carries
//! `now`, every output is pulled. [`SansIo`] is that shape, with one set of
//! signatures, and [`drive`] is the loop that runs any core over any [`Transport`]:
//!
//! ```text
//! loop {
//!     run jobs:  while core.poll_job()   { Inline: core.handle_job(now, job.run()) }
//!                while jobs.poll_done()  { core.handle_job(now, output) }   // Threads
//!     while let Some(out) = core.poll_transmit(now) {
//!         transport.send(out)                  // fatal error: return it
//!             or core.handle_send_error(now, out.id, error), then run jobs
//!     }
//!     while let Some(ev) = core.poll_event() { on_event(ev) }   // Break: stop
//!     stop if now >= stop.until, or (Stop::when_idle) core.is_idle() and no job runs
//!     deadline = min(core.poll_timeout(), stop.until)
//!                (while a job runs on a thread: at most JOB_POLL from now)
//!     match transport.recv(deadline) {
//!         Ok(incoming) => core.handle_incoming(now, incoming),
//!         Err(fatal)   => return it,
//!         Err(_)       => core.handle_timeout(now),   // not when only JOB_POLL passed
//!     }
//! }
//! ```
//!
//! # Jobs
//!
//! A core hands long computations (routing a large fabric, say) out as typed
//! [`Job`]s instead of running them inside a `handle_*` call, so that the loop keeps
//! answering while they run. Their output comes back as one more input,
//! [`SansIo::handle_job`], at a point the driver defines: with
//! [`JobPolicy::Inline`] a job runs on the driver's thread the moment it is polled and
//! its output is fed back before anything else happens (before the next MAD leaves
//! or arrives), so a run is a pure function of its inputs: what tests, digests and the
//! simulator use. With [`JobPolicy::Threads`] jobs run on worker threads and their
//! outputs are fed back at the top of the loop turn after they finish; MADs flow
//! meanwhile, and the order of outputs against MADs depends on the machine.
//!
//! On a virtual-time transport (the simulator) a threaded job lets virtual time run
//! on by [`JOB_POLL`] per loop turn while it computes; use `Inline` there.

use std::fmt;
use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use crate::Transport;
use crate::addr::{Address, Incoming};
use crate::clock::Instant;
use crate::error::TransportError;
use crate::txn::TxId;

/// A MAD a core wants handed to the transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// What to give [`SansIo::handle_send_error`] if sending fails; `None` for MADs
    /// that expect no answer (responses, TrapRepress), whose loss nobody waits on.
    pub id: Option<TxId>,
    /// Destination.
    pub addr: Address,
    /// The bytes to send.
    pub mad: Vec<u8>,
}

/// A sans-IO protocol core: inputs with the time, outputs pulled. See the
/// [module docs](self) for the loop that runs it.
///
/// After any `handle_*` call the host drains [`Self::poll_job`], then
/// [`Self::poll_transmit`] and [`Self::poll_event`], and asks [`Self::poll_timeout`]
/// anew: any input may change all four.
pub trait SansIo {
    /// What the core tells its host (outcomes of queries, state changes).
    type Event;
    /// Long computations the driver may run off the loop; [`NoJob`] for cores
    /// without any.
    type Job: Job;

    /// Feeds what the transport received: a MAD, or its report that an earlier send
    /// failed. A MAD that is not the core's own is dropped (and counted, where the core
    /// keeps counters).
    fn handle_incoming(&mut self, now: Instant, incoming: Incoming);

    /// Reports that the transport refused the [`Outgoing`] whose id is `id` (a
    /// non-fatal error: [`TransportError::is_fatal`] errors stop the host instead).
    fn handle_send_error(&mut self, now: Instant, id: TxId, error: TransportError);

    /// Lets time pass: everything due at or before `now` happens (retries, failures,
    /// timers). Calling it early is harmless.
    fn handle_timeout(&mut self, now: Instant);

    /// The next MAD to send at `now`.
    fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing>;

    /// When [`Self::handle_timeout`] must be called next (`None`: only an input can
    /// make anything happen). `&mut self` lets a core cache what it found.
    fn poll_timeout(&mut self) -> Option<Instant>;

    /// The next event for the host.
    fn poll_event(&mut self) -> Option<Self::Event>;

    /// Nothing outstanding (no request in flight or queued): a client's drive can
    /// stop. A core that runs for ever (an SM) keeps the default, `false`.
    fn is_idle(&self) -> bool {
        false
    }

    /// The next long computation to run; its output comes back through
    /// [`Self::handle_job`].
    fn poll_job(&mut self) -> Option<Self::Job> {
        None
    }

    /// Feeds the output of a job [`Self::poll_job`] handed out.
    fn handle_job(&mut self, now: Instant, output: <Self::Job as Job>::Output) {
        let _ = (now, output);
    }
}

/// A long computation a core hands to its driver ([`SansIo::poll_job`]). It owns
/// everything it reads (a snapshot, not a borrow of the core), so it can run on
/// another thread while the core goes on.
pub trait Job: Send + 'static {
    /// What the core is given back ([`SansIo::handle_job`]).
    type Output: Send + 'static;
    /// Does the work.
    fn run(self) -> Self::Output;
}

/// The job type of cores without jobs: it has no values, so none is ever handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoJob {}

impl Job for NoJob {
    type Output = NoJob;
    fn run(self) -> NoJob {
        match self {}
    }
}

/// Where a [`JobRunner`] runs jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JobPolicy {
    /// On the driver's thread, at once when polled; the output is fed back before
    /// anything else happens. Deterministic.
    #[default]
    Inline,
    /// On up to this many worker threads, started when first needed.
    Threads(NonZeroUsize),
}

/// How often [`drive`] looks for a threaded job's output while one runs: the most a
/// receive waits then, on the transport's clock.
pub const JOB_POLL: Duration = Duration::from_millis(1);

/// Runs a core's [`Job`]s by a [`JobPolicy`]; [`drive`] uses it.
///
/// Keep one runner for as long as the core lives (not one per [`drive`] call): a
/// threaded job still running when a drive call returns is finished and fed back by
/// a later call with the same runner.
///
/// Dropping the runner never waits: jobs not started yet are dropped, and a job
/// running on a worker finishes on its detached thread, its output discarded; idle
/// workers exit.
pub struct JobRunner<J: Job> {
    policy: JobPolicy,
    /// Jobs started on workers whose output has not been taken yet.
    running: usize,
    pool: Option<Pool<J>>,
}

/// A threaded job's output, or the payload of its panic (re-raised on the driver's
/// thread, as an inline job's would be).
type Finished<O> = thread::Result<O>;

struct Pool<J: Job> {
    jobs: mpsc::Sender<J>,
    queue: Arc<Mutex<mpsc::Receiver<J>>>,
    done_tx: mpsc::Sender<Finished<J::Output>>,
    done: mpsc::Receiver<Finished<J::Output>>,
    /// Set when the runner is dropped: workers then drop what is still queued.
    closed: Arc<AtomicBool>,
    workers: usize,
}

impl<J: Job> Pool<J> {
    fn new() -> Self {
        let (jobs, queue) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        Self {
            jobs,
            queue: Arc::new(Mutex::new(queue)),
            done_tx,
            done,
            closed: Arc::new(AtomicBool::new(false)),
            workers: 0,
        }
    }

    /// Starts one more worker; whether it started.
    fn spawn(&mut self) -> bool {
        let queue = Arc::clone(&self.queue);
        let done = self.done_tx.clone();
        let closed = Arc::clone(&self.closed);
        let started = thread::Builder::new()
            .name(format!("ibsm-job-{}", self.workers))
            .spawn(move || worker(&queue, &done, &closed))
            .is_ok();
        if started {
            self.workers += 1;
        }
        started
    }
}

impl<J: Job> Drop for Pool<J> {
    fn drop(&mut self) {
        // Dropping `jobs` (after this) wakes every idle worker with a closed channel;
        // the flag stops one from starting a job still queued.
        self.closed.store(true, Ordering::Release);
    }
}

fn worker<J: Job>(
    queue: &Mutex<mpsc::Receiver<J>>,
    done: &mpsc::Sender<Finished<J::Output>>,
    closed: &AtomicBool,
) {
    loop {
        // The lock is held only while waiting for a job, never while one runs.
        let next = match queue.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = next else {
            return;
        };
        if closed.load(Ordering::Acquire) {
            return;
        }
        let out = panic::catch_unwind(AssertUnwindSafe(|| job.run()));
        if done.send(out).is_err() {
            return;
        }
    }
}

impl<J: Job> JobRunner<J> {
    /// A runner with `policy`; no thread starts before the first job.
    #[must_use]
    pub const fn new(policy: JobPolicy) -> Self {
        Self {
            policy,
            running: 0,
            pool: None,
        }
    }

    /// A runner that runs every job at once on the caller's thread.
    #[must_use]
    pub const fn inline() -> Self {
        Self::new(JobPolicy::Inline)
    }

    /// The policy.
    #[must_use]
    pub const fn policy(&self) -> JobPolicy {
        self.policy
    }

    /// Jobs started on workers whose output [`Self::poll_done`] has not returned yet
    /// (always 0 with [`JobPolicy::Inline`]).
    #[must_use]
    pub const fn running(&self) -> usize {
        self.running
    }

    /// Starts `job`. Returns its output when it ran at once: always with
    /// [`JobPolicy::Inline`], and with [`JobPolicy::Threads`] only when no worker
    /// thread could be started. Otherwise the output comes from [`Self::poll_done`].
    pub fn start(&mut self, job: J) -> Option<J::Output> {
        let JobPolicy::Threads(limit) = self.policy else {
            return Some(job.run());
        };
        let pool = self.pool.get_or_insert_with(Pool::new);
        // A new worker only when every one is busy: idle ones take queued jobs.
        let busy = pool.workers < limit.get() && pool.workers <= self.running;
        if busy && !pool.spawn() && pool.workers == 0 {
            // No thread to be had: late is better than never.
            return Some(job.run());
        }
        match pool.jobs.send(job) {
            Ok(()) => {
                self.running += 1;
                None
            }
            // The pool holds the receiving end, so this cannot happen; running the job
            // here still beats losing it, which would leave its core waiting for ever.
            Err(mpsc::SendError(job)) => Some(job.run()),
        }
    }

    /// The output of a threaded job that has finished, if any; oldest first.
    ///
    /// # Panics
    /// Re-raises a job's panic on the caller's thread, as an inline job's would be.
    pub fn poll_done(&mut self) -> Option<J::Output> {
        let finished = self.pool.as_ref()?.done.try_recv().ok()?;
        self.running -= 1;
        match finished {
            Ok(output) => Some(output),
            Err(payload) => panic::resume_unwind(payload),
        }
    }
}

impl<J: Job> Default for JobRunner<J> {
    fn default() -> Self {
        Self::inline()
    }
}

impl<J: Job> fmt::Debug for JobRunner<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobRunner")
            .field("policy", &self.policy)
            .field("running", &self.running)
            .field("workers", &self.pool.as_ref().map_or(0, |p| p.workers))
            .finish()
    }
}

/// When [`drive`] returns (besides an event handler's `Break`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stop {
    /// Return once the transport's clock reaches this.
    pub until: Instant,
    /// Also return as soon as the core [is idle](SansIo::is_idle) and no job runs.
    pub idle: bool,
}

impl Stop {
    /// Run until the transport's clock reaches `until` (a core that runs for ever).
    #[must_use]
    pub const fn at(until: Instant) -> Self {
        Self { until, idle: false }
    }

    /// Run until the core has nothing outstanding, or at most until `until` (a client
    /// with queries to finish).
    #[must_use]
    pub const fn when_idle(until: Instant) -> Self {
        Self { until, idle: true }
    }
}

/// Why [`drive`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stopped {
    /// The event handler returned [`ControlFlow::Break`].
    Break,
    /// The transport's clock reached [`Stop::until`].
    Deadline,
    /// The core was idle and no job ran ([`Stop::when_idle`]).
    Idle,
}

/// Runs `core` over `transport` (the loop of the [module docs](self)) until `stop` or
/// `on_event` says so. Every event goes to `on_event` in the order the core emits it;
/// jobs run on `jobs`.
///
/// # Errors
/// A fatal transport error ([`TransportError::is_fatal`]) from `send` or `recv`; the
/// core keeps its state and may be driven again on another transport.
///
/// # Panics
/// When a job panics (on whichever thread it ran).
pub fn drive<C, T>(
    core: &mut C,
    transport: &mut T,
    jobs: &mut JobRunner<C::Job>,
    stop: Stop,
    mut on_event: impl FnMut(C::Event) -> ControlFlow<()>,
) -> Result<Stopped, TransportError>
where
    C: SansIo + ?Sized,
    T: Transport + ?Sized,
{
    loop {
        run_jobs(core, transport, jobs);
        let now = transport.now();
        while let Some(out) = core.poll_transmit(now) {
            if let Err(e) = transport.send(&out.addr, &out.mad) {
                if e.is_fatal() {
                    return Err(e);
                }
                if let Some(id) = out.id {
                    core.handle_send_error(now, id, e);
                    // An input like any other: its jobs go before the next MAD.
                    run_jobs(core, transport, jobs);
                }
            }
        }
        while let Some(ev) = core.poll_event() {
            if on_event(ev).is_break() {
                return Ok(Stopped::Break);
            }
        }
        let now = transport.now();
        if stop.idle && jobs.running() == 0 && core.is_idle() {
            return Ok(Stopped::Idle);
        }
        if now >= stop.until {
            return Ok(Stopped::Deadline);
        }
        let due = core.poll_timeout();
        let mut deadline = due.unwrap_or(Instant::MAX).min(stop.until);
        // A worker's job ends on no clock the transport knows: wake up to look.
        let polling = jobs.running() > 0 && now + JOB_POLL < deadline;
        if polling {
            deadline = now + JOB_POLL;
        }
        match transport.recv(deadline) {
            Ok(incoming) => core.handle_incoming(transport.now(), incoming),
            Err(e) if e.is_fatal() => return Err(e),
            Err(_) => {
                let now = transport.now();
                if !polling || due.is_some_and(|t| t <= now) {
                    core.handle_timeout(now);
                }
            }
        }
    }
}

/// Starts every job the core has, feeding back inline outputs at once, and feeds back
/// every threaded output that is ready; until neither brings anything new.
fn run_jobs<C, T>(core: &mut C, transport: &T, jobs: &mut JobRunner<C::Job>)
where
    C: SansIo + ?Sized,
    T: Transport + ?Sized,
{
    loop {
        if let Some(job) = core.poll_job() {
            if let Some(output) = jobs.start(job) {
                core.handle_job(transport.now(), output);
            }
        } else if let Some(output) = jobs.poll_done() {
            core.handle_job(transport.now(), output);
        } else {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
