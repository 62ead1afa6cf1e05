//! The M_Key check of IBA Vol. 1 §14.2.4 and the M_Key lease timer.
//!
//! Both are pure values with no clock: [`check`] decides what an SMP may do, and
//! [`MKeyState`] holds one port's key, protection level, lease and violation counter and
//! moves the lease countdown forward when given `now`.

use core::time::Duration;

use ibsm_wire::Instant;

/// The SMP methods the M_Key check distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckedMethod {
    /// SubnGet (0x01).
    Get,
    /// SubnSet (0x02).
    Set,
    /// SubnTrapRepress (0x07).
    TrapRepress,
}

/// Outcome of the M_Key check for one SMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The key matched (or the port's key is 0): the SMP is processed and, being
    /// correctly keyed, stops a running lease countdown.
    Keyed,
    /// The key did not match but the protection level lets a Get through; `hide_key`
    /// asks for PortInfo.M_Key (and SMInfo.SM_Key) to be returned as 0 (level 1).
    /// Such a Get neither counts as a violation nor touches the lease.
    Unkeyed {
        /// Return M_Key as 0 in GetResp(PortInfo).
        hide_key: bool,
    },
    /// The check failed: drop silently, count a violation, start the lease, raise trap 256.
    Fail,
}

/// Applies the M_Key check of IBA Vol. 1 §14.2.4.
///
/// The key matches when the port's M_Key is 0 or equals the key the SMP presents.
/// On a mismatch a SubnGet succeeds at protection levels 0 and 1 (level 1 hides the
/// key) and fails at 2 and 3; SubnSet and SubnTrapRepress fail at every level.
#[must_use]
pub const fn check(
    port_key: u64,
    protect_bits: u8,
    smp_key: u64,
    method: CheckedMethod,
) -> Verdict {
    if port_key == 0 || port_key == smp_key {
        return Verdict::Keyed;
    }
    match (method, protect_bits & 3) {
        (CheckedMethod::Get, 0) => Verdict::Unkeyed { hide_key: false },
        (CheckedMethod::Get, 1) => Verdict::Unkeyed { hide_key: true },
        _ => Verdict::Fail,
    }
}

/// The M_Key values that change only together, in one SubnSet(PortInfo), and that a
/// non-volatile store keeps across resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MKeyConfig {
    /// PortInfo.M_Key.
    pub m_key: u64,
    /// PortInfo.M_KeyProtectBits (0..=3).
    pub protect_bits: u8,
    /// PortInfo.M_KeyLeasePeriod in seconds; 0 = the lease never expires.
    pub lease_period: u16,
}

/// One port's M_Key state: configuration, violation counter and lease countdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MKeyState {
    /// Key, protection level and lease period.
    pub config: MKeyConfig,
    /// PortInfo.M_KeyViolations (saturating at 0xFFFF).
    pub violations: u16,
    /// When the running lease countdown ends; `None` = not running.
    pub lease_deadline: Option<Instant>,
}

impl MKeyState {
    /// A port with `config` after power-on or reset: no violations, no countdown.
    #[must_use]
    pub const fn new(config: MKeyConfig) -> Self {
        Self {
            config,
            violations: 0,
            lease_deadline: None,
        }
    }

    /// Lets time pass: if the countdown has reached its deadline (`now >= deadline`), the
    /// protection level falls back to 0 and the countdown stops. Returns whether it did.
    pub fn advance(&mut self, now: Instant) -> bool {
        match self.lease_deadline {
            Some(d) if now >= d => {
                self.config.protect_bits = 0;
                self.lease_deadline = None;
                true
            }
            _ => false,
        }
    }

