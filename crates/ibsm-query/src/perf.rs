// Over 800 lines: PerfClient and Scrape share the ClassPortInfo rules and transaction state.
//! Performance counters (class 0x04, what `perfquery` and `ibqueryerrors` do): typed
//! Get/Set of the PerfMgt attributes by LID, and [`Scrape`], a whole-fabric counter
//! read that asks each agent's ClassPortInfo first and then reads what it supports:
//! PortCounters of every port, PortCountersExtended where the agent has it
//! (ExtWidth or ExtWidth-NoIETF), and with [`ScrapeMode::ErrorsFirst`] one summed read
//! per switch (AllPortSelect, where the capability mask allows) before per-port reads
//! only of switches that show errors. Every target's failure is its own; a scrape never
//! stops for one.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use ibsm_transport::{
    Address, Instant, LidAddress, Received, Request, SansIo, Transactions, Transmit,
    TransportError, TxConfig, TxId, TxStats,
};
use ibsm_wire::mad::{ClassPortInfo, GS_DATA_OFFSET, GsMadView};
use ibsm_wire::perf::{
    ALL_PORTS, CounterSelect, ExtCounterSelect, PerfAttributeId, PmCapabilityMask, PortCounters,
    PortCountersExtended, PortExtendedSpeedsCounters, PortRcvErrorDetails, PortXmitDiscardDetails,
    perf_request,
};
use ibsm_wire::{LayoutVisitor, MAD_SIZE, Method, MgmtClass, WireStruct};

use crate::discover::Discovered;
use crate::outcome::{Failure, Outcome, Slot, sans_io_over_txns};

/// A PerfMgt attribute selected by port.
pub trait PerfAttribute: WireStruct {
    /// Its AttributeID.
    const ID: PerfAttributeId;
    /// The request template for `port` (PortSelect; [`ALL_PORTS`] for a switch's sum).
    fn for_port(port: u8) -> Self;
}

macro_rules! perf_attributes {
    ($($ty:ty => $id:ident),* $(,)?) => {
        $(impl PerfAttribute for $ty {
            const ID: PerfAttributeId = PerfAttributeId::$id;
            fn for_port(port: u8) -> Self {
                Self { port_select: port, ..Self::default() }
            }
        })*

        /// Runs `v` with the type of the [`PerfAttribute`] that `id` names; `None` for
        /// ClassPortInfo and the attributes this crate does not read.
        pub fn visit_attribute<V: LayoutVisitor>(id: PerfAttributeId, v: V) -> Option<V::Output> {
            match id {
                $(PerfAttributeId::$id => Some(v.visit::<$ty>()),)*
                _ => None,
            }
        }
    };
}

perf_attributes! {
    PortCounters => PortCounters,
    PortCountersExtended => PortCountersExtended,
    PortRcvErrorDetails => PortRcvErrorDetails,
    PortXmitDiscardDetails => PortXmitDiscardDetails,
    PortExtendedSpeedsCounters => PortExtendedSpeedsCounters,
}

/// Why a PerfMgt query failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PerfError {
    /// No answer after every retry.
    #[error("{attribute:?} of LID {lid} port {port}: no answer after {attempts} attempts")]
    Timeout {
        /// Target LID.
        lid: u16,
        /// PortSelect.
        port: u8,
        /// The attribute.
        attribute: PerfAttributeId,
        /// Sends it took.
        attempts: u32,
    },
    /// The agent answered with an error status (attribute or port unsupported, ...).
    #[error("{attribute:?} of LID {lid} port {port}: status {status:#06x}")]
    Status {
        /// Target LID.
        lid: u16,
        /// PortSelect.
        port: u8,
        /// The attribute.
        attribute: PerfAttributeId,
        /// The MAD status.
        status: u16,
    },
    /// The answer does not hold what was asked.
    #[error("{attribute:?} of LID {lid} port {port}: malformed answer: {why}")]
    Malformed {
        /// Target LID.
        lid: u16,
        /// PortSelect.
        port: u8,
        /// The attribute.
        attribute: PerfAttributeId,
        /// What was wrong.
        why: String,
    },
    /// The transport refused the request.
    #[error("{attribute:?} of LID {lid} port {port}: {error}")]
    Transport {
        /// Target LID.
        lid: u16,
        /// PortSelect.
        port: u8,
        /// The attribute.
        attribute: PerfAttributeId,
        /// The transport's error.
        error: TransportError,
    },
}

