//! A small virtual-time "network" of election machines for the model test and the
//! failover measurements: SMs exchange real SMInfo SMP bytes over LID addresses, with
//! latency, loss, partitions, crashes, restarts and hangs. Each node's host behaves like
//! the future SM engine: it sweeps when asked (probing every SM port it can reach), a
//! Master sweeps periodically, and its SMA answers SMInfo Gets from the copy of
//! `Election::sm_info` it holds (which is all that answers while the SM is hung).

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use ibsm_election::{
    Config, Election, ElectionEvent, RejectReason, Requester, SmAddr, SmInfo, SmInfoControl,
    SmState, outranks,
};
use ibsm_wire::Instant;

/// Deterministic xorshift-style generator (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn chance(&mut self, permille: u32) -> bool {
        self.below(1000) < u64::from(permille)
    }
    pub fn duration(&mut self, max: Duration) -> Duration {
        Duration::from_nanos(self.below(max.as_nanos() as u64 + 1))
    }
}

/// Timing of the host side (what the SM engine will do).
#[derive(Debug, Clone, Copy)]
pub struct HostParams {
    /// A Master's light sweep period (OpenSM `sweep_interval`).
    pub sweep_interval: Duration,
    /// Time from the start of a sweep to `sweep_complete` (probes go out at the start).
    pub sweep_duration: Duration,
    /// One-way MAD latency; each MAD gets this plus up to as much again of jitter.
    pub latency: Duration,
    /// Whether SM ports are protected by M_Key: then only SMs of the same key group pass
    /// the M_Key check and read each other's SM_Key; without it everyone reads it.
    pub m_key_in_use: bool,
    /// Whether a crashed SM's port still advertises IsSM (so sweeps probe it in vain).
    pub stale_is_sm: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub guid: u64,
    pub priority: u8,
    pub key: u64,
}

#[derive(Debug)]
pub struct Node {
    pub spec: Spec,
    pub cfg: Config,
    pub sm: Option<Election>,
    pub hung: bool,
    /// What this node's SMA serves (refreshed after every input unless hung).
    pub copy: SmInfo,
    pub sweep_end: Option<Instant>,
    pub next_periodic: Option<Instant>,
    /// (time, new state) of every state change.
    pub changes: Vec<(Instant, SmState)>,
    pub events: Vec<(Instant, ElectionEvent)>,
}

#[derive(Debug, Clone, Copy)]
enum Delivery {
    Request {
        from: usize,
        to: usize,
        sent: Instant,
        mad: [u8; 256],
    },
    Response {
        from: usize,
        to: usize,
        mad: [u8; 256],
    },
}

