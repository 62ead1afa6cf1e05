//! `ibsm-exporter`'s parts that are not I/O: one collection of the fabric
//! ([`collect`]: discovery, then one scrape of every switch port and, with `hca`, every
//! CA port), its exposition ([`render`]: treydock/infiniband_exporter's names and
//! labels), and the [`ScrapeCache`] that lets concurrent HTTP requests share one
//! collection and holds its answer for `--min-interval`.
//!
//! A port whose counters could not be read is left out of the counter families and
//! listed instead: a `warn` log line and one `infiniband_exporter_port_collect_error`
//! sample (labels `collector`, `guid`, `port`, `lid`, `error`); every other port is
//! exported as usual, error counters at zero included.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ibsm_query::counters::{Counter, PortSample};
use ibsm_query::discover::{Discovered, Discovery};
use ibsm_query::perf::{PerfError, Scrape, ScrapeMode, ScrapeReport, ScrapeTarget};
use ibsm_query::smp::SmpError;
use ibsm_transport::{Transport, TransportError};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::{Names, ToolError, TxArgs, run};

/// What one collection reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Select {
    /// Switch ports (the `switch` collector).
    pub switches: bool,
    /// CA ports (the `hca` collector).
    pub hcas: bool,
}

/// One collection: the fabric as discovered and its counters.
#[derive(Debug, Clone)]
pub struct Collected {
    /// The discovered fabric.
    pub found: Discovered,
    /// The counters of the selected ports.
    pub report: ScrapeReport,
    /// Which LIDs were scraped, with their node (index in `found.nodes`) and whether it
    /// is a switch.
    pub targets: BTreeMap<u16, (usize, bool)>,
    /// Wall time of the discovery.
    pub discovery: Duration,
    /// Wall time of the scrape.
    pub scrape: Duration,
    /// Whether the discovery finished before its time limit.
    pub discovery_finished: bool,
}

/// Discovers the fabric behind `port` and reads the selected ports' counters, both
/// with `tx`'s timeout, retries and window; each stage gives up after `limit`.
/// Routes nobody answered are logged (`warn`), and so is every port whose counters
/// could not be read.
///
/// # Errors
/// [`ToolError::Transport`] when the transport fails; an unanswered query is not an
/// error (it is in the result).
pub fn collect<T: Transport>(
    port: &mut T,
    select: Select,
    tx: &TxArgs,
    limit: Duration,
) -> Result<Collected, ToolError> {
    let t0 = Instant::now();
    let mut walk = Discovery::new(tx.smp(0));
    run(&mut walk, port, limit, "discovery")?;
    let discovery_finished = walk.is_done();
    let found = walk.into_found();
    let discovery = t0.elapsed();
    for (path, e) in &found.unreachable {
        tracing::warn!(route = %path, error = %e, "discovery: route not answered");
    }
    if !discovery_finished {
        tracing::warn!(limit = ?limit, "discovery: time limit reached, the fabric is partial");
    }
    let mut targets = BTreeMap::new();
    let mut list = Vec::new();
    for (i, t) in ScrapeTarget::every_port(&found) {
        if (t.switch && select.switches) || (!t.switch && select.hcas) {
            targets.insert(t.lid, (i, t.switch));
            list.push(t);
        }
    }
    let t1 = Instant::now();
    let mut scrape = Scrape::new(list, ScrapeMode::PerPort, tx.tx());
    run(&mut scrape, port, limit, "scrape")?;
    let report = scrape.into_report();
    let scrape = t1.elapsed();
    let collected = Collected {
        found,
        report,
        targets,
        discovery,
        scrape,
        discovery_finished,
    };
    for f in collected.port_failures() {
        tracing::warn!(
            collector = f.collector,
            guid = %format_args!("{:#018x}", f.guid),
            port = f.port,
            lid = f.lid,
            error = %f.error,
            "port counters not read"
        );
    }
    Ok(collected)
}

/// A port whose counters could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortFailure {
    /// `switch` or `hca`.
    pub collector: &'static str,
    /// The switch's node GUID, or the CA port's GUID (the `guid` label of its counters).
    pub guid: u64,
    /// The port number.
    pub port: u8,
    /// The LID it was asked at.
    pub lid: u16,
    /// Why.
    pub error: PerfError,
}

