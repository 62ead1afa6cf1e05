//! One port's counters as a single set of 64-bit values, whatever attributes they were
//! read from: the 64-bit PortCountersExtended traffic counters where the agent has
//! them, PortCounters' otherwise, and the error counters of PortCounters. Tools (an
//! exporter, the SM's PerfMgr) name, compare and subtract them through this one type
//! instead of each knowing which attribute holds which counter.
//!
//! ```
//! use ibsm_query::counters::{Counter, PortSample};
//! use ibsm_wire::perf::PortCounters;
//!
//! let before = PortSample::from_counters(&PortCounters { symbol_error_counter: 3, ..Default::default() });
//! let after = PortSample::from_counters(&PortCounters { symbol_error_counter: 10, ..Default::default() });
//! assert_eq!(after.delta_since(&before).get(Counter::SymbolErrors), Some(7));
//! assert_eq!(Counter::SymbolErrors.perfquery_name(), "SymbolErrorCounter");
//! ```

use ibsm_wire::perf::{PortCounters, PortCountersExtended};

use crate::perf::PortReading;

macro_rules! counters {
    ($($(#[$m:meta])* $v:ident => $name:literal, $stem:literal, $error:literal;)*) => {
        /// A port counter, by the name `perfquery` prints.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        #[non_exhaustive]
        pub enum Counter {
            $($(#[$m])* $v,)*
        }

        impl Counter {
            /// Every counter, in `perfquery -x` order (traffic, then errors).
            pub const ALL: &'static [Counter] = &[$(Counter::$v,)*];

            /// The name `perfquery` prints (`SymbolErrorCounter`, `PortXmitData`, ...).
            #[must_use]
            pub fn perfquery_name(self) -> &'static str {
                match self { $(Counter::$v => $name,)* }
            }

            /// The stem of treydock/infiniband_exporter's metric
            /// (`infiniband_{switch,hca}_port_<stem>_total`).
            #[must_use]
            pub fn exporter_stem(self) -> &'static str {
                match self { $(Counter::$v => $stem,)* }
            }

            /// Whether it counts data in 4-byte words (PortXmitData, PortRcvData), as
            /// the agent and `perfquery` do; multiply by 4 for bytes.
            #[must_use]
            pub fn is_data_words(self) -> bool {
                matches!(self, Counter::XmitData | Counter::RcvData)
            }

            /// Whether it counts errors (rather than traffic or congestion).
            #[must_use]
            pub fn is_error(self) -> bool {
                match self { $(Counter::$v => $error,)* }
            }

            /// The family of infiniband_exporter's metric for a switch port
            /// (`infiniband_switch_port_<stem>`) or a CA port
            /// (`infiniband_hca_port_<stem>`); its samples are `<family>_total`.
            #[must_use]
            pub fn exporter_family(self, switch: bool) -> String {
                format!("infiniband_{}_port_{}", exporter_kind(switch), self.exporter_stem())
            }

            /// The HELP text of that family (`Infiniband switch port PortXmitData`).
            #[must_use]
            pub fn exporter_help(self, switch: bool) -> String {
                format!("Infiniband {} port {}", exporter_kind(switch), self.perfquery_name())
            }

            /// What the exporter reports for a reading `value` of this counter: data
            /// in bytes (4 per word, saturating), every other counter as read.
            #[must_use]
            pub fn exporter_value(self, value: u64) -> u64 {
                if self.is_data_words() {
                    value.saturating_mul(4)
                } else {
                    value
                }
            }
        }
    };
}

counters! {
    /// PortXmitData (4-byte words).
    XmitData => "PortXmitData", "transmit_data_bytes", false;
    /// PortRcvData (4-byte words).
    RcvData => "PortRcvData", "receive_data_bytes", false;
    /// PortXmitPkts.
    XmitPkts => "PortXmitPkts", "transmit_packets", false;
    /// PortRcvPkts.
    RcvPkts => "PortRcvPkts", "receive_packets", false;
    /// PortUnicastXmitPkts (PortCountersExtended only).
    UnicastXmitPkts => "PortUnicastXmitPkts", "unicast_transmit_packets", false;
    /// PortUnicastRcvPkts (PortCountersExtended only).
    UnicastRcvPkts => "PortUnicastRcvPkts", "unicast_receive_packets", false;
    /// PortMulticastXmitPkts (PortCountersExtended only).
    MulticastXmitPkts => "PortMulticastXmitPkts", "multicast_transmit_packets", false;
    /// PortMulticastRcvPkts (PortCountersExtended only).
    MulticastRcvPkts => "PortMulticastRcvPkts", "multicast_receive_packets", false;
    /// SymbolErrorCounter.
    SymbolErrors => "SymbolErrorCounter", "symbol_error", true;
    /// LinkErrorRecoveryCounter.
    LinkErrorRecovery => "LinkErrorRecoveryCounter", "link_error_recovery", true;
    /// LinkDownedCounter.
    LinkDowned => "LinkDownedCounter", "link_downed", true;
    /// PortRcvErrors.
    RcvErrors => "PortRcvErrors", "receive_errors", true;
    /// PortRcvRemotePhysicalErrors.
    RcvRemotePhysicalErrors => "PortRcvRemotePhysicalErrors", "receive_remote_physical_errors", true;
    /// PortRcvSwitchRelayErrors.
    RcvSwitchRelayErrors => "PortRcvSwitchRelayErrors", "receive_switch_relay_errors", true;
    /// PortXmitDiscards.
    XmitDiscards => "PortXmitDiscards", "transmit_discards", true;
    /// PortXmitConstraintErrors.
    XmitConstraintErrors => "PortXmitConstraintErrors", "transmit_constraint_errors", true;
    /// PortRcvConstraintErrors.
    RcvConstraintErrors => "PortRcvConstraintErrors", "receive_constraint_errors", true;
    /// LocalLinkIntegrityErrors.
    LocalLinkIntegrityErrors => "LocalLinkIntegrityErrors", "local_link_integrity_errors", true;
    /// ExcessiveBufferOverrunErrors.
    ExcessiveBufferOverrunErrors => "ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors", true;
    /// VL15Dropped.
    Vl15Dropped => "VL15Dropped", "vl15_dropped", true;
    /// QP1Dropped (the same bits as VL15Dropped, on agents with QP1Dropped).
    Qp1Dropped => "QP1Dropped", "qp1_dropped", true;
    /// PortXmitWait (ticks with data to send and no credits: congestion, not errors).
    XmitWait => "PortXmitWait", "transmit_wait", false;
}

/// infiniband_exporter's word for a switch port's or a CA port's metrics.
fn exporter_kind(switch: bool) -> &'static str {
    if switch { "switch" } else { "hca" }
}

impl Counter {
    /// This counter as a PortCounters holds it; `None` for the unicast and multicast
    /// packet counters, which only PortCountersExtended has.
    #[must_use]
    pub fn of_counters(self, pc: &PortCounters) -> Option<u64> {
        Some(match self {
            Counter::XmitData => pc.port_xmit_data.into(),
            Counter::RcvData => pc.port_rcv_data.into(),
            Counter::XmitPkts => pc.port_xmit_pkts.into(),
            Counter::RcvPkts => pc.port_rcv_pkts.into(),
            Counter::UnicastXmitPkts
            | Counter::UnicastRcvPkts
            | Counter::MulticastXmitPkts
            | Counter::MulticastRcvPkts => return None,
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
        })
    }

    /// This counter as a PortCountersExtended holds it. Its error counters (from
    /// SymbolErrors on) mean something only where the agent has
    /// [`PmCapabilityMask2::ADDITIONAL_EXT_COUNTERS`](ibsm_wire::perf::PmCapabilityMask2::ADDITIONAL_EXT_COUNTERS).
    #[must_use]
    pub fn of_extended(self, e: &PortCountersExtended) -> u64 {
        match self {
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
        }
    }

    /// Whether a [`PortSample`] takes it from PortCountersExtended where that was read:
    /// the traffic counters (64 bits wide there). The error counters come from
    /// PortCounters, which every agent has.
    fn extended_first(self) -> bool {
        matches!(
            self,
            Counter::XmitData
                | Counter::RcvData
                | Counter::XmitPkts
                | Counter::RcvPkts
                | Counter::UnicastXmitPkts
                | Counter::UnicastRcvPkts
                | Counter::MulticastXmitPkts
                | Counter::MulticastRcvPkts
        )
    }
}

const N: usize = Counter::ALL.len();

/// One port's counters; a counter the agent does not have (the unicast and multicast
/// packets without PortCountersExtended) is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PortSample {
    values: [Option<u64>; N],
}