/// What one query asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerfAsked {
    /// Target LID.
    pub lid: u16,
    /// PortSelect (0 for ClassPortInfo).
    pub port: u8,
    /// The attribute.
    pub attribute: PerfAttributeId,
    /// Get or Set.
    pub method: Method,
}

/// The outcome of a PerfMgt query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerfEvent<C> {
    /// The agent answered with status 0.
    Done {
        /// The query's cookie.
        cookie: C,
        /// What was asked.
        asked: PerfAsked,
        /// The 192 data bytes of the answer.
        data: Box<[u8; 192]>,
        /// Sends it took.
        attempts: u32,
    },
    /// The query failed.
    Failed {
        /// The query's cookie.
        cookie: C,
        /// What was asked.
        asked: PerfAsked,
        /// Why.
        error: PerfError,
    },
    /// A MAD no query waits for.
    Unsolicited(Received),
}

impl<C> PerfEvent<C> {
    fn bad(asked: &PerfAsked, why: String) -> PerfError {
        PerfError::Malformed {
            lid: asked.lid,
            port: asked.port,
            attribute: asked.attribute,
            why,
        }
    }

    /// The answer as `A`.
    ///
    /// # Errors
    /// The query's error; [`PerfError::Malformed`] for another attribute or bytes that
    /// do not decode.
    pub fn decode<A: PerfAttribute>(&self) -> Result<A, PerfError> {
        self.decode_as(A::ID, |d| A::parse(d))
    }

    /// The answer as a ClassPortInfo.
    ///
    /// # Errors
    /// As [`Self::decode`].
    pub fn class_port_info(&self) -> Result<ClassPortInfo, PerfError> {
        self.decode_as(PerfAttributeId::ClassPortInfo, ClassPortInfo::parse)
    }

    fn decode_as<T>(
        &self,
        id: PerfAttributeId,
        parse: impl FnOnce(&[u8]) -> ibsm_wire::Result<T>,
    ) -> Result<T, PerfError> {
        match self {
            Self::Done { asked, data, .. } => {
                if asked.attribute != id {
                    return Err(Self::bad(
                        asked,
                        format!("asked {:?}, decoding {id:?}", asked.attribute),
                    ));
                }
                parse(&data[..]).map_err(|e| Self::bad(asked, e.to_string()))
            }
            Self::Failed { error, .. } => Err(error.clone()),
            Self::Unsolicited(_) => Err(PerfError::Malformed {
                lid: 0,
                port: 0,
                attribute: id,
                why: "not an answer to a query".into(),
            }),
        }
    }
}

/// The PerfMgt client. `C` is the caller's per-query cookie. It is [`SansIo`]: its
/// events are the queries' outcomes, and it is idle when no query is waiting or in
/// flight.
#[derive(Debug)]
pub struct PerfClient<C> {
    txns: Transactions<Slot<C, PerfAsked>>,
}

/// OpenSM's transaction settings (200 ms, 3 retries), 64 queries in flight.
#[must_use]
pub fn default_tx() -> TxConfig {
    TxConfig {
        window: 64,
        timeout: Duration::from_millis(200),
        retries: 3,
        tid_high: 0x5a50,
        assign_tids: true,
    }
}

impl<C> PerfClient<C> {
    /// A client with `tx` (window, timeout, retries).
    #[must_use]
    pub fn new(tx: TxConfig) -> Self {
        Self {
            txns: Transactions::new(tx),
        }
    }

    /// Counters of the transaction layer.
    #[must_use]
    pub fn stats(&self) -> TxStats {
        self.txns.stats()
    }

    /// Restarts TID allocation at low value `start`. A host that runs one client after
    /// another on the same port (an SM's periodic counter sweeps) moves each one past
    /// the TIDs of the last, so a late answer to the old sweep never completes a query
    /// of the new one.
    pub fn set_tid_start(&mut self, start: u32) {
        self.txns.set_tid_start(start);
    }

