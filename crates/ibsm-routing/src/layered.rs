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

use ibsm_topology::Csr;

use crate::engine::{Options, RoutingEngine};
use crate::error::{Result, RoutingError};
use crate::lids::LidAssignment;
use crate::minhop::minhop_net;
use crate::net::{NONE, Net};
use crate::routes::NO_ROUTE;
use crate::routes::Routes;
use crate::validate::{arc_of, dep_base};

/// Layered shortest-path routing (LASH).
#[derive(Clone, Copy, Debug, Default)]
pub struct Lash;

/// Deadlock-free single-source shortest paths (DFSSSP).
#[derive(Clone, Copy, Debug, Default)]
pub struct Dfsssp;

/// `Layer::st` of a dependency not on the layer.
const ABSENT: u8 = 0;
/// `Layer::st` of a dependency on the layer.
const PRESENT: u8 = 1;
/// `Layer::st` of a dependency known to close a cycle on that layer.
const FORBIDDEN: u8 = 2;

/// One layer: which dependencies it holds and a topological order of channels (arcs).
struct Layer {
    /// State per dependency, a byte each so that the probes, most of the placement's
    /// memory traffic, stay in cache (a 4-layer 8x8x4 torus: 37 KB, not 147 KB of counts).
    st: Vec<u8>,
    /// Paths per dependency, kept only while `Layering::counting` (LASH's balancing
    /// removes single paths; the placement only ever rolls back what a unit added).
    cnt: Vec<u32>,
    /// Per channel `a`, bit `i`: dependency `a -> aoff[adst[a]] + i` is on the layer.
    /// Kept only while `Layering::masks`: the order searches then visit the present
    /// dependencies without probing (and mispredicting) every absent one.
    succ: Vec<u64>,
    /// Per channel `x` out of switch `v`, bit `i`: dependency `arev[aoff[v] + i] -> x` is
    /// on the layer (as `succ`).
    pred: Vec<u64>,
    /// Order label per channel (increasing along the order).
    ord: Vec<u64>,
    /// The order as a doubly linked list of channels (`NONE` ends it).
    next: Vec<u32>,
    prev: Vec<u32>,
    head: u32,
    mark: Vec<u32>,
    epoch: u32,
    units: u64,
}

struct Layering<'a> {
    net: &'a Net,
    /// The channel order a new layer starts with.
    init: Vec<u32>,
    dbase: Vec<usize>,
    /// `dbase[a] - aoff[adst[a]]` (wrapping): dependency `a -> b` is `dfix[a] + b`, one
    /// load where the probes would chain three.
    dfix: Vec<usize>,
    layers: Vec<Layer>,
    bwd: Vec<u32>,
    stack: Vec<u32>,
    fwd: Vec<u32>,
    fstack: Vec<u32>,
    kb: Vec<(u64, u32)>,
    /// Whether `Layer::cnt` is kept (see there).
    counting: bool,
    /// Whether `Layer::succ` / `Layer::pred` are kept: no switch has more than 64 arcs,
    /// and not while counting.
    masks: bool,
    /// Dependencies the unit being tried added (for its rollback).
    added: Vec<(usize, u32, u32)>,
}

impl Layer {
    /// Spreads the labels evenly along the list.
    fn relabel(&mut self) {
        let gap = u64::MAX / (self.ord.len() as u64 + 2);
        let (mut x, mut l) = (self.head, gap);
        while x != NONE {
            self.ord[x as usize] = l;
            l += gap;
            x = self.next[x as usize];
        }
    }

