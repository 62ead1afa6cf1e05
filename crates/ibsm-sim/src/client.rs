//! [`HostSaClient`]: the SA client of a simulated host, behaving towards the master SM as
//! the Linux stack on a real host does: it joins multicast groups (IPoIB) and registers
//! services, retries a request that failed or went unanswered with a doubling back-off
//! (1 s up to 16 s, as IPoIB's join task), and when the SM sets
//! PortInfo.ClientReregister on its port (a new master, whose SA knows none of it) it
//! sends every join and registration again. A join the SA accepts attaches the port
//! to the group's MLID in the simulator ([`Sim::join_multicast`]: it receives the
//! group's packets unless it joined send-only), a leave detaches it first, as a host
//! detaches its QPs before it leaves.

use std::time::Duration;

use ibsm_transport::{Address, Incoming, Instant, LidAddress, Transport};
use ibsm_wire::sa::{
    ComponentMask, McMemberRecord, SaAttributeId, SaMad, SaRecord, ServiceRecord, join_state,
};
use ibsm_wire::{Method, Status};

use crate::{NodeIdx, Sim, SimError, SimPort, SmaAgent};

/// First retry delay of a failed request.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest retry delay (IPoIB's `IPOIB_MAX_BACKOFF_SECONDS`).
const MAX_BACKOFF: Duration = Duration::from_secs(16);
/// How long an answer may take before the request counts as lost.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// An answer the client got from the SA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaAnswer {
    /// Attribute of the request.
    pub attribute: SaAttributeId,
    /// Method of the answer (without the response bit).
    pub method: Method,
    /// MAD status of the answer.
    pub status: Status,
    /// The data area of the answer (its first record).
    pub record: Vec<u8>,
}

/// What a kept request is.
#[derive(Debug, Clone, Copy)]
enum Request {
    Join(McMemberRecord),
    Service(ServiceRecord),
}

/// A join or registration the client keeps in force.
#[derive(Debug, Clone)]
struct Kept {
    req: Request,
    mask: ComponentMask,
    /// TID and send time of the request in flight.
    pending: Option<(u64, Instant)>,
    /// When to send again after a failure.
    retry_at: Option<Instant>,
    backoff: Duration,
    /// The SA accepted it (since the last ClientReregister).
    done: bool,
    /// A join the SA accepted: the group's MGID and MLID as it answered.
    joined: Option<(ibsm_wire::Gid, u16)>,
}

/// A host's SA client at one CA port: the memberships and registrations it keeps, and
/// the answers it got. Drive it with [`HostSaClient::poll`] between simulator steps.
pub struct HostSaClient {
    port: SimPort<SmaAgent>,
    node: NodeIdx,
    port_num: u8,
    kept: Vec<Kept>,
    next_tid: u64,
    reregisters: u32,
    answers: Vec<SaAnswer>,
}

impl std::fmt::Debug for HostSaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSaClient")
            .field("port", &self.port)
            .field("kept", &self.kept.len())
            .field("reregisters", &self.reregisters)
            .finish_non_exhaustive()
    }
}

impl HostSaClient {
    /// A client at port `port` of CA `node` (a tool attachment beside any SM there).
    ///
    /// # Errors
    /// What [`Sim::attach_tool`] refuses.
    pub fn attach(sim: &mut Sim<SmaAgent>, node: NodeIdx, port: u8) -> Result<Self, SimError> {
        let handle = sim.attach_tool(node, port)?;
        // Reregistrations before the client existed are not its business.
        sim.with_agent_mut(node, SmaAgent::take_client_reregisters);
        Ok(Self {
            port: handle,
            node,
            port_num: port,
            kept: Vec::new(),
            next_tid: 0x00c1_1e47_0000_0000,
            reregisters: 0,
            answers: Vec::new(),
        })
    }

