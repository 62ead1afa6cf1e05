//! How long a core keeps its host from receiving: the wall time of every call into a
//! [`SansIo`] core, measured by the host.
//!
//! A core that is "always answering" is one whose every call returns quickly: while a
//! `handle_*` or `poll_*` call runs, the host's loop reads nothing from the transport,
//! so an SMInfo poll or SA query that arrives then waits for it. [`Metered`] wraps a
//! core and times each call on the wall clock (the host's business; the core itself
//! never reads a clock); [`BusyMeter`] keeps the longest call by kind, counts per
//! power-of-two bucket, and the longest since the host last asked
//! ([`BusyMeter::take_window`], say once per sweep).
//!
//! ```
//! use ibsm_transport::busy::{BusyMeter, Call};
//! use std::time::Duration;
//!
//! let mut m = BusyMeter::default();
//! m.record(Call::Incoming, Duration::from_micros(40));
//! m.record(Call::Job, Duration::from_millis(12));
//! assert_eq!(m.longest().unwrap().0, Call::Job);
//! assert_eq!(m.take_window().unwrap().1, Duration::from_millis(12));
//! assert!(m.take_window().is_none());
//! ```

use std::fmt;
use std::time::Duration;

use crate::addr::Incoming;
use crate::clock::Instant;
use crate::error::TransportError;
use crate::sansio::{Job, Outgoing, SansIo};
use crate::txn::TxId;

/// Which entry point of a core a call went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Call {
    /// [`SansIo::handle_incoming`].
    Incoming,
    /// [`SansIo::handle_send_error`].
    SendError,
    /// [`SansIo::handle_timeout`].
    Timeout,
    /// [`SansIo::handle_job`].
    Job,
    /// Any `poll_*` (transmit, timeout, event, job).
    Poll,
}

impl Call {
    /// Every kind, in the order of [`Call::index`].
    pub const ALL: [Call; 5] = [
        Call::Incoming,
        Call::SendError,
        Call::Timeout,
        Call::Job,
        Call::Poll,
    ];

    /// A short lowercase name (`"incoming"`, `"send_error"`, `"timeout"`, `"job"`,
    /// `"poll"`), for logs and metric labels.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Call::Incoming => "incoming",
            Call::SendError => "send_error",
            Call::Timeout => "timeout",
            Call::Job => "job",
            Call::Poll => "poll",
        }
    }

    /// Position in [`Call::ALL`].
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Buckets of [`BusyMeter::buckets`]: calls up to 1 µs, 2 µs, 4 µs, ... 2^(BUCKETS-2)
/// µs, and longer (the last).
pub const BUCKETS: usize = 24;

/// The calls a host timed: per kind the count, total and longest, a histogram of all
/// calls, and the longest since [`BusyMeter::take_window`].
#[derive(Debug, Clone, Default)]
pub struct BusyMeter {
    count: [u64; 5],
    total: [Duration; 5],
    longest: [Duration; 5],
    buckets: [u64; BUCKETS],
    window: Option<(Call, Duration)>,
}

impl BusyMeter {
    /// Records one call of `kind` that took `took`.
    pub fn record(&mut self, kind: Call, took: Duration) {
        let i = kind.index();
        self.count[i] += 1;
        self.total[i] += took;
        self.longest[i] = self.longest[i].max(took);
        self.buckets[bucket_of(took)] += 1;
        if self.window.is_none_or(|(_, d)| took > d) {
            self.window = Some((kind, took));
        }
    }

    /// The longest call of all, with its kind (`None` before the first).
    #[must_use]
    pub fn longest(&self) -> Option<(Call, Duration)> {
        Call::ALL
            .iter()
            .filter(|k| self.count[k.index()] > 0)
            .map(|&k| (k, self.longest[k.index()]))
            .max_by_key(|&(_, d)| d)
    }

    /// The longest call of `kind`.
    #[must_use]
    pub fn longest_of(&self, kind: Call) -> Duration {
        self.longest[kind.index()]
    }

    /// How many calls of `kind` were timed.
    #[must_use]
    pub fn count(&self, kind: Call) -> u64 {
        self.count[kind.index()]
    }

    /// The time all calls of `kind` took together.
    #[must_use]
    pub fn total(&self, kind: Call) -> Duration {
        self.total[kind.index()]
    }

    /// Calls per bucket (see [`BUCKETS`]), all kinds together.
    #[must_use]
    pub fn buckets(&self) -> &[u64; BUCKETS] {
        &self.buckets
    }

    /// The upper bound of bucket `i` (`None` for the last, which is open).
    #[must_use]
    pub fn bucket_bound(i: usize) -> Option<Duration> {
        (i + 1 < BUCKETS).then(|| Duration::from_micros(1 << i))
    }

    /// The longest call since the last `take_window` (or the start), and starts a new
    /// window.
    pub fn take_window(&mut self) -> Option<(Call, Duration)> {
        self.window.take()
    }

