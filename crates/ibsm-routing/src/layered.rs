//! Deadlock freedom by layering: `lash` and `dfsssp`.
//!
//! Both route balanced shortest paths and put every (source switch, LID) path on a
//! *layer* (an SL, mapped 1:1 to a VL) so that each layer's channel dependency graph stays
//! acyclic. Acyclicity is kept incrementally with a dynamic topological order of the
//! channels per layer: adding a dependency that agrees with the order costs O(1); one that
//! does not searches backwards from its tail for what must move (finding its head means a
//! cycle: the unit is rolled back, and that dependency is never searched again on that
//! layer) and moves that set, in its order, to just before the head. The order is a
//! linked list with spaced labels, so a move costs the size of that set, not the distance
//! between head and tail (labels are respread when a gap runs out). Removing
//! dependencies never invalidates a topological order.
//!
//! If the balanced paths are already acyclic on one layer (any fat tree, any mesh) that is
//! the result. Otherwise the paths adapt to the layers instead of being fixed first: every
//! LID's tree of shortest paths is rebuilt nearest switch first, and each switch picks,
//! among its shortest next hops, the one whose path it can join on the lowest layer (the
//! balanced hop wins ties); see `Placement`. On an 8x8x4 torus that needs 4 layers
//! where layering fixed paths first fit needed 7 (6x5: 2 instead of 3; Jellyfish 40
//! switches: 3 instead of 4; dragonfly: 2 instead of 3).
//!
//! * `dfsssp` prefers, among equal-cost hops, climbing towards a central root, so most
//!   paths have an up*/down* shape (fat trees need one layer). It computes those balanced
//!   routes one destination switch at a time right before placing it (`UpFirst`), so the
//!   placement shares its BFS and reads its hops from small buffers.
//! * `lash` takes minhop's balanced paths and afterwards balances the paths over the
//!   layers it opened. On a mesh it takes the dimension-order paths (one layer). On a
//!   torus a constant layer per path needs 3 to 7 layers on small tori, so there the
//!   layer is chosen per dimension (the dateline classes of `dor`, switched by the
//!   SL-to-VL tables as the path turns): 2 VLs on any torus, with DOR's half-way ties
//!   split both ways.

mod dfsssp;
mod lash;
mod layering;
mod placement;
#[cfg(test)]
mod tests;
mod upfirst;

pub use dfsssp::Dfsssp;
pub use lash::Lash;

/// Routes `net` with DFSSSP (`dfsssp`) or LASH, named `name` in the result: both engines
/// behind one call for the crate's tests.
#[cfg(test)]
pub(crate) fn layered(
    net: &crate::net::Net,
    opts: &crate::engine::RouteOptions,
    name: &str,
    dfsssp: bool,
) -> crate::error::Result<crate::routes::Routes> {
    if dfsssp {
        dfsssp::routes(net, opts)
    } else {
        lash::routes(net, opts, name)
    }
}
