// Over 800 lines: one sans-IO client; queries, RMPP reassembly, retries share its state.
//! A sans-IO Subnet Administration client: Get, GetTable, Set and Delete of any SA
//! record, with RMPP reassembly of the answers (what `saquery` does), many queries in
//! flight, per-query timeouts and retries, and every failure reported per query.
//!
//! The client never blocks and never touches a socket: it is an
//! [`ibsm_transport::SansIo`] core. The caller submits queries, hands
//! [`SansIo::poll_transmit`]'s MADs to a transport, feeds every received MAD to
//! [`SansIo::handle_incoming`] and the clock to [`SansIo::handle_timeout`], and reads
//! outcomes from [`SansIo::poll_event`]; [`ibsm_transport::drive`] does that loop over
//! any [`Transport`], and [`query_table`] is the one-call form. A host that shares its
//! port with other agents asks [`SaClient::accepts`] which MADs are the client's.
//!
//! Answers arrive as one MAD (Get, Set, Delete, errors; a table that one MAD holds when
//! no RMPP is in use, as from OpenSM under ibsim's umad2sim), as RMPP DATA segments that
//! the client acknowledges and joins (GetTable from an SA over a raw QP1 transport,
//! such as `ibsm-sim`), or already joined by the kernel (umad with RMPP, where a read
//! returns the 56-byte header and the whole data). Lost segments are recovered by
//! re-acknowledging the last one received in order; a sender that stops, aborts, or
//! lies about lengths ends the query with a typed [`QueryError`], and the other
//! queries go on.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use ibsm_transport::{
    Address, Incoming, Instant, LidAddress, NoJob, Outgoing, Received, SansIo, Transport,
    TransportError, TxId,
};
use ibsm_wire::sa::rmpp::{Progress, Reassembler, RmppError, VecBuffer};
use ibsm_wire::sa::{
    ComponentMask, SA_HEADER_SIZE, SaAttributeId, SaMad, SaMadView, SaRecord, SaStatus, records,
};
use ibsm_wire::{
    MAD_SIZE, MadHeaderView, Method, MgmtClass, RmppFlags, RmppHeader, RmppHeaderView, RmppStatus,
    RmppType, Status,
};

/// Offset of the RMPP header in a MAD.
const RMPP_OFFSET: usize = 24;

/// Settings of an [`SaClient`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaClientConfig {
    /// LID of the SA (the port's MasterSMLID).
    pub sa_lid: u16,
    /// Service level for SA traffic (the port's MasterSMSL).
    pub sl: u8,
    /// Index into the local P_Key table (the default partition's entry is 0).
    pub pkey_index: u16,
    /// Time to wait for an answer, and between the segments of an RMPP answer. Keep it
    /// above the SA's RMPP resend time (OpenSM and `ibsm-sa`: 200 ms): a lost segment
    /// comes back only when the SA resends it.
    pub timeout: Duration,
    /// Re-sends of a request (or of the last ACK, once segments flow) before the query
    /// fails.
    pub retries: u32,
    /// Segments the client lets the SA send before each ACK.
    pub window: u32,
    /// Largest answer accepted, in data bytes; a longer one is aborted
    /// ([`RmppStatus::ResourcesExhausted`]).
    pub max_response: usize,
    /// Queries on the wire at once; more wait in order.
    pub max_in_flight: usize,
    /// SM_Key sent with every request (0 for ordinary clients; the SA hides secrets
    /// from requests without the right key).
    pub sm_key: u64,
    /// Upper 32 bits of every TID.
    pub tid_high: u32,
}

impl SaClientConfig {
    /// Defaults for the SA at `sa_lid`: 1 s per attempt and 3 retries (infiniband-diags'
    /// defaults), a window of 32 segments, answers up to 64 MiB, 16 queries in flight.
    #[must_use]
    pub const fn new(sa_lid: u16) -> Self {
        Self {
            sa_lid,
            sl: 0,
            pkey_index: 0,
            timeout: Duration::from_secs(1),
            retries: 3,
            window: 32,
            max_response: 64 << 20,
            max_in_flight: 16,
            sm_key: 0,
            tid_high: 0x5a51,
        }
    }
}

