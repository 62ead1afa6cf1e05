//! The engine's deadlines in one table. The engine's own timers (the periodic sweep,
//! the automatic rebalance) are set and cleared by the stages that own them; the
//! deadlines its parts keep themselves (transactions, election, SA) are copied in after
//! every entry point (`SubnetManager::refresh_timers`), so `poll_timeout` reads the
//! table and takes `&self`.

use ibsm_transport::Instant;

/// One deadline of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timer {
    /// The next periodic (light, or heavy after a lossy sweep) sweep.
    Sweep,
    /// The automatic rebalance after re-routed routes were quiet for
    /// `SmConfig::rebalance_after`.
    Rebalance,
    /// The transaction layer's earliest retry or timeout.
    Transactions,
    /// The election's next poll, probe timeout or handover step.
    Election,
    /// The SA's next RMPP or Report resend.
    Admin,
    /// The PerfMgr's next query timeout, or its next counter sweep.
    PerfMgr,
    /// The earliest end of an unhealthy port's quiet period (`health.rs`).
    Health,
    /// The next slice of the Program stage's planning (`program.rs`): due at once.
    Program,
}

const ALL: [Timer; 8] = [
    Timer::Sweep,
    Timer::Rebalance,
    Timer::Transactions,
    Timer::Election,
    Timer::Admin,
    Timer::PerfMgr,
    Timer::Health,
    Timer::Program,
];

/// Every deadline, `None` when unset.
#[derive(Debug, Default)]
pub(super) struct Timers([Option<Instant>; ALL.len()]);

impl Timers {
    pub(super) fn get(&self, t: Timer) -> Option<Instant> {
        self.0[t as usize]
    }

    pub(super) fn set(&mut self, t: Timer, at: Option<Instant>) {
        self.0[t as usize] = at;
    }

    pub(super) fn clear(&mut self, t: Timer) {
        self.set(t, None);
    }

    /// Whether `t` is set and has come.
    pub(super) fn due(&self, t: Timer, now: Instant) -> bool {
        self.get(t).is_some_and(|at| at <= now)
    }

    /// The earliest deadline among the timers `counts` accepts.
    pub(super) fn next(&self, counts: impl Fn(Timer) -> bool) -> Option<Instant> {
        ALL.into_iter()
            .filter(|&t| counts(t))
            .filter_map(|t| self.get(t))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_is_the_earliest_counted_deadline() {
        let mut t = Timers::default();
        assert_eq!(t.next(|_| true), None);
        t.set(Timer::Sweep, Some(Instant::from_secs(1)));
        t.set(Timer::Election, Some(Instant::from_secs(3)));
        t.set(Timer::Admin, Some(Instant::from_secs(2)));
        assert_eq!(t.next(|_| true), Some(Instant::from_secs(1)));
        assert_eq!(t.next(|x| x != Timer::Sweep), Some(Instant::from_secs(2)));
        assert!(t.due(Timer::Admin, Instant::from_secs(2)));
        assert!(!t.due(Timer::Election, Instant::from_secs(2)));
        t.clear(Timer::Sweep);
        assert!(!t.due(Timer::Sweep, Instant::MAX));
        assert_eq!(t.next(|_| true), Some(Instant::from_secs(2)));
    }
}
