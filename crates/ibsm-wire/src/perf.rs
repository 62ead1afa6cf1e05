//! Performance management (class 0x04, IBA Vol. 1 §16.1): the attribute IDs, the
//! PMA's ClassPortInfo capability bits, PortCounters with its CounterSelect words,
//! PortCountersExtended, PortRcvErrorDetails, PortXmitDiscardDetails and
//! PortExtendedSpeedsCounters.
//!
//! A PerfMgt MAD is a [`GsMad`]: the attribute sits in its 192 data bytes, at MAD byte
//! [`GS_DATA_OFFSET`]; every offset below is within those data bytes, as libibmad's
//! `IB_PC_*` fields count them.
//!
//! Counters saturate at their width instead of wrapping; PortXmitData and PortRcvData
//! count 4-byte words, not octets. A switch is read per port, or for all its ports at
//! once with PortSelect [`ALL_PORTS`] when the agent's ClassPortInfo has
//! [`PmCapabilityMask::ALL_PORT_SELECT`].
//!
//! ```
//! use ibsm_wire::perf::{perf_request, CounterSelect, PerfAttributeId, PortCounters};
//! use ibsm_wire::mad::GS_DATA_OFFSET;
//! use ibsm_wire::{GsMad, Method};
//!
//! // Reset the data counters of port 3.
//! let pc = PortCounters {
//!     port_select: 3,
//!     counter_select: CounterSelect::DATA,
//!     ..PortCounters::default()
//! };
//! let req = perf_request(Method::Set, PerfAttributeId::PortCounters, 0x99, &pc.to_bytes());
//! let bytes = req.to_bytes();
//! assert_eq!((bytes[1], bytes[17]), (0x04, 0x12));
//! let back = PortCounters::parse(&GsMad::parse(&bytes)?.data)?;
//! assert!(back.counter_select.contains(CounterSelect::PORT_XMIT_DATA));
//! assert_eq!(&bytes[GS_DATA_OFFSET + 1..GS_DATA_OFFSET + 4], &[3, 0xF0, 0x00]);
//! # Ok::<(), ibsm_wire::Error>(())
//! ```

mod counter;

pub use counter::Counter;

use crate::attr::bit_flags;
use crate::mad::{ClassPortInfo, GS_DATA_OFFSET, GsMad, Method, MgmtClass};

/// ClassVersion of the PerfMgt class.
pub const PERF_CLASS_VERSION: u8 = 1;

/// PortSelect value meaning "every port of the node" (AllPortSelect).
pub const ALL_PORTS: u8 = 0xFF;

code_enum! {
    /// AttributeID of the PerfMgt class (libibmad's `IB_GSI_*`).
    pub enum PerfAttributeId: u16 {
        /// ClassPortInfo: the agent's capabilities.
        ClassPortInfo = 0x0001,
        /// PortSamplesControl.
        PortSamplesControl = 0x0010,
        /// PortSamplesResult.
        PortSamplesResult = 0x0011,
        /// PortCounters: the 8..32-bit error and traffic counters.
        PortCounters = 0x0012,
        /// PortRcvErrorDetails: PortRcvErrors broken down.
        PortRcvErrorDetails = 0x0015,
        /// PortXmitDiscardDetails: PortXmitDiscards broken down.
        PortXmitDiscardDetails = 0x0016,
        /// PortCountersExtended: 64-bit traffic (and optionally error) counters.
        PortCountersExtended = 0x001D,
        /// PortExtendedSpeedsCounters: FEC and lane error counters of FDR and faster links.
        PortExtendedSpeedsCounters = 0x001F,
        /// PortXmitDataSL.
        PortXmitDataSl = 0x0036,
        /// PortRcvDataSL.
        PortRcvDataSl = 0x0037,
    }
}

bit_flags! {
    /// ClassPortInfo.CapabilityMask of a performance agent.
    pub struct PmCapabilityMask: u16 {
        /// The agent generates traps (common to every class).
        const TRAP = crate::mad::cpi_cap::TRAP;
        /// CapabilityMask2 is valid (common to every class).
        const CAP_MASK2 = crate::mad::cpi_cap::CAP_MASK2;
        /// PortSelect 0xFF reads the sum of (or resets) every port of a switch.
        const ALL_PORT_SELECT = 1 << 8;
        /// PortCountersExtended's unicast/multicast counters are valid.
        const EXT_WIDTH = 1 << 9;
        /// PortCountersExtended without the IETF unicast/multicast counters.
        const EXT_WIDTH_NOIETF = 1 << 10;
        /// Only PortSamplesControl/Result, no PortCounters.
        const SAMPLES_ONLY = 1 << 11;
        /// PortCounters.PortXmitWait is valid.
        const XMIT_WAIT = 1 << 12;
        /// PortCounters bytes 22..24 count QP1Dropped (they count VL15Dropped otherwise).
        const QP1_DROP = 1 << 15;
    }
}

