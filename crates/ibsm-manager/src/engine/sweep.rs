//! Sweeps as typed stages. A sweep's data (counters, the discovery a heavy sweep builds,
//! the locked ports, the port plan) lives inside its variant and is dropped when the
//! sweep ends, except the discovery, which the engine keeps as the last one
//! ([`Sweep::replace`]): nothing is reset by hand.
//!
//! ```text
//! Idle ──(start, trap, timer with heavy_next)──► Heavy: Discover ► Elect ► Program ► Activate ──► Idle
//!   │                                                              └─(Standby/NotActive)──────► Idle
//!   └──(timer)──► Light ──(no change)──► Idle
//!                   └──(a latch set, a trap)──► Heavy
//! ```
//!
//! A stage ends when the SMP queue is empty ([`SubnetManager::advance`] is only called
//! then); a request for a heavy sweep while one runs is kept in the running sweep
//! (`again`, `heavy_next`) and honoured when it ends.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use ibsm_transport::Instant;
use ibsm_wire::{SmState, SwitchInfo};

use super::discovery::Discovery;
use super::ports::Plan;
use super::program::Activation;
use super::publish::Published;
use super::resweep::Losses;
use super::timers::Timer;
use super::{Outbox, SubnetManager, keys};
use crate::config::SmConfig;
use crate::error::SmError;
use crate::event::{Phase, Role, SmEvent, SweepStats};

/// The sweep the engine is in.
#[derive(Debug)]
pub(super) enum Sweep {
    /// Between sweeps.
    Idle(Idle),
    /// Discovery and configuration of the whole subnet.
    Heavy(Box<HeavySweep>),
    /// Change detection: every switch's PortStateChange latch.
    Light(Box<LightSweep>),
}

impl Default for Sweep {
    fn default() -> Self {
        Self::Idle(Idle {
            since: Instant::ZERO,
            heavy_next: false,
        })
    }
}

/// Between sweeps. The periodic sweep's deadline is [`Timer::Sweep`].
#[derive(Debug)]
pub(super) struct Idle {
    since: Instant,
    /// The periodic sweep is to be heavy (the last heavy sweep lost SMPs, or a change
    /// was noted that no sweep has seen).
    heavy_next: bool,
}

/// The stages of a heavy sweep.
#[derive(Debug)]
pub(super) enum Stage {
    /// NodeInfo, SwitchInfo, PortInfo, P_KeyTable Gets over directed routes.
    Discover,
    /// Discovery is done; the election decides whether this SM configures.
    Elect,
    /// LIDs are assigned and the routes are being computed by job `job` (`jobs.rs`);
    /// nothing is programmed until its output comes back. Reported as the Program
    /// phase, whose first part it is.
    Route {
        /// The id of the routing job the sweep waits for.
        job: u64,
    },
    /// The routes are back and the Sets that program them are being queued, a slice
    /// at a time (`program.rs`). Reported as the Program phase.
    Programming(Box<super::program::Programming>),
    /// LIDs, routes, switch tables, P_Keys and PortInfo Sets are out; the plan says
    /// what every port should hold, for the activation.
    Program(Plan),
    /// The armed ports' activation Sets are being queued, a slice at a time
    /// (`program.rs`).
    Activating(Box<super::program::Activation>),
    /// The armed ports' activation Sets are out.
    Activate,
    /// Every Set is answered: job `job` makes what the sweep publishes (the SA's
    /// snapshot, the cabling the health policy compares with; `publish.rs`), and the
    /// sweep ends when it comes back.
    Publish {
        /// The id of the publish job the sweep waits for.
        job: u64,
    },
}

impl Stage {
    fn phase(&self) -> Phase {
        match self {
            Stage::Discover => Phase::Discover,
            Stage::Elect => Phase::Elect,
            Stage::Route { .. } | Stage::Programming(_) | Stage::Program(_) => Phase::Program,
            Stage::Activating(_) | Stage::Activate | Stage::Publish { .. } => Phase::Activate,
        }
    }
}

