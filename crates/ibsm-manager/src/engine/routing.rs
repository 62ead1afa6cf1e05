//! Routing: the routes of the discovered subnet, recomputed by the configured engines
//! (the first of `SmConfig::routing` that fits, minhop last unless `no_fallback`, each
//! given the lists of `SmConfig::routing_inputs`) or
//! repaired when the fabric only lost things (`SmConfig::reroute_on_loss`), and the
//! rebalance policy that eventually recomputes repaired routes.

use std::collections::BTreeMap;
use std::sync::Arc;

use ibsm_routing::{EngineKind, EngineList, LidAssignment, RouteOptions, Routes, RoutingError};
use ibsm_topology::{Csr, Fabric};
use ibsm_transport::Instant;

use super::timers::{Timer, Timers};
use super::{Outbox, SubnetManager};
use crate::config::SmConfig;
use crate::error::SmError;
use crate::event::{Role, SmEvent};
use crate::model::Discovered;
use crate::partition::{PKeyPlan, PartitionConfig};

/// What the SM has configured: the fabric model, the routes in force and the snapshot
/// they were computed on.
#[derive(Debug, Default)]
pub(super) struct RouteState {
    pub(super) fabric: Option<Fabric>,
    /// Shared with the SA's snapshot ([`ibsm_sa::SaSnapshot::routes`]).
    pub(super) routes: Option<Arc<Routes>>,
    /// The snapshot `routes` were computed on (switch order, cables, LIDs), to tell a
    /// fabric that only lost things from one that changed otherwise.
    pub(super) csr: Option<Arc<Csr>>,
    /// The next routing recomputes from scratch (`request_rebalance`).
    rebalance_pending: bool,
    /// A sweep has configured the subnet (SUBNET UP once).
    pub(super) up_once: bool,
}

impl RouteState {
    /// The routes in force and the snapshot they were computed on, when the next
    /// routing may repair them (see `SmConfig::reroute_on_loss`); `None` recomputes from
    /// scratch (option off, engine without incremental re-route, rebalance asked for).
    fn repairable(&self, cfg: &SmConfig) -> Option<(Arc<Routes>, Arc<Csr>)> {
        let kind = cfg.routing.preferred();
        if !cfg.reroute_on_loss || !kind.incremental_reroute() || self.rebalance_pending {
            return None;
        }
        let (prev, prev_csr) = (self.routes.as_ref()?, self.csr.as_ref()?);
        // Routes a later engine of the list produced are not the preferred engine's to
        // repair: a recompute tries the list again.
        if prev.engine() != kind.name() {
            return None;
        }
        Some((Arc::clone(prev), Arc::clone(prev_csr)))
    }
}

/// Routes computed for one heavy sweep, not yet in force.
#[derive(Debug)]
pub(super) struct Computed {
    pub(super) fabric: Fabric,
    pub(super) csr: Csr,
    /// Shared from the start: the mirror of what is written refers to these tables
    /// rather than copying them (`switches.rs`).
    pub(super) routes: Arc<Routes>,
    /// Repaired from the routes in force rather than recomputed.
    pub(super) rerouted: bool,
    /// The engine whose tables these are.
    pub(super) engine: EngineKind,
    /// The engines of the list tried before it, and why each failed.
    pub(super) failed: Vec<(EngineKind, RoutingError)>,
    /// Wall time the engine (or the repair) took, the model's conversion included.
    pub(super) wall: std::time::Duration,
    /// The P_Key tables of the partition policy (`None`: the SM does not manage them).
    pub(super) pkeys: Option<PKeyPlan>,
    /// The differences from the reference topology (`None`: no reference).
    pub(super) topo_diff: Option<Vec<crate::topo_ref::Difference>>,
}

/// A routing job's input: everything the engines need, owned, so that the routing runs
/// on any thread while the engine goes on answering (see `jobs.rs`). The discovered
/// model is shared, not copied: the engine does not change it while the job runs (and
/// would copy it first if it did, `Arc::make_mut`).
pub(super) struct RouteInput {
    subnet: Arc<Discovered>,
    /// The LIDs just assigned, by port GUID (switches: node GUID).
    lids: BTreeMap<u64, (u16, u8)>,
    /// Links the health policy leaves out of routing: (node GUID, port).
    cut: Vec<(u64, u8)>,
    engines: EngineList,
    opts: RouteOptions,
    /// The routes in force and their snapshot, where a loss-only change may repair them.
    repair: Option<(Arc<Routes>, Arc<Csr>)>,
    /// The partition policy and the SM's port GUID, to plan every P_Key table.
    partitions: Option<(Arc<PartitionConfig>, u64)>,
    /// The reference topology and its policy (`topo_ref.rs`).
    reference: Option<(Arc<Fabric>, crate::topo_ref::TopoPolicy)>,
}

