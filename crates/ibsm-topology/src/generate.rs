// Over 800 lines: the generators share the GUID/name scheme and node helpers; one function each.
//! Deterministic topology generators (seeded where random).
//!
//! # GUID and name scheme
//!
//! Every generated node GUID reads as `0xKK_GGGG_IIIIIIII_PP`:
//!
//! | bits   | meaning                                                          |
//! |--------|------------------------------------------------------------------|
//! | 63..56 | kind: `0x53` (`'S'`) switch, `0x48` (`'H'`) CA                   |
//! | 55..40 | group: fat-tree level (1 = leaf), dragonfly group; 0 otherwise   |
//! | 39..8  | index of the node within its kind and group, from 0              |
//! | 7..0   | 0 for the node; CA port GUIDs are node GUID + port number        |
//!
//! so `0x5300_0200_0000_0700` is switch 7 of fat-tree level 2 and `0x4800000000001101` is port 1
//! of CA 17 (0x11). System image GUID = node GUID. Descriptions say the same in words:
//! `"<topo> L2 sw 7"`, `"<topo> ca 17"` (see each generator), and switch ports are
//! numbered the same way on every switch of a level (down/terminal ports first), so
//! generated files are easy to read.
//!
//! Random generators take a `seed` and use a small built-in SplitMix64 generator, so
//! the same parameters always give the same fabric on every platform.

use crate::error::FabricError;
use crate::fabric::{Fabric, NodeSpec};
use crate::types::{Guid, NodeId, NodeKind, PortNum};

/// Kind byte of switch GUIDs.
pub const KIND_SWITCH: u8 = b'S';
/// Kind byte of CA GUIDs.
pub const KIND_CA: u8 = b'H';

/// The node GUID the generators give node `index` of `kind` in `group`.
#[must_use]
pub fn scheme_guid(kind: u8, group: u16, index: u32) -> Guid {
    Guid((u64::from(kind) << 56) | (u64::from(group) << 40) | (u64::from(index) << 8))
}

/// SplitMix64: tiny, fast, statistically fine for shuffling, identical everywhere, so
/// one seed always gives one result (the generators here, routing's metrics, and the
/// simulator's faults, which re-exports it as `ibsm_sim::SplitMix64`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-shift (bias below 2^-32 for our sizes).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }

    /// True with probability `ppm` parts per million (0 never draws, so a fault-free run
    /// consumes no randomness and adding a drop rate elsewhere does not shift it).
    pub fn chance_ppm(&mut self, ppm: u32) -> bool {
        if ppm == 0 {
            return false;
        }
        if ppm >= 1_000_000 {
            return true;
        }
        self.next_u64() % 1_000_000 < u64::from(ppm)
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}

fn bad(msg: impl Into<String>) -> FabricError {
    FabricError::BadParameters(msg.into())
}

fn port_count(n: u64, what: &str) -> Result<PortNum, FabricError> {
    PortNum::try_from(n)
        .ok()
        .filter(|&p| (1..=crate::fabric::MAX_PORTS).contains(&p))
        .ok_or_else(|| bad(format!("{what} needs {n} ports (1..=254 allowed)")))
}

fn add_switch(
    f: &mut Fabric,
    group: u16,
    index: u32,
    ports: PortNum,
    desc: String,
) -> Result<NodeId, FabricError> {
    f.add_node(NodeSpec::new(
        scheme_guid(KIND_SWITCH, group, index),
        NodeKind::Switch,
        ports,
        desc,
    ))
}

fn add_ca(f: &mut Fabric, index: u32, ports: PortNum, desc: String) -> Result<NodeId, FabricError> {
    f.add_node(NodeSpec::new(
        scheme_guid(KIND_CA, 0, index),
        NodeKind::Ca,
        ports,
        desc,
    ))
}

