//! Whole-fabric queries: connected components, hop distances, degree statistics.

use std::collections::VecDeque;

use crate::csr::Csr;
use crate::fabric::Fabric;
use crate::types::{NodeId, NodeKind};

/// min / max / mean of a per-node count.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Summary {
    /// Smallest value (0 when there are no samples).
    pub min: usize,
    /// Largest value.
    pub max: usize,
    /// Mean (0.0 when there are no samples).
    pub mean: f64,
    /// Number of samples.
    pub count: usize,
}

impl Summary {
    fn of(values: impl Iterator<Item = usize>) -> Self {
        let mut s = Summary {
            min: usize::MAX,
            ..Summary::default()
        };
        let mut total = 0usize;
        for v in values {
            s.min = s.min.min(v);
            s.max = s.max.max(v);
            total += v;
            s.count += 1;
        }
        if s.count == 0 {
            s.min = 0;
        } else {
            s.mean = total as f64 / s.count as f64;
        }
        s
    }
}

/// Degree statistics of a fabric, per switch.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DegreeStats {
    /// Connected external ports per switch.
    pub switch_ports_used: Summary,
    /// Switch-to-switch cables per switch.
    pub switch_links: Summary,
    /// Distinct neighbour switches per switch.
    pub switch_neighbours: Summary,
    /// Terminal (CA/router) ports per switch, over switches with at least one ("leaves").
    pub terminals_per_leaf: Summary,
    /// Unordered switch pairs joined by more than one cable.
    pub parallel_pairs: usize,
    /// Most cables between any two switches.
    pub max_parallel: usize,
    /// Ports with nothing cabled (switches and terminals).
    pub free_ports: usize,
}

impl Fabric {
    /// Connected components, each as node IDs in GUID order; components ordered by their
    /// lowest GUID.
    #[must_use]
    pub fn components(&self) -> Vec<Vec<NodeId>> {
        let bound = self.node_bound();
        let mut seen = vec![false; bound];
        let mut out = Vec::new();
        let mut queue = VecDeque::new();
        for (id, _) in self.nodes() {
            if seen[id.index()] {
                continue;
            }
            let mut comp = Vec::new();
            seen[id.index()] = true;
            queue.push_back(id);
            while let Some(u) = queue.pop_front() {
                comp.push(u);
                for (_, peer, _) in self.links_of(u) {
                    if !seen[peer.node.index()] {
                        seen[peer.node.index()] = true;
                        queue.push_back(peer.node);
                    }
                }
            }
            comp.sort_by_key(|&n| self.guid_of(n));
            out.push(comp);
        }
        out
    }

    /// Whether every node can reach every other (an empty fabric is connected).
    #[must_use]
    pub fn is_connected(&self) -> bool {
        let Some(first) = self.node_ids().next() else {
            return true;
        };
        let mut seen = vec![false; self.node_bound()];
        let mut stack = vec![first];
        seen[first.index()] = true;
        let mut count = 0;
        while let Some(u) = stack.pop() {
            count += 1;
            for (_, peer, _) in self.links_of(u) {
                if !seen[peer.node.index()] {
                    seen[peer.node.index()] = true;
                    stack.push(peer.node);
                }
            }
        }
        count == self.node_count()
    }

    /// Hop count between two switches, walking only through switches (the path routing
    /// can use). `None` if either is not a switch or there is no path.
    ///
    /// For many queries take a [`Csr`] once and use [`Csr::hops_from`].
    #[must_use]
    pub fn switch_hops(&self, from: NodeId, to: NodeId) -> Option<u32> {
        let is_sw = |id: NodeId| {
            self.node(id)
                .is_some_and(|n| n.node_type() == NodeKind::Switch)
        };
        if !is_sw(from) || !is_sw(to) {
            return None;
        }
        let mut dist = vec![u32::MAX; self.node_bound()];
        let mut queue = VecDeque::from([from]);
        dist[from.index()] = 0;
        while let Some(u) = queue.pop_front() {
            if u == to {
                return Some(dist[u.index()]);
            }
            for (_, peer, _) in self.links_of(u) {
                if dist[peer.node.index()] == u32::MAX && is_sw(peer.node) {
                    dist[peer.node.index()] = dist[u.index()] + 1;
                    queue.push_back(peer.node);
                }
            }
        }
        None
    }

    /// Degree statistics over the switches.
    #[must_use]
    pub fn degree_stats(&self) -> DegreeStats {
        let csr = Csr::new(self);
        let s_count = csr.switch_count() as u32;
        let mut st = DegreeStats {
            switch_ports_used: Summary::of(
                (0..s_count).map(|s| csr.ports_of(s).filter(|(_, t, _)| !t.is_none()).count()),
            ),
            switch_links: Summary::of(
                (0..s_count)
                    .map(|s| (csr.adj_start[s as usize + 1] - csr.adj_start[s as usize]) as usize),
            ),
            terminals_per_leaf: Summary::of(
                (0..s_count)
                    .map(|s| csr.terminals_of(s).len())
                    .filter(|&n| n > 0),
            ),
            ..DegreeStats::default()
        };
        let mut neigh_counts = Vec::with_capacity(s_count as usize);
        let mut buf: Vec<u32> = Vec::new();
        for s in 0..s_count {
            buf.clear();
            buf.extend(csr.neighbours(s).map(|(n, _)| n));
            buf.sort_unstable();
            let mut distinct = 0;
            let mut i = 0;
            while i < buf.len() {
                let mut j = i;
                while j < buf.len() && buf[j] == buf[i] {
                    j += 1;
                }
                distinct += 1;
                let run = j - i;
                if run > 1 && buf[i] > s {
                    st.parallel_pairs += 1;
                }
                st.max_parallel = st.max_parallel.max(run);
                i = j;
            }
            neigh_counts.push(distinct);
        }
        st.switch_neighbours = Summary::of(neigh_counts.into_iter());
        st.free_ports = self
            .nodes()
            .map(|(_, n)| n.ports().filter(|(_, p)| !p.is_connected()).count())
            .sum();
        st
    }
}
