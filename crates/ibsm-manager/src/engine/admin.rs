//! The SM's side of the Subnet Administrator: build the SA's snapshot when the subnet
//! comes up, hand it class 0x03 requests, forward traps to subscribers, and write the
//! MulticastForwardingTable blocks its multicast groups need. The SA itself
//! (`ibsm-sa`) is sans-IO and knows nothing of the engine.

use std::collections::{HashMap, HashSet};

use ibsm_sa::{Requester, SaNode, SaPort, SaServer, SaSnapshot};
use ibsm_topology::Csr;
use ibsm_transport::{Address, Instant, LidAddress, Received};
use ibsm_wire::sa::SaAttributeId;
use ibsm_wire::{MadHeaderView, Notice};

use super::ops::Op;
use super::switches::NO_MFT_TOP;
use super::{Outgoing, SubnetManager};
use crate::config::SmConfig;
use crate::event::Role;
use crate::mkey;

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
    /// MFT Sets of the SA's current step not answered (or given up) yet: the next
    /// step waits for them all, or old and new trees could mix into a loop
    /// (`ibsm_sa::SaServer::take_mft_updates`).
    mft_in_flight: usize,
    /// `(MGID, MLID, switch GUID)` already reported as `SmEvent::MlidBeyondCap`.
    beyond_cap: HashSet<([u8; 16], u16, u64)>,
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
            mft_in_flight: 0,
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
        // Routes are indexed in the order of the snapshot they were computed from.
        let route_ix: HashMap<u64, u32> = self
            .routing
            .fabric
            .as_ref()
            .map(|f| {
                let csr = Csr::new(f);
                csr.switch_guid
                    .iter()
                    .enumerate()
                    .map(|(i, g)| (g.0, i as u32))
                    .collect()
            })
            .unwrap_or_default();
        let nodes = self
            .subnet
            .nodes
            .iter()
            .map(|n| {
                let sw = n.is_switch();
                let ports = n
                    .ports
                    .iter()
                    .enumerate()
                    .map(|(p, r)| {
                        let key_guid = if sw { n.info.node_guid } else { r.guid };
                        let info = r.info.map(|mut i| {
                            // The key the SM set, not what a protected port read back.
                            let lid_port = !sw || p == 0;
                            if lid_port {
                                if let Some(k) = mkey::key_for(self.cfg.m_key, key_guid) {
                                    i.m_key = k;
                                }
                            }
                            i
                        });
                        SaPort {
                            guid: r.guid,
                            info,
                            peer: r.peer.map(|(pn, pp)| (pn as u32, pp)),
                            pkeys: r.pkeys.clone(),
                        }
                    })
                    .collect();
                // SwitchInfo as the SM wrote it (the sweep read it before the Set).
                let switch_info = n.switch_info.map(|mut si| {
                    if let Some(r) = &self.routing.routes {
                        si.linear_fdb_top =
                            u16::try_from(r.lft_len().saturating_sub(1)).unwrap_or(u16::MAX);
                    }
                    si.life_time_value = self.cfg.packet_life_time;
                    si
                });
                SaNode {
                    info: n.info,
                    desc: n.description.clone(),
                    switch_info,
                    ports,
                    route_index: if sw {
                        route_ix.get(&n.info.node_guid).copied()
                    } else {
                        None
                    },
                }
            })
            .collect();
        SaSnapshot {
            nodes,
            routes: self.routing.routes.clone(),
            subnet_prefix: self.cfg.subnet_prefix,
            sms: self.sm_records(),
            packet_life_time: self.cfg.packet_life_time,
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

    pub(super) fn refresh_admin(&mut self) {
        // This sweep told the clients to re-register; the next ones do not.
        self.admin.clients_lost = false;
        if self.admin.server.is_none() {
            return;
        }
        let snap = self.sa_snapshot();
        // The IPoIB broadcast groups of the policy's `ipoib` partitions and its `mgid=`
        // groups.
        let groups = self
            .cfg
            .partitions
            .as_ref()
            .map(|p| p.multicast_groups(self.cfg.packet_life_time))
            .unwrap_or_default();
        if let Some(sa) = self.admin.server.as_mut() {
            sa.load(snap);
            for mgid in sa.set_predefined_groups(&groups) {
                tracing::warn!(?mgid, "no MLID left for a partition's multicast group");
            }
        }
        self.program_mfts();
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
    /// MFT Set of the step before is unanswered, nothing (its last answer calls this
    /// again, [`Self::mft_written`]), so every switch holds one of two subsets of the
    /// same tree at any moment and no transient loop exists (`ibsm_sa` `mcast::tree`).
    fn program_mfts(&mut self) {
        if self.admin.mft_in_flight > 0 {
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
                let op = Op::SetMft {
                    path: self.subnet.nodes[node].path,
                    guid: u.switch_guid,
                };
                self.submit(op, u.attribute_modifier(), Some(data));
                sent += 1;
            }
            self.admin.mft_in_flight += sent;
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

    /// An MFT Set was answered or given up: the last of its step lets the next go.
    pub(super) fn mft_written(&mut self) {
        self.admin.mft_in_flight = self.admin.mft_in_flight.saturating_sub(1);
        if self.admin.mft_in_flight == 0 {
            self.program_mfts();
        }
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