impl RouteInput {
    /// The discovered subnet as a `Fabric` on the assigned LIDs, unhealthy links cut,
    /// then its routes: a repair of the routes in force when the fabric only lost links
    /// or nodes since they were computed, else the first engine of the list that fits;
    /// and the P_Key tables the partition policy asks for. A pure function of the input
    /// (invariant 6).
    pub(super) fn run(mut self) -> Result<Computed, SmError> {
        let Some((policy, sm_port)) = self.partitions.take() else {
            return self.route();
        };
        let subnet = Arc::clone(&self.subnet);
        if self.opts.threads <= 1 {
            let mut computed = self.route()?;
            computed.pkeys = Some(policy.plan(&subnet, sm_port));
            return Ok(computed);
        }
        // The P_Key plan reads the model alone: made beside the routing (whose planning
        // threads leave gaps) rather than after it.
        std::thread::scope(|sc| {
            let plan = sc.spawn(|| policy.plan(&subnet, sm_port));
            let routed = self.route();
            let pkeys = plan
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            routed.map(|mut computed| {
                computed.pkeys = Some(pkeys);
                computed
            })
        })
    }

    /// [`Self::run`] but the P_Key plan.
    fn route(self) -> Result<Computed, SmError> {
        let t0 = std::time::Instant::now();
        let RouteInput {
            subnet,
            lids,
            cut,
            engines,
            opts,
            repair,
            partitions: _,
            reference,
        } = self;
        let (mut fabric, ids) = subnet.to_fabric_with(|p| lids.get(&p.guid).copied())?;
        // Compared as discovered, before the health policy cuts anything.
        let topo_diff = reference.map(|(plan, policy)| {
            let id_of = |g: u64| subnet.by_guid.get(&g).and_then(|&ix| ids.get(ix).copied());
            super::topo_ref::check(&plan, policy, &mut fabric, id_of)
        });
        let mut reach = Reach::new(&fabric);
        for (guid, port) in cut {
            let Some(&ix) = subnet.by_guid.get(&guid) else {
                continue;
            };
            // A port without a cable in this sweep has nothing to cut.
            let Some(peer) = fabric.port_peer(ids[ix], port) else {
                continue;
            };
            // An end port's link left out leaves that port unrouted, as the policy
            // means; a cable between switches is left out only while its two switches
            // stay connected, so no set of isolations (the cap counts ports, not what
            // they carry) cuts a switch and everything behind it off the subnet.
            let between_switches = [ids[ix], peer.node]
                .iter()
                .all(|&n| fabric.node(n).is_some_and(ibsm_topology::Node::is_switch));
            if between_switches && !reach.connected_without(&fabric, ids[ix], port, peer.node) {
                tracing::warn!(
                    node = guid,
                    port,
                    "isolated link kept in routing: leaving it out would cut a switch off the subnet"
                );
                continue;
            }
            if fabric.disconnect(ids[ix], port).is_ok() {
                tracing::debug!(node = guid, port, "unhealthy link left out of routing");
            }
        }
        let csr = Csr::new(&fabric);
        let assignment = LidAssignment::from_snapshot(&csr);
        let repaired = repair.and_then(|(prev, prev_csr)| {
            let kind = engines.preferred();
            let old_index = crate::reroute::losses_only(&prev_csr, &csr)?;
            let lft_len = crate::reroute::lft_len(&csr);
            let live = crate::reroute::live_lids(&csr, lft_len);
            let carried = prev.carry_over(&old_index, lft_len, &live);
            // A failed repair falls back to a full recompute, which runs the list itself.
            kind.engine()
                .reroute(&csr, &assignment, &opts, &carried)
                .ok()
        });
        let rerouted = repaired.is_some();
        let (routes, engine, failed) = match repaired {
            Some(r) => (r, engines.preferred(), Vec::new()),
            None => {
                let r = engines.route(&csr, &assignment, &opts)?;
                (r.routes, r.engine, r.failed)
            }
        };
        let wall = t0.elapsed();
        Ok(Computed {
            fabric,
            csr,
            routes: Arc::new(routes),
            rerouted,
            engine,
            failed,
            wall,
            pkeys: None,
            topo_diff,
        })
    }
}

impl RouteState {
    /// What a routing job needs, taken from the engine on its own thread: the discovered
    /// `subnet`, the LIDs just assigned (`lids`), the links the health policy cuts
    /// (`cut`), the options, and the routes in force where they may be repaired instead
    /// of recomputed. All of it is cheap to take; the work is the job's.
    pub(super) fn input(
        &self,
        cfg: &SmConfig,
        subnet: Arc<Discovered>,
        lids: &BTreeMap<u64, (u16, u8)>,
        cut: Vec<(u64, u8)>,
        local_port_guid: u64,
    ) -> RouteInput {
        let opts = cfg.routing_inputs.apply(
            RouteOptions::default()
                .with_threads(cfg.routing_threads)
                .with_allow_unreachable(true),
        );
        RouteInput {
            subnet,
            lids: lids.clone(),
            cut,
            engines: cfg.routing.clone(),
            opts,
            repair: self.repairable(cfg),
            partitions: cfg
                .partitions
                .as_ref()
                .map(|p| (Arc::new(p.clone()), local_port_guid)),
            reference: super::topo_ref::input(cfg),
        }
    }

