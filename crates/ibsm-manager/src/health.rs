//! Port health: which ports misbehave badly enough to be routed around for a while.
//!
//! The policy of NVIDIA's SM (`hm_unhealthy_ports_checks`) and OpenSM's trap aging and
//! `babbling_port_policy`, as a pure function of observations and their time. A port is
//! marked unhealthy when
//!
//! - its link **flaps**: more than [`HealthConfig::flap_count`] link-down events within
//!   [`HealthConfig::flap_window`] (a heavy sweep reading the port Down where the sweep
//!   before found a cable; the engine counts both ends of the cable);
//! - it **floods traps**: more than [`HealthConfig::trap_limit`] traps within
//!   [`HealthConfig::trap_window`] (OpenSM marks a port after 10 identical traps in its
//!   aging window);
//! - it **stops answering**: SMPs about it (or across it, to the node behind it) are lost
//!   after all retries in [`HealthConfig::no_answer_sweeps`] heavy sweeps in a row;
//! - it **reboots** repeatedly: [`HealthConfig::reboot_count`] reboots within
//!   [`HealthConfig::reboot_window`] (the engine sees a reboot as an end port that
//!   held a LID from this SM read back with LID 0: its SMA lost its configuration);
//! - its **Sets fail**: [`HealthConfig::set_err_count`] SMP Sets to it refused with a
//!   bad status or lost after all retries within [`HealthConfig::set_err_window`];
//! - someone else says so: [`Health::report`] with a [`Reason`] of its own, such as
//!   [`Reason::Counters`] for an error counter above its threshold (the performance
//!   manager's entry point, the high-BER condition);
//! - the operator says so: [`Health::isolate`] ([`Reason::Manual`]), until
//!   [`Health::clear`].
//!
//! Each [`Condition`] has an [`Action`] ([`HealthConfig::actions`], UFM's and NVIDIA
//! SM's table): `ignore` (not marked at all), `report` (marked and reported, nothing
//! else), `isolate` (its link carries no routes), `disable` (isolated and its link
//! disabled) or `no_discover` (isolated and discovery does not cross it). Automatic
//! isolations are capped ([`IsolationCap`]: by default at most max(10, 0.5 %) of the
//! fabric's ports, as NVIDIA's PDR plugin), so a fault that makes many ports look bad
//! at once (a firmware bug, a bad counter threshold) cannot cut a large part of the
//! fabric: beyond the cap a port is only reported ([`Unhealthy::capped`]), and
//! isolated (the longest held back first) once an isolation ends and leaves room.
//!
//! An unhealthy port is taken back once it has been quiet for
//! [`HealthConfig::quiet_period`]: no flap, trap, lost SMP or report since, whatever it
//! was marked for (a link flapping on below the threshold is not quiet). A port the
//! operator isolated stays so until the operator clears it. What the engine does with an unhealthy port is in
//! `engine/health.rs` and [`HealthConfig`]'s field docs: its link is left out of routing
//! like a lost cable, its traps are answered but no longer acted on, a port that does
//! not answer is no longer explored, and with [`HealthConfig::babbling_port_policy`] a
//! flapping or babbling link is disabled until it is taken back.
//!
//! Memory is bounded: a port keeps at most `limit + 1` timestamps per check, and a port
//! with nothing recorded is forgotten.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use ibsm_transport::Instant;

mod config;

pub use config::{Action, Actions, Condition, HealthConfig, IsolationCap};

/// A port, by identity: the node GUID and the port number (0: a switch's management
/// port, or a CA node as a whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortKey {
    /// Node GUID.
    pub node: u64,
    /// Port number on that node.
    pub port: u8,
}

impl PortKey {
    /// The port `port` of the node with GUID `node`.
    #[must_use]
    pub const fn new(node: u64, port: u8) -> Self {
        Self { node, port }
    }
}

impl std::fmt::Display for PortKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#018x}/{}", self.node, self.port)
    }
}