    /// Reads `A` of `port` (or [`ALL_PORTS`]) at `lid`.
    ///
    /// # Errors
    /// [`PerfError::Transport`] when the request cannot be queued.
    pub fn get<A: PerfAttribute>(
        &mut self,
        lid: u16,
        port: u8,
        cookie: C,
    ) -> Result<TxId, PerfError> {
        self.submit_attr(Method::Get, lid, port, &A::for_port(port), cookie)
    }

    /// Reads the agent's ClassPortInfo at `lid`.
    ///
    /// # Errors
    /// As [`Self::get`].
    pub fn class_port_info(&mut self, lid: u16, cookie: C) -> Result<TxId, PerfError> {
        self.submit(
            Method::Get,
            PerfAttributeId::ClassPortInfo,
            lid,
            0,
            &[],
            cookie,
        )
    }

    /// Resets the PortCounters `select` names on `port` (or every port of a switch with
    /// [`ALL_PORTS`], where the agent has AllPortSelect).
    ///
    /// # Errors
    /// As [`Self::get`].
    pub fn reset(
        &mut self,
        lid: u16,
        port: u8,
        select: CounterSelect,
        cookie: C,
    ) -> Result<TxId, PerfError> {
        self.set(lid, port, cookie, |pc: &mut PortCounters| {
            pc.counter_select = select;
        })
    }

    /// Resets the PortCountersExtended `select` names on `port`.
    ///
    /// # Errors
    /// As [`Self::get`].
    pub fn reset_extended(
        &mut self,
        lid: u16,
        port: u8,
        select: ExtCounterSelect,
        cookie: C,
    ) -> Result<TxId, PerfError> {
        self.set(lid, port, cookie, |pc: &mut PortCountersExtended| {
            pc.counter_select = select;
        })
    }

    /// Sends a Set of `A`'s request template for `port` (as [`Self::get`] sends) once
    /// `fill` has written what the Set asks for.
    fn set<A: PerfAttribute>(
        &mut self,
        lid: u16,
        port: u8,
        cookie: C,
        fill: impl FnOnce(&mut A),
    ) -> Result<TxId, PerfError> {
        let mut value = A::for_port(port);
        fill(&mut value);
        self.submit_attr(Method::Set, lid, port, &value, cookie)
    }

    /// Sends `value` of `port` at `lid` with `method` (a Get's template, a reset's Set).
    fn submit_attr<A: PerfAttribute>(
        &mut self,
        method: Method,
        lid: u16,
        port: u8,
        value: &A,
        cookie: C,
    ) -> Result<TxId, PerfError> {
        let mut data = [0u8; 192];
        value
            .emit_into(&mut data)
            .map_err(|e| PerfError::Malformed {
                lid,
                port,
                attribute: A::ID,
                why: e.to_string(),
            })?;
        self.submit(method, A::ID, lid, port, &data, cookie)
    }

    fn submit(
        &mut self,
        method: Method,
        attribute: PerfAttributeId,
        lid: u16,
        port: u8,
        data: &[u8],
        cookie: C,
    ) -> Result<TxId, PerfError> {
        let mad = perf_request(method, attribute, 0, data).to_bytes().to_vec();
        let asked = PerfAsked {
            lid,
            port,
            attribute,
            method,
        };
        let addr = Address::Lid(LidAddress::gsi(lid, 0));
        self.txns
            .submit(Request::new(addr, mad, Slot { cookie, asked }))
            .map_err(|error| PerfError::Transport {
                lid,
                port,
                attribute,
                error,
            })
    }
}

sans_io_over_txns!(PerfClient, PerfEvent);

impl<C> Outcome<C> for PerfEvent<C> {
    type Asked = PerfAsked;
    type Data = Box<[u8; 192]>;
    type Error = PerfError;

    fn answer(mad: &[u8]) -> Result<Box<[u8; 192]>, Failure> {
        answer(mad)
    }

