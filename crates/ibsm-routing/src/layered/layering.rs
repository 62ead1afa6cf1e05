//! The layers: each layer's channel dependency graph kept acyclic by a dynamic
//! topological order, and the one-layer check of fixed routes.

use crate::net::{NONE, Net};
use crate::routes::Routes;
use crate::validate::{arc_of, dep_base};

/// `Layer::st` of a dependency not on the layer.
pub(super) const ABSENT: u8 = 0;
/// `Layer::st` of a dependency on the layer.
pub(super) const PRESENT: u8 = 1;
/// `Layer::st` of a dependency known to close a cycle on that layer.
pub(super) const FORBIDDEN: u8 = 2;

/// One layer: which dependencies it holds and a topological order of channels (arcs).
pub(super) struct Layer {
    /// State per dependency, a byte each so that the probes, most of the placement's
    /// memory traffic, stay in cache (a 4-layer 8x8x4 torus: 37 KB, not 147 KB of counts).
    pub(super) st: Vec<u8>,
    /// Paths per dependency, kept only while `Layering::counting` (LASH's balancing
    /// removes single paths; the placement only ever rolls back what a unit added).
    pub(super) cnt: Vec<u32>,
    /// Per channel `a`, bit `i`: dependency `a -> aoff[adst[a]] + i` is on the layer.
    /// Kept only while `Layering::masks`: the order searches then visit the present
    /// dependencies without probing (and mispredicting) every absent one.
    succ: Vec<u64>,
    /// Per channel `x` out of switch `v`, bit `i`: dependency `arev[aoff[v] + i] -> x` is
    /// on the layer (as `succ`).
    pred: Vec<u64>,
    /// Order label per channel (increasing along the order).
    pub(super) ord: Vec<u64>,
    /// The order as a doubly linked list of channels (`NONE` ends it).
    pub(super) next: Vec<u32>,
    pub(super) prev: Vec<u32>,
    pub(super) head: u32,
    mark: Vec<u32>,
    epoch: u32,
    pub(super) units: u64,
}

pub(super) struct Layering<'a> {
    net: &'a Net,
    /// The channel order a new layer starts with.
    init: Vec<u32>,
    dbase: Vec<usize>,
    /// `dbase[a] - aoff[adst[a]]` (wrapping): dependency `a -> b` is `dfix[a] + b`, one
    /// load where the probes would chain three.
    dfix: Vec<usize>,
    pub(super) layers: Vec<Layer>,
    bwd: Vec<u32>,
    stack: Vec<u32>,
    fwd: Vec<u32>,
    fstack: Vec<u32>,
    kb: Vec<(u64, u32)>,
    /// Whether `Layer::cnt` is kept (see there).
    pub(super) counting: bool,
    /// Whether `Layer::succ` / `Layer::pred` are kept: no switch has more than 64 arcs,
    /// and not while counting.
    pub(super) masks: bool,
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
    pub(super) fn add(&mut self, d: usize, counting: bool) {
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
    pub(super) fn new(net: &'a Net, up_pos: Option<&[u32]>) -> Self {
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

    pub(super) fn open(&mut self) {
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
    pub(super) fn dep(&self, a: u32, b: u32) -> usize {
        self.dfix[a as usize].wrapping_add(b as usize)
    }

    /// Adds dependency `a -> b` to layer `l`; false if it would close a cycle.
    #[inline(always)]
    pub(super) fn insert(&mut self, l: usize, a: u32, b: u32) -> bool {
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
    pub(super) fn remove(&mut self, l: usize, a: u32, b: u32) {
        let d = self.dep(a, b);
        let layer = &mut self.layers[l];
        layer.cnt[d] -= 1;
        if layer.cnt[d] == 0 {
            layer.st[d] = ABSENT;
        }
    }

    /// Tries to put all `deps` on layer `l`, atomically.
    pub(super) fn try_unit(&mut self, l: usize, deps: &[(u32, u32)]) -> bool {
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

/// Whether the one-layer channel dependency graph of single-VL routes is acyclic (CA
/// and switch-LID destinations, paths from switches with CAs): `validate`'s check,
/// specialised to in-trees and a flag per dependency, stopping at the first back edge.
pub(super) fn one_layer_acyclic(net: &Net, r: &Routes) -> bool {
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
pub(super) struct OneLayer<'a> {
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
    pub(super) fn new(net: &'a Net) -> Self {
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
    pub(super) fn add(&mut self, a: u32, b: u32) {
        self.has[self.dfix[a as usize].wrapping_add(b as usize)] = true;
    }

    /// Counts `lids` more LIDs added; true when it is time to look for a cycle. Cyclic
    /// fabrics usually show one within the first few dozen destinations: look after 64,
    /// 512, 4096, ... LIDs (a few extra searches on an acyclic fabric).
    pub(super) fn due(&mut self, lids: usize) -> bool {
        self.lids += lids;
        if self.lids >= self.next_look {
            self.next_look *= 8;
            return true;
        }
        false
    }

    /// Whether the dependencies added so far form no cycle (iterative DFS).
    pub(super) fn acyclic(&mut self) -> bool {
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