    /// Checks an SMP (after [`Self::advance`] for the same `now`) and applies the
    /// side effects on this state: a correctly keyed SMP stops the countdown; a failure
    /// counts a violation and starts the countdown if it is not running and the period
    /// is non-zero.
    pub fn check(&mut self, now: Instant, smp_key: u64, method: CheckedMethod) -> Verdict {
        let v = check(self.config.m_key, self.config.protect_bits, smp_key, method);
        match v {
            Verdict::Keyed => self.lease_deadline = None,
            Verdict::Unkeyed { .. } => {}
            Verdict::Fail => {
                self.violations = self.violations.saturating_add(1);
                if self.lease_deadline.is_none() && self.config.lease_period != 0 {
                    self.lease_deadline =
                        Some(now + Duration::from_secs(u64::from(self.config.lease_period)));
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CheckedMethod::{Get, Set, TrapRepress};

    const SEC: Duration = Duration::from_secs(1);

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    const PORT: u64 = 0x1111;
    const WRONG: u64 = 0x2222;

    /// Every row of the table: 4 levels x 3 methods x {match, mismatch, port key 0}.
    #[test]
    fn check_table_every_row() {
        let hide = |h| Verdict::Unkeyed { hide_key: h };
        #[rustfmt::skip]
        let rows: [(u8, CheckedMethod, Verdict); 12] = [
            (0, Get, hide(false)), (0, Set, Verdict::Fail), (0, TrapRepress, Verdict::Fail),
            (1, Get, hide(true)),  (1, Set, Verdict::Fail), (1, TrapRepress, Verdict::Fail),
            (2, Get, Verdict::Fail), (2, Set, Verdict::Fail), (2, TrapRepress, Verdict::Fail),
            (3, Get, Verdict::Fail), (3, Set, Verdict::Fail), (3, TrapRepress, Verdict::Fail),
        ];
        for (prot, m, mismatch) in rows {
            assert_eq!(
                check(PORT, prot, PORT, m),
                Verdict::Keyed,
                "match {prot} {m:?}"
            );
            assert_eq!(
                check(PORT, prot, WRONG, m),
                mismatch,
                "mismatch {prot} {m:?}"
            );
            assert_eq!(check(PORT, prot, 0, m), mismatch, "zero key {prot} {m:?}");
            assert_eq!(
                check(0, prot, WRONG, m),
                Verdict::Keyed,
                "port key 0 {prot} {m:?}"
            );
            assert_eq!(check(0, prot, 0, m), Verdict::Keyed, "both 0 {prot} {m:?}");
        }
    }

    fn protected(lease: u16) -> MKeyState {
        MKeyState::new(MKeyConfig {
            m_key: PORT,
            protect_bits: 2,
            lease_period: lease,
        })
    }

    #[test]
    fn lease_expires_exactly_at_the_period() {
        let mut s = protected(5);
        assert_eq!(s.check(at(1000), WRONG, Get), Verdict::Fail);
        assert_eq!(s.lease_deadline, Some(at(1000 + 5_000_000_000)));
        assert!(!s.advance(at(1000 + 5_000_000_000 - 1)));
        assert_eq!(s.config.protect_bits, 2);
        assert!(s.advance(at(1000 + 5_000_000_000)));
        assert_eq!(s.config.protect_bits, 0);
        assert_eq!(s.lease_deadline, None);
        // Key and period are kept; only the protection level lapses.
        assert_eq!((s.config.m_key, s.config.lease_period), (PORT, 5));
    }

    #[test]
    fn keyed_smp_one_tick_before_expiry_stops_the_countdown() {
        let mut s = protected(5);
        s.check(Instant::ZERO, WRONG, Set);
        let deadline = Instant::ZERO + 5 * SEC;
        let just_before = at(deadline.as_nanos() - 1);
        assert!(!s.advance(just_before));
        assert_eq!(s.check(just_before, PORT, Get), Verdict::Keyed);
        assert_eq!(s.lease_deadline, None);
        assert!(!s.advance(deadline));
        assert!(!s.advance(Instant::MAX));
        assert_eq!(s.config.protect_bits, 2);
    }

    #[test]
    fn period_zero_never_expires() {
        let mut s = protected(0);
        for i in 0..3 {
            assert_eq!(s.check(at(i), WRONG, Get), Verdict::Fail);
        }
        assert_eq!(s.lease_deadline, None);
        assert!(!s.advance(Instant::MAX));
        assert_eq!(s.config.protect_bits, 2);
        assert_eq!(s.violations, 3);
    }

    #[test]
    fn running_countdown_is_not_restarted() {
        let mut s = protected(1);
        s.check(at(10), WRONG, Set);
        s.check(at(20), WRONG, Set);
        assert_eq!(s.lease_deadline, Some(at(10) + SEC));
    }

    #[test]
    fn unkeyed_get_does_not_touch_the_lease() {
        let mut s = protected(1);
        s.check(at(10), WRONG, Set);
        s.config.protect_bits = 1;
        assert_eq!(
            s.check(at(20), WRONG, Get),
            Verdict::Unkeyed { hide_key: true }
        );
        assert_eq!(s.lease_deadline, Some(at(10) + SEC));
        assert_eq!(s.violations, 1);
    }

    #[test]
    fn violations_saturate() {
        let mut s = protected(0);
        s.violations = 0xFFFE;
        s.check(Instant::ZERO, WRONG, Set);
        s.check(Instant::ZERO, WRONG, Set);
        assert_eq!(s.violations, 0xFFFF);
    }
}