/// Counters and clocks of one sweep, whatever its kind.
#[derive(Debug)]
struct Progress {
    started: Instant,
    stage_started: Instant,
    stats: SweepStats,
    by_attribute: BTreeMap<&'static str, u64>,
    /// The tracing span of the current stage.
    span: tracing::Span,
}

impl Progress {
    fn new(now: Instant, heavy: bool, stage: Phase) -> Self {
        Self {
            started: now,
            stage_started: now,
            stats: SweepStats {
                heavy,
                ..SweepStats::default()
            },
            by_attribute: BTreeMap::new(),
            span: stage_span(stage, heavy),
        }
    }
}

/// One span per sweep stage (its wall-clock life is the stage's); the sans-IO entry
/// points enter it, so everything logged while handling a MAD or a timeout nests under
/// the stage it belongs to.
fn stage_span(stage: Phase, heavy: bool) -> tracing::Span {
    tracing::info_span!("sweep_phase", phase = stage.as_str(), heavy = heavy)
}

/// A heavy sweep.
#[derive(Debug)]
pub(super) struct HeavySweep {
    pub(super) stage: Stage,
    progress: Progress,
    /// What this sweep discovers: a fresh model, walk and latches, handed to the
    /// engine (its `last`) when the sweep ends. The last one's model stays what
    /// [`SubnetManager::subnet`] shows meanwhile, and says which nodes were known
    /// (NodeAdded / NodeRemoved, and which switches' tables are known).
    found: Discovery,
    /// Ports (switches: node GUIDs) that ignored our M_Key in this sweep: not
    /// configured.
    locked: HashSet<u64>,
    /// Another heavy sweep was asked for while this one ran.
    again: bool,
    /// SMPs of this sweep lost after all retries: an incomplete sweep (`resweep.rs`).
    lost: Losses,
}

/// A light sweep.
#[derive(Debug)]
pub(super) struct LightSweep {
    progress: Progress,
    /// A latch was set or a heavy sweep asked for: one follows.
    heavy_next: bool,
}

impl Sweep {
    pub(super) fn is_idle(&self) -> bool {
        matches!(self, Sweep::Idle(_))
    }

    pub(super) fn heavy(&self) -> Option<&HeavySweep> {
        match self {
            Sweep::Heavy(h) => Some(h),
            _ => None,
        }
    }

    /// Replaces the heavy sweep's stage without ending its phase (a stage that is part
    /// of the same phase: Route, then Program).
    pub(super) fn set_stage(&mut self, stage: Stage) {
        if let Sweep::Heavy(h) = self {
            h.stage = stage;
        }
    }

    /// Whether Sets are being queued a slice at a time (programming or activation).
    pub(super) fn queueing(&self) -> bool {
        self.heavy()
            .is_some_and(|h| matches!(h.stage, Stage::Programming(_) | Stage::Activating(_)))
    }

    /// Takes the activation out of the stage (for a slice of it; put it back with
    /// [`Self::set_stage`]).
    pub(super) fn take_activation(&mut self) -> Option<Box<Activation>> {
        let Sweep::Heavy(h) = self else {
            return None;
        };
        if !matches!(h.stage, Stage::Activating(_)) {
            return None;
        }
        match std::mem::replace(&mut h.stage, Stage::Activate) {
            Stage::Activating(a) => Some(a),
            _ => None,
        }
    }

    /// Takes the planning out of the stage (for a slice of it; put it back with
    /// [`Self::set_stage`]).
    pub(super) fn take_programming(&mut self) -> Option<Box<super::program::Programming>> {
        let Sweep::Heavy(h) = self else {
            return None;
        };
        if !matches!(h.stage, Stage::Programming(_)) {
            return None;
        }
        match std::mem::replace(&mut h.stage, Stage::Program(Plan::default())) {
            Stage::Programming(p) => Some(p),
            _ => None,
        }
    }

    /// The job the running heavy sweep waits for, if any.
    pub(super) fn waiting_for(&self) -> Option<u64> {
        match self.heavy().map(|h| &h.stage) {
            Some(Stage::Route { job } | Stage::Publish { job }) => Some(*job),
            _ => None,
        }
    }