/// Why a port was marked unhealthy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// Its link went down more than `flap_count` times within `window`.
    Flapping {
        /// Link-down events counted within the window.
        flaps: u32,
        /// The window.
        window: Duration,
    },
    /// It sent more than `trap_limit` traps within `window`.
    TrapFlood {
        /// Traps counted within the window.
        traps: u32,
        /// The window.
        window: Duration,
    },
    /// SMPs about or across it were lost in this many heavy sweeps in a row.
    NoAnswer {
        /// Heavy sweeps in a row.
        sweeps: u32,
    },
    /// An error counter crossed its threshold (reported by the performance manager
    /// through [`Health::report`]).
    Counters {
        /// The counter's name (e.g. `SymbolErrorCounter`).
        counter: &'static str,
        /// Its increase that was judged too high.
        value: u64,
        /// The threshold it crossed.
        threshold: u64,
    },
    /// Its node rebooted `reboots` times within `window`.
    Reboot {
        /// Reboots counted within the window.
        reboots: u32,
        /// The window.
        window: Duration,
    },
    /// `errors` SMP Sets to it were refused or lost within `window`.
    SetErr {
        /// Failed Sets counted within the window.
        errors: u32,
        /// The window.
        window: Duration,
    },
    /// The operator isolated it ([`Health::isolate`]).
    Manual,
    /// Read back from the isolation file at start or takeover
    /// ([`crate::isolation`]): isolated for `condition` by this SM or the one before.
    Restored {
        /// The condition it was isolated for.
        condition: Condition,
    },
}

impl Reason {
    /// A short name for logs and metrics: `flapping`, `trap_flood`, `no_answer`,
    /// `counters`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Reason::Flapping { .. } => "flapping",
            Reason::TrapFlood { .. } => "trap_flood",
            Reason::NoAnswer { .. } => "no_answer",
            Reason::Counters { .. } => "counters",
            Reason::Reboot { .. } => "reboot",
            Reason::SetErr { .. } => "set_err",
            Reason::Manual => "manual",
            Reason::Restored { .. } => "restored",
        }
    }

    /// The condition of the action table it falls under.
    #[must_use]
    pub fn condition(&self) -> Condition {
        match self {
            Reason::Flapping { .. } => Condition::Flapping,
            Reason::TrapFlood { .. } => Condition::NoisyTraps,
            Reason::NoAnswer { .. } => Condition::Unresponsive,
            Reason::Counters { .. } => Condition::HighBer,
            Reason::Reboot { .. } => Condition::Reboot,
            Reason::SetErr { .. } => Condition::SetErr,
            Reason::Manual => Condition::Manual,
            Reason::Restored { condition } => *condition,
        }
    }

    /// Whether the port's link is the trouble: a flapping link or a babbling port
    /// (OpenSM disables ports that flood traps), the conditions that
    /// [`HealthConfig::babbling_port_policy`] turns from `isolate` to `disable`
    /// ([`HealthConfig::action`] decides what is done).
    #[must_use]
    pub fn babbling(&self) -> bool {
        matches!(self, Reason::Flapping { .. } | Reason::TrapFlood { .. })
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Flapping { flaps, window } => {
                write!(f, "link went down {flaps} times in {window:?}")
            }
            Reason::TrapFlood { traps, window } => write!(f, "{traps} traps in {window:?}"),
            Reason::NoAnswer { sweeps } => {
                write!(f, "no answer in {sweeps} heavy sweeps in a row")
            }
            Reason::Counters {
                counter,
                value,
                threshold,
            } => write!(f, "{counter} rose by {value} (threshold {threshold})"),
            Reason::Reboot { reboots, window } => {
                write!(f, "node rebooted {reboots} times in {window:?}")
            }
            Reason::SetErr { errors, window } => {
                write!(f, "{errors} Sets refused or lost in {window:?}")
            }
            Reason::Manual => f.write_str("isolated by the operator"),
            Reason::Restored { condition } => {
                write!(f, "{condition}, isolated before a restart or failover")
            }
        }
    }
}