    /// Takes `x` out of the list (its label stays until it is put back).
    fn unlink(&mut self, x: u32) {
        let (p, n) = (self.prev[x as usize], self.next[x as usize]);
        if p == NONE {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
    }

    /// Labels `moved`, now in that order between labels `lo` and `hi`, evenly spaced
    /// there; relabels the whole list when no gap is left.
    fn spread(&mut self, moved: &[(u64, u32)], lo: u64, hi: u64) {
        let step = (hi - lo) / (moved.len() as u64 + 1);
        if step == 0 {
            self.relabel();
            return;
        }
        for (i, &(_, x)) in moved.iter().enumerate() {
            self.ord[x as usize] = lo + step * (i as u64 + 1);
        }
    }

    /// Moves `moved` (in that order, none of them `b`) to just before `b`.
    fn move_before(&mut self, moved: &[(u64, u32)], b: u32) {
        for &(_, x) in moved {
            self.unlink(x);
            let q = self.prev[b as usize];
            self.prev[x as usize] = q;
            self.next[x as usize] = b;
            if q == NONE {
                self.head = x;
            } else {
                self.next[q as usize] = x;
            }
            self.prev[b as usize] = x;
        }
        // Labels between b's new predecessor group and b.
        let first = moved[0].1;
        let q = self.prev[first as usize];
        let lo = if q == NONE { 0 } else { self.ord[q as usize] };
        let hi = self.ord[b as usize];
        self.spread(moved, lo, hi);
    }

    /// Moves `moved` (in that order, none of them `a`) to just after `a`.
    fn move_after(&mut self, moved: &[(u64, u32)], a: u32) {
        let mut cur = a;
        for &(_, x) in moved {
            self.unlink(x);
            let q = self.next[cur as usize];
            self.next[x as usize] = q;
            self.prev[x as usize] = cur;
            self.next[cur as usize] = x;
            if q != NONE {
                self.prev[q as usize] = x;
            }
            cur = x;
        }
        // Labels between a and its old successor.
        let n = self.next[cur as usize];
        let lo = self.ord[a as usize];
        let hi = if n == NONE {
            u64::MAX
        } else {
            self.ord[n as usize]
        };
        self.spread(moved, lo, hi);
    }

    #[inline]
    fn add(&mut self, d: usize, counting: bool) {
        self.st[d] = PRESENT;
        if counting {
            self.cnt[d] += 1;
        }
    }
}

impl<'a> Layering<'a> {
    /// `up_pos`: a switch order (lower = nearer the root) that most paths climb and then
    /// descend; each layer's channel order starts out agreeing with such paths (up arcs
    /// before down arcs, climbing from the bottom, descending from the top), so most
    /// dependencies arrive in order and need no reordering.
    fn new(net: &'a Net, up_pos: Option<&[u32]>) -> Self {
        let na = net.n_arcs();
        let init = match up_pos {
            None => (0..na as u32).collect(),
            Some(pos) => {
                let key = |a: usize| {
                    let (u, v) = (pos[net.asrc[a] as usize], pos[net.adst[a] as usize]);
                    if v < u { (0, u32::MAX - u) } else { (1, u) }
                };
                let mut by: Vec<u32> = (0..na as u32).collect();
                by.sort_unstable_by_key(|&a| key(a as usize));
                let mut ord = vec![0u32; na];
                for (i, &a) in by.iter().enumerate() {
                    ord[a as usize] = i as u32;
                }
                ord
            }
        };
        Layering {
            net,
            init,
            dfix: {
                let dbase = dep_base(net);
                (0..na)
                    .map(|a| dbase[a].wrapping_sub(net.aoff[net.adst[a] as usize] as usize))
                    .collect()
            },
            dbase: dep_base(net),
            layers: Vec::new(),
            bwd: Vec::new(),
            stack: Vec::new(),
            fwd: Vec::new(),
            fstack: Vec::new(),
            kb: Vec::new(),
            counting: false,
            masks: (0..net.n_sw).all(|s| net.arcs(s).len() <= 64),
            added: Vec::new(),
        }
    }

    fn open(&mut self) {
        let na = self.net.n_arcs();
        self.layers.push(Layer {
            st: vec![ABSENT; self.dbase[na]],
            succ: if self.masks { vec![0; na] } else { Vec::new() },
            pred: if self.masks { vec![0; na] } else { Vec::new() },
            cnt: if self.counting {
                vec![0; self.dbase[na]]
            } else {
                Vec::new()
            },
            ord: vec![0; na],
            next: vec![NONE; na],
            prev: vec![NONE; na],
            head: NONE,
            mark: vec![0; na],
            epoch: 0,
            units: 0,
        });
        let mut at = vec![0u32; na];
        for (a, &p) in self.init.iter().enumerate() {
            at[p as usize] = a as u32;
        }
        let layer = self.layers.last_mut().expect("just pushed");
        let mut last = NONE;
        for &x in &at {
            if last == NONE {
                layer.head = x;
            } else {
                layer.next[last as usize] = x;
            }
            layer.prev[x as usize] = last;
            last = x;
        }
        layer.relabel();
    }

    /// Sets (or clears) the mask bits of dependency `a -> b` on layer `l`.
    #[inline]
    fn mask(&mut self, l: usize, a: u32, b: u32, on: bool) {
        if !self.masks {
            return;
        }
        let net = self.net;
        let h = net.adst[a as usize];
        let base = net.aoff[h as usize];
        let layer = &mut self.layers[l];
        let bit = 1u64 << (b - base);
        if on {
            layer.succ[a as usize] |= bit;
        } else {
            layer.succ[a as usize] &= !bit;
        }
        let r = net.arev[a as usize];
        if r != NONE {
            let bit = 1u64 << (r - base);
            if on {
                layer.pred[b as usize] |= bit;
            } else {
                layer.pred[b as usize] &= !bit;
            }
        }
    }

    #[inline]
    fn dep(&self, a: u32, b: u32) -> usize {
        self.dfix[a as usize].wrapping_add(b as usize)
    }

