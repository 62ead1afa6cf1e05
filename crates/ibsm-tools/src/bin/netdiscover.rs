//! `ibsm-netdiscover`: the fabric behind a local port, discovered over directed routes
//! with `ibsm-query`, printed in `ibnetdiscover`'s topology format (which
//! `ibsm_topology::ibnet`, ibsim and OpenSM's tools read).
//!
//! ```text
//! ibsm-netdiscover [-C CA] [-P PORT] [--node-name-map FILE] [--timeout MS] [--retries N]
//!                  [--m-key KEY] [--window N] [-p | --json | --slurm-topology]
//!                  [--svg FILE [--routes]]
//! ```
//!
//! The walk reads what the dump needs and nothing twice (`Discovery::lean`): a NodeInfo
//! per cable, a NodeDescription per node, a SwitchInfo (for `enhanced port 0`) and port 0
//! of each switch, one end of each cable between switches, both ends of each CA's cable.
//!
//! `--svg FILE` also writes a picture of the fabric (`ibsm_topology::svg`: switches by
//! level, tori as grids, CAs folded per switch, links whose ends are not Active or that
//! are narrower or slower than their neighbours dashed red); with `--routes` every
//! switch's linear forwarding table is read too (one Get per 64 LIDs per switch, as
//! `ibroute` reads it) and links are coloured by the routes through them.
//!
//! `-p`/`--ports` prints `ibnetdiscover -p`'s per-port report instead
//! (`ibsm_topology::ibnet::write_ports_report`), `--json` the fabric as JSON (the
//! `serde` form of `ibsm_topology::Fabric`: nodes with their ports, cables by node GUID
//! and port).
//!
//! `--slurm-topology` prints Slurm's tree `topology.conf` instead
//! (`ibsm_topology::slurm`): `SwitchName=... Nodes=...` for the switches CAs are cabled
//! to, `SwitchName=... Switches=...` above them, host lists compressed as Slurm writes
//! them; a CA's node name is the first word of its node-name-map name, else of its
//! NodeDescription.
//!
//! Under ibsim: `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
//! ibsm-netdiscover`. Routes nobody answered and ports whose PortInfo failed are listed
//! on stderr; the exit code is 0 when the walk finished, 1 when it hit the time limit
//! or the port could not be opened, 2 for a bad argument or node-name map.

use std::process::ExitCode;

use clap::Parser;
use ibsm_query::discover::Discovered;
use ibsm_tools::lft::LftReader;
use ibsm_tools::{FabricArgs, ToolError, run, write_atomic};
use ibsm_topology::ibnet::{self, WriteOptions};
use ibsm_topology::slurm;
use ibsm_topology::svg::{self, SvgOptions};
use ibsm_topology::{Fabric, NodeId};

/// Discover the fabric over directed routes and print it in ibnetdiscover's format.
#[derive(Debug, Parser)]
#[command(name = "ibsm-netdiscover", version)]
struct Args {
    #[command(flatten)]
    fabric: FabricArgs,
    /// Print Slurm's tree topology.conf (TopologyPlugin=topology/tree) instead of the
    /// ibnetdiscover format.
    #[arg(long = "slurm-topology", group = "format")]
    slurm_topology: bool,
    /// Print the per-port report of `ibnetdiscover -p` instead.
    #[arg(short = 'p', long = "ports", group = "format")]
    ports: bool,
    /// Print the fabric as JSON (nodes with their ports, cables by node GUID and port).
    #[arg(long, group = "format")]
    json: bool,
    /// Also write a picture of the fabric (SVG) to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<std::path::PathBuf>,
    /// With --svg: read every switch's forwarding table (LinearForwardingTable, one SMP
    /// per 64 LIDs per switch) and colour links by the routes through them.
    #[arg(long, requires = "svg")]
    routes: bool,
}

const TOOL: &str = "ibsm-netdiscover";