bit_flags! {
    /// ClassPortInfo.CapabilityMask2 of a performance agent (27 bits).
    pub struct PmCapabilityMask2: u32 {
        /// PortCountersExtended carries the error counters (bytes 72..184).
        const ADDITIONAL_EXT_COUNTERS = 1 << 1;
    }
}

impl ClassPortInfo {
    /// CapabilityMask read as a performance agent's.
    #[must_use]
    pub fn pm_capabilities(&self) -> PmCapabilityMask {
        PmCapabilityMask(self.capability_mask)
    }

    /// CapabilityMask2 read as a performance agent's.
    #[must_use]
    pub fn pm_capabilities2(&self) -> PmCapabilityMask2 {
        PmCapabilityMask2(self.capability_mask2)
    }
}

bit_flags! {
    /// PortCounters.CounterSelect: which counters a Set resets.
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct CounterSelect: u16 {
        /// SymbolErrorCounter.
        const SYMBOL_ERROR = 1 << 0;
        /// LinkErrorRecoveryCounter.
        const LINK_ERROR_RECOVERY = 1 << 1;
        /// LinkDownedCounter.
        const LINK_DOWNED = 1 << 2;
        /// PortRcvErrors.
        const PORT_RCV_ERRORS = 1 << 3;
        /// PortRcvRemotePhysicalErrors.
        const PORT_RCV_REMOTE_PHYSICAL_ERRORS = 1 << 4;
        /// PortRcvSwitchRelayErrors.
        const PORT_RCV_SWITCH_RELAY_ERRORS = 1 << 5;
        /// PortXmitDiscards.
        const PORT_XMIT_DISCARDS = 1 << 6;
        /// PortXmitConstraintErrors.
        const PORT_XMIT_CONSTRAINT_ERRORS = 1 << 7;
        /// PortRcvConstraintErrors.
        const PORT_RCV_CONSTRAINT_ERRORS = 1 << 8;
        /// LocalLinkIntegrityErrors.
        const LOCAL_LINK_INTEGRITY_ERRORS = 1 << 9;
        /// ExcessiveBufferOverrunErrors.
        const EXCESSIVE_BUFFER_OVERRUN_ERRORS = 1 << 10;
        /// VL15Dropped.
        const VL15_DROPPED = 1 << 11;
        /// PortXmitData.
        const PORT_XMIT_DATA = 1 << 12;
        /// PortRcvData.
        const PORT_RCV_DATA = 1 << 13;
        /// PortXmitPkts.
        const PORT_XMIT_PKTS = 1 << 14;
        /// PortRcvPkts.
        const PORT_RCV_PKTS = 1 << 15;
        /// The twelve error counters.
        const ERRORS = 0x0FFF;
        /// The four traffic counters.
        const DATA = 0xF000;
        /// Every counter of the word.
        const ALL = 0xFFFF;
    }
}

bit_flags! {
    /// PortCounters.CounterSelect2.
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct CounterSelect2: u8 {
        /// PortXmitWait.
        const PORT_XMIT_WAIT = 1 << 0;
    }
}

bit_flags! {
    /// PortCountersExtended.CounterSelect: which traffic counters a Set resets.
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct ExtCounterSelect: u16 {
        /// PortXmitData.
        const PORT_XMIT_DATA = 1 << 0;
        /// PortRcvData.
        const PORT_RCV_DATA = 1 << 1;
        /// PortXmitPkts.
        const PORT_XMIT_PKTS = 1 << 2;
        /// PortRcvPkts.
        const PORT_RCV_PKTS = 1 << 3;
        /// PortUnicastXmitPkts.
        const PORT_UNICAST_XMIT_PKTS = 1 << 4;
        /// PortUnicastRcvPkts.
        const PORT_UNICAST_RCV_PKTS = 1 << 5;
        /// PortMulticastXmitPkts.
        const PORT_MULTICAST_XMIT_PKTS = 1 << 6;
        /// PortMulticastRcvPkts.
        const PORT_MULTICAST_RCV_PKTS = 1 << 7;
        /// All eight.
        const ALL = 0x00FF;
    }
}

