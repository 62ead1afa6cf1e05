//! The Program stage's Sets, queued in slices: every switch's tables, the P_Key
//! tables, every port's PortInfo, the health policy's link Sets, then the routes go
//! in force.
//!
//! Planning the Sets of a large fabric takes the engine a while (the 13,284 nodes of a
//! 3-level radix-36 fat tree: some 250 ms for 336,960 LFT blocks and 70,000 ports). When
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
use super::ports::Plan;
use super::routing::Computed;
use super::sweep::Stage;
use super::timers::Timer;
use crate::model::NodeIx;

/// Units of planning (LFT blocks, ports) per slice: a few milliseconds of work.
const SLICE: usize = 16 * 1024;

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
            tops: self.mft_tops(),
            step: Step::Switches(0),
            plan: Plan::default(),
        };
        self.sweep.set_stage(Stage::Programming(Box::new(p)));
        self.program_slice(now);
    }

    /// Runs the next slice of the planning (all of it without offload); once done the
    /// routes go in force and the stage waits for its Sets' answers.
    pub(super) fn program_slice(&mut self, now: Instant) {
        self.timers.clear(Timer::Program);
        if self.smi.election.state() != SmState::Master {
            // Another SM took over between two slices: the rest is its business.
            if self.sweep.programming().is_some() {
                tracing::info!("no longer Master while programming: the rest is not sent");
                self.stand_aside(now);
            }
            return;
        }
        let Some(mut p) = self.sweep.take_programming() else {
            return;
        };
        let budget = if self.jobs_offloaded() {
            match self.jobs.slice {
                0 => SLICE,
                n => n,
            }
        } else {
            usize::MAX
        };
        let mut done = 0usize;
        while done < budget {
            match p.step {
                Step::Switches(s) if s < p.computed.csr.switch_count() => {
                    let (csr, routes) = (&p.computed.csr, &p.computed.routes);
                    done += self
                        .program_switch(s, csr, routes, p.max_lid, &p.tops)
                        .max(1);
                    p.step = Step::Switches(s + 1);
                }
                Step::Switches(_) => p.step = Step::PKeys,
                Step::PKeys => {
                    // P_Key tables before the PortInfo Sets that turn switch
                    // enforcement on.
                    self.program_pkeys();
                    done += self.subnet.nodes.len();
                    p.step = Step::Ports(0);
                }
                Step::Ports(n) if n < self.subnet.nodes.len() => {
                    done += self.program_node_ports(n, &mut p.plan).max(1);
                    p.step = Step::Ports(n + 1);
                }
                Step::Ports(_) => p.step = Step::Health,
                Step::Health => {
                    self.program_health();
                    let Programming { computed, plan, .. } = *p;
                    self.routes_in_force(now, computed);
                    self.sweep.set_stage(Stage::Program(plan));
                    return;
                }
            }
        }
        self.sweep.set_stage(Stage::Programming(p));
        self.timers.set(Timer::Program, Some(now));
    }
}
