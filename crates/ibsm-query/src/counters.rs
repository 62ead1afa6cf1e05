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
        let wide = |e: fn(&PortCountersExtended) -> u64, b: fn(&PortCounters) -> u32| {
            ext.map(e).or_else(|| pc.map(|p| u64::from(b(p))))
        };
        let basic = |f: fn(&PortCounters) -> u64| pc.map(f);
        for &c in Counter::ALL {
            s.values[c as usize] = match c {
                Counter::XmitData => wide(|e| e.port_xmit_data, |p| p.port_xmit_data),
                Counter::RcvData => wide(|e| e.port_rcv_data, |p| p.port_rcv_data),
                Counter::XmitPkts => wide(|e| e.port_xmit_pkts, |p| p.port_xmit_pkts),
                Counter::RcvPkts => wide(|e| e.port_rcv_pkts, |p| p.port_rcv_pkts),
                Counter::UnicastXmitPkts => ext.map(|e| e.port_unicast_xmit_pkts),
                Counter::UnicastRcvPkts => ext.map(|e| e.port_unicast_rcv_pkts),
                Counter::MulticastXmitPkts => ext.map(|e| e.port_multicast_xmit_pkts),
                Counter::MulticastRcvPkts => ext.map(|e| e.port_multicast_rcv_pkts),
                Counter::SymbolErrors => basic(|p| p.symbol_error_counter.into()),
                Counter::LinkErrorRecovery => basic(|p| p.link_error_recovery_counter.into()),
                Counter::LinkDowned => basic(|p| p.link_downed_counter.into()),
                Counter::RcvErrors => basic(|p| p.port_rcv_errors.into()),
                Counter::RcvRemotePhysicalErrors => {
                    basic(|p| p.port_rcv_remote_physical_errors.into())
                }
                Counter::RcvSwitchRelayErrors => basic(|p| p.port_rcv_switch_relay_errors.into()),
                Counter::XmitDiscards => basic(|p| p.port_xmit_discards.into()),
                Counter::XmitConstraintErrors => basic(|p| p.port_xmit_constraint_errors.into()),
                Counter::RcvConstraintErrors => basic(|p| p.port_rcv_constraint_errors.into()),
                Counter::LocalLinkIntegrityErrors => {
                    basic(|p| p.local_link_integrity_errors.into())
                }
                Counter::ExcessiveBufferOverrunErrors => {
                    basic(|p| p.excessive_buffer_overrun_errors.into())
                }
                Counter::Vl15Dropped => basic(|p| p.vl15_dropped.into()),
                Counter::Qp1Dropped => basic(|p| p.qp1_dropped().into()),
                Counter::XmitWait => basic(|p| p.port_xmit_wait.into()),
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
    fn names_are_perfquerys_and_the_exporters() {
        assert_eq!(Counter::ALL.len(), 22);
        let names: std::collections::HashSet<_> =
            Counter::ALL.iter().map(|c| c.perfquery_name()).collect();
        assert_eq!(names.len(), Counter::ALL.len());
        assert_eq!(Counter::XmitDiscards.exporter_stem(), "transmit_discards");
        assert!(Counter::LinkDowned.is_error() && !Counter::XmitWait.is_error());
    }
}