bit_flags! {
    /// PortCountersExtended.CounterSelect2: which of the additional (error) counters a
    /// Set resets, one bit per counter in the order of the attribute (bit 0 =
    /// SymbolErrorCounter .. bit 13 = QP1Dropped).
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct ExtCounterSelect2: u32 {
        /// SymbolErrorCounter.
        const SYMBOL_ERROR = 1 << 0;
        /// LinkErrorRecoveryCounter.
        const LINK_ERROR_RECOVERY = 1 << 1;
        /// LinkDownedCounter.
        const LINK_DOWNED = 1 << 2;
        /// PortRcvErrors.
        const PORT_RCV_ERRORS = 1 << 3;
        /// PortRcvRemotePhysicalErrors.
        const PORT_RCV_REMOTE_PHYSICAL_ERRORS = 1 << 4;
        /// PortRcvSwitchRelayErrors.
        const PORT_RCV_SWITCH_RELAY_ERRORS = 1 << 5;
        /// PortXmitDiscards.
        const PORT_XMIT_DISCARDS = 1 << 6;
        /// PortXmitConstraintErrors.
        const PORT_XMIT_CONSTRAINT_ERRORS = 1 << 7;
        /// PortRcvConstraintErrors.
        const PORT_RCV_CONSTRAINT_ERRORS = 1 << 8;
        /// LocalLinkIntegrityErrors.
        const LOCAL_LINK_INTEGRITY_ERRORS = 1 << 9;
        /// ExcessiveBufferOverrunErrors.
        const EXCESSIVE_BUFFER_OVERRUN_ERRORS = 1 << 10;
        /// VL15Dropped.
        const VL15_DROPPED = 1 << 11;
        /// PortXmitWait.
        const PORT_XMIT_WAIT = 1 << 12;
        /// QP1Dropped.
        const QP1_DROPPED = 1 << 13;
        /// All fourteen.
        const ALL = 0x3FFF;
    }
}

wire_struct! {
    /// PortCounters (0x0012): error counters of 4..16 bits and 32-bit traffic counters
    /// of one port (or of every port with PortSelect [`ALL_PORTS`]). Get ignores
    /// CounterSelect; Set resets the selected counters.
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct PortCounters, view PortCountersView, size 44, label "PortCounters";
    fields {
        /// Port the counters are of (0xFF: all ports).
        port_select, set_port_select: u8 = (1, 0, 8), "IB_PC_PORT_SELECT_F";
        /// Counters a Set resets.
        counter_select, set_counter_select: CounterSelect = (2, 0, 16), "IB_PC_COUNTER_SELECT_F";
        /// Minor link errors detected on one or more physical lanes.
        symbol_error_counter, set_symbol_error_counter: u16 = (4, 0, 16), "IB_PC_ERR_SYM_F";
        /// Successful link error recovery procedures.
        link_error_recovery_counter, set_link_error_recovery_counter: u8 = (6, 0, 8), "IB_PC_LINK_RECOVERS_F";
        /// Failed link error recoveries that took the link down.
        link_downed_counter, set_link_downed_counter: u8 = (7, 0, 8), "IB_PC_LINK_DOWNED_F";
        /// Received packets with errors.
        port_rcv_errors, set_port_rcv_errors: u16 = (8, 0, 16), "IB_PC_ERR_RCV_F";
        /// Received packets marked with the EBP delimiter.
        port_rcv_remote_physical_errors, set_port_rcv_remote_physical_errors: u16 = (10, 0, 16), "IB_PC_ERR_PHYSRCV_F";
        /// Received packets a switch could not forward.
        port_rcv_switch_relay_errors, set_port_rcv_switch_relay_errors: u16 = (12, 0, 16), "IB_PC_ERR_SWITCH_REL_F";
        /// Outbound packets discarded (port down or congested).
        port_xmit_discards, set_port_xmit_discards: u16 = (14, 0, 16), "IB_PC_XMT_DISCARDS_F";
        /// Packets not sent for raw or partition filtering.
        port_xmit_constraint_errors, set_port_xmit_constraint_errors: u8 = (16, 0, 8), "IB_PC_ERR_XMTCONSTR_F";
        /// Packets received and discarded for raw or partition filtering.
        port_rcv_constraint_errors, set_port_rcv_constraint_errors: u8 = (17, 0, 8), "IB_PC_ERR_RCVCONSTR_F";
        /// Counters beyond the first word a Set resets.
        counter_select2, set_counter_select2: CounterSelect2 = (18, 0, 8), "IB_PC_COUNTER_SELECT2_F";
        /// Times the local physical errors exceeded the threshold (4 bits).
        local_link_integrity_errors, set_local_link_integrity_errors: u8 = (19, 0, 4), "IB_PC_ERR_LOCALINTEG_F";
        /// Buffer overrun errors past the threshold (4 bits).
        excessive_buffer_overrun_errors, set_excessive_buffer_overrun_errors: u8 = (19, 4, 4), "IB_PC_ERR_EXCESS_OVR_F";
        /// VL15 packets dropped for lack of buffers; QP1Dropped when the agent has
        /// [`PmCapabilityMask::QP1_DROP`] (libibmad's IB_PC_QP1_DROP_F, same bits).
        vl15_dropped, set_vl15_dropped: u16 = (22, 0, 16), "IB_PC_VL15_DROPPED_F";
        /// Data sent, in 4-byte words.
        port_xmit_data, set_port_xmit_data: u32 = (24, 0, 32), "IB_PC_XMT_BYTES_F";
        /// Data received, in 4-byte words.
        port_rcv_data, set_port_rcv_data: u32 = (28, 0, 32), "IB_PC_RCV_BYTES_F";
        /// Packets sent.
        port_xmit_pkts, set_port_xmit_pkts: u32 = (32, 0, 32), "IB_PC_XMT_PKTS_F";
        /// Packets received.
        port_rcv_pkts, set_port_rcv_pkts: u32 = (36, 0, 32), "IB_PC_RCV_PKTS_F";
        /// Ticks with data to send but no credits (with [`PmCapabilityMask::XMIT_WAIT`]).
        port_xmit_wait, set_port_xmit_wait: u32 = (40, 0, 32), "IB_PC_XMT_WAIT_F";
    }
}

