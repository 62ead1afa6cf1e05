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
//!
//! A switch's own LID carries no CA traffic; it is balanced by count instead, apart from
//! the flows so as not to disturb them. Under up/down rules a destination switch without
//! CAs is planned by one BFS that picks, per switch, the legal hop (or escape hop) used by
//! the fewest switch LIDs so far; a switch LID living with CAs takes the eligible arcs in
//! turn (a round robin of its own). minhop keeps the first shortest hop its BFS finds.
//!
//! Planning (BFS and eligible arcs) does not depend on loads, so other threads plan
//! destinations ahead while one thread places them in destination order (and plans too
//! whenever it would wait): the tables are the same for any thread count (`threads.rs`).
//! The count-balanced switch-LID plans depend on the counts: a thread alone plans them
//! with its counts; with helpers they keep what their BFS saw and the placement makes the
//! same choices from it ([`Hops::Deferred`]). A switch decides for all LIDs of one
//! destination in a row (its choice depends only on its own arcs' loads, its own earlier choices and the
//! flow upstream switches send it), and where a contiguous run of eligible arcs has equal
//! loads and every LID brings the same flow, the least-loaded choice is a rotation.

use crate::net::{INF, NONE, Net, Peer};
use crate::routes::NO_ROUTE;

mod threads;

/// Which next hops are legal.
#[derive(Clone, Copy)]
pub(crate) enum Rule<'a> {
    /// Any arc that shortens the distance.
    MinHop,
    /// Up*/Down*: `pos` is a total order of switches, lower = nearer the roots. An arc
    /// `s -> x` goes up when `pos[x] < pos[s]`. Legal paths go up, then only down.
    UpDown { pos: &'a [u32], by_pos: &'a [u32] },
}

/// An optional preference: given the switch, `lid` (the LID being placed and how many LMC
/// siblings come before it), the eligible arcs, the loads ([`Loads::key`] is what the
/// LID is balanced by) and the switch's LFT `row` so far (the siblings' ports are at
/// `row[lid - sibs..lid]`), return the arc to use (must be one of `elig`), or `None` for
/// the balancing default.
pub(crate) trait Prefer: Sync {
    fn prefer(
        &self,
        net: &Net,
        s: usize,
        lid: (u16, usize),
        elig: &[u32],
        loads: &Loads,
        row: &[u8],
    ) -> Option<u32>;

    /// Whether `prefer` can ever answer (lets the hot loop skip the call).
    fn active(&self) -> bool {
        true
    }

    /// For preferences that ignore loads: fills `out[j]` with the preferred arc for the
    /// `j`-th `(lid, base)` of `lids` at switch `s` (`NONE`: no preference) in one call, so
    /// per-switch work is done once, and returns true. The default returns false: `prefer`
    /// is then asked LID by LID, after each placement.
    fn prefer_chunk(
        &self,
        _net: &Net,
        _s: usize,
        _lids: &[(u16, u16)],
        _elig: &[u32],
        _out: &mut [u32],
    ) -> bool {
        false
    }
}

/// No preference.
pub(crate) struct NoPref;
impl Prefer for NoPref {
    fn prefer(
        &self,
        _: &Net,
        _: usize,
        _: (u16, usize),
        _: &[u32],
        _: &Loads,
        _: &[u8],
    ) -> Option<u32> {
        None
    }

    fn active(&self) -> bool {
        false
    }
}

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
    st: Vec<u64>,
    /// Per switch: its place in the BFS queue, shifted left by 8 (the BFS meets the hops
    /// into a switch in this order, then by that switch's arc back, [`Sides`]).
    qpos: Vec<u32>,
}

/// [`Deferred::st`]'s fields.
const ST_ESCAPED: u64 = 1;
const ST_DOWN: u64 = 2;
const ST_RANK: u32 = 8;
const ST_DIST: u32 = 40;
const ST_DIST_MASK: u64 = 0xFFFF << ST_DIST;

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
    net: &'a Net,
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

