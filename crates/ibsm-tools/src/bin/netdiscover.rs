//! `ibsm-netdiscover`: the fabric behind a local port, discovered over directed routes
//! with `ibsm-query`, printed in `ibnetdiscover`'s topology format (which
//! `ibsm_topology::ibnet`, ibsim and OpenSM's tools read).
//!
//! ```text
//! ibsm-netdiscover [-C CA] [-P PORT] [--node-name-map FILE] [--timeout MS] [--retries N]
//!                  [--m-key KEY] [--window N]
//! ```
//!
//! Under ibsim: `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
//! ibsm-netdiscover`. Routes nobody answered and ports whose PortInfo failed are listed
//! on stderr; the exit code is 0 when the walk finished, 1 when it hit the time limit
//! or the port could not be opened, 2 for a bad argument or node-name map.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ibsm_query::discover::Discovery;
use ibsm_query::nodemap::{NodeNameMap, clean_description};
use ibsm_query::smp::SmpConfig;
use ibsm_topology::ibnet::{self, WriteOptions};
use ibsm_transport::{JobRunner, Stop, Transport, drive};
use ibsm_umad::{OpenOptions, Selector, UmadTransport};

/// Discover the fabric over directed routes and print it in ibnetdiscover's format.
#[derive(Debug, Parser)]
#[command(name = "ibsm-netdiscover", version)]
struct Args {
    /// RDMA device to use (ibnetdiscover -C).
    #[arg(short = 'C', long = "Ca")]
    ca: Option<String>,
    /// Port of that device (ibnetdiscover -P).
    #[arg(short = 'P', long = "Port")]
    port: Option<u8>,
    /// Node-name map (infiniband-diags format): names replace node descriptions.
    #[arg(long = "node-name-map")]
    node_name_map: Option<std::path::PathBuf>,
    /// Time to wait for each SMP's answer, in milliseconds.
    #[arg(short = 't', long = "timeout", default_value_t = 200)]
    timeout_ms: u64,
    /// Re-sends of an SMP before its target counts as unreachable.
    #[arg(long, default_value_t = 3)]
    retries: u32,
    /// SMPs in flight at once.
    #[arg(long, default_value_t = 32)]
    window: usize,
    /// M_Key sent with every SMP (hex with 0x, or decimal).
    #[arg(long = "m-key", value_parser = parse_u64, default_value = "0")]
    m_key: u64,
    /// Give up after this many seconds.
    #[arg(long = "time-limit", default_value_t = 120)]
    time_limit: u64,
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("{s:?}: {e}"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let names = match &args.node_name_map {
        Some(p) => match NodeNameMap::from_file(p) {
            Ok(m) => {
                for w in m.warnings() {
                    eprintln!("{}: {w}", p.display());
                }
                Some(m)
            }
            Err(e) => {
                eprintln!("ibsm-netdiscover: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let opts = OpenOptions {
        selector: Selector {
            ca: args.ca.clone(),
            port: args.port,
            guid: None,
        },
        ..OpenOptions::default()
    };
    let mut port = match UmadTransport::open(&opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ibsm-netdiscover: {e}");
            return ExitCode::from(1);
        }
    };
    let mut cfg = SmpConfig {
        m_key: args.m_key,
        ..SmpConfig::default()
    };
    cfg.tx.timeout = Duration::from_millis(args.timeout_ms);
    cfg.tx.retries = args.retries;
    cfg.tx.window = args.window.max(1);
    let mut walk = Discovery::new(cfg);
    let stop = Stop::when_idle(port.now() + Duration::from_secs(args.time_limit));
    if let Err(e) = drive(
        &mut walk,
        &mut port,
        &mut JobRunner::inline(),
        stop,
        |ev| match ev {},
    ) {
        eprintln!("ibsm-netdiscover: {e}");
        return ExitCode::from(1);
    }
    let finished = walk.is_done();
    let found = walk.into_found();
    for (path, e) in &found.unreachable {
        eprintln!("unreachable: route {path}: {e}");
    }
    for n in &found.nodes {
        for (p, port) in n.ports.iter().enumerate() {
            if let Some(e) = &port.error {
                eprintln!("{:#018x} port {p}: {e}", n.info.node_guid);
            }
        }
    }
    let mut fabric = match found.to_fabric() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("ibsm-netdiscover: the answers contradict each other: {e}");
            return ExitCode::from(1);
        }
    };
    let ids: Vec<_> = fabric.node_ids().collect();
    for id in ids {
        if let Some(node) = fabric.node_mut(id) {
            // Printed as ibnetdiscover prints it (the model holds the node's own bytes).
            node.description = match names.as_ref().and_then(|m| m.get(node.guid().0)) {
                Some(name) => name.to_owned(),
                None => clean_description(node.description.as_bytes()),
            };
        }
    }
    match ibnet::write(&fabric, &WriteOptions::default()) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("ibsm-netdiscover: {e}");
            return ExitCode::from(1);
        }
    }
    if finished {
        ExitCode::SUCCESS
    } else {
        eprintln!("ibsm-netdiscover: time limit reached; the topology is partial");
        ExitCode::from(1)
    }
}
