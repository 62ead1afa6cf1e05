//! The routing pass over every destination switch, on one thread or several, with the
//! same tables.
//!
//! One thread, the calling one, places every LID in the routing order with one set of
//! loads (see [`place`]). The other threads make plans (the load-independent part: a BFS
//! and the eligible arcs of a destination, [`Planner`]) into a ring of slots, in the
//! routing order, ahead of it; when they fall behind, the placing thread makes plans too
//! (the one it needs if nobody took it, else the next free one, or, when the thread that
//! took the one it needs seems preempted, that one on its own), so the work balances
//! whatever the machine gives each thread. Switch-LID destinations of up/down rules are balanced by the switch-LID
//! counts only the placing thread holds: alone it plans them with the counts
//! ([`Planner::plan_switch_lid`]); with helpers they are planned without
//! ([`Planner::plan_deferred`]: what the BFS saw) and the placement finds the same hops
//! and makes the same choice. Minhop's switch-LID destinations go outside the ring as
//! [`QuickHops`] (a port a switch), which a planning thread the ring holds back makes as
//! far ahead as they come ([`Ahead`]); their hops depend on no load, so the placing
//! thread leaves them for the end, where every thread writes a share of the switches'
//! rows ([`write_quick`]). The tables are byte-identical whatever the thread count.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicUsize, fence};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::{Job, Loads, Plan, Planner, Prefer, QuickHops, RouteStats, Rule, Sides, place};
use crate::net::Net;

/// Plans made ahead per thread (at most [`PLAN_BYTES`] of them).
const AHEAD: usize = 8;
const PLAN_BYTES: usize = 32 << 20;

/// How long the placing thread waits for a plan another thread has taken before it makes
/// the plan itself: far longer than a plan takes, about a scheduler's time slice (that
/// thread was most likely preempted).
const STUCK: Duration = Duration::from_millis(2);

/// Waits politely: spins briefly (the wait is usually short), then sleeps until woken
/// ([`std::thread::unpark`]) or for `nap`, so that a waiting thread does not take the CPU
/// from the one it waits for (the machine may have fewer cores than threads, or other
/// work).
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    /// Whether the spinning is over (the next snooze sleeps).
    fn spun(&self) -> bool {
        self.0 >= 8
    }

    fn snooze(&mut self, nap: Duration) {
        if self.0 < 8 {
            for _ in 0..1u32 << self.0 {
                std::hint::spin_loop();
            }
            self.0 += 1;
        } else {
            std::thread::park_timeout(nap);
        }
    }
}

/// How long a planning thread sleeps when the ring is full (it holds many plans' worth of
/// the placing thread's work, so this is short enough).
const FULL_NAP: Duration = Duration::from_micros(200);

/// One plan of the ring: `ready` holds the destination index + 1 of the plan in it.
#[derive(Default)]
struct Slot {
    ready: AtomicUsize,
    plan: Mutex<Plan>,
}

/// The plans shared between the placing thread and the planning ones.
struct Ring<'a> {
    net: &'a Net,
    /// Up/down rules: switch-LID destinations are planned by [`Planner::plan_deferred`].
    counted: bool,
    slots: Vec<Slot>,
    /// The next destination (index in the routing order) nobody has taken to plan.
    next: AtomicUsize,
    /// Destinations placed so far: slot `i % slots` is free once `i` is placed.
    placed: AtomicUsize,
    /// The placing thread is done (or failed): planning threads stop.
    stop: AtomicBool,
    /// The destination index + 1 whose plan the placing thread sleeps for (0: none), and
    /// that thread, to wake it when the plan is there.
    awaited: AtomicUsize,
    placer: std::thread::Thread,
    /// Minhop: the switch-LID destinations' hops, made outside the ring.
    ahead: Option<Ahead>,
}

