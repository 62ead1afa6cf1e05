//! Configuration: the election's knobs, named after OpenSM's options.

use core::time::Duration;

use crate::error::ElectionConfigError;

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
    /// OpenSM's `polling_retry_number` (default 4) with OpenSM 3.3's count: the Master is
    /// declared lost after `polling_retries + 1` unanswered polls in a row. (OpenSM 3.3
    /// counts them at its poll ticks, `retry_number > polling_retry_number` in
    /// `osm_sm_state_mgr_polling_callback`; opensm.conf's words, "number of failing
    /// polls", are one fewer: ibsmd's `--polling-retries-as-failures`.)
    ///
    /// The counting rule, in *rounds*:
    ///
    /// * the Standby polls, one SubnGet(SMInfo), every `polling_timeout` (counted from
    ///   the last Get it sent);
    /// * a round whose Gets got no answer within [`Config::poll_answer_time`] failed, and
    ///   is confirmed at once by a re-probe: a new round of [`Config::reprobe_gets`]
    ///   Gets sent together, each with its own TID, instead of waiting a polling period;
    /// * a round also fails when an answer shows no live Master (another GUID, an error
    ///   status, a key of another group, a state other than Master (or a higher SM),
    ///   or an ActCount that did not move, see below); the next round is then the next
    ///   regular poll, since the path answers;
    /// * `polling_retries + 1` failed rounds in a row declare the Master lost: a silent
    ///   one `polling_timeout + (polling_retries + 1) × poll_answer_time` after the Get
    ///   of its last answer at the latest ([`Config::worst_case_detection`]), and
    ///   `(polling_retries + 1) × poll_answer_time` after its death at the soonest;
    /// * an answer to any Get sent since the last live answer counts, matched by its
    ///   TID, however late: a live one clears the count; a bad one fails only its own
    ///   round, and only while that round is open (never counted twice).
    ///
    /// ActCount: a live Master moves it at least every half polling period (its
    /// heartbeat), so an answer whose count equals that of an answer which came at
    /// least half a polling period before its Get went out shows a hung Master (its SMA
    /// serving a stale copy); nearer answers are not compared. Since a hung SMA
    /// answers at once, such rounds are never re-probed: a hung Master is lost at the
    /// answer to the `polling_retries + 1`-th regular poll whose count stood still, at
    /// most `(polling_retries + 2) × polling_timeout` plus two one-way latencies after
    /// it hung (the first poll after the hang may still show the count moved since the
    /// last answer).
    ///
    /// Robustness: with each SMP lost independently with probability `x`, a Get is
    /// unanswered with `q = 1 - (1 - x)²`, and a live Master is declared lost by a
    /// streak that begins at a poll with probability `q × q^(reprobe_gets ×
    /// polling_retries)`. At 2 % loss, 500 ms polls, `polling_retries` 2 and 3 Gets a
    /// re-probe: `q^7 = 1.5e-10` a poll, 1.1e-6 an hour (with single-Get re-probes, `q^3`:
    /// 0.45 an hour). Re-probes sent together do not help against loss that comes in
    /// bursts longer than their answer time.
    pub polling_retries: u32,
    /// SubnGet(SMInfo) sent together, each with its own TID, to re-probe a Master
    /// whose last poll or re-probe went unanswered (default 3; at least 1). Each raises
    /// the power of the SMP loss rate a false "Master lost" needs by `polling_retries`
    /// at no cost in detection time.
    pub reprobe_gets: u32,
    /// Time to wait for the response to a probe, HANDOVER, ACKNOWLEDGE or control Set
    /// before resending it, and for the answer to a poll or re-probe before counting its
    /// round failed (at most `polling_timeout` for those; OpenSM `transaction_timeout`,
    /// default 200 ms).
    pub transaction_timeout: Duration,
    /// Resends of a probe or Set before giving up (OpenSM `transaction_retries`, default 3).
    pub transaction_retries: u32,
    /// How often a Master increments ActCount even when it sends nothing. Must be at
    /// most half of the Standbys' `polling_timeout`: they compare the counts of answers
    /// that far apart (see `polling_retries`). Default: a quarter of `polling_timeout`.
    pub heartbeat_interval: Duration,
    /// Upper 32 bits of every TransactionID this machine uses; the lower 32 count up.
    /// Responses are matched on the lower 32 bits only (kernels and ibsim overwrite the
    /// upper half).
    pub tid_high: u32,
}

impl Config {
    /// OpenSM 3.3's defaults: priority 0, SM_Key 1 (OpenSM's default `sm_key`), polls
    /// every 10 s, 4 retries, 200 ms × 3 transactions. A dead Master is noticed 1.0 to
    /// 11.0 s after it died (the first unanswered poll and 4 re-probes, 200 ms each;
    /// OpenSM 3.3 itself: 50 to 60 s, at the tick after a 5th unanswered poll).
    #[must_use]
    pub fn opensm_defaults(guid: u64) -> Self {
        Self::with_polling(guid, Duration::from_secs(10), 4)
    }

    /// A fast-failover profile: polls every 200 ms, 2 retries, 50 ms transactions. A
    /// dead Master is noticed 150 to 350 ms after it died (three unanswered rounds).
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
            reprobe_gets: 3,
            transaction_timeout: Duration::from_millis(200),
            transaction_retries: 3,
            heartbeat_interval: (polling_timeout / 4).max(Duration::from_micros(1)),
            tid_high: 0,
        }
    }

    /// The time a Standby needs, at most, to declare a silent Master lost:
    /// `polling_timeout + (polling_retries + 1) × poll_answer_time` after it sent the
    /// Get of the Master's last answer (the next poll comes a period later, then every
    /// round fails one answer time after it went out).
    #[must_use]
    pub fn worst_case_detection(&self) -> Duration {
        self.polling_timeout + self.poll_answer_time() * self.polling_rounds()
    }

    /// Failed rounds in a row that declare the Master lost: `polling_retries + 1`.
    #[must_use]
    pub fn polling_rounds(&self) -> u32 {
        self.polling_retries.saturating_add(1)
    }

    /// How long a poll or re-probe waits for an answer before its round fails:
    /// `transaction_timeout`, but never longer than `polling_timeout`.
    #[must_use]
    pub fn poll_answer_time(&self) -> Duration {
        self.transaction_timeout.min(self.polling_timeout)
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`ElectionConfigError`] naming the first bad field.
    pub fn validate(&self) -> Result<(), ElectionConfigError> {
        if self.priority > 15 {
            return Err(ElectionConfigError::Priority(self.priority));
        }
        if self.guid == 0 {
            return Err(ElectionConfigError::ZeroGuid);
        }
        if self.polling_timeout.is_zero() {
            return Err(ElectionConfigError::ZeroDuration("polling_timeout"));
        }
        if self.transaction_timeout.is_zero() {
            return Err(ElectionConfigError::ZeroDuration("transaction_timeout"));
        }
        if self.heartbeat_interval.is_zero() {
            return Err(ElectionConfigError::ZeroDuration("heartbeat_interval"));
        }
        if self.reprobe_gets == 0 {
            return Err(ElectionConfigError::ZeroCount("reprobe_gets"));
        }
        Ok(())
    }
}
