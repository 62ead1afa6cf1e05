//! [`Csr`]: a compact, read-only snapshot of a fabric for routing engines.
//!
//! # Layout
//!
//! Everything is in flat `Vec`s indexed by dense integers, so an engine can iterate
//! without hashing or pointer chasing, and can split per-destination work across threads
//! by sharing `&Csr`.
//!
//! * **Switches** get indices `0..S` in node-GUID order: [`Csr::switch_node`],
//!   [`Csr::switch_guid`], [`Csr::switch_lid`].
//! * **Port table** (CSR over switches): the slots of switch `s` are
//!   `port_start[s] .. port_start[s + 1]`, and slot `port_start[s] + p` *is* port `p`
//!   (slot 0 is management port 0 and always empty). Each slot holds a [`Target`] in
//!   [`Csr::port_target`] (nothing, switch index, or terminal index) and, in
//!   [`Csr::port_remote`], the port number at the other end.
//! * **Terminals** are connected CA and router *ports* (a dual-port HCA is two
//!   terminals, because each port is its own LID destination). They get indices `0..T`
//!   grouped by the switch they hang off: the terminals attached to switch `s` are
//!   `term_start[s] .. term_start[s + 1]`, ordered by switch port. Terminals cabled to no
//!   switch (CA-to-CA back-to-back) come last, from `term_start[S]`. Per terminal:
//!   [`Csr::term_node`], [`Csr::term_port`], [`Csr::term_guid`] (port GUID),
//!   [`Csr::term_lid`], [`Csr::term_switch`] and [`Csr::term_switch_port`].
//! * **Switch graph** (CSR over switches, switch-to-switch cables only): neighbours of `s`
//!   are `adj_start[s] .. adj_start[s + 1]` in [`Csr::adj_switch`] with the local port in
//!   [`Csr::adj_port`], ordered by local port. Parallel cables appear once each, so the
//!   list doubles as "which ports lead to switch t".
//!
//! Methods taking a switch index `s` panic when `s >= S`, like slice indexing; IDs from
//! another snapshot or fabric are the caller's bug.
//!
//! For the radix-48 3-level fat tree (2,880 switches, 27,648 CAs, 82,944 links) the
//! snapshot takes about 2.4 MB; see [`Csr::heap_bytes`].
//!
//! ```
//! use ibsm_topology::{generate, Csr};
//! let fabric = generate::k_ary_n_tree(4, 2).unwrap(); // 8 switches, 16 CAs
//! let csr = Csr::new(&fabric);
//! assert_eq!(csr.switch_count(), 8);
//! assert_eq!(csr.terminal_count(), 16);
//! // Which terminals hang off leaf switch 0, and through which ports?
//! for t in csr.terminals_of(0) {
//!     let port = csr.term_switch_port[t as usize];
//!     assert_eq!(csr.target(0, port).terminal(), Some(t));
//! }
//! // Hop distances between switches.
//! let hops = csr.hops_from(0);
//! assert!(hops.iter().all(|&h| h <= 2));
//! ```

use crate::fabric::Fabric;
use crate::types::{Guid, NodeId, PortNum};

/// What a switch port slot leads to, packed in 32 bits.
///
/// `u32::MAX` is "nothing"; the top bit set means a terminal index; otherwise it is a
/// switch index.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Target(u32);

const TERM_BIT: u32 = 1 << 31;

impl Target {
    /// Nothing cabled.
    pub const NONE: Target = Target(u32::MAX);

    /// A switch.
    #[must_use]
    pub fn switch(idx: u32) -> Self {
        Target(idx & !TERM_BIT)
    }

    /// A terminal.
    #[must_use]
    pub fn terminal_of(idx: u32) -> Self {
        Target(idx | TERM_BIT)
    }

    /// Whether nothing is cabled.
    #[must_use]
    pub fn is_none(self) -> bool {
        self.0 == u32::MAX
    }

    /// The switch index, if this leads to a switch.
    #[must_use]
    pub fn as_switch(self) -> Option<u32> {
        (self.0 & TERM_BIT == 0).then_some(self.0)
    }

    /// The terminal index, if this leads to a terminal.
    #[must_use]
    pub fn terminal(self) -> Option<u32> {
        (self.0 != u32::MAX && self.0 & TERM_BIT != 0).then_some(self.0 & !TERM_BIT)
    }

    /// The raw packed value.
    #[must_use]
    pub fn raw(self) -> u32 {
        self.0
    }
}

/// "No switch" in [`Csr::term_switch`].
pub const NO_SWITCH: u32 = u32::MAX;
/// "Unreachable" in hop tables.
pub const UNREACHABLE: u16 = u16::MAX;

