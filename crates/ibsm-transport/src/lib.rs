//! `ibsm-transport`: how an SM engine or tool talks to a fabric without knowing which one.
//!
//! * [`Transport`]: send a MAD to an [`Address`] (LID-routed with DLID/SL/QP, or
//!   directed route with a [`DrPath`](ibsm_wire::DrPath) and DrSLID/DrDLID), receive
//!   with a deadline, read the transport's clock. `ibsm-sim` implements it on virtual
//!   time, `ibsm-umad` on the Linux umad interface.
//! * [`Instant`] (the workspace's one time type, defined in `ibsm-wire` and re-exported
//!   here) and [`Clock`]: monotonic nanoseconds, real ([`SystemClock`]) or virtual
//!   ([`ManualClock`], or a simulator's own clock), so sans-IO cores never care which.
//! * [`TidAllocator`] and [`TidKey`]: hosts and kernels overwrite the upper 32 bits of
//!   a TID, so requests and responses are matched on (low 32 bits, class).
//! * [`Transactions`]: a sans-IO transaction layer for any SM or tool: many
//!   outstanding requests, per-request deadline and retries, a window limit.
//! * [`SansIo`], the one contract of every sans-IO core in the workspace (inputs with
//!   `now`, outputs pulled, long computations as [`Job`]s), and [`drive`], the one run
//!   loop over any [`Transport`], with a [`JobRunner`] for the jobs.
//!
//! # Example
//!
//! A transport on virtual time that answers every request after 1 µs, driven by the
//! transaction layer:
//!
//! ```
//! use std::collections::VecDeque;
//! use ibsm_transport::*;
//! use ibsm_wire::{DrPath, DrSmp, Method, SmAttributeId};
//!
//! struct Echo { now: Instant, queue: VecDeque<(Instant, Vec<u8>)> }
//! impl Transport for Echo {
//!     fn now(&self) -> Instant { self.now }
//!     fn local_port(&self) -> LocalPort { LocalPort::default() }
//!     fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
//!         addr.check(mad)?;
//!         let mut resp = mad.to_vec();
//!         resp[3] |= 0x80; // R bit: a response
//!         self.queue.push_back((self.now + std::time::Duration::from_micros(1), resp));
//!         Ok(())
//!     }
//!     fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError> {
//!         match self.queue.pop_front() {
//!             Some((at, mad)) if at <= deadline => {
//!                 self.now = self.now.max(at);
//!                 Ok(Incoming::Mad(Received { mad, slid: 0xFFFF, sl: 0, qpn: 0, pkey_index: 0, at }))
//!             }
//!             other => {
//!                 if let Some(item) = other { self.queue.push_front(item); }
//!                 self.now = self.now.max(deadline);
//!                 Err(TransportError::Timeout)
//!             }
//!         }
//!     }
//! }
//!
//! let mut t = Echo { now: Instant::ZERO, queue: VecDeque::new() };
//! let mut txns = Transactions::new(TxConfig::default());
//! let path = DrPath::from_ports(&[1, 3])?;
//! let mad = DrSmp::request(Method::Get, SmAttributeId::NodeInfo.into(), 0, 0, 0, &path);
//! let id = txns.submit(Request::new(Address::Directed(DrAddress::direct(path)), mad.to_bytes().to_vec(), "node"))?;
//! let mut events = Vec::new();
//! let stopped = drive(&mut txns, &mut t, &mut JobRunner::inline(), Stop::when_idle(Instant::from_secs(1)), |ev| {
//!     events.push(ev);
//!     std::ops::ControlFlow::Continue(())
//! })?;
//! assert_eq!(stopped, Stopped::Idle);
//! match &events[..] {
//!     [TxEvent::Completed { id: done, cookie, attempts, .. }] => {
//!         assert_eq!((*done, *cookie, *attempts), (id, "node", 1));
//!     }
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod addr;
pub mod busy;
mod clock;
mod deadlines;
mod error;
mod hash;
pub mod sansio;
mod tid;
pub mod txn;

pub use addr::{Address, DrAddress, Incoming, LidAddress, LocalPort, QP1_QKEY, Received};
pub use busy::{BusyMeter, Call, Metered};
pub use clock::{Clock, Instant, ManualClock, SystemClock};
pub use error::TransportError;
pub use hash::{IntHasher, IntMap, IntSet};
pub use sansio::{
    JOB_POLL, Job, JobPolicy, JobRunner, NoJob, Outgoing, SansIo, Stop, Stopped, drive,
};
pub use tid::{TidAllocator, TidKey};
pub use txn::{Request, Transactions, Transmit, TxConfig, TxEvent, TxId, TxStats};

/// A way to send and receive MADs on one local port.
///
/// Implementations: `ibsm-sim` (virtual time: `recv` advances the simulation to the
/// next delivery or to the deadline) and `ibsm-umad` (a real or umad2sim device).
/// Callers drive it from one thread; it is deliberately not `async`.
pub trait Transport {
    /// The transport's clock: real time for hardware, simulated time for a simulator.
    /// Deadlines given to [`Self::recv`] are on this timeline.
    fn now(&self) -> Instant;

    /// The local port this handle sends from.
    fn local_port(&self) -> LocalPort;

    /// Sends one MAD. For [`Address::Directed`] the transport writes the path fields
    /// into its copy of the MAD (see [`DrAddress::write_to`]); the TID is sent as
    /// given (its upper 32 bits may be overwritten on the way).
    ///
    /// # Errors
    /// [`TransportError::InvalidMad`] if the MAD does not fit the address,
    /// [`TransportError::Unreachable`] if the transport knows at once it cannot be
    /// delivered, [`TransportError::Closed`] / [`TransportError::Os`] when the
    /// transport is unusable.
    fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError>;

    /// Waits for the next MAD or send failure until `deadline`. A MAD that is already
    /// waiting is returned even when `deadline` has passed: a core that keeps a timer
    /// due at once (work done in slices) is called with a past deadline on every turn,
    /// and must still see what arrives between its slices.
    ///
    /// # Errors
    /// [`TransportError::Timeout`] when `deadline` passes first (then `now()` is at or
    /// after it), [`TransportError::Closed`] / [`TransportError::Os`] when the
    /// transport is unusable.
    fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError>;

    /// Announces (or withdraws) an SM on the local port: sets PortInfo.CapabilityMask
    /// IsSM, as opening `/dev/infiniband/issmN` does. The default does nothing, for
    /// transports of tools that never act as SM.
    ///
    /// # Errors
    /// As the transport's device calls.
    fn set_is_sm(&mut self, on: bool) -> Result<(), TransportError> {
        let _ = on;
        Ok(())
    }
}

/// A borrowed or boxed transport is one: every method goes to what it points at.
macro_rules! forward_transport {
    ($($pointer:ty),*) => {$(
        impl<T: Transport + ?Sized> Transport for $pointer {
            fn now(&self) -> Instant {
                (**self).now()
            }
            fn local_port(&self) -> LocalPort {
                (**self).local_port()
            }
            fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
                (**self).send(addr, mad)
            }
            fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError> {
                (**self).recv(deadline)
            }
            fn set_is_sm(&mut self, on: bool) -> Result<(), TransportError> {
                (**self).set_is_sm(on)
            }
        }
    )*};
}
forward_transport!(&mut T, Box<T>);