impl PortCounters {
    /// QP1Dropped: what bytes 22..24 count when the agent has
    /// [`PmCapabilityMask::QP1_DROP`].
    #[must_use]
    pub fn qp1_dropped(&self) -> u16 {
        self.vl15_dropped
    }
}

wire_struct! {
    /// PortCountersExtended (0x001D): 64-bit traffic counters and, with
    /// [`PmCapabilityMask2::ADDITIONAL_EXT_COUNTERS`], 64-bit error counters.
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct PortCountersExtended, view PortCountersExtendedView, size 184, label "PortCountersExtended";
    fields {
        /// Port the counters are of (0xFF: all ports).
        port_select, set_port_select: u8 = (1, 0, 8), "IB_PC_EXT_PORT_SELECT_F";
        /// Traffic counters a Set resets.
        counter_select, set_counter_select: ExtCounterSelect = (2, 0, 16), "IB_PC_EXT_COUNTER_SELECT_F";
        /// Error counters a Set resets.
        counter_select2, set_counter_select2: ExtCounterSelect2 = (4, 0, 32), "IB_PC_EXT_COUNTER_SELECT2_F";
        /// Data sent, in 4-byte words.
        port_xmit_data, set_port_xmit_data: u64 = (8, 0, 64), "IB_PC_EXT_XMT_BYTES_F";
        /// Data received, in 4-byte words.
        port_rcv_data, set_port_rcv_data: u64 = (16, 0, 64), "IB_PC_EXT_RCV_BYTES_F";
        /// Packets sent.
        port_xmit_pkts, set_port_xmit_pkts: u64 = (24, 0, 64), "IB_PC_EXT_XMT_PKTS_F";
        /// Packets received.
        port_rcv_pkts, set_port_rcv_pkts: u64 = (32, 0, 64), "IB_PC_EXT_RCV_PKTS_F";
        /// Unicast packets sent.
        port_unicast_xmit_pkts, set_port_unicast_xmit_pkts: u64 = (40, 0, 64), "IB_PC_EXT_XMT_UPKTS_F";
        /// Unicast packets received.
        port_unicast_rcv_pkts, set_port_unicast_rcv_pkts: u64 = (48, 0, 64), "IB_PC_EXT_RCV_UPKTS_F";
        /// Multicast packets sent.
        port_multicast_xmit_pkts, set_port_multicast_xmit_pkts: u64 = (56, 0, 64), "IB_PC_EXT_XMT_MPKTS_F";
        /// Multicast packets received.
        port_multicast_rcv_pkts, set_port_multicast_rcv_pkts: u64 = (64, 0, 64), "IB_PC_EXT_RCV_MPKTS_F";
        /// SymbolErrorCounter, 64 bits.
        symbol_error_counter, set_symbol_error_counter: u64 = (72, 0, 64), "IB_PC_EXT_ERR_SYM_F";
        /// LinkErrorRecoveryCounter, 64 bits.
        link_error_recovery_counter, set_link_error_recovery_counter: u64 = (80, 0, 64), "IB_PC_EXT_LINK_RECOVERS_F";
        /// LinkDownedCounter, 64 bits.
        link_downed_counter, set_link_downed_counter: u64 = (88, 0, 64), "IB_PC_EXT_LINK_DOWNED_F";
        /// PortRcvErrors, 64 bits.
        port_rcv_errors, set_port_rcv_errors: u64 = (96, 0, 64), "IB_PC_EXT_ERR_RCV_F";
        /// PortRcvRemotePhysicalErrors, 64 bits.
        port_rcv_remote_physical_errors, set_port_rcv_remote_physical_errors: u64 = (104, 0, 64), "IB_PC_EXT_ERR_PHYSRCV_F";
        /// PortRcvSwitchRelayErrors, 64 bits.
        port_rcv_switch_relay_errors, set_port_rcv_switch_relay_errors: u64 = (112, 0, 64), "IB_PC_EXT_ERR_SWITCH_REL_F";
        /// PortXmitDiscards, 64 bits.
        port_xmit_discards, set_port_xmit_discards: u64 = (120, 0, 64), "IB_PC_EXT_XMT_DISCARDS_F";
        /// PortXmitConstraintErrors, 64 bits.
        port_xmit_constraint_errors, set_port_xmit_constraint_errors: u64 = (128, 0, 64), "IB_PC_EXT_ERR_XMTCONSTR_F";
        /// PortRcvConstraintErrors, 64 bits.
        port_rcv_constraint_errors, set_port_rcv_constraint_errors: u64 = (136, 0, 64), "IB_PC_EXT_ERR_RCVCONSTR_F";
        /// LocalLinkIntegrityErrors, 64 bits.
        local_link_integrity_errors, set_local_link_integrity_errors: u64 = (144, 0, 64), "IB_PC_EXT_ERR_LOCALINTEG_F";
        /// ExcessiveBufferOverrunErrors, 64 bits.
        excessive_buffer_overrun_errors, set_excessive_buffer_overrun_errors: u64 = (152, 0, 64), "IB_PC_EXT_ERR_EXCESS_OVR_F";
        /// VL15Dropped, 64 bits.
        vl15_dropped, set_vl15_dropped: u64 = (160, 0, 64), "IB_PC_EXT_VL15_DROPPED_F";
        /// PortXmitWait, 64 bits.
        port_xmit_wait, set_port_xmit_wait: u64 = (168, 0, 64), "IB_PC_EXT_XMT_WAIT_F";
        /// QP1Dropped, 64 bits.
        qp1_dropped, set_qp1_dropped: u64 = (176, 0, 64), "IB_PC_EXT_QP1_DROP_F";
    }
}