    /// Whether the running sweep is a heavy one still discovering.
    pub(super) fn is_discovering(&self) -> bool {
        self.heavy()
            .is_some_and(|h| matches!(h.stage, Stage::Discover))
    }

    fn progress(&self) -> Option<&Progress> {
        match self {
            Sweep::Idle(_) => None,
            Sweep::Heavy(h) => Some(&h.progress),
            Sweep::Light(l) => Some(&l.progress),
        }
    }

    fn progress_mut(&mut self) -> Option<&mut Progress> {
        match self {
            Sweep::Idle(_) => None,
            Sweep::Heavy(h) => Some(&mut h.progress),
            Sweep::Light(l) => Some(&mut l.progress),
        }
    }

    /// The phase running (`None` between sweeps).
    pub(super) fn phase(&self) -> Option<Phase> {
        match self {
            Sweep::Idle(_) => None,
            Sweep::Heavy(h) => Some(h.stage.phase()),
            Sweep::Light(_) => Some(Phase::Light),
        }
    }

    /// The span to enter while handling input.
    pub(super) fn span(&self) -> tracing::Span {
        self.progress()
            .map_or_else(tracing::Span::none, |p| p.span.clone())
    }

    /// When the current stage began (the time the election's probes are stamped with).
    pub(super) fn stage_started(&self) -> Instant {
        match self {
            Sweep::Idle(i) => i.since,
            Sweep::Heavy(h) => h.progress.stage_started,
            Sweep::Light(l) => l.progress.stage_started,
        }
    }

    /// Updates the running sweep's counters (between sweeps there are none to update).
    pub(super) fn count(&mut self, f: impl FnOnce(&mut SweepStats)) {
        if let Some(p) = self.progress_mut() {
            f(&mut p.stats);
        }
    }

    /// Counts one SMP of an attribute in the running sweep.
    pub(super) fn count_attribute(&mut self, name: &'static str) {
        if let Some(p) = self.progress_mut() {
            *p.by_attribute.entry(name).or_default() += 1;
        }
    }

    /// Notes a locked port in the running heavy sweep (later sweeps try it again).
    pub(super) fn lock(&mut self, guid: u64) {
        if let Sweep::Heavy(h) = self {
            h.locked.insert(guid);
        }
    }

    pub(super) fn is_locked(&self, guid: u64) -> bool {
        self.heavy().is_some_and(|h| h.locked.contains(&guid))
    }

    /// Updates what the running heavy sweep lost (nothing outside one).
    pub(super) fn lost(&mut self, f: impl FnOnce(&mut Losses)) {
        if let Sweep::Heavy(h) = self {
            f(&mut h.lost);
        }
    }

    /// What the running heavy sweep lost, taken out of it (`None` outside one).
    pub(super) fn take_losses(&mut self) -> Option<Losses> {
        match self {
            Sweep::Heavy(h) => Some(std::mem::take(&mut h.lost)),
            _ => None,
        }
    }

    /// Notes that a heavy sweep is needed, without starting one now.
    pub(super) fn note_change(&mut self) {
        match self {
            Sweep::Idle(i) => i.heavy_next = true,
            Sweep::Heavy(h) => h.again = true,
            Sweep::Light(l) => l.heavy_next = true,
        }
    }

    /// The discovery SMPs name nodes of: the running heavy sweep's, else `last` (the
    /// last heavy sweep's, which the engine keeps).
    pub(super) fn found<'a>(&'a self, last: &'a Discovery) -> &'a Discovery {
        match self {
            Sweep::Heavy(h) => &h.found,
            _ => last,
        }
    }

    /// [`Self::found`], to change.
    pub(super) fn found_mut<'a>(&'a mut self, last: &'a mut Discovery) -> &'a mut Discovery {
        match self {
            Sweep::Heavy(h) => &mut h.found,
            _ => last,
        }
    }

