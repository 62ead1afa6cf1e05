//! The compact, index-based picture of a fabric that every engine and validator works on.
//!
//! Switches are numbered `0..n_sw`; inter-switch links become two directed *arcs* stored in
//! CSR form (per switch, sorted by remote switch then port, so that "the i-th up port" means
//! the same thing on switches that see the same neighbours). Terminals (CA and router ports
//! cabled to a switch) hang off their switch. Everything is plain `Vec`s of integers so one
//! pass over a 50k-LID fabric stays in cache-friendly arrays.

use crate::error::RoutingError;

/// "No value" for `u32` indices.
pub(crate) const NONE: u32 = u32::MAX;
/// Unreachable distance.
pub(crate) const INF: u16 = u16::MAX;

/// What a switch port leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    /// Not cabled (or leads outside what routing considers).
    None,
    /// Another switch, through arc `arc`.
    Switch { sw: u32, port: u8, arc: u32 },
    /// A terminal (index into `Net::terms`).
    Term(u32),
}

/// What a LID addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dest {
    /// Unassigned.
    None,
    /// A switch's port 0.
    Switch(u32),
    /// Terminal `t`, offset `k` inside its LMC range.
    Term(u32, u8),
}

/// One terminal port: where it is cabled and its LIDs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Term {
    pub sw: u32,
    pub port: u8,
    pub base: u16,
    pub lmc: u8,
}

/// Input to [`Net::build`]: a neutral description used by the topology adapter and tests.
#[derive(Clone, Debug, Default)]
pub(crate) struct NetInput {
    /// Highest port number of each switch.
    pub nports: Vec<u8>,
    /// Base LID of each switch (0 = none).
    pub sw_lid: Vec<u16>,
    /// Inter-switch links `(sw_a, port_a, sw_b, port_b)`.
    pub links: Vec<(u32, u8, u32, u8)>,
    /// Terminals: `(switch, switch port, base LID, lmc)`; base 0 = not addressable.
    pub terms: Vec<(u32, u8, u16, u8)>,
}

/// The compact fabric.
#[derive(Clone, Debug)]
pub(crate) struct Net {
    pub n_sw: usize,
    pub nports: Vec<u8>,
    /// Offsets into `peer`: switch `s` owns `pbase[s] ..= pbase[s] + nports[s]`.
    pub pbase: Vec<u32>,
    pub peer: Vec<Peer>,
    /// CSR offsets of the arcs leaving each switch.
    pub aoff: Vec<u32>,
    pub asrc: Vec<u32>,
    pub adst: Vec<u32>,
    pub aport: Vec<u8>,
    /// Port on the remote switch.
    pub arport: Vec<u8>,
    /// Index of the reverse arc.
    pub arev: Vec<u32>,
    pub terms: Vec<Term>,
    /// CSR of terminals per switch (indices into `terms`, sorted by port).
    pub toff: Vec<u32>,
    pub tlist: Vec<u32>,
    pub sw_lid: Vec<u16>,
    /// Addressable terminals per switch (traffic sources).
    pub nsrc: Vec<u32>,
    /// Length of every LFT: highest assigned LID + 1.
    pub lft_len: usize,
    pub lid_dest: Vec<Dest>,
    /// Root switches the user named (OpenSM `root_guid_file`); empty = detect.
    pub roots: Vec<u32>,
    /// Per terminal, whether it is a compute node (OpenSM `cn_guid_file` /
    /// `io_guid_file`, for ftree); empty = every terminal is one.
    pub cn: Vec<bool>,
    /// Per terminal, whether routes towards it may make reverse hops (an I/O node of
    /// OpenSM's `io_guid_file` while `max_reverse_hops` > 0, for ftree); empty = none.
    pub io: Vec<bool>,
    /// How many reverse hops a route towards an `io` terminal may make.
    pub max_reverse_hops: u16,
    /// Destination switches in the order they are routed (OpenSM
    /// `guid_routing_order_file`); empty = switch order.
    pub dest_order: Vec<u32>,
    /// Per terminal, its place in the routing order (`u32::MAX`: not listed); empty =
    /// no order given.
    pub term_pos: Vec<u32>,
}

