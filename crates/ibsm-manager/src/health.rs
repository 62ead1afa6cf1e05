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

use crate::config::{ConfigField, SmConfigError};

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

/// A condition of the action table: what made a port unhealthy (UFM's and NVIDIA
/// SM's names, where they have one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    /// Its node reboots repeatedly ([`Reason::Reboot`]).
    Reboot,
    /// Its link flaps ([`Reason::Flapping`]).
    Flapping,
    /// It stops answering ([`Reason::NoAnswer`]).
    Unresponsive,
    /// It floods traps ([`Reason::TrapFlood`]).
    NoisyTraps,
    /// Sets to it fail ([`Reason::SetErr`]).
    SetErr,
    /// The operator isolated it ([`Reason::Manual`]).
    Manual,
    /// An error counter rose above its PerfMgr threshold ([`Reason::Counters`]): a
    /// high bit error rate.
    HighBer,
}

impl Condition {
    /// Every condition, in the order of the action table.
    pub const ALL: [Condition; 7] = [
        Condition::Reboot,
        Condition::Flapping,
        Condition::Unresponsive,
        Condition::NoisyTraps,
        Condition::SetErr,
        Condition::Manual,
        Condition::HighBer,
    ];

    /// Its name in files, logs, metrics and opensm.conf keys: `reboot`, `flapping`,
    /// `unresponsive`, `noisy_traps`, `set_err`, `manual`, `high_ber`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Condition::Reboot => "reboot",
            Condition::Flapping => "flapping",
            Condition::Unresponsive => "unresponsive",
            Condition::NoisyTraps => "noisy_traps",
            Condition::SetErr => "set_err",
            Condition::Manual => "manual",
            Condition::HighBer => "high_ber",
        }
    }

    /// The condition named `name` ([`Condition::name`]).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the SM does with a port marked for a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Nothing: the port is not even marked.
    Ignore,
    /// Marked and reported (event, log, status); routes, traps and discovery as usual.
    Report,
    /// Its link carries no routes (LFTs go around it as around a lost cable); its
    /// traps are ignored when it floods them.
    Isolate,
    /// Isolated, and its link disabled (PortPhysicalState Disabled on the end nearer
    /// the SM) until it is taken back, then enabled again.
    Disable,
    /// Isolated, and discovery does not cross it.
    NoDiscover,
}

impl Action {
    /// Every action.
    pub const ALL: [Action; 5] = [
        Action::Ignore,
        Action::Report,
        Action::Isolate,
        Action::Disable,
        Action::NoDiscover,
    ];

    /// Its name in files and opensm.conf: `ignore`, `report`, `isolate`, `disable`,
    /// `no_discover`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Action::Ignore => "ignore",
            Action::Report => "report",
            Action::Isolate => "isolate",
            Action::Disable => "disable",
            Action::NoDiscover => "no_discover",
        }
    }

    /// The action named `name` ([`Action::name`]).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether the port's link is taken out of routing (isolate, disable,
    /// no_discover): what the isolation cap counts and the isolation file keeps.
    #[must_use]
    pub fn isolates(self) -> bool {
        matches!(self, Action::Isolate | Action::Disable | Action::NoDiscover)
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The action of each condition ([`HealthConfig::actions`]). The defaults keep what
/// the SM did before the table existed: flapping, noisy traps and high BER isolate,
/// an unresponsive port is not discovered across, reboots and failed Sets are
/// reported, and a manual isolation isolates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actions {
    /// [`Condition::Reboot`]. Default report.
    pub reboot: Action,
    /// [`Condition::Flapping`]. Default isolate.
    pub flapping: Action,
    /// [`Condition::Unresponsive`]. Default no_discover.
    pub unresponsive: Action,
    /// [`Condition::NoisyTraps`]. Default isolate.
    pub noisy_traps: Action,
    /// [`Condition::SetErr`]. Default report.
    pub set_err: Action,
    /// [`Condition::Manual`]. Default isolate.
    pub manual: Action,
    /// [`Condition::HighBer`]. Default isolate.
    pub high_ber: Action,
}