/// Parameters of an extended generalised fat tree XGFT(h; m1..mh; w1..wh).
///
/// Level 0 holds the CAs (`m1 * ... * mh` of them); a level-`i` switch has `m_i` children
/// and `w_(i+1)` parents; level `i` holds `m_(i+1)*...*m_h * w_1*...*w_i` switches.
/// CAs have `w1` ports (multi-rail when `w1 > 1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xgft {
    /// Children per node, level 1 (leaf) to h.
    pub m: Vec<u32>,
    /// Parents per node, level 0 (CA) to h-1.
    pub w: Vec<u32>,
    /// Ports per switch; `None` uses exactly `m_i + w_(i+1)` (top level `m_h`). With a
    /// radix, unused ports stay free.
    pub radix: Option<PortNum>,
}

impl Xgft {
    /// Number of levels `h`.
    #[must_use]
    pub fn height(&self) -> usize {
        self.m.len()
    }

    /// Number of CAs.
    #[must_use]
    pub fn ca_count(&self) -> u64 {
        self.m.iter().map(|&x| u64::from(x)).product()
    }

    /// Number of switches at level `i` (1..=h).
    #[must_use]
    pub fn switches_at(&self, level: usize) -> u64 {
        let up: u64 = self.m[level..].iter().map(|&x| u64::from(x)).product();
        let w: u64 = self.w[..level].iter().map(|&x| u64::from(x)).product();
        up * w
    }

    /// Total switch count.
    #[must_use]
    pub fn switch_count(&self) -> u64 {
        (1..=self.height()).map(|l| self.switches_at(l)).sum()
    }

    /// Digit radices of a level-`i` node, least significant first: `w_1..w_i`, then
    /// `m_(i+1)..m_h`.
    fn radices(&self, level: usize) -> Vec<u64> {
        let mut r: Vec<u64> = self.w[..level].iter().map(|&x| u64::from(x)).collect();
        r.extend(self.m[level..].iter().map(|&x| u64::from(x)));
        r
    }
}

fn digits_of(mut idx: u64, radices: &[u64], out: &mut [u64]) {
    for (d, &r) in out.iter_mut().zip(radices) {
        *d = idx % r;
        idx /= r;
    }
}

fn index_of(digits: &[u64], radices: &[u64]) -> u64 {
    digits
        .iter()
        .zip(radices)
        .rev()
        .fold(0, |acc, (&d, &r)| acc * r + d)
}

/// Builds an XGFT.
///
/// Ports: a level-`i` switch uses ports `1..=m_i` for its children (child digit + 1) and
/// `m_i + 1 ..= m_i + w_(i+1)` for its parents; CA port `y + 1` goes to its `y`-th leaf.
/// Descriptions: `"xgft L<i> sw <index>"`, `"xgft ca <index>"`.
///
/// # Errors
/// [`FabricError::BadParameters`] for empty or mismatched `m`/`w`, zero entries, more than
/// 2^32 nodes per level, or more ports than the radix / 254.
pub fn xgft(p: &Xgft) -> Result<Fabric, FabricError> {
    let h = p.height();
    if h == 0 || p.w.len() != h || p.m.contains(&0) || p.w.contains(&0) {
        return Err(bad("XGFT needs h >= 1, len(m) == len(w) == h, no zeros"));
    }
    let cas = p.ca_count();
    let switches = p.switch_count();
    if cas > u64::from(u32::MAX) || switches > u64::from(u32::MAX) {
        return Err(bad("XGFT too large"));
    }
    let mut f = Fabric::with_capacity(
        (cas + switches) as usize,
        (cas * u64::from(p.w[0]) + switches * 8) as usize,
    );
    let ca_ports = port_count(u64::from(p.w[0]), "a CA")?;
    // Per level: node ids.
    let mut ids: Vec<Vec<NodeId>> = Vec::with_capacity(h + 1);
    let width = cas.to_string().len();
    let mut level0 = Vec::with_capacity(cas as usize);
    for i in 0..cas as u32 {
        level0.push(add_ca(&mut f, i, ca_ports, format!("xgft ca {i:0width$}"))?);
    }
    ids.push(level0);
    for level in 1..=h {
        let down = u64::from(p.m[level - 1]);
        let up = if level < h { u64::from(p.w[level]) } else { 0 };
        let need = down + up;
        let ports = match p.radix {
            Some(r) if u64::from(r) < need => {
                return Err(bad(format!(
                    "level {level} switches need {need} ports, radix is {r}"
                )));
            }
            Some(r) => r,
            None => port_count(need, "a switch")?,
        };
        let n = p.switches_at(level);
        let width = n.to_string().len();
        let mut v = Vec::with_capacity(n as usize);
        for i in 0..n as u32 {
            v.push(add_switch(
                &mut f,
                level as u16,
                i,
                ports,
                format!("xgft L{level} sw {i:0width$}"),
            )?);
        }
        ids.push(v);
    }
    // Cables from each level-(i) node to its parents at level i+1.
    let mut child_digits = vec![0u64; h];
    for level in 0..h {
        let rc = p.radices(level);
        let rp = p.radices(level + 1);
        let m_next = u64::from(p.m[level]);
        let w_next = u64::from(p.w[level]);
        let up_base = if level == 0 {
            0
        } else {
            u64::from(p.m[level - 1])
        };
        for (ci, &child) in ids[level].iter().enumerate() {
            digits_of(ci as u64, &rc, &mut child_digits);
            // Digit `level` (0-based) is x_(level+1) in the child, y_(level+1) in parents.
            let x = child_digits[level];
            debug_assert!(x < m_next);
            let mut pd = child_digits.clone();
            for y in 0..w_next {
                pd[level] = y;
                let pi = index_of(&pd, &rp) as usize;
                let parent = ids[level + 1][pi];
                f.connect(
                    child,
                    (up_base + y + 1) as PortNum,
                    parent,
                    (x + 1) as PortNum,
                )?;
            }
        }
    }
    Ok(f)
}

