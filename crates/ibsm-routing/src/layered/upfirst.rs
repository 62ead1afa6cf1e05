//! DFSSSP's balanced routes, one destination switch at a time.

use super::layering::OneLayer;
use super::placement::{Downs, cold};
use crate::net::{NONE, Net};
use crate::routes::NO_ROUTE;

/// The climbing hop (of `ups`, at least two) an LMC sibling with `sibs` siblings before
/// it takes at a switch whose LFT is `row`: the least loaded (`key`) whose port none of
/// the LIDs `col - sibs..col` took, else (every port taken) the least loaded; the first on
/// ties. As `balance`'s scan, so the siblings of a LID leave by different ports wherever
/// the switch can climb more than one way. Out of line: inlined, it slows the base LIDs'
/// loop around it (11k-CA tree at LMC 1: ~0.6 s instead of ~0.5 s).
#[inline(never)]
pub(super) fn up_sibling(
    ups: &[u32],
    key: &[u64],
    sibs: usize,
    row: &[u8],
    col: usize,
    aport: &[u8],
) -> usize {
    let taken = &row[col - sibs..col];
    if let [p] = taken {
        least(ups, key, aport, |q| q == *p)
    } else {
        // A bit per port taken (ports are bytes).
        let mut m = [0u64; 4];
        for &q in taken {
            m[usize::from(q >> 6)] |= 1 << (q & 63);
        }
        least(ups, key, aport, |q| {
            m[usize::from(q >> 6)] >> (q & 63) & 1 != 0
        })
    }
}

/// The arc of `ups` (non-empty) with the least `key` among those whose port is not
/// `taken`, else the least loaded; the first on ties. A taken port's load gets the top bit
/// (loads stay far below 2^63), so one minimum orders by (taken, load).
#[inline(always)]
pub(super) fn least(ups: &[u32], key: &[u64], aport: &[u8], taken: impl Fn(u8) -> bool) -> usize {
    let (mut best, mut bl) = (ups[0], u64::MAX);
    for &a in ups {
        let l = key[a as usize] | u64::from(taken(aport[a as usize])) << 63;
        if l < bl {
            (best, bl) = (a, l);
        }
    }
    best as usize
}

/// DFSSSP's balanced routes, one destination switch at a time: the tables of
/// `balance::route_all` (minhop rule; base LIDs balanced on the base LIDs' loads, LMC
/// siblings on all LIDs') where a switch takes the least loaded of its
/// shortest next hops that climb (their head nearer the root), if any; an LMC sibling
/// first avoids the ports its earlier siblings took there, so on a fat tree the 2^LMC
/// LIDs of a port climb by different ports (base LIDs keep their LMC 0 routes). A switch's choice
/// depends only on its own arcs' loads and round robin, its LMC siblings' ports and the
/// flow farther switches send it, so any farthest-first order gives the same tables: here
/// the reverse of the BFS order, whose forward order the placement uses.
pub(super) struct UpFirst<'a> {
    net: &'a Net,
    /// Per arc: whether it climbs.
    up: Vec<bool>,
    /// Flow per arc so far (`balance::Loads::load`), the base LIDs' alone
    /// (`balance::Loads::key`), and round-robin position per switch.
    load: Vec<u64>,
    light: Vec<u64>,
    /// Whether some LID has LMC siblings (else `light` would equal `load`: not kept).
    split: bool,
    rr: Vec<u32>,
    pub(super) dist: Vec<u16>,
    /// The last destination's switches, nearest first (the destination first).
    pub(super) queue: Vec<u32>,
    /// The next hop the BFS found first (a switch LID alone takes it).
    parent: Vec<u32>,
    /// Per (switch `s`, LID `j` of the destination) at `s * k + j`: the CA sources whose
    /// traffic reaches `s` (counted for a switch's own LID too, which carries no load: it
    /// says whether some CA's path passes).
    flow: Vec<u32>,
    /// The chosen hop (arc), at `s * k + j`.
    pub(super) hop: Vec<u32>,
    /// The shortest next hops of switch `s` at `down[span[s].0..][..span[s].1]` (not
    /// when only a switch LID was routed: then only the first-found hop is looked at).
    span: Vec<(u32, u32)>,
    down: Vec<u32>,
    /// `adst[a] * k` of each arc `a` in `down`.
    down_at: Vec<usize>,
    ups: Vec<u32>,
    quick: bool,
    /// The switches that reach the destination, farthest first, and a count per distance.
    order: Vec<u32>,
    level: Vec<u32>,
}

