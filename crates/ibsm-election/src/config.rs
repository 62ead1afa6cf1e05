//! Configuration: the election's knobs, named after OpenSM's options.

use core::time::Duration;

use crate::error::ConfigError;

/// How one SM takes part in the election.
///
/// Field names follow the project convention of documenting the OpenSM option beside
/// each one. [`Config::opensm_defaults`] gives OpenSM 3.3's values; [`Config::fast`] a
/// sub-second failover profile.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Port GUID of this SM (SMInfo.GUID; OpenSM `guid`). Never 0.
    pub guid: u64,
    /// SMInfo.Priority, 0..=15 (OpenSM `sm_priority`, default 0).
    pub priority: u8,
    /// SMInfo.SM_Key (OpenSM `sm_key`). 0 means "no key configured": every peer is
    /// accepted and nothing is hidden, as in the spec.
    pub sm_key: u64,
    /// M_Key written into every SMInfo SMP this SM sends (OpenSM sends the target port's
    /// M_Key; hosts that know per-port keys patch bytes 24..32 of [`crate::Transmit::mad`]).
    pub m_key: u64,
    /// Period of the Standby's SubnGet(SMInfo) polls of the Master
    /// (OpenSM `sminfo_polling_timeout`, default 10 s). Sub-second values are allowed.
    pub polling_timeout: Duration,
    /// Consecutive failed polls that declare the Master lost (OpenSM
    /// `polling_retry_number`, default 4; 0 counts as 1), as opensm.conf documents the
    /// option ("number of failing polls of remote SM that declares it dead"). OpenSM
    /// 3.3's code waits for one failed poll more; set this one higher for its timing.
    /// A poll fails when it is unanswered after `transaction_timeout` (at most one
    /// period; it is not resent: the next poll is the retry), or answered by something
    /// that is no longer a live Master (wrong GUID, wrong key, state not Master, or an
    /// ActCount that did not advance). An answer that comes late, but before the next
    /// poll, from a live Master still clears the count.
    pub polling_retries: u32,
    /// Time to wait for the response to a probe, HANDOVER, ACKNOWLEDGE or control Set
    /// before resending it, and for the answer to a poll before counting it failed
    /// (OpenSM `transaction_timeout`, default 200 ms).
    pub transaction_timeout: Duration,
    /// Resends of a probe or Set before giving up (OpenSM `transaction_retries`, default 3).
    pub transaction_retries: u32,
    /// How often a Master increments ActCount even when it sends nothing. Must be
    /// shorter than the Standbys' `polling_timeout`, so that a live Master always shows
    /// progress between two polls. Default: a quarter of `polling_timeout`.
    pub heartbeat_interval: Duration,
    /// Upper 32 bits of every TransactionID this machine uses; the lower 32 count up.
    /// Responses are matched on the lower 32 bits only (kernels and ibsim overwrite the
    /// upper half).
    pub tid_high: u32,
}

impl Config {
    /// OpenSM 3.3's defaults: priority 0, SM_Key 1 (OpenSM's default `sm_key`), polls
    /// every 10 s, 4 retries, 200 ms × 3 transactions. A dead Master is noticed 30.2 to
    /// 40.2 s after it died (the 4th failed poll, 200 ms after it was sent; OpenSM 3.3
    /// itself: 50 to 60 s, at the tick after a 5th).
    #[must_use]
    pub fn opensm_defaults(guid: u64) -> Self {
        Self::with_polling(guid, Duration::from_secs(10), 4)
    }

    /// A fast-failover profile: polls every 200 ms, 2 retries, 50 ms transactions. A
    /// dead Master is noticed 250 to 450 ms after it died.
    #[must_use]
    pub fn fast(guid: u64) -> Self {
        let mut c = Self::with_polling(guid, Duration::from_millis(200), 2);
        c.transaction_timeout = Duration::from_millis(50);
        c
    }

    /// OpenSM's defaults with another polling period and retry count; the heartbeat
    /// follows the period.
    #[must_use]
    pub fn with_polling(guid: u64, polling_timeout: Duration, polling_retries: u32) -> Self {
        Self {
            guid,
            priority: 0,
            sm_key: 1,
            m_key: 0,
            polling_timeout,
            polling_retries,
            transaction_timeout: Duration::from_millis(200),
            transaction_retries: 3,
            heartbeat_interval: (polling_timeout / 4).max(Duration::from_micros(1)),
            tid_high: 0,
        }
    }

    /// The time a Standby needs, at most, to declare a silent Master lost:
    /// `polling_retries × polling_timeout + min(transaction_timeout, polling_timeout)`
    /// after the Master's last answer (0 retries counts as 1).
    #[must_use]
    pub fn worst_case_detection(&self) -> Duration {
        self.polling_timeout * self.polling_retries.max(1)
            + self.transaction_timeout.min(self.polling_timeout)
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first bad field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.priority > 15 {
            return Err(ConfigError::Priority(self.priority));
        }
        if self.guid == 0 {
            return Err(ConfigError::ZeroGuid);
        }
        if self.polling_timeout.is_zero() {
            return Err(ConfigError::ZeroDuration("polling_timeout"));
        }
        if self.transaction_timeout.is_zero() {
            return Err(ConfigError::ZeroDuration("transaction_timeout"));
        }
        if self.heartbeat_interval.is_zero() {
            return Err(ConfigError::ZeroDuration("heartbeat_interval"));
        }
        Ok(())
    }
}
