//! The election's glue (`ibsm-election` is sans-IO and knows nothing of the engine):
//! SMInfo requests and answers in, its SMPs out, its decisions turned into sweeps and
//! role changes.

use ibsm_election::{Election, ElectionEvent, Requester, SmAddr};
use ibsm_transport::{Address, DrAddress, Instant, LidAddress, LocalPort, Received};
use ibsm_wire::{DrPath, DrSmpView, LidSmpView, MadHeaderView, MgmtClass, SmState};

use super::assign::Lids;
use super::discovery::Discovery;
use super::{Outbox, Outgoing, SubnetManager};
use crate::config::SmConfig;
use crate::event::{Role, SmEvent};

/// The election and the role it gave this SM.
#[derive(Debug)]
pub(super) struct Smi {
    pub(super) election: Election,
    pub(super) role: Role,
}

impl Smi {
    /// `cfg` has passed [`SmConfig::validate`]; what the election can still refuse is
    /// the local port (GUID 0).
    pub(super) fn new(
        cfg: &SmConfig,
        local: &LocalPort,
    ) -> Result<Self, ibsm_election::ElectionConfigError> {
        let mut ecfg = ibsm_election::Config::with_polling(
            local.port_guid,
            cfg.polling_timeout,
            cfg.polling_retries,
        );
        ecfg.priority = cfg.priority;
        ecfg.sm_key = cfg.sm_key;
        ecfg.transaction_timeout = cfg.transaction_timeout;
        ecfg.transaction_retries = cfg.transaction_retries;
        let election = Election::new(ecfg, Instant::ZERO)?;
        Ok(Self {
            election,
            role: Role::Discovering,
        })
    }
}

fn role_of(state: SmState) -> Role {
    match state {
        SmState::Master => Role::Master,
        SmState::Standby => Role::Standby,
        SmState::NotActive => Role::NotActive,
        _ => Role::Discovering,
    }
}

/// The M_Key an SMP presents (both SMP formats keep it in the same place, but each is
/// read through its own view).
fn presented_key(mad: &[u8], class: MgmtClass) -> u64 {
    if class == MgmtClass::SubnDirected {
        DrSmpView::new_checked(mad).map_or(0, |v| v.m_key())
    } else {
        LidSmpView::new_checked(mad).map_or(0, |v| v.m_key())
    }
}

impl Smi {
    /// The election's own deadline (polls, probe timeouts, handover steps).
    pub(super) fn handle_timeout(&mut self, now: Instant) {
        let due = self.election.poll_timeout().is_some_and(|t| t <= now);
        if due {
            self.election.handle_timeout(now);
        }
    }

    /// SMInfo from another SM: an answer to the election's probes and polls, or a
    /// request (Get, or a Set with a control code) to answer through `out`. `ours`:
    /// the M_Key of the SM's port; `requester`: what is known of the sender of a
    /// request ([`requester_of`]). `false` when it is not a MAD at all (nothing done).
    pub(super) fn on_sm_info(
        &mut self,
        now: Instant,
        rx: &Received,
        ours: u64,
        requester: impl FnOnce() -> (Option<SmAddr>, Option<u64>),
        out: &mut Outbox,
    ) -> bool {
        let Ok(header) = MadHeaderView::new_checked(&rx.mad[..]) else {
            return false;
        };
        if header.response() {
            let _ = self.election.handle_response(now, &rx.mad);
            return true;
        }
        let key = presented_key(&rx.mad, header.mgmt_class());
        let (addr, guid) = requester();
        let requester = Requester {
            m_key_authenticated: ours == 0 || key == ours,
            guid,
            addr,
        };
        if let Ok(resp) = self.election.handle_request(now, &rx.mad, &requester) {
            out.mads.push_back(Outgoing {
                id: None,
                addr: rx.reply_address(),
                mad: resp.to_vec(),
            });
            // An SM we do not know yet (one started on a port that was already up:
            // no trap, and no sweep of ours has probed it): ask for its SMInfo now
            // rather than at the next heavy sweep.
            self.election.learn(now, &requester);
        }
        true
    }

    /// Hands the election's SMPs to `out`.
    fn drain_transmit(&mut self, out: &mut Outbox) {
        while let Some(t) = self.election.poll_transmit() {
            let addr = match t.to {
                SmAddr::Lid(lid) => Address::Lid(LidAddress::smp(lid)),
                SmAddr::Directed(path) => Address::Directed(DrAddress::direct(path)),
            };
            out.mads.push_back(Outgoing {
                id: None,
                addr,
                mad: t.mad.to_vec(),
            });
        }
    }
}