#[derive(Debug)]
pub struct Net {
    pub now: Instant,
    pub host: HostParams,
    pub nodes: Vec<Node>,
    /// Partition component of each node; MADs cross only within one.
    pub comp: Vec<u8>,
    pub loss_permille: u32,
    pub rng: Rng,
    queue: BinaryHeap<Reverse<(Instant, u64)>>,
    inflight: std::collections::HashMap<u64, Delivery>,
    seq: u64,
    /// Last fault event (crash, restart, hang, partition, loss rate change, command) or
    /// MAD lost to `loss_permille`: the masterless check counts from it.
    pub last_disturbance: Instant,
    /// Last fault event only: the dual-Master check counts from it, and excuses a
    /// lost MAD only for the Masters it touched.
    pub last_fault: Instant,
    /// Every fault event's instant.
    pub faults: Vec<Instant>,
    /// MADs lost to `loss_permille`: (when, from, to).
    pub lost: Vec<(Instant, usize, usize)>,
    /// MADs lost so far that each node sent or was sent.
    pub lost_touching: Vec<u64>,
    /// `lost_touching` of each node when its dual-Master episode (re)started counting.
    dual_base: Vec<u64>,
    /// What a transaction lost in full around a dual Master (`transaction_retries + 1`
    /// MADs lost) may delay the end of the episode by: its sweep decides without it,
    /// and the next sweep tries again. Fewer losses only cost resends, which the bound
    /// already allows.
    pub dual_per_loss: Duration,
    /// MADs a transaction loses in full: `transaction_retries + 1`.
    pub attempts: u64,
    pub violations: Vec<String>,
    /// Since when each node has been a live Master sharing its group with another one.
    pub dual_since: Vec<Option<Instant>>,
    /// Longest such episode measured from the later of its start and the last fault
    /// event, less what the MADs lost around it excuse.
    pub max_dual_undisturbed: Duration,
    pub max_dual_any: Duration,
    pub dual_bound: Duration,
    /// Since when each live node's key group has had no live Master.
    pub masterless_since: Vec<Option<Instant>>,
    pub masterless_bound: Duration,
    pub max_masterless_undisturbed: Duration,
    pub handovers_accepted: u32,
    /// DISABLE/STANDBY/DISCOVER answered with status 0, and refused.
    pub controls_obeyed: u32,
    pub controls_refused: u32,
    /// Obeyed DISABLE, STANDBY and DISCOVER, by code (index `code - 3`).
    pub obeyed_by_code: [u32; 3],
    /// `ControlObeyed` and `ControlRejected` events for DISABLE/STANDBY/DISCOVER: one per
    /// obeyed or refused control.
    pub obeyed_events: u32,
    pub refused_events: u32,
    /// Among the refusals: for a wrong or unverified SM_Key, and by a Master whose
    /// sender does not outrank it.
    pub refused_unauthenticated: u32,
    pub refused_outranked: u32,
    pub mads_sent: u64,
    pub keep_events: bool,
    /// With `keep_events`: requests that reached a crashed node (so went unanswered),
    /// as (sent at, from, to).
    pub undelivered: Vec<(Instant, usize, usize)>,
}

impl Net {
    pub fn new(
        specs: &[Spec],
        cfg_of: impl Fn(&Spec) -> Config,
        host: HostParams,
        seed: u64,
    ) -> Self {
        let nodes = specs
            .iter()
            .map(|s| {
                let cfg = cfg_of(s);
                Node {
                    spec: *s,
                    cfg,
                    sm: None,
                    hung: false,
                    copy: SmInfo::default(),
                    sweep_end: None,
                    next_periodic: None,
                    changes: Vec::new(),
                    events: Vec::new(),
                }
            })
            .collect::<Vec<_>>();
        let n = nodes.len();
        let c0 = nodes[0].cfg.clone();
        let budget = c0.transaction_timeout * (c0.transaction_retries + 1);
        let dual_bound = c0.polling_timeout
            + host.sweep_interval
            + host.sweep_duration
            + budget * 3
            + host.latency * 8;
        Self {
            now: Instant::ZERO,
            host,
            nodes,
            comp: vec![0; n],
            loss_permille: 0,
            rng: Rng::new(seed),
            queue: BinaryHeap::new(),
            inflight: std::collections::HashMap::new(),
            seq: 0,
            last_disturbance: Instant::ZERO,
            last_fault: Instant::ZERO,
            faults: Vec::new(),
            lost: Vec::new(),
            lost_touching: vec![0; n],
            dual_base: vec![0; n],
            dual_per_loss: host.sweep_interval + host.sweep_duration + budget,
            attempts: u64::from(c0.transaction_retries) + 1,
            violations: Vec::new(),
            dual_since: vec![None; n],
            max_dual_undisturbed: Duration::ZERO,
            max_dual_any: Duration::ZERO,
            dual_bound,
            masterless_since: vec![None; n],
            // A crashed Master is lost by `worst_case_detection`; a hung one, whose SMA
            // still answers, only after `polling_retries + 1` polls showed its count
            // frozen: up to `polling_retries + 2` periods after it hung.
            masterless_bound: c0
                .worst_case_detection()
                .max(c0.polling_timeout * (c0.polling_retries + 2))
                + c0.polling_timeout
                + host.sweep_duration
                + budget * 2
                + host.latency * 8,
            max_masterless_undisturbed: Duration::ZERO,
            handovers_accepted: 0,
            controls_obeyed: 0,
            controls_refused: 0,
            obeyed_by_code: [0; 3],
            obeyed_events: 0,
            refused_events: 0,
            refused_unauthenticated: 0,
            refused_outranked: 0,
            mads_sent: 0,
            keep_events: false,
            undelivered: Vec::new(),
        }
    }

