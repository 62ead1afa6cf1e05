//! Planning one destination switch: its BFS, each switch's eligible arcs and the order
//! in which switches decide. Load-independent, so any thread can plan.

use super::Rule;
use crate::net::{INF, NONE, Net};

/// The load-independent result of planning one destination switch: which switches route
/// to it, in which order they decide, and each one's eligible arcs. Plans are pure
/// functions of the fabric and the rule, so they can be computed on any thread.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// The destination switch.
    pub t: usize,
    /// Switches with a route, farthest first (excludes `t`).
    pub order: Vec<u32>,
    /// Eligible arcs of `order[i]` are `elig[off[i]..off[i + 1]]`.
    off: Vec<u32>,
    elig: Vec<u32>,
    /// Switches that use an escape hop (no legal path).
    pub escaped: Vec<u32>,
    /// The first switch left without any route.
    pub unreachable: Option<usize>,
    /// Only a switch's own LID lives on `t`: the eligible arcs are the legal (or escape)
    /// hops for management traffic, in no particular order, and are balanced by count.
    pub quick: bool,
    /// Up/down rules: switch LIDs take the eligible hop with the fewest switch LIDs so far
    /// (minhop keeps round robin, shared with CA LIDs that carry no flow there).
    pub count_switch_lids: bool,
    /// [`Hops::Deferred`] (`is_deferred`): what the BFS saw, from which the placement
    /// chooses each switch's hop ([`place_switch_lid`]); no eligible lists then.
    deferred: Deferred,
    is_deferred: bool,
}

/// A switch-LID destination of an up/down rule planned without the switch-LID counts
/// ([`Hops::Deferred`]): what [`Hops::Least`]'s BFS and escapes saw, per switch, so that
/// the placement finds among a switch's arcs the hops that plan chose among and makes the
/// same choice with the counts of its own time.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    /// Per switch: its distance to the destination (escape hops included) at
    /// [`ST_DIST`], its rank in the escape passes ([`ST_RANK`]: 0 for a switch the BFS
    /// reached or that escapes next to it; a switch only escapes through switches ranked
    /// before it), [`ST_DOWN`] when its path only descends, [`ST_ESCAPED`].
    pub(super) st: Vec<u64>,
    /// Per switch: its place in the BFS queue, shifted left by 8 (the BFS meets the hops
    /// into a switch in this order, then by that switch's arc back, [`Sides`]).
    pub(super) qpos: Vec<u32>,
}

/// [`Deferred::st`]'s fields.
pub(super) const ST_ESCAPED: u64 = 1;
pub(super) const ST_DOWN: u64 = 2;
pub(super) const ST_RANK: u32 = 8;
pub(super) const ST_DIST: u32 = 40;
pub(super) const ST_DIST_MASK: u64 = 0xFFFF << ST_DIST;

impl Plan {
    /// Eligible arcs of the `i`-th switch of `order`.
    #[inline]
    pub(crate) fn eligible(&self, i: usize) -> &[u32] {
        &self.elig[self.off[i] as usize..self.off[i + 1] as usize]
    }

    /// Starts a plan for `t`; `elig` is kept at least `cap` long and written by index.
    fn clear(&mut self, t: usize, cap: usize) {
        self.t = t;
        self.order.clear();
        self.off.clear();
        self.off.push(0);
        if self.elig.len() < cap {
            self.elig.resize(cap, 0);
        }
        self.escaped.clear();
        self.unreachable = None;
        self.quick = false;
        self.count_switch_lids = false;
        self.is_deferred = false;
    }

    /// A [`Hops::Deferred`] plan's picture.
    pub(crate) fn deferred(&self) -> Option<&Deferred> {
        self.is_deferred.then_some(&self.deferred)
    }
}

/// How a quick plan (a switch's own LID alone) chooses each switch's hop.
#[derive(Clone, Copy)]
enum Hops<'s> {
    /// The first legal (or escape) hop the BFS finds.
    First,
    /// Up/down rules: the one with the fewest switch LIDs so far (`swl` per arc), chosen
    /// during the BFS (the first found on ties).
    Least(&'s [u32]),
    /// Up/down rules: the BFS's picture ([`Deferred`]), from which the placement finds
    /// the hops [`Hops::Least`] chooses among and makes the same choice with the counts
    /// of its own time ([`place_switch_lid`]). Needs no loads: any thread may plan it.
    Deferred,
}

