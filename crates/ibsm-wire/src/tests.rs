//! Tests of the `wire_struct!` machinery itself: nesting and reflection.

#![allow(dead_code, unreachable_pub)] // the test structure exercises the macro, not every accessor

use crate::attr::{NodeInfo, NodeType};
use crate::field::{FieldValue, WireStruct};

wire_struct! {
    /// A record embedding NodeInfo at byte 4, as SA NodeRecord does.
    pub struct TestRecord, view TestRecordView, size 44, label "TestRecord";
    fields {
        /// LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// Embedded attribute.
        node_info, set_node_info: NodeInfo = (4, 0, 320);
    }
}

#[test]
fn nested_roundtrip_and_dotted_names() {
    let mut r = TestRecord::default();
    r.set_field("lid", FieldValue::Uint(7)).unwrap();
    r.set_field("node_info.node_type", FieldValue::Uint(2))
        .unwrap();
    r.set_field("node_info.vendor_id", FieldValue::Uint(0x02c9))
        .unwrap();
    assert_eq!(r.node_info.node_type, NodeType::Switch);
    let b = r.to_bytes();
    assert_eq!(b[6], 2);
    assert_eq!(&b[41..44], &[0x00, 0x02, 0xc9]);
    assert_eq!(TestRecord::parse(&b).unwrap(), r);
    assert_eq!(
        r.get_field("node_info.vendor_id"),
        Some(FieldValue::Uint(0x02c9))
    );
    assert_eq!(r.get_field("node_info.nope"), None);
    assert!(r.set_field("lid.x", FieldValue::Uint(1)).is_err());
    assert!(r.set_field("lid", FieldValue::Uint(0x1_0000)).is_err());
    assert_eq!(<TestRecord as WireStruct>::SIZE, 44);
    let mut names = 0;
    r.for_each_field(|_, _| names += 1);
    assert_eq!(names, 2);
}
