//! Route quality metrics, independent of the engine: edge forwarding index (link load) for
//! all-to-all CA traffic, path stretch, per-port LID balance, shift-permutation congestion
//! and effective bisection bandwidth (eBB, estimated as ORCS does).
//!
//! Link loads count flows on switch-to-switch links only (CA links carry the same load
//! under every engine). Each CA port is one endpoint and uses its base LID.

use ibsm_topology::Csr;
use ibsm_topology::generate::SplitMix64;

use crate::error::{Result, RoutingError};
use crate::lids::LidAssignment;
use crate::net::{INF, NONE, Net};
use crate::routes::Routes;
use crate::validate::arc_of;

/// All-to-all CA traffic over the routes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AllToAll {
    /// Highest number of (source, destination) flows on one switch-to-switch link direction.
    pub max_load: u64,
    /// Mean over link directions that carry at least one flow.
    pub mean_load: f64,
    /// Link directions carrying at least one flow.
    pub used_links: usize,
    /// Link directions in the fabric.
    pub links: usize,
    /// (source CA, destination CA) pairs considered.
    pub pairs: u64,
    /// Fraction of pairs whose path is a shortest path (in switch hops).
    pub minimal_fraction: f64,
    /// Mean of path length / shortest length over pairs on different switches.
    pub mean_stretch: f64,
    /// Largest path length / shortest length.
    pub max_stretch: f64,
}

impl AllToAll {
    /// Max / mean link load over used links (1.0 = perfectly even).
    #[must_use]
    pub fn imbalance(&self) -> f64 {
        if self.mean_load == 0.0 {
            1.0
        } else {
            self.max_load as f64 / self.mean_load
        }
    }
}

fn bad(e: impl std::fmt::Display) -> RoutingError {
    RoutingError::InvalidInput(format!("routes unusable for metrics: {e}"))
}

/// Per-switch in-tree walk towards `lid`: fills `depth` (switch hops to the destination
/// switch, `NONE` if no route) and returns switches sorted farthest first.
fn in_tree(
    net: &Net,
    routes: &Routes,
    lid: usize,
    t: usize,
    depth: &mut [u32],
    stack: &mut Vec<usize>,
) -> Result<Vec<u32>> {
    const ONSTACK: u32 = NONE - 1;
    const DEAD: u32 = NONE - 2;
    depth.fill(NONE);
    depth[t] = 0;
    for s0 in 0..net.n_sw {
        let mut s = s0;
        stack.clear();
        let mut dead = false;
        while depth[s] == NONE {
            depth[s] = ONSTACK;
            stack.push(s);
            let a = arc_of(net, s, routes.lft(s)[lid]);
            if a == NONE {
                dead = true;
                break;
            }
            s = net.adst[a as usize] as usize;
        }
        if !dead && depth[s] == ONSTACK {
            return Err(bad(format!("loop towards LID {lid}")));
        }
        let mut d = if dead || depth[s] == DEAD {
            DEAD
        } else {
            depth[s]
        };
        while let Some(x) = stack.pop() {
            if d != DEAD {
                d += 1;
            }
            depth[x] = d;
        }
    }
    for d in depth.iter_mut() {
        if *d == DEAD {
            *d = NONE;
        }
    }
    let mut order: Vec<u32> = (0..net.n_sw as u32)
        .filter(|&s| depth[s as usize] != NONE && depth[s as usize] > 0)
        .collect();
    order.sort_by_key(|&s| std::cmp::Reverse(depth[s as usize]));
    Ok(order)
}

/// All-to-all link loads and stretch for CA traffic.
///
/// # Errors
/// Inconsistent snapshot/assignment, or routes that loop.
pub fn all_to_all(csr: &Csr, lids: &LidAssignment, routes: &Routes) -> Result<AllToAll> {
    let net = lids.net(csr)?;
    let (load, mut q) = loads_net(&net, routes)?;
    q.links = net.n_arcs();
    let used: Vec<u64> = load.iter().copied().filter(|&x| x > 0).collect();
    q.used_links = used.len();
    q.max_load = used.iter().copied().max().unwrap_or(0);
    q.mean_load = if used.is_empty() {
        0.0
    } else {
        used.iter().sum::<u64>() as f64 / used.len() as f64
    };
    Ok(q)
}