/// Scratch space for planning, one per planning thread.
pub(crate) struct Planner<'a> {
    pub(super) net: &'a Net,
    rule: Rule<'a>,
    dist: Vec<u16>,
    /// First-found legal next hop per switch (set by the BFS passes).
    parent: Vec<u32>,
    down: Vec<bool>,
    escaped: Vec<bool>,
    esc_arc: Vec<u32>,
    queue: Vec<u32>,
    buckets: Vec<u32>,
    /// Per arc: whether it leads up (Up*/Down* rules only).
    up: Vec<bool>,
    /// Switch-LID plans: one more than the distance of a switch's nearest neighbour with a
    /// legal path that it cannot legally use (its escape distance, should it need one).
    edist: Vec<u16>,
    /// [`Hops::Deferred`]: each switch's rank in the escape passes ([`Deferred::st`]).
    eseq: Vec<u32>,
}

impl<'a> Planner<'a> {
    pub(crate) fn new(net: &'a Net, rule: Rule<'a>) -> Self {
        let n = net.n_sw;
        let up = match rule {
            Rule::MinHop => Vec::new(),
            Rule::UpDown { pos, .. } => (0..net.n_arcs())
                .map(|a| pos[net.adst[a] as usize] < pos[net.asrc[a] as usize])
                .collect(),
        };
        Planner {
            net,
            rule,
            dist: vec![INF; n],
            parent: vec![NONE; n],
            down: vec![false; n],
            escaped: vec![false; n],
            esc_arc: vec![NONE; n],
            queue: Vec::with_capacity(n),
            buckets: Vec::new(),
            up,
            edist: Vec::new(),
            eseq: Vec::new(),
        }
    }

    /// Plans routes towards switch `t` into `out`. With `quick` (only the switch's own LID
    /// lives there: no CA traffic, so no flow to balance) one BFS gives the hops: for
    /// minhop the first shortest hop it finds, for up/down rules the first legal hop it
    /// finds or, where it found none, the escape hops.
    pub(crate) fn plan(&mut self, t: usize, quick: bool, out: &mut Plan) {
        if self.plan_lazy(t, quick, out) {
            self.fill_eligible(out);
        }
    }

    /// Whether switch-LID destinations under this rule are balanced by the switch-LID
    /// counts ([`Planner::plan_switch_lid`], [`Planner::plan_deferred`]).
    pub(crate) fn counts_switch_lids(&self) -> bool {
        matches!(self.rule, Rule::UpDown { .. })
    }

    /// Plans the destination `t` whose only LID is its own (up/down rules): every switch
    /// gets the legal next hop (or escape hop) with the fewest switch LIDs so far (`swl`
    /// per arc, the first found on ties), chosen during the one BFS. Depends on the loads,
    /// so only the placing thread calls it.
    pub(crate) fn plan_switch_lid(&mut self, t: usize, out: &mut Plan, swl: &[u32]) {
        self.plan_quick(t, out, Hops::Least(swl));
    }

    /// [`Planner::plan_switch_lid`] without the loads, so that other threads than the
    /// placing one may make it: the plan keeps what that plan's BFS saw ([`Deferred`]),
    /// and [`place_switch_lid`] chooses the same hops from it.
    pub(crate) fn plan_deferred(&mut self, t: usize, out: &mut Plan) {
        self.plan_quick(t, out, Hops::Deferred);
    }