wire_struct! {
    /// PortRcvErrorDetails (0x0015): why received packets were counted in PortRcvErrors.
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct PortRcvErrorDetails, view PortRcvErrorDetailsView, size 16, label "PortRcvErrorDetails";
    fields {
        /// Port the counters are of.
        port_select, set_port_select: u8 = (1, 0, 8);
        /// Counters a Set resets (bit 0 = PortLocalPhysicalErrors, in field order).
        counter_select, set_counter_select: u16 = (2, 0, 16);
        /// Packets with local physical errors (ICRC, VCRC, FCCRC, ...).
        port_local_physical_errors, set_port_local_physical_errors: u16 = (4, 0, 16), "IB_PC_RCV_LOCAL_PHY_ERR_F";
        /// Malformed packets.
        port_malformed_packet_errors, set_port_malformed_packet_errors: u16 = (6, 0, 16), "IB_PC_RCV_MALFORMED_PKT_ERR_F";
        /// Packets dropped for receive buffer overrun.
        port_buffer_overrun_errors, set_port_buffer_overrun_errors: u16 = (8, 0, 16), "IB_PC_RCV_BUF_OVR_ERR_F";
        /// Packets whose DLID the switch could not map to a port.
        port_dlid_mapping_errors, set_port_dlid_mapping_errors: u16 = (10, 0, 16), "IB_PC_RCV_DLID_MAP_ERR_F";
        /// Packets whose SL the switch could not map to a VL.
        port_vl_mapping_errors, set_port_vl_mapping_errors: u16 = (12, 0, 16), "IB_PC_RCV_VL_MAP_ERR_F";
        /// Packets that would have left through the port they arrived on.
        port_looping_errors, set_port_looping_errors: u16 = (14, 0, 16), "IB_PC_RCV_LOOPING_ERR_F";
    }
}

wire_struct! {
    /// PortXmitDiscardDetails (0x0016): why outbound packets were counted in
    /// PortXmitDiscards.
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct PortXmitDiscardDetails, view PortXmitDiscardDetailsView, size 12, label "PortXmitDiscardDetails";
    fields {
        /// Port the counters are of.
        port_select, set_port_select: u8 = (1, 0, 8);
        /// Counters a Set resets (bit 0 = PortInactiveDiscards, in field order).
        counter_select, set_counter_select: u16 = (2, 0, 16);
        /// Discarded because the port was not Active.
        port_inactive_discards, set_port_inactive_discards: u16 = (4, 0, 16), "IB_PC_XMT_INACT_DISC_F";
        /// Discarded for exceeding the neighbour's MTU.
        port_neighbor_mtu_discards, set_port_neighbor_mtu_discards: u16 = (6, 0, 16), "IB_PC_XMT_NEIGH_MTU_DISC_F";
        /// Discarded on the switch lifetime limit.
        port_sw_lifetime_limit_discards, set_port_sw_lifetime_limit_discards: u16 = (8, 0, 16), "IB_PC_XMT_SW_LIFE_DISC_F";
        /// Discarded on the head-of-queue lifetime limit.
        port_sw_hoq_lifetime_limit_discards, set_port_sw_hoq_lifetime_limit_discards: u16 = (10, 0, 16), "IB_PC_XMT_SW_HOL_DISC_F";
    }
}