/// Per-arc all-to-all loads plus stretch figures.
pub(crate) fn loads_net(net: &Net, routes: &Routes) -> Result<(Vec<u64>, AllToAll)> {
    let mut load = vec![0u64; net.n_arcs()];
    let mut q = AllToAll::default();
    let mut depth = vec![NONE; net.n_sw];
    let mut stack = Vec::new();
    let mut flow = vec![0u64; net.n_sw];
    let mut dist = vec![INF; net.n_sw];
    let mut bq = Vec::new();
    let mut last_t = usize::MAX;
    let total_src: u64 = (0..net.n_sw).map(|s| u64::from(net.n_sources(s))).sum();
    let (mut minimal, mut far_pairs, mut stretch_sum) = (0u64, 0u64, 0f64);
    for t in &net.terms {
        if t.base == 0 {
            continue;
        }
        let lid = usize::from(t.base);
        let ts = t.sw as usize;
        if ts != last_t {
            net.bfs(ts, &mut dist, &mut bq);
            last_t = ts;
        }
        let order = in_tree(net, routes, lid, ts, &mut depth, &mut stack)?;
        q.pairs += total_src - 1;
        minimal += u64::from(net.n_sources(ts)) - 1;
        for &s in &order {
            let s = s as usize;
            flow[s] = u64::from(net.n_sources(s));
        }
        for &s in &order {
            let s = s as usize;
            let f = flow[s];
            let a = arc_of(net, s, routes.lft(s)[lid]) as usize;
            load[a] += f;
            flow[net.adst[a] as usize] += f;
            let n = u64::from(net.n_sources(s));
            if n > 0 {
                let (d, best) = (depth[s], dist[s]);
                if u32::from(best) == d {
                    minimal += n;
                }
                let st = f64::from(d) / f64::from(best.max(1));
                stretch_sum += st * n as f64;
                far_pairs += n;
                q.max_stretch = q.max_stretch.max(st);
            }
        }
        for (s, &d) in depth.iter().enumerate() {
            if d == NONE && net.n_sources(s) > 0 && s != ts {
                return Err(bad(format!("switch #{s} has no route to LID {lid}")));
            }
        }
    }
    q.minimal_fraction = if q.pairs == 0 {
        1.0
    } else {
        minimal as f64 / q.pairs as f64
    };
    q.mean_stretch = if far_pairs == 0 {
        1.0
    } else {
        stretch_sum / far_pairs as f64
    };
    if q.max_stretch == 0.0 {
        q.max_stretch = 1.0;
    }
    Ok((load, q))
}

/// How evenly LIDs are spread over the switch-to-switch ports of each switch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LidBalance {
    /// Worst switch: max LIDs on one port / mean LIDs per used port.
    pub worst_ratio: f64,
    /// Mean of that ratio over switches with at least two used ports.
    pub mean_ratio: f64,
}

/// Per-port LID balance over switch-to-switch ports that carry any LID.
///
/// # Errors
/// Inconsistent snapshot/assignment.
pub fn lid_balance(csr: &Csr, lids: &LidAssignment, routes: &Routes) -> Result<LidBalance> {
    let net = lids.net(csr)?;
    let mut out = LidBalance::default();
    let mut ratios = PortRatios::default();
    let mut cnt = Vec::new();
    for s in 0..net.n_sw {
        cnt.clear();
        cnt.resize(usize::from(net.nports[s]) + 1, 0u32);
        for &p in routes.lft(s) {
            if usize::from(p) < cnt.len() && arc_of(&net, s, p) != NONE {
                cnt[usize::from(p)] += 1;
            }
        }
        ratios.add(&cnt);
    }
    (out.worst_ratio, out.mean_ratio) = ratios.finish();
    Ok(out)
}

/// Max / mean count per used port, over switches with at least two used ports: the worst
/// ratio and the mean one.
#[derive(Default)]
struct PortRatios {
    worst: f64,
    sum: f64,
    n: usize,
}

impl PortRatios {
    /// One switch's counts per port (zeros: unused ports, left out).
    fn add(&mut self, counts: &[u32]) {
        let (mut used, mut sum, mut max) = (0u32, 0f64, 0u32);
        for &c in counts.iter().filter(|&&c| c > 0) {
            used += 1;
            sum += f64::from(c);
            max = max.max(c);
        }
        if used < 2 {
            return;
        }
        let r = f64::from(max) / (sum / f64::from(used));
        self.worst = self.worst.max(r);
        self.sum += r;
        self.n += 1;
    }

    /// (worst, mean); zeros when no switch had two used ports.
    fn finish(&self) -> (f64, f64) {
        let mean = if self.n > 0 {
            self.sum / self.n as f64
        } else {
            0.0
        };
        (self.worst, mean)
    }
}

/// How evenly the switches' own LIDs (management traffic to port 0) are spread over the
/// switch-to-switch ports of each switch. CA LIDs are left out: they are balanced by
/// traffic, these by count.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SwitchLidBalance {
    /// Largest spread (most minus fewest switch LIDs) among the ports of one switch that
    /// lead to the same rank (hops from the nearest switch with CAs): on a fat tree, among
    /// one switch's up ports or among its down ports, which are interchangeable.
    pub max_spread: u32,
    /// Worst switch: most switch LIDs on one port / mean per used port.
    pub worst_ratio: f64,
    /// Mean of that ratio over switches with at least two used ports.
    pub mean_ratio: f64,
}

/// Per-port balance of switch-LID destinations; see [`SwitchLidBalance`].
///
/// # Errors
/// Inconsistent snapshot/assignment.
pub fn switch_lid_balance(
    csr: &Csr,
    lids: &LidAssignment,
    routes: &Routes,
) -> Result<SwitchLidBalance> {
    let net = lids.net(csr)?;
    let (rank, _) = crate::updn::leaf_ranks(&net);
    let sw_lids: Vec<usize> = net
        .sw_lid
        .iter()
        .filter(|&&l| l != 0 && usize::from(l) < routes.lft_len())
        .map(|&l| usize::from(l))
        .collect();
    let mut out = SwitchLidBalance::default();
    let mut ratios = PortRatios::default();
    let mut cnt = vec![0u32; net.n_arcs()];
    for s in 0..net.n_sw {
        let row = routes.lft(s);
        for &l in &sw_lids {
            let a = arc_of(&net, s, row[l]);
            if a != NONE {
                cnt[a as usize] += 1;
            }
        }
        let arcs = net.arcs(s);
        // Spread within each class of ports (same neighbour rank).
        for a in arcs.clone() {
            let r = rank[net.adst[a] as usize];
            let (mut lo, mut hi) = (u32::MAX, 0u32);
            for b in arcs.clone() {
                if rank[net.adst[b] as usize] == r {
                    lo = lo.min(cnt[b]);
                    hi = hi.max(cnt[b]);
                }
            }
            out.max_spread = out.max_spread.max(hi - lo);
        }
        ratios.add(&cnt[arcs]);
    }
    (out.worst_ratio, out.mean_ratio) = ratios.finish();
    Ok(out)
}