impl Net {
    /// Builds the compact form, checking that LIDs do not collide and ports are in range.
    pub(crate) fn build(inp: &NetInput) -> Result<Net, RoutingError> {
        let n_sw = inp.nports.len();
        let mut pbase = Vec::with_capacity(n_sw + 1);
        let mut acc = 0u32;
        for &np in &inp.nports {
            pbase.push(acc);
            acc += u32::from(np) + 1;
        }
        pbase.push(acc);
        let mut peer = vec![Peer::None; acc as usize];
        let slot = |s: u32, p: u8| -> Result<usize, RoutingError> {
            let s = s as usize;
            if s >= n_sw || p == 0 || p > inp.nports[s] {
                return Err(RoutingError::InvalidInput(format!(
                    "switch #{s} port {p} is out of range"
                )));
            }
            Ok(pbase[s] as usize + usize::from(p))
        };
        // Arcs: two per link, grouped by source switch, sorted by (remote switch, port).
        let mut arcs: Vec<(u32, u32, u8, u8)> = Vec::with_capacity(inp.links.len() * 2);
        for &(a, pa, b, pb) in &inp.links {
            if a == b {
                continue; // a loopback cable carries no route
            }
            arcs.push((a, b, pa, pb));
            arcs.push((b, a, pb, pa));
        }
        arcs.sort_unstable();
        let mut aoff = vec![0u32; n_sw + 1];
        for &(a, ..) in &arcs {
            aoff[a as usize + 1] += 1;
        }
        for i in 0..n_sw {
            aoff[i + 1] += aoff[i];
        }
        let na = arcs.len();
        let mut asrc = Vec::with_capacity(na);
        let mut adst = Vec::with_capacity(na);
        let mut aport = Vec::with_capacity(na);
        let mut arport = Vec::with_capacity(na);
        for (i, &(a, b, pa, pb)) in arcs.iter().enumerate() {
            let k = slot(a, pa)?;
            if peer[k] != Peer::None {
                return Err(RoutingError::InvalidInput(format!(
                    "switch #{a} port {pa} is cabled twice"
                )));
            }
            peer[k] = Peer::Switch {
                sw: b,
                port: pb,
                arc: i as u32,
            };
            asrc.push(a);
            adst.push(b);
            aport.push(pa);
            arport.push(pb);
        }
        let mut arev = vec![NONE; na];
        for i in 0..na {
            let k = pbase[adst[i] as usize] as usize + usize::from(arport[i]);
            if let Peer::Switch { arc, .. } = peer[k] {
                arev[i] = arc;
            }
        }
        let mut terms = Vec::with_capacity(inp.terms.len());
        let mut max_lid = inp.sw_lid.iter().copied().max().unwrap_or(0);
        for (i, &(s, p, base, lmc)) in inp.terms.iter().enumerate() {
            let k = slot(s, p)?;
            if peer[k] != Peer::None {
                return Err(RoutingError::InvalidInput(format!(
                    "switch #{s} port {p} is cabled twice"
                )));
            }
            if lmc > 7 {
                return Err(RoutingError::InvalidInput(format!("LMC {lmc} > 7")));
            }
            peer[k] = Peer::Term(i as u32);
            terms.push(Term {
                sw: s,
                port: p,
                base,
                lmc,
            });
            if base != 0 {
                let top = u32::from(base) + (1u32 << lmc) - 1;
                if top > 0xBFFF {
                    return Err(RoutingError::InvalidInput(format!(
                        "LID range {base}+{} leaves the unicast space",
                        1u32 << lmc
                    )));
                }
                max_lid = max_lid.max(top as u16);
            }
        }
        let mut toff = vec![0u32; n_sw + 1];
        for t in &terms {
            toff[t.sw as usize + 1] += 1;
        }
        for i in 0..n_sw {
            toff[i + 1] += toff[i];
        }
        let mut fill = toff.clone();
        let mut tlist = vec![0u32; terms.len()];
        let mut order: Vec<u32> = (0..terms.len() as u32).collect();
        order.sort_by_key(|&t| (terms[t as usize].sw, terms[t as usize].port));
        for t in order {
            let s = terms[t as usize].sw as usize;
            tlist[fill[s] as usize] = t;
            fill[s] += 1;
        }
        let lft_len = usize::from(max_lid) + 1;
        let mut lid_dest = vec![Dest::None; lft_len];
        for (s, &l) in inp.sw_lid.iter().enumerate() {
            if l != 0 {
                if lid_dest[usize::from(l)] != Dest::None {
                    return Err(RoutingError::InvalidInput(format!(
                        "LID {l} assigned twice"
                    )));
                }
                lid_dest[usize::from(l)] = Dest::Switch(s as u32);
            }
        }
        for (i, t) in terms.iter().enumerate() {
            if t.base == 0 {
                continue;
            }
            for k in 0..(1u16 << t.lmc) {
                let l = usize::from(t.base + k);
                if lid_dest[l] != Dest::None {
                    return Err(RoutingError::InvalidInput(format!(
                        "LID {l} assigned twice"
                    )));
                }
                lid_dest[l] = Dest::Term(i as u32, k as u8);
            }
        }
        let mut sw_lid = inp.sw_lid.clone();
        sw_lid.resize(n_sw, 0);
        let mut nsrc = vec![0u32; n_sw];
        for t in &terms {
            if t.base != 0 {
                nsrc[t.sw as usize] += 1;
            }
        }
        Ok(Net {
            n_sw,
            nports: inp.nports.clone(),
            pbase,
            peer,
            aoff,
            asrc,
            adst,
            aport,
            arport,
            arev,
            terms,
            toff,
            tlist,
            sw_lid,
            nsrc,
            lft_len,
            lid_dest,
            roots: Vec::new(),
            cn: Vec::new(),
            io: Vec::new(),
            max_reverse_hops: 0,
            dest_order: Vec::new(),
            term_pos: Vec::new(),
        })
    }

