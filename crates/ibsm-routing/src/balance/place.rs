//! Placing the LIDs of a planned destination: each switch, farthest first, takes the
//! least-loaded eligible arc (or the next one round robin where no CA traffic passes).

use super::plan::{Deferred, Plan, ST_DIST, ST_DIST_MASK, ST_DOWN, ST_ESCAPED, ST_RANK};
use super::{Prefer, Rule, shortcuts};
use crate::net::{NONE, Net, Peer};
use crate::routes::NO_ROUTE;

/// Load state, owned by the single thread that places LIDs.
pub(crate) struct Loads {
    /// Accumulated flow (edge forwarding index so far) per arc.
    pub load: Vec<u64>,
    /// The flow of base LIDs alone per arc, as `u32`, the array the hot loop scans: it cannot overflow (an arc carries at most
    /// sources x LIDs < 49,152^2 < 2^32 flow units) and packs twice as many loads per
    /// cache line and vector.
    ///
    /// Base LIDs are balanced by it, so they get the tables they would get with LMC 0
    /// (the primary traffic stays as even as without LMC); LMC siblings are balanced by
    /// `load`, all LIDs' flow, so they steer away from the paths the base LIDs crowd.
    light: Vec<u32>,
    /// Flows of the LIDs being placed: `flow[s * stride + j]` is what LID `j` of the chunk
    /// brings to switch `s`; between chunks it holds the switch's own sources.
    pub(super) flow: Vec<u32>,
    pub(super) stride: usize,
    /// Round-robin position per switch.
    rr: Vec<u32>,
    /// Switch LIDs (no CA traffic) routed through each arc so far: what switch-LID hops
    /// are balanced by, apart from the CA flows so as not to disturb them. Only up/down
    /// rules read it; minhop's switch LIDs written at the end by several threads
    /// (`threads.rs`, `write_quick`) are not counted.
    pub(super) swl: Vec<u32>,
    /// Round-robin position per switch for switch LIDs that live with CAs.
    srr: Vec<u32>,
    /// First (switch, LID) where CA traffic had to take an escape hop.
    pub escape_traffic: Option<(usize, u16)>,
}

/// Load levels the rotation shortcut tracks per run (see [`sibs_rotation`]).
const LEVELS: usize = 4;

/// Most LIDs of one destination switch placed together (bounds the flow buffer).
const CHUNK: usize = 64;

impl Loads {
    pub(crate) fn new(net: &Net) -> Self {
        let n = net.n_sw;
        // Stride: the most CA LIDs any switch carries (capped), so a fat tree's flow buffer
        // is exactly switches x CAs per leaf.
        let mut stride = 1usize;
        let mut lids = Vec::new();
        for s in 0..n {
            net.lids_on(s, &mut lids);
            stride = stride.max(lids.iter().filter(|l| l.1 > 0).count());
        }
        let stride = stride.min(CHUNK);
        let mut flow = vec![0u32; n * stride];
        for s in 0..n {
            flow[s * stride..(s + 1) * stride].fill(net.nsrc[s]);
        }
        Loads {
            load: vec![0; net.n_arcs()],
            light: vec![0; net.n_arcs()],
            flow,
            stride,
            rr: vec![0; n],
            swl: vec![0; net.n_arcs()],
            srr: vec![0; n],
            escape_traffic: None,
        }
    }

    /// Adds `f` to arc `a` for a LID with `sibs` LMC siblings before it.
    #[inline]
    pub(super) fn add(&mut self, a: usize, f: u64, sibs: usize) {
        self.load[a] += f;
        if sibs == 0 {
            self.light[a] = self.light[a].saturating_add(u32::try_from(f).unwrap_or(u32::MAX));
        }
    }

    /// What a LID with `sibs` siblings before it is balanced by on arc `a`: `light` for
    /// base LIDs, all LIDs' `load` for siblings.
    #[inline]
    pub(crate) fn key(&self, sibs: usize, a: usize) -> u64 {
        if sibs == 0 {
            u64::from(self.light[a])
        } else {
            self.load[a]
        }
    }

