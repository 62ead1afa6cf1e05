//! The reference topology in the engine (`SmConfig::topology_ref`, [`crate::topo_ref`]).
//!
//! The comparison runs in the routing job ([`check`], called by `RouteInput::run`), on
//! the fabric as discovered and off the engine's thread, since it is linear in a
//! fabric that may have tens of thousands of cables. With the `isolate` policy the job
//! also disconnects miswired and extra cables from the fabric it routes on, so the
//! routes of the same sweep already go around them, as around an unhealthy port's
//! cable. The engine keeps the differences the job found until the sweep ends, and
//! reports them only when a sweep that brought the subnet up (none of its SMPs lost,
//! so a node that did not answer is not taken for a missing one) found a different
//! set than the last report: once per change.

use std::collections::BTreeSet;
use std::sync::Arc;

use ibsm_topology::{Fabric, NodeId};

use super::{Outbox, SubnetManager};
use crate::config::SmConfig;
use crate::event::SmEvent;
use crate::topo_ref::{Difference, TopoPolicy};

/// What the engine keeps of the reference check.
#[derive(Debug, Default)]
pub(super) struct TopoRefState {
    /// What the running heavy sweep's routing job found, until the sweep ends.
    pending: Option<Vec<Difference>>,
    /// The differences of the last report (`None`: no sweep has reported yet).
    reported: Option<Vec<Difference>>,
}

/// The routing job's part: `fabric` (as discovered, the LIDs set) compared with the
/// reference; with [`TopoPolicy::Isolate`] the miswired and extra cables are taken out
/// of it. `ids` maps a node GUID to its id in `fabric`.
pub(super) fn check(
    reference: &Fabric,
    policy: TopoPolicy,
    fabric: &mut Fabric,
    id_of: impl Fn(u64) -> Option<NodeId>,
) -> Vec<Difference> {
    let found = ibsm_topology::diff::diff(reference, fabric);
    if policy == TopoPolicy::Isolate {
        for (a, b) in found.iter().filter_map(Difference::isolated_cable) {
            if let Some(id) = id_of(a.guid.0)
                && fabric.disconnect(id, a.port).is_ok()
            {
                tracing::debug!(a = %a, b = %b, "cable off the reference topology left out of routing");
            }
        }
    }
    found
}

impl SubnetManager {
    /// Replaces the reference topology and its policy (ibsmd re-reads
    /// `topology_ref_file` at SIGHUP) and asks for a heavy sweep, which compares the
    /// fabric with the new plan and reports what changed since the last report (the
    /// differences the new plan no longer has as resolved). `None` stops the check.
    pub fn set_topology_ref(
        &mut self,
        now: ibsm_transport::Instant,
        reference: Option<crate::topo_ref::TopologyRef>,
    ) {
        if reference.is_none() {
            self.topo_ref = TopoRefState::default();
        }
        self.cfg.topology_ref = reference;
        self.request_heavy_sweep(now);
    }
}

/// The reference and policy a routing job compares with (`None`: no reference).
pub(super) fn input(cfg: &SmConfig) -> Option<(Arc<Fabric>, TopoPolicy)> {
    cfg.topology_ref
        .as_ref()
        .map(|r| (Arc::clone(&r.fabric), r.policy))
}

impl TopoRefState {
    /// The routing job came back with what it found: kept until the sweep ends.
    pub(super) fn found(&mut self, found: Option<Vec<Difference>>) {
        self.pending = found;
    }

    /// The heavy sweep ends; `up`: it brought the subnet up with no SMP lost. Reports
    /// its differences to `out` when they are not those of the last report.
    pub(super) fn sweep_end(&mut self, cfg: &SmConfig, up: bool, out: &mut Outbox) {
        let Some(now) = self.pending.take() else {
            return;
        };
        if !up {
            return;
        }
        let before = self.reported.as_deref().unwrap_or(&[]);
        if self.reported.is_some() && before == now.as_slice() {
            return;
        }
        let old: BTreeSet<&Difference> = before.iter().collect();
        let new: BTreeSet<&Difference> = now.iter().collect();
        let appeared: Vec<Difference> = new.difference(&old).map(|d| (*d).clone()).collect();
        let resolved: Vec<Difference> = old.difference(&new).map(|d| (*d).clone()).collect();
        if appeared.is_empty() && resolved.is_empty() && self.reported.is_some() {
            return;
        }
        let policy = cfg
            .topology_ref
            .as_ref()
            .map_or("report", |r| r.policy.name());
        for d in &appeared {
            tracing::warn!(kind = d.kind(), policy, "reference topology: {d}");
        }
        for d in &resolved {
            tracing::info!(kind = d.kind(), "reference topology: resolved: {d}");
        }
        if now.is_empty() {
            tracing::info!("fabric matches the reference topology");
        }
        let total = now.len();
        self.reported = Some(now);
        out.event(SmEvent::TopologyChanged {
            appeared,
            resolved,
            total,
        });
    }
}

impl SubnetManager {
    /// The differences from the reference topology that the last report found
    /// (sorted, [`ibsm_topology::diff::diff`]); empty when the fabric matched; `None`
    /// without a reference or before the first heavy sweep that brought the subnet up.
    #[must_use]
    pub fn topology_differences(&self) -> Option<&[Difference]> {
        self.topo_ref.reported.as_deref()
    }
}