impl PortSample {
    /// The counters of a PortCounters alone.
    #[must_use]
    pub fn from_counters(pc: &PortCounters) -> Self {
        Self::from_parts(Some(pc), None)
    }

    /// The counters of a reading: PortCountersExtended's 64-bit traffic counters where
    /// read, PortCounters for the rest; `None` when neither was read.
    #[must_use]
    pub fn from_reading(r: &PortReading) -> Option<Self> {
        let pc = r.counters.as_ref().ok();
        let ext = r.extended.as_ref().and_then(|e| e.as_ref().ok());
        (pc.is_some() || ext.is_some()).then(|| Self::from_parts(pc, ext))
    }

    /// The counters of either attribute or both (the extended one wins for traffic).
    #[must_use]
    pub fn from_parts(pc: Option<&PortCounters>, ext: Option<&PortCountersExtended>) -> Self {
        let mut s = Self::default();
        for &c in Counter::ALL {
            let basic = pc.and_then(|p| c.of_counters(p));
            s.values[c as usize] = if c.extended_first() {
                ext.map(|e| c.of_extended(e)).or(basic)
            } else {
                basic
            };
        }
        s
    }

    /// Counter `c`, `None` when it was not read.
    #[must_use]
    pub fn get(&self, c: Counter) -> Option<u64> {
        self.values[c as usize]
    }

