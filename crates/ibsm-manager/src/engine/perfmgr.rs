//! The PerfMgr's counter sweeps (see [`crate::perfmgr`]): an ibsm-query [`Scrape`]
//! driven from the engine's entry points, with its own transaction layer (PerfMgt
//! TIDs are matched per class, so they never meet the SMPs'), its MADs sent only when
//! the SMP window has nothing to send.
//!
//! A counter sweep starts when PerfMgr is configured, this SM is Master, the subnet
//! has been up, no SM sweep runs and the sweep time has come; it reads the ports of the
//! fabric model in force. Losing the Master role drops a running counter sweep.

use std::collections::{BTreeMap, BTreeSet};

use ibsm_query::perf::{Scrape, ScrapeMode, ScrapeTarget};
use ibsm_transport::{Incoming, Instant, SansIo, TransportError, TxConfig, TxId};
use ibsm_wire::{MadHeaderView, MgmtClass};

use super::{Outgoing, SubnetManager};
use crate::config::SmConfig;
use crate::event::{Role, SmEvent};
use crate::perfmgr::{
    Counter, PerfMgrConfig, PerfSweepStats, PortPerf, PortSample, ThresholdExceeded,
};
use ibsm_topology::Fabric;

/// Marks the [`TxId`]s of PerfMgt MADs handed to the host, so that
/// [`SubnetManager::handle_send_error`] tells them from the SMPs' (whose ids count up
/// from 0 and never get near it).
const PERF_ID: u64 = 1 << 63;

/// The TID tag of PerfMgt queries ("PM").
const TID_HIGH: u32 = 0x504d;

/// A counter sweep in progress.
#[derive(Debug)]
struct Running {
    scrape: Scrape,
    started: Instant,
    /// Agent LID -> (node GUID, switch).
    owners: BTreeMap<u16, (u64, bool)>,
}

/// The PerfMgr's state.
#[derive(Debug, Default)]
pub(super) struct PerfMgr {
    running: Option<Running>,
    /// (node GUID, port) -> the last reading and when its sweep started.
    last: BTreeMap<(u64, u8), (Instant, PortSample)>,
    /// When the next counter sweep may start (`None`: as soon as it can).
    next: Option<Instant>,
    /// The low TID the next counter sweep starts at.
    tid_start: u32,
    /// The last finished counter sweep.
    pub(super) stats: Option<PerfSweepStats>,
}

impl SubnetManager {
    /// The counters of every port as the last counter sweep that read it found them,
    /// by (node GUID, port), with the time of that sweep's start (empty without
    /// `SmConfig::perfmgr`).
    pub fn port_counters(&self) -> impl Iterator<Item = ((u64, u8), Instant, &PortSample)> + '_ {
        self.perf.last.iter().map(|(&k, (at, s))| (k, *at, s))
    }

    /// What the last finished counter sweep did.
    #[must_use]
    pub fn perf_sweep_stats(&self) -> Option<PerfSweepStats> {
        self.perf.stats
    }

    /// Whether a counter sweep is in progress.
    #[must_use]
    pub fn is_perf_sweeping(&self) -> bool {
        self.perf.running.is_some()
    }
}

impl PerfMgr {
    /// Takes a PerfMgt answer (or a failed PerfMgt send) for the counter sweep;
    /// everything else comes back. Without PerfMgr nothing is taken, so the engine
    /// sees what it always saw.
    pub(super) fn handle_incoming(
        &mut self,
        cfg: &SmConfig,
        now: Instant,
        incoming: Incoming,
    ) -> Option<Incoming> {
        if cfg.perfmgr.is_none() {
            return Some(incoming);
        }
        let ours = match &incoming {
            Incoming::Mad(rx) => {
                rx.is_response()
                    && MadHeaderView::new_checked(&rx.mad[..])
                        .is_ok_and(|h| h.mgmt_class() == MgmtClass::PerfMgt)
            }
            Incoming::SendFailed { class, .. } => *class == u8::from(MgmtClass::PerfMgt),
        };
        if !ours {
            return Some(incoming);
        }
        // An answer after its sweep ended (or was dropped) is simply late.
        if let Some(r) = self.running.as_mut() {
            SansIo::handle_incoming(&mut r.scrape, now, incoming);
        }
        None
    }

