//! The performance manager (OpenSM's PerfMgr): as Master, after SUBNET UP, the engine
//! reads every port's counters every [`PerfMgrConfig::sweep_time`] with ibsm-query's
//! [`Scrape`](ibsm_query::perf::Scrape) (each agent's ClassPortInfo first, then
//! PortCounters and, where the agent has it, PortCountersExtended) and reports what it
//! found as events:
//!
//! * [`SmEvent::PortCounters`](crate::SmEvent::PortCounters) per port per sweep: the
//!   counters, what they grew by since the port's previous reading and the error rates
//!   per second ([`PortPerf`]);
//! * [`SmEvent::PortErrorThreshold`](crate::SmEvent::PortErrorThreshold) for every
//!   counter of a port that grew by more than its [`Threshold`] in one sweep
//!   ([`ThresholdExceeded`]): the input of an unhealthy-port policy;
//! * [`SmEvent::PerfSweepDone`](crate::SmEvent::PerfSweepDone) once per sweep
//!   ([`PerfSweepStats`]).
//!
//! PerfMgt MADs (class 0x04, over QP1 by LID) go out only when the SMP window has
//! nothing to send, at most [`PerfMgrConfig::max_outstanding_queries`] at once, so
//! they never delay a sweep; the counter sweep does not start while an SM sweep runs.

use std::time::Duration;

pub use ibsm_query::counters::{Counter, PortSample};

/// PerfMgr settings (OpenSM's `perfmgr_*` options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfMgrConfig {
    /// Time between the starts of two counter sweeps (`perfmgr_sweep_time_s`, 180 s).
    pub sweep_time: Duration,
    /// PerfMgt queries in flight at once (`perfmgr_max_outstanding_queries`, 500).
    pub max_outstanding_queries: usize,
    /// Read switch ports only, not CAs and routers (`perfmgr_ignore_cas`, off).
    pub ignore_cas: bool,
    /// How long to wait for each answer, and re-sends before a query fails (OpenSM's
    /// transaction defaults: 200 ms, 3).
    pub timeout: Duration,
    /// Re-sends of an unanswered query.
    pub retries: u32,
    /// Counter growth per sweep above which a port is reported
    /// ([`ThresholdExceeded`]). `perfmgr_xmit_wait_log` with
    /// `perfmgr_xmit_wait_threshold` is one for [`Counter::XmitWait`].
    pub thresholds: Vec<Threshold>,
}

impl Default for PerfMgrConfig {
    fn default() -> Self {
        Self {
            sweep_time: Duration::from_secs(180),
            max_outstanding_queries: 500,
            ignore_cas: false,
            timeout: Duration::from_millis(200),
            retries: 3,
            thresholds: Vec::new(),
        }
    }
}

impl PerfMgrConfig {
    /// The threshold of `counter`, if one is set.
    #[must_use]
    pub fn threshold(&self, counter: Counter) -> Option<u64> {
        self.thresholds
            .iter()
            .find(|t| t.counter == counter)
            .map(|t| t.max_per_sweep)
    }

    /// Sets (or replaces) the threshold of `counter`; `None` removes it.
    pub fn set_threshold(&mut self, counter: Counter, max_per_sweep: Option<u64>) {
        self.thresholds.retain(|t| t.counter != counter);
        if let Some(max_per_sweep) = max_per_sweep {
            self.thresholds.push(Threshold {
                counter,
                max_per_sweep,
            });
        }
    }
}

/// A counter's most growth in one counter sweep before its port is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    /// The counter.
    pub counter: Counter,
    /// Growth since the port's previous reading that is still fine.
    pub max_per_sweep: u64,
}

/// One port's reading in a counter sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct PortPerf {
    /// Node GUID.
    pub guid: u64,
    /// Port number.
    pub port: u8,
    /// The LID its agent answered at (a switch's port 0 LID).
    pub lid: u16,
    /// Whether the node is a switch.
    pub switch: bool,
    /// The counters as read.
    pub counters: PortSample,
    /// Growth since the port's previous reading (`None` at its first).
    pub delta: Option<PortSample>,
    /// Time since the previous reading on the transport's clock.
    pub interval: Option<Duration>,
    /// Every error counter that grew, as errors per second over `interval`.
    pub error_rates: Vec<(Counter, f64)>,
}

/// A counter of a port that grew by more than its threshold in one counter sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThresholdExceeded {
    /// Node GUID.
    pub guid: u64,
    /// Port number.
    pub port: u8,
    /// The LID its agent answered at.
    pub lid: u16,
    /// The counter.
    pub counter: Counter,
    /// Its growth since the previous reading.
    pub delta: u64,
    /// The threshold it passed.
    pub threshold: u64,
    /// Time since the previous reading.
    pub interval: Duration,
}

/// What one counter sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfSweepStats {
    /// Agents asked (switches and, unless `ignore_cas`, CA ports).
    pub agents: usize,
    /// Ports whose counters were read.
    pub ports_read: usize,
    /// Ports whose PortCounters could not be read.
    pub ports_failed: usize,
    /// PerfMgt queries sent (first sends, not retries).
    pub queries: u64,
    /// Queries that failed; of those, timeouts.
    pub failures: u64,
    /// Of the failures, timeouts.
    pub timeouts: u64,
    /// Threshold reports of this sweep.
    pub over_threshold: usize,
    /// The sweep's time on the transport's clock.
    pub duration: Duration,
}