    /// Least loaded arc among arcs `lo..hi` (lowest on ties).
    #[inline]
    fn min_run(&self, lo: usize, hi: usize) -> usize {
        // The least load first (a branch-free, vectorisable pass), then its first arc.
        let loads = &self.light[lo..hi];
        let m = loads.iter().copied().fold(u32::MAX, u32::min);
        lo + loads.iter().position(|&l| l == m).unwrap_or(0)
    }
}

/// Places every LID of `lids` (all living on `plan.t`) into `rows` (one LFT per switch).
///
/// LIDs are taken in chunks; inside a chunk each switch (farthest first) decides for all
/// its LIDs in a row. That gives the same tables as placing one LID at a time across all
/// switches: a switch's choice depends only on its own arcs' loads, its own earlier
/// choices and the flow its upstream switches (decided earlier) send it for that LID.
///
/// `sides` (each switch's arcs by direction) places [`Hops::Deferred`] plans.
pub(crate) fn place<P: Prefer + ?Sized>(
    plan: &Plan,
    lids: &[(u16, u8, u16)],
    rows: &mut [&mut [u8]],
    net: &Net,
    loads: &mut Loads,
    pref: &P,
    sides: Option<&Sides>,
) {
    let t = plan.t;
    for &(lid, ..) in lids {
        let exit = net
            .dest_switch(usize::from(lid))
            .map_or(NO_ROUTE, |(_, port)| port);
        rows[t][usize::from(lid)] = exit;
    }
    note_escape_traffic(plan, lids, net, loads);
    let mut weighted = [(0u16, 0u16); CHUNK];
    let mut k = 0;
    for &(lid, w, base) in lids {
        if w == 0 {
            continue;
        }
        weighted[k] = (lid, base);
        k += 1;
        if k == loads.stride {
            place_chunk(plan, &weighted[..k], rows, net, loads, pref);
            k = 0;
        }
    }
    if k > 0 {
        place_chunk(plan, &weighted[..k], rows, net, loads, pref);
    }
    for &(lid, w, base) in lids {
        if w == 0 {
            if plan.quick {
                place_switch_lid(plan, lid, rows, net, loads, sides);
            } else {
                place_unweighted(plan, lid, base, rows, net, loads, pref);
            }
        }
    }
}

/// A switch's own LID alone on its switch (a quick plan, one hop per switch: for up/down
/// rules the one with the fewest switch LIDs so far, chosen by the plan or, from a
/// [`Hops::Deferred`] plan, here), counted per arc.
/// Records the first CA traffic of `plan.t`'s LIDs that takes an escape hop (a switch
/// of `plan.escaped` that CAs send from), for [`place`] and [`repair`] alike.
pub(super) fn note_escape_traffic(
    plan: &Plan,
    lids: &[(u16, u8, u16)],
    net: &Net,
    loads: &mut Loads,
) {
    if loads.escape_traffic.is_some() {
        return;
    }
    // Legal switches never forward into escaped ones, so CA traffic meets an escape
    // hop exactly when a CA's own switch has one. Traffic of and to I/O nodes that may
    // reverse is judged after the reverse-hop pass (`crate::reverse`), which replaces
    // its escape hops.
    let Some(&(lid, ..)) = lids
        .iter()
        .find(|l| l.1 > 0 && !net.reverse_hop_dest(usize::from(l.0)))
    else {
        return;
    };
    if let Some(&s) = plan
        .escaped
        .iter()
        .find(|&&s| net.nsrc[s as usize] > 0 && !net.only_io_sources(s as usize))
    {
        loads.escape_traffic = Some((s as usize, lid));
    }
}

/// A quick plan with one hop per switch (`Hops::First`: minhop's
/// switch-LID destinations) in a byte a switch: the port of each switch's hop, `NO_ROUTE`
/// for the destination and the switches without a route. That is all [`place`] reads of
/// such a plan, and it depends on no loads, so the planning threads can make these far
/// ahead of the placing thread (a full plan is 4 bytes an arc and more).
pub(crate) struct QuickHops {
    /// The destination switch.
    t: usize,
    ports: Box<[u8]>,
    /// Switches that took an escape hop ([`Plan::escaped`]).
    pub escapes: usize,
    /// [`Plan::unreachable`].
    pub unreachable: Option<usize>,
}

