//! DFSSSP: up-first balanced shortest paths, on one layer when they fit, else placed.

use ibsm_topology::Csr;

use super::layering::{Layering, OneLayer};
use super::placement::{Column, Placement};
use super::upfirst::UpFirst;
use crate::engine::{RouteOptions, RoutingEngine};
use crate::error::{Result, RoutingError};
use crate::lids::LidAssignment;
use crate::net::Net;
use crate::routes::Routes;

/// Deadlock-free single-source shortest paths (DFSSSP).
#[derive(Clone, Copy, Debug, Default)]
pub struct Dfsssp;

impl RoutingEngine for Dfsssp {
    fn name(&self) -> &str {
        "dfsssp"
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Result<Routes> {
        let uses = crate::inputs::Uses::ROOTS_ORDER;
        routes(&crate::inputs::net(csr, lids, opts, uses)?, opts)
    }
}

/// DFSSSP: balanced shortest paths that, among equal-cost next hops, prefer climbing
/// towards a central root (most paths then follow an up*/down* shape, so few dependency
/// cycles remain for the layering to break), on one layer when they fit there (fat trees,
/// meshes), else placed on layers by [`Placement`].
///
/// Both run destination switch by destination switch: the balanced routes of one
/// destination are computed right before its placement, which shares their BFS and
/// reads their hops from small buffers. Whether one layer is enough is found on the way:
/// the balanced routes' dependencies are collected until a cycle shows. On a torus that
/// is at the first look (64 LIDs): the destinations routed so far were kept and are
/// placed, and the balanced pass goes on beside the placement. A cycle found later starts
/// the pass again (it is deterministic: the same balanced routes) with the placement.
pub(super) fn routes(net: &Net, opts: &RouteOptions) -> Result<Routes> {
    let n = net.n_sw;
    let roots = crate::updn::find_roots(net, false)?;
    let (pos, _) = crate::updn::order_from_roots(net, &roots, false);
    if !opts.allow_unreachable {
        unreachable(net)?;
    }
    let mut r = Routes::new("dfsssp", n, net.lft_len);
    let mut lids = Vec::new();
    let mut pass = UpFirst::new(net, &pos);
    let mut chk = OneLayer::new(net);
    // The destinations routed before the first look for a cycle (hops, distances, BFS
    // order): when that look finds one, they are placed from here and the balanced pass
    // goes on where it stopped.
    let mut early: Vec<Routed> = Vec::new();
    let mut first_look = true;
    let (mut routed, mut cyclic) = (0, false);
    for i in 0..n {
        let t = net.dest(i);
        routed = i + 1;
        net.lids_on(t, &mut lids);
        if lids.is_empty() {
            continue;
        }
        pass.route(t, &lids, &mut r.lfts);
        pass.deps(t, lids.len(), &mut chk);
        if first_look {
            early.push(Routed {
                t,
                hop: pass.hop.clone(),
                dist: pass.dist.clone(),
                queue: pass.queue.clone(),
            });
        }
        if chk.due(lids.len()) {
            if !chk.acyclic() {
                cyclic = true;
                break;
            }
            first_look = false;
            early = Vec::new();
        }
    }
    if !cyclic && chk.acyclic() {
        // Already acyclic on one layer (any fat tree, any mesh): the fewest layers.
        return Ok(r);
    }
    let from = if first_look {
        routed
    } else {
        // A later look found the cycle: route again from the start (the same balanced
        // routes), this time placing each destination right after.
        pass = UpFirst::new(net, &pos);
        0
    };
    let max = usize::from(opts.max_vls.clamp(1, 15));
    let mut lay = Layering::new(net, Some(&pos));
    lay.open();
    let mut place = Placement::new(net);
    for e in &early {
        net.lids_on(e.t, &mut lids);
        let col = Column {
            t: e.t,
            lids: &lids,
            dist: &e.dist,
            queue: &e.queue,
            bal: &e.hop,
            down: None,
        };
        place.dest(net, &mut r.lfts, &mut lay, max, &col)?;
    }
    for i in from..n {
        let t = net.dest(i);
        net.lids_on(t, &mut lids);
        if lids.is_empty() {
            continue;
        }
        pass.route(t, &lids, &mut r.lfts);
        let col = Column {
            t,
            lids: &lids,
            dist: &pass.dist,
            queue: &pass.queue,
            bal: &pass.hop,
            down: pass.down(),
        };
        place.dest(net, &mut r.lfts, &mut lay, max, &col)?;
    }
    r.vls = lay.layers.len() as u8;
    r.sl = Some(place.sl);
    Ok(r)
}

/// One destination's balanced routes kept for a later placement ([`UpFirst`]'s state).
pub(super) struct Routed {
    t: usize,
    hop: Vec<u32>,
    dist: Vec<u16>,
    queue: Vec<u32>,
}

/// The error for a disconnected fabric: the first destination switch with LIDs (in switch
/// order) that some switch cannot reach, and the first such switch.
pub(super) fn unreachable(net: &Net) -> Result<()> {
    let n = net.n_sw;
    let (mut dist, mut queue) = (vec![0u16; n], Vec::new());
    if n == 0 || net.lft_len == 0 {
        return Ok(());
    }
    net.bfs(0, &mut dist, &mut queue);
    if queue.len() == n {
        return Ok(());
    }
    let mut lids = Vec::new();
    for t in 0..n {
        net.lids_on(t, &mut lids);
        if lids.is_empty() {
            continue;
        }
        net.bfs(t, &mut dist, &mut queue);
        if let Some(s) = dist.iter().position(|&d| d == crate::net::INF) {
            return Err(RoutingError::Disconnected {
                switch: s,
                lid: lids[0].0,
                why: String::new(),
            });
        }
    }
    Ok(())
}