/// A change of a port's health, for the engine to act on and report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The port became unhealthy.
    Unhealthy {
        /// Which.
        port: PortKey,
        /// Why.
        reason: Reason,
        /// What is done with it ([`Unhealthy::action`]).
        action: Action,
        /// Only reported because the isolation cap was reached.
        capped: bool,
    },
    /// The port was quiet for the quiet period (or the operator cleared it) and is
    /// healthy again.
    Healthy {
        /// Which.
        port: PortKey,
        /// Why it had been unhealthy.
        reason: Reason,
        /// What had been done with it.
        action: Action,
    },
}

/// An unhealthy port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unhealthy {
    /// Why it was marked (the first reason; later ones only extend the quiet period).
    pub reason: Reason,
    /// When it was marked.
    pub since: Instant,
    /// The last flap, trap, lost SMP or report since it was marked: it is taken back
    /// at `last_bad + quiet_period` (never, when the operator isolated it).
    pub last_bad: Instant,
    /// What is done with it: its condition's action, or `report` when the isolation
    /// cap was reached.
    pub action: Action,
    /// Its condition's action would isolate it, but the isolation cap was reached:
    /// only reported.
    pub capped: bool,
}

impl Unhealthy {
    /// Whether its link is out of routing ([`Action::isolates`]).
    #[must_use]
    pub fn isolated(&self) -> bool {
        self.action.isolates()
    }

    /// Whether only the operator takes it back.
    #[must_use]
    pub fn manual(&self) -> bool {
        self.reason == Reason::Manual
    }
}

/// What is recorded about one port.
#[derive(Debug, Default)]
struct Record {
    /// Link-down times within the flap window (at most `flap_count + 1`).
    flaps: VecDeque<Instant>,
    /// Trap times within the trap window (at most `trap_limit + 1`).
    traps: VecDeque<Instant>,
    /// Heavy sweeps in a row that lost an SMP about or across the port.
    no_answer: u32,
    /// Reboot times within the reboot window (at most `reboot_count + 1`).
    reboots: VecDeque<Instant>,
    /// Failed Set times within the SetErr window (at most `set_err_count + 1`).
    set_errs: VecDeque<Instant>,
    unhealthy: Option<Unhealthy>,
}

impl Record {
    fn is_empty(&self) -> bool {
        self.flaps.is_empty()
            && self.traps.is_empty()
            && self.reboots.is_empty()
            && self.set_errs.is_empty()
            && self.no_answer == 0
            && self.unhealthy.is_none()
    }
}

/// Adds `now` to the times within `window` (keeping at most `limit + 1`); how many
/// there are now.
fn count_in_window(times: &mut VecDeque<Instant>, now: Instant, window: Duration, limit: u32) {
    while times
        .front()
        .is_some_and(|&t| now.saturating_duration_since(t) >= window)
    {
        times.pop_front();
    }
    times.push_back(now);
    let keep = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    while times.len() > keep {
        times.pop_front();
    }
}

/// The health policy: observations in, [`Change`]s out. Sans-IO and deterministic:
/// every input carries its `now`, and [`Health::poll_timeout`] says when the next port
/// may be taken back.
#[derive(Debug, Default)]
pub struct Health {
    cfg: HealthConfig,
    ports: BTreeMap<PortKey, Record>,
    changes: VecDeque<Change>,
    /// The fabric's ports, which the isolation cap is a share of.
    fabric_ports: usize,
}

impl Health {
    /// A policy with these thresholds (checked by [`HealthConfig::validate`]).
    #[must_use]
    pub fn new(cfg: HealthConfig) -> Self {
        Self {
            cfg,
            ports: BTreeMap::new(),
            changes: VecDeque::new(),
            fabric_ports: 0,
        }
    }

    /// The fabric now has `ports` physical ports (the isolation cap's base); a cap
    /// grown with it isolates ports it held back.
    pub fn set_fabric_ports(&mut self, ports: usize) {
        self.fabric_ports = ports;
        self.promote();
    }

    /// The most ports the automatic checks may isolate now.
    #[must_use]
    pub fn isolation_cap(&self) -> usize {
        self.cfg.isolation_cap.limit(self.fabric_ports)
    }