    fn error(asked: &PerfAsked, failure: Failure) -> PerfError {
        let (lid, port, attribute) = (asked.lid, asked.port, asked.attribute);
        match failure {
            Failure::Timeout { attempts } => PerfError::Timeout {
                lid,
                port,
                attribute,
                attempts,
            },
            Failure::Transport(error) => PerfError::Transport {
                lid,
                port,
                attribute,
                error,
            },
            Failure::Status(status) => PerfError::Status {
                lid,
                port,
                attribute,
                status,
            },
            Failure::Malformed(why) => PerfError::Malformed {
                lid,
                port,
                attribute,
                why,
            },
        }
    }

    fn done(
        cookie: C,
        asked: PerfAsked,
        data: Box<[u8; 192]>,
        attempts: u32,
        _elapsed: Duration,
    ) -> Self {
        PerfEvent::Done {
            cookie,
            asked,
            data,
            attempts,
        }
    }

    fn failed(cookie: C, asked: PerfAsked, error: PerfError) -> Self {
        PerfEvent::Failed {
            cookie,
            asked,
            error,
        }
    }

    fn unsolicited(received: Received) -> Self {
        PerfEvent::Unsolicited(received)
    }
}

/// The data of a PerfMgt answer with status 0.
fn answer(mad: &[u8]) -> Result<Box<[u8; 192]>, Failure> {
    if mad.len() < MAD_SIZE {
        return Err(Failure::Malformed(format!(
            "{} bytes, a MAD has {MAD_SIZE}",
            mad.len()
        )));
    }
    let v = GsMadView::new_unchecked(mad);
    if v.mgmt_class() != MgmtClass::PerfMgt {
        return Err(Failure::Malformed(format!("class {:?}", v.mgmt_class())));
    }
    let status = v.status().0;
    if status != 0 {
        return Err(Failure::Status(status));
    }
    let mut data = Box::new([0u8; 192]);
    data.copy_from_slice(&mad[GS_DATA_OFFSET..MAD_SIZE]);
    Ok(data)
}

/// One node to scrape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrapeTarget {
    /// The LID its agent answers at (a switch's port 0 LID, a CA port's LID).
    pub lid: u16,
    /// Ports to read (a switch's external ports; the CA port of that LID).
    pub ports: Vec<u8>,
    /// Whether it is a switch (AllPortSelect applies only to switches).
    pub switch: bool,
}

impl ScrapeTarget {
    /// What a read of every port of `found` asks (`ibsm-perfquery --all`,
    /// `ibsm-exporter`): each switch at its port 0 LID with all its external ports
    /// (1..=NumPorts, cabled or not), each port of a CA or router at its own LID. A
    /// switch or port without a LID is left out. Each target comes with the index of
    /// its node in `found.nodes`, in node order.
    #[must_use]
    pub fn every_port(found: &Discovered) -> Vec<(usize, ScrapeTarget)> {
        let mut out = Vec::new();
        for (i, n) in found.nodes.iter().enumerate() {
            if n.is_switch() {
                let lid = n.ports.first().and_then(|p| p.info).map_or(0, |p| p.lid);
                if lid != 0 {
                    let ports = (1..=n.info.num_ports).collect();
                    out.push((
                        i,
                        ScrapeTarget {
                            lid,
                            ports,
                            switch: true,
                        },
                    ));
                }
                continue;
            }
            for (p, fp) in n.ports.iter().enumerate().skip(1) {
                if let (Some(pi), Ok(p)) = (fp.info, u8::try_from(p)) {
                    if pi.lid != 0 {
                        let target = ScrapeTarget {
                            lid: pi.lid,
                            ports: vec![p],
                            switch: false,
                        };
                        out.push((i, target));
                    }
                }
            }
        }
        out
    }
}

/// How a [`Scrape`] reads switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScrapeMode {
    /// Every port's counters (an exporter).
    #[default]
    PerPort,
    /// One AllPortSelect read per switch that has it, and per-port reads only of the
    /// switches whose sum shows an error counter above zero (as `ibqueryerrors`);
    /// switches without AllPortSelect and CAs are read per port.
    ErrorsFirst,
}

/// What a scrape learnt about one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortReading {
    /// PortCounters, or why not.
    pub counters: Result<PortCounters, PerfError>,
    /// PortCountersExtended where the agent has it, or why not; `None` when it does not.
    pub extended: Option<Result<PortCountersExtended, PerfError>>,
}

