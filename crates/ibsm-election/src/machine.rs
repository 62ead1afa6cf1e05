// Over 800 lines: one state machine: each state's transitions read best side by side.
//! The election state machine.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use core::time::Duration;

use ibsm_wire::{Instant, MAD_SIZE, Method, Status};

use crate::config::Config;
use crate::error::{ElectionConfigError, Error};
use crate::event::{ElectionEvent, RejectReason};
use crate::mad::{SmAddr, Transmit, build_request, build_response, parse};
use ibsm_wire::{SmInfo, SmInfoControl, SmState};

/// Whether SM `a` outranks SM `b`: higher priority, or equal priority and a numerically
/// lower GUID. This total order decides every election.
#[must_use]
pub fn outranks(a_priority: u8, a_guid: u64, b_priority: u8, b_guid: u64) -> bool {
    a_priority > b_priority || (a_priority == b_priority && a_guid < b_guid)
}

/// Who sent a SubnGet/SubnSet(SMInfo) to this SM, as far as the host knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Requester {
    /// The SMA checked the request's M_Key against this port's M_Key and it matched
    /// (or the port has no M_Key, as OpenSM treats it). Such a requester reads the
    /// real SM_Key.
    pub m_key_authenticated: bool,
    /// The requester's port GUID, when the host can tell (e.g. from its source LID).
    /// A requester that is the Master this SM authenticated reads the real SM_Key.
    pub guid: Option<u64>,
    /// How to reach the requester, when the host can tell. Needed to poll a Master that
    /// sent STANDBY and to acknowledge a HANDOVER; otherwise the peer table (filled by
    /// sweeps) is used.
    pub addr: Option<SmAddr>,
}

/// How a peer's SM_Key compares with ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyCheck {
    /// Equal, or we have no key configured.
    Match,
    /// The peer showed 0: it hid its key from us.
    Hidden,
    /// A different non-zero key.
    Wrong,
}

#[derive(Debug, Clone)]
struct Peer {
    addr: Option<SmAddr>,
    info: SmInfo,
    /// Seen at least once with our SM_Key (and not with a wrong one since).
    key_verified: bool,
    /// ActCount at which this peer was declared a stalled Master; while it still shows
    /// this value it is treated as dead.
    dead_act_count: Option<u32>,
    /// An UnauthenticatedHigherPrioritySm event was emitted for its current SMInfo.
    reported: bool,
}

/// Most SubnGet(SMInfo) of one Standby whose answers are still taken. A streak of
/// unanswered rounds holds `1 + reprobe_gets × polling_retries` of them at most; the
/// bound only keeps a host with absurd settings from growing the list.
const MAX_POLL_GETS: usize = 64;

/// One SubnGet(SMInfo) a Standby sent its Master (a poll or a re-probe).
#[derive(Debug, Clone, Copy)]
struct PollGet {
    /// Lower 32 bits of its TransactionID.
    tid: u32,
    /// The round it belongs to ([`Standby::round`]).
    round: u32,
    /// When it went out: a frozen ActCount is judged against it.
    sent: Instant,
}

/// A Standby polling its Master. A *round* is one poll, or one re-probe of an unanswered
/// round (`reprobe_gets` Gets sent together); it fails when none of its Gets is answered
/// within the answer time, or when an answer shows no live Master.
#[derive(Debug, Clone)]
struct Standby {
    master: u64,
    addr: SmAddr,
    /// When the next regular poll goes out: `polling_timeout` after the last Get sent.
    next_poll: Instant,
    /// Gets whose answers are still taken, oldest first: every Get since the last live
    /// answer, so that a late answer to an earlier poll or re-probe counts too.
    gets: VecDeque<PollGet>,
    /// The number of the latest round.
    round: u32,
    /// When the latest round counts as unanswered; `None` once it was answered or
    /// counted.
    round_by: Option<Instant>,
    /// Rounds in a row that failed.
    failed: u32,
    /// ActCount of the last answer a frozen count is judged against, and when it came.
    last_act: Option<(u32, Instant)>,
}

#[derive(Debug, Clone)]
struct Master {
    next_heartbeat: Instant,
    handover_to: Option<u64>,
    lower_masters: BTreeSet<u64>,
}

#[derive(Debug, Clone)]
enum State {
    NotActive,
    Discovering,
    Standby(Standby),
    Master(Master),
}