    /// Ends the sweep for `next`: a heavy sweep's discovery becomes `last` (however
    /// the sweep ends). What is replaced, for [`Jobs::retire`](super::jobs::Jobs::retire).
    fn replace(&mut self, next: Sweep, last: &mut Discovery) -> (Sweep, Option<Discovery>) {
        let mut old = std::mem::replace(self, next);
        let replaced = match &mut old {
            Sweep::Heavy(h) => Some(std::mem::replace(last, std::mem::take(&mut h.found))),
            _ => None,
        };
        (old, replaced)
    }

    /// The nodes the last heavy sweep (`last`) knew that the running one's discovery
    /// has not, by GUID in order (none outside a heavy sweep).
    pub(super) fn gone(&self, last: &Discovery) -> Vec<u64> {
        let Some(h) = self.heavy() else {
            return Vec::new();
        };
        let mut gone: Vec<u64> = last
            .subnet
            .by_guid
            .keys()
            .filter(|g| !h.found.subnet.by_guid.contains_key(g))
            .copied()
            .collect();
        // The previous GUIDs are a hash map's keys: their order differs from run to run.
        gone.sort_unstable();
        gone
    }

    /// Whether the running heavy sweep knew `guid` from the last one (`last`; outside
    /// a heavy sweep: no).
    pub(super) fn seen_before(&self, last: &Discovery, guid: u64) -> bool {
        self.heavy().is_some() && last.subnet.by_guid.contains_key(&guid)
    }
}

impl Sweep {
    /// Ends the current stage: its time goes into the sweep's stats and a
    /// [`SmEvent::PhaseDone`] (`nodes`: of the discovery, `found(last)`) reports it to
    /// `out`. Nothing between sweeps.
    fn end_stage(&mut self, now: Instant, last: &Discovery, out: &mut Outbox) {
        let Some(phase) = self.phase() else {
            return;
        };
        let nodes = self.found(last).subnet.nodes.len();
        let Some(p) = self.progress_mut() else {
            return;
        };
        let d = now.saturating_duration_since(p.stage_started);
        tracing::info!(
            phase = phase.as_str(),
            nodes,
            smps = p.stats.smps,
            virtual_us = d.as_micros() as u64,
            "phase done"
        );
        p.stats.phases.push((phase, d));
        let smps = p.stats.smps;
        out.event(SmEvent::PhaseDone {
            phase,
            nodes,
            smps,
            elapsed: d,
        });
    }

    /// Moves the heavy sweep to its next stage (the current one ends,
    /// [`Self::end_stage`]).
    fn enter_stage(&mut self, now: Instant, last: &Discovery, out: &mut Outbox, stage: Stage) {
        self.end_stage(now, last, out);
        if let Sweep::Heavy(h) = self {
            h.progress.stage_started = now;
            h.progress.span = stage_span(stage.phase(), true);
            h.stage = stage;
        }
    }

    /// A light sweep's SwitchInfo: a set latch is a change to sweep for.
    pub(super) fn on_light_switch_info(&mut self, data: &[u8]) {
        if SwitchInfo::parse(data).is_ok_and(|si| si.port_state_change) {
            self.note_change();
        }
    }

    /// Whether a change at the switch (node GUID) or CA port (port GUID) `guid` will be
    /// seen by the running heavy sweep: it is still discovering and has not read that
    /// port yet ([`Discovery::has_read`]).
    pub(super) fn discovery_will_see(&self, guid: u64) -> bool {
        self.heavy()
            .is_some_and(|h| matches!(h.stage, Stage::Discover) && !h.found.has_read(guid))
    }
}

/// Time to the next light sweep: the configured interval, shortened to half the
/// M_Key lease so that no lease can run out between two refreshes.
fn sweep_period(cfg: &SmConfig) -> std::time::Duration {
    let mut d = cfg.sweep_interval;
    if keys::lease_active(cfg) {
        let half = std::time::Duration::from_secs(u64::from(cfg.m_key_lease)) / 2;
        if d.is_zero() || half < d {
            d = half.max(std::time::Duration::from_millis(100));
        }
    }
    d
}

