//! SwitchInfo (0x0012).

wire_struct! {
    /// SwitchInfo (switches only, AttributeModifier 0), 20 bytes.
    /// See IBA Vol. 1 §14.2.5.4.
    pub struct SwitchInfo, view SwitchInfoView, size 20, label "SwitchInfo";
    fields {
        /// LinearForwardingTable entries supported.
        linear_fdb_cap, set_linear_fdb_cap: u16 = (0, 0, 16), "IB_SW_LINEAR_FDB_CAP_F";
        /// RandomForwardingTable entries supported (usually 0).
        random_fdb_cap, set_random_fdb_cap: u16 = (2, 0, 16), "IB_SW_RANDOM_FDB_CAP_F";
        /// MLIDs the MulticastForwardingTable supports.
        multicast_fdb_cap, set_multicast_fdb_cap: u16 = (4, 0, 16), "IB_SW_MCAST_FDB_CAP_F";
        /// Highest LID the LFT forwards (SM sets).
        linear_fdb_top, set_linear_fdb_top: u16 = (6, 0, 16), "IB_SW_LINEAR_FDB_TOP_F";
        /// Output port for unicast LIDs not in the random FDB.
        default_port, set_default_port: u8 = (8, 0, 8), "IB_SW_DEF_PORT_F";
        /// Output for multicast LIDs not in the MFT.
        default_multicast_primary_port, set_default_multicast_primary_port: u8 = (9, 0, 8), "IB_SW_DEF_MCAST_PRIM_F";
        /// Output for such packets arriving on the primary port.
        default_multicast_not_primary_port, set_default_multicast_not_primary_port: u8 = (10, 0, 8), "IB_SW_DEF_MCAST_NOT_PRIM_F";
        /// Packet lifetime exponent (4.096 us * 2^value; >= 20 infinite).
        life_time_value, set_life_time_value: u8 = (11, 0, 5), "IB_SW_LIFE_TIME_F";
        /// A port changed state on its own; the SM clears it by writing 1.
        port_state_change, set_port_state_change: bool = (11, 5, 1), "IB_SW_STATE_CHANGE_F";
        /// Non-zero: the SLtoVLMappingTable modifier wildcard bits are accepted.
        optimized_sl_to_vl_mapping_programming, set_optimized_sl_to_vl_mapping_programming: u8 = (11, 6, 2), "IB_SW_OPT_SLTOVL_MAPPING_F";
        /// Random FDB only: LID/LMC pairs per port.
        lids_per_port, set_lids_per_port: u16 = (12, 0, 16), "IB_SW_LIDS_PER_PORT_F";
        /// P_Key entries per external port for enforcement.
        partition_enforcement_cap, set_partition_enforcement_cap: u16 = (14, 0, 16), "IB_SW_PARTITION_ENFORCE_CAP_F";
        /// Can enforce partitions inbound.
        inbound_enforcement_cap, set_inbound_enforcement_cap: bool = (16, 0, 1), "IB_SW_PARTITION_ENF_INB_F";
        /// Can enforce partitions outbound.
        outbound_enforcement_cap, set_outbound_enforcement_cap: bool = (16, 1, 1), "IB_SW_PARTITION_ENF_OUTB_F";
        /// Can filter raw packets inbound.
        filter_raw_inbound_cap, set_filter_raw_inbound_cap: bool = (16, 2, 1), "IB_SW_FILTER_RAW_INB_F";
        /// Can filter raw packets outbound.
        filter_raw_outbound_cap, set_filter_raw_outbound_cap: bool = (16, 3, 1), "IB_SW_FILTER_RAW_OUTB_F";
        /// Port 0 is an enhanced port.
        enhanced_port0, set_enhanced_port0: bool = (16, 4, 1), "IB_SW_ENHANCED_PORT0_F";
        /// Highest MLID the MFT forwards (0xBFFF or below: none in use).
        multicast_fdb_top, set_multicast_fdb_top: u16 = (18, 0, 16), "IB_SW_MCAST_FDB_TOP_F";
    }
}

impl SwitchInfo {
    /// LinearForwardingTable blocks needed to cover LIDs up to `linear_fdb_top`.
    #[must_use]
    pub fn lft_blocks_in_use(&self) -> u32 {
        u32::from(self.linear_fdb_top) / 64 + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: [u8; 20] = [
        0xc0, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x7f, // caps 49152, 0, 4096; top 127
        0x00, 0xff, 0xff, 0xb7, // default ports; life 22, change 1, optimized 3
        0x00, 0x00, 0x00, 0x20, // lids per port 0, enforcement cap 32
        0xc8, 0x00, 0xc0, 0x10, // in+out enforcement, enhanced port 0; MFT top 0xC010
    ];

    #[test]
    fn decode_and_reencode() {
        let s = SwitchInfo::parse(&SAMPLE).unwrap();
        assert_eq!(s.linear_fdb_cap, 49152);
        assert_eq!(s.random_fdb_cap, 0);
        assert_eq!(s.multicast_fdb_cap, 4096);
        assert_eq!(s.linear_fdb_top, 127);
        assert_eq!(s.lft_blocks_in_use(), 2);
        assert_eq!(
            (
                s.default_port,
                s.default_multicast_primary_port,
                s.default_multicast_not_primary_port
            ),
            (0, 0xff, 0xff)
        );
        assert_eq!(s.life_time_value, 22);
        assert!(s.port_state_change);
        assert_eq!(s.optimized_sl_to_vl_mapping_programming, 3);
        assert_eq!(s.partition_enforcement_cap, 32);
        assert!(s.inbound_enforcement_cap && s.outbound_enforcement_cap);
        assert!(!s.filter_raw_inbound_cap && !s.filter_raw_outbound_cap);
        assert!(s.enhanced_port0);
        assert_eq!(s.multicast_fdb_top, 0xc010);
        assert_eq!(s.to_bytes(), SAMPLE);
        let mut b = SAMPLE;
        b[16] |= 0x07; // reserved
        b[17] = 0xff;
        assert_eq!(SwitchInfo::parse(&b).unwrap(), s);
        assert!(SwitchInfo::parse(&SAMPLE[..19]).is_err());
    }

    #[test]
    fn generic_properties() {
        crate::attr::testutil::check::<SwitchInfo>();
    }
}