    /// Puts computed routes in force (their tables are queued by now), a fallback
    /// reported to `out`. The automatic rebalance waits for quiet after the last change
    /// the routes were repaired for (`timers`); a sweep that finds nothing new keeps
    /// the wait, a recompute ends it. What it replaces, to drop.
    pub(super) fn in_force(
        &mut self,
        cfg: &SmConfig,
        now: Instant,
        c: Computed,
        timers: &mut Timers,
        out: &mut Outbox,
    ) -> Replaced {
        if !c.failed.is_empty() {
            let why: Vec<String> = c
                .failed
                .iter()
                .map(|(k, e)| format!("{}: {e}", k.name()))
                .collect();
            tracing::warn!(engine = c.engine.name(), failed = %why.join("; "), "routing fell back");
            out.event(SmEvent::RoutingFallback {
                engine: c.engine,
                failed: c.failed.clone(),
            });
        }
        if c.rerouted {
            let changed = self
                .csr
                .as_ref()
                .is_none_or(|prev| !crate::reroute::same_fabric(prev, &c.csr));
            if changed || timers.get(Timer::Rebalance).is_none() {
                let at = cfg.rebalance_after.map(|d| now + d);
                timers.set(Timer::Rebalance, at);
            }
        } else {
            timers.clear(Timer::Rebalance);
        }
        let old = (
            self.fabric.replace(c.fabric),
            self.routes.replace(c.routes),
            self.csr.replace(Arc::new(c.csr)),
        );
        self.rebalance_pending = false;
        old
    }
}

/// The routes [`RouteState::in_force`] replaced.
pub(super) type Replaced = (Option<Fabric>, Option<Arc<Routes>>, Option<Arc<Csr>>);

impl SubnetManager {
    pub(super) fn rebalance_wanted(&mut self, now: Instant) {
        self.routing.rebalance_pending = true;
        self.heavy_sweep_wanted(now);
    }

    /// The quiet time after a re-route has passed.
    pub(super) fn rebalance_due(&mut self, now: Instant) {
        // Another SM took over meanwhile: the routes are its business now.
        if self.smi.role == Role::Master {
            tracing::info!("quiet since the last re-route: rebalancing");
            self.rebalance_wanted(now);
        }
    }
}

/// Breadth-first reachability between two nodes, for many questions on one fabric:
/// its marks are sized once and only those set are cleared after each question, so a
/// question answered within a few hops costs a few hops.
struct Reach {
    seen: Vec<bool>,
    touched: Vec<usize>,
    queue: std::collections::VecDeque<ibsm_topology::NodeId>,
}

impl Reach {
    fn new(fabric: &Fabric) -> Self {
        let len = fabric
            .node_ids()
            .map(|id| id.index() + 1)
            .max()
            .unwrap_or(0);
        Self {
            seen: vec![false; len],
            touched: Vec::new(),
            queue: std::collections::VecDeque::new(),
        }
    }

    /// Whether `to` is reachable from `from` in `fabric` without the cable at
    /// `from`'s port `port` (stopping at `to`: on a fabric with redundant paths it is
    /// found within a few hops). Cables may only have been taken out since `new`.
    fn connected_without(
        &mut self,
        fabric: &Fabric,
        from: ibsm_topology::NodeId,
        port: u8,
        to: ibsm_topology::NodeId,
    ) -> bool {
        // A BFS that returns as soon as it meets `to`; the marks it leaves are
        // cleared after it, whichever way it ended.
        let found = 'search: {
            self.mark(from);
            self.queue.push_back(from);
            while let Some(n) = self.queue.pop_front() {
                let Some(node) = fabric.node(n) else {
                    continue;
                };
                for p in 1..=node.num_ports() {
                    if n == from && p == port {
                        continue;
                    }
                    let Some(peer) = fabric.port_peer(n, p) else {
                        continue;
                    };
                    if peer.node == to {
                        break 'search true;
                    }
                    if !self.seen[peer.node.index()] {
                        self.mark(peer.node);
                        self.queue.push_back(peer.node);
                    }
                }
            }
            false
        };
        for i in self.touched.drain(..) {
            self.seen[i] = false;
        }
        self.queue.clear();
        found
    }

    fn mark(&mut self, n: ibsm_topology::NodeId) {
        self.seen[n.index()] = true;
        self.touched.push(n.index());
    }
}