impl Default for Actions {
    fn default() -> Self {
        Self {
            reboot: Action::Report,
            flapping: Action::Isolate,
            unresponsive: Action::NoDiscover,
            noisy_traps: Action::Isolate,
            set_err: Action::Report,
            manual: Action::Isolate,
            high_ber: Action::Isolate,
        }
    }
}

impl Actions {
    /// The action of `c`.
    #[must_use]
    pub fn get(&self, c: Condition) -> Action {
        *self.slot(c)
    }

    /// Sets the action of `c`.
    pub fn set(&mut self, c: Condition, a: Action) {
        *self.slot_mut(c) = a;
    }

    fn slot(&self, c: Condition) -> &Action {
        match c {
            Condition::Reboot => &self.reboot,
            Condition::Flapping => &self.flapping,
            Condition::Unresponsive => &self.unresponsive,
            Condition::NoisyTraps => &self.noisy_traps,
            Condition::SetErr => &self.set_err,
            Condition::Manual => &self.manual,
            Condition::HighBer => &self.high_ber,
        }
    }

    fn slot_mut(&mut self, c: Condition) -> &mut Action {
        match c {
            Condition::Reboot => &mut self.reboot,
            Condition::Flapping => &mut self.flapping,
            Condition::Unresponsive => &mut self.unresponsive,
            Condition::NoisyTraps => &mut self.noisy_traps,
            Condition::SetErr => &mut self.set_err,
            Condition::Manual => &mut self.manual,
            Condition::HighBer => &mut self.high_ber,
        }
    }
}

/// The most ports the automatic checks may isolate at once: `max(min_ports,
/// ports * per_mille / 1000)` of the fabric's ports (NVIDIA's PDR plugin: max(10,
/// 0.5 %)). Manual isolations neither count nor are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsolationCap {
    /// The cap on a small fabric. Default 10.
    pub min_ports: u32,
    /// The cap on a large one, in thousandths of its ports. Default 5 (0.5 %).
    pub per_mille: u32,
}

impl Default for IsolationCap {
    fn default() -> Self {
        Self {
            min_ports: 10,
            per_mille: 5,
        }
    }
}

impl IsolationCap {
    /// The cap on a fabric of `ports` ports (every physical port of every node).
    #[must_use]
    pub fn limit(&self, ports: usize) -> usize {
        let share = ports.saturating_mul(self.per_mille as usize) / 1000;
        share.max(self.min_ports as usize)
    }
}

