//! The [`RoutingEngine`] trait, [`RouteOptions`] and the built-in engine registry.

use ibsm_topology::{Csr, Guid};

use crate::error::{Result, RoutingError};
use crate::lids::LidAssignment;
use crate::routes::Routes;

/// A routing engine: a pure function from a fabric snapshot and its LIDs to forwarding
/// tables (and SLs when it needs virtual lanes).
///
/// Implementations must be deterministic and must not fall back to another algorithm on
/// their own: they return a typed [`RoutingError`] and let the caller decide (see
/// [`route_with_fallback`]).
pub trait RoutingEngine: Send + Sync {
    /// Short name, as in OpenSM's `routing_engine` option (`"minhop"`, `"updn"`, ...).
    fn name(&self) -> &str;

    /// Computes routes.
    ///
    /// # Errors
    /// Engine-specific: [`RoutingError::NotAFatTree`], [`RoutingError::NotEnoughVls`],
    /// [`RoutingError::Disconnected`], ...
    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Result<Routes>;

    /// Recomputes routes after a change (typically a failed link), starting from
    /// `previous` so that as few LFT entries as possible change. The default recomputes
    /// from scratch.
    ///
    /// # Errors
    /// As [`RoutingEngine::route`].
    fn reroute(
        &self,
        csr: &Csr,
        lids: &LidAssignment,
        opts: &RouteOptions,
        previous: &Routes,
    ) -> Result<Routes> {
        let _ = previous;
        self.route(csr, lids, opts)
    }
}

/// Dimension-order coordinates for [`EngineKind::Dor`]: one coordinate vector per switch
/// (snapshot order), the size of every dimension and whether it wraps (torus).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coordinates {
    /// Per switch, its coordinate in each dimension.
    pub coords: Vec<Vec<u16>>,
    /// Extent of each dimension.
    pub dims: Vec<u16>,
    /// Whether each dimension wraps around (torus ring) or not (mesh line).
    pub wrap: Vec<bool>,
}

/// Options shared by all engines. Names follow OpenSM's where one exists.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouteOptions {
    /// Threads for engines that parallelise per destination, the calling one included
    /// (1 = single-threaded). The destination-based engines give byte-identical tables
    /// for any value.
    pub threads: usize,
    /// Data VLs available for deadlock avoidance (OpenSM's effective `max_op_vls`), 1..=15.
    pub max_vls: u8,
    /// Up/down roots given by the user (OpenSM `root_guid_file`; updn, dnup, ftree and
    /// dfsssp's up-first pass); empty = detect. A switch GUID names that switch, a CA
    /// port GUID the switch the CA is cabled to (as OpenSM); GUIDs not in the fabric
    /// are skipped, and a list none of whose GUIDs is there is an error.
    pub roots: Vec<Guid>,
    /// Compute-node port GUIDs (OpenSM `cn_guid_file`, ftree): the leaves are the
    /// switches with compute nodes, and only compute nodes take part in d-mod-k; other
    /// CAs may hang anywhere in the tree. Empty = every CA not in `io_nodes`.
    pub compute_nodes: Vec<Guid>,
    /// I/O-node port GUIDs (OpenSM `io_guid_file`, ftree): never compute nodes; with
    /// [`RouteOptions::max_reverse_hops`] their LIDs may be reached by paths that use switches
    /// the wrong way round.
    pub io_nodes: Vec<Guid>,
    /// OpenSM's `max_reverse_hops` (ftree): how many reverse hops (a down-then-up turn
    /// at a switch, against the up/down order) I/O nodes' traffic ([`RouteOptions::io_nodes`]:
    /// towards them, or from a switch whose CAs are all I/O nodes) may make where no
    /// up/down path exists, so that storage hung off a spine is reachable from every
    /// compute node and the other I/O nodes. Routes between compute nodes never turn.
    /// 0 (the default) = none: every route is up/down. As OpenSM warns, such routes run
    /// against the up/down order and can in theory close a credit loop: meant for
    /// connectivity, not bandwidth.
    pub max_reverse_hops: u16,
    /// Port GUIDs in the order their LIDs are routed (OpenSM `guid_routing_order_file`;
    /// minhop, updn, dnup, dfsssp): listed ports are routed first, in this order, so
    /// they get the least-loaded ports; the rest follow in the usual order.
    pub routing_order: Vec<Guid>,
    /// Engines to try, in order, when the requested one fails (OpenSM's comma-separated
    /// `routing_engine` list). Empty = no fallback: the error is returned.
    pub fallback: Vec<EngineKind>,
    /// Coordinates for dimension-order routing; `None` = detect from the graph.
    pub coordinates: Option<Coordinates>,
    /// Accept fabrics where some switch cannot reach some LID (the entry stays 255)
    /// instead of failing with [`RoutingError::Disconnected`].
    pub allow_unreachable: bool,
}

impl Default for RouteOptions {
    fn default() -> Self {
        RouteOptions {
            threads: 1,
            max_vls: 8,
            roots: Vec::new(),
            compute_nodes: Vec::new(),
            io_nodes: Vec::new(),
            max_reverse_hops: 0,
            routing_order: Vec::new(),
            fallback: Vec::new(),
            coordinates: None,
            allow_unreachable: false,
        }
    }
}

