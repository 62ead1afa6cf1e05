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

pub use ibsm_wire::perf::Counter;

/// Whether a [`PortSample`] takes `c` from PortCountersExtended where that was read:
/// the traffic counters (64 bits wide there, its CounterSelect). The error counters
/// come from PortCounters, which every agent has.
fn extended_first(c: Counter) -> bool {
    Counter::EXT_COUNTER_SELECT.contains(&c)
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
            // `Counter::ALL` is the first N of `Counter::EVERY`: `c as usize` < N.
            s.values[c as usize] = if extended_first(c) {
                ext.and_then(|e| c.of_extended(e)).or(basic)
            } else {
                basic
            };
        }
        s
    }

    /// Counter `c`, `None` when it was not read (always for the detail counters,
    /// which a sample does not hold).
    #[must_use]
    pub fn get(&self, c: Counter) -> Option<u64> {
        self.values.get(c as usize).copied().flatten()
    }

    /// Sets counter `c` (one of [`Counter::ALL`]; a detail counter is not kept).
    pub fn set(&mut self, c: Counter, value: Option<u64>) {
        if let Some(v) = self.values.get_mut(c as usize) {
            *v = value;
        }
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
            assert_eq!(by_name(name).of_extended(&ext), Some(v), "{name}");
        }
        // A sample: traffic from the extended attribute, errors from PortCounters.
        let s = PortSample::from_parts(Some(&pc), Some(&ext));
        for (name, v) in basic {
            let c = by_name(name);
            let want = if c.is_error() || c == Counter::XmitWait {
                Some(v)
            } else {
                c.of_extended(&ext)
            };
            assert_eq!(s.get(c), want, "{name}");
        }
        for name in only_extended {
            let c = by_name(name);
            assert_eq!(s.get(c), c.of_extended(&ext), "{name}");
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
