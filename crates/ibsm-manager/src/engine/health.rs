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
//! - reboots: after discovery, an end port (a CA's port, a switch's port 0) to which
//!   the LIDs in force give a LID and that reads LID 0: its SMA lost what this SM set,
//!   so its node rebooted (or was reset) since the last sweep;
//! - failed Sets: every SMP Set refused or lost after all retries (`ops.rs`), against
//!   the port it configures (a switch's port 0 for switch-wide tables);
//! - reports from other monitors: [`SubnetManager::report_unhealthy`] (the performance
//!   manager's entry point, with [`Reason::Counters`]);
//! - the operator: [`SubnetManager::isolate_port`], [`SubnetManager::clear_port`].
//!
//! What an unhealthy port changes follows its action ([`Action`], per condition in
//! `SmConfig::health`; an external port, never a switch's port 0, which is only
//! reported or silenced):
//! - `report`: nothing but the event, the log line and the status;
//! - `isolate`: its cable is left out of the fabric the routes are computed on (the
//!   routing job's cut, as the reference topology's `isolate` disconnects cables), so
//!   the engine re-routes around it as around a lost cable (`routing.rs`,
//!   `reroute.rs`), and the routes come back by a recompute when it is taken back;
//!   traps of a port marked for a trap flood are answered but ignored (`traps.rs`);
//! - `no_discover`: isolated, and discovery does not explore across it;
//! - `disable`: isolated, and its link disabled in the Program stage and enabled
//!   again once taken back (`babbling_port_policy` makes flapping and noisy traps
//!   `disable`).
//!
//! Every mark and take-back is an event ([`SmEvent::PortUnhealthy`],
//! [`SmEvent::PortHealthy`]); one that changes what is isolated asks for a heavy
//! sweep, which applies it, and (as master) rewrites the isolation store
//! ([`crate::isolation`]), which the engine reads at start and at takeover.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ibsm_transport::Instant;
use ibsm_wire::{Notice, PhysPortState, PortInfo, PortState, Trap129Details};

use super::assign::Lids;
use super::ops::{Op, SmpQueue};
use super::publish::Cabling;
use super::{Outbox, SubnetManager};
use crate::config::SmConfig;
use crate::event::{Missing, Role, SmEvent};
use crate::health::{Action, Change, Health, PortCommandError, PortKey, Reason};
use crate::isolation::{IsolatedPort, IsolationError, IsolationStore, MemoryIsolationStore};
use crate::model::{Discovered, NodeIx};

/// The health policy and what the engine keeps to feed it.
#[derive(Debug)]
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
    /// Where the isolations are kept across restarts and failovers.
    store: Box<dyn IsolationStore + Send>,
    /// What the store holds, as last read or written (their `since` 0).
    saved: Vec<IsolatedPort>,
    /// This SM was Standby since it last became Master (or started): its next
    /// Master role is a takeover, which reads the store again.
    pub(super) was_standby: bool,
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

    /// The isolated external ports (unhealthy with an action that isolates), as
    /// (node GUID, port): the routing job's cut.
    pub(super) fn cut(&self) -> Vec<(u64, u8)> {
        self.policy
            .unhealthy()
            .filter(|(k, u)| k.port != 0 && u.isolated())
            .map(|(k, _)| (k.node, k.port))
            .collect()
    }

    /// The isolated external ports as the store keeps them (not yet stamped).
    fn isolations(&self) -> Vec<IsolatedPort> {
        self.policy
            .unhealthy()
            .filter(|(k, u)| k.port != 0 && u.isolated())
            .map(|(port, u)| IsolatedPort {
                port,
                condition: u.reason.condition(),
                action: u.action,
                since: 0,
            })
            .collect()
    }

    /// Writes the isolations to the store when they changed since it was last read
    /// or written. A failure is logged and tried again at the next change.
    fn persist(&mut self) {
        let now = self.isolations();
        if now == self.saved {
            return;
        }
        match self.store.save(&now) {
            Ok(()) => self.saved = now,
            Err(e) => tracing::warn!(error = %e, "isolated ports not saved"),
        }
    }

    /// Reads the store and marks what it lists at `now`
    /// ([`Health::restore`]). With `exact` (a takeover), a port isolated here that the
    /// store no longer lists is cleared: the master before cleared or took it back.
    fn load(&mut self, now: Instant, exact: bool) -> Result<usize, IsolationError> {
        let stored = self.store.load()?;
        if exact {
            let listed: BTreeSet<PortKey> = stored.iter().map(|p| p.port).collect();
            let stale: Vec<PortKey> = self
                .policy
                .unhealthy()
                .filter(|(k, u)| u.isolated() && !listed.contains(k))
                .map(|(k, _)| k)
                .collect();
            for k in stale {
                self.policy.clear(k);
            }
        }
        for p in &stored {
            self.policy.restore(p.port, p.condition, now);
        }
        self.saved = stored
            .iter()
            .map(|p| IsolatedPort { since: 0, ..*p })
            .collect();
        Ok(stored.len())
    }
}

