//! `ibsm-exporter`: a Prometheus exporter for a whole InfiniBand fabric, from one host.
//!
//! A collection discovers the fabric over directed routes and reads every switch port's
//! counters (and with `--hca` every CA port's) in one run (ibsm-query's discovery and
//! `Scrape`: PortCountersExtended where the agent has it, so data counters do not
//! saturate at 32 bits), instead of forking `ibnetdiscover` and one `perfquery` per
//! switch. Metric names and labels are those of treydock/infiniband_exporter, so its
//! dashboards and rules work unchanged: `infiniband_switch_port_*_total{guid,port}`,
//! `infiniband_hca_port_*_total{guid,port}`, `infiniband_switch_info`,
//! `infiniband_hca_info`, `infiniband_switch_uplink_info`, `infiniband_hca_uplink_info`,
//! and about the collection `infiniband_exporter_collect_errors{collector}`,
//! `infiniband_exporter_collect_timeouts{collector}` and
//! `infiniband_exporter_collector_duration_seconds{collector}` (collectors
//! `ibnetdiscover`, `switch`, `hca`); ours besides: `infiniband_exporter_scrape_duration_seconds`
//! and `infiniband_exporter_port_collect_error{collector,guid,port,lid,error}` for each
//! port whose counters could not be read (also logged; every other port is exported).
//!
//! ```text
//! ibsm-exporter [--web.listen-address ADDR] [--min-interval SECS] [--node-name-map FILE]
//!               [--no-switch] [--hca] [-C CA] [-P PORT] [-t MS] [--retries N] [--window N]
//! ibsm-exporter --textfile PATH ...        run once, write the metrics, exit
//! ```
//!
//! It listens on 127.0.0.1:9315 unless told otherwise: every collection sends SMPs and
//! PerfMgt MADs to the whole fabric, and the endpoint has no authentication, so expose
//! it (`--web.listen-address 0.0.0.0:9315`) only where that is wanted. Endpoints (GET
//! only, other methods 405): `/metrics` (requests that arrive while a collection runs
//! share it; a collection starts at most every `--min-interval` seconds, the last one's
//! answer served in between), `/healthz` (`ok`). Logs on stderr (`RUST_LOG` filters,
//! default `info`). Exit codes: 0, 1 when the port or the listen address cannot be
//! opened or a run-once collection fails outright, 2 for bad arguments or node-name map.

use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use clap::Parser;
use ibsm_tools::exporter::{ScrapeCache, Select, collect, render};
use ibsm_tools::{NameArgs, Names, PortArgs, ToolError, TxArgs, write_atomic};
use ibsm_umad::UmadTransport;

/// Prometheus exporter for an InfiniBand fabric.
#[derive(Debug, Parser)]
#[command(name = "ibsm-exporter", version)]
struct Args {
    /// Address to serve /metrics and /healthz on (localhost unless told otherwise: a
    /// request triggers fabric-wide traffic and there is no authentication).
    #[arg(long = "web.listen-address", default_value = "127.0.0.1:9315")]
    listen: String,
    /// Seconds between the starts of two collections at most; requests in between get
    /// the last collection's answer.
    #[arg(long = "min-interval", default_value_t = 10.0, value_parser = parse_secs)]
    min_interval: f64,
    /// Run once: write the metrics to this file (atomically, for node_exporter's
    /// textfile collector) and exit.
    #[arg(long)]
    textfile: Option<std::path::PathBuf>,
    #[command(flatten)]
    names: NameArgs,
    /// Do not export switch ports.
    #[arg(long = "no-switch")]
    no_switch: bool,
    /// Export CA (HCA) ports too.
    #[arg(long)]
    hca: bool,
    #[command(flatten)]
    port: PortArgs,
    #[command(flatten)]
    tx: TxArgs,
    /// Give up each stage of a collection (discovery, scrape) after this many seconds.
    #[arg(long = "time-limit", default_value_t = 120)]
    time_limit: u64,
}

/// Why `--min-interval` is not a number of seconds.
#[derive(Debug, thiserror::Error)]
enum SecondsError {
    /// Not a number at all.
    #[error("{text:?}: {source}")]
    NotANumber {
        text: String,
        #[source]
        source: std::num::ParseFloatError,
    },
    /// A number, but not 0 to a day (or not finite).
    #[error("{text:?}: seconds from 0 to 86400")]
    OutOfRange { text: String },
}