/// A k-ary n-tree: XGFT(n; k..k; 1, k..k). `n` levels of `k^(n-1)` switches with `2k`
/// ports (the top level uses `k`), `k^n` single-port CAs.
///
/// # Errors
/// See [`xgft`].
pub fn k_ary_n_tree(k: u32, n: usize) -> Result<Fabric, FabricError> {
    let mut w = vec![k; n];
    if let Some(first) = w.first_mut() {
        *first = 1;
    }
    xgft(&Xgft {
        m: vec![k; n],
        w,
        radix: None,
    })
}

/// The largest full-bisection fat tree of `levels` levels built from switches with
/// `radix` ports: XGFT(h; r/2..r/2, r; 1, r/2..r/2). Every switch has `radix` ports and
/// uses them all (top-level switches use all `radix` ports downwards).
///
/// radix 36: 2 levels = 648 CAs on 18 + 36 switches; 3 levels = 11,664 CAs on 1,620.
/// radix 48, 3 levels = 27,648 CAs on 2,880 switches.
///
/// # Errors
/// Odd or zero radix, zero levels, radix above 254, or see [`xgft`].
pub fn fat_tree(radix: PortNum, levels: usize) -> Result<Fabric, FabricError> {
    xgft(&fat_tree_params(radix, levels)?)
}

/// The [`Xgft`] parameters [`fat_tree`] uses.
///
/// # Errors
/// Odd or zero radix, zero levels.
pub fn fat_tree_params(radix: PortNum, levels: usize) -> Result<Xgft, FabricError> {
    if radix < 2 || radix % 2 != 0 || levels == 0 {
        return Err(bad(
            "fat tree needs an even radix >= 2 and at least one level",
        ));
    }
    let half = u32::from(radix / 2);
    let mut m = vec![half; levels];
    m[levels - 1] = u32::from(radix);
    let mut w = vec![half; levels];
    w[0] = 1;
    Ok(Xgft {
        m,
        w,
        radix: Some(radix),
    })
}

/// Parameters of a mesh or torus of switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Size of each dimension (1 to 3 dimensions, each at least 1).
    pub dims: Vec<u32>,
    /// Wrap-around links (torus) or not (mesh).
    pub torus: bool,
    /// CAs attached to each switch.
    pub cas_per_switch: u32,
}

