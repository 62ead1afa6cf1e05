// Over 800 lines: dispatch, RMPP transfers, Report resends share the server's state (see server/).
//! [`SaServer`]: request in, response MADs out.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use ibsm_wire::sa::rmpp::{RMPP_VERSION, RmppPayload, Segmenter, Sender, SenderState};
use ibsm_wire::sa::{
    ComponentMask, InformInfoRecord, LinearForwardingTableRecord, McMemberRecord, PathRecord,
    PortInfoRecord, SA_CLASS_VERSION, SaAttributeId, SaCapabilityMask, SaCapabilityMask2, SaMad,
    SaRecord, SaStatus, ServiceRecord, Template,
};
use ibsm_wire::{
    ClassPortInfo, Instant, MadHeaderView, Method, MgmtClass, RmppFlags, RmppHeaderView,
    RmppStatus, RmppType, Status, mad::RMPP_HEADER_OFFSET,
};

use crate::db::Db;
use crate::mcast::{Groups, MemberChange, MftUpdate};
use crate::request::{Requester, SaError};
use crate::snapshot::SaSnapshot;

mod path;
mod registry;

/// How multi-MAD answers (GetTableResp) leave the SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RmppMode {
    /// As 256-byte RMPP DATA segments under the RMPP sender protocol (the simulator,
    /// transports without kernel RMPP): the window starts at one segment and follows
    /// the receiver's ACKs (NewWindowLast), unacknowledged segments are resent after
    /// [`SaConfig::rmpp_timeout`] (go-back-N) at most [`SaConfig::rmpp_retries`] times
    /// in a row before the SA ABORTs the transfer, a transfer still unfinished
    /// [`SaConfig::rmpp_total_timeout`] after its first segment is ABORTed too (status
    /// 118), and a receiver's STOP or ABORT ends it. Segments beyond the first window leave through [`SaServer::poll_transmit`].
    #[default]
    Segments,
    /// As one message: the 56-byte header with RMPP Active set, then the whole table.
    /// For a umad agent registered with `rmpp_version = 1`: the kernel segments it and
    /// runs the RMPP window.
    Kernel,
}

/// SA settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SaConfig {
    /// Our SM_Key: requests carrying it are trusted (see secrets); requests carrying
    /// another non-zero key are refused with ERR_REQ_DENIED and counted.
    pub sm_key: u64,
    /// How tables are sent.
    pub rmpp: RmppMode,
    /// ClassPortInfo.RespTimeValue (4.096 us * 2^value).
    pub resp_time_value: u8,
    /// Most records of one GetTable answer (a "world" PathRecord query on a big fabric
    /// is N^2).
    pub max_records: usize,
    /// Most ServiceRecords and InformInfo subscriptions kept.
    pub max_registrations: usize,
    /// RMPP (segments mode): how long to wait for an ACK that moves a transfer forward
    /// before resending from the first unacknowledged segment.
    pub rmpp_timeout: Duration,
    /// RMPP: resends in a row without progress before the SA aborts the transfer
    /// (RMPPStatus 126, too many retries).
    pub rmpp_retries: u32,
    /// RMPP (segments mode): the total transaction timer. A transfer not acknowledged to
    /// the end this long after its first segment is ABORTed with RMPPStatus 118 (total
    /// transfer time too long) and its table freed, however regularly its receiver ACKs:
    /// without it, a requester that ACKs one segment just before each time-out holds
    /// its table (up to [`Self::max_transfer_bytes`] in all) indefinitely. Default 40 s,
    /// the total time the Linux kernel's RMPP receiver gives a transfer, so a live
    /// kernel receiver gives up no later than we do; raise it when huge tables cross
    /// slow links.
    pub rmpp_total_timeout: Duration,
    /// RMPP: most tables being sent at once; a GetTable beyond it is answered
    /// ERR_NO_RESOURCES.
    pub max_transfers: usize,
    /// RMPP: most table bytes held by the transfers in progress together (a requester
    /// that asks for big tables and never ACKs holds them until the retries run out);
    /// a GetTable beyond it is answered ERR_NO_RESOURCES.
    pub max_transfer_bytes: usize,
    /// Reports: how long to wait for the subscriber's SubnAdmReportResp before sending
    /// the Report again (OpenSM: `transaction_timeout`).
    pub report_timeout: Duration,
    /// Reports: resends before the SA gives up on one Report (OpenSM:
    /// `transaction_retries`). The subscription is kept, as OpenSM keeps it: a
    /// subscriber that was briefly away still gets the next notices; it goes away when
    /// its port leaves the subnet or it unsubscribes.
    pub report_retries: u32,
}

