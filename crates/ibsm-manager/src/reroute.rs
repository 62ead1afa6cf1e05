//! When a sweep may re-route instead of recomputing: the fabric only lost things.
//!
//! A full recompute after one dead cable reshuffles traffic across the whole fabric (every
//! changed LFT entry moves traffic and costs SMPs). When the new snapshot is the previous
//! routed one minus some links and nodes, with every surviving port keeping its LID, the
//! previous routes stay legal except where they use a dead port, and
//! [`ibsm_routing::RoutingEngine::reroute`] repairs only those. Anything that grew (a new
//! node, a new cable, a cable moved, a LID changed) gets a full recompute, which is also
//! how new CAs get their routes and how a repaired fabric is rebalanced.

use std::collections::HashMap;

use ibsm_topology::csr::NO_SWITCH;
use ibsm_topology::{Csr, Target};

/// What a switch port leads to, by identity rather than snapshot index: the GUID at the
/// far end (switch node GUID or terminal port GUID) and its port number there.
fn far_end(csr: &Csr, t: Target, remote: u8) -> Option<(u64, u8)> {
    if let Some(s) = t.as_switch() {
        Some((csr.switch_guid[s as usize].0, remote))
    } else {
        t.terminal().map(|x| (csr.term_guid[x as usize].0, remote))
    }
}

/// If `new` differs from `prev` only by lost links and lost nodes (no node, cable or LID
/// that `prev` did not have, no surviving port whose LID or LMC changed), the index in
/// `prev` of every switch of `new` (by GUID). `None` when anything grew or moved.
#[must_use]
pub(crate) fn losses_only(prev: &Csr, new: &Csr) -> Option<Vec<u32>> {
    let old_sw: HashMap<u64, u32> = prev
        .switch_guid
        .iter()
        .enumerate()
        .map(|(i, g)| (g.0, i as u32))
        .collect();
    let mut old_index = Vec::with_capacity(new.switch_count());
    for s in 0..new.switch_count() {
        let o = *old_sw.get(&new.switch_guid[s].0)?;
        if prev.switch_lid[o as usize] != new.switch_lid[s]
            || prev.num_ports(o) != new.num_ports(s as u32)
        {
            return None;
        }
        old_index.push(o);
    }
    for (s, &o) in old_index.iter().enumerate() {
        for (p, t, r) in new.ports_of(s as u32) {
            if t.is_none() {
                continue;
            }
            let slot = prev.port_start[o as usize] as usize + usize::from(p);
            let (was, was_remote) = (prev.port_target[slot], prev.port_remote[slot]);
            if was.is_none() || far_end(new, t, r) != far_end(prev, was, was_remote) {
                return None;
            }
        }
    }
    let old_term: HashMap<u64, usize> = prev
        .term_guid
        .iter()
        .enumerate()
        .map(|(i, g)| (g.0, i))
        .collect();
    let sw_guid = |c: &Csr, s: u32| (s != NO_SWITCH).then(|| c.switch_guid[s as usize].0);
    for t in 0..new.terminal_count() {
        let o = *old_term.get(&new.term_guid[t].0)?;
        if prev.term_lid[o] != new.term_lid[t]
            || prev.term_lmc[o] != new.term_lmc[t]
            || prev.term_port[o] != new.term_port[t]
            || sw_guid(prev, prev.term_switch[o]) != sw_guid(new, new.term_switch[t])
            || prev.term_switch_port[o] != new.term_switch_port[t]
        {
            return None;
        }
    }
    Some(old_index)
}

/// Whether `new` is the same fabric as `prev` (same switches, terminals, cables and
/// LIDs), whatever order the sweeps found them in.
#[must_use]
pub(crate) fn same_fabric(prev: &Csr, new: &Csr) -> bool {
    let cables = |c: &Csr| c.port_target.iter().filter(|t| !t.is_none()).count();
    prev.switch_count() == new.switch_count()
        && prev.terminal_count() == new.terminal_count()
        && cables(prev) == cables(new)
        && losses_only(prev, new).is_some()
}

/// The LFT length the routing engines use for `csr`: highest LID of a switch or of a
/// terminal cabled to a switch, plus one.
#[must_use]
pub(crate) fn lft_len(csr: &Csr) -> usize {
    let sw = csr.switch_lid.iter().copied().max().unwrap_or(0);
    let terms = (0..csr.terminal_count())
        .filter(|&t| csr.term_switch[t] != NO_SWITCH && csr.term_lid[t] != 0)
        // Base LIDs are LMC-aligned: OR-ing the mask is the top of the range.
        .map(|t| csr.term_lid[t] | ((1u16 << csr.term_lmc[t].min(7)) - 1))
        .max()
        .unwrap_or(0);
    usize::from(sw.max(terms)) + 1
}

