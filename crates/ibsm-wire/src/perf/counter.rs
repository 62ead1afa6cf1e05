//! [`Counter`]: every port counter of the PerfMgt class once, with what each tool and
//! agent needs to know of it: the name `perfquery` prints, infiniband_exporter's metric
//! stem, whether it counts errors, its width in the narrow attribute, the attribute field
//! that holds it and the CounterSelect bit that names it.

use super::{PortCounters, PortCountersExtended, PortRcvErrorDetails, PortXmitDiscardDetails};

macro_rules! counters {
    ($($(#[$m:meta])* $v:ident => $name:literal, $stem:literal, $error:literal, $width:literal;)*) => {
        /// A port counter, by the name `perfquery` prints.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        #[non_exhaustive]
        pub enum Counter {
            $($(#[$m])* $v,)*
        }

        impl Counter {
            /// Every counter, in declaration order: [`Self::ALL`], then [`Self::DETAILS`].
            /// `c as usize` indexes it.
            pub const EVERY: &'static [Counter] = &[$(Counter::$v,)*];

            /// The name `perfquery` prints (`SymbolErrorCounter`, `PortXmitData`,
            /// `PortMalformedPktErrors`, ...).
            #[must_use]
            pub const fn perfquery_name(self) -> &'static str {
                match self { $(Counter::$v => $name,)* }
            }

            /// The stem of treydock/infiniband_exporter's metric
            /// (`infiniband_{switch,hca}_port_<stem>_total`); empty for the
            /// [`Self::DETAILS`] counters, which it does not export.
            #[must_use]
            pub const fn exporter_stem(self) -> &'static str {
                match self { $(Counter::$v => $stem,)* }
            }

            /// Whether it counts errors (rather than traffic or congestion).
            #[must_use]
            pub const fn is_error(self) -> bool {
                match self { $(Counter::$v => $error,)* }
            }

            /// Its width in bits in PortCounters or its detail attribute (64 for the
            /// counters only PortCountersExtended has).
            #[must_use]
            pub const fn width(self) -> u32 {
                match self { $(Counter::$v => $width,)* }
            }
        }
    };
}

counters! {
    /// PortXmitData (4-byte words).
    XmitData => "PortXmitData", "transmit_data_bytes", false, 32;
    /// PortRcvData (4-byte words).
    RcvData => "PortRcvData", "receive_data_bytes", false, 32;
    /// PortXmitPkts.
    XmitPkts => "PortXmitPkts", "transmit_packets", false, 32;
    /// PortRcvPkts.
    RcvPkts => "PortRcvPkts", "receive_packets", false, 32;
    /// PortUnicastXmitPkts (PortCountersExtended only).
    UnicastXmitPkts => "PortUnicastXmitPkts", "unicast_transmit_packets", false, 64;
    /// PortUnicastRcvPkts (PortCountersExtended only).
    UnicastRcvPkts => "PortUnicastRcvPkts", "unicast_receive_packets", false, 64;
    /// PortMulticastXmitPkts (PortCountersExtended only).
    MulticastXmitPkts => "PortMulticastXmitPkts", "multicast_transmit_packets", false, 64;
    /// PortMulticastRcvPkts (PortCountersExtended only).
    MulticastRcvPkts => "PortMulticastRcvPkts", "multicast_receive_packets", false, 64;
    /// SymbolErrorCounter.
    SymbolErrors => "SymbolErrorCounter", "symbol_error", true, 16;
    /// LinkErrorRecoveryCounter.
    LinkErrorRecovery => "LinkErrorRecoveryCounter", "link_error_recovery", true, 8;
    /// LinkDownedCounter.
    LinkDowned => "LinkDownedCounter", "link_downed", true, 8;
    /// PortRcvErrors.
    RcvErrors => "PortRcvErrors", "receive_errors", true, 16;
    /// PortRcvRemotePhysicalErrors.
    RcvRemotePhysicalErrors => "PortRcvRemotePhysicalErrors", "receive_remote_physical_errors", true, 16;
    /// PortRcvSwitchRelayErrors.
    RcvSwitchRelayErrors => "PortRcvSwitchRelayErrors", "receive_switch_relay_errors", true, 16;
    /// PortXmitDiscards.
    XmitDiscards => "PortXmitDiscards", "transmit_discards", true, 16;
    /// PortXmitConstraintErrors.
    XmitConstraintErrors => "PortXmitConstraintErrors", "transmit_constraint_errors", true, 8;
    /// PortRcvConstraintErrors.
    RcvConstraintErrors => "PortRcvConstraintErrors", "receive_constraint_errors", true, 8;
    /// LocalLinkIntegrityErrors.
    LocalLinkIntegrityErrors => "LocalLinkIntegrityErrors", "local_link_integrity_errors", true, 4;
    /// ExcessiveBufferOverrunErrors.
    ExcessiveBufferOverrunErrors => "ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors", true, 4;
    /// VL15Dropped.
    Vl15Dropped => "VL15Dropped", "vl15_dropped", true, 16;
    /// QP1Dropped (the same bits as VL15Dropped in PortCounters, on agents with
    /// QP1Dropped; its own 64 bits in PortCountersExtended).
    Qp1Dropped => "QP1Dropped", "qp1_dropped", true, 64;
    /// PortXmitWait (ticks with data to send and no credits: congestion, not errors).
    XmitWait => "PortXmitWait", "transmit_wait", false, 32;
    /// PortRcvErrorDetails.PortLocalPhysicalErrors.
    RcvLocalPhysicalErrors => "PortLocalPhysicalErrors", "", true, 16;
    /// PortRcvErrorDetails.PortMalformedPktErrors.
    RcvMalformedPacketErrors => "PortMalformedPktErrors", "", true, 16;
    /// PortRcvErrorDetails.PortBufferOverrunErrors.
    RcvBufferOverrunErrors => "PortBufferOverrunErrors", "", true, 16;
    /// PortRcvErrorDetails.PortDLIDMappingErrors.
    RcvDlidMappingErrors => "PortDLIDMappingErrors", "", true, 16;
    /// PortRcvErrorDetails.PortVLMappingErrors.
    RcvVlMappingErrors => "PortVLMappingErrors", "", true, 16;
    /// PortRcvErrorDetails.PortLoopingErrors.
    RcvLoopingErrors => "PortLoopingErrors", "", true, 16;
    /// PortXmitDiscardDetails.PortInactiveDiscards.
    XmitInactiveDiscards => "PortInactiveDiscards", "", true, 16;
    /// PortXmitDiscardDetails.PortNeighborMTUDiscards.
    XmitNeighborMtuDiscards => "PortNeighborMTUDiscards", "", true, 16;
    /// PortXmitDiscardDetails.PortSwLifetimeLimitDiscards.
    XmitSwLifetimeLimitDiscards => "PortSwLifetimeLimitDiscards", "", true, 16;
    /// PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards.
    XmitSwHoqLifetimeLimitDiscards => "PortSwHOQLifetimeLimitDiscards", "", true, 16;
}

impl Counter {
    /// The counters of PortCounters and PortCountersExtended, in `perfquery -x` order
    /// (traffic, then errors).
    pub const ALL: &'static [Counter] = Self::EVERY.split_at(22).0;

    /// The counters of PortRcvErrorDetails, then PortXmitDiscardDetails, each in
    /// CounterSelect order.
    pub const DETAILS: &'static [Counter] = Self::EVERY.split_at(22).1;

    /// PortCounters.CounterSelect: bit `i` selects the `i`-th.
    pub const COUNTER_SELECT: [Counter; 16] = [
        Self::SymbolErrors,
        Self::LinkErrorRecovery,
        Self::LinkDowned,
        Self::RcvErrors,
        Self::RcvRemotePhysicalErrors,
        Self::RcvSwitchRelayErrors,
        Self::XmitDiscards,
        Self::XmitConstraintErrors,
        Self::RcvConstraintErrors,
        Self::LocalLinkIntegrityErrors,
        Self::ExcessiveBufferOverrunErrors,
        Self::Vl15Dropped,
        Self::XmitData,
        Self::RcvData,
        Self::XmitPkts,
        Self::RcvPkts,
    ];

    /// PortCountersExtended.CounterSelect: bit `i` selects the `i`-th.
    pub const EXT_COUNTER_SELECT: [Counter; 8] = [
        Self::XmitData,
        Self::RcvData,
        Self::XmitPkts,
        Self::RcvPkts,
        Self::UnicastXmitPkts,
        Self::UnicastRcvPkts,
        Self::MulticastXmitPkts,
        Self::MulticastRcvPkts,
    ];

    /// PortCountersExtended.CounterSelect2: bit `i` selects the `i`-th: the twelve
    /// error counters of PortCounters' CounterSelect (its bits 0..=11), then
    /// PortXmitWait and QP1Dropped.
    pub const EXT_COUNTER_SELECT2: [Counter; 14] = {
        let mut a = [Self::XmitWait; 14];
        let mut i = 0;
        while i < 12 {
            a[i] = Self::COUNTER_SELECT[i];
            i += 1;
        }
        a[13] = Self::Qp1Dropped;
        a
    };

    /// PortRcvErrorDetails.CounterSelect: bit `i` selects the `i`-th.
    pub const RCV_ERROR_DETAILS_SELECT: [Counter; 6] = [
        Self::RcvLocalPhysicalErrors,
        Self::RcvMalformedPacketErrors,
        Self::RcvBufferOverrunErrors,
        Self::RcvDlidMappingErrors,
        Self::RcvVlMappingErrors,
        Self::RcvLoopingErrors,
    ];

    /// PortXmitDiscardDetails.CounterSelect: bit `i` selects the `i`-th.
    pub const XMIT_DISCARD_DETAILS_SELECT: [Counter; 4] = [
        Self::XmitInactiveDiscards,
        Self::XmitNeighborMtuDiscards,
        Self::XmitSwLifetimeLimitDiscards,
        Self::XmitSwHoqLifetimeLimitDiscards,
    ];

    /// The largest value the narrow attribute shows ([`Self::width`] bits).
    #[must_use]
    pub const fn narrow_max(self) -> u64 {
        let w = self.width();
        if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
    }

    /// Whether it counts data in 4-byte words (PortXmitData, PortRcvData), as the agent
    /// and `perfquery` do; multiply by 4 for bytes.
    #[must_use]
    pub const fn is_data_words(self) -> bool {
        matches!(self, Counter::XmitData | Counter::RcvData)
    }

    /// The family of infiniband_exporter's metric for a switch port
    /// (`infiniband_switch_port_<stem>`) or a CA port (`infiniband_hca_port_<stem>`);
    /// its samples are `<family>_total`.
    #[cfg(feature = "alloc")]
    #[must_use]
    pub fn exporter_family(self, switch: bool) -> alloc::string::String {
        alloc::format!(
            "infiniband_{}_port_{}",
            exporter_kind(switch),
            self.exporter_stem()
        )
    }

    /// The HELP text of that family (`Infiniband switch port PortXmitData`).
    #[cfg(feature = "alloc")]
    #[must_use]
    pub fn exporter_help(self, switch: bool) -> alloc::string::String {
        alloc::format!(
            "Infiniband {} port {}",
            exporter_kind(switch),
            self.perfquery_name()
        )
    }

    /// What the exporter reports for a reading `value` of this counter: data in bytes
    /// (4 per word, saturating), every other counter as read.
    #[must_use]
    pub const fn exporter_value(self, value: u64) -> u64 {
        if self.is_data_words() {
            value.saturating_mul(4)
        } else {
            value
        }
    }

    /// Its value in a PortCounters reading, widened; `None` for the counters
    /// PortCounters does not have.
    #[must_use]
    pub fn of_counters(self, pc: &PortCounters) -> Option<u64> {
        Some(match self {
            Counter::XmitData => pc.port_xmit_data.into(),
            Counter::RcvData => pc.port_rcv_data.into(),
            Counter::XmitPkts => pc.port_xmit_pkts.into(),
            Counter::RcvPkts => pc.port_rcv_pkts.into(),
            Counter::SymbolErrors => pc.symbol_error_counter.into(),
            Counter::LinkErrorRecovery => pc.link_error_recovery_counter.into(),
            Counter::LinkDowned => pc.link_downed_counter.into(),
            Counter::RcvErrors => pc.port_rcv_errors.into(),
            Counter::RcvRemotePhysicalErrors => pc.port_rcv_remote_physical_errors.into(),
            Counter::RcvSwitchRelayErrors => pc.port_rcv_switch_relay_errors.into(),
            Counter::XmitDiscards => pc.port_xmit_discards.into(),
            Counter::XmitConstraintErrors => pc.port_xmit_constraint_errors.into(),
            Counter::RcvConstraintErrors => pc.port_rcv_constraint_errors.into(),
            Counter::LocalLinkIntegrityErrors => pc.local_link_integrity_errors.into(),
            Counter::ExcessiveBufferOverrunErrors => pc.excessive_buffer_overrun_errors.into(),
            Counter::Vl15Dropped => pc.vl15_dropped.into(),
            Counter::Qp1Dropped => pc.qp1_dropped().into(),
            Counter::XmitWait => pc.port_xmit_wait.into(),
            _ => return None,
        })
    }

    /// Its value in a PortCountersExtended reading; `None` for the detail counters.
    #[must_use]
    pub fn of_extended(self, e: &PortCountersExtended) -> Option<u64> {
        Some(match self {
            Counter::XmitData => e.port_xmit_data,
            Counter::RcvData => e.port_rcv_data,
            Counter::XmitPkts => e.port_xmit_pkts,
            Counter::RcvPkts => e.port_rcv_pkts,
            Counter::UnicastXmitPkts => e.port_unicast_xmit_pkts,
            Counter::UnicastRcvPkts => e.port_unicast_rcv_pkts,
            Counter::MulticastXmitPkts => e.port_multicast_xmit_pkts,
            Counter::MulticastRcvPkts => e.port_multicast_rcv_pkts,
            Counter::SymbolErrors => e.symbol_error_counter,
            Counter::LinkErrorRecovery => e.link_error_recovery_counter,
            Counter::LinkDowned => e.link_downed_counter,
            Counter::RcvErrors => e.port_rcv_errors,
            Counter::RcvRemotePhysicalErrors => e.port_rcv_remote_physical_errors,
            Counter::RcvSwitchRelayErrors => e.port_rcv_switch_relay_errors,
            Counter::XmitDiscards => e.port_xmit_discards,
            Counter::XmitConstraintErrors => e.port_xmit_constraint_errors,
            Counter::RcvConstraintErrors => e.port_rcv_constraint_errors,
            Counter::LocalLinkIntegrityErrors => e.local_link_integrity_errors,
            Counter::ExcessiveBufferOverrunErrors => e.excessive_buffer_overrun_errors,
            Counter::Vl15Dropped => e.vl15_dropped,
            Counter::Qp1Dropped => e.qp1_dropped,
            Counter::XmitWait => e.port_xmit_wait,
            _ => return None,
        })
    }

    /// Its value in a PortRcvErrorDetails reading; `None` for the other counters.
    #[must_use]
    pub fn of_rcv_error_details(self, d: &PortRcvErrorDetails) -> Option<u64> {
        Some(u64::from(match self {
            Counter::RcvLocalPhysicalErrors => d.port_local_physical_errors,
            Counter::RcvMalformedPacketErrors => d.port_malformed_packet_errors,
            Counter::RcvBufferOverrunErrors => d.port_buffer_overrun_errors,
            Counter::RcvDlidMappingErrors => d.port_dlid_mapping_errors,
            Counter::RcvVlMappingErrors => d.port_vl_mapping_errors,
            Counter::RcvLoopingErrors => d.port_looping_errors,
            _ => return None,
        }))
    }

    /// Its value in a PortXmitDiscardDetails reading; `None` for the other counters.
    #[must_use]
    pub fn of_xmit_discard_details(self, d: &PortXmitDiscardDetails) -> Option<u64> {
        Some(u64::from(match self {
            Counter::XmitInactiveDiscards => d.port_inactive_discards,
            Counter::XmitNeighborMtuDiscards => d.port_neighbor_mtu_discards,
            Counter::XmitSwLifetimeLimitDiscards => d.port_sw_lifetime_limit_discards,
            Counter::XmitSwHoqLifetimeLimitDiscards => d.port_sw_hoq_lifetime_limit_discards,
            _ => return None,
        }))
    }
}

/// infiniband_exporter's word for a switch port's or a CA port's metrics.
#[cfg(feature = "alloc")]
fn exporter_kind(switch: bool) -> &'static str {
    if switch { "switch" } else { "hca" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_is_indexed_by_its_discriminant() {
        for (i, c) in Counter::EVERY.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?}");
        }
        assert_eq!(
            Counter::ALL.len() + Counter::DETAILS.len(),
            Counter::EVERY.len()
        );
        assert!(Counter::ALL.iter().all(|c| !c.exporter_stem().is_empty()));
        assert!(
            Counter::DETAILS
                .iter()
                .all(|c| c.exporter_stem().is_empty())
        );
    }

    #[test]
    fn each_counter_lives_in_the_attributes_that_select_it() {
        let pc = PortCounters::default();
        let e = PortCountersExtended::default();
        for c in Counter::COUNTER_SELECT {
            assert!(c.of_counters(&pc).is_some(), "{c:?}");
        }
        for c in Counter::EXT_COUNTER_SELECT
            .iter()
            .chain(&Counter::EXT_COUNTER_SELECT2)
        {
            assert!(c.of_extended(&e).is_some(), "{c:?}");
        }
        for c in Counter::ALL {
            assert!(c.of_extended(&e).is_some(), "{c:?}");
        }
        let r = PortRcvErrorDetails::default();
        let x = PortXmitDiscardDetails::default();
        for c in Counter::RCV_ERROR_DETAILS_SELECT {
            assert!(c.of_rcv_error_details(&r).is_some(), "{c:?}");
        }
        for c in Counter::XMIT_DISCARD_DETAILS_SELECT {
            assert!(c.of_xmit_discard_details(&x).is_some(), "{c:?}");
        }
        assert!(
            Counter::DETAILS.iter().eq(Counter::RCV_ERROR_DETAILS_SELECT
                .iter()
                .chain(&Counter::XMIT_DISCARD_DETAILS_SELECT))
        );
    }
}
