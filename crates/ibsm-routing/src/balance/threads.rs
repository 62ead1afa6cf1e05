//! The routing pass over every destination switch, on one thread or several, with the
//! same tables.
//!
//! On one thread every destination is planned (a BFS and the eligible arcs, [`Planner`])
//! and placed (each LID switch by switch, farthest first, [`place`]) in the routing order.
//!
//! On several, the threads form a team and every switch belongs to one of its first two
//! threads: the switches with CAs to the first, the others to the second (further threads
//! only plan). Each owner alone keeps its switches' loads, round robins and LFT rows, and
//! goes through the destinations in the routing order, placing each LID at its own
//! switches. A switch's choice depends only on its own state and on the flow its farther
//! neighbours pass it for that LID, so a chunk of LIDs is placed one distance at a time
//! ([`Plan::levels`]), the flows passed on through one buffer per thread ([`Flows`]). A
//! thread waits for the others only where a plan says one of its switches receives flow
//! from theirs; on a fat tree that never happens to the leaves' owner (a leaf is no
//! transit), so the two owners form a pipeline, the leaves' owner up to [`FLOW_SLOTS`]
//! chunks ahead, and preemption of one does not stall the other at once. Elsewhere (a
//! torus: every switch has CAs) the first thread places alone while the others plan.
//!
//! Plans do not depend on loads: they are made once, into a ring the team reads, by
//! whichever thread waits or, failing that, by the first thread that needs one.
//! Switch-LID destinations of up/down rules, which one thread plans with its switch-LID
//! counts, are planned without them ([`Planner::plan_deferred`]) and the owner of each
//! switch makes the same choice from what the BFS saw. Each switch makes the same
//! choices as on one thread, in the same order, from the same inputs: the tables are
//! byte-identical whatever the thread count.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use super::{
    CHUNK, Chunk, Flows, Job, Loads, Plan, Planner, Prefer, RouteStats, Rule, Sides,
    note_escape_traffic, place, place_at, switch_lid_at, unweighted_at,
};
use crate::net::Net;
use crate::routes::NO_ROUTE;

/// Plans made ahead (at most [`PLAN_BYTES`] of them).
const AHEAD: usize = 64;
const PLAN_BYTES: usize = 32 << 20;

/// Chunks whose flows may be in flight at once (at most [`FLOW_BYTES`] per thread): how
/// far the leaves' owner may run ahead.
const FLOW_SLOTS: usize = 64;
const FLOW_BYTES: usize = 16 << 20;

/// Threads that own switches.
const OWNERS: usize = 2;

/// Waits politely: spins for a while (what it waits for is usually microseconds away),
/// then naps, so that a waiting thread does not keep the CPU from the one it waits for
/// (the machine may have fewer cores than threads, or other work). It does not yield:
/// under load that gives the CPU away for a whole time slice.
struct Backoff {
    spins: u32,
    since: Option<Instant>,
}

impl Backoff {
    /// How long to spin before napping.
    const SPIN: Duration = Duration::from_micros(200);

    fn new() -> Self {
        Backoff {
            spins: 0,
            since: None,
        }
    }

    fn snooze(&mut self) {
        self.spins = self.spins.wrapping_add(1);
        if self.spins % 64 != 0 {
            std::hint::spin_loop();
            return;
        }
        let now = Instant::now();
        if now - *self.since.get_or_insert(now) > Self::SPIN {
            std::thread::park_timeout(Duration::from_micros(20));
        }
    }
}

/// A plan and what the team needs to know of it.
#[derive(Default)]
struct Planned {
    plan: Plan,
    /// The distance of each of `plan.levels`' levels.
    dist: Vec<u16>,
    /// Per owner: the farthest distance at which one of its switches receives flow from
    /// another owner's switch (0: none), from where on it waits for the others.
    cross: [u16; OWNERS],
}

/// One plan of the ring: `ready` holds the destination index + 1 of the plan in it.
#[derive(Default)]
struct Slot {
    ready: AtomicUsize,
    planned: RwLock<Planned>,
}

/// A thread's progress, on its own cache lines.
#[derive(Default)]
#[repr(align(128))]
struct Progress {
    /// Supersteps (one distance of one chunk) finished: every thread counts the same
    /// supersteps, in the same order, whether it has switches there or not.
    steps: AtomicUsize,
    /// Chunks finished.
    chunks: AtomicUsize,
    /// Destinations (indices in the routing order) finished.
    done: AtomicUsize,
}

