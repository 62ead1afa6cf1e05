//! Port health in the engine: what feeds the policy ([`crate::health`]) and what an
//! unhealthy port changes. The policy itself is pure; this module only observes and
//! acts.
//!
//! Observations:
//! - flaps: after discovery, a port the last configured sweep found cabled and now reads
//!   Down (or Init where it was left Active: it went down and trained again between
//!   sweeps) went down once, counted at both ends of that cable. Only ports actually
//!   read count, so lost SMPs make no flaps;
//! - traps: every trap, against its issuer port (traps 129-131 name the port; others
//!   the issuer LID's port, a switch's port 0);
//! - no answer: the ports a heavy sweep lost SMPs about or across (`resweep.rs` hands
//!   each lost SMP over);
//! - reports from other monitors: [`SubnetManager::report_unhealthy`] (the performance
//!   manager's entry point, with [`Reason::Counters`]).
//!
//! What an unhealthy port changes (its external port, never a switch's port 0):
//! - routing: its cable is left out of the fabric the routes are computed on, so the
//!   engine re-routes around it as around a lost cable (`routing.rs`, `reroute.rs`),
//!   and the routes come back by a recompute when it is taken back;
//! - traps of a port marked for a trap flood are answered but ignored (`traps.rs`);
//! - discovery does not explore across a port marked for not answering;
//! - with `babbling_port_policy`, a flapping or babbling link is disabled in the
//!   Program stage and enabled again once taken back.
//!
//! Every mark and take-back is an event ([`SmEvent::PortUnhealthy`],
//! [`SmEvent::PortHealthy`]) and asks for a heavy sweep, which applies it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ibsm_transport::Instant;
use ibsm_wire::{Notice, PhysPortState, PortInfo, PortState, Trap129Details};

use super::SubnetManager;
use super::ops::Op;
use super::publish::Cabling;
use crate::event::{Missing, SmEvent};
use crate::health::{Change, Health, PortKey, Reason};
use crate::model::{NodeIx, Subnet};

/// The health policy and what the engine keeps to feed it.
#[derive(Debug, Default)]
pub(super) struct HealthState {
    pub(super) policy: Health,
    /// Cabled ports of the last configured sweep -> (the far end, left Active).
    linked: HashMap<PortKey, (PortKey, bool)>,
    /// CA and router port GUIDs of the last configured sweep -> their port.
    by_port_guid: HashMap<u64, PortKey>,
    /// Ports the running heavy sweep lost SMPs about, and which heavy sweep that is.
    lost: BTreeSet<PortKey>,
    lost_sweep: u64,
    /// Links this SM disabled (`babbling_port_policy`): the port the Set went to ->
    /// the unhealthy port it was disabled for.
    disabled: BTreeMap<PortKey, PortKey>,
}

impl HealthState {
    /// The ports of `subnet` found Down (or back in Init after they were Active) where
    /// the last configured sweep had a cable, with their far ends: links that went down
    /// since.
    fn downs(&self, subnet: &Subnet) -> BTreeSet<PortKey> {
        let mut downs = BTreeSet::new();
        for node in &subnet.nodes {
            for (p, rec) in node.ports.iter().enumerate().skip(1) {
                // Only a port found Down or Init can have gone down: most are
                // Active, and skip the lookup.
                let Some(state) = rec.info.as_ref().map(|i| i.port_state) else {
                    continue;
                };
                if !matches!(state, PortState::Down | PortState::Init) {
                    continue;
                }
                let key = PortKey::new(node.info.node_guid, p as u8);
                let Some(&(far, was_active)) = self.linked.get(&key) else {
                    continue;
                };
                let retrained = state == PortState::Init && was_active;
                if state == PortState::Down || retrained {
                    downs.insert(key);
                    downs.insert(far);
                }
            }
        }
        downs
    }

    /// The unhealthy external ports, as (node GUID, port).
    fn cut(&self) -> Vec<(u64, u8)> {
        self.policy
            .unhealthy()
            .filter(|(k, _)| k.port != 0)
            .map(|(k, _)| (k.node, k.port))
            .collect()
    }
}

impl HealthState {
    /// Whether discovery leaves out what lies behind port `port` of `node` of `subnet`:
    /// a port that stopped answering.
    pub(super) fn skips(&self, subnet: &Subnet, node: NodeIx, port: u8) -> bool {
        let key = PortKey::new(subnet.nodes[node].info.node_guid, port);
        self.policy
            .get(key)
            .is_some_and(|u| matches!(u.reason, Reason::NoAnswer { .. }))
    }

    pub(super) fn new(cfg: crate::health::HealthConfig) -> Self {
        Self {
            policy: Health::new(cfg),
            ..Self::default()
        }
    }
}