    fn lid_of(i: usize) -> u16 {
        u16::try_from(i + 1).expect("few nodes")
    }

    fn node_of(addr: SmAddr) -> usize {
        match addr {
            SmAddr::Lid(l) => usize::from(l) - 1,
            SmAddr::Directed(_) => unreachable!("the harness addresses by LID"),
        }
    }

    pub fn state(&self, i: usize) -> Option<SmState> {
        self.nodes[i].sm.as_ref().map(Election::state)
    }

    fn live(&self, i: usize) -> bool {
        self.nodes[i].sm.is_some() && !self.nodes[i].hung
    }

    /// Live and taking part (not disabled to NotActive by a DISABLE).
    fn active(&self, i: usize) -> bool {
        self.live(i) && self.state(i) != Some(SmState::NotActive)
    }

    fn m_key_ok(&self, from: usize, to: usize) -> bool {
        !self.host.m_key_in_use || self.nodes[from].spec.key == self.nodes[to].spec.key
    }

    // ----- faults -------------------------------------------------------------------

    pub fn start(&mut self, i: usize) {
        let sm = Election::new(self.nodes[i].cfg.clone(), self.now).expect("valid config");
        self.nodes[i].sm = Some(sm);
        self.nodes[i].hung = false;
        self.nodes[i].sweep_end = None;
        self.nodes[i].next_periodic = None;
        self.nodes[i].changes.push((self.now, SmState::Discovering));
        self.disturb();
        self.drain(i);
    }

    pub fn crash(&mut self, i: usize) {
        self.nodes[i].sm = None;
        self.nodes[i].hung = false;
        self.nodes[i].sweep_end = None;
        self.nodes[i].next_periodic = None;
        self.disturb();
    }

    pub fn hang(&mut self, i: usize, hung: bool) {
        if self.nodes[i].sm.is_some() {
            self.nodes[i].hung = hung;
        }
        self.disturb();
    }

    /// An operator asks node `from`, if it is a live Master, to send `code` to node `to`.
    pub fn command(&mut self, from: usize, to: usize, code: SmInfoControl) {
        self.disturb();
        if !self.live(from) {
            return;
        }
        let now = self.now;
        let sm = self.nodes[from].sm.as_mut().expect("live");
        if sm
            .send_control(now, SmAddr::Lid(Self::lid_of(to)), code)
            .is_ok()
        {
            self.drain(from);
        }
    }

    /// An operator re-enables node `i` if it is NotActive.
    pub fn enable(&mut self, i: usize) {
        self.disturb();
        if !self.live(i) {
            return;
        }
        let now = self.now;
        self.nodes[i].sm.as_mut().expect("live").enable(now);
        self.drain(i);
    }

    pub fn partition(&mut self, comp: Vec<u8>) {
        self.comp = comp;
        self.disturb();
    }

    pub fn set_loss(&mut self, permille: u32) {
        self.loss_permille = permille;
        self.disturb();
    }

    fn disturb(&mut self) {
        self.last_disturbance = self.now;
        self.last_fault = self.now;
        self.faults.push(self.now);
        // A fault starts every dual-Master episode's count afresh.
        for (i, since) in self.dual_since.iter().enumerate() {
            if since.is_some() {
                self.dual_base[i] = self.lost_touching[i];
            }
        }
    }

    // ----- the event loop -----------------------------------------------------------

    fn node_deadline(&self, i: usize) -> Option<Instant> {
        let n = &self.nodes[i];
        if n.hung {
            return None;
        }
        let sm = n.sm.as_ref()?;
        [sm.poll_timeout(), n.sweep_end, n.next_periodic]
            .into_iter()
            .flatten()
            .min()
    }

