//! Layer-aware placement of each destination's paths, shared by both engines.

use super::layering::Layering;
use crate::error::{Result, RoutingError};
use crate::net::{NONE, Net};

/// Layer-aware placement (both engines). For each destination LID the switches are taken
/// in BFS order from its switch, so when switch `s` decides, every switch nearer the
/// destination already has its hop, and every switch with CAs there has its path on a
/// layer. `s` may take any shortest next hop `x`; its path is then its own hop plus
/// `x`'s path, so joining the layer of the first switch with CAs on the way adds only the
/// dependencies up to there (one, when `x` has CAs): O(1) when they are already there, a
/// local reorder otherwise. `s` takes the lowest layer it can join (the
/// balanced route's hop first, then the least used hop); if it can join none, the
/// balanced hop's whole path goes to the first higher layer that takes it. Layers only
/// gain dependencies, so a layer that rejected `x`'s path rejects every path through
/// `x`: each path's layer is a first fit. A switch without CAs only picks its hop (towards
/// the lowest layer); its hops become dependencies when a CA's path uses them, so routes
/// that no traffic takes constrain nothing (on degraded fat trees that saves a layer).
pub(super) struct Placement {
    /// SL per (source switch, LID), as `Routes::sl`.
    pub(super) sl: Vec<u8>,
    // The LIDs of one destination switch share its BFS, so they are placed side by side:
    // entry `s * k + j` is switch `s`'s state for the destination's `j`-th LID: its hop,
    // and the layer of the path of the nearest switch with CAs on its way (itself if it
    // has CAs; 0 for the destination).
    layer: Vec<u8>,
    hop: Vec<u32>,
    down_buf: Vec<u32>,
    /// Where each of those hops' state starts in `layer` / `hop` (`x * k`).
    down_at: Vec<usize>,
    /// Candidate hops as sortable keys: layer (8 bits), not the balanced hop (1), use
    /// count (32), position among the shortest hops, that is arc order (16).
    cands: Vec<u64>,
    deps: Vec<(u32, u32)>,
    /// Per arc: how often a switch took it instead of its balanced hop.
    used: Vec<u32>,
}

/// One destination switch's input to [`Placement::dest`].
pub(super) struct Column<'c> {
    pub(super) t: usize,
    /// Its LIDs ([`Net::lids_on`]).
    pub(super) lids: &'c [(u16, u8, u16)],
    /// Its BFS: distances and the switches nearest first (`t` first).
    pub(super) dist: &'c [u16],
    pub(super) queue: &'c [u32],
    /// The balanced hop (arc) of switch `s` for the `j`-th LID at `s * k + j`: one of its
    /// shortest next hops, or `NONE`.
    pub(super) bal: &'c [u32],
    /// The shortest next hops of each switch, if known.
    pub(super) down: Option<Downs<'c>>,
}

/// Marks the branch it is called from as rarely taken, which keeps it a branch (the
/// compiler turns short two-way branches into conditional moves otherwise);
/// `std::hint::cold_path` from Rust 1.95 on.
#[cold]
#[inline]
pub(super) fn cold() {}

/// The shortest next hops of switch `s` towards one destination, in arc order:
/// `arcs[span[s].0..][..span[s].1]`; `at` holds their heads times the LIDs per switch.
#[derive(Clone, Copy)]
pub(super) struct Downs<'c> {
    pub(super) span: &'c [(u32, u32)],
    pub(super) arcs: &'c [u32],
    pub(super) at: &'c [usize],
}

impl Placement {
    pub(super) fn new(net: &Net) -> Self {
        let max_deg = (0..net.n_sw).map(|s| net.arcs(s).len()).max().unwrap_or(0);
        Placement {
            sl: vec![0u8; net.n_sw * net.lft_len],
            layer: Vec::new(),
            hop: Vec::new(),
            down_buf: vec![0; max_deg],
            down_at: vec![0; max_deg],
            cands: vec![0; max_deg],
            deps: Vec::new(),
            used: vec![0u32; net.n_arcs()],
        }
    }

