//! [`Counter`]: every port counter of the PerfMgt class once, with what each tool and
//! agent needs to know of it: the name `perfquery` prints, infiniband_exporter's metric
//! stem, whether it counts errors, its width in the narrow attribute, the attribute field
//! that holds it and the CounterSelect bit that names it.

use super::{PortCounters, PortCountersExtended, PortRcvErrorDetails, PortXmitDiscardDetails};
use crate::field::{Field, FieldDesc, FieldValue, WireStruct, find_field};

macro_rules! counters {
    ($($(#[$m:meta])* $v:ident => $name:literal, $stem:literal, $error:literal, $field:literal;)*) => {
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

            /// The field that holds it in each attribute that has it (PortCounters,
            /// PortCountersExtended, its detail attribute): the same name in each.
            #[must_use]
            pub const fn field(self) -> &'static str {
                match self { $(Counter::$v => $field,)* }
            }
        }
    };
}

counters! {
    /// PortXmitData (4-byte words).
    XmitData => "PortXmitData", "transmit_data_bytes", false, "port_xmit_data";
    /// PortRcvData (4-byte words).
    RcvData => "PortRcvData", "receive_data_bytes", false, "port_rcv_data";
    /// PortXmitPkts.
    XmitPkts => "PortXmitPkts", "transmit_packets", false, "port_xmit_pkts";
    /// PortRcvPkts.
    RcvPkts => "PortRcvPkts", "receive_packets", false, "port_rcv_pkts";
    /// PortUnicastXmitPkts (PortCountersExtended only).
    UnicastXmitPkts => "PortUnicastXmitPkts", "unicast_transmit_packets", false, "port_unicast_xmit_pkts";
    /// PortUnicastRcvPkts (PortCountersExtended only).
    UnicastRcvPkts => "PortUnicastRcvPkts", "unicast_receive_packets", false, "port_unicast_rcv_pkts";
    /// PortMulticastXmitPkts (PortCountersExtended only).
    MulticastXmitPkts => "PortMulticastXmitPkts", "multicast_transmit_packets", false, "port_multicast_xmit_pkts";
    /// PortMulticastRcvPkts (PortCountersExtended only).
    MulticastRcvPkts => "PortMulticastRcvPkts", "multicast_receive_packets", false, "port_multicast_rcv_pkts";
    /// SymbolErrorCounter.
    SymbolErrors => "SymbolErrorCounter", "symbol_error", true, "symbol_error_counter";
    /// LinkErrorRecoveryCounter.
    LinkErrorRecovery => "LinkErrorRecoveryCounter", "link_error_recovery", true, "link_error_recovery_counter";
    /// LinkDownedCounter.
    LinkDowned => "LinkDownedCounter", "link_downed", true, "link_downed_counter";
    /// PortRcvErrors.
    RcvErrors => "PortRcvErrors", "receive_errors", true, "port_rcv_errors";
    /// PortRcvRemotePhysicalErrors.
    RcvRemotePhysicalErrors => "PortRcvRemotePhysicalErrors", "receive_remote_physical_errors", true, "port_rcv_remote_physical_errors";
    /// PortRcvSwitchRelayErrors.
    RcvSwitchRelayErrors => "PortRcvSwitchRelayErrors", "receive_switch_relay_errors", true, "port_rcv_switch_relay_errors";
    /// PortXmitDiscards.
    XmitDiscards => "PortXmitDiscards", "transmit_discards", true, "port_xmit_discards";
    /// PortXmitConstraintErrors.
    XmitConstraintErrors => "PortXmitConstraintErrors", "transmit_constraint_errors", true, "port_xmit_constraint_errors";
    /// PortRcvConstraintErrors.
    RcvConstraintErrors => "PortRcvConstraintErrors", "receive_constraint_errors", true, "port_rcv_constraint_errors";
    /// LocalLinkIntegrityErrors.
    LocalLinkIntegrityErrors => "LocalLinkIntegrityErrors", "local_link_integrity_errors", true, "local_link_integrity_errors";
    /// ExcessiveBufferOverrunErrors.
    ExcessiveBufferOverrunErrors => "ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors", true, "excessive_buffer_overrun_errors";
    /// VL15Dropped.
    Vl15Dropped => "VL15Dropped", "vl15_dropped", true, "vl15_dropped";
    /// QP1Dropped (the same bits as VL15Dropped in PortCounters, on agents with
    /// QP1Dropped; its own 64 bits in PortCountersExtended).
    Qp1Dropped => "QP1Dropped", "qp1_dropped", true, "qp1_dropped";
    /// PortXmitWait (ticks with data to send and no credits: congestion, not errors).
    XmitWait => "PortXmitWait", "transmit_wait", false, "port_xmit_wait";
    /// PortRcvErrorDetails.PortLocalPhysicalErrors.
    RcvLocalPhysicalErrors => "PortLocalPhysicalErrors", "", true, "port_local_physical_errors";
    /// PortRcvErrorDetails.PortMalformedPktErrors.
    RcvMalformedPacketErrors => "PortMalformedPktErrors", "", true, "port_malformed_packet_errors";
    /// PortRcvErrorDetails.PortBufferOverrunErrors.
    RcvBufferOverrunErrors => "PortBufferOverrunErrors", "", true, "port_buffer_overrun_errors";
    /// PortRcvErrorDetails.PortDLIDMappingErrors.
    RcvDlidMappingErrors => "PortDLIDMappingErrors", "", true, "port_dlid_mapping_errors";
    /// PortRcvErrorDetails.PortVLMappingErrors.
    RcvVlMappingErrors => "PortVLMappingErrors", "", true, "port_vl_mapping_errors";
    /// PortRcvErrorDetails.PortLoopingErrors.
    RcvLoopingErrors => "PortLoopingErrors", "", true, "port_looping_errors";
    /// PortXmitDiscardDetails.PortInactiveDiscards.
    XmitInactiveDiscards => "PortInactiveDiscards", "", true, "port_inactive_discards";
    /// PortXmitDiscardDetails.PortNeighborMTUDiscards.
    XmitNeighborMtuDiscards => "PortNeighborMTUDiscards", "", true, "port_neighbor_mtu_discards";
    /// PortXmitDiscardDetails.PortSwLifetimeLimitDiscards.
    XmitSwLifetimeLimitDiscards => "PortSwLifetimeLimitDiscards", "", true, "port_sw_lifetime_limit_discards";
    /// PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards.
    XmitSwHoqLifetimeLimitDiscards => "PortSwHOQLifetimeLimitDiscards", "", true, "port_sw_hoq_lifetime_limit_discards";
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

    /// Its width in bits in PortCounters or its detail attribute (64 for the
    /// counters only PortCountersExtended has), as their field tables lay it out.
    #[must_use]
    pub const fn width(self) -> u32 {
        WIDTHS[self as usize]
    }

    /// Each of `counters` with the position of its field in the layout `fields`, for
    /// code that writes counter attributes as bytes: a `const fn`, so a table of them is
    /// resolved when the crate compiles, and a counter the layout lacks fails the build.
    ///
    /// ```
    /// use ibsm_wire::WireStruct;
    /// use ibsm_wire::perf::{Counter, PortCounters};
    ///
    /// const AT: [(Counter, ibsm_wire::Field); 1] =
    ///     Counter::positions(PortCounters::FIELDS, [Counter::LinkDowned]);
    /// // LinkDownedCounter: the byte after SymbolErrorCounter and LinkErrorRecoveryCounter.
    /// assert_eq!(AT[0].1, ibsm_wire::Field::new(7, 0, 8));
    /// ```
    ///
    /// # Panics
    /// When a counter has no field in `fields`: a build error in a `const`, a panic if
    /// called at run time.
    #[must_use]
    pub const fn positions<const N: usize>(
        fields: &[FieldDesc],
        counters: [Counter; N],
    ) -> [(Counter, Field); N] {
        let mut out = [(Counter::XmitData, Field::new(0, 0, 0)); N];
        let mut i = 0;
        while i < N {
            let Some(at) = find_field(fields, counters[i].field()) else {
                panic!("a counter the layout has no field for");
            };
            out[i] = (counters[i], at);
            i += 1;
        }
        out
    }

    /// Its value in a reading of `A` (PortCounters, PortCountersExtended or a detail
    /// attribute), widened; `None` when `A` has no field for it (QP1Dropped in
    /// PortCounters, whose bits it shares with VL15Dropped: [`Self::of_counters`] reads
    /// those).
    #[must_use]
    pub fn read<A: WireStruct>(self, a: &A) -> Option<u64> {
        match a.get_field(self.field())? {
            FieldValue::Uint(v) => Some(v),
            _ => None,
        }
    }

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
    /// PortCounters does not have. QP1Dropped reads the bits it shares with VL15Dropped
    /// there (see [`PortCounters::qp1_dropped`]).
    #[must_use]
    pub fn of_counters(self, pc: &PortCounters) -> Option<u64> {
        if self == Counter::Qp1Dropped {
            return Some(pc.qp1_dropped().into());
        }
        self.read(pc)
    }

    /// Its value in a PortCountersExtended reading; `None` for the detail counters.
    #[must_use]
    pub fn of_extended(self, e: &PortCountersExtended) -> Option<u64> {
        self.read(e)
    }

    /// Its value in a PortRcvErrorDetails reading; `None` for the other counters.
    #[must_use]
    pub fn of_rcv_error_details(self, d: &PortRcvErrorDetails) -> Option<u64> {
        self.read(d)
    }

    /// Its value in a PortXmitDiscardDetails reading; `None` for the other counters.
    #[must_use]
    pub fn of_xmit_discard_details(self, d: &PortXmitDiscardDetails) -> Option<u64> {
        self.read(d)
    }
}

