//! `--metrics ADDR`: Prometheus metrics at `/metrics` (OpenMetrics text from
//! `prometheus-client`), the JSON [`Status`] at `/status` and a picture of the fabric at
//! `/fabric.svg` ([`crate::picture`]), over HTTP (`tiny_http`) on a thread of its own.
//!
//! The run loop publishes a [`Status`] after every slice ([`MetricsServer::publish`]);
//! the HTTP thread only reads the last one, so a scrape never waits for the engine and
//! the engine never waits for a scrape. Every sample is rendered from that snapshot:
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `ibsm_role` | `role` | 1 for the SM's role, 0 for the others |
//! | `ibsm_sm_lid`, `ibsm_master_lid` | | this SM's LID; the master's (0: unknown) |
//! | `ibsm_subnet_up` | | 1 once the subnet was brought up |
//! | `ibsm_sweeps_total` | `kind` = heavy, light | sweeps completed |
//! | `ibsm_sweep_last_duration_seconds` | `kind` | the last one's duration |
//! | `ibsm_smps_total` | `attribute` | sweep SMPs by attribute |
//! | `ibsm_smps_sent_total` | | every SMP sent |
//! | `ibsm_smp_retries_total`, `ibsm_smp_timeouts_total` | | over all sweeps |
//! | `ibsm_traps_total` | `number` | traps received |
//! | `ibsm_fabric_nodes` | `type` = switch, ca, router | nodes found |
//! | `ibsm_fabric_links`, `ibsm_fabric_lids` | | cables, LIDs assigned |
//! | `ibsm_unhealthy_ports` | | ports the health policy marks unhealthy (`SmConfig::health`) |
//! | `ibsm_isolated_ports` | `condition` = reboot, flapping, unresponsive, noisy_traps, set_err, manual, high_ber | ports whose link is out of routing, per condition |
//! | `ibsm_isolation_cap`, `ibsm_isolation_cap_reached` | | the most ports automatic checks may isolate; 1 when a port was only reported because of it |
//! | `ibsm_partition_warnings` | | partition warnings kept |
//! | `ibsm_topology_differences` | `kind` = missing_node, unexpected_node, missing_cable, extra_cable, miswired, degraded | differences from the reference topology now (`topology_ref_file`) |
//! | `ibsm_topology_changes_total` | | reference topology reports (each a change) |
//! | `ibsm_perfmgr_sweeps_total` | | counter sweeps finished (`--perfmgr`) |
//! | `ibsm_perfmgr_last_sweep_ports` | `result` = read, failed | the last counter sweep's ports |
//! | `ibsm_perfmgr_last_sweep_duration_seconds` | | its duration |
//! | `ibsm_perfmgr_query_failures_total`, `ibsm_perfmgr_query_timeouts_total` | | the last sweep's failed queries |
//! | `ibsm_perfmgr_over_threshold_total` | | threshold reports |
//! | `infiniband_{switch,hca}_port_<counter>_total` | `guid`, `port` | each port's counters as last read, with treydock/infiniband_exporter's names (as `ibsm-exporter`; data in bytes) |

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use ibsm::query::counters;

use crate::picture::Source;
use crate::status::{Perf, Status};

type Labels = Vec<(&'static str, String)>;

/// The picture's source as last published, and the SVG drawn from it (drawn on the
/// first request after each publish).
#[derive(Debug, Default)]
struct Picture {
    source: Option<Arc<Source>>,
    drawn: Option<Arc<String>>,
}

/// The metrics endpoint's thread and the snapshot it serves.
pub(crate) struct MetricsServer {
    snapshot: Arc<Mutex<Status>>,
    picture: Arc<Mutex<Picture>>,
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

/// The endpoint could not be opened.
#[derive(Debug)]
pub(crate) struct MetricsError {
    /// The address asked for.
    pub(crate) addr: String,
    /// What failed.
    pub(crate) reason: String,
}

impl std::fmt::Display for MetricsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--metrics {}: {}", self.addr, self.reason)
    }
}