impl QuickHops {
    /// `plan`'s hops; `None` unless it is a quick plan with its hops chosen.
    pub(crate) fn of(plan: &Plan, net: &Net) -> Option<Self> {
        if !plan.quick || plan.deferred().is_some() {
            return None;
        }
        let mut ports = vec![NO_ROUTE; net.n_sw].into_boxed_slice();
        for (i, &s) in plan.order.iter().enumerate() {
            ports[s as usize] = net.aport[*plan.eligible(i).first()? as usize];
        }
        Some(QuickHops {
            t: plan.t,
            ports,
            escapes: plan.escaped.len(),
            unreachable: plan.unreachable,
        })
    }

    /// Writes switch `s`'s entry for the switch LID `col` of this destination into `row`
    /// (`s`'s LFT): what [`place`] writes there from the plan the hops were made of.
    #[inline]
    pub(crate) fn write(&self, s: usize, row: &mut [u8], col: usize, net: &Net) {
        if s == self.t {
            row[col] = net.dest_switch(col).map_or(NO_ROUTE, |(_, port)| port);
        }
        let port = self.ports[s];
        if port != NO_ROUTE {
            row[col] = port;
        }
    }
}

fn place_switch_lid(
    plan: &Plan,
    lid: u16,
    rows: &mut [&mut [u8]],
    net: &Net,
    loads: &mut Loads,
    sides: Option<&Sides>,
) {
    let col = usize::from(lid);
    if let (Some(d), Some(sides)) = (plan.deferred(), sides) {
        for &s in &plan.order {
            let (best, _) = least_used_hop(d, s as usize, net, sides, &loads.swl);
            loads.swl[best] += 1;
            rows[s as usize][col] = net.aport[best];
        }
        return;
    }
    for (i, &s) in plan.order.iter().enumerate() {
        // The plan chose the least used hop already.
        let best = plan.eligible(i)[0] as usize;
        loads.swl[best] += 1;
        rows[s as usize][col] = net.aport[best];
    }
}

/// The hop switch `s` takes for a switch LID from a [`Hops::Deferred`] plan `d`: among the
/// hops [`Hops::Least`] chooses among (found again from what its BFS saw), the one with the
/// fewest switch LIDs so far (`swl`), the first that BFS meets on ties. The same hop as
/// that plan chooses, since it depends only on the counts of `s`'s own arcs. Also says
/// whether a tie was broken.
pub(crate) fn least_used_hop(
    d: &Deferred,
    s: usize,
    net: &Net,
    sides: &Sides,
    swl: &[u32],
) -> (usize, bool) {
    let st = &d.st[..];
    let me = st[s];
    let near = (me & ST_DIST_MASK) - (1 << ST_DIST);
    let (ups, downs) = sides.of(s);
    let (mut best, mut low) = (NONE as usize, u32::MAX);
    let rank = |x: u64| (x & !ST_DIST_MASK) >> ST_RANK;
    if rank(me) != 0 {
        // Escaping in the later passes: through the nearest switches with a route by
        // then (ranked before it), the first in CSR order on ties.
        let mine = rank(me);
        for a in net.arcs(s) {
            let x = st[net.adst[a] as usize];
            if x & ST_DIST_MASK == near && rank(x) < mine && swl[a] < low {
                (best, low) = (a, swl[a]);
            }
        }
        return (best, false);
    }
    // A legal switch: an UP one climbs to any switch the BFS reached one hop nearer, a
    // DOWN one descends to DOWN ones there. Escaping next to the BFS: down into the UP
    // switches it reached nearest.
    let (arcs, mask, want) = if me & ST_ESCAPED != 0 {
        (downs, ST_DIST_MASK | ST_DOWN | ST_ESCAPED, near)
    } else if me & ST_DOWN != 0 {
        (downs, ST_DIST_MASK | ST_DOWN | ST_ESCAPED, near | ST_DOWN)
    } else {
        (ups, ST_DIST_MASK | ST_ESCAPED, near)
    };
    // When the BFS met hop `a` into `c`: `c`'s place in its queue, then `c`'s arc back.
    let met = |a: usize, c: usize| d.qpos[c] | sides.back[a];
    let (mut bc, mut first, mut tied) = (0usize, u32::MAX, false);
    for &(a, c) in arcs {
        let (a, c) = (a as usize, c as usize);
        if st[c] & mask != want {
            continue;
        }
        let u = swl[a];
        if u < low {
            (best, bc, low, first) = (a, c, u, u32::MAX);
        } else if u == low {
            tied = true;
            if first == u32::MAX {
                first = met(best, bc);
            }
            let f = met(a, c);
            if f < first {
                (best, bc, first) = (a, c, f);
            }
        }
    }
    (best, tied)
}