impl SubnetManager {
    fn port_key(&self, n: NodeIx, p: u8) -> PortKey {
        PortKey::new(self.model().nodes[n].info.node_guid, p)
    }

    /// Whether `key`'s cable is left out of routing and discovery decisions: an
    /// unhealthy external port.
    fn excluded(&self, key: PortKey) -> bool {
        key.port != 0 && self.health.policy.is_unhealthy(key)
    }

    /// Discovery is over: ports found Down (or back in Init) where the last configured
    /// sweep had a cable went down.
    pub(super) fn health_after_discovery(&mut self, now: Instant) {
        if self.health.linked.is_empty() || self.cfg.health.flap_count == 0 {
            return;
        }
        for key in self.health.downs(self.model()) {
            tracing::debug!(port = %key, "link went down since the last sweep");
            self.health.policy.link_down(key, now);
        }
        self.drain_health(now);
    }

    /// A heavy sweep configured the subnet: its losses go to the policy, and its cables
    /// and port GUIDs (`cabling`, made by the sweep's publish job when the flap or trap
    /// checks are on) are what the next sweep and traps are compared with.
    pub(super) fn health_after_sweep(&mut self, now: Instant, cabling: Option<Cabling>) {
        let lost = std::mem::take(&mut self.health.lost);
        let lost = if self.health.lost_sweep == self.latches().sweep() {
            lost
        } else {
            BTreeSet::new()
        };
        self.health.policy.sweep_done(&lost, now);
        if let Some((linked, by_port_guid)) = cabling {
            self.health.linked = linked;
            self.health.by_port_guid = by_port_guid;
        }
        self.drain_health(now);
    }

    /// A lost SMP of the running heavy sweep (after all retries): the port it was about,
    /// or the port across which a node was not found.
    pub(super) fn health_lost(&mut self, m: &Missing) {
        if m.port == 0 || m.node == 0 {
            return;
        }
        let sweep = self.latches().sweep();
        if self.health.lost_sweep != sweep {
            self.health.lost.clear();
            self.health.lost_sweep = sweep;
        }
        self.health.lost.insert(PortKey::new(m.node, m.port));
    }

    /// A trap: counted against its issuer port. `true` when the port is silenced (a
    /// trap flood): the trap was answered and is otherwise ignored.
    pub(super) fn health_trap(&mut self, now: Instant, notice: &Notice) -> bool {
        let Some(key) = self.trap_port(notice) else {
            return false;
        };
        let silenced = self.health.policy.trap(key, now);
        self.drain_health(now);
        silenced
    }

    /// The port a trap is about.
    fn trap_port(&self, notice: &Notice) -> Option<PortKey> {
        let guid = self.lids.guid_of(notice.issuer_lid)?;
        if self.model().by_guid.contains_key(&guid) {
            let port = notice.details::<Trap129Details>().map_or(0, |d| d.port_num);
            return Some(PortKey::new(guid, port));
        }
        self.health.by_port_guid.get(&guid).copied()
    }

    /// Marks `port` unhealthy for a reason judged outside the built-in checks (the
    /// performance manager: an error counter above its threshold, as
    /// [`Reason::Counters`]). Report again while the trouble lasts: each report
    /// starts the quiet period again. The port is then routed around like a lost
    /// cable from the next heavy sweep on, which this asks for.
    pub fn report_unhealthy(&mut self, now: Instant, port: PortKey, reason: Reason) {
        self.health.policy.report(port, reason, now);
        self.drain_health(now);
        self.refresh_timers();
    }

    /// The quiet period of an unhealthy port may have passed.
    pub(super) fn health_timeout(&mut self, now: Instant) {
        if self
            .health
            .policy
            .poll_timeout()
            .is_some_and(|at| at <= now)
        {
            self.health.policy.handle_timeout(now);
            self.drain_health(now);
        }
    }

    /// Reports the policy's changes and asks for the heavy sweep that applies them.
    fn drain_health(&mut self, now: Instant) {
        while let Some(c) = self.health.policy.poll_change() {
            let port = match c {
                Change::Unhealthy { port, reason } => {
                    tracing::warn!(port = %port, %reason, "port unhealthy");
                    self.event(SmEvent::PortUnhealthy {
                        node: port.node,
                        port: port.port,
                        reason,
                    });
                    port
                }
                Change::Healthy { port, reason } => {
                    tracing::info!(port = %port, was = %reason, "port healthy again");
                    self.event(SmEvent::PortHealthy {
                        node: port.node,
                        port: port.port,
                        reason,
                    });
                    port
                }
            };
            // A switch's port 0 is only silenced, which needs no sweep; a heavy sweep
            // still discovering programs what it finds with the change already in.
            if port.port != 0 && !self.sweep.is_discovering() {
                self.heavy_sweep_wanted(now);
            }
        }
    }