    /// Runs every event up to and including `end`; time stops at `end`.
    pub fn run_until(&mut self, end: Instant) {
        loop {
            let q = self.queue.peek().map(|Reverse((t, _))| *t);
            let (node_t, node_i) = (0..self.nodes.len())
                .filter_map(|i| self.node_deadline(i).map(|t| (t, i)))
                .min()
                .map_or((None, 0), |(t, i)| (Some(t), i));
            let next = match (q, node_t) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            if next > end {
                break;
            }
            self.now = self.now.max(next);
            if q == Some(next) {
                let Reverse((_, seq)) = self.queue.pop().expect("peeked");
                let d = self.inflight.remove(&seq).expect("in flight");
                self.deliver(d);
            } else {
                self.node_timers(node_i);
            }
            self.check_dual();
        }
        self.now = self.now.max(end);
        self.check_dual();
    }

    fn node_timers(&mut self, i: usize) {
        let now = self.now;
        let n = &mut self.nodes[i];
        let Some(sm) = n.sm.as_mut() else { return };
        if n.sweep_end.is_some_and(|t| t <= now) {
            n.sweep_end = None;
            sm.sweep_complete(now);
            if sm.state() == SmState::Master {
                n.next_periodic = Some(now + self.host.sweep_interval);
            }
        }
        if n.next_periodic.is_some_and(|t| t <= now) {
            n.next_periodic = None;
            if sm.state() == SmState::Master && n.sweep_end.is_none() {
                // As the engine's light sweep: ask the known SMs for SMInfo again. The
                // answers arrive during the sweep below and must decide nothing.
                sm.refresh_known_sms(now);
                self.start_sweep(i);
            }
        }
        let n = &mut self.nodes[i];
        let Some(sm) = n.sm.as_mut() else { return };
        if sm.poll_timeout().is_some_and(|t| t <= now) {
            sm.handle_timeout(now);
        }
        self.drain(i);
    }

    fn start_sweep(&mut self, i: usize) {
        let now = self.now;
        let count = self.nodes.len() as u32;
        // A port normally advertises IsSM only while an SM runs behind it (a crashed SM's
        // issm file is closed); with `stale_is_sm` the sweep also probes crashed SMs in
        // vain. A hung SM always looks alive.
        let stale = self.host.stale_is_sm;
        let peers: Vec<usize> = (0..self.nodes.len())
            .filter(|&j| {
                j != i && self.comp[j] == self.comp[i] && (stale || self.nodes[j].sm.is_some())
            })
            .collect();
        let n = &mut self.nodes[i];
        let Some(sm) = n.sm.as_mut() else { return };
        sm.begin_sweep(now);
        // The sweep's own SMPs (NodeInfo, PortInfo, ...) count as activity.
        sm.record_smps_sent(count);
        for j in peers {
            sm.probe(now, SmAddr::Lid(Self::lid_of(j)));
        }
        n.sweep_end = Some(now + self.host.sweep_duration);
        self.drain(i);
    }

    fn drain(&mut self, i: usize) {
        loop {
            let now = self.now;
            let Some(sm) = self.nodes[i].sm.as_mut() else {
                return;
            };
            if let Some(tx) = sm.poll_transmit() {
                self.send_request(i, &tx);
                continue;
            }
            let Some(ev) = sm.poll_event() else { break };
            match &ev {
                ElectionEvent::MasterLost {
                    guid,
                    stalled: false,
                } => self.check_master_lost(i, *guid),
                ElectionEvent::SweepNeeded if self.nodes[i].sweep_end.is_none() => {
                    self.start_sweep(i);
                }
                ElectionEvent::StateChanged { to, .. } => {
                    self.nodes[i].changes.push((now, *to));
                    self.nodes[i].next_periodic = (*to == SmState::Master).then_some(now);
                }
                ElectionEvent::ControlObeyed { .. } => self.obeyed_events += 1,
                ElectionEvent::ControlRejected {
                    code: SmInfoControl::Disable | SmInfoControl::Standby | SmInfoControl::Discover,
                    reason,
                    ..
                } => {
                    self.refused_events += 1;
                    match reason {
                        RejectReason::Unauthenticated => self.refused_unauthenticated += 1,
                        RejectReason::SenderOutranked => self.refused_outranked += 1,
                        _ => {}
                    }
                }
                _ => {}
            }
            if self.keep_events {
                self.nodes[i].events.push((now, ev));
            }
        }
        let n = &mut self.nodes[i];
        if let Some(sm) = n.sm.as_ref() {
            n.copy = sm.sm_info();
        }
    }

