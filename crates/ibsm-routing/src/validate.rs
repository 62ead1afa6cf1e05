//! Validators that check any [`Routes`], independently of the engine that made them.

use std::collections::HashSet;

use ibsm_topology::Csr;

use crate::error::Result;
use crate::lids::LidAssignment;
use crate::net::{Dest, NONE, Net, Peer};
use crate::routes::Routes;

/// A defect found by [`check_reachability`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouteDefect {
    /// The routes do not match the snapshot (number of switches or LFT length).
    Shape(String),
    /// Switch `switch` has no entry for `lid` (or one pointing at an uncabled port) while
    /// the LID is assigned.
    NoRoute {
        /// Switch index.
        switch: usize,
        /// Destination LID.
        lid: u16,
        /// The entry found.
        port: u8,
    },
    /// Following the LFTs from `switch` towards `lid` revisits a switch.
    Loop {
        /// Switch index where the walk started.
        switch: usize,
        /// Destination LID.
        lid: u16,
    },
    /// The destination's switch sends `lid` out of the wrong port (should be the port of
    /// the CA, or 0 for the switch's own LID), or a switch other than the destination's
    /// sends it to a CA.
    WrongExit {
        /// Switch index.
        switch: usize,
        /// Destination LID.
        lid: u16,
        /// The entry found.
        port: u8,
        /// The entry expected (`None` when any switch port would do).
        expected: Option<u8>,
    },
}

impl std::fmt::Display for RouteDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RouteDefect::Shape(s) => write!(f, "routes do not fit the snapshot: {s}"),
            RouteDefect::NoRoute { switch, lid, port } => {
                write!(
                    f,
                    "switch #{switch} has no usable route to LID {lid} (entry {port})"
                )
            }
            RouteDefect::Loop { switch, lid } => {
                write!(f, "routes from switch #{switch} to LID {lid} loop")
            }
            RouteDefect::WrongExit {
                switch,
                lid,
                port,
                expected,
            } => write!(
                f,
                "switch #{switch} sends LID {lid} out of port {port}, expected {expected:?}"
            ),
        }
    }
}

/// What [`check_reachability`] checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReachStats {
    /// (switch, LID) pairs verified.
    pub pairs: usize,
    /// Longest path in switch-to-switch hops.
    pub max_hops: usize,
}

/// Checks that from every switch every assigned LID is reached without loops and leaves
/// the fabric at the right port.
///
/// # Errors
/// The outer `Result` fails on an inconsistent snapshot/assignment; the inner one reports
/// the first defect.
pub fn check_reachability(
    csr: &Csr,
    lids: &LidAssignment,
    routes: &Routes,
) -> Result<Result<ReachStats, RouteDefect>> {
    let net = lids.net(csr)?;
    Ok(reach_net(&net, routes))
}

pub(crate) fn reach_net(net: &Net, routes: &Routes) -> Result<ReachStats, RouteDefect> {
    if routes.n_sw != net.n_sw || routes.lft_len < net.lft_len {
        return Err(RouteDefect::Shape(format!(
            "{} switches x {} LIDs, snapshot has {} x {}",
            routes.n_sw, routes.lft_len, net.n_sw, net.lft_len
        )));
    }
    let mut st = ReachStats::default();
    // depth[s]: hops to the destination once known; NONE = unknown; NONE-1 = on the stack.
    let mut depth = vec![NONE; net.n_sw];
    let mut stack = Vec::new();
    for lid in 1..net.lft_len {
        let Some((t, exit)) = net.dest_switch(lid) else {
            continue;
        };
        let lid16 = lid as u16;
        let t = t as usize;
        let e = routes.lft(t)[lid];
        if e != exit {
            return Err(RouteDefect::WrongExit {
                switch: t,
                lid: lid16,
                port: e,
                expected: Some(exit),
            });
        }
        depth.fill(NONE);
        depth[t] = 0;
        for s0 in 0..net.n_sw {
            let mut s = s0;
            stack.clear();
            while depth[s] == NONE {
                depth[s] = NONE - 1;
                stack.push(s);
                let p = routes.lft(s)[lid];
                match net.peer(s, p) {
                    Peer::Switch { sw, .. } => s = sw as usize,
                    Peer::Term(_) => {
                        return Err(RouteDefect::WrongExit {
                            switch: s,
                            lid: lid16,
                            port: p,
                            expected: None,
                        });
                    }
                    Peer::None => {
                        return Err(RouteDefect::NoRoute {
                            switch: s,
                            lid: lid16,
                            port: p,
                        });
                    }
                }
            }
            if depth[s] == NONE - 1 {
                return Err(RouteDefect::Loop {
                    switch: s0,
                    lid: lid16,
                });
            }
            let mut d = depth[s];
            while let Some(x) = stack.pop() {
                d += 1;
                depth[x] = d;
            }
            st.max_hops = st.max_hops.max(depth[s0] as usize);
            st.pairs += 1;
        }
    }
    Ok(st)
}

