//! The performance agent: [`Pma`] answers PerfMgt (class 0x04) Get and Set from a
//! node's port counters, which the host drives ([`Pma::count_xmit`], [`Pma::add`], ...).
//!
//! Each port keeps one 64-bit count per [`Counter`]. PortCountersExtended shows the
//! counts as they are; PortCounters, PortRcvErrorDetails and PortXmitDiscardDetails show
//! each one clamped to its field width, so a narrow counter stops at its maximum instead
//! of wrapping (until a Set resets it). A Set resets the counters its CounterSelect
//! words select, in whichever attribute it is sent, and leaves the others alone; its
//! answer is the Get after the reset.
//!
//! PortSelect names the port; [`ALL_PORTS`] (0xFF) on a switch whose capability mask has
//! AllPortSelect reads the sum of the external ports (saturating) or resets every port.
//! A CA's ports are `1..=NumPorts`, a switch's `0..=NumPorts`.
//!
//! Choices where the spec leaves room:
//! * PortCounters and PortCountersExtended read the same counts (a reset through either
//!   clears both); data is counted in octets internally and shown as whole 4-byte words.
//! * PortExtendedSpeedsCounters is answered (all zero: the simulated links have no FEC)
//!   and its Set accepted.
//! * Bad PortSelect: status 0x001C; an unknown attribute or Set of ClassPortInfo:
//!   0x000C; a method other than Get/Set: 0x0008; a class version other than 1: 0x0004.
//!   Responses, base versions other than 1, other classes and short buffers are dropped.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use ibsm_wire::field::{find_field, set_uint};
use ibsm_wire::mad::{GS_DATA_OFFSET, METHOD_GET_RESP};
use ibsm_wire::perf::{
    ALL_PORTS, PERF_CLASS_VERSION, PerfAttributeId, PmCapabilityMask, PmCapabilityMask2,
    PortCounters, PortCountersExtended, PortExtendedSpeedsCounters, PortRcvErrorDetails,
    PortXmitDiscardDetails,
};
use ibsm_wire::{
    ClassPortInfo, Field, FieldType, FieldValue, GsMadView, Instant, MAD_SIZE, Method, MgmtClass,
    Status, WireStruct,
};

pub use ibsm_wire::perf::Counter;

/// Number of [`Counter`]s.
const N: usize = Counter::EVERY.len();

/// PortCounters.CounterSelect bit i selects this counter.
const PC_SELECT: [Counter; 16] = Counter::COUNTER_SELECT;

/// PortCountersExtended.CounterSelect bit i.
const EXT_SELECT: [Counter; 8] = Counter::EXT_COUNTER_SELECT;

/// PortCountersExtended.CounterSelect2 bit i.
const EXT_SELECT2: [Counter; 14] = Counter::EXT_COUNTER_SELECT2;

/// PortRcvErrorDetails.CounterSelect bit i.
const RCV_DETAIL_SELECT: [Counter; 6] = Counter::RCV_ERROR_DETAILS_SELECT;

/// PortXmitDiscardDetails.CounterSelect bit i.
const XMIT_DETAIL_SELECT: [Counter; 4] = Counter::XMIT_DISCARD_DETAILS_SELECT;

/// The counters every packet bumps ([`Pma::count_xmit`], [`Pma::count_rcv`]): the
/// eight PortCountersExtended.CounterSelect names.
const TRAFFIC: [Counter; 8] = EXT_SELECT;

/// Where each counter lives in a [`PortCounts`]: the [`TRAFFIC`] counters in the first
/// [`HOT`] slots (inline: hosts count every hop of every packet), the others after them
/// (in [`PortCounts::rare`]); the counters the traffic ones displace take their places.
const SLOT: [u8; N] = {
    let mut s = [0u8; N];
    let mut i = 0;
    while i < N {
        s[i] = i as u8;
        i += 1;
    }
    let mut k = 0;
    while k < TRAFFIC.len() {
        let c = TRAFFIC[k] as usize;
        // Swap counter `c` with whichever counter now sits in slot `k`.
        let mut j = 0;
        while s[j] as usize != k {
            j += 1;
        }
        s[j] = s[c];
        s[c] = k as u8;
        k += 1;
    }
    s
};