    fn schedule(&mut self, d: Delivery) {
        self.mads_sent += 1;
        if self.loss_permille > 0 && self.rng.chance(self.loss_permille) {
            let (Delivery::Request { from, to, .. } | Delivery::Response { from, to, .. }) = d;
            self.last_disturbance = self.now;
            self.lost.push((self.now, from, to));
            self.lost_touching[from] += 1;
            self.lost_touching[to] += 1;
            return;
        }
        let lat = self.host.latency;
        let at = self.now + lat + self.rng.duration(lat);
        self.seq += 1;
        self.inflight.insert(self.seq, d);
        self.queue.push(Reverse((at, self.seq)));
    }

    fn send_request(&mut self, from: usize, tx: &ibsm_election::Transmit) {
        let to = Self::node_of(tx.to);
        if tx.is_set() && tx.attribute_modifier() == u32::from(SmInfoControl::Handover) {
            let a = self.nodes[from].spec;
            let b = self.nodes[to].spec;
            if a.key != b.key {
                self.violations.push(format!(
                    "{:?}: node {from} sent HANDOVER to node {to} with another SM_Key",
                    self.now
                ));
            }
            if !outranks(b.priority, b.guid, a.priority, a.guid) {
                self.violations.push(format!(
                    "{:?}: node {from} handed over to lower-ranked node {to}",
                    self.now
                ));
            }
        }
        self.schedule(Delivery::Request {
            from,
            to,
            sent: self.now,
            mad: tx.mad,
        });
    }

    fn deliver(&mut self, d: Delivery) {
        let now = self.now;
        match d {
            Delivery::Request {
                from,
                to,
                sent,
                mad,
            } => {
                if self.comp[from] != self.comp[to] {
                    return;
                }
                if self.nodes[to].sm.is_none() {
                    if self.keep_events {
                        self.undelivered.push((sent, from, to));
                    }
                    return;
                }
                let reveal = self.m_key_ok(from, to);
                let resp = if self.nodes[to].hung {
                    // Only the SMA answers, from its stale copy; Sets go unanswered.
                    if mad[3] != 0x01 {
                        return;
                    }
                    let mut info = self.nodes[to].copy;
                    if !reveal {
                        info.sm_key = 0;
                    }
                    let mut r = mad;
                    r[3] = 0x81;
                    r[64..85].copy_from_slice(&info.to_bytes());
                    r
                } else {
                    let req = Requester {
                        m_key_authenticated: reveal,
                        guid: Some(self.nodes[from].spec.guid),
                        addr: Some(SmAddr::Lid(Self::lid_of(from))),
                    };
                    let sm = self.nodes[to].sm.as_mut().expect("alive");
                    let before = sm.state();
                    let r = sm
                        .handle_request(now, &mad, &req)
                        .expect("well-formed SMInfo request");
                    // As the engine does: an unknown requester is asked for its SMInfo.
                    sm.learn(now, &req);
                    let status = u16::from_be_bytes([r[4], r[5]]);
                    let modifier = u32::from_be_bytes([mad[20], mad[21], mad[22], mad[23]]);
                    let after = sm.state();
                    if mad[3] == 0x02 && (3..=5).contains(&modifier) {
                        if status == 0 {
                            self.controls_obeyed += 1;
                            self.obeyed_by_code[modifier as usize - 3] += 1;
                            // What the code asks for: DISABLE stops the SM, DISCOVER
                            // restarts its discovery, STANDBY makes it follow the sender
                            // (whose address the harness always knows).
                            let expected = match modifier {
                                3 => SmState::NotActive,
                                4 => SmState::Standby,
                                _ => SmState::Discovering,
                            };
                            if after != expected {
                                self.violations.push(format!(
                                    "{now:?}: node {to} obeyed control {modifier} from node {from} but is {after:?}, not {expected:?}"
                                ));
                            }
                        } else {
                            self.controls_refused += 1;
                            if after != before {
                                self.violations.push(format!(
                                    "{now:?}: node {to} refused control {modifier} from node {from} yet went from {before:?} to {after:?}"
                                ));
                            }
                        }
                    }
                    if mad[3] == 0x02 && (3..=5).contains(&modifier) && status == 0 {
                        let (a, b) = (self.nodes[from].spec, self.nodes[to].spec);
                        if a.key != b.key {
                            self.violations.push(format!(
                                "{now:?}: node {to} obeyed control {modifier} from node {from} with another SM_Key"
                            ));
                        }
                        if before == SmState::Master
                            && after != SmState::Master
                            && !outranks(a.priority, a.guid, b.priority, b.guid)
                        {
                            self.violations.push(format!(
                                "{now:?}: Master node {to} obeyed control {modifier} from lower node {from}"
                            ));
                        }
                    }
                    if mad[3] == 0x02
                        && modifier == u32::from(SmInfoControl::Handover)
                        && status == 0
                        && before != SmState::Master
                    {
                        self.handovers_accepted += 1;
                        if after != SmState::Master {
                            self.violations.push(format!(
                                "{now:?}: node {to} accepted HANDOVER from node {from} but is {after:?}"
                            ));
                        }
                        if self.nodes[from].spec.key != self.nodes[to].spec.key {
                            self.violations.push(format!(
                                "{now:?}: node {to} accepted HANDOVER from node {from} with another SM_Key"
                            ));
                        }
                    }
                    self.drain(to);
                    r
                };
                self.schedule(Delivery::Response {
                    from: to,
                    to: from,
                    mad: resp,
                });
            }
            Delivery::Response { from, to, mad } => {
                if self.comp[from] != self.comp[to] || !self.live(to) {
                    return;
                }
                let sm = self.nodes[to].sm.as_mut().expect("alive");
                sm.handle_response(now, &mad)
                    .expect("well-formed SMInfo response");
                self.drain(to);
            }
        }
    }