    /// The unhealthy external ports, as (node GUID, port): their cables are left out of
    /// the fabric the routes are computed on.
    pub(super) fn health_cut(&self) -> Vec<(u64, u8)> {
        self.health.cut()
    }

    /// The Program stage: with `babbling_port_policy`, disables the links of ports
    /// marked for flapping or babbling, and enables those this SM disabled for a port
    /// since taken back.
    pub(super) fn program_health(&mut self) {
        if !self.cfg.health.babbling_port_policy && self.health.disabled.is_empty() {
            return;
        }
        let mut sets: Vec<(NodeIx, u8, PhysPortState)> = Vec::new();
        if self.cfg.health.babbling_port_policy {
            let babbling: Vec<PortKey> = self
                .health
                .policy
                .unhealthy()
                .filter(|(k, u)| k.port != 0 && u.reason.babbling())
                .map(|(k, _)| k)
                .collect();
            for key in babbling {
                let Some((n, p)) = self.disable_end(key) else {
                    continue;
                };
                let target = self.port_key(n, p);
                tracing::warn!(port = %target, unhealthy = %key, "disabling a babbling link");
                self.health.disabled.insert(target, key);
                sets.push((n, p, PhysPortState::Disabled));
            }
        }
        let disabled: Vec<(PortKey, PortKey)> =
            self.health.disabled.iter().map(|(&t, &c)| (t, c)).collect();
        for (target, cause) in disabled {
            if self.excluded(cause) {
                continue;
            }
            let Some(&n) = self.model().by_guid.get(&target.node) else {
                continue;
            };
            let phys = self.model().nodes[n]
                .ports
                .get(usize::from(target.port))
                .and_then(|r| r.info)
                .map(|i| i.port_phys_state);
            match phys {
                Some(PhysPortState::Disabled) => {
                    tracing::info!(port = %target, "enabling a link disabled while unhealthy");
                    sets.push((n, target.port, PhysPortState::Polling));
                }
                // Read enabled again: done.
                Some(_) => {
                    self.health.disabled.remove(&target);
                }
                None => {}
            }
        }
        for (n, p, phys) in sets {
            self.submit_phys_state(n, p, phys);
        }
    }

    /// The end of `key`'s cable to disable: the one nearer the SM (its Set need not
    /// cross the bad link), not already disabled; none for the SM's own link.
    fn disable_end(&self, key: PortKey) -> Option<(NodeIx, u8)> {
        let &n = self.model().by_guid.get(&key.node)?;
        let here = (n, key.port);
        let ends = match self.model().nodes[n].ports.get(usize::from(key.port))?.peer {
            Some(far) => vec![here, far],
            None => vec![here],
        };
        // The SM's own port's cable: disabling either end cuts the SM off.
        let own = |(n, _): (NodeIx, u8)| {
            let node = &self.model().nodes[n];
            !node.is_switch() && node.path.is_local()
        };
        if ends.iter().any(|&e| own(e)) {
            return None;
        }
        let hops = |(n, p): (NodeIx, u8)| self.model().nodes[n].path_for(p).hops();
        let end = ends.into_iter().min_by_key(|&e| hops(e))?;
        let info = self.model().nodes[end.0]
            .ports
            .get(usize::from(end.1))?
            .info?;
        (info.port_phys_state != PhysPortState::Disabled).then_some(end)
    }

    /// A PortInfo Set that changes only the physical state (and, to disable, the
    /// logical state to Down, as OpenSM's `disable_port`).
    fn submit_phys_state(&mut self, n: NodeIx, p: u8, phys: PhysPortState) {
        let Some(mut want) = self.model().nodes[n]
            .ports
            .get(usize::from(p))
            .and_then(|r| r.info)
        else {
            return;
        };
        want.port_state = if phys == PhysPortState::Disabled {
            PortState::Down
        } else {
            PortState::NoChange
        };
        want.port_phys_state = phys;
        want.link_down_default_state = ibsm_wire::LinkDownDefaultState::from(0);
        want.link_width_enabled = ibsm_wire::LinkWidthMask(0);
        want.link_speed_enabled = ibsm_wire::LinkSpeedMask(0);
        let node = &self.model().nodes[n];
        let guid = node.key_guid(p);
        if let Some(k) = crate::mkey::key_for(self.cfg.m_key, guid) {
            want.m_key = k;
        }
        let mut data = [0u8; 64];
        PortInfo::emit_into(&want, &mut data).ok();
        let m = ibsm_wire::attr::modifier::PortMod {
            port: p,
            sm_supports_extended_speeds: node.ports[usize::from(p)].ext_speeds,
        };
        self.sweep.count(|s| s.port_sets += 1);
        self.smps
            .submit(Op::SetPortInfo { node: n, port: p }, m.encode(), Some(data));
    }
}
