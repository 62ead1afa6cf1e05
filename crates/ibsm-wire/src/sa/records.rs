//! The SA records (IBA Vol. 1 §15.2.5, one subsection per record), one `wire_struct!`
//! table each plus its ComponentMask table.

/// ComponentMask constants and the [`SaRecord`](super::SaRecord) impl of a record, from
/// one table of `CONST = bit, "field", (byte, bit, len);` rows (`bit`: the field's place
/// in the record, reserved fields included, IBA Vol. 1 §15.2.1 (ComponentMask);
/// positions are where the component's bits lie in the record).
macro_rules! sa_record {
    (
        $rec:ident, $id:ident;
        $( $cm:ident = $bit:literal, $name:literal, ($b:expr, $bi:expr, $l:expr); )*
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
                    field: $crate::field::Field::new($b, $bi, $l),
                }, )*
            ];
        }
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