/// What the team shares.
struct Team<'a> {
    net: &'a Net,
    /// Owner (thread) of each switch.
    owner: Vec<u8>,
    /// Up/down rules: switch-LID destinations are planned by [`Planner::plan_deferred`].
    counted: bool,
    slots: Vec<Slot>,
    /// The next destination (index in the routing order) nobody has taken to plan.
    next: AtomicUsize,
    progress: Vec<Progress>,
    /// Per owner, the flows its switches passed on, [`Team::flow_slots`] chunks of them:
    /// `[(c % flow_slots) * n_sw * stride + x * stride + j]` is what switch `x` receives
    /// for chunk `c`'s `j`-th LID. Written by that owner, read and cleared by `x`'s.
    flows: Vec<Vec<AtomicU32>>,
    flow_slots: usize,
    stride: usize,
    /// A thread left (it panicked): the others stop waiting.
    stop: AtomicBool,
}

/// Whether only the switch's own LID lives on a destination.
fn quick(lids: &[(u16, u8, u16)]) -> bool {
    lids.len() == 1 && lids[0].1 == 0
}

impl<'a> Team<'a> {
    /// Destinations every thread has finished: slot `c % slots` is free for `c` below
    /// this plus the ring's size.
    fn all_done(&self) -> usize {
        self.progress
            .iter()
            .map(|p| p.done.load(Acquire))
            .min()
            .unwrap_or(0)
    }

    /// Takes the next destination if its slot is free: `Some(index)` (its LIDs in
    /// `lids`), or `None` when every destination is taken or the ring is full.
    fn take(&self, lids: &mut Vec<(u16, u8, u16)>) -> Option<usize> {
        loop {
            let c = self.next.load(Acquire);
            if c >= self.net.n_sw || c >= self.all_done() + self.slots.len() {
                return None;
            }
            if self
                .next
                .compare_exchange(c, c + 1, AcqRel, Acquire)
                .is_ok()
            {
                self.net.lids_on(self.net.dest(c), lids);
                return Some(c);
            }
        }
    }

    /// Takes destination `i` for a thread that needs it now: true when nobody had (the
    /// destinations before it that nobody took have no LIDs: the thread needed and got
    /// every plan before `i`), false when another thread has it.
    fn take_own(&self, i: usize) -> bool {
        loop {
            let c = self.next.load(Acquire);
            if c > i {
                return false;
            }
            if self
                .next
                .compare_exchange(c, c + 1, AcqRel, Acquire)
                .is_ok()
                && c == i
            {
                return true;
            }
        }
    }

    /// Plans destination `c` (with LIDs `lids`) into its slot and marks it ready
    /// (nothing for a destination without LIDs: no thread reads it).
    fn fill(&self, p: &mut Planner<'_>, c: usize, lids: &[(u16, u8, u16)]) {
        if lids.is_empty() {
            return;
        }
        let slot = &self.slots[c % self.slots.len()];
        {
            let mut out = slot.planned.write().unwrap_or_else(PoisonError::into_inner);
            let out = &mut *out;
            let t = self.net.dest(c);
            if quick(lids) && self.counted {
                p.plan_deferred(t, &mut out.plan);
            } else {
                p.plan(t, quick(lids), &mut out.plan);
            }
            self.survey(p, out);
        }
        slot.ready.store(c + 1, Release);
    }

    /// Fills in [`Planned::dist`] and [`Planned::cross`] from the plan just made by `p`.
    /// The second owner (switches without CAs: on a tree, the ones above the leaves)
    /// always waits for the first; the first waits only where the plan makes one of its
    /// switches a transit of the second's flow, found by looking only at the second
    /// owner's switches just farther than a distance that holds one of the first's.
    fn survey(&self, p: &Planner<'_>, out: &mut Planned) {
        let plan = &out.plan;
        out.dist.clear();
        out.dist.extend(
            plan.levels[..plan.levels.len().saturating_sub(1)]
                .iter()
                .map(|&i| p.dist[plan.order[i as usize] as usize]),
        );
        out.cross = [0, u16::MAX];
        if plan.quick {
            return; // no CA LIDs: no flows
        }
        let adst = &self.net.adst;
        let first = |x: usize| self.owner[x] == 0 && x != plan.t;
        // Levels farthest first: level `l + 1` is the next nearer one.
        for l in 0..out.dist.len().saturating_sub(1) {
            let (lo, mid, hi) = (
                plan.levels[l] as usize,
                plan.levels[l + 1] as usize,
                plan.levels[l + 2] as usize,
            );
            if !plan.order[mid..hi].iter().any(|&x| first(x as usize)) {
                continue;
            }
            let into_first = (lo..mid).any(|i| {
                self.owner[plan.order[i] as usize] == 1
                    && plan
                        .eligible(i)
                        .iter()
                        .any(|&a| first(adst[a as usize] as usize))
            });
            if into_first {
                out.cross[0] = out.cross[0].max(out.dist[l + 1]);
            }
        }
    }

