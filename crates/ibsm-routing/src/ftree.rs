//! `ftree`: fat-tree routing.

use ibsm_topology::Csr;

use crate::balance::{Loads, Prefer, Rule, route_all};
use crate::engine::{RouteOptions, RoutingEngine, check_reach};
use crate::error::{Result, RoutingError};
use crate::inputs::Uses;
use crate::lids::LidAssignment;
use crate::net::{Dest, INF, NONE, Net};
use crate::routes::Routes;
use crate::updn::order_by_rank;

/// Fat-tree routing.
///
/// Detection: leaves are the switches with compute nodes (every CA, or those of
/// [`RouteOptions::compute_nodes`](crate::RouteOptions::compute_nodes) without
/// [`RouteOptions::io_nodes`](crate::RouteOptions::io_nodes), as OpenSM's `cn_guid_file` and
/// `io_guid_file`), ranks count hops up from the leaves, and every cable must join
/// adjacent ranks (else [`RoutingError::NotAFatTree`]). With
/// [`RouteOptions::roots`](crate::RouteOptions::roots) (OpenSM `root_guid_file`) ranks count down
/// from the roots instead, every leaf must be equally far from them, and cables inside a
/// rank are allowed. Other CAs may hang on any switch; they are routed but take no part
/// in d-mod-k. Missing cables (a degraded tree) are fine.
///
/// Routing: CA destinations get a global index `D` (leaves ordered so that leaves under
/// the same parents are consecutive, CAs by port), and a rank-`r` switch climbs through up
/// port `(D / P_r + k) mod u_r` (`u_r` up ports, `P_r` the product of the up-port counts
/// below, `k` the LMC offset): d-mod-k, which makes every shift permutation contention-free
/// on a full tree. Paths are Up*/Down* with respect to the ranks, so they stay deadlock-free
/// when cables are missing; where the preferred port cannot reach the destination the
/// least-loaded legal one is used. LMC > 0 gives each LID of a port a different up path.
///
/// Reverse hops ([`RouteOptions::max_reverse_hops`](crate::RouteOptions::max_reverse_hops) with
/// [`RouteOptions::io_nodes`](crate::RouteOptions::io_nodes), OpenSM's `max_reverse_hops`): where
/// I/O nodes' traffic (towards them, or from a switch whose CAs are all I/O nodes) has
/// no up/down path, as between storage on two spines or from a leaf not below the
/// storage's spine, it takes the shortest path with the fewest reverse hops (a switch
/// used the wrong way round), at most that many; routes between compute nodes stay
/// up/down. Such routes are outside the up/down order and can in theory close a credit
/// loop (they turn at the lowest-numbered switches they can, so the routes of different
/// I/O nodes share their turns); with the default 0 there are none.
#[derive(Clone, Copy, Debug, Default)]
pub struct FatTree;

/// What detection learned.
pub(crate) struct FtInfo {
    pub rank: Vec<u16>,
    /// CSR of up arcs per switch (sorted by remote switch).
    up_off: Vec<u32>,
    up: Vec<u32>,
    /// Product of up-port counts of the ranks below.
    p: Vec<u64>,
    /// Global index of each terminal (by terminal index), `u32::MAX` if none.
    dindex: Vec<u32>,
    /// Most up ports of a switch per rank (a full tree's up-port count).
    updeg: Vec<u64>,
    /// Ranks.
    nranks: usize,
    /// Per LID and rank, `(D / P_r + k) mod updeg[r]` (`u16::MAX`: not a CA LID), so the
    /// hot path needs no division.
    lid_up: Vec<u16>,
}

/// Switch ranks counted up from the leaves (the switches with compute nodes): by hops
/// from the leaves, or with user roots ([`Net::roots`]) as the roots' rank minus the hops
/// from them, in which case every leaf must be equally far from the roots.
fn ranks(net: &Net) -> Result<Vec<u16>> {
    let leaf = |s: usize| net.terms_of(s).iter().any(|&t| net.is_cn(t as usize));
    let sources: Vec<u32> = if net.roots.is_empty() {
        (0..net.n_sw)
            .filter(|&s| leaf(s))
            .map(|s| s as u32)
            .collect()
    } else {
        net.roots.clone()
    };
    if sources.is_empty() {
        return Err(RoutingError::NotAFatTree(
            "no switch has compute nodes (no leaves)".into(),
        ));
    }
    let dist = net.levels_from(&sources);
    if let Some(s) = dist.iter().position(|&r| r == INF) {
        let what = if net.roots.is_empty() {
            "any leaf"
        } else {
            "the roots"
        };
        return Err(RoutingError::NotAFatTree(format!(
            "switch #{s} is not connected to {what}"
        )));
    }
    if net.roots.is_empty() {
        return Ok(dist);
    }
    let mut depth = None;
    for s in (0..net.n_sw).filter(|&s| leaf(s)) {
        match depth {
            None => depth = Some(dist[s]),
            Some(d) if d != dist[s] => {
                return Err(RoutingError::NotAFatTree(format!(
                    "leaf switch #{s} is {} hops from the roots, another leaf {d}: compute nodes must all be on one rank",
                    dist[s]
                )));
            }
            Some(_) => {}
        }
    }
    let Some(depth) = depth else {
        return Err(RoutingError::NotAFatTree(
            "no switch has compute nodes (no leaves)".into(),
        ));
    };
    if let Some(s) = (0..net.n_sw).find(|&s| dist[s] > depth) {
        return Err(RoutingError::NotAFatTree(format!(
            "switch #{s} is below the leaves ({} hops from the roots, the leaves {depth})",
            dist[s]
        )));
    }
    Ok(dist.iter().map(|&d| depth - d).collect())
}

