//! The SM's side of the Subnet Administrator: build the SA's snapshot when the subnet
//! comes up, hand it class 0x03 requests, forward traps to subscribers, and write the
//! MulticastForwardingTable blocks its multicast groups need. The SA itself
//! (`ibsm-sa`) is sans-IO and knows nothing of the engine.

use std::collections::{BTreeMap, HashMap, HashSet};

use ibsm_sa::{IndexedSnapshot, Requester, SaServer, SaSnapshot};

use super::publish::SaInput;
use ibsm_transport::{Address, Instant, LidAddress, Received};
use ibsm_wire::sa::SaAttributeId;
use ibsm_wire::{DrPath, MadHeaderView, MulticastForwardingTable, Notice};

use super::assign::Lids;
use super::discovery::Discovery;
use super::ops::{Op, SmpQueue};
use super::resweep::doubled_retries;
use super::smi::Smi;
use super::switches::NO_MFT_TOP;
use super::{Outbox, Outgoing, SubnetManager};
use crate::config::SmConfig;
use crate::event::Role;
use crate::model::Discovered;

/// The Subnet Administrator and where its clients are.
#[derive(Debug)]
pub(super) struct Admin {
    /// The SA, when `SmConfig::sa` asks for one.
    server: Option<SaServer>,
    /// Reply addresses (SL, P_Key index) of recent SA requesters, by (LID, QP), for
    /// what the SA sends them later (RMPP segments, Reports).
    reply: HashMap<(u16, u32), Address>,
    /// No SUBNET UP since this SM became master: its SA knows none of the clients'
    /// groups and registrations (they went with the old master), so this sweep asks
    /// every end port to re-register (PortInfo.ClientReregister), as OpenSM does on
    /// its first master sweep.
    clients_lost: bool,
    /// MFT Sets of the SA's current step its switches have not confirmed, by the
    /// slot their `Op::SetMft` names: the next step waits for them all, or old and
    /// new trees could mix into a loop (`ibsm_sa::SaServer::take_mft_updates`). A
    /// Set given up on stays here, held, so the barrier holds under loss too.
    /// Ordered, so that re-sends go out in the same order in every run.
    mft_step: BTreeMap<u32, MftSet>,
    /// The slot of the next MFT Set.
    next_slot: u32,
    /// What each switch confirmed last per MFT block, by (switch GUID, attribute
    /// modifier): names the MLIDs at stake when a Set is held.
    mft_confirmed: HashMap<(u64, u32), [u8; 64]>,
    /// `(MGID, MLID, switch GUID)` already reported as `SmEvent::MlidBeyondCap`.
    beyond_cap: HashSet<([u8; 16], u16, u64)>,
}

/// Transactions after the first that an MFT Set gets (each with twice the attempts
/// of the one before, `resweep::doubled_retries`) before it is held and reported.
const MFT_RESENDS: u32 = 3;

/// One MFT block Set of the SA's current step, until its switch confirms it.
#[derive(Debug)]
struct MftSet {
    /// Node GUID of the switch.
    guid: u64,
    /// The route it was last sent by.
    path: DrPath,
    /// MFT block (MLIDs `0xC000 + 32 * block ..`) and port group.
    block: u16,
    position: u8,
    /// The Set's attribute modifier (block and position).
    attr_mod: u32,
    data: [u8; 64],
    /// Transactions sent for it so far.
    rounds: u32,
    /// Attempts those transactions had in all (for the report).
    attempts: u32,
    /// Every round failed: reported, waiting for the next heavy sweep.
    held: bool,
}

