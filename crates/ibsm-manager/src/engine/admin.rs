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

use super::ops::Op;
use super::resweep::doubled_retries;
use super::switches::NO_MFT_TOP;
use super::{Outgoing, SubnetManager};
use crate::config::SmConfig;
use crate::event::Role;

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

impl SubnetManager {
    /// The Subnet Administrator, when enabled (`SmConfig::sa`).
    #[must_use]
    pub fn sa(&self) -> Option<&SaServer> {
        self.admin.server.as_ref()
    }

    /// The SA's view of the subnet as configured by the last sweep.
    #[must_use]
    pub fn sa_snapshot(&self) -> SaSnapshot {
        self.sa_input().snapshot(&self.subnet)
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
            sms: self.sm_records(),
        }
    }

    /// Every SM of the subnet for SMInfoRecord: ours (the master) first, then the others
    /// the election's probes found in the last heavy sweep, with the LIDs their ports
    /// have, each as it last answered: every light sweep asks them for SMInfo again
    /// (`Election::refresh_known_sms`), so ActCount and state are at most one sweep
    /// interval old.
    fn sm_records(&self) -> Vec<(u16, ibsm_wire::SmInfo)> {
        let mut out = vec![(self.lids.sm_lid, self.smi.election.sm_info())];
        let mut others: Vec<(u16, ibsm_wire::SmInfo)> = self
            .smi
            .election
            .known_sms()
            .filter(|k| k.in_last_sweep)
            .map(|k| {
                let mut lid = match k.addr {
                    Some(ibsm_election::SmAddr::Lid(l)) => l,
                    Some(ibsm_election::SmAddr::Directed(path)) => self.lid_at_path(path),
                    None => 0,
                };
                if lid == 0 {
                    // Mid-sweep the route's node is not rediscovered yet: the LID of the
                    // last configured view.
                    lid = self
                        .admin
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

    /// The LID of the port a directed route ends at (its CA port, or a switch's port 0).
    fn lid_at_path(&self, path: ibsm_wire::DrPath) -> u16 {
        for n in &self.subnet.nodes {
            let guid = if n.is_switch() {
                (n.path == path).then_some(n.info.node_guid)
            } else {
                n.ports
                    .iter()
                    .find(|p| p.path == Some(path))
                    .map(|p| p.guid)
            };
            if let Some(g) = guid {
                return self.lids.assigned.get(&g).map_or(0, |l| l.0);
            }
        }
        // Not a route discovery took (an SM learnt from the return path of its own
        // request): follow the cables.
        self.port_at_path(&path).map_or(0, |(n, p)| {
            let rec = &self.subnet.nodes[n];
            let g = if rec.is_switch() {
                rec.info.node_guid
            } else {
                rec.ports[usize::from(p)].guid
            };
            self.lids.assigned.get(&g).map_or(0, |l| l.0)
        })
    }

    /// The role became master: whatever the clients registered lives in another SM's
    /// SA, so the next sweep tells them to re-register.
    pub(super) fn sa_lost_clients(&mut self) {
        self.admin.clients_lost = true;
    }

    /// Whether the sweep in progress is the first as master (no SUBNET UP since the
    /// role became master): the one that sets ClientReregister on every end port.
    pub(super) fn first_master_sweep(&self) -> bool {
        self.admin.clients_lost
    }

    /// A sweep configured the subnet: the SA answers from `snap` (its snapshot, made by
    /// the sweep's publish job; `None` with the SA off) from now on.
    pub(super) fn refresh_admin(&mut self, snap: Option<IndexedSnapshot>) {
        // This sweep told the clients to re-register; the next ones do not.
        self.admin.clients_lost = false;
        let Some(snap) = snap else {
            return;
        };
        if self.admin.server.is_none() {
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
        if let Some(sa) = self.admin.server.as_mut() {
            let old = sa.load_indexed(snap);
            for mgid in sa.set_predefined_groups(&groups) {
                tracing::warn!(?mgid, "no MLID left for a partition's multicast group");
            }
            self.retire(old);
        }
        self.retry_held_mfts();
        self.program_mfts();
    }

    /// A sweep brought the subnet up: the MFT Sets the barrier still waits for go to
    /// the switches as this sweep found them. A switch it no longer found is out of
    /// every tree built from now on and no route leads into it, so its Set is no
    /// longer waited for; a held Set to a switch it found gets a fresh round, and the
    /// barrier keeps holding until it is confirmed.
    fn retry_held_mfts(&mut self) {
        let subnet = &self.subnet;
        self.admin.mft_step.retain(|_, m| {
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
        self.admin
            .mft_confirmed
            .retain(|(g, _), _| subnet.by_guid.contains_key(g));
        let held: Vec<u32> = self
            .admin
            .mft_step
            .iter()
            .filter(|(_, m)| m.held)
            .map(|(&slot, _)| slot)
            .collect();
        for slot in held {
            if let Some(m) = self.admin.mft_step.get_mut(&slot) {
                m.held = false;
                m.rounds = 0;
            }
            self.send_mft(slot);
        }
    }

    /// Sends (again) the MFT Set in `slot`: by the switch's route in the model when it
    /// has the switch, each round with twice the attempts of the one before.
    fn send_mft(&mut self, slot: u32) {
        let base = self.smps.retries.unwrap_or(self.cfg.transaction_retries);
        let Some(m) = self.admin.mft_step.get_mut(&slot) else {
            return;
        };
        if let Some(&n) = self.subnet.by_guid.get(&m.guid) {
            m.path = self.subnet.nodes[n].path;
        }
        let first = m.rounds == 0;
        let retries = doubled_retries(base, m.rounds);
        m.rounds += 1;
        m.attempts = m.attempts.saturating_add(retries.saturating_add(1));
        let op = Op::SetMft {
            path: m.path,
            guid: m.guid,
            slot,
        };
        let (attr_mod, data) = (m.attr_mod, m.data);
        if first {
            // As every other SMP: the queue's retries when it leaves.
            self.submit(op, attr_mod, Some(data));
        } else {
            self.submit_with_retries(op, attr_mod, Some(data), retries);
        }
    }

    /// A class 0x03 MAD: the SA answers requests; without an SA they are ignored
    /// (as before the SA existed).
    pub(super) fn on_admin(&mut self, now: Instant, rx: &Received) {
        // Only the master SM's SA answers: a standby's snapshot is stale, and clients
        // find the SA through PortInfo.MasterSMLID anyway.
        if self.smi.role != Role::Master {
            return;
        }
        if self.admin.server.is_none() {
            return;
        }
        // SMInfoRecord: the SMs as they stand now (our ActCount moves all the time).
        let sm_info_record = MadHeaderView::new_checked(&rx.mad[..])
            .is_ok_and(|h| h.attribute_id() == u16::from(SaAttributeId::SmInfoRecord));
        if sm_info_record {
            let sms = self.sm_records();
            if let Some(sa) = self.admin.server.as_mut() {
                sa.set_sms(sms);
            }
        }
        let Some(sa) = self.admin.server.as_mut() else {
            return;
        };
        let from = Requester {
            lid: rx.slid,
            qpn: rx.qpn,
        };
        let addr = rx.reply_address();
        // Bounded: requesters come and go; forgetting one only costs it SL 0 and P_Key
        // index 0 on later sends.
        let reply = &mut self.admin.reply;
        if reply.len() >= MAX_SA_REPLY && !reply.contains_key(&(rx.slid, rx.qpn)) {
            reply.clear();
        }
        reply.insert((rx.slid, rx.qpn), addr);
        for mad in sa.handle(now, &rx.mad, &from) {
            self.out.mads.push_back(Outgoing {
                id: None,
                addr,
                mad,
            });
        }
        self.program_mfts();
    }

    pub(super) fn forward_to_subscribers(&mut self, now: Instant, notice: &Notice) {
        let Some(sa) = self.admin.server.as_mut() else {
            return;
        };
        for r in sa.notice(now, notice) {
            self.out.mads.push_back(Outgoing {
                id: None,
                addr: sa_address(&self.admin.reply, r.dlid, r.qpn),
                mad: r.mad,
            });
        }
    }

    /// What the SA sends on its own: RMPP segments after an ACK or a time-out, ABORTs,
    /// Report resends.
    pub(super) fn poll_admin_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        let t = self.admin.server.as_mut()?.poll_transmit(now)?;
        Some(Outgoing {
            id: None,
            addr: sa_address(&self.admin.reply, t.to.lid, t.to.qpn),
            mad: t.mad,
        })
    }

    /// The SA's next RMPP or Report deadline.
    pub(super) fn admin_deadline(&self) -> Option<Instant> {
        self.admin.server.as_ref()?.poll_timeout()
    }

    pub(super) fn admin_timeout(&mut self, now: Instant) {
        if let Some(sa) = self.admin.server.as_mut() {
            if sa.poll_timeout().is_some_and(|t| t <= now) {
                sa.handle_timeout(now);
            }
        }
    }

    /// Writes the MFT blocks of the SA's next step of multicast changes, and the
    /// MulticastFDBTop of the switches whose top moves. One step at a time: while any
    /// MFT Set of the step before is unconfirmed, nothing (its last confirmation calls
    /// this again, [`Self::mft_confirmed`]), so every switch holds one of two subsets
    /// of the same tree at any moment and no transient loop exists (`ibsm_sa`
    /// `mcast::tree`).
    fn program_mfts(&mut self) {
        if !self.admin.mft_step.is_empty() {
            return;
        }
        loop {
            let Some(sa) = self.admin.server.as_mut() else {
                return;
            };
            let ups = sa.take_mft_updates();
            let more = sa.mft_pending();
            let tops = sa.mft_tops();
            for (mgid, mlid, switch_guid) in sa.mlids_beyond_cap() {
                if self.admin.beyond_cap.insert((mgid.0, mlid, switch_guid)) {
                    tracing::warn!(
                        ?mgid,
                        mlid,
                        switch = switch_guid,
                        "multicast MLID beyond a switch's MulticastFDBCap: routed around it"
                    );
                    self.event(crate::event::SmEvent::MlidBeyondCap {
                        mgid,
                        mlid,
                        switch_guid,
                    });
                }
            }
            let mut sent = 0;
            for u in ups {
                let Some(&node) = self.subnet.by_guid.get(&u.switch_guid) else {
                    continue;
                };
                let mut data = [0u8; 64];
                if u.mft.emit_into(&mut data).is_err() {
                    continue;
                }
                let slot = self.admin.next_slot;
                self.admin.next_slot = slot.wrapping_add(1);
                self.admin.mft_step.insert(
                    slot,
                    MftSet {
                        guid: u.switch_guid,
                        path: self.subnet.nodes[node].path,
                        block: u.block,
                        position: u.position,
                        attr_mod: u.attribute_modifier(),
                        data,
                        rounds: 0,
                        attempts: 0,
                        held: false,
                    },
                );
                self.send_mft(slot);
                sent += 1;
            }
            for n in 0..self.subnet.nodes.len() {
                if self.subnet.nodes[n].is_switch() {
                    let guid = self.subnet.nodes[n].info.node_guid;
                    let top = tops.get(&guid).copied().unwrap_or(NO_MFT_TOP);
                    self.set_mft_top(n, top);
                }
            }
            // A step with nothing to send (its switches gone) needs no barrier.
            if sent > 0 || !more {
                return;
            }
        }
    }

    /// The switch confirmed the MFT Set in `slot` (`data`: the block as it answered):
    /// the last of its step lets the next go. An answer for a slot no longer waited
    /// for (its switch left the subnet) changes nothing.
    pub(super) fn mft_confirmed(&mut self, slot: u32, data: &[u8]) {
        let Some(m) = self.admin.mft_step.remove(&slot) else {
            return;
        };
        if m.held {
            tracing::info!(
                switch = m.guid,
                attr_mod = m.attr_mod,
                "held MFT Set confirmed"
            );
        }
        let block = <[u8; 64]>::try_from(data).unwrap_or(m.data);
        self.admin.mft_confirmed.insert((m.guid, m.attr_mod), block);
        if self.admin.mft_step.is_empty() {
            self.program_mfts();
        }
    }

    /// The MFT Set in `slot` got no answer after all its attempts, or was refused.
    /// The switch may hold the block as before or as sent, so the step is not done:
    /// the block is sent again with more attempts, and after [`MFT_RESENDS`] such
    /// rounds it is held (the barrier with it: no later step goes to any switch) and
    /// reported, and the next periodic sweep is heavy, after which it is sent again.
    /// Returns whether it was given up on now (what the operation table says about a
    /// lost Set applies then only).
    pub(super) fn mft_unconfirmed(&mut self, slot: u32) -> bool {
        let Some(m) = self.admin.mft_step.get_mut(&slot) else {
            return false;
        };
        if m.rounds <= MFT_RESENDS {
            tracing::debug!(
                switch = m.guid,
                attr_mod = m.attr_mod,
                round = m.rounds,
                "MFT Set unconfirmed: sent again"
            );
            self.send_mft(slot);
            return false;
        }
        m.held = true;
        let (guid, attr_mod, attempts) = (m.guid, m.attr_mod, m.attempts);
        let (block, position) = (m.block, m.position);
        let sent = MulticastForwardingTable::parse(&m.data).unwrap_or_default();
        let before = self
            .admin
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
        self.event(crate::event::SmEvent::MftSetUnconfirmed {
            switch_guid: guid,
            block,
            position,
            mlids,
            attempts,
        });
        // Nothing in the fabric may trap about it: the next periodic sweep looks.
        self.sweep.note_change();
        true
    }

    /// The MulticastFDBTop each switch needs (switch GUID -> top; not listed: none).
    pub(super) fn mft_tops(&self) -> HashMap<u64, u16> {
        self.admin
            .server
            .as_ref()
            .map(SaServer::mft_tops)
            .unwrap_or_default()
    }
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
