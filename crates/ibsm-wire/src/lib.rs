//! `ibsm-wire`: zero-copy encoding and decoding of InfiniBand management datagrams.
//!
//! Everything an InfiniBand Subnet Manager puts on or takes off the wire: the common MAD
//! header, Subnet Management Packets in both forms (LID-routed class 0x01 and
//! directed-route class 0x81, with [`DrPath`] and the hop-by-hop forwarding rules), every
//! SM attribute (NodeInfo, PortInfo, SwitchInfo, forwarding tables, SMInfo, Notice and the
//! trap data details, ...), the Subnet Administration header and records and the
//! performance-management (PerfMgt) counters ([`perf`]). Field positions come from the
//! InfiniBand Architecture Specification (Vol. 1 §13.4, §14.2.5, §15, §16.1) and are
//! checked bit for bit against libibmad by the workspace's oracle test. [`Instant`] is here too: the one time type every sans-IO core
//! of the workspace takes as `now` and returns deadlines in.
//!
//! # Design
//!
//! Each structure is described once, as a field table. From it come
//! * a **view** over bytes (`NodeInfoView<T>`): reads on `T: AsRef<[u8]>`, writes on
//!   `T: AsMut<[u8]>`, one accessor per field, no copying;
//! * an **owned value** (`NodeInfo`) with `parse(&[u8])`, `from_view`, `emit`,
//!   `emit_into`, `to_bytes`;
//! * a `FIELDS` table (name, position, libibmad name) and by-name reflective access, used
//!   by tools that print or edit any attribute.
//!
//! Code points (classes, methods, node types, port states, ...) are enums that keep
//! unknown values as `Unknown(_)`, so decoding is lossless.
//!
//! # Panic contract
//!
//! Decoding never panics and never allocates, whatever the input bytes: every view has a
//! checked constructor (`new_checked`) that verifies the buffer length once, and after it
//! no accessor or setter panics; `parse` functions return [`Error`] instead. The only
//! way to reach a panic is `new_unchecked` with a buffer that is too short. Fuzz targets
//! in `fuzz/` and property tests hold the crate to this.
//!
//! # Example
//!
//! ```
//! use ibsm_wire::{DrPath, DrSmp, DrSmpView, Method, NodeInfo, SmAttributeId};
//!
//! // Build a SubnGet(NodeInfo) for the node two hops away through ports 1 then 9.
//! let path = DrPath::parse_str("0,1,9")?;
//! let req = DrSmp::request(Method::Get, SmAttributeId::NodeInfo.into(), 0, 0x1234, 0, &path);
//! let mut bytes = req.to_bytes();
//! assert_eq!(bytes[1], 0x81);
//!
//! // Read it back without copying, and decode an attribute from its data area.
//! let view = DrSmpView::new_checked(&mut bytes[..])?;
//! assert_eq!(view.hop_count(), 2);
//! let info = NodeInfo::parse(view.attr_data())?;
//! assert_eq!(info.num_ports, 0);
//! # Ok::<(), ibsm_wire::Error>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]

#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "alloc")]
extern crate alloc;

#[macro_use]
mod macros;

pub mod attr;
mod error;
pub mod field;
mod gid;
pub mod mad;
pub mod perf;
pub mod sa;
pub mod smp;
pub mod time;

#[cfg(test)]
mod tests;

pub use attr::*;
pub use error::{Error, Result};
pub use field::{Field, FieldDesc, FieldType, FieldValue, LayoutVisitor, Reflect, WireStruct};
pub use gid::{DEFAULT_SUBNET_PREFIX, Gid};
pub use mad::{
    ClassPortInfo, ClassPortInfoView, GsMad, GsMadView, InvalidField, MAD_HEADER_SIZE, MAD_SIZE,
    MadHeader, MadHeaderView, Method, MgmtClass, RmppFlags, RmppHeader, RmppHeaderView, RmppStatus,
    RmppType, Status, Vendor2Mad, Vendor2MadView,
};
pub use smp::{
    DrAction, DrDiscard, DrNode, DrPath, DrSmp, DrSmpView, LidSmp, LidSmpView, PERMISSIVE_LID,
    dr_outbound, dr_returning, dr_turn_around, smp_data, smp_data_mut,
};
pub use time::Instant;