/// The thresholds of the health policy (`SmConfig::health`). A count of 0 turns its
/// check off; [`HealthConfig::off`] turns them all off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthConfig {
    /// A port whose link goes down more than this many times within `flap_window` is
    /// unhealthy (0: off). Default 5. Its link (both ends) is left out of routing:
    /// LFTs route around it as around a lost cable, so a flapping link stops moving
    /// traffic back and forth with every flap. An end port's link left out leaves the
    /// end port unrouted (its LIDs get no LFT entries), but it keeps its LID and is
    /// still configured, so diagnostics can reach it by directed route.
    pub flap_count: u32,
    /// The flap window. Default 60 s.
    pub flap_window: Duration,
    /// A port that sends more than this many traps within `trap_window` is unhealthy
    /// (0: off). Default 100. Its traps are still answered (TrapRepress, so its SMA
    /// stops resending them) but no longer sweep, are not forwarded to InformInfo
    /// subscribers and raise no [`SmEvent::Trap`](crate::SmEvent::Trap); an external
    /// port's link is also left out of routing. A switch's management port (port 0)
    /// is only silenced: the switch keeps forwarding.
    pub trap_limit: u32,
    /// The trap window. Default 10 s.
    pub trap_window: Duration,
    /// A port about or across which SMPs are lost after all retries in this many heavy
    /// sweeps in a row is unhealthy (0: off). Default 3. Discovery no longer explores
    /// across it, so the node behind a dead SMA stops making every sweep incomplete
    /// (and the rest of the subnet comes up); its link is left out of routing.
    pub no_answer_sweeps: u32,
    /// An unhealthy port is taken back (healthy, routed, enabled again) after this long
    /// without a new flap, trap or report. Not zero when a check is on. Default 60 s
    /// (OpenSM's unhealthy timeout).
    pub quiet_period: Duration,
    /// OpenSM `babbling_port_policy`: disable the link of a port marked for flapping or
    /// for a trap flood (PortInfo Set of PortState Down and PortPhysicalState Disabled
    /// on the end of the cable nearer the SM, as OpenSM does, so the Set need not cross
    /// the bad link), and enable it again (PortPhysicalState Polling) when the port is
    /// taken back. Only links this SM disabled are enabled again; the SM's own port is
    /// never disabled. OpenSM disables after 250 identical traps and never re-enables;
    /// ours follows the thresholds above and the quiet period. Default off (as OpenSM).
    /// In the action table's terms: flapping and noisy traps whose action is
    /// `isolate` act as `disable` ([`HealthConfig::action`]).
    pub babbling_port_policy: bool,
    /// A node whose end port (a CA's port, a switch's port 0) is seen rebooting this
    /// many times within `reboot_window` is unhealthy (0: off). Default 3. A reboot is
    /// an end port that held a LID from this SM read back with LID 0 by a heavy sweep.
    /// A switch is marked on port 0, where only `report` has an effect.
    pub reboot_count: u32,
    /// The reboot window. Default 600 s.
    pub reboot_window: Duration,
    /// A port to which this many SMP Sets are refused (bad status) or lost after all
    /// retries within `set_err_window` is unhealthy (0: off). Default 5. Sets to a
    /// switch as a whole (LFT, SwitchInfo, SL2VL, VLArb) count against its port 0.
    pub set_err_count: u32,
    /// The SetErr window. Default 60 s.
    pub set_err_window: Duration,
    /// What to do with a port marked for each condition.
    pub actions: Actions,
    /// The most ports automatic checks may isolate at once.
    pub isolation_cap: IsolationCap,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self {
            flap_count: 5,
            flap_window: Duration::from_secs(60),
            trap_limit: 100,
            trap_window: Duration::from_secs(10),
            no_answer_sweeps: 3,
            quiet_period: Duration::from_secs(60),
            babbling_port_policy: false,
            reboot_count: 3,
            reboot_window: Duration::from_secs(600),
            set_err_count: 5,
            set_err_window: Duration::from_secs(60),
            actions: Actions::default(),
            isolation_cap: IsolationCap::default(),
        }
    }
}

impl HealthConfig {
    /// Every check off: no port is ever marked (except by [`Health::report`] and
    /// [`Health::isolate`]).
    #[must_use]
    pub fn off() -> Self {
        Self {
            flap_count: 0,
            trap_limit: 0,
            no_answer_sweeps: 0,
            reboot_count: 0,
            set_err_count: 0,
            ..Self::default()
        }
    }

    /// Whether any check is on.
    #[must_use]
    pub fn any_check(&self) -> bool {
        self.flap_count > 0
            || self.trap_limit > 0
            || self.no_answer_sweeps > 0
            || self.reboot_count > 0
            || self.set_err_count > 0
    }

    /// The action taken for `c`: [`HealthConfig::actions`], with
    /// [`HealthConfig::babbling_port_policy`] turning `isolate` into `disable` for
    /// flapping and noisy traps.
    #[must_use]
    pub fn action(&self, c: Condition) -> Action {
        let a = self.actions.get(c);
        if self.babbling_port_policy
            && a == Action::Isolate
            && matches!(c, Condition::Flapping | Condition::NoisyTraps)
        {
            return Action::Disable;
        }
        a
    }