/// Which LIDs `csr` assigns (switch port 0 and every LID of every terminal's LMC range),
/// indexed by LID, `lft_len` long.
#[must_use]
pub(crate) fn live_lids(csr: &Csr, lft_len: usize) -> Vec<bool> {
    let mut live = vec![false; lft_len];
    let mut mark = |base: u16, lmc: u8| {
        if base == 0 {
            return;
        }
        for l in usize::from(base)..usize::from(base) + (1usize << lmc) {
            if let Some(x) = live.get_mut(l) {
                *x = true;
            }
        }
    };
    for &l in &csr.switch_lid {
        mark(l, 0);
    }
    for (&l, &m) in csr.term_lid.iter().zip(&csr.term_lmc) {
        mark(l, m);
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_topology::{Fabric, generate};

    fn tree() -> Fabric {
        generate::fat_tree(8, 2).unwrap()
    }

    fn isl(f: &Fabric) -> (ibsm_topology::NodeId, u8) {
        let (id, n) = f.switches().next().unwrap();
        for (p, _) in n.ports() {
            if let Some(peer) = f.neighbour(id, p) {
                if f.node(peer).unwrap().is_switch() {
                    return (id, p);
                }
            }
        }
        panic!("no inter-switch link");
    }

    #[test]
    fn same_fabric_and_lost_link_are_losses_only() {
        let f = tree();
        let prev = Csr::new(&f);
        let same = losses_only(&prev, &prev).unwrap();
        assert_eq!(same, (0..prev.switch_count() as u32).collect::<Vec<_>>());
        let mut g = f.clone();
        let (id, p) = isl(&g);
        g.disconnect(id, p).unwrap();
        let cut = Csr::new(&g);
        assert!(losses_only(&prev, &cut).is_some());
        // The other way round the fabric grew.
        assert!(losses_only(&cut, &prev).is_none());
    }

    #[test]
    fn lost_ca_is_a_loss_and_lost_switch_maps_by_guid() {
        let f = tree();
        let prev = Csr::new(&f);
        let mut g = f.clone();
        let ca = g.cas().next().unwrap().0;
        g.remove_node(ca).unwrap();
        assert!(losses_only(&prev, &Csr::new(&g)).is_some());
        let mut g = f.clone();
        let sw = g.switches().next().unwrap().0;
        let guid = g.node(sw).unwrap().guid();
        g.remove_node(sw).unwrap();
        let new = Csr::new(&g);
        let map = losses_only(&prev, &new).unwrap();
        assert_eq!(map.len(), prev.switch_count() - 1);
        for (s, &o) in map.iter().enumerate() {
            assert_eq!(new.switch_guid[s], prev.switch_guid[o as usize]);
            assert_ne!(new.switch_guid[s], guid);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Any set of lost cables and nodes is a loss (switches map by GUID); the same
        /// change seen backwards is growth unless nothing changed.
        #[test]
        fn random_losses(
            cut in proptest::collection::vec(proptest::bool::weighted(0.15), 64..=64),
            gone in proptest::collection::vec(proptest::bool::weighted(0.08), 44..=44),
        ) {
            let f = tree();
            let mut g = f.clone();
            let links: Vec<_> = g.links().map(|(id, _)| id).collect();
            let mut changed = false;
            for (i, l) in links.into_iter().enumerate() {
                if cut[i % cut.len()] {
                    g.remove_link(l).unwrap();
                    changed = true;
                }
            }
            let nodes: Vec<_> = g.node_ids().collect();
            for (i, n) in nodes.into_iter().enumerate() {
                if gone[i % gone.len()] {
                    g.remove_node(n).unwrap();
                    changed = true;
                }
            }
            let (prev, new) = (Csr::new(&f), Csr::new(&g));
            let map = losses_only(&prev, &new).expect("only losses");
            proptest::prop_assert_eq!(map.len(), new.switch_count());
            for (s, &o) in map.iter().enumerate() {
                proptest::prop_assert_eq!(new.switch_guid[s], prev.switch_guid[o as usize]);
            }
            proptest::prop_assert_eq!(losses_only(&new, &prev).is_none(), changed);
        }
    }

    #[test]
    fn moved_cable_is_not_a_loss() {
        let f = tree();
        let prev = Csr::new(&f);
        let mut g = f.clone();
        // Two CAs swap their cables: same nodes and cable count, but cables that did
        // not exist.
        let cas: Vec<_> = g.cas().map(|(id, _)| id).collect();
        let (a, b) = (cas[0], cas[1]);
        let (pa, pb) = (g.port_peer(a, 1).unwrap(), g.port_peer(b, 1).unwrap());
        g.disconnect(a, 1).unwrap();
        g.disconnect(b, 1).unwrap();
        g.connect(a, 1, pb.node, pb.port).unwrap();
        g.connect(b, 1, pa.node, pa.port).unwrap();
        assert!(losses_only(&prev, &Csr::new(&g)).is_none());
    }
}