impl SubnetManager {
    /// A heavy sweep is wanted: now when idle, else when the running sweep ends.
    pub(super) fn heavy_sweep_wanted(&mut self, now: Instant) {
        if self.sweep.is_idle() {
            self.begin_heavy(now);
        } else {
            self.sweep.note_change();
        }
    }

    /// The periodic sweep's timer fired.
    pub(super) fn periodic_sweep(&mut self, now: Instant) {
        match &self.sweep {
            Sweep::Idle(i) if i.heavy_next => self.begin_heavy(now),
            Sweep::Idle(_) => self.begin_light(now),
            _ => {}
        }
    }

    pub(super) fn begin_heavy(&mut self, now: Instant) {
        // A restart while sweeping ends the running stage first.
        self.sweep.end_stage(now, &self.last, &mut self.out);
        // A fresh discovery, walking from the local node; the last one stays on show
        // (and says what was known) while the sweep builds the next.
        let number = self.sweep.found(&self.last).latches.sweep() + 1;
        let heavy = Sweep::Heavy(Box::new(HeavySweep {
            stage: Stage::Discover,
            progress: Progress::new(now, true, Phase::Discover),
            found: Discovery::new(number),
            locked: HashSet::new(),
            again: false,
            lost: Losses::default(),
        }));
        let replaced = self.sweep.replace(heavy, &mut self.last);
        self.jobs.retire(replaced);
        // A re-sweep after an incomplete one gives every SMP more attempts.
        self.smps.retries = self.resweeps.retries(self.cfg.transaction_retries);
        self.event(SmEvent::SweepStarted { heavy: true });
        self.smi.election.begin_sweep(now);
        self.sweep
            .found_mut(&mut self.last)
            .drain_walk(&self.health, &mut self.smps);
    }

    fn begin_light(&mut self, now: Instant) {
        self.smps.retries = None;
        self.sweep = Sweep::Light(Box::new(LightSweep {
            progress: Progress::new(now, false, Phase::Light),
            heavy_next: false,
        }));
        self.event(SmEvent::SweepStarted { heavy: false });
        // The other SMs' SMInfo as it is now (ActCount, state) for SMInfoRecord, as
        // OpenSM's light sweep asks; no SMP when there is no other SM.
        if self.smi.role == Role::Master {
            self.smi.election.refresh_known_sms(now);
        }
        // A light sweep looks at what the last heavy sweep found.
        let lease = keys::lease_active(&self.cfg);
        self.last.queue_light_sweep(lease, &mut self.smps);
    }

    /// Changes the time between periodic sweeps (`SmConfig::sweep_interval`; ibsmd
    /// re-reads it on SIGHUP as OpenSM does). A Master between sweeps waits the new
    /// period from `now`; a running sweep uses it when it ends; zero stops periodic
    /// sweeps. Other roles do not sweep and keep the value for when they become Master.
    pub fn set_sweep_interval(&mut self, now: Instant, interval: std::time::Duration) {
        self.cfg.sweep_interval = interval;
        if self.sweep.is_idle() && self.smi.role == Role::Master {
            let period = sweep_period(&self.cfg);
            self.timers
                .set(Timer::Sweep, (!period.is_zero()).then(|| now + period));
        }
        self.refresh_timers();
    }

