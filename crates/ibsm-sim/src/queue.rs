//! The event queue: events leave in (time, push order) order, as from one binary heap
//! keyed on (time, sequence number), but most of them without a heap's cost.
//!
//! Nearly every event the simulator schedules is "now + a delay that is the same for
//! every event of its kind" (a packet arrives one hop latency after it was sent, an SMA
//! answers one processing time after the packet reached it), and `now` never goes
//! back. Events of such a kind are therefore pushed already in order, so a FIFO per
//! kind (a *lane*) keeps them sorted, and popping only compares the lanes' heads with
//! the heap's top. A push that would break its lane's order (a per-link latency, a
//! latency changed by a fault) and every event without a lane (timers, faults) go to
//! the heap. Ties in time are broken by the sequence number, which grows with every
//! push, so the order out does not depend on which lane or the heap held an event.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use ibsm_transport::Instant;

struct Item<T> {
    t: Instant,
    seq: u64,
    v: T,
}

impl<T> Item<T> {
    fn key(&self) -> (Instant, u64) {
        (self.t, self.seq)
    }
}

impl<T> PartialEq for Item<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl<T> Eq for Item<T> {}
impl<T> PartialOrd for Item<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Item<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key().cmp(&o.key())
    }
}

/// Events of type `T` in (time, push order) order, with `LANES` FIFO lanes for kinds
/// of event that are pushed in time order (see the module docs).
pub(crate) struct EventQueue<T, const LANES: usize> {
    lanes: [VecDeque<Item<T>>; LANES],
    heap: BinaryHeap<Reverse<Item<T>>>,
    seq: u64,
}