    /// Ports the automatic checks isolate now (what the cap counts).
    #[must_use]
    pub fn auto_isolated(&self) -> usize {
        self.unhealthy()
            .filter(|(_, u)| u.isolated() && !u.manual())
            .count()
    }

    /// Whether the cap kept a port from being isolated (one is marked `capped`).
    #[must_use]
    pub fn cap_reached(&self) -> bool {
        self.unhealthy().any(|(_, u)| u.capped)
    }

    /// The thresholds.
    #[must_use]
    pub fn config(&self) -> &HealthConfig {
        &self.cfg
    }

    /// Records an event of `port` at `now` among the times `times` keeps for it (the last
    /// `window`, at most `limit + 1`). Returns how many there are and whether the port is
    /// already unhealthy, or `None` when `limit` is 0 (the check is off).
    fn tally(
        &mut self,
        port: PortKey,
        now: Instant,
        limit: u32,
        window: Duration,
        times: fn(&mut Record) -> &mut VecDeque<Instant>,
    ) -> Option<(u32, bool)> {
        if limit == 0 {
            return None;
        }
        let rec = self.ports.entry(port).or_default();
        let kept = times(rec);
        count_in_window(kept, now, window, limit);
        let count = u32::try_from(kept.len()).unwrap_or(u32::MAX);
        Some((count, rec.unhealthy.is_some()))
    }

    /// The port's link went down at `now`.
    pub fn link_down(&mut self, port: PortKey, now: Instant) {
        let (limit, window) = (self.cfg.flap_count, self.cfg.flap_window);
        if let Some((flaps, known)) = self.tally(port, now, limit, window, |r| &mut r.flaps)
            && (flaps > limit || known)
        {
            self.bad(port, Reason::Flapping { flaps, window }, now);
        }
    }

    /// The node of end port `port` was seen rebooting at `now`.
    pub fn rebooted(&mut self, port: PortKey, now: Instant) {
        let (limit, window) = (self.cfg.reboot_count, self.cfg.reboot_window);
        if let Some((reboots, known)) = self.tally(port, now, limit, window, |r| &mut r.reboots)
            && (reboots >= limit || known)
        {
            self.bad(port, Reason::Reboot { reboots, window }, now);
        }
    }

    /// An SMP Set to `port` was refused or lost after all retries at `now`.
    pub fn set_failed(&mut self, port: PortKey, now: Instant) {
        let (limit, window) = (self.cfg.set_err_count, self.cfg.set_err_window);
        if let Some((errors, known)) = self.tally(port, now, limit, window, |r| &mut r.set_errs)
            && (errors >= limit || known)
        {
            self.bad(port, Reason::SetErr { errors, window }, now);
        }
    }

    /// The port sent a trap at `now`. Returns whether its traps are to be ignored (the
    /// port is unhealthy for a trap flood, this trap included).
    pub fn trap(&mut self, port: PortKey, now: Instant) -> bool {
        let (limit, window) = (self.cfg.trap_limit, self.cfg.trap_window);
        let Some((traps, known)) = self.tally(port, now, limit, window, |r| &mut r.traps) else {
            return false;
        };
        if traps > limit || known {
            self.bad(port, Reason::TrapFlood { traps, window }, now);
        }
        self.silenced(port)
    }

    /// A heavy sweep ended at `now`; `lost` are the ports about or across which it lost
    /// SMPs after all retries. A port lost in `no_answer_sweeps` sweeps in a row is
    /// unhealthy; a sweep that did not lose it ends its run.
    pub fn sweep_done(&mut self, lost: &BTreeSet<PortKey>, now: Instant) {
        let k = self.cfg.no_answer_sweeps;
        if k == 0 {
            return;
        }
        for (port, rec) in &mut self.ports {
            if !lost.contains(port) {
                rec.no_answer = 0;
            }
        }
        for &port in lost {
            let rec = self.ports.entry(port).or_default();
            rec.no_answer = rec.no_answer.saturating_add(1);
            let sweeps = rec.no_answer;
            if sweeps >= k || rec.unhealthy.is_some() {
                self.bad(port, Reason::NoAnswer { sweeps }, now);
            }
        }
        self.ports.retain(|_, r| !r.is_empty());
    }

