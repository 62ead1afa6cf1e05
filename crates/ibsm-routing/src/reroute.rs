//! Incremental re-routing after a link failure.

use crate::balance::{Job, NoPref, Prefer, Rule, route_lids};
use crate::engine::{Options, check_reach};
use crate::error::Result;
use crate::net::{Net, Peer};
use crate::routes::{NO_ROUTE, Routes};

/// Keeps the previous port wherever it is still eligible.
struct Keep<'a> {
    prev: &'a Routes,
}

impl Prefer for Keep<'_> {
    fn prefer(&self, net: &Net, s: usize, lid: u16, elig: &[u32], _: &[u64]) -> Option<u32> {
        let old = self.prev.lft(s)[usize::from(lid)];
        elig.iter().copied().find(|&a| net.aport[a as usize] == old)
    }
}

/// Recomputes only the LIDs whose routes cross a port that no longer leads anywhere; all
/// other columns are kept (their paths are unchanged and still shortest/legal, since
/// removing links only lengthens distances). Inside a recomputed column every switch whose
/// old port is still eligible keeps it. Up/down engines reuse the previous switch order so
/// old and new columns obey the same up/down direction.
pub(crate) fn reroute_net(
    net: &Net,
    rule: Rule<'_>,
    opts: &Options,
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
        Routes::new(name, net.n_sw, len)
    };
    r.engine = name.to_string();
    // Which LIDs need work.
    let mut affected = vec![!same_shape; len];
    if same_shape {
        for s in 0..net.n_sw {
            let dead: Vec<bool> = (0..=net.nports[s])
                .map(|p| matches!(net.peer(s, p), Peer::None) && p != 0)
                .collect();
            for (l, &p) in previous.lft(s).iter().enumerate() {
                if p != NO_ROUTE && dead.get(usize::from(p)).copied().unwrap_or(true) {
                    affected[l] = true;
                }
            }
        }
    }
    let keep = Keep { prev: previous };
    let job = Job {
        rule,
        threads: opts.threads,
        pref: if same_shape {
            &keep as &dyn Prefer
        } else {
            &NoPref
        },
        only: Some(&affected),
        quick: false,
    };
    let st = route_lids(net, &job, &mut r.lfts);
    check_reach(st, opts, "")?;
    Ok(r)
}