    /// Joins a multicast group (SubnAdmSet(MCMemberRecord) with `mask`), now and after
    /// every ClientReregister.
    pub fn join(&mut self, sim: &Sim<SmaAgent>, rec: McMemberRecord, mask: ComponentMask) {
        self.keep(sim, Request::Join(rec), mask);
    }

    /// Registers a service (SubnAdmSet(ServiceRecord) with `mask`), now and after every
    /// ClientReregister.
    pub fn register(&mut self, sim: &Sim<SmaAgent>, rec: ServiceRecord, mask: ComponentMask) {
        self.keep(sim, Request::Service(rec), mask);
    }

    /// Sends a one-off SubnAdmGet of `rec` with `mask` (its answer lands in
    /// [`Self::answers`]); returns its TID, or `None` while the port knows no SM.
    pub fn get<R: SaRecord>(
        &mut self,
        sim: &Sim<SmaAgent>,
        rec: &R,
        mask: ComponentMask,
    ) -> Option<u64> {
        self.send(sim, Method::Get, rec, mask)
    }

    fn keep(&mut self, sim: &Sim<SmaAgent>, req: Request, mask: ComponentMask) {
        self.kept.push(Kept {
            req,
            mask,
            pending: None,
            retry_at: None,
            backoff: FIRST_BACKOFF,
            done: false,
            joined: None,
        });
        let i = self.kept.len() - 1;
        self.resend(sim, i);
    }

    /// Leaves the group `mgid` this client joined (SubnAdmDelete(MCMemberRecord) with
    /// MGID, PortGID and the JoinState it joined with, as the kernel's `send_leave`):
    /// the port stops receiving at once and the join is no longer kept. Returns the
    /// TID of the Delete, or `None` when no accepted join names `mgid` or the port
    /// knows no SM.
    pub fn leave(&mut self, sim: &mut Sim<SmaAgent>, mgid: ibsm_wire::Gid) -> Option<u64> {
        let i = self
            .kept
            .iter()
            .position(|k| k.joined.is_some_and(|(g, _)| g == mgid))?;
        let k = self.kept.remove(i);
        let (Request::Join(mut rec), Some((_, mlid))) = (k.req, k.joined) else {
            return None;
        };
        sim.leave_multicast(self.node, self.port_num, mlid);
        rec.mgid = mgid;
        let mask =
            McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
        self.send(sim, Method::Delete, &rec, mask)
    }

    /// The groups this client's accepted joins are in: (MGID, MLID).
    #[must_use]
    pub fn joined(&self) -> Vec<(ibsm_wire::Gid, u16)> {
        self.kept.iter().filter_map(|k| k.joined).collect()
    }

    /// Whether every join and registration is accepted by the SA.
    #[must_use]
    pub fn all_done(&self) -> bool {
        self.kept.iter().all(|k| k.done)
    }

    /// Reacts to what happened since the last call: a ClientReregister written to the
    /// port sends every join and registration again, to the SM the port now names
    /// (PortInfo.MasterSMLID); answers are kept ([`Self::answers`]); a request refused
    /// or unanswered is retried with back-off.
    pub fn poll(&mut self, sim: &mut Sim<SmaAgent>) {
        let port = self.port_num;
        let told = sim
            .with_agent_mut(self.node, SmaAgent::take_client_reregisters)
            .into_iter()
            .filter(|&p| p == port)
            .count();
        if told > 0 {
            self.reregisters += u32::try_from(told).unwrap_or(u32::MAX);
            for i in 0..self.kept.len() {
                self.kept[i].done = false;
                self.kept[i].backoff = FIRST_BACKOFF;
                self.resend(sim, i);
            }
        }
        self.receive();
        let now = self.port.now();
        for i in 0..self.kept.len() {
            let k = &mut self.kept[i];
            if k.pending.is_some_and(|(_, at)| now >= at + ANSWER_TIMEOUT) {
                k.pending = None;
                k.retry_at = Some(now);
            }
            if !k.done && k.pending.is_none() && k.retry_at.is_some_and(|t| now >= t) {
                self.resend(sim, i);
            }
        }
    }

