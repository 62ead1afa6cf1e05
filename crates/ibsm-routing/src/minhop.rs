//! `minhop`: balanced shortest paths.

use ibsm_topology::Csr;

use crate::balance::{NoPref, Rule, route_all};
use crate::engine::{RouteOptions, RoutingEngine, check_reach};
use crate::error::Result;
use crate::lids::LidAssignment;
use crate::net::Net;
use crate::routes::Routes;

/// Shortest paths, balanced by traffic flow across equal-cost ports (see the
/// [`balance`](crate) notes in the crate docs). Not deadlock-free on topologies with
/// cycles of shortest paths (tori, random graphs); use `updn`, `lash` or `dfsssp` there.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinHop;

pub(crate) fn minhop_net(net: &Net, opts: &RouteOptions) -> Result<Routes> {
    let mut r = Routes::new_filled_by("minhop", net.n_sw, net.lft_len, opts.threads);
    let st = route_all(net, Rule::MinHop, opts.threads, &mut r.lfts, &NoPref);
    check_reach(st, opts, "")?;
    Ok(r)
}

impl RoutingEngine for MinHop {
    fn name(&self) -> &str {
        "minhop"
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Result<Routes> {
        let uses = crate::inputs::Uses::ORDER;
        minhop_net(&crate::inputs::net(csr, lids, opts, uses)?, opts)
    }

    fn reroute(
        &self,
        csr: &Csr,
        lids: &LidAssignment,
        opts: &RouteOptions,
        previous: &Routes,
    ) -> Result<Routes> {
        let net = lids.net(csr)?;
        crate::reroute::reroute_net(&net, Rule::MinHop, opts, previous, "minhop")
    }
}
