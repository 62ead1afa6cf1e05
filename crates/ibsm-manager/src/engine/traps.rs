//! Unsolicited MADs: SA requests go to the SA, SMInfo to the election, and traps are
//! answered with TrapRepress and acted on. A trap 128 from a switch the sweep has read
//! already costs one SwitchInfo Get of its PortStateChange latch, not a heavy sweep.

use ibsm_transport::{Address, Instant, LidAddress, Received};
use ibsm_wire::{
    LidSmp, MadHeaderView, Method, MgmtClass, Notice, SmAttributeId, SwitchInfo, Trap256Details,
};

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
        let subnet = &self.sweep.found(&self.last).subnet;
        let silenced = self.health.trap(&self.lids, subnet, now, &notice);
        if silenced.is_some() {
            self.drain_health(now);
        }
        if silenced == Some(true) {
            return;
        }
        // Subscribers (InformInfo) get the trap as an SA Report.
        self.admin
            .forward_to_subscribers(now, &notice, &mut self.out);
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
            // An issuer the LIDs in force do not name (the first sweep, a LID we did
            // not give), one already read, or any other phase: not seen, sweep again.
            128 | 144 | 145 | 64 | 65
                if self
                    .lids
                    .guid_of(notice.issuer_lid)
                    .is_some_and(|g| self.sweep.discovery_will_see(g)) => {}
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
        let found = self.sweep.found(&self.last);
        let check = self
            .lids
            .guid_of(issuer_lid)
            .filter(|_| self.smi.role == Role::Master)
            .and_then(|g| found.latch_check(g));
        match check {
            Some(op) => self.smps.submit(op, 0, None),
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
        let covered = sweep != self.sweep.found(&self.last).latches.sweep() && attempts == 1;
        tracing::debug!(guid, set, covered, "PortStateChange after trap 128");
        if set && !covered {
            self.heavy_sweep_wanted(now);
        }
    }
}