impl Default for SaConfig {
    fn default() -> Self {
        Self {
            sm_key: 1,
            rmpp: RmppMode::Segments,
            resp_time_value: 18,
            max_records: 1 << 20,
            max_registrations: 65_536,
            rmpp_timeout: Duration::from_millis(200),
            rmpp_retries: 4,
            rmpp_total_timeout: Duration::from_secs(40),
            max_transfers: 4096,
            max_transfer_bytes: 256 << 20,
            report_timeout: Duration::from_millis(200),
            report_retries: 3,
        }
    }
}

impl SaConfig {
    /// Default settings with this SM_Key.
    #[must_use]
    pub fn with_sm_key(sm_key: u64) -> Self {
        Self {
            sm_key,
            ..Self::default()
        }
    }
}

/// What the SA has seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SaCounters {
    /// Requests handled (answered or not).
    pub requests: u64,
    /// Responses sent (one per request, however many segments).
    pub responses: u64,
    /// Requests carrying a non-zero SM_Key that is not ours (refused).
    pub bad_sm_key: u64,
    /// Requests carrying our SM_Key.
    pub trusted: u64,
    /// Requests too short or inconsistent.
    pub malformed: u64,
    /// Unsupported method / attribute combinations.
    pub unsupported: u64,
    /// Error statuses sent in all.
    pub errors: u64,
    /// Reports sent to subscribers (first sends; resends are counted apart).
    pub reports: u64,
    /// Reports sent again because no SubnAdmReportResp came in time.
    pub report_resends: u64,
    /// Reports given up after [`SaConfig::report_retries`] resends.
    pub reports_failed: u64,
    /// SubnAdmReportResp received for a pending Report.
    pub report_acks: u64,
    /// RMPP transfers started (tables in segments mode).
    pub rmpp_transfers: u64,
    /// RMPP transfers the receiver acknowledged to the end.
    pub rmpp_completed: u64,
    /// RMPP transfers ended by a STOP or an ABORT (theirs or ours).
    pub rmpp_aborted: u64,
    /// RMPP time-outs that resent a window.
    pub rmpp_resends: u64,
    /// RMPP transfers we ABORTed because [`SaConfig::rmpp_total_timeout`] ran out
    /// (RMPPStatus 118; also counted in `rmpp_aborted`).
    pub rmpp_total_timeouts: u64,
}

/// A MAD the SA sends on its own (later RMPP segments, resends, ABORTs, Report
/// resends), from [`SaServer::poll_transmit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaTransmit {
    /// Where to: the requester (its LID and QP) or the subscriber.
    pub to: Requester,
    /// The MAD.
    pub mad: Vec<u8>,
}

/// A table's bytes, owned by its transfer.
#[derive(Debug, Clone)]
struct TableBytes(Vec<u8>);

impl RmppPayload for TableBytes {
    fn payload_len(&self) -> usize {
        self.0.len()
    }
    fn copy_to(&self, offset: usize, out: &mut [u8]) {
        out.copy_from_slice(&self.0[offset..offset + out.len()]);
    }
}

/// One table on its way to a requester.
#[derive(Debug)]
struct Transfer {
    to: Requester,
    sender: Sender<TableBytes>,
}

/// A Report waiting for its SubnAdmReportResp.
#[derive(Debug)]
struct PendingReport {
    to: Requester,
    tid: u64,
    mad: Vec<u8>,
    deadline: Instant,
    resends: u32,
}

/// A Report (forwarded trap) for a subscriber.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Subscriber LID.
    pub dlid: u16,
    /// Subscriber QP (InformInfo.QPN).
    pub qpn: u32,
    /// The SubnAdmReport(Notice) MAD.
    pub mad: Vec<u8>,
}

#[derive(Debug, Clone)]
struct Service {
    rec: ServiceRecord,
    /// `None`: infinite lease.
    expires: Option<Instant>,
}

#[derive(Debug, Clone)]
struct Subscription {
    rec: InformInfoRecord,
    lid: u16,
}