/// A 1D/2D/3D mesh or torus of switches, each with `cas_per_switch` single-port CAs.
///
/// Switch `(x, y, z)` has index `x + X*(y + Y*z)` and description `"mesh sw x,y,z"`
/// (`"torus ..."`); its ports are `1..=cas_per_switch` for CAs, then per dimension `d` a
/// "minus" port and a "plus" port: `cas + 2d + 1` and `cas + 2d + 2`. Plus port of a switch
/// cables to the minus port of its neighbour. In a torus of size 2 along a dimension the
/// two neighbours coincide and the pair gets two parallel cables; size 1 adds no cable.
/// Unused direction ports (mesh edges) stay free, so every switch has the same radix.
/// CA `i` hangs off switch `i / cas_per_switch`.
///
/// # Errors
/// [`FabricError::BadParameters`] for 0 or more than 3 dimensions, a zero size, or too
/// many ports.
pub fn grid(p: &Grid) -> Result<Fabric, FabricError> {
    let nd = p.dims.len();
    if nd == 0 || nd > 3 || p.dims.contains(&0) {
        return Err(bad("mesh/torus needs 1 to 3 dimensions of size >= 1"));
    }
    let n: u64 = p.dims.iter().map(|&d| u64::from(d)).product();
    let cas = n * u64::from(p.cas_per_switch);
    if n > u64::from(u32::MAX) || cas > u64::from(u32::MAX) {
        return Err(bad("mesh/torus too large"));
    }
    let ports = port_count(u64::from(p.cas_per_switch) + 2 * nd as u64, "a mesh switch")?;
    let kind = if p.torus { "torus" } else { "mesh" };
    let mut f = Fabric::with_capacity((n + cas) as usize, (cas + n * nd as u64) as usize);
    let mut sw = Vec::with_capacity(n as usize);
    let mut coords = [0u32; 3];
    for i in 0..n as u32 {
        let mut rem = i;
        for (c, &d) in coords.iter_mut().zip(&p.dims) {
            *c = rem % d;
            rem /= d;
        }
        let label: Vec<String> = coords[..nd].iter().map(u32::to_string).collect();
        sw.push(add_switch(
            &mut f,
            0,
            i,
            ports,
            format!("{kind} sw {}", label.join(",")),
        )?);
    }
    let base = p.cas_per_switch;
    let mut stride = 1u32;
    for (d, &size) in p.dims.iter().enumerate() {
        let minus = (base + 2 * d as u32 + 1) as PortNum;
        let plus = minus + 1;
        for i in 0..n as u32 {
            let x = (i / stride) % size;
            let next = if x + 1 < size {
                i + stride
            } else if p.torus && size > 1 {
                i - x * stride
            } else {
                continue;
            };
            if next == i {
                continue;
            }
            f.connect(sw[i as usize], plus, sw[next as usize], minus)?;
        }
        stride *= size;
    }
    let width = cas.to_string().len();
    for c in 0..cas as u32 {
        let id = add_ca(&mut f, c, 1, format!("{kind} ca {c:0width$}"))?;
        let s = c / p.cas_per_switch;
        f.connect(id, 1, sw[s as usize], (c % p.cas_per_switch + 1) as PortNum)?;
    }
    Ok(f)
}

/// How dragonfly global links are spread over the routers of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GlobalArrangement {
    /// "Consecutive"/absolute: global link `j` of group `i` goes to group `j` if `j < i`,
    /// else `j + 1`; router `j / h` holds link `j`.
    #[default]
    Absolute,
    /// "Palmtree": global link `j` of group `i` goes to group `(i - j - 1) mod g`.
    Palmtree,
}

/// Parameters of a dragonfly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dragonfly {
    /// Routers (switches) per group, fully connected inside the group.
    pub a: u32,
    /// CAs per router.
    pub p: u32,
    /// Global links per router.
    pub h: u32,
    /// Number of groups, 2..=a*h+1.
    pub g: u32,
    /// Which group each global port reaches.
    pub arrangement: GlobalArrangement,
}

