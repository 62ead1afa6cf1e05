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
//! - someone else says so: [`Health::report`] with a [`Reason`] of its own, such as
//!   [`Reason::Counters`] for an error counter above its threshold (the performance
//!   manager's entry point).
//!
//! An unhealthy port is taken back once it has been quiet for
//! [`HealthConfig::quiet_period`]: no flap, trap, lost SMP or report since, whatever it
//! was marked for (a link flapping on below the threshold is not quiet). What the engine does with an unhealthy port is in
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

use crate::config::{ConfigError, ConfigField};

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
        }
    }

    /// Whether the port's link is the trouble, so that with
    /// [`HealthConfig::babbling_port_policy`] it is disabled: a flapping link or a
    /// babbling port (OpenSM disables ports that flood traps).
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
        }
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
    pub babbling_port_policy: bool,
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
        }
    }
}

impl HealthConfig {
    /// Every check off: no port is ever marked (except by [`Health::report`]).
    #[must_use]
    pub fn off() -> Self {
        Self {
            flap_count: 0,
            trap_limit: 0,
            no_answer_sweeps: 0,
            ..Self::default()
        }
    }

    /// Whether any check is on.
    #[must_use]
    pub fn any_check(&self) -> bool {
        self.flap_count > 0 || self.trap_limit > 0 || self.no_answer_sweeps > 0
    }

    /// Checks the windows and the quiet period of the checks that are on.
    ///
    /// # Errors
    /// [`ConfigError::Zero`] naming the window or period that is zero.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.flap_count > 0 && self.flap_window.is_zero() {
            return Err(ConfigError::Zero {
                field: ConfigField::HealthFlapWindow,
                why: "no flap could be counted within an empty window",
            });
        }
        if self.trap_limit > 0 && self.trap_window.is_zero() {
            return Err(ConfigError::Zero {
                field: ConfigField::HealthTrapWindow,
                why: "no trap could be counted within an empty window",
            });
        }
        if self.any_check() && self.quiet_period.is_zero() {
            return Err(ConfigError::Zero {
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
    },
    /// The port was quiet for the quiet period and is healthy again.
    Healthy {
        /// Which.
        port: PortKey,
        /// Why it had been unhealthy.
        reason: Reason,
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
    /// at `last_bad + quiet_period`.
    pub last_bad: Instant,
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
    unhealthy: Option<Unhealthy>,
}

impl Record {
    fn is_empty(&self) -> bool {
        self.flaps.is_empty()
            && self.traps.is_empty()
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
}

impl Health {
    /// A policy with these thresholds (checked by [`HealthConfig::validate`]).
    #[must_use]
    pub fn new(cfg: HealthConfig) -> Self {
        Self {
            cfg,
            ports: BTreeMap::new(),
            changes: VecDeque::new(),
        }
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
        let rec = self.ports.entry(port).or_default();
        match &mut rec.unhealthy {
            Some(u) => u.last_bad = u.last_bad.max(now),
            None => {
                rec.unhealthy = Some(Unhealthy {
                    reason: reason.clone(),
                    since: now,
                    last_bad: now,
                });
                self.changes.push_back(Change::Unhealthy { port, reason });
            }
        }
    }

    /// Whether `port` is unhealthy.
    #[must_use]
    pub fn is_unhealthy(&self, port: PortKey) -> bool {
        self.get(port).is_some()
    }

    /// Whether the traps of `port` are ignored (unhealthy for a trap flood).
    #[must_use]
    pub fn silenced(&self, port: PortKey) -> bool {
        self.get(port)
            .is_some_and(|u| matches!(u.reason, Reason::TrapFlood { .. }))
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
            .map(|(_, u)| u.last_bad + self.cfg.quiet_period)
            .min()
    }

    /// Takes back every port quiet for the quiet period by `now`; forgets what was
    /// counted about it, so it starts afresh.
    pub fn handle_timeout(&mut self, now: Instant) {
        let quiet = self.cfg.quiet_period;
        let due: Vec<PortKey> = self
            .unhealthy()
            .filter(|(_, u)| u.last_bad + quiet <= now)
            .map(|(k, _)| k)
            .collect();
        for port in due {
            if let Some(rec) = self.ports.remove(&port) {
                if let Some(u) = rec.unhealthy {
                    self.changes.push_back(Change::Healthy {
                        port,
                        reason: u.reason,
                    });
                }
            }
        }
    }

    /// The next change, oldest first.
    pub fn poll_change(&mut self) -> Option<Change> {
        self.changes.pop_front()
    }
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
            babbling_port_policy: false,
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
                reason: Reason::Flapping { flaps: 3, window }
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
                reason: Reason::TrapFlood { traps: 4, .. }
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
                reason: Reason::NoAnswer { sweeps: 2 }
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
        assert_eq!(changes(&mut h), [Change::Healthy { port: Q, reason: r }]);
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
                Err(ConfigError::Zero { field, .. }) => field,
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