/// The Subnet Administrator. Sans-IO: [`Self::handle`] takes a request and returns
/// the MADs to send back to the requester.
#[derive(Debug)]
pub struct SaServer {
    cfg: SaConfig,
    db: Db,
    groups: Groups,
    services: Vec<Service>,
    subs: Vec<Subscription>,
    counters: SaCounters,
    report_tid: u64,
    /// Tables being sent, by (requester LID, QP, TransactionID).
    transfers: HashMap<(u16, u32, u64), Transfer>,
    /// Table bytes the transfers hold.
    transfer_bytes: usize,
    reports: Vec<PendingReport>,
    out: VecDeque<SaTransmit>,
}

type Answer = Result<Vec<Vec<u8>>, SaError>;

impl SaServer {
    /// An SA with an empty database (every query finds nothing until [`Self::load`]).
    #[must_use]
    pub fn new(cfg: SaConfig) -> Self {
        Self {
            cfg,
            db: Db::default(),
            groups: Groups::default(),
            services: Vec::new(),
            subs: Vec::new(),
            counters: SaCounters::default(),
            report_tid: 0x5a00_0000_0000_0000,
            transfers: HashMap::new(),
            transfer_bytes: 0,
            reports: Vec::new(),
            out: VecDeque::new(),
        }
    }

    /// Replaces the database with a new snapshot (after a sweep). Multicast groups,
    /// services and subscriptions persist; every group's MFT is recomputed on the new
    /// topology ([`Self::take_mft_updates`]).
    pub fn load(&mut self, snap: SaSnapshot) {
        drop(self.load_indexed(IndexedSnapshot::new(snap)));
    }

    /// [`Self::load`] for a snapshot indexed beforehand, perhaps on another thread:
    /// indexing a large fabric's snapshot takes a while, swapping it in does not (the
    /// multicast trees are still recomputed here). Returns the snapshot it replaces,
    /// for the host to free where it likes (a large one takes milliseconds).
    pub fn load_indexed(&mut self, snap: IndexedSnapshot) -> IndexedSnapshot {
        let old = std::mem::replace(&mut self.db, snap.0);
        self.groups.retopo(&self.db);
        IndexedSnapshot(old)
    }

    /// Sets the multicast groups the SA keeps whether or not any port is joined, as
    /// OpenSM keeps the IPoIB broadcast group of every `ipoib` partition: each record
    /// gives the group's parameters (MGID, P_Key, Q_Key, MTU, rate, SL, ...; its MLID,
    /// PortGID and JoinState are ignored). A group that already exists under the MGID
    /// keeps its parameters, MLID and members; a group that was predefined and no
    /// longer is goes once its last member leaves. Returns the MGIDs that got no group
    /// because every MLID is taken.
    pub fn set_predefined_groups(&mut self, groups: &[McMemberRecord]) -> Vec<ibsm_wire::Gid> {
        self.groups.predefine(&self.db, groups)
    }

    /// Replaces the SMs SMInfoRecord lists ([`SaSnapshot::sms`]) without reloading the
    /// rest: ActCounts and states move between sweeps.
    pub fn set_sms(&mut self, sms: Vec<(u16, ibsm_wire::SmInfo)>) {
        self.db.snap.sms = sms;
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SaConfig {
        &self.cfg
    }

    /// Counters since creation.
    #[must_use]
    pub fn counters(&self) -> SaCounters {
        self.counters
    }

    /// The snapshot served.
    #[must_use]
    pub fn snapshot(&self) -> &SaSnapshot {
        &self.db.snap
    }

    /// Heap bytes held by the snapshot, its index and the routes (approximate; the
    /// routes are shared with the SM that handed them over).
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.db.memory_bytes()
    }

    /// MFT blocks that changed since the last call, for the SM to write with
    /// SubnSet(MulticastForwardingTable). A tree that changes comes in two steps, so
    /// that no forwarding loop exists while the Sets are in flight: first the ports
    /// the new trees drop, then the ones they add. The SM writes every block of a
    /// step and waits until its switches have confirmed them all before it calls
    /// again (a block given up on must hold the next step: its switch may still hold
    /// the old tree); [`Self::mft_pending`] says whether a further step is waiting.
    pub fn take_mft_updates(&mut self) -> Vec<MftUpdate> {
        self.groups.take_updates(&self.db)
    }

    /// Whether the last [`Self::take_mft_updates`] held back a step (the ports new
    /// trees add) until its blocks are written.
    #[must_use]
    pub fn mft_pending(&self) -> bool {
        self.groups.pending()
    }

    /// The SwitchInfo.MulticastFDBTop each switch with multicast entries needs (switch
    /// GUID -> the last MLID of its highest MFT block in use), for what is handed out
    /// and what the held-back step adds; a switch not listed needs none (0xBFFF).
    #[must_use]
    pub fn mft_tops(&self) -> std::collections::HashMap<u64, u16> {
        self.groups.mft_tops(&self.db)
    }