impl<T, const LANES: usize> EventQueue<T, LANES> {
    pub(crate) fn new() -> Self {
        Self {
            lanes: std::array::from_fn(|_| VecDeque::new()),
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Queues `v` at `t`, after everything already queued at `t`. `lane` is a hint:
    /// events usually pushed in time order name the same lane; the event goes to the
    /// heap when it would come before the lane's last one (or the lane does not exist).
    pub(crate) fn push(&mut self, t: Instant, lane: Option<usize>, v: T) {
        self.seq += 1;
        let item = Item {
            t,
            seq: self.seq,
            v,
        };
        if let Some(l) = lane.and_then(|i| self.lanes.get_mut(i)) {
            // `seq` only grows, so `back.t <= t` is `back.key() < item.key()`.
            if l.back().is_none_or(|b| b.t <= t) {
                l.push_back(item);
                return;
            }
        }
        self.heap.push(Reverse(item));
    }

    /// The earliest event's time and where it is: `None` for the heap, `Some(i)` for
    /// lane `i`.
    fn first(&self) -> Option<(Instant, Option<usize>)> {
        let mut best = self.heap.peek().map(|Reverse(e)| (e.key(), None));
        for (i, l) in self.lanes.iter().enumerate() {
            if let Some(f) = l.front()
                && best.is_none_or(|(k, _)| f.key() < k)
            {
                best = Some((f.key(), Some(i)));
            }
        }
        best.map(|((t, _), at)| (t, at))
    }

    fn take(&mut self, at: Option<usize>) -> Option<(Instant, T)> {
        let item = match at {
            None => self.heap.pop().map(|Reverse(e)| e),
            Some(i) => self.lanes[i].pop_front(),
        }?;
        Some((item.t, item.v))
    }

    /// Time of the earliest event.
    pub(crate) fn peek_time(&self) -> Option<Instant> {
        let lanes = self.lanes.iter().filter_map(|l| l.front()).map(|e| e.t);
        let heap = self.heap.peek().map(|Reverse(e)| e.t);
        lanes.chain(heap).min()
    }

    /// Takes the earliest event (of those at the same time, the first pushed).
    pub(crate) fn pop(&mut self) -> Option<(Instant, T)> {
        let (_, at) = self.first()?;
        self.take(at)
    }

    /// [`Self::pop`] if the earliest event is due by `deadline` (one look at the heads
    /// instead of [`Self::peek_time`] and then [`Self::pop`]).
    pub(crate) fn pop_due(&mut self, deadline: Instant) -> Option<(Instant, T)> {
        let (t, at) = self.first()?;
        if t > deadline {
            return None;
        }
        self.take(at)
    }

    /// Events queued.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(VecDeque::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    #[test]
    fn ties_leave_in_push_order_across_lanes_and_heap() {
        let mut q: EventQueue<u32, 2> = EventQueue::new();
        q.push(at(5), Some(1), 0);
        q.push(at(5), None, 1);
        q.push(at(5), Some(0), 2);
        q.push(at(5), Some(1), 3);
        q.push(at(3), Some(5), 4); // no such lane: the heap
        assert_eq!(q.len(), 5);
        assert_eq!(q.peek_time(), Some(at(3)));
        let out: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, v)| v)).collect();
        assert_eq!(out, [4, 0, 1, 2, 3]);
        assert_eq!(q.peek_time(), None);
    }

    #[test]
    fn an_out_of_order_push_to_a_lane_still_leaves_in_time_order() {
        let mut q: EventQueue<u32, 1> = EventQueue::new();
        q.push(at(10), Some(0), 0);
        q.push(at(4), Some(0), 1);
        q.push(at(10), Some(0), 2);
        q.push(at(7), Some(0), 3);
        let out: Vec<(Instant, u32)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out, [(at(4), 1), (at(7), 3), (at(10), 0), (at(10), 2)]);
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Push at `now + dt` (or at `dt` when `absolute`: possibly in the past).
        Push {
            dt: u64,
            lane: Option<usize>,
            absolute: bool,
        },
        Pop,
        /// Pop only what is due by `now + dt`.
        PopDue {
            dt: u64,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u64..6, proptest::option::of(0usize..4), proptest::bool::weighted(0.1))
                .prop_map(|(dt, lane, absolute)| Op::Push { dt, lane, absolute }),
            2 => Just(Op::Pop),
            1 => (0u64..4).prop_map(|dt| Op::PopDue { dt }),
        ]
    }

    proptest! {
        /// Whatever is pushed where, events leave exactly as from one BinaryHeap on
        /// (time, push number).
        #[test]
        fn order_is_that_of_one_binary_heap(ops in proptest::collection::vec(op(), 0..300)) {
            let mut q: EventQueue<u32, 3> = EventQueue::new();
            let mut model: BinaryHeap<Reverse<(Instant, u64, u32)>> = BinaryHeap::new();
            let mut now = 0u64;
            let mut n = 0u32;
            let check_pop = |q: &mut EventQueue<u32, 3>,
                             model: &mut BinaryHeap<Reverse<(Instant, u64, u32)>>,
                             now: &mut u64|
             -> Result<(), TestCaseError> {
                prop_assert_eq!(q.peek_time(), model.peek().map(|Reverse(e)| e.0));
                let got = q.pop();
                let want = model.pop().map(|Reverse((t, _, v))| (t, v));
                prop_assert_eq!(got, want);
                if let Some((t, _)) = got {
                    *now = (*now).max(t.as_nanos());
                }
                Ok(())
            };
            for op in ops {
                match op {
                    Op::Push { dt, lane, absolute } => {
                        let t = at(if absolute { dt } else { now + dt });
                        n += 1;
                        q.push(t, lane, n);
                        model.push(Reverse((t, u64::from(n), n)));
                    }
                    Op::Pop => check_pop(&mut q, &mut model, &mut now)?,
                    Op::PopDue { dt } => {
                        let deadline = at(now + dt);
                        let due = model.peek().is_some_and(|Reverse(e)| e.0 <= deadline);
                        let want = if due { model.pop().map(|Reverse((t, _, v))| (t, v)) } else { None };
                        prop_assert_eq!(q.pop_due(deadline), want);
                    }
                }
                prop_assert_eq!(q.len(), model.len());
            }
            while !model.is_empty() {
                check_pop(&mut q, &mut model, &mut now)?;
            }
            prop_assert!(q.pop().is_none());
        }
    }
}