/// Handle of a submitted query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueryId(pub u64);

/// Why a query failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// No answer (or, once segments flowed, no next segment) after every retry.
    #[error("SA {attribute:?}: no answer after {attempts} attempts")]
    Timeout {
        /// What was asked.
        attribute: SaAttributeId,
        /// Sends it took.
        attempts: u32,
        /// Segments received before the SA went silent.
        segments: u32,
    },
    /// The SA answered with an error status.
    #[error("SA {attribute:?}: status {status:#06x} ({sa:?})")]
    Status {
        /// What was asked.
        attribute: SaAttributeId,
        /// The whole MAD status word.
        status: u16,
        /// Its SA-specific code.
        sa: SaStatus,
    },
    /// The SA stopped or aborted the transfer.
    #[error("SA {attribute:?}: transfer {kind:?} by the SA with {status:?}")]
    Aborted {
        /// What was asked.
        attribute: SaAttributeId,
        /// STOP or ABORT.
        kind: RmppType,
        /// The RMPPStatus it gave.
        status: RmppStatus,
    },
    /// The segments broke the RMPP rules (the client aborted the transfer).
    #[error("SA {attribute:?}: {error}")]
    Rmpp {
        /// What was asked.
        attribute: SaAttributeId,
        /// What was wrong.
        error: RmppError,
    },
    /// The answer does not hold what was asked (too short, another attribute, a table
    /// whose AttributeOffset cannot hold the record, ...).
    #[error("SA {attribute:?}: malformed answer: {why}")]
    Malformed {
        /// What was asked.
        attribute: SaAttributeId,
        /// What was wrong.
        why: String,
    },
    /// The transport could not send the request.
    #[error("SA {attribute:?}: {error}")]
    Transport {
        /// What was asked.
        attribute: SaAttributeId,
        /// The transport's error.
        error: TransportError,
    },
}

/// A complete answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaResponse {
    /// The SA header of the answer (of its first segment; boxed: a whole MAD).
    pub header: Box<SaMad>,
    /// The data: every record of a table, or the one record of a Get/Set.
    pub data: Vec<u8>,
    /// Whether it answered a GetTable (records spaced by the AttributeOffset) rather
    /// than a single-record method.
    pub table: bool,
}

impl SaResponse {
    /// The records of the answer.
    ///
    /// # Errors
    /// [`QueryError::Malformed`] when the attribute differs from `R`'s, or the
    /// AttributeOffset of a table cannot hold an `R`, or a single record is short.
    pub fn records<R: SaRecord>(&self) -> Result<Vec<R>, QueryError> {
        let attribute = self.header.attribute();
        let bad = |why: String| QueryError::Malformed { attribute, why };
        if attribute != R::ATTRIBUTE_ID {
            return Err(bad(format!(
                "{attribute:?} where {:?} was asked",
                R::ATTRIBUTE_ID
            )));
        }
        if self.table {
            let it = records::<R>(&self.data, self.header.attribute_offset)
                .map_err(|e| bad(e.to_string()))?;
            Ok(it.collect())
        } else {
            R::parse(&self.data)
                .map(|r| vec![r])
                .map_err(|e| bad(e.to_string()))
        }
    }
}

/// The outcome of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaEvent<C> {
    /// The answer arrived.
    Done {
        /// The query.
        id: QueryId,
        /// Its cookie.
        cookie: C,
        /// The answer.
        response: SaResponse,
        /// Request sends it took (1 = no retry).
        attempts: u32,
    },
    /// The query failed; other queries are not affected.
    Failed {
        /// The query.
        id: QueryId,
        /// Its cookie.
        cookie: C,
        /// Why.
        error: QueryError,
    },
}

/// Counters of an [`SaClient`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaStats {
    /// Queries submitted.
    pub submitted: u64,
    /// Queries answered.
    pub done: u64,
    /// Queries failed.
    pub failed: u64,
    /// Request re-sends.
    pub retries: u64,
    /// RMPP segments taken.
    pub segments: u64,
    /// ACKs sent.
    pub acks: u64,
    /// Segments dropped as duplicates or out of order (each answered by an ACK).
    pub resynced: u64,
    /// MADs that matched no query (late duplicates, strangers).
    pub unmatched: u64,
}

