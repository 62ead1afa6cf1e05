//! `ibsm-topodiff`: a fabric compared with a reference topology (its cabling plan) by
//! node GUID and port, as ibsmd's `topology_ref_file` check does
//! (`ibsm_topology::diff`, the same typed differences printed the same way).
//!
//! ```text
//! ibsm-topodiff REF [CURRENT] [-C CA] [-P PORT] [--node-name-map FILE] [--timeout MS]
//!               [--retries N] [--m-key KEY] [--window N] [--time-limit SECS]
//! ```
//!
//! REF and CURRENT are in ibnetdiscover's format (what `ibnetdiscover` and
//! `ibsm-netdiscover` print; ibsim net files read too). Without CURRENT the fabric
//! behind the local port is discovered over directed routes (`ibsm-query`), as
//! `ibsm-netdiscover` does. Each difference is one line on stdout (missing and
//! unexpected nodes, missing, extra and miswired cables naming where each end should
//! lead, links below the planned width or speed), each node's name after it.
//!
//! Exit code as diff(1)'s: 0 when the fabric is cabled as planned, 1 when it differs,
//! 2 when a file does not read (its name and line on stderr), an argument is bad, or
//! the discovery failed or hit its time limit.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ibsm_tools::{FabricArgs, ToolError};
use ibsm_topology::diff::{Difference, diff};
use ibsm_topology::{Fabric, Guid, ibnet};

/// Compare the fabric with a reference topology; print every difference.
#[derive(Debug, Parser)]
#[command(name = "ibsm-topodiff", version)]
struct Args {
    /// The reference topology (ibnetdiscover's format).
    reference: PathBuf,
    /// The fabric as it is (ibnetdiscover's format); without it, discovered live.
    current: Option<PathBuf>,
    /// The live discovery (without CURRENT).
    #[command(flatten)]
    fabric: FabricArgs,
}

const TOOL: &str = "ibsm-topodiff";

fn main() -> ExitCode {
    match compare(&Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            // diff(1)'s convention: 1 is "different", trouble is 2.
            let _ = e.report(TOOL);
            ExitCode::from(2)
        }
    }
}

/// A topology file, its errors naming it (and the line).
fn read(path: &PathBuf) -> Result<Fabric, ToolError> {
    ibnet::read_file(path)
        .map(|p| p.fabric)
        .map_err(|e| ToolError::Usage(e.to_string()))
}

/// The fabric behind the local port, as `ibsm-netdiscover` finds it.
fn discover(args: &Args) -> Result<Fabric, ToolError> {
    let (_port, walk) = args.fabric.walk()?;
    if !walk.is_done() {
        // A partial fabric would show every node not reached as missing.
        return Err(ToolError::Failed(
            "time limit reached; the discovery is partial".into(),
        ));
    }
    let found = walk.into_found();
    for (path, e) in &found.unreachable {
        eprintln!("unreachable: route {path}: {e}");
    }
    found
        .to_fabric()
        .map_err(|e| ToolError::Failed(format!("the answers contradict each other: {e}")))
}

/// Prints the differences; `true` when there is none.
fn compare(args: &Args) -> Result<bool, ToolError> {
    let names = args.fabric.names.load()?;
    let reference = read(&args.reference)?;
    let current = match &args.current {
        Some(path) => read(path)?,
        None => discover(args)?,
    };
    let found = diff(&reference, &current);
    for d in &found {
        println!("{d}{}", named(d, &reference, &current, &names));
    }
    if !found.is_empty() {
        eprintln!("{TOOL}: {} difference(s)", found.len());
    }
    Ok(found.is_empty())
}

/// `  # guid "name", ...` for the nodes a difference names (its name in the reference,
/// else in the fabric, through the node-name map); empty when none has one.
fn named(
    d: &Difference,
    reference: &Fabric,
    current: &Fabric,
    names: &ibsm_tools::Names,
) -> String {
    let guids: BTreeSet<Guid> = match d {
        Difference::MissingNode(_) | Difference::UnexpectedNode(_) => BTreeSet::new(),
        Difference::MissingCable { a, b }
        | Difference::ExtraCable { a, b }
        | Difference::Degraded { a, b, .. } => [a.guid, b.guid].into(),
        Difference::Miswired { a, b } => [Some(a.port), a.expected, Some(b.port), b.expected]
            .into_iter()
            .flatten()
            .map(|p| p.guid)
            .collect(),
        _ => BTreeSet::new(),
    };
    let described: Vec<String> = guids
        .into_iter()
        .filter_map(|g| {
            let node = [reference, current]
                .into_iter()
                .find_map(|f| f.node(f.node_by_guid(g)?))?;
            let name = names.name(g.0, node.description.as_bytes());
            (!name.is_empty()).then(|| format!("{g} {name:?}"))
        })
        .collect();
    if described.is_empty() {
        String::new()
    } else {
        format!("  # {}", described.join(", "))
    }
}