/// One channel of a dependency cycle: the link `switch:port -> remote_switch:remote_port`
/// on virtual lane `vl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    /// Sending switch index.
    pub switch: usize,
    /// Output port.
    pub port: u8,
    /// Receiving switch index.
    pub remote_switch: usize,
    /// Input port on the receiving switch.
    pub remote_port: u8,
    /// Virtual lane.
    pub vl: u8,
}

/// Size of the channel dependency graph checked by [`check_deadlock_free`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CdgStats {
    /// VLs with at least one dependency.
    pub vls: u8,
    /// Distinct dependencies (channel pairs).
    pub dependencies: usize,
}

/// Builds the channel dependency graph of the routes (per VL, from the LFTs, the SLs and
/// the SL-to-VL tables) over all switch-to-switch links and reports the first cycle found,
/// as the list of channels around it.
///
/// The traffic is CA to CA (and router): every switch with a CA is a path start (CAs on
/// it share the path and SL) and every CA LID is a destination. Management traffic to and
/// from switch LIDs (SMA/PMA; SMPs travel on VL15 outside flow control anyway) is not
/// data traffic the engines keep deadlock-free: on a degraded fat tree a switch may not
/// even have an up/down path to another switch. [`check_deadlock_free_with`] includes
/// switch LIDs as destinations.
///
/// # Errors
/// The outer `Result` fails on an inconsistent snapshot/assignment; the inner one is the
/// cycle.
pub fn check_deadlock_free(
    csr: &Csr,
    lids: &LidAssignment,
    routes: &Routes,
) -> Result<Result<CdgStats, Vec<Channel>>> {
    check_deadlock_free_with(csr, lids, routes, false)
}

/// [`check_deadlock_free`], optionally with CA-to-switch-LID traffic too.
///
/// # Errors
/// As [`check_deadlock_free`].
pub fn check_deadlock_free_with(
    csr: &Csr,
    lids: &LidAssignment,
    routes: &Routes,
    switch_lids: bool,
) -> Result<Result<CdgStats, Vec<Channel>>> {
    let net = lids.net(csr)?;
    Ok(cdg_scope(&net, routes, switch_lids))
}

/// Dense dependency index: dependency `a -> b` (b leaves the head of a) is
/// `dbase[a] + (b - aoff[head(a)])`.
pub(crate) fn dep_base(net: &Net) -> Vec<usize> {
    let mut dbase = Vec::with_capacity(net.n_arcs() + 1);
    let mut acc = 0usize;
    for a in 0..net.n_arcs() {
        dbase.push(acc);
        let h = net.adst[a] as usize;
        acc += (net.aoff[h + 1] - net.aoff[h]) as usize;
    }
    dbase.push(acc);
    dbase
}

/// The arc leaving switch `s` through `port`, if it leads to a switch.
#[inline]
pub(crate) fn arc_of(net: &Net, s: usize, port: u8) -> u32 {
    match net.peer(s, port) {
        Peer::Switch { arc, .. } => arc,
        _ => NONE,
    }
}

#[cfg(test)]
pub(crate) fn cdg_net(net: &Net, routes: &Routes) -> Result<CdgStats, Vec<Channel>> {
    cdg_scope(net, routes, false)
}