impl Admin {
    pub(super) fn new(cfg: &SmConfig) -> Self {
        let server = cfg.sa.then(|| {
            let mut c = ibsm_sa::SaConfig::with_sm_key(cfg.sm_key);
            c.rmpp = cfg.sa_rmpp;
            // The SA's own sends (RMPP windows, Reports) wait and retry as SMPs do
            // (OpenSM binds its SA agent with transaction_timeout / _retries too).
            c.rmpp_timeout = cfg.transaction_timeout;
            c.rmpp_retries = cfg.transaction_retries;
            c.report_timeout = cfg.transaction_timeout;
            c.report_retries = cfg.transaction_retries;
            ibsm_sa::SaServer::new(c)
        });
        Self {
            server,
            reply: HashMap::new(),
            // A new SM's SA starts empty too.
            clients_lost: true,
            mft_step: BTreeMap::new(),
            next_slot: 0,
            mft_confirmed: HashMap::new(),
            beyond_cap: HashSet::new(),
        }
    }
}

impl Admin {
    /// The role became master: whatever the clients registered lives in another SM's
    /// SA, so the next sweep tells them to re-register.
    pub(super) fn lose_clients(&mut self) {
        self.clients_lost = true;
    }

    /// Whether the sweep in progress is the first as master (no SUBNET UP since the
    /// role became master): the one that sets ClientReregister on every end port.
    pub(super) fn first_master_sweep(&self) -> bool {
        self.clients_lost
    }

    /// A sweep configured the subnet: the SA answers from `snap` (its snapshot, made
    /// by the sweep's publish job; `None` with the SA off) from now on, with the
    /// policy's multicast `groups`. The snapshot it replaces, to drop.
    fn load(
        &mut self,
        snap: Option<IndexedSnapshot>,
        groups: &[ibsm_wire::sa::McMemberRecord],
    ) -> Option<IndexedSnapshot> {
        // This sweep told the clients to re-register; the next ones do not.
        self.clients_lost = false;
        let snap = snap?;
        let sa = self.server.as_mut()?;
        let old = sa.load_indexed(snap);
        for mgid in sa.set_predefined_groups(groups) {
            tracing::warn!(?mgid, "no MLID left for a partition's multicast group");
        }
        Some(old)
    }

    /// A sweep brought the subnet up (`subnet`: what it found): the MFT Sets the
    /// barrier still waits for go to the switches as this sweep found them. A switch
    /// it no longer found is out of every tree built from now on and no route leads
    /// into it, so its Set is no longer waited for; a held Set to a switch it found
    /// gets a fresh round, and the barrier keeps holding until it is confirmed.
    fn retry_held_mfts(&mut self, subnet: &Discovered, smps: &mut SmpQueue, cfg: &SmConfig) {
        self.mft_step.retain(|_, m| {
            let here = subnet.by_guid.contains_key(&m.guid);
            if !here {
                tracing::info!(
                    switch = m.guid,
                    attr_mod = m.attr_mod,
                    "switch gone: its MFT Set is no longer waited for"
                );
            }
            here
        });
        self.mft_confirmed
            .retain(|(g, _), _| subnet.by_guid.contains_key(g));
        let held: Vec<u32> = self
            .mft_step
            .iter()
            .filter(|(_, m)| m.held)
            .map(|(&slot, _)| slot)
            .collect();
        for slot in held {
            if let Some(m) = self.mft_step.get_mut(&slot) {
                m.held = false;
                m.rounds = 0;
            }
            self.send_mft(slot, subnet, smps, cfg);
        }
    }

    /// Sends (again) the MFT Set in `slot`: by the switch's route in `subnet` when it
    /// has the switch, each round with twice the attempts of the one before.
    fn send_mft(&mut self, slot: u32, subnet: &Discovered, smps: &mut SmpQueue, cfg: &SmConfig) {
        let base = smps.retries.unwrap_or(cfg.transaction_retries);
        let Some(m) = self.mft_step.get_mut(&slot) else {
            return;
        };
        if let Some(&n) = subnet.by_guid.get(&m.guid) {
            m.path = subnet.nodes[n].path;
        }
        let first = m.rounds == 0;
        let retries = doubled_retries(base, m.rounds);
        m.rounds += 1;
        m.attempts = m.attempts.saturating_add(retries.saturating_add(1));
        let op = Op::SetMft {
            path: Box::new(m.path),
            guid: m.guid,
            slot,
        };
        let (attr_mod, data) = (m.attr_mod, m.data);
        if first {
            // As every other SMP: the queue's retries when it leaves.
            smps.submit(op, attr_mod, Some(data));
        } else {
            smps.submit_with_retries(op, attr_mod, Some(data), retries);
        }
    }