    /// [`Planner::plan`] without the eligible lists (false when `quick` already made
    /// them): distances, escape hops and the farthest-first order. [`Planner::arc_ok`] and
    /// [`Planner::eligible_into`] then answer for single switches, which is all a repair
    /// needs.
    pub(crate) fn plan_lazy(&mut self, t: usize, quick: bool, out: &mut Plan) -> bool {
        if quick {
            self.plan_quick(t, out, Hops::First);
            return false;
        }
        let net = self.net;
        let n = net.n_sw;
        out.clear(t, net.n_arcs() + n);
        out.count_switch_lids = self.counts_switch_lids();
        for s in 0..n {
            self.escaped[s] = false;
        }
        match self.rule {
            Rule::MinHop => {
                self.minhop_bfs(t);
            }
            Rule::UpDown { .. } => {
                self.updown_bfs::<false, false>(t, &[]);
            }
        }
        let complete = !self.dist.contains(&INF);
        if let Rule::UpDown { pos, by_pos } = self.rule {
            if !complete {
                self.updown_conservative(t, pos, by_pos);
            }
            self.escape(out, None, false);
        }
        out.unreachable = self.dist.iter().position(|&d| d == INF);
        // Farthest first (counting sort on distance; ties by switch index).
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
        let mut acc = 0u32;
        for d in (1..=maxd).rev() {
            let c = self.buckets[d];
            self.buckets[d] = acc;
            acc += c;
        }
        out.order.resize(acc as usize, 0);
        for (s, &d) in self.dist.iter().enumerate() {
            if d != INF && d != 0 {
                let slot = &mut self.buckets[usize::from(d)];
                out.order[*slot as usize] = s as u32;
                *slot += 1;
            }
        }
        true
    }

    /// One BFS, one next hop per switch (management traffic only: no CA sends to a switch
    /// LID in the deadlock model); switches it leaves without a legal path take an escape
    /// hop. `hops` says which (see [`Hops`]).
    fn plan_quick(&mut self, t: usize, out: &mut Plan, hops: Hops<'_>) {
        let net = self.net;
        let n = net.n_sw;
        out.clear(t, net.n_arcs() + n);
        out.count_switch_lids = self.counts_switch_lids();
        out.quick = true;
        for s in 0..n {
            self.escaped[s] = false;
        }
        let reached = match (self.rule, hops) {
            (Rule::MinHop, _) => self.minhop_bfs(t),
            (Rule::UpDown { .. }, Hops::Least(swl)) => self.updown_bfs::<true, true>(t, swl),
            (Rule::UpDown { .. }, Hops::Deferred) => self.updown_bfs::<false, true>(t, &[]),
            (Rule::UpDown { .. }, Hops::First) => self.updown_bfs::<false, false>(t, &[]),
        };
        let updown = matches!(self.rule, Rule::UpDown { .. });
        let deferred = updown && matches!(hops, Hops::Deferred);
        if deferred {
            self.eseq.clear();
            self.eseq.resize(n, 0);
        }
        if updown && self.dist.contains(&INF) {
            if !matches!(hops, Hops::First) {
                // Escape hops next to legal paths were found by the BFS; the rest (whose
                // neighbours escape too) are searched.
                for s in 0..n {
                    if self.dist[s] == INF && self.edist[s] != INF {
                        self.dist[s] = self.edist[s];
                        self.escaped[s] = true;
                        out.escaped.push(s as u32);
                    }
                }
            }
            match hops {
                Hops::Least(swl) => self.escape(out, Some(swl), false),
                Hops::Deferred => self.escape(out, None, true),
                Hops::First => self.escape(out, None, false),
            }
        }
        if deferred {
            out.is_deferred = true;
            let d = &mut out.deferred;
            d.st.clear();
            d.st.extend((0..n).map(|s| {
                (u64::from(self.dist[s]) << ST_DIST)
                    | (u64::from(self.eseq[s]) << ST_RANK)
                    | (u64::from(self.down[s]) * ST_DOWN)
                    | (u64::from(self.escaped[s]) * ST_ESCAPED)
            }));
            d.qpos.resize(n, 0);
            for (i, &c) in self.queue[..reached].iter().enumerate() {
                d.qpos[c as usize] = (i as u32) << 8;
            }
            for s in 0..n {
                if s != t && self.dist[s] != INF {
                    out.order.push(s as u32);
                }
            }
            out.unreachable = (0..n).find(|&s| s != t && self.dist[s] == INF);
            return;
        }
        let mut e = 0;
        for s in 0..n {
            if s == t {
                continue;
            }
            if self.dist[s] == INF {
                out.unreachable.get_or_insert(s);
                continue;
            }
            out.order.push(s as u32);
            out.elig[e] = if self.escaped[s] {
                self.esc_arc[s]
            } else {
                self.parent[s]
            };
            e += 1;
            out.off.push(e as u32);
        }
    }

