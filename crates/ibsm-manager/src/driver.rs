//! A simple blocking driver: the run loop of the crate docs, over any
//! [`Transport`].

use ibsm_transport::{Instant, Transport, TransportError};

use crate::engine::SubnetManager;
use crate::error::SmError;
use crate::event::SmEvent;

/// Runs `sm` on `transport` until `stop` returns true for an event, or the transport's
/// clock reaches `until`. Every event is passed to `stop` (which may also log it).
///
/// # Errors
/// A fatal transport error ([`TransportError::is_fatal`]).
pub fn run<T: Transport + ?Sized>(
    sm: &mut SubnetManager,
    transport: &mut T,
    until: Instant,
    mut stop: impl FnMut(&SmEvent) -> bool,
) -> Result<(), SmError> {
    loop {
        let now = transport.now();
        while let Some(out) = sm.poll_transmit(now) {
            if let Err(e) = transport.send(&out.addr, &out.mad) {
                if e.is_fatal() {
                    return Err(e.into());
                }
                if let Some(id) = out.id {
                    sm.handle_send_error(now, id, e);
                }
            }
        }
        while let Some(ev) = sm.poll_event() {
            if stop(&ev) {
                return Ok(());
            }
        }
        if transport.now() >= until {
            return Ok(());
        }
        let deadline = sm.poll_timeout().unwrap_or(Instant::MAX).min(until);
        match transport.recv(deadline) {
            Ok(incoming) => sm.handle_incoming(transport.now(), incoming),
            Err(TransportError::Timeout) => sm.handle_timeout(transport.now()),
            Err(e) if e.is_fatal() => return Err(e.into()),
            Err(_) => sm.handle_timeout(transport.now()),
        }
    }
}