fn main() -> ExitCode {
    match discover_and_print(&Args::parse()) {
        Ok(code) => code,
        Err(e) => e.report(TOOL),
    }
}

fn discover_and_print(args: &Args) -> Result<ExitCode, ToolError> {
    let names = args.fabric.names.load()?;
    let (mut port, walk) = args.fabric.walk()?;
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
    let (mut fabric, ids) = found
        .to_fabric_with(|p| p.info.map(|i| (i.lid, i.lmc)))
        .map_err(|e| ToolError::Failed(format!("the answers contradict each other: {e}")))?;
    let all: Vec<_> = fabric.node_ids().collect();
    for id in all {
        if let Some(node) = fabric.node_mut(id) {
            // Printed as ibnetdiscover prints it (the model holds the node's own bytes).
            node.description = names.name(node.guid().0, node.description.as_bytes());
        }
    }
    let text = if args.slurm_topology {
        slurm::tree_topology(&fabric, |_, n| n.description.clone())
    } else if args.ports {
        ibnet::write_ports_report(&fabric)
    } else if args.json {
        let mut j = serde_json::to_string_pretty(&fabric)
            .map_err(|e| ToolError::Failed(format!("JSON: {e}")))?;
        j.push('\n');
        j
    } else {
        ibnet::write(&fabric, &WriteOptions::default())
            .map_err(|e| ToolError::Failed(e.to_string()))?
    };
    if let Some(path) = &args.svg {
        let picture = picture(args, &mut port, &found, &fabric, &ids)?;
        write_atomic(path, &picture)?;
    }
    print!("{text}");
    if finished {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{TOOL}: time limit reached; the topology is partial");
        Ok(ExitCode::from(1))
    }
}

/// The SVG picture; with `--routes`, after reading every switch's forwarding table.
fn picture(
    args: &Args,
    port: &mut ibsm_umad::UmadTransport,
    found: &Discovered,
    fabric: &Fabric,
    ids: &[NodeId],
) -> Result<String, ToolError> {
    let mut counts = None;
    if args.routes {
        let switches: Vec<usize> = (0..found.nodes.len())
            .filter(|&i| found.nodes[i].is_switch())
            .collect();
        let paths: Vec<_> = switches.iter().map(|&i| found.nodes[i].path).collect();
        let top = fabric
            .nodes()
            .flat_map(|(_, n)| n.ports().map(|(_, p)| p.lid).chain([n.lid()]))
            .max()
            .unwrap_or(0);
        if top == 0 {
            return Err(ToolError::Failed(
                "--routes: no port has a LID (no SM has brought the subnet up)".into(),
            ));
        }
        let mut reader =
            LftReader::new(args.fabric.tx.smp(args.fabric.discover.m_key), &paths, top);
        run(
            &mut reader,
            port,
            args.fabric.discover.limit(),
            "reading forwarding tables",
        )?;
        for (i, b, e) in &reader.errors {
            eprintln!(
                "{:#018x} forwarding table block {b}: {e}",
                found.nodes[switches[*i]].info.node_guid
            );
        }
        let row: std::collections::HashMap<NodeId, usize> = switches
            .iter()
            .enumerate()
            .map(|(k, &i)| (ids[i], k))
            .collect();
        let tables = &reader.tables;
        counts = Some(svg::route_counts(fabric, |sw, lid| {
            let p = *tables.get(*row.get(&sw)?)?.get(usize::from(lid))?;
            (p != 0 && p != 0xFF).then_some(p)
        }));
    }
    let weight = |l| counts.as_ref().and_then(|c| c.get(&l)).map(|&c| c as f64);
    Ok(svg::to_svg(
        fabric,
        &SvgOptions {
            title: Some("ibsm-netdiscover".into()),
            link_weight: counts.is_some().then_some(&weight as &dyn Fn(_) -> _),
            weight_unit: "routes".into(),
            unhealthy: svg::state_marks(fabric, true),
            ..SvgOptions::default()
        },
    ))
}