    /// Something useful while waiting: plans the next free destination; false when
    /// there is none.
    fn help(&self, p: &mut Planner<'_>, lids: &mut Vec<(u16, u8, u16)>) -> bool {
        match self.take(lids) {
            Some(c) => {
                self.fill(p, c, lids);
                true
            }
            None => false,
        }
    }

    /// The plan of destination `i`, made here if nobody has taken it; `None` when the
    /// team stops.
    fn plan_for(
        &self,
        i: usize,
        p: &mut Planner<'_>,
        lids: &[(u16, u8, u16)],
        ahead: &mut Vec<(u16, u8, u16)>,
    ) -> Option<RwLockReadGuard<'_, Planned>> {
        let slot = &self.slots[i % self.slots.len()];
        let mut b = Backoff::new();
        loop {
            if slot.ready.load(Acquire) == i + 1 {
                return Some(slot.planned.read().unwrap_or_else(PoisonError::into_inner));
            }
            if self.stop.load(Relaxed) {
                return None;
            }
            // The slot is free once the slowest thread is done with the plan it held.
            if i < self.all_done() + self.slots.len() && self.take_own(i) {
                self.fill(p, i, lids);
                continue;
            }
            if !self.help(p, ahead) {
                b.snooze();
            }
        }
    }

    /// Waits, planning meanwhile, until `ready` holds for every thread's progress; false
    /// when the team stops.
    fn wait_all(
        &self,
        ready: impl Fn(&Progress) -> bool,
        p: &mut Planner<'_>,
        ahead: &mut Vec<(u16, u8, u16)>,
    ) -> bool {
        let mut b = Backoff::new();
        while !self.progress.iter().all(&ready) {
            if self.stop.load(Relaxed) {
                return false;
            }
            if !self.help(p, ahead) {
                b.snooze();
            }
        }
        true
    }
}

/// [`Flows`] of one owner for one chunk: switch `s`'s flows are its own sources plus what
/// every owner's buffer holds for it; what this owner's switches pass on goes to its own
/// buffer (the destination switch receives nothing: its LIDs end there).
struct TeamFlows<'t> {
    all: [&'t [AtomicU32]; OWNERS],
    mine: &'t [AtomicU32],
    stride: usize,
    nsrc: &'t [u32],
    t: usize,
}

impl Flows for TeamFlows<'_> {
    #[inline(always)]
    fn take(&mut self, s: usize, fin: &mut [u32]) {
        let fs = s * self.stride;
        fin.fill(self.nsrc[s]);
        for buf in self.all {
            for (f, c) in fin.iter_mut().zip(&buf[fs..]) {
                let v = c.load(Relaxed);
                if v != 0 {
                    *f += v;
                    c.store(0, Relaxed);
                }
            }
        }
    }

    #[inline(always)]
    fn send(&mut self, x: usize, j: usize, f: u32) {
        if f != 0 && x != self.t {
            let c = &self.mine[x * self.stride + j];
            c.store(c.load(Relaxed) + f, Relaxed);
        }
    }
}

/// Sets [`Team::stop`] when a thread panics, so that the others stop waiting for it (the
/// panic then reaches the caller when the scope ends).
struct StopOnDrop<'r, 'a>(&'r Team<'a>);

impl Drop for StopOnDrop<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop.store(true, Release);
        }
    }
}

