//! The engine as an [`ibsm_transport::SansIo`] core, so that [`ibsm_transport::drive`]
//! runs it like every other core. Every method is the engine's own public one.

use ibsm_transport::{Incoming, Instant, Job, Outgoing, SansIo, TransportError, TxId};

use crate::engine::{SmJob, SmJobOutput, SubnetManager};
use crate::event::SmEvent;

/// The engine's jobs ([`SmJob`]: the routing of a heavy sweep) run by the drive's
/// [`ibsm_transport::JobRunner`]. The engine hands them out only when the host asked
/// for it ([`SubnetManager::set_job_offload`]); otherwise it runs each itself and a
/// drive never sees one. It never goes idle, so a drive of it stops on its deadline or
/// an event.
impl SansIo for SubnetManager {
    type Event = SmEvent;
    type Job = SmJob;

    fn handle_incoming(&mut self, now: Instant, incoming: Incoming) {
        SubnetManager::handle_incoming(self, now, incoming);
    }

    fn handle_send_error(&mut self, now: Instant, id: TxId, error: TransportError) {
        SubnetManager::handle_send_error(self, now, id, error);
    }

    fn handle_timeout(&mut self, now: Instant) {
        SubnetManager::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        SubnetManager::poll_transmit(self, now)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        SubnetManager::poll_timeout(self)
    }

    fn poll_event(&mut self) -> Option<SmEvent> {
        SubnetManager::poll_event(self)
    }

    fn poll_job(&mut self) -> Option<SmJob> {
        SubnetManager::poll_job(self)
    }

    fn handle_job(&mut self, now: Instant, output: SmJobOutput) {
        SubnetManager::handle_job(self, now, output);
    }
}

impl Job for SmJob {
    type Output = SmJobOutput;

    fn run(self) -> SmJobOutput {
        SmJob::run(self)
    }
}