impl HealthState {
    /// Whether discovery leaves out what lies behind port `port` of `node` of `subnet`:
    /// a port marked with `no_discover` (by default, one that stopped answering).
    /// The far end of the cable as the last configured sweep found it counts too, so
    /// a port marked at the end away from the SM (a CA's port) is not crossed either.
    pub(super) fn skips(&self, subnet: &Discovered, node: NodeIx, port: u8) -> bool {
        let key = PortKey::new(subnet.nodes[node].info.node_guid, port);
        let no_discover = |k: PortKey| {
            self.policy
                .get(k)
                .is_some_and(|u| u.action == Action::NoDiscover)
        };
        no_discover(key)
            || self
                .linked
                .get(&key)
                .is_some_and(|&(far, _)| no_discover(far))
    }

    pub(super) fn new(cfg: crate::health::HealthConfig) -> Self {
        Self {
            policy: Health::new(cfg),
            linked: HashMap::new(),
            by_port_guid: HashMap::new(),
            lost: BTreeSet::new(),
            lost_sweep: 0,
            disabled: BTreeMap::new(),
            store: Box::new(MemoryIsolationStore::default()),
            saved: Vec::new(),
            was_standby: false,
        }
    }
}

impl HealthState {
    /// Whether the link this SM disabled for `key` stays disabled: `key` is still
    /// marked with `disable`.
    fn keeps_disabled(&self, key: PortKey) -> bool {
        key.port != 0
            && self
                .policy
                .get(key)
                .is_some_and(|u| u.action == Action::Disable)
    }

    /// Discovery is over (`subnet`: what it found; `lids`: every LID this SM gave,
    /// port GUID (switches: node GUID) -> (base LID, LMC), ports gone since
    /// included, so a node that went away to reboot is still known): ports found Down (or back in Init) where the last
    /// configured sweep had a cable went down; end ports given a LID that read LID 0
    /// rebooted. Whether the policy was told (its changes to be drained).
    pub(super) fn after_discovery(
        &mut self,
        cfg: &SmConfig,
        subnet: &Discovered,
        lids: &BTreeMap<u64, (u16, u8)>,
        now: Instant,
    ) -> bool {
        let mut told = false;
        if cfg.health.reboot_count > 0 && !lids.is_empty() {
            for key in rebooted(subnet, lids) {
                tracing::debug!(port = %key, "end port lost its LID: its node rebooted");
                self.policy.rebooted(key, now);
                told = true;
            }
        }
        if self.linked.is_empty() || cfg.health.flap_count == 0 {
            return told;
        }
        for key in self.downs(subnet) {
            tracing::debug!(port = %key, "link went down since the last sweep");
            self.policy.link_down(key, now);
        }
        true
    }

