//! Time as every sans-IO core sees it: [`Instant`], a monotonic point in nanoseconds.
//!
//! The SMA, the election, the SA, the transaction layer, the simulator and the SM
//! engine all take `now: Instant` and hand back deadlines as `Instant`, so a host reads
//! one clock and passes its value straight through. The type lives here, in the crate
//! every core already depends on, and needs only `core`, so `no_std` users have it too.
//! Clocks that hand out instants (`Clock`, `SystemClock`, `ManualClock`) are in
//! `ibsm-transport`.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
use core::time::Duration;

/// A point on a monotonic timeline, in nanoseconds since an arbitrary origin.
///
/// The origin is the clock's (process start for `ibsm_transport::SystemClock`, 0 for
/// virtual clocks); instants from different clocks must not be compared. Arithmetic saturates
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
        write!(f, "Instant({self})")
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

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;

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
        assert_eq!(
            format!("{:?}", Instant::from_secs(1)),
            "Instant(1.000000000s)"
        );
        assert_eq!(format!("{:?}", Instant::MAX), "Instant(never)");
    }
}