/// An arc and its head switch.
type Head = (u32, u32);

/// Each switch's arcs (with their heads) split by direction under an up/down rule:
/// `arcs[off[s]..mid[s]]` climb, `arcs[mid[s]..off[s + 1]]` descend, each part in CSR
/// order; and per arc `a` (`s -> c`), the place of `c`'s arc back to `s` among `c`'s.
pub(crate) struct Sides {
    off: Vec<u32>,
    mid: Vec<u32>,
    arcs: Vec<Head>,
    back: Vec<u32>,
}

impl Sides {
    /// The sides of every switch under `rule` (`None` for minhop, which has no sides).
    pub(crate) fn new(net: &Net, rule: Rule<'_>) -> Option<Self> {
        let Rule::UpDown { pos, .. } = rule else {
            return None;
        };
        let up = |a: usize| pos[net.adst[a] as usize] < pos[net.asrc[a] as usize];
        let with_head = |a: usize| (a as u32, net.adst[a]);
        let mut arcs = Vec::with_capacity(net.n_arcs());
        let mut mid = Vec::with_capacity(net.n_sw);
        for s in 0..net.n_sw {
            arcs.extend(net.arcs(s).filter(|&a| up(a)).map(with_head));
            mid.push(arcs.len() as u32);
            arcs.extend(net.arcs(s).filter(|&a| !up(a)).map(with_head));
        }
        let back = (0..net.n_arcs())
            .map(|a| net.arev[a] - net.aoff[net.adst[a] as usize])
            .collect();
        Some(Sides {
            off: net.aoff.clone(),
            mid,
            arcs,
            back,
        })
    }

    /// Switch `s`'s climbing and descending arcs with their heads.
    #[inline]
    fn of(&self, s: usize) -> (&[Head], &[Head]) {
        let (lo, mid, hi) = (
            self.off[s] as usize,
            self.mid[s] as usize,
            self.off[s + 1] as usize,
        );
        (&self.arcs[lo..mid], &self.arcs[mid..hi])
    }
}

/// A LID without CA traffic (a switch's own LID): spread LID counts only.
#[allow(clippy::too_many_arguments)]
fn place_unweighted<P: Prefer + ?Sized>(
    plan: &Plan,
    lid: u16,
    base: u16,
    rows: &mut [&mut [u8]],
    net: &Net,
    loads: &mut Loads,
    pref: &P,
) {
    let col = usize::from(lid);
    let sibs = usize::from(lid - base);
    for (i, &s) in plan.order.iter().enumerate() {
        let s = s as usize;
        let el = plan.eligible(i);
        let mut best = el[0];
        if el.len() > 1 {
            best = match pref.prefer(net, s, (lid, sibs), el, loads, rows[s]) {
                Some(a) => a,
                None if plan.count_switch_lids => {
                    // Round robin of its own (CA LIDs without flow have theirs): O(1),
                    // and the switch-LID destinations' least-used choices even it out.
                    let r = &mut loads.srr[s];
                    *r = r.wrapping_add(1);
                    el[*r as usize % el.len()]
                }
                None => pick_rr(net, el, &mut loads.rr[s], sibs, rows[s], col),
            };
        }
        loads.swl[best as usize] += 1;
        rows[s][col] = net.aport[best as usize];
    }
}