    /// The queue is empty: the running stage's work is done. Moves the sweep on;
    /// `false` when it has to wait for input (or there is no sweep).
    pub(super) fn advance(&mut self, now: Instant) -> bool {
        let h = match &self.sweep {
            Sweep::Idle(_) => return false,
            Sweep::Light(l) => {
                if l.heavy_next {
                    self.begin_heavy(now);
                } else {
                    self.finish(now, None);
                }
                return true;
            }
            Sweep::Heavy(h) => h,
        };
        match &h.stage {
            Stage::Discover if h.found.subnet.nodes.is_empty() => {
                // Not even the local node answered (our own port's M_Key is someone
                // else's, or the port is down): there is nothing to configure, and saying
                // SUBNET UP would be a lie. The lost SMP makes the next periodic sweep
                // heavy again (see `finish`).
                self.event(SmEvent::SweepFailed {
                    reason: crate::event::SweepFailure::LocalPortSilent,
                });
                // Close the election's sweep too: it saw no other SM.
                self.smi.election.sweep_complete(now);
                self.finish(now, None);
                self.drain_election(now);
            }
            Stage::Discover => {
                for guid in self.sweep.gone(&self.last) {
                    self.event(SmEvent::NodeRemoved { guid });
                }
                let subnet = &self.sweep.found(&self.last).subnet;
                let lids = &self.lids.stored;
                if self.health.after_discovery(&self.cfg, subnet, lids, now) {
                    self.drain_health(now);
                }
                self.sweep
                    .enter_stage(now, &self.last, &mut self.out, Stage::Elect);
                self.smi.election.sweep_complete(now);
                self.drain_election(now);
            }
            Stage::Elect => match self.smi.election.state() {
                SmState::Master => {
                    self.sweep.enter_stage(
                        now,
                        &self.last,
                        &mut self.out,
                        Stage::Program(Plan::default()),
                    );
                    match self.prepare_routes() {
                        Ok(input) => self.start_route_job(now, input),
                        Err(e) => self.routing_failed(now, e),
                    }
                }
                // Probes outstanding: the election answers later.
                SmState::Discovering => return false,
                _ => self.stand_aside(now),
            },
            // A job has not come back, or Sets are still being queued: wait.
            Stage::Route { .. }
            | Stage::Programming(_)
            | Stage::Activating(_)
            | Stage::Publish { .. } => return false,
            Stage::Program(_) => {
                let plan = match &mut self.sweep {
                    Sweep::Heavy(h) => match &mut h.stage {
                        Stage::Program(plan) => std::mem::take(plan),
                        _ => Plan::default(),
                    },
                    _ => Plan::default(),
                };
                self.sweep.enter_stage(
                    now,
                    &self.last,
                    &mut self.out,
                    Stage::Activating(Box::new(Activation::new(plan))),
                );
                self.stage_slice(now);
            }
            Stage::Activate => self.begin_publish(now),
        }
        true
    }

    /// Standby or NotActive after discovery: someone else configures; the sweep ends
    /// without SUBNET UP.
    pub(super) fn stand_aside(&mut self, now: Instant) {
        self.sweep.end_stage(now, &self.last, &mut self.out);
        let heavy_next = self.sweep.heavy().is_some_and(|h| h.again);
        let idle = Sweep::Idle(Idle {
            since: now,
            heavy_next,
        });
        let replaced = self.sweep.replace(idle, &mut self.last);
        self.jobs.retire(replaced);
        self.timers.clear(Timer::Sweep);
    }

    /// The Program stage's first part, on the engine: counts, LIDs, and the routing
    /// job's input. The routes themselves are computed by a job (`jobs.rs`).
    fn prepare_routes(&mut self) -> Result<super::routing::RouteInput, SmError> {
        let subnet = &self.sweep.found(&self.last).subnet;
        let nodes = subnet.nodes.len();
        let switches = subnet.switch_count();
        let links = subnet.link_count();
        self.sweep.count(|s| {
            s.nodes = nodes;
            s.switches = switches;
            s.links = links;
        });
        self.assign_lids()?;
        let subnet = Arc::clone(&self.sweep.found(&self.last).subnet);
        let cut = self.health.cut();
        let (cfg, lids) = (&self.cfg, &self.lids.assigned);
        Ok(self
            .routing
            .input(cfg, subnet, lids, cut, self.local.port_guid))
    }

    /// The routing job came back (`jobs.rs`): program what it computed, or report why
    /// it could not be. An SM that is no longer Master (an SM that outranks it took over
    /// while the routes were computed) programs nothing.
    pub(super) fn routes_computed(
        &mut self,
        now: Instant,
        computed: Result<super::routing::Computed, SmError>,
    ) {
        if self.smi.election.state() != SmState::Master {
            tracing::info!("no longer Master when the routes came back: not programmed");
            self.stand_aside(now);
            return;
        }
        match computed {
            Ok(mut c) => {
                self.topo_ref.found(c.topo_diff.take());
                self.begin_programming(now, c);
            }
            Err(e) => self.routing_failed(now, e),
        }
    }