    /// Whether `id` is a PerfMgt MAD's; if so its sweep learns the send failed.
    pub(super) fn handle_send_error(
        &mut self,
        now: Instant,
        id: TxId,
        error: TransportError,
    ) -> bool {
        if id.0 & PERF_ID == 0 {
            return false;
        }
        if let Some(r) = self.running.as_mut() {
            SansIo::handle_send_error(&mut r.scrape, now, TxId(id.0 & !PERF_ID), error);
        }
        true
    }

    /// The next PerfMgt MAD, when the SMPs have nothing to send.
    pub(super) fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        let t = self.running.as_mut()?.scrape.next_attempt(now)?;
        Some(Outgoing {
            id: Some(TxId(t.id.0 | PERF_ID)),
            addr: t.addr,
            mad: t.mad,
        })
    }

    /// The counter sweep's next deadline: its queries' timeouts while it runs, else
    /// when the next one may start (only while one could: Master, up, not sweeping).
    pub(super) fn poll_timeout(&mut self, cfg: &SmConfig, can_start: bool) -> Option<Instant> {
        cfg.perfmgr.as_ref()?;
        if let Some(r) = self.running.as_mut() {
            return r.scrape.poll_timeout();
        }
        // No deadline before the first sweep: it starts from `perf_tick` at once.
        can_start.then_some(self.next).flatten()
    }

    /// Lets the counter sweep see `now`: its timeouts, its end, the next one's start.
    pub(super) fn tick(
        &mut self,
        cfg: &SmConfig,
        now: Instant,
        master: bool,
        may_start: bool,
        fabric: Option<&Fabric>,
    ) -> Option<Vec<SmEvent>> {
        let cfg = cfg.perfmgr.as_ref()?;
        if !master {
            if self.running.take().is_some() {
                tracing::debug!("counter sweep dropped: no longer master");
            }
            return None;
        }
        if let Some(r) = self.running.as_mut() {
            if r.scrape.poll_timeout().is_some_and(|t| t <= now) {
                r.scrape.handle_timeout(now);
            }
            if r.scrape.is_done() {
                return self.finish(cfg, now);
            }
            return None;
        }
        let due = self.next.is_none_or(|t| t <= now);
        if !(due && may_start) {
            return None;
        }
        let fabric = fabric?;
        let mut targets = Vec::new();
        let mut owners = BTreeMap::new();
        for (id, node) in fabric.nodes() {
            let guid = node.guid().0;
            if node.is_switch() {
                let lid = node.lid();
                let ports: Vec<u8> = fabric.links_of(id).map(|(p, _, _)| p).collect();
                if lid == 0 || ports.is_empty() {
                    continue;
                }
                owners.insert(lid, (guid, true));
                targets.push(ScrapeTarget {
                    lid,
                    ports,
                    switch: true,
                });
            } else if !cfg.ignore_cas {
                for (p, port) in node.ports() {
                    if port.lid == 0 || !port.is_connected() {
                        continue;
                    }
                    owners.insert(port.lid, (guid, false));
                    targets.push(ScrapeTarget {
                        lid: port.lid,
                        ports: vec![p],
                        switch: false,
                    });
                }
            }
        }
        let tx = TxConfig {
            window: cfg.max_outstanding_queries,
            timeout: cfg.timeout,
            retries: cfg.retries,
            tid_high: TID_HIGH,
            assign_tids: true,
        };
        let mut scrape = Scrape::new(targets, ScrapeMode::PerPort, tx);
        scrape.set_tid_start(self.tid_start);
        tracing::debug!(agents = owners.len(), "counter sweep started");
        self.running = Some(Running {
            scrape,
            started: now,
            owners,
        });
        None
    }

    fn finish(&mut self, cfg: &PerfMgrConfig, now: Instant) -> Option<Vec<SmEvent>> {
        let r = self.running.take()?;
        let submitted = r.scrape.stats().submitted;
        let report = r.scrape.into_report();
        let mut stats = PerfSweepStats {
            agents: r.owners.len(),
            queries: report.queries,
            failures: report.failures,
            timeouts: report.timeouts,
            duration: now - r.started,
            ..PerfSweepStats::default()
        };
        let mut events = Vec::new();
        for (&(lid, port), reading) in &report.ports {
            let Some(&(guid, switch)) = r.owners.get(&lid) else {
                continue;
            };
            let (Ok(_), Some(sample)) = (&reading.counters, PortSample::from_reading(reading))
            else {
                stats.ports_failed += 1;
                continue;
            };
            stats.ports_read += 1;
            let previous = self.last.insert((guid, port), (r.started, sample));
            let (delta, interval) = match previous {
                Some((at, before)) => (Some(sample.delta_since(&before)), Some(r.started - at)),
                None => (None, None),
            };
            let mut error_rates = Vec::new();
            if let (Some(d), Some(i)) = (&delta, interval) {
                let secs = i.as_secs_f64();
                for (c, grew) in d.iter() {
                    if c.is_error() && grew > 0 && secs > 0.0 {
                        error_rates.push((c, grew as f64 / secs));
                    }
                }
                for t in &cfg.thresholds {
                    let grew = d.get(t.counter).unwrap_or(0);
                    if grew > t.max_per_sweep {
                        events.push(SmEvent::PortErrorThreshold(ThresholdExceeded {
                            guid,
                            port,
                            lid,
                            counter: t.counter,
                            delta: grew,
                            threshold: t.max_per_sweep,
                            interval: i,
                        }));
                        stats.over_threshold += 1;
                        log_over(guid, port, t.counter, grew, t.max_per_sweep);
                    }
                }
            }
            events.push(SmEvent::PortCounters(Box::new(PortPerf {
                guid,
                port,
                lid,
                switch,
                counters: sample,
                delta,
                interval,
                error_rates,
            })));
        }
        // Nodes no longer in the fabric are forgotten (OpenSM's perfmgr_rm_nodes).
        let present: BTreeSet<u64> = r.owners.values().map(|&(g, _)| g).collect();
        self.last.retain(|(g, _), _| present.contains(g));
        self.tid_start = self
            .tid_start
            .wrapping_add(u32::try_from(submitted).unwrap_or(u32::MAX))
            .wrapping_add(1);
        self.next = Some((r.started + cfg.sweep_time).max(now));
        self.stats = Some(stats);
        tracing::debug!(?stats, "counter sweep done");
        events.push(SmEvent::PerfSweepDone { stats });
        Some(events)
    }
}

