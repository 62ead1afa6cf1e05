//! Deadlock freedom by layering: `lash` and `dfsssp`.
//!
//! Both route with the balanced shortest paths of `minhop`, then put every path on a
//! *layer* (an SL, mapped 1:1 to a VL) so that each layer's channel dependency graph stays
//! acyclic. Acyclicity is kept incrementally with the Pearce-Kelly dynamic topological
//! order: adding a dependency that agrees with the current order costs O(1); one that does
//! not reorders only the affected region, or reports the cycle it would close, in which
//! case the unit is rolled back (removing edges never invalidates a topological order).
//!
//! * `dfsssp` routes balanced shortest paths that, among equal-cost hops, prefer climbing
//!   towards a central root (so most paths have an up*/down* shape and few cycles are
//!   left); if the one-layer dependency graph is already acyclic (any fat tree) it is done,
//!   else every (source switch, LID) path goes to the first layer that stays acyclic.
//! * `lash` places every (source switch, LID) path on its own (first fit, the fewest
//!   layers), then balances the paths over the layers it opened, using balanced shortest
//!   paths. On a mesh it takes the dimension-order paths (one layer). On a torus a
//!   constant layer per path needs 3 to 7 layers on small tori, so there the layer is
//!   chosen per dimension (the dateline classes of `dor`, switched by the SL-to-VL tables
//!   as the path turns): 2 VLs on any torus, with DOR's half-way ties split both ways.

use ibsm_topology::Csr;

use crate::engine::{Options, RoutingEngine};
use crate::error::{Result, RoutingError};
use crate::lids::LidAssignment;
use crate::minhop::minhop_net;
use crate::net::{NONE, Net};
use crate::routes::Routes;
use crate::validate::{arc_of, dep_base};

/// Layered shortest-path routing (LASH).
#[derive(Clone, Copy, Debug, Default)]
pub struct Lash;

/// Deadlock-free single-source shortest paths (DFSSSP).
#[derive(Clone, Copy, Debug, Default)]
pub struct Dfsssp;

/// One layer: dependency counts and a topological order of channels (arcs).
struct Layer {
    cnt: Vec<u32>,
    ord: Vec<u32>,
    mark: Vec<u32>,
    epoch: u32,
    units: u64,
}

struct Layering<'a> {
    net: &'a Net,
    dbase: Vec<usize>,
    layers: Vec<Layer>,
    fwd: Vec<u32>,
    bwd: Vec<u32>,
    stack: Vec<u32>,
}

impl<'a> Layering<'a> {
    fn new(net: &'a Net) -> Self {
        Layering {
            net,
            dbase: dep_base(net),
            layers: Vec::new(),
            fwd: Vec::new(),
            bwd: Vec::new(),
            stack: Vec::new(),
        }
    }

    fn open(&mut self) {
        let na = self.net.n_arcs();
        self.layers.push(Layer {
            cnt: vec![0; self.dbase[na]],
            ord: (0..na as u32).collect(),
            mark: vec![0; na],
            epoch: 0,
            units: 0,
        });
    }

    #[inline]
    fn dep(&self, a: u32, b: u32) -> usize {
        let h = self.net.adst[a as usize] as usize;
        self.dbase[a as usize] + (b - self.net.aoff[h]) as usize
    }

