//! The Program stage's Sets, queued in slices: every switch's tables, the P_Key
//! tables, every port's PortInfo, the health policy's link Sets, then the routes go
//! in force; and the Activate stage's Sets, the same way.
//!
//! Planning the Sets of a large fabric takes the engine a while (the 13,284 nodes of a
//! 3-level radix-36 fat tree: some 250 ms for 336,960 LFT blocks and 70,000 ports, and
//! 16 ms for the 70,000 activations). When
//! the host runs the engine's jobs ([`SubnetManager::set_job_offload`]) it wants an
//! engine that answers while it works, so the planning runs [`SLICE`] units (LFT blocks
//! or ports looked at) per entry point, and [`Timer::Program`] is due at once while
//! some remain: the host's next `handle_timeout` (after whatever arrived meanwhile)
//! runs the next slice. The Sets are queued in the same order either way, so the MAD
//! stream is the same; without offload the whole planning runs in one go.

use std::collections::HashMap;

use ibsm_transport::Instant;
use ibsm_wire::SmState;

use super::SubnetManager;
use super::ports::{Plan, PortCtx, activate_port};
use super::routing::Computed;
use super::sweep::Stage;
use super::switches::SwitchCtx;
use super::timers::Timer;
use crate::model::NodeIx;

/// Units of planning (LFT blocks, ports) per slice: about a millisecond of work on the
/// 11,664-CA tree (`quickstart --offload` prints the longest call into the engine).
pub(super) const SLICE: usize = 4 * 1024;

/// The Program stage's planning between two slices.
#[derive(Debug)]
pub(super) struct Programming {
    computed: Computed,
    max_lid: u16,
    /// The SA's MulticastFDBTop per switch, read once for the whole stage.
    tops: HashMap<u64, u16>,
    step: Step,
    /// The ports planned so far (what the activation follows).
    plan: Plan,
}

/// Where the planning stands.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The next switch of the routes' snapshot to program.
    Switches(usize),
    /// P_Key tables (one piece: the policy plans them together).
    PKeys,
    /// The next node whose ports to plan.
    Ports(NodeIx),
    /// Links the health policy disables or enables, then the routes go in force.
    Health,
}

impl SubnetManager {
    /// Begins programming what a routing job computed.
    pub(super) fn begin_programming(&mut self, now: Instant, computed: Computed) {
        let rerouted = computed.rerouted;
        let wall = computed.wall;
        let engine = computed.routes.engine().to_owned();
        self.sweep.count(|s| {
            s.rerouted = rerouted;
            s.routing_wall = wall;
            s.routing_engine = engine;
        });
        let p = Programming {
            computed,
            max_lid: self.lids.max_lid(),
            tops: self.admin.mft_tops(),
            step: Step::Switches(0),
            plan: Plan::default(),
        };
        self.sweep.set_stage(Stage::Programming(Box::new(p)));
        self.stage_slice(now);
    }

    /// Runs the next slice of the stage being queued (`Timer::Program`).
    pub(super) fn stage_slice(&mut self, now: Instant) {
        self.timers.clear(Timer::Program);
        if self.smi.election.state() != SmState::Master {
            // Another SM took over between two slices: the rest is its business.
            if self.sweep.queueing() {
                tracing::info!("no longer Master while programming: the rest is not sent");
                self.stand_aside(now);
            }
            return;
        }
        if let Some(p) = self.sweep.take_programming() {
            self.program_slice(now, p);
        } else if let Some(a) = self.sweep.take_activation() {
            self.activate_slice(now, a);
        }
    }