impl<'a> UpFirst<'a> {
    pub(super) fn new(net: &'a Net, pos: &[u32]) -> Self {
        let n = net.n_sw;
        let max_deg = (0..n).map(|s| net.arcs(s).len()).max().unwrap_or(0);
        UpFirst {
            net,
            up: (0..net.n_arcs())
                .map(|a| pos[net.adst[a] as usize] < pos[net.asrc[a] as usize])
                .collect(),
            load: vec![0; net.n_arcs()],
            light: vec![0; net.n_arcs()],
            split: {
                let mut lids = Vec::new();
                (0..n).any(|s| {
                    net.lids_on(s, &mut lids);
                    lids.iter().any(|l| l.0 != l.2)
                })
            },
            rr: vec![0; n],
            dist: vec![0; n],
            queue: Vec::with_capacity(n),
            parent: vec![NONE; n],
            flow: Vec::new(),
            hop: Vec::new(),
            span: vec![(0, 0); n],
            // Slack: every arc is written before the cursor knows whether it stays.
            down: vec![0; net.n_arcs() + max_deg],
            down_at: vec![0; net.n_arcs() + max_deg],
            ups: vec![0; max_deg],
            quick: false,
            order: Vec::with_capacity(n),
            level: Vec::new(),
        }
    }

    /// BFS from `t` (as `Net::bfs`), noting each switch's first-found next hop.
    fn bfs(&mut self, t: usize) {
        let n = self.net.n_sw;
        self.queue.resize(n, 0);
        let tail = self.net.bfs_parents(
            t,
            &mut self.dist[..n],
            &mut self.parent[..n],
            &mut self.queue[..],
        );
        self.queue.truncate(tail);
    }