wire_struct! {
    /// PortExtendedSpeedsCounters (0x001F): 64B/66B and FEC error counters of links at
    /// FDR or faster. Under RS-FEC, bytes 44..92 count correctable symbols per lane
    /// (libibmad's `IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE*_F`, same bits) and the
    /// per-lane error-detection counters are not used.
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    pub struct PortExtendedSpeedsCounters, view PortExtendedSpeedsCountersView, size 152, label "PortExtendedSpeedsCounters";
    fields {
        /// Port the counters are of.
        port_select, set_port_select: u8 = (1, 0, 8), "IB_PESC_PORT_SELECT_F";
        /// Counters a Set resets.
        counter_select, set_counter_select: u64 = (8, 0, 64), "IB_PESC_COUNTER_SELECT_F";
        /// Sync header errors.
        sync_header_error_counter, set_sync_header_error_counter: u16 = (16, 0, 16), "IB_PESC_SYNC_HDR_ERR_CTR_F";
        /// Unknown blocks.
        unknown_block_counter, set_unknown_block_counter: u16 = (18, 0, 16), "IB_PESC_UNK_BLOCK_CTR_F";
        /// Error-detection counter of lane 0.
        error_detection_counter_lane0, set_error_detection_counter_lane0: u16 = (20, 0, 16), "IB_PESC_ERR_DET_CTR_LANE0_F";
        /// Error-detection counter of lane 1.
        error_detection_counter_lane1, set_error_detection_counter_lane1: u16 = (22, 0, 16), "IB_PESC_ERR_DET_CTR_LANE1_F";
        /// Error-detection counter of lane 2.
        error_detection_counter_lane2, set_error_detection_counter_lane2: u16 = (24, 0, 16), "IB_PESC_ERR_DET_CTR_LANE2_F";
        /// Error-detection counter of lane 3.
        error_detection_counter_lane3, set_error_detection_counter_lane3: u16 = (26, 0, 16), "IB_PESC_ERR_DET_CTR_LANE3_F";
        /// Error-detection counter of lane 4.
        error_detection_counter_lane4, set_error_detection_counter_lane4: u16 = (28, 0, 16), "IB_PESC_ERR_DET_CTR_LANE4_F";
        /// Error-detection counter of lane 5.
        error_detection_counter_lane5, set_error_detection_counter_lane5: u16 = (30, 0, 16), "IB_PESC_ERR_DET_CTR_LANE5_F";
        /// Error-detection counter of lane 6.
        error_detection_counter_lane6, set_error_detection_counter_lane6: u16 = (32, 0, 16), "IB_PESC_ERR_DET_CTR_LANE6_F";
        /// Error-detection counter of lane 7.
        error_detection_counter_lane7, set_error_detection_counter_lane7: u16 = (34, 0, 16), "IB_PESC_ERR_DET_CTR_LANE7_F";
        /// Error-detection counter of lane 8.
        error_detection_counter_lane8, set_error_detection_counter_lane8: u16 = (36, 0, 16), "IB_PESC_ERR_DET_CTR_LANE8_F";
        /// Error-detection counter of lane 9.
        error_detection_counter_lane9, set_error_detection_counter_lane9: u16 = (38, 0, 16), "IB_PESC_ERR_DET_CTR_LANE9_F";
        /// Error-detection counter of lane 10.
        error_detection_counter_lane10, set_error_detection_counter_lane10: u16 = (40, 0, 16), "IB_PESC_ERR_DET_CTR_LANE10_F";
        /// Error-detection counter of lane 11.
        error_detection_counter_lane11, set_error_detection_counter_lane11: u16 = (42, 0, 16), "IB_PESC_ERR_DET_CTR_LANE11_F";
        /// FEC correctable blocks of lane 0 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane0, set_fec_correctable_block_ctr_lane0: u32 = (44, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE0_F";
        /// FEC correctable blocks of lane 1 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane1, set_fec_correctable_block_ctr_lane1: u32 = (48, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE1_F";
        /// FEC correctable blocks of lane 2 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane2, set_fec_correctable_block_ctr_lane2: u32 = (52, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE2_F";
        /// FEC correctable blocks of lane 3 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane3, set_fec_correctable_block_ctr_lane3: u32 = (56, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE3_F";
        /// FEC correctable blocks of lane 4 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane4, set_fec_correctable_block_ctr_lane4: u32 = (60, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE4_F";
        /// FEC correctable blocks of lane 5 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane5, set_fec_correctable_block_ctr_lane5: u32 = (64, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE5_F";
        /// FEC correctable blocks of lane 6 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane6, set_fec_correctable_block_ctr_lane6: u32 = (68, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE6_F";
        /// FEC correctable blocks of lane 7 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane7, set_fec_correctable_block_ctr_lane7: u32 = (72, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE7_F";
        /// FEC correctable blocks of lane 8 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane8, set_fec_correctable_block_ctr_lane8: u32 = (76, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE8_F";
        /// FEC correctable blocks of lane 9 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane9, set_fec_correctable_block_ctr_lane9: u32 = (80, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE9_F";
        /// FEC correctable blocks of lane 10 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane10, set_fec_correctable_block_ctr_lane10: u32 = (84, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE10_F";
        /// FEC correctable blocks of lane 11 (RS-FEC: correctable symbols).
        fec_correctable_block_ctr_lane11, set_fec_correctable_block_ctr_lane11: u32 = (88, 0, 32), "IB_PESC_FEC_CORR_BLOCK_CTR_LANE11_F";
        /// FEC uncorrectable blocks of lane 0.
        fec_uncorrectable_block_ctr_lane0, set_fec_uncorrectable_block_ctr_lane0: u32 = (92, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE0_F";
        /// FEC uncorrectable blocks of lane 1.
        fec_uncorrectable_block_ctr_lane1, set_fec_uncorrectable_block_ctr_lane1: u32 = (96, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE1_F";
        /// FEC uncorrectable blocks of lane 2.
        fec_uncorrectable_block_ctr_lane2, set_fec_uncorrectable_block_ctr_lane2: u32 = (100, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE2_F";
        /// FEC uncorrectable blocks of lane 3.
        fec_uncorrectable_block_ctr_lane3, set_fec_uncorrectable_block_ctr_lane3: u32 = (104, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE3_F";
        /// FEC uncorrectable blocks of lane 4.
        fec_uncorrectable_block_ctr_lane4, set_fec_uncorrectable_block_ctr_lane4: u32 = (108, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE4_F";
        /// FEC uncorrectable blocks of lane 5.
        fec_uncorrectable_block_ctr_lane5, set_fec_uncorrectable_block_ctr_lane5: u32 = (112, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE5_F";
        /// FEC uncorrectable blocks of lane 6.
        fec_uncorrectable_block_ctr_lane6, set_fec_uncorrectable_block_ctr_lane6: u32 = (116, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE6_F";
        /// FEC uncorrectable blocks of lane 7.
        fec_uncorrectable_block_ctr_lane7, set_fec_uncorrectable_block_ctr_lane7: u32 = (120, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE7_F";
        /// FEC uncorrectable blocks of lane 8.
        fec_uncorrectable_block_ctr_lane8, set_fec_uncorrectable_block_ctr_lane8: u32 = (124, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE8_F";
        /// FEC uncorrectable blocks of lane 9.
        fec_uncorrectable_block_ctr_lane9, set_fec_uncorrectable_block_ctr_lane9: u32 = (128, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE9_F";
        /// FEC uncorrectable blocks of lane 10.
        fec_uncorrectable_block_ctr_lane10, set_fec_uncorrectable_block_ctr_lane10: u32 = (132, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE10_F";
        /// FEC uncorrectable blocks of lane 11.
        fec_uncorrectable_block_ctr_lane11, set_fec_uncorrectable_block_ctr_lane11: u32 = (136, 0, 32), "IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE11_F";
        /// FEC correctable blocks of the port.
        port_fec_correctable_block_ctr, set_port_fec_correctable_block_ctr: u32 = (140, 0, 32), "IB_PESC_PORT_FEC_CORR_BLOCK_CTR_F";
        /// FEC uncorrectable blocks of the port.
        port_fec_uncorrectable_block_ctr, set_port_fec_uncorrectable_block_ctr: u32 = (144, 0, 32), "IB_PESC_PORT_FEC_UNCORR_BLOCK_CTR_F";
        /// FEC corrected symbols of the port.
        port_fec_corrected_symbol_ctr, set_port_fec_corrected_symbol_ctr: u32 = (148, 0, 32), "IB_PESC_PORT_FEC_CORR_SYMBOL_CTR_F";
    }
}

/// A PerfMgt request (class 0x04, class version 1) with `data` (at most 192 bytes; the
/// rest are zero) as its attribute.
#[must_use]
pub fn perf_request(method: Method, attr: PerfAttributeId, tid: u64, data: &[u8]) -> GsMad {
    let mut buf = [0u8; 192];
    let n = data.len().min(buf.len());
    buf[..n].copy_from_slice(&data[..n]);
    GsMad {
        header: crate::mad::MadHeader {
            base_version: 1,
            mgmt_class: MgmtClass::PerfMgt,
            class_version: PERF_CLASS_VERSION,
            response: false,
            method,
            status: crate::mad::Status::OK,
            class_specific: 0,
            transaction_id: tid,
            attribute_id: attr.into(),
            attribute_modifier: 0,
        },
        class_header: [0; 40],
        data: buf,
    }
}

// The data area starts where libibmad's IB_PC_DATA_OFFS says.
const _: () = assert!(GS_DATA_OFFSET == 64);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testutil::check;

    #[test]
    fn generic_properties() {
        check::<PortCounters>();
        check::<PortCountersExtended>();
        check::<PortRcvErrorDetails>();
        check::<PortXmitDiscardDetails>();
        check::<PortExtendedSpeedsCounters>();
    }

    #[test]
    fn port_counters_vector() {
        let mut b = [0u8; 44];
        b[1] = 0xFF;
        b[2..4].copy_from_slice(&0x1001u16.to_be_bytes());
        b[4..6].copy_from_slice(&0xFFFFu16.to_be_bytes());
        b[7] = 3;
        b[18] = 1;
        b[19] = 0x5A;
        b[22..24].copy_from_slice(&7u16.to_be_bytes());
        b[24..28].copy_from_slice(&0x1234_5678u32.to_be_bytes());
        b[40..44].copy_from_slice(&0xAABB_CCDDu32.to_be_bytes());
        let pc = PortCounters::parse(&b).unwrap();
        assert_eq!(pc.port_select, ALL_PORTS);
        assert_eq!(
            pc.counter_select,
            CounterSelect::SYMBOL_ERROR | CounterSelect::PORT_XMIT_DATA
        );
        assert_eq!(pc.symbol_error_counter, 0xFFFF);
        assert_eq!(pc.link_downed_counter, 3);
        assert_eq!(pc.counter_select2, CounterSelect2::PORT_XMIT_WAIT);
        assert_eq!(pc.local_link_integrity_errors, 5);
        assert_eq!(pc.excessive_buffer_overrun_errors, 0xA);
        assert_eq!(pc.qp1_dropped(), 7);
        assert_eq!(pc.port_xmit_data, 0x1234_5678);
        assert_eq!(pc.port_xmit_wait, 0xAABB_CCDD);
        assert_eq!(pc.to_bytes(), b);
        assert!(PortCounters::parse(&b[..43]).is_err());
    }

    #[test]
    fn extended_and_details_vectors() {
        let mut b = [0u8; 184];
        b[1] = 2;
        b[3] = 0xFF;
        b[8..16].copy_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        b[176..184].copy_from_slice(&u64::MAX.to_be_bytes());
        let e = PortCountersExtended::parse(&b).unwrap();
        assert_eq!(e.port_select, 2);
        assert_eq!(e.counter_select, ExtCounterSelect::ALL);
        assert_eq!(e.port_xmit_data, 0x0102_0304_0506_0708);
        assert_eq!(e.qp1_dropped, u64::MAX);
        assert_eq!(e.to_bytes(), b);

        let r =
            PortRcvErrorDetails::parse(&[0, 1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]).unwrap();
        assert_eq!(
            (r.port_local_physical_errors, r.port_looping_errors),
            (9, 0x102)
        );
        let x = PortXmitDiscardDetails::parse(&[0, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0]).unwrap();
        assert_eq!(x.port_neighbor_mtu_discards, 4);

        let mut b = [0u8; 152];
        b[16..18].copy_from_slice(&5u16.to_be_bytes());
        b[44..48].copy_from_slice(&6u32.to_be_bytes());
        b[148..152].copy_from_slice(&7u32.to_be_bytes());
        let s = PortExtendedSpeedsCounters::parse(&b).unwrap();
        assert_eq!(s.sync_header_error_counter, 5);
        assert_eq!(s.fec_correctable_block_ctr_lane0, 6);
        assert_eq!(s.port_fec_corrected_symbol_ctr, 7);
    }

    #[test]
    fn capabilities_and_request() {
        let cpi = ClassPortInfo {
            capability_mask: 0x1300,
            capability_mask2: 0x2,
            ..ClassPortInfo::default()
        };
        let caps = cpi.pm_capabilities();
        assert!(caps.contains(PmCapabilityMask::ALL_PORT_SELECT | PmCapabilityMask::XMIT_WAIT));
        assert!(caps.contains(PmCapabilityMask::EXT_WIDTH));
        assert!(!caps.contains(PmCapabilityMask::QP1_DROP));
        assert!(
            cpi.pm_capabilities2()
                .contains(PmCapabilityMask2::ADDITIONAL_EXT_COUNTERS)
        );
        let req = perf_request(
            Method::Get,
            PerfAttributeId::PortCountersExtended,
            5,
            &[0, 3],
        );
        let b = req.to_bytes();
        assert_eq!(&b[..4], &[1, 0x04, 1, 0x01]);
        assert_eq!(&b[16..18], &[0x00, 0x1D]);
        assert_eq!(b[GS_DATA_OFFSET + 1], 3);
        assert_eq!(
            PerfAttributeId::from(0x1F),
            PerfAttributeId::PortExtendedSpeedsCounters
        );
    }
}