/// How the 2^LMC LIDs of each CA port spread over paths.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LmcDiversity {
    /// (switch, CA port with LMC > 0) pairs, the CA on another switch, where the switch has
    /// at least two shortest next hops towards the CA's switch.
    pub choice_pairs: u64,
    /// Of those, pairs whose sibling LIDs leave through as many different ports as they
    /// can: min(2^LMC, shortest next hops).
    pub distinct_first_hops: u64,
    /// Of the `choice_pairs` whose switch has CAs (traffic sources), the number ...
    pub source_pairs: u64,
    /// ... whose 2^LMC paths share no switch-to-switch link.
    pub disjoint_paths: u64,
}

impl LmcDiversity {
    /// `distinct_first_hops / choice_pairs` (1.0 when there is no choice anywhere).
    #[must_use]
    pub fn first_hop_fraction(&self) -> f64 {
        if self.choice_pairs == 0 {
            1.0
        } else {
            self.distinct_first_hops as f64 / self.choice_pairs as f64
        }
    }

    /// `disjoint_paths / source_pairs` (1.0 when there is no choice anywhere).
    #[must_use]
    pub fn disjoint_fraction(&self) -> f64 {
        if self.source_pairs == 0 {
            1.0
        } else {
            self.disjoint_paths as f64 / self.source_pairs as f64
        }
    }
}

