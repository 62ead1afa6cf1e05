//! Reverse hops for I/O nodes (OpenSM's `max_reverse_hops` with `io_guid_file`, ftree).
//!
//! A *reverse hop* is a switch used the wrong way round: a packet that came down into it
//! leaves it going up again. Up/down routes never make one, which is what keeps them free
//! of credit loops, and what leaves storage hung off a spine unreachable from a leaf
//! that is not below that spine, or from another spine. This pass, run on the finished
//! up/down tables, gives the switches whose path towards a LID is not up/down (an escape
//! hop, or none) the shortest path with the fewest reverse hops, at most
//! [`Net::max_reverse_hops`], where only I/O nodes' traffic takes it:
//!
//! * towards an I/O node ([`Net::io`]), every such switch;
//! * towards any other CA, only switches that carry no compute traffic (whose CAs are
//!   all I/O nodes, or that have none), so that storage on a spine also reaches the
//!   compute nodes of a leaf below another spine, while routes between compute nodes
//!   stay up/down.
//!
//! For one LID:
//!
//! * level 0: the switches whose path in the tables is up/down keep it;
//! * level `k` = 1, 2, ...: a breadth-first search over total hops from everything
//!   placed so far gives the switches still without a place a path with at most `k`
//!   reverse hops; at equal length a switch takes the fewest reverse hops, then a path
//!   that goes only down from it (so that more switches above it can descend into it
//!   without a turn), then the lowest arc (remote switch index), so that the routes of
//!   different I/O nodes turn at the same switches wherever they can, which keeps their
//!   dependencies from closing a cycle.
//!
//! Each switch placed at a level points at one placed before it, nearer the
//! destination, so the column stays loop-free. Switches no level reaches keep what the
//! up/down pass gave them (an escape hop, for management traffic); if one of them has
//! CAs whose traffic would take it, the routing fails.

use crate::net::{Dest, INF, NONE, Net, Peer};
use crate::routes::NO_ROUTE;

/// Scratch space for one column at a time.
struct Column {
    /// Hops to the destination switch (`INF`: no placed path).
    dist: Vec<u16>,
    /// Reverse hops on the path.
    turns: Vec<u16>,
    /// Whether the path's first hop goes up (a packet that comes down into such a
    /// switch makes a reverse hop there).
    climbs: Vec<bool>,
    /// The arc the switch forwards on, for switches this pass placed (`NONE`: kept).
    arc: Vec<u32>,
    /// Walk state: 0 unknown, 1 on the walk, 2 done.
    seen: Vec<u8>,
    /// Reached first at the distance the search is deciding.
    fresh: Vec<bool>,
    stack: Vec<usize>,
    /// Placed switches by distance, the search's frontier.
    buckets: Vec<Vec<u32>>,
}

/// Gives I/O nodes' traffic reverse-hop paths where up/down ones are missing, in
/// `lfts` (switch-major, `net.lft_len` per switch); `pos` is the up/down order the
/// tables were made with (an arc `s -> x` climbs when `pos[x] < pos[s]`).
///
/// # Errors
/// The first `(switch, LID)` where a switch whose traffic may reverse still has no path
/// within the allowed reverse hops.
pub(crate) fn route_io(net: &Net, pos: &[u32], lfts: &mut [u8]) -> Result<(), (usize, u16)> {
    let hops = net.max_reverse_hops;
    if hops == 0 || !net.io.contains(&true) {
        return Ok(());
    }
    let n = net.n_sw;
    let len = net.lft_len;
    let up: Vec<bool> = (0..net.n_arcs())
        .map(|a| pos[net.adst[a] as usize] < pos[net.asrc[a] as usize])
        .collect();
    // Switches whose CA traffic is I/O nodes' only, and those with no compute traffic.
    let io_only: Vec<bool> = (0..n).map(|s| net.only_io_sources(s)).collect();
    let no_compute: Vec<bool> = (0..n)
        .map(|s| io_only[s] || net.n_sources(s) == 0)
        .collect();
    let io_switches: Vec<usize> = (0..n).filter(|&s| io_only[s]).collect();
    let everyone = vec![true; n];
    let mut c = Column {
        dist: vec![INF; n],
        turns: vec![0; n],
        climbs: vec![false; n],
        arc: vec![NONE; n],
        seen: vec![0; n],
        fresh: vec![false; n],
        stack: Vec::new(),
        buckets: Vec::new(),
    };
    let mut failed = None;
    for lid in 1..len {
        let Some((t, _)) = net.dest_switch(lid) else {
            continue;
        };
        let t = t as usize;
        let to_io = net.reverse_hop_dest(lid);
        if !to_io
            && (!matches!(net.lid_dest[lid], Dest::Term(..))
                || io_switches
                    .iter()
                    .all(|&s| up_down_path(net, &up, lfts, t, lid, s)))
        {
            // A switch LID (management traffic), or every I/O switch has its way.
            continue;
        }
        let (may, must) = if to_io {
            (&everyone, &everyone)
        } else {
            (&no_compute, &io_only)
        };
        c.placed_by_tables(net, &up, lfts, t, lid);
        // A level that places nothing leaves the next with the same start (each switch
        // one turn below what it allows), so nothing more is reachable.
        for k in 1..=hops {
            if !c.search(net, &up, k, may) {
                break;
            }
        }
        for s in 0..n {
            if c.arc[s] != NONE {
                lfts[s * len + lid] = net.aport[c.arc[s] as usize];
            } else if c.dist[s] == INF
                && must[s]
                && net.n_sources(s) > 0
                && lfts[s * len + lid] != NO_ROUTE
                && failed.is_none()
            {
                // CA traffic on an escape hop (a switch without any route was reported
                // by the up/down pass already).
                failed = Some((s, lid as u16));
            }
        }
    }
    failed.map_or(Ok(()), Err)
}