    // ----- invariants ---------------------------------------------------------------

    /// Node `i` declared the Master `guid` lost for silence. If that node is alive,
    /// reachable, in `i`'s key group and Master, and no fault came during the streak
    /// that lost it (at most a period and `polling_retries + 1` answer times, plus the
    /// latency), only MADs lost between the two can explain the silence: late answers
    /// alone never lose a Master, since a late answer clears the count when it comes.
    fn check_master_lost(&mut self, i: usize, guid: u64) {
        let Some(j) = self.nodes.iter().position(|n| n.spec.guid == guid) else {
            return;
        };
        let c = &self.nodes[i].cfg;
        let streak = c.polling_timeout
            + c.transaction_timeout.min(c.polling_timeout) * (c.polling_retries + 1)
            + self.host.latency * 8;
        let from = Instant::ZERO + (self.now - Instant::ZERO).saturating_sub(streak);
        let responsive = self.active(j)
            && self.state(j) == Some(SmState::Master)
            && self.comp[i] == self.comp[j]
            && self.nodes[i].spec.key == self.nodes[j].spec.key;
        let quiet = !self.faults.iter().any(|t| *t >= from);
        let lost_between = self
            .lost
            .iter()
            .filter(|(t, a, b)| *t >= from && ((*a, *b) == (i, j) || (*a, *b) == (j, i)))
            .count();
        if responsive && quiet && lost_between == 0 {
            self.violations.push(format!(
                "{:?}: node {i} declared node {j}, a live Master it reaches, lost for silence with no MAD lost between them since {from:?}",
                self.now
            ));
        }
    }