/// The `error` label of a failure.
fn error_kind(e: &PerfError) -> &'static str {
    match e {
        PerfError::Timeout { .. } => "timeout",
        PerfError::Status { .. } => "status",
        PerfError::Malformed { .. } => "malformed",
        PerfError::Transport {
            error: TransportError::Unreachable { .. },
            ..
        } => "unreachable",
        _ => "transport",
    }
}

impl Collected {
    fn collector(switch: bool) -> &'static str {
        if switch { "switch" } else { "hca" }
    }

    /// The `guid` label of a port of node `i`: a switch's node GUID, a CA port's GUID.
    fn port_guid(&self, i: usize, switch: bool, port: u8) -> u64 {
        let n = &self.found.nodes[i];
        if switch {
            n.info.node_guid
        } else {
            n.ports.get(usize::from(port)).map_or(0, |p| p.guid)
        }
    }

    /// Every port whose PortCounters could not be read (their PortCountersExtended
    /// failing alone leaves the 32-bit counters, which are exported).
    #[must_use]
    pub fn port_failures(&self) -> Vec<PortFailure> {
        let mut out = Vec::new();
        for (&(lid, port), reading) in &self.report.ports {
            let Some(&(i, switch)) = self.targets.get(&lid) else {
                continue;
            };
            if let Err(e) = &reading.counters {
                out.push(PortFailure {
                    collector: Self::collector(switch),
                    guid: self.port_guid(i, switch, port),
                    port,
                    lid,
                    error: e.clone(),
                });
            }
        }
        out
    }

    /// (errors, timeouts) of one collector: failed ClassPortInfo, PortCounters and
    /// PortCountersExtended queries of its targets.
    fn failures(&self, switch: bool) -> (u64, u64) {
        let mut errors = 0u64;
        let mut timeouts = 0u64;
        let mut count = |e: &PerfError| {
            errors += 1;
            if matches!(e, PerfError::Timeout { .. }) {
                timeouts += 1;
            }
        };
        for (lid, cpi) in &self.report.agents {
            if let (Some((_, s)), Err(e)) = (self.targets.get(lid), cpi) {
                if *s == switch {
                    count(e);
                }
            }
        }
        for ((lid, _), r) in &self.report.ports {
            if self.targets.get(lid).is_some_and(|&(_, s)| s == switch) {
                if let Err(e) = &r.counters {
                    count(e);
                }
                if let Some(Err(e)) = &r.extended {
                    count(e);
                }
            }
        }
        (errors, timeouts)
    }
}

type Labels = Vec<(String, String)>;

fn label(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect()
}

fn gauge_family(reg: &mut Registry, name: &str, help: &str) -> Family<Labels, Gauge> {
    let f = Family::<Labels, Gauge>::default();
    reg.register(name, help, f.clone());
    f
}