    /// Places the LIDs of one destination switch (`col`) into `lfts` (which hold the
    /// balanced ports) and `self.sl`.
    #[allow(clippy::too_many_lines)]
    pub(super) fn dest(
        &mut self,
        net: &Net,
        lfts: &mut [u8],
        lay: &mut Layering<'_>,
        max: usize,
        col: &Column<'_>,
    ) -> Result<()> {
        let n = net.n_sw;
        let len = net.lft_len;
        let (t, lids, dist, bal) = (col.t, col.lids, col.dist, col.bal);
        let k = lids.len();
        let Placement {
            sl,
            layer,
            hop,
            down_buf,
            down_at,
            cands,
            deps,
            used,
        } = self;
        // A switch's entries are written before anyone reads them (they are nearer the
        // destination), except the destination's own: layer 0, no hop.
        layer.resize(n * k, 0);
        hop.resize(n * k, NONE);
        layer[t * k..(t + 1) * k].fill(0);
        // Plain slices: the vectors' headers would be reloaded after every store.
        let (layer, hop, sl, used) = (&mut layer[..], &mut hop[..], &mut sl[..], &mut used[..]);
        let (down_buf, down_at, cands) = (&mut down_buf[..], &mut down_at[..], &mut cands[..]);
        let (adst, aport, nsrc) = (&net.adst[..], &net.aport[..], &net.nsrc[..]);
        for &s in &col.queue[1..] {
            let s = s as usize;
            let source = nsrc[s] > 0;
            let ds = dist[s];
            // The shortest next hops, shared by the destination's LIDs.
            let (down, down_at) = match col.down {
                Some(dn) => {
                    let (o, m) = (dn.span[s].0 as usize, dn.span[s].1 as usize);
                    (&dn.arcs[o..o + m], &dn.at[o..o + m])
                }
                None => {
                    // Written without a branch: which neighbours are nearer is
                    // unpredictable.
                    let mut m = 0;
                    for a in net.arcs(s) {
                        let x = adst[a] as usize;
                        down_buf[m] = a as u32;
                        down_at[m] = x * k;
                        m += usize::from(dist[x] + 1 == ds);
                    }
                    (&down_buf[..m], &down_at[..m])
                }
            };
            for (j, &(lid, _, _)) in lids.iter().enumerate() {
                let lid = usize::from(lid);
                let e = s * k + j;
                let pref = bal[e];
                let pref_ok = pref != NONE;
                if ds == 1 {
                    // One hop: no dependency, layer 0; keep the balanced port.
                    let a = if pref_ok { pref } else { down[0] };
                    hop[e] = a;
                    layer[e] = 0;
                    lfts[s * len + lid] = aport[a as usize];
                    continue;
                }
                let pref_l = if pref_ok {
                    layer[adst[pref as usize] as usize * k + j]
                } else {
                    u8::MAX
                };
                // The lowest layer among the hops' paths (layer 0 is the lowest there is).
                let low = if pref_l == 0 {
                    0
                } else {
                    down_at
                        .iter()
                        .map(|&xk| layer[xk + j])
                        .min()
                        .unwrap_or(u8::MAX)
                };
                let pref_low = pref_ok && pref_l == low;
                if !source {
                    // Nothing to place: head for the lowest layer, the balanced hop first.
                    let a = if pref_low {
                        pref
                    } else {
                        down.iter()
                            .copied()
                            .filter(|&a| layer[adst[a as usize] as usize * k + j] == low)
                            .min_by_key(|&a| used[a as usize])
                            .unwrap_or(down[0])
                    };
                    if a != pref {
                        used[a as usize] += 1;
                        lfts[s * len + lid] = aport[a as usize];
                    }
                    hop[e] = a;
                    layer[e] = low;
                    continue;
                }
                // Fast path: the balanced hop leads to the lowest layer and fits there.
                if pref_low && try_path(net, lay, usize::from(low), (hop, k, j, t), pref, deps) {
                    hop[e] = pref;
                    layer[e] = low;
                    sl[s * len + lid] = low;
                    continue;
                }
                for (i, (&a, &xk)) in down.iter().zip(down_at).enumerate() {
                    cands[i] = (u64::from(layer[xk + j]) << 56)
                        | (u64::from(a != pref) << 55)
                        | (u64::from(used[a as usize]) << 16)
                        | i as u64;
                }
                let cands = &cands[..down.len()];
                // In key order, picked one at a time: the first or second usually fits,
                // so sorting them all costs more than it saves.
                let first = cands.iter().copied().min().expect("a shortest hop");
                let mut got = None;
                let mut key = first;
                loop {
                    let (lx, a) = ((key >> 56) as u8, down[(key & 0xffff) as usize]);
                    if !(pref_low && a == pref) // the fast path just failed on it
                        && try_path(net, lay, usize::from(lx), (hop, k, j, t), a, deps)
                    {
                        got = Some((a, usize::from(lx)));
                        break;
                    }
                    match cands.iter().copied().filter(|&c| c > key).min() {
                        Some(c) => key = c,
                        None => break,
                    }
                }
                let (a, l) = match got {
                    Some(g) => g,
                    None => {
                        // Through the preferred hop on the first layer above its path's.
                        let a = if pref_ok {
                            pref
                        } else {
                            down[(first & 0xffff) as usize]
                        };
                        let l = higher_layer(net, lay, max, (hop, k, j, t), a, layer, deps)
                            .map_err(|e| match e {
                                RoutingError::InvalidInput(_) => {
                                    RoutingError::InvalidInput(format!(
                                        "the route from switch #{s} to LID {lid} depends on itself"
                                    ))
                                }
                                e => e,
                            })?;
                        (a, l)
                    }
                };
                if a != pref {
                    used[a as usize] += 1;
                    lfts[s * len + lid] = aport[a as usize];
                }
                hop[e] = a;
                layer[e] = l as u8;
                sl[s * len + lid] = l as u8;
            }
        }
        Ok(())
    }
}