    /// The switch (node GUID) a group's tree is rooted at, once
    /// [`Self::take_mft_updates`] has built it; `None` without a tree (no receiver).
    #[must_use]
    pub fn mcast_root(&self, mgid: &ibsm_wire::Gid) -> Option<u64> {
        self.groups.root_of(mgid)
    }

    /// `(MGID, MLID, switch GUID)` of every multicast group with members on a switch
    /// whose MulticastFDBCap does not hold the group's MLID, as of the last
    /// [`Self::take_mft_updates`], sorted by MLID then switch. Such a switch joined
    /// with a smaller cap after the MLID was given: the group keeps its MLID (its
    /// members hold it from their joins; moving it would cut every member off until
    /// each re-joined) and its tree routes around that switch, whose members miss the
    /// group's traffic. No MFT block beyond a switch's cap is ever handed out, and new
    /// groups get MLIDs within the smallest cap.
    #[must_use]
    pub fn mlids_beyond_cap(&self) -> Vec<(ibsm_wire::Gid, u16, u64)> {
        self.groups.beyond_cap()
    }

    /// The multicast forwarding the SM has been handed so far ([`Self::take_mft_updates`]):
    /// `(switch GUID, MLID, output ports)`, sorted by switch GUID then MLID. What the
    /// switches hold once those blocks are written (OpenSM's `opensm.mcfdbs` dump).
    #[must_use]
    pub fn mft_ports(&self) -> Vec<(u64, u16, Vec<u8>)> {
        self.groups.programmed()
    }

    /// Handles one received MAD of class 0x03 and returns what to send back to the
    /// requester now: the answer (for a table in segments mode, the segments the RMPP
    /// window allows), the segments an RMPP ACK lets out, nothing for a
    /// SubnAdmReportResp or a MAD too short to answer. Whatever the SA sends later
    /// (further segments after a time-out, ABORTs, Report resends) comes from
    /// [`Self::poll_transmit`].
    pub fn handle(&mut self, now: Instant, mad: &[u8], from: &Requester) -> Vec<Vec<u8>> {
        if mad.len() < ibsm_wire::sa::SA_HEADER_SIZE {
            self.counters.malformed += 1;
            return Vec::new();
        }
        let sa = MadHeaderView::new_unchecked(mad);
        if sa.mgmt_class() != MgmtClass::SubnAdm {
            self.counters.malformed += 1;
            return Vec::new();
        }
        let rmpp_type =
            RmppHeaderView::new_unchecked(&mad[ibsm_wire::mad::RMPP_HEADER_OFFSET..]).rmpp_type();
        if matches!(rmpp_type, RmppType::Ack | RmppType::Stop | RmppType::Abort) {
            return self.on_rmpp_control(now, mad, from);
        }
        if sa.response() {
            if sa.method_byte() == ibsm_wire::mad::METHOD_REPORT_RESP {
                self.on_report_resp(mad, from);
            }
            return Vec::new();
        }
        if rmpp_type != RmppType::None && rmpp_type != RmppType::Data {
            return Vec::new();
        }
        self.counters.requests += 1;
        let mut buf = [0u8; 256];
        let n = mad.len().min(256);
        buf[..n].copy_from_slice(&mad[..n]);
        let Ok(req) = SaMad::parse(&buf) else {
            self.counters.malformed += 1;
            return Vec::new();
        };
        let out = match self.dispatch(now, &req, mad.len(), from) {
            Ok(v) => v,
            Err(e) => {
                self.counters.errors += 1;
                let status = match e {
                    SaError::Sa(s) => s.status(),
                    SaError::Mad(s) => s,
                };
                self.error(&req, status)
            }
        };
        if !out.is_empty() {
            self.counters.responses += 1;
        }
        if self.cfg.rmpp == RmppMode::Segments
            && out.len() == 1
            && out[0]
                .get(RMPP_HEADER_OFFSET..)
                .and_then(|b| RmppHeaderView::new_checked(b).ok())
                .is_some_and(|h| h.rmpp_type() == RmppType::Data)
        {
            // A whole table: segment it and run the RMPP sender.
            let msg = out.into_iter().next().unwrap_or_default();
            return self.start_transfer(now, &req, msg, from);
        }
        out
    }

