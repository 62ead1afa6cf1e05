//! Records about nodes, ports and links: NodeRecord, PortInfoRecord, LinkRecord,
//! SwitchInfoRecord, SMInfoRecord, GuidInfoRecord (IBA Vol. 1 §15.2.5, each by name).

use crate::attr::{GuidInfo, NodeDescription, NodeInfo, PortInfo, SmInfo, SwitchInfo};

wire_struct! {
    /// NodeRecord (108 bytes): a port's LID with the node's NodeInfo and
    /// NodeDescription.
    ///
    /// libibmad's `IB_SA_NR_*` names are the nested NodeInfo fields seen from the
    /// record; they are listed in [`Self::LIBIBMAD_ALIASES`].
    pub struct NodeRecord, view NodeRecordView, size 108, label "NodeRecord";
    fields {
        /// Base LID of the port the record describes.
        lid, set_lid: u16 = (0, 0, 16), "IB_SA_NR_LID_F";
        /// The node's NodeInfo (as read through that port).
        node_info, set_node_info: NodeInfo = (4, 0, 320);
        /// The node's NodeDescription.
        node_description, set_node_description: NodeDescription = (44, 0, 512);
    }
}

impl NodeRecord {
    /// libibmad names of the nested fields: `(dotted field, libibmad name)`.
    pub const LIBIBMAD_ALIASES: &'static [(&'static str, &'static str)] = &[
        ("node_info.base_version", "IB_SA_NR_BASEVER_F"),
        ("node_info.class_version", "IB_SA_NR_CLASSVER_F"),
        ("node_info.node_type", "IB_SA_NR_TYPE_F"),
        ("node_info.num_ports", "IB_SA_NR_NPORTS_F"),
        ("node_info.system_image_guid", "IB_SA_NR_SYSTEM_GUID_F"),
        ("node_info.node_guid", "IB_SA_NR_GUID_F"),
        ("node_info.port_guid", "IB_SA_NR_PORT_GUID_F"),
        ("node_info.partition_cap", "IB_SA_NR_PARTITION_CAP_F"),
        ("node_info.device_id", "IB_SA_NR_DEVID_F"),
        ("node_info.revision", "IB_SA_NR_REVISION_F"),
        ("node_info.local_port_num", "IB_SA_NR_LOCAL_PORT_F"),
        ("node_info.vendor_id", "IB_SA_NR_VENDORID_F"),
        ("node_description.node_string", "IB_SA_NR_NODEDESC_F"),
    ];
}

sa_record! {
    NodeRecord, NodeRecord;
    CM_LID = 0, "lid", (0, 0, 16);
    CM_RESERVED1 = 1, "reserved", (2, 0, 16);
    CM_BASE_VERSION = 2, "node_info.base_version", (4, 0, 8);
    CM_CLASS_VERSION = 3, "node_info.class_version", (5, 0, 8);
    CM_NODE_TYPE = 4, "node_info.node_type", (6, 0, 8);
    CM_NUM_PORTS = 5, "node_info.num_ports", (7, 0, 8);
    CM_SYSTEM_IMAGE_GUID = 6, "node_info.system_image_guid", (8, 0, 64);
    CM_NODE_GUID = 7, "node_info.node_guid", (16, 0, 64);
    CM_PORT_GUID = 8, "node_info.port_guid", (24, 0, 64);
    CM_PARTITION_CAP = 9, "node_info.partition_cap", (32, 0, 16);
    CM_DEVICE_ID = 10, "node_info.device_id", (34, 0, 16);
    CM_REVISION = 11, "node_info.revision", (36, 0, 32);
    CM_LOCAL_PORT_NUM = 12, "node_info.local_port_num", (40, 0, 8);
    CM_VENDOR_ID = 13, "node_info.vendor_id", (41, 0, 24);
    CM_NODE_DESCRIPTION = 14, "node_description", (44, 0, 512);
}

