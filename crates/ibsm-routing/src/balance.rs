//! The destination-based routing core shared by minhop, up/down and the fat-tree engine.
//!
//! For every destination switch `t` one BFS gives each switch its distance to `t` and its
//! *eligible* output arcs (the next hops allowed by the engine's rule: any shortest hop for
//! minhop, a legal up/down hop for updn and ftree). CAs on one switch share that work, so the
//! whole pass costs one BFS per switch plus one walk per LID; no switches x LIDs x ports
//! matrix is ever held.
//!
//! Then each LID of `t` is placed switch by switch, farthest first, so when a switch decides
//! it already knows how many traffic sources (CAs) will reach it for this LID (`flow`). It
//! picks the eligible arc with the lowest accumulated *flow* (edge forwarding index so far),
//! ties to the lowest arc in CSR order (remote switch index): on a full fat tree this
//! reproduces d-mod-k and the all-to-all link load is perfectly even. Where no traffic
//! reaches a switch it balances plain LID counts instead, and LMC siblings of a LID avoid
//! the ports their earlier siblings took, so the 2^LMC LIDs of a port get different paths
//! wherever the topology offers a choice.

use crate::net::{INF, NONE, Net, Peer};
use crate::routes::NO_ROUTE;

/// Which next hops are legal.
#[derive(Clone, Copy)]
pub(crate) enum Rule<'a> {
    /// Any arc that shortens the distance.
    MinHop,
    /// Up*/Down*: `pos` is a total order of switches, lower = nearer the roots. An arc
    /// `s -> x` goes up when `pos[x] < pos[s]`. Legal paths go up, then only down.
    UpDown { pos: &'a [u32], by_pos: &'a [u32] },
}

/// An optional preference: given the switch, the LID being placed and the eligible arcs,
/// return the arc to use (must be one of `elig`), or `None` for the balancing default.
pub(crate) trait Prefer: Sync {
    fn prefer(&self, net: &Net, s: usize, lid: u16, elig: &[u32], load: &[u64]) -> Option<u32>;

    /// Whether `prefer` can ever answer (lets the hot loop skip the call).
    fn active(&self) -> bool {
        true
    }
}

/// No preference.
pub(crate) struct NoPref;
impl Prefer for NoPref {
    fn prefer(&self, _: &Net, _: usize, _: u16, _: &[u32], _: &[u64]) -> Option<u32> {
        None
    }

    fn active(&self) -> bool {
        false
    }
}

/// Per-thread scratch for one destination switch.
pub(crate) struct Planner<'a> {
    pub net: &'a Net,
    pub rule: Rule<'a>,
    pub dist: Vec<u16>,
    /// First-found legal next hop per switch (set by the BFS passes).
    parent: Vec<u32>,
    down: Vec<bool>,
    queue: Vec<u32>,
    next: Vec<u32>,
    /// Switches with a route, farthest first (excludes `t`).
    pub order: Vec<u32>,
    pub estart: Vec<u32>,
    pub elen: Vec<u16>,
    pub elig: Vec<u32>,
    /// Number of switches that needed an escape hop (no legal path; see `plan`).
    pub escapes: usize,
    /// Which switches use an escape hop for the current destination.
    pub escaped: Vec<bool>,
    pub escaped_list: Vec<u32>,
    buckets: Vec<u32>,
}

impl<'a> Planner<'a> {
    pub(crate) fn new(net: &'a Net, rule: Rule<'a>) -> Self {
        let n = net.n_sw;
        Planner {
            net,
            rule,
            dist: vec![INF; n],
            parent: vec![NONE; n],
            down: vec![false; n],
            queue: Vec::with_capacity(n),
            next: Vec::with_capacity(n),
            order: Vec::with_capacity(n),
            estart: vec![0; n],
            elen: vec![0; n],
            elig: Vec::with_capacity(net.n_arcs()),
            escapes: 0,
            escaped: vec![false; n],
            escaped_list: Vec::new(),
            buckets: Vec::new(),
        }
    }

    /// Eligible arcs of switch `s` for the current destination.
    #[inline]
    pub(crate) fn eligible(&self, s: usize) -> &[u32] {
        let b = self.estart[s] as usize;
        &self.elig[b..b + usize::from(self.elen[s])]
    }