/// The `with_*` setters of [`RouteOptions`]: each sets its field and returns the options
/// (the struct is `#[non_exhaustive]`, so code outside this crate starts from
/// `RouteOptions::default()` and chains these).
macro_rules! with {
    ($($with:ident => $field:ident: $ty:ty),* $(,)?) => {
        impl RouteOptions {
            $(
                #[doc = concat!("Sets [`RouteOptions::", stringify!($field), "`].")]
                #[must_use]
                pub fn $with(mut self, v: $ty) -> Self {
                    self.$field = v;
                    self
                }
            )*
        }
    };
}

with! {
    with_threads => threads: usize,
    with_max_vls => max_vls: u8,
    with_roots => roots: Vec<Guid>,
    with_compute_nodes => compute_nodes: Vec<Guid>,
    with_io_nodes => io_nodes: Vec<Guid>,
    with_max_reverse_hops => max_reverse_hops: u16,
    with_routing_order => routing_order: Vec<Guid>,
    with_fallback => fallback: Vec<EngineKind>,
    with_allow_unreachable => allow_unreachable: bool,
}

impl RouteOptions {
    /// Sets [`RouteOptions::coordinates`].
    #[must_use]
    pub fn with_coordinates(mut self, c: Coordinates) -> Self {
        self.coordinates = Some(c);
        self
    }
}

/// The built-in engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EngineKind {
    /// Balanced shortest paths (not deadlock-free on cyclic topologies).
    MinHop,
    /// Up*/Down*.
    UpDn,
    /// Down*/Up*.
    DnUp,
    /// Fat tree.
    FatTree,
    /// Dimension order for meshes and tori.
    Dor,
    /// Layered shortest paths.
    Lash,
    /// Deadlock-free single-source shortest paths.
    Dfsssp,
}

impl EngineKind {
    /// All built-in engines.
    pub const ALL: [EngineKind; 7] = [
        EngineKind::MinHop,
        EngineKind::UpDn,
        EngineKind::DnUp,
        EngineKind::FatTree,
        EngineKind::Dor,
        EngineKind::Lash,
        EngineKind::Dfsssp,
    ];

    /// OpenSM-style name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::MinHop => "minhop",
            EngineKind::UpDn => "updn",
            EngineKind::DnUp => "dnup",
            EngineKind::FatTree => "ftree",
            EngineKind::Dor => "dor",
            EngineKind::Lash => "lash",
            EngineKind::Dfsssp => "dfsssp",
        }
    }

    /// The engine with that name.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// An instance of the engine.
    #[must_use]
    pub fn engine(self) -> Box<dyn RoutingEngine> {
        match self {
            EngineKind::MinHop => Box::new(crate::minhop::MinHop),
            EngineKind::UpDn => Box::new(crate::updn::UpDn::default()),
            EngineKind::DnUp => Box::new(crate::updn::UpDn { reverse: true }),
            EngineKind::FatTree => Box::new(crate::ftree::FatTree),
            EngineKind::Dor => Box::new(crate::dor::Dor),
            EngineKind::Lash => Box::new(crate::layered::Lash),
            EngineKind::Dfsssp => Box::new(crate::layered::Dfsssp),
        }
    }

    /// Whether [`RoutingEngine::reroute`] of this engine keeps still-legal entries
    /// (minhop, updn, dnup, ftree); the others recompute from scratch when asked to
    /// re-route.
    #[must_use]
    pub fn incremental_reroute(self) -> bool {
        matches!(
            self,
            EngineKind::MinHop | EngineKind::UpDn | EngineKind::DnUp | EngineKind::FatTree
        )
    }

    /// Whether the engine's routes are deadlock-free on any topology it accepts (ftree's
    /// only without [`RouteOptions::max_reverse_hops`]).
    #[must_use]
    pub fn deadlock_free(self) -> bool {
        !matches!(self, EngineKind::MinHop)
    }
}

/// Runs `primary`, then each engine of `opts.fallback` in turn until one succeeds. The
/// returned [`Routes::engine`] names the engine that produced them; if all fail the error
/// lists every failure.
///
/// # Errors
/// [`RoutingError::AllFailed`] when a fallback chain is given and every engine failed;
/// the primary engine's own error when there is no chain.
pub fn route_with_fallback(
    primary: &dyn RoutingEngine,
    csr: &Csr,
    lids: &LidAssignment,
    opts: &RouteOptions,
) -> Result<Routes> {
    let first = match primary.route(csr, lids, opts) {
        Ok(r) => return Ok(r),
        Err(e) if opts.fallback.is_empty() => return Err(e),
        Err(e) => e,
    };
    let mut failures = vec![(primary.name().to_string(), first)];
    for k in &opts.fallback {
        let eng = k.engine();
        match eng.route(csr, lids, opts) {
            Ok(r) => return Ok(r),
            Err(e) => failures.push((k.name().to_string(), e)),
        }
    }
    Err(RoutingError::AllFailed(failures))
}

/// Turns a [`crate::balance::RouteStats`] into the engine's answer.
pub(crate) fn check_reach(
    st: crate::balance::RouteStats,
    opts: &RouteOptions,
    why: &str,
) -> Result<()> {
    if let Some((switch, lid)) = st.escape_traffic {
        return Err(RoutingError::Disconnected {
            switch,
            lid,
            why: format!(" with up/down paths{why}"),
        });
    }
    match st.unreachable {
        Some((switch, lid)) if !opts.allow_unreachable => Err(RoutingError::Disconnected {
            switch,
            lid,
            why: why.to_string(),
        }),
        _ => Ok(()),
    }
}