impl SubnetManager {
    /// Runs the PerfMgr's counter sweep on: starts one when due (Master, the subnet
    /// up, no SM sweep running), times it out, and reports a finished one's events; a
    /// counter over its threshold also marks its port unhealthy
    /// ([`Self::report_unhealthy`]).
    pub(super) fn perf_tick(&mut self, now: Instant) {
        let master = self.smi.role == Role::Master;
        let may_start = self.routing.up_once && self.sweep.is_idle();
        let fabric = self.routing.fabric.as_ref();
        let Some(events) = self.perf.tick(&self.cfg, now, master, may_start, fabric) else {
            return;
        };
        for ev in events {
            // A counter over its threshold is trouble the health policy judges too:
            // the port is marked unhealthy (routed around, reported, taken back after
            // a quiet period), as NVIDIA's SM does with its counter checks.
            if let SmEvent::PortErrorThreshold(t) = &ev {
                let reason = crate::health::Reason::Counters {
                    counter: t.counter.perfquery_name(),
                    value: t.delta,
                    threshold: t.threshold,
                };
                let key = crate::health::PortKey::new(t.guid, t.port);
                self.event(ev);
                self.report_unhealthy(now, key, reason);
                continue;
            }
            self.event(ev);
        }
    }
}

fn log_over(guid: u64, port: u8, counter: Counter, grew: u64, max: u64) {
    tracing::warn!(
        guid = format_args!("{guid:#018x}"),
        port,
        counter = counter.perfquery_name(),
        grew,
        threshold = max,
        "port counter over its threshold"
    );
}
