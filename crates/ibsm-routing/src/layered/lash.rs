//! LASH: minhop's (or, on a mesh or torus, dimension-order) paths placed on layers,
//! then balanced over them.

use ibsm_topology::Csr;

use super::layering::{ABSENT, Layering, PRESENT, one_layer_acyclic};
use super::placement::{Column, Placement};
use crate::engine::{RouteOptions, RoutingEngine};
use crate::error::Result;
use crate::lids::LidAssignment;
use crate::minhop::minhop_net;
use crate::net::{NONE, Net};
use crate::routes::Routes;
use crate::validate::arc_of;

/// Layered shortest-path routing (LASH).
#[derive(Clone, Copy, Debug, Default)]
pub struct Lash;

impl RoutingEngine for Lash {
    fn name(&self) -> &str {
        "lash"
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Result<Routes> {
        routes(&lids.net(csr)?, opts, "lash")
    }
}

/// Dependencies of the path from switch `s` to `lid`.
pub(super) fn path_deps(
    net: &Net,
    r: &Routes,
    mut s: usize,
    lid: usize,
    t: usize,
    out: &mut Vec<(u32, u32)>,
) {
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

/// LASH's routes of `net`, named `name`.
pub(super) fn routes(net: &Net, opts: &RouteOptions, name: &str) -> Result<Routes> {
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
pub(super) fn balance_layers(net: &Net, r: &Routes, lay: &mut Layering<'_>, sl: &mut [u8]) {
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