impl State {
    fn sm_state(&self) -> SmState {
        match self {
            Self::NotActive => SmState::NotActive,
            Self::Discovering => SmState::Discovering,
            Self::Standby(_) => SmState::Standby,
            Self::Master(_) => SmState::Master,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PendingKind {
    /// SubnGet(SMInfo) of the sweep with this id.
    Probe(u32),
    Handover(u64),
    Control(SmInfoControl),
    /// SubnGet(SMInfo) of the SM that handed over to us, asking whether it has left
    /// Master yet ([`OwedAck`]).
    AckCheck(u64),
    Ack,
    /// SubnGet(SMInfo) of a Master refreshing what it knows of this SM.
    Refresh(u64),
    /// SubnGet(SMInfo) of an SM that sent us an SMInfo request without being known
    /// ([`Election::learn`]).
    Learn,
}

/// The ACKNOWLEDGE this SM owes the SM whose HANDOVER made it Master.
///
/// It is held back until that SM is seen to have left Master: OpenSM sends its HANDOVER
/// and only then moves itself to Standby, and refuses an ACKNOWLEDGE that arrives before
/// (ERR 2F07, "Failed check of legality of needed SM transition", status 7). An answer
/// as fast as ours can beat that step, so the ACKNOWLEDGE would be refused now and then.
/// A sender that keeps saying Master for `transaction_retries + 1` checks
/// `transaction_timeout` apart may be waiting for the ACKNOWLEDGE itself: it gets it then.
/// One that never answers gets none. One ACKNOWLEDGE per handover: a HANDOVER that
/// finds this SM already Master (a resend) owes nothing.
#[derive(Debug, Clone)]
struct OwedAck {
    to: u64,
    addr: SmAddr,
    /// The SMInfo to send: this SM as the HANDOVER found it, with the real SM_Key and
    /// the state always Standby (OpenSM requires it of an ACKNOWLEDGE, even from an SM
    /// that was Discovering).
    payload: SmInfo,
    /// When to ask again; `None` while a check is outstanding.
    next_check: Option<Instant>,
    /// Further checks that may still see it Master before the ACKNOWLEDGE goes anyway.
    checks_left: u32,
}

/// Sweeps kept open at once before the oldest is dropped undecided.
const MAX_OPEN_SWEEPS: usize = 8;

#[derive(Debug, Clone)]
struct Sweep {
    id: u32,
    found: BTreeSet<u64>,
    closing: bool,
}

#[derive(Debug, Clone)]
struct Pending {
    tid: u32,
    kind: PendingKind,
    tx: Transmit,
    deadline: Instant,
    resends_left: u32,
}

/// Another SM as the election knows it ([`Election::known_sms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KnownSm {
    /// Its SMInfo as last received.
    pub info: SmInfo,
    /// Where its port was reached, when known.
    pub addr: Option<SmAddr>,
    /// Whether the last completed sweep found it.
    pub in_last_sweep: bool,
}

/// One SM's side of the election, sans-IO.
///
/// Feed it inputs (received SMInfo MADs, sweep results, the current time) and drain its
/// outputs ([`poll_transmit`](Self::poll_transmit), [`poll_event`](Self::poll_event),
/// [`poll_timeout`](Self::poll_timeout)) after each one. It never reads a clock: every
/// input carries `now`, an [`Instant`] of the host's clock, and every deadline it hands
/// back is one on the same timeline.
#[derive(Debug, Clone)]
pub struct Election {
    cfg: Config,
    state: State,
    act_count: u32,
    next_tid: u32,
    peers: BTreeMap<u64, Peer>,
    /// Open sweeps, oldest first: the SMs each has found and whether the host has
    /// completed it. Several may be open when probes outlast the sweep interval.
    sweeps: VecDeque<Sweep>,
    next_sweep_id: u32,
    /// The SMs of the last completed sweep, kept to pick another handover target
    /// when one does not answer.
    last_found: BTreeSet<u64>,
    /// Address of a Master just declared lost for silence: the next decision does not
    /// wait for a probe sent there (it would only time out).
    lost_addr: Option<SmAddr>,
    pending: Vec<Pending>,
    handed_over_to: Option<u64>,
    owed_ack: Option<OwedAck>,
    transmits: VecDeque<Transmit>,
    events: VecDeque<ElectionEvent>,
    state_changes: u64,
}

impl Election {
    /// A new SM in the Discovering state. Its first event is [`ElectionEvent::SweepNeeded`].
    ///
    /// # Errors
    /// What [`Config::validate`] rejects: [`ElectionConfigError::Priority`] for a priority above
    /// 15, [`ElectionConfigError::ZeroGuid`] for GUID 0, and [`ElectionConfigError::ZeroDuration`] for a
    /// zero `polling_timeout`, `transaction_timeout` or `heartbeat_interval`.
    pub fn new(cfg: Config, _now: Instant) -> Result<Self, ElectionConfigError> {
        cfg.validate()?;
        let mut e = Self {
            cfg,
            state: State::Discovering,
            act_count: 0,
            next_tid: 1,
            peers: BTreeMap::new(),
            sweeps: VecDeque::new(),
            next_sweep_id: 0,
            last_found: BTreeSet::new(),
            lost_addr: None,
            pending: Vec::new(),
            handed_over_to: None,
            owed_ack: None,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            state_changes: 0,
        };
        e.events.push_back(ElectionEvent::SweepNeeded);
        Ok(e)
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Current state.
    #[must_use]
    pub fn state(&self) -> SmState {
        self.state.sm_state()
    }

    /// Number of state changes since creation (a flapping indicator).
    #[must_use]
    pub fn state_changes(&self) -> u64 {
        self.state_changes
    }

    /// The GUID of the SM a Standby polls.
    #[must_use]
    pub fn following(&self) -> Option<u64> {
        match &self.state {
            State::Standby(s) => Some(s.master),
            _ => None,
        }
    }

    /// This SM's SMInfo, SM_Key included, for the SM's own SMA.
    ///
    /// Two ways to serve it: route SubnGet/SubnSet(SMInfo) to
    /// [`handle_request`](Self::handle_request) (which also hides the key and applies
    /// control codes), or copy this value into an SMA that answers by itself (such as
    /// `ibsm_sma::Sma::set_sm_info`) after every drain of the outputs, since ActCount and
    /// the state move, and feed the Sets it reports to
    /// [`handle_control`](Self::handle_control). Such an SMA must hide the key as
    /// [`reveals_key_to`](Self::reveals_key_to) does. A hung SM stops refreshing the copy,
    /// which is how polling Standbys notice it (its ActCount freezes).
    #[must_use]
    pub fn sm_info(&self) -> SmInfo {
        SmInfo {
            guid: self.cfg.guid,
            sm_key: self.cfg.sm_key,
            act_count: self.act_count,
            priority: self.cfg.priority,
            sm_state: self.state(),
        }
    }

    /// The other SMs this one has heard from (SMInfo answers to its probes and polls),
    /// each as last seen: its SMInfo (SM_Key as that SM showed it: 0 when it hid it),
    /// where it was reached, and whether the last completed sweep found it (an SM that
    /// left the subnet stays known, with `in_last_sweep` false).
    pub fn known_sms(&self) -> impl Iterator<Item = KnownSm> + '_ {
        self.peers.iter().map(|(g, p)| KnownSm {
            info: p.info,
            addr: p.addr,
            in_last_sweep: self.last_found.contains(g),
        })
    }

    /// As Master, asks every other SM the last completed sweep found (and reached) for
    /// its SMInfo again, as OpenSM's master does at each light sweep, so that
    /// [`known_sms`](Self::known_sms) (and the SA's SMInfoRecords built from it) shows
    /// their current ActCount, state and priority rather than what the last heavy sweep
    /// saw. Returns how many SubnGet(SMInfo) it queued.
    ///
    /// The answers only refresh the peer table: they are not a sweep's findings and
    /// decide nothing (handovers and the detection of other Masters stay with the
    /// sweeps, which probe every SM anyway). Nothing is sent when no other SM is known,
    /// outside the Master state, or to an SM that a request of ours is still waiting
    /// on. Unanswered refreshes are resent `transaction_retries` times, then dropped;
    /// the SM stays listed as last seen until a sweep no longer finds it.
    pub fn refresh_known_sms(&mut self, now: Instant) -> usize {
        if !matches!(self.state, State::Master(_)) {
            return 0;
        }
        let targets: Vec<(u64, SmAddr)> = self
            .last_found
            .iter()
            .filter_map(|g| Some((*g, self.peers.get(g)?.addr?)))
            .filter(|(_, addr)| !self.pending.iter().any(|p| p.tx.to == *addr))
            .collect();
        let info = self.sm_info();
        for (guid, addr) in &targets {
            self.send_request(
                now,
                *addr,
                Method::Get,
                0,
                &info,
                PendingKind::Refresh(*guid),
            );
        }
        targets.len()
    }

    /// An SMInfo request (Get or Set) came from `requester`: if it is an SM this one does
    /// not know, or last saw Discovering, asks it for its SMInfo (SubnGet at
    /// `requester.addr`), so that a new SM on a port that was already up (no trap, and
    /// no sweep of ours has probed it yet) is known as soon as it talks to us. Returns
    /// whether a request was queued.
    ///
    /// The requester is known when `requester.guid` names a peer, or, without a GUID,
    /// when a peer was reached at `requester.addr`. Nothing is sent without an address,
    /// for our own GUID, while NotActive, or when a request of ours to that address is
    /// still waiting. The answer updates [`known_sms`](Self::known_sms) and counts as a
    /// finding of the last sweep (and of any open one): a Master decides on it at once
    /// (hands over to a higher authenticated Standby or Master, reports another Master),
    /// a Discovering SM at the end of its sweep. An SM last seen Discovering is asked
    /// again, so a higher-priority newcomer gets the handover once it stands by (its
    /// polls of the Master are SMInfo requests too).
    pub fn learn(&mut self, now: Instant, requester: &Requester) -> bool {
        let Some(addr) = requester.addr else {
            return false;
        };
        if matches!(self.state, State::NotActive) || requester.guid == Some(self.cfg.guid) {
            return false;
        }
        let known = match requester.guid {
            Some(g) => self.peers.get(&g),
            None => self.peers.values().find(|p| p.addr == Some(addr)),
        };
        if known.is_some_and(|p| p.info.sm_state != SmState::Discovering) {
            return false;
        }
        if self.pending.iter().any(|p| p.tx.to == addr) {
            return false;
        }
        let info = self.sm_info();
        self.send_request(now, addr, Method::Get, 0, &info, PendingKind::Learn);
        true
    }

    /// Whether `requester` may read the real SM_Key (else it reads 0): it passed the M_Key
    /// check, or it is a Master whose SM_Key this SM verified, or no key is configured.
    #[must_use]
    pub fn reveals_key_to(&self, requester: &Requester) -> bool {
        self.cfg.sm_key == 0
            || requester.m_key_authenticated
            || requester.guid.is_some_and(|g| {
                self.peers
                    .get(&g)
                    .is_some_and(|p| p.key_verified && p.info.sm_state == SmState::Master)
            })
    }

    /// This SM's SMInfo as `requester` may see it.
    #[must_use]
    pub fn sm_info_for(&self, requester: &Requester) -> SmInfo {
        let mut i = self.sm_info();
        if !self.reveals_key_to(requester) {
            i.sm_key = 0;
        }
        i
    }

    /// Changes this SM's priority at run time (OpenSM `sm_priority`). Nothing moves at
    /// once: a Master now outranked hands over after its next sweep, and a Standby now
    /// outranking its Master gets the HANDOVER at that Master's next sweep.
    ///
    /// # Errors
    /// [`ElectionConfigError::Priority`] outside 0..=15; nothing changes then.
    pub fn set_priority(&mut self, priority: u8) -> Result<(), ElectionConfigError> {
        if priority > 15 {
            return Err(ElectionConfigError::Priority(priority));
        }
        self.cfg.priority = priority;
        Ok(())
    }

    /// Counts SMPs the host sent on this SM's behalf (sweeps, configuration): like
    /// OpenSM, ActCount reflects management activity.
    pub fn record_smps_sent(&mut self, n: u32) {
        self.act_count = self.act_count.wrapping_add(n);
    }

    /// Next output MAD to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// Next event for the host.
    pub fn poll_event(&mut self) -> Option<ElectionEvent> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let state = match &self.state {
            State::Standby(s) => Some(s.round_by.map_or(s.next_poll, |t| t.min(s.next_poll))),
            State::Master(m) => Some(m.next_heartbeat),
            _ => None,
        };
        let ack = self.owed_ack.as_ref().and_then(|a| a.next_check);
        self.pending
            .iter()
            .map(|p| p.deadline)
            .chain(state)
            .chain(ack)
            .min()
    }

    // ----- sweeps ---------------------------------------------------------------------

    /// The host starts a sweep: SMs found from now on form the picture the next
    /// [`sweep_complete`](Self::sweep_complete) decides on.
    pub fn begin_sweep(&mut self, _now: Instant) {
        self.open_sweep();
    }

    fn open_sweep(&mut self) -> u32 {
        // A host that never completes its sweeps must not make this grow without bound.
        if self.sweeps.len() >= MAX_OPEN_SWEEPS {
            self.sweeps.pop_front();
        }
        let id = self.next_sweep_id;
        self.next_sweep_id = self.next_sweep_id.wrapping_add(1);
        self.sweeps.push_back(Sweep {
            id,
            found: BTreeSet::new(),
            closing: false,
        });
        id
    }

    fn current_sweep(&mut self) -> u32 {
        match self.sweeps.back() {
            Some(s) if !s.closing => s.id,
            _ => self.open_sweep(),
        }
    }

    /// Asks the SM at `addr` (a port with CapabilityMask.IsSM found by the sweep) for its
    /// SMInfo. The answer feeds the sweep's decision; unanswered probes are resent
    /// `transaction_retries` times.
    pub fn probe(&mut self, now: Instant, addr: SmAddr) {
        let info = self.sm_info();
        let id = self.current_sweep();
        self.send_request(now, addr, Method::Get, 0, &info, PendingKind::Probe(id));
    }

    /// The host read an SM's SMInfo itself during the sweep (instead of [`probe`](Self::probe)).
    pub fn sm_found(&mut self, now: Instant, addr: Option<SmAddr>, info: SmInfo) {
        self.current_sweep();
        self.note_sm(now, addr, info);
    }

    /// The sweep has probed every SM it found. Once the last probe is answered or given
    /// up, a Discovering SM decides (Standby under a Master or higher SM, else Master)
    /// and a Master hands over to a higher authenticated SM if there is one.
    pub fn sweep_complete(&mut self, now: Instant) {
        self.current_sweep();
        if let Some(s) = self.sweeps.back_mut() {
            s.closing = true;
        }
        self.maybe_close_sweep(now);
    }

    // ----- operator -------------------------------------------------------------------

    /// Stops taking part: NotActive (answers Gets, obeys only STANDBY and DISCOVER).
    pub fn disable(&mut self, now: Instant) {
        self.enter(now, State::NotActive);
    }

    /// From NotActive, starts again in Discovering (emits [`ElectionEvent::SweepNeeded`]).
    pub fn enable(&mut self, now: Instant) {
        if matches!(self.state, State::NotActive) {
            self.enter(now, State::Discovering);
        }
    }

    /// As Master, sends SubnSet(SMInfo) DISABLE, STANDBY or DISCOVER to the SM at `addr`.
    /// The outcome arrives as [`ElectionEvent::ControlCompleted`].
    ///
    /// # Errors
    /// [`Error::ControlNotAllowed`] when not Master or for HANDOVER/ACKNOWLEDGE, which
    /// only the election sends.
    pub fn send_control(
        &mut self,
        now: Instant,
        addr: SmAddr,
        code: SmInfoControl,
    ) -> Result<(), Error> {
        if !matches!(
            code,
            SmInfoControl::Disable | SmInfoControl::Standby | SmInfoControl::Discover
        ) {
            return Err(Error::ControlNotAllowed {
                code: code.into(),
                why: "only DISABLE, STANDBY and DISCOVER can be sent on request",
            });
        }
        if !matches!(self.state, State::Master(_)) {
            return Err(Error::ControlNotAllowed {
                code: code.into(),
                why: "only the Master sends control codes",
            });
        }
        let info = self.sm_info();
        self.send_request(
            now,
            addr,
            Method::Set,
            code.into(),
            &info,
            PendingKind::Control(code),
        );
        Ok(())
    }

    // ----- time -----------------------------------------------------------------------

    /// Runs every timer due at `now`: resends, given-up requests, polls, heartbeats.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].deadline > now {
                i += 1;
                continue;
            }
            if self.pending[i].resends_left > 0 {
                let p = &mut self.pending[i];
                p.resends_left -= 1;
                p.deadline = now + self.cfg.transaction_timeout;
                let tx = p.tx.clone();
                self.push_tx(tx);
                i += 1;
            } else {
                let p = self.pending.swap_remove(i);
                self.give_up(now, &p);
            }
        }
        match &mut self.state {
            State::Master(m) if m.next_heartbeat <= now => {
                let beats = 1 + duration_div(now - m.next_heartbeat, self.cfg.heartbeat_interval);
                m.next_heartbeat += self.cfg.heartbeat_interval * beats;
                self.act_count = self.act_count.wrapping_add(beats);
            }
            State::Standby(s) if s.round_by.is_some_and(|t| t <= now) => {
                // An unanswered round is confirmed at once, not a polling period later:
                // a dead Master is lost `rounds` answer times after the first miss.
                s.round_by = None;
                s.failed += 1;
                if s.failed >= self.cfg.polling_rounds() {
                    let (g, addr) = (s.master, s.addr);
                    self.lost_addr = Some(addr);
                    self.lose_master(now, g, None);
                    return;
                }
                self.send_poll_round(now, self.cfg.reprobe_gets.max(1));
            }
            State::Standby(s) if s.round_by.is_none() && s.next_poll <= now => {
                self.send_poll_round(now, 1);
            }
            _ => {}
        }
        if let Some(a) = &mut self.owed_ack
            && a.next_check.is_some_and(|t| t <= now)
        {
            a.next_check = None;
            self.send_ack_check(now);
        }
        self.maybe_close_sweep(now);
    }

    // ----- MADs -----------------------------------------------------------------------

    /// A SubnGet or SubnSet(SMInfo) addressed to this SM (already past the SMA's M_Key
    /// and directed-route checks). Returns the GetResp to send back the way the request
    /// came; side effects (state changes, an ACKNOWLEDGE to send) go to the polls.
    ///
    /// # Errors
    /// [`Error`] for bytes that are not an SMInfo request; nothing changes then.
    pub fn handle_request(
        &mut self,
        now: Instant,
        mad: &[u8],
        requester: &Requester,
    ) -> Result<[u8; MAD_SIZE], Error> {
        let p = parse(mad)?;
        if p.response {
            return Err(Error::WrongDirection { response: true });
        }
        // Answering is management activity: a live SM's ActCount moves with every answer.
        self.act_count = self.act_count.wrapping_add(1);
        match p.method {
            Method::Get => build_response(mad, Status::OK, &self.sm_info_for(requester)),
            Method::Set => {
                let (status, payload) = self.handle_set(now, p.modifier, p.info, requester);
                build_response(mad, status, &payload)
            }
            _ => build_response(
                mad,
                Status::METHOD_ATTR_UNSUPPORTED,
                &self.sm_info_for(requester),
            ),
        }
    }

    /// A SubnSet(SMInfo) that the host's own SMA already answered (for SMAs that serve
    /// SMInfo themselves, such as `ibsm-sma`, which reports the Set as an event after
    /// responding with the SMInfo it held). Applies the control code exactly as
    /// [`handle_request`](Self::handle_request) would and returns the status that
    /// function would have answered with (0x001C when refused).
    pub fn handle_control(
        &mut self,
        now: Instant,
        control: u32,
        sender: SmInfo,
        requester: &Requester,
    ) -> Status {
        self.act_count = self.act_count.wrapping_add(1);
        self.handle_set(now, control, sender, requester).0
    }

    /// A GetResp to one of this machine's requests. Returns whether it matched one
    /// (stale and foreign responses are ignored).
    ///
    /// # Errors
    /// [`Error`] for bytes that are not an SMInfo response.
    pub fn handle_response(&mut self, now: Instant, mad: &[u8]) -> Result<bool, Error> {
        let p = parse(mad)?;
        if !p.response {
            return Err(Error::WrongDirection { response: false });
        }
        let tid = p.tid as u32;
        if let State::Standby(s) = &mut self.state
            && let Some(get) = s
                .gets
                .iter()
                .position(|g| g.tid == tid)
                .and_then(|i| s.gets.remove(i))
        {
            self.on_poll_reply(now, p.status, p.info, get);
            return Ok(true);
        }
        let Some(i) = self.pending.iter().position(|x| x.tid == tid) else {
            return Ok(false);
        };
        let pend = self.pending.swap_remove(i);
        let ok = Status(p.status).is_ok();
        match pend.kind {
            PendingKind::Probe(_) => {
                if ok {
                    self.note_sm(now, Some(pend.tx.to), p.info);
                }
            }
            PendingKind::Handover(to) => {
                if ok && p.info.guid == to {
                    self.complete_handover(now, to, pend.tx.to);
                } else {
                    self.events.push_back(ElectionEvent::HandoverFailed {
                        to,
                        status: Some(p.status),
                    });
                    self.set_handover(None);
                }
            }
            PendingKind::Control(code) => self.events.push_back(ElectionEvent::ControlCompleted {
                to: pend.tx.to,
                code,
                status: Some(p.status),
            }),
            PendingKind::AckCheck(to) => {
                let state = (ok && p.info.guid == to).then_some(p.info.sm_state);
                self.on_ack_check(now, to, state);
            }
            PendingKind::Ack => {}
            PendingKind::Refresh(guid) => {
                // The SM at that route now; another one there waits for a sweep.
                if ok && p.info.guid == guid {
                    self.note_peer(Some(pend.tx.to), p.info);
                }
            }
            PendingKind::Learn => {
                if ok && self.note_peer(Some(pend.tx.to), p.info) {
                    for s in &mut self.sweeps {
                        s.found.insert(p.info.guid);
                    }
                    self.last_found.insert(p.info.guid);
                    if matches!(self.state, State::Master(_)) {
                        self.decide(now);
                    }
                }
            }
        }
        self.maybe_close_sweep(now);
        Ok(true)
    }

    // ----- internals ------------------------------------------------------------------

    fn key_check(&self, key: u64) -> KeyCheck {
        if self.cfg.sm_key == 0 || key == self.cfg.sm_key {
            KeyCheck::Match
        } else if key == 0 {
            KeyCheck::Hidden
        } else {
            KeyCheck::Wrong
        }
    }

    /// Whether an SMInfo claiming to come from `guid` with `key` is from our key group.
    fn authenticated(&self, guid: u64, key: u64) -> bool {
        match self.key_check(key) {
            KeyCheck::Match => true,
            KeyCheck::Hidden => self.peers.get(&guid).is_some_and(|p| p.key_verified),
            KeyCheck::Wrong => false,
        }
    }

    fn outranks_me(&self, info: &SmInfo) -> bool {
        outranks(info.priority, info.guid, self.cfg.priority, self.cfg.guid)
    }

    /// Records what we learnt about a peer (a finding of every open sweep); reports it
    /// when it outranks us unauthenticated.
    fn note_sm(&mut self, _now: Instant, addr: Option<SmAddr>, info: SmInfo) {
        if self.note_peer(addr, info) {
            for s in &mut self.sweeps {
                s.found.insert(info.guid);
            }
        }
    }

    /// Updates the peer table with `info` (not a sweep finding); false for our own GUID.
    fn note_peer(&mut self, addr: Option<SmAddr>, info: SmInfo) -> bool {
        if info.guid == self.cfg.guid {
            return false;
        }
        let check = self.key_check(info.sm_key);
        let outranks_me = self.outranks_me(&info);
        let peer = self.peers.entry(info.guid).or_insert(Peer {
            addr,
            info,
            key_verified: false,
            dead_act_count: None,
            reported: false,
        });
        if addr.is_some() {
            peer.addr = addr;
        }
        if peer.info.priority != info.priority || peer.info.sm_key != info.sm_key {
            peer.reported = false;
        }
        peer.info = info;
        match check {
            KeyCheck::Match => peer.key_verified = true,
            KeyCheck::Wrong => peer.key_verified = false,
            KeyCheck::Hidden => {}
        }
        if peer.dead_act_count.is_some_and(|a| a != info.act_count) {
            peer.dead_act_count = None;
        }
        let auth = peer.key_verified;
        let report = !auth && outranks_me && !peer.reported;
        if report {
            peer.reported = true;
            self.events
                .push_back(ElectionEvent::UnauthenticatedHigherPrioritySm {
                    guid: info.guid,
                    priority: info.priority,
                    sm_key: info.sm_key,
                });
        }
        true
    }

    /// Peers of this sweep that may take part in decisions: authenticated, reachable,
    /// and not a Master still frozen at the ActCount it was declared dead with.
    fn candidates(&self) -> Vec<(u64, SmInfo, SmAddr)> {
        self.last_found
            .iter()
            .filter_map(|g| {
                let p = self.peers.get(g)?;
                let addr = p.addr?;
                let dead = p.dead_act_count == Some(p.info.act_count);
                (self.authenticated(*g, p.info.sm_key) && !dead).then_some((*g, p.info, addr))
            })
            .collect()
    }

    fn maybe_close_sweep(&mut self, now: Instant) {
        while let Some(front) = self.sweeps.front() {
            let id = front.id;
            let lost = self.lost_addr;
            if !front.closing
                || self
                    .pending
                    .iter()
                    .any(|p| p.kind == PendingKind::Probe(id) && Some(p.tx.to) != lost)
            {
                return;
            }
            let done = self.sweeps.pop_front().map(|s| s.found).unwrap_or_default();
            self.last_found = done;
            self.decide(now);
            self.lost_addr = None;
        }
    }

    /// The decision a completed sweep leads to (Discovering: follow or lead; Master:
    /// hand over or keep), on the SMs of [`Self::last_found`].
    fn decide(&mut self, now: Instant) {
        let cands = self.candidates();
        let best = |f: &dyn Fn(&SmInfo) -> bool| {
            cands
                .iter()
                .filter(|(_, i, _)| f(i))
                .copied()
                .reduce(|a, b| {
                    if outranks(b.1.priority, b.0, a.1.priority, a.0) {
                        b
                    } else {
                        a
                    }
                })
        };
        match &self.state {
            State::Discovering => {
                let master = best(&|i| i.sm_state == SmState::Master);
                let higher = best(&|i| {
                    matches!(i.sm_state, SmState::Standby | SmState::Discovering)
                        && self.outranks_me(i)
                });
                match master.or(higher) {
                    Some((g, _, addr)) => self.follow(now, g, addr),
                    None => self.enter(now, State::Master(self.new_master(now))),
                }
            }
            State::Master(m) => {
                if m.handover_to.is_some() {
                    return;
                }
                let target = best(&|i| {
                    matches!(i.sm_state, SmState::Standby | SmState::Master) && self.outranks_me(i)
                });
                if let Some((g, _, addr)) = target {
                    let info = self.sm_info();
                    self.send_request(
                        now,
                        addr,
                        Method::Set,
                        SmInfoControl::Handover.into(),
                        &info,
                        PendingKind::Handover(g),
                    );
                    self.set_handover(Some(g));
                    self.events.push_back(ElectionEvent::HandoverSent { to: g });
                    return;
                }
                let lower: BTreeSet<u64> = cands
                    .iter()
                    .filter(|(_, i, _)| i.sm_state == SmState::Master)
                    .map(|(g, _, _)| *g)
                    .collect();
                if let State::Master(m) = &mut self.state {
                    for g in lower.difference(&m.lower_masters) {
                        self.events
                            .push_back(ElectionEvent::OtherMasterDetected { guid: *g });
                    }
                    m.lower_masters = lower;
                }
            }
            State::Standby(_) | State::NotActive => {}
        }
    }

    fn set_handover(&mut self, to: Option<u64>) {
        if let State::Master(m) = &mut self.state {
            m.handover_to = to;
        }
    }

    fn new_master(&self, now: Instant) -> Master {
        Master {
            next_heartbeat: now + self.cfg.heartbeat_interval,
            handover_to: None,
            lower_masters: BTreeSet::new(),
        }
    }

    fn complete_handover(&mut self, now: Instant, to: u64, addr: SmAddr) {
        self.pending.retain(|p| p.kind != PendingKind::Handover(to));
        self.handed_over_to = Some(to);
        self.events
            .push_back(ElectionEvent::HandoverCompleted { to });
        self.follow(now, to, addr);
    }

    /// Becomes Standby polling `guid` at `addr`, the first poll now.
    fn follow(&mut self, now: Instant, guid: u64, addr: SmAddr) {
        let st = Standby {
            master: guid,
            addr,
            next_poll: now,
            gets: VecDeque::new(),
            round: 0,
            round_by: None,
            failed: 0,
            last_act: None,
        };
        self.enter(now, State::Standby(st));
        self.events.push_back(ElectionEvent::Following { guid });
        self.send_poll_round(now, 1);
    }

    /// Opens a round of `gets` SubnGet(SMInfo) to the Master, each with its own TID:
    /// one for a regular poll, `reprobe_gets` for a re-probe.
    fn send_poll_round(&mut self, now: Instant, gets: u32) {
        let info = self.sm_info();
        let m_key = self.cfg.m_key;
        let period = self.cfg.polling_timeout;
        let wait = self.cfg.poll_answer_time();
        let State::Standby(s) = &mut self.state else {
            return;
        };
        s.round = s.round.wrapping_add(1);
        s.round_by = Some(now + wait);
        s.next_poll = now + period;
        let round = s.round;
        for _ in 0..gets {
            let tid = self.alloc_tid();
            let full = self.full_tid(tid);
            let State::Standby(s) = &mut self.state else {
                return;
            };
            if s.gets.len() >= MAX_POLL_GETS {
                s.gets.pop_front();
            }
            s.gets.push_back(PollGet {
                tid,
                round,
                sent: now,
            });
            let tx = build_request(s.addr, Method::Get, 0, full, m_key, &info);
            self.push_tx(tx);
        }
    }

    /// An answer to `get`, one of the Standby's polls or re-probes (possibly one whose
    /// round already failed, or an earlier one's).
    ///
    /// A live Master (its GUID, our key group, Master or a higher SM, ActCount moved)
    /// ends the streak: the count clears, late or not. A frozen ActCount is judged only
    /// against an answer that came at least half a polling period before `get` went
    /// out (a live Master's heartbeat moves it in that time); closer, the answer proves
    /// nothing either way and only closes its round. Anything else fails its round if
    /// that round is still open; a round is never counted twice.
    fn on_poll_reply(&mut self, now: Instant, status: u16, info: SmInfo, get: PollGet) {
        let State::Standby(s) = &self.state else {
            return;
        };
        let master = s.master;
        let addr = s.addr;
        let last_act = s.last_act;
        let valid = Status(status).is_ok() && info.guid == master;
        if valid {
            self.note_sm(now, Some(addr), info);
        }
        let auth = valid && self.authenticated(info.guid, info.sm_key);
        // A working SM issues SMPs and beats its heartbeat, so its ActCount moves
        // between two answers far enough apart; one whose count froze is hung (its SMA
        // serves a stale copy).
        let frozen = auth && last_act.is_some_and(|(a, _)| a == info.act_count);
        let comparable =
            last_act.is_some_and(|(_, at)| get.sent >= at + self.cfg.polling_timeout / 2);
        let stalled = frozen && comparable;
        let state_ok = match info.sm_state {
            SmState::Master => true,
            SmState::Standby | SmState::Discovering => self.outranks_me(&info),
            _ => false,
        };
        let alive = auth && state_ok && !frozen;
        let undecided = auth && state_ok && frozen && !comparable;
        let rounds = self.cfg.polling_rounds();
        let State::Standby(s) = &mut self.state else {
            return;
        };
        if valid && !undecided {
            s.last_act = Some((info.act_count, now));
        }
        let open = get.round == s.round && s.round_by.is_some();
        if alive {
            s.failed = 0;
            s.round_by = None;
            s.gets.clear();
        } else if undecided {
            if open {
                s.round_by = None;
            }
        } else if open {
            s.round_by = None;
            s.failed += 1;
            if s.failed >= rounds {
                self.lose_master(now, master, stalled.then_some(info.act_count));
            }
        }
    }

    fn lose_master(&mut self, now: Instant, guid: u64, stalled_at: Option<u32>) {
        if let (Some(a), Some(p)) = (stalled_at, self.peers.get_mut(&guid)) {
            p.dead_act_count = Some(a);
        }
        self.events.push_back(ElectionEvent::MasterLost {
            guid,
            stalled: stalled_at.is_some(),
        });
        self.enter(now, State::Discovering);
    }

    fn enter(&mut self, now: Instant, new: State) {
        let from = self.state();
        let to = new.sm_state();
        let was_master = matches!(self.state, State::Master(_));
        self.state = new;
        if was_master && to != SmState::Master {
            self.pending
                .retain(|p| matches!(p.kind, PendingKind::Probe(_) | PendingKind::Ack));
            self.owed_ack = None;
        }
        if from != to {
            self.state_changes += 1;
            self.events
                .push_back(ElectionEvent::StateChanged { from, to });
        }
        if to == SmState::Discovering && from != SmState::Discovering {
            self.events.push_back(ElectionEvent::SweepNeeded);
        }
        if to == SmState::Master && from != SmState::Master {
            self.handed_over_to = None;
        }
        let _ = now;
    }

    fn handle_set(
        &mut self,
        now: Instant,
        modifier: u32,
        sender: SmInfo,
        requester: &Requester,
    ) -> (Status, SmInfo) {
        let code = SmInfoControl::from(modifier);
        let check = self.key_check(sender.sm_key);
        let auth = self.authenticated(sender.guid, sender.sm_key);
        // The answer describes this SM as it was when the Set arrived (as OpenSM does);
        // the key is shown to an authenticated sender.
        let mut pre = self.sm_info_for(requester);
        if auth {
            pre.sm_key = self.cfg.sm_key;
        }
        let reject = |me: &mut Self, reason| {
            me.events.push_back(ElectionEvent::ControlRejected {
                from: sender.guid,
                code,
                reason,
            });
            (Status::INVALID_VALUE, pre)
        };
        let sender_state_ok = match code {
            SmInfoControl::Acknowledge => {
                matches!(sender.sm_state, SmState::Standby | SmState::Discovering)
            }
            SmInfoControl::Handover
            | SmInfoControl::Disable
            | SmInfoControl::Standby
            | SmInfoControl::Discover => sender.sm_state == SmState::Master,
            _ => return reject(self, RejectReason::UnknownCode),
        };
        if !sender_state_ok {
            return reject(self, RejectReason::SenderState);
        }
        if !auth {
            let addr = requester.addr;
            self.note_sm(now, addr, sender);
            return reject(self, RejectReason::Unauthenticated);
        }
        if check == KeyCheck::Match {
            let addr = requester
                .addr
                .or_else(|| self.peers.get(&sender.guid).and_then(|p| p.addr));
            self.note_sm(now, addr, sender);
        }
        let sender_addr = requester
            .addr
            .or_else(|| self.peers.get(&sender.guid).and_then(|p| p.addr));
        let sender_higher = self.outranks_me(&sender);
        let is_master = matches!(self.state, State::Master(_));
        match code {
            SmInfoControl::Handover => match &mut self.state {
                State::NotActive => return reject(self, RejectReason::OurState),
                State::Master(m) => {
                    m.lower_masters.remove(&sender.guid);
                    self.events
                        .push_back(ElectionEvent::HandoverReceived { from: sender.guid });
                    self.events.push_back(ElectionEvent::SweepNeeded);
                }
                State::Discovering | State::Standby(_) => {
                    let m = self.new_master(now);
                    self.enter(now, State::Master(m));
                    self.events
                        .push_back(ElectionEvent::HandoverReceived { from: sender.guid });
                    if let Some(addr) = sender_addr {
                        // The ACKNOWLEDGE says Standby even when the HANDOVER found us
                        // Discovering: OpenSM refuses one whose SMInfo says anything else
                        // (ERR 2F04), and an SM still discovering was as free to take the
                        // mastership as a Standby (the IBA SM state machine lets a
                        // Discovering SM become Master on a HANDOVER).
                        let mut payload = pre;
                        payload.sm_key = self.cfg.sm_key;
                        payload.sm_state = SmState::Standby;
                        self.owed_ack = Some(OwedAck {
                            to: sender.guid,
                            addr,
                            payload,
                            next_check: None,
                            checks_left: self.cfg.transaction_retries,
                        });
                        self.send_ack_check(now);
                    }
                }
            },
            SmInfoControl::Acknowledge => match &self.state {
                State::Master(m) if m.handover_to == Some(sender.guid) => {
                    self.events
                        .push_back(ElectionEvent::HandoverAcknowledged { guid: sender.guid });
                    match sender_addr {
                        Some(addr) => self.complete_handover(now, sender.guid, addr),
                        // Without an address to poll, rediscover the new Master.
                        None => {
                            self.pending
                                .retain(|p| p.kind != PendingKind::Handover(sender.guid));
                            self.handed_over_to = Some(sender.guid);
                            self.events
                                .push_back(ElectionEvent::HandoverCompleted { to: sender.guid });
                            self.enter(now, State::Discovering);
                        }
                    }
                }
                State::Standby(_) if self.handed_over_to == Some(sender.guid) => {
                    self.events
                        .push_back(ElectionEvent::HandoverAcknowledged { guid: sender.guid });
                }
                _ => return reject(self, RejectReason::OurState),
            },
            SmInfoControl::Disable | SmInfoControl::Standby | SmInfoControl::Discover => {
                if is_master && !sender_higher {
                    return reject(self, RejectReason::SenderOutranked);
                }
                match code {
                    SmInfoControl::Disable => self.enter(now, State::NotActive),
                    SmInfoControl::Discover => self.enter(now, State::Discovering),
                    _ => match sender_addr {
                        Some(addr) => self.follow(now, sender.guid, addr),
                        None => self.enter(now, State::Discovering),
                    },
                }
                self.events.push_back(ElectionEvent::ControlObeyed {
                    from: sender.guid,
                    code,
                });
            }
            _ => return reject(self, RejectReason::UnknownCode),
        }
        (Status::OK, pre)
    }

    fn give_up(&mut self, now: Instant, p: &Pending) {
        match p.kind {
            PendingKind::Probe(_)
            | PendingKind::Ack
            | PendingKind::Refresh(_)
            | PendingKind::Learn => {}
            // The SM that handed over no longer answers: nobody to acknowledge.
            PendingKind::AckCheck(to) => {
                if self.owed_ack.as_ref().is_some_and(|a| a.to == to) {
                    self.owed_ack = None;
                }
            }
            PendingKind::Handover(to) => {
                self.set_handover(None);
                self.events
                    .push_back(ElectionEvent::HandoverFailed { to, status: None });
                // A target that never answers is hung or gone: skip it while its ActCount
                // stands still, and try the next best SM of the last sweep at once.
                if let Some(peer) = self.peers.get_mut(&to) {
                    peer.dead_act_count = Some(peer.info.act_count);
                }
                if matches!(self.state, State::Master(_)) {
                    self.decide(now);
                }
            }
            PendingKind::Control(code) => self.events.push_back(ElectionEvent::ControlCompleted {
                to: p.tx.to,
                code,
                status: None,
            }),
        }
    }

    /// Asks the SM owed an ACKNOWLEDGE for its SMInfo (see [`OwedAck`]).
    fn send_ack_check(&mut self, now: Instant) {
        let Some(a) = &self.owed_ack else { return };
        let (to, addr) = (a.to, a.addr);
        let info = self.sm_info();
        self.send_request(now, addr, Method::Get, 0, &info, PendingKind::AckCheck(to));
    }

    /// The SM owed an ACKNOWLEDGE answered a check with `state` (`None`: an error status
    /// or another GUID at that address).
    fn on_ack_check(&mut self, now: Instant, to: u64, state: Option<SmState>) {
        let Some(a) = self.owed_ack.as_mut().filter(|a| a.to == to) else {
            return;
        };
        let send = match state {
            // It has stepped down: the ACKNOWLEDGE is legal for it now.
            Some(SmState::Standby) => true,
            Some(SmState::Master) if a.checks_left > 0 => {
                a.checks_left -= 1;
                a.next_check = Some(now + self.cfg.transaction_timeout);
                return;
            }
            // Still Master after every check: it may be waiting for the ACKNOWLEDGE.
            Some(SmState::Master) => true,
            // Discovering, NotActive, or not that SM: it is out of the handover.
            _ => false,
        };
        let Some(a) = self.owed_ack.take() else {
            return;
        };
        if send && matches!(self.state, State::Master(_)) {
            self.send_request(
                now,
                a.addr,
                Method::Set,
                SmInfoControl::Acknowledge.into(),
                &a.payload,
                PendingKind::Ack,
            );
        }
    }

    fn alloc_tid(&mut self) -> u32 {
        let t = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1).max(1);
        t
    }

    fn full_tid(&self, low: u32) -> u64 {
        (u64::from(self.cfg.tid_high) << 32) | u64::from(low)
    }

    fn send_request(
        &mut self,
        now: Instant,
        addr: SmAddr,
        method: Method,
        modifier: u32,
        payload: &SmInfo,
        kind: PendingKind,
    ) {
        let tid = self.alloc_tid();
        let tx = build_request(
            addr,
            method,
            modifier,
            self.full_tid(tid),
            self.cfg.m_key,
            payload,
        );
        self.pending.push(Pending {
            tid,
            kind,
            tx: tx.clone(),
            deadline: now + self.cfg.transaction_timeout,
            resends_left: self.cfg.transaction_retries,
        });
        self.push_tx(tx);
    }

    fn push_tx(&mut self, tx: Transmit) {
        // Every SMP issued is management activity (OpenSM counts QP0 MADs sent).
        self.act_count = self.act_count.wrapping_add(1);
        self.transmits.push_back(tx);
    }
}

/// `a / b` in whole periods (`b > 0`).
fn duration_div(a: Duration, b: Duration) -> u32 {
    u32::try_from(a.as_nanos() / b.as_nanos().max(1)).unwrap_or(u32::MAX)
}