    /// Whether arc `a` of switch `s` is a legal next hop in the last plan.
    #[inline]
    pub(crate) fn arc_ok(&self, s: usize, a: usize) -> bool {
        if self.escaped[s] {
            return a == self.esc_arc[s] as usize;
        }
        let d = self.dist[s];
        let x = self.net.adst[a] as usize;
        if d == INF || d == 0 || self.dist[x] != d - 1 {
            return false;
        }
        match self.rule {
            Rule::MinHop => true,
            Rule::UpDown { .. } => {
                !self.escaped[x]
                    && if self.down[s] {
                        self.down[x] && !self.up[a]
                    } else {
                        self.up[a]
                    }
            }
        }
    }

    /// The eligible arcs of switch `s` in the last plan, in CSR order.
    pub(crate) fn eligible_into(&self, s: usize, buf: &mut Vec<u32>) {
        buf.clear();
        buf.extend(
            self.net
                .arcs(s)
                .filter(|&a| self.arc_ok(s, a))
                .map(|a| a as u32),
        );
    }

    /// Eligible arcs of every switch of `out.order`, in CSR order (so ties go to the
    /// lowest remote switch), written branch-free: every arc is stored, the cursor only
    /// advances past eligible ones.
    fn fill_eligible(&self, out: &mut Plan) {
        let net = self.net;
        let mut e = 0usize;
        let elig = &mut out.elig;
        for &s in &out.order {
            let s = s as usize;
            if self.escaped[s] {
                elig[e] = self.esc_arc[s];
                e += 1;
            } else {
                let d = self.dist[s] - 1;
                match self.rule {
                    Rule::MinHop => {
                        let (lo, hi) = (net.aoff[s] as usize, net.aoff[s + 1] as usize);
                        for (a, &x) in (lo..hi).zip(&net.adst[lo..hi]) {
                            elig[e] = a as u32;
                            e += usize::from(self.dist[x as usize] == d);
                        }
                    }
                    Rule::UpDown { .. } => {
                        // A DOWN switch only descends to DOWN switches; an UP one climbs.
                        let sdown = self.down[s];
                        for a in net.arcs(s) {
                            let x = net.adst[a] as usize;
                            let ok = self.dist[x] == d
                                && !self.escaped[x]
                                && if sdown {
                                    self.down[x] && !self.up[a]
                                } else {
                                    self.up[a]
                                };
                            elig[e] = a as u32;
                            e += usize::from(ok);
                        }
                    }
                }
            }
            out.off.push(e as u32);
        }
    }

    /// Returns how many switches the BFS reached (the first ones of `queue`).
    fn minhop_bfs(&mut self, t: usize) -> usize {
        let n = self.net.n_sw;
        self.queue.resize(n, 0);
        self.net.bfs_parents(
            t,
            &mut self.dist[..n],
            &mut self.parent[..n],
            &mut self.queue[..n],
        )
    }

