//! Subnet-management attributes (IBA Vol. 1 §14.2.5): one module per attribute
//! or group, each a `wire_struct!` table plus the enums, flag words and helpers its
//! fields need. [`modifier`] holds the typed AttributeModifier encodings.
//!
//! ```
//! use ibsm_wire::modifier::PortMod;
//! use ibsm_wire::{Notice, PortInfo, PortInfoView, PortState, ProducerType, Trap128Details, TrapData};
//!
//! // Read two fields of a PortInfo in place, then change its state for a SubnSet.
//! let mut data = PortInfo { lid: 7, port_state: PortState::Init, ..PortInfo::default() }.to_bytes();
//! let mut view = PortInfoView::new_checked(&mut data[..])?;
//! assert_eq!((view.lid(), view.port_state()), (7, PortState::Init));
//! view.set_port_state(PortState::Armed);
//! let modifier = PortMod { port: 3, sm_supports_extended_speeds: true }.encode();
//! assert_eq!(modifier, 0x8000_0003);
//!
//! // A switch's trap 128, and how the SM reads it back.
//! let trap = Notice::generic_with(ProducerType::Switch, 7, &Trap128Details { lid: 7 });
//! let seen = Notice::parse(&trap.to_bytes())?;
//! assert_eq!(seen.trap_data(), TrapData::LinkStateChange(Trap128Details { lid: 7 }));
//! # Ok::<(), ibsm_wire::Error>(())
//! ```

/// A flag word over an unsigned integer: named bit constants, set operations and a
/// [`FieldType`](crate::field::FieldType) impl so it can be a field of a wire structure.
///
/// Unnamed bits are kept, so decoding stays lossless.
macro_rules! bit_flags {
    (
        $(#[$meta:meta])*
        pub struct $name:ident : $repr:ty {
            $( $(#[$cmeta:meta])* const $c:ident = $v:expr; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub $repr);

        impl $name {
            $( $(#[$cmeta])* pub const $c: Self = Self($v); )*
            /// No bit set.
            pub const EMPTY: Self = Self(0);
            /// Every named flag with its name, in declaration order.
            pub const NAMED: &'static [(&'static str, Self)] = &[$( (stringify!($c), Self($v)), )*];

            /// The raw bits.
            #[must_use]
            pub const fn bits(self) -> $repr {
                self.0
            }
            /// Whether every bit of `other` is set in `self`.
            #[must_use]
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
            /// Whether `self` and `other` share a bit.
            #[must_use]
            pub const fn intersects(self, other: Self) -> bool {
                self.0 & other.0 != 0
            }
            /// Whether no bit is set.
            #[must_use]
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }
            /// Bits set in either.
            #[must_use]
            pub const fn union(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }
            /// Bits set in both.
            #[must_use]
            pub const fn intersection(self, other: Self) -> Self {
                Self(self.0 & other.0)
            }
            /// Bits of `self` not in `other`.
            #[must_use]
            pub const fn difference(self, other: Self) -> Self {
                Self(self.0 & !other.0)
            }
            /// Sets the bits of `other`.
            pub fn insert(&mut self, other: Self) {
                self.0 |= other.0;
            }
            /// Clears the bits of `other`.
            pub fn remove(&mut self, other: Self) {
                self.0 &= !other.0;
            }
            /// Sets or clears the bits of `other`.
            pub fn set(&mut self, other: Self, on: bool) {
                if on {
                    self.insert(other);
                } else {
                    self.remove(other);
                }
            }
        }

        impl core::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, rhs: Self) -> Self {
                self.union(rhs)
            }
        }

        impl core::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: Self) {
                self.insert(rhs);
            }
        }

        impl core::ops::BitAnd for $name {
            type Output = Self;
            fn bitand(self, rhs: Self) -> Self {
                self.intersection(rhs)
            }
        }

        impl From<$repr> for $name {
            fn from(v: $repr) -> Self {
                Self(v)
            }
        }

        impl From<$name> for $repr {
            fn from(v: $name) -> $repr {
                v.0
            }
        }

        impl core::fmt::Debug for $name {
            /// `Name(A | B | 0x..)`: named flags, then any unnamed bits in hex.
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}(", stringify!($name))?;
                let mut rest = self.0;
                let mut first = true;
                for (n, v) in Self::NAMED {
                    if v.0 != 0 && self.contains(*v) && rest & v.0 != 0 {
                        if !first {
                            f.write_str(" | ")?;
                        }
                        f.write_str(n)?;
                        rest &= !v.0;
                        first = false;
                    }
                }
                if rest != 0 || first {
                    if !first {
                        f.write_str(" | ")?;
                    }
                    write!(f, "{rest:#x}")?;
                }
                f.write_str(")")
            }
        }

        impl $crate::field::FieldType for $name {
            #[inline(always)]
            fn read(buf: &[u8], f: $crate::field::Field) -> Self {
                Self($crate::field::get_uint(buf, f) as $repr)
            }
            #[inline(always)]
            fn write(self, buf: &mut [u8], f: $crate::field::Field) {
                $crate::field::set_uint(buf, f, u64::from(self.0));
            }
            fn to_value(&self) -> $crate::field::FieldValue<'_> {
                $crate::field::FieldValue::Uint(u64::from(self.0))
            }
            fn from_value(v: $crate::field::FieldValue<'_>, f: $crate::field::Field) -> Option<Self> {
                <$repr as $crate::field::FieldType>::from_value(v, f).map(Self)
            }
        }
    };
}

