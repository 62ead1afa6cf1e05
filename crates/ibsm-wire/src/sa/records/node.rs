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
    CM_LID = 0, "lid";
    CM_RESERVED1 = 1, "reserved", (2, 0, 16);
    CM_BASE_VERSION = 2, "node_info.base_version";
    CM_CLASS_VERSION = 3, "node_info.class_version";
    CM_NODE_TYPE = 4, "node_info.node_type";
    CM_NUM_PORTS = 5, "node_info.num_ports";
    CM_SYSTEM_IMAGE_GUID = 6, "node_info.system_image_guid";
    CM_NODE_GUID = 7, "node_info.node_guid";
    CM_PORT_GUID = 8, "node_info.port_guid";
    CM_PARTITION_CAP = 9, "node_info.partition_cap";
    CM_DEVICE_ID = 10, "node_info.device_id";
    CM_REVISION = 11, "node_info.revision";
    CM_LOCAL_PORT_NUM = 12, "node_info.local_port_num";
    CM_VENDOR_ID = 13, "node_info.vendor_id";
    CM_NODE_DESCRIPTION = 14, "node_description";
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
    CM_ENDPORT_LID = 0, "endport_lid";
    CM_PORT_NUM = 1, "port_num";
    CM_OPTIONS = 2, "options";
    CM_M_KEY = 3, "port_info.m_key";
    CM_GID_PREFIX = 4, "port_info.gid_prefix";
    CM_LID = 5, "port_info.lid";
    CM_MASTER_SM_LID = 6, "port_info.master_sm_lid";
    CM_CAPABILITY_MASK = 7, "port_info.capability_mask";
    CM_DIAG_CODE = 8, "port_info.diag_code";
    CM_M_KEY_LEASE_PERIOD = 9, "port_info.m_key_lease_period";
    CM_LOCAL_PORT_NUM = 10, "port_info.local_port_num";
    CM_LINK_WIDTH_ENABLED = 11, "port_info.link_width_enabled";
    CM_LINK_WIDTH_SUPPORTED = 12, "port_info.link_width_supported";
    CM_LINK_WIDTH_ACTIVE = 13, "port_info.link_width_active";
    CM_LINK_SPEED_SUPPORTED = 14, "port_info.link_speed_supported";
    CM_PORT_STATE = 15, "port_info.port_state";
    CM_PORT_PHYSICAL_STATE = 16, "port_info.port_phys_state";
    CM_LINK_DOWN_DEFAULT_STATE = 17, "port_info.link_down_default_state";
    CM_M_KEY_PROTECT_BITS = 18, "port_info.m_key_protect_bits";
    CM_RESERVED19 = 19, "reserved", (38, 2, 3);
    CM_LMC = 20, "port_info.lmc";
    CM_LINK_SPEED_ACTIVE = 21, "port_info.link_speed_active";
    CM_LINK_SPEED_ENABLED = 22, "port_info.link_speed_enabled";
    CM_NEIGHBOR_MTU = 23, "port_info.neighbor_mtu";
    CM_MASTER_SM_SL = 24, "port_info.master_sm_sl";
    CM_VL_CAP = 25, "port_info.vl_cap";
    CM_INIT_TYPE = 26, "port_info.init_type";
    CM_VL_HIGH_LIMIT = 27, "port_info.vl_high_limit";
    CM_VL_ARBITRATION_HIGH_CAP = 28, "port_info.vl_arbitration_high_cap";
    CM_VL_ARBITRATION_LOW_CAP = 29, "port_info.vl_arbitration_low_cap";
    CM_INIT_TYPE_REPLY = 30, "port_info.init_type_reply";
    CM_MTU_CAP = 31, "port_info.mtu_cap";
    CM_VL_STALL_COUNT = 32, "port_info.vl_stall_count";
    CM_HOQ_LIFE = 33, "port_info.hoq_life";
    CM_OPERATIONAL_VLS = 34, "port_info.operational_vls";
    CM_PARTITION_ENFORCEMENT_INBOUND = 35, "port_info.partition_enforcement_inbound";
    CM_PARTITION_ENFORCEMENT_OUTBOUND = 36, "port_info.partition_enforcement_outbound";
    CM_FILTER_RAW_INBOUND = 37, "port_info.filter_raw_inbound";
    CM_FILTER_RAW_OUTBOUND = 38, "port_info.filter_raw_outbound";
    CM_M_KEY_VIOLATIONS = 39, "port_info.m_key_violations";
    CM_P_KEY_VIOLATIONS = 40, "port_info.p_key_violations";
    CM_Q_KEY_VIOLATIONS = 41, "port_info.q_key_violations";
    CM_GUID_CAP = 42, "port_info.guid_cap";
    CM_CLIENT_REREGISTER = 43, "port_info.client_reregister";
    CM_MCAST_PKEY_TRAP_SUPPRESSION_ENABLED = 44, "port_info.multicast_pkey_trap_suppression_enabled";
    CM_SUBNET_TIMEOUT = 45, "port_info.subnet_timeout";
    CM_RESERVED46 = 46, "reserved", (56, 0, 3);
    CM_RESP_TIME_VALUE = 47, "port_info.resp_time_value";
    CM_LOCAL_PHY_ERRORS = 48, "port_info.local_phy_errors";
    CM_OVERRUN_ERRORS = 49, "port_info.overrun_errors";
    CM_MAX_CREDIT_HINT = 50, "port_info.max_credit_hint";
    CM_RESERVED51 = 51, "port_info[byte 56: reserved, LinkSpeedExt*2]", (60, 0, 8);
    CM_LINK_ROUND_TRIP_LATENCY = 52, "port_info.link_round_trip_latency";
    CM_CAPABILITY_MASK2 = 53, "port_info.capability_mask2";
    CM_LINK_SPEED_EXT_ACTIVE = 54, "port_info.link_speed_ext_active";
    CM_LINK_SPEED_EXT_SUPPORTED = 55, "port_info.link_speed_ext_supported";
    CM_RESERVED56 = 56, "reserved", (67, 0, 3);
    CM_LINK_SPEED_EXT_ENABLED = 57, "port_info.link_speed_ext_enabled";
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
    CM_FROM_LID = 0, "from_lid";
    CM_FROM_PORT = 1, "from_port";
    CM_TO_PORT = 2, "to_port";
    CM_TO_LID = 3, "to_lid";
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
    CM_LID = 0, "lid";
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
    CM_LID = 0, "lid";
    CM_RESERVED1 = 1, "reserved", (2, 0, 16);
    CM_GUID = 2, "sm_info.guid";
    CM_SM_KEY = 3, "sm_info.sm_key";
    CM_ACT_COUNT = 4, "sm_info.act_count";
    CM_PRIORITY = 5, "sm_info.priority";
    CM_SM_STATE = 6, "sm_info.sm_state";
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
    CM_LID = 0, "lid";
    CM_BLOCK_NUM = 1, "block_num";
    CM_RESERVED2 = 2, "reserved", (3, 0, 8);
    CM_RESERVED3 = 3, "reserved", (4, 0, 32);
    CM_GUID0 = 4, "guid_info.guid0";
    CM_GUID1 = 5, "guid_info.guid1";
    CM_GUID2 = 6, "guid_info.guid2";
    CM_GUID3 = 7, "guid_info.guid3";
    CM_GUID4 = 8, "guid_info.guid4";
    CM_GUID5 = 9, "guid_info.guid5";
    CM_GUID6 = 10, "guid_info.guid6";
    CM_GUID7 = 11, "guid_info.guid7";
}