fn parse_secs(s: &str) -> Result<f64, SecondsError> {
    let text = || s.to_owned();
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&v) => Ok(v),
        Ok(_) => Err(SecondsError::OutOfRange { text: text() }),
        Err(source) => Err(SecondsError::NotANumber {
            text: text(),
            source,
        }),
    }
}

const TOOL: &str = "ibsm-exporter";
/// HTTP worker threads: requests beyond these wait in the listener's queue.
const WORKERS: usize = 4;

impl Args {
    fn select(&self) -> Select {
        Select {
            switches: !self.no_switch,
            hcas: self.hca,
        }
    }
}

/// One collection as exposition text.
fn scrape(port: &Mutex<UmadTransport>, args: &Args, names: &Names) -> Result<String, ToolError> {
    let mut p = port.lock().unwrap_or_else(PoisonError::into_inner);
    let c = collect(
        &mut *p,
        args.select(),
        &args.tx,
        Duration::from_secs(args.time_limit),
    )?;
    let t = Instant::now();
    let text = render(&c, args.select(), names)?;
    tracing::debug!(
        discovery = ?c.discovery,
        scrape = ?c.scrape,
        render = ?t.elapsed(),
        bytes = text.len(),
        "collection"
    );
    Ok(text)
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let names = match args.names.load() {
        Ok(n) => n,
        Err(e) => return e.report(TOOL),
    };
    let port = match args.port.open(true) {
        Ok(p) => Mutex::new(p),
        Err(e) => return e.report(TOOL),
    };
    if let Some(path) = &args.textfile {
        let written = scrape(&port, &args, &names).and_then(|text| write_atomic(path, &text));
        return match written {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => e.report(TOOL),
        };
    }
    let server = match tiny_http::Server::http(&args.listen) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            return ToolError::Failed(format!("listening on {}: {e}", args.listen)).report(TOOL);
        }
    };
    tracing::info!(address = %args.listen, min_interval = args.min_interval, "serving /metrics");
    let cache = ScrapeCache::new(Duration::from_secs_f64(args.min_interval));
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| {
                for req in server.incoming_requests() {
                    serve(req, &cache, || scrape(&port, &args, &names));
                }
            });
        }
    });
    ExitCode::SUCCESS
}

/// Answers one request.
fn serve(
    req: tiny_http::Request,
    cache: &ScrapeCache<Result<String, ToolError>>,
    collect: impl FnOnce() -> Result<String, ToolError>,
) {
    let text = |code: u16, body: &str| {
        tiny_http::Response::from_string(body)
            .with_status_code(code)
            .with_header(header("Content-Type", "text/plain; charset=utf-8"))
    };
    let resp = if *req.method() != tiny_http::Method::Get {
        text(405, "only GET\n").with_header(header("Allow", "GET"))
    } else {
        match req.url() {
            "/metrics" => match &*cache.get(Instant::now, collect) {
                Ok(body) => tiny_http::Response::from_string(body.as_str()).with_header(header(
                    "Content-Type",
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )),
                Err(e) => text(500, &format!("collection failed: {e}\n")),
            },
            "/healthz" => text(200, "ok\n"),
            _ => text(404, "not found\n"),
        }
    };
    if let Err(e) = req.respond(resp) {
        tracing::warn!(error = %e, "answering a request");
    }
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
        .unwrap_or_else(|()| unreachable!("constant header {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_listens_on_localhost_unless_told_otherwise() {
        let a = Args::try_parse_from(["ibsm-exporter"]).unwrap();
        assert_eq!(a.listen, "127.0.0.1:9315");
        assert!(a.min_interval > 0.0);
        let a = Args::try_parse_from(["ibsm-exporter", "--web.listen-address", "[::]:1"]).unwrap();
        assert_eq!(a.listen, "[::]:1");
    }

    #[test]
    fn min_interval_takes_seconds_and_refuses_nonsense() {
        let a = Args::try_parse_from(["x", "--min-interval", "0.5"]).unwrap();
        assert!((a.min_interval - 0.5).abs() < f64::EPSILON);
        for bad in ["-1", "nan", "inf", "abc", "1e9"] {
            assert!(
                Args::try_parse_from(["x", "--min-interval", bad]).is_err(),
                "{bad}"
            );
        }
    }
}