/// Slots held inline: the traffic counters.
const HOT: usize = TRAFFIC.len();

/// One port's counts: 64-bit, saturating, plus the octets short of a whole data word.
///
/// Only the traffic counters are inline (80 bytes a port): the error and discard
/// counters, zero on a healthy port, get their block at their first count. A simulated
/// fabric of 45,056 CAs has 340,000 ports; with every counter inline (320 bytes a
/// port) the counters alone took 102 MB of it.
#[derive(Debug, Clone, Default)]
struct PortCounts {
    /// Slots `0..HOT` (see [`SLOT`]).
    hot: [u64; HOT],
    /// Octets of PortXmitData / PortRcvData not yet a whole word (0..=3).
    rem: [u8; 2],
    /// Slots `HOT..N`, once one of them counted anything.
    rare: Option<Box<[u64; N - HOT]>>,
}

impl PortCounts {
    fn get(&self, c: Counter) -> u64 {
        let slot = usize::from(SLOT[c as usize]);
        match slot.checked_sub(HOT) {
            None => self.hot[slot],
            Some(r) => self.rare.as_ref().map_or(0, |b| b[r]),
        }
    }

    /// The slot of `c` to count in; `None` for a rare counter while nothing is counted
    /// (`alloc` false: adding nothing allocates nothing).
    #[inline]
    fn slot_mut(&mut self, c: Counter, alloc: bool) -> Option<&mut u64> {
        let slot = usize::from(SLOT[c as usize]);
        match slot.checked_sub(HOT) {
            None => Some(&mut self.hot[slot]),
            Some(r) if alloc => {
                Some(&mut self.rare.get_or_insert_with(|| Box::new([0; N - HOT]))[r])
            }
            Some(r) => self.rare.as_mut().map(|b| &mut b[r]),
        }
    }

    /// Clamped to the narrow attribute's width.
    fn narrow(&self, c: Counter) -> u64 {
        self.get(c).min(c.narrow_max())
    }

    #[inline]
    fn add(&mut self, c: Counter, n: u64) {
        if let Some(v) = self.slot_mut(c, n > 0) {
            *v = v.saturating_add(n);
        }
    }

    #[inline]
    fn add_octets(&mut self, c: Counter, octets: u64) {
        let i = usize::from(c == Counter::RcvData);
        let rem = u64::from(self.rem[i]);
        let (words, left) = match octets.checked_add(rem) {
            Some(total) => (total / 4, total % 4),
            // Past 2^64 octets: the words still fit (the count saturates anyway).
            None => {
                let total = u128::from(rem) + u128::from(octets);
                (
                    u64::try_from(total / 4).unwrap_or(u64::MAX),
                    (total % 4) as u64,
                )
            }
        };
        self.rem[i] = left as u8;
        self.add(c, words);
    }

    fn reset(&mut self, c: Counter) {
        if let Some(v) = self.slot_mut(c, false) {
            *v = 0;
        }
        match c {
            Counter::XmitData => self.rem[0] = 0,
            Counter::RcvData => self.rem[1] = 0,
            _ => {}
        }
    }

    fn sum(&mut self, other: &Self) {
        for (a, b) in self.hot.iter_mut().zip(other.hot.iter()) {
            *a = a.saturating_add(*b);
        }
        if let Some(o) = &other.rare {
            let mine = self.rare.get_or_insert_with(|| Box::new([0; N - HOT]));
            for (a, b) in mine.iter_mut().zip(o.iter()) {
                *a = a.saturating_add(*b);
            }
        }
    }
}