/// Places up to `loads.stride` CA LIDs of one destination.
fn place_chunk<P: Prefer + ?Sized>(
    plan: &Plan,
    chunk: &[(u16, u16)],
    rows: &mut [&mut [u8]],
    net: &Net,
    loads: &mut Loads,
    pref: &P,
) {
    let stride = loads.stride;
    let k = chunk.len();
    let use_pref = pref.active();
    let mut cols = [0usize; CHUNK];
    for (c, &(lid, _)) in cols.iter_mut().zip(chunk) {
        *c = usize::from(lid);
    }
    let cols = &cols[..k];
    // Whether some LID of the chunk has LMC siblings placed before it.
    let any_sibs = chunk.iter().any(|&(lid, base)| lid != base);
    let (aport, adst, nsrc) = (&net.aport[..], &net.adst[..], &net.nsrc[..]);
    for (i, &s) in plan.order.iter().enumerate() {
        let s = s as usize;
        let el = plan.eligible(i);
        let own = nsrc[s];
        let fs = s * stride;
        let row = &mut *rows[s];
        if el.len() == 1 {
            let a = el[0] as usize;
            let (port, x) = (aport[a], adst[a] as usize * stride);
            // Base LIDs' flow and the siblings'.
            let (mut tb, mut ts) = (0u64, 0u64);
            for (j, (&col, &(lid, base))) in cols.iter().zip(chunk).enumerate() {
                let f = std::mem::replace(&mut loads.flow[fs + j], own);
                row[col] = port;
                loads.flow[x + j] += f;
                if lid == base {
                    tb += u64::from(f);
                } else {
                    ts += u64::from(f);
                }
            }
            if tb > 0 {
                loads.add(a, tb, 0);
            }
            if ts > 0 {
                loads.add(a, ts, 1);
            }
            continue;
        }
        let (lo, hi) = (el[0] as usize, el[el.len() - 1] as usize + 1);
        if !use_pref && !any_sibs && hi - lo == el.len() {
            // The hot path (fat trees: all up ports): least loaded arc of a contiguous
            // run, first one on ties. When the run's loads are all equal and every LID
            // that brings traffic brings the same amount (a leaf of a balanced tree), the
            // greedy choice is plain rotation through the run: no scan needed.
            let flows = &loads.flow[fs..fs + k];
            let common = flows.iter().copied().find(|&f| f > 0).unwrap_or(0);
            let level = loads.light[lo];
            if shortcuts()
                && flows.iter().all(|&f| f == 0 || f == common)
                && loads.light[lo..hi].iter().all(|&l| l == level)
            {
                let mut next = lo;
                for (j, &col) in cols.iter().enumerate() {
                    let f = std::mem::replace(&mut loads.flow[fs + j], own);
                    let arc = if f == 0 {
                        pick_rr(net, el, &mut loads.rr[s], 0, row, col) as usize
                    } else {
                        let a = next;
                        next = if next + 1 == hi { lo } else { next + 1 };
                        loads.add(a, u64::from(f), 0);
                        loads.flow[adst[a] as usize * stride + j] += f;
                        a
                    };
                    row[col] = aport[arc];
                }
                continue;
            }
            for (j, &col) in cols.iter().enumerate() {
                let f = std::mem::replace(&mut loads.flow[fs + j], own);
                let arc = if f == 0 {
                    pick_rr(net, el, &mut loads.rr[s], 0, row, col) as usize
                } else {
                    let a = loads.min_run(lo, hi);
                    loads.add(a, u64::from(f), 0);
                    loads.flow[adst[a] as usize * stride + j] += f;
                    a
                };
                row[col] = aport[arc];
            }
            continue;
        }
        let run = hi - lo == el.len();
        if !use_pref
            && run
            && el.len() <= 64
            && shortcuts()
            && sibs_rotation(s, (lo, hi), chunk, cols, row, net, el, loads)
        {
            continue;
        }
        let mut wants = [NONE; CHUNK];
        let batch = use_pref && pref.prefer_chunk(net, s, chunk, el, &mut wants[..k]);
        for (j, &(lid, base)) in chunk.iter().enumerate() {
            let col = cols[j];
            let sibs = usize::from(lid - base);
            let f = std::mem::replace(&mut loads.flow[fs + j], own);
            let wanted = if batch {
                Some(wants[j]).filter(|&a| a != NONE)
            } else if use_pref {
                pref.prefer(net, s, (lid, sibs), el, loads, row)
            } else {
                None
            };
            let arc = if let Some(a) = wanted {
                a as usize
            } else if f == 0 {
                // No CA traffic passes here for this LID: only LID counts matter.
                pick_rr(net, el, &mut loads.rr[s], sibs, row, col) as usize
            } else if sibs == 0 && run {
                loads.min_run(lo, hi)
            } else {
                // Least loaded, avoiding ports taken by this LID's LMC siblings.
                let mut best = NONE as usize;
                let mut bkey = (true, u64::MAX);
                for &a in el {
                    let clash = sibs > 0 && {
                        let port = aport[a as usize];
                        (1..=sibs).any(|q| row[col - q] == port)
                    };
                    let key = (clash, loads.key(sibs, a as usize));
                    if key < bkey {
                        bkey = key;
                        best = a as usize;
                    }
                }
                best
            };
            row[col] = aport[arc];
            if f > 0 {
                loads.add(arc, u64::from(f), sibs);
                loads.flow[adst[arc] as usize * stride + j] += f;
            }
        }
    }
    // The destination switch received flow from its neighbours; reset it.
    loads.flow[plan.t * stride..plan.t * stride + k].fill(nsrc[plan.t]);
}