pub(crate) fn detect(net: &Net) -> Result<FtInfo> {
    if net.n_sw == 0 {
        return Err(RoutingError::NotAFatTree("no switches".into()));
    }
    let rank = ranks(net)?;
    // With user roots a cable inside a rank is allowed (OpenSM ignores such links);
    // the up/down order still keeps routes over it deadlock-free.
    let same_rank_ok = !net.roots.is_empty();
    for a in 0..net.n_arcs() {
        let (s, x) = (net.asrc[a] as usize, net.adst[a] as usize);
        let d = rank[s].abs_diff(rank[x]);
        if d > 1 || (d == 0 && !same_rank_ok) {
            return Err(RoutingError::NotAFatTree(format!(
                "switch #{s} (rank {}) port {} is cabled to switch #{x} (rank {}): links must join adjacent ranks",
                rank[s], net.aport[a], rank[x]
            )));
        }
    }
    let mut up_off = vec![0u32; net.n_sw + 1];
    let mut up = Vec::new();
    for s in 0..net.n_sw {
        for a in net.arcs(s) {
            if rank[net.adst[a] as usize] > rank[s] {
                up.push(a as u32);
            }
        }
        up_off[s + 1] = up.len() as u32;
    }
    let maxr = usize::from(rank.iter().copied().max().unwrap_or(0));
    let mut updeg = vec![0u64; maxr + 1];
    for s in 0..net.n_sw {
        let u = u64::from(up_off[s + 1] - up_off[s]);
        let r = usize::from(rank[s]);
        updeg[r] = updeg[r].max(u);
    }
    let mut p = vec![1u64; maxr + 2];
    for r in 0..=maxr {
        p[r + 1] = p[r].saturating_mul(updeg[r].max(1));
    }
    // Leaf order: by the smallest ancestor at each rank, highest rank below the top first,
    // so leaves sharing parents (a "pod") are consecutive, as d-mod-k assumes.
    let leaves: Vec<usize> = (0..net.n_sw).filter(|&s| rank[s] == 0).collect();
    let mut minanc: Vec<Vec<u32>> = vec![Vec::new(); net.n_sw];
    let mut by_rank: Vec<usize> = (0..net.n_sw).collect();
    by_rank.sort_by_key(|&s| std::cmp::Reverse(rank[s]));
    // minanc[s][r] for r >= rank[s]: smallest switch index at rank r reachable upward.
    for &s in &by_rank {
        let mut v = vec![u32::MAX; maxr + 1];
        v[usize::from(rank[s])] = s as u32;
        for &a in &up[up_off[s] as usize..up_off[s + 1] as usize] {
            let x = net.adst[a as usize] as usize;
            for r in usize::from(rank[x])..=maxr {
                v[r] = v[r].min(minanc[x][r]);
            }
        }
        minanc[s] = v;
    }
    let mut order = leaves.clone();
    order.sort_by(|&a, &b| {
        let ka: Vec<u32> = (1..maxr).rev().map(|r| minanc[a][r]).collect();
        let kb: Vec<u32> = (1..maxr).rev().map(|r| minanc[b][r]).collect();
        (ka, a).cmp(&(kb, b))
    });
    let mut dindex = vec![u32::MAX; net.terms.len()];
    let mut d = 0u32;
    for &l in &order {
        for &t in net.terms_of(l) {
            if net.terms[t as usize].base != 0 && net.is_cn(t as usize) {
                dindex[t as usize] = d;
                d += 1;
            }
        }
    }
    let nranks = maxr + 1;
    let mut lid_up = vec![u16::MAX; net.lft_len * nranks];
    for (lid, dest) in net.lid_dest.iter().enumerate() {
        if let Dest::Term(t, k) = *dest {
            let d = u64::from(dindex[t as usize]);
            if d == u64::from(u32::MAX) {
                continue;
            }
            for r in 0..nranks {
                let u = updeg[r].max(1);
                lid_up[lid * nranks + r] = ((d / p[r] + u64::from(k)) % u) as u16;
            }
        }
    }
    Ok(FtInfo {
        rank,
        up_off,
        up,
        p,
        dindex,
        updeg,
        nranks,
        lid_up,
    })
}