fn count(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The exposition of `c`: for each selected collector its port counter families
/// (`infiniband_{switch,hca}_port_*_total{guid,port}`), `_info` and `_uplink_info`;
/// then `infiniband_exporter_collect_errors`, `_collect_timeouts` and
/// `_collector_duration_seconds` per collector (`ibnetdiscover`, `switch`, `hca`, as
/// infiniband_exporter names them), `infiniband_exporter_port_collect_error` per port
/// not read, and `infiniband_exporter_scrape_duration_seconds` (the whole
/// collection).
///
/// # Errors
/// [`ToolError::Failed`] when the text cannot be encoded.
pub fn render(c: &Collected, select: Select, names: &Names) -> Result<String, ToolError> {
    let mut reg = Registry::default();
    let found = &c.found;
    let name_of = |i: usize| -> String {
        let n = &found.nodes[i];
        names.name(n.info.node_guid, n.description.as_bytes())
    };
    for (kind, on, switch) in [
        ("switch", select.switches, true),
        ("hca", select.hcas, false),
    ] {
        if !on {
            continue;
        }
        let info = gauge_family(
            &mut reg,
            &format!("infiniband_{kind}_info"),
            &format!("Infiniband {kind} information"),
        );
        let uplinks = gauge_family(
            &mut reg,
            &format!("infiniband_{kind}_uplink_info"),
            &format!("Infiniband {kind} uplink information"),
        );
        let nodes: BTreeSet<usize> = c
            .targets
            .values()
            .filter(|&&(_, s)| s == switch)
            .map(|&(i, _)| i)
            .collect();
        for i in nodes {
            let n = &found.nodes[i];
            let guid = format!("{:#018x}", n.info.node_guid);
            let lid = n
                .ports
                .iter()
                .find_map(|p| p.info.map(|i| i.lid))
                .unwrap_or(0);
            info.get_or_create(&label(&[
                ("guid", guid.clone()),
                (kind, name_of(i)),
                ("lid", lid.to_string()),
            ]))
            .set(1);
            for (p, fp) in n.ports.iter().enumerate().skip(1) {
                let Some((peer, peer_port)) = fp.peer else {
                    continue;
                };
                let pn = &found.nodes[peer];
                // A switch answers at its port 0 LID, a CA port at its own.
                let lid_port = if pn.is_switch() {
                    0
                } else {
                    usize::from(peer_port)
                };
                let peer_lid = pn
                    .ports
                    .get(lid_port)
                    .and_then(|q| q.info)
                    .map_or(0, |q| q.lid);
                let peer_guid = if pn.is_switch() {
                    pn.info.node_guid
                } else {
                    pn.ports.get(usize::from(peer_port)).map_or(0, |q| q.guid)
                };
                uplinks
                    .get_or_create(&label(&[
                        ("guid", guid.clone()),
                        ("port", p.to_string()),
                        (kind, name_of(i)),
                        ("uplink", name_of(peer)),
                        ("uplink_guid", format!("{peer_guid:#018x}")),
                        ("uplink_lid", peer_lid.to_string()),
                        ("uplink_port", peer_port.to_string()),
                        (
                            "uplink_type",
                            if pn.is_switch() { "SW" } else { "CA" }.into(),
                        ),
                    ]))
                    .set(1);
            }
        }
        // The bulk (every port, every counter) written straight from the readings by
        // a collector, without a labelled family's map of every sample.
        let mut rows = Vec::new();
        for (&(lid, p), reading) in &c.report.ports {
            let Some(&(owner, s)) = c.targets.get(&lid) else {
                continue;
            };
            if s != switch || reading.counters.is_err() {
                continue;
            }
            if let Some(sample) = PortSample::from_reading(reading) {
                let guid = c.port_guid(owner, switch, p);
                rows.push((format!("{guid:#018x}"), p.to_string(), sample));
            }
        }
        reg.register_collector(Box::new(PortRows { switch, rows }));
    }

    let errors = gauge_family(
        &mut reg,
        "infiniband_exporter_collect_errors",
        "Number of errors that occurred during collection",
    );
    let timeouts = gauge_family(
        &mut reg,
        "infiniband_exporter_collect_timeouts",
        "Number of timeouts that occurred during collection",
    );
    let durations = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    reg.register(
        "infiniband_exporter_collector_duration_seconds",
        "Collector time duration.",
        durations.clone(),
    );
    let discover_timeouts = found
        .unreachable
        .iter()
        .filter(|(_, e)| matches!(e, SmpError::Timeout { .. }))
        .count();
    let discover_errors = found.unreachable.len()
        + found
            .nodes
            .iter()
            .flat_map(|n| n.ports.iter())
            .filter(|p| p.error.is_some())
            .count()
        + usize::from(!c.discovery_finished);
    let ibnet = label(&[("collector", "ibnetdiscover".into())]);
    errors.get_or_create(&ibnet).set(count(discover_errors));
    timeouts.get_or_create(&ibnet).set(count(discover_timeouts));
    durations
        .get_or_create(&ibnet)
        .set(c.discovery.as_secs_f64());
    for (kind, on, switch) in [
        ("switch", select.switches, true),
        ("hca", select.hcas, false),
    ] {
        if !on {
            continue;
        }
        let (e, t) = c.failures(switch);
        let collector = label(&[("collector", kind.into())]);
        errors.get_or_create(&collector).set(count(e));
        timeouts.get_or_create(&collector).set(count(t));
        // Both collectors are read in one scrape; each is given its wall time.
        durations
            .get_or_create(&collector)
            .set(c.scrape.as_secs_f64());
    }
    let failed = gauge_family(
        &mut reg,
        "infiniband_exporter_port_collect_error",
        "A port whose counters could not be read in this collection (error: timeout, status, malformed, unreachable, transport)",
    );
    for f in c.port_failures() {
        failed
            .get_or_create(&label(&[
                ("collector", f.collector.into()),
                ("guid", format!("{:#018x}", f.guid)),
                ("port", f.port.to_string()),
                ("lid", f.lid.to_string()),
                ("error", error_kind(&f.error).into()),
            ]))
            .set(1);
    }
    let total = Gauge::<f64, AtomicU64>::default();
    total.set((c.discovery + c.scrape).as_secs_f64());
    reg.register(
        "infiniband_exporter_scrape_duration_seconds",
        "Time the whole collection (discovery and every collector) took",
        total,
    );
    let mut out = String::new();
    encode(&mut out, &reg).map_err(|e| ToolError::Failed(format!("encoding the metrics: {e}")))?;
    Ok(out)
}

/// Every port's counters of one collector (`switch` or `hca`), as counter families
/// `infiniband_{switch,hca}_port_*_total{guid,port}`.
#[derive(Debug)]
struct PortRows {
    switch: bool,
    /// (guid label, port label, counters), in LID and port order.
    rows: Vec<(String, String, PortSample)>,
}

impl Collector for PortRows {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for &pc in Counter::ALL {
            let name = pc.exporter_family(self.switch);
            let help = pc.exporter_help(self.switch);
            let mut family = encoder.encode_descriptor(&name, &help, None, MetricType::Counter)?;
            for (guid, port, sample) in &self.rows {
                if let Some(v) = sample.get(pc) {
                    let labels = [("guid", guid.as_str()), ("port", port.as_str())];
                    ConstCounter::new(pc.exporter_value(v))
                        .encode(family.encode_family(&labels)?)?;
                }
            }
        }
        Ok(())
    }
}