    /// Live Masters that share a connected key group with another live Master, and key
    /// groups of live SMs without a live Master.
    fn check_dual(&mut self) {
        let n = self.nodes.len();
        for i in 0..n {
            let masterless = self.active(i)
                && !(0..n).any(|j| {
                    self.active(j)
                        && self.state(j) == Some(SmState::Master)
                        && self.comp[j] == self.comp[i]
                        && self.nodes[j].spec.key == self.nodes[i].spec.key
                });
            match (masterless, self.masterless_since[i]) {
                (true, None) => self.masterless_since[i] = Some(self.now),
                (true, Some(since)) => {
                    let undisturbed = self.now - since.max(self.last_disturbance);
                    self.max_masterless_undisturbed =
                        self.max_masterless_undisturbed.max(undisturbed);
                    if undisturbed > self.masterless_bound {
                        self.violations.push(format!(
                            "{:?}: node {i}'s key group has had no Master for {undisturbed:?} (bound {:?})",
                            self.now, self.masterless_bound
                        ));
                        self.masterless_since[i] = Some(self.now);
                    }
                }
                (false, _) => self.masterless_since[i] = None,
            }
        }
        for i in 0..n {
            let dual = self.active(i)
                && self.state(i) == Some(SmState::Master)
                && (0..n).any(|j| {
                    j != i
                        && self.active(j)
                        && self.state(j) == Some(SmState::Master)
                        && self.comp[j] == self.comp[i]
                        && self.nodes[j].spec.key == self.nodes[i].spec.key
                });
            match (dual, self.dual_since[i]) {
                (true, None) => {
                    self.dual_since[i] = Some(self.now);
                    self.dual_base[i] = self.lost_touching[i];
                }
                (true, Some(since)) => {
                    let any = self.now - since;
                    self.max_dual_any = self.max_dual_any.max(any);
                    let undisturbed = self.now - since.max(self.last_fault);
                    let losses = self.lost_touching[i] - self.dual_base[i];
                    let lost_in_full = losses.div_ceil(self.attempts);
                    let excused =
                        self.dual_per_loss * u32::try_from(lost_in_full).unwrap_or(u32::MAX);
                    self.max_dual_undisturbed = self
                        .max_dual_undisturbed
                        .max(undisturbed.saturating_sub(excused));
                    if undisturbed > self.dual_bound + excused {
                        self.violations.push(format!(
                            "{:?}: node {i} has been one of two Masters for {undisturbed:?} since the last fault (bound {:?}, and {excused:?} for {losses} MADs lost to or from it)",
                            self.now, self.dual_bound
                        ));
                        // Report each episode once.
                        self.dual_since[i] = Some(self.now);
                        self.dual_base[i] = self.lost_touching[i];
                    }
                }
                (false, _) => self.dual_since[i] = None,
            }
        }
    }

    /// The quiescent-state check: in every connected group of live SMs sharing a key,
    /// exactly one Master, it is the highest-ranked member, and every other is Standby.
    pub fn check_settled(&mut self) {
        let n = self.nodes.len();
        let mut seen = vec![false; n];
        for i in 0..n {
            if seen[i] || !self.active(i) {
                continue;
            }
            let group: Vec<usize> = (0..n)
                .filter(|&j| {
                    self.active(j)
                        && self.comp[j] == self.comp[i]
                        && self.nodes[j].spec.key == self.nodes[i].spec.key
                })
                .collect();
            for &j in &group {
                seen[j] = true;
            }
            let masters: Vec<usize> = group
                .iter()
                .copied()
                .filter(|&j| self.state(j) == Some(SmState::Master))
                .collect();
            let top = group
                .iter()
                .copied()
                .reduce(|a, b| {
                    let (sa, sb) = (self.nodes[a].spec, self.nodes[b].spec);
                    if outranks(sb.priority, sb.guid, sa.priority, sa.guid) {
                        b
                    } else {
                        a
                    }
                })
                .expect("non-empty");
            if masters != [top] {
                self.violations.push(format!(
                    "settled group {group:?}: Masters {masters:?}, expected exactly [{top}]; states {:?}",
                    group.iter().map(|&j| self.state(j)).collect::<Vec<_>>()
                ));
            }
            for &j in &group {
                if j != top && self.state(j) != Some(SmState::Standby) {
                    self.violations.push(format!(
                        "settled group {group:?}: node {j} is {:?}, expected Standby",
                        self.state(j)
                    ));
                }
            }
        }
    }

    /// State changes of node `i` at or after `t`.
    pub fn changes_since(&self, i: usize, t: Instant) -> usize {
        self.nodes[i]
            .changes
            .iter()
            .filter(|(at, _)| *at >= t)
            .count()
    }
}