    /// One BFS towards `t` that keeps the first legal next hop of every switch, for
    /// destinations without CA traffic (a switch's own LID), where balancing buys nothing.
    /// Returns false when some switch is left without a route (the full `plan` then
    /// handles repair, escape and error reporting).
    pub(crate) fn plan_quick(&mut self, t: usize) -> bool {
        let net = self.net;
        match self.rule {
            Rule::MinHop => {
                self.dist.fill(INF);
                self.dist[t] = 0;
                self.queue.clear();
                self.queue.push(t as u32);
                let mut head = 0;
                while head < self.queue.len() {
                    let c = self.queue[head] as usize;
                    head += 1;
                    let d = self.dist[c] + 1;
                    for a in net.arcs(c) {
                        let x = net.adst[a] as usize;
                        if self.dist[x] == INF {
                            self.dist[x] = d;
                            self.parent[x] = net.arev[a];
                            self.queue.push(x as u32);
                        }
                    }
                }
            }
            Rule::UpDown { pos, .. } => self.updown_bfs(t, pos),
        }
        !self.dist.contains(&INF)
    }

    /// The next hop found by [`Planner::plan_quick`].
    #[inline]
    pub(crate) fn quick_port(&self, s: usize) -> u8 {
        self.net.aport[self.parent[s] as usize]
    }

    /// Computes distances and eligible arcs towards switch `t`.
    pub(crate) fn plan(&mut self, t: usize) {
        let net = self.net;
        self.escapes = 0;
        for &s in &self.escaped_list {
            self.escaped[s as usize] = false;
        }
        self.escaped_list.clear();
        match self.rule {
            Rule::MinHop => net.bfs(t, &mut self.dist, &mut self.queue),
            Rule::UpDown { pos, by_pos } => {
                self.updown_bfs(t, pos);
                if self.dist.contains(&INF) {
                    self.updown_conservative(t, pos, by_pos);
                }
            }
        }
        // Eligible arcs.
        self.elig.clear();
        for s in 0..net.n_sw {
            self.estart[s] = self.elig.len() as u32;
            let d = self.dist[s];
            if d == INF || d == 0 {
                self.elen[s] = 0;
                continue;
            }
            for a in net.arcs(s) {
                let x = net.adst[a] as usize;
                if self.dist[x] != d - 1 {
                    continue;
                }
                let ok = match self.rule {
                    Rule::MinHop => true,
                    Rule::UpDown { pos, .. } => {
                        if self.down[s] {
                            self.down[x] && pos[x] > pos[s]
                        } else {
                            pos[x] < pos[s]
                        }
                    }
                };
                if ok {
                    self.elig.push(a as u32);
                }
            }
            self.elen[s] = (self.elig.len() - self.estart[s] as usize) as u16;
        }
        if let Rule::UpDown { .. } = self.rule {
            self.escape(t);
        }
        // Farthest first (counting sort on distance).
        let maxd = self
            .dist
            .iter()
            .filter(|&&d| d != INF)
            .max()
            .copied()
            .unwrap_or(0) as usize;
        self.buckets.clear();
        self.buckets.resize(maxd + 2, 0);
        for &d in &self.dist {
            if d != INF && d != 0 {
                self.buckets[usize::from(d)] += 1;
            }
        }
        // Prefix sums from the far end.
        let mut acc = 0u32;
        for d in (1..=maxd).rev() {
            let c = self.buckets[d];
            self.buckets[d] = acc;
            acc += c;
        }
        self.order.clear();
        self.order.resize(acc as usize, 0);
        for (s, &d) in self.dist.iter().enumerate() {
            if d != INF && d != 0 {
                let slot = &mut self.buckets[usize::from(d)];
                self.order[*slot as usize] = s as u32;
                *slot += 1;
            }
        }
    }