/// The least-loaded choice with LMC siblings, without scanning, where it is predictable:
/// switch `s`'s eligible arcs are the contiguous run `lo..hi` (at most 64), their loads
/// (the base LIDs' and all LIDs', see [`Loads`]) are all equal and every LID of the chunk
/// that brings traffic brings the same flow `f` (a leaf of a balanced tree). Then every
/// arc's load is the level plus a few times `f`, kept as one bit mask per multiple and
/// per kind of load, and the greedy choice of the scan (no sibling's port first, then the
/// lowest load, then the lowest arc) is the lowest bit of the lowest level that is not all
/// siblings' ports. Should an arc climb past the [`LEVELS`] tracked, the rest of the
/// chunk is scanned as [`place_chunk`] does. Returns false (nothing done) when the
/// conditions do not hold. Same tables as the scan, byte for byte.
#[allow(clippy::too_many_arguments)]
fn sibs_rotation(
    s: usize,
    (lo, hi): (usize, usize),
    chunk: &[(u16, u16)],
    cols: &[usize],
    row: &mut [u8],
    net: &Net,
    el: &[u32],
    loads: &mut Loads,
) -> bool {
    let stride = loads.stride;
    let k = chunk.len();
    let fs = s * stride;
    let n = hi - lo;
    let flows = &loads.flow[fs..fs + k];
    let common = flows.iter().copied().find(|&f| f > 0).unwrap_or(0);
    let (light, load) = (&loads.light[lo..hi], &loads.load[lo..hi]);
    if !flows.iter().all(|&f| f == 0 || f == common)
        || !light.iter().all(|&l| l == light[0])
        || !load.iter().all(|&l| l == load[0])
    {
        return false;
    }
    let own = net.nsrc[s];
    let (aport, adst) = (&net.aport[..], &net.adst[..]);
    let full = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    let ports =
        &net.peer[net.pbase[s] as usize..=net.pbase[s] as usize + usize::from(net.nports[s])];
    // `lb[i]` / `lt[i]`: the arcs of the run whose `light` / `load` is `i` flows above
    // its level (a bit per arc).
    let (mut lb, mut lt) = ([0u64; LEVELS], [0u64; LEVELS]);
    (lb[0], lt[0]) = (full, full);
    let mut exact = true;
    for (j, (&(lid, base), &col)) in chunk.iter().zip(cols).enumerate() {
        let sibs = usize::from(lid - base);
        let f = std::mem::replace(&mut loads.flow[fs + j], own);
        let arc = if f == 0 {
            pick_rr(net, el, &mut loads.rr[s], sibs, row, col) as usize
        } else if exact {
            let mut clash = 0u64;
            for q in 1..=sibs {
                if let Some(Peer::Switch { arc, .. }) = ports.get(usize::from(row[col - q])) {
                    let off = (*arc as usize).wrapping_sub(lo);
                    if off < n {
                        clash |= 1 << off;
                    }
                }
            }
            // Base LIDs go by their own loads, siblings by all LIDs'.
            let lv = if sibs == 0 { &lb } else { &lt };
            // The least loaded arc no sibling took, else (all taken by siblings) the
            // least loaded one; the lowest on ties.
            let k = (0..LEVELS)
                .find(|&i| lv[i] & !clash != 0)
                .or_else(|| (0..LEVELS).find(|&i| lv[i] != 0))
                .unwrap_or(0);
            let m = if lv[k] & !clash != 0 {
                lv[k] & !clash
            } else {
                lv[k]
            };
            let off = m.trailing_zeros();
            exact = raise(&mut lt, off) && (sibs > 0 || raise(&mut lb, off));
            lo + off as usize
        } else {
            let mut best = NONE as usize;
            let mut bkey = (true, u64::MAX);
            for (a, &port) in (lo..hi).zip(&aport[lo..hi]) {
                let clash = (1..=sibs).any(|q| row[col - q] == port);
                let key = (clash, loads.key(sibs, a));
                if key < bkey {
                    bkey = key;
                    best = a;
                }
            }
            best
        };
        row[col] = aport[arc];
        if f > 0 {
            loads.add(arc, u64::from(f), sibs);
            loads.flow[adst[arc] as usize * stride + j] += f;
        }
    }
    true
}