impl std::error::Error for MetricsError {}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Listens on `addr` (`HOST:PORT`; port 0 picks a free one, see [`Self::addr`]) and
    /// serves `initial` until the first [`Self::publish`].
    ///
    /// # Errors
    /// [`MetricsError`] when the address cannot be bound.
    pub(crate) fn start(addr: &str, initial: Status) -> Result<Self, MetricsError> {
        let fail = |reason: String| MetricsError {
            addr: addr.to_owned(),
            reason,
        };
        let server = tiny_http::Server::http(addr).map_err(|e| fail(e.to_string()))?;
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| fail("not an IP address".into()))?;
        let server = Arc::new(server);
        let snapshot = Arc::new(Mutex::new(initial));
        let picture = Arc::new(Mutex::new(Picture::default()));
        let (srv, snap, pic) = (
            Arc::clone(&server),
            Arc::clone(&snapshot),
            Arc::clone(&picture),
        );
        let thread = std::thread::Builder::new()
            .name("ibsmd-metrics".into())
            .spawn(move || serve(&srv, &snap, &pic))
            .map_err(|e| fail(e.to_string()))?;
        Ok(Self {
            snapshot,
            picture,
            server,
            addr: bound,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    #[must_use]
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Makes `status` what the endpoint serves.
    pub(crate) fn publish(&self, status: Status) {
        *self.snapshot.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }

    /// Replaces what `/fabric.svg` draws.
    pub(crate) fn publish_picture(&self, source: Source) {
        let mut p = self.picture.lock().unwrap_or_else(PoisonError::into_inner);
        p.source = Some(Arc::new(source));
        p.drawn = None;
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The SVG of the last published source, drawn once per source (outside the lock).
fn fabric_svg(picture: &Mutex<Picture>) -> Option<Arc<String>> {
    let source = {
        let p = picture.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = &p.drawn {
            return Some(Arc::clone(d));
        }
        Arc::clone(p.source.as_ref()?)
    };
    let drawn = Arc::new(source.render());
    let mut p = picture.lock().unwrap_or_else(PoisonError::into_inner);
    // Kept only if no newer source came meanwhile.
    if p.source.as_ref().is_some_and(|s| Arc::ptr_eq(s, &source)) {
        p.drawn = Some(Arc::clone(&drawn));
    }
    Some(drawn)
}

fn serve(server: &tiny_http::Server, snapshot: &Mutex<Status>, picture: &Mutex<Picture>) {
    for req in server.incoming_requests() {
        let status = snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let path = req.url().split('?').next().unwrap_or("");
        let (code, body, kind) = match (req.method(), path) {
            (tiny_http::Method::Get, "/metrics") => (
                200,
                exposition(&status),
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ),
            (tiny_http::Method::Get, "/status") => (
                200,
                serde_json::to_string(&status).unwrap_or_default() + "\n",
                "application/json",
            ),
            (tiny_http::Method::Get, "/fabric.svg") => match fabric_svg(picture) {
                Some(svg) => (200, svg.as_str().to_owned(), "image/svg+xml"),
                None => (
                    503,
                    "no fabric yet: the subnet has not been configured\n".into(),
                    "text/plain",
                ),
            },
            (tiny_http::Method::Get, _) => (
                404,
                "not found: try /metrics, /status or /fabric.svg\n".into(),
                "text/plain",
            ),
            _ => (405, "only GET\n".into(), "text/plain"),
        };
        let mut resp = tiny_http::Response::from_string(body).with_status_code(code);
        if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], kind.as_bytes()) {
            resp = resp.with_header(h);
        }
        // A client that hung up is its own problem.
        let _ = req.respond(resp);
    }
}

fn gauge(reg: &mut Registry, name: &str, help: &str, v: i64) {
    let g: Gauge = Gauge::default();
    g.set(v);
    reg.register(name, help, g);
}

fn counter(reg: &mut Registry, name: &str, help: &str, v: u64) {
    let c: Counter = Counter::default();
    c.inc_by(v);
    reg.register(name, help, c);
}

/// A gauge in seconds (the OpenMetrics unit) of a duration kept in ms.
fn seconds(reg: &mut Registry, name: &str, help: &str, ms: f64) {
    let g: Gauge<f64, std::sync::atomic::AtomicU64> = Gauge::default();
    g.set(ms / 1e3);
    reg.register(name, help, g);
}

fn as_i64(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The OpenMetrics text of `s`.
#[must_use]
pub(crate) fn exposition(s: &Status) -> String {
    let mut root = Registry::default();
    if let Some(p) = &s.perfmgr {
        port_counters(&mut root, p);
    }
    let reg = root.sub_registry_with_prefix("ibsm");
    if let Some(p) = &s.perfmgr {
        perf_sweeps(reg, p);
    }
    let roles: Family<Labels, Gauge> = Family::default();
    for role in ["MASTER", "STANDBY", "DISCOVERING", "NOT ACTIVE"] {
        roles
            .get_or_create(&vec![("role", role.to_owned())])
            .set(i64::from(s.role == role));
    }
    reg.register("role", "1 for the SM's role", roles);
    gauge(reg, "sm_lid", "This SM's LID", i64::from(s.sm_lid));
    let master = s.master.as_ref().map_or(0, |m| m.lid);
    gauge(
        reg,
        "master_lid",
        "The master SM's LID (0: unknown)",
        i64::from(master),
    );
    gauge(
        reg,
        "subnet_up",
        "1 once the subnet was brought up",
        i64::from(s.subnet_up),
    );
    seconds(
        reg,
        "engine_longest_call_seconds",
        "The longest call into the engine since the start: the port went unread that long",
        s.engine.longest_ms,
    );
    let busy: Counter<f64, std::sync::atomic::AtomicU64> = Counter::default();
    busy.inc_by(s.engine.busy_ms / 1e3);
    reg.register(
        "engine_busy_seconds",
        "Wall time spent in calls into the engine",
        busy,
    );
    counter(reg, "engine_calls", "Calls into the engine", s.engine.calls);
    let sweeps: Family<Labels, Counter> = Family::default();
    let last: Family<Labels, Gauge<f64, std::sync::atomic::AtomicU64>> = Family::default();
    for (kind, n, ms) in [
        ("heavy", s.sweeps.heavy, s.sweeps.last_heavy_ms),
        ("light", s.sweeps.light, s.sweeps.last_light_ms),
    ] {
        let l = vec![("kind", kind.to_owned())];
        sweeps.get_or_create(&l).inc_by(n);
        if let Some(ms) = ms {
            last.get_or_create(&l).set(ms / 1e3);
        }
    }
    reg.register("sweeps", "Sweeps completed", sweeps);
    reg.register(
        "sweep_last_duration_seconds",
        "The last sweep's duration on the transport's clock",
        last,
    );
    let by_attr: Family<Labels, Counter> = Family::default();
    for (a, n) in &s.smps.by_attribute {
        by_attr
            .get_or_create(&vec![("attribute", a.clone())])
            .inc_by(*n);
    }
    reg.register("smps", "Sweep SMPs by attribute", by_attr);
    counter(reg, "smps_sent", "Every SMP sent", s.smps.total);
    counter(
        reg,
        "smp_retries",
        "SMP retries over all sweeps",
        s.smps.retries,
    );
    counter(
        reg,
        "smp_timeouts",
        "SMPs unanswered after all retries",
        s.smps.timeouts,
    );
    let traps: Family<Labels, Counter> = Family::default();
    for (num, n) in &s.traps {
        traps
            .get_or_create(&vec![("number", num.to_string())])
            .inc_by(*n);
    }
    reg.register("traps", "Traps received, by number", traps);
    let nodes: Family<Labels, Gauge> = Family::default();
    let f = &s.fabric;
    for (t, n) in [("switch", f.switches), ("ca", f.cas), ("router", f.routers)] {
        nodes
            .get_or_create(&vec![("type", t.to_owned())])
            .set(as_i64(n));
    }
    reg.register("fabric_nodes", "Nodes the last heavy sweep found", nodes);
    gauge(
        reg,
        "fabric_links",
        "Cables the last heavy sweep found",
        as_i64(f.links),
    );
    gauge(reg, "fabric_lids", "LIDs assigned", as_i64(f.lids));
    gauge(
        reg,
        "unhealthy_ports",
        "Ports marked unhealthy (any condition, any action but ignore)",
        as_i64(s.unhealthy_ports.len()),
    );
    let isolated: Family<Labels, Gauge> = Family::default();
    for c in ibsm::manager::health::Condition::ALL {
        let n = s.isolation.by_condition.get(c.name()).copied().unwrap_or(0);
        isolated
            .get_or_create(&vec![("condition", c.name().to_owned())])
            .set(as_i64(n));
    }
    reg.register(
        "isolated_ports",
        "Ports whose link carries no routes, by the condition they were isolated for",
        isolated,
    );
    gauge(
        reg,
        "isolation_cap",
        "The most ports the automatic health checks may isolate",
        as_i64(s.isolation.cap),
    );
    gauge(
        reg,
        "isolation_cap_reached",
        "1 when a port was only reported because the isolation cap was reached",
        i64::from(s.isolation.cap_reached),
    );
    gauge(
        reg,
        "partition_warnings",
        "Partition warnings kept",
        as_i64(s.partition_warnings.len()),
    );
    if let Some(t) = &s.topology {
        let diffs: Family<Labels, Gauge> = Family::default();
        for (kind, n) in &t.by_kind {
            diffs
                .get_or_create(&vec![("kind", kind.clone())])
                .set(as_i64(*n));
        }
        reg.register(
            "topology_differences",
            "Differences from the reference topology, by kind",
            diffs,
        );
        counter(
            reg,
            "topology_changes",
            "Reference topology reports (each a change of the differences)",
            t.changes,
        );
    }
    let mut out = String::new();
    // Writing into a String does not fail.
    let _ = encode(&mut out, &root);
    out
}

/// The PerfMgr's own figures.
fn perf_sweeps(reg: &mut Registry, p: &Perf) {
    counter(reg, "perfmgr_sweeps", "Counter sweeps finished", p.sweeps);
    counter(
        reg,
        "perfmgr_over_threshold",
        "Port counters that grew past their threshold in one sweep",
        p.over_threshold,
    );
    let Some(last) = p.last else {
        return;
    };
    let ports: Family<Labels, Gauge> = Family::default();
    for (result, n) in [("read", last.ports_read), ("failed", last.ports_failed)] {
        ports
            .get_or_create(&vec![("result", result.to_owned())])
            .set(as_i64(n));
    }
    reg.register(
        "perfmgr_last_sweep_ports",
        "Ports of the last counter sweep",
        ports,
    );
    seconds(
        reg,
        "perfmgr_last_sweep_duration_seconds",
        "The last counter sweep's duration on the transport's clock",
        last.duration_ms,
    );
    counter(
        reg,
        "perfmgr_query_failures",
        "Queries of the last counter sweep that failed",
        last.failures,
    );
    counter(
        reg,
        "perfmgr_query_timeouts",
        "Queries of the last counter sweep that got no answer",
        last.timeouts,
    );
}

/// Each port's counters, named as treydock/infiniband_exporter names them.
fn port_counters(root: &mut Registry, p: &Perf) {
    for switch in [true, false] {
        for &c in counters::Counter::ALL {
            let family: Family<Labels, Counter<u64>> = Family::default();
            let mut any = false;
            for port in p.ports.iter().filter(|q| q.switch == switch) {
                let Some(&v) = port.counters.get(c.perfquery_name()) else {
                    continue;
                };
                family
                    .get_or_create(&vec![
                        ("guid", port.guid.clone()),
                        ("port", port.port.to_string()),
                    ])
                    .inc_by(c.exporter_value(v));
                any = true;
            }
            if any {
                root.register(c.exporter_family(switch), c.exporter_help(switch), family);
            }
        }
    }
}

#[cfg(test)]
mod tests;
