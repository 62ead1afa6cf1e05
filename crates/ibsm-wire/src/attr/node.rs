//! NodeDescription (0x0010) and NodeInfo (0x0011).

code_enum! {
    /// NodeInfo.NodeType.
    pub enum NodeType: u8 {
        /// Channel adapter.
        Ca = 1,
        /// Switch.
        Switch = 2,
        /// Router.
        Router = 3,
        /// RNIC (old software only).
        Rnic = 4,
    }
}

wire_struct! {
    /// NodeDescription: 64 bytes of UTF-8 text, NUL-padded when shorter.
    pub struct NodeDescription, view NodeDescriptionView, size 64, label "NodeDescription";
    fields {
        /// The raw 64 bytes.
        node_string, set_node_string: [u8; 64] = (0, 0, 512), "IB_NODE_DESC_F";
    }
}

impl NodeDescription {
    /// A description from text, truncated to 64 bytes at a character boundary.
    #[must_use]
    pub fn from_text(text: &str) -> Self {
        let mut end = text.len().min(64);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut node_string = [0u8; 64];
        node_string[..end].copy_from_slice(&text.as_bytes()[..end]);
        Self { node_string }
    }

    /// The bytes before the first NUL (all 64 if there is none).
    #[must_use]
    pub fn text_bytes(&self) -> &[u8] {
        let end = self.node_string.iter().position(|&b| b == 0).unwrap_or(64);
        &self.node_string[..end]
    }

    /// The text, if it is valid UTF-8.
    #[must_use]
    pub fn text(&self) -> Option<&str> {
        core::str::from_utf8(self.text_bytes()).ok()
    }
}

wire_struct! {
    /// NodeInfo (read-only). PortGUID and LocalPortNum describe the port the SMP entered.
    pub struct NodeInfo, view NodeInfoView, size 40, label "NodeInfo";
    fields {
        /// Highest MAD base version supported.
        base_version, set_base_version: u8 = (0, 0, 8), "IB_NODE_BASE_VERS_F";
        /// Highest SMP class version supported.
        class_version, set_class_version: u8 = (1, 0, 8), "IB_NODE_CLASS_VERS_F";
        /// Channel adapter, switch or router.
        node_type, set_node_type: NodeType = (2, 0, 8), "IB_NODE_TYPE_F";
        /// Number of physical ports (a switch's port 0 not counted).
        num_ports, set_num_ports: u8 = (3, 0, 8), "IB_NODE_NPORTS_F";
        /// System image GUID (0 if unsupported).
        system_image_guid, set_system_image_guid: u64 = (4, 0, 64), "IB_NODE_SYSTEM_GUID_F";
        /// Node GUID.
        node_guid, set_node_guid: u64 = (12, 0, 64), "IB_NODE_GUID_F";
        /// GUID of the port the SMP came in on (switches: port 0).
        port_guid, set_port_guid: u64 = (20, 0, 64), "IB_NODE_PORT_GUID_F";
        /// Number of P_Key table entries.
        partition_cap, set_partition_cap: u16 = (28, 0, 16), "IB_NODE_PARTITION_CAP_F";
        /// Vendor-assigned device ID.
        device_id, set_device_id: u16 = (30, 0, 16), "IB_NODE_DEVID_F";
        /// Device revision.
        revision, set_revision: u32 = (32, 0, 32), "IB_NODE_REVISION_F";
        /// Port number the SMP came in on.
        local_port_num, set_local_port_num: u8 = (36, 0, 8), "IB_NODE_LOCAL_PORT_F";
        /// IEEE OUI of the vendor.
        vendor_id, set_vendor_id: u32 = (37, 0, 24), "IB_NODE_VENDORID_F";
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;

    #[test]
    fn description_text() {
        let d = NodeDescription::from_text("ibsim host hca 1");
        assert_eq!(d.text(), Some("ibsim host hca 1"));
        let long = "x".repeat(70);
        assert_eq!(NodeDescription::from_text(&long).text_bytes().len(), 64);
        let mut e: String = "é".repeat(32);
        e.push('a');
        assert_eq!(NodeDescription::from_text(&e).text().unwrap().len(), 64);
    }

    /// NodeInfo of a 36-port switch as ibnetdiscover would see it through port 0.
    const NODE_INFO: [u8; 40] = [
        0x01, 0x01, 0x02, 0x24, // versions 1/1, switch, 36 ports
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0xbb, 0xcc, // system image GUID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0xbb, 0xcd, // node GUID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0xbb, 0xcd, // port GUID
        0x00, 0x08, 0xc7, 0x38, // partition cap 8, device 0xc738
        0x00, 0x00, 0x00, 0xa1, // revision
        0x00, 0x00, 0x02, 0xc9, // local port 0, vendor 0x0002c9
    ];

    #[test]
    fn node_info_bytes() {
        let n = NodeInfo::parse(&NODE_INFO).unwrap();
        assert_eq!((n.base_version, n.class_version), (1, 1));
        assert_eq!(n.node_type, NodeType::Switch);
        assert_eq!(n.num_ports, 36);
        assert_eq!(n.system_image_guid, 0x0002_c903_00aa_bbcc);
        assert_eq!(n.node_guid, 0x0002_c903_00aa_bbcd);
        assert_eq!(n.port_guid, n.node_guid);
        assert_eq!((n.partition_cap, n.device_id), (8, 0xc738));
        assert_eq!(n.revision, 0xa1);
        assert_eq!(n.local_port_num, 0);
        assert_eq!(n.vendor_id, 0x02c9);
        assert_eq!(n.to_bytes(), NODE_INFO);
        let v = NodeInfoView::new_checked(&NODE_INFO[..]).unwrap();
        assert_eq!(v.vendor_id(), 0x02c9);
        assert!(NodeInfo::parse(&NODE_INFO[..39]).is_err());
        assert_eq!(NodeType::from(9), NodeType::Unknown(9));
    }

    #[test]
    fn generic_properties() {
        crate::attr::testutil::check::<NodeInfo>();
        crate::attr::testutil::check::<NodeDescription>();
    }
}