/// The result of a [`Scrape`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScrapeReport {
    /// Each agent's ClassPortInfo, or why not (a node whose ClassPortInfo failed is
    /// still read, as a basic agent).
    pub agents: BTreeMap<u16, Result<ClassPortInfo, PerfError>>,
    /// Per (LID, port).
    pub ports: BTreeMap<(u16, u8), PortReading>,
    /// Sums read with AllPortSelect (ErrorsFirst), per switch LID.
    pub sums: BTreeMap<u16, Result<PortCounters, PerfError>>,
    /// Queries sent (first sends, not retries).
    pub queries: u64,
    /// Queries that failed.
    pub failures: u64,
    /// Of those, timeouts.
    pub timeouts: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Cpi,
    Sum,
    Counters(u8),
    Extended(u8),
}

/// A sans-IO whole-fabric counter read over a [`PerfClient`]. As a [`SansIo`] core
/// (run it with [`ibsm_transport::drive`]) it has no events (what it reads is
/// [`Self::report`]; MADs that answer no read are dropped) and is idle once every read
/// is finished ([`Self::is_done`]).
///
/// Its inherent `handle_incoming`, `handle_send_error` (without `now`) and
/// `poll_transmit` (a [`Transmit`]) are the SM engine's PerfMgr forms, kept while the
/// engine calls them; the [`SansIo`] forms do the same.
#[derive(Debug)]
pub struct Scrape {
    client: PerfClient<(usize, Step)>,
    targets: Vec<ScrapeTarget>,
    mode: ScrapeMode,
    report: ScrapeReport,
    queued: VecDeque<(usize, Step)>,
}

fn has_extended(cpi: &ClassPortInfo) -> bool {
    let caps = cpi.pm_capabilities();
    caps.contains(PmCapabilityMask::EXT_WIDTH) || caps.contains(PmCapabilityMask::EXT_WIDTH_NOIETF)
}

/// Whether any error counter of a PortCounters is above zero.
#[must_use]
pub fn has_errors(pc: &PortCounters) -> bool {
    pc.symbol_error_counter > 0
        || pc.link_error_recovery_counter > 0
        || pc.link_downed_counter > 0
        || pc.port_rcv_errors > 0
        || pc.port_rcv_remote_physical_errors > 0
        || pc.port_rcv_switch_relay_errors > 0
        || pc.port_xmit_discards > 0
        || pc.port_xmit_constraint_errors > 0
        || pc.port_rcv_constraint_errors > 0
        || pc.local_link_integrity_errors > 0
        || pc.excessive_buffer_overrun_errors > 0
        || pc.vl15_dropped > 0
}

impl Scrape {
    /// A scrape of `targets` with `tx` settings.
    #[must_use]
    pub fn new(targets: Vec<ScrapeTarget>, mode: ScrapeMode, tx: TxConfig) -> Self {
        let queued = (0..targets.len()).map(|i| (i, Step::Cpi)).collect();
        Self {
            client: PerfClient::new(tx),
            targets,
            mode,
            report: ScrapeReport::default(),
            queued,
        }
    }

    fn submit_queued(&mut self) {
        while let Some((i, step)) = self.queued.pop_front() {
            let lid = self.targets[i].lid;
            let r = match step {
                Step::Cpi => self.client.class_port_info(lid, (i, step)),
                Step::Sum => self.client.get::<PortCounters>(lid, ALL_PORTS, (i, step)),
                Step::Counters(p) => self.client.get::<PortCounters>(lid, p, (i, step)),
                Step::Extended(p) => self.client.get::<PortCountersExtended>(lid, p, (i, step)),
            };
            self.report.queries += 1;
            if let Err(e) = r {
                self.record(i, step, Err(e));
            }
        }
    }

    fn queue_ports(&mut self, i: usize, extended: bool) {
        for &p in &self.targets[i].ports {
            self.queued.push_back((i, Step::Counters(p)));
            if extended {
                self.queued.push_back((i, Step::Extended(p)));
            }
        }
    }

