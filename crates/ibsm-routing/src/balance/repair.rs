//! Re-routing after a fabric change: every switch whose previous port is still a legal
//! next hop keeps it, the others choose as the placement would.

use super::place::{Loads, note_escape_traffic};
use super::plan::{Plan, Planner};
use crate::net::{NONE, Net, Peer};
use crate::routes::NO_ROUTE;

/// Re-places the `lids` of `plan.t` (planned by `p` with [`Planner::plan_lazy`]) in
/// `rows`, which hold the previous tables: every switch whose previous port is still a
/// legal next hop keeps it; the others choose as [`place`] would (least loaded, round
/// robin where no CA traffic passes, avoiding LMC siblings' ports). Only the eligible
/// lists of switches that change are built.
pub(crate) fn repair(
    p: &Planner<'_>,
    plan: &Plan,
    lids: &[(u16, u8, u16)],
    rows: &mut [&mut [u8]],
    loads: &mut Loads,
    buf: &mut Vec<u32>,
) {
    let net = p.net;
    let t = plan.t;
    let stride = loads.stride;
    note_escape_traffic(plan, lids, net, loads);
    for &(lid, w, base) in lids {
        let col = usize::from(lid);
        let sibs = usize::from(lid - base);
        rows[t][col] = net.dest_switch(col).map_or(NO_ROUTE, |(_, port)| port);
        for &s in &plan.order {
            let s = s as usize;
            let f = if w > 0 {
                std::mem::replace(&mut loads.flow[s * stride], net.nsrc[s])
            } else {
                0
            };
            let row = &mut *rows[s];
            let old = match net.peer(s, row[col]) {
                Peer::Switch { arc, .. } => arc as usize,
                _ => NONE as usize,
            };
            let arc = if old != NONE as usize && p.arc_ok(s, old) {
                old
            } else {
                p.eligible_into(s, buf);
                loads.pick(net, s, buf, f, sibs, row, col)
            };
            row[col] = net.aport[arc];
            if f > 0 {
                loads.add(arc, u64::from(f), sibs);
                loads.flow[net.adst[arc] as usize * stride] += f;
            }
        }
        if w > 0 {
            loads.flow[t * stride] = net.nsrc[t];
        }
    }
}

/// How a switch's previous path to `t` for `lid` continues in the new fabric: its length
/// in hops and whether it only descends (`up` says which arcs climb), or `None` when it
/// crosses a port that leads nowhere now (or loops).
fn old_path(
    net: &Net,
    prev: &[u8],
    up: &[bool],
    mut s: usize,
    t: usize,
    lid: usize,
) -> Option<(u16, bool)> {
    let len = net.lft_len;
    let (mut hops, mut down_only) = (0u16, true);
    while s != t {
        match net.peer(s, prev[s * len + lid]) {
            Peer::Switch { sw, arc, .. } => {
                down_only &= !up.get(arc as usize).copied().unwrap_or(false);
                s = sw as usize;
                hops += 1;
                if usize::from(hops) > net.n_sw {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some((hops, down_only))
}

/// Whether every neighbour of every switch in `broken` still has its previous path to
/// `t` for `lid` (then those are shortest, legal paths of the new fabric too) and each
/// broken switch can legally continue on one of them: then [`repair_local`] can fix the
/// broken switches alone. `up` (up/down rules) says which arcs climb.
pub(crate) fn local_ok(
    net: &Net,
    prev: &[u8],
    up: Option<&[bool]>,
    t: usize,
    lid: u16,
    broken: &[u32],
) -> bool {
    let upv = up.unwrap_or(&[]);
    broken.iter().all(|&u| {
        let u = u as usize;
        let mut legal = false;
        u != t
            && net.arcs(u).all(|a| {
                match old_path(net, prev, upv, net.adst[a] as usize, t, usize::from(lid)) {
                    Some((_, down_only)) => {
                        legal |= up.is_none() || upv[a] || down_only;
                        true
                    }
                    None => false,
                }
            })
            && legal
    })
}

/// Re-routes `lid` (base LID `base`, CA traffic when `weight > 0`) by changing only the
/// entries of the switches in `broken`, which [`local_ok`] accepted: each takes the least
/// loaded of its new eligible next hops (shortest, and for up/down rules legal: climbing,
/// or descending into a switch whose path only descends). No other switch's path runs
/// through a broken one (its path would be broken too), so nothing else changes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn repair_local(
    net: &Net,
    prev: &[u8],
    up: Option<&[bool]>,
    t: usize,
    (lid, weight, base): (u16, u8, u16),
    broken: &[u32],
    rows: &mut [&mut [u8]],
    loads: &mut Loads,
    buf: &mut Vec<u32>,
) {
    let col = usize::from(lid);
    let sibs = usize::from(lid - base);
    let no_up: &[bool] = &[];
    for &u in broken {
        let u = u as usize;
        let cand: Vec<(usize, u16, bool)> = net
            .arcs(u)
            .filter_map(|a| {
                let (h, d) =
                    old_path(net, prev, up.unwrap_or(no_up), net.adst[a] as usize, t, col)?;
                Some((a, h, d))
            })
            .collect();
        let climbs = |a: usize| up.is_some_and(|v| v[a]);
        buf.clear();
        match up {
            None => {
                let m = cand.iter().map(|c| c.1).min().unwrap_or(u16::MAX);
                buf.extend(cand.iter().filter(|c| c.1 == m).map(|c| c.0 as u32));
            }
            Some(_) => {
                let legal = |c: &&(usize, u16, bool)| climbs(c.0) || c.2;
                let m = cand
                    .iter()
                    .filter(legal)
                    .map(|c| c.1)
                    .min()
                    .unwrap_or(u16::MAX);
                let down = cand.iter().any(|c| !climbs(c.0) && c.2 && c.1 == m);
                buf.extend(
                    cand.iter()
                        .filter(|c| {
                            c.1 == m
                                && if down {
                                    !climbs(c.0) && c.2
                                } else {
                                    climbs(c.0)
                                }
                        })
                        .map(|c| c.0 as u32),
                );
            }
        }
        if buf.is_empty() {
            continue;
        }
        let f = if weight > 0 { net.nsrc[u] } else { 0 };
        let row = &mut *rows[u];
        let arc = loads.pick(net, u, buf, f, sibs, row, col);
        row[col] = net.aport[arc];
        if f > 0 {
            loads.add(arc, u64::from(f), sibs);
        }
    }
}
