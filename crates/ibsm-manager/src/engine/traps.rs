//! Unsolicited MADs: SA requests go to the SA, SMInfo to the election, and traps are
//! answered with TrapRepress and acted on. A trap 128 from a switch the sweep has read
//! already costs one SwitchInfo Get of its PortStateChange latch, not a heavy sweep.

use ibsm_transport::{Address, Instant, LidAddress, Received};
use ibsm_wire::{
    LidSmp, MadHeaderView, Method, MgmtClass, Notice, SmAttributeId, SwitchInfo, Trap256Details,
};

use super::discovery::Latch;
use super::ops::Op;
use super::{Outgoing, SubnetManager};
use crate::event::{Role, SmEvent};

impl SubnetManager {
    pub(super) fn on_unsolicited(&mut self, now: Instant, rx: &Received) {
        let Ok(header) = MadHeaderView::new_checked(&rx.mad[..]) else {
            return;
        };
        let class = header.mgmt_class();
        // SA requests: answered by the SA when there is one (`admin.rs`).
        if class == MgmtClass::SubnAdm {
            self.on_admin(now, rx);
            return;
        }
        if class.is_smp() && header.attribute_id() == u16::from(SmAttributeId::SmInfo) {
            self.on_sm_info(now, rx);
            return;
        }
        let trap = class == MgmtClass::SubnLid && header.method() == Method::Trap;
        if trap && !header.response() {
            self.on_trap(now, rx);
        }
    }

    fn on_trap(&mut self, now: Instant, rx: &Received) {
        // Answer the trap so the SMA stops re-sending it: same TID, attribute and data.
        let Ok(mut smp) = LidSmp::parse(&rx.mad) else {
            return;
        };
        smp.method = Method::TrapRepress;
        smp.response = false;
        let addr = Address::Lid(LidAddress::smp(rx.slid));
        self.out.mads.push_back(Outgoing {
            id: None,
            addr,
            mad: smp.to_bytes().to_vec(),
        });
        let Ok(notice) = Notice::parse(&smp.data) else {
            return;
        };
        // A babbling port's traps are answered, and nothing more (`health.rs`).
        if self.health_trap(now, &notice) {
            return;
        }
        // Subscribers (InformInfo) get the trap as an SA Report.
        self.forward_to_subscribers(now, &notice);
        let number = notice.trap_number;
        self.event(SmEvent::Trap {
            number,
            issuer_lid: notice.issuer_lid,
        });
        match number {
            256 => {
                let key = notice.details::<Trap256Details>().map_or(0, |d| d.m_key);
                self.event(SmEvent::MKeyViolation {
                    lid: notice.issuer_lid,
                    key,
                });
            }
            // Link state changes and local changes: nothing to do while the running
            // discovery has yet to read the issuer (it will read the new state then).
            128 | 144 | 145 | 64 | 65 if self.discovery_will_see(notice.issuer_lid) => {}
            // A switch's link went up or down: its PortStateChange latch tells whether
            // a sweep has seen that (see `on_port_state_trap`).
            128 => self.on_port_state_trap(now, notice.issuer_lid),
            // 144 (capability mask, NodeDescription or other local change: e.g. IsSM
            // set by an SM starting) and 145 (system image GUID) leave no latch to read,
            // and 64/65 (GID in/out of service, normally the SM's own Reports) are rare:
            // sweep.
            144 | 145 | 64 | 65 => self.heavy_sweep_wanted(now),
            _ => {}
        }
    }

    /// Whether a change reported by the port at `issuer_lid` will be seen by the running
    /// heavy sweep: it is still discovering and has not reached that port yet, so its
    /// NodeInfo and PortInfo Gets (and those of the links explored from it) come after
    /// the change. A port already read, an issuer the LIDs in force do not name (the
    /// first sweep, a LID we did not give), or any other phase: not seen, sweep again.
    fn discovery_will_see(&self, issuer_lid: u16) -> bool {
        if !self.sweep.is_discovering() {
            return false;
        }
        let Some(guid) = self.lids.guid_of(issuer_lid) else {
            return false;
        };
        // A switch this sweep reached: its ports are read once its PortStateChange
        // latch is known (`switch_latch_done`).
        if let Some(latch) = self.latches.get(guid) {
            return latch == Latch::Pending;
        }
        // A switch is keyed by its node GUID; a CA port by its port GUID, recorded once
        // the sweep reached that port.
        let reached = self.subnet.by_guid.contains_key(&guid)
            || self
                .subnet
                .nodes
                .iter()
                .any(|n| !n.is_switch() && n.ports.iter().any(|p| p.guid == guid));
        !reached
    }

    /// A trap 128 (a switch port's link went up or down) whose issuer the running or
    /// last heavy sweep has already read.
    ///
    /// Both switches of a cut cable trap, and the second trap often arrives after the
    /// sweep the first one started has read its issuer. Discovery clears each switch's
    /// PortStateChange latch before reading its ports (`switch_latch_done`), so a change
    /// the sweep did not see leaves the latch set: one SwitchInfo Get (as a light sweep
    /// does) tells whether another heavy sweep is needed. When the latch cannot tell
    /// (not Master, an issuer we gave no switch LID, a switch whose latch read failed)
    /// or the Get fails, sweep.
    fn on_port_state_trap(&mut self, now: Instant, issuer_lid: u16) {
        let target = self
            .lids
            .guid_of(issuer_lid)
            .filter(|_| self.smi.role == Role::Master)
            .filter(|&g| self.latches.get(g) == Some(Latch::Clean))
            .and_then(|g| {
                let n = *self.subnet.by_guid.get(&g)?;
                Some((self.subnet.nodes[n].path, g))
            });
        match target {
            Some((path, guid)) => {
                let sweep = self.latches.sweeps();
                self.submit(Op::CheckSwitchInfo { path, guid, sweep }, 0, None);
            }
            None => self.heavy_sweep_wanted(now),
        }
    }

    /// The answer to a trap 128's latch check.
    pub(super) fn on_switch_check(
        &mut self,
        now: Instant,
        guid: u64,
        sweep: u64,
        data: &[u8],
        attempts: u32,
    ) {
        let set = SwitchInfo::parse(data).map_or(true, |si| si.port_state_change);
        // A heavy sweep begun after the check was sent reads (and clears) the switch
        // after the check read it: what the latch showed is that sweep's to see. Unless
        // the check had to be resent, which may have reached the switch after the sweep
        // did.
        let covered = sweep != self.latches.sweeps() && attempts == 1;
        tracing::debug!(guid, set, covered, "PortStateChange after trap 128");
        if set && !covered {
            self.heavy_sweep_wanted(now);
        }
    }
}
