//! Multicast spanning trees: where a group's tree is rooted, which switch ports carry
//! it, and in which order the MFT entries change so that no forwarding loop exists at
//! any moment while a tree changes.
//!
//! # Trees
//!
//! A group's tree is rooted at a *central* switch: the one with the fewest hops to the
//! farthest member switch (ties: the current root if it is still among the best, then
//! the switch fewest other groups are rooted at, then the lowest GUID, so roots spread
//! over groups and stay put). The tree is the union of the shortest paths from every
//! member's switch to the root over a BFS tree from the root, so no member is farther
//! from the root than it has to be. Over each tree link traffic flows only where it
//! has someone to reach: towards a subtree only if it holds a receiver and some member
//! outside it sends, away from it only if it holds a member and some receiver is
//! outside. Send-only members (JoinState SendOnlyNonMember / SendOnlyFullMember) are
//! senders only: their switches are on the tree, their ports are never in an MFT.
//!
//! # Loop-free updates (OpenSM issue #22)
//!
//! A switch forwards a multicast packet out of every port in its MFT entry except the
//! one it came in by. If every switch's entry for an MLID holds only ports of links of
//! one tree (a forest: one link per tree edge), a packet can never come back to a
//! switch it left: any walk over a forest that never turns back over the link it
//! arrived by visits each node once. So no loop (and no duplicate) exists while every
//! entry is a subset of one tree's ports.
//!
//! Going from tree `old` to tree `new` by writing `new` directly mixes the two while
//! the Sets are in flight: a switch still holding `old` next to one already holding
//! `new` can close a cycle (on a ring or torus, whenever the root moves). Instead the
//! change goes in two steps ([`next_step`]): first every entry becomes `old ∩ new`
//! (ports only taken away, so every switch holds `old` or a subset of it: all subsets
//! of the old tree), and only when every Set of that step has been answered (the SM's
//! barrier) every entry becomes `new` (every switch holds `old ∩ new` or `new`: all
//! subsets of the new tree). The MFT blocks of a switch (32 MLIDs, 16 ports each) may
//! land in any order within a step; each block only moves an entry between two
//! subsets of the same tree, so the argument holds block by block.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::db::Db;
use crate::snapshot::NodeIx;

/// Hop distance to a switch not reachable.
const FAR: u8 = u8::MAX;

/// Entries of the MFTs: (switch GUID, MLID) -> output ports.
pub(crate) type Entries = HashMap<(u64, u16), BTreeSet<u8>>;

/// The routed switches of a snapshot, their links and all hop distances between them.
#[derive(Debug, Default)]
pub(crate) struct Hops {
    /// Switch index -> GUID.
    guid: Vec<u64>,
    /// Node -> switch index.
    ix: HashMap<NodeIx, u32>,
    /// Per switch: (port, neighbour switch, port on the neighbour), by port.
    adj: Vec<Vec<(u8, u32, u8)>>,
    /// `dist[a * n + b]`, [`FAR`] when unreachable.
    dist: Vec<u8>,
    /// Per switch: the highest MLID its MFT holds (MulticastFDBCap entries from
    /// 0xC000; 0xBFFF: no MFT).
    last: Vec<u16>,
}

/// One member as the tree sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member {
    /// Switch index ([`Hops`]) the member hangs off (or is, for a switch port 0).
    pub sw: u32,
    /// The port of that switch leading to the member.
    pub port: u8,
    /// Whether it receives (a send-only member does not).
    pub receives: bool,
}