    /// Routes the `lids` of switch `t` into `lfts` and `self.hop`.
    pub(super) fn route(&mut self, t: usize, lids: &[(u16, u8, u16)], lfts: &mut [u8]) {
        let net = self.net;
        let (n, len, k) = (net.n_sw, net.lft_len, lids.len());
        self.bfs(t);
        for &(lid, ..) in lids {
            let lid = usize::from(lid);
            lfts[t * len + lid] = net.dest_switch(lid).map_or(NO_ROUTE, |(_, port)| port);
        }
        // Every entry a switch that reaches `t` reads is written first.
        self.hop.resize(n * k, NONE);
        self.flow.resize(n * k, 0);
        for (fs, &own) in self.flow.chunks_exact_mut(k).zip(&net.nsrc) {
            fs.fill(own);
        }
        // Only the switch's own LID: every switch takes the first hop the BFS found.
        let quick = k == 1 && lids[0].1 == 0;
        self.quick = quick;
        let UpFirst {
            up,
            load,
            light,
            split,
            rr,
            dist,
            queue,
            parent,
            flow,
            hop,
            span,
            down,
            down_at,
            ups,
            order,
            level,
            ..
        } = self;
        // Plain slices: the vectors' headers would be reloaded after every store.
        // Farthest first. Where the tables outgrow the caches, within a distance by
        // switch index, so that the LFT rows are written in address order (they miss the
        // caches otherwise); else the BFS order backwards will do.
        order.clear();
        if n * len <= 1 << 20 {
            order.extend(queue[1..].iter().rev());
        } else {
            let maxd = usize::from(dist[*queue.last().expect("t") as usize]);
            level.clear();
            level.resize(maxd + 2, 0);
            for &s in queue.iter() {
                level[usize::from(dist[s as usize])] += 1;
            }
            let mut acc = 0;
            for d in (1..=maxd).rev() {
                let c = level[d];
                level[d] = acc;
                acc += c;
            }
            order.resize(acc as usize, 0);
            for (s, &d) in dist.iter().enumerate() {
                if d != 0 && d != crate::net::INF {
                    let at = &mut level[usize::from(d)];
                    order[*at as usize] = s as u32;
                    *at += 1;
                }
            }
        }
        let (up, dist, parent, order) = (&up[..], &dist[..], &parent[..], &order[..]);
        let (load, light, rr) = (&mut load[..], &mut light[..], &mut rr[..]);
        let split = *split;
        let (flow, hop, span) = (&mut flow[..], &mut hop[..], &mut span[..]);
        let (all_down, all_at, ups) = (&mut down[..], &mut down_at[..], &mut ups[..]);
        let (adst, aport) = (&net.adst[..], &net.aport[..]);
        let mut off = 0;
        for &s in order {
            let s = s as usize;
            // The shortest next hops and those of them that climb, written without a
            // branch (which neighbours are nearer is unpredictable).
            let (down, at) = (&mut all_down[off..], &mut all_at[off..]);
            let (mut m, mut u) = (0, 0);
            if quick {
                down[0] = parent[s];
                m = 1;
            } else {
                let d = dist[s] - 1;
                for a in net.arcs(s) {
                    let x = adst[a] as usize;
                    let ok = dist[x] == d;
                    down[m] = a as u32;
                    at[m] = x * k;
                    ups[u] = a as u32;
                    m += usize::from(ok);
                    u += usize::from(ok & up[a]);
                }
            }
            span[s] = (off as u32, m as u32);
            off += m;
            let (down, ups) = (&down[..m], &ups[..u]);
            let row = &mut lfts[s * len..(s + 1) * len];
            // One choice for every LID: only the flows need passing on.
            let only = if m == 1 {
                down[0]
            } else if u == 1 {
                ups[0]
            } else {
                NONE
            };
            if only != NONE {
                let (a, port) = (only as usize, aport[only as usize]);
                let x = adst[a] as usize * k;
                // All LIDs' flow and the base LIDs'.
                let (mut tot, mut tb) = (0, 0);
                for (j, &(lid, w, base)) in lids.iter().enumerate() {
                    row[usize::from(lid)] = port;
                    hop[s * k + j] = only;
                    let f = flow[s * k + j];
                    let fw = if w > 0 { u64::from(f) } else { 0 };
                    tot += fw;
                    tb += if lid == base { fw } else { 0 };
                    flow[x + j] += f;
                }
                load[a] += tot;
                if split {
                    light[a] += tb;
                }
                continue;
            }
            for (j, &(lid, w, base)) in lids.iter().enumerate() {
                let col = usize::from(lid);
                let f = flow[s * k + j];
                // Base LIDs are balanced by the base LIDs' loads, siblings by all LIDs'.
                let key: &[u64] = if split && lid == base { light } else { load };
                let a = if u > 1 && lid != base {
                    // An LMC sibling: the least loaded climbing hop that no earlier
                    // sibling took (all taken: the least loaded), the first on ties.
                    up_sibling(ups, key, usize::from(lid - base), row, col, aport)
                } else if u > 1 {
                    // The least loaded, the first on ties. Written so that it compiles
                    // to a branch: which hop wins is predictable (on a fat tree the
                    // loads make it a rotation), and a conditional move would make every
                    // LID wait for the previous one's load update.
                    let (mut best, mut bl) = (ups[0], key[ups[0] as usize]);
                    for &a in &ups[1..] {
                        let l = key[a as usize];
                        if l < bl {
                            cold();
                            (best, bl) = (a, l);
                        }
                    }
                    best as usize
                } else {
                    let fw = if w > 0 { f } else { 0 };
                    let sibs = usize::from(lid - base);
                    crate::balance::pick(net, down, key, &mut rr[s], fw, sibs, row, col)
                };
                row[col] = aport[a];
                hop[s * k + j] = a as u32;
                // (Adding nothing costs less than a branch on it.)
                let fw = if w > 0 { u64::from(f) } else { 0 };
                load[a] += fw;
                if split {
                    light[a] += if lid == base { fw } else { 0 };
                }
                flow[adst[a] as usize * k + j] += f;
            }
        }
    }

    /// The shortest next hops of the last routed destination, as [`Column::down`].
    pub(super) fn down(&self) -> Option<Downs<'_>> {
        (!self.quick).then_some(Downs {
            span: &self.span,
            arcs: &self.down,
            at: &self.down_at,
        })
    }

    /// Adds the last routed destination's dependencies (`k` LIDs) along the paths of
    /// switches with CAs to `chk`.
    pub(super) fn deps(&self, t: usize, k: usize, chk: &mut OneLayer<'_>) {
        let net = self.net;
        for &s in &self.queue[1..] {
            let s = s as usize;
            for j in 0..k {
                if self.flow[s * k + j] == 0 {
                    continue;
                }
                let a = self.hop[s * k + j];
                let x = net.adst[a as usize] as usize;
                if x != t {
                    chk.add(a, self.hop[x * k + j]);
                }
            }
        }
    }
}