/// A compact read-only snapshot of a [`Fabric`] for routing; see the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    /// Switch index -> node.
    pub switch_node: Vec<NodeId>,
    /// Switch index -> node GUID.
    pub switch_guid: Vec<Guid>,
    /// Switch index -> LID of port 0 (0 if unassigned).
    pub switch_lid: Vec<u16>,
    /// Port slots of switch `s`: `port_start[s]..port_start[s+1]`; length `S + 1`.
    pub port_start: Vec<u32>,
    /// Per port slot: what it leads to.
    pub port_target: Vec<Target>,
    /// Per port slot: the port number at the other end (0 if nothing).
    pub port_remote: Vec<PortNum>,
    /// Terminals of switch `s`: `term_start[s]..term_start[s+1]`; length `S + 1`; the
    /// switchless terminals are `term_start[S]..T`.
    pub term_start: Vec<u32>,
    /// Terminal -> node (CA or router).
    pub term_node: Vec<NodeId>,
    /// Terminal -> its port number on that node.
    pub term_port: Vec<PortNum>,
    /// Terminal -> port GUID.
    pub term_guid: Vec<Guid>,
    /// Terminal -> base LID (0 if unassigned).
    pub term_lid: Vec<u16>,
    /// Terminal -> LMC.
    pub term_lmc: Vec<u8>,
    /// Terminal -> attached switch index, or [`NO_SWITCH`].
    pub term_switch: Vec<u32>,
    /// Terminal -> port of the attached switch (0 if none).
    pub term_switch_port: Vec<PortNum>,
    /// Switch neighbours of `s`: `adj_start[s]..adj_start[s+1]`; length `S + 1`.
    pub adj_start: Vec<u32>,
    /// Neighbour switch index per switch-to-switch cable.
    pub adj_switch: Vec<u32>,
    /// Local port of that cable.
    pub adj_port: Vec<PortNum>,
    /// Node index -> switch index (or [`NO_SWITCH`]), indexed by [`NodeId::index`].
    node_switch: Vec<u32>,
    /// (node, port, terminal index), sorted, for [`Csr::terminal_index`].
    term_lookup: Vec<(NodeId, PortNum, u32)>,
}

