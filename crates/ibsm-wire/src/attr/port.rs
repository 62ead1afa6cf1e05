//! PortInfo (0x0015) with its code points (port states, MTU, VL counts, active width and
//! speed) and flag words (CapabilityMask, CapabilityMask2, width and speed masks).

/// A code whose values are single bits of a mask type (the active width or speed and
/// its supported/enabled masks): `mask` turns a value into its one-bit mask, and the
/// mask's `$pick` (`widest`, `fastest`) answers the first value of a preference order
/// that it contains.
macro_rules! one_bit_codes {
    (
        $(#[$mask_doc:meta])* $code:ident::mask -> $mask:ident;
        $(#[$pick_doc:meta])* $pick:ident -> [$($best:ident),+];
    ) => {
        impl $code {
            $(#[$mask_doc])*
            #[must_use]
            pub fn mask(self) -> $mask {
                $mask(u8::from(self))
            }
        }

        impl $mask {
            $(#[$pick_doc])*
            #[must_use]
            pub fn $pick(self) -> Option<$code> {
                [$($code::$best),+].into_iter().find(|c| self.contains(c.mask()))
            }
        }
    };
}

code_enum! {
    /// PortInfo.PortState, the logical link state (IBA Vol. 1 §14.2.5.6, PortState).
    pub enum PortState: u8 {
        /// Set only: leave the state alone.
        NoChange = 0,
        /// Link down (a Set to Down makes the link retrain).
        Down = 1,
        /// Physical link up, waiting for the SM to configure the port.
        Init = 2,
        /// Configured; data traffic still blocked.
        Armed = 3,
        /// Fully operational.
        Active = 4,
        /// Newer revisions / Linux only.
        ActiveDefer = 5,
    }
}

code_enum! {
    /// PortInfo.PortPhysicalState (IBA Vol. 1 §14.2.5.6, PortPhysicalState).
    pub enum PhysPortState: u8 {
        /// Set only: leave the state alone.
        NoChange = 0,
        /// Sleep.
        Sleep = 1,
        /// Polling (trying to train a link).
        Polling = 2,
        /// Disabled.
        Disabled = 3,
        /// Port configuration training.
        PortConfigurationTraining = 4,
        /// Link up.
        LinkUp = 5,
        /// Link error recovery.
        LinkErrorRecovery = 6,
        /// Phy test.
        PhyTest = 7,
    }
}

code_enum! {
    /// PortInfo.LinkDownDefaultState.
    pub enum LinkDownDefaultState: u8 {
        /// Set only: leave it alone.
        NoChange = 0,
        /// Sleep.
        Sleep = 1,
        /// Polling.
        Polling = 2,
    }
}

code_enum! {
    /// MTU code point (NeighborMTU, MTUCap; also used by SA records), IBA Vol. 1
    /// §14.2.5.6 (PortInfo's MTU fields).
    pub enum Mtu: u8 {
        /// 256 bytes.
        Mtu256 = 1,
        /// 512 bytes.
        Mtu512 = 2,
        /// 1024 bytes.
        Mtu1024 = 3,
        /// 2048 bytes.
        Mtu2048 = 4,
        /// 4096 bytes.
        Mtu4096 = 5,
    }
}

impl Mtu {
    /// The MTU in bytes, `None` for a code point without a size.
    #[must_use]
    pub fn bytes(self) -> Option<u16> {
        match self {
            Self::Mtu256 => Some(256),
            Self::Mtu512 => Some(512),
            Self::Mtu1024 => Some(1024),
            Self::Mtu2048 => Some(2048),
            Self::Mtu4096 => Some(4096),
            Self::Unknown(_) => None,
        }
    }

    /// The code point of an MTU given in bytes (exact sizes only).
    #[must_use]
    pub fn from_bytes(bytes: u16) -> Option<Self> {
        match bytes {
            256 => Some(Self::Mtu256),
            512 => Some(Self::Mtu512),
            1024 => Some(Self::Mtu1024),
            2048 => Some(Self::Mtu2048),
            4096 => Some(Self::Mtu4096),
            _ => None,
        }
    }
}

code_enum! {
    /// Number of data VLs (PortInfo.VLCap and OperationalVLs), IBA Vol. 1 §14.2.5.6.
    /// VL15 (management) is always present and not counted.
    pub enum VlCap: u8 {
        /// OperationalVLs in a Set: leave alone (never a valid VLCap).
        NoChange = 0,
        /// VL0 only.
        Vl0 = 1,
        /// VL0..VL1.
        Vl0To1 = 2,
        /// VL0..VL3.
        Vl0To3 = 3,
        /// VL0..VL7.
        Vl0To7 = 4,
        /// VL0..VL14.
        Vl0To14 = 5,
    }
}

impl VlCap {
    /// Number of data VLs (0 for `NoChange` and unknown code points).
    #[must_use]
    pub fn data_vls(self) -> u8 {
        match self {
            Self::Vl0 => 1,
            Self::Vl0To1 => 2,
            Self::Vl0To3 => 4,
            Self::Vl0To7 => 8,
            Self::Vl0To14 => 15,
            Self::NoChange | Self::Unknown(_) => 0,
        }
    }
}

code_enum! {
    /// The one width a link runs at (PortInfo.LinkWidthActive), IBA Vol. 1 §14.2.5.6.
    pub enum LinkWidth: u8 {
        /// 1 lane.
        X1 = 0x01,
        /// 4 lanes.
        X4 = 0x02,
        /// 8 lanes.
        X8 = 0x04,
        /// 12 lanes.
        X12 = 0x08,
        /// 2 lanes (needs CapabilityMask2 IsLinkWidth2xSupported).
        X2 = 0x10,
    }
}

impl LinkWidth {
    /// Number of lanes, `None` for unknown code points.
    #[must_use]
    pub fn lanes(self) -> Option<u8> {
        match self {
            Self::X1 => Some(1),
            Self::X2 => Some(2),
            Self::X4 => Some(4),
            Self::X8 => Some(8),
            Self::X12 => Some(12),
            Self::Unknown(_) => None,
        }
    }
}

bit_flags! {
    /// LinkWidthSupported / LinkWidthEnabled: a set of widths (IBA Vol. 1 §14.2.5.6).
    pub struct LinkWidthMask: u8 {
        /// 1x.
        const X1 = 0x01;
        /// 4x.
        const X4 = 0x02;
        /// 8x.
        const X8 = 0x04;
        /// 12x.
        const X12 = 0x08;
        /// 2x.
        const X2 = 0x10;
    }
}

impl LinkWidthMask {
    /// LinkWidthEnabled in a Set: set it to LinkWidthSupported.
    pub const SET_TO_SUPPORTED: Self = Self(0xFF);
}

one_bit_codes! {
    /// This width as a one-bit [`LinkWidthMask`].
    LinkWidth::mask -> LinkWidthMask;
    /// The widest width in the mask (12x > 8x > 4x > 2x > 1x).
    widest -> [X12, X8, X4, X2, X1];
}

code_enum! {
    /// The speed a link runs at (PortInfo.LinkSpeedActive), IBA Vol. 1 §14.2.5.6.
    pub enum LinkSpeed: u8 {
        /// An extended speed is active: see LinkSpeedExtActive.
        Extended = 0,
        /// 2.5 Gb/s per lane.
        Sdr = 1,
        /// 5.0 Gb/s per lane.
        Ddr = 2,
        /// 10.0 Gb/s per lane.
        Qdr = 4,
    }
}

impl LinkSpeed {
    /// Signalling rate of one lane in Mb/s; `None` for `Extended` and unknown values.
    #[must_use]
    pub fn lane_mbps(self) -> Option<u32> {
        match self {
            Self::Sdr => Some(2_500),
            Self::Ddr => Some(5_000),
            Self::Qdr => Some(10_000),
            Self::Extended | Self::Unknown(_) => None,
        }
    }
}

bit_flags! {
    /// LinkSpeedSupported / LinkSpeedEnabled (4-bit masks), IBA Vol. 1 §14.2.5.6.
    pub struct LinkSpeedMask: u8 {
        /// 2.5 Gb/s.
        const SDR = 1;
        /// 5.0 Gb/s.
        const DDR = 2;
        /// 10.0 Gb/s.
        const QDR = 4;
    }
}

impl LinkSpeedMask {
    /// LinkSpeedEnabled in a Set: set it to LinkSpeedSupported.
    pub const SET_TO_SUPPORTED: Self = Self(15);
}

one_bit_codes! {
    /// This speed as a one-bit [`LinkSpeedMask`] (`Extended` gives the empty mask).
    LinkSpeed::mask -> LinkSpeedMask;
    /// The fastest speed in the mask (QDR > DDR > SDR).
    fastest -> [Qdr, Ddr, Sdr];
}

code_enum! {
    /// The extended speed a link runs at (PortInfo.LinkSpeedExtActive), IBA Vol. 1
    /// §14.2.5.6.
    pub enum LinkSpeedExt: u8 {
        /// No extended speed in use.
        None = 0,
        /// 14.0625 Gb/s per lane.
        Fdr = 1,
        /// 25.78125 Gb/s per lane.
        Edr = 2,
        /// 53.125 Gb/s per lane.
        Hdr = 4,
        /// 106.25 Gb/s per lane.
        Ndr = 8,
    }
}

impl LinkSpeedExt {
    /// Signalling rate of one lane in Mb/s (rounded down); `None` for `None`/unknown.
    #[must_use]
    pub fn lane_mbps(self) -> Option<u32> {
        match self {
            Self::Fdr => Some(14_062),
            Self::Edr => Some(25_781),
            Self::Hdr => Some(53_125),
            Self::Ndr => Some(106_250),
            Self::None | Self::Unknown(_) => None,
        }
    }
}

bit_flags! {
    /// LinkSpeedExtSupported (4 bits) / LinkSpeedExtEnabled (5 bits), IBA Vol. 1
    /// §14.2.5.6.
    pub struct LinkSpeedExtMask: u8 {
        /// 14.0625 Gb/s.
        const FDR = 1;
        /// 25.78125 Gb/s.
        const EDR = 2;
        /// 53.125 Gb/s (needs CapabilityMask2 IsLinkSpeedHDRSupported).
        const HDR = 4;
        /// 106.25 Gb/s (needs CapabilityMask2 IsLinkSpeedNDRSupported).
        const NDR = 8;
    }
}

impl LinkSpeedExtMask {
    /// LinkSpeedExtEnabled in a Set: disable every extended speed.
    pub const DISABLE_ALL: Self = Self(30);
    /// LinkSpeedExtEnabled in a Set: set it to LinkSpeedExtSupported.
    pub const SET_TO_SUPPORTED: Self = Self(31);
}

one_bit_codes! {
    /// This speed as a one-bit [`LinkSpeedExtMask`].
    LinkSpeedExt::mask -> LinkSpeedExtMask;
    /// The fastest extended speed in the mask (NDR > HDR > EDR > FDR).
    fastest -> [Ndr, Hdr, Edr, Fdr];
}

bit_flags! {
    /// PortInfo.CapabilityMask (bytes 20..23), IBA Vol. 1 §14.2.5.6. Bit n has value
    /// `1 << n`.
    pub struct CapabilityMask: u32 {
        /// An SM runs behind this port.
        const IS_SM = 1 << 1;
        /// Get/Set(Notice) supported.
        const IS_NOTICE_SUPPORTED = 1 << 2;
        /// The port sends traps.
        const IS_TRAP_SUPPORTED = 1 << 3;
        /// Optional IPD supported.
        const IS_OPTIONAL_IPD_SUPPORTED = 1 << 4;
        /// Automatic path migration supported.
        const IS_AUTOMATIC_MIGRATION_SUPPORTED = 1 << 5;
        /// SLtoVLMappingTable implemented.
        const IS_SL_MAPPING_SUPPORTED = 1 << 6;
        /// M_Key kept across resets.
        const IS_MKEY_NVRAM = 1 << 7;
        /// P_Key table kept across resets.
        const IS_PKEY_NVRAM = 1 << 8;
        /// LedInfo supported.
        const IS_LED_INFO_SUPPORTED = 1 << 9;
        /// An SM exists here but is disabled.
        const IS_SM_DISABLED = 1 << 10;
        /// SystemImageGUID supported.
        const IS_SYSTEM_IMAGE_GUID_SUPPORTED = 1 << 11;
        /// Trap 259 supported.
        const IS_PKEY_SWITCH_EXTERNAL_PORT_TRAP_SUPPORTED = 1 << 12;
        /// CableInfo supported.
        const IS_CABLE_INFO_SUPPORTED = 1 << 13;
        /// LinkSpeedExt* fields valid.
        const IS_EXTENDED_SPEEDS_SUPPORTED = 1 << 14;
        /// CapabilityMask2 valid.
        const IS_CAPABILITY_MASK2_SUPPORTED = 1 << 15;
        /// Communication management supported.
        const IS_COMMUNICATION_MANAGEMENT_SUPPORTED = 1 << 16;
        /// SNMP tunneling supported.
        const IS_SNMP_TUNNELING_SUPPORTED = 1 << 17;
        /// Reinit supported.
        const IS_REINIT_SUPPORTED = 1 << 18;
        /// Device management supported.
        const IS_DEVICE_MANAGEMENT_SUPPORTED = 1 << 19;
        /// Vendor class supported.
        const IS_VENDOR_CLASS_SUPPORTED = 1 << 20;
        /// Traps may be sent directed route.
        const IS_DR_NOTICE_SUPPORTED = 1 << 21;
        /// Trap 144 on CapabilityMask change.
        const IS_CAPABILITY_MASK_NOTICE_SUPPORTED = 1 << 22;
        /// Boot management supported.
        const IS_BOOT_MANAGEMENT_SUPPORTED = 1 << 23;
        /// LinkRoundTripLatency supported.
        const IS_LINK_ROUND_TRIP_LATENCY_SUPPORTED = 1 << 24;
        /// ClientReregister honoured.
        const IS_CLIENT_REREGISTRATION_SUPPORTED = 1 << 25;
        /// Trap 144 "other local changes".
        const IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED = 1 << 26;
        /// LinkSpeedWidthPairsTable supported.
        const IS_LINK_SPEED_WIDTH_PAIRS_TABLE_SUPPORTED = 1 << 27;
        /// VendorSpecificMadsTable supported.
        const IS_VENDOR_SPECIFIC_MADS_TABLE_SUPPORTED = 1 << 28;
        /// Multicast P_Key trap suppression supported.
        const IS_MCAST_PKEY_TRAP_SUPPRESSION_SUPPORTED = 1 << 29;
        /// SwitchInfo.MulticastFDBTop honoured.
        const IS_MULTICAST_FDB_TOP_SUPPORTED = 1 << 30;
        /// HierarchyInfo supported.
        const IS_HIERARCHY_INFO_SUPPORTED = 1 << 31;
    }
}

bit_flags! {
    /// PortInfo.CapabilityMask2 (bytes 60..61), IBA Vol. 1 §14.2.5.6.
    pub struct CapabilityMask2: u16 {
        /// SubnSet(NodeDescription) supported.
        const IS_SET_NODE_DESCRIPTION_SUPPORTED = 1 << 0;
        /// PortInfoExtended supported.
        const IS_PORT_INFO_EXTENDED_SUPPORTED = 1 << 1;
        /// Virtualization supported.
        const IS_VIRTUALIZATION_SUPPORTED = 1 << 2;
        /// SwitchPortStateTable supported.
        const IS_SWITCH_PORT_STATE_TABLE_SUPPORTED = 1 << 3;
        /// 2x link width supported.
        const IS_LINK_WIDTH_2X_SUPPORTED = 1 << 4;
        /// HDR link speed supported.
        const IS_LINK_SPEED_HDR_SUPPORTED = 1 << 5;
        /// Extended M_Key protect bits supported.
        const IS_MKEY_PROTECT_BITS_EXT_SUPPORTED = 1 << 6;
        /// Enhanced trap 128 supported.
        const IS_ENHANCED_TRAP128_SUPPORTED = 1 << 7;
        /// PartitionTop supported.
        const IS_PARTITION_TOP_SUPPORTED = 1 << 8;
        /// Enhanced QoS arbiter supported.
        const IS_ENHANCED_QOS_ARBITER_SUPPORTED = 1 << 9;
        /// NDR link speed supported.
        const IS_LINK_SPEED_NDR_SUPPORTED = 1 << 10;
    }
}

wire_struct! {
    /// PortInfo (0x0015), 64 bytes. See IBA Vol. 1 §14.2.5.6.
    ///
    /// For a switch, LID, LMC, MasterSMLID, MasterSMSL, the M_Key fields and GidPrefix
    /// are meaningful on port 0 only.
    pub struct PortInfo, view PortInfoView, size 64, label "PortInfo";
    fields {
        /// Management key (may read back as 0 under protection).
        m_key, set_m_key: u64 = (0, 0, 64), "IB_PORT_MKEY_F";
        /// Subnet prefix of the port's GIDs.
        gid_prefix, set_gid_prefix: u64 = (8, 0, 64), "IB_PORT_GID_PREFIX_F";
        /// Base LID.
        lid, set_lid: u16 = (16, 0, 16), "IB_PORT_LID_F";
        /// LID of the master SM.
        master_sm_lid, set_master_sm_lid: u16 = (18, 0, 16), "IB_PORT_SMLID_F";
        /// Capability bits (read-only except IsSM, which the host sets).
        capability_mask, set_capability_mask: CapabilityMask = (20, 0, 32), "IB_PORT_CAPMASK_F";
        /// Port health: 0 ready, 1 self test, 2 initializing, 3 soft error, 4 hard error.
        diag_code, set_diag_code: u16 = (24, 0, 16), "IB_PORT_DIAG_F";
        /// Seconds before M_Key protection lapses after a violation (0 = never).
        m_key_lease_period, set_m_key_lease_period: u16 = (26, 0, 16), "IB_PORT_MKEY_LEASE_F";
        /// Port number that received this SMP.
        local_port_num, set_local_port_num: u8 = (28, 0, 8), "IB_PORT_LOCAL_PORT_F";
        /// Widths allowed (0 = no change, 0xFF = set to supported, in a Set).
        link_width_enabled, set_link_width_enabled: LinkWidthMask = (29, 0, 8), "IB_PORT_LINK_WIDTH_ENABLED_F";
        /// Widths the port can do.
        link_width_supported, set_link_width_supported: LinkWidthMask = (30, 0, 8), "IB_PORT_LINK_WIDTH_SUPPORTED_F";
        /// Width in use.
        link_width_active, set_link_width_active: LinkWidth = (31, 0, 8), "IB_PORT_LINK_WIDTH_ACTIVE_F";
        /// Speeds the port can do.
        link_speed_supported, set_link_speed_supported: LinkSpeedMask = (32, 0, 4), "IB_PORT_LINK_SPEED_SUPPORTED_F";
        /// Logical port state.
        port_state, set_port_state: PortState = (32, 4, 4), "IB_PORT_STATE_F";
        /// Physical port state.
        port_phys_state, set_port_phys_state: PhysPortState = (33, 0, 4), "IB_PORT_PHYS_STATE_F";
        /// State the physical link falls back to when it goes down.
        link_down_default_state, set_link_down_default_state: LinkDownDefaultState = (33, 4, 4), "IB_PORT_LINK_DOWN_DEF_F";
        /// M_Key protection level 0..3.
        m_key_protect_bits, set_m_key_protect_bits: u8 = (34, 0, 2), "IB_PORT_MKEY_PROT_BITS_F";
        /// LID mask count: the port owns `2^lmc` LIDs from `lid`.
        lmc, set_lmc: u8 = (34, 5, 3), "IB_PORT_LMC_F";
        /// Speed in use (`Extended`: see `link_speed_ext_active`).
        link_speed_active, set_link_speed_active: LinkSpeed = (35, 0, 4), "IB_PORT_LINK_SPEED_ACTIVE_F";
        /// Speeds allowed (0 = no change, 15 = set to supported, in a Set).
        link_speed_enabled, set_link_speed_enabled: LinkSpeedMask = (35, 4, 4), "IB_PORT_LINK_SPEED_ENABLED_F";
        /// Active MTU of the link.
        neighbor_mtu, set_neighbor_mtu: Mtu = (36, 0, 4), "IB_PORT_NEIGHBOR_MTU_F";
        /// SL for packets to the master SM.
        master_sm_sl, set_master_sm_sl: u8 = (36, 4, 4), "IB_PORT_SMSL_F";
        /// Data VLs supported.
        vl_cap, set_vl_cap: VlCap = (37, 0, 4), "IB_PORT_VL_CAP_F";
        /// Requested initialization behaviour (bit mask).
        init_type, set_init_type: u8 = (37, 4, 4), "IB_PORT_INIT_TYPE_F";
        /// High-priority VL arbitration limit (units of 4 KB).
        vl_high_limit, set_vl_high_limit: u8 = (38, 0, 8), "IB_PORT_VL_HIGH_LIMIT_F";
        /// Entries of the high-priority VLArb table.
        vl_arbitration_high_cap, set_vl_arbitration_high_cap: u8 = (39, 0, 8), "IB_PORT_VL_ARBITRATION_HIGH_CAP_F";
        /// Entries of the low-priority VLArb table.
        vl_arbitration_low_cap, set_vl_arbitration_low_cap: u8 = (40, 0, 8), "IB_PORT_VL_ARBITRATION_LOW_CAP_F";
        /// What the port did with InitType.
        init_type_reply, set_init_type_reply: u8 = (41, 0, 4), "IB_PORT_INIT_TYPE_REPLY_F";
        /// Largest MTU supported.
        mtu_cap, set_mtu_cap: Mtu = (41, 4, 4), "IB_PORT_MTU_CAP_F";
        /// Consecutive head-of-queue drops before a VL stalls.
        vl_stall_count, set_vl_stall_count: u8 = (42, 0, 3), "IB_PORT_VL_STALL_COUNT_F";
        /// Head-of-queue lifetime exponent (4.096 us * 2^value; >= 20 infinite).
        hoq_life, set_hoq_life: u8 = (42, 3, 5), "IB_PORT_HOQ_LIFE_F";
        /// Data VLs in use (`NoChange` in a Set leaves them alone).
        operational_vls, set_operational_vls: VlCap = (43, 0, 4), "IB_PORT_OPER_VLS_F";
        /// Switch external port: check P_Key of incoming packets.
        partition_enforcement_inbound, set_partition_enforcement_inbound: bool = (43, 4, 1), "IB_PORT_PART_EN_INB_F";
        /// Switch external port: check P_Key of outgoing packets.
        partition_enforcement_outbound, set_partition_enforcement_outbound: bool = (43, 5, 1), "IB_PORT_PART_EN_OUTB_F";
        /// Switch external port: drop incoming raw packets.
        filter_raw_inbound, set_filter_raw_inbound: bool = (43, 6, 1), "IB_PORT_FILTER_RAW_INB_F";
        /// Switch external port: drop outgoing raw packets.
        filter_raw_outbound, set_filter_raw_outbound: bool = (43, 7, 1), "IB_PORT_FILTER_RAW_OUTB_F";
        /// M_Key check failures (saturating).
        m_key_violations, set_m_key_violations: u16 = (44, 0, 16), "IB_PORT_MKEY_VIOL_F";
        /// P_Key check failures.
        p_key_violations, set_p_key_violations: u16 = (46, 0, 16), "IB_PORT_PKEY_VIOL_F";
        /// Q_Key check failures.
        q_key_violations, set_q_key_violations: u16 = (48, 0, 16), "IB_PORT_QKEY_VIOL_F";
        /// GUIDInfo entries supported.
        guid_cap, set_guid_cap: u8 = (50, 0, 8), "IB_PORT_GUID_CAP_F";
        /// SM writes 1 to make the port's clients re-register; reads 0.
        client_reregister, set_client_reregister: bool = (51, 0, 1), "IB_PORT_CLIENT_REREG_F";
        /// Suppression of P_Key/Q_Key traps for multicast packets.
        multicast_pkey_trap_suppression_enabled, set_multicast_pkey_trap_suppression_enabled: u8 = (51, 1, 2), "IB_PORT_MCAST_PKEY_SUPR_ENAB_F";
        /// Subnet propagation delay exponent (4.096 us * 2^value).
        subnet_timeout, set_subnet_timeout: u8 = (51, 3, 5), "IB_PORT_SUBN_TIMEOUT_F";
        /// SMA response time exponent (4.096 us * 2^value).
        resp_time_value, set_resp_time_value: u8 = (52, 3, 5), "IB_PORT_RESP_TIME_VAL_F";
        /// Local physical error threshold (trap 129).
        local_phy_errors, set_local_phy_errors: u8 = (53, 0, 4), "IB_PORT_LOCAL_PHYS_ERR_F";
        /// Buffer overrun threshold (trap 130).
        overrun_errors, set_overrun_errors: u8 = (53, 4, 4), "IB_PORT_OVERRUN_ERR_F";
        /// Max flow-control credits, in 64-byte units.
        max_credit_hint, set_max_credit_hint: u16 = (54, 0, 16), "IB_PORT_MAX_CREDIT_HINT_F";
        /// XDR extension: active (1 = 212.5 Gb/s). Newer than libibmad 44.0.
        link_speed_ext_active2, set_link_speed_ext_active2: u8 = (56, 1, 2);
        /// XDR extension: supported mask (1 = 212.5 Gb/s).
        link_speed_ext_supported2, set_link_speed_ext_supported2: u8 = (56, 3, 2);
        /// XDR extension: enabled mask.
        link_speed_ext_enabled2, set_link_speed_ext_enabled2: u8 = (56, 5, 3);
        /// Round-trip latency of the link as measured by the port.
        link_round_trip_latency, set_link_round_trip_latency: u32 = (57, 0, 24), "IB_PORT_LINK_ROUND_TRIP_F";
        /// More capability bits (valid with IsCapabilityMask2Supported).
        capability_mask2, set_capability_mask2: CapabilityMask2 = (60, 0, 16), "IB_PORT_CAPMASK2_F";
        /// Extended speed in use.
        link_speed_ext_active, set_link_speed_ext_active: LinkSpeedExt = (62, 0, 4), "IB_PORT_LINK_SPEED_EXT_ACTIVE_F";
        /// Extended speeds supported.
        link_speed_ext_supported, set_link_speed_ext_supported: LinkSpeedExtMask = (62, 4, 4), "IB_PORT_LINK_SPEED_EXT_SUPPORTED_F";
        /// Extended speeds allowed (0 no change, 30 disable, 31 set to supported).
        link_speed_ext_enabled, set_link_speed_ext_enabled: LinkSpeedExtMask = (63, 3, 5), "IB_PORT_LINK_SPEED_EXT_ENABLED_F";
    }
}

impl PortInfo {
    /// Number of LIDs the port owns (`2^lmc`).
    #[must_use]
    pub fn lid_count(&self) -> u32 {
        1u32 << self.lmc.min(7)
    }

    /// Whether `lid` is one of the port's LIDs (`lid .. lid + 2^lmc`).
    #[must_use]
    pub fn owns_lid(&self, lid: u16) -> bool {
        let base = u32::from(self.lid);
        (base..base + self.lid_count()).contains(&u32::from(lid))
    }

    /// Lane signalling rate in use in Mb/s, taking extended speeds into account
    /// (only when the port advertises IsExtendedSpeedsSupported, and the fields are
    /// filled only for an SM that set attribute-modifier bit 31): XDR (212.5 Gb/s,
    /// LinkSpeedExtActive2 = 1) first, then LinkSpeedExtActive, then LinkSpeedActive.
    #[must_use]
    pub fn active_lane_mbps(&self) -> Option<u32> {
        if self.link_speed_ext_active == LinkSpeedExt::None && self.link_speed_ext_active2 == 1 {
            return Some(212_500);
        }
        if self.link_speed_active == LinkSpeed::Extended
            || self
                .capability_mask
                .contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED)
                && self.link_speed_ext_active != LinkSpeedExt::None
        {
            self.link_speed_ext_active.lane_mbps()
        } else {
            self.link_speed_active.lane_mbps()
        }
    }

    /// Data rate of the link in Mb/s (lane rate times lanes), if both are known.
    #[must_use]
    pub fn active_link_mbps(&self) -> Option<u32> {
        Some(self.active_lane_mbps()? * u32::from(self.link_width_active.lanes()?))
    }
}

/// Converts a "4.096 us * 2^value" time exponent (SubnetTimeOut, RespTimeValue, and
/// the lifetimes below 20) to nanoseconds; `None` only when the result overflows.
#[must_use]
pub fn time_exponent_ns(value: u8) -> Option<u64> {
    4096u64
        .checked_shl(u32::from(value))
        .filter(|v| v >> value == 4096)
}

/// Converts a packet lifetime exponent (HOQLife, SwitchInfo.LifeTimeValue) to
/// nanoseconds; values >= 20 mean "infinite" and give `None`.
#[must_use]
pub fn lifetime_ns(value: u8) -> Option<u64> {
    if value >= 20 {
        None
    } else {
        time_exponent_ns(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PortInfo as an OpenSM-configured, active 4x EDR switch port 0 reports it.
    pub(crate) const SAMPLE: [u8; 64] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // M_Key
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // GidPrefix
        0x00, 0x05, 0x00, 0x01, // LID 5, MasterSMLID 1
        0x02, 0x41, 0xc8, 0x4a, // CapabilityMask
        0x00, 0x00, 0x00, 0x0f, // DiagCode, lease 15
        0x03, 0x03, 0x03, 0x02, // local port 3, width en/sup = 1x|4x, active 4x
        0x74, 0x52, // speed sup 7, state Active; phys LinkUp, down default Polling
        0x42, 0x00, // protect 1, LMC 2; speed active 0 (extended), enabled 0
        0x50, 0x44, // neighbor MTU 4096, SMSL 0; VLCap VL0-7, InitType 4
        0x04, 0x08, 0x08, 0x05, // VLHighLimit 4, high cap 8, low cap 8, reply 0 MTUCap 4096
        0x53, 0x4a, // stall 2, HOQ 19; oper VLs 4, enf in+filter raw in (0101)
        0x00, 0x01, 0x00, 0x02, 0x00, 0x03, // M/P/Q_Key violations
        0x08, 0x92, // GUIDCap 8; rereg 1, suppr 0, subnet timeout 18
        0x08, 0x8f, // RespTimeValue 8; phy errors 8, overrun 15
        0x12, 0x34, // MaxCreditHint
        0x00, 0x00, 0x01, 0x00, // XDR 0, round trip 256
        0x00, 0x02, // CapabilityMask2 = PortInfoExtended
        0x23, 0x1f, // ext active EDR, ext supported FDR|EDR, ext enabled 31
    ];

    #[test]
    fn decode_sample() {
        let p = PortInfo::parse(&SAMPLE).unwrap();
        assert_eq!(p.m_key, 42);
        assert_eq!(p.gid_prefix, crate::DEFAULT_SUBNET_PREFIX);
        assert_eq!((p.lid, p.master_sm_lid), (5, 1));
        assert!(p.capability_mask.contains(CapabilityMask::IS_SM));
        assert!(
            p.capability_mask
                .contains(CapabilityMask::IS_CAPABILITY_MASK2_SUPPORTED)
        );
        assert!(
            p.capability_mask
                .contains(CapabilityMask::IS_CLIENT_REREGISTRATION_SUPPORTED)
        );
        assert!(
            p.capability_mask
                .contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED)
        );
        assert_eq!(p.capability_mask.bits(), 0x0241_c84a);
        assert_eq!(p.m_key_lease_period, 15);
        assert_eq!(p.local_port_num, 3);
        assert_eq!(p.link_width_enabled, LinkWidthMask::X1 | LinkWidthMask::X4);
        assert_eq!(p.link_width_active, LinkWidth::X4);
        assert_eq!(p.link_speed_supported.bits(), 7);
        assert_eq!(p.port_state, PortState::Active);
        assert_eq!(p.port_phys_state, PhysPortState::LinkUp);
        assert_eq!(p.link_down_default_state, LinkDownDefaultState::Polling);
        assert_eq!((p.m_key_protect_bits, p.lmc), (1, 2));
        assert_eq!(p.link_speed_active, LinkSpeed::Extended);
        assert_eq!(p.link_speed_enabled, LinkSpeedMask::EMPTY);
        assert_eq!(p.neighbor_mtu, Mtu::Mtu4096);
        assert_eq!(p.master_sm_sl, 0);
        assert_eq!(p.vl_cap, VlCap::Vl0To7);
        assert_eq!(p.init_type, 4);
        assert_eq!(
            (
                p.vl_high_limit,
                p.vl_arbitration_high_cap,
                p.vl_arbitration_low_cap
            ),
            (4, 8, 8)
        );
        assert_eq!((p.init_type_reply, p.mtu_cap), (0, Mtu::Mtu4096));
        assert_eq!((p.vl_stall_count, p.hoq_life), (2, 19));
        assert_eq!(p.operational_vls, VlCap::Vl0To7);
        assert!(p.partition_enforcement_inbound && !p.partition_enforcement_outbound);
        assert!(p.filter_raw_inbound && !p.filter_raw_outbound);
        assert_eq!(
            (p.m_key_violations, p.p_key_violations, p.q_key_violations),
            (1, 2, 3)
        );
        assert_eq!(p.guid_cap, 8);
        assert!(p.client_reregister);
        assert_eq!(p.multicast_pkey_trap_suppression_enabled, 0);
        assert_eq!(p.subnet_timeout, 18);
        assert_eq!(p.resp_time_value, 8);
        assert_eq!((p.local_phy_errors, p.overrun_errors), (8, 15));
        assert_eq!(p.max_credit_hint, 0x1234);
        assert_eq!(p.link_round_trip_latency, 256);
        assert_eq!(
            p.capability_mask2,
            CapabilityMask2::IS_PORT_INFO_EXTENDED_SUPPORTED
        );
        assert_eq!(p.link_speed_ext_active, LinkSpeedExt::Edr);
        assert_eq!(
            p.link_speed_ext_supported,
            LinkSpeedExtMask::FDR | LinkSpeedExtMask::EDR
        );
        assert_eq!(p.link_speed_ext_enabled, LinkSpeedExtMask::SET_TO_SUPPORTED);
        assert_eq!(p.active_lane_mbps(), Some(25_781));
        assert_eq!(p.active_link_mbps(), Some(103_124));
        assert_eq!(p.lid_count(), 4);
        assert!(p.owns_lid(8) && !p.owns_lid(9) && !p.owns_lid(4));
        // Re-encoding gives the same bytes (the sample has no reserved bit set).
        assert_eq!(p.to_bytes(), SAMPLE);
        // The view agrees without copying, and writes in place.
        let mut buf = SAMPLE;
        let mut v = PortInfoView::new_checked(&mut buf[..]).unwrap();
        assert_eq!(v.port_state(), PortState::Active);
        v.set_port_state(PortState::Down);
        v.set_lmc(0);
        assert_eq!(buf[32], 0x71);
        assert_eq!(buf[34], 0x40);
    }

    #[test]
    fn reserved_bits_ignored() {
        let mut b = SAMPLE;
        b[34] |= 0x38; // reserved 34.2..4
        b[52] |= 0xe0;
        b[56] |= 0x80;
        b[63] |= 0xe0;
        let p = PortInfo::parse(&b).unwrap();
        assert_eq!(p, PortInfo::parse(&SAMPLE).unwrap());
        assert_eq!(p.to_bytes(), SAMPLE);
    }

    #[test]
    fn enums_and_masks() {
        assert_eq!(Mtu::from_bytes(2048), Some(Mtu::Mtu2048));
        assert_eq!(Mtu::Mtu2048.bytes(), Some(2048));
        assert_eq!(Mtu::from(9).bytes(), None);
        assert_eq!(VlCap::Vl0To14.data_vls(), 15);
        assert_eq!(LinkWidth::X12.lanes(), Some(12));
        assert_eq!(
            (LinkWidthMask::X1 | LinkWidthMask::X4 | LinkWidthMask::X12).widest(),
            Some(LinkWidth::X12)
        );
        assert_eq!(LinkWidthMask::EMPTY.widest(), None);
        assert_eq!(
            (LinkSpeedMask::SDR | LinkSpeedMask::DDR).fastest(),
            Some(LinkSpeed::Ddr)
        );
        assert_eq!(LinkSpeedMask(8).fastest(), None);
        assert_eq!(
            (LinkSpeedExtMask::FDR | LinkSpeedExtMask::HDR).fastest(),
            Some(LinkSpeedExt::Hdr)
        );
        assert_eq!(LinkSpeedExtMask(16).fastest(), None);
        assert!(LinkWidthMask::SET_TO_SUPPORTED.contains(LinkWidthMask::X2));
        let mut c = CapabilityMask::IS_SM;
        c.insert(CapabilityMask::IS_TRAP_SUPPORTED);
        c.set(CapabilityMask::IS_SM, false);
        assert_eq!(c, CapabilityMask(8));
        assert!(!c.contains(CapabilityMask::IS_SM | CapabilityMask::IS_TRAP_SUPPORTED));
        assert!(c.intersects(CapabilityMask::IS_SM | CapabilityMask::IS_TRAP_SUPPORTED));
        extern crate std;
        assert_eq!(
            std::format!("{:?}", CapabilityMask(0x8000_000a)),
            "CapabilityMask(IS_SM | IS_TRAP_SUPPORTED | IS_HIERARCHY_INFO_SUPPORTED)"
        );
        assert_eq!(
            std::format!("{:?}", CapabilityMask(1)),
            "CapabilityMask(0x1)"
        );
        assert_eq!(time_exponent_ns(0), Some(4096));
        assert_eq!(time_exponent_ns(18), Some(4096 << 18));
        assert_eq!(time_exponent_ns(31), Some(4096 << 31));
        assert_eq!(time_exponent_ns(51), Some(4096 << 51));
        assert_eq!(time_exponent_ns(52), None);
        assert_eq!(time_exponent_ns(255), None);
        assert_eq!(lifetime_ns(19), Some(4096 << 19));
        assert_eq!(lifetime_ns(20), None);
    }

    #[test]
    fn generic_properties() {
        crate::attr::testutil::check::<PortInfo>();
    }
}
