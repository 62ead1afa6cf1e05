//! `ibsm-election`: the Subnet Manager election over SMInfo, as a sans-IO state machine.
//!
//! Several SMs may run on one InfiniBand subnet; exactly one of them is Master and
//! configures it, the others stand by. This crate decides which, following the rules of
//! the InfiniBand Architecture Specification, Vol. 1, section 14.4 (SM state machine,
//! SMInfo) and OpenSM's behaviour where the spec is loose:
//!
//! * **Rank**: higher SMInfo.Priority wins, equal priority goes to the numerically lower
//!   port GUID ([`outranks`]).
//! * **States**: a new SM is Discovering; after its sweep it becomes Standby under a
//!   Master (or under a higher SM it found), otherwise Master. A Master whose sweep finds
//!   a higher authenticated Standby or Master sends it SubnSet(SMInfo, HANDOVER) and
//!   becomes Standby once it is accepted; the receiver answers, becomes Master and, once
//!   a SubnGet(SMInfo) shows the old Master has stepped down (OpenSM refuses an
//!   ACKNOWLEDGE that beats its own step to Standby), sends one ACKNOWLEDGE. A HANDOVER
//!   that finds the SM Discovering makes it Master too; its ACKNOWLEDGE still says
//!   Standby, the only sender state OpenSM accepts in one. Two Masters resolve the same
//!   way: the lower one hands over.
//! * **Polling**: a Standby polls the SM it follows with SubnGet(SMInfo) every
//!   `polling_timeout`; a poll unanswered after `transaction_timeout` is re-probed at
//!   once (three Gets, each with its own TID), and so is an unanswered re-probe. After
//!   `polling_retries + 1` failed rounds in a row (unanswered, or answered by no live
//!   Master: one whose ActCount stood still, for instance), OpenSM 3.3's count of
//!   unanswered polls, it declares the Master lost and rediscovers
//!   ([`Config::polling_retries`] has the rule).
//! * **Refresh**: between sweeps a Master may ask the SMs it knows for their SMInfo
//!   again ([`Election::refresh_known_sms`], at each light sweep, as OpenSM does), so
//!   [`Election::known_sms`] shows their current ActCount and state; the answers decide
//!   nothing.
//! * **Learning**: an SM that sends us SMInfo requests without being known (a new SM on
//!   a port that was already up: no trap, no sweep of ours probed it) is asked for its
//!   SMInfo at once ([`Election::learn`]), so it is known, and a Master decides on it,
//!   before the next sweep.
//! * **SM_Key**: a peer counts only when its SMInfo shows our SM_Key (a peer that hid its
//!   key, showing 0, counts once we have seen its real key). Unauthenticated peers are
//!   never followed or handed control; one that outranks us is reported
//!   ([`ElectionEvent::UnauthenticatedHigherPrioritySm`]). HANDOVER, DISABLE, STANDBY and DISCOVER
//!   are obeyed only from an authenticated Master, and our own SM_Key reads as 0 unless
//!   the requester passed the M_Key check or is the Master we verified. SM_Key 0 in the
//!   configuration means "no key": everyone is accepted.
//!
//! # Driving it
//!
//! The machine never reads a clock or touches a socket. After any input, drain
//! [`Election::poll_transmit`] (SMInfo SMPs to send, already encoded) and
//! [`Election::poll_event`], copy [`Election::sm_info`] into the SM's own SMA (or route
//! SMInfo requests to [`Election::handle_request`]), then wait for a MAD or until
//! [`Election::poll_timeout`] and call [`Election::handle_timeout`]. Time is an
//! [`ibsm_wire::Instant`] on the host's clock (real or virtual), passed in as `now`.
//!
//! # Failover times (virtual time, `tests/failover.rs`)
//!
//! From the Master's death to a Standby's [`ElectionEvent::MasterLost`]: 1.0 to 11.0 s with
//! OpenSM's defaults ([`Config::opensm_defaults`], 10 s × 4 retries: the next poll, then
//! five unanswered rounds of 200 ms; OpenSM 3.3 itself takes 50 to 60 s), 150 to 350 ms
//! with [`Config::fast`] (200 ms × 2, 50 ms transactions), 300 to 400 ms with 100 ms × 2
//! (an answer waited for at most one period). The new Master is elected one discovery
//! sweep later; configuring the fabric comes on top.
//!
//! ```
//! use ibsm_election::{Config, Election, ElectionEvent, SmAddr, SmState};
//! use ibsm_wire::Instant;
//!
//! let mut sm = Election::new(Config::fast(0x0002_c903_0000_0001), Instant::ZERO)?;
//! assert_eq!(sm.poll_event(), Some(ElectionEvent::SweepNeeded));
//!
//! // The host sweeps: one other SM port (IsSM) found at LID 7.
//! sm.begin_sweep(Instant::ZERO);
//! sm.probe(Instant::ZERO, SmAddr::Lid(7));
//! sm.sweep_complete(Instant::from_millis(5));
//! let get = sm.poll_transmit().expect("SubnGet(SMInfo) to LID 7");
//! assert_eq!(get.to, SmAddr::Lid(7));
//!
//! // Nobody answers: after the probe's resends the SM becomes Master.
//! let mut now = Instant::ZERO;
//! while let Some(t) = sm.poll_timeout() {
//!     if sm.state() == SmState::Master {
//!         break;
//!     }
//!     now = t;
//!     sm.handle_timeout(now);
//!     while sm.poll_transmit().is_some() {}
//! }
//! assert_eq!(sm.state(), SmState::Master);
//! # Ok::<(), ibsm_election::ElectionConfigError>(())
//! ```
#![forbid(unsafe_code)]

mod config;
mod error;
mod event;
mod machine;
mod mad;

#[cfg(test)]
mod tests;

pub use config::Config;
pub use error::{ElectionConfigError, Error};
pub use event::{ElectionEvent, RejectReason};
pub use ibsm_wire::{SmInfo, SmInfoControl, SmState};
pub use machine::{Election, KnownSm, Requester, outranks};
pub use mad::{SmAddr, Transmit};