    fn record(
        &mut self,
        i: usize,
        step: Step,
        outcome: Result<PerfEvent<(usize, Step)>, PerfError>,
    ) {
        let lid = self.targets[i].lid;
        let failed = |r: &mut ScrapeReport, e: &PerfError| {
            r.failures += 1;
            if matches!(e, PerfError::Timeout { .. }) {
                r.timeouts += 1;
            }
        };
        let result = |ev: &Result<PerfEvent<(usize, Step)>, PerfError>| -> Result<(), PerfError> {
            match ev {
                Ok(PerfEvent::Failed { error, .. }) | Err(error) => Err(error.clone()),
                _ => Ok(()),
            }
        };
        if let Err(e) = result(&outcome) {
            failed(&mut self.report, &e);
        }
        match step {
            Step::Cpi => {
                let cpi = outcome.and_then(|ev| ev.class_port_info());
                let t = &self.targets[i];
                let (ext, all) = cpi.as_ref().map_or((false, false), |c| {
                    (
                        has_extended(c),
                        t.switch
                            && c.pm_capabilities()
                                .contains(PmCapabilityMask::ALL_PORT_SELECT),
                    )
                });
                self.report.agents.insert(lid, cpi);
                if self.mode == ScrapeMode::ErrorsFirst && all {
                    self.queued.push_back((i, Step::Sum));
                } else {
                    self.queue_ports(i, ext);
                }
            }
            Step::Sum => {
                let sum = outcome.and_then(|ev| ev.decode::<PortCounters>());
                // A failed or erroneous sum: read the ports to find out more.
                if sum.as_ref().map_or(true, has_errors) {
                    let ext =
                        matches!(self.report.agents.get(&lid), Some(Ok(c)) if has_extended(c));
                    self.queue_ports(i, ext);
                }
                self.report.sums.insert(lid, sum);
            }
            Step::Counters(p) => {
                self.reading(lid, p).counters = outcome.and_then(|ev| ev.decode::<PortCounters>());
            }
            Step::Extended(p) => {
                self.reading(lid, p).extended =
                    Some(outcome.and_then(|ev| ev.decode::<PortCountersExtended>()));
            }
        }
    }

    /// The reading of `port` at `lid`, started blank for whichever of its answers comes
    /// first.
    fn reading(&mut self, lid: u16, port: u8) -> &mut PortReading {
        self.report
            .ports
            .entry((lid, port))
            .or_insert_with(|| PortReading {
                counters: Ok(PortCounters::default()),
                extended: None,
            })
    }

    /// The next MAD to send now, with its attempt number ([`SansIo::poll_transmit`]
    /// returns the same MAD as an [`Outgoing`](ibsm_transport::Outgoing)).
    pub fn next_attempt(&mut self, now: Instant) -> Option<Transmit> {
        self.submit_queued();
        self.client.txns.next_attempt(now)
    }

    /// The earliest deadline.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.client.txns.poll_timeout()
    }

    /// Handles deadlines at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.client.txns.handle_timeout(now);
        self.collect();
    }

    fn collect(&mut self) {
        while let Some(ev) = self.client.poll_event() {
            let (i, step) = match &ev {
                PerfEvent::Done { cookie, .. } | PerfEvent::Failed { cookie, .. } => *cookie,
                PerfEvent::Unsolicited(_) => continue,
            };
            self.record(i, step, Ok(ev));
        }
    }

    /// Restarts TID allocation at low value `start` (see
    /// [`PerfClient::set_tid_start`]); call it before the first
    /// [`Self::poll_transmit`].
    pub fn set_tid_start(&mut self, start: u32) {
        self.client.set_tid_start(start);
    }

    /// Whether every read is finished.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.queued.is_empty() && SansIo::is_idle(&self.client)
    }

    /// Counters of the transaction layer.
    #[must_use]
    pub fn stats(&self) -> TxStats {
        self.client.stats()
    }

    /// What the scrape found (complete once [`Self::is_done`]).
    #[must_use]
    pub fn report(&self) -> &ScrapeReport {
        &self.report
    }

    /// Takes the report.
    #[must_use]
    pub fn into_report(self) -> ScrapeReport {
        self.report
    }
}

crate::sans_io_over_smps!(Scrape, via: client.txns, before_transmit: submit_queued, idle: is_done);

#[cfg(test)]
mod tests;