    /// Hands a class 0x03 request to the SA (`sms`: the SMs as they stand now, for an
    /// SMInfoRecord request); its answers go to `out`.
    fn handle(
        &mut self,
        now: Instant,
        rx: &Received,
        sms: Option<Vec<(u16, ibsm_wire::SmInfo)>>,
        out: &mut Outbox,
    ) {
        let Some(sa) = self.server.as_mut() else {
            return;
        };
        if let Some(sms) = sms {
            sa.set_sms(sms);
        }
        let from = Requester {
            lid: rx.slid,
            qpn: rx.qpn,
        };
        let addr = rx.reply_address();
        // Bounded: requesters come and go; forgetting one only costs it SL 0 and P_Key
        // index 0 on later sends.
        let reply = &mut self.reply;
        if reply.len() >= MAX_SA_REPLY && !reply.contains_key(&(rx.slid, rx.qpn)) {
            reply.clear();
        }
        reply.insert((rx.slid, rx.qpn), addr);
        for mad in sa.handle(now, &rx.mad, &from) {
            out.mads.push_back(Outgoing {
                id: None,
                addr,
                mad,
            });
        }
    }

    /// A trap: subscribers (InformInfo) get it as an SA Report, through `out`.
    pub(super) fn forward_to_subscribers(
        &mut self,
        now: Instant,
        notice: &Notice,
        out: &mut Outbox,
    ) {
        let Some(sa) = self.server.as_mut() else {
            return;
        };
        for r in sa.notice(now, notice) {
            out.mads.push_back(Outgoing {
                id: None,
                addr: sa_address(&self.reply, r.dlid, r.qpn),
                mad: r.mad,
            });
        }
    }

