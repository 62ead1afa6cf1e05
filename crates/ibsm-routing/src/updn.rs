//! `updn` / `dnup`: Up*/Down* routing with root detection.

use ibsm_topology::Csr;

use crate::inputs::Uses;

use crate::balance::{NoPref, Rule, route_all};
use crate::engine::{RouteOptions, RoutingEngine, check_reach};
use crate::error::Result;
use crate::lids::LidAssignment;
use crate::net::{INF, Net};
use crate::routes::Routes;

/// Up*/Down* (and, with `reverse`, Down*/Up*): switches are ranked by distance from the
/// roots; a path may climb towards the roots and then only descend, which keeps the
/// channel dependency graph acyclic on any topology with one VL. Among legal shortest
/// next hops the choice is balanced like `minhop`.
///
/// Roots: [`RouteOptions::roots`] when given; otherwise, when the fabric is layered like a fat
/// tree (switches with CAs at the bottom, links only between adjacent layers) the top
/// layer, else one central switch found by a double BFS sweep.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpDn {
    /// Down*/Up* instead of Up*/Down*.
    pub reverse: bool,
}

/// Ranks from the leaves (switches with terminals) and whether every link joins adjacent
/// ranks.
pub(crate) fn leaf_ranks(net: &Net) -> (Vec<u16>, bool) {
    let leaves: Vec<u32> = (0..net.n_sw)
        .filter(|&s| net.n_sources(s) > 0 || !net.terms_of(s).is_empty())
        .map(|s| s as u32)
        .collect();
    let rank = net.levels_from(&leaves);
    let layered = !leaves.is_empty()
        && (0..net.n_arcs()).all(|a| {
            let (s, x) = (net.asrc[a] as usize, net.adst[a] as usize);
            rank[s] != INF && rank[x] != INF && rank[s].abs_diff(rank[x]) == 1
        });
    (rank, layered)
}

/// Root switch indices: the user's ([`Net::roots`]) or detected.
pub(crate) fn find_roots(net: &Net, reverse: bool) -> Result<Vec<u32>> {
    if !net.roots.is_empty() {
        return Ok(net.roots.clone());
    }
    if net.n_sw == 0 {
        return Ok(Vec::new());
    }
    let (rank, layered) = leaf_ranks(net);
    if layered {
        // Down*/Up* on a layered fabric takes the leaves as roots, so that its legal paths
        // are again the minimal leaf -> top -> leaf ones.
        let top = if reverse {
            0
        } else {
            rank.iter().copied().max().unwrap_or(0)
        };
        return Ok((0..net.n_sw as u32)
            .filter(|&s| rank[s as usize] == top)
            .collect());
    }
    Ok(vec![center(net)])
}

/// Double sweep: the middle of a long shortest path approximates the centre.
fn center(net: &Net) -> u32 {
    let mut dist = vec![INF; net.n_sw];
    let mut q = Vec::new();
    net.bfs(0, &mut dist, &mut q);
    let far = |dist: &[u16]| {
        (0..dist.len())
            .filter(|&s| dist[s] != INF)
            .max_by_key(|&s| (dist[s], std::cmp::Reverse(s)))
            .unwrap_or(0)
    };
    let b = far(&dist);
    net.bfs(b, &mut dist, &mut q);
    let c = far(&dist);
    let half = dist[c] / 2;
    // Walk back from c towards b to the middle.
    let mut cur = c;
    while dist[cur] > half {
        let next = net
            .arcs(cur)
            .map(|a| net.adst[a] as usize)
            .find(|&x| dist[x] + 1 == dist[cur]);
        match next {
            Some(x) => cur = x,
            None => break,
        }
    }
    cur as u32
}

/// Total order of switches by (distance from roots, index); `reverse` flips it.
pub(crate) fn order_from_roots(net: &Net, roots: &[u32], reverse: bool) -> (Vec<u32>, Vec<u32>) {
    let rank = net.levels_from(roots);
    order_by_rank(&rank, reverse)
}

/// `(pos, by_pos)` from a rank (lower rank = nearer the roots).
pub(crate) fn order_by_rank(rank: &[u16], reverse: bool) -> (Vec<u32>, Vec<u32>) {
    let mut by_pos: Vec<u32> = (0..rank.len() as u32).collect();
    by_pos.sort_by_key(|&s| (rank[s as usize], s));
    if reverse {
        by_pos.reverse();
    }
    let mut pos = vec![0u32; rank.len()];
    for (i, &s) in by_pos.iter().enumerate() {
        pos[s as usize] = i as u32;
    }
    (pos, by_pos)
}

pub(crate) fn updn_net(net: &Net, opts: &RouteOptions, reverse: bool) -> Result<Routes> {
    let roots = find_roots(net, reverse)?;
    let name = if reverse { "dnup" } else { "updn" };
    let run = |roots: &[u32]| {
        let (pos, by_pos) = order_from_roots(net, roots, reverse);
        let mut r = Routes::new_filled_by(name, net.n_sw, net.lft_len, opts.threads);
        let rule = Rule::UpDown {
            pos: &pos,
            by_pos: &by_pos,
        };
        let st = route_all(net, rule, opts.threads, &mut r.lfts, &NoPref);
        (r, st, pos)
    };
    let (mut r, mut st, mut pos) = run(&roots);
    if st.escape_traffic.is_some() && net.roots.is_empty() && roots.len() > 1 {
        // The detected top layer of a degraded tree leaves some CA pair without an
        // up/down path; one root makes every pair reachable (climb to it, descend its
        // BFS tree), at some cost in path length.
        (r, st, pos) = run(&[center(net)]);
    }
    check_reach(st, opts, "")?;
    r.updown_pos = Some(pos);
    Ok(r)
}

impl RoutingEngine for UpDn {
    fn name(&self) -> &str {
        if self.reverse { "dnup" } else { "updn" }
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Result<Routes> {
        updn_net(
            &crate::inputs::net(csr, lids, opts, Uses::ROOTS_ORDER)?,
            opts,
            self.reverse,
        )
    }

    fn reroute(
        &self,
        csr: &Csr,
        lids: &LidAssignment,
        opts: &RouteOptions,
        previous: &Routes,
    ) -> Result<Routes> {
        let net = crate::inputs::net(csr, lids, opts, Uses::ROOTS_ORDER)?;
        let roots = find_roots(&net, self.reverse)?;
        let (pos, by_pos) = order_from_roots(&net, &roots, self.reverse);
        let rule = Rule::UpDown {
            pos: &pos,
            by_pos: &by_pos,
        };
        crate::reroute::reroute_net(&net, rule, opts, previous, self.name())
    }
}
