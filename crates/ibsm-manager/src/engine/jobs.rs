//! Jobs: the long computations of a sweep, cut out of the engine so that it goes on
//! answering SMInfo, the SA and traps while they run.
//!
//! A job owns its input (taken from the engine when the job is made) and returns an
//! output that the host hands back with [`SubnetManager::handle_job`]: the engine
//! applies it at that point and nowhere else, so the MAD stream stays a function of the
//! inputs and the order the host feeds them (invariant 5). Each job carries the id the
//! engine gave it; an output whose job the engine no longer waits for (the sweep was
//! restarted, the role changed) is dropped.
//!
//! Without [`SubnetManager::set_job_offload`] the engine runs each job itself where it
//! makes it, which is what a host that knows nothing of jobs gets (and what the
//! deterministic tests use): the same code, the same order, on one thread.

use std::any::Any;
use std::collections::VecDeque;

use ibsm_transport::Instant;

use super::SubnetManager;
use super::publish::{PublishInput, Published};
use super::routing::{Computed, RouteInput};
use super::sweep::Stage;
use crate::error::SmError;

/// A computation the engine wants run, on any thread. Run it with [`SmJob::run`] and
/// hand the output back with [`SubnetManager::handle_job`].
pub struct SmJob {
    id: u64,
    work: Work,
}

enum Work {
    /// The routes of a heavy sweep (and its P_Key tables).
    Route(Box<RouteInput>),
    /// What a heavy sweep that configured the subnet publishes (`publish.rs`).
    Publish(Box<PublishInput>),
    /// Models, snapshots and routes the engine no longer needs: freeing a large
    /// fabric's (some hundred thousand allocations) takes milliseconds.
    Discard(Vec<Box<dyn Any + Send>>),
}

/// What a finished [`SmJob`] returns, for [`SubnetManager::handle_job`].
pub struct SmJobOutput {
    id: u64,
    done: Done,
}

enum Done {
    Route(Box<Result<Computed, SmError>>),
    Publish(Box<Published>),
    Discarded,
}

impl std::fmt::Debug for SmJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmJob")
            .field("id", &self.id)
            .field("kind", &self.kind())
            .finish()
    }
}

impl std::fmt::Debug for SmJobOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.done {
            Done::Route(_) => "route",
            Done::Publish(_) => "publish",
            Done::Discarded => "discard",
        };
        f.debug_struct("SmJobOutput")
            .field("id", &self.id)
            .field("kind", &kind)
            .finish()
    }
}

impl SmJob {
    /// Runs the job (on whatever thread the host chooses; it touches nothing shared).
    #[must_use]
    pub fn run(self) -> SmJobOutput {
        let done = match self.work {
            Work::Route(input) => Done::Route(Box::new(input.run())),
            Work::Publish(input) => Done::Publish(Box::new(input.run())),
            Work::Discard(garbage) => {
                drop(garbage);
                Done::Discarded
            }
        };
        SmJobOutput { id: self.id, done }
    }

    /// What the job computes, for logs: `"route"` (a heavy sweep's routes and P_Key
    /// tables), `"publish"` (the SA's snapshot and the cabling of a sweep that
    /// configured the subnet) or `"discard"` (frees what the engine no longer needs).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self.work {
            Work::Route(_) => "route",
            Work::Publish(_) => "publish",
            Work::Discard(_) => "discard",
        }
    }

    /// The engine's id for this job (the same on its output).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl SmJobOutput {
    /// The id of the job this came from.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// The engine's side of the jobs: whether the host runs them, and those it has not
/// taken yet.
#[derive(Default)]
pub(super) struct Jobs {
    /// The host runs the jobs ([`SubnetManager::poll_job`]); otherwise the engine does,
    /// where it makes them.
    offload: bool,
    /// Planning units per slice of the Program stage with offload (`program.rs`);
    /// 0: the default.
    pub(super) slice: usize,
    next_id: u64,
    queue: VecDeque<SmJob>,
    /// What the engine no longer needs, for the next discard job.
    retired: Vec<Box<dyn Any + Send>>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("offload", &self.offload)
            .field("slice", &self.slice)
            .field("next_id", &self.next_id)
            .field("queued", &self.queue.len())
            .field("retired", &self.retired.len())
            .finish()
    }
}

impl Jobs {
    /// The next job for the host: a queued one, else the garbage retired so far as a
    /// job that drops it.
    fn poll(&mut self) -> Option<SmJob> {
        if let Some(job) = self.queue.pop_front() {
            return Some(job);
        }
        if self.retired.is_empty() {
            return None;
        }
        let id = self.next_id;
        self.next_id += 1;
        Some(SmJob {
            id,
            work: Work::Discard(std::mem::take(&mut self.retired)),
        })
    }