#[derive(Debug)]
struct Query<C> {
    id: QueryId,
    cookie: C,
    request: SaMad,
    table: bool,
    attempts: u32,
    deadline: Instant,
    rx: Option<Transfer>,
}

#[derive(Debug)]
struct Transfer {
    reasm: Reassembler<VecBuffer>,
    /// Highest segment the SA may send before waiting for our next ACK.
    granted: u32,
    /// Where the segments come from (ACKs go back there).
    from: Address,
    /// ACK re-sends after silence.
    idle_retries: u32,
    /// The last segment a gap was reported for (one ACK per gap).
    resynced_at: u32,
}

/// The SA client. `C` is the caller's per-query cookie.
///
/// As a [`SansIo`] core its events are the queries' outcomes, it is idle when no query
/// is waiting or in flight, and the id of each [`Outgoing`] is the low 32 bits of the
/// MAD's TransactionID (a send error fails that query).
#[derive(Debug)]
pub struct SaClient<C> {
    cfg: SaClientConfig,
    next_id: u64,
    next_tid: u32,
    waiting: VecDeque<Query<C>>,
    active: HashMap<u32, Query<C>>,
    out: VecDeque<Outgoing>,
    events: VecDeque<SaEvent<C>>,
    /// Final ACKs of finished transfers by TID, re-sent if the SA repeats its last
    /// segment (our ACK was lost); bounded.
    finished: VecDeque<(u32, Address, [u8; MAD_SIZE])>,
    stats: SaStats,
}

const FINISHED_KEPT: usize = 64;

impl<C> SaClient<C> {
    /// A client with `cfg`.
    #[must_use]
    pub fn new(cfg: SaClientConfig) -> Self {
        Self {
            cfg,
            next_id: 0,
            next_tid: 1,
            waiting: VecDeque::new(),
            active: HashMap::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            finished: VecDeque::new(),
            stats: SaStats::default(),
        }
    }

    /// The settings.
    #[must_use]
    pub const fn config(&self) -> &SaClientConfig {
        &self.cfg
    }

    /// The counters.
    #[must_use]
    pub const fn stats(&self) -> SaStats {
        self.stats
    }

    /// Queries every `R` matching `template` in the components of `mask`
    /// (SubnAdmGetTable).
    pub fn get_table<R: SaRecord>(
        &mut self,
        template: &R,
        mask: ComponentMask,
        cookie: C,
    ) -> QueryId {
        self.submit(Method::GetTable, template, mask, cookie)
    }

    /// Queries the one `R` matching `template` (SubnAdmGet; the SA answers
    /// [`SaStatus::NoRecords`] or [`SaStatus::TooManyRecords`] otherwise).
    pub fn get<R: SaRecord>(&mut self, template: &R, mask: ComponentMask, cookie: C) -> QueryId {
        self.submit(Method::Get, template, mask, cookie)
    }

    /// Sends any single-record method (Set for a join or a service registration,
    /// Delete for a leave, Get, GetTable) with `record`.
    pub fn submit<R: SaRecord>(
        &mut self,
        method: Method,
        record: &R,
        mask: ComponentMask,
        cookie: C,
    ) -> QueryId {
        let id = QueryId(self.next_id);
        self.next_id += 1;
        self.stats.submitted += 1;
        let mut request = match SaMad::request(method, 0, mask, record) {
            Ok(m) => m,
            Err(e) => {
                // Only a record larger than the data area gets here; report it on the
                // query rather than panic.
                self.stats.failed += 1;
                self.events.push_back(SaEvent::Failed {
                    id,
                    cookie,
                    error: QueryError::Malformed {
                        attribute: R::ATTRIBUTE_ID,
                        why: e.to_string(),
                    },
                });
                return id;
            }
        };
        request.sm_key = self.cfg.sm_key;
        self.waiting.push_back(Query {
            id,
            cookie,
            request,
            table: method == Method::GetTable,
            attempts: 0,
            deadline: Instant::ZERO,
            rx: None,
        });
        id
    }