    /// Adds dependency `a -> b` to layer `l`; false if it would close a cycle.
    fn insert(&mut self, l: usize, a: u32, b: u32) -> bool {
        let d = self.dep(a, b);
        let net = self.net;
        let dbase = &self.dbase;
        let layer = &mut self.layers[l];
        if layer.cnt[d] > 0 || layer.ord[a as usize] < layer.ord[b as usize] {
            layer.cnt[d] += 1;
            return true;
        }
        let (lb, ub) = (layer.ord[b as usize], layer.ord[a as usize]);
        layer.epoch += 1;
        let ep = layer.epoch;
        // Forward from b within [lb, ub].
        self.fwd.clear();
        self.stack.clear();
        self.stack.push(b);
        layer.mark[b as usize] = ep;
        while let Some(x) = self.stack.pop() {
            self.fwd.push(x);
            let h = net.adst[x as usize] as usize;
            let base = dbase[x as usize];
            for (i, y) in net.arcs(h).enumerate() {
                if layer.cnt[base + i] == 0 {
                    continue;
                }
                let y = y as u32;
                if y == a {
                    return false;
                }
                if layer.mark[y as usize] != ep && layer.ord[y as usize] < ub {
                    layer.mark[y as usize] = ep;
                    self.stack.push(y);
                }
            }
        }
        // Backward from a within [lb, ub].
        self.bwd.clear();
        self.stack.push(a);
        layer.mark[a as usize] = ep;
        while let Some(x) = self.stack.pop() {
            self.bwd.push(x);
            let v = net.asrc[x as usize] as usize;
            let off = (x - net.aoff[v]) as usize;
            for c in net.arcs(v) {
                let z = net.arev[c];
                if z == NONE || layer.cnt[dbase[z as usize] + off] == 0 {
                    continue;
                }
                if layer.mark[z as usize] != ep && layer.ord[z as usize] > lb {
                    layer.mark[z as usize] = ep;
                    self.stack.push(z);
                }
            }
        }
        // Reassign: everything that must precede a (bwd) before everything after b (fwd).
        let ord = &mut layer.ord;
        self.bwd.sort_unstable_by_key(|&x| ord[x as usize]);
        self.fwd.sort_unstable_by_key(|&x| ord[x as usize]);
        let mut slots: Vec<u32> = self
            .bwd
            .iter()
            .chain(self.fwd.iter())
            .map(|&x| ord[x as usize])
            .collect();
        slots.sort_unstable();
        for (x, p) in self.bwd.iter().chain(self.fwd.iter()).zip(slots) {
            ord[*x as usize] = p;
        }
        layer.cnt[d] += 1;
        true
    }

    fn remove(&mut self, l: usize, a: u32, b: u32) {
        let d = self.dep(a, b);
        self.layers[l].cnt[d] -= 1;
    }

    /// Tries to put all `deps` on layer `l`, atomically.
    fn try_unit(&mut self, l: usize, deps: &[(u32, u32)]) -> bool {
        for (i, &(a, b)) in deps.iter().enumerate() {
            if !self.insert(l, a, b) {
                for &(a, b) in &deps[..i] {
                    self.remove(l, a, b);
                }
                return false;
            }
        }
        self.layers[l].units += 1;
        true
    }