    /// Hands `garbage` (a model, a snapshot, routes the engine no longer needs) to the
    /// host to free with the next job, so that freeing it does not hold the engine up;
    /// freed at once without offload.
    pub(super) fn retire(&mut self, garbage: impl Any + Send) {
        if self.offload {
            self.retired.push(Box::new(garbage));
        }
    }

    /// Makes a job of `work`: its id, and the job itself when the engine runs it now
    /// (no offload; else it waits for the host in the queue).
    fn start(&mut self, work: Work) -> (u64, Option<SmJob>) {
        let id = self.next_id;
        self.next_id += 1;
        let job = SmJob { id, work };
        if self.offload {
            tracing::debug!(job = id, kind = job.kind(), "job handed to the host");
            self.queue.push_back(job);
            return (id, None);
        }
        (id, Some(job))
    }

    /// Units of work per slice of the Program and Activate stages (`program.rs`): all
    /// of it in one go without offload.
    pub(super) fn slice_budget(&self) -> usize {
        if self.offload {
            match self.slice {
                0 => super::program::SLICE,
                n => n,
            }
        } else {
            usize::MAX
        }
    }
}

impl SubnetManager {
    /// Whether the host runs the engine's long computations itself (`true`: it takes
    /// them with [`Self::poll_job`], runs them, on worker threads say, and hands each
    /// output back with [`Self::handle_job`]). Off by default: the engine runs each job
    /// where it makes it, and is silent while it runs (the routing of a 10,000-node
    /// fabric takes a few hundred milliseconds). With offload on, SMInfo, SA requests,
    /// traps and every other input are handled while a job runs.
    pub fn set_job_offload(&mut self, offload: bool) {
        self.jobs.offload = offload;
    }

    /// Whether the host runs the engine's jobs ([`Self::set_job_offload`]).
    #[must_use]
    pub fn job_offload(&self) -> bool {
        self.jobs.offload
    }

    /// How much of the Program and Activate stages' queueing runs per entry point when
    /// jobs are offloaded, in units of one LFT block or one port looked at (default
    /// 4,096: about a millisecond). Smaller slices answer sooner and cost more entry
    /// points.
    pub fn set_program_slice(&mut self, units: std::num::NonZeroUsize) {
        self.jobs.slice = units.get();
    }

    /// The next job for the host to run (only with [`Self::set_job_offload`]).
    pub fn poll_job(&mut self) -> Option<SmJob> {
        self.jobs.poll()
    }

    /// The output of a job taken from [`Self::poll_job`]. An output the engine no longer
    /// waits for (the sweep it belonged to was started over, or this SM stopped being
    /// Master meanwhile) is dropped.
    pub fn handle_job(&mut self, now: Instant, output: SmJobOutput) {
        let span = self.sweep.span();
        let _in_phase = span.enter();
        self.job_done(now, output);
        self.process(now);
        self.perf_tick(now);
        self.refresh_timers();
    }

    /// Makes a routing job for the running heavy sweep: run at once, or queued for the
    /// host.
    pub(super) fn start_route_job(&mut self, now: Instant, input: RouteInput) {
        self.start_job(now, Work::Route(Box::new(input)), |job| Stage::Route {
            job,
        });
    }

    /// Makes the publish job of a heavy sweep whose Sets are all answered.
    pub(super) fn start_publish_job(&mut self, now: Instant, input: PublishInput) {
        self.start_job(now, Work::Publish(Box::new(input)), |job| Stage::Publish {
            job,
        });
    }

    /// Gives `work` an id, puts the sweep in the stage that waits for it, and runs it
    /// at once or queues it for the host.
    fn start_job(&mut self, now: Instant, work: Work, stage: impl FnOnce(u64) -> Stage) {
        let (id, run_now) = self.jobs.start(work);
        self.sweep.set_stage(stage(id));
        if let Some(job) = run_now {
            let out = job.run();
            self.job_done(now, out);
        }
    }

    fn job_done(&mut self, now: Instant, output: SmJobOutput) {
        if matches!(output.done, Done::Discarded) {
            return;
        }
        if self.sweep.waiting_for() != Some(output.id) {
            tracing::debug!(job = output.id, "job output no longer wanted: dropped");
            return;
        }
        match output.done {
            Done::Route(computed) => self.routes_computed(now, *computed),
            Done::Publish(published) => self.published(now, *published),
            Done::Discarded => {}
        }
    }

    /// Whether a job this engine made has not come back yet.
    #[must_use]
    pub fn job_pending(&self) -> bool {
        self.sweep.waiting_for().is_some()
    }
}