    fn sa_address(&self) -> Address {
        Address::Lid(LidAddress {
            pkey_index: self.cfg.pkey_index,
            ..LidAddress::gsi(self.cfg.sa_lid, self.cfg.sl)
        })
    }

    fn fresh_tid(&mut self) -> u32 {
        loop {
            let t = self.next_tid;
            self.next_tid = self.next_tid.wrapping_add(1).max(1);
            if !self.active.contains_key(&t) {
                return t;
            }
        }
    }

    /// Sends new requests while fewer than the in-flight limit are active.
    fn admit(&mut self, now: Instant) {
        while self.active.len() < self.cfg.max_in_flight.max(1) {
            let Some(mut q) = self.waiting.pop_front() else {
                break;
            };
            let tid = self.fresh_tid();
            q.request.transaction_id = (u64::from(self.cfg.tid_high) << 32) | u64::from(tid);
            q.attempts = 1;
            q.deadline = now + self.cfg.timeout;
            let mad = q.request.to_bytes().to_vec();
            self.out.push_back(outgoing(tid, self.sa_address(), mad));
            self.active.insert(tid, q);
        }
    }

    /// Tells the client that sending the request of `tid`'s query failed.
    fn fail(&mut self, tid: u32, error: QueryError) {
        if let Some(q) = self.active.remove(&tid) {
            self.stats.failed += 1;
            self.events.push_back(SaEvent::Failed {
                id: q.id,
                cookie: q.cookie,
                error,
            });
        }
    }

    /// Whether `incoming` is this client's own: an SA response whose TID is a query in
    /// flight (what [`SansIo::handle_incoming`] acts on; anything else it counts and
    /// drops, or answers with a final ACK again).
    #[must_use]
    pub fn accepts(&self, incoming: &Incoming) -> bool {
        let Incoming::Mad(r) = incoming else {
            return false;
        };
        let mad = &r.mad;
        mad.len() >= SA_HEADER_SIZE
            && is_sa_response(mad)
            && low_tid(mad).is_some_and(|tid| self.active.contains_key(&tid))
    }

