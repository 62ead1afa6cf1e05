//! `ibsm-sma`: a sans-IO InfiniBand Subnet Management Agent.
//!
//! The SMA is the other end of every SMP: each node (channel adapter, router, or switch
//! behind its management port 0) runs one, and it answers SubnGet/SubnSet from the
//! Subnet Manager. This crate implements one exactly as the InfiniBand Architecture
//! Specification (IBA) Vol. 1 §14.2 and its attribute tables (§14.2.5) describe,
//! including the parts simulators usually leave out:
//!
//! * **M_Key** per CA/router port and per switch (port 0): the check table for protection
//!   levels 0..3 ([`mkey::check`]), level 1 hiding the key in GetResp(PortInfo),
//!   silent drops that count M_KeyViolations (saturating), the lease countdown
//!   (`M_KeyLeasePeriod` seconds of virtual time; 0 = never expires) stopped by any
//!   correctly keyed SMP, protection falling back to 0 on expiry, trap 256 with the
//!   offending SMP's details, and a non-volatile store for the keys ([`NvStore`]).
//! * **Port state machine** ([`port`]): Down, Init, Armed, Active and the physical state,
//!   driven by link events from the host and SubnSet(PortInfo); illegal transitions are
//!   rejected with status 0x001C and nothing changes. A switch sets PortStateChange and
//!   raises trap 128 on link-driven changes.
//! * **Attribute store**: NodeInfo, NodeDescription, SwitchInfo, GUIDInfo, PortInfo,
//!   P_KeyTable, SLtoVLMappingTable, VLArbitrationTable, LinearForwardingTable,
//!   RandomForwardingTable, MulticastForwardingTable, SMInfo (from the hosted SM),
//!   LedInfo, VendorDiag, PortInfoExtended and MlnxExtPortInfo, each answered only where
//!   the node's capabilities say so (status 0x000C otherwise); tables are sized from the
//!   node's capabilities and readable without copying ([`Sma::lft`], [`Sma::mft`],
//!   [`Sma::pkeys`], [`Sma::sl2vl`]). Not implemented (status 0x000C): the Notice queue
//!   (SubnGet/SubnSet(Notice)), LinkSpeedWidthPairsTable, HierarchyInfo, CableInfo and
//!   the other attributes of the attribute table of IBA Vol. 1 §14.2.5.
//!
//! * **Performance agent** ([`pma`]): a separate sans-IO [`Pma`] answers PerfMgt
//!   (class 0x04) Get/Set of ClassPortInfo, PortCounters, PortCountersExtended and the
//!   detail counters from port counters the host drives; counters saturate, data is
//!   counted in 4-byte words, CounterSelect resets, AllPortSelect on switches.
//!
//! # Driving the agent
//!
//! The agent holds no clock and does no I/O. Every input carries `now`, an
//! [`ibsm_wire::Instant`] of the host's clock (which may be virtual); after any input,
//! drain the polls, then wait for the next SMP or until [`Sma::poll_timeout`]:
//!
//! ```
//! use ibsm_sma::{NodeConfig, Rx, Sma};
//! use ibsm_wire::{DrPath, DrSmp, Instant, Method, PortInfo, SmAttributeId};
//!
//! let mut sma = Sma::new(NodeConfig::ca(0x0002_c903_0000_1000, 1))?;
//! sma.link_up(Instant::ZERO, 1);
//!
//! // A SubnGet(PortInfo) for the local port, as it arrives after the outbound DR rules.
//! let mut req = DrSmp::request(Method::Get, SmAttributeId::PortInfo.into(), 0, 7, 0, &DrPath::local());
//! req.hop_pointer = 1;
//! let resp = sma.handle(Instant::ZERO, Rx::port(1), &req.to_bytes()).expect("answered");
//! let info = PortInfo::parse(&resp[64..128])?;
//! assert_eq!(info.local_port_num, 1);
//!
//! // The host loop: send what is due, then sleep until the next deadline.
//! while let Some(trap) = sma.poll_trap(Instant::from_micros(1)) {
//!     let _ = trap.mad; // send it LID-routed to trap.dlid
//! }
//! while let Some(_event) = sma.poll_event() { /* act on link changes etc. */ }
//! let _next_wakeup = sma.poll_timeout();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Choices where the spec text is silent
//!
//! * A Get whose key mismatches but which protection levels 0/1 let through is neither a
//!   violation nor "correctly keyed": it leaves a running lease countdown alone.
//! * A lease expiry is not written to the [`NvStore`]; a reset restores the SM's last
//!   setting.
//! * Trap 144 is raised by the host's own changes ([`Sma::set_capability_mask`],
//!   [`Sma::set_is_sm`], [`Sma::set_node_description`]) and by a SubnSet that changes
//!   NodeDescription, from ports with IsCapabilityMaskNoticeSupported /
//!   IsOtherLocalChangesNoticeSupported.
//! * Traps 256, 128 and 144 are raised when the issuing port has CapabilityMask
//!   IsTrapSupported, a non-zero MasterSMLID and is not Down. Traps are resent every
//!   [`NodeConfig::trap_resend_interval`] until a correctly keyed SubnTrapRepress with the
//!   same TransactionID arrives; at most [`NodeConfig::max_pending_traps`] wait.
//! * SubnSet(PortInfo) is all or nothing: any invalid field (an illegal PortState
//!   transition, a PortPhysicalState other than 0/2/3, LinkDownDefaultState above 2,
//!   an enabled width/speed outside the supported set, NeighborMTU outside 1..=MTUCap,
//!   OperationalVLs above VLCap) gives status 0x001C and changes nothing. Read-only fields
//!   are ignored; M_KeyViolations, P_KeyViolations and Q_KeyViolations are writable.
//! * PortStateChange is set by link-driven state changes only (Down->Init, any->Down),
//!   not by SubnSet, and cleared by a SubnSet(SwitchInfo) that writes it as 1.
//! * A switch's port 0 has no link: it starts in Init/LinkUp, accepts Armed and Active
//!   but not Down, and ignores the physical fields.
//! * SMInfo.SM_Key is returned only to a request that presents this SM's SM_Key or the
//!   port's non-zero M_Key; a node without an SM drops SMInfo.
//! * Methods other than Get, Set and TrapRepress are answered with status 0x0008 (bad
//!   class version: 0x0004); responses, returning DR SMPs, wrong classes and DR SMPs
//!   whose HopPointer is not HopCount + 1 are dropped.
//!
//! # Panic contract
//!
//! [`Sma::handle`] accepts any bytes: short, malformed or hostile SMPs are dropped or
//! answered with an error status, never a panic (the `sma_handle` fuzz target holds the
//! crate to this).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod agent;
mod config;
pub mod mkey;
pub mod pma;
pub mod port;
mod trap;

pub use agent::{DropReason, Outcome, Rx, Sma, SmaEvent, Stats};
pub use config::{MemNvStore, NoNvStore, NodeConfig, NodeConfigError, NvStore, PortConfig};
pub use mkey::{CheckedMethod, MKeyConfig, MKeyState, Verdict};
pub use pma::{Counter, Pma, PmaConfig, PmaStats};
pub use port::{LinkActive, LinkRequest, LogicalState, negotiate};
pub use trap::Trap;

/// The `handle` of both agents: `answer` turns a MAD-sized copy of `request` into the
/// answer in place and says whether to send it, or gets `None` for a request shorter
/// than a MAD (to count the drop). The copy is the return value itself, so an answer
/// is not copied again.
#[inline]
fn answer_in_copy(
    request: &[u8],
    answer: impl FnOnce(Option<&mut [u8; ibsm_wire::MAD_SIZE]>) -> bool,
) -> Option<[u8; ibsm_wire::MAD_SIZE]> {
    let mut out: Option<[u8; ibsm_wire::MAD_SIZE]> = request
        .get(..ibsm_wire::MAD_SIZE)
        .and_then(|r| r.try_into().ok());
    if answer(out.as_mut()) { out } else { None }
}