/// A dragonfly(a, p, h, g).
///
/// Router ports: `1..=p` CAs, `p+1 ..= p+a-1` local links (to the other routers of the
/// group in index order), `p+a ..= p+a+h-1` global links. Group `i` has `a*h` global link
/// slots `j = 0..a*h`; slot `j` sits on router `j / h`, global port `j % h`. With
/// `g = a*h + 1` every pair of groups gets exactly one global cable; with fewer groups,
/// slot `j` uses target index `j mod (g-1)` and pairs get `floor(a*h / (g-1))` parallel
/// cables, leftover slots stay free. Router `r` of group `G` has GUID group `G` and index
/// `r`, description `"df g<G> sw <r>"`; CAs `"df ca <index>"`.
///
/// # Errors
/// [`FabricError::BadParameters`] for zero sizes, `g` outside `2..=a*h+1`, or too many
/// ports.
pub fn dragonfly(p: &Dragonfly) -> Result<Fabric, FabricError> {
    let (a, t, h, g) = (
        u64::from(p.a),
        u64::from(p.p),
        u64::from(p.h),
        u64::from(p.g),
    );
    if a == 0 || h == 0 || g < 2 || g > a * h + 1 || g > u64::from(u16::MAX) {
        return Err(bad("dragonfly needs a, h >= 1 and 2 <= g <= a*h + 1"));
    }
    let ports = port_count(t + a - 1 + h, "a dragonfly router")?;
    let routers = a * g;
    let cas = routers * t;
    if cas > u64::from(u32::MAX) {
        return Err(bad("dragonfly too large"));
    }
    let mut f = Fabric::with_capacity((routers + cas) as usize, (cas + routers * (a + h)) as usize);
    let mut r_ids = Vec::with_capacity(routers as usize);
    for grp in 0..g {
        for r in 0..a {
            r_ids.push(add_switch(
                &mut f,
                grp as u16,
                r as u32,
                ports,
                format!("df g{grp} sw {r}"),
            )?);
        }
    }
    let rid = |grp: u64, r: u64| r_ids[(grp * a + r) as usize];
    // Local all-to-all: router r's local port for peer q is p + 1 + (q if q < r else q - 1).
    let local = |r: u64, q: u64| (t + 1 + if q < r { q } else { q - 1 }) as PortNum;
    for grp in 0..g {
        for r in 0..a {
            for q in r + 1..a {
                f.connect(rid(grp, r), local(r, q), rid(grp, q), local(q, r))?;
            }
        }
    }
    // Global links.
    let slots = a * h;
    let copies = slots / (g - 1);
    let global_port = |j: u64| (t + a + (j % h)) as PortNum;
    let target = |i: u64, k: u64| match p.arrangement {
        GlobalArrangement::Absolute => {
            if k < i {
                k
            } else {
                k + 1
            }
        }
        GlobalArrangement::Palmtree => (i + g - k - 1) % g,
    };
    let back = |i: u64, tgt: u64| match p.arrangement {
        GlobalArrangement::Absolute => {
            if i < tgt {
                i
            } else {
                i - 1
            }
        }
        GlobalArrangement::Palmtree => (tgt + g - i - 1) % g,
    };
    for i in 0..g {
        for c in 0..copies {
            for k in 0..g - 1 {
                let tgt = target(i, k);
                if tgt < i {
                    continue; // created from the other side
                }
                let j = c * (g - 1) + k;
                let jb = c * (g - 1) + back(i, tgt);
                f.connect(
                    rid(i, j / h),
                    global_port(j),
                    rid(tgt, jb / h),
                    global_port(jb),
                )?;
            }
        }
    }
    let width = cas.to_string().len();
    for c in 0..cas {
        let id = add_ca(&mut f, c as u32, 1, format!("df ca {c:0width$}"))?;
        f.connect(id, 1, r_ids[(c / t) as usize], (c % t + 1) as PortNum)?;
    }
    Ok(f)
}

/// Parameters of a Jellyfish (random regular switch graph).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jellyfish {
    /// Number of switches.
    pub switches: u32,
    /// Ports per switch.
    pub radix: PortNum,
    /// Ports per switch used for switch-to-switch cables (the degree `r`); the remaining
    /// `radix - r` carry CAs.
    pub network_ports: PortNum,
    /// Random seed.
    pub seed: u64,
}

