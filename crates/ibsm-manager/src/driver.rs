//! The engine over any [`Transport`], in one call: a convenience over
//! [`ibsm_transport::drive`], the one run loop of every sans-IO core (the engine is
//! [`SansIo`]). [`run`] runs jobs inline; [`run_with`] takes a [`JobRunner`] the caller
//! keeps, so jobs may run on threads and outlive one call.

use std::ops::ControlFlow;

use ibsm_transport::{Instant, JobRunner, SansIo, Stop, Transport};

use crate::engine::SubnetManager;
use crate::error::SmError;
use crate::event::SmEvent;

/// Runs `sm` on `transport` until `stop` returns true for an event, or the transport's
/// clock reaches `until`. Every event is passed to `stop` (which may also log it).
/// Jobs run inline (`JobRunner::inline`), so a run is a pure function of its inputs.
///
/// # Errors
/// A fatal transport error ([`TransportError::is_fatal`](ibsm_transport::TransportError::is_fatal)).
pub fn run<T: Transport + ?Sized>(
    sm: &mut SubnetManager,
    transport: &mut T,
    until: Instant,
    stop: impl FnMut(&SmEvent) -> bool,
) -> Result<(), SmError> {
    run_with(sm, transport, &mut JobRunner::inline(), until, stop)
}

/// [`run`] with the caller's [`JobRunner`]: routing and other jobs go to its threads
/// (or run inline, as its policy says), and jobs still running when `run_with` returns
/// stay with it for the next call.
///
/// # Errors
/// As [`run`].
pub fn run_with<T: Transport + ?Sized>(
    sm: &mut SubnetManager,
    transport: &mut T,
    jobs: &mut JobRunner<<SubnetManager as SansIo>::Job>,
    until: Instant,
    mut stop: impl FnMut(&SmEvent) -> bool,
) -> Result<(), SmError> {
    ibsm_transport::drive(sm, transport, jobs, Stop::at(until), |ev| {
        if stop(&ev) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(())
}
