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

/// `num / den`, or 1.0 (the ideal of every ratio here) when there was nothing to
/// count.
fn ratio_or_one(num: f64, den: f64) -> f64 {
    if den == 0.0 { 1.0 } else { num / den }
}

impl AllToAll {
    /// Max / mean link load over used links (1.0 = perfectly even).
    #[must_use]
    pub fn imbalance(&self) -> f64 {
        ratio_or_one(self.max_load as f64, self.mean_load)
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
    q.minimal_fraction = ratio_or_one(minimal as f64, q.pairs as f64);
    q.mean_stretch = ratio_or_one(stretch_sum, far_pairs as f64);
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
        ratio_or_one(self.distinct_first_hops as f64, self.choice_pairs as f64)
    }

    /// `disjoint_paths / source_pairs` (1.0 when there is no choice anywhere).
    #[must_use]
    pub fn disjoint_fraction(&self) -> f64 {
        ratio_or_one(self.disjoint_paths as f64, self.source_pairs as f64)
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
mod tests;
