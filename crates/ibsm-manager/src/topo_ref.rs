//! The reference topology (`SmConfig::topology_ref`): the cabling plan every heavy
//! sweep compares the discovered fabric with, and what the SM does about a difference.
//!
//! The comparison itself is [`ibsm_topology::diff`] (pure, shared with
//! `ibsm-topodiff`). The SM runs it inside the sweep's routing job, off the engine's
//! thread, on the fabric as discovered (before the health policy cuts anything), and
//! reports it once per change: [`SmEvent::TopologyChanged`](crate::SmEvent::TopologyChanged)
//! when a heavy sweep that brought the subnet up finds a different set of differences
//! than the last such sweep, and [`SubnetManager::topology_differences`](crate::SubnetManager::topology_differences)
//! for the current set.

use std::sync::Arc;

use ibsm_topology::Fabric;
pub use ibsm_topology::diff::{Difference, NodeRef, PortRef, WiredEnd};

/// What the SM does about the differences it finds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TopoPolicy {
    /// Report them (events, log, status); route as discovered.
    #[default]
    Report,
    /// Report them, and route no traffic over a miswired or extra cable (as over an
    /// unhealthy port's cable: the routes go around it as around a lost cable).
    Isolate,
}

impl TopoPolicy {
    /// The name the configuration spells (`report`, `isolate`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            TopoPolicy::Report => "report",
            TopoPolicy::Isolate => "isolate",
        }
    }

    /// The policy of a name ([`Self::name`]).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "report" => Some(TopoPolicy::Report),
            "isolate" => Some(TopoPolicy::Isolate),
            _ => None,
        }
    }
}

/// A reference topology and its policy.
#[derive(Clone, Debug)]
pub struct TopologyRef {
    /// The planned fabric (e.g. `ibsm_topology::ibnet::read_file` of `ibnetdiscover`'s
    /// output on a fabric cabled as planned). Shared: every routing job holds it.
    pub fabric: Arc<Fabric>,
    /// What a difference leads to.
    pub policy: TopoPolicy,
    /// Where it came from (a file name), for logs and status.
    pub source: String,
}

impl TopologyRef {
    /// A reference topology read from `source`.
    #[must_use]
    pub fn new(fabric: Fabric, policy: TopoPolicy, source: impl Into<String>) -> Self {
        TopologyRef {
            fabric: Arc::new(fabric),
            policy,
            source: source.into(),
        }
    }
}

/// Equal when the same plan (the same shared fabric) with the same policy: a
/// configuration compares cheaply however large the plan.
impl PartialEq for TopologyRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.fabric, &other.fabric)
            && self.policy == other.policy
            && self.source == other.source
    }
}

impl Eq for TopologyRef {}