    /// Takes an SA response (the client's own ones are those [`Self::accepts`] names).
    fn handle_mad(&mut self, r: &Received, now: Instant) {
        let mad = &r.mad;
        if mad.len() < SA_HEADER_SIZE || !is_sa_response(mad) {
            return;
        }
        let Some(tid) = low_tid(mad) else {
            return;
        };
        let from = Address::Lid(LidAddress {
            pkey_index: r.pkey_index,
            ..LidAddress::gsi(r.slid, r.sl)
        });
        if !self.active.contains_key(&tid) {
            self.stats.unmatched += 1;
            // The SA repeating its last segment means our final ACK was lost.
            if let Some((_, _, ack)) = self.finished.iter().find(|f| f.0 == tid) {
                let ack = *ack;
                self.stats.acks += 1;
                self.out.push_back(outgoing(tid, from, ack.to_vec()));
            }
            return;
        }
        let view = SaMadView::new_unchecked(&mad[..]);
        let attribute = self.active[&tid].request.attribute();
        // A kernel-joined answer: header and all the data in one buffer, as long as the
        // data is: longer than a MAD, or shorter with the RMPP header of its transfer
        // (one 64-byte PathRecord makes 120 bytes). Its status is read as a single
        // MAD's is (below).
        let rmpp_active = RmppFlags(mad[RMPP_OFFSET + 2] & 0x07).active();
        let joined = mad.len() > MAD_SIZE || (mad.len() < MAD_SIZE && rmpp_active);
        if joined && view.status() == Status::OK {
            let header = parse_header(&mad[..MAD_SIZE.min(mad.len())]);
            match header {
                Ok(h) => {
                    let data = mad[SA_HEADER_SIZE..].to_vec();
                    self.finish(tid, h, data);
                }
                Err(why) => self.fail(tid, QueryError::Malformed { attribute, why }),
            }
            return;
        }
        if mad.len() < MAD_SIZE && view.status() == Status::OK {
            self.fail(
                tid,
                QueryError::Malformed {
                    attribute,
                    why: format!("{} bytes, a MAD has {MAD_SIZE}", mad.len()),
                },
            );
            return;
        }
        let status = view.status();
        let flags = RmppFlags(mad[RMPP_OFFSET + 2] & 0x07);
        let rmpp_type = view.rmpp().rmpp_type;
        if flags.active() && matches!(rmpp_type, RmppType::Stop | RmppType::Abort) {
            let status = view.rmpp().status;
            self.fail(
                tid,
                QueryError::Aborted {
                    attribute,
                    kind: rmpp_type,
                    status,
                },
            );
            return;
        }
        if status != Status::OK {
            let table = self.active[&tid].table;
            if table && status.sa_status() == SaStatus::NoRecords {
                // A table with no rows: an answer, not a failure.
                if let Ok(h) = parse_header(mad) {
                    self.finish(tid, h, Vec::new());
                }
                return;
            }
            self.fail(
                tid,
                QueryError::Status {
                    attribute,
                    status: status.0,
                    sa: status.sa_status(),
                },
            );
            return;
        }
        // RMPP is in use only with a version, the Active flag and a type: OpenSM marks
        // its answers Active for the kernel to segment, and where no kernel does (the
        // umad2sim preload) they arrive as one plain MAD.
        let rmpp = flags.active() && view.rmpp().version != 0 && rmpp_type != RmppType::None;
        if !rmpp {
            match parse_header(mad) {
                Ok(h) => {
                    let table = self.active[&tid].table;
                    let data = if table {
                        match single_mad_table(&h) {
                            Ok(d) => d,
                            Err(why) => {
                                self.fail(tid, QueryError::Malformed { attribute, why });
                                return;
                            }
                        }
                    } else {
                        h.data.to_vec()
                    };
                    self.finish(tid, h, data);
                }
                Err(why) => self.fail(tid, QueryError::Malformed { attribute, why }),
            }
            return;
        }
        if rmpp_type == RmppType::Ack {
            // We send nothing segmented, so an ACK is not ours to take.
            return;
        }
        self.take_segment(tid, mad, from, now);
    }

    fn take_segment(&mut self, tid: u32, mad: &[u8], from: Address, now: Instant) {
        let window = self.cfg.window.max(1);
        let max = self.cfg.max_response;
        let Some(q) = self.active.get_mut(&tid) else {
            return;
        };
        let attribute = q.request.attribute();
        let t = q.rx.get_or_insert_with(|| Transfer {
            reasm: Reassembler::sa(VecBuffer::with_limit(max)),
            granted: 1,
            from,
            idle_retries: 0,
            resynced_at: 0,
        });
        match t.reasm.push(mad) {
            Ok(progress) => {
                self.stats.segments += 1;
                t.idle_retries = 0;
                q.deadline = now + self.cfg.timeout;
                let last = t.reasm.last_segment();
                let complete = matches!(progress, Progress::Complete);
                if complete || last >= t.granted {
                    let ack = t.reasm.ack(window);
                    t.granted = last + window;
                    self.stats.acks += 1;
                    self.out.push_back(outgoing(tid, t.from, ack.to_vec()));
                    if complete {
                        let header = parse_header(t.reasm.header());
                        let data = t.reasm.data().to_vec();
                        self.finished.push_back((tid, t.from, ack));
                        if self.finished.len() > FINISHED_KEPT {
                            self.finished.pop_front();
                        }
                        match header {
                            Ok(h) => self.finish(tid, h, data),
                            Err(why) => self.fail(tid, QueryError::Malformed { attribute, why }),
                        }
                    }
                }
            }
            Err(e @ (RmppError::Duplicate { .. } | RmppError::OutOfOrder { .. })) => {
                // A gap (a segment was lost) or the SA repeating up to what we hold
                // (our ACK was lost): tell it where we are, once per position, so a
                // window of repeats does not become a storm of ACKs.
                self.stats.resynced += 1;
                let last = t.reasm.last_segment();
                let repeat_of_last =
                    matches!(e, RmppError::Duplicate { segment, .. } if segment == last);
                let gap = matches!(e, RmppError::OutOfOrder { .. }) && t.resynced_at != last;
                if last > 0 && (gap || repeat_of_last) {
                    t.resynced_at = last;
                    let ack = t.reasm.ack(window);
                    t.granted = last + window;
                    self.stats.acks += 1;
                    self.out.push_back(outgoing(tid, t.from, ack.to_vec()));
                }
            }
            Err(error) => {
                if let Some(status) = error.abort_status() {
                    let abort = control(mad, RmppType::Abort, status);
                    self.out.push_back(outgoing(tid, t.from, abort.to_vec()));
                }
                self.fail(tid, QueryError::Rmpp { attribute, error });
            }
        }
    }

