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

use super::assign::Lids;
use super::ops::{Op, SmpQueue};
use super::publish::Cabling;
use super::{Outbox, SubnetManager};
use crate::config::SmConfig;
use crate::event::{Missing, SmEvent};
use crate::health::{Change, Health, PortKey, Reason};
use crate::model::{Discovered, NodeIx};

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
    fn downs(&self, subnet: &Discovered) -> BTreeSet<PortKey> {
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
    pub(super) fn cut(&self) -> Vec<(u64, u8)> {
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
    pub(super) fn skips(&self, subnet: &Discovered, node: NodeIx, port: u8) -> bool {
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

impl HealthState {
    /// Whether `key`'s cable is left out of routing and discovery decisions: an
    /// unhealthy external port.
    fn excluded(&self, key: PortKey) -> bool {
        key.port != 0 && self.policy.is_unhealthy(key)
    }

    /// Discovery is over (`subnet`: what it found): ports found Down (or back in Init)
    /// where the last configured sweep had a cable went down. Whether the policy was
    /// told (its changes to be drained).
    pub(super) fn after_discovery(
        &mut self,
        cfg: &SmConfig,
        subnet: &Discovered,
        now: Instant,
    ) -> bool {
        if self.linked.is_empty() || cfg.health.flap_count == 0 {
            return false;
        }
        for key in self.downs(subnet) {
            tracing::debug!(port = %key, "link went down since the last sweep");
            self.policy.link_down(key, now);
        }
        true
    }

    /// Heavy sweep number `sweep` configured the subnet: its losses go to the policy,
    /// and its cables and port GUIDs (`cabling`, made by the sweep's publish job when
    /// the flap or trap checks are on) are what the next sweep and traps are compared
    /// with.
    pub(super) fn after_sweep(&mut self, sweep: u64, now: Instant, cabling: Option<Cabling>) {
        let lost = std::mem::take(&mut self.lost);
        let lost = if self.lost_sweep == sweep {
            lost
        } else {
            BTreeSet::new()
        };
        self.policy.sweep_done(&lost, now);
        if let Some((linked, by_port_guid)) = cabling {
            self.linked = linked;
            self.by_port_guid = by_port_guid;
        }
    }

    /// A lost SMP of heavy sweep number `sweep` (after all retries): the port it was
    /// about, or the port across which a node was not found.
    pub(super) fn lost(&mut self, sweep: u64, m: &Missing) {
        if m.port == 0 || m.node == 0 {
            return;
        }
        if self.lost_sweep != sweep {
            self.lost.clear();
            self.lost_sweep = sweep;
        }
        self.lost.insert(PortKey::new(m.node, m.port));
    }

    /// A trap from the port at `issuer`'s LID (`lids`: the LIDs in force; `subnet`: the
    /// model that names switches): counted against its issuer port. `None` when the
    /// port is not known; else `true` when the port is silenced (a trap flood): the
    /// trap was answered and is otherwise ignored.
    pub(super) fn trap(
        &mut self,
        lids: &Lids,
        subnet: &Discovered,
        now: Instant,
        notice: &Notice,
    ) -> Option<bool> {
        let key = self.trap_port(lids, subnet, notice)?;
        Some(self.policy.trap(key, now))
    }

    /// The port a trap is about.
    fn trap_port(&self, lids: &Lids, subnet: &Discovered, notice: &Notice) -> Option<PortKey> {
        let guid = lids.guid_of(notice.issuer_lid)?;
        if subnet.by_guid.contains_key(&guid) {
            let port = notice.details::<Trap129Details>().map_or(0, |d| d.port_num);
            return Some(PortKey::new(guid, port));
        }
        self.by_port_guid.get(&guid).copied()
    }

    /// The quiet period of an unhealthy port may have passed; whether the policy
    /// looked (its changes to be drained).
    pub(super) fn handle_timeout(&mut self, now: Instant) -> bool {
        if self.policy.poll_timeout().is_some_and(|at| at <= now) {
            self.policy.handle_timeout(now);
            return true;
        }
        false
    }

    /// The policy's next change, reported to `out`: the port it is about.
    fn next_change(&mut self, out: &mut Outbox) -> Option<PortKey> {
        let port = match self.policy.poll_change()? {
            Change::Unhealthy { port, reason } => {
                tracing::warn!(port = %port, %reason, "port unhealthy");
                out.event(SmEvent::PortUnhealthy {
                    node: port.node,
                    port: port.port,
                    reason,
                });
                port
            }
            Change::Healthy { port, reason } => {
                tracing::info!(port = %port, was = %reason, "port healthy again");
                out.event(SmEvent::PortHealthy {
                    node: port.node,
                    port: port.port,
                    reason,
                });
                port
            }
        };
        Some(port)
    }

    /// The Program stage: with `babbling_port_policy`, disables the links of ports
    /// marked for flapping or babbling, and enables those this SM disabled for a port
    /// since taken back (`subnet`: the model being programmed). The PortInfo Sets
    /// queued.
    pub(super) fn program(
        &mut self,
        cfg: &SmConfig,
        subnet: &Discovered,
        smps: &mut SmpQueue,
    ) -> u64 {
        if !cfg.health.babbling_port_policy && self.disabled.is_empty() {
            return 0;
        }
        let mut sets: Vec<(NodeIx, u8, PhysPortState)> = Vec::new();
        if cfg.health.babbling_port_policy {
            let babbling: Vec<PortKey> = self
                .policy
                .unhealthy()
                .filter(|(k, u)| k.port != 0 && u.reason.babbling())
                .map(|(k, _)| k)
                .collect();
            for key in babbling {
                let Some((n, p)) = disable_end(subnet, key) else {
                    continue;
                };
                let target = PortKey::new(subnet.nodes[n].info.node_guid, p);
                tracing::warn!(port = %target, unhealthy = %key, "disabling a babbling link");
                self.disabled.insert(target, key);
                sets.push((n, p, PhysPortState::Disabled));
            }
        }
        let disabled: Vec<(PortKey, PortKey)> =
            self.disabled.iter().map(|(&t, &c)| (t, c)).collect();
        for (target, cause) in disabled {
            if self.excluded(cause) {
                continue;
            }
            let Some(&n) = subnet.by_guid.get(&target.node) else {
                continue;
            };
            let phys = subnet.nodes[n]
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
                    self.disabled.remove(&target);
                }
                None => {}
            }
        }
        let mut queued = 0;
        for (n, p, phys) in sets {
            if submit_phys_state(cfg, subnet, smps, n, p, phys) {
                queued += 1;
            }
        }
        queued
    }
}

impl SubnetManager {
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

    /// Reports the policy's changes and asks for the heavy sweep that applies them.
    pub(super) fn drain_health(&mut self, now: Instant) {
        while let Some(port) = self.health.next_change(&mut self.out) {
            // A switch's port 0 is only silenced, which needs no sweep; a heavy sweep
            // still discovering programs what it finds with the change already in.
            if port.port != 0 && !self.sweep.is_discovering() {
                self.heavy_sweep_wanted(now);
            }
        }
    }
}

/// The end of `key`'s cable to disable: the one nearer the SM (its Set need not
/// cross the bad link), not already disabled; none for the SM's own link.
fn disable_end(subnet: &Discovered, key: PortKey) -> Option<(NodeIx, u8)> {
    let &n = subnet.by_guid.get(&key.node)?;
    let here = (n, key.port);
    let ends = match subnet.nodes[n].ports.get(usize::from(key.port))?.peer {
        Some(far) => vec![here, far],
        None => vec![here],
    };
    // The SM's own port's cable: disabling either end cuts the SM off.
    let own = |(n, _): (NodeIx, u8)| {
        let node = &subnet.nodes[n];
        !node.is_switch() && node.path.is_local()
    };
    if ends.iter().any(|&e| own(e)) {
        return None;
    }
    let hops = |(n, p): (NodeIx, u8)| subnet.nodes[n].path_for(p).hops();
    let end = ends.into_iter().min_by_key(|&e| hops(e))?;
    let info = subnet.nodes[end.0].ports.get(usize::from(end.1))?.info?;
    (info.port_phys_state != PhysPortState::Disabled).then_some(end)
}

/// A PortInfo Set that changes only the physical state (and, to disable, the
/// logical state to Down, as OpenSM's `disable_port`).
fn submit_phys_state(
    cfg: &SmConfig,
    subnet: &Discovered,
    smps: &mut SmpQueue,
    n: NodeIx,
    p: u8,
    phys: PhysPortState,
) -> bool {
    let Some(mut want) = subnet.nodes[n]
        .ports
        .get(usize::from(p))
        .and_then(|r| r.info)
    else {
        return false;
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
    let node = &subnet.nodes[n];
    let guid = node.key_guid(p);
    if let Some(k) = crate::mkey::key_for(cfg.m_key, guid) {
        want.m_key = k;
    }
    let mut data = [0u8; 64];
    PortInfo::emit_into(&want, &mut data).ok();
    let m = ibsm_wire::attr::modifier::PortMod {
        port: p,
        sm_supports_extended_speeds: node.ports[usize::from(p)].ext_speeds,
    };
    smps.submit(Op::SetPortInfo { node: n, port: p }, m.encode(), Some(data));
    true
}