    /// Marks `port` unhealthy for a reason judged elsewhere (the entry point of other
    /// monitors: the performance manager reports an error counter above its threshold
    /// with [`Reason::Counters`]). A port already unhealthy keeps its first reason and
    /// its quiet period starts again from `now`: report again while the trouble lasts.
    pub fn report(&mut self, port: PortKey, reason: Reason, now: Instant) {
        self.bad(port, reason, now);
    }

    fn bad(&mut self, port: PortKey, reason: Reason, now: Instant) {
        let mut action = self.cfg.action(reason.condition());
        if let Some(u) = self.ports.get_mut(&port).and_then(|r| r.unhealthy.as_mut()) {
            u.last_bad = u.last_bad.max(now);
            return;
        }
        if action == Action::Ignore {
            return;
        }
        let mut capped = false;
        if action.isolates()
            && reason != Reason::Manual
            && self.auto_isolated() >= self.isolation_cap()
        {
            action = Action::Report;
            capped = true;
        }
        let rec = self.ports.entry(port).or_default();
        rec.unhealthy = Some(Unhealthy {
            reason: reason.clone(),
            since: now,
            last_bad: now,
            action,
            capped,
        });
        self.changes.push_back(Change::Unhealthy {
            port,
            reason,
            action,
            capped,
        });
    }

    /// The operator isolates `port` at `now` ([`Reason::Manual`], with the action of
    /// [`Condition::Manual`], never capped): it stays so until [`Health::clear`].
    /// A port the checks had marked is marked manual instead. Returns whether
    /// anything changed.
    pub fn isolate(&mut self, port: PortKey, now: Instant) -> bool {
        let action = self.cfg.action(Condition::Manual);
        let rec = self.ports.entry(port).or_default();
        if rec.unhealthy.as_ref().is_some_and(Unhealthy::manual) {
            return false;
        }
        if let Some(old) = rec.unhealthy.take() {
            self.changes.push_back(Change::Healthy {
                port,
                reason: old.reason,
                action: old.action,
            });
        }
        let rec = self.ports.entry(port).or_default();
        rec.unhealthy = Some(Unhealthy {
            reason: Reason::Manual,
            since: now,
            last_bad: now,
            action,
            capped: false,
        });
        self.changes.push_back(Change::Unhealthy {
            port,
            reason: Reason::Manual,
            action,
            capped: false,
        });
        true
    }

    /// The operator clears `port`: whatever it was marked for, it is healthy again
    /// and its counts start afresh. Returns the reason it had been marked for, if any.
    pub fn clear(&mut self, port: PortKey) -> Option<Reason> {
        let rec = self.ports.remove(&port)?;
        let u = rec.unhealthy?;
        self.changes.push_back(Change::Healthy {
            port,
            reason: u.reason.clone(),
            action: u.action,
        });
        self.promote();
        Some(u.reason)
    }

    /// Ports the cap held back get the action of their condition, the longest
    /// marked first (then by key), while the cap has room (an isolation ended, the
    /// fabric grew): one [`Change::Unhealthy`] each, not capped.
    fn promote(&mut self) {
        loop {
            if self.auto_isolated() >= self.isolation_cap() {
                return;
            }
            let next = self
                .ports
                .iter()
                .filter_map(|(k, r)| r.unhealthy.as_ref().map(|u| (*k, u)))
                .filter(|(_, u)| u.capped)
                .min_by_key(|(k, u)| (u.since, *k))
                .map(|(k, _)| k);
            let Some(port) = next else {
                return;
            };
            let Some(u) = self.ports.get_mut(&port).and_then(|r| r.unhealthy.as_mut()) else {
                return;
            };
            u.action = self.cfg.action(u.reason.condition());
            u.capped = false;
            let (reason, action) = (u.reason.clone(), u.action);
            self.changes.push_back(Change::Unhealthy {
                port,
                reason,
                action,
                capped: false,
            });
        }
    }