    fn finish(&mut self, tid: u32, header: SaMad, data: Vec<u8>) {
        if let Some(q) = self.active.remove(&tid) {
            let attribute = q.request.attribute();
            if header.attribute() != attribute {
                self.stats.failed += 1;
                self.events.push_back(SaEvent::Failed {
                    id: q.id,
                    cookie: q.cookie,
                    error: QueryError::Malformed {
                        attribute,
                        why: format!("answer carries {:?}", header.attribute()),
                    },
                });
                return;
            }
            self.stats.done += 1;
            self.events.push_back(SaEvent::Done {
                id: q.id,
                cookie: q.cookie,
                response: SaResponse {
                    header: Box::new(header),
                    data,
                    table: q.table,
                },
                attempts: q.attempts,
            });
        }
    }
}

impl<C> SansIo for SaClient<C> {
    type Event = SaEvent<C>;
    type Job = NoJob;

    /// Takes a received MAD (anything: MADs of other classes or unknown TIDs are
    /// counted and dropped; [`SaClient::accepts`] tells which are the client's).
    fn handle_incoming(&mut self, now: Instant, incoming: Incoming) {
        if let Incoming::Mad(r) = incoming {
            self.handle_mad(&r, now);
        }
    }

    /// Reports that the transport refused a MAD this client handed out for the query
    /// whose TID's low 32 bits are `id`; the query fails.
    fn handle_send_error(&mut self, _now: Instant, id: TxId, error: TransportError) {
        let Ok(tid) = u32::try_from(id.0) else {
            return;
        };
        let attribute = self.active.get(&tid).map(|q| q.request.attribute());
        if let Some(attribute) = attribute {
            self.fail(tid, QueryError::Transport { attribute, error });
        }
    }

    /// Handles every deadline at or before `now`: re-sends requests (or the last ACK
    /// of a stalled transfer), fails queries out of retries.
    fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<u32> = self
            .active
            .iter()
            .filter(|(_, q)| q.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        for tid in due {
            let Some(q) = self.active.get_mut(&tid) else {
                continue;
            };
            match &mut q.rx {
                None if q.attempts <= self.cfg.retries => {
                    q.attempts += 1;
                    q.deadline = now + self.cfg.timeout;
                    self.stats.retries += 1;
                    let bytes = q.request.to_bytes().to_vec();
                    let addr = self.sa_address();
                    self.out.push_back(outgoing(tid, addr, bytes));
                }
                Some(t) if t.idle_retries < self.cfg.retries => {
                    t.idle_retries += 1;
                    q.deadline = now + self.cfg.timeout;
                    let ack = t.reasm.ack(self.cfg.window);
                    t.granted = t.reasm.last_segment() + self.cfg.window;
                    self.stats.acks += 1;
                    self.out.push_back(outgoing(tid, t.from, ack.to_vec()));
                }
                _ => {
                    let segments = q.rx.as_ref().map_or(0, |t| t.reasm.last_segment());
                    let attribute = q.request.attribute();
                    let attempts = q.attempts;
                    self.fail(
                        tid,
                        QueryError::Timeout {
                            attribute,
                            attempts,
                            segments,
                        },
                    );
                }
            }
        }
    }