/// Routes the LIDs selected by `job`, destination switch by destination switch in the
/// routing order, on `job.threads` threads (see the module notes); the tables are
/// byte-identical whatever the thread count.
pub(crate) fn route_lids<P: Prefer + ?Sized>(
    net: &Net,
    job: &Job<'_, P>,
    lfts: &mut [u8],
) -> RouteStats {
    let mut st = RouteStats::default();
    let len = net.lft_len;
    if len == 0 || net.n_sw == 0 {
        return st;
    }
    let threads = job.threads.clamp(1, 64).min(net.n_sw);
    if threads > 1 {
        return route_team(net, job, lfts, threads);
    }
    let mut rows: Vec<&mut [u8]> = lfts.chunks_mut(len).collect();
    let mut loads = Loads::new(net);
    let counted = matches!(job.rule, Rule::UpDown { .. });
    let mut own = Planner::new(net, job.rule);
    let mut plan = Plan::default();
    let mut lids = Vec::new();
    for i in 0..net.n_sw {
        let t = net.dest(i);
        net.lids_on(t, &mut lids);
        if lids.is_empty() {
            continue;
        }
        // Switch-LID destinations of up/down rules are balanced by the switch-LID
        // counts, which this thread holds: it plans them with them.
        if counted && quick(&lids) {
            own.plan_switch_lid(t, &mut plan, &loads.swl);
        } else {
            own.plan(t, quick(&lids), &mut plan);
        }
        st.escapes += plan.escaped.len();
        if st.unreachable.is_none() {
            st.unreachable = plan.unreachable.map(|s| (s, lids[0].0));
        }
        place(&plan, &lids, &mut rows, net, &mut loads, job.pref, None);
    }
    st.escape_traffic = loads.escape_traffic;
    st
}

/// [`route_lids`] on `threads` (> 1) threads.
fn route_team<P: Prefer + ?Sized>(
    net: &Net,
    job: &Job<'_, P>,
    lfts: &mut [u8],
    threads: usize,
) -> RouteStats {
    let n = net.n_sw;
    let owner: Vec<u8> = (0..n).map(|s| u8::from(net.nsrc[s] == 0)).collect();
    // Each owner gets its own switches' rows (the others' are empty).
    let mut rows: Vec<Vec<&mut [u8]>> = (0..OWNERS).map(|_| Vec::with_capacity(n)).collect();
    for (s, row) in lfts.chunks_mut(net.lft_len).enumerate() {
        let o = usize::from(owner[s]);
        for (w, mine) in rows.iter_mut().enumerate() {
            if w != o {
                mine.push(&mut []);
            }
        }
        rows[o].push(row);
    }
    let sides = Sides::new(net, job.rule);
    let stride = Loads::new(net).stride;
    let plan_bytes = (net.n_arcs() + 2 * n) * 4;
    let chunk_bytes = n * stride * 4;
    let flow_slots = (FLOW_BYTES / chunk_bytes.max(1)).clamp(2, FLOW_SLOTS);
    let team = Team {
        net,
        owner,
        counted: matches!(job.rule, Rule::UpDown { .. }),
        slots: (0..(PLAN_BYTES / plan_bytes.max(1)).clamp(2, AHEAD))
            .map(|_| Slot::default())
            .collect(),
        next: AtomicUsize::new(0),
        // Threads that own no switch never hold a plan or a flow: done with all.
        progress: (0..threads)
            .map(|w| {
                let q = Progress::default();
                if w >= OWNERS {
                    q.done.store(usize::MAX, Relaxed);
                    q.steps.store(usize::MAX, Relaxed);
                    q.chunks.store(usize::MAX, Relaxed);
                }
                q
            })
            .collect(),
        flows: (0..OWNERS)
            .map(|_| {
                (0..flow_slots * n * stride)
                    .map(|_| AtomicU32::new(0))
                    .collect()
            })
            .collect(),
        flow_slots,
        stride,
        stop: AtomicBool::new(false),
    };
    let sides = sides.as_ref();
    std::thread::scope(|sc| {
        let team = &team;
        let mut rows = rows.into_iter();
        let first = rows.next().unwrap_or_default();
        let second = rows.next().unwrap_or_default();
        sc.spawn(move || member(team, 1, second, job, sides));
        for _ in OWNERS..threads {
            sc.spawn(move || planner(team, job.rule));
        }
        member(team, 0, first, job, sides)
    })
}

/// A thread that owns no switch: plans ahead until every destination is planned.
fn planner(team: &Team<'_>, rule: Rule<'_>) {
    let _stop = StopOnDrop(team);
    let mut p = Planner::new(team.net, rule);
    let mut lids = Vec::new();
    let mut b = Backoff::new();
    while !team.stop.load(Acquire) && team.next.load(Acquire) < team.net.n_sw {
        if team.help(&mut p, &mut lids) {
            b = Backoff::new();
        } else {
            b.snooze();
        }
    }
}