/// Switch-LID destinations (minhop's quick plans) made as [`QuickHops`] outside the ring.
///
/// The routing order puts them where the switches come, which on a fabric built leaf by
/// leaf is after every destination with CAs: the planning threads, held back by the ring
/// while the placing thread places CA traffic, then left the last third of the BFSes to
/// make while there is next to nothing to place, half of them on the placing thread. A
/// `QuickHops` is a byte a switch (4 KB on a 45,056-CA tree), so a planning thread the
/// ring holds back makes them instead, as far ahead as they come.
struct Ahead {
    /// Per destination index: a switch-LID destination.
    quick: Vec<bool>,
    /// Per destination index: some thread makes (or made) its hops.
    claimed: Vec<AtomicBool>,
    hops: Vec<OnceLock<QuickHops>>,
    /// The next destination index to look at for one to make.
    next: AtomicUsize,
}

impl Ahead {
    fn new(net: &Net) -> Self {
        let mut lids = Vec::new();
        let quick = (0..net.n_sw)
            .map(|i| {
                net.lids_on(net.dest(i), &mut lids);
                quick(&lids)
            })
            .collect();
        Ahead {
            quick,
            claimed: (0..net.n_sw).map(|_| AtomicBool::new(false)).collect(),
            hops: (0..net.n_sw).map(|_| OnceLock::new()).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// Whether destination `i` goes this way.
    fn has(&self, i: usize) -> bool {
        self.quick.get(i).copied().unwrap_or(false)
    }

    fn claim(&self, i: usize) -> bool {
        !self.claimed[i].swap(true, AcqRel)
    }

    /// Claims the next switch-LID destination nobody has taken, if any.
    fn take(&self) -> Option<usize> {
        loop {
            let i = self.next.fetch_add(1, AcqRel);
            if i >= self.quick.len() {
                return None;
            }
            if self.quick[i] && self.claim(i) {
                return Some(i);
            }
        }
    }

    /// Makes the hops of destination `i` (claimed) with `p`, into `scratch`.
    fn make(&self, net: &Net, p: &mut Planner<'_>, i: usize, scratch: &mut Plan) {
        p.plan(net.dest(i), true, scratch);
        if let Some(h) = QuickHops::of(scratch, net) {
            let _ = self.hops[i].set(h);
        }
    }
}

/// The first switch found unreachable in the routing order, and the LID it could not
/// reach ([`RouteStats::unreachable`]), whatever order the destinations are placed in.
#[derive(Default)]
struct FirstUnreachable {
    index: Option<usize>,
    at: Option<(usize, u16)>,
}

impl FirstUnreachable {
    /// Destination `i` (routing order) left switch `unreachable` without a route to `lid`.
    fn note(&mut self, i: usize, unreachable: Option<usize>, lid: u16) {
        if let Some(s) = unreachable
            && self.index.is_none_or(|j| i < j)
        {
            self.index = Some(i);
            self.at = Some((s, lid));
        }
    }
}

/// Whether only the switch's own LID lives on a destination.
fn quick(lids: &[(u16, u8, u16)]) -> bool {
    lids.len() == 1 && lids[0].1 == 0
}

/// Locks a slot; a planning thread that panicked with it held leaves the plan unready,
/// and its panic reaches the caller when the scope ends.
fn lock(slot: &Slot) -> MutexGuard<'_, Plan> {
    slot.plan.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<'a> Ring<'a> {
    /// Takes the next destination if its slot is free: `Some((index, LIDs))` (the LIDs in
    /// `lids`), or `None` when every destination is taken or the ring is full.
    fn take(&self, lids: &mut Vec<(u16, u8, u16)>) -> Option<usize> {
        loop {
            let c = self.next.load(Acquire);
            if c >= self.net.n_sw || c >= self.placed.load(Acquire) + self.slots.len() {
                return None;
            }
            if self
                .next
                .compare_exchange(c, c + 1, AcqRel, Acquire)
                .is_ok()
            {
                if self.ahead.as_ref().is_some_and(|a| a.has(c)) {
                    continue;
                }
                self.net.lids_on(self.net.dest(c), lids);
                return Some(c);
            }
        }
    }

    /// Takes destination `i` for the placing thread, which needs it now: true when nobody
    /// had (the destinations before it that nobody took have no LIDs), false when another
    /// thread has it.
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

    /// Plans destination `c` (with LIDs `lids`) into `out`.
    fn plan(&self, p: &mut Planner<'_>, c: usize, lids: &[(u16, u8, u16)], out: &mut Plan) {
        let t = self.net.dest(c);
        if quick(lids) && self.counted {
            p.plan_deferred(t, out);
        } else {
            p.plan(t, quick(lids), out);
        }
    }

    /// Plans destination `c` into its slot and marks it ready (nothing for a destination
    /// without LIDs).
    fn fill(&self, p: &mut Planner<'_>, c: usize, lids: &[(u16, u8, u16)]) {
        if lids.is_empty() {
            return;
        }
        let slot = &self.slots[c % self.slots.len()];
        self.plan(p, c, lids, &mut lock(slot));
        // Sequentially consistent with the placing thread's announcement and check (it
        // either sees the plan or is woken).
        slot.ready.store(c + 1, SeqCst);
        if self.awaited.load(SeqCst) == c + 1 {
            self.placer.unpark();
        }
    }

    /// A planning thread: plans the next free destination until there is none.
    fn help(&self, rule: Rule<'_>) {
        let mut p = Planner::new(self.net, rule);
        let mut lids = Vec::new();
        let mut scratch = Plan::default();
        let mut b = Backoff::default();
        let mut quick_left = self.ahead.is_some();
        while !self.stop.load(Acquire) && (self.next.load(Acquire) < self.net.n_sw || quick_left) {
            if let Some(c) = self.take(&mut lids) {
                self.fill(&mut p, c, &lids);
                b = Backoff::default();
                continue;
            }
            // The ring is full (or done): make switch-LID hops instead of waiting.
            if let Some(a) = self.ahead.as_ref().filter(|_| quick_left) {
                match a.take() {
                    Some(i) => {
                        a.make(self.net, &mut p, i, &mut scratch);
                        // As `fill`: the placing thread either sees the hops or is woken.
                        fence(SeqCst);
                        if self.awaited.load(SeqCst) == i + 1 {
                            self.placer.unpark();
                        }
                        b = Backoff::default();
                        continue;
                    }
                    None => quick_left = false,
                }
            }
            b.snooze(FULL_NAP);
        }
    }
}

/// Sets [`Ring::stop`] when the placing thread leaves, panicking or not.
struct StopOnDrop<'r, 'a>(&'r Ring<'a>);

impl Drop for StopOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Release);
    }
}

