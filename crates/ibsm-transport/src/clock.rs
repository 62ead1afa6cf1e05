//! Time as the sans-IO cores see it: a monotonic instant in nanoseconds, and the
//! [`Clock`] trait that hands it out on real or virtual time.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
use core::time::Duration;

/// A point on a monotonic timeline, in nanoseconds since an arbitrary origin.
///
/// The origin is the clock's (process start for [`SystemClock`], 0 for virtual
/// clocks); instants from different clocks must not be compared. Arithmetic saturates
/// instead of wrapping, so "never" can be written as [`Instant::MAX`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The origin of the timeline.
    pub const ZERO: Self = Self(0);
    /// The far future: a deadline that never comes.
    pub const MAX: Self = Self(u64::MAX);

    /// The instant `nanos` nanoseconds after the origin.
    #[must_use]
    pub const fn from_nanos(nanos: u64) -> Self {
        Self(nanos)
    }

    /// The instant `micros` microseconds after the origin.
    #[must_use]
    pub const fn from_micros(micros: u64) -> Self {
        Self(micros.saturating_mul(1_000))
    }

    /// The instant `millis` milliseconds after the origin.
    #[must_use]
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis.saturating_mul(1_000_000))
    }

    /// The instant `secs` seconds after the origin.
    #[must_use]
    pub const fn from_secs(secs: u64) -> Self {
        Self(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the origin.
    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    #[must_use]
    pub const fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    #[must_use]
    pub fn saturating_add(self, d: Duration) -> Self {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(n))
    }
}

impl Add<Duration> for Instant {
    type Output = Self;
    fn add(self, d: Duration) -> Self {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = self.saturating_add(d);
    }
}

impl Sub for Instant {
    type Output = Duration;
    fn sub(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Self::MAX {
            return f.write_str("Instant(never)");
        }
        write!(
            f,
            "Instant({}.{:09}s)",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Self::MAX {
            return f.write_str("never");
        }
        write!(
            f,
            "{}.{:09}s",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

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
        Instant(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

/// Virtual time that moves only when told to; for tests and simulations.
///
/// Interior mutability lets a shared reference both read and advance it.
#[derive(Debug, Default, Clone)]
pub struct ManualClock {
    now: core::cell::Cell<u64>,
}

impl ManualClock {
    /// A clock at `start`.
    #[must_use]
    pub fn new(start: Instant) -> Self {
        Self {
            now: core::cell::Cell::new(start.0),
        }
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.set(Instant(self.now.get()).saturating_add(d));
    }

    /// Moves the clock to `t`; time never goes backwards, so an earlier `t` is ignored.
    pub fn set(&self, t: Instant) {
        if t.0 > self.now.get() {
            self.now.set(t.0);
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        Instant(self.now.get())
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
    fn arithmetic_saturates() {
        let t = Instant::from_millis(5);
        assert_eq!(t.as_nanos(), 5_000_000);
        assert_eq!(t + Duration::from_micros(1), Instant::from_nanos(5_001_000));
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(t - Instant::ZERO, Duration::from_millis(5));
        assert_eq!(format!("{}", Instant::from_secs(60)), "60.000000000s");
        assert_eq!(format!("{}", Instant::MAX), "never");
    }

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