    /// Runs the next slice of the planning (all of it without offload); once done the
    /// routes go in force and the stage waits for its Sets' answers.
    fn program_slice(&mut self, now: Instant, mut p: Box<Programming>) {
        let budget = self.jobs.slice_budget();
        let mut done = 0usize;
        while done < budget {
            match p.step {
                Step::Switches(s) if s < p.computed.csr.switch_count() => {
                    let (csr, routes) = (&p.computed.csr, &p.computed.routes);
                    let ctx = SwitchCtx {
                        cfg: &self.cfg,
                        sweep: &self.sweep,
                        last: &self.last,
                        lids: &self.lids,
                        max_lid: p.max_lid,
                        tops: &p.tops,
                    };
                    let w = self
                        .mirror
                        .program_switch(&ctx, &mut self.smps, s, csr, routes);
                    self.sweep.count(|st| {
                        st.lft_entries += w.lft_entries;
                        st.lft_blocks += w.lft_blocks;
                    });
                    done += w.units.max(1);
                    p.step = Step::Switches(s + 1);
                }
                Step::Switches(_) => p.step = Step::PKeys,
                Step::PKeys => {
                    // P_Key tables before the PortInfo Sets that turn switch
                    // enforcement on.
                    let plan = p.computed.pkeys.take();
                    let subnet = &self.sweep.found(&self.last).subnet;
                    let sweep = &self.sweep;
                    let blocks = self.partitions.program(
                        plan,
                        subnet,
                        |guid| sweep.is_locked(guid),
                        &mut self.smps,
                        &mut self.out,
                    );
                    self.sweep.count(|s| s.pkey_blocks += blocks);
                    done += self.sweep.found(&self.last).subnet.nodes.len();
                    p.step = Step::Ports(0);
                }
                Step::Ports(n) if n < self.sweep.found(&self.last).subnet.nodes.len() => {
                    let ctx = PortCtx {
                        cfg: &self.cfg,
                        subnet: &self.sweep.found(&self.last).subnet,
                        sweep: &self.sweep,
                        lids: &self.lids,
                        partitions: &self.partitions,
                        first_master_sweep: self.admin.first_master_sweep(),
                    };
                    let (looked, sets) = p.plan.program_node(&ctx, &mut self.smps, n);
                    self.sweep.count(|s| s.port_sets += sets);
                    done += looked.max(1);
                    p.step = Step::Ports(n + 1);
                }
                Step::Ports(_) => p.step = Step::Health,
                Step::Health => {
                    let subnet = &self.sweep.found(&self.last).subnet;
                    let sets = self.health.program(&self.cfg, subnet, &mut self.smps);
                    self.sweep.count(|s| s.port_sets += sets);
                    let Programming { computed, plan, .. } = *p;
                    let old = self.routing.in_force(
                        &self.cfg,
                        now,
                        computed,
                        &mut self.timers,
                        &mut self.out,
                    );
                    self.jobs.retire(old);
                    self.sweep.set_stage(Stage::Program(plan));
                    return;
                }
            }
        }
        self.sweep.set_stage(Stage::Programming(p));
        self.timers.set(Timer::Program, Some(now));
    }
}

/// The activation Sets between two slices.
#[derive(Debug)]
pub(super) struct Activation {
    plan: Plan,
    /// The first planned port not looked at yet (`None`: from the start).
    next: Option<(NodeIx, u8)>,
}

impl Activation {
    pub(super) fn new(plan: Plan) -> Self {
        Self { plan, next: None }
    }
}

impl SubnetManager {
    /// Queues the next slice of activation Sets; once all are out the stage waits for
    /// their answers.
    fn activate_slice(&mut self, now: Instant, mut a: Box<Activation>) {
        let budget = self.jobs.slice_budget();
        // Straight from the plan: a copy of a whole fabric's PortInfos (a slice is all
        // of it without offload) would cost 60 MB on the 45,056-CA tree.
        a.next = {
            let mut rest = a.plan.from(a.next);
            for (&(n, p), want) in rest.by_ref().take(budget) {
                let subnet = &self.sweep.found(&self.last).subnet;
                if activate_port(subnet, &mut self.smps, n, p, want) {
                    self.sweep.count(|s| s.port_sets += 1);
                }
            }
            rest.next().map(|(k, _)| *k)
        };
        if a.next.is_none() {
            self.sweep.set_stage(Stage::Activate);
        } else {
            self.sweep.set_stage(Stage::Activating(a));
            self.timers.set(Timer::Program, Some(now));
        }
    }
}