    /// Adds dependency `a -> b` to layer `l`; false if it would close a cycle.
    #[inline(always)]
    fn insert(&mut self, l: usize, a: u32, b: u32) -> bool {
        let d = self.dep(a, b);
        let counting = self.counting;
        let layer = &mut self.layers[l];
        let st = layer.st[d];
        // Most probes find the dependency already there or known to close a cycle.
        if st == FORBIDDEN {
            return false;
        }
        if st == PRESENT {
            if counting {
                layer.cnt[d] += 1;
            }
            return true;
        }
        if layer.ord[a as usize] < layer.ord[b as usize] {
            layer.add(d, counting);
            self.mask(l, a, b, true);
            return true;
        }
        self.insert_reorder(l, a, b, d)
    }

    /// [`Self::insert`] of a new dependency against the layer's current order.
    ///
    /// Searches both ways at once, a channel per side in turn: forward from `b` over the
    /// channels before `a`, backward from `a` over the channels after `b`. The two meet
    /// (or one finds the other end) exactly when `b` already reaches `a`: a cycle. When
    /// one side runs out first, its set is all that has to move: the backward set to just
    /// before `b`, or the forward set to just after `a`. A cycle usually lies on a short
    /// forward path from `b` while the backward set is large, and an accepted dependency
    /// usually has one small side, so neither case pays for the bigger side.
    #[inline(never)]
    fn insert_reorder(&mut self, l: usize, a: u32, b: u32, d: usize) -> bool {
        let net = self.net;
        let dbase = &self.dbase;
        let masks = self.masks;
        let layer = &mut self.layers[l];
        let (la, lb) = (layer.ord[a as usize], layer.ord[b as usize]);
        layer.epoch += 2;
        let (eb, ef) = (layer.epoch, layer.epoch + 1);
        self.bwd.clear();
        self.stack.clear();
        self.stack.push(a);
        layer.mark[a as usize] = eb;
        self.fwd.clear();
        self.fstack.clear();
        self.fstack.push(b);
        layer.mark[b as usize] = ef;
        let backward = loop {
            // Forward: the channels b reaches that sit before a.
            let Some(y) = self.fstack.pop() else {
                break false;
            };
            self.fwd.push(y);
            let h = net.adst[y as usize] as usize;
            let row = dbase[y as usize];
            let base = net.aoff[h] as usize;
            let mut bits = if masks { layer.succ[y as usize] } else { 0 };
            let mut scan = if masks { 0..0 } else { net.arcs(h) };
            loop {
                let w = if bits != 0 {
                    let i = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    base + i
                } else if let Some(w) = scan.next() {
                    if layer.st[row + w - base] != PRESENT {
                        continue;
                    }
                    w
                } else {
                    break;
                };
                let mw = layer.mark[w];
                if mw == eb {
                    layer.st[d] = FORBIDDEN;
                    return false;
                }
                if mw != ef && layer.ord[w] < la {
                    layer.mark[w] = ef;
                    self.fstack.push(w as u32);
                }
            }
            // Backward: the channels that reach a and sit after b.
            let Some(x) = self.stack.pop() else {
                break true;
            };
            self.bwd.push(x);
            let v = net.asrc[x as usize] as usize;
            let off = (x - net.aoff[v]) as usize;
            let base = net.aoff[v] as usize;
            let mut bits = if masks { layer.pred[x as usize] } else { 0 };
            let mut scan = if masks { 0..0 } else { net.arcs(v) };
            loop {
                let z = if bits != 0 {
                    let i = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    net.arev[base + i]
                } else if let Some(c) = scan.next() {
                    let z = net.arev[c];
                    if z == NONE || layer.st[dbase[z as usize] + off] != PRESENT {
                        continue;
                    }
                    z
                } else {
                    break;
                };
                let mz = layer.mark[z as usize];
                if mz == ef {
                    // b reaches z (b itself included), which reaches a. It keeps doing so
                    // as long as no dependency is removed, so later units skip the
                    // search. (LASH's balancing removes some; then this is merely
                    // conservative.)
                    layer.st[d] = FORBIDDEN;
                    return false;
                }
                if mz != eb && layer.ord[z as usize] > lb {
                    layer.mark[z as usize] = eb;
                    self.stack.push(z);
                }
            }
        };
        // Backward: everything that reaches a goes, in its old order, to just before b.
        // An edge into the moved set comes from before b (else its tail would reach a and
        // be in the set, or be b: a cycle), so every edge still points forward. Forward,
        // symmetrically: everything b reaches before a goes, in order, to just after a.
        let ord = &layer.ord;
        let set = if backward { &self.bwd } else { &self.fwd };
        self.kb.clear();
        self.kb.extend(set.iter().map(|&x| (ord[x as usize], x)));
        self.kb.sort_unstable();
        if backward {
            layer.move_before(&self.kb, b);
        } else {
            layer.move_after(&self.kb, a);
        }
        layer.add(d, self.counting);
        self.mask(l, a, b, true);
        true
    }