    /// The `i`-th destination switch to route (the routing order, else switch order).
    #[inline]
    pub(crate) fn dest(&self, i: usize) -> usize {
        self.dest_order.get(i).map_or(i, |&t| t as usize)
    }

    /// Whether terminal `t` is a compute node.
    #[inline]
    pub(crate) fn is_cn(&self, t: usize) -> bool {
        self.cn.get(t).copied().unwrap_or(true)
    }

    /// Whether routes towards `lid` may make reverse hops (see [`Net::io`]).
    #[inline]
    pub(crate) fn reverse_hop_dest(&self, lid: usize) -> bool {
        match self.lid_dest.get(lid) {
            Some(Dest::Term(t, _)) if self.max_reverse_hops > 0 => {
                self.io.get(*t as usize).copied().unwrap_or(false)
            }
            _ => false,
        }
    }

    /// Whether switch `s` has CAs and all of them that send are I/O nodes whose routes
    /// may reverse (see [`Net::io`]): its traffic may then reverse too.
    pub(crate) fn only_io_sources(&self, s: usize) -> bool {
        let mut senders = self
            .terms_of(s)
            .iter()
            .filter(|&&t| self.terms[t as usize].base != 0)
            .peekable();
        self.max_reverse_hops > 0
            && senders.peek().is_some()
            && senders.all(|&t| self.io.get(t as usize).copied().unwrap_or(false))
    }

    /// Arc indices leaving switch `s`.
    #[inline]
    pub(crate) fn arcs(&self, s: usize) -> std::ops::Range<usize> {
        self.aoff[s] as usize..self.aoff[s + 1] as usize
    }

    /// Number of arcs.
    pub(crate) fn n_arcs(&self) -> usize {
        self.adst.len()
    }

    /// Terminals cabled to switch `s`.
    #[inline]
    pub(crate) fn terms_of(&self, s: usize) -> &[u32] {
        &self.tlist[self.toff[s] as usize..self.toff[s + 1] as usize]
    }

    /// Number of addressable terminals cabled to `s` (the traffic sources there).
    #[inline]
    pub(crate) fn n_sources(&self, s: usize) -> u32 {
        self.nsrc[s]
    }

    /// What port `p` of switch `s` leads to.
    #[inline]
    pub(crate) fn peer(&self, s: usize, p: u8) -> Peer {
        if p > self.nports[s] {
            return Peer::None;
        }
        self.peer[self.pbase[s] as usize + usize::from(p)]
    }

    /// The switch a destination LID lives on, and the port that leaves the fabric there
    /// (0 for a switch's own LID).
    pub(crate) fn dest_switch(&self, lid: usize) -> Option<(u32, u8)> {
        match self.lid_dest.get(lid)? {
            Dest::None => None,
            Dest::Switch(s) => Some((*s, 0)),
            Dest::Term(t, _) => {
                let t = self.terms[*t as usize];
                Some((t.sw, t.port))
            }
        }
    }