/// Whether the LMC siblings of each CA port take different paths where the topology
/// offers a choice (shortest next hops, whatever the engine's own rule allows).
///
/// # Errors
/// Inconsistent snapshot/assignment, or routes that do not deliver.
pub fn lmc_diversity(csr: &Csr, lids: &LidAssignment, routes: &Routes) -> Result<LmcDiversity> {
    let net = lids.net(csr)?;
    let mut out = LmcDiversity::default();
    let mut dist = vec![INF; net.n_sw];
    let mut q = Vec::new();
    let mut seen = [false; 256];
    let mut path = Vec::new();
    let mut arcs: Vec<u32> = Vec::new();
    for t in 0..net.n_sw {
        let terms: Vec<_> = net
            .terms_of(t)
            .iter()
            .map(|&i| net.terms[i as usize])
            .filter(|x| x.base != 0 && x.lmc > 0)
            .collect();
        if terms.is_empty() {
            continue;
        }
        net.bfs(t, &mut dist, &mut q);
        for s in 0..net.n_sw {
            if s == t || dist[s] == INF {
                continue;
            }
            let choices = net
                .arcs(s)
                .filter(|&a| dist[net.adst[a] as usize] + 1 == dist[s])
                .count();
            if choices < 2 {
                continue;
            }
            let row = routes.lft(s);
            for x in &terms {
                let n = 1usize << x.lmc;
                let base = usize::from(x.base);
                seen.fill(false);
                let mut distinct = 0usize;
                for &p in &row[base..base + n] {
                    if !seen[usize::from(p)] {
                        seen[usize::from(p)] = true;
                        distinct += 1;
                    }
                }
                out.choice_pairs += 1;
                if distinct >= n.min(choices) {
                    out.distinct_first_hops += 1;
                }
                if net.n_sources(s) > 0 {
                    out.source_pairs += 1;
                    arcs.clear();
                    for lid in base..base + n {
                        path_arcs(&net, routes, s, lid, &mut path)?;
                        arcs.extend_from_slice(&path);
                    }
                    let len = arcs.len();
                    arcs.sort_unstable();
                    arcs.dedup();
                    if arcs.len() == len {
                        out.disjoint_paths += 1;
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Follows the LFTs from switch `s` to `lid`, pushing the arcs used.
fn path_arcs(
    net: &Net,
    routes: &Routes,
    mut s: usize,
    lid: usize,
    out: &mut Vec<u32>,
) -> Result<()> {
    out.clear();
    let t = net.dest_switch(lid).map_or(usize::MAX, |x| x.0 as usize);
    while s != t {
        let a = arc_of(net, s, routes.lft(s)[lid]);
        if a == NONE || out.len() > net.n_sw {
            return Err(bad(format!(
                "no loop-free route from switch #{s} to LID {lid}"
            )));
        }
        out.push(a);
        s = net.adst[a as usize] as usize;
    }
    Ok(())
}

/// CA endpoints in snapshot order: (switch, base LID).
fn endpoints(net: &Net) -> Vec<(usize, usize)> {
    (0..net.n_sw)
        .flat_map(|s| {
            net.terms_of(s)
                .iter()
                .map(|&t| net.terms[t as usize])
                .filter(|t| t.base != 0)
                .map(|t| (t.sw as usize, usize::from(t.base)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// For each shift `k` in `shifts`: the largest number of flows sharing one link when CA
/// `i` sends to CA `(i + k) mod N` (CAs in snapshot order). 1 means contention-free.
///
/// # Errors
/// Inconsistent snapshot/assignment, or routes that do not deliver.
pub fn shift_max_loads(
    csr: &Csr,
    lids: &LidAssignment,
    routes: &Routes,
    shifts: impl IntoIterator<Item = usize>,
) -> Result<Vec<u32>> {
    let net = lids.net(csr)?;
    let eps = endpoints(&net);
    let n = eps.len();
    let mut out = Vec::new();
    let mut load = vec![0u32; net.n_arcs()];
    let mut path = Vec::new();
    for k in shifts {
        load.fill(0);
        for i in 0..n {
            let (s, _) = eps[i];
            let (_, dl) = eps[(i + k) % n.max(1)];
            path_arcs(&net, routes, s, dl, &mut path)?;
            for &a in &path {
                load[a as usize] += 1;
            }
        }
        out.push(load.iter().copied().max().unwrap_or(0));
    }
    Ok(out)
}

/// Effective bisection bandwidth as ORCS estimates it: `samples` random bisections of the
/// CAs, each half paired one-to-one with the other and both directions sending; a flow
/// gets `1 / (most flows sharing a link on its path)`; the result is the mean flow
/// bandwidth (1.0 = full bisection bandwidth). Deterministic for a given `seed`.
///
/// # Errors
/// Inconsistent snapshot/assignment, or routes that do not deliver.
pub fn effective_bisection_bandwidth(
    csr: &Csr,
    lids: &LidAssignment,
    routes: &Routes,
    samples: usize,
    seed: u64,
) -> Result<f64> {
    let net = lids.net(csr)?;
    let eps = endpoints(&net);
    let n = eps.len() / 2 * 2;
    if n == 0 {
        return Ok(1.0);
    }
    let mut rng = SplitMix64::new(seed);
    let mut perm: Vec<usize> = (0..eps.len()).collect();
    let mut load = vec![0u32; net.n_arcs()];
    let mut paths: Vec<Vec<u32>> = vec![Vec::new(); n];
    let (mut sum, mut flows) = (0f64, 0usize);
    for _ in 0..samples.max(1) {
        rng.shuffle(&mut perm);
        load.fill(0);
        for i in 0..n {
            // Pair i with its partner in the other half.
            let j = if i < n / 2 { i + n / 2 } else { i - n / 2 };
            let (s, _) = eps[perm[i]];
            let (_, dl) = eps[perm[j]];
            path_arcs(&net, routes, s, dl, &mut paths[i])?;
            for &a in &paths[i] {
                load[a as usize] += 1;
            }
        }
        for p in &paths {
            let worst = p
                .iter()
                .map(|&a| load[a as usize])
                .max()
                .unwrap_or(1)
                .max(1);
            sum += 1.0 / f64::from(worst);
            flows += 1;
        }
    }
    Ok(sum / flows as f64)
}

#[cfg(test)]
mod tests {
    //! Every metric on fabrics of a handful of switches with hand-written LFTs, the
    //! expected figures worked out by hand in the comments.
    use ibsm_topology::{Csr, Fabric, NodeSpec};

    use super::*;
    use crate::routes::NO_ROUTE;

    const NR: u8 = NO_ROUTE;

    /// Switch `i` (snapshot index `i`, LID `i + 1` under `sequential`) has `ports[i]`
    /// ports; `links` cables `(switch a, port, switch b, port)`; each `(switch, port)` of
    /// `cas` gets a one-port CA. Terminals are numbered by switch, then port, so with
    /// `sequential` the CA LIDs follow the switch LIDs in that order.
    fn fabric(ports: &[u8], links: &[(usize, u8, usize, u8)], cas: &[(usize, u8)]) -> Csr {
        let mut f = Fabric::new();
        let sw: Vec<_> = ports
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                f.add_node(NodeSpec::switch(0x100 + i as u64, n, format!("sw{i}")))
                    .unwrap()
            })
            .collect();
        for &(a, pa, b, pb) in links {
            f.connect(sw[a], pa, sw[b], pb).unwrap();
        }
        for (i, &(s, p)) in cas.iter().enumerate() {
            let ca = f
                .add_node(NodeSpec::ca(0x1000 + 0x10 * i as u64, 1, format!("ca{i}")))
                .unwrap();
            f.connect(ca, 1, sw[s], p).unwrap();
        }
        Csr::new(&f)
    }

    /// Routes from one literal LFT row per switch.
    fn routes(rows: &[&[u8]]) -> Routes {
        let mut r = Routes::new("hand", rows.len(), rows[0].len());
        for (s, row) in rows.iter().enumerate() {
            r.lft_mut(s).copy_from_slice(row);
        }
        r
    }

    #[track_caller]
    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
    }

    /// A 3-ring S0-S1-S2 with CAs a0, a1 on S0 and b on S1, c on S2.
    /// Ports: S0 p1-S1 p2, S1 p1-S2 p2, S2 p1-S0 p2; CAs on p3 (and p4 of S0).
    /// LIDs: S0 1, S1 2, S2 3, a0 4, a1 5, b 6, c 7.
    fn ring3() -> (Csr, LidAssignment) {
        let csr = fabric(
            &[4, 3, 3],
            &[(0, 1, 1, 2), (1, 1, 2, 2), (2, 1, 0, 2)],
            &[(0, 3), (0, 4), (1, 3), (2, 3)],
        );
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        (csr, lids)
    }

    /// Shortest routes on `ring3` except that S0 sends c (LID 7) the long way, by S1.
    fn ring3_detour() -> Routes {
        routes(&[
            &[NR, 0, 1, 2, 3, 4, 1, 1],
            &[NR, 2, 0, 1, 2, 2, 3, 1],
            &[NR, 1, 2, 0, 1, 1, 2, 3],
        ])
    }

    #[test]
    fn all_to_all_counts_loads_minimal_pairs_and_stretch() {
        let (csr, lids) = ring3();
        let q = all_to_all(&csr, &lids, &ring3_detour()).unwrap();
        // Flows per switch-to-switch arc (a0, a1 both on S0):
        //   S0->S1: a0->b, a1->b, a0->c, a1->c         = 4
        //   S1->S2: a0->c, a1->c, b->c                 = 3
        //   S1->S0: b->a0, b->a1                       = 2
        //   S2->S0: c->a0, c->a1                       = 2
        //   S2->S1: c->b                               = 1
        //   S0->S2: (c goes round by S1)               = 0
        // 5 of 6 arcs used, 12 flows in all: mean 12 / 5 = 2.4, imbalance 4 / 2.4.
        assert_eq!(q.max_load, 4);
        close(q.mean_load, 2.4);
        assert_eq!(q.used_links, 5);
        assert_eq!(q.links, 6);
        close(q.imbalance(), 4.0 / 2.4);
        // 4 CAs, each the destination of the 3 others: 12 pairs. All shortest but
        // a0->c and a1->c (2 hops instead of 1): 10 / 12 minimal.
        assert_eq!(q.pairs, 12);
        close(q.minimal_fraction, 10.0 / 12.0);
        // Pairs on different switches: 12 - a0<->a1 = 10; stretch 1 for 8 of them and
        // 2 / 1 for a0->c, a1->c: mean (8 + 4) / 10 = 1.2, max 2.
        close(q.mean_stretch, 1.2);
        close(q.max_stretch, 2.0);
    }

    #[test]
    fn all_to_all_on_shortest_routes_counts_same_switch_pairs_as_minimal() {
        let (csr, lids) = ring3();
        // As ring3_detour, but S0 sends c directly (port 2).
        let r = routes(&[
            &[NR, 0, 1, 2, 3, 4, 1, 2],
            &[NR, 2, 0, 1, 2, 2, 3, 1],
            &[NR, 1, 2, 0, 1, 1, 2, 3],
        ]);
        let q = all_to_all(&csr, &lids, &r).unwrap();
        // S0->S1: a0,a1->b = 2; S0->S2: a0,a1->c = 2; S1->S0: b->a0,a1 = 2;
        // S2->S0: c->a0,a1 = 2; S1->S2: b->c = 1; S2->S1: c->b = 1.
        // 6 arcs used, 10 flows: mean 10 / 6, imbalance 2 / (10 / 6) = 1.2.
        assert_eq!(q.max_load, 2);
        close(q.mean_load, 10.0 / 6.0);
        assert_eq!(q.used_links, 6);
        close(q.imbalance(), 1.2);
        // a0<->a1 never leave S0 and are shortest too: 12 / 12.
        assert_eq!(q.pairs, 12);
        close(q.minimal_fraction, 1.0);
        close(q.mean_stretch, 1.0);
        close(q.max_stretch, 1.0);
    }

    #[test]
    fn all_to_all_on_one_switch_has_no_links_and_neutral_figures() {
        // One switch (LID 1), CAs on ports 1 and 2 (LIDs 2, 3).
        let csr = fabric(&[2], &[], &[(0, 1), (0, 2)]);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let q = all_to_all(&csr, &lids, &routes(&[&[NR, 0, 1, 2]])).unwrap();
        // 2 pairs, both on the switch: minimal; no pair crosses a link, so stretch and
        // imbalance keep their neutral 1.
        assert_eq!((q.max_load, q.used_links, q.links, q.pairs), (0, 0, 0, 2));
        close(q.mean_load, 0.0);
        close(q.imbalance(), 1.0);
        close(q.minimal_fraction, 1.0);
        close(q.mean_stretch, 1.0);
        close(q.max_stretch, 1.0);
    }

    #[test]
    fn all_to_all_rejects_loops_dead_ends_and_foreign_lids() {
        let (csr, lids) = ring3();
        // c (LID 7): S0 -> S1 -> back to S0.
        let mut r = ring3_detour();
        r.lft_mut(1)[7] = 2;
        let e = all_to_all(&csr, &lids, &r).unwrap_err().to_string();
        assert!(e.contains("loop towards LID 7"), "{e}");
        // S1 has no entry for c; S0 reaches c through S1 so it has none either.
        let mut r = ring3_detour();
        r.lft_mut(1)[7] = NR;
        let e = all_to_all(&csr, &lids, &r).unwrap_err().to_string();
        assert!(e.contains("switch #0 has no route to LID 7"), "{e}");
        let other = fabric(&[2], &[], &[(0, 1)]);
        let foreign = LidAssignment::sequential(&other, 0).unwrap();
        assert!(all_to_all(&csr, &foreign, &ring3_detour()).is_err());
    }

    #[test]
    fn port_ratios_skip_unused_ports_and_single_port_switches() {
        let mut p = PortRatios::default();
        assert_eq!(p.finish(), (0.0, 0.0));
        p.add(&[0, 3, 1, 0]); // 2 used ports, mean 2: 3 / 2 = 1.5
        p.add(&[5]); // one used port: left out
        p.add(&[0, 0, 7]); // one used port: left out
        p.add(&[2, 2, 2]); // 2 / 2 = 1.0
        p.add(&[4, 1, 1]); // mean 2: 4 / 2 = 2.0
        // worst 2.0; mean (1.5 + 1.0 + 2.0) / 3 = 1.5
        let (worst, mean) = p.finish();
        close(worst, 2.0);
        close(mean, 1.5);
    }

    #[test]
    fn lid_balance_counts_every_lid_on_switch_ports_only() {
        let (csr, lids) = ring3();
        let b = lid_balance(&csr, &lids, &ring3_detour()).unwrap();
        // LIDs per switch-to-switch port (CA ports and port 0 do not count):
        //   S0 [NR,0,1,2,3,4,1,1]: p1 {2,6,7} = 3, p2 {3} = 1  -> 3 / 2   = 1.5
        //   S1 [NR,2,0,1,2,2,3,1]: p1 {3,7} = 2, p2 {1,4,5} = 3 -> 3 / 2.5 = 1.2
        //   S2 [NR,1,2,0,1,1,2,3]: p1 {1,4,5} = 3, p2 {2,6} = 2 -> 3 / 2.5 = 1.2
        // worst 1.5; mean (1.5 + 1.2 + 1.2) / 3 = 1.3
        close(b.worst_ratio, 1.5);
        close(b.mean_ratio, 1.3);
    }

    #[test]
    fn lid_balance_leaves_out_switches_with_one_switch_port() {
        // S0 p1 - S1 p1; CAs on S0 p2, p3 and S1 p2: LIDs S0 1, S1 2, CAs 3, 4, 5.
        let csr = fabric(&[3, 2], &[(0, 1, 1, 1)], &[(0, 2), (0, 3), (1, 2)]);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let r = routes(&[&[NR, 0, 1, 2, 3, 1], &[NR, 1, 0, 1, 1, 2]]);
        // Each switch has a single switch-to-switch port: no ratio anywhere.
        let b = lid_balance(&csr, &lids, &r).unwrap();
        assert_eq!(b, LidBalance::default());
    }

    /// Two leaves L0, L1 (switches 0, 1; ports 1-2 CAs, 3-5 up) under three spines
    /// P0-P2 (switches 2-4; port 1 to L0, port 2 to L1): leaf port 3 + j goes to Pj.
    /// LMC 0 LIDs: L0 1, L1 2, P0 3, P1 4, P2 5; CAs h0 6, h1 7 (L0), h2 8, h3 9 (L1).
    fn tree2x3() -> Csr {
        let mut links = Vec::new();
        for leaf in 0..2 {
            for j in 0..3 {
                links.push((leaf, 3 + j as u8, 2 + j, 1 + leaf as u8));
            }
        }
        fabric(&[5, 5, 2, 2, 2], &links, &[(0, 1), (0, 2), (1, 1), (1, 2)])
    }

    /// Loop-free routes on `tree2x3` at LMC 0; L0 sends both h2 and h3 up to P2.
    fn tree2x3_routes() -> Routes {
        routes(&[
            &[NR, 0, 3, 3, 4, 5, 1, 2, 5, 5],
            &[NR, 4, 0, 3, 4, 5, 3, 4, 1, 2],
            &[NR, 1, 2, 0, 1, 1, 1, 1, 2, 2],
            &[NR, 1, 2, 1, 0, 2, 1, 1, 2, 2],
            &[NR, 1, 2, 2, 2, 0, 1, 1, 2, 2],
        ])
    }

    #[test]
    fn switch_lid_balance_counts_switch_lids_per_port() {
        let csr = tree2x3();
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let b = switch_lid_balance(&csr, &lids, &tree2x3_routes()).unwrap();
        // Switch LIDs 1-5 only (CA columns 6-9 do not count):
        //   L0 [0,3,3,4,5]: p3 {2,3} 2, p4 1, p5 1  spread 1, 2 / (4/3) = 1.5
        //   L1 [4,0,3,4,5]: p3 1, p4 {1,4} 2, p5 1  spread 1, 1.5
        //   P0 [1,2,0,1,1]: p1 {1,4,5} 3, p2 1      spread 2, 3 / 2 = 1.5
        //   P1 [1,2,1,0,2]: p1 {1,3} 2, p2 {2,5} 2  spread 0, 1.0
        //   P2 [1,2,2,2,0]: p1 1, p2 {2,3,4} 3      spread 2, 1.5
        // Every port of a leaf leads to a spine and every port of a spine to a leaf, so
        // each switch's ports are one class. max spread 2, worst 1.5,
        // mean (4 * 1.5 + 1.0) / 5 = 1.4.
        assert_eq!(b.max_spread, 2);
        close(b.worst_ratio, 1.5);
        close(b.mean_ratio, 1.4);
    }

    #[test]
    fn switch_lid_balance_spread_compares_only_ports_to_the_same_rank() {
        // L0 p2 - P p1, L1 p2 - P p2, P p3 - X p1, X p2 - Y p1; CAs on L0 p1, L1 p1.
        // Ranks: L0, L1 0 (CAs), P 1, X 2, Y 3. LIDs L0 1, L1 2, P 3, X 4, Y 5, CAs 6, 7.
        let csr = fabric(
            &[2, 2, 3, 2, 1],
            &[(0, 2, 2, 1), (1, 2, 2, 2), (2, 3, 3, 1), (3, 2, 4, 1)],
            &[(0, 1), (1, 1)],
        );
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let r = routes(&[
            &[NR, 0, 2, 2, 2, 2, 1, 2],
            &[NR, 2, 0, 2, 2, 2, 2, 1],
            &[NR, 1, 2, 0, 3, 3, 1, 2],
            &[NR, 1, 1, 1, 0, 2, 1, 1],
            &[NR, 1, 1, 1, 1, 0, 1, 1],
        ]);
        let b = switch_lid_balance(&csr, &lids, &r).unwrap();
        // P: p1 {1} 1, p2 {2} 1 (both to rank 0: spread 0), p3 {4,5} 2 (alone in its
        // class): ratio 2 / (4/3) = 1.5. X: p1 {1,2,3} 3 (rank 1), p2 {5} 1 (rank 3):
        // ratio 3 / 2 = 1.5. Leaves and Y have one port each: no ratio, spread 0.
        // Mixing classes would give spread 1 at P and 2 at X.
        assert_eq!(b.max_spread, 0);
        close(b.worst_ratio, 1.5);
        close(b.mean_ratio, 1.5);
    }

    #[test]
    fn lmc_diversity_needs_as_many_ports_as_siblings_or_choices() {
        // The tree at LMC 1, h1 at LMC 0: LIDs L0 1, L1 2, P0-P2 3-5; h0 6-7, h1 8,
        // h2 10-11, h3 12-13.
        let csr = tree2x3();
        let mut lids = LidAssignment::sequential(&csr, 1).unwrap();
        lids.set_terminal(1, 8, 0);
        let r = routes(&[
            &[NR, 0, 3, 3, 4, 5, 1, 1, 2, NR, 3, 4, 5, 5],
            &[NR, 3, 0, 3, 4, 5, 3, 5, 4, NR, 1, 1, 2, 2],
            &[NR, 1, 2, 0, 1, 1, 1, 1, 1, NR, 2, 2, 2, 2],
            &[NR, 1, 2, 1, 0, 1, 1, 1, 1, NR, 2, 2, 2, 2],
            &[NR, 1, 2, 1, 1, 0, 1, 1, 1, NR, 2, 2, 2, 2],
        ]);
        let d = lmc_diversity(&csr, &lids, &r).unwrap();
        // Only a leaf towards the other leaf has a choice (3 spines); a spine has one
        // shortest port down. h1 has LMC 0: not counted. So 3 choice pairs:
        //   L1 -> h0 (6, 7):   p3, p5  distinct (2 >= min(2, 3)), P0 / P2: disjoint
        //   L0 -> h2 (10, 11): p3, p4  distinct, disjoint
        //   L0 -> h3 (12, 13): p5, p5  neither
        // Both leaves have CAs, so all 3 are source pairs.
        assert_eq!(
            d,
            LmcDiversity {
                choice_pairs: 3,
                distinct_first_hops: 2,
                source_pairs: 3,
                disjoint_paths: 2,
            }
        );
        close(d.first_hop_fraction(), 2.0 / 3.0);
        close(d.disjoint_fraction(), 2.0 / 3.0);
    }

    #[test]
    fn lmc_diversity_tells_distinct_first_hops_from_disjoint_paths() {
        // A diamond with a tail: S p1 - A p1, S p2 - B p1, A p2 - C p1, B p2 - C p2,
        // C p3 - T p1; CA s on S p3, t on T p2. At LMC 2: switches 1-5 (S, A, B, C, T),
        // s 8-11, t 12-15.
        let csr = fabric(
            &[3, 2, 2, 3, 2],
            &[
                (0, 1, 1, 1),
                (0, 2, 2, 1),
                (1, 2, 3, 1),
                (2, 2, 3, 2),
                (3, 3, 4, 1),
            ],
            &[(0, 3), (4, 2)],
        );
        let lids = LidAssignment::sequential(&csr, 2).unwrap();
        let r = routes(&[
            &[NR, 0, 1, 2, 1, 1, NR, NR, 3, 3, 3, 3, 1, 2, 1, 2],
            &[NR, 1, 0, 2, 2, 2, NR, NR, 1, 1, 1, 1, 2, 2, 2, 2],
            &[NR, 1, 1, 0, 2, 2, NR, NR, 1, 1, 1, 1, 2, 2, 2, 2],
            &[NR, 1, 1, 2, 0, 3, NR, NR, 1, 1, 1, 1, 3, 3, 3, 3],
            &[NR, 1, 1, 1, 1, 0, NR, NR, 1, 1, 1, 1, 2, 2, 2, 2],
        ]);
        let d = lmc_diversity(&csr, &lids, &r).unwrap();
        // Switches with two shortest next hops: S towards T (A, B) and C towards S
        // (A, B); every other switch has one.
        //   S -> t: ports 1, 2, 1, 2: 2 distinct = min(4 siblings, 2 choices). S has a
        //     CA, so a source pair, but every path ends on C->T: not disjoint.
        //   C -> s: port 1 four times: not distinct; C has no CA: no source pair.
        assert_eq!(
            d,
            LmcDiversity {
                choice_pairs: 2,
                distinct_first_hops: 1,
                source_pairs: 1,
                disjoint_paths: 0,
            }
        );
        close(d.first_hop_fraction(), 0.5);
        close(d.disjoint_fraction(), 0.0);
        // At LMC 0 nobody has siblings: nothing counted, both fractions 1.
        let lids0 = LidAssignment::sequential(&csr, 0).unwrap();
        let r0 = routes(&[
            &[NR, 0, 1, 2, 1, 1, 3, 1],
            &[NR, 1, 0, 2, 2, 2, 1, 2],
            &[NR, 1, 1, 0, 2, 2, 1, 2],
            &[NR, 1, 1, 2, 0, 3, 1, 3],
            &[NR, 1, 1, 1, 1, 0, 1, 2],
        ]);
        let d0 = lmc_diversity(&csr, &lids0, &r0).unwrap();
        assert_eq!(d0, LmcDiversity::default());
        close(d0.first_hop_fraction(), 1.0);
        close(d0.disjoint_fraction(), 1.0);
    }

    #[test]
    fn shift_max_loads_counts_each_shift_on_its_own() {
        let csr = tree2x3();
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let loads = shift_max_loads(&csr, &lids, &tree2x3_routes(), [0, 1, 2, 3, 4, 6]).unwrap();
        // CAs in order h0, h1 (L0), h2, h3 (L1). Paths: L0->h2 and L0->h3 both by P2;
        // L1->h0 by P0, L1->h1 by P1; same-leaf pairs use no link.
        //   k 0: everyone to itself                                   -> 0
        //   k 1: h1->h2 (L0->P2->L1), h3->h0 (L1->P0->L0)             -> 1
        //   k 2: h0->h2, h1->h3 both on L0->P2; h2->h0, h3->h1        -> 2
        //   k 3: h0->h3 (L0->P2->L1), h2->h1 (L1->P1->L0)             -> 1
        //   k 4 = k 0 (mod 4 CAs), k 6 = k 2
        assert_eq!(loads, vec![0, 1, 2, 1, 0, 2]);
    }

    /// A ring of `m` switches, each with one CA (port 3), routed one way round: every
    /// LID but the switch's own ones leaves by port 1 (to the next switch's port 2).
    /// LIDs: switch i is i + 1, its CA m + 1 + i.
    fn one_way_ring(m: usize) -> (Csr, LidAssignment, Routes) {
        let links: Vec<_> = (0..m).map(|i| (i, 1, (i + 1) % m, 2)).collect();
        let cas: Vec<_> = (0..m).map(|i| (i, 3)).collect();
        let csr = fabric(&vec![3; m], &links, &cas);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let mut r = Routes::new("hand", m, 2 * m + 1);
        for s in 0..m {
            let row = r.lft_mut(s);
            row[1..].fill(1);
            row[s + 1] = 0;
            row[m + 1 + s] = 3;
        }
        (csr, lids, r)
    }

    #[test]
    fn ebb_on_a_one_way_ring_is_the_same_for_every_bisection() {
        // Each pair x<->y goes x->y and y->x one way round: together once round the
        // ring. With m CAs, m / 2 pairs put m / 2 flows on every arc, so every flow gets
        // 2 / m whatever the bisection: 4-ring 1/2, 6-ring 1/3.
        for (m, want) in [(4, 0.5), (6, 1.0 / 3.0)] {
            let (csr, lids, r) = one_way_ring(m);
            for (samples, seed) in [(1, 1), (5, 7), (3, 12345)] {
                let e = effective_bisection_bandwidth(&csr, &lids, &r, samples, seed).unwrap();
                close(e, want);
            }
        }
    }

    #[test]
    fn ebb_takes_the_busiest_link_of_each_path() {
        // A p1 - X p1, A p2 - Y p1, X p2 - Y p2, X p3 - B p1, Y p3 - B p2; CA a on A p3,
        // b on B p3. LIDs A 1, X 2, Y 3, B 4, a 5, b 6.
        let csr = fabric(
            &[3, 3, 3, 3],
            &[
                (0, 1, 1, 1),
                (0, 2, 2, 1),
                (1, 2, 2, 2),
                (1, 3, 3, 1),
                (2, 3, 3, 2),
            ],
            &[(0, 3), (3, 3)],
        );
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        // a->b: A->X->Y->B; b->a: B->X->Y->A. Both cross X->Y.
        let r = routes(&[
            &[NR, 0, 1, 2, 1, 3, 1],
            &[NR, 1, 0, 2, 3, 2, 2],
            &[NR, 1, 2, 0, 3, 1, 3],
            &[NR, 1, 1, 2, 0, 1, 3],
        ]);
        // Two CAs: the only bisection pairs a with b. X->Y carries 2 flows, the other
        // arcs 1: each flow gets 1 / 2, and so does the mean, whatever the sample count
        // (0 is taken as 1).
        for samples in [0, 1, 3] {
            let e = effective_bisection_bandwidth(&csr, &lids, &r, samples, 5).unwrap();
            close(e, 0.5);
        }
        // Fewer than two CAs: no bisection, full bandwidth.
        let lone = fabric(&[1], &[], &[(0, 1)]);
        let lids = LidAssignment::sequential(&lone, 0).unwrap();
        let e = effective_bisection_bandwidth(&lone, &lids, &routes(&[&[NR, 0, 1]]), 3, 1);
        close(e.unwrap(), 1.0);
    }
}