/// What a performance agent is: its node's shape and capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PmaConfig {
    /// A switch (ports `0..=num_ports`) or a CA/router (ports `1..=num_ports`).
    pub is_switch: bool,
    /// NumPorts of the node.
    pub num_ports: u8,
    /// ClassPortInfo.CapabilityMask.
    pub capability_mask: PmCapabilityMask,
    /// ClassPortInfo.CapabilityMask2.
    pub capability_mask2: PmCapabilityMask2,
    /// ClassPortInfo.RespTimeValue.
    pub resp_time_value: u8,
}

impl PmaConfig {
    /// A CA's agent: PortXmitWait, PortCountersExtended with the IETF counters and the
    /// additional (error) extended counters.
    #[must_use]
    pub fn ca(num_ports: u8) -> Self {
        Self {
            is_switch: false,
            num_ports,
            capability_mask: PmCapabilityMask::XMIT_WAIT
                | PmCapabilityMask::EXT_WIDTH
                | PmCapabilityMask::CAP_MASK2,
            capability_mask2: PmCapabilityMask2::ADDITIONAL_EXT_COUNTERS,
            resp_time_value: 18,
        }
    }

    /// A switch's agent: as a CA's, plus AllPortSelect.
    #[must_use]
    pub fn switch(num_ports: u8) -> Self {
        let mut c = Self::ca(num_ports);
        c.is_switch = true;
        c.capability_mask |= PmCapabilityMask::ALL_PORT_SELECT;
        c
    }
}

/// Which port(s) a request names.
#[derive(Debug, Clone, Copy)]
enum Sel {
    One(usize),
    All,
}

/// Counts of what the agent saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PmaStats {
    /// MADs given to `handle`.
    pub received: u64,
    /// Answers produced (with any status).
    pub responded: u64,
    /// MADs dropped without an answer.
    pub dropped: u64,
}

/// A node's performance agent; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct Pma {
    cfg: PmaConfig,
    /// Index = port number (a CA's index 0 is unused).
    ports: Vec<PortCounts>,
    now: Instant,
    stats: PmaStats,
}