wire_struct! {
    /// PortInfoRecord (68 bytes): a port's PortInfo with the LID and port number it
    /// belongs to.
    pub struct PortInfoRecord, view PortInfoRecordView, size 68, label "PortInfoRecord";
    fields {
        /// LID of the CA/router port, or of switch port 0.
        endport_lid, set_endport_lid: u16 = (0, 0, 16);
        /// Port number (switches: which port of the switch).
        port_num, set_port_num: u8 = (2, 0, 8);
        /// Bit 7 (0x80): the requester handles extended speeds.
        options, set_options: u8 = (3, 0, 8);
        /// The PortInfo attribute (IBA Vol. 1 §14.2.5.6).
        port_info, set_port_info: PortInfo = (4, 0, 512);
    }
}

impl PortInfoRecord {
    /// `options` bit: the requester understands extended speeds, so the SA must not
    /// patch the LinkSpeed* fields for legacy readers.
    pub const OPTION_EXTENDED_SPEEDS: u8 = 0x80;
}

sa_record! {
    PortInfoRecord, PortInfoRecord;
    CM_ENDPORT_LID = 0, "endport_lid", (0, 0, 16);
    CM_PORT_NUM = 1, "port_num", (2, 0, 8);
    CM_OPTIONS = 2, "options", (3, 0, 8);
    CM_M_KEY = 3, "port_info.m_key", (4, 0, 64);
    CM_GID_PREFIX = 4, "port_info.gid_prefix", (12, 0, 64);
    CM_LID = 5, "port_info.lid", (20, 0, 16);
    CM_MASTER_SM_LID = 6, "port_info.master_sm_lid", (22, 0, 16);
    CM_CAPABILITY_MASK = 7, "port_info.capability_mask", (24, 0, 32);
    CM_DIAG_CODE = 8, "port_info.diag_code", (28, 0, 16);
    CM_M_KEY_LEASE_PERIOD = 9, "port_info.m_key_lease_period", (30, 0, 16);
    CM_LOCAL_PORT_NUM = 10, "port_info.local_port_num", (32, 0, 8);
    CM_LINK_WIDTH_ENABLED = 11, "port_info.link_width_enabled", (33, 0, 8);
    CM_LINK_WIDTH_SUPPORTED = 12, "port_info.link_width_supported", (34, 0, 8);
    CM_LINK_WIDTH_ACTIVE = 13, "port_info.link_width_active", (35, 0, 8);
    CM_LINK_SPEED_SUPPORTED = 14, "port_info.link_speed_supported", (36, 0, 4);
    CM_PORT_STATE = 15, "port_info.port_state", (36, 4, 4);
    CM_PORT_PHYSICAL_STATE = 16, "port_info.port_phys_state", (37, 0, 4);
    CM_LINK_DOWN_DEFAULT_STATE = 17, "port_info.link_down_default_state", (37, 4, 4);
    CM_M_KEY_PROTECT_BITS = 18, "port_info.m_key_protect_bits", (38, 0, 2);
    CM_RESERVED19 = 19, "reserved", (38, 2, 3);
    CM_LMC = 20, "port_info.lmc", (38, 5, 3);
    CM_LINK_SPEED_ACTIVE = 21, "port_info.link_speed_active", (39, 0, 4);
    CM_LINK_SPEED_ENABLED = 22, "port_info.link_speed_enabled", (39, 4, 4);
    CM_NEIGHBOR_MTU = 23, "port_info.neighbor_mtu", (40, 0, 4);
    CM_MASTER_SM_SL = 24, "port_info.master_sm_sl", (40, 4, 4);
    CM_VL_CAP = 25, "port_info.vl_cap", (41, 0, 4);
    CM_INIT_TYPE = 26, "port_info.init_type", (41, 4, 4);
    CM_VL_HIGH_LIMIT = 27, "port_info.vl_high_limit", (42, 0, 8);
    CM_VL_ARBITRATION_HIGH_CAP = 28, "port_info.vl_arbitration_high_cap", (43, 0, 8);
    CM_VL_ARBITRATION_LOW_CAP = 29, "port_info.vl_arbitration_low_cap", (44, 0, 8);
    CM_INIT_TYPE_REPLY = 30, "port_info.init_type_reply", (45, 0, 4);
    CM_MTU_CAP = 31, "port_info.mtu_cap", (45, 4, 4);
    CM_VL_STALL_COUNT = 32, "port_info.vl_stall_count", (46, 0, 3);
    CM_HOQ_LIFE = 33, "port_info.hoq_life", (46, 3, 5);
    CM_OPERATIONAL_VLS = 34, "port_info.operational_vls", (47, 0, 4);
    CM_PARTITION_ENFORCEMENT_INBOUND = 35, "port_info.partition_enforcement_inbound", (47, 4, 1);
    CM_PARTITION_ENFORCEMENT_OUTBOUND = 36, "port_info.partition_enforcement_outbound", (47, 5, 1);
    CM_FILTER_RAW_INBOUND = 37, "port_info.filter_raw_inbound", (47, 6, 1);
    CM_FILTER_RAW_OUTBOUND = 38, "port_info.filter_raw_outbound", (47, 7, 1);
    CM_M_KEY_VIOLATIONS = 39, "port_info.m_key_violations", (48, 0, 16);
    CM_P_KEY_VIOLATIONS = 40, "port_info.p_key_violations", (50, 0, 16);
    CM_Q_KEY_VIOLATIONS = 41, "port_info.q_key_violations", (52, 0, 16);
    CM_GUID_CAP = 42, "port_info.guid_cap", (54, 0, 8);
    CM_CLIENT_REREGISTER = 43, "port_info.client_reregister", (55, 0, 1);
    CM_MCAST_PKEY_TRAP_SUPPRESSION_ENABLED = 44, "port_info.multicast_pkey_trap_suppression_enabled", (55, 1, 2);
    CM_SUBNET_TIMEOUT = 45, "port_info.subnet_timeout", (55, 3, 5);
    CM_RESERVED46 = 46, "reserved", (56, 0, 3);
    CM_RESP_TIME_VALUE = 47, "port_info.resp_time_value", (56, 3, 5);
    CM_LOCAL_PHY_ERRORS = 48, "port_info.local_phy_errors", (57, 0, 4);
    CM_OVERRUN_ERRORS = 49, "port_info.overrun_errors", (57, 4, 4);
    CM_MAX_CREDIT_HINT = 50, "port_info.max_credit_hint", (58, 0, 16);
    CM_RESERVED51 = 51, "port_info[byte 56: reserved, LinkSpeedExt*2]", (60, 0, 8);
    CM_LINK_ROUND_TRIP_LATENCY = 52, "port_info.link_round_trip_latency", (61, 0, 24);
    CM_CAPABILITY_MASK2 = 53, "port_info.capability_mask2", (64, 0, 16);
    CM_LINK_SPEED_EXT_ACTIVE = 54, "port_info.link_speed_ext_active", (66, 0, 4);
    CM_LINK_SPEED_EXT_SUPPORTED = 55, "port_info.link_speed_ext_supported", (66, 4, 4);
    CM_RESERVED56 = 56, "reserved", (67, 0, 3);
    CM_LINK_SPEED_EXT_ENABLED = 57, "port_info.link_speed_ext_enabled", (67, 3, 5);
}

