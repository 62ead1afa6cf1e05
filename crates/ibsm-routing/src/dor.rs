//! `dor`: dimension-order routing for meshes and tori.

use std::collections::HashMap;

use ibsm_topology::Csr;

use crate::engine::{Coordinates, RouteOptions, RoutingEngine};
use crate::error::{Result, RoutingError};
use crate::lids::LidAssignment;
use crate::net::{Net, Peer};
use crate::routes::{NO_ROUTE, Routes};

/// Dimension-order routing: correct the lowest dimension first, then the next, along the
/// shorter way round in a torus (ties go the plus way).
///
/// Coordinates come from [`RouteOptions::coordinates`] or are detected: cables are grouped into
/// dimensions by their (port, remote port) pair (the usual "plus port cables to the minus
/// port of the neighbour" wiring), and coordinates are laid out by walking the plus
/// direction; a walk that comes back to its start is a torus ring.
///
/// Meshes need one VL. Tori need two: the SL of a path has bit `d` set when it crosses the
/// dateline (the wrap cable between coordinate `k-1` and `0`) in dimension `d`, and every
/// switch's SL-to-VL table sends a packet leaving in dimension `d` on VL `bit d of SL`.
/// Within one ring direction, paths that stay on VL 0 never use the wrap cable and paths
/// on VL 1 are at most `k/2` long around it, so neither VL closes a cycle; dimension order
/// forbids cycles across dimensions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dor;

/// Per switch coordinates plus, per switch and dimension, the arc going plus and minus.
struct Grid {
    coords: Vec<Vec<u16>>,
    dims: Vec<u16>,
    wrap: Vec<bool>,
    /// `plus[s * nd + d]`, `minus[...]`: arc or `u32::MAX`.
    plus: Vec<u32>,
    minus: Vec<u32>,
}

fn nocoord(s: impl Into<String>) -> RoutingError {
    RoutingError::NoCoordinates(s.into())
}

/// Finds the plus/minus arcs of each switch from given coordinates.
fn from_given(net: &Net, c: &Coordinates) -> Result<Grid> {
    let nd = c.dims.len();
    if c.coords.len() != net.n_sw || c.wrap.len() != nd || nd == 0 {
        return Err(nocoord("coordinates do not match the switches"));
    }
    let mut plus = vec![u32::MAX; net.n_sw * nd];
    let mut minus = vec![u32::MAX; net.n_sw * nd];
    for s in 0..net.n_sw {
        if c.coords[s].len() != nd {
            return Err(nocoord(format!(
                "switch #{s} has {} coordinates",
                c.coords[s].len()
            )));
        }
        for a in net.arcs(s) {
            let x = net.adst[a] as usize;
            let diff: Vec<usize> = (0..nd)
                .filter(|&d| c.coords[s][d] != c.coords[x][d])
                .collect();
            if diff.len() != 1 {
                return Err(nocoord(format!(
                    "switch #{s} port {} reaches a switch that is not a grid neighbour",
                    net.aport[a]
                )));
            }
            let d = diff[0];
            let k = c.dims[d];
            let (cs, cx) = (c.coords[s][d], c.coords[x][d]);
            if cx == (cs + 1) % k && (c.wrap[d] || cx == cs + 1) {
                if plus[s * nd + d] == u32::MAX {
                    plus[s * nd + d] = a as u32;
                }
            } else if cs == (cx + 1) % k && (c.wrap[d] || cs == cx + 1) {
                if minus[s * nd + d] == u32::MAX {
                    minus[s * nd + d] = a as u32;
                }
            } else {
                return Err(nocoord(format!(
                    "switch #{s} port {} skips coordinates in dimension {d}",
                    net.aport[a]
                )));
            }
        }
    }
    Ok(Grid {
        coords: c.coords.clone(),
        dims: c.dims.clone(),
        wrap: c.wrap.clone(),
        plus,
        minus,
    })
}