    /// Takes one path's dependency `a -> b` off layer `l` (only while counting).
    fn remove(&mut self, l: usize, a: u32, b: u32) {
        let d = self.dep(a, b);
        let layer = &mut self.layers[l];
        layer.cnt[d] -= 1;
        if layer.cnt[d] == 0 {
            layer.st[d] = ABSENT;
        }
    }

    /// Tries to put all `deps` on layer `l`, atomically.
    fn try_unit(&mut self, l: usize, deps: &[(u32, u32)]) -> bool {
        if let [(a, b)] = *deps {
            let ok = self.insert(l, a, b);
            self.layers[l].units += u64::from(ok);
            return ok;
        }
        self.added.clear();
        for (i, &(a, b)) in deps.iter().enumerate() {
            let d = self.dep(a, b);
            let was = self.layers[l].st[d];
            if !self.insert(l, a, b) {
                if self.counting {
                    for &(a, b) in &deps[..i] {
                        self.remove(l, a, b);
                    }
                } else {
                    for k in 0..self.added.len() {
                        let (d, a, b) = self.added[k];
                        self.layers[l].st[d] = ABSENT;
                        self.mask(l, a, b, false);
                    }
                }
                return false;
            }
            if was == ABSENT {
                self.added.push((d, a, b));
            }
        }
        self.layers[l].units += 1;
        true
    }
}

/// Dependencies of the path from switch `s` to `lid`.
fn path_deps(net: &Net, r: &Routes, mut s: usize, lid: usize, t: usize, out: &mut Vec<(u32, u32)>) {
    out.clear();
    let mut prev = NONE;
    for _ in 0..net.n_sw {
        if s == t {
            break;
        }
        let a = arc_of(net, s, r.lft(s)[lid]);
        if a == NONE {
            break;
        }
        if prev != NONE {
            out.push((prev, a));
        }
        prev = a;
        s = net.adst[a as usize] as usize;
    }
}

pub(crate) fn layered(net: &Net, opts: &Options, name: &str, dfsssp: bool) -> Result<Routes> {
    if dfsssp {
        return dfsssp_routes(net, opts);
    }
    // LASH on a mesh or torus takes the dimension-order paths (shortest, and they need
    // fewer layers and give more bisection bandwidth there than balanced minhop paths).
    // On a mesh they fit one layer. On a torus a constant layer per path needs 3 or more
    // (7 on 8x8x4): a path's segment in one dimension may need the layer of paths that
    // cross the dateline there while its segment in another dimension needs the other
    // one. So there the layer is chosen per dimension: the SL holds one layer bit per
    // dimension (crosses that dimension's dateline or not) and the SL-to-VL tables switch
    // to it as the path turns into the dimension: 2 VLs on any torus. LASH also splits
    // the half-way-round ties between both directions, which plain DOR does not.
    let mut r = match crate::dor::dor_paths(net, opts, true, name).ok() {
        Some(d) if d.sl.is_some() => return Ok(d),
        Some(d) => d,
        None => minhop_net(net, opts)?,
    };
    r.set_engine(name);
    if one_layer_acyclic(net, &r) {
        // Already acyclic on one layer (any mesh with DOR): the fewest layers.
        return Ok(r);
    }
    let max = usize::from(opts.max_vls.clamp(1, 15));
    let mut lay = Layering::new(net, None);
    lay.open();
    let mut place = Placement::new(net);
    // Arc behind each (switch, port), NONE if none: `arc_of` without the wide `Peer`.
    let mut parc = vec![NONE; net.peer.len()];
    for s in 0..net.n_sw {
        for p in 0..=net.nports[s] {
            parc[net.pbase[s] as usize + usize::from(p)] = arc_of(net, s, p);
        }
    }
    let (mut dist, mut queue) = (vec![0u16; net.n_sw], Vec::new());
    let (mut lids, mut bal) = (Vec::new(), Vec::new());
    let len = net.lft_len;
    for t in 0..net.n_sw {
        net.lids_on(t, &mut lids);
        if lids.is_empty() {
            continue;
        }
        let k = lids.len();
        net.bfs(t, &mut dist, &mut queue);
        bal.clear();
        bal.resize(net.n_sw * k, NONE);
        for &s in &queue[1..] {
            let s = s as usize;
            for (j, &(lid, ..)) in lids.iter().enumerate() {
                let p = r.lfts[s * len + usize::from(lid)];
                if p <= net.nports[s] {
                    let a = parc[net.pbase[s] as usize + usize::from(p)];
                    // Only a shortest next hop is a candidate.
                    if a != NONE && dist[net.adst[a as usize] as usize] + 1 == dist[s] {
                        bal[s * k + j] = a;
                    }
                }
            }
        }
        let col = Column {
            t,
            lids: &lids,
            dist: &dist,
            queue: &queue,
            bal: &bal,
            down: None,
        };
        place.dest(net, &mut r.lfts, &mut lay, max, &col)?;
    }
    let mut sl = place.sl;
    if lay.layers.len() > 1 {
        balance_layers(net, &r, &mut lay, &mut sl);
    }
    r.vls = lay.layers.len() as u8;
    r.sl = Some(sl);
    Ok(r)
}

/// LASH's balancing: moves (source switch, LID) paths from fuller layers to emptier ones
/// where they keep the target acyclic, so the VLs carry similar shares of the paths.
/// The placement counted each dependency once per switch that added it; moving single
/// paths needs counts per path, so they are recounted from the CA sources first (which
/// also drops dependencies only a CA-less switch's path had; removing dependencies never
/// invalidates a topological order).
fn balance_layers(net: &Net, r: &Routes, lay: &mut Layering<'_>, sl: &mut [u8]) {
    lay.counting = true;
    lay.masks = false;
    for layer in &mut lay.layers {
        for st in &mut layer.st {
            if *st == PRESENT {
                *st = ABSENT;
            }
        }
        layer.cnt = vec![0; layer.st.len()];
        layer.units = 0;
    }
    let mut deps = Vec::new();
    let mut units: Vec<(u32, u16, u8)> = Vec::new();
    for lid in 1..net.lft_len {
        let Some((t, _)) = net.dest_switch(lid) else {
            continue;
        };
        for s in 0..net.n_sw {
            if net.nsrc[s] == 0 || s == t as usize {
                continue;
            }
            let l = sl[s * net.lft_len + lid];
            path_deps(net, r, s, lid, t as usize, &mut deps);
            let layer = usize::from(l);
            for &(a, b) in &deps {
                let d = lay.dep(a, b);
                lay.layers[layer].add(d, true);
            }
            lay.layers[layer].units += 1;
            units.push((s as u32, lid as u16, l));
        }
    }
    let target = units.len() as u64 / lay.layers.len() as u64;
    for &(s, lid, l) in &units {
        let l = usize::from(l);
        if lay.layers[l].units <= target {
            continue;
        }
        let (s, lidu) = (s as usize, usize::from(lid));
        let t = net.dest_switch(lidu).map_or(0, |x| x.0 as usize);
        path_deps(net, r, s, lidu, t, &mut deps);
        let Some(to) = (0..lay.layers.len())
            .filter(|&m| m != l)
            .min_by_key(|&m| lay.layers[m].units)
        else {
            continue;
        };
        if lay.layers[to].units + 1 >= lay.layers[l].units {
            continue;
        }
        if lay.try_unit(to, &deps) {
            for &(a, b) in &deps {
                lay.remove(l, a, b);
            }
            lay.layers[l].units -= 1;
            sl[s * net.lft_len + lidu] = to as u8;
        }
    }
}

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
struct Placement {
    /// SL per (source switch, LID), as `Routes::sl`.
    sl: Vec<u8>,
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
struct Column<'c> {
    t: usize,
    /// Its LIDs ([`Net::lids_on`]).
    lids: &'c [(u16, u8, u16)],
    /// Its BFS: distances and the switches nearest first (`t` first).
    dist: &'c [u16],
    queue: &'c [u32],
    /// The balanced hop (arc) of switch `s` for the `j`-th LID at `s * k + j`: one of its
    /// shortest next hops, or `NONE`.
    bal: &'c [u32],
    /// The shortest next hops of each switch, if known.
    down: Option<Downs<'c>>,
}

/// Marks the branch it is called from as rarely taken, which keeps it a branch (the
/// compiler turns short two-way branches into conditional moves otherwise);
/// `std::hint::cold_path` from Rust 1.95 on.
#[cold]
#[inline]
fn cold() {}

/// The shortest next hops of switch `s` towards one destination, in arc order:
/// `arcs[span[s].0..][..span[s].1]`; `at` holds their heads times the LIDs per switch.
#[derive(Clone, Copy)]
struct Downs<'c> {
    span: &'c [(u32, u32)],
    arcs: &'c [u32],
    at: &'c [usize],
}