/// Puts the whole path through first hop `a` (`col` as in [`try_path`]) on the first layer
/// above that of the path it joins (`layer` per `s * k + j`) that takes it, opening one if
/// none does and fewer than `max` are open.
#[cold]
#[inline(never)]
pub(super) fn higher_layer(
    net: &Net,
    lay: &mut Layering<'_>,
    max: usize,
    col: (&[u32], usize, usize, usize),
    a: u32,
    layer: &[u8],
    deps: &mut Vec<(u32, u32)>,
) -> Result<usize> {
    let (hop, k, j, t) = col;
    let x = net.adst[a as usize] as usize;
    deps.clear();
    let (mut p, mut y) = (a, x);
    while y != t {
        deps.push((p, hop[y * k + j]));
        p = hop[y * k + j];
        y = net.adst[p as usize] as usize;
    }
    let from = usize::from(layer[x * k + j]) + 1;
    for l in from..lay.layers.len() {
        if lay.try_unit(l, deps) {
            return Ok(l);
        }
    }
    if lay.layers.len() < max {
        lay.open();
        let l = lay.layers.len() - 1;
        if !lay.try_unit(l, deps) {
            return Err(RoutingError::InvalidInput(
                "a route depends on itself".into(),
            ));
        }
        return Ok(l);
    }
    Err(RoutingError::NotEnoughVls {
        needed: (lay.layers.len() + 1).min(255) as u8,
        available: max as u8,
    })
}

/// Tries to put on layer `l` the dependencies a path through first hop `a` adds on top
/// of the path of the nearest switch with CAs (or the destination) it reaches: hops
/// through CA-less switches are nobody's path until a source uses them. `col` is the
/// destination's placement state: hops (`s * k + j`), LIDs per switch `k`, this LID's
/// index `j`, destination switch `t`.
#[inline(always)]
pub(super) fn try_path(
    net: &Net,
    lay: &mut Layering<'_>,
    l: usize,
    col: (&[u32], usize, usize, usize),
    a: u32,
    deps: &mut Vec<(u32, u32)>,
) -> bool {
    let (hop, k, j, t) = col;
    let x = net.adst[a as usize] as usize;
    if x != t && net.nsrc[x] > 0 {
        // The common case: one dependency, onto the path of a switch with CAs.
        // (`Layer::units` counts only for LASH's balancing, which recounts them.)
        return lay.insert(l, a, hop[x * k + j]);
    }
    deps.clear();
    let (mut prev, mut y) = (a, x);
    while y != t {
        deps.push((prev, hop[y * k + j]));
        if net.nsrc[y] > 0 {
            break;
        }
        prev = hop[y * k + j];
        y = net.adst[prev as usize] as usize;
    }
    lay.try_unit(l, deps)
}