/// Moves arc `off` of a run one flow up in the level masks `lv` of [`sibs_rotation`];
/// false when it would climb past the levels tracked (the masks are then stale).
#[inline]
fn raise(lv: &mut [u64; LEVELS], off: u32) -> bool {
    let bit = 1u64 << off;
    let Some(i) = (0..LEVELS).find(|&i| lv[i] & bit != 0) else {
        return false;
    };
    if i + 1 == LEVELS {
        return false;
    }
    lv[i] &= !bit;
    lv[i + 1] |= bit;
    if lv[0] == 0 {
        // Every arc is one flow up: that is the new level.
        lv.copy_within(1.., 0);
        lv[LEVELS - 1] = 0;
    }
    true
}

impl Loads {
    /// The arc switch `s` takes among its eligible arcs `el` (non-empty) for column `col`
    /// of `row`: see [`pick`].
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pick(
        &mut self,
        net: &Net,
        s: usize,
        el: &[u32],
        f: u32,
        sibs: usize,
        row: &[u8],
        col: usize,
    ) -> usize {
        if sibs == 0 {
            pick(net, el, &self.light, &mut self.rr[s], f, sibs, row, col)
        } else {
            pick(net, el, &self.load, &mut self.rr[s], f, sibs, row, col)
        }
    }
}

/// The arc a switch takes among its eligible arcs `el` (non-empty) for column `col` of
/// its LFT `row`: with traffic (`f > 0`) the least loaded one (`load` per arc) not taken
/// by one of the `sibs` LMC siblings before `col`, without traffic the next one round
/// robin (`rr`, the switch's position; LID counts spread in O(1)).
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pick<T: Copy + Into<u64>>(
    net: &Net,
    el: &[u32],
    load: &[T],
    rr: &mut u32,
    f: u32,
    sibs: usize,
    row: &[u8],
    col: usize,
) -> usize {
    if el.len() == 1 {
        return el[0] as usize;
    }
    if f == 0 {
        return pick_rr(net, el, rr, sibs, row, col) as usize;
    }
    let mut best = el[0] as usize;
    let mut bkey = (true, u64::MAX);
    for &a in el {
        let port = net.aport[a as usize];
        let clash = (1..=sibs).any(|q| row[col - q] == port);
        let key = (clash, load[a as usize].into());
        if key < bkey {
            bkey = key;
            best = a as usize;
        }
    }
    best
}

/// Round robin over the eligible arcs of one switch (spreads LID counts in O(1)),
/// skipping ports already taken by this LID's LMC siblings.
#[inline]
fn pick_rr(net: &Net, el: &[u32], rr: &mut u32, sibs: usize, row: &[u8], col: usize) -> u32 {
    let n = el.len();
    let start = *rr;
    let first = (start % n as u32) as usize;
    if sibs == 0 {
        *rr = start + 1;
        return el[first];
    }
    let mut j = first;
    for i in 0..n {
        let a = el[j];
        let port = net.aport[a as usize];
        if !(1..=sibs).any(|k| row[col - k] == port) {
            *rr = start + i as u32 + 1;
            return a;
        }
        j += 1;
        if j == n {
            j = 0;
        }
    }
    *rr = start + 1;
    el[first]
}