    /// Programming failed (routing, LIDs): the routes in force stay, and the next
    /// periodic sweep is heavy, so the SM tries again without waiting for a trap.
    fn routing_failed(&mut self, now: Instant, e: SmError) {
        tracing::warn!(error = %e, "programming the subnet failed");
        self.event(SmEvent::RoutingFailed { error: e.into() });
        self.finish(now, None);
        if self.sweep.is_idle() {
            self.sweep.note_change();
        }
    }

    /// Ends the sweep: its stats go out with [`SmEvent::SubnetUp`] (a heavy sweep that
    /// configured the subnet and lost no SMP) or [`SmEvent::LightSweepDone`], and the
    /// next sweep is scheduled: at once after an incomplete heavy sweep
    /// ([`SmEvent::SweepIncomplete`], `resweep.rs`).
    ///
    /// `published`: what the publish job of a heavy sweep that configured the subnet
    /// made (`publish.rs`); `None` for any other end.
    pub(super) fn finish(&mut self, now: Instant, published: Option<Published>) {
        self.sweep.end_stage(now, &self.last, &mut self.out);
        let up = published.is_some();
        let (snapshot, cabling) = published.map_or((None, None), |p| (p.sa, p.cabling));
        if up {
            let found = self.sweep.found(&self.last);
            let sweep = found.latches.sweep();
            // The isolation cap's base: every physical port of the fabric.
            let ports = found
                .subnet
                .nodes
                .iter()
                .map(|n| n.ports.len().saturating_sub(1))
                .sum();
            self.health.policy.set_fabric_ports(ports);
            self.health.after_sweep(sweep, now, cabling);
            self.drain_health(now);
        }
        let incomplete = up
            && !self
                .resweeps
                .sweep_ended(self.sweep.take_losses(), &mut self.out);
        let up = up && !incomplete;
        self.topo_ref.sweep_end(&self.cfg, up, &mut self.out);
        let idle = Sweep::Idle(Idle {
            since: now,
            heavy_next: false,
        });
        let (progress, again, heavy) = match self.sweep.replace(idle, &mut self.last) {
            (Sweep::Heavy(h), before) => {
                let h = *h;
                self.jobs.retire(before);
                (h.progress, h.again, true)
            }
            (Sweep::Light(l), _) => (l.progress, l.heavy_next, false),
            (Sweep::Idle(_), _) => return,
        };
        self.smps.retries = None;
        let mut stats = progress.stats;
        stats.by_attribute = progress.by_attribute.into_iter().collect();
        stats.total = now.saturating_duration_since(progress.started);
        let timeouts = stats.timeouts;
        self.smi
            .election
            .record_smps_sent(u32::try_from(stats.smps).unwrap_or(u32::MAX));
        if up {
            self.routing.up_once = true;
            // The SA answers from what this sweep configured.
            self.refresh_admin(snapshot);
            tracing::info!(
                nodes = stats.nodes,
                switches = stats.switches,
                lids = stats.lids,
                smps = stats.smps,
                routing = %stats.routing_engine,
                "SUBNET UP"
            );
            self.event(SmEvent::SubnetUp { stats });
        } else if !heavy {
            self.event(SmEvent::LightSweepDone { stats });
        }
        if again || (incomplete && self.resweeps.resweep_now()) {
            self.begin_heavy(now);
        } else if !sweep_period(&self.cfg).is_zero() {
            self.timers
                .set(Timer::Sweep, Some(now + sweep_period(&self.cfg)));
            // A heavy sweep that lost SMPs (after all retries) may have left nodes
            // undiscovered or ports half-configured, and nothing in the fabric will
            // trap about it: one that could not program (or that re-swept too often
            // in a row) makes the next periodic sweep heavy, so persistent loss
            // cannot keep the SM sweeping back to back for ever.
            if heavy && timeouts > 0 {
                self.sweep.note_change();
            }
        }
    }
}