impl Pma {
    /// An agent with every counter zero.
    #[must_use]
    pub fn new(cfg: PmaConfig) -> Self {
        Self {
            ports: vec![PortCounts::default(); usize::from(cfg.num_ports) + 1],
            cfg,
            now: Instant::ZERO,
            stats: PmaStats::default(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &PmaConfig {
        &self.cfg
    }

    /// What the agent saw.
    #[must_use]
    pub fn stats(&self) -> PmaStats {
        self.stats
    }

    fn valid_port(&self, port: u8) -> bool {
        port <= self.cfg.num_ports && (self.cfg.is_switch || port >= 1)
    }

    /// Adds `n` to a counter of `port` (saturating); ignored for a port the node lacks.
    pub fn add(&mut self, port: u8, counter: Counter, n: u64) {
        if !self.valid_port(port) {
            return;
        }
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            match counter {
                Counter::XmitData | Counter::RcvData => p.add_octets(counter, n.saturating_mul(4)),
                _ => p.add(counter, n),
            }
        }
    }

    /// `packets` packets of `octets` octets in all left `port`.
    #[inline]
    pub fn count_xmit(&mut self, port: u8, octets: u64, packets: u64, multicast: bool) {
        self.count(port, octets, packets, multicast, true);
    }

    /// `packets` packets of `octets` octets in all arrived on `port`.
    #[inline]
    pub fn count_rcv(&mut self, port: u8, octets: u64, packets: u64, multicast: bool) {
        self.count(port, octets, packets, multicast, false);
    }

    #[inline]
    fn count(&mut self, port: u8, octets: u64, packets: u64, multicast: bool, xmit: bool) {
        if !self.valid_port(port) {
            return;
        }
        let Some(p) = self.ports.get_mut(usize::from(port)) else {
            return;
        };
        let (data, pkts, uni, multi) = if xmit {
            (
                Counter::XmitData,
                Counter::XmitPkts,
                Counter::UnicastXmitPkts,
                Counter::MulticastXmitPkts,
            )
        } else {
            (
                Counter::RcvData,
                Counter::RcvPkts,
                Counter::UnicastRcvPkts,
                Counter::MulticastRcvPkts,
            )
        };
        p.add_octets(data, octets);
        p.add(pkts, packets);
        p.add(if multicast { multi } else { uni }, packets);
    }

    /// The 64-bit count of a counter of `port` (0 for a port the node lacks); data
    /// counters in whole 4-byte words.
    #[must_use]
    pub fn get(&self, port: u8, counter: Counter) -> u64 {
        if !self.valid_port(port) {
            return 0;
        }
        self.ports
            .get(usize::from(port))
            .map_or(0, |p| p.get(counter))
    }

    /// Zeroes every counter of every port (a node reset).
    pub fn reset(&mut self) {
        self.ports.fill(PortCounts::default());
    }

    /// The ClassPortInfo the agent answers.
    #[must_use]
    pub fn class_port_info(&self) -> ClassPortInfo {
        ClassPortInfo {
            base_version: 1,
            class_version: PERF_CLASS_VERSION,
            capability_mask: self.cfg.capability_mask.bits(),
            capability_mask2: self.cfg.capability_mask2.bits(),
            resp_time_value: self.cfg.resp_time_value,
            ..ClassPortInfo::default()
        }
    }

    /// PortCounters of `port` (or the sum of all ports with [`ALL_PORTS`]) as a Get
    /// answers it; `None` for a PortSelect the agent refuses.
    #[must_use]
    pub fn port_counters(&self, port_select: u8) -> Option<PortCounters> {
        self.narrow_reading(port_select, &PC_AT)
    }

    /// PortCountersExtended of `port` (or all ports) as a Get answers it.
    #[must_use]
    pub fn port_counters_extended(&self, port_select: u8) -> Option<PortCountersExtended> {
        let p = self.counts(self.select(port_select)?);
        let additional = self
            .cfg
            .capability_mask2
            .contains(PmCapabilityMask2::ADDITIONAL_EXT_COUNTERS);
        // Without the capability the words of CounterSelect2 (the error counters,
        // PortXmitWait, QP1Dropped) are reserved: zero.
        let traffic = &Counter::EXT_COUNTER_SELECT;
        Some(reading(port_select, &EXT_AT, |c| {
            if additional || traffic.contains(&c) {
                p.get(c)
            } else {
                0
            }
        }))
    }

    /// PortRcvErrorDetails of `port` (or all ports) as a Get answers it.
    #[must_use]
    pub fn port_rcv_error_details(&self, port_select: u8) -> Option<PortRcvErrorDetails> {
        self.narrow_reading(port_select, &RCV_DETAILS_AT)
    }

    /// PortXmitDiscardDetails of `port` (or all ports) as a Get answers it.
    #[must_use]
    pub fn port_xmit_discard_details(&self, port_select: u8) -> Option<PortXmitDiscardDetails> {
        self.narrow_reading(port_select, &XMIT_DETAILS_AT)
    }

    /// A counter attribute whose counters are narrower than the agent's (PortCounters,
    /// the detail attributes) for `port_select`: each saturated at its field's width.
    fn narrow_reading<A: WireStruct>(&self, port_select: u8, at: &[(Counter, Field)]) -> Option<A> {
        let p = self.counts(self.select(port_select)?);
        Some(reading(port_select, at, |c| p.narrow(c)))
    }

    fn select(&self, port_select: u8) -> Option<Sel> {
        if port_select == ALL_PORTS {
            let all = self.cfg.is_switch
                && self
                    .cfg
                    .capability_mask
                    .contains(PmCapabilityMask::ALL_PORT_SELECT);
            return all.then_some(Sel::All);
        }
        self.valid_port(port_select)
            .then_some(Sel::One(usize::from(port_select)))
    }

    fn counts(&self, sel: Sel) -> PortCounts {
        match sel {
            Sel::One(i) => self.ports.get(i).cloned().unwrap_or_default(),
            Sel::All => {
                let mut sum = PortCounts::default();
                for p in self.ports.iter().skip(1) {
                    sum.sum(p);
                }
                sum
            }
        }
    }

    /// Resets, at `sel`, the counters the set bits of `word` name (bit i: `table[i]`).
    fn reset_selected(&mut self, sel: Sel, table: &[Counter], word: impl FieldType) {
        // A select word is an unsigned field: a flag set, or a plain `u16`.
        let FieldValue::Uint(bits) = word.to_value() else {
            return;
        };
        let range = match sel {
            Sel::One(i) => i..i + 1,
            Sel::All => 0..self.ports.len(),
        };
        for p in self.ports.get_mut(range).into_iter().flatten() {
            for (i, &c) in table.iter().enumerate() {
                if bits & (1 << i) != 0 {
                    p.reset(c);
                }
            }
        }
    }

    /// Processes one received PerfMgt MAD and returns the answer to send, if any.
    pub fn handle(&mut self, now: Instant, request: &[u8]) -> Option<[u8; MAD_SIZE]> {
        crate::answer_in_copy(request, |buf| match buf {
            Some(buf) => self.handle_in_place(now, buf),
            None => {
                self.stats.received += 1;
                self.stats.dropped += 1;
                false
            }
        })
    }

    /// As [`Self::handle`], turning the request buffer into the answer in place;
    /// `false` when nothing is sent.
    pub fn handle_in_place(&mut self, now: Instant, buf: &mut [u8; MAD_SIZE]) -> bool {
        self.now = self.now.max(now);
        self.stats.received += 1;
        let answered = self.process(buf);
        if answered {
            self.stats.responded += 1;
        } else {
            self.stats.dropped += 1;
        }
        answered
    }

    fn process(&mut self, buf: &mut [u8; MAD_SIZE]) -> bool {
        let (class, base, version, response, method, attr) = {
            let v = GsMadView::new_unchecked(&buf[..]);
            (
                v.mgmt_class(),
                v.base_version(),
                v.class_version(),
                v.response(),
                v.method(),
                v.attribute_id(),
            )
        };
        if class != MgmtClass::PerfMgt || base != 1 || response {
            return false;
        }
        let status = if version != PERF_CLASS_VERSION {
            Err(Status::BAD_VERSION)
        } else {
            match method {
                Method::Get | Method::Set => self.attribute(buf, method == Method::Set, attr),
                _ => Err(Status::METHOD_UNSUPPORTED),
            }
        };
        let mut v = GsMadView::new_unchecked(&mut buf[..]);
        match status {
            Ok(()) => v.set_status(Status::OK),
            Err(s) => v.set_status(s),
        }
        if matches!(method, Method::Get | Method::Set) {
            v.as_bytes_mut()[3] = METHOD_GET_RESP;
        } else {
            v.set_response(true);
        }
        true
    }

    /// Answers one attribute into the data area; the error status otherwise (the
    /// request's data is then returned unchanged).
    fn attribute(&mut self, buf: &mut [u8; MAD_SIZE], set: bool, attr: u16) -> Result<(), Status> {
        let data = &mut buf[GS_DATA_OFFSET..];
        let bad = Status::INVALID_VALUE;
        let enc = |r: ibsm_wire::Result<()>| r.map_err(|_| bad);
        // A counter attribute: a Set first resets, at the request's PortSelect, the
        // counters each select word names (bit i: the i-th of its table); the answer is
        // the Get after it (`$read`), echoing the request's select words.
        macro_rules! counters {
            ($attr:ident, $read:ident, $($word:ident: $table:expr),+ $(,)?) => {{
                let req = $attr::parse(data).map_err(|_| bad)?;
                let sel = self.select(req.port_select).ok_or(bad)?;
                if set {
                    $(self.reset_selected(sel, $table, req.$word);)+
                }
                let mut a = self.$read(req.port_select).ok_or(bad)?;
                $(a.$word = req.$word;)+
                enc(a.emit_into(data))
            }};
        }
        match PerfAttributeId::from(attr) {
            PerfAttributeId::ClassPortInfo if !set => enc(self.class_port_info().emit_into(data)),
            PerfAttributeId::PortCounters => counters!(
                PortCounters,
                port_counters,
                counter_select: &PC_SELECT,
                counter_select2: &[Counter::XmitWait],
            ),
            PerfAttributeId::PortCountersExtended => counters!(
                PortCountersExtended,
                port_counters_extended,
                counter_select: &EXT_SELECT,
                counter_select2: &EXT_SELECT2,
            ),
            PerfAttributeId::PortRcvErrorDetails => counters!(
                PortRcvErrorDetails,
                port_rcv_error_details,
                counter_select: &RCV_DETAIL_SELECT,
            ),
            PerfAttributeId::PortXmitDiscardDetails => counters!(
                PortXmitDiscardDetails,
                port_xmit_discard_details,
                counter_select: &XMIT_DETAIL_SELECT,
            ),
            PerfAttributeId::PortExtendedSpeedsCounters => {
                let req = PortExtendedSpeedsCounters::parse(data).map_err(|_| bad)?;
                self.select(req.port_select).ok_or(bad)?;
                let a = PortExtendedSpeedsCounters {
                    port_select: req.port_select,
                    counter_select: req.counter_select,
                    ..PortExtendedSpeedsCounters::default()
                };
                enc(a.emit_into(data))
            }
            _ => Err(Status::METHOD_ATTR_UNSUPPORTED),
        }
    }
}

/// The counters PortCounters holds (its CounterSelect's, then PortXmitWait) with their
/// positions; as for the other counter attributes below, resolved when the crate
/// compiles from the counter table and the attribute's field table.
const PC_AT: [(Counter, Field); 17] = Counter::positions(<PortCounters as WireStruct>::FIELDS, {
    let mut a = [Counter::XmitWait; 17];
    let mut i = 0;
    while i < 16 {
        a[i] = Counter::COUNTER_SELECT[i];
        i += 1;
    }
    a
});
/// Every counter of PortCountersExtended ([`Counter::ALL`]).
const EXT_AT: [(Counter, Field); 22] = Counter::positions(
    <PortCountersExtended as WireStruct>::FIELDS,
    match Counter::ALL.first_chunk() {
        Some(all) => *all,
        None => panic!("Counter::ALL has the 22 counters of PortCountersExtended"),
    },
);
const RCV_DETAILS_AT: [(Counter, Field); 6] = Counter::positions(
    <PortRcvErrorDetails as WireStruct>::FIELDS,
    Counter::RCV_ERROR_DETAILS_SELECT,
);
const XMIT_DETAILS_AT: [(Counter, Field); 4] = Counter::positions(
    <PortXmitDiscardDetails as WireStruct>::FIELDS,
    Counter::XMIT_DISCARD_DETAILS_SELECT,
);

/// A counter attribute as a Get answers it: `port_select`, each counter of `at` in its
/// field at `value` (which the caller keeps within the field's width), the select words
/// zero. Written as bytes through the positions and read back, as reflection by field
/// name costs several times the whole answer.
fn reading<A: WireStruct>(
    port_select: u8,
    at: &[(Counter, Field)],
    value: impl Fn(Counter) -> u64,
) -> A {
    let mut buf = [0u8; MAD_SIZE];
    if let Some(f) = find_field(A::FIELDS, "port_select") {
        set_uint(&mut buf, f, u64::from(port_select));
    }
    for &(c, f) in at {
        set_uint(&mut buf, f, value(c));
    }
    A::parse(&buf).unwrap_or_default()
}

#[cfg(test)]
mod tests;
