//! `ibsm-exporter`: a Prometheus exporter for a whole InfiniBand fabric, from one host.
//!
//! Each scrape discovers the fabric over directed routes and reads every port's
//! counters in one run (ibsm-query's discovery and `Scrape`: PortCountersExtended where
//! the agent has it, so data counters do not saturate at 32 bits), instead of forking
//! `ibnetdiscover` and one `perfquery` per port. Metric names and labels are those of
//! treydock/infiniband_exporter, so its dashboards and rules work unchanged:
//! `infiniband_switch_port_*_total{guid,port}`, `infiniband_hca_port_*_total{guid,port}`,
//! `infiniband_switch_info`, `infiniband_hca_info`, `infiniband_switch_uplink_info`,
//! `infiniband_hca_uplink_info`, and about the scrape itself
//! `infiniband_exporter_collect_errors{collector}`,
//! `infiniband_exporter_collect_timeouts{collector}` and
//! `infiniband_exporter_collector_duration_seconds{collector}`.
//!
//! ```text
//! ibsm-exporter [--web.listen-address ADDR] [--node-name-map FILE] [--no-switch] [--hca]
//! ibsm-exporter --textfile PATH ...        run once, write the metrics, exit
//! ```
//!
//! Endpoints: `/metrics` (scrapes the fabric, one scrape at a time), `/healthz` (`ok`).
//! Exit codes: 0, 1 when the port or the listen address cannot be opened or a run-once
//! scrape fails outright, 2 for bad arguments or node-name map.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant as WallInstant};

use clap::Parser;
use ibsm_query::counters::{Counter as PortCounter, PortSample};
use ibsm_query::discover::{Discovered, discover};
use ibsm_query::perf::{Scrape, ScrapeMode, ScrapeTarget};
use ibsm_query::smp::SmpConfig;
use ibsm_tools::{NameArgs, Names, PortArgs, TxArgs, run, write_atomic};
use ibsm_transport::Transport;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Prometheus exporter for an InfiniBand fabric.
#[derive(Debug, Parser)]
#[command(name = "ibsm-exporter", version)]
struct Args {
    /// Address to serve /metrics and /healthz on.
    #[arg(long = "web.listen-address", default_value = "0.0.0.0:9315")]
    listen: String,
    /// Run once: write the metrics to this file (atomically, for node_exporter's
    /// textfile collector) and exit.
    #[arg(long)]
    textfile: Option<PathBuf>,
    #[command(flatten)]
    names: NameArgs,
    /// Do not export switch ports.
    #[arg(long = "no-switch")]
    no_switch: bool,
    /// Export HCA ports too.
    #[arg(long)]
    hca: bool,
    #[command(flatten)]
    port: PortArgs,
    #[command(flatten)]
    tx: TxArgs,
}

type Labels = Vec<(String, String)>;

/// One counter family per [`PortCounter`] for switch ports or CA ports, with
/// infiniband_exporter's names.
fn port_families(
    reg: &mut Registry,
    switch: bool,
) -> Vec<(PortCounter, Family<Labels, Counter<u64>>)> {
    PortCounter::ALL
        .iter()
        .map(|&c| {
            let f = Family::<Labels, Counter<u64>>::default();
            reg.register(
                c.exporter_family(switch),
                c.exporter_help(switch),
                f.clone(),
            );
            (c, f)
        })
        .collect()
}

fn label(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect()
}