wire_struct! {
    /// LinkRecord (6 bytes, 8 apart in a table): one direction of a link.
    pub struct LinkRecord, view LinkRecordView, size 6, label "LinkRecord";
    fields {
        /// LID of the node at this end (switch: port 0 LID).
        from_lid, set_from_lid: u16 = (0, 0, 16);
        /// Port number on that node.
        from_port, set_from_port: u8 = (2, 0, 8);
        /// Port number on the other node.
        to_port, set_to_port: u8 = (3, 0, 8);
        /// LID of the other node.
        to_lid, set_to_lid: u16 = (4, 0, 16);
    }
}

sa_record! {
    LinkRecord, LinkRecord;
    CM_FROM_LID = 0, "from_lid", (0, 0, 16);
    CM_FROM_PORT = 1, "from_port", (2, 0, 8);
    CM_TO_PORT = 2, "to_port", (3, 0, 8);
    CM_TO_LID = 3, "to_lid", (4, 0, 16);
}

wire_struct! {
    /// SwitchInfoRecord (24 bytes): a switch's LID and its SwitchInfo.
    pub struct SwitchInfoRecord, view SwitchInfoRecordView, size 24, label "SwitchInfoRecord";
    fields {
        /// Switch LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// The SwitchInfo attribute (IBA Vol. 1 §14.2.5.4).
        switch_info, set_switch_info: SwitchInfo = (4, 0, 160);
    }
}