#[cfg(test)]
thread_local! {
    /// Tests turn the placement shortcuts off to compare them with the plain scan.
    pub(crate) static SCAN_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the placement may take its exact shortcuts (always, outside tests).
#[inline(always)]
fn shortcuts() -> bool {
    #[cfg(test)]
    return !SCAN_ONLY.with(std::cell::Cell::get);
    #[cfg(not(test))]
    true
}

/// Load state, owned by the single thread that places LIDs.
pub(crate) struct Loads {
    /// Accumulated flow (edge forwarding index so far) per arc.
    pub load: Vec<u64>,
    /// The flow of base LIDs alone per arc, as `u32`, the array the hot loop scans: it cannot overflow (an arc carries at most
    /// sources x LIDs < 49,152^2 < 2^32 flow units) and packs twice as many loads per
    /// cache line and vector.
    ///
    /// Base LIDs are balanced by it, so they get the tables they would get with LMC 0
    /// (the primary traffic stays as even as without LMC); LMC siblings are balanced by
    /// `load`, all LIDs' flow, so they steer away from the paths the base LIDs crowd.
    light: Vec<u32>,
    /// Flows of the LIDs being placed: `flow[s * stride + j]` is what LID `j` of the chunk
    /// brings to switch `s`; between chunks it holds the switch's own sources.
    flow: Vec<u32>,
    stride: usize,
    /// Round-robin position per switch.
    rr: Vec<u32>,
    /// Switch LIDs (no CA traffic) routed through each arc so far: what switch-LID hops
    /// are balanced by, apart from the CA flows so as not to disturb them.
    swl: Vec<u32>,
    /// Round-robin position per switch for switch LIDs that live with CAs.
    srr: Vec<u32>,
    /// First (switch, LID) where CA traffic had to take an escape hop.
    pub escape_traffic: Option<(usize, u16)>,
}

/// Load levels the rotation shortcut tracks per run (see [`sibs_rotation`]).
const LEVELS: usize = 4;

/// Most LIDs of one destination switch placed together (bounds the flow buffer).
const CHUNK: usize = 64;

impl Loads {
    pub(crate) fn new(net: &Net) -> Self {
        let n = net.n_sw;
        // Stride: the most CA LIDs any switch carries (capped), so a fat tree's flow buffer
        // is exactly switches x CAs per leaf.
        let mut stride = 1usize;
        let mut lids = Vec::new();
        for s in 0..n {
            net.lids_on(s, &mut lids);
            stride = stride.max(lids.iter().filter(|l| l.1 > 0).count());
        }
        let stride = stride.min(CHUNK);
        let mut flow = vec![0u32; n * stride];
        for s in 0..n {
            flow[s * stride..(s + 1) * stride].fill(net.nsrc[s]);
        }
        Loads {
            load: vec![0; net.n_arcs()],
            light: vec![0; net.n_arcs()],
            flow,
            stride,
            rr: vec![0; n],
            swl: vec![0; net.n_arcs()],
            srr: vec![0; n],
            escape_traffic: None,
        }
    }

    /// Adds `f` to arc `a` for a LID with `sibs` LMC siblings before it.
    #[inline]
    fn add(&mut self, a: usize, f: u64, sibs: usize) {
        self.load[a] += f;
        if sibs == 0 {
            self.light[a] = self.light[a].saturating_add(u32::try_from(f).unwrap_or(u32::MAX));
        }
    }

    /// What a LID with `sibs` siblings before it is balanced by on arc `a`: `light` for
    /// base LIDs, all LIDs' `load` for siblings.
    #[inline]
    pub(crate) fn key(&self, sibs: usize, a: usize) -> u64 {
        if sibs == 0 {
            u64::from(self.light[a])
        } else {
            self.load[a]
        }
    }

    /// Least loaded arc among arcs `lo..hi` (lowest on ties).
    #[inline]
    fn min_run(&self, lo: usize, hi: usize) -> usize {
        // The least load first (a branch-free, vectorisable pass), then its first arc.
        let loads = &self.light[lo..hi];
        let m = loads.iter().copied().fold(u32::MAX, u32::min);
        lo + loads.iter().position(|&l| l == m).unwrap_or(0)
    }
}

/// Places every LID of `lids` (all living on `plan.t`) into `rows` (one LFT per switch).
///
/// LIDs are taken in chunks; inside a chunk each switch (farthest first) decides for all
/// its LIDs in a row. That gives the same tables as placing one LID at a time across all
/// switches: a switch's choice depends only on its own arcs' loads, its own earlier
/// choices and the flow its upstream switches (decided earlier) send it for that LID.
///
/// `sides` (each switch's arcs by direction) places [`Hops::Deferred`] plans.
pub(crate) fn place<P: Prefer + ?Sized>(
    plan: &Plan,
    lids: &[(u16, u8, u16)],
    rows: &mut [&mut [u8]],
    net: &Net,
    loads: &mut Loads,
    pref: &P,
    sides: Option<&Sides>,
) {
    let t = plan.t;
    for &(lid, ..) in lids {
        let exit = net
            .dest_switch(usize::from(lid))
            .map_or(NO_ROUTE, |(_, port)| port);
        rows[t][usize::from(lid)] = exit;
    }
    note_escape_traffic(plan, lids, net, loads);
    let mut weighted = [(0u16, 0u16); CHUNK];
    let mut k = 0;
    for &(lid, w, base) in lids {
        if w == 0 {
            continue;
        }
        weighted[k] = (lid, base);
        k += 1;
        if k == loads.stride {
            place_chunk(plan, &weighted[..k], rows, net, loads, pref);
            k = 0;
        }
    }
    if k > 0 {
        place_chunk(plan, &weighted[..k], rows, net, loads, pref);
    }
    for &(lid, w, base) in lids {
        if w == 0 {
            if plan.quick {
                place_switch_lid(plan, lid, rows, net, loads, sides);
            } else {
                place_unweighted(plan, lid, base, rows, net, loads, pref);
            }
        }
    }
}

/// A switch's own LID alone on its switch (a quick plan, one hop per switch: for up/down
/// rules the one with the fewest switch LIDs so far, chosen by the plan or, from a
/// [`Hops::Deferred`] plan, here), counted per arc.
/// Records the first CA traffic of `plan.t`'s LIDs that takes an escape hop (a switch
/// of `plan.escaped` that CAs send from), for [`place`] and [`repair`] alike.
fn note_escape_traffic(plan: &Plan, lids: &[(u16, u8, u16)], net: &Net, loads: &mut Loads) {
    if loads.escape_traffic.is_some() {
        return;
    }
    // Legal switches never forward into escaped ones, so CA traffic meets an escape
    // hop exactly when a CA's own switch has one. Traffic of and to I/O nodes that may
    // reverse is judged after the reverse-hop pass (`crate::reverse`), which replaces
    // its escape hops.
    let Some(&(lid, ..)) = lids
        .iter()
        .find(|l| l.1 > 0 && !net.reverse_hop_dest(usize::from(l.0)))
    else {
        return;
    };
    if let Some(&s) = plan
        .escaped
        .iter()
        .find(|&&s| net.nsrc[s as usize] > 0 && !net.only_io_sources(s as usize))
    {
        loads.escape_traffic = Some((s as usize, lid));
    }
}

fn place_switch_lid(
    plan: &Plan,
    lid: u16,
    rows: &mut [&mut [u8]],
    net: &Net,
    loads: &mut Loads,
    sides: Option<&Sides>,
) {
    let col = usize::from(lid);
    if let (Some(d), Some(sides)) = (plan.deferred(), sides) {
        for &s in &plan.order {
            let (best, _) = least_used_hop(d, s as usize, net, sides, &loads.swl);
            loads.swl[best] += 1;
            rows[s as usize][col] = net.aport[best];
        }
        return;
    }
    for (i, &s) in plan.order.iter().enumerate() {
        // The plan chose the least used hop already.
        let best = plan.eligible(i)[0] as usize;
        loads.swl[best] += 1;
        rows[s as usize][col] = net.aport[best];
    }
}

/// The hop switch `s` takes for a switch LID from a [`Hops::Deferred`] plan `d`: among the
/// hops [`Hops::Least`] chooses among (found again from what its BFS saw), the one with the
/// fewest switch LIDs so far (`swl`), the first that BFS meets on ties. The same hop as
/// that plan chooses, since it depends only on the counts of `s`'s own arcs. Also says
/// whether a tie was broken.
pub(crate) fn least_used_hop(
    d: &Deferred,
    s: usize,
    net: &Net,
    sides: &Sides,
    swl: &[u32],
) -> (usize, bool) {
    let st = &d.st[..];
    let me = st[s];
    let near = (me & ST_DIST_MASK) - (1 << ST_DIST);
    let (ups, downs) = sides.of(s);
    let (mut best, mut low) = (NONE as usize, u32::MAX);
    let rank = |x: u64| (x & !ST_DIST_MASK) >> ST_RANK;
    if rank(me) != 0 {
        // Escaping in the later passes: through the nearest switches with a route by
        // then (ranked before it), the first in CSR order on ties.
        let mine = rank(me);
        for a in net.arcs(s) {
            let x = st[net.adst[a] as usize];
            if x & ST_DIST_MASK == near && rank(x) < mine && swl[a] < low {
                (best, low) = (a, swl[a]);
            }
        }
        return (best, false);
    }
    // A legal switch: an UP one climbs to any switch the BFS reached one hop nearer, a
    // DOWN one descends to DOWN ones there. Escaping next to the BFS: down into the UP
    // switches it reached nearest.
    let (arcs, mask, want) = if me & ST_ESCAPED != 0 {
        (downs, ST_DIST_MASK | ST_DOWN | ST_ESCAPED, near)
    } else if me & ST_DOWN != 0 {
        (downs, ST_DIST_MASK | ST_DOWN | ST_ESCAPED, near | ST_DOWN)
    } else {
        (ups, ST_DIST_MASK | ST_ESCAPED, near)
    };
    // When the BFS met hop `a` into `c`: `c`'s place in its queue, then `c`'s arc back.
    let met = |a: usize, c: usize| d.qpos[c] | sides.back[a];
    let (mut bc, mut first, mut tied) = (0usize, u32::MAX, false);
    for &(a, c) in arcs {
        let (a, c) = (a as usize, c as usize);
        if st[c] & mask != want {
            continue;
        }
        let u = swl[a];
        if u < low {
            (best, bc, low, first) = (a, c, u, u32::MAX);
        } else if u == low {
            tied = true;
            if first == u32::MAX {
                first = met(best, bc);
            }
            let f = met(a, c);
            if f < first {
                (best, bc, first) = (a, c, f);
            }
        }
    }
    (best, tied)
}

/// An arc and its head switch.
type Head = (u32, u32);

/// Each switch's arcs (with their heads) split by direction under an up/down rule:
/// `arcs[off[s]..mid[s]]` climb, `arcs[mid[s]..off[s + 1]]` descend, each part in CSR
/// order; and per arc `a` (`s -> c`), the place of `c`'s arc back to `s` among `c`'s.
pub(crate) struct Sides {
    off: Vec<u32>,
    mid: Vec<u32>,
    arcs: Vec<Head>,
    back: Vec<u32>,
}

impl Sides {
    /// The sides of every switch under `rule` (`None` for minhop, which has no sides).
    pub(crate) fn new(net: &Net, rule: Rule<'_>) -> Option<Self> {
        let Rule::UpDown { pos, .. } = rule else {
            return None;
        };
        let up = |a: usize| pos[net.adst[a] as usize] < pos[net.asrc[a] as usize];
        let with_head = |a: usize| (a as u32, net.adst[a]);
        let mut arcs = Vec::with_capacity(net.n_arcs());
        let mut mid = Vec::with_capacity(net.n_sw);
        for s in 0..net.n_sw {
            arcs.extend(net.arcs(s).filter(|&a| up(a)).map(with_head));
            mid.push(arcs.len() as u32);
            arcs.extend(net.arcs(s).filter(|&a| !up(a)).map(with_head));
        }
        let back = (0..net.n_arcs())
            .map(|a| net.arev[a] - net.aoff[net.adst[a] as usize])
            .collect();
        Some(Sides {
            off: net.aoff.clone(),
            mid,
            arcs,
            back,
        })
    }

    /// Switch `s`'s climbing and descending arcs with their heads.
    #[inline]
    fn of(&self, s: usize) -> (&[Head], &[Head]) {
        let (lo, mid, hi) = (
            self.off[s] as usize,
            self.mid[s] as usize,
            self.off[s + 1] as usize,
        );
        (&self.arcs[lo..mid], &self.arcs[mid..hi])
    }
}

/// A LID without CA traffic (a switch's own LID): spread LID counts only.
#[allow(clippy::too_many_arguments)]
fn place_unweighted<P: Prefer + ?Sized>(
    plan: &Plan,
    lid: u16,
    base: u16,
    rows: &mut [&mut [u8]],
    net: &Net,
    loads: &mut Loads,
    pref: &P,
) {
    let col = usize::from(lid);
    let sibs = usize::from(lid - base);
    for (i, &s) in plan.order.iter().enumerate() {
        let s = s as usize;
        let el = plan.eligible(i);
        let mut best = el[0];
        if el.len() > 1 {
            best = match pref.prefer(net, s, (lid, sibs), el, loads, rows[s]) {
                Some(a) => a,
                None if plan.count_switch_lids => {
                    // Round robin of its own (CA LIDs without flow have theirs): O(1),
                    // and the switch-LID destinations' least-used choices even it out.
                    let r = &mut loads.srr[s];
                    *r = r.wrapping_add(1);
                    el[*r as usize % el.len()]
                }
                None => pick_rr(net, el, &mut loads.rr[s], sibs, rows[s], col),
            };
        }
        loads.swl[best as usize] += 1;
        rows[s][col] = net.aport[best as usize];
    }
}

/// Places up to `loads.stride` CA LIDs of one destination.
fn place_chunk<P: Prefer + ?Sized>(
    plan: &Plan,
    chunk: &[(u16, u16)],
    rows: &mut [&mut [u8]],
    net: &Net,
    loads: &mut Loads,
    pref: &P,
) {
    let stride = loads.stride;
    let k = chunk.len();
    let use_pref = pref.active();
    let mut cols = [0usize; CHUNK];
    for (c, &(lid, _)) in cols.iter_mut().zip(chunk) {
        *c = usize::from(lid);
    }
    let cols = &cols[..k];
    // Whether some LID of the chunk has LMC siblings placed before it.
    let any_sibs = chunk.iter().any(|&(lid, base)| lid != base);
    let (aport, adst, nsrc) = (&net.aport[..], &net.adst[..], &net.nsrc[..]);
    for (i, &s) in plan.order.iter().enumerate() {
        let s = s as usize;
        let el = plan.eligible(i);
        let own = nsrc[s];
        let fs = s * stride;
        let row = &mut *rows[s];
        if el.len() == 1 {
            let a = el[0] as usize;
            let (port, x) = (aport[a], adst[a] as usize * stride);
            // Base LIDs' flow and the siblings'.
            let (mut tb, mut ts) = (0u64, 0u64);
            for (j, (&col, &(lid, base))) in cols.iter().zip(chunk).enumerate() {
                let f = std::mem::replace(&mut loads.flow[fs + j], own);
                row[col] = port;
                loads.flow[x + j] += f;
                if lid == base {
                    tb += u64::from(f);
                } else {
                    ts += u64::from(f);
                }
            }
            if tb > 0 {
                loads.add(a, tb, 0);
            }
            if ts > 0 {
                loads.add(a, ts, 1);
            }
            continue;
        }
        let (lo, hi) = (el[0] as usize, el[el.len() - 1] as usize + 1);
        if !use_pref && !any_sibs && hi - lo == el.len() {
            // The hot path (fat trees: all up ports): least loaded arc of a contiguous
            // run, first one on ties. When the run's loads are all equal and every LID
            // that brings traffic brings the same amount (a leaf of a balanced tree), the
            // greedy choice is plain rotation through the run: no scan needed.
            let flows = &loads.flow[fs..fs + k];
            let common = flows.iter().copied().find(|&f| f > 0).unwrap_or(0);
            let level = loads.light[lo];
            if shortcuts()
                && flows.iter().all(|&f| f == 0 || f == common)
                && loads.light[lo..hi].iter().all(|&l| l == level)
            {
                let mut next = lo;
                for (j, &col) in cols.iter().enumerate() {
                    let f = std::mem::replace(&mut loads.flow[fs + j], own);
                    let arc = if f == 0 {
                        pick_rr(net, el, &mut loads.rr[s], 0, row, col) as usize
                    } else {
                        let a = next;
                        next = if next + 1 == hi { lo } else { next + 1 };
                        loads.add(a, u64::from(f), 0);
                        loads.flow[adst[a] as usize * stride + j] += f;
                        a
                    };
                    row[col] = aport[arc];
                }
                continue;
            }
            for (j, &col) in cols.iter().enumerate() {
                let f = std::mem::replace(&mut loads.flow[fs + j], own);
                let arc = if f == 0 {
                    pick_rr(net, el, &mut loads.rr[s], 0, row, col) as usize
                } else {
                    let a = loads.min_run(lo, hi);
                    loads.add(a, u64::from(f), 0);
                    loads.flow[adst[a] as usize * stride + j] += f;
                    a
                };
                row[col] = aport[arc];
            }
            continue;
        }
        let run = hi - lo == el.len();
        if !use_pref
            && run
            && el.len() <= 64
            && shortcuts()
            && sibs_rotation(s, (lo, hi), chunk, cols, row, net, el, loads)
        {
            continue;
        }
        let mut wants = [NONE; CHUNK];
        let batch = use_pref && pref.prefer_chunk(net, s, chunk, el, &mut wants[..k]);
        for (j, &(lid, base)) in chunk.iter().enumerate() {
            let col = cols[j];
            let sibs = usize::from(lid - base);
            let f = std::mem::replace(&mut loads.flow[fs + j], own);
            let wanted = if batch {
                Some(wants[j]).filter(|&a| a != NONE)
            } else if use_pref {
                pref.prefer(net, s, (lid, sibs), el, loads, row)
            } else {
                None
            };
            let arc = if let Some(a) = wanted {
                a as usize
            } else if f == 0 {
                // No CA traffic passes here for this LID: only LID counts matter.
                pick_rr(net, el, &mut loads.rr[s], sibs, row, col) as usize
            } else if sibs == 0 && run {
                loads.min_run(lo, hi)
            } else {
                // Least loaded, avoiding ports taken by this LID's LMC siblings.
                let mut best = NONE as usize;
                let mut bkey = (true, u64::MAX);
                for &a in el {
                    let clash = sibs > 0 && {
                        let port = aport[a as usize];
                        (1..=sibs).any(|q| row[col - q] == port)
                    };
                    let key = (clash, loads.key(sibs, a as usize));
                    if key < bkey {
                        bkey = key;
                        best = a as usize;
                    }
                }
                best
            };
            row[col] = aport[arc];
            if f > 0 {
                loads.add(arc, u64::from(f), sibs);
                loads.flow[adst[arc] as usize * stride + j] += f;
            }
        }
    }
    // The destination switch received flow from its neighbours; reset it.
    loads.flow[plan.t * stride..plan.t * stride + k].fill(nsrc[plan.t]);
}

/// The least-loaded choice with LMC siblings, without scanning, where it is predictable:
/// switch `s`'s eligible arcs are the contiguous run `lo..hi` (at most 64), their loads
/// (the base LIDs' and all LIDs', see [`Loads`]) are all equal and every LID of the chunk
/// that brings traffic brings the same flow `f` (a leaf of a balanced tree). Then every
/// arc's load is the level plus a few times `f`, kept as one bit mask per multiple and
/// per kind of load, and the greedy choice of the scan (no sibling's port first, then the
/// lowest load, then the lowest arc) is the lowest bit of the lowest level that is not all
/// siblings' ports. Should an arc climb past the [`LEVELS`] tracked, the rest of the
/// chunk is scanned as [`place_chunk`] does. Returns false (nothing done) when the
/// conditions do not hold. Same tables as the scan, byte for byte.
#[allow(clippy::too_many_arguments)]
fn sibs_rotation(
    s: usize,
    (lo, hi): (usize, usize),
    chunk: &[(u16, u16)],
    cols: &[usize],
    row: &mut [u8],
    net: &Net,
    el: &[u32],
    loads: &mut Loads,
) -> bool {
    let stride = loads.stride;
    let k = chunk.len();
    let fs = s * stride;
    let n = hi - lo;
    let flows = &loads.flow[fs..fs + k];
    let common = flows.iter().copied().find(|&f| f > 0).unwrap_or(0);
    let (light, load) = (&loads.light[lo..hi], &loads.load[lo..hi]);
    if !flows.iter().all(|&f| f == 0 || f == common)
        || !light.iter().all(|&l| l == light[0])
        || !load.iter().all(|&l| l == load[0])
    {
        return false;
    }
    let own = net.nsrc[s];
    let (aport, adst) = (&net.aport[..], &net.adst[..]);
    let full = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    let ports =
        &net.peer[net.pbase[s] as usize..=net.pbase[s] as usize + usize::from(net.nports[s])];
    // `lb[i]` / `lt[i]`: the arcs of the run whose `light` / `load` is `i` flows above
    // its level (a bit per arc).
    let (mut lb, mut lt) = ([0u64; LEVELS], [0u64; LEVELS]);
    (lb[0], lt[0]) = (full, full);
    let mut exact = true;
    for (j, (&(lid, base), &col)) in chunk.iter().zip(cols).enumerate() {
        let sibs = usize::from(lid - base);
        let f = std::mem::replace(&mut loads.flow[fs + j], own);
        let arc = if f == 0 {
            pick_rr(net, el, &mut loads.rr[s], sibs, row, col) as usize
        } else if exact {
            let mut clash = 0u64;
            for q in 1..=sibs {
                if let Some(Peer::Switch { arc, .. }) = ports.get(usize::from(row[col - q])) {
                    let off = (*arc as usize).wrapping_sub(lo);
                    if off < n {
                        clash |= 1 << off;
                    }
                }
            }
            // Base LIDs go by their own loads, siblings by all LIDs'.
            let lv = if sibs == 0 { &lb } else { &lt };
            // The least loaded arc no sibling took, else (all taken by siblings) the
            // least loaded one; the lowest on ties.
            let k = (0..LEVELS)
                .find(|&i| lv[i] & !clash != 0)
                .or_else(|| (0..LEVELS).find(|&i| lv[i] != 0))
                .unwrap_or(0);
            let m = if lv[k] & !clash != 0 {
                lv[k] & !clash
            } else {
                lv[k]
            };
            let off = m.trailing_zeros();
            exact = raise(&mut lt, off) && (sibs > 0 || raise(&mut lb, off));
            lo + off as usize
        } else {
            let mut best = NONE as usize;
            let mut bkey = (true, u64::MAX);
            for (a, &port) in (lo..hi).zip(&aport[lo..hi]) {
                let clash = (1..=sibs).any(|q| row[col - q] == port);
                let key = (clash, loads.key(sibs, a));
                if key < bkey {
                    bkey = key;
                    best = a;
                }
            }
            best
        };
        row[col] = aport[arc];
        if f > 0 {
            loads.add(arc, u64::from(f), sibs);
            loads.flow[adst[arc] as usize * stride + j] += f;
        }
    }
    true
}

/// Moves arc `off` of a run one flow up in the level masks `lv` of [`sibs_rotation`];
/// false when it would climb past the levels tracked (the masks are then stale).
#[inline]
fn raise(lv: &mut [u64; LEVELS], off: u32) -> bool {
    let bit = 1u64 << off;
    let Some(i) = (0..LEVELS).find(|&i| lv[i] & bit != 0) else {
        return false;
    };
    if i + 1 == LEVELS {
        return false;
    }
    lv[i] &= !bit;
    lv[i + 1] |= bit;
    if lv[0] == 0 {
        // Every arc is one flow up: that is the new level.
        lv.copy_within(1.., 0);
        lv[LEVELS - 1] = 0;
    }
    true
}

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

impl Loads {
    /// The arc switch `s` takes among its eligible arcs `el` (non-empty) for column `col`
    /// of `row`: see [`pick`].
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn pick(
        &mut self,
        net: &Net,
        s: usize,
        el: &[u32],
        f: u32,
        sibs: usize,
        row: &[u8],
        col: usize,
    ) -> usize {
        if sibs == 0 {
            pick(net, el, &self.light, &mut self.rr[s], f, sibs, row, col)
        } else {
            pick(net, el, &self.load, &mut self.rr[s], f, sibs, row, col)
        }
    }
}

/// The arc a switch takes among its eligible arcs `el` (non-empty) for column `col` of
/// its LFT `row`: with traffic (`f > 0`) the least loaded one (`load` per arc) not taken
/// by one of the `sibs` LMC siblings before `col`, without traffic the next one round
/// robin (`rr`, the switch's position; LID counts spread in O(1)).
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pick<T: Copy + Into<u64>>(
    net: &Net,
    el: &[u32],
    load: &[T],
    rr: &mut u32,
    f: u32,
    sibs: usize,
    row: &[u8],
    col: usize,
) -> usize {
    if el.len() == 1 {
        return el[0] as usize;
    }
    if f == 0 {
        return pick_rr(net, el, rr, sibs, row, col) as usize;
    }
    let mut best = el[0] as usize;
    let mut bkey = (true, u64::MAX);
    for &a in el {
        let port = net.aport[a as usize];
        let clash = (1..=sibs).any(|q| row[col - q] == port);
        let key = (clash, load[a as usize].into());
        if key < bkey {
            bkey = key;
            best = a as usize;
        }
    }
    best
}

/// Round robin over the eligible arcs of one switch (spreads LID counts in O(1)),
/// skipping ports already taken by this LID's LMC siblings.
#[inline]
fn pick_rr(net: &Net, el: &[u32], rr: &mut u32, sibs: usize, row: &[u8], col: usize) -> u32 {
    let n = el.len();
    let start = *rr;
    let first = (start % n as u32) as usize;
    if sibs == 0 {
        *rr = start + 1;
        return el[first];
    }
    let mut j = first;
    for i in 0..n {
        let a = el[j];
        let port = net.aport[a as usize];
        if !(1..=sibs).any(|k| row[col - k] == port) {
            *rr = start + i as u32 + 1;
            return a;
        }
        j += 1;
        if j == n {
            j = 0;
        }
    }
    *rr = start + 1;
    el[first]
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

/// What [`threads::route_lids`] routes with.
pub(crate) struct Job<'a, P: Prefer + ?Sized> {
    pub rule: Rule<'a>,
    pub threads: usize,
    pub pref: &'a P,
}

/// Routes every LID of the fabric with `rule` into `lfts` (switch-major, `lft_len` per
/// switch). Deterministic whatever `threads` is: see [`threads::route_lids`].
pub(crate) fn route_all<P: Prefer + ?Sized>(
    net: &Net,
    rule: Rule<'_>,
    threads: usize,
    lfts: &mut [u8],
    pref: &P,
) -> RouteStats {
    let job = Job {
        rule,
        threads,
        pref,
    };
    threads::route_lids(net, &job, lfts)
}

/// Whether port `p` of switch `s` leads to a switch.
#[allow(dead_code)]
pub(crate) fn is_switch_port(net: &Net, s: usize, p: u8) -> bool {
    matches!(net.peer(s, p), Peer::Switch { .. })
}