/// Everything one scrape found, as exposition text.
fn collect<T: Transport>(port: &mut T, args: &Args, names: &Names) -> Result<String, String> {
    let mut reg = Registry::default();
    let errors = Family::<Labels, Gauge>::default();
    let timeouts = Family::<Labels, Gauge>::default();
    let durations = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    reg.register(
        "infiniband_exporter_collect_errors",
        "Number of errors that occurred during collection",
        errors.clone(),
    );
    reg.register(
        "infiniband_exporter_collect_timeouts",
        "Number of timeouts that occurred during collection",
        timeouts.clone(),
    );
    reg.register(
        "infiniband_exporter_collector_duration_seconds",
        "Collector time to run",
        durations.clone(),
    );
    let t0 = WallInstant::now();
    let until = port.now() + Duration::from_secs(120);
    let found = discover(port, SmpConfig::default(), until).map_err(|e| e.to_string())?;
    durations
        .get_or_create(&label(&[("collector", "ibnetdiscover".into())]))
        .set(t0.elapsed().as_secs_f64());
    let discover_errors = found.unreachable.len()
        + found
            .nodes
            .iter()
            .flat_map(|n| n.ports.iter())
            .filter(|p| p.error.is_some())
            .count();
    errors
        .get_or_create(&label(&[("collector", "ibnetdiscover".into())]))
        .set(i64::try_from(discover_errors).unwrap_or(i64::MAX));

    let name_of = |i: usize| -> String {
        let n = &found.nodes[i];
        names.name(n.info.node_guid, n.description.as_bytes())
    };
    for (kind, on) in [("switch", !args.no_switch), ("hca", args.hca)] {
        if !on {
            continue;
        }
        let families = port_families(&mut reg, kind == "switch");
        let info = Family::<Labels, Gauge>::default();
        reg.register(
            format!("infiniband_{kind}_info"),
            format!("Infiniband {kind} information"),
            info.clone(),
        );
        let uplinks = Family::<Labels, Gauge>::default();
        reg.register(
            format!("infiniband_{kind}_uplink_info"),
            format!("Infiniband {kind} uplink information"),
            uplinks.clone(),
        );
        let t = WallInstant::now();
        let (targets, owners) = targets(&found, kind == "switch");
        let mut scrape = Scrape::new(targets, ScrapeMode::PerPort, args.tx.tx());
        run(&mut scrape, port, Duration::from_secs(120), "scrape").map_err(|e| e.to_string())?;
        let report = scrape.into_report();
        for &i in owners.values() {
            let n = &found.nodes[i];
            let guid = format!("{:#018x}", n.info.node_guid);
            let lid = n
                .ports
                .iter()
                .find_map(|p| p.info.map(|i| i.lid))
                .unwrap_or(0);
            let key = if kind == "switch" { "switch" } else { "hca" };
            info.get_or_create(&label(&[
                ("guid", guid.clone()),
                (key, name_of(i)),
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
                uplinks
                    .get_or_create(&label(&[
                        ("guid", guid.clone()),
                        ("port", p.to_string()),
                        (key, name_of(i)),
                        ("uplink", name_of(peer)),
                        (
                            "uplink_guid",
                            format!(
                                "{:#018x}",
                                if pn.is_switch() {
                                    pn.info.node_guid
                                } else {
                                    pn.ports[usize::from(peer_port)].guid
                                }
                            ),
                        ),
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
        for (&(lid, p), reading) in &report.ports {
            let Some(&owner) = owners.get(&lid) else {
                continue;
            };
            let guid = if kind == "switch" {
                found.nodes[owner].info.node_guid
            } else {
                found.nodes[owner]
                    .ports
                    .get(usize::from(p))
                    .map_or(0, |q| q.guid)
            };
            let labels = label(&[("guid", format!("{guid:#018x}")), ("port", p.to_string())]);
            let Some(sample) = PortSample::from_reading(reading) else {
                continue;
            };
            for (c, family) in &families {
                if let Some(v) = sample.get(*c) {
                    family.get_or_create(&labels).inc_by(c.exporter_value(v));
                }
            }
        }
        let collector = label(&[("collector", kind.into())]);
        errors
            .get_or_create(&collector)
            .set(i64::try_from(report.failures).unwrap_or(i64::MAX));
        timeouts
            .get_or_create(&collector)
            .set(i64::try_from(report.timeouts).unwrap_or(i64::MAX));
        durations
            .get_or_create(&collector)
            .set(t.elapsed().as_secs_f64());
    }
    let mut out = String::new();
    encode(&mut out, &reg).map_err(|e| e.to_string())?;
    Ok(out)
}

/// The scrape targets of one kind, and which node owns each LID.
fn targets(
    found: &Discovered,
    switches: bool,
) -> (Vec<ScrapeTarget>, std::collections::BTreeMap<u16, usize>) {
    let mut t = Vec::new();
    let mut owners = std::collections::BTreeMap::new();
    for (i, target) in ScrapeTarget::every_port(found) {
        if target.switch == switches {
            owners.insert(target.lid, i);
            t.push(target);
        }
    }
    (t, owners)
}

const TOOL: &str = "ibsm-exporter";

fn main() -> ExitCode {
    let args = Args::parse();
    let names = match args.names.load() {
        Ok(n) => n,
        Err(e) => return e.report(TOOL),
    };
    let port = match args.port.open(true) {
        Ok(p) => p,
        Err(e) => return e.report(TOOL),
    };
    let port = Mutex::new(port);
    let run = || -> Result<String, String> {
        let mut p = port.lock().map_err(|_| "port lock poisoned".to_string())?;
        collect(&mut *p, &args, &names)
    };
    if let Some(path) = &args.textfile {
        return match run() {
            Ok(text) => match write_atomic(path, &text) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => e.report(TOOL),
            },
            Err(e) => {
                eprintln!("ibsm-exporter: {e}");
                ExitCode::from(1)
            }
        };
    }
    let server = match tiny_http::Server::http(&args.listen) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ibsm-exporter: {}: {e}", args.listen);
            return ExitCode::from(1);
        }
    };
    eprintln!("ibsm-exporter: serving on {}", args.listen);
    for req in server.incoming_requests() {
        let (code, body, ctype) = match req.url() {
            "/metrics" => match run() {
                Ok(text) => (
                    200,
                    text,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
                Err(e) => {
                    let mut b = String::new();
                    let _ = writeln!(b, "scrape failed: {e}");
                    (500, b, "text/plain")
                }
            },
            "/healthz" => (200, "ok\n".to_string(), "text/plain"),
            _ => (404, "not found\n".to_string(), "text/plain"),
        };
        let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], ctype.as_bytes());
        let mut resp = tiny_http::Response::from_string(body).with_status_code(code);
        if let Ok(h) = header {
            resp = resp.with_header(h);
        }
        if let Err(e) = req.respond(resp) {
            eprintln!("ibsm-exporter: {e}");
        }
    }
    ExitCode::SUCCESS
}