    /// Starts sending `msg` (header + table) as an RMPP transfer; returns the
    /// segments of the first window.
    fn start_transfer(
        &mut self,
        now: Instant,
        req: &SaMad,
        msg: Vec<u8>,
        from: &Requester,
    ) -> Vec<Vec<u8>> {
        let key = (from.lid, from.qpn, req.transaction_id);
        // A repeated request (same requester and TID) restarts its answer.
        self.remove_transfer(key);
        let hl = ibsm_wire::sa::SA_HEADER_SIZE;
        let mut header = msg;
        let data = header.split_off(hl.min(header.len()));
        if self.transfers.len() >= self.cfg.max_transfers
            || self.transfer_bytes + data.len() > self.cfg.max_transfer_bytes
        {
            self.counters.errors += 1;
            return vec![
                req.reply(SaStatus::NoResources.status(), 0)
                    .to_bytes()
                    .to_vec(),
            ];
        }
        let len = data.len();
        let Ok(seg) = Segmenter::new(
            ibsm_wire::sa::rmpp::RmppLayout::SA,
            &header,
            TableBytes(data),
        ) else {
            self.counters.errors += 1;
            return vec![
                req.reply(SaStatus::NoResources.status(), 0)
                    .to_bytes()
                    .to_vec(),
            ];
        };
        let mut t = Transfer {
            to: *from,
            sender: Sender::new(seg, self.cfg.rmpp_timeout, self.cfg.rmpp_retries)
                .with_total_timeout(self.cfg.rmpp_total_timeout),
        };
        self.counters.rmpp_transfers += 1;
        let out = drain_sender(&mut t.sender, now);
        self.transfers.insert(key, t);
        self.transfer_bytes += len;
        out
    }

    fn remove_transfer(&mut self, key: (u16, u32, u64)) {
        if let Some(t) = self.transfers.remove(&key) {
            self.transfer_bytes -= t.sender.segmenter().data_len();
        }
    }

    /// An RMPP ACK, STOP or ABORT from the receiver of one of our tables.
    fn on_rmpp_control(&mut self, now: Instant, mad: &[u8], from: &Requester) -> Vec<Vec<u8>> {
        if mad.len() < 256 {
            self.counters.malformed += 1;
            return Vec::new();
        }
        let tid = MadHeaderView::new_unchecked(mad).transaction_id();
        let key = (from.lid, from.qpn, tid);
        let Some(t) = self.transfers.get_mut(&key) else {
            // Late or stray: the transfer is over (or never was).
            return Vec::new();
        };
        if t.sender.handle(&mad[..256], now).is_err() {
            self.counters.malformed += 1;
        }
        let out = drain_sender(&mut t.sender, now);
        self.retire(key);
        out
    }

    /// Forgets a transfer that has ended, counting how.
    fn retire(&mut self, key: (u16, u32, u64)) {
        let Some(t) = self.transfers.get(&key) else {
            return;
        };
        match t.sender.state() {
            SenderState::Sending => return,
            SenderState::Complete => self.counters.rmpp_completed += 1,
            SenderState::Stopped(_) | SenderState::Aborted(_) => self.counters.rmpp_aborted += 1,
        }
        self.remove_transfer(key);
    }

    fn on_report_resp(&mut self, mad: &[u8], from: &Requester) {
        // `handle` checked it holds an SA header.
        let tid = MadHeaderView::new_unchecked(mad).transaction_id();
        let before = self.reports.len();
        // The low 32 bits only: a kernel (umad) sending our Report puts its agent's
        // number into the upper half of the TID, and the answer carries that.
        self.reports
            .retain(|r| !(r.tid as u32 == tid as u32 && r.to.lid == from.lid));
        if self.reports.len() < before {
            self.counters.report_acks += 1;
        }
    }

    /// The next MAD the SA sends on its own (see [`SaTransmit`]).
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<SaTransmit> {
        self.out.pop_front()
    }

