//! Incremental re-routing after a link failure.

use crate::balance::{
    Loads, NoPref, Plan, Planner, RouteStats, Rule, local_ok, repair, repair_local, route_all,
};
use crate::engine::{RouteOptions, check_reach};
use crate::error::Result;
use crate::net::{Net, Peer};
use crate::routes::{NO_ROUTE, Routes};

/// Recomputes only the LIDs whose routes cross a port that no longer leads anywhere; all
/// other columns are kept (their paths are unchanged and still shortest/legal, since
/// removing links only lengthens distances). For such a LID, when every neighbour of each
/// switch whose port died still has its previous path, those paths are the new shortest
/// (legal) ones and only the switches whose port died change their entry; otherwise the
/// destination switch is planned again (one BFS) and every switch whose old port is still
/// eligible keeps it. Up/down engines reuse the previous switch order so old and new
/// columns obey the same up/down direction.
pub(crate) fn reroute_net(
    net: &Net,
    rule: Rule<'_>,
    opts: &RouteOptions,
    previous: &Routes,
    name: &str,
) -> Result<Routes> {
    let len = net.lft_len;
    let same_shape = previous.n_sw == net.n_sw && previous.lft_len == len;
    // Up/down order: the previous one if recorded.
    let prev_order = previous.updown_pos.as_ref().filter(|p| p.len() == net.n_sw);
    let by_pos_prev: Option<Vec<u32>> = prev_order.map(|pos| {
        let mut v = vec![0u32; pos.len()];
        for (s, &p) in pos.iter().enumerate() {
            v[p as usize] = s as u32;
        }
        v
    });
    let rule = match (rule, prev_order, &by_pos_prev) {
        (Rule::UpDown { .. }, Some(pos), Some(by_pos)) => Rule::UpDown { pos, by_pos },
        (r, ..) => r,
    };
    let mut r = if same_shape {
        previous.clone()
    } else {
        Routes::new_filled_by(name, net.n_sw, len, opts.threads)
    };
    r.engine = name.to_string();
    if !same_shape {
        let st = route_all(net, rule, opts.threads, &mut r.lfts, &NoPref);
        check_reach(st, opts, "")?;
        return Ok(r);
    }
    // Which LIDs need work: those some switch sends out of a port that leads nowhere now
    // (LID, broken switch), sorted by LID.
    let mut broken: Vec<(u16, u32)> = Vec::new();
    for s in 0..net.n_sw {
        let mut dead = [true; 256];
        dead[usize::from(NO_ROUTE)] = false;
        for p in 0..=net.nports[s] {
            dead[usize::from(p)] = p != 0 && matches!(net.peer(s, p), Peer::None);
        }
        if !dead[1..=usize::from(net.nports[s])].contains(&true)
            && previous
                .lft(s)
                .iter()
                .all(|&p| p <= net.nports[s] || p == NO_ROUTE)
        {
            continue;
        }
        for (l, &p) in previous.lft(s).iter().enumerate() {
            if dead[usize::from(p)] {
                broken.push((l as u16, s as u32));
            }
        }
    }
    broken.sort_unstable();
    let broken_of = |lid: u16| -> Vec<u32> {
        let i = broken.partition_point(|&(l, _)| l < lid);
        broken[i..]
            .iter()
            .take_while(|&&(l, _)| l == lid)
            .map(|&(_, s)| s)
            .collect()
    };
    let up: Option<Vec<bool>> = match rule {
        Rule::MinHop => None,
        Rule::UpDown { pos, .. } => Some(
            (0..net.n_arcs())
                .map(|a| pos[net.adst[a] as usize] < pos[net.asrc[a] as usize])
                .collect(),
        ),
    };
    let prev = &previous.lfts;
    let mut rows: Vec<&mut [u8]> = r.lfts.chunks_mut(len).collect();
    let mut p = Planner::new(net, rule);
    let mut plan = Plan::default();
    let mut loads = Loads::new(net);
    let (mut lids, mut buf) = (Vec::new(), Vec::new());
    let mut st = RouteStats::default();
    for t in 0..net.n_sw {
        net.lids_on(t, &mut lids);
        lids.retain(|&(l, ..)| broken.binary_search_by_key(&l, |b| b.0).is_ok());
        if lids.is_empty() {
            continue;
        }
        // Most LIDs only need the switches whose port died to pick another next hop;
        // a full plan of the destination is needed when the failure lengthens paths.
        let sets: Vec<Vec<u32>> = lids.iter().map(|l| broken_of(l.0)).collect();
        if lids
            .iter()
            .zip(&sets)
            .all(|(l, b)| local_ok(net, prev, up.as_deref(), t, l.0, b))
        {
            for (&l, b) in lids.iter().zip(&sets) {
                repair_local(
                    net,
                    prev,
                    up.as_deref(),
                    t,
                    l,
                    b,
                    &mut rows,
                    &mut loads,
                    &mut buf,
                );
            }
            continue;
        }
        // Switch LIDs alone (no CA traffic) are planned like a full route plans them.
        let quick = lids.iter().all(|l| l.1 == 0);
        p.plan_lazy(t, quick, &mut plan);
        st.escapes += plan.escaped.len();
        if st.unreachable.is_none() {
            st.unreachable = plan.unreachable.map(|s| (s, lids[0].0));
        }
        repair(&p, &plan, &lids, &mut rows, &mut loads, &mut buf);
    }
    st.escape_traffic = loads.escape_traffic;
    check_reach(st, opts, "")?;
    Ok(r)
}