    /// The LIDs living on switch `s`: terminal LIDs first (base LIDs of every terminal,
    /// then offset 1, 2, ... so LMC siblings come after all bases), then the switch LID.
    /// Each entry is `(lid, weight, base)`: weight 1 for terminal LIDs (they carry CA
    /// traffic), 0 for the switch's own LID.
    pub(crate) fn lids_on(&self, s: usize, out: &mut Vec<(u16, u8, u16)>) {
        out.clear();
        let ts = self.terms_of(s);
        let max_lmc = ts
            .iter()
            .map(|&t| self.terms[t as usize].lmc)
            .max()
            .unwrap_or(0);
        for k in 0..(1u16 << max_lmc) {
            for &t in ts {
                let t = self.terms[t as usize];
                if t.base != 0 && k < (1u16 << t.lmc) {
                    out.push((t.base + k, 1, t.base));
                }
            }
        }
        if !self.term_pos.is_empty() {
            // Listed terminals first, in the file's order, at each LMC offset; the sort
            // is stable, so the rest keep port order.
            let pos = |base: u16| match self.lid_dest[usize::from(base)] {
                Dest::Term(t, _) => self.term_pos[t as usize],
                _ => u32::MAX,
            };
            out.sort_by_key(|&(lid, _, base)| (lid - base, pos(base)));
        }
        if self.sw_lid[s] != 0 {
            out.push((self.sw_lid[s], 0, self.sw_lid[s]));
        }
    }

    /// BFS from `t` over plain slices (the routing passes' hot loop): `dist` in switch
    /// hops, `parent[x]` the arc by which `x` was first reached (its first-found next hop
    /// towards `t`), `queue` (at least `n_sw` long) the switches in BFS order. Returns how
    /// many switches were reached (the filled length of `queue`).
    pub(crate) fn bfs_parents(
        &self,
        t: usize,
        dist: &mut [u16],
        parent: &mut [u32],
        queue: &mut [u32],
    ) -> usize {
        let (aoff, adst, arev) = (&self.aoff[..], &self.adst[..], &self.arev[..]);
        dist.fill(INF);
        dist[t] = 0;
        queue[0] = t as u32;
        let (mut head, mut tail) = (0, 1);
        while head < tail {
            let c = queue[head] as usize;
            head += 1;
            let d = dist[c] + 1;
            let (lo, hi) = (aoff[c] as usize, aoff[c + 1] as usize);
            for (&x, &rev) in adst[lo..hi].iter().zip(&arev[lo..hi]) {
                let x = x as usize;
                if dist[x] == INF {
                    dist[x] = d;
                    parent[x] = rev;
                    queue[tail] = x as u32;
                    tail += 1;
                }
            }
        }
        tail
    }

    /// Multi-source BFS levels: per switch, the fewest switch hops from any of `sources`
    /// (0 for the sources themselves), over every arc. Switches no source reaches (another
    /// component, or every switch when `sources` is empty) hold [`INF`]. The ranks of
    /// `ftree` (from the leaves or the roots) and of `updn`/`dnup` (from the roots, and
    /// from the leaves to detect a layered fabric) are these levels.
    pub(crate) fn levels_from(&self, sources: &[u32]) -> Vec<u16> {
        let mut level = vec![INF; self.n_sw];
        let mut queue: Vec<u32> = Vec::with_capacity(self.n_sw);
        for &s in sources {
            if level[s as usize] == INF {
                level[s as usize] = 0;
                queue.push(s);
            }
        }
        self.expand(&mut level, &mut queue);
        level
    }

    /// BFS distances (in switch hops) from `t` to every switch, ignoring any restriction.
    pub(crate) fn bfs(&self, t: usize, dist: &mut [u16], queue: &mut Vec<u32>) {
        dist.fill(INF);
        queue.clear();
        dist[t] = 0;
        queue.push(t as u32);
        self.expand(dist, queue);
    }