/// What this SM can tell about the sender of a request: how to reach it (its source
/// LID; for a directed-route request, the return path read backwards, a route from
/// here to it) and its port GUID (from the LIDs in force, `lids`, or the port that
/// route ends at in `found`'s model).
fn requester_of(lids: &Lids, found: &Discovery, rx: &Received) -> (Option<SmAddr>, Option<u64>) {
    let by_lid = |lid: u16| {
        (lid != 0 && lid != ibsm_wire::PERMISSIVE_LID)
            .then(|| (Some(SmAddr::Lid(lid)), lids.guid_of(lid)))
    };
    let directed = MadHeaderView::new_checked(&rx.mad[..])
        .is_ok_and(|h| h.mgmt_class() == MgmtClass::SubnDirected);
    if !directed {
        return by_lid(rx.slid).unwrap_or((None, None));
    }
    let Ok(v) = DrSmpView::new_checked(&rx.mad[..]) else {
        return (None, None);
    };
    // A request whose first part was LID-routed: its sender has that LID.
    if let Some(found) = by_lid(v.dr_slid()) {
        return found;
    }
    let n = usize::from(v.hop_count());
    let back = v.return_path();
    if n == 0 || n > ibsm_wire::smp::MAX_HOPS {
        return (None, None);
    }
    let ports: Vec<u8> = (1..=n).rev().map(|i| back[i]).collect();
    let Ok(path) = DrPath::from_ports(&ports) else {
        return (None, None);
    };
    let guid = found.port_at_path(&path).map(|(node, port)| {
        let rec = &found.subnet.nodes[node];
        if rec.is_switch() {
            rec.info.node_guid
        } else {
            rec.ports[usize::from(port)].guid
        }
    });
    (Some(SmAddr::Directed(path)), guid)
}

impl SubnetManager {
    /// SMInfo from another SM ([`Smi::on_sm_info`]), then what the election does.
    pub(super) fn on_sm_info(&mut self, now: Instant, rx: &Received) {
        let ours = super::keys::key_for_port(&self.cfg, self.local.port_guid);
        let found = self.sweep.found(&self.last);
        let lids = &self.lids;
        let parsed = self.smi.on_sm_info(
            now,
            rx,
            ours,
            || requester_of(lids, found, rx),
            &mut self.out,
        );
        // Nothing for the election in what is not a MAD.
        if parsed {
            self.drain_election(now);
        }
    }

    /// Sends what the election wants sent and acts on what it decided.
    pub(super) fn drain_election(&mut self, now: Instant) {
        self.smi.drain_transmit(&mut self.out);
        while let Some(ev) = self.smi.election.poll_event() {
            match ev {
                ElectionEvent::StateChanged { to, .. } => {
                    self.smi.role = role_of(to);
                    if self.smi.role == Role::Standby {
                        self.health.was_standby = true;
                    }
                    self.event(SmEvent::RoleChanged {
                        role: self.smi.role,
                    });
                    if to == SmState::Master {
                        self.admin.lose_clients();
                    }
                    if to == SmState::Master && std::mem::take(&mut self.health.was_standby) {
                        // Another SM was master since this one started (a lost master
                        // makes the Standby Discovering first): the isolations it kept,
                        // before the sweep that takes over routes.
                        self.took_over(now);
                    }
                    if to == SmState::Master && self.sweep.is_idle() {
                        // Taking over (handover or a lost master): configure now, keeping
                        // the LIDs the ports carry.
                        self.heavy_sweep_wanted(now);
                    }
                }
                // The election asks for a sweep to learn which SMs share the subnet
                // (begin_sweep, a probe per IsSM port, sweep_complete). A heavy sweep
                // still discovering is that sweep: the election collects every SM
                // probed until our sweep_complete, whenever it asked. Queuing another
                // one made every start sweep twice, since the election's first request
                // (it is born Discovering) arrives right after `start` began sweeping.
                // Once discovery has passed (elect, program, activate, light), the
                // running sweep can no longer see what prompted the request: sweep
                // again when it ends.
                // (A lost Master always comes with a SweepNeeded: the Standby is
                // Discovering again.)
                ElectionEvent::SweepNeeded | ElectionEvent::MasterLost { .. }
                    if !self.sweep.is_discovering() =>
                {
                    self.heavy_sweep_wanted(now);
                }
                ElectionEvent::UnauthenticatedHigherPrioritySm { guid, .. } => {
                    self.event(SmEvent::UnauthenticatedSm { guid });
                }
                _ => {}
            }
        }
    }
}