/// One owner of the team (`w`: 0, the calling thread, keeps the statistics).
fn member<P: Prefer + ?Sized>(
    team: &Team<'_>,
    w: usize,
    mut rows: Vec<&mut [u8]>,
    job: &Job<'_, P>,
    sides: Option<&Sides>,
) -> RouteStats {
    let _stop = StopOnDrop(team);
    let net = team.net;
    let mine = |s: usize| usize::from(team.owner[s]) == w;
    let progress = &team.progress[w];
    let mut st = RouteStats::default();
    let mut loads = Loads::new(net);
    let mut p = Planner::new(net, job.rule);
    let (mut lids, mut ahead) = (Vec::new(), Vec::new());
    let mut weighted = [(0u16, 0u16); CHUNK];
    let mut fin = [0u32; CHUNK];
    let (mut step, mut chunk) = (0usize, 0usize);
    let slot_len = net.n_sw * team.stride;
    for i in 0..net.n_sw {
        net.lids_on(net.dest(i), &mut lids);
        if !lids.is_empty() {
            let Some(planned) = team.plan_for(i, &mut p, &lids, &mut ahead) else {
                return st;
            };
            let plan = &planned.plan;
            let t = plan.t;
            if w == 0 {
                st.escapes += plan.escaped.len();
                if st.unreachable.is_none() {
                    st.unreachable = plan.unreachable.map(|s| (s, lids[0].0));
                }
                note_escape_traffic(plan, &lids, net, &mut loads);
            }
            if mine(t) {
                for &(lid, ..) in &lids {
                    let exit = net
                        .dest_switch(usize::from(lid))
                        .map_or(NO_ROUTE, |(_, port)| port);
                    rows[t][usize::from(lid)] = exit;
                }
            }
            // CA LIDs: a chunk at a time, a distance at a time.
            let mut k = 0;
            let weighted_lids = lids.iter().filter(|l| l.1 > 0);
            let mut pending = weighted_lids.clone().count();
            for &(lid, _, base) in weighted_lids {
                weighted[k] = (lid, base);
                k += 1;
                pending -= 1;
                if k < loads.stride && pending > 0 {
                    continue;
                }
                let ch = Chunk::new(&weighted[..k]);
                // This chunk's flow buffers were last used `flow_slots` chunks ago.
                let reuse = (chunk + 1).saturating_sub(team.flow_slots);
                if !team.wait_all(|q| q.chunks.load(Acquire) >= reuse, &mut p, &mut ahead) {
                    return st;
                }
                let at = (chunk % team.flow_slots) * slot_len;
                let mut flows = TeamFlows {
                    all: [
                        &team.flows[0][at..at + slot_len],
                        &team.flows[1][at..at + slot_len],
                    ],
                    mine: &team.flows[w][at..at + slot_len],
                    stride: team.stride,
                    nsrc: &net.nsrc,
                    t,
                };
                for (lv, &d) in plan.levels.windows(2).zip(&planned.dist) {
                    let (lo, hi) = (lv[0] as usize, lv[1] as usize);
                    let here = &plan.order[lo..hi];
                    if here.iter().any(|&s| mine(s as usize)) {
                        // Flow from another owner's switches reaches this distance:
                        // wait until they have placed every farther one.
                        if d <= planned.cross[w]
                            && !team.wait_all(|q| q.steps.load(Acquire) >= step, &mut p, &mut ahead)
                        {
                            return st;
                        }
                        for (ix, &s) in (lo..hi).zip(here) {
                            let s = s as usize;
                            if mine(s) {
                                flows.take(s, &mut fin[..k]);
                                let row = &mut *rows[s];
                                place_at(
                                    plan,
                                    ix,
                                    &ch,
                                    &fin[..k],
                                    row,
                                    net,
                                    &mut loads,
                                    job.pref,
                                    &mut flows,
                                );
                            }
                        }
                    }
                    step += 1;
                    progress.steps.store(step, Release);
                }
                chunk += 1;
                progress.chunks.store(chunk, Release);
                k = 0;
            }
            // LIDs without CA traffic: each switch on its own.
            for &(lid, wt, base) in &lids {
                if wt == 0 {
                    for (ix, &s) in plan.order.iter().enumerate() {
                        let s = s as usize;
                        if !mine(s) {
                            continue;
                        }
                        let row = &mut *rows[s];
                        if plan.quick {
                            switch_lid_at(plan, ix, lid, row, net, &mut loads, sides);
                        } else {
                            unweighted_at(plan, ix, lid, base, row, net, &mut loads, job.pref);
                        }
                    }
                }
            }
        }
        progress.done.store(i + 1, Release);
    }
    st.escape_traffic = loads.escape_traffic;
    st
}