/// Places destination `i` (with LIDs `lids`) with its plan from the ring, or planned here
/// when the planning threads are behind (see the module notes); `with_plan` gets the
/// plan.
/// `spare` holds the LIDs of a destination planned meanwhile.
fn place_next(
    ring: &Ring<'_>,
    own: &mut Planner<'_>,
    own_plan: &mut Plan,
    i: usize,
    lids: &[(u16, u8, u16)],
    spare: &mut Vec<(u16, u8, u16)>,
    mut with_plan: impl FnMut(&Plan),
) {
    let slot = &ring.slots[i % ring.slots.len()];
    let mut b = Backoff::default();
    let mut since: Option<Instant> = None;
    loop {
        if slot.ready.load(Acquire) == i + 1 {
            with_plan(&lock(slot));
            return;
        }
        // The planning threads are behind: plan it here.
        if ring.take_own(i) {
            ring.plan(own, i, lids, own_plan);
            with_plan(own_plan);
            return;
        }
        // Another thread is making it. Once a short spin has not seen it done, that
        // thread is slow (or preempted): plan the next free one rather than wait, which
        // lets the planning threads catch up.
        if b.spun()
            && let Some(c) = ring.take(spare)
        {
            ring.fill(own, c, spare);
            continue;
        }
        // Another thread has it: if it takes far longer than a plan takes, that thread
        // is most likely not running; make the plan here.
        let now = Instant::now();
        let waited = now - *since.get_or_insert(now);
        if waited > STUCK {
            ring.plan(own, i, lids, own_plan);
            with_plan(own_plan);
            return;
        }
        ring.awaited.store(i + 1, SeqCst);
        if slot.ready.load(SeqCst) != i + 1 {
            b.snooze(STUCK - waited);
        }
        ring.awaited.store(0, Relaxed);
    }
}