    /// The next MAD to send, if any: new requests (up to the in-flight limit), retries
    /// and ACKs, in order.
    fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        self.admit(now);
        self.out.pop_front()
    }

    /// The earliest deadline of a query in flight.
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.active.values().map(|q| q.deadline).min()
    }

    /// The next outcome, in completion order.
    fn poll_event(&mut self) -> Option<SaEvent<C>> {
        self.events.pop_front()
    }

    fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.active.is_empty()
    }
}

/// Every `R` matching `template` in `mask`, from the SA `cfg` names, over `transport`.
///
/// # Errors
/// The query's [`QueryError`]; a fatal transport error as [`QueryError::Transport`].
pub fn query_table<R: SaRecord, T: Transport + ?Sized>(
    transport: &mut T,
    cfg: SaClientConfig,
    template: &R,
    mask: ComponentMask,
) -> Result<Vec<R>, QueryError> {
    let mut client = SaClient::new(cfg);
    client.get_table(template, mask, ());
    let total = cfg
        .timeout
        .saturating_mul(cfg.retries.saturating_add(1).saturating_mul(64));
    let until = transport.now() + total;
    let events = crate::run_to_idle(&mut client, transport, until).map_err(|error| {
        QueryError::Transport {
            attribute: R::ATTRIBUTE_ID,
            error,
        }
    })?;
    match events.into_iter().next() {
        Some(SaEvent::Done { response, .. }) => response.records(),
        Some(SaEvent::Failed { error, .. }) => Err(error),
        None => Err(QueryError::Timeout {
            attribute: R::ATTRIBUTE_ID,
            attempts: cfg.retries + 1,
            segments: 0,
        }),
    }
}

/// The records of a table answer that came as one MAD without RMPP: as many as the
/// 200 data bytes hold at the AttributeOffset (as libibmad's `saquery` counts them),
/// without the all-zero padding after the last record (no SA record is all zeros: a
/// NodeRecord or PortInfoRecord has a LID, a PathRecord a DLID, ...).
fn single_mad_table(h: &SaMad) -> Result<Vec<u8>, String> {
    let stride = h.record_stride();
    if stride == 0 {
        return Err("a table answer with AttributeOffset 0".into());
    }
    let mut n = h.data.len() / stride;
    while n > 0 && h.data[(n - 1) * stride..n * stride].iter().all(|&b| b == 0) {
        n -= 1;
    }
    Ok(h.data[..n * stride].to_vec())
}

/// A MAD of query `tid` (its send error fails that query).
fn outgoing(tid: u32, addr: Address, mad: Vec<u8>) -> Outgoing {
    Outgoing {
        id: Some(TxId(u64::from(tid))),
        addr,
        mad,
    }
}

fn low_tid(mad: &[u8]) -> Option<u32> {
    let h = MadHeaderView::new_checked(mad).ok()?;
    Some(h.transaction_id() as u32)
}

/// Whether `mad` (at least a MAD header long) is an SA response.
fn is_sa_response(mad: &[u8]) -> bool {
    MadHeaderView::new_checked(mad)
        .is_ok_and(|h| h.mgmt_class() == MgmtClass::SubnAdm && h.response())
}

fn parse_header(bytes: &[u8]) -> Result<SaMad, String> {
    let mut full = [0u8; MAD_SIZE];
    let n = bytes.len().min(MAD_SIZE);
    full[..n].copy_from_slice(&bytes[..n]);
    SaMad::parse(&full).map_err(|e| e.to_string())
}

/// A STOP/ABORT answering the segment `mad`: its header with the R bit flipped.
fn control(mad: &[u8], kind: RmppType, status: RmppStatus) -> [u8; MAD_SIZE] {
    let mut out = [0u8; MAD_SIZE];
    out[..SA_HEADER_SIZE].copy_from_slice(&mad[..SA_HEADER_SIZE]);
    out[3] ^= 0x80;
    RmppHeader {
        version: 1,
        rmpp_type: kind,
        resp_time: 0x1f,
        flags: RmppFlags::ACTIVE,
        status,
        data1: 0,
        data2: 0,
    }
    .emit(&mut RmppHeaderView::new_unchecked(&mut out[RMPP_OFFSET..]));
    out
}

#[cfg(test)]
mod tests;