/// Detection from the wiring: dimension = (port, remote port) class of cables.
fn detect(net: &Net) -> Result<Coordinates> {
    if net.n_sw == 0 {
        return Err(nocoord("no switches"));
    }
    // Classes: an arc from port p to remote port q is "plus" of class (p, q) when p > q
    // ... orientation is arbitrary, so normalise: class key (min, max), plus = from max.
    let mut classes: HashMap<(u8, u8), usize> = HashMap::new();
    let mut class_of = vec![0usize; net.n_arcs()];
    for (a, cls) in class_of.iter_mut().enumerate() {
        let (p, q) = (net.aport[a], net.arport[a]);
        if p == q {
            return Err(nocoord(format!(
                "cable port {p} to port {p}: cannot tell the direction"
            )));
        }
        let key = (p.min(q), p.max(q));
        let n = classes.len();
        *cls = *classes.entry(key).or_insert(n);
    }
    let mut keys: Vec<((u8, u8), usize)> = classes.into_iter().collect();
    keys.sort_unstable();
    let nd = keys.len();
    if nd == 0 || nd > 4 {
        return Err(nocoord(format!(
            "{nd} cable classes: not a 1-4 dimensional grid"
        )));
    }
    let dim_of_class: HashMap<usize, usize> =
        keys.iter().enumerate().map(|(d, &(_, c))| (c, d)).collect();
    let is_plus = |a: usize| net.aport[a] > net.arport[a];
    let dims_of = |a: usize| dim_of_class[&class_of[a]];
    // Walk the plus direction from switch 0 in each dimension to learn ring/line sizes.
    let step = |s: usize, d: usize, plus: bool| -> Option<usize> {
        net.arcs(s)
            .find(|&a| dims_of(a) == d && is_plus(a) == plus)
            .map(|a| net.adst[a] as usize)
    };
    let mut dims = vec![0u16; nd];
    let mut wrap = vec![false; nd];
    for d in 0..nd {
        // Go to the minus end (or detect a ring), then count.
        let mut s = 0usize;
        let mut n = 0;
        while let Some(x) = step(s, d, false) {
            s = x;
            n += 1;
            if s == 0 || n > net.n_sw {
                break;
            }
        }
        if s == 0 && n > 0 {
            wrap[d] = true;
            dims[d] = n as u16;
        } else {
            let mut len = 1;
            let mut x = s;
            while let Some(y) = step(x, d, true) {
                x = y;
                len += 1;
                if len > net.n_sw {
                    return Err(nocoord("plus walk does not end"));
                }
            }
            dims[d] = len as u16;
        }
    }
    // BFS layout from switch 0.
    let mut coords: Vec<Option<Vec<i64>>> = vec![None; net.n_sw];
    coords[0] = Some(vec![0; nd]);
    let mut q = vec![0usize];
    let mut head = 0;
    while head < q.len() {
        let s = q[head];
        head += 1;
        let cs = coords[s].clone().unwrap_or_default();
        for a in net.arcs(s) {
            let x = net.adst[a] as usize;
            let d = dims_of(a);
            let mut cx = cs.clone();
            cx[d] += if is_plus(a) { 1 } else { -1 };
            if wrap[d] {
                cx[d] = cx[d].rem_euclid(i64::from(dims[d]));
            }
            match &coords[x] {
                None => {
                    coords[x] = Some(cx);
                    q.push(x);
                }
                Some(old) if *old != cx => {
                    return Err(nocoord(format!(
                        "switch #{x} gets two different coordinates"
                    )));
                }
                _ => {}
            }
        }
    }
    if coords.iter().any(Option::is_none) {
        return Err(nocoord("switch graph is not connected"));
    }
    let mut min = vec![i64::MAX; nd];
    for c in coords.iter().flatten() {
        for d in 0..nd {
            min[d] = min[d].min(c[d]);
        }
    }
    let coords: Vec<Vec<u16>> = coords
        .into_iter()
        .flatten()
        .map(|c| (0..nd).map(|d| (c[d] - min[d]) as u16).collect())
        .collect();
    let total: usize = dims.iter().map(|&x| usize::from(x)).product();
    if total != net.n_sw {
        return Err(nocoord(format!(
            "{} switches do not fill a {dims:?} grid",
            net.n_sw
        )));
    }
    Ok(Coordinates { coords, dims, wrap })
}

pub(crate) fn dor_net(net: &Net, opts: &RouteOptions) -> Result<Routes> {
    dor_paths(net, opts, false, "dor")
}

