//! The SA records (IBA Vol. 1 §15.2.5, one subsection per record), one `wire_struct!`
//! table each plus its ComponentMask table.

/// ComponentMask constants and the [`SaRecord`](super::SaRecord) impl of a record, from
/// one table of rows in ComponentMask bit order (a row's bit is its field's place in the
/// record, reserved fields included: IBA Vol. 1 §15.2.1, ComponentMask):
///
/// ```text
/// sa_record! {
///     NodeRecord, NodeRecord;                          // record type, SaAttributeId variant
///     CM_LID = 0, "lid";                               // a whole field
///     CM_RESERVED1 = 1, "reserved", (2, 0, 16);        // reserved bits
///     CM_NODE_TYPE = 4, "node_info.node_type";         // a field of a nested attribute
/// }
/// ```
///
/// A component that is a whole field names it (dotted into nested attributes) and takes
/// its position from the record's `FIELDS` at compile time, so a position is written only
/// in the `wire_struct!` table and a name that is no field fails the build. Only rows
/// without a field of their own give a `(byte, bit, len)`: `reserved` ones, and those
/// covering part of a field, named `field[..]` (see [`Component`](super::Component)).
macro_rules! sa_record {
    (@field $rec:ident, $name:literal) => {
        match $crate::field::find_field(<$rec>::FIELDS, $name) {
            Some(f) => f,
            None => panic!(concat!(
                stringify!($rec), ": ComponentMask row \"", $name,
                "\" names no field of the record (dotted names reach into nested ones)"
            )),
        }
    };
    (@field $rec:ident, $name:literal, ($b:expr, $bi:expr, $l:expr)) => {{
        // A position in the row would repeat the field table.
        assert!(
            $crate::sa::component::has_own_position($name),
            concat!(
                stringify!($rec), ": ComponentMask row \"", $name,
                "\" gives a position, but only reserved and partial (`field[..]`) rows may"
            )
        );
        $crate::field::Field::new($b, $bi, $l)
    }};
    (
        $rec:ident, $id:ident;
        $( $cm:ident = $bit:literal, $name:literal $(, ($b:expr, $bi:expr, $l:expr))?; )*
    ) => {
        impl $rec {
            $(
                #[doc = concat!("ComponentMask bit ", stringify!($bit), ": `", $name, "`.")]
                pub const $cm: $crate::sa::ComponentMask = $crate::sa::ComponentMask::bit($bit);
            )*
        }

        impl $crate::sa::SaRecord for $rec {
            const ATTRIBUTE_ID: $crate::sa::SaAttributeId = $crate::sa::SaAttributeId::$id;
            const COMPONENTS: &'static [$crate::sa::Component] = &[
                $( $crate::sa::Component {
                    bit: $bit,
                    name: $name,
                    field: sa_record!(@field $rec, $name $(, ($b, $bi, $l))?),
                }, )*
            ];
        }

        // Associated constants are evaluated only where used; this makes every record's
        // table, and so its name lookups, part of the build.
        const _: &[$crate::sa::Component] = <$rec as $crate::sa::SaRecord>::COMPONENTS;
    };
}

// Attributes the SA sends or receives whole, without ComponentMask bits.
use crate::attr::SaNotice;
use crate::mad::ClassPortInfo;
sa_record! {
    ClassPortInfo, ClassPortInfo;
}
sa_record! {
    SaNotice, Notice;
}

mod inform;
mod mcast;
mod node;
mod path;
mod service;
mod tables;

pub use inform::{InformInfo, InformInfoRecord, InformInfoRecordView, InformInfoView};
pub use mcast::{McMemberRecord, McMemberRecordView, join_state, mgid_scope};
pub use node::{
    GuidInfoRecord, GuidInfoRecordView, LinkRecord, LinkRecordView, NodeRecord, NodeRecordView,
    PortInfoRecord, PortInfoRecordView, SmInfoRecord, SmInfoRecordView, SwitchInfoRecord,
    SwitchInfoRecordView,
};
pub use path::{
    MULTI_PATH_GID_OFFSET, MULTI_PATH_MAX_GIDS, MultiPathGids, MultiPathRecord,
    MultiPathRecordView, PathRecord, PathRecordView,
};
pub use service::{ServiceRecord, ServiceRecordView};
pub use tables::{
    LinearForwardingTableRecord, LinearForwardingTableRecordView, MulticastForwardingTableRecord,
    MulticastForwardingTableRecordView, PKeyTableRecord, PKeyTableRecordView,
    RandomForwardingTableRecord, RandomForwardingTableRecordView, SlToVlMappingTableRecord,
    SlToVlMappingTableRecordView, VlArbitrationTableRecord, VlArbitrationTableRecordView,
};