/// The hops of minhop's switch-LID destination `i` (with LIDs `lids`): made ahead, being
/// made (waited for, making the next free ones meanwhile), or made here. `None` when it
/// was planned here instead (nobody could make it hops, or the thread that took it seems
/// preempted): the plan is then in `own_plan`.
fn await_hops<'r>(
    a: &'r Ahead,
    ring: &Ring<'_>,
    net: &Net,
    own: &mut Planner<'_>,
    own_plan: &mut Plan,
    i: usize,
    lids: &[(u16, u8, u16)],
) -> Option<&'r QuickHops> {
    let mut b = Backoff::default();
    let mut since: Option<Instant> = None;
    loop {
        if let Some(h) = a.hops[i].get() {
            return Some(h);
        }
        if a.claim(i) {
            a.make(net, own, i, own_plan);
            return a.hops[i].get();
        }
        let now = Instant::now();
        let waited = now - *since.get_or_insert(now);
        if waited > STUCK {
            ring.plan(own, i, lids, own_plan);
            return None;
        }
        // Another thread is making it: make the next free one meanwhile, so that the two
        // do not take turns once this thread has caught up.
        if b.spun()
            && let Some(j) = a.take()
        {
            a.make(net, own, j, own_plan);
            continue;
        }
        ring.awaited.store(i + 1, SeqCst);
        fence(SeqCst);
        if a.hops[i].get().is_none() {
            b.snooze(STUCK - waited);
        }
        ring.awaited.store(0, Relaxed);
    }
}

/// Writes minhop's switch-LID destinations (`quick`: routing index, hops, LID) into
/// `rows`, each of `threads` threads a share of the switches. Their hops depend on no
/// load and no other entry reads their columns, so writing them after the CA traffic
/// gives the tables of placing them in the routing order; row by row, each switch's
/// entries are written together, instead of a byte in every switch's row per destination
/// on the placing thread. The switch-LID counts ([`Loads`]' `swl`) are not kept for them:
/// only up/down rules read those.
fn write_quick(
    rows: &mut [&mut [u8]],
    net: &Net,
    quick: &[(usize, &QuickHops, u16)],
    threads: usize,
) {
    if quick.is_empty() || rows.is_empty() {
        return;
    }
    let share = rows.len().div_ceil(threads.max(1));
    std::thread::scope(|sc| {
        let mut parts = rows.chunks_mut(share).enumerate();
        let first = parts.next();
        for (k, part) in parts {
            sc.spawn(move || write_rows(part, k * share, net, quick));
        }
        if let Some((_, part)) = first {
            write_rows(part, 0, net, quick);
        }
    });
}

/// [`write_quick`] for the switches `from..from + rows.len()`.
fn write_rows(rows: &mut [&mut [u8]], from: usize, net: &Net, quick: &[(usize, &QuickHops, u16)]) {
    for (k, row) in rows.iter_mut().enumerate() {
        let s = from + k;
        for &(_, h, lid) in quick {
            h.write(s, row, usize::from(lid), net);
        }
    }
}