    /// Checks the windows and the quiet period of the checks that are on.
    ///
    /// # Errors
    /// [`SmConfigError::Zero`] naming the window or period that is zero.
    pub fn validate(&self) -> Result<(), SmConfigError> {
        if self.flap_count > 0 && self.flap_window.is_zero() {
            return Err(SmConfigError::Zero {
                field: ConfigField::HealthFlapWindow,
                why: "no flap could be counted within an empty window",
            });
        }
        if self.trap_limit > 0 && self.trap_window.is_zero() {
            return Err(SmConfigError::Zero {
                field: ConfigField::HealthTrapWindow,
                why: "no trap could be counted within an empty window",
            });
        }
        if self.reboot_count > 0 && self.reboot_window.is_zero() {
            return Err(SmConfigError::Zero {
                field: ConfigField::HealthRebootWindow,
                why: "no reboot could be counted within an empty window",
            });
        }
        if self.set_err_count > 0 && self.set_err_window.is_zero() {
            return Err(SmConfigError::Zero {
                field: ConfigField::HealthSetErrWindow,
                why: "no failed Set could be counted within an empty window",
            });
        }
        if self.any_check() && self.quiet_period.is_zero() {
            return Err(SmConfigError::Zero {
                field: ConfigField::HealthQuietPeriod,
                why: "an unhealthy port would be taken back as it is marked",
            });
        }
        Ok(())
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

    /// The port's link went down at `now`.
    pub fn link_down(&mut self, port: PortKey, now: Instant) {
        let (limit, window) = (self.cfg.flap_count, self.cfg.flap_window);
        if limit == 0 {
            return;
        }
        let rec = self.ports.entry(port).or_default();
        count_in_window(&mut rec.flaps, now, window, limit);
        let flaps = u32::try_from(rec.flaps.len()).unwrap_or(u32::MAX);
        if flaps > limit || rec.unhealthy.is_some() {
            self.bad(port, Reason::Flapping { flaps, window }, now);
        }
    }

    /// The node of end port `port` was seen rebooting at `now`.
    pub fn rebooted(&mut self, port: PortKey, now: Instant) {
        let (limit, window) = (self.cfg.reboot_count, self.cfg.reboot_window);
        if limit == 0 {
            return;
        }
        let rec = self.ports.entry(port).or_default();
        count_in_window(&mut rec.reboots, now, window, limit);
        let reboots = u32::try_from(rec.reboots.len()).unwrap_or(u32::MAX);
        if reboots >= limit || rec.unhealthy.is_some() {
            self.bad(port, Reason::Reboot { reboots, window }, now);
        }
    }

    /// An SMP Set to `port` was refused or lost after all retries at `now`.
    pub fn set_failed(&mut self, port: PortKey, now: Instant) {
        let (limit, window) = (self.cfg.set_err_count, self.cfg.set_err_window);
        if limit == 0 {
            return;
        }
        let rec = self.ports.entry(port).or_default();
        count_in_window(&mut rec.set_errs, now, window, limit);
        let errors = u32::try_from(rec.set_errs.len()).unwrap_or(u32::MAX);
        if errors >= limit || rec.unhealthy.is_some() {
            self.bad(port, Reason::SetErr { errors, window }, now);
        }
    }

    /// The port sent a trap at `now`. Returns whether its traps are to be ignored (the
    /// port is unhealthy for a trap flood, this trap included).
    pub fn trap(&mut self, port: PortKey, now: Instant) -> bool {
        let (limit, window) = (self.cfg.trap_limit, self.cfg.trap_window);
        if limit == 0 {
            return false;
        }
        let rec = self.ports.entry(port).or_default();
        count_in_window(&mut rec.traps, now, window, limit);
        let traps = u32::try_from(rec.traps.len()).unwrap_or(u32::MAX);
        if traps > limit || rec.unhealthy.is_some() {
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
mod tests {
    use super::*;

    const P: PortKey = PortKey::new(0x10, 3);
    const Q: PortKey = PortKey::new(0x20, 1);

    fn secs(s: u64) -> Instant {
        Instant::from_secs(s)
    }

    fn cfg() -> HealthConfig {
        HealthConfig {
            flap_count: 2,
            flap_window: Duration::from_secs(10),
            trap_limit: 3,
            trap_window: Duration::from_secs(1),
            no_answer_sweeps: 2,
            quiet_period: Duration::from_secs(30),
            ..HealthConfig::off()
        }
    }

    fn changes(h: &mut Health) -> Vec<Change> {
        std::iter::from_fn(|| h.poll_change()).collect()
    }

    #[test]
    fn more_than_n_flaps_in_the_window_mark_and_quiet_takes_back() {
        let mut h = Health::new(cfg());
        h.link_down(P, secs(0));
        h.link_down(P, secs(5));
        assert!(!h.is_unhealthy(P), "two flaps are not more than two");
        h.link_down(P, secs(9));
        assert!(h.is_unhealthy(P));
        let window = Duration::from_secs(10);
        assert_eq!(
            changes(&mut h),
            [Change::Unhealthy {
                port: P,
                reason: Reason::Flapping { flaps: 3, window },
                action: Action::Isolate,
                capped: false,
            }]
        );
        // Flapping on extends the quiet period.
        h.link_down(P, secs(20));
        assert_eq!(h.poll_timeout(), Some(secs(50)));
        h.handle_timeout(secs(49));
        assert!(h.is_unhealthy(P));
        h.handle_timeout(secs(50));
        assert!(!h.is_unhealthy(P));
        assert!(matches!(
            &changes(&mut h)[..],
            [Change::Healthy { port: P, .. }]
        ));
        assert_eq!(h.poll_timeout(), None);
        // Taken back with a clean slate: one more flap is not a fourth.
        h.link_down(P, secs(51));
        assert!(!h.is_unhealthy(P));
    }

    #[test]
    fn flaps_spread_wider_than_the_window_do_not_mark() {
        let mut h = Health::new(cfg());
        for t in [0, 6, 12, 18, 24] {
            h.link_down(P, secs(t));
        }
        assert!(!h.is_unhealthy(P));
        assert!(changes(&mut h).is_empty());
    }

    #[test]
    fn a_trap_flood_marks_and_silences() {
        let mut h = Health::new(cfg());
        let ms = |m: u64| Instant::from_nanos(m * 1_000_000);
        for i in 0..3 {
            assert!(!h.trap(P, ms(i * 100)));
        }
        assert!(h.trap(P, ms(300)), "the fourth trap in a second silences");
        assert!(h.silenced(P));
        assert!(!h.trap(Q, ms(300)), "other ports are not");
        assert!(matches!(
            &changes(&mut h)[..],
            [Change::Unhealthy {
                port: P,
                reason: Reason::TrapFlood { traps: 4, .. },
                ..
            }]
        ));
    }

    #[test]
    fn no_answer_counts_sweeps_in_a_row() {
        let mut h = Health::new(cfg());
        let lost: BTreeSet<PortKey> = [P, Q].into();
        h.sweep_done(&lost, secs(1));
        // Q answers in the second sweep: its run ends.
        h.sweep_done(&[P].into(), secs(2));
        h.sweep_done(&[Q].into(), secs(3));
        assert!(h.is_unhealthy(P));
        assert!(!h.is_unhealthy(Q));
        assert!(!h.silenced(P));
        assert_eq!(
            changes(&mut h),
            [Change::Unhealthy {
                port: P,
                reason: Reason::NoAnswer { sweeps: 2 },
                action: Action::NoDiscover,
                capped: false,
            }]
        );
    }

    #[test]
    fn reports_mark_and_extend() {
        let mut h = Health::new(HealthConfig::off());
        let r = Reason::Counters {
            counter: "SymbolErrorCounter",
            value: 500,
            threshold: 100,
        };
        h.report(Q, r.clone(), secs(1));
        h.report(Q, r.clone(), secs(40));
        assert_eq!(
            h.get(Q).map(|u| (u.since, u.last_bad)),
            Some((secs(1), secs(40)))
        );
        assert_eq!(changes(&mut h).len(), 1, "reported once");
        h.handle_timeout(secs(100));
        assert_eq!(
            changes(&mut h),
            [Change::Healthy {
                port: Q,
                reason: r,
                action: Action::Isolate
            }]
        );
    }

    #[test]
    fn checks_off_mark_nothing() {
        let mut h = Health::new(HealthConfig::off());
        for t in 0..100 {
            h.link_down(P, Instant::from_nanos(t));
            h.trap(P, Instant::from_nanos(t));
            h.sweep_done(&[P].into(), Instant::from_nanos(t));
        }
        assert_eq!(h.unhealthy().count(), 0);
        assert!(h.ports.is_empty(), "nothing kept");
    }

    #[test]
    fn config_validation() {
        HealthConfig::default().validate().unwrap();
        HealthConfig {
            quiet_period: Duration::ZERO,
            ..HealthConfig::off()
        }
        .validate()
        .unwrap();
        let zero = |edit: fn(&mut HealthConfig)| {
            let mut c = HealthConfig::default();
            edit(&mut c);
            match c.validate() {
                Err(SmConfigError::Zero { field, .. }) => field,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            zero(|c| c.flap_window = Duration::ZERO),
            ConfigField::HealthFlapWindow
        );
        assert_eq!(
            zero(|c| c.trap_window = Duration::ZERO),
            ConfigField::HealthTrapWindow
        );
        assert_eq!(
            zero(|c| c.quiet_period = Duration::ZERO),
            ConfigField::HealthQuietPeriod
        );
    }

    #[test]
    fn each_condition_takes_its_action() {
        let mut c = HealthConfig {
            reboot_count: 2,
            reboot_window: Duration::from_secs(100),
            set_err_count: 2,
            set_err_window: Duration::from_secs(10),
            ..cfg()
        };
        c.actions.flapping = Action::Ignore;
        c.actions.noisy_traps = Action::Report;
        c.actions.reboot = Action::Disable;
        c.actions.set_err = Action::NoDiscover;
        let mut h = Health::new(c);
        for t in 0..5 {
            h.link_down(P, secs(t));
        }
        assert!(!h.is_unhealthy(P), "ignore: not even marked");
        for i in 0..5 {
            assert!(!h.trap(Q, Instant::from_nanos(i)), "report: not silenced");
        }
        assert!(
            h.is_unhealthy(Q) && !h.isolated(Q),
            "report: marked, routed"
        );
        let (r, s) = (PortKey::new(0x30, 1), PortKey::new(0x40, 2));
        h.rebooted(r, secs(1));
        assert!(!h.is_unhealthy(r), "one reboot is not repeated");
        h.rebooted(r, secs(50));
        assert_eq!(h.get(r).map(|u| u.action), Some(Action::Disable));
        h.set_failed(s, secs(1));
        h.set_failed(s, secs(20));
        assert!(!h.is_unhealthy(s), "failures wider apart than the window");
        h.set_failed(s, secs(25));
        assert_eq!(h.get(s).map(|u| u.action), Some(Action::NoDiscover));
        assert!(matches!(
            h.get(s).map(|u| &u.reason),
            Some(Reason::SetErr { errors: 2, .. })
        ));
    }

    #[test]
    fn babbling_port_policy_turns_isolate_into_disable() {
        let c = HealthConfig {
            babbling_port_policy: true,
            ..HealthConfig::default()
        };
        assert_eq!(c.action(Condition::Flapping), Action::Disable);
        assert_eq!(c.action(Condition::NoisyTraps), Action::Disable);
        assert_eq!(c.action(Condition::HighBer), Action::Isolate);
        let mut d = c;
        d.actions.flapping = Action::Report;
        assert_eq!(
            d.action(Condition::Flapping),
            Action::Report,
            "only isolate"
        );
    }

    #[test]
    fn the_cap_reports_past_max_of_min_and_share() {
        let mut c = cfg();
        c.isolation_cap = IsolationCap {
            min_ports: 2,
            per_mille: 5,
        };
        assert_eq!(c.isolation_cap.limit(100), 2);
        assert_eq!(c.isolation_cap.limit(1000), 5);
        let mut h = Health::new(c);
        h.set_fabric_ports(100);
        let r = || Reason::Counters {
            counter: "SymbolErrorCounter",
            value: 9,
            threshold: 1,
        };
        for n in 0..5 {
            h.report(PortKey::new(n, 1), r(), secs(1));
        }
        assert_eq!(h.auto_isolated(), 2);
        assert!(h.cap_reached());
        let capped: Vec<bool> = changes(&mut h)
            .into_iter()
            .map(|c| match c {
                Change::Unhealthy { capped, action, .. } => {
                    assert_eq!(action.isolates(), !capped);
                    capped
                }
                Change::Healthy { .. } => panic!(),
            })
            .collect();
        assert_eq!(capped, [false, false, true, true, true]);
        // Manual isolations are never capped, nor counted.
        assert!(h.isolate(PortKey::new(9, 1), secs(2)));
        assert!(h.isolated(PortKey::new(9, 1)));
        assert_eq!(h.auto_isolated(), 2);
        // An isolation ends: the longest held back (port 2) takes its place.
        assert_eq!(h.clear(PortKey::new(0, 1)), Some(r()));
        assert!(h.isolated(PortKey::new(2, 1)));
        assert!(!h.isolated(PortKey::new(3, 1)));
        assert_eq!(h.auto_isolated(), 2);
        let ch = changes(&mut h);
        assert!(
            matches!(
                &ch[1..],
                [
                    Change::Healthy { .. },
                    Change::Unhealthy {
                        port: PortKey { node: 2, port: 1 },
                        action: Action::Isolate,
                        capped: false,
                        ..
                    }
                ]
            ),
            "{ch:?}"
        );
        // A grown fabric grows the cap: the rest are isolated too.
        h.set_fabric_ports(1000);
        assert_eq!(h.auto_isolated(), 4);
        assert!(!h.cap_reached());
    }

    #[test]
    fn manual_isolations_stay_until_cleared() {
        let mut h = Health::new(cfg());
        for t in [0, 1, 2] {
            h.link_down(P, secs(t));
        }
        assert!(h.isolated(P));
        assert!(h.isolate(P, secs(3)), "a marked port becomes manual");
        assert!(!h.isolate(P, secs(4)), "once");
        assert_eq!(h.get(P).map(|u| u.reason.clone()), Some(Reason::Manual));
        assert_eq!(h.poll_timeout(), None, "never taken back by the clock");
        h.handle_timeout(secs(10_000));
        assert!(h.isolated(P));
        let ch = changes(&mut h);
        assert!(
            matches!(
                &ch[..],
                [
                    Change::Unhealthy { .. },
                    Change::Healthy { .. },
                    Change::Unhealthy {
                        reason: Reason::Manual,
                        ..
                    }
                ]
            ),
            "{ch:?}"
        );
        assert_eq!(h.clear(P), Some(Reason::Manual));
        assert_eq!(h.clear(P), None);
        assert!(!h.is_unhealthy(P));
        assert!(matches!(
            &changes(&mut h)[..],
            [Change::Healthy {
                reason: Reason::Manual,
                ..
            }]
        ));
    }

    #[test]
    fn restored_marks_follow_the_configuration_of_now() {
        let mut c = cfg();
        c.actions.high_ber = Action::Ignore;
        let mut h = Health::new(c);
        h.restore(P, Condition::Flapping, secs(5));
        h.restore(Q, Condition::HighBer, secs(5));
        h.restore(PortKey::new(7, 7), Condition::Manual, secs(5));
        assert!(h.isolated(P));
        assert_eq!(
            h.get(P).map(|u| u.reason.condition()),
            Some(Condition::Flapping)
        );
        assert!(!h.is_unhealthy(Q), "high_ber is ignored now");
        assert!(h.get(PortKey::new(7, 7)).is_some_and(Unhealthy::manual));
        assert_eq!(h.poll_timeout(), Some(secs(35)), "quiet period from now");
    }

    #[test]
    fn names_round_trip() {
        for c in Condition::ALL {
            assert_eq!(Condition::from_name(c.name()), Some(c));
        }
        for a in Action::ALL {
            assert_eq!(Action::from_name(a.name()), Some(a));
        }
        assert_eq!(Action::from_name("Isolate"), None);
    }

    /// One observation of the model test.
    #[derive(Debug, Clone)]
    enum Obs {
        Flap(u8),
        Trap(u8),
        Sweep(Vec<u8>),
        Wait(u64),
    }

    fn obs() -> impl proptest::strategy::Strategy<Value = Obs> {
        use proptest::prelude::*;
        prop_oneof![
            (0u8..3).prop_map(Obs::Flap),
            (0u8..3).prop_map(Obs::Trap),
            proptest::collection::vec(0u8..3, 0..3).prop_map(Obs::Sweep),
            (0u64..20_000).prop_map(Obs::Wait),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Against a reference that keeps every observation: a port is unhealthy
        /// exactly when, at some time since it was last taken back, one check's
        /// threshold was exceeded, and it is taken back exactly `quiet_period` after
        /// its last observation since (any flap, trap or loss); each mark and each
        /// take-back is one change.
        #[test]
        fn matches_a_reference(steps in proptest::collection::vec(obs(), 1..200)) {
            let c = cfg();
            let mut h = Health::new(c);
            let key = |p: u8| PortKey::new(0x100 + u64::from(p), 1);
            // Reference: per port, all times since last taken back, the streak, and
            // the unhealthy window (since, last_bad).
            #[derive(Default, Clone)]
            struct Ref { flaps: Vec<Instant>, traps: Vec<Instant>, streak: u32, bad: Option<Instant> }
            let mut r: Vec<Ref> = vec![Ref::default(); 3];
            let mut now = Instant::ZERO;
            let (mut marks, mut backs) = (0usize, 0usize);
            let within = |ts: &[Instant], now: Instant, w: Duration| {
                ts.iter().filter(|&&t| now.saturating_duration_since(t) < w).count()
            };
            for s in steps {
                // Take back first what is due, in both.
                h.handle_timeout(now);
                for x in &mut r {
                    if x.bad.is_some_and(|b| b + c.quiet_period <= now) {
                        *x = Ref::default();
                        backs += 1;
                    }
                }
                let mark = |x: &mut Ref, now: Instant, marks: &mut usize| {
                    if x.bad.is_none() { *marks += 1; }
                    x.bad = Some(x.bad.map_or(now, |b| b.max(now)));
                };
                match s {
                    Obs::Flap(p) => {
                        h.link_down(key(p), now);
                        let x = &mut r[usize::from(p)];
                        x.flaps.push(now);
                        if x.bad.is_some() || within(&x.flaps, now, c.flap_window) > c.flap_count as usize {
                            mark(x, now, &mut marks);
                        }
                    }
                    Obs::Trap(p) => {
                        let silenced = h.trap(key(p), now);
                        let x = &mut r[usize::from(p)];
                        x.traps.push(now);
                        let was_bad = x.bad.is_some();
                        if was_bad || within(&x.traps, now, c.trap_window) > c.trap_limit as usize {
                            mark(x, now, &mut marks);
                        }
                        // Silenced only when the trap flood is the first reason.
                        if silenced {
                            proptest::prop_assert!(x.bad.is_some());
                        } else if !was_bad {
                            proptest::prop_assert!(x.bad.is_none());
                        }
                    }
                    Obs::Sweep(lost) => {
                        let set: BTreeSet<PortKey> = lost.iter().map(|&p| key(p)).collect();
                        h.sweep_done(&set, now);
                        for (i, x) in r.iter_mut().enumerate() {
                            if lost.contains(&(i as u8)) {
                                x.streak += 1;
                                if x.bad.is_some() || x.streak >= c.no_answer_sweeps {
                                    mark(x, now, &mut marks);
                                }
                            } else {
                                x.streak = 0;
                            }
                        }
                    }
                    Obs::Wait(ms) => now += Duration::from_millis(ms),
                }
                for (i, x) in r.iter().enumerate() {
                    let u = h.get(key(i as u8));
                    proptest::prop_assert_eq!(u.is_some(), x.bad.is_some(), "port {}", i);
                    if let (Some(u), Some(b)) = (u, x.bad) {
                        proptest::prop_assert_eq!(u.last_bad, b);
                    }
                }
                let next = r.iter().filter_map(|x| x.bad).map(|b| b + c.quiet_period).min();
                proptest::prop_assert_eq!(h.poll_timeout(), next);
                // Bounded memory: at most limit + 1 times per check.
                for rec in h.ports.values() {
                    proptest::prop_assert!(rec.flaps.len() <= c.flap_count as usize + 1);
                    proptest::prop_assert!(rec.traps.len() <= c.trap_limit as usize + 1);
                }
            }
            let got: Vec<Change> = std::iter::from_fn(|| h.poll_change()).collect();
            let m = got.iter().filter(|c| matches!(c, Change::Unhealthy { .. })).count();
            proptest::prop_assert_eq!((m, got.len() - m), (marks, backs));
        }
    }
}