    /// Takes the answers that arrived (no simulator access needed, so a driver can call
    /// it between rounds: unread answers would keep [`Sim::advance`] from moving time).
    pub fn receive(&mut self) {
        let now = self.port.now();
        // A timeout: nothing more has arrived.
        while let Ok(rx) = self.port.recv(now) {
            let Incoming::Mad(rx) = rx else {
                continue;
            };
            let Ok(m) = SaMad::parse(&rx.mad) else {
                continue;
            };
            if !m.response {
                continue;
            }
            if let Some(k) = self
                .kept
                .iter_mut()
                .find(|k| k.pending.is_some_and(|(t, _)| t == m.transaction_id))
            {
                k.pending = None;
                if m.status.is_ok() {
                    k.done = true;
                    k.backoff = FIRST_BACKOFF;
                    if let (Request::Join(_), Ok(rec)) = (k.req, m.record::<McMemberRecord>(0)) {
                        let receives = rec.join_state
                            & (join_state::FULL_MEMBER | join_state::NON_MEMBER)
                            != 0;
                        let mut core = self.port.core.borrow_mut();
                        // A new master may hand out another MLID for the group.
                        if let Some((_, old)) = k.joined.filter(|&(_, m)| m != rec.mlid) {
                            if let Some(g) = core.mcast.get_mut(&old) {
                                g.remove(&(self.node.0, self.port_num));
                            }
                        }
                        core.mcast
                            .entry(rec.mlid)
                            .or_default()
                            .insert((self.node.0, self.port_num), receives);
                        k.joined = Some((rec.mgid, rec.mlid));
                    }
                } else {
                    k.retry_at = Some(now + k.backoff);
                    k.backoff = (k.backoff * 2).min(MAX_BACKOFF);
                }
            }
            self.answers.push(SaAnswer {
                attribute: m.attribute(),
                method: m.method,
                status: m.status,
                record: m.data.to_vec(),
            });
        }
    }

    /// The CA the client runs on.
    #[must_use]
    pub fn node(&self) -> NodeIdx {
        self.node
    }

    /// How many times the SM asked this port to re-register.
    #[must_use]
    pub fn reregisters(&self) -> u32 {
        self.reregisters
    }

    /// Every answer received so far, oldest first.
    #[must_use]
    pub fn answers(&self) -> &[SaAnswer] {
        &self.answers
    }

    fn resend(&mut self, sim: &Sim<SmaAgent>, i: usize) {
        let k = self.kept[i].clone();
        let tid = match k.req {
            Request::Join(r) => self.send(sim, Method::Set, &r, k.mask),
            Request::Service(r) => self.send(sim, Method::Set, &r, k.mask),
        };
        let now = self.port.now();
        let k = &mut self.kept[i];
        k.retry_at = None;
        match tid {
            Some(t) => k.pending = Some((t, now)),
            // No SM to ask yet: try again later.
            None => {
                k.pending = None;
                k.retry_at = Some(now + k.backoff);
            }
        }
    }

    fn send<R: SaRecord>(
        &mut self,
        sim: &Sim<SmaAgent>,
        method: Method,
        rec: &R,
        mask: ComponentMask,
    ) -> Option<u64> {
        let pi = sim.with_agent(self.node, |a| a.sma().port_info(self.port_num))?;
        if pi.master_sm_lid == 0 {
            return None;
        }
        self.next_tid += 1;
        let req = SaMad::request(method, self.next_tid, mask, rec).ok()?;
        let to = Address::Lid(LidAddress::gsi(pi.master_sm_lid, pi.master_sm_sl));
        // A send the fabric cannot carry is lost, as a datagram would be; the answer
        // timeout retries it.
        let _ = self.port.send(&to, &req.to_bytes());
        Some(self.next_tid)
    }
}