    /// When [`Self::handle_timeout`] is due: the earliest RMPP or Report deadline.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let rmpp = self
            .transfers
            .values()
            .filter_map(|t| t.sender.poll_timeout())
            .min();
        let reports = self.reports.iter().map(|r| r.deadline).min();
        rmpp.into_iter().chain(reports).min()
    }

    /// Time passes: RMPP windows are resent (or transfers aborted after too many
    /// retries or past the total timer), unanswered Reports are resent (or given up).
    pub fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<(u16, u32, u64)> = self
            .transfers
            .iter()
            .filter(|(_, t)| t.sender.poll_timeout().is_some_and(|d| d <= now))
            .map(|(k, _)| *k)
            .collect();
        for key in due {
            let Some(t) = self.transfers.get_mut(&key) else {
                continue;
            };
            t.sender.handle_timeout(now);
            match t.sender.state() {
                SenderState::Sending => self.counters.rmpp_resends += 1,
                SenderState::Aborted(RmppStatus::TotalTimeTooLong) => {
                    self.counters.rmpp_total_timeouts += 1;
                }
                _ => {}
            }
            let to = t.to;
            for mad in drain_sender(&mut t.sender, now) {
                self.out.push_back(SaTransmit { to, mad });
            }
            self.retire(key);
        }
        let mut i = 0;
        while i < self.reports.len() {
            let r = &mut self.reports[i];
            if r.deadline > now {
                i += 1;
                continue;
            }
            if r.resends >= self.cfg.report_retries {
                self.counters.reports_failed += 1;
                self.reports.swap_remove(i);
                continue;
            }
            r.resends += 1;
            r.deadline = now + self.cfg.report_timeout;
            self.counters.report_resends += 1;
            self.out.push_back(SaTransmit {
                to: r.to,
                mad: r.mad.clone(),
            });
            i += 1;
        }
    }

    /// RMPP transfers in progress.
    #[must_use]
    pub fn transfers_in_progress(&self) -> usize {
        self.transfers.len()
    }

    /// Table bytes the RMPP transfers in progress hold.
    #[must_use]
    pub fn transfer_bytes(&self) -> usize {
        self.transfer_bytes
    }

    /// Reports waiting for their SubnAdmReportResp.
    #[must_use]
    pub fn reports_pending(&self) -> usize {
        self.reports.len()
    }

    fn dispatch(&mut self, now: Instant, req: &SaMad, len: usize, from: &Requester) -> Answer {
        if len < 256 {
            self.counters.malformed += 1;
            return Err(SaStatus::ReqInvalid.into());
        }
        if req.base_version != 1 || req.class_version != SA_CLASS_VERSION {
            self.counters.malformed += 1;
            return Err(SaError::Mad(Status::BAD_VERSION));
        }
        if req.rmpp.rmpp_type != RmppType::None {
            // Multi-MAD requests (GetMulti) are not served.
            self.counters.unsupported += 1;
            return Err(SaError::Mad(Status::METHOD_UNSUPPORTED));
        }
        let trusted = self.cfg.sm_key != 0 && req.sm_key == self.cfg.sm_key;
        if req.sm_key != 0 && !trusted {
            // OpenSM drops these silently; a requester deserves to know, and the
            // operator to see it counted.
            self.counters.bad_sm_key += 1;
            return Err(SaStatus::ReqDenied.into());
        }
        if trusted {
            self.counters.trusted += 1;
        }
        let m = req.method;
        let mask = req.component_mask;
        let table = m == Method::GetTable;
        let read = m == Method::Get || table;
        let unsupported = || SaError::Mad(Status::METHOD_ATTR_UNSUPPORTED);
        match req.attribute() {
            SaAttributeId::ClassPortInfo if m == Method::Get => {
                let cpi = self.class_port_info();
                Ok(self.single(req, Status::OK, &cpi))
            }
            SaAttributeId::NodeRecord if read => self.records(req, mask, self.db.node_records()),
            SaAttributeId::PortInfoRecord if read => {
                // CapabilityMask(2) components match records having every bit the
                // template sets (as OpenSM, advertised in ClassPortInfo): `saquery -s`
                // asks for IsSM ports this way.
                let t: PortInfoRecord = req.record(0).map_err(|_| invalid())?;
                let cap = mask
                    .contains(PortInfoRecord::CM_CAPABILITY_MASK)
                    .then_some(t.port_info.capability_mask);
                let cap2 = mask
                    .contains(PortInfoRecord::CM_CAPABILITY_MASK2)
                    .then_some(t.port_info.capability_mask2);
                let mask = mask
                    & !(PortInfoRecord::CM_CAPABILITY_MASK | PortInfoRecord::CM_CAPABILITY_MASK2);
                let it = self.db.port_info_records(trusted).filter(|r| {
                    cap.is_none_or(|c| r.port_info.capability_mask.contains(c))
                        && cap2.is_none_or(|c| r.port_info.capability_mask2.contains(c))
                });
                self.records(req, mask, it)
            }
            SaAttributeId::LinkRecord if read => self.records(req, mask, self.db.link_records()),
            SaAttributeId::SwitchInfoRecord if read => {
                self.records(req, mask, self.db.switch_info_records())
            }
            SaAttributeId::LinearForwardingTableRecord if read => {
                let t: LinearForwardingTableRecord = req.record(0).map_err(|_| invalid())?;
                let only = mask
                    .contains(LinearForwardingTableRecord::CM_LID)
                    .then_some(t.lid);
                let it = self.db.lft_records(only);
                self.records(req, mask, it)
            }
            SaAttributeId::SmInfoRecord if read => {
                self.records(req, mask, self.db.sm_info_records(trusted))
            }
            SaAttributeId::PKeyTableRecord if read => {
                let own = self.db.end_by_lid(from.lid).copied();
                let it = self.db.pkey_records(trusted, own);
                self.records(req, mask, it)
            }
            SaAttributeId::GuidInfoRecord if read => {
                self.records(req, mask, self.db.guid_info_records())
            }
            SaAttributeId::PathRecord if read => {
                let t: PathRecord = req.record(0).map_err(|_| invalid())?;
                let recs = self.path_records(&t, mask, self.limit(table))?;
                let mut data = Vec::with_capacity(recs.len() * 64);
                for r in &recs {
                    push_record(&mut data, r);
                }
                // A Get of a path is answered with the first (best) one.
                let n = if table { recs.len() } else { recs.len().min(1) };
                data.truncate(n * 64);
                self.answer::<PathRecord>(req, n, &data)
            }
            SaAttributeId::McMemberRecord => {
                let t: McMemberRecord = req.record(0).map_err(|_| invalid())?;
                match m {
                    Method::Set | Method::Delete => {
                        let c = MemberChange {
                            t: &t,
                            mask,
                            trusted,
                            from,
                        };
                        let rec = if m == Method::Set {
                            self.groups.join(&self.db, c)
                        } else {
                            self.groups.leave(&self.db, c)
                        }?;
                        Ok(self.single(req, Status::OK, &rec))
                    }
                    _ if read => {
                        let recs = self.groups.records(&self.db, trusted, from);
                        self.records(req, mask, recs.into_iter())
                    }
                    _ => Err(unsupported()),
                }
            }
            SaAttributeId::ServiceRecord => self.service(now, req, trusted, from),
            SaAttributeId::InformInfo if m == Method::Set => self.inform(req, trusted, from),
            SaAttributeId::InformInfoRecord if read => {
                let recs: Vec<InformInfoRecord> = self
                    .subs
                    .iter()
                    .filter(|s| trusted || s.lid == from.lid)
                    .map(|s| s.rec)
                    .collect();
                self.records(req, mask, recs.into_iter())
            }
            SaAttributeId::Unknown(_) => {
                self.counters.unsupported += 1;
                Err(unsupported())
            }
            _ => {
                self.counters.unsupported += 1;
                if matches!(
                    m,
                    Method::Get | Method::GetTable | Method::Set | Method::Delete
                ) {
                    Err(unsupported())
                } else {
                    Err(SaError::Mad(Status::METHOD_UNSUPPORTED))
                }
            }
        }
    }

    /// The records of `it` that match the request's template, answered as a Get (exactly
    /// one) or a GetTable (up to `max_records`).
    fn records<R: SaRecord>(
        &self,
        req: &SaMad,
        mask: ComponentMask,
        it: impl Iterator<Item = R>,
    ) -> Answer {
        let table = req.method == Method::GetTable;
        let (n, data) = collect(req, mask, it, self.limit(table))?;
        self.answer::<R>(req, n, &data)
    }

    fn limit(&self, table: bool) -> usize {
        if table { self.cfg.max_records } else { 2 }
    }

    fn class_port_info(&self) -> ClassPortInfo {
        ClassPortInfo {
            base_version: 1,
            class_version: SA_CLASS_VERSION,
            // Reports are sent (InformInfo); optional records and multicast served.
            capability_mask: (SaCapabilityMask::TRAP
                | SaCapabilityMask::OPTIONAL_RECORDS
                | SaCapabilityMask::UD_MULTICAST
                | SaCapabilityMask::PORT_INFO_CAP_MASK_MATCH)
                .bits(),
            // Send-only full members create groups (what Linux IPoIB checks for).
            capability_mask2: (SaCapabilityMask2::PORT_INFO_CAP_MASK2_MATCH
                | SaCapabilityMask2::SENDONLY_FULL_MEMBER)
                .bits(),
            resp_time_value: self.cfg.resp_time_value,
            ..ClassPortInfo::default()
        }
    }

    // ------------------------------------------------------------------ replies

    fn single<R: SaRecord>(&self, req: &SaMad, status: Status, rec: &R) -> Vec<Vec<u8>> {
        let mut h = req.reply(status, 0);
        let _ = rec.emit_into(&mut h.data);
        vec![h.to_bytes().to_vec()]
    }

    fn error(&self, req: &SaMad, status: Status) -> Vec<Vec<u8>> {
        if req.method == Method::GetTable {
            self.table(req, status, 0, &[])
        } else {
            vec![req.reply(status, 0).to_bytes().to_vec()]
        }
    }

    /// The answer to a Get (exactly one record) or a GetTable (any number).
    fn answer<R: SaRecord>(&self, req: &SaMad, n: usize, data: &[u8]) -> Answer {
        if req.method == Method::GetTable {
            return Ok(self.table(req, Status::OK, R::ATTRIBUTE_OFFSET, data));
        }
        match n {
            0 => Err(SaStatus::NoRecords.into()),
            1 => {
                let mut h = req.reply(Status::OK, 0);
                let k = R::SIZE.min(data.len());
                h.data[..k].copy_from_slice(&data[..k]);
                Ok(vec![h.to_bytes().to_vec()])
            }
            _ => Err(SaStatus::TooManyRecords.into()),
        }
    }

    fn table(&self, req: &SaMad, status: Status, offset: u16, data: &[u8]) -> Vec<Vec<u8>> {
        let mut h = req.reply(status, offset);
        h.rmpp.version = RMPP_VERSION;
        h.rmpp.rmpp_type = RmppType::Data;
        h.rmpp.resp_time = self.cfg.resp_time_value.min(0x1F);
        // Exactly header + table: the kernel (or, in segments mode, `start_transfer`)
        // pads the last segment itself, and padding here would read as extra (empty)
        // records.
        h.rmpp.flags = RmppFlags::ACTIVE;
        let mut out = h.to_bytes()[..ibsm_wire::sa::SA_HEADER_SIZE].to_vec();
        out.extend_from_slice(data);
        vec![out]
    }
}

