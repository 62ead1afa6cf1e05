//! OpenSM's routing input files ([`RouteOptions::roots`], [`RouteOptions::compute_nodes`],
//! [`RouteOptions::io_nodes`] with [`RouteOptions::max_reverse_hops`], [`RouteOptions::routing_order`])
//! resolved on the compact picture,
//! by GUID, once per routing: the engines then only read switch and terminal indices.

use std::collections::{HashMap, HashSet};

use ibsm_topology::csr::NO_SWITCH;
use ibsm_topology::{Csr, Guid};

use crate::engine::RouteOptions;
use crate::error::{Result, RoutingError};
use crate::lids::LidAssignment;
use crate::net::Net;

/// Which inputs an engine reads (OpenSM's engines each read a different subset).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Uses {
    /// `root_guid_file`.
    pub roots: bool,
    /// `cn_guid_file`, `io_guid_file` and `max_reverse_hops`.
    pub nodes: bool,
    /// `guid_routing_order_file`.
    pub order: bool,
}

impl Uses {
    /// The routing order alone (minhop).
    pub(crate) const ORDER: Uses = Uses {
        roots: false,
        nodes: false,
        order: true,
    };
    /// The roots and the routing order (up/down, DFSSSP).
    pub(crate) const ROOTS_ORDER: Uses = Uses {
        roots: true,
        nodes: false,
        order: true,
    };
    /// The roots and the compute / I/O nodes (fat tree).
    pub(crate) const ROOTS_NODES: Uses = Uses {
        roots: true,
        nodes: true,
        order: false,
    };
}

/// The compact picture of `csr` under `lids`, with the inputs `uses` names resolved
/// into it: what every engine that reads input files starts from.
///
/// # Errors
/// As [`LidAssignment::net`]; [`RoutingError::InvalidInput`] when roots are given and
/// none of them is in the fabric.
pub(crate) fn net(csr: &Csr, lids: &LidAssignment, opts: &RouteOptions, uses: Uses) -> Result<Net> {
    let mut net = lids.net(csr)?;
    apply(&mut net, csr, opts, uses)?;
    Ok(net)
}

/// Resolves the inputs `uses` names into `net`.
fn apply(net: &mut Net, csr: &Csr, opts: &RouteOptions, uses: Uses) -> Result<()> {
    if uses.roots && !opts.roots.is_empty() {
        net.roots = roots(csr, &opts.roots)?;
    }
    if uses.nodes && (!opts.compute_nodes.is_empty() || !opts.io_nodes.is_empty()) {
        net.cn = compute_nodes(net, csr, opts);
    }
    if uses.nodes && opts.max_reverse_hops > 0 && !opts.io_nodes.is_empty() {
        let io: HashSet<Guid> = opts.io_nodes.iter().copied().collect();
        net.io = (0..net.terms.len())
            .map(|t| io.contains(&csr.term_guid[t]))
            .collect();
        net.max_reverse_hops = opts.max_reverse_hops;
    }
    if uses.order && !opts.routing_order.is_empty() {
        order(net, csr, &opts.routing_order);
    }
    Ok(())
}

/// Root switch indices: a switch GUID names the switch, a CA port GUID the switch it is
/// cabled to. GUIDs not in the fabric (a root switch that is gone) are skipped, so the
/// others still rank the fabric.
fn roots(csr: &Csr, guids: &[Guid]) -> Result<Vec<u32>> {
    let mut out: Vec<u32> = Vec::new();
    for g in guids {
        let s = csr
            .switch_guid
            .iter()
            .position(|x| x == g)
            .map(|s| s as u32)
            .or_else(|| {
                let t = csr.term_guid.iter().position(|x| x == g)?;
                Some(csr.term_switch[t]).filter(|&s| s != NO_SWITCH)
            });
        if let Some(s) = s {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    if out.is_empty() {
        return Err(RoutingError::InvalidInput(format!(
            "none of the {} root GUIDs ({}{}) is a switch or CA port of the fabric",
            guids.len(),
            guids[0],
            if guids.len() > 1 { ", ..." } else { "" }
        )));
    }
    Ok(out)
}

/// Per terminal, whether it is a compute node: listed in `compute_nodes` (or, with no
/// such list, any CA) and not listed in `io_nodes`.
fn compute_nodes(net: &Net, csr: &Csr, opts: &RouteOptions) -> Vec<bool> {
    let cn: HashSet<Guid> = opts.compute_nodes.iter().copied().collect();
    let io: HashSet<Guid> = opts.io_nodes.iter().copied().collect();
    // The compact picture numbers terminals as the snapshot does (by switch, switchless
    // ones last and left out).
    (0..net.terms.len())
        .map(|t| {
            let g = csr.term_guid[t];
            !io.contains(&g) && (cn.is_empty() || cn.contains(&g))
        })
        .collect()
}

/// The routing order: each terminal's place in `guids`, and the destination switches
/// sorted by the first place of their terminals (or of the switch itself).
fn order(net: &mut Net, csr: &Csr, guids: &[Guid]) {
    let mut at: HashMap<Guid, u32> = HashMap::with_capacity(guids.len());
    for (i, g) in guids.iter().enumerate() {
        at.entry(*g).or_insert(i as u32);
    }
    let pos = |g: &Guid| at.get(g).copied().unwrap_or(u32::MAX);
    net.term_pos = (0..net.terms.len())
        .map(|t| pos(&csr.term_guid[t]))
        .collect();
    let key: Vec<u32> = (0..net.n_sw)
        .map(|s| {
            net.terms_of(s)
                .iter()
                .map(|&t| net.term_pos[t as usize])
                .fold(pos(&csr.switch_guid[s]), u32::min)
        })
        .collect();
    let mut d: Vec<u32> = (0..net.n_sw as u32).collect();
    d.sort_by_key(|&s| (key[s as usize], s));
    net.dest_order = d;
}