/// A Jellyfish: a random `r`-regular graph of switches (no parallel cables), each
/// switch with `radix - r` single-port CAs.
///
/// Built as in the Jellyfish paper: join random pairs of switches that both have free
/// network ports and are not yet adjacent; when no such pair is left but a switch still
/// has two or more free ports, remove a random cable `(x, y)` with `x`, `y` not adjacent
/// to it and cable it to both. Deterministic for a given seed. If `switches * r` is odd,
/// one port stays free. Switch `i` is `"jf sw <i>"`; CA ports come first (`1..=radix-r`),
/// network ports after.
///
/// # Errors
/// [`FabricError::BadParameters`] if `r >= switches` or `r > radix`.
pub fn jellyfish(p: &Jellyfish) -> Result<Fabric, FabricError> {
    let n = p.switches as usize;
    let r = usize::from(p.network_ports);
    if r > usize::from(p.radix) || (r >= n && n > 0) || p.radix == 0 {
        return Err(bad(
            "jellyfish needs network ports <= radix and < switch count",
        ));
    }
    let cas_per = u32::from(p.radix) - r as u32;
    // Adjacency as sorted small vectors; degree r.
    let mut adj: Vec<Vec<u32>> = vec![Vec::with_capacity(r); n];
    let mut rng = SplitMix64::new(p.seed);
    let has = |adj: &Vec<Vec<u32>>, x: usize, y: u32| adj[x].contains(&y);
    // Free-port list (switch indices with free network ports).
    let mut free: Vec<u32> = (0..n as u32).collect();
    let mut stall = 0usize;
    let mut rewires = 0usize;
    loop {
        if free.is_empty() || (free.len() == 1 && adj[free[0] as usize].len() + 1 >= r) {
            break;
        }
        if free.len() >= 2 {
            let i = rng.below(free.len());
            let mut j = rng.below(free.len() - 1);
            if j >= i {
                j += 1;
            }
            let (x, y) = (free[i], free[j]);
            if !has(&adj, x as usize, y) {
                adj[x as usize].push(y);
                adj[y as usize].push(x);
                stall = 0;
                // Drop full switches (higher position first so the lower stays valid).
                for k in [i.max(j), i.min(j)] {
                    if adj[free[k] as usize].len() == r {
                        free.swap_remove(k);
                    }
                }
                continue;
            }
            stall += 1;
            if stall < 8 * free.len() * free.len() + 16 {
                continue;
            }
        }
        // Stuck: every remaining pair is adjacent. Rewire through a random cable.
        stall = 0;
        rewires += 1;
        if rewires > 16 * n {
            break;
        }
        // Prefer a switch with two free ports: it absorbs the cable whole.
        let s = free
            .iter()
            .copied()
            .find(|&v| adj[v as usize].len() + 2 <= r)
            .unwrap_or(free[0]) as usize;
        for _ in 0..64 * n {
            let x = rng.below(n);
            if x == s || adj[x].is_empty() || has(&adj, s, x as u32) {
                continue;
            }
            let y = adj[x][rng.below(adj[x].len())] as usize;
            if y == s || has(&adj, s, y as u32) {
                continue;
            }
            adj[x].retain(|&v| v as usize != y);
            adj[y].retain(|&v| v as usize != x);
            adj[s].push(x as u32);
            adj[x].push(s as u32);
            if adj[s].len() < r {
                adj[s].push(y as u32);
                adj[y].push(s as u32);
            } else if !free.contains(&(y as u32)) {
                // s had one free port: the free port moves to y, which may pair up.
                free.push(y as u32);
            }
            break;
        }
        free.retain(|&v| adj[v as usize].len() < r);
    }
    let total = n as u64 * (1 + u64::from(cas_per));
    let mut f = Fabric::with_capacity(total as usize, n * (r / 2 + cas_per as usize));
    let mut ids = Vec::with_capacity(n);
    for i in 0..n as u32 {
        ids.push(add_switch(&mut f, 0, i, p.radix, format!("jf sw {i}"))?);
    }
    // Cable in (lower index, neighbour) order so ports follow neighbour order.
    let mut next_port = vec![cas_per as PortNum + 1; n];
    for x in 0..n {
        let mut nb = adj[x].clone();
        nb.sort_unstable();
        for y in nb {
            let y = y as usize;
            if y <= x {
                continue;
            }
            f.connect(ids[x], next_port[x], ids[y], next_port[y])?;
            next_port[x] += 1;
            next_port[y] += 1;
        }
    }
    let cas = n as u64 * u64::from(cas_per);
    let width = cas.to_string().len();
    for c in 0..cas as u32 {
        let id = add_ca(&mut f, c, 1, format!("jf ca {c:0width$}"))?;
        f.connect(
            id,
            1,
            ids[(c / cas_per) as usize],
            (c % cas_per + 1) as PortNum,
        )?;
    }
    Ok(f)
}

