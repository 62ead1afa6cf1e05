//! The attempt deadlines of [`crate::Transactions`].
//!
//! They sit on the per-MAD path of every sweep (an SM sends hundreds of thousands of
//! SMPs in one bring-up), so they are built for what that path does: nearly every
//! request of an instance waits the same per-attempt timeout, and attempts go out in
//! time order, so the deadlines of one timeout arrive already sorted. [`Deadlines`]
//! keeps one FIFO lane per timeout: a push is an append and a pop takes a lane's front,
//! where a binary heap pays a logarithmic sift per attempt. Requests with rarer timeouts
//! (beyond [`MAX_LANES`] distinct ones) share a heap.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use crate::clock::Instant;
use crate::txn::TxId;

/// One attempt's deadline: when, which request, which attempt of it. Ordered by
/// deadline, then request id, then attempt (the order they expire in).
pub(crate) type Deadline = (Instant, TxId, u32);

/// Distinct timeouts that get a lane of their own.
pub(crate) const MAX_LANES: usize = 8;

/// Deadlines in expiry order; see the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    /// `(timeout, its deadlines in order)`, in order of first use.
    lanes: Vec<(Duration, VecDeque<Deadline>)>,
    /// Deadlines of timeouts without a lane.
    other: BinaryHeap<Reverse<Deadline>>,
}

/// Where the earliest deadline is.
#[derive(Clone, Copy)]
enum At {
    Lane(usize),
    Other,
}

impl Deadlines {
    /// Adds the deadline of an attempt that waits `timeout`.
    pub(crate) fn push(&mut self, timeout: Duration, d: Deadline) {
        let lane = match self.lanes.iter().position(|(t, _)| *t == timeout) {
            Some(i) => i,
            None if self.lanes.len() < MAX_LANES => {
                self.lanes.push((timeout, VecDeque::new()));
                self.lanes.len() - 1
            }
            None => {
                self.other.push(Reverse(d));
                return;
            }
        };
        let q = &mut self.lanes[lane].1;
        if q.back().is_none_or(|b| *b <= d) {
            q.push_back(d);
        } else {
            // Out of order (a retry sent at the same instant as a younger request, or
            // a clock that went back): into its place, near the back.
            let at = q.partition_point(|x| *x <= d);
            q.insert(at, d);
        }
    }

    fn earliest(&self) -> Option<(At, Deadline)> {
        let lanes = self
            .lanes
            .iter()
            .enumerate()
            .filter_map(|(i, (_, q))| q.front().map(|d| (At::Lane(i), *d)));
        let other = self.other.peek().map(|Reverse(d)| (At::Other, *d));
        lanes.chain(other).min_by_key(|(_, d)| *d)
    }

    /// The earliest deadline.
    pub(crate) fn peek(&self) -> Option<Deadline> {
        self.earliest().map(|(_, d)| d)
    }

    /// Removes and returns the earliest deadline.
    pub(crate) fn pop(&mut self) -> Option<Deadline> {
        let (at, d) = self.earliest()?;
        match at {
            At::Lane(i) => {
                self.lanes[i].1.pop_front();
            }
            At::Other => {
                self.other.pop();
            }
        }
        Some(d)
    }

    /// Drops, from the front of every lane and the heap, the deadlines `live` says are
    /// no longer waited for, and returns the earliest live one. Each stale deadline is
    /// looked at once when it reaches a front, never again.
    pub(crate) fn earliest_live(&mut self, live: impl Fn(&Deadline) -> bool) -> Option<Instant> {
        for (_, q) in &mut self.lanes {
            while q.front().is_some_and(|d| !live(d)) {
                q.pop_front();
            }
        }
        while self.other.peek().is_some_and(|Reverse(d)| !live(d)) {
            self.other.pop();
        }
        self.peek().map(|(t, _, _)| t)
    }

    /// Deadlines held, live or stale.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lanes.iter().map(|(_, q)| q.len()).sum::<usize>() + self.other.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn lanes_merge_in_expiry_order() {
        let mut d = Deadlines::default();
        d.push(Duration::from_millis(200), (at(200), TxId(1), 1));
        d.push(Duration::from_millis(50), (at(60), TxId(2), 1));
        d.push(Duration::from_millis(200), (at(210), TxId(3), 1));
        d.push(Duration::from_millis(50), (at(200), TxId(0), 2));
        let order: Vec<u64> = std::iter::from_fn(|| d.pop())
            .map(|(_, id, _)| id.0)
            .collect();
        assert_eq!(order, [2, 0, 1, 3]);
    }

    #[test]
    fn stale_fronts_are_dropped_once() {
        let mut d = Deadlines::default();
        for i in 0..5 {
            d.push(Duration::from_millis(100), (at(100 + i), TxId(i), 1));
        }
        // Requests 0 and 1 were answered; 3 is stale too but behind a live front.
        let live = |x: &Deadline| !matches!(x.1.0, 0 | 1 | 3);
        assert_eq!(d.earliest_live(live), Some(at(102)));
        assert_eq!(d.len(), 3);
    }

    #[test]
    fn more_timeouts_than_lanes_share_the_heap() {
        let mut d = Deadlines::default();
        let n = MAX_LANES as u64 + 4;
        for i in 0..n {
            d.push(Duration::from_millis(i + 1), (at(n - i), TxId(i), 1));
        }
        assert_eq!(d.lanes.len(), MAX_LANES);
        assert_eq!(d.other.len(), 4);
        let ts: Vec<Instant> = std::iter::from_fn(|| d.pop()).map(|(t, _, _)| t).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(ts.len() as u64, n);
    }

    proptest! {
        /// Whatever the timeouts and push times, pops come out exactly in the order a
        /// binary heap of the same deadlines gives.
        #[test]
        fn pops_in_heap_order(ops in proptest::collection::vec(
            (0u64..12, 0u64..40, any::<bool>()), 1..200)
        ) {
            let mut d = Deadlines::default();
            let mut heap = BinaryHeap::new();
            let mut now = 0u64;
            for (i, (tmo, step, pop)) in ops.into_iter().enumerate() {
                if pop {
                    prop_assert_eq!(d.pop(), heap.pop().map(|Reverse(x)| x));
                } else {
                    // Mostly forward, sometimes the same instant.
                    now += step / 8;
                    let timeout = Duration::from_millis(tmo * 10);
                    let dl = (at(now) + timeout, TxId((i as u64 * 7919) % 61), 1 + (i as u32 % 3));
                    d.push(timeout, dl);
                    heap.push(Reverse(dl));
                }
            }
            while let Some(Reverse(x)) = heap.pop() {
                prop_assert_eq!(d.pop(), Some(x));
            }
            prop_assert_eq!(d.pop(), None);
        }
    }
}
