//! Subnet-management attributes (`shared/spec/attributes.md`): one module per attribute,
//! each a `wire_struct!` table plus the enums and helpers its fields need.

mod node;

pub use node::{NodeDescription, NodeDescriptionView, NodeInfo, NodeInfoView, NodeType};

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