/// Parameters of a two-level fat tree with storage (I/O nodes) hung off its spines: the
/// fabric OpenSM's `io_guid_file` and `max_reverse_hops` are for.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SpineStorage {
    /// Leaf switches (level 1), each with `cas_per_leaf` compute CAs.
    pub leaves: u32,
    /// Spine switches (level 2), each cabled to every leaf.
    pub spines: u32,
    /// Compute CAs per leaf.
    pub cas_per_leaf: u32,
    /// The spine each storage CA hangs off, one entry per storage CA.
    pub storage: Vec<u32>,
    /// Leaf-spine cables left out, as `(leaf, spine)`: a degraded tree whose leaves are
    /// not all below every spine.
    pub missing: Vec<(u32, u32)>,
}

/// A two-level fat tree with storage CAs on its spines ([`SpineStorage`]).
///
/// Switches come first (leaves `"spine-storage L1 sw i"`, then spines `"... L2 sw j"`),
/// then the compute CAs (`"spine-storage ca c"`, index `c`, CA `c` on leaf
/// `c / cas_per_leaf`), then the storage CAs (`"spine-storage io k"`, index
/// `leaves * cas_per_leaf + k`), all single-port. Leaf ports: `1..=cas_per_leaf` the
/// CAs, `cas_per_leaf + 1 + j` spine `j`; spine ports: `1 + i` leaf `i`, then
/// `leaves + 1 + m` its `m`-th storage CA. Every spine has as many ports as the one
/// with the most storage CAs needs.
///
/// # Errors
/// [`FabricError::BadParameters`] for no leaves or spines, a storage spine or missing
/// cable out of range, more than 2^32 CAs, or too many ports.
pub fn spine_storage(p: &SpineStorage) -> Result<Fabric, FabricError> {
    if p.leaves == 0 || p.spines == 0 {
        return Err(bad("spine storage needs at least one leaf and one spine"));
    }
    if let Some(s) = p.storage.iter().find(|&&s| s >= p.spines) {
        return Err(bad(format!(
            "storage on spine {s}, there are {} spines",
            p.spines
        )));
    }
    if let Some((l, s)) = p
        .missing
        .iter()
        .find(|&&(l, s)| l >= p.leaves || s >= p.spines)
    {
        return Err(bad(format!(
            "missing cable leaf {l} - spine {s} is not in a {} x {} tree",
            p.leaves, p.spines
        )));
    }
    let compute = u64::from(p.leaves) * u64::from(p.cas_per_leaf);
    if compute + p.storage.len() as u64 > u64::from(u32::MAX) {
        return Err(bad("spine storage too large"));
    }
    let mut on_spine = vec![0u64; p.spines as usize];
    for &s in &p.storage {
        on_spine[s as usize] += 1;
    }
    let most = on_spine.iter().copied().max().unwrap_or(0);
    let leaf_ports = port_count(
        u64::from(p.cas_per_leaf) + u64::from(p.spines),
        "a leaf switch",
    )?;
    let spine_ports = port_count(u64::from(p.leaves) + most, "a spine switch")?;
    let mut f = Fabric::new();
    let mut leaves = Vec::with_capacity(p.leaves as usize);
    for i in 0..p.leaves {
        let desc = format!("spine-storage L1 sw {i}");
        leaves.push(add_switch(&mut f, 1, i, leaf_ports, desc)?);
    }
    let mut spines = Vec::with_capacity(p.spines as usize);
    for j in 0..p.spines {
        let desc = format!("spine-storage L2 sw {j}");
        spines.push(add_switch(&mut f, 2, j, spine_ports, desc)?);
    }
    for (i, &leaf) in leaves.iter().enumerate() {
        for (j, &spine) in spines.iter().enumerate() {
            if p.missing.contains(&(i as u32, j as u32)) {
                continue;
            }
            let lp = (p.cas_per_leaf as usize + 1 + j) as PortNum;
            f.connect(leaf, lp, spine, (1 + i) as PortNum)?;
        }
    }
    for c in 0..compute as u32 {
        let id = add_ca(&mut f, c, 1, format!("spine-storage ca {c}"))?;
        let leaf = leaves[(c / p.cas_per_leaf) as usize];
        f.connect(id, 1, leaf, (c % p.cas_per_leaf + 1) as PortNum)?;
    }
    let mut used = vec![0u64; p.spines as usize];
    for (k, &s) in p.storage.iter().enumerate() {
        let index = compute as u32 + k as u32;
        let id = add_ca(&mut f, index, 1, format!("spine-storage io {k}"))?;
        let port = u64::from(p.leaves) + 1 + used[s as usize];
        used[s as usize] += 1;
        f.connect(id, 1, spines[s as usize], port as PortNum)?;
    }
    Ok(f)
}