/// Whether the tables' path from `s` towards `lid` (on switch `t`) reaches `t` without a
/// reverse hop.
fn up_down_path(net: &Net, up: &[bool], lfts: &[u8], t: usize, lid: usize, s: usize) -> bool {
    let (mut x, mut came_down) = (s, false);
    for _ in 0..net.n_sw {
        if x == t {
            return true;
        }
        let Peer::Switch { arc, .. } = net.peer(x, lfts[x * net.lft_len + lid]) else {
            return false;
        };
        let a = arc as usize;
        if came_down && up[a] {
            return false;
        }
        came_down = !up[a];
        x = net.adst[a] as usize;
    }
    false
}

impl Column {
    /// Level 0: walks the tables' path from every switch towards `t` and keeps the ones
    /// without a reverse hop (a path that loops, leaves the fabric or turns is dropped).
    fn placed_by_tables(&mut self, net: &Net, up: &[bool], lfts: &[u8], t: usize, lid: usize) {
        let len = net.lft_len;
        self.dist.fill(INF);
        self.turns.fill(0);
        self.climbs.fill(false);
        self.arc.fill(NONE);
        self.seen.fill(0);
        for b in &mut self.buckets {
            b.clear();
        }
        // The destination switch delivers: nothing comes down into it and turns.
        self.dist[t] = 0;
        self.seen[t] = 2;
        // `next[s]`: the arc of the tables' entry, NONE where it is not a switch port.
        let next = |s: usize| match net.peer(s, lfts[s * len + lid]) {
            Peer::Switch { arc, .. } => arc,
            _ => NONE,
        };
        for s0 in 0..net.n_sw {
            let mut s = s0;
            self.stack.clear();
            while self.seen[s] == 0 {
                self.seen[s] = 1;
                self.stack.push(s);
                let a = next(s);
                if a == NONE {
                    break;
                }
                s = net.adst[a as usize] as usize;
            }
            // `s` is done, on this walk (a loop) or a dead end; unwind towards s0.
            while let Some(x) = self.stack.pop() {
                self.seen[x] = 2;
                let a = next(x);
                if a == NONE {
                    continue;
                }
                let y = net.adst[a as usize] as usize;
                if self.seen[y] != 2 || self.dist[y] == INF {
                    continue;
                }
                let a = a as usize;
                let turn = u16::from(!up[a] && self.climbs[y]);
                self.turns[x] = self.turns[y] + turn;
                self.climbs[x] = up[a];
                self.dist[x] = self.dist[y] + 1;
            }
        }
        // A path that turns somewhere is not kept (the switches before the turn inherit
        // its count, so they are dropped with it).
        for s in 0..net.n_sw {
            if self.turns[s] > 0 {
                self.dist[s] = INF;
            }
        }
        for s in 0..net.n_sw {
            if self.dist[s] != INF {
                self.push(s);
            }
        }
    }

    fn push(&mut self, s: usize) {
        let d = usize::from(self.dist[s]);
        if self.buckets.len() <= d {
            self.buckets.resize_with(d + 1, Vec::new);
        }
        self.buckets[d].push(s as u32);
    }