    /// An SMP Set to `key` was refused or lost after all retries.
    pub(super) fn set_failed(&mut self, key: PortKey, now: Instant) {
        self.policy.set_failed(key, now);
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

    /// The policy's next change, reported to `out` (one event and one log line per
    /// change): the port it is about, and whether it changes what is isolated.
    fn next_change(&mut self, out: &mut Outbox) -> Option<(PortKey, bool)> {
        let (port, isolation) = match self.policy.poll_change()? {
            Change::Unhealthy {
                port,
                reason,
                action,
                capped,
            } => {
                if capped {
                    let cap = self.policy.isolation_cap();
                    tracing::warn!(
                        port = %port,
                        %reason,
                        cap,
                        "port unhealthy, isolation cap reached: only reported"
                    );
                } else {
                    tracing::warn!(port = %port, %reason, %action, "port unhealthy");
                }
                out.event(SmEvent::PortUnhealthy {
                    node: port.node,
                    port: port.port,
                    reason,
                    action,
                    capped,
                });
                (port, action.isolates())
            }
            Change::Healthy {
                port,
                reason,
                action,
            } => {
                tracing::info!(port = %port, was = %reason, "port healthy again");
                out.event(SmEvent::PortHealthy {
                    node: port.node,
                    port: port.port,
                    reason,
                });
                (port, action.isolates())
            }
        };
        Some((port, isolation))
    }

    /// The Program stage: disables the links of ports marked with `disable`, and
    /// enables those this SM disabled for a port since taken back (`subnet`: the model
    /// being programmed). The PortInfo Sets queued.
    pub(super) fn program(
        &mut self,
        cfg: &SmConfig,
        subnet: &Discovered,
        smps: &mut SmpQueue,
    ) -> u64 {
        let disabling: Vec<PortKey> = self
            .policy
            .unhealthy()
            .filter(|(k, u)| k.port != 0 && u.action == Action::Disable)
            .map(|(k, _)| k)
            .collect();
        if disabling.is_empty() && self.disabled.is_empty() {
            return 0;
        }
        let mut sets: Vec<(NodeIx, u8, PhysPortState)> = Vec::new();
        for key in disabling {
            let Some((n, p)) = disable_end(subnet, key) else {
                continue;
            };
            let target = PortKey::new(subnet.nodes[n].info.node_guid, p);
            tracing::warn!(port = %target, unhealthy = %key, "disabling an unhealthy link");
            self.disabled.insert(target, key);
            sets.push((n, p, PhysPortState::Disabled));
        }
        let disabled: Vec<(PortKey, PortKey)> =
            self.disabled.iter().map(|(&t, &c)| (t, c)).collect();
        for (target, cause) in disabled {
            if self.keeps_disabled(cause) {
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
        self.drain_health_with(now, true);
    }

    /// [`Self::drain_health`]; `sweep`: whether a change to what is isolated asks for
    /// a heavy sweep (not at a takeover, which sweeps anyway). As the SM that sweeps
    /// (Master, or Discovering before the first election), the isolation store is
    /// rewritten when what is isolated changed; a Standby never writes it (the
    /// master's file).
    fn drain_health_with(&mut self, now: Instant, sweep: bool) {
        let mut changed = false;
        while let Some((port, isolation)) = self.health.next_change(&mut self.out) {
            changed |= isolation;
            // A switch's port 0 is only silenced, which needs no sweep; a heavy sweep
            // still discovering programs what it finds with the change already in; a
            // port only reported changes nothing the sweep writes.
            if sweep && isolation && port.port != 0 && !self.sweep.is_discovering() {
                self.heavy_sweep_wanted(now);
            }
        }
        if changed && matches!(self.smi.role, Role::Master | Role::Discovering) {
            self.health.persist();
        }
    }

    /// Where the isolated ports are kept across restarts and failovers (default: in
    /// memory, for as long as the engine lives). ibsmd gives a
    /// [`FileIsolationStore`](crate::isolation::FileIsolationStore) beside `guid2lid`.
    /// Read by [`Self::start`] and at every takeover as master; set it before
    /// [`Self::start`].
    pub fn set_isolation_store(&mut self, store: Box<dyn IsolationStore + Send>) {
        self.health.store = store;
        self.health.saved.clear();
    }

    /// Reads the isolation store and marks what it lists (`exact`: clears isolations
    /// it no longer lists, at a takeover). The number of ports it lists.
    pub(super) fn load_isolations(
        &mut self,
        now: Instant,
        exact: bool,
    ) -> Result<usize, IsolationError> {
        let n = self.health.load(now, exact)?;
        if n > 0 {
            tracing::info!(ports = n, "isolated ports read back");
        }
        self.drain_health_with(now, false);
        if matches!(self.smi.role, Role::Master | Role::Discovering) {
            // A port the configuration no longer isolates is dropped from the store.
            self.health.persist();
        }
        Ok(n)
    }

    /// The Master took over from another SM: the isolations that SM kept are read
    /// back (a bad or unreadable file is logged, and this SM goes on with its own).
    pub(super) fn took_over(&mut self, now: Instant) {
        if let Err(e) = self.load_isolations(now, true) {
            tracing::warn!(error = %e, "isolated ports not read at takeover");
        }
    }

    /// The operator isolates `port` ([`Reason::Manual`] with the action of
    /// [`Condition::Manual`](crate::health::Condition::Manual), not counted against the
    /// isolation cap): it stays isolated (across restarts and failovers) until
    /// [`Self::clear_port`]. The next heavy sweep applies it, which this asks for.
    /// Returns whether anything changed (`false`: it was isolated by hand already).
    ///
    /// # Errors
    /// [`PortCommandError`] when this SM is not the one that configures the subnet,
    /// or the last heavy sweep found no such node or port, or `port` is port 0.
    pub fn isolate_port(&mut self, now: Instant, port: PortKey) -> Result<bool, PortCommandError> {
        self.port_command_allowed()?;
        self.known_port(port)?;
        let changed = self.health.policy.isolate(port, now);
        self.drain_health(now);
        self.refresh_timers();
        Ok(changed)
    }

    /// The operator takes `port` back, whatever it was marked for (by hand or by a
    /// check, whose counts start afresh). Returns the reason it had been marked for
    /// (`None`: it was not marked). A port the fabric no longer has can be cleared.
    ///
    /// # Errors
    /// [`PortCommandError`] when this SM is not the one that configures the subnet, or
    /// `port` is neither marked nor a port the last heavy sweep found.
    pub fn clear_port(
        &mut self,
        now: Instant,
        port: PortKey,
    ) -> Result<Option<Reason>, PortCommandError> {
        self.port_command_allowed()?;
        if !self.health.policy.is_unhealthy(port) {
            self.known_port(port)?;
            return Ok(None);
        }
        let was = self.health.policy.clear(port);
        self.drain_health(now);
        self.refresh_timers();
        Ok(was)
    }

    fn port_command_allowed(&self) -> Result<(), PortCommandError> {
        match self.smi.role {
            Role::Master | Role::Discovering => Ok(()),
            role => Err(PortCommandError::NotMaster { role }),
        }
    }

    /// Whether the last heavy sweep found `port` as an external port.
    fn known_port(&self, port: PortKey) -> Result<(), PortCommandError> {
        let subnet = &self.last.subnet;
        let &n = subnet
            .by_guid
            .get(&port.node)
            .ok_or(PortCommandError::UnknownNode { node: port.node })?;
        let ports = subnet.nodes[n].ports.len().saturating_sub(1);
        if port.port == 0 {
            return Err(PortCommandError::NotExternal { port });
        }
        if usize::from(port.port) > ports {
            return Err(PortCommandError::NoSuchPort {
                port,
                ports: u8::try_from(ports).unwrap_or(u8::MAX),
            });
        }
        Ok(())
    }
}

/// The end ports of `subnet` that `lids` gives a LID and that read LID 0: their SMA
/// lost what this SM set (a CA's ports by port GUID, a switch's port 0 by node GUID).
fn rebooted(subnet: &Discovered, lids: &BTreeMap<u64, (u16, u8)>) -> Vec<PortKey> {
    let mut out = Vec::new();
    for node in &subnet.nodes {
        let ends = if node.is_switch() {
            0..1
        } else {
            1..node.ports.len()
        };
        for p in ends {
            let Some(rec) = node.ports.get(p) else {
                continue;
            };
            let Some(info) = rec.info.as_ref() else {
                continue;
            };
            let guid = if node.is_switch() {
                node.info.node_guid
            } else {
                rec.guid
            };
            if info.lid == 0 && lids.get(&guid).is_some_and(|&(l, _)| l != 0) {
                out.push(PortKey::new(node.info.node_guid, p as u8));
            }
        }
    }
    out
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
