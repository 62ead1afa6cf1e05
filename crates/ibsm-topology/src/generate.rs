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
use crate::types::{Guid, NodeId, NodeType, PortNum};

/// Kind byte of switch GUIDs.
pub const KIND_SWITCH: u8 = b'S';
/// Kind byte of CA GUIDs.
pub const KIND_CA: u8 = b'H';

/// The node GUID the generators give node `index` of `kind` in `group`.
#[must_use]
pub fn scheme_guid(kind: u8, group: u16, index: u32) -> Guid {
    Guid((u64::from(kind) << 56) | (u64::from(group) << 40) | (u64::from(index) << 8))
}

/// SplitMix64: tiny, fast, statistically fine for shuffling, identical everywhere.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    #[must_use]
    pub fn new(seed: u64) -> Self {
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
        NodeType::Switch,
        ports,
        desc,
    ))
}

fn add_ca(f: &mut Fabric, index: u32, ports: PortNum, desc: String) -> Result<NodeId, FabricError> {
    f.add_node(NodeSpec::new(
        scheme_guid(KIND_CA, 0, index),
        NodeType::Ca,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(f: &Fabric) -> (usize, usize, usize) {
        (f.switch_count(), f.cas().count(), f.link_count())
    }

    #[test]
    fn fat_tree_radix_36_two_levels() {
        let f = fat_tree(36, 2).unwrap();
        assert_eq!(counts(&f), (54, 648, 648 + 36 * 18));
        assert!(f.is_connected());
        // Every switch uses all 36 ports.
        for (_, n) in f.switches() {
            assert_eq!(n.num_ports(), 36);
            assert_eq!(n.degree(), 36);
        }
        let leaves = f
            .switches()
            .filter(|(_, n)| n.guid().0 >> 40 & 0xffff == 1)
            .count();
        assert_eq!(leaves, 36);
    }

    #[test]
    fn fat_tree_radix_36_three_levels() {
        let f = fat_tree(36, 3).unwrap();
        assert_eq!(f.switch_count(), 1620);
        assert_eq!(f.cas().count(), 11_664);
        assert_eq!(f.link_count(), 11_664 * 3);
        assert!(f.switches().all(|(_, n)| n.degree() == 36));
    }

    #[test]
    fn fat_tree_radix_48_counts() {
        let p = fat_tree_params(48, 3).unwrap();
        assert_eq!(p.ca_count(), 27_648);
        assert_eq!(p.switch_count(), 2_880);
        assert_eq!(
            [p.switches_at(1), p.switches_at(2), p.switches_at(3)],
            [1152, 1152, 576]
        );
    }

    #[test]
    fn k_ary_n_tree_structure() {
        let f = k_ary_n_tree(4, 3).unwrap();
        assert_eq!(counts(&f), (48, 64, 64 * 3));
        let csr = crate::Csr::new(&f);
        // Any two leaves are at most 2 * (n - 1) = 4 switch hops apart.
        let hops = csr.all_hops();
        assert!(hops.iter().all(|&h| h <= 4));
        // Leaves carry k CAs each.
        let stats = f.degree_stats();
        assert_eq!(stats.terminals_per_leaf.min, 4);
        assert_eq!(stats.terminals_per_leaf.max, 4);
        assert_eq!(stats.parallel_pairs, 0);
    }

    #[test]
    fn xgft_multi_rail() {
        // Dual-rail CAs: w1 = 2.
        let f = xgft(&Xgft {
            m: vec![4, 4],
            w: vec![2, 2],
            radix: None,
        })
        .unwrap();
        assert!(f.cas().all(|(_, n)| n.num_ports() == 2 && n.degree() == 2));
        assert_eq!(f.cas().count(), 16);
        assert!(f.is_connected());
    }

    #[test]
    fn generators_are_deterministic() {
        let a = fat_tree(8, 3).unwrap();
        let b = fat_tree(8, 3).unwrap();
        let la: Vec<_> = a
            .links()
            .map(|(_, l)| (a.guid_of(l.a.node), l.a.port, a.guid_of(l.b.node), l.b.port))
            .collect();
        let lb: Vec<_> = b
            .links()
            .map(|(_, l)| (b.guid_of(l.a.node), l.a.port, b.guid_of(l.b.node), l.b.port))
            .collect();
        assert_eq!(la, lb);
    }

    #[test]
    fn bad_parameters() {
        assert!(fat_tree(7, 2).is_err());
        assert!(fat_tree(36, 0).is_err());
        assert!(
            xgft(&Xgft {
                m: vec![2],
                w: vec![],
                radix: None
            })
            .is_err()
        );
        assert!(
            xgft(&Xgft {
                m: vec![300, 2],
                w: vec![1, 2],
                radix: None
            })
            .is_err()
        );
        assert!(
            xgft(&Xgft {
                m: vec![4, 4],
                w: vec![1, 4],
                radix: Some(6)
            })
            .is_err()
        );
    }

    #[test]
    fn guid_scheme() {
        assert_eq!(scheme_guid(KIND_SWITCH, 2, 7), Guid(0x5300_0200_0000_0700));
        assert_eq!(scheme_guid(KIND_CA, 0, 0x11).0 + 1, 0x4800_0000_0000_1101);
    }
}