/// Dimension-order routes with dateline SLs. `split_ties`: on an even ring a destination
/// exactly half way round is reached either way in the same number of hops; plain DOR
/// always goes the plus way, which loads the plus cables with all of that traffic.
/// Splitting sends a LID the plus way from coordinate `c` when `lid + c` is even, so LMC
/// siblings and neighbouring sources take opposite directions. Any such rule stays
/// deadlock-free under the dateline scheme (it only needs every segment to be at most half
/// a ring long) and is predictable at the source, which sets the SL for the whole path.
pub(crate) fn dor_paths(
    net: &Net,
    opts: &RouteOptions,
    split_ties: bool,
    name: &str,
) -> Result<Routes> {
    let c = match &opts.coordinates {
        Some(c) => c.clone(),
        None => detect(net)?,
    };
    let g = from_given(net, &c)?;
    let nd = g.dims.len();
    let torus = g.wrap.iter().zip(&g.dims).any(|(&w, &k)| w && k > 2);
    if torus && opts.max_vls < 2 {
        return Err(RoutingError::NotEnoughVls {
            needed: 2,
            available: opts.max_vls,
        });
    }
    if nd > 4 {
        return Err(nocoord("more than 4 dimensions do not fit 16 SLs"));
    }
    // The way round dimension `d` from coordinate `cs` to `ct` (they differ) for `lid`.
    let plus_way = |d: usize, cs: u16, ct: u16, lid: usize| -> bool {
        let k = g.dims[d];
        if !g.wrap[d] {
            return ct > cs;
        }
        let fwd = (ct + k - cs) % k;
        if split_ties && fwd * 2 == k {
            return (lid + usize::from(cs)) % 2 == 0;
        }
        fwd <= k - fwd
    };
    let mut r = Routes::new(name, net.n_sw, net.lft_len);
    let mut sl = torus.then(|| vec![0u8; net.n_sw * net.lft_len]);
    for lid in 1..net.lft_len {
        let Some((t, exit)) = net.dest_switch(lid) else {
            continue;
        };
        let t = t as usize;
        r.lfts[t * net.lft_len + lid] = exit;
        for s in 0..net.n_sw {
            if s == t {
                continue;
            }
            let mut port = NO_ROUTE;
            let mut bits = 0u8;
            for d in 0..nd {
                let (cs, ct) = (g.coords[s][d], g.coords[t][d]);
                if cs == ct {
                    continue;
                }
                let plus_way = plus_way(d, cs, ct, lid);
                let a = if plus_way {
                    g.plus[s * nd + d]
                } else {
                    g.minus[s * nd + d]
                };
                if a == u32::MAX {
                    return Err(nocoord(format!(
                        "switch #{s} misses its dimension-{d} cable"
                    )));
                }
                port = net.aport[a as usize];
                // Crossing the dateline: plus from cs to a smaller ct, minus to a larger.
                if g.wrap[d] && ((plus_way && ct < cs) || (!plus_way && ct > cs)) {
                    bits |= 1 << d;
                }
                break;
            }
            r.lfts[s * net.lft_len + lid] = port;
            if let Some(sl) = &mut sl {
                // The SL must cover every dimension still to travel, not just the first.
                let mut all = bits;
                for d in 0..nd {
                    let (cs, ct) = (g.coords[s][d], g.coords[t][d]);
                    if !g.wrap[d] || cs == ct {
                        continue;
                    }
                    // The path enters dimension d at a switch that still has
                    // coordinate cs there, so it makes the same choice as here.
                    let plus_way = plus_way(d, cs, ct, lid);
                    if (plus_way && ct < cs) || (!plus_way && ct > cs) {
                        all |= 1 << d;
                    }
                }
                sl[s * net.lft_len + lid] = all;
            }
        }
    }
    if let Some(sl) = sl {
        // VL = bit (dimension of the output port) of the SL; CA ports use VL 0.
        let mut tables = Vec::with_capacity(net.n_sw);
        for s in 0..net.n_sw {
            let mut per_port = vec![[0u8; 16]; usize::from(net.nports[s]) + 1];
            for d in 0..nd {
                for a in [g.plus[s * nd + d], g.minus[s * nd + d]] {
                    if a == u32::MAX {
                        continue;
                    }
                    let p = usize::from(net.aport[a as usize]);
                    for (v, e) in per_port[p].iter_mut().enumerate() {
                        *e = ((v >> d) & 1) as u8;
                    }
                }
            }
            // Parallel cables (size-2 rings) share the dimension of their twin.
            for a in net.arcs(s) {
                let p = usize::from(net.aport[a]);
                if per_port[p] == [0u8; 16] {
                    if let Peer::Switch { .. } = net.peer(s, net.aport[a]) {
                        let d =
                            (0..nd).find(|&d| g.coords[s][d] != g.coords[net.adst[a] as usize][d]);
                        if let Some(d) = d {
                            for (v, e) in per_port[p].iter_mut().enumerate() {
                                *e = ((v >> d) & 1) as u8;
                            }
                        }
                    }
                }
            }
            tables.push(per_port);
        }
        r.sl = Some(sl);
        r.sl2vl = Some(tables);
        r.vls = 2;
    }
    Ok(r)
}

impl RoutingEngine for Dor {
    fn name(&self) -> &str {
        "dor"
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Result<Routes> {
        dor_net(&lids.net(csr)?, opts)
    }
}