/// Routes the LIDs selected by `job`, destination switch by destination switch in the
/// routing order, on `job.threads` threads (see the module notes): the calling thread
/// places every LID whose hops loads decide, with one set of loads, so the tables are
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
    let mut rows: Vec<&mut [u8]> = lfts.chunks_mut(len).collect();
    let mut loads = Loads::new(net);
    let threads = job.threads.clamp(1, 64).min(net.n_sw);
    let sides = if threads > 1 {
        Sides::new(net, job.rule)
    } else {
        None
    };
    // The first unreachable switch in the routing order: destinations may be placed out
    // of it (minhop's switch-LID ones go last), so the index says which came first.
    let mut first_unreachable = FirstUnreachable::default();
    let mut consume = |i: usize, plan: &Plan, lids: &[(u16, u8, u16)], loads: &mut Loads| {
        st.escapes += plan.escaped.len();
        first_unreachable.note(i, plan.unreachable, lids[0].0);
        place(plan, lids, &mut rows, net, loads, job.pref, sides.as_ref());
    };
    let counted = matches!(job.rule, Rule::UpDown { .. });
    let mut own = Planner::new(net, job.rule);
    let mut own_plan = Plan::default();
    let mut lids = Vec::new();
    if threads == 1 {
        for i in 0..net.n_sw {
            let t = net.dest(i);
            net.lids_on(t, &mut lids);
            if lids.is_empty() {
                continue;
            }
            // Switch-LID destinations of up/down rules are balanced by the switch-LID
            // counts, which this thread holds: it plans them with them.
            if counted && quick(&lids) {
                own.plan_switch_lid(t, &mut own_plan, &loads.swl);
            } else {
                own.plan(t, quick(&lids), &mut own_plan);
            }
            consume(i, &own_plan, &lids, &mut loads);
        }
        st.escape_traffic = loads.escape_traffic;
        st.unreachable = first_unreachable.at;
        return st;
    }
    let plan_bytes = (net.n_arcs() + 2 * net.n_sw) * 4;
    let ring = Ring {
        net,
        counted,
        slots: (0..(PLAN_BYTES / plan_bytes.max(1)).clamp(2, AHEAD * threads))
            .map(|_| Slot::default())
            .collect(),
        next: AtomicUsize::new(0),
        placed: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        awaited: AtomicUsize::new(0),
        placer: std::thread::current(),
        // Deferred to the end (see `write_quick`), which only a preference that could
        // read their columns would notice.
        ahead: (matches!(job.rule, Rule::MinHop) && !job.pref.active()).then(|| Ahead::new(net)),
    };
    // Minhop's switch-LID destinations, in the routing order, and their hops.
    let mut later = Vec::new();
    let mut quick: Vec<(usize, &QuickHops, u16)> = Vec::new();
    std::thread::scope(|sc| {
        let ring = &ring;
        for _ in 1..threads {
            sc.spawn(move || ring.help(job.rule));
        }
        let _stop = StopOnDrop(ring);
        let mut spare = Vec::new();
        for i in 0..net.n_sw {
            if ring.ahead.as_ref().is_some_and(|a| a.has(i)) {
                // A switch-LID destination: its hops are written at the end.
                later.push(i);
            } else {
                net.lids_on(net.dest(i), &mut lids);
                if !lids.is_empty() {
                    place_next(ring, &mut own, &mut own_plan, i, &lids, &mut spare, |p| {
                        consume(i, p, &lids, &mut loads);
                    });
                }
            }
            ring.placed.store(i + 1, Release);
        }
        let Some(a) = ring.ahead.as_ref() else {
            return;
        };
        for &i in &later {
            net.lids_on(net.dest(i), &mut lids);
            // Made ahead, being made, or made here now.
            if let Some(h) = await_hops(a, ring, net, &mut own, &mut own_plan, i, &lids) {
                quick.push((i, h, lids[0].0));
            } else {
                consume(i, &own_plan, &lids, &mut loads);
            }
        }
    });
    for &(i, h, lid) in &quick {
        st.escapes += h.escapes;
        first_unreachable.note(i, h.unreachable, lid);
    }
    write_quick(&mut rows, net, &quick, threads);
    st.escape_traffic = loads.escape_traffic;
    st.unreachable = first_unreachable.at;
    st
}