    /// Level `k`: places the switches without a path that reach a placed one within `k`
    /// reverse hops, shortest first; whether it placed any.
    /// Only switches with `may` set are placed.
    fn search(&mut self, net: &Net, up: &[bool], k: u16, may: &[bool]) -> bool {
        let mut placed = false;
        let mut d = 0;
        // Switches first reached at the distance being decided (`d + 1`): they may still
        // take a better candidate from the rest of bucket `d`.
        let mut fresh: Vec<u32> = Vec::new();
        while d < self.buckets.len() {
            fresh.clear();
            let mut i = 0;
            while i < self.buckets[d].len() {
                let x = self.buckets[d][i] as usize;
                i += 1;
                for a in net.arcs(x) {
                    let s = net.adst[a] as usize;
                    if !may[s] {
                        continue;
                    }
                    // The forward hop is s -> x.
                    let fwd = net.arev[a];
                    if fwd == NONE {
                        continue;
                    }
                    let f = fwd as usize;
                    let turns = self.turns[x] + u16::from(!up[f] && self.climbs[x]);
                    if turns > k {
                        continue;
                    }
                    if self.dist[s] != INF {
                        if !self.fresh[s] {
                            continue;
                        }
                        // Fewer reverse hops, then a path going only down from `s`,
                        // then the lowest arc.
                        let new = (turns, up[f], fwd);
                        if new >= (self.turns[s], self.climbs[s], self.arc[s]) {
                            continue;
                        }
                    } else {
                        self.fresh[s] = true;
                        fresh.push(s as u32);
                    }
                    self.dist[s] = (d + 1) as u16;
                    self.turns[s] = turns;
                    self.climbs[s] = up[f];
                    self.arc[s] = fwd;
                }
            }
            placed |= !fresh.is_empty();
            for &s in &fresh {
                self.fresh[s as usize] = false;
                let d1 = d + 1;
                if self.buckets.len() <= d1 {
                    self.buckets.resize_with(d1 + 1, Vec::new);
                }
                self.buckets[d1].push(s);
            }
            d += 1;
        }
        placed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::{NoPref, Rule, route_all};
    use crate::net::testnets::finish;
    use crate::routes::Routes;
    use crate::validate::reach_net;

    /// A line of switches A-B-C-D-E (0..5; port 1 to the previous, 2 to the next) with
    /// an I/O node on A and a compute node on E, in an up/down order (A, C, E, B, D)
    /// that makes B and D turning points: from E to A the path turns twice.
    fn line(hops: u16) -> (Net, Vec<u32>, Vec<u32>) {
        let links = (0..4).map(|i| (i, 2, i + 1, 1)).collect();
        let mut net = finish(vec![3; 5], links, vec![(0, 3), (4, 3)], 0);
        net.io = vec![true, false];
        net.max_reverse_hops = hops;
        let by_pos = vec![0, 2, 4, 1, 3];
        let mut pos = vec![0; 5];
        for (i, &s) in by_pos.iter().enumerate() {
            pos[s as usize] = i as u32;
        }
        (net, pos, by_pos)
    }

    /// Reverse hops on the path from `s` towards `lid`.
    fn turns(net: &Net, pos: &[u32], r: &Routes, s: usize, lid: u16) -> usize {
        let (mut x, mut came_down, mut n) = (s, false, 0);
        while let Peer::Switch { sw, .. } = net.peer(x, r.lft(x)[usize::from(lid)]) {
            let climbs = pos[sw as usize] < pos[x];
            n += usize::from(came_down && climbs);
            came_down = !climbs;
            x = sw as usize;
        }
        n
    }

    #[test]
    fn paths_take_at_most_the_reverse_hops_allowed() {
        let (io_lid, cn_lid) = (6, 7);
        for hops in 0..=3 {
            let (net, pos, by_pos) = line(hops);
            let mut r = Routes::new("t", net.n_sw, net.lft_len);
            let rule = Rule::UpDown {
                pos: &pos,
                by_pos: &by_pos,
            };
            let st = route_all(&net, rule, 1, &mut r.lfts, &NoPref);
            if hops == 0 {
                // E's compute node would climb after coming down: refused as ever.
                assert_eq!(st.escape_traffic, Some((4, io_lid)));
                continue;
            }
            // Left to the pass: traffic to and from the I/O node.
            assert_eq!(st.escape_traffic, None, "{hops}");
            let res = route_io(&net, &pos, &mut r.lfts);
            if hops == 1 {
                assert_eq!(res, Err((4, io_lid)));
                continue;
            }
            assert_eq!(res, Ok(()), "{hops}");
            reach_net(&net, &r).unwrap();
            assert_eq!(turns(&net, &pos, &r, 4, io_lid), 2);
            assert_eq!(turns(&net, &pos, &r, 0, cn_lid), 2);
            // The compute node's own switch and B, C, D: as few turns as they can.
            assert_eq!(turns(&net, &pos, &r, 3, io_lid), 1);
            assert_eq!(turns(&net, &pos, &r, 1, io_lid), 0);
        }
    }
}