impl Placement {
    fn new(net: &Net) -> Self {
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
    fn dest(
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
fn higher_layer(
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
fn try_path(
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

/// Whether the one-layer channel dependency graph of single-VL routes is acyclic (CA
/// and switch-LID destinations, paths from switches with CAs): `validate`'s check,
/// specialised to in-trees and a flag per dependency, stopping at the first back edge.
fn one_layer_acyclic(net: &Net, r: &Routes) -> bool {
    let mut chk = OneLayer::new(net);
    let mut active = vec![u32::MAX; net.n_sw];
    let sources: Vec<usize> = (0..net.n_sw).filter(|&s| net.nsrc[s] > 0).collect();
    for lid in 1..net.lft_len {
        let Some((t, _)) = net.dest_switch(lid) else {
            continue;
        };
        let t = t as usize;
        let stamp = lid as u32;
        active[t] = stamp;
        for &s0 in &sources {
            let mut s = s0;
            let mut prev = NONE;
            while active[s] != stamp {
                active[s] = stamp;
                let a = arc_of(net, s, r.lft(s)[lid]);
                if a == NONE {
                    break;
                }
                if prev != NONE {
                    chk.add(prev, a);
                }
                prev = a;
                s = net.adst[a as usize] as usize;
            }
            // Joined a marked path: its next hop from s is already decided.
            if prev != NONE && s != t {
                let a = arc_of(net, s, r.lft(s)[lid]);
                if a != NONE {
                    chk.add(prev, a);
                }
            }
        }
        if chk.due(1) && !chk.acyclic() {
            return false;
        }
    }
    chk.acyclic()
}

/// The one-layer channel dependency graph, built up destination by destination.
struct OneLayer<'a> {
    net: &'a Net,
    /// Dependency `a -> b` is `dfix[a] + b` (as `Layering::dfix`).
    dfix: Vec<usize>,
    dbase: Vec<usize>,
    has: Vec<bool>,
    colour: Vec<u8>,
    stack: Vec<(u32, u32)>,
    /// LIDs added so far, and after how many to look for a cycle next.
    lids: usize,
    next_look: usize,
}

impl<'a> OneLayer<'a> {
    fn new(net: &'a Net) -> Self {
        let dbase = dep_base(net);
        OneLayer {
            net,
            dfix: (0..net.n_arcs())
                .map(|a| dbase[a].wrapping_sub(net.aoff[net.adst[a] as usize] as usize))
                .collect(),
            has: vec![false; dbase[net.n_arcs()]],
            dbase,
            colour: vec![0; net.n_arcs()],
            stack: Vec::new(),
            lids: 0,
            next_look: 64,
        }
    }

    #[inline]
    fn add(&mut self, a: u32, b: u32) {
        self.has[self.dfix[a as usize].wrapping_add(b as usize)] = true;
    }

    /// Counts `lids` more LIDs added; true when it is time to look for a cycle. Cyclic
    /// fabrics usually show one within the first few dozen destinations: look after 64,
    /// 512, 4096, ... LIDs (a few extra searches on an acyclic fabric).
    fn due(&mut self, lids: usize) -> bool {
        self.lids += lids;
        if self.lids >= self.next_look {
            self.next_look *= 8;
            return true;
        }
        false
    }

    /// Whether the dependencies added so far form no cycle (iterative DFS).
    fn acyclic(&mut self) -> bool {
        let net = self.net;
        let (colour, stack) = (&mut self.colour, &mut self.stack);
        // Colour 1 = on the stack, 2 = done.
        colour.fill(0);
        stack.clear();
        for a0 in 0..colour.len() as u32 {
            if colour[a0 as usize] != 0 {
                continue;
            }
            colour[a0 as usize] = 1;
            stack.push((a0, 0));
            while let Some(&mut (a, ref mut i)) = stack.last_mut() {
                let h = net.adst[a as usize] as usize;
                let deg = net.aoff[h + 1] - net.aoff[h];
                if *i < deg {
                    let k = *i;
                    *i += 1;
                    if !self.has[self.dbase[a as usize] + k as usize] {
                        continue;
                    }
                    let b = net.aoff[h] + k;
                    match colour[b as usize] {
                        0 => {
                            colour[b as usize] = 1;
                            stack.push((b, 0));
                        }
                        1 => return false,
                        _ => {}
                    }
                } else {
                    colour[a as usize] = 2;
                    stack.pop();
                }
            }
        }
        true
    }
}

impl RoutingEngine for Lash {
    fn name(&self) -> &str {
        "lash"
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &Options) -> Result<Routes> {
        layered(&lids.net(csr)?, opts, "lash", false)
    }
}

impl RoutingEngine for Dfsssp {
    fn name(&self) -> &str {
        "dfsssp"
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &Options) -> Result<Routes> {
        let mut net = lids.net(csr)?;
        let uses = crate::inputs::Uses {
            roots: true,
            order: true,
            ..crate::inputs::Uses::default()
        };
        crate::inputs::apply(&mut net, csr, opts, uses)?;
        layered(&net, opts, "dfsssp", true)
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
fn dfsssp_routes(net: &Net, opts: &Options) -> Result<Routes> {
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

/// The climbing hop (of `ups`, at least two) an LMC sibling with `sibs` siblings before
/// it takes at a switch whose LFT is `row`: the least loaded (`key`) whose port none of
/// the LIDs `col - sibs..col` took, else (every port taken) the least loaded; the first on
/// ties. As `balance`'s scan, so the siblings of a LID leave by different ports wherever
/// the switch can climb more than one way. Out of line: inlined, it slows the base LIDs'
/// loop around it (11k-CA tree at LMC 1: ~0.6 s instead of ~0.5 s).
#[inline(never)]
fn up_sibling(
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
fn least(ups: &[u32], key: &[u64], aport: &[u8], taken: impl Fn(u8) -> bool) -> usize {
    let (mut best, mut bl) = (ups[0], u64::MAX);
    for &a in ups {
        let l = key[a as usize] | u64::from(taken(aport[a as usize])) << 63;
        if l < bl {
            (best, bl) = (a, l);
        }
    }
    best as usize
}

/// One destination's balanced routes kept for a later placement ([`UpFirst`]'s state).
struct Routed {
    t: usize,
    hop: Vec<u32>,
    dist: Vec<u16>,
    queue: Vec<u32>,
}

/// The error for a disconnected fabric: the first destination switch with LIDs (in switch
/// order) that some switch cannot reach, and the first such switch.
fn unreachable(net: &Net) -> Result<()> {
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

/// DFSSSP's balanced routes, one destination switch at a time: the tables of
/// `balance::route_all` (minhop rule; base LIDs balanced on the base LIDs' loads, LMC
/// siblings on all LIDs') where a switch takes the least loaded of its
/// shortest next hops that climb (their head nearer the root), if any; an LMC sibling
/// first avoids the ports its earlier siblings took there, so on a fat tree the 2^LMC
/// LIDs of a port climb by different ports (base LIDs keep their LMC 0 routes). A switch's choice
/// depends only on its own arcs' loads and round robin, its LMC siblings' ports and the
/// flow farther switches send it, so any farthest-first order gives the same tables: here
/// the reverse of the BFS order, whose forward order the placement uses.
struct UpFirst<'a> {
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
    dist: Vec<u16>,
    /// The last destination's switches, nearest first (the destination first).
    queue: Vec<u32>,
    /// The next hop the BFS found first (a switch LID alone takes it).
    parent: Vec<u32>,
    /// Per (switch `s`, LID `j` of the destination) at `s * k + j`: the CA sources whose
    /// traffic reaches `s` (counted for a switch's own LID too, which carries no load: it
    /// says whether some CA's path passes).
    flow: Vec<u32>,
    /// The chosen hop (arc), at `s * k + j`.
    hop: Vec<u32>,
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
    fn new(net: &'a Net, pos: &[u32]) -> Self {
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
    fn route(&mut self, t: usize, lids: &[(u16, u8, u16)], lfts: &mut [u8]) {
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
    fn down(&self) -> Option<Downs<'_>> {
        (!self.quick).then_some(Downs {
            span: &self.span,
            arcs: &self.down,
            at: &self.down_at,
        })
    }

    /// Adds the last routed destination's dependencies (`k` LIDs) along the paths of
    /// switches with CAs to `chk`.
    fn deps(&self, t: usize, k: usize, chk: &mut OneLayer<'_>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::testnets::{finish, grid, ring, two_level};

    /// The up-first preference as a `balance::Prefer`: what `UpFirst` must reproduce.
    struct Reference {
        up: Vec<bool>,
    }

    impl crate::balance::Prefer for Reference {
        fn prefer(
            &self,
            net: &Net,
            _: usize,
            (lid, sibs): (u16, usize),
            elig: &[u32],
            loads: &crate::balance::Loads,
            row: &[u8],
        ) -> Option<u32> {
            // Siblings first avoid the ports their earlier siblings took.
            let col = usize::from(lid);
            let mut best: Option<((bool, u64), u32)> = None;
            for &a in elig {
                let port = net.aport[a as usize];
                let l = (
                    (1..=sibs).any(|q| row[col - q] == port),
                    loads.key(sibs, a as usize),
                );
                if self.up[a as usize] && best.is_none_or(|(b, _)| l < b) {
                    best = Some((l, a));
                }
            }
            best.map(|(_, a)| a)
        }
    }

    /// A `w` x `h` torus with `cas` CAs per switch and LMC `lmc` (ports 1-4 to the
    /// neighbours, 5.. CAs).
    fn torus_lmc(w: u32, h: u32, cas: u8, lmc: u8) -> Net {
        let id = |x: u32, y: u32| y * w + x;
        let mut links = Vec::new();
        for y in 0..h {
            for x in 0..w {
                links.push((id(x, y), 1, id((x + 1) % w, y), 2));
                links.push((id(x, y), 3, id(x, (y + 1) % h), 4));
            }
        }
        let terms = (0..w * h)
            .flat_map(|s| (0..cas).map(move |c| (s, 5 + c)))
            .collect();
        finish(vec![4 + cas; (w * h) as usize], links, terms, lmc)
    }

    #[test]
    fn up_first_pass_gives_the_balanced_routes_with_the_up_first_preference() {
        // DFSSSP's destination-by-destination pass against the shared balanced pass with
        // the same preference: identical tables (tori with several CAs and LMC siblings,
        // a mesh, fat trees whose spines have no CAs, a ring), and the hops it hands the
        // placement are those ports.
        let nets = [
            grid(5, 4, true),
            grid(4, 3, false),
            torus_lmc(4, 3, 3, 1),
            torus_lmc(5, 5, 2, 2),
            two_level(6, 3, 4, 0),
            two_level(4, 4, 3, 1),
            ring(7, 2),
        ];
        for (i, net) in nets.iter().enumerate() {
            let roots = crate::updn::find_roots(net, false).unwrap();
            let (pos, _) = crate::updn::order_from_roots(net, &roots, false);
            let reference = Reference {
                up: (0..net.n_arcs())
                    .map(|a| pos[net.adst[a] as usize] < pos[net.asrc[a] as usize])
                    .collect(),
            };
            let len = net.lft_len;
            let mut want = vec![NO_ROUTE; net.n_sw * len];
            let rule = crate::balance::Rule::MinHop;
            crate::balance::route_all(net, rule, 1, &mut want, &reference);
            let mut got = vec![NO_ROUTE; net.n_sw * len];
            let mut pass = UpFirst::new(net, &pos);
            let mut lids = Vec::new();
            for t in 0..net.n_sw {
                net.lids_on(t, &mut lids);
                if lids.is_empty() {
                    continue;
                }
                pass.route(t, &lids, &mut got);
                let k = lids.len();
                for &s in &pass.queue[1..] {
                    let s = s as usize;
                    for (j, &(lid, ..)) in lids.iter().enumerate() {
                        let a = pass.hop[s * k + j] as usize;
                        assert_eq!(net.asrc[a] as usize, s, "net {i}");
                        assert_eq!(got[s * len + usize::from(lid)], net.aport[a], "net {i}");
                    }
                }
            }
            assert_eq!(got, want, "net {i}");
        }
    }

    /// Whether `to` is reachable from `from` over the dependencies `deps`.
    fn reaches(deps: &[(u32, u32)], from: u32, to: u32) -> bool {
        let mut seen = vec![from];
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            if x == to {
                return true;
            }
            for &(a, b) in deps {
                if a == x && !seen.contains(&b) {
                    seen.push(b);
                    stack.push(b);
                }
            }
        }
        false
    }

    #[test]
    fn dynamic_order_accepts_exactly_the_acyclic_dependencies() {
        // Random dependencies on a 5x4 torus, into one layer with spread labels and one
        // whose labels are packed tight before every insertion (so every move respreads
        // them): both accept exactly what a brute-force search says keeps the layer
        // acyclic, and keep a valid topological order and a consistent list.
        let net = grid(5, 4, true);
        let tighten = |layer: &mut Layer| {
            let (mut x, mut l) = (layer.head, 1);
            while x != NONE {
                layer.ord[x as usize] = l;
                l += 1;
                x = layer.next[x as usize];
            }
        };
        for seed in 1..=12u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut next = |n: usize| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % n as u64) as usize
            };
            let mut spread = Layering::new(&net, None);
            let mut tight = Layering::new(&net, None);
            spread.open();
            tight.open();
            let mut accepted: Vec<(u32, u32)> = Vec::new();
            let mut rejected = 0;
            for _ in 0..400 {
                let a = next(net.n_arcs()) as u32;
                let h = net.adst[a as usize] as usize;
                let arcs = net.arcs(h);
                let b = (arcs.start + next(arcs.len())) as u32;
                let want = !reaches(&accepted, b, a);
                tighten(&mut tight.layers[0]);
                assert_eq!(spread.insert(0, a, b), want, "seed {seed}: {a} -> {b}");
                assert_eq!(tight.insert(0, a, b), want, "seed {seed}: {a} -> {b}");
                if want {
                    accepted.push((a, b));
                } else {
                    rejected += 1;
                }
                for lay in [&spread, &tight] {
                    let layer = &lay.layers[0];
                    let ord = &layer.ord;
                    for &(p, q) in &accepted {
                        assert!(ord[p as usize] < ord[q as usize], "seed {seed}");
                    }
                    // The list holds every channel once, with increasing labels.
                    let (mut c, mut prev, mut seen) = (layer.head, NONE, 0);
                    while c != NONE {
                        assert_eq!(layer.prev[c as usize], prev, "seed {seed}");
                        if prev != NONE {
                            assert!(ord[prev as usize] < ord[c as usize], "seed {seed}");
                        }
                        seen += 1;
                        prev = c;
                        c = layer.next[c as usize];
                    }
                    assert_eq!(seen, net.n_arcs(), "seed {seed}");
                }
            }
            assert!(
                rejected > 0 && accepted.len() > 100,
                "seed {seed}: {rejected}"
            );
        }
    }
}