    /// First layer that takes the unit (trying `hint` first), opening new ones up to `max`.
    fn place(&mut self, deps: &[(u32, u32)], max: usize, hint: Option<usize>) -> Option<usize> {
        if let Some(h) = hint.filter(|&h| h < self.layers.len()) {
            if self.try_unit(h, deps) {
                return Some(h);
            }
        }
        for l in 0..self.layers.len() {
            if Some(l) == hint {
                continue;
            }
            if self.try_unit(l, deps) {
                return Some(l);
            }
        }
        if self.layers.len() < max {
            self.open();
            let l = self.layers.len() - 1;
            if self.try_unit(l, deps) {
                return Some(l);
            }
        }
        None
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
    // LASH on a mesh or torus takes the dimension-order paths (shortest, and they need
    // fewer layers and give more bisection bandwidth there than balanced minhop paths).
    // On a mesh they fit one layer. On a torus a constant layer per path needs 3 or more
    // (7 on 8x8x4): a path's segment in one dimension may need the layer of paths that
    // cross the dateline there while its segment in another dimension needs the other
    // one. So there the layer is chosen per dimension: the SL holds one layer bit per
    // dimension (crosses that dimension's dateline or not) and the SL-to-VL tables switch
    // to it as the path turns into the dimension: 2 VLs on any torus. LASH also splits
    // the half-way-round ties between both directions, which plain DOR does not.
    let dor = if dfsssp {
        None
    } else {
        crate::dor::dor_paths(net, opts, true, name).ok()
    };
    let mut r = match dor {
        Some(d) if d.sl.is_some() => return Ok(d),
        Some(d) => d,
        None if dfsssp => updn_biased(net, opts)?,
        None => minhop_net(net, opts)?,
    };
    r.set_engine(name);
    if crate::validate::cdg_scope(net, &r, true).is_ok() {
        // Already acyclic on one layer (any fat tree, any mesh with DOR): the fewest layers.
        return Ok(r);
    }
    let max = usize::from(opts.max_vls.clamp(1, 15));
    let mut lay = Layering::new(net);
    lay.open();
    let sources: Vec<usize> = (0..net.n_sw).filter(|&s| net.nsrc[s] > 0).collect();
    let mut sl = vec![0u8; net.n_sw * net.lft_len];
    let mut deps = Vec::new();
    // Which (source, lid) units went where, for LASH balancing.
    let mut units: Vec<(u32, u16, u8)> = Vec::new();
    // The layer the previous LID of the same destination switch took from each source:
    // LIDs of one switch mostly share their paths, so that layer is the likeliest fit.
    let mut hint: Vec<Option<usize>> = vec![None; net.n_sw];
    let mut hint_t = usize::MAX;
    for lid in 1..net.lft_len {
        let Some((t, _)) = net.dest_switch(lid) else {
            continue;
        };
        let t = t as usize;
        if t != hint_t {
            hint.fill(None);
            hint_t = t;
        }
        for &s in &sources {
            path_deps(net, &r, s, lid, t, &mut deps);
            let l = lay
                .place(&deps, max, hint[s])
                .ok_or_else(|| RoutingError::NotEnoughVls {
                    needed: (lay.layers.len() + 1).min(255) as u8,
                    available: max as u8,
                })?;
            sl[s * net.lft_len + lid] = l as u8;
            hint[s] = Some(l);
            if !dfsssp {
                units.push((s as u32, lid as u16, l as u8));
            }
        }
    }
    if !dfsssp && lay.layers.len() > 1 {
        // Balance: move paths from fuller layers to emptier ones where they fit.
        let target = units.len() as u64 / lay.layers.len() as u64;
        for &(s, lid, l) in &units {
            let l = usize::from(l);
            if lay.layers[l].units <= target {
                continue;
            }
            let (s, lidu) = (s as usize, usize::from(lid));
            let t = net.dest_switch(lidu).map_or(0, |x| x.0 as usize);
            path_deps(net, &r, s, lidu, t, &mut deps);
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
    r.vls = lay.layers.len() as u8;
    r.sl = Some(sl);
    Ok(r)
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
        layered(&lids.net(csr)?, opts, "dfsssp", true)
    }
}

/// Shortest paths that, among equal-cost next hops, prefer climbing towards a central
/// root: most paths then follow an up*/down* shape, so few dependency cycles remain for
/// the layering to break.
struct UpFirst {
    pos: Vec<u32>,
}

impl crate::balance::Prefer for UpFirst {
    fn prefer(&self, net: &Net, s: usize, _lid: u16, elig: &[u32], load: &[u64]) -> Option<u32> {
        elig.iter()
            .copied()
            .filter(|&a| self.pos[net.adst[a as usize] as usize] < self.pos[s])
            .min_by_key(|&a| load[a as usize])
    }
}

fn updn_biased(net: &Net, opts: &Options) -> Result<Routes> {
    let roots = crate::updn::find_roots(net, None, opts, false)?;
    let (pos, _) = crate::updn::order_from_roots(net, &roots, false);
    let pref = UpFirst { pos };
    let mut r = Routes::new("dfsssp", net.n_sw, net.lft_len);
    let st = crate::balance::route_all(
        net,
        crate::balance::Rule::MinHop,
        opts.threads,
        &mut r.lfts,
        &pref,
    );
    crate::engine::check_reach(st, opts, "")?;
    Ok(r)
}
