//! The engine's long computations (routing) on a worker thread, so the SM answers
//! SMInfo polls, SA queries and traps while it routes a large fabric
//! (`SubnetManager::set_job_offload`; the drive takes each output back at a defined
//! point, `ibsm_transport::drive`).
//!
//! [`Engine`] is the engine as the drive sees it: the engine's own `SansIo`, with each
//! job wrapped so its wall time is logged and, for the tests only, stretched. The
//! environment variable `IBSMD_TEST_JOB_DELAY_MS` makes every job sleep that long
//! before it runs: a stand-in for a routing engine slower than a Standby's detection
//! time on a fabric small enough for a test. Nothing else reads it; never set it on a
//! real fabric.

use std::num::NonZeroUsize;
use std::time::Duration;

use ibsm::manager::{SmEvent, SmJob, SmJobOutput, SubnetManager};
use ibsm::transport::{
    Incoming, Instant, Job, JobPolicy, JobRunner, Outgoing, SansIo, TransportError, TxId,
};
use tracing::{debug, info};

/// The testing aid above.
const DELAY_VAR: &str = "IBSMD_TEST_JOB_DELAY_MS";

/// The runner of the daemon's jobs: one worker thread (a job at a time is all the
/// engine makes; the routing engines use `routing_threads` of their own).
pub(crate) fn runner() -> JobRunner<Timed> {
    JobRunner::new(JobPolicy::Threads(NonZeroUsize::MIN))
}

/// How long each job sleeps first (`IBSMD_TEST_JOB_DELAY_MS`, else none).
pub(crate) fn test_delay() -> Duration {
    let delay = std::env::var(DELAY_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_millis);
    if !delay.is_zero() {
        info!("{DELAY_VAR}: every engine job sleeps {delay:?} first (a testing aid)");
    }
    delay
}

/// An engine job as the daemon runs it.
pub(crate) struct Timed {
    job: SmJob,
    delay: Duration,
}

/// What a [`Timed`] job returns: the engine's output, the job's kind and its wall time.
pub(crate) struct TimedOutput {
    output: SmJobOutput,
    kind: &'static str,
    wall: Duration,
}

impl Job for Timed {
    type Output = TimedOutput;

    fn run(self) -> TimedOutput {
        let started = std::time::Instant::now();
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        let kind = self.job.kind();
        let output = self.job.run();
        TimedOutput {
            output,
            kind,
            wall: started.elapsed(),
        }
    }
}

/// The engine under the drive, its jobs [`Timed`].
pub(crate) struct Engine<'a> {
    sm: &'a mut SubnetManager,
    delay: Duration,
}

impl<'a> Engine<'a> {
    pub(crate) fn new(sm: &'a mut SubnetManager, delay: Duration) -> Self {
        Self { sm, delay }
    }
}

impl SansIo for Engine<'_> {
    type Event = SmEvent;
    type Job = Timed;

    fn handle_incoming(&mut self, now: Instant, incoming: Incoming) {
        SansIo::handle_incoming(self.sm, now, incoming);
    }

    fn handle_send_error(&mut self, now: Instant, id: TxId, error: TransportError) {
        SansIo::handle_send_error(self.sm, now, id, error);
    }

    fn handle_timeout(&mut self, now: Instant) {
        SansIo::handle_timeout(self.sm, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        SansIo::poll_transmit(self.sm, now)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        SansIo::poll_timeout(self.sm)
    }

    fn poll_event(&mut self) -> Option<SmEvent> {
        SansIo::poll_event(self.sm)
    }

    fn poll_job(&mut self) -> Option<Timed> {
        let job = self.sm.poll_job()?;
        debug!(job = job.id(), kind = job.kind(), "job to the worker");
        Some(Timed {
            job,
            delay: self.delay,
        })
    }

    fn handle_job(&mut self, now: Instant, done: TimedOutput) {
        debug!(
            job = done.output.id(),
            kind = done.kind,
            wall_ms = done.wall.as_secs_f64() * 1e3,
            "job done on the worker"
        );
        self.sm.handle_job(now, done.output);
    }
}