    /// What the SA sends on its own: RMPP segments after an ACK or a time-out, ABORTs,
    /// Report resends.
    pub(super) fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        let t = self.server.as_mut()?.poll_transmit(now)?;
        Some(Outgoing {
            id: None,
            addr: sa_address(&self.reply, t.to.lid, t.to.qpn),
            mad: t.mad,
        })
    }

    /// The SA's next RMPP or Report deadline.
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        self.server.as_ref()?.poll_timeout()
    }

    pub(super) fn handle_timeout(&mut self, now: Instant) {
        if let Some(sa) = self.server.as_mut() {
            if sa.poll_timeout().is_some_and(|t| t <= now) {
                sa.handle_timeout(now);
            }
        }
    }

    /// Sends the MFT blocks of the SA's next step of multicast changes to the switches
    /// of `subnet` (none while a Set of the step before is unconfirmed: `None`), and
    /// reports MLIDs beyond a switch's cap to `out`.
    fn next_mft_step(
        &mut self,
        subnet: &Discovered,
        smps: &mut SmpQueue,
        cfg: &SmConfig,
        out: &mut Outbox,
    ) -> Option<MftStep> {
        if !self.mft_step.is_empty() {
            return None;
        }
        let sa = self.server.as_mut()?;
        let ups = sa.take_mft_updates();
        let more = sa.mft_pending();
        let tops = sa.mft_tops();
        for (mgid, mlid, switch_guid) in sa.mlids_beyond_cap() {
            if self.beyond_cap.insert((mgid.0, mlid, switch_guid)) {
                tracing::warn!(
                    ?mgid,
                    mlid,
                    switch = switch_guid,
                    "multicast MLID beyond a switch's MulticastFDBCap: routed around it"
                );
                out.event(crate::event::SmEvent::MlidBeyondCap {
                    mgid,
                    mlid,
                    switch_guid,
                });
            }
        }
        let mut sent = 0;
        for u in ups {
            let Some(&node) = subnet.by_guid.get(&u.switch_guid) else {
                continue;
            };
            let mut data = [0u8; 64];
            if u.mft.emit_into(&mut data).is_err() {
                continue;
            }
            let slot = self.next_slot;
            self.next_slot = slot.wrapping_add(1);
            self.mft_step.insert(
                slot,
                MftSet {
                    guid: u.switch_guid,
                    path: subnet.nodes[node].path,
                    block: u.block,
                    position: u.position,
                    attr_mod: u.attribute_modifier(),
                    data,
                    rounds: 0,
                    attempts: 0,
                    held: false,
                },
            );
            self.send_mft(slot, subnet, smps, cfg);
            sent += 1;
        }
        Some(MftStep { tops, sent, more })
    }

    /// The switch confirmed the MFT Set in `slot` (`data`: the block as it answered);
    /// whether it was the last of its step (the next may go). An answer for a slot no
    /// longer waited for (its switch left the subnet) changes nothing.
    fn confirm_mft(&mut self, slot: u32, data: &[u8]) -> bool {
        let Some(m) = self.mft_step.remove(&slot) else {
            return false;
        };
        if m.held {
            tracing::info!(
                switch = m.guid,
                attr_mod = m.attr_mod,
                "held MFT Set confirmed"
            );
        }
        let block = <[u8; 64]>::try_from(data).unwrap_or(m.data);
        self.mft_confirmed.insert((m.guid, m.attr_mod), block);
        self.mft_step.is_empty()
    }

    /// The MFT Set in `slot` got no answer after all its attempts, or was refused.
    /// The switch may hold the block as before or as sent, so the step is not done:
    /// the block is sent again with more attempts, and after [`MFT_RESENDS`] such
    /// rounds it is held (the barrier with it: no later step goes to any switch) and
    /// reported to `out`. Returns whether it was given up on now (the caller then
    /// makes the next periodic sweep heavy, and what the operation table says about a
    /// lost Set applies).
    fn unconfirmed_mft(
        &mut self,
        slot: u32,
        subnet: &Discovered,
        smps: &mut SmpQueue,
        cfg: &SmConfig,
        out: &mut Outbox,
    ) -> bool {
        let Some(m) = self.mft_step.get_mut(&slot) else {
            return false;
        };
        if m.rounds <= MFT_RESENDS {
            tracing::debug!(
                switch = m.guid,
                attr_mod = m.attr_mod,
                round = m.rounds,
                "MFT Set unconfirmed: sent again"
            );
            self.send_mft(slot, subnet, smps, cfg);
            return false;
        }
        m.held = true;
        let (guid, attr_mod, attempts) = (m.guid, m.attr_mod, m.attempts);
        let (block, position) = (m.block, m.position);
        let sent = MulticastForwardingTable::parse(&m.data).unwrap_or_default();
        let before = self
            .mft_confirmed
            .get(&(guid, attr_mod))
            .and_then(|d| MulticastForwardingTable::parse(d).ok())
            .unwrap_or_default();
        let mlids: Vec<u16> = (0..32u16)
            .filter(|&i| {
                let i = usize::from(i);
                sent.port_masks.get(i).unwrap_or(0) != 0
                    || before.port_masks.get(i).unwrap_or(0) != 0
            })
            .map(|i| ibsm_sa::MLID_BASE + block * 32 + i)
            .collect();
        tracing::warn!(
            switch = guid,
            block,
            position,
            ?mlids,
            attempts,
            "MFT block not confirmed: multicast changes held until the switch takes it"
        );
        out.event(crate::event::SmEvent::MftSetUnconfirmed {
            switch_guid: guid,
            block,
            position,
            mlids,
            attempts,
        });
        true
    }

    /// The MulticastFDBTop each switch needs (switch GUID -> top; not listed: none).
    pub(super) fn mft_tops(&self) -> HashMap<u64, u16> {
        self.server
            .as_ref()
            .map(SaServer::mft_tops)
            .unwrap_or_default()
    }
}