sa_record! {
    SwitchInfoRecord, SwitchInfoRecord;
    CM_LID = 0, "lid", (0, 0, 16);
    CM_RESERVED1 = 1, "reserved", (2, 0, 16);
}

wire_struct! {
    /// SMInfoRecord (25 bytes, 32 apart in a table): an SM port's LID and SMInfo.
    pub struct SmInfoRecord, view SmInfoRecordView, size 25, label "SMInfoRecord";
    fields {
        /// LID of the SM port.
        lid, set_lid: u16 = (0, 0, 16);
        /// The SMInfo attribute (IBA Vol. 1 §14.2.5.13).
        sm_info, set_sm_info: SmInfo = (4, 0, 168);
    }
}

sa_record! {
    SmInfoRecord, SmInfoRecord;
    CM_LID = 0, "lid", (0, 0, 16);
    CM_RESERVED1 = 1, "reserved", (2, 0, 16);
    CM_GUID = 2, "sm_info.guid", (4, 0, 64);
    CM_SM_KEY = 3, "sm_info.sm_key", (12, 0, 64);
    CM_ACT_COUNT = 4, "sm_info.act_count", (20, 0, 32);
    CM_PRIORITY = 5, "sm_info.priority", (24, 0, 4);
    CM_SM_STATE = 6, "sm_info.sm_state", (24, 4, 4);
}

wire_struct! {
    /// GuidInfoRecord (72 bytes): one GUIDInfo block (8 port GUIDs / alias GUIDs) of a
    /// port. libibmad's `IB_SA_GIR_GUIDn_F` are the nested GUIDInfo fields
    /// ([`Self::LIBIBMAD_ALIASES`]).
    pub struct GuidInfoRecord, view GuidInfoRecordView, size 72, label "GuidInfoRecord";
    fields {
        /// Port LID.
        lid, set_lid: u16 = (0, 0, 16), "IB_SA_GIR_LID_F";
        /// GUIDInfo block number.
        block_num, set_block_num: u8 = (2, 0, 8), "IB_SA_GIR_BLOCKNUM_F";
        /// The GUIDInfo block: GUID indexes 8 * block_num ..= 8 * block_num + 7.
        guid_info, set_guid_info: GuidInfo = (8, 0, 512);
    }
}

impl GuidInfoRecord {
    /// libibmad names of the nested fields: `(dotted field, libibmad name)`.
    pub const LIBIBMAD_ALIASES: &'static [(&'static str, &'static str)] = &[
        ("guid_info.guid0", "IB_SA_GIR_GUID0_F"),
        ("guid_info.guid1", "IB_SA_GIR_GUID1_F"),
        ("guid_info.guid2", "IB_SA_GIR_GUID2_F"),
        ("guid_info.guid3", "IB_SA_GIR_GUID3_F"),
        ("guid_info.guid4", "IB_SA_GIR_GUID4_F"),
        ("guid_info.guid5", "IB_SA_GIR_GUID5_F"),
        ("guid_info.guid6", "IB_SA_GIR_GUID6_F"),
        ("guid_info.guid7", "IB_SA_GIR_GUID7_F"),
    ];
}

sa_record! {
    GuidInfoRecord, GuidInfoRecord;
    CM_LID = 0, "lid", (0, 0, 16);
    CM_BLOCK_NUM = 1, "block_num", (2, 0, 8);
    CM_RESERVED2 = 2, "reserved", (3, 0, 8);
    CM_RESERVED3 = 3, "reserved", (4, 0, 32);
    CM_GUID0 = 4, "guid_info.guid0", (8, 0, 64);
    CM_GUID1 = 5, "guid_info.guid1", (16, 0, 64);
    CM_GUID2 = 6, "guid_info.guid2", (24, 0, 64);
    CM_GUID3 = 7, "guid_info.guid3", (32, 0, 64);
    CM_GUID4 = 8, "guid_info.guid4", (40, 0, 64);
    CM_GUID5 = 9, "guid_info.guid5", (48, 0, 64);
    CM_GUID6 = 10, "guid_info.guid6", (56, 0, 64);
    CM_GUID7 = 11, "guid_info.guid7", (64, 0, 64);
}