    /// Marks `port` as the isolation file says at `now` (start, takeover): manual
    /// isolations as [`Health::isolate`], others as [`Reason::Restored`] under the
    /// action configured now for `condition` (a condition since set to `ignore` is
    /// not restored) and the cap, their quiet period starting at `now`. A port
    /// already marked is left as it is.
    pub fn restore(&mut self, port: PortKey, condition: Condition, now: Instant) {
        if self.is_unhealthy(port) {
            return;
        }
        if condition == Condition::Manual {
            self.isolate(port, now);
        } else {
            self.bad(port, Reason::Restored { condition }, now);
        }
    }

    /// Whether `port` is unhealthy.
    #[must_use]
    pub fn is_unhealthy(&self, port: PortKey) -> bool {
        self.get(port).is_some()
    }

    /// Whether the traps of `port` are ignored: unhealthy for a trap flood, and its
    /// action more than `report` (a capped port is silenced too: that cuts nothing).
    #[must_use]
    pub fn silenced(&self, port: PortKey) -> bool {
        self.get(port).is_some_and(|u| {
            u.reason.condition() == Condition::NoisyTraps
                && self.cfg.action(Condition::NoisyTraps) != Action::Report
        })
    }

    /// Whether `port`'s link is out of routing now (unhealthy, its action isolates).
    #[must_use]
    pub fn isolated(&self, port: PortKey) -> bool {
        self.get(port).is_some_and(Unhealthy::isolated)
    }

    /// The port's unhealthy record, if it is unhealthy.
    #[must_use]
    pub fn get(&self, port: PortKey) -> Option<&Unhealthy> {
        self.ports.get(&port).and_then(|r| r.unhealthy.as_ref())
    }

    /// Every unhealthy port, in key order.
    pub fn unhealthy(&self) -> impl Iterator<Item = (PortKey, &Unhealthy)> + '_ {
        self.ports
            .iter()
            .filter_map(|(k, r)| r.unhealthy.as_ref().map(|u| (*k, u)))
    }

    /// When the next unhealthy port is due to be taken back.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.unhealthy()
            .filter(|(_, u)| !u.manual())
            .map(|(_, u)| u.last_bad + self.cfg.quiet_period)
            .min()
    }

    /// Takes back every port quiet for the quiet period by `now`; forgets what was
    /// counted about it, so it starts afresh.
    pub fn handle_timeout(&mut self, now: Instant) {
        let quiet = self.cfg.quiet_period;
        let due: Vec<PortKey> = self
            .unhealthy()
            .filter(|(_, u)| !u.manual() && u.last_bad + quiet <= now)
            .map(|(k, _)| k)
            .collect();
        for port in due {
            if let Some(rec) = self.ports.remove(&port) {
                if let Some(u) = rec.unhealthy {
                    self.changes.push_back(Change::Healthy {
                        port,
                        reason: u.reason,
                        action: u.action,
                    });
                }
            }
        }
        self.promote();
    }

    /// The next change, oldest first.
    pub fn poll_change(&mut self) -> Option<Change> {
        self.changes.pop_front()
    }
}

/// Why [`SubnetManager::isolate_port`](crate::SubnetManager::isolate_port) or [`SubnetManager::clear_port`](crate::SubnetManager::clear_port) refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PortCommandError {
    /// This SM does not configure the subnet (a Standby, or Not Active): ask the
    /// master.
    #[error("this SM is {role:?}, not master: ask the master")]
    NotMaster {
        /// Its role.
        role: crate::Role,
    },
    /// The last heavy sweep found no node with this GUID.
    #[error("no node {node:#018x} in the fabric")]
    UnknownNode {
        /// The node GUID asked for.
        node: u64,
    },
    /// The node has fewer ports.
    #[error("{port}: the node has ports 1 to {ports}")]
    NoSuchPort {
        /// The port asked for.
        port: PortKey,
        /// The node's number of ports.
        ports: u8,
    },
    /// Port 0 (a switch's management port) has no link to isolate.
    #[error("{port}: port 0 has no link to isolate")]
    NotExternal {
        /// The port asked for.
        port: PortKey,
    },
}

#[cfg(test)]
mod tests;