    /// Breadth-first from the switches already in `queue` (their `dist` set, every other
    /// switch [`INF`]): gives each switch it reaches over any arc its hop distance.
    fn expand(&self, dist: &mut [u16], queue: &mut Vec<u32>) {
        let mut head = 0;
        while head < queue.len() {
            let c = queue[head] as usize;
            head += 1;
            let d = dist[c] + 1;
            for a in self.arcs(c) {
                let x = self.adst[a] as usize;
                if dist[x] == INF {
                    dist[x] = d;
                    queue.push(x as u32);
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod testnets {
    //! Small hand-built fabrics for unit tests (the real generators live in ibsm-topology
    //! and are exercised by the integration tests).
    use super::*;

    /// Assigns LIDs: switches 1.., then terminals aligned to 2^lmc.
    pub(crate) fn finish(
        nports: Vec<u8>,
        links: Vec<(u32, u8, u32, u8)>,
        terms: Vec<(u32, u8)>,
        lmc: u8,
    ) -> Net {
        let n = nports.len();
        let sw_lid: Vec<u16> = (1..=n as u16).collect();
        let step = 1u16 << lmc;
        let mut next = (n as u16 + 1).div_ceil(step) * step;
        let terms = terms
            .into_iter()
            .map(|(s, p)| {
                let b = next;
                next += step;
                (s, p, b, lmc)
            })
            .collect();
        Net::build(&NetInput {
            nports,
            sw_lid,
            links,
            terms,
        })
        .unwrap()
    }

    /// A ring of `n` switches, each with `h` terminals (ports 3..).
    pub(crate) fn ring(n: u32, h: u8) -> Net {
        let links = (0..n).map(|i| (i, 1, (i + 1) % n, 2)).collect();
        let terms = (0..n)
            .flat_map(|s| (0..h).map(move |j| (s, 3 + j)))
            .collect();
        finish(vec![2 + h; n as usize], links, terms, 0)
    }

    /// A two-level fat tree: `l` leaves with `h` hosts and `u` up links each to `u` spines
    /// (leaf port h+1+j goes to spine j port 1+leaf).
    pub(crate) fn two_level(l: u32, u: u32, h: u8, lmc: u8) -> Net {
        let mut nports = vec![h + u as u8; l as usize];
        nports.extend(std::iter::repeat_n(l as u8, u as usize));
        let mut links = Vec::new();
        for i in 0..l {
            for j in 0..u {
                links.push((i, h + 1 + j as u8, l + j, 1 + i as u8));
            }
        }
        let terms = (0..l)
            .flat_map(|s| (0..h).map(move |j| (s, 1 + j)))
            .collect();
        finish(nports, links, terms, lmc)
    }

    /// A `w` x `h` mesh (or torus when `wrap`) with one terminal per switch.
    /// Ports: 1 +x, 2 -x, 3 +y, 4 -y, 5 terminal.
    pub(crate) fn grid(w: u32, h: u32, wrap: bool) -> Net {
        let id = |x: u32, y: u32| y * w + x;
        let mut links = Vec::new();
        for y in 0..h {
            for x in 0..w {
                if x + 1 < w || (wrap && w > 2) {
                    links.push((id(x, y), 1, id((x + 1) % w, y), 2));
                }
                if y + 1 < h || (wrap && h > 2) {
                    links.push((id(x, y), 3, id(x, (y + 1) % h), 4));
                }
            }
        }
        let terms = (0..w * h).map(|s| (s, 5)).collect();
        finish(vec![5; (w * h) as usize], links, terms, 0)
    }
}

#[cfg(test)]
mod level_tests {
    use super::testnets::{finish, ring};
    use super::*;

    #[test]
    fn levels_count_hops_from_the_nearest_source() {
        let r = ring(6, 1);
        assert_eq!(r.levels_from(&[0]), [0, 1, 2, 3, 2, 1]);
        assert_eq!(r.levels_from(&[0, 3]), [0, 1, 1, 0, 1, 1]);
        // A source listed twice is one source.
        assert_eq!(r.levels_from(&[2, 2]), [2, 1, 0, 1, 2, 3]);
        assert_eq!(r.levels_from(&[]), [INF; 6]);
        // Two components: the one without a source stays unreached.
        let two = finish(vec![1; 4], vec![(0, 1, 1, 1), (2, 1, 3, 1)], Vec::new(), 0);
        assert_eq!(two.levels_from(&[1]), [1, 0, INF, INF]);
    }
}