/// One collection shared by concurrent requests, run at most once per `min_interval`.
///
/// [`Self::get`] answers with the last result while it is younger than
/// `min_interval` (counted from the start of the collection that made it); otherwise
/// the first caller runs a new collection and every caller that comes while it runs
/// waits for it and gets the same result.
#[derive(Debug)]
pub struct ScrapeCache<T> {
    min_interval: Duration,
    state: Mutex<CacheState<T>>,
    finished: Condvar,
}

#[derive(Debug)]
struct CacheState<T> {
    last: Option<(Instant, Arc<T>)>,
    running: bool,
    runs: u64,
    /// Callers waiting for the running collection.
    waiters: usize,
}

/// Clears `running` (and wakes the waiters) even when the collection panics.
struct Running<'a, T>(&'a ScrapeCache<T>);

impl<T> Drop for Running<'_, T> {
    fn drop(&mut self) {
        let mut s = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.running = false;
        self.0.finished.notify_all();
    }
}

impl<T> ScrapeCache<T> {
    /// A cache that runs a collection at most once per `min_interval`.
    #[must_use]
    pub fn new(min_interval: Duration) -> Self {
        Self {
            min_interval,
            state: Mutex::new(CacheState {
                last: None,
                running: false,
                runs: 0,
                waiters: 0,
            }),
            finished: Condvar::new(),
        }
    }

    /// How many collections have run.
    #[must_use]
    pub fn runs(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .runs
    }

    /// The result of the current collection: the cached one while it is younger than
    /// `min_interval` at `now()`, the one running, or a new one from `collect`.
    pub fn get(&self, now: impl Fn() -> Instant, collect: impl FnOnce() -> T) -> Arc<T> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some((at, v)) = &s.last {
                if now().saturating_duration_since(*at) < self.min_interval {
                    return Arc::clone(v);
                }
            }
            if !s.running {
                break;
            }
            let runs = s.runs;
            s.waiters += 1;
            while s.running && s.runs == runs {
                s = self
                    .finished
                    .wait(s)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            s.waiters -= 1;
            if s.runs != runs {
                if let Some((_, v)) = &s.last {
                    return Arc::clone(v);
                }
            }
            // The collection we waited for panicked: try again.
        }
        s.running = true;
        drop(s);
        let started = now();
        let guard = Running(self);
        let v = Arc::new(collect());
        {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.last = Some((started, Arc::clone(&v)));
            s.runs += 1;
        }
        drop(guard);
        v
    }
}

#[cfg(test)]
mod tests;