    /// Level-synchronous BFS with states: a switch is DOWN when its chosen path to `t` only
    /// goes down, UP otherwise. Entering a switch by a down move needs it to be DOWN; at
    /// equal distance DOWN wins (it serves more neighbours).
    fn updown_bfs(&mut self, t: usize, pos: &[u32]) {
        let net = self.net;
        self.dist.fill(INF);
        self.down.fill(false);
        self.dist[t] = 0;
        self.down[t] = true;
        self.queue.clear();
        self.queue.push(t as u32);
        let mut d = 0u16;
        while !self.queue.is_empty() {
            self.next.clear();
            for i in 0..self.queue.len() {
                let c = self.queue[i] as usize;
                for a in net.arcs(c) {
                    let n = net.adst[a] as usize;
                    // The forward hop is n -> c: up when c is nearer the roots.
                    let cand_down = if pos[c] < pos[n] {
                        false
                    } else if self.down[c] {
                        true
                    } else {
                        continue;
                    };
                    if self.dist[n] == INF {
                        self.dist[n] = d + 1;
                        self.down[n] = cand_down;
                        self.parent[n] = net.arev[a];
                        self.next.push(n as u32);
                    } else if self.dist[n] == d + 1 && cand_down && !self.down[n] {
                        self.down[n] = true;
                        self.parent[n] = net.arev[a];
                    }
                }
            }
            std::mem::swap(&mut self.queue, &mut self.next);
            d += 1;
        }
    }

    /// Always complete on a connected fabric: every switch with a down-only path is DOWN,
    /// the others climb (up arcs strictly lower `pos`, so one pass in `pos` order suffices).
    fn updown_conservative(&mut self, t: usize, pos: &[u32], by_pos: &[u32]) {
        let net = self.net;
        self.dist.fill(INF);
        self.down.fill(false);
        self.dist[t] = 0;
        self.down[t] = true;
        self.queue.clear();
        self.queue.push(t as u32);
        let mut head = 0;
        while head < self.queue.len() {
            let c = self.queue[head] as usize;
            head += 1;
            for a in net.arcs(c) {
                let n = net.adst[a] as usize;
                if pos[n] < pos[c] && self.dist[n] == INF {
                    self.dist[n] = self.dist[c] + 1;
                    self.down[n] = true;
                    self.queue.push(n as u32);
                }
            }
        }
        for &s in by_pos {
            let s = s as usize;
            if self.down[s] {
                continue;
            }
            let mut best = INF;
            for a in net.arcs(s) {
                let x = net.adst[a] as usize;
                if pos[x] < pos[s] && self.dist[x] != INF {
                    best = best.min(self.dist[x] + 1);
                }
            }
            self.dist[s] = best;
        }
    }

