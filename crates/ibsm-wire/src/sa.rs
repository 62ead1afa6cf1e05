//! Subnet Administration (class 0x03): the SA MAD with its RMPP header, the SA
//! records of IBA Vol. 1 §15.2 (RMPP: §13.6), ComponentMask matching, and a sans-IO RMPP
//! segmenter and reassembler for multi-MAD answers.
//!
//! Every record is a `wire_struct!` (view + owned value + reflective access) that also
//! implements [`SaRecord`]: its AttributeID, AttributeOffset and the table of its
//! ComponentMask bits. Records that carry an SM attribute (NodeRecord, PortInfoRecord,
//! SMInfoRecord, ...) nest the attribute's owned type, so the attribute's offsets are
//! written once. The ComponentMask table names the field of each component (dotted into
//! a nested attribute) and takes its position from those field tables when the crate
//! compiles; only reserved components and those covering part of a field state one.
//!
//! ```
//! use ibsm_wire::sa::{ComponentMask, PathRecord, SaAttributeId, SaMad, SaRecord};
//! use ibsm_wire::{Gid, Method};
//!
//! // SubnAdmGetTable(PathRecord) from one port GID to another.
//! let mut pr = PathRecord::default();
//! pr.sgid = Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001);
//! pr.dgid = Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0002);
//! pr.reversible = true;
//! pr.numb_path = 1;
//! let mask = PathRecord::CM_SGID | PathRecord::CM_DGID | PathRecord::CM_REVERSIBLE
//!     | PathRecord::CM_NUMB_PATH;
//! let req = SaMad::request(Method::GetTable, 0x42, mask, &pr)?;
//! let bytes = req.to_bytes();
//! assert_eq!(bytes[1], 0x03);
//! assert_eq!(req.attribute_id, SaAttributeId::PathRecord);
//! assert_eq!(PathRecord::parse(&bytes[56..])?, pr);
//! assert!(pr.matches(&pr, mask));
//! # Ok::<(), ibsm_wire::Error>(())
//! ```

mod codes;
mod component;
mod header;
mod records;
pub mod rmpp;

#[cfg(test)]
mod tests;

/// The MTU code of SA records is the PortInfo one (6 bits wide here, 4 in PortInfo).
pub use crate::attr::Mtu;
pub use codes::{Rate, SaAttributeId, SaCapabilityMask, SaCapabilityMask2, SaStatus, Selector};
pub use component::{Component, ComponentMask, SaRecord, Template, bits_equal};
pub use header::{
    RecordIter, SA_CLASS_VERSION, SA_DATA_OFFSET, SA_DATA_SIZE, SA_HEADER_SIZE, SaMad, SaMadView,
    records,
};
pub use records::*;
