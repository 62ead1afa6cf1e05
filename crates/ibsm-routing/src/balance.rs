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
//!
//! Planning is in `plan.rs`, placing in `place.rs`, re-routing after a fabric change in
//! `repair.rs`, the planning threads in `threads.rs`.

use crate::net::{Net, Peer};

mod place;
mod plan;
mod repair;
mod threads;

#[cfg(test)]
pub(crate) use place::least_used_hop;
pub(crate) use place::{Loads, QuickHops, Sides, pick, place};
pub(crate) use plan::{Plan, Planner};
pub(crate) use repair::{local_ok, repair, repair_local};

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