// The PerfMgt module's flag words are built the same way.
pub(crate) use bit_flags;

mod ids;
mod misc;
pub mod modifier;
mod node;
mod notice;
mod port;
mod sm_info;
mod switch;
mod tables;

pub use ids::SmpAttribute;
pub use misc::*;
pub use node::{NodeDescription, NodeDescriptionView, NodeInfo, NodeInfoView, NodeType};
pub use notice::*;
pub use port::*;
pub use sm_info::{SmInfo, SmInfoControl, SmInfoView, SmState};
pub use switch::{SwitchInfo, SwitchInfoView};
pub use tables::*;

#[cfg(test)]
pub(crate) mod testutil;

code_enum! {
    /// AttributeID of the subnet-management classes (0x01, 0x81).
    pub enum SmAttributeId: u16 {
        /// Notice (traps).
        Notice = 0x0002,
        /// NodeDescription.
        NodeDescription = 0x0010,
        /// NodeInfo.
        NodeInfo = 0x0011,
        /// SwitchInfo.
        SwitchInfo = 0x0012,
        /// GUIDInfo.
        GuidInfo = 0x0014,
        /// PortInfo.
        PortInfo = 0x0015,
        /// P_KeyTable.
        PKeyTable = 0x0016,
        /// SLtoVLMappingTable.
        SlToVlMappingTable = 0x0017,
        /// VLArbitrationTable.
        VlArbitrationTable = 0x0018,
        /// LinearForwardingTable.
        LinearForwardingTable = 0x0019,
        /// RandomForwardingTable.
        RandomForwardingTable = 0x001A,
        /// MulticastForwardingTable.
        MulticastForwardingTable = 0x001B,
        /// LinkSpeedWidthPairsTable.
        LinkSpeedWidthPairsTable = 0x001C,
        /// VendorSpecificMadsTable.
        VendorSpecificMadsTable = 0x001D,
        /// HierarchyInfo.
        HierarchyInfo = 0x001E,
        /// SMInfo.
        SmInfo = 0x0020,
        /// VendorDiag.
        VendorDiag = 0x0030,
        /// LedInfo.
        LedInfo = 0x0031,
        /// CableInfo.
        CableInfo = 0x0032,
        /// PortInfoExtended.
        PortInfoExtended = 0x0033,
        /// MlnxExtPortInfo (Mellanox vendor attribute).
        MlnxExtPortInfo = 0xFF90,
    }
}