/// What one step of multicast changes sent ([`Admin::next_mft_step`]).
struct MftStep {
    /// The MulticastFDBTop each switch needs after it.
    tops: HashMap<u64, u16>,
    /// MFT Sets sent.
    sent: usize,
    /// More steps wait.
    more: bool,
}

impl SubnetManager {
    /// The Subnet Administrator, when enabled (`SmConfig::sa`).
    #[must_use]
    pub fn sa(&self) -> Option<&SaServer> {
        self.admin.server.as_ref()
    }

    /// The SA's view of the subnet as configured by the last sweep.
    #[must_use]
    pub fn sa_snapshot(&self) -> SaSnapshot {
        self.sa_input()
            .snapshot(&self.sweep.found(&self.last).subnet)
    }

    /// What the SA's snapshot is made of besides the discovered model (all of it cheap
    /// to take: the routes are shared).
    pub(super) fn sa_input(&self) -> SaInput {
        SaInput {
            switch_order: self.routing.csr.clone(),
            routes: self.routing.routes.clone(),
            m_key: self.cfg.m_key,
            subnet_prefix: self.cfg.subnet_prefix,
            packet_life_time: self.cfg.packet_life_time,
            sms: sm_records(
                &self.lids,
                &self.smi,
                &self.admin,
                self.sweep.found(&self.last),
            ),
        }
    }

    /// A sweep configured the subnet: the SA answers from `snap` (its snapshot, made by
    /// the sweep's publish job; `None` with the SA off) from now on.
    pub(super) fn refresh_admin(&mut self, snap: Option<IndexedSnapshot>) {
        if self.admin.server.is_none() || snap.is_none() {
            self.admin.load(None, &[]);
            return;
        }
        // The IPoIB broadcast groups of the policy's `ipoib` partitions and its `mgid=`
        // groups.
        let groups = self
            .cfg
            .partitions
            .as_ref()
            .map(|p| p.multicast_groups(self.cfg.packet_life_time))
            .unwrap_or_default();
        if let Some(old) = self.admin.load(snap, &groups) {
            self.jobs.retire(old);
        }
        let subnet = &self.sweep.found(&self.last).subnet;
        self.admin
            .retry_held_mfts(subnet, &mut self.smps, &self.cfg);
        self.program_mfts();
    }

    /// A class 0x03 MAD: the SA answers requests; without an SA they are ignored
    /// (as before the SA existed).
    pub(super) fn on_admin(&mut self, now: Instant, rx: &Received) {
        // Only the master SM's SA answers: a standby's snapshot is stale, and clients
        // find the SA through PortInfo.MasterSMLID anyway.
        if self.smi.role != Role::Master || self.admin.server.is_none() {
            return;
        }
        // SMInfoRecord: the SMs as they stand now (our ActCount moves all the time).
        let sm_info_record = MadHeaderView::new_checked(&rx.mad[..])
            .is_ok_and(|h| h.attribute_id() == u16::from(SaAttributeId::SmInfoRecord));
        let found = self.sweep.found(&self.last);
        let sms = sm_info_record.then(|| sm_records(&self.lids, &self.smi, &self.admin, found));
        self.admin.handle(now, rx, sms, &mut self.out);
        self.program_mfts();
    }