/// Options for [`degrade_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DegradeOptions {
    /// Keep the switches connected (never cut a cable of a random spanning tree).
    pub keep_connected: bool,
}

impl Default for DegradeOptions {
    fn default() -> Self {
        DegradeOptions {
            keep_connected: true,
        }
    }
}

/// Removes `fraction` (0.0..=1.0, rounded down) of the switch-to-switch cables, chosen at
/// random by `seed`, keeping the fabric connected; returns how many were removed. See
/// [`degrade_with`].
///
/// # Errors
/// See [`degrade_with`].
pub fn degrade(f: &mut Fabric, fraction: f64, seed: u64) -> Result<usize, FabricError> {
    degrade_with(f, fraction, seed, DegradeOptions::default())
}

/// Removes `fraction` of the switch-to-switch cables, chosen at random by `seed`.
///
/// With `keep_connected`, a random spanning forest of the switch graph (Kruskal over the
/// shuffled cables) is protected first, so the switch graph keeps its components (and
/// every CA stays reachable); if fewer unprotected cables exist than asked for, all of
/// them go and the count returned is smaller. Deterministic: cables are listed in
/// canonical GUID order before shuffling.
///
/// # Errors
/// [`FabricError::BadParameters`] if `fraction` is not within 0.0..=1.0.
pub fn degrade_with(
    f: &mut Fabric,
    fraction: f64,
    seed: u64,
    opts: DegradeOptions,
) -> Result<usize, FabricError> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(bad("degrade fraction must be within 0.0..=1.0"));
    }
    let mut cables: Vec<(crate::types::LinkId, NodeId, NodeId)> = f
        .links()
        .filter(|(_, l)| {
            f.node(l.a.node).is_some_and(crate::Node::is_switch)
                && f.node(l.b.node).is_some_and(crate::Node::is_switch)
        })
        .map(|(id, l)| (id, l.a.node, l.b.node))
        .collect();
    let want = (cables.len() as f64 * fraction).floor() as usize;
    let mut rng = SplitMix64::new(seed);
    rng.shuffle(&mut cables);
    let mut removable = Vec::with_capacity(cables.len());
    if opts.keep_connected {
        let mut parent: Vec<u32> = (0..f.node_bound() as u32).collect();
        fn find(parent: &mut [u32], mut x: u32) -> u32 {
            while parent[x as usize] != x {
                parent[x as usize] = parent[parent[x as usize] as usize];
                x = parent[x as usize];
            }
            x
        }
        for &(id, a, b) in &cables {
            let (ra, rb) = (find(&mut parent, a.0), find(&mut parent, b.0));
            if ra == rb {
                removable.push(id);
            } else {
                parent[ra as usize] = rb;
            }
        }
    } else {
        removable.extend(cables.iter().map(|c| c.0));
    }
    let n = want.min(removable.len());
    for &id in &removable[..n] {
        f.remove_link(id)?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
