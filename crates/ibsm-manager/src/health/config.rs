//! The policy's knobs: the action table (which [`Condition`] gets which [`Action`]),
//! the isolation cap and [`HealthConfig`]'s windows and limits.

use std::time::Duration;

use crate::config::{ConfigField, SmConfigError};

/// A condition of the action table: what made a port unhealthy (UFM's and NVIDIA
/// SM's names, where they have one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    /// Its node reboots repeatedly ([`Reason::Reboot`](super::Reason::Reboot)).
    Reboot,
    /// Its link flaps ([`Reason::Flapping`](super::Reason::Flapping)).
    Flapping,
    /// It stops answering ([`Reason::NoAnswer`](super::Reason::NoAnswer)).
    Unresponsive,
    /// It floods traps ([`Reason::TrapFlood`](super::Reason::TrapFlood)).
    NoisyTraps,
    /// Sets to it fail ([`Reason::SetErr`](super::Reason::SetErr)).
    SetErr,
    /// The operator isolated it ([`Reason::Manual`](super::Reason::Manual)).
    Manual,
    /// An error counter rose above its PerfMgr threshold ([`Reason::Counters`](super::Reason::Counters)): a
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
    /// Every check off: no port is ever marked (except by
    /// [`Health::report`](super::Health::report) and
    /// [`Health::isolate`](super::Health::isolate)).
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