impl FtInfo {
    /// The d-mod-k up-port index of `lid` at rank `r`, for a switch with `nup` up ports.
    #[inline(always)]
    fn up_index(&self, net: &Net, lid: u16, r: usize, nup: usize) -> Option<usize> {
        if nup as u64 == self.updeg[r] {
            let v = self.lid_up[usize::from(lid) * self.nranks + r];
            return (v != u16::MAX).then_some(usize::from(v));
        }
        let Dest::Term(t, k) = net.lid_dest[usize::from(lid)] else {
            return None;
        };
        // CAs that are not compute nodes have no place in d-mod-k.
        let d = u64::from(self.dindex[t as usize]);
        if d == u64::from(u32::MAX) {
            return None;
        }
        Some(((d / self.p[r] + u64::from(k)) % nup as u64) as usize)
    }
}

impl Prefer for FtInfo {
    #[inline(always)]
    fn prefer(
        &self,
        net: &Net,
        s: usize,
        (lid, _): (u16, usize),
        elig: &[u32],
        _: &Loads,
        _: &[u8],
    ) -> Option<u32> {
        let (&first, &last) = (elig.first()?, elig.last()?);
        // Only climbing switches have a choice d-mod-k makes.
        if self.rank[net.adst[first as usize] as usize] <= self.rank[s] {
            return None;
        }
        let ups = &self.up[self.up_off[s] as usize..self.up_off[s + 1] as usize];
        let r = usize::from(self.rank[s]);
        let want = ups[self.up_index(net, lid, r, ups.len())?];
        let found = if (last - first) as usize + 1 == elig.len() {
            (first..=last).contains(&want)
        } else {
            elig.contains(&want)
        };
        found.then_some(want)
    }

    fn prefer_chunk(
        &self,
        net: &Net,
        s: usize,
        lids: &[(u16, u16)],
        elig: &[u32],
        out: &mut [u32],
    ) -> bool {
        out.fill(NONE);
        let (Some(&first), Some(&last)) = (elig.first(), elig.last()) else {
            return true;
        };
        if self.rank[net.adst[first as usize] as usize] <= self.rank[s] {
            return true;
        }
        let ups = &self.up[self.up_off[s] as usize..self.up_off[s + 1] as usize];
        let r = usize::from(self.rank[s]);
        let run = (last - first) as usize + 1 == elig.len();
        for (o, &(lid, _)) in out.iter_mut().zip(lids) {
            let Some(i) = self.up_index(net, lid, r, ups.len()) else {
                continue;
            };
            let want = ups[i];
            if (run && (first..=last).contains(&want)) || (!run && elig.contains(&want)) {
                *o = want;
            }
        }
        true
    }
}

pub(crate) fn ftree_net(net: &Net, opts: &RouteOptions) -> Result<Routes> {
    let info = detect(net)?;
    let maxr = info.rank.iter().copied().max().unwrap_or(0);
    let toward_root: Vec<u16> = info.rank.iter().map(|&r| maxr - r).collect();
    let (pos, by_pos) = order_by_rank(&toward_root, false);
    let mut r = Routes::new_filled_by("ftree", net.n_sw, net.lft_len, opts.threads);
    let rule = Rule::UpDown {
        pos: &pos,
        by_pos: &by_pos,
    };
    let st = route_all(net, rule, opts.threads, &mut r.lfts, &info);
    check_reach(st, opts, " (fat tree partitioned)")?;
    reverse_hops(net, &pos, &mut r)?;
    r.updown_pos = Some(pos);
    Ok(r)
}

/// Paths with reverse hops towards I/O nodes where up/down ones are missing
/// ([`RouteOptions::max_reverse_hops`]).
fn reverse_hops(net: &Net, pos: &[u32], r: &mut Routes) -> Result<()> {
    crate::reverse::route_io(net, pos, &mut r.lfts).map_err(|(switch, lid)| {
        RoutingError::Disconnected {
            switch,
            lid,
            why: format!(
                " with up/down paths and at most {} reverse hops",
                net.max_reverse_hops
            ),
        }
    })
}

impl RoutingEngine for FatTree {
    fn name(&self) -> &str {
        "ftree"
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Result<Routes> {
        ftree_net(
            &crate::inputs::net(csr, lids, opts, Uses::ROOTS_NODES)?,
            opts,
        )
    }

    /// Keeps every column whose routes avoid dead ports and, inside recomputed columns,
    /// every still-legal entry; the up/down order of `previous` is reused so old and new
    /// columns agree on what "up" means.
    fn reroute(
        &self,
        csr: &Csr,
        lids: &LidAssignment,
        opts: &RouteOptions,
        previous: &Routes,
    ) -> Result<Routes> {
        let net = crate::inputs::net(csr, lids, opts, Uses::ROOTS_NODES)?;
        let info = detect(&net)?;
        let maxr = info.rank.iter().copied().max().unwrap_or(0);
        let toward_root: Vec<u16> = info.rank.iter().map(|&r| maxr - r).collect();
        let (pos, by_pos) = order_by_rank(&toward_root, false);
        let rule = Rule::UpDown {
            pos: &pos,
            by_pos: &by_pos,
        };
        let mut r = crate::reroute::reroute_net(&net, rule, opts, previous, "ftree")?;
        // The order the re-route kept (the previous one when it fits).
        let order = previous
            .updown_pos
            .as_ref()
            .filter(|p| p.len() == net.n_sw)
            .unwrap_or(&pos);
        reverse_hops(&net, order, &mut r)?;
        Ok(r)
    }
}