impl Hops {
    /// The routed switches of `db` and their switch-to-switch links.
    pub(crate) fn new(db: &Db) -> Self {
        let nodes: Vec<NodeIx> = (0..db.snap.nodes.len() as NodeIx)
            .filter(|&n| db.snap.nodes[n as usize].is_switch() && db.route_of(n).is_some())
            .collect();
        let ix: HashMap<NodeIx, u32> = nodes
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, i as u32))
            .collect();
        let adj = nodes
            .iter()
            .map(|&n| {
                db.switch_neighbours(n)
                    .filter_map(|(p, m)| {
                        let back = db.snap.nodes[n as usize].ports[usize::from(p)].peer?.1;
                        Some((p, *ix.get(&m)?, back))
                    })
                    .collect()
            })
            .collect();
        let guid = nodes
            .iter()
            .map(|&n| db.snap.nodes[n as usize].info.node_guid)
            .collect();
        let mut h = Self::from_links(guid, adj, ix);
        h.last = nodes
            .iter()
            .map(|&n| {
                let cap = db.snap.nodes[n as usize]
                    .switch_info
                    .map_or(0, |si| si.multicast_fdb_cap);
                super::cap_last(cap)
            })
            .collect();
        h
    }

    /// Whether switch `sw`'s MFT holds `mlid`.
    pub(crate) fn holds(&self, sw: u32, mlid: u16) -> bool {
        self.last[sw as usize] >= mlid
    }

    /// From switch GUIDs and per-switch links `(port, neighbour, port on neighbour)`.
    pub(crate) fn from_links(
        guid: Vec<u64>,
        adj: Vec<Vec<(u8, u32, u8)>>,
        ix: HashMap<NodeIx, u32>,
    ) -> Self {
        let n = guid.len();
        let mut dist = vec![FAR; n * n];
        let mut q = VecDeque::new();
        for s in 0..n {
            let row = &mut dist[s * n..(s + 1) * n];
            row[s] = 0;
            q.clear();
            q.push_back(s as u32);
            while let Some(a) = q.pop_front() {
                let d = row[a as usize];
                for &(_, b, _) in &adj[a as usize] {
                    if row[b as usize] == FAR {
                        row[b as usize] = d.saturating_add(1).min(FAR - 1);
                        q.push_back(b);
                    }
                }
            }
        }
        Self {
            last: vec![u16::MAX; guid.len()],
            guid,
            ix,
            adj,
            dist,
        }
    }

    /// The switch index of a node, if it is a routed switch.
    pub(crate) fn index(&self, node: NodeIx) -> Option<u32> {
        self.ix.get(&node).copied()
    }

    /// The switch's GUID.
    pub(crate) fn guid(&self, sw: u32) -> u64 {
        self.guid[sw as usize]
    }

    fn d(&self, a: u32, b: u32) -> u8 {
        self.dist[a as usize * self.guid.len() + b as usize]
    }

    /// The most central switch for `members` (fewest members out of reach, then fewest
    /// hops to the farthest one); among equals `current` (a GUID) if it is one, else
    /// the least used (`uses`: groups rooted there, by GUID), then the lowest GUID.
    #[cfg(test)]
    pub(crate) fn root(
        &self,
        members: &[Member],
        current: Option<u64>,
        uses: &HashMap<u64, u32>,
    ) -> Option<u32> {
        self.root_for(members, current, uses, super::MLID_BASE)
    }

    /// As `Self::root`, among the switches whose MFT holds `mlid` only.
    pub(crate) fn root_for(
        &self,
        members: &[Member],
        current: Option<u64>,
        uses: &HashMap<u64, u32>,
        mlid: u16,
    ) -> Option<u32> {
        let at: BTreeSet<u32> = members
            .iter()
            .map(|m| m.sw)
            .filter(|&sw| self.holds(sw, mlid))
            .collect();
        if at.is_empty() {
            return None;
        }
        let mut best: Option<(usize, u8)> = None;
        let mut tied: Vec<u32> = Vec::new();
        for c in (0..self.guid.len() as u32).filter(|&c| self.holds(c, mlid)) {
            let (mut out, mut far) = (0usize, 0u8);
            for &m in &at {
                match self.d(c, m) {
                    FAR => out += 1,
                    d => far = far.max(d),
                }
            }
            let key = (out, far);
            match best {
                Some(b) if key > b => {}
                Some(b) if key == b => tied.push(c),
                _ => {
                    best = Some(key);
                    tied.clear();
                    tied.push(c);
                }
            }
        }
        if let Some(cur) = current {
            if let Some(&c) = tied.iter().find(|&&c| self.guid(c) == cur) {
                return Some(c);
            }
        }
        tied.into_iter().min_by_key(|&c| {
            let g = self.guid(c);
            (uses.get(&g).copied().unwrap_or(0), g)
        })
    }

    /// The output ports of every switch on the tree rooted at `root` for `members`
    /// (see the module docs): switch index -> ports. Empty when nobody receives.
    #[cfg(test)]
    pub(crate) fn tree(&self, root: u32, members: &[Member]) -> HashMap<u32, BTreeSet<u8>> {
        self.tree_for(root, members, super::MLID_BASE)
    }

    /// As `Self::tree` for a group on `mlid`: the tree routes around the switches
    /// whose MFT does not hold it (they are never entered, their members are left out),
    /// so no entry is ever meant for a switch beyond its MulticastFDBCap.
    pub(crate) fn tree_for(
        &self,
        root: u32,
        members: &[Member],
        mlid: u16,
    ) -> HashMap<u32, BTreeSet<u8>> {
        let n = self.guid.len();
        if !self.holds(root, mlid) {
            return HashMap::new();
        }
        let mut out: HashMap<u32, BTreeSet<u8>> = HashMap::new();
        // BFS from the root: parent (switch, its port, port on the child).
        let mut parent: Vec<Option<(u32, u8, u8)>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut order = vec![root];
        seen[root as usize] = true;
        let mut i = 0;
        while i < order.len() {
            let a = order[i];
            i += 1;
            for &(p, b, back) in &self.adj[a as usize] {
                if !seen[b as usize] && self.holds(b, mlid) {
                    seen[b as usize] = true;
                    parent[b as usize] = Some((a, p, back));
                    order.push(b);
                }
            }
        }
        let (mut sub_r, mut sub_m) = (vec![0u32; n], vec![0u32; n]);
        for m in members.iter().filter(|m| seen[m.sw as usize]) {
            sub_m[m.sw as usize] += 1;
            if m.receives {
                sub_r[m.sw as usize] += 1;
                out.entry(m.sw).or_default().insert(m.port);
            }
        }
        for &s in order.iter().rev() {
            if let Some((p, _, _)) = parent[s as usize] {
                sub_r[p as usize] += sub_r[s as usize];
                sub_m[p as usize] += sub_m[s as usize];
            }
        }
        let (all_r, all_m) = (sub_r[root as usize], sub_m[root as usize]);
        if all_r == 0 {
            return HashMap::new();
        }
        for &s in &order {
            let Some((p, down, up)) = parent[s as usize] else {
                continue;
            };
            let (r, m) = (sub_r[s as usize], sub_m[s as usize]);
            if m == 0 {
                continue;
            }
            if r > 0 && all_m > m {
                out.entry(p).or_default().insert(down);
            }
            if all_r > r {
                out.entry(s).or_default().insert(up);
            }
        }
        out
    }
}

/// The next state to hand out on the way from `programmed` (what the switches hold
/// once everything handed out so far is written) to `want` (no empty entries): while
/// some entry loses ports, every entry becomes `programmed ∩ want` (ports only taken
/// away); otherwise `want`. See the module docs for why no intermediate state of
/// either step can loop.
pub(crate) fn next_step(programmed: &Entries, want: &Entries) -> Entries {
    let empty = BTreeSet::new();
    let removes = programmed
        .iter()
        .any(|(k, old)| !old.is_subset(want.get(k).unwrap_or(&empty)));
    if !removes {
        return want.clone();
    }
    programmed
        .iter()
        .map(|(k, old)| {
            let keep: BTreeSet<u8> = old
                .intersection(want.get(k).unwrap_or(&empty))
                .copied()
                .collect();
            (*k, keep)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect()
}
