//! Clocks: the [`Clock`] trait that hands out [`Instant`]s on real or virtual time.
//!
//! [`Instant`] itself lives in `ibsm-wire` (every sans-IO core takes it) and is
//! re-exported here.

use core::time::Duration;

pub use ibsm_wire::Instant;

/// Something that tells the time.
///
/// Drivers read it; sans-IO cores never do (they are handed `now`).
pub trait Clock {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// Real monotonic time (`std::time::Instant`), origin at construction.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: std::time::Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    #[must_use]
    pub fn new() -> Self {
        Self {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        let d = self.origin.elapsed();
        Instant::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

/// Virtual time that moves only when told to; for tests and simulations.
///
/// Interior mutability lets a shared reference both read and advance it.
#[derive(Debug, Default, Clone)]
pub struct ManualClock {
    now: core::cell::Cell<Instant>,
}

impl ManualClock {
    /// A clock at `start`.
    #[must_use]
    pub fn new(start: Instant) -> Self {
        Self {
            now: core::cell::Cell::new(start),
        }
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.set(self.now.get() + d);
    }

    /// Moves the clock to `t`; time never goes backwards, so an earlier `t` is ignored.
    pub fn set(&self, t: Instant) {
        if t > self.now.get() {
            self.now.set(t);
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.now.get()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Instant {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_is_monotonic() {
        let c = ManualClock::new(Instant::from_secs(1));
        c.advance(Duration::from_secs(2));
        assert_eq!(c.now(), Instant::from_secs(3));
        c.set(Instant::from_secs(2));
        assert_eq!(c.now(), Instant::from_secs(3));
        let r = &c;
        assert_eq!(r.now(), Instant::from_secs(3));
    }

    #[test]
    fn system_clock_moves_forward() {
        let c = SystemClock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }
}