    /// Level-synchronous BFS with states: a switch is DOWN when its chosen path to `t` only
    /// goes down, UP otherwise. Entering a switch by a down move needs it to be DOWN; at
    /// equal distance DOWN wins (it serves more neighbours). One queue holds the levels
    /// back to back.
    ///
    /// With `SEL` a switch's `parent` is the legal hop found with the fewest switch LIDs
    /// (`swl`), and a switch without any so far remembers in `edist`/`esc_arc` the least
    /// used of its nearest neighbours with a legal path (its escape hop, should it need one).
    /// `EDIST` (which `SEL` needs) keeps that escape distance without choosing a hop.
    /// Returns how many switches it reached (the first ones of `queue`, in BFS order).
    fn updown_bfs<const SEL: bool, const EDIST: bool>(&mut self, t: usize, swl: &[u32]) -> usize {
        let net = self.net;
        let n = net.n_sw;
        if EDIST {
            self.edist.clear();
            self.edist.resize(n, INF);
        }
        let (edist, esc) = (&mut self.edist[..], &mut self.esc_arc[..]);
        let (aoff, adst, arev) = (&net.aoff[..], &net.adst[..], &net.arev[..]);
        let up = &self.up[..];
        let dist = &mut self.dist[..n];
        let down = &mut self.down[..n];
        let parent = &mut self.parent[..n];
        self.queue.resize(n, 0);
        let q = &mut self.queue[..n];
        dist.fill(INF);
        down.fill(false);
        dist[t] = 0;
        down[t] = true;
        q[0] = t as u32;
        let (mut head, mut tail) = (0, 1);
        let mut d = 0u16;
        while head < tail {
            let end = tail;
            while head < end {
                let c = q[head] as usize;
                head += 1;
                let cdown = down[c];
                let (lo, hi) = (aoff[c] as usize, aoff[c + 1] as usize);
                for (a, (&x, &rev)) in (lo..hi).zip(adst[lo..hi].iter().zip(&arev[lo..hi])) {
                    let x = x as usize;
                    // The forward hop is x -> c: it goes up when c -> x goes down.
                    let cand_down = up[a];
                    if cand_down && !cdown {
                        // Illegal: descending into an UP switch. Should `x` stay without a
                        // legal path, its nearest such neighbours are its escape hops.
                        if EDIST && dist[x] == INF {
                            if edist[x] == INF {
                                edist[x] = d + 1;
                                esc[x] = rev;
                            } else if SEL
                                && edist[x] == d + 1
                                && swl[rev as usize] < swl[esc[x] as usize]
                            {
                                esc[x] = rev;
                            }
                        }
                        continue;
                    }
                    let dx = dist[x];
                    if dx == INF {
                        dist[x] = d + 1;
                        down[x] = cand_down;
                        parent[x] = rev;
                        q[tail] = x as u32;
                        tail += 1;
                    } else if cand_down && dx == d + 1 && !down[x] {
                        down[x] = true;
                        parent[x] = rev;
                    } else if SEL
                        && dx == d + 1
                        && cand_down == down[x]
                        && swl[rev as usize] < swl[parent[x] as usize]
                    {
                        parent[x] = rev;
                    }
                }
            }
            d += 1;
        }
        tail
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
    ///
    /// With `swl` (switch LIDs only) the one of those neighbours whose arc carries the
    /// fewest switch LIDs so far.
    ///
    /// With `seq` each escaping switch's rank in these passes goes to `eseq`
    /// ([`Deferred::eseq`]).
    fn escape(&mut self, out: &mut Plan, swl: Option<&[u32]>, seq: bool) {
        let net = self.net;
        let mut rank = 0;
        loop {
            let mut changed = false;
            for s in 0..net.n_sw {
                if self.dist[s] != INF {
                    continue;
                }
                let (lo, hi) = (net.aoff[s] as usize, net.aoff[s + 1] as usize);
                let dist = &self.dist;
                // The nearest neighbour with a route, then (with `swl`) the least used.
                let (mut best, mut bkey) = (lo, u64::MAX);
                for (a, &x) in (lo..hi).zip(&net.adst[lo..hi]) {
                    let key =
                        u64::from(dist[x as usize]) << 32 | swl.map_or(0, |w| u64::from(w[a]));
                    if key < bkey {
                        (best, bkey) = (a, key);
                    }
                }
                let m = (bkey >> 32) as u16;
                if bkey == u64::MAX || m == INF {
                    continue;
                }
                self.dist[s] = m + 1;
                self.esc_arc[s] = best as u32;
                self.escaped[s] = true;
                out.escaped.push(s as u32);
                if seq {
                    rank += 1;
                    self.eseq[s] = rank;
                }
                changed = true;
            }
            if !changed {
                break;
            }
        }
    }
}