pub(crate) fn cdg_scope(
    net: &Net,
    routes: &Routes,
    switch_lids: bool,
) -> Result<CdgStats, Vec<Channel>> {
    let dbase = dep_base(net);
    let ndeps = dbase[net.n_arcs()];
    // Same-VL dependencies, dense per VL; cross-VL ones (SL2VL changes on the way) sparse.
    let mut same: Vec<Vec<bool>> = Vec::new();
    let mut cross: HashSet<(u32, u8, u32, u8)> = HashSet::new();
    let mut add = |a: u32, va: u8, b: u32, vb: u8| {
        if va == vb {
            let v = usize::from(va);
            if same.len() <= v {
                same.resize(v + 1, Vec::new());
            }
            if same[v].is_empty() {
                same[v] = vec![false; ndeps];
            }
            let h = net.adst[a as usize] as usize;
            same[v][dbase[a as usize] + (b - net.aoff[h]) as usize] = true;
        } else {
            cross.insert((a, va, b, vb));
        }
    };
    let simple = routes.sl.is_none() && routes.sl2vl.is_none();
    let sources: Vec<usize> = (0..net.n_sw).filter(|&s| net.n_sources(s) > 0).collect();
    let mut active = vec![false; net.n_sw];
    let mut marked = Vec::new();
    for lid in 1..net.lft_len {
        if !switch_lids && !matches!(net.lid_dest[lid], Dest::Term(..)) {
            continue;
        }
        let Some((t, _)) = net.dest_switch(lid) else {
            continue;
        };
        let t = t as usize;
        if simple {
            // The union of the paths from every CA's switch is an in-tree: each switch on
            // it contributes one dependency (its hop -> the next switch's hop).
            for &x in &marked {
                active[x] = false;
            }
            marked.clear();
            for &s0 in &sources {
                let mut s = s0;
                while s != t && !active[s] {
                    active[s] = true;
                    marked.push(s);
                    let a = arc_of(net, s, routes.lft(s)[lid]);
                    if a == NONE {
                        break;
                    }
                    s = net.adst[a as usize] as usize;
                }
            }
            for &s in &marked {
                let a = arc_of(net, s, routes.lft(s)[lid]);
                if a == NONE {
                    continue;
                }
                let x = net.adst[a as usize] as usize;
                if x == t {
                    continue;
                }
                let b = arc_of(net, x, routes.lft(x)[lid]);
                if b != NONE {
                    add(a, 0, b, 0);
                }
            }
        } else {
            for &s0 in &sources {
                let sl = routes.sl(s0, lid as u16);
                let mut s = s0;
                let mut prev: Option<(u32, u8)> = None;
                for _ in 0..net.n_sw {
                    if s == t {
                        break;
                    }
                    let p = routes.lft(s)[lid];
                    let a = arc_of(net, s, p);
                    if a == NONE {
                        break;
                    }
                    let vl = routes.vl(s, p, sl);
                    if let Some((pa, pv)) = prev {
                        add(pa, pv, a, vl);
                    }
                    prev = Some((a, vl));
                    s = net.adst[a as usize] as usize;
                }
            }
        }
    }
    let nvl = same.len().max(
        cross
            .iter()
            .map(|c| usize::from(c.1.max(c.3)) + 1)
            .max()
            .unwrap_or(0),
    );
    let mut cross_out: std::collections::HashMap<(u32, u8), Vec<(u32, u8)>> = Default::default();
    for &(a, va, b, vb) in &cross {
        cross_out.entry((a, va)).or_default().push((b, vb));
    }
    let deps = same
        .iter()
        .map(|v| v.iter().filter(|&&x| x).count())
        .sum::<usize>()
        + cross.len();
    // Iterative DFS over channels (arc, vl).
    let na = net.n_arcs();
    let mut color = vec![0u8; na * nvl.max(1)];
    let succ = |a: u32, v: u8, out: &mut Vec<(u32, u8)>| {
        out.clear();
        if let Some(d) = same.get(usize::from(v)) {
            if !d.is_empty() {
                let h = net.adst[a as usize] as usize;
                let base = dbase[a as usize];
                for (i, b) in net.arcs(h).enumerate() {
                    if d[base + i] {
                        out.push((b as u32, v));
                    }
                }
            }
        }
        if let Some(c) = cross_out.get(&(a, v)) {
            out.extend_from_slice(c);
        }
    };
    type Frame = ((u32, u8), Vec<(u32, u8)>, usize);
    let mut stack: Vec<Frame> = Vec::new();
    for v in 0..nvl as u8 {
        for a0 in 0..na as u32 {
            if color[usize::from(v) * na + a0 as usize] != 0 {
                continue;
            }
            let mut s0 = Vec::new();
            succ(a0, v, &mut s0);
            color[usize::from(v) * na + a0 as usize] = 1;
            stack.push(((a0, v), s0, 0));
            while let Some(top) = stack.last_mut() {
                if top.2 < top.1.len() {
                    let (b, vb) = top.1[top.2];
                    top.2 += 1;
                    let ci = usize::from(vb) * na + b as usize;
                    match color[ci] {
                        0 => {
                            color[ci] = 1;
                            let mut sb = Vec::new();
                            succ(b, vb, &mut sb);
                            stack.push(((b, vb), sb, 0));
                        }
                        1 => {
                            // Cycle: from (b, vb) to the top of the stack.
                            let start = stack.iter().position(|f| f.0 == (b, vb)).unwrap_or(0);
                            return Err(stack[start..]
                                .iter()
                                .map(|f| {
                                    let (a, vl) = f.0;
                                    let a = a as usize;
                                    Channel {
                                        switch: net.asrc[a] as usize,
                                        port: net.aport[a],
                                        remote_switch: net.adst[a] as usize,
                                        remote_port: net.arport[a],
                                        vl,
                                    }
                                })
                                .collect());
                        }
                        _ => {}
                    }
                } else {
                    let (a, va) = top.0;
                    color[usize::from(va) * na + a as usize] = 2;
                    stack.pop();
                }
            }
        }
    }
    Ok(CdgStats {
        vls: same.iter().filter(|v| v.iter().any(|&x| x)).count() as u8,
        dependencies: deps,
    })
}