    /// The smallest bucket bound at or above which at most `1 - q` of the calls lie
    /// (`q` in 0..=1; `None` with no calls or when the answer is the open bucket).
    #[must_use]
    pub fn quantile_bound(&self, q: f64) -> Option<Duration> {
        let n: u64 = self.buckets.iter().sum();
        if n == 0 {
            return None;
        }
        // Nearest rank: the call at rank ceil(q * n), 1-based.
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::bucket_bound(i);
            }
        }
        None
    }
}

fn bucket_of(d: Duration) -> usize {
    let us = d.as_micros();
    if us <= 1 {
        return 0;
    }
    // Bucket i holds (2^(i-1), 2^i] µs.
    let i = (u128::BITS - (us - 1).leading_zeros()) as usize;
    i.min(BUCKETS - 1)
}

/// A core whose every call is timed into a [`BusyMeter`]. It is the core to the
/// driver: hand `&mut Metered` to [`drive`](crate::drive).
pub struct Metered<'a, C: SansIo> {
    core: &'a mut C,
    meter: &'a mut BusyMeter,
}

impl<'a, C: SansIo> Metered<'a, C> {
    /// Times `core`'s calls into `meter`.
    pub fn new(core: &'a mut C, meter: &'a mut BusyMeter) -> Self {
        Self { core, meter }
    }

    fn timed<R>(&mut self, kind: Call, f: impl FnOnce(&mut C) -> R) -> R {
        let t = std::time::Instant::now();
        let r = f(self.core);
        self.meter.record(kind, t.elapsed());
        r
    }
}

impl<C: SansIo> SansIo for Metered<'_, C> {
    type Event = C::Event;
    type Job = C::Job;

    fn handle_incoming(&mut self, now: Instant, incoming: Incoming) {
        self.timed(Call::Incoming, |c| c.handle_incoming(now, incoming));
    }

    fn handle_send_error(&mut self, now: Instant, id: TxId, error: TransportError) {
        self.timed(Call::SendError, |c| c.handle_send_error(now, id, error));
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.timed(Call::Timeout, |c| c.handle_timeout(now));
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        self.timed(Call::Poll, |c| c.poll_transmit(now))
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.timed(Call::Poll, SansIo::poll_timeout)
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        self.timed(Call::Poll, SansIo::poll_event)
    }

    fn is_idle(&self) -> bool {
        self.core.is_idle()
    }

    fn poll_job(&mut self) -> Option<Self::Job> {
        self.timed(Call::Poll, SansIo::poll_job)
    }

    fn handle_job(&mut self, now: Instant, output: <Self::Job as Job>::Output) {
        self.timed(Call::Job, |c| c.handle_job(now, output));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two_microseconds() {
        assert_eq!(bucket_of(Duration::ZERO), 0);
        assert_eq!(bucket_of(Duration::from_micros(1)), 0);
        assert_eq!(bucket_of(Duration::from_micros(2)), 1);
        assert_eq!(bucket_of(Duration::from_micros(3)), 2);
        assert_eq!(bucket_of(Duration::from_micros(4)), 2);
        assert_eq!(bucket_of(Duration::from_micros(5)), 3);
        assert_eq!(bucket_of(Duration::from_millis(50)), 16);
        assert_eq!(bucket_of(Duration::from_secs(3600)), BUCKETS - 1);
        for i in 0..BUCKETS - 1 {
            let b = BusyMeter::bucket_bound(i).unwrap();
            assert_eq!(bucket_of(b), i, "bound {b:?} in its own bucket");
            assert_eq!(bucket_of(b + Duration::from_micros(1)), i + 1);
        }
        assert_eq!(BusyMeter::bucket_bound(BUCKETS - 1), None);
    }

    #[test]
    fn longest_window_and_quantiles() {
        let mut m = BusyMeter::default();
        assert_eq!(m.longest(), None);
        assert_eq!(m.quantile_bound(0.5), None);
        for _ in 0..98 {
            m.record(Call::Incoming, Duration::from_micros(3));
        }
        m.record(Call::Timeout, Duration::from_millis(3));
        assert_eq!(
            m.take_window(),
            Some((Call::Timeout, Duration::from_millis(3)))
        );
        m.record(Call::Job, Duration::from_millis(1));
        assert_eq!(m.longest(), Some((Call::Timeout, Duration::from_millis(3))));
        assert_eq!(m.take_window(), Some((Call::Job, Duration::from_millis(1))));
        assert_eq!(m.count(Call::Incoming), 98);
        assert_eq!(m.total(Call::Incoming), Duration::from_micros(294));
        assert_eq!(m.longest_of(Call::Poll), Duration::ZERO);
        assert_eq!(m.quantile_bound(0.5), Some(Duration::from_micros(4)));
        assert_eq!(m.quantile_bound(0.99), Some(Duration::from_micros(1024)));
        assert_eq!(m.quantile_bound(1.0), Some(Duration::from_micros(4096)));
    }
}