/// The MADs a sender lets out now.
fn drain_sender(s: &mut Sender<TableBytes>, now: Instant) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(m) = s.poll_transmit(now) {
        out.push(m.to_vec());
    }
    out
}

fn invalid() -> SaError {
    SaError::Sa(SaStatus::ReqInvalid)
}

fn push_record<R: SaRecord>(out: &mut Vec<u8>, r: &R) {
    let stride = usize::from(R::ATTRIBUTE_OFFSET) * 8;
    let at = out.len();
    out.resize(at + stride, 0);
    let _ = r.emit_into(&mut out[at..]);
}

/// Encodes every candidate, keeps those matching the request's template (up to
/// `limit`), and returns how many with their table bytes.
fn collect<R: SaRecord>(
    req: &SaMad,
    mask: ComponentMask,
    it: impl Iterator<Item = R>,
    limit: usize,
) -> Result<(usize, Vec<u8>), SaError> {
    let tmpl = Template::<R>::from_bytes(&req.data, mask).map_err(|_| invalid())?;
    let stride = usize::from(R::ATTRIBUTE_OFFSET) * 8;
    let mut data = Vec::new();
    let mut n = 0;
    for r in it {
        if n >= limit {
            break;
        }
        let at = data.len();
        data.resize(at + stride, 0);
        if r.emit_into(&mut data[at..]).is_ok() && tmpl.matches_bytes(&data[at..]) {
            n += 1;
        } else {
            data.truncate(at);
        }
    }
    Ok((n, data))
}

/// A snapshot with the indexes the SA answers from (by LID, by port GUID, the switch
/// tables' paths): what [`SaServer::load`] builds first, made apart so that a host can
/// build it away from the SA's thread and swap it in with [`SaServer::load_indexed`].
pub struct IndexedSnapshot(Db);

impl IndexedSnapshot {
    /// Indexes `snap`.
    #[must_use]
    pub fn new(snap: SaSnapshot) -> Self {
        Self(Db::new(snap))
    }

    /// The snapshot itself.
    #[must_use]
    pub fn snapshot(&self) -> &SaSnapshot {
        &self.0.snap
    }
}

impl std::fmt::Debug for IndexedSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexedSnapshot")
            .field("nodes", &self.0.snap.nodes.len())
            .finish_non_exhaustive()
    }
}