fn idx32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl Csr {
    /// Takes a snapshot: O(nodes + ports).
    #[must_use]
    pub fn new(fabric: &Fabric) -> Self {
        let bound = fabric.node_bound();
        let mut node_switch = vec![NO_SWITCH; bound];
        let mut csr = Csr::default();
        for (id, node) in fabric.switches() {
            node_switch[id.index()] = idx32(csr.switch_node.len());
            csr.switch_node.push(id);
            csr.switch_guid.push(node.guid());
            csr.switch_lid.push(node.lid());
        }
        let s_count = csr.switch_node.len();

        // Terminals: first those attached to switches, in (switch, port) order.
        let mut term_of_node_port: Vec<(NodeId, PortNum, u32)> = Vec::new();
        csr.term_start.reserve(s_count + 1);
        for s in 0..s_count {
            csr.term_start.push(idx32(csr.term_node.len()));
            let Some(node) = fabric.node(csr.switch_node[s]) else {
                continue;
            };
            for (p, port) in node.ports() {
                let Some(peer) = port.peer() else { continue };
                let Some(pn) = fabric.node(peer.node) else {
                    continue;
                };
                if pn.is_switch() {
                    continue;
                }
                let pp = pn.port(peer.port);
                term_of_node_port.push((peer.node, peer.port, idx32(csr.term_node.len())));
                csr.term_node.push(peer.node);
                csr.term_port.push(peer.port);
                csr.term_guid.push(pp.map_or(Guid(0), |x| x.guid));
                csr.term_lid.push(pp.map_or(0, |x| x.lid));
                csr.term_lmc.push(pp.map_or(0, |x| x.lmc));
                csr.term_switch.push(idx32(s));
                csr.term_switch_port.push(p);
            }
        }
        csr.term_start.push(idx32(csr.term_node.len()));
        // Then connected terminal ports whose peer is not a switch.
        for (id, node) in fabric.nodes() {
            if node.is_switch() {
                continue;
            }
            for (p, port) in node.ports() {
                let Some(peer) = port.peer() else { continue };
                if node_switch[peer.node.index()] != NO_SWITCH {
                    continue;
                }
                term_of_node_port.push((id, p, idx32(csr.term_node.len())));
                csr.term_node.push(id);
                csr.term_port.push(p);
                csr.term_guid.push(port.guid);
                csr.term_lid.push(port.lid);
                csr.term_lmc.push(port.lmc);
                csr.term_switch.push(NO_SWITCH);
                csr.term_switch_port.push(0);
            }
        }
        term_of_node_port.sort_unstable();

        // Port table and switch adjacency.
        csr.port_start.reserve(s_count + 1);
        csr.adj_start.reserve(s_count + 1);
        for s in 0..s_count {
            csr.port_start.push(idx32(csr.port_target.len()));
            csr.adj_start.push(idx32(csr.adj_switch.len()));
            let Some(node) = fabric.node(csr.switch_node[s]) else {
                continue;
            };
            csr.port_target.push(Target::NONE);
            csr.port_remote.push(0);
            for (p, port) in node.ports() {
                let (target, remote) = match port.peer() {
                    None => (Target::NONE, 0),
                    Some(peer) => {
                        let sw = node_switch[peer.node.index()];
                        if sw == NO_SWITCH {
                            let t = term_of_node_port
                                .binary_search_by(|e| (e.0, e.1).cmp(&(peer.node, peer.port)))
                                .map_or(u32::MAX, |i| term_of_node_port[i].2);
                            (Target::terminal_of(t), peer.port)
                        } else {
                            csr.adj_switch.push(sw);
                            csr.adj_port.push(p);
                            (Target::switch(sw), peer.port)
                        }
                    }
                };
                csr.port_target.push(target);
                csr.port_remote.push(remote);
            }
        }
        csr.port_start.push(idx32(csr.port_target.len()));
        csr.adj_start.push(idx32(csr.adj_switch.len()));
        csr.node_switch = node_switch;
        csr.term_lookup = term_of_node_port;
        csr.shrink();
        csr
    }

    /// Drops the growth slack of every array (a snapshot is read-only).
    fn shrink(&mut self) {
        self.switch_node.shrink_to_fit();
        self.switch_guid.shrink_to_fit();
        self.switch_lid.shrink_to_fit();
        self.port_start.shrink_to_fit();
        self.port_target.shrink_to_fit();
        self.port_remote.shrink_to_fit();
        self.term_start.shrink_to_fit();
        self.term_node.shrink_to_fit();
        self.term_port.shrink_to_fit();
        self.term_guid.shrink_to_fit();
        self.term_lid.shrink_to_fit();
        self.term_lmc.shrink_to_fit();
        self.term_switch.shrink_to_fit();
        self.term_switch_port.shrink_to_fit();
        self.adj_start.shrink_to_fit();
        self.adj_switch.shrink_to_fit();
        self.adj_port.shrink_to_fit();
        self.term_lookup.shrink_to_fit();
    }

    /// Number of switches `S`.
    #[must_use]
    pub fn switch_count(&self) -> usize {
        self.switch_node.len()
    }

    /// Number of terminals `T` (connected CA/router ports).
    #[must_use]
    pub fn terminal_count(&self) -> usize {
        self.term_node.len()
    }

    /// The switch index of a node, if it is a switch.
    #[must_use]
    pub fn switch_index(&self, id: NodeId) -> Option<u32> {
        self.node_switch
            .get(id.index())
            .copied()
            .filter(|&s| s != NO_SWITCH)
    }

    /// The terminal index of a CA/router port, if it is connected.
    #[must_use]
    pub fn terminal_index(&self, id: NodeId, port: PortNum) -> Option<u32> {
        self.term_lookup
            .binary_search_by(|e| (e.0, e.1).cmp(&(id, port)))
            .ok()
            .map(|i| self.term_lookup[i].2)
    }

    /// Number of ports of switch `s` (its slots minus port 0).
    #[must_use]
    pub fn num_ports(&self, s: u32) -> PortNum {
        let s = s as usize;
        let n = self.port_start[s + 1] - self.port_start[s];
        PortNum::try_from(n.saturating_sub(1)).unwrap_or(PortNum::MAX)
    }

    /// What port `port` of switch `s` leads to ([`Target::NONE`] when out of range).
    #[must_use]
    pub fn target(&self, s: u32, port: PortNum) -> Target {
        let s = s as usize;
        let Some(&start) = self.port_start.get(s) else {
            return Target::NONE;
        };
        let slot = start as usize + usize::from(port);
        if slot >= self.port_start[s + 1] as usize {
            return Target::NONE;
        }
        self.port_target[slot]
    }

    /// The port slots of switch `s` as `(port number, target, remote port)`, port 0
    /// excluded.
    pub fn ports_of(&self, s: u32) -> impl Iterator<Item = (PortNum, Target, PortNum)> + '_ {
        let s = s as usize;
        let range = self.port_start[s] as usize..self.port_start[s + 1] as usize;
        range
            .clone()
            .skip(1)
            .zip(1..=PortNum::MAX)
            .map(|(slot, p)| (p, self.port_target[slot], self.port_remote[slot]))
    }

    /// Terminal indices attached to switch `s`.
    #[must_use]
    pub fn terminals_of(&self, s: u32) -> core::ops::Range<u32> {
        let s = s as usize;
        self.term_start[s]..self.term_start[s + 1]
    }

    /// Switch neighbours of `s`: `(neighbour, local port)`, once per cable.
    pub fn neighbours(&self, s: u32) -> impl Iterator<Item = (u32, PortNum)> + '_ {
        let s = s as usize;
        let r = self.adj_start[s] as usize..self.adj_start[s + 1] as usize;
        self.adj_switch[r.clone()]
            .iter()
            .copied()
            .zip(self.adj_port[r].iter().copied())
    }

    /// Breadth-first hop counts from switch `src` to every switch over switch-to-switch
    /// cables ([`UNREACHABLE`] where none).
    #[must_use]
    pub fn hops_from(&self, src: u32) -> Vec<u16> {
        let n = self.switch_count();
        let mut dist = vec![UNREACHABLE; n];
        let mut queue = Vec::with_capacity(n);
        self.bfs_into(src, &mut dist, &mut queue);
        dist
    }

    /// BFS into caller-owned buffers (reused across sources to avoid allocation).
    /// `dist` must have `S` entries; it is overwritten.
    pub fn bfs_into(&self, src: u32, dist: &mut [u16], queue: &mut Vec<u32>) {
        dist.fill(UNREACHABLE);
        queue.clear();
        if (src as usize) >= dist.len() {
            return;
        }
        dist[src as usize] = 0;
        queue.push(src);
        let mut head = 0;
        while head < queue.len() {
            let u = queue[head] as usize;
            head += 1;
            let du = dist[u].saturating_add(1);
            let r = self.adj_start[u] as usize..self.adj_start[u + 1] as usize;
            for &v in &self.adj_switch[r] {
                let v = v as usize;
                if dist[v] == UNREACHABLE {
                    dist[v] = du;
                    queue.push(v as u32);
                }
            }
        }
    }

    /// All-pairs switch hop counts as a row-major `S x S` table (`S^2` entries of 2 bytes:
    /// 16.6 MB for 2,880 switches).
    #[must_use]
    pub fn all_hops(&self) -> Vec<u16> {
        let n = self.switch_count();
        let mut table = vec![UNREACHABLE; n * n];
        let mut queue = Vec::with_capacity(n);
        for (s, row) in table.chunks_exact_mut(n.max(1)).enumerate().take(n) {
            self.bfs_into(idx32(s), row, &mut queue);
        }
        table
    }

    /// Heap bytes held by this snapshot (capacity of every array).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        use core::mem::size_of;
        self.switch_node.capacity() * size_of::<NodeId>()
            + self.switch_guid.capacity() * size_of::<Guid>()
            + self.switch_lid.capacity() * 2
            + self.port_start.capacity() * 4
            + self.port_target.capacity() * size_of::<Target>()
            + self.port_remote.capacity()
            + self.term_start.capacity() * 4
            + self.term_node.capacity() * size_of::<NodeId>()
            + self.term_port.capacity()
            + self.term_guid.capacity() * size_of::<Guid>()
            + self.term_lid.capacity() * 2
            + self.term_lmc.capacity()
            + self.term_switch.capacity() * 4
            + self.term_switch_port.capacity()
            + self.adj_start.capacity() * 4
            + self.adj_switch.capacity() * 4
            + self.adj_port.capacity()
            + self.node_switch.capacity() * 4
            + self.term_lookup.capacity() * size_of::<(NodeId, PortNum, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::NodeSpec;
    use crate::generate;

    /// Every fact in the snapshot agrees with the fabric it came from.
    fn check(f: &Fabric) {
        let csr = Csr::new(f);
        assert_eq!(csr.switch_count(), f.switch_count());
        let guids: Vec<Guid> = f.switches().map(|(_, n)| n.guid()).collect();
        assert_eq!(csr.switch_guid, guids);
        for s in 0..csr.switch_count() as u32 {
            let id = csr.switch_node[s as usize];
            assert_eq!(csr.switch_index(id), Some(s));
            let node = f.node(id).unwrap();
            assert_eq!(csr.num_ports(s), node.num_ports());
            assert!(csr.target(s, 0).is_none());
            for (p, t, rp) in csr.ports_of(s) {
                assert_eq!(csr.target(s, p), t);
                match f.port_peer(id, p) {
                    None => assert!(t.is_none()),
                    Some(peer) => {
                        assert_eq!(rp, peer.port);
                        if let Some(o) = t.as_switch() {
                            assert_eq!(csr.switch_node[o as usize], peer.node);
                            // Symmetric: the other side points back.
                            assert_eq!(csr.target(o, rp), Target::switch(s));
                        } else {
                            let term = t.terminal().unwrap() as usize;
                            assert_eq!(csr.term_node[term], peer.node);
                            assert_eq!(csr.term_port[term], peer.port);
                            assert_eq!(csr.term_switch[term], s);
                            assert_eq!(csr.term_switch_port[term], p);
                            assert!(csr.terminals_of(s).contains(&(term as u32)));
                            assert_eq!(csr.terminal_index(peer.node, peer.port), Some(term as u32));
                        }
                    }
                }
            }
            let adj: Vec<(u32, PortNum)> = csr.neighbours(s).collect();
            let expect: Vec<(u32, PortNum)> = csr
                .ports_of(s)
                .filter_map(|(p, t, _)| Some((t.as_switch()?, p)))
                .collect();
            assert_eq!(adj, expect);
        }
        let connected_terminal_ports: usize = f
            .nodes()
            .filter(|(_, n)| !n.is_switch())
            .map(|(_, n)| n.degree())
            .sum();
        assert_eq!(csr.terminal_count(), connected_terminal_ports);
        assert_eq!(
            *csr.term_start.last().unwrap() as usize
                + csr.term_switch.iter().filter(|&&x| x == NO_SWITCH).count(),
            csr.terminal_count()
        );
        assert!(csr.heap_bytes() > 0);
    }

    #[test]
    fn snapshot_matches_fabric() {
        check(&Fabric::new());
        check(&generate::k_ary_n_tree(3, 3).unwrap());
        let mut f = generate::fat_tree(12, 2).unwrap();
        generate::degrade(&mut f, 0.4, 5).unwrap();
        check(&f);
        check(
            &generate::grid(&generate::Grid {
                dims: vec![2, 3],
                torus: true,
                cas_per_switch: 2,
            })
            .unwrap(),
        );
        // Back-to-back CAs, an unconnected CA, a removed node leaving a hole in the IDs.
        let mut f = generate::k_ary_n_tree(2, 2).unwrap();
        let a = f.add_node(NodeSpec::ca(0x1_0000, 2, "a")).unwrap();
        let b = f.add_node(NodeSpec::ca(0x2_0000, 1, "b")).unwrap();
        f.add_node(NodeSpec::ca(0x3_0000, 1, "lonely")).unwrap();
        f.connect(a, 2, b, 1).unwrap();
        let first = f.switches().next().unwrap().0;
        f.remove_node(first).unwrap();
        check(&f);
        let csr = Csr::new(&f);
        let t = csr.terminal_index(a, 2).unwrap();
        assert_eq!(csr.term_switch[t as usize], NO_SWITCH);
        assert!(t >= *csr.term_start.last().unwrap());
        assert_eq!(csr.switch_index(a), None);
    }

    #[test]
    fn hops() {
        let f = generate::k_ary_n_tree(4, 3).unwrap();
        let csr = Csr::new(&f);
        let all = csr.all_hops();
        let n = csr.switch_count();
        for s in 0..n {
            assert_eq!(all[s * n + s], 0);
            assert_eq!(&all[s * n..(s + 1) * n], csr.hops_from(s as u32).as_slice());
            for t in 0..n {
                assert_eq!(all[s * n + t], all[t * n + s]);
                let fab = f
                    .switch_hops(csr.switch_node[s], csr.switch_node[t])
                    .unwrap();
                assert_eq!(u32::from(all[s * n + t]), fab);
            }
        }
        // Disconnected: unreachable.
        let mut g = generate::fat_tree(4, 2).unwrap();
        generate::degrade_with(
            &mut g,
            1.0,
            0,
            generate::DegradeOptions {
                keep_connected: false,
            },
        )
        .unwrap();
        let c = Csr::new(&g);
        assert!(c.hops_from(0).iter().skip(1).all(|&h| h == UNREACHABLE));
        assert_eq!(g.switch_hops(c.switch_node[0], c.switch_node[1]), None);
        assert_eq!(g.components().len(), g.switch_count());
    }
}