    /// Sets counter `c`.
    pub fn set(&mut self, c: Counter, value: Option<u64>) {
        self.values[c as usize] = value;
    }

    /// Every counter that was read, in [`Counter::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Counter, u64)> + '_ {
        Counter::ALL
            .iter()
            .filter_map(|&c| self.get(c).map(|v| (c, v)))
    }

    /// What each counter grew by since `earlier`. A counter below its earlier value
    /// was reset (or its agent restarted) in between, so all of it is new; counters
    /// saturate rather than wrap, so this is never a wrap-around. `None` where either
    /// reading lacks the counter.
    #[must_use]
    pub fn delta_since(&self, earlier: &Self) -> Self {
        let mut d = Self::default();
        for &c in Counter::ALL {
            d.values[c as usize] = match (self.get(c), earlier.get(c)) {
                (Some(now), Some(then)) => Some(now.checked_sub(then).unwrap_or(now)),
                _ => None,
            };
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_traffic_wins_and_errors_come_from_port_counters() {
        let pc = PortCounters {
            port_xmit_data: 7,
            symbol_error_counter: 5,
            vl15_dropped: 2,
            ..PortCounters::default()
        };
        let ext = PortCountersExtended {
            port_xmit_data: 1 << 40,
            port_unicast_rcv_pkts: 9,
            ..PortCountersExtended::default()
        };
        let s = PortSample::from_parts(Some(&pc), Some(&ext));
        assert_eq!(s.get(Counter::XmitData), Some(1 << 40));
        assert_eq!(s.get(Counter::UnicastRcvPkts), Some(9));
        assert_eq!(s.get(Counter::SymbolErrors), Some(5));
        assert_eq!(s.get(Counter::Vl15Dropped), Some(2));
        let basic = PortSample::from_counters(&pc);
        assert_eq!(basic.get(Counter::XmitData), Some(7));
        assert_eq!(basic.get(Counter::UnicastRcvPkts), None);
        assert_eq!(basic.iter().count(), Counter::ALL.len() - 4);
    }

    #[test]
    fn a_delta_counts_a_reset_counter_from_zero() {
        let mut a = PortSample::default();
        let mut b = PortSample::default();
        a.set(Counter::RcvErrors, Some(10));
        b.set(Counter::RcvErrors, Some(25));
        a.set(Counter::LinkDowned, Some(9));
        b.set(Counter::LinkDowned, Some(2));
        a.set(Counter::XmitData, Some(1));
        let d = b.delta_since(&a);
        assert_eq!(d.get(Counter::RcvErrors), Some(15));
        assert_eq!(d.get(Counter::LinkDowned), Some(2));
        assert_eq!(d.get(Counter::XmitData), None);
    }

    #[cfg(feature = "serde")]
    #[test]
    fn samples_and_the_wire_counters_round_trip_through_json() {
        let pc = PortCounters {
            symbol_error_counter: 5,
            port_xmit_data: 99,
            counter_select: ibsm_wire::perf::CounterSelect::ERRORS,
            ..PortCounters::default()
        };
        let ext = PortCountersExtended {
            port_rcv_data: u64::MAX,
            ..PortCountersExtended::default()
        };
        let s = PortSample::from_parts(Some(&pc), Some(&ext));
        let back: PortSample = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        let back: PortCounters =
            serde_json::from_str(&serde_json::to_string(&pc).unwrap()).unwrap();
        assert_eq!(back, pc);
        let back: PortCountersExtended =
            serde_json::from_str(&serde_json::to_string(&ext).unwrap()).unwrap();
        assert_eq!(back, ext);
        let c: Counter = serde_json::from_str("\"LinkDowned\"").unwrap();
        assert_eq!(c, Counter::LinkDowned);
    }

    #[test]
    fn each_counter_reads_its_own_field() {
        // Every field a value of its own, so a counter reading a neighbour's shows.
        let pc = PortCounters {
            symbol_error_counter: 1,
            link_error_recovery_counter: 2,
            link_downed_counter: 3,
            port_rcv_errors: 4,
            port_rcv_remote_physical_errors: 5,
            port_rcv_switch_relay_errors: 6,
            port_xmit_discards: 7,
            port_xmit_constraint_errors: 8,
            port_rcv_constraint_errors: 9,
            local_link_integrity_errors: 10,
            excessive_buffer_overrun_errors: 11,
            vl15_dropped: 12,
            port_xmit_data: 13,
            port_rcv_data: 14,
            port_xmit_pkts: 15,
            port_rcv_pkts: 16,
            port_xmit_wait: 17,
            ..PortCounters::default()
        };
        let ext = PortCountersExtended {
            port_xmit_data: 101,
            port_rcv_data: 102,
            port_xmit_pkts: 103,
            port_rcv_pkts: 104,
            port_unicast_xmit_pkts: 105,
            port_unicast_rcv_pkts: 106,
            port_multicast_xmit_pkts: 107,
            port_multicast_rcv_pkts: 108,
            symbol_error_counter: 109,
            link_error_recovery_counter: 110,
            link_downed_counter: 111,
            port_rcv_errors: 112,
            port_rcv_remote_physical_errors: 113,
            port_rcv_switch_relay_errors: 114,
            port_xmit_discards: 115,
            port_xmit_constraint_errors: 116,
            port_rcv_constraint_errors: 117,
            local_link_integrity_errors: 118,
            excessive_buffer_overrun_errors: 119,
            vl15_dropped: 120,
            port_xmit_wait: 121,
            qp1_dropped: 122,
            ..PortCountersExtended::default()
        };
        let by_name = |name: &str| {
            *Counter::ALL
                .iter()
                .find(|c| c.perfquery_name() == name)
                .unwrap()
        };
        let basic = [
            ("SymbolErrorCounter", 1),
            ("LinkErrorRecoveryCounter", 2),
            ("LinkDownedCounter", 3),
            ("PortRcvErrors", 4),
            ("PortRcvRemotePhysicalErrors", 5),
            ("PortRcvSwitchRelayErrors", 6),
            ("PortXmitDiscards", 7),
            ("PortXmitConstraintErrors", 8),
            ("PortRcvConstraintErrors", 9),
            ("LocalLinkIntegrityErrors", 10),
            ("ExcessiveBufferOverrunErrors", 11),
            ("VL15Dropped", 12),
            ("QP1Dropped", 12),
            ("PortXmitData", 13),
            ("PortRcvData", 14),
            ("PortXmitPkts", 15),
            ("PortRcvPkts", 16),
            ("PortXmitWait", 17),
        ];
        for (name, v) in basic {
            assert_eq!(by_name(name).of_counters(&pc), Some(v), "{name}");
        }
        let only_extended = [
            "PortUnicastXmitPkts",
            "PortUnicastRcvPkts",
            "PortMulticastXmitPkts",
            "PortMulticastRcvPkts",
        ];
        for name in only_extended {
            assert_eq!(by_name(name).of_counters(&pc), None, "{name}");
        }
        assert_eq!(basic.len() + only_extended.len(), Counter::ALL.len());
        let extended = [
            "PortXmitData",
            "PortRcvData",
            "PortXmitPkts",
            "PortRcvPkts",
            "PortUnicastXmitPkts",
            "PortUnicastRcvPkts",
            "PortMulticastXmitPkts",
            "PortMulticastRcvPkts",
            "SymbolErrorCounter",
            "LinkErrorRecoveryCounter",
            "LinkDownedCounter",
            "PortRcvErrors",
            "PortRcvRemotePhysicalErrors",
            "PortRcvSwitchRelayErrors",
            "PortXmitDiscards",
            "PortXmitConstraintErrors",
            "PortRcvConstraintErrors",
            "LocalLinkIntegrityErrors",
            "ExcessiveBufferOverrunErrors",
            "VL15Dropped",
            "PortXmitWait",
            "QP1Dropped",
        ];
        for (name, v) in extended.iter().zip(101..) {
            assert_eq!(by_name(name).of_extended(&ext), v, "{name}");
        }
        // A sample: traffic from the extended attribute, errors from PortCounters.
        let s = PortSample::from_parts(Some(&pc), Some(&ext));
        for (name, v) in basic {
            let c = by_name(name);
            let want = if c.is_error() || c == Counter::XmitWait {
                v
            } else {
                c.of_extended(&ext)
            };
            assert_eq!(s.get(c), Some(want), "{name}");
        }
        for name in only_extended {
            let c = by_name(name);
            assert_eq!(s.get(c), Some(c.of_extended(&ext)), "{name}");
        }
    }

    #[test]
    fn exporter_families_help_and_values() {
        assert_eq!(
            Counter::XmitData.exporter_family(true),
            "infiniband_switch_port_transmit_data_bytes"
        );
        assert_eq!(
            Counter::SymbolErrors.exporter_family(false),
            "infiniband_hca_port_symbol_error"
        );
        assert_eq!(
            Counter::RcvPkts.exporter_help(true),
            "Infiniband switch port PortRcvPkts"
        );
        assert_eq!(
            Counter::LinkDowned.exporter_help(false),
            "Infiniband hca port LinkDownedCounter"
        );
        assert_eq!(Counter::XmitData.exporter_value(5), 20);
        assert_eq!(Counter::RcvData.exporter_value(u64::MAX), u64::MAX);
        assert_eq!(Counter::XmitPkts.exporter_value(5), 5);
        assert_eq!(Counter::SymbolErrors.exporter_value(7), 7);
    }

    #[test]
    fn names_are_perfquerys_and_the_exporters() {
        assert_eq!(Counter::ALL.len(), 22);
        let names: std::collections::HashSet<_> =
            Counter::ALL.iter().map(|c| c.perfquery_name()).collect();
        assert_eq!(names.len(), Counter::ALL.len());
        assert_eq!(Counter::XmitDiscards.exporter_stem(), "transmit_discards");
        assert!(Counter::LinkDowned.is_error() && !Counter::XmitWait.is_error());
    }
}