    /// Switches with no legal path (a top switch of a degraded fat tree that lost its way
    /// down) get an escape hop to a neighbour that has a route. No legal path ever passes
    /// through such a switch (it is not eligible for anyone), so escape channels only ever
    /// follow other escape channels and cannot close a cycle in the dependency graph.
    fn escape(&mut self, _t: usize) {
        let net = self.net;
        loop {
            let mut changed = false;
            for s in 0..net.n_sw {
                if self.dist[s] != INF {
                    continue;
                }
                let mut best: Option<(u16, usize)> = None;
                for a in net.arcs(s) {
                    let x = net.adst[a] as usize;
                    let d = self.dist[x];
                    if d != INF && best.is_none_or(|(bd, _)| d < bd) {
                        best = Some((d, a));
                    }
                }
                if let Some((d, a)) = best {
                    self.dist[s] = d + 1;
                    self.estart[s] = self.elig.len() as u32;
                    self.elig.push(a as u32);
                    self.elen[s] = 1;
                    self.escapes += 1;
                    self.escaped[s] = true;
                    self.escaped_list.push(s as u32);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
}

/// Accumulated load per arc, owned by one thread.
pub(crate) struct Loads {
    pub load: Vec<u64>,
    pub lids: Vec<u32>,
    flow: Vec<u64>,
    /// Round-robin position per switch.
    rr: Vec<u32>,
    /// First (switch, LID) where CA traffic had to take an escape hop.
    pub escape_traffic: Option<(usize, u16)>,
}

impl Loads {
    pub(crate) fn new(net: &Net) -> Self {
        Loads {
            load: vec![0; net.n_arcs()],
            lids: vec![0; net.n_arcs()],
            flow: net.nsrc.iter().map(|&n| u64::from(n)).collect(),
            rr: vec![0; net.n_sw],
            escape_traffic: None,
        }
    }
}

/// Writes the LFT column of one LID into `rows` (one slice per switch, covering LIDs
/// `l0..`), using the plan for its destination switch `t`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn place_lid(
    p: &Planner<'_>,
    t: usize,
    exit_port: u8,
    lid: u16,
    weight: u8,
    base: u16,
    rows: &mut [&mut [u8]],
    l0: usize,
    loads: &mut Loads,
    pref: &dyn Prefer,
) {
    let net = p.net;
    let col = usize::from(lid) - l0;
    let sibs = usize::from(lid - base);
    rows[t][col] = exit_port;
    if weight > 0 && loads.escape_traffic.is_none() {
        // Legal switches never forward into escaped ones, so CA traffic meets an escape
        // hop exactly when a CA's own switch has one.
        if let Some(&s) = p.escaped_list.iter().find(|&&s| net.nsrc[s as usize] > 0) {
            loads.escape_traffic = Some((s as usize, lid));
        }
    }
    if weight == 0 {
        // No CA traffic: spread LID counts only.
        for &s in &p.order {
            let s = s as usize;
            let el = p.eligible(s);
            let mut best = el[0];
            if el.len() > 1 {
                if let Some(a) = pref.prefer(net, s, lid, el, &loads.load) {
                    rows[s][col] = net.aport[a as usize];
                    loads.lids[a as usize] += 1;
                    continue;
                }
                best = pick_rr(net, el, &mut loads.rr[s], sibs, rows[s], col);
            }
            rows[s][col] = net.aport[best as usize];
            loads.lids[best as usize] += 1;
        }
        return;
    }
    // `flow` holds each switch's own sources between LIDs; a switch adds what passes
    // through it to its next hop, then resets itself for the next LID.
    loads.flow[t] = u64::from(net.nsrc[t]);
    let use_pref = pref.active();
    for &s in &p.order {
        let s = s as usize;
        let el = p.eligible(s);
        let f = loads.flow[s];
        loads.flow[s] = u64::from(net.nsrc[s]);
        let arc = if el.len() == 1 {
            el[0]
        } else if let Some(a) = use_pref
            .then(|| pref.prefer(net, s, lid, el, &loads.load))
            .flatten()
        {
            a
        } else if f == 0 {
            // No CA traffic passes here for this LID: only LID counts matter.
            pick_rr(net, el, &mut loads.rr[s], sibs, rows[s], col)
        } else if sibs == 0 {
            // The hot loop: least loaded eligible arc, first one on ties.
            let load = &loads.load;
            let mut best = el[0];
            let mut bl = load[best as usize];
            for &a in &el[1..] {
                let l = load[a as usize];
                if l < bl {
                    bl = l;
                    best = a;
                }
            }
            best
        } else {
            let mut best = NONE;
            let mut bkey = (true, u64::MAX);
            for &a in el {
                let clash = sibs > 0 && {
                    let port = net.aport[a as usize];
                    (1..=sibs).any(|k| rows[s][col - k] == port)
                };
                let key = (clash, loads.load[a as usize]);
                if key < bkey {
                    bkey = key;
                    best = a;
                }
            }
            best
        };
        let a = arc as usize;
        rows[s][col] = net.aport[a];
        loads.load[a] += f;
        loads.lids[a] += 1;
        loads.flow[net.adst[a] as usize] += f;
    }
    loads.flow[t] = u64::from(net.nsrc[t]);
}

/// Round robin over the eligible arcs of one switch (spreads LID counts in O(1)),
/// skipping ports already taken by this LID's LMC siblings.
#[inline]
fn pick_rr(net: &Net, el: &[u32], rr: &mut u32, sibs: usize, row: &[u8], col: usize) -> u32 {
    let n = el.len();
    let start = *rr as usize;
    for i in 0..n {
        let a = el[(start + i) % n];
        let port = net.aport[a as usize];
        if sibs == 0 || !(1..=sibs).any(|k| row[col - k] == port) {
            *rr = (start + i + 1) as u32;
            return a;
        }
    }
    *rr = (start + 1) as u32;
    el[start % n]
}

/// What [`route_all`] found besides the tables.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RouteStats {
    /// Switch/destination pairs that needed an escape hop.
    pub escapes: usize,
    /// The first (switch, LID) with no route at all.
    pub unreachable: Option<(usize, u16)>,
    /// The first (switch, LID) where CA traffic needs a hop outside the engine's rule.
    pub escape_traffic: Option<(usize, u16)>,
}

/// Routes every LID of the fabric with `rule`, splitting LID ranges over `threads`
/// threads (`std::thread::scope`).
pub(crate) fn route_all(
    net: &Net,
    rule: Rule<'_>,
    threads: usize,
    lfts: &mut [u8],
    pref: &dyn Prefer,
) -> RouteStats {
    let len = net.lft_len;
    let threads = threads.clamp(1, 64).min(len.div_ceil(128).max(1));
    // LID range boundaries aligned to 128 so LMC siblings never straddle two threads.
    let mut bounds = vec![0usize];
    for i in 1..threads {
        let b = (len * i / threads) / 128 * 128;
        if b > *bounds.last().unwrap_or(&0) {
            bounds.push(b);
        }
    }
    bounds.push(len);
    let nparts = bounds.len() - 1;
    let mut parts: Vec<Vec<&mut [u8]>> =
        (0..nparts).map(|_| Vec::with_capacity(net.n_sw)).collect();
    for row in lfts.chunks_mut(len) {
        let mut rest = row;
        for i in 0..nparts {
            let (a, b) = rest.split_at_mut(bounds[i + 1] - bounds[i]);
            parts[i].push(a);
            rest = b;
        }
    }
    let work = |rows: &mut Vec<&mut [u8]>, l0: usize, l1: usize| -> RouteStats {
        let mut p = Planner::new(net, rule);
        let mut loads = Loads::new(net);
        let mut lids = Vec::new();
        let mut st = RouteStats::default();
        for t in 0..net.n_sw {
            net.lids_on(t, &mut lids);
            lids.retain(|&(l, ..)| (l0..l1).contains(&usize::from(l)));
            if lids.is_empty() {
                continue;
            }
            if lids.len() == 1 && lids[0].1 == 0 && p.plan_quick(t) {
                let col = usize::from(lids[0].0) - l0;
                for (s, row) in rows.iter_mut().enumerate() {
                    row[col] = if s == t { 0 } else { p.quick_port(s) };
                }
                continue;
            }
            p.plan(t);
            st.escapes += p.escapes;
            if st.unreachable.is_none() {
                if let Some(s) = p.dist.iter().position(|&d| d == INF) {
                    st.unreachable = Some((s, lids[0].0));
                }
            }
            for &(lid, w, base) in &lids {
                let exit = match net.dest_switch(usize::from(lid)) {
                    Some((_, port)) => port,
                    None => NO_ROUTE,
                };
                place_lid(&p, t, exit, lid, w, base, rows, l0, &mut loads, pref);
            }
        }
        st.escape_traffic = loads.escape_traffic;
        st
    };
    if nparts == 1 {
        return work(&mut parts[0], 0, len);
    }
    std::thread::scope(|sc| {
        let hs: Vec<_> = parts
            .iter_mut()
            .enumerate()
            .map(|(i, rows)| {
                let (l0, l1) = (bounds[i], bounds[i + 1]);
                let w = &work;
                sc.spawn(move || w(rows, l0, l1))
            })
            .collect();
        let mut all = RouteStats::default();
        for h in hs {
            let st = h.join().unwrap_or_default();
            all.escapes += st.escapes;
            all.unreachable = all.unreachable.or(st.unreachable);
            all.escape_traffic = all.escape_traffic.or(st.escape_traffic);
        }
        all
    })
}

/// Whether port `p` of switch `s` leads to a switch.
#[allow(dead_code)]
pub(crate) fn is_switch_port(net: &Net, s: usize, p: u8) -> bool {
    matches!(net.peer(s, p), Peer::Switch { .. })
}