    /// Writes the MFT blocks of the SA's next step of multicast changes, and the
    /// MulticastFDBTop of the switches whose top moves. One step at a time: while any
    /// MFT Set of the step before is unconfirmed, nothing (its last confirmation calls
    /// this again, [`Self::mft_confirmed`]), so every switch holds one of two subsets
    /// of the same tree at any moment and no transient loop exists (`ibsm_sa`
    /// `mcast::tree`).
    fn program_mfts(&mut self) {
        loop {
            let subnet = &self.sweep.found(&self.last).subnet;
            let Some(step) =
                self.admin
                    .next_mft_step(subnet, &mut self.smps, &self.cfg, &mut self.out)
            else {
                return;
            };
            for n in 0..subnet.nodes.len() {
                if subnet.nodes[n].is_switch() {
                    let guid = subnet.nodes[n].info.node_guid;
                    let top = step.tops.get(&guid).copied().unwrap_or(NO_MFT_TOP);
                    self.mirror
                        .set_mft_top(&self.cfg, subnet, &self.sweep, &mut self.smps, n, top);
                }
            }
            // A step with nothing to send (its switches gone) needs no barrier.
            if step.sent > 0 || !step.more {
                return;
            }
        }
    }

    /// The switch confirmed the MFT Set in `slot` (`data`: the block as it answered):
    /// the last of its step lets the next go.
    pub(super) fn mft_confirmed(&mut self, slot: u32, data: &[u8]) {
        if self.admin.confirm_mft(slot, data) {
            self.program_mfts();
        }
    }

    /// The MFT Set in `slot` got no answer ([`Admin::unconfirmed_mft`]); whether it was
    /// given up on now.
    pub(super) fn mft_unconfirmed(&mut self, slot: u32) -> bool {
        let subnet = &self.sweep.found(&self.last).subnet;
        let held =
            self.admin
                .unconfirmed_mft(slot, subnet, &mut self.smps, &self.cfg, &mut self.out);
        if held {
            // Nothing in the fabric may trap about it: the next periodic sweep looks.
            self.sweep.note_change();
        }
        held
    }
}

/// Every SM of the subnet for SMInfoRecord: ours (the master) first, then the others
/// the election's probes found in the last heavy sweep, with the LIDs their ports
/// have (`found`: the model routes lead into), each as it last answered: every light
/// sweep asks them for SMInfo again (`Election::refresh_known_sms`), so ActCount and
/// state are at most one sweep interval old.
fn sm_records(
    lids: &Lids,
    smi: &Smi,
    admin: &Admin,
    found: &Discovery,
) -> Vec<(u16, ibsm_wire::SmInfo)> {
    let mut out = vec![(lids.sm_lid, smi.election.sm_info())];
    let mut others: Vec<(u16, ibsm_wire::SmInfo)> = smi
        .election
        .known_sms()
        .filter(|k| k.in_last_sweep)
        .map(|k| {
            let mut lid = match k.addr {
                Some(ibsm_election::SmAddr::Lid(l)) => l,
                Some(ibsm_election::SmAddr::Directed(path)) => lids.at_path(found, path),
                None => 0,
            };
            if lid == 0 {
                // Mid-sweep the route's node is not rediscovered yet: the LID of the
                // last configured view.
                lid = admin
                    .server
                    .as_ref()
                    .and_then(|sa| {
                        sa.snapshot()
                            .sms
                            .iter()
                            .find(|(_, i)| i.guid == k.info.guid)
                    })
                    .map_or(0, |(l, _)| *l);
            }
            (lid, k.info)
        })
        .collect();
    others.sort_by_key(|(lid, i)| (*lid, i.guid));
    out.extend(others);
    out
}

/// Most SA requesters whose reply address is remembered.
const MAX_SA_REPLY: usize = 4096;

/// The address of an SA client: where its last request came from (its SL and P_Key
/// index), else a GSI address with the QP1 Q_Key (for QP 1 and the QPs subscribers name).
fn sa_address(known: &HashMap<(u16, u32), Address>, dlid: u16, qpn: u32) -> Address {
    if let Some(a) = known.get(&(dlid, qpn)) {
        return *a;
    }
    let mut a = LidAddress::smp(dlid);
    a.qpn = qpn;
    a.qkey = ibsm_wire::mad::QP1_QKEY;
    Address::Lid(a)
}