/// Every counter's [`Counter::width`], in [`Counter::EVERY`] order: looked up in the
/// field tables when the crate compiles (the PMA narrows every counter it answers).
const WIDTHS: [u32; Counter::EVERY.len()] = {
    let narrow = [
        <PortCounters as WireStruct>::FIELDS,
        <PortRcvErrorDetails as WireStruct>::FIELDS,
        <PortXmitDiscardDetails as WireStruct>::FIELDS,
    ];
    let mut widths = [64; Counter::EVERY.len()];
    let mut c = 0;
    while c < widths.len() {
        let mut t = 0;
        while t < narrow.len() {
            if let Some(f) = find_field(narrow[t], Counter::EVERY[c].field()) {
                widths[c] = f.len as u32;
                break;
            }
            t += 1;
        }
        c += 1;
    }
    widths
};

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
    fn widths_come_from_the_field_tables() {
        let pinned = [
            (Counter::XmitData, 32),
            (Counter::RcvData, 32),
            (Counter::XmitPkts, 32),
            (Counter::RcvPkts, 32),
            (Counter::UnicastXmitPkts, 64),
            (Counter::UnicastRcvPkts, 64),
            (Counter::MulticastXmitPkts, 64),
            (Counter::MulticastRcvPkts, 64),
            (Counter::SymbolErrors, 16),
            (Counter::LinkErrorRecovery, 8),
            (Counter::LinkDowned, 8),
            (Counter::RcvErrors, 16),
            (Counter::RcvRemotePhysicalErrors, 16),
            (Counter::RcvSwitchRelayErrors, 16),
            (Counter::XmitDiscards, 16),
            (Counter::XmitConstraintErrors, 8),
            (Counter::RcvConstraintErrors, 8),
            (Counter::LocalLinkIntegrityErrors, 4),
            (Counter::ExcessiveBufferOverrunErrors, 4),
            (Counter::Vl15Dropped, 16),
            (Counter::Qp1Dropped, 64),
            (Counter::XmitWait, 32),
            (Counter::RcvLocalPhysicalErrors, 16),
            (Counter::RcvMalformedPacketErrors, 16),
            (Counter::RcvBufferOverrunErrors, 16),
            (Counter::RcvDlidMappingErrors, 16),
            (Counter::RcvVlMappingErrors, 16),
            (Counter::RcvLoopingErrors, 16),
            (Counter::XmitInactiveDiscards, 16),
            (Counter::XmitNeighborMtuDiscards, 16),
            (Counter::XmitSwLifetimeLimitDiscards, 16),
            (Counter::XmitSwHoqLifetimeLimitDiscards, 16),
        ];
        for (c, w) in pinned {
            assert_eq!(c.width(), w, "{c:?}");
        }
        assert_eq!(pinned.len(), Counter::EVERY.len());
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
