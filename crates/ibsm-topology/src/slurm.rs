//! Slurm's tree topology (`topology.conf` for `TopologyPlugin=topology/tree`) of a
//! [`Fabric`], and host lists compressed as Slurm writes them.
//!
//! ```text
//! SwitchName=leaf-1 Nodes=node[01-04,07]
//! SwitchName=leaf-2 Nodes=node[08-12]
//! SwitchName=spine-1 Switches=leaf-[1-2]
//! ```
//!
//! Each switch is ranked by its hop distance from the nearest CA (1: a CA is cabled to
//! it). A switch lists the CAs cabled to it as `Nodes=` and its neighbours one rank
//! below as `Switches=`; lines go rank by rank from the leaves up, so every switch is
//! defined before a line names it. A fat tree comes out as its levels. A switch with
//! neither (nothing below it) is left out, and so is a CA without a name.
//!
//! Names come from the caller (a node-name map, else the NodeDescription): a CA's node
//! name is the first word of its name (`node07 HCA-1` -> `node07`), a switch's name is
//! its whole name with each run of characters Slurm does not take in a name (white
//! space, `,`, `[`, `]`, `=`, `#`, anything outside printable ASCII) replaced by `_`; a
//! switch whose name is empty or already taken is named by its GUID (`0x0002c9...`).
//! A host on two leaves (two HCAs) is listed under both.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::fmt::Write as _;

use crate::{Fabric, Node, NodeId};

/// Slurm's tree `topology.conf` of `fabric`, each node named by `name` (a node-name
/// map's name or the NodeDescription; see the module documentation for what is made
/// of it).
#[must_use]
pub fn tree_topology(fabric: &Fabric, name: impl Fn(NodeId, &Node) -> String) -> String {
    let rank = ranks(fabric);
    // Switch names, unique, in GUID order (the fabric iterates by GUID).
    let mut taken = HashSet::new();
    let mut switch_name = BTreeMap::new();
    for (id, n) in fabric.switches() {
        let mut s = sanitize(&name(id, n));
        if s.is_empty() || !taken.insert(s.clone()) {
            s = format!("{:#018x}", n.guid().0);
            taken.insert(s.clone());
        }
        switch_name.insert(id, s);
    }
    let mut by_rank: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    for (id, _) in fabric.switches() {
        if let Some(&r) = rank.get(&id) {
            by_rank.entry(r).or_default().push(id);
        }
    }
    let mut out = String::new();
    for (&r, switches) in &by_rank {
        for &sw in switches {
            let mut nodes = BTreeSet::new();
            let mut below = BTreeSet::new();
            for (_, peer, _) in fabric.links_of(sw) {
                let Some(pn) = fabric.node(peer.node) else {
                    continue;
                };
                if pn.node_type().is_terminal() {
                    let host = first_word(&name(peer.node, pn));
                    if !host.is_empty() {
                        nodes.insert(host);
                    }
                } else if rank.get(&peer.node) == Some(&(r - 1)) {
                    if let Some(s) = switch_name.get(&peer.node) {
                        below.insert(s.clone());
                    }
                }
            }
            if nodes.is_empty() && below.is_empty() {
                continue;
            }
            let _ = write!(out, "SwitchName={}", switch_name[&sw]);
            if !below.is_empty() {
                let list: Vec<String> = below.into_iter().collect();
                let _ = write!(out, " Switches={}", compress(&list));
            }
            if !nodes.is_empty() {
                let list: Vec<String> = nodes.into_iter().collect();
                let _ = write!(out, " Nodes={}", compress(&list));
            }
            out.push('\n');
        }
    }
    out
}

/// Each switch's hop distance from the nearest terminal (CA or router); switches no
/// terminal reaches have none.
fn ranks(fabric: &Fabric) -> BTreeMap<NodeId, u32> {
    let mut rank = BTreeMap::new();
    let mut queue = VecDeque::new();
    for (id, n) in fabric.nodes() {
        if n.node_type().is_terminal() {
            rank.insert(id, 0);
            queue.push_back(id);
        }
    }
    while let Some(u) = queue.pop_front() {
        let r = rank[&u];
        for (_, peer, _) in fabric.links_of(u) {
            let is_switch = fabric.node(peer.node).is_some_and(Node::is_switch);
            if is_switch && !rank.contains_key(&peer.node) {
                rank.insert(peer.node, r + 1);
                queue.push_back(peer.node);
            }
        }
    }
    rank.retain(|id, _| fabric.node(*id).is_some_and(Node::is_switch));
    rank
}

fn allowed(c: char) -> bool {
    c.is_ascii_graphic() && !matches!(c, ',' | '[' | ']' | '=' | '#' | '"' | '\'')
}

/// `name` with each run of characters Slurm does not take replaced by one `_`, and
/// without such characters at either end.
fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut gap = false;
    for c in name.chars() {
        if allowed(c) {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.push(c);
        } else {
            gap = true;
        }
    }
    out
}

/// The first word of `name`, sanitized.
fn first_word(name: &str) -> String {
    sanitize(name.split_whitespace().next().unwrap_or(""))
}

/// A host's name split as Slurm's host lists split it: everything before the trailing
/// decimal digits, the digits' value and their count (its width).
fn split(host: &str) -> (&str, Option<(u64, usize)>) {
    let digits = host.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (prefix, num) = host.split_at(host.len() - digits);
    match num.parse::<u64>() {
        // 20 digits or more do not fit; such a name stands alone.
        Ok(v) if digits > 0 && digits < 20 => (prefix, Some((v, digits))),
        _ => (host, None),
    }
}

/// Whether a number of `width` digits is written with leading zeros.
fn padded(v: u64, width: usize) -> bool {
    width > 1 && v.checked_ilog10().unwrap_or(0) + 1 < u32::try_from(width).unwrap_or(u32::MAX)
}

/// `hosts` as one Slurm host list: sorted and deduplicated, hosts that share a prefix
/// and a number style grouped as `prefix[ranges]` (`node[01-04,07]`), a group of one
/// written plainly (`node07`), groups joined by `,`.
#[must_use]
pub fn compress(hosts: &[String]) -> String {
    // Slurm's rule: numbers of one prefix join one run where each can be written in
    // the run's width without changing its text. So zero-padded numbers of width w
    // go with each other and with unpadded ones of at least w digits; unpadded ones
    // with each other. (prefix, width; 0 for unpadded) -> numbers.
    let mut split_hosts: Vec<(&str, u64, usize)> = Vec::new();
    let mut plain: BTreeSet<&str> = BTreeSet::new();
    let mut pads: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    for h in hosts {
        match split(h) {
            (prefix, Some((v, w))) => {
                if padded(v, w) {
                    pads.entry(prefix).or_default().insert(w);
                }
                split_hosts.push((prefix, v, w));
            }
            (name, None) => {
                plain.insert(name);
            }
        }
    }
    let mut groups: BTreeMap<(&str, usize), BTreeSet<u64>> = BTreeMap::new();
    for (prefix, v, w) in split_hosts {
        let class = if padded(v, w) {
            w
        } else {
            pads.get(prefix)
                .and_then(|ws| ws.range(..=w).next_back().copied())
                .unwrap_or(0)
        };
        groups.entry((prefix, class)).or_default().insert(v);
    }
    // Sorted as Slurm sorts a host list: by prefix, then by number.
    let mut parts: Vec<((String, u64), String)> = Vec::new();
    for name in plain {
        parts.push(((name.to_owned(), 0), name.to_owned()));
    }
    for ((prefix, width), numbers) in groups {
        let show = |v: u64| format!("{v:0width$}");
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for v in numbers {
            match ranges.last_mut() {
                Some((_, hi)) if *hi + 1 == v => *hi = v,
                _ => ranges.push((v, v)),
            }
        }
        let text = if ranges.len() == 1 && ranges[0].0 == ranges[0].1 {
            format!("{prefix}{}", show(ranges[0].0))
        } else {
            let inner: Vec<String> = ranges
                .iter()
                .map(|&(lo, hi)| {
                    if lo == hi {
                        show(lo)
                    } else {
                        format!("{}-{}", show(lo), show(hi))
                    }
                })
                .collect();
            format!("{prefix}[{}]", inner.join(","))
        };
        parts.push(((prefix.to_owned(), ranges[0].0), text));
    }
    parts.sort();
    parts
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NodeSpec, generate};

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn host_lists_are_compressed_as_slurm_writes_them() {
        let c = |n: &[&str]| compress(&hosts(n));
        assert_eq!(
            c(&["node01", "node02", "node03", "node04", "node07"]),
            "node[01-04,07]"
        );
        assert_eq!(c(&["node07"]), "node07");
        assert_eq!(c(&["node9", "node10", "node11"]), "node[9-11]");
        assert_eq!(c(&["n3", "n1", "n2", "n2"]), "n[1-3]");
        // Zero-padded and unpadded numbers are different runs.
        assert_eq!(c(&["n01", "n02", "n3"]), "n[01-02],n3");
        assert_eq!(c(&["a1", "a3", "b2", "login"]), "a[1,3],b2,login");
        assert_eq!(c(&["gpu-a", "gpu-b"]), "gpu-a,gpu-b");
        assert_eq!(c(&[]), "");
        assert_eq!(c(&["x99999999999999999999999"]), "x99999999999999999999999");
    }

    #[test]
    fn names_are_made_fit_for_slurm() {
        assert_eq!(sanitize("MF0;sw-1:MQM8700/U1"), "MF0;sw-1:MQM8700/U1");
        assert_eq!(sanitize("xgft L1 sw 35"), "xgft_L1_sw_35");
        assert_eq!(sanitize("  a,[b]=c  "), "a_b_c");
        assert_eq!(first_word("node07 HCA-1"), "node07");
        assert_eq!(first_word("  "), "");
    }

    #[test]
    fn a_two_level_fat_tree_is_leaves_with_nodes_and_spines_with_leaves() {
        let f = generate::fat_tree(4, 2).unwrap();
        let text = tree_topology(&f, |_, n| n.description.clone());
        let lines: Vec<&str> = text.lines().collect();
        let leaves = lines.iter().filter(|l| l.contains(" Nodes=")).count();
        let spines = lines.iter().filter(|l| l.contains(" Switches=")).count();
        assert_eq!(leaves + spines, f.switch_count(), "{text}");
        assert!(leaves > 0 && spines > 0, "{text}");
        // Every CA appears once (one port each), and leaves come before spines.
        let first_spine = lines.iter().position(|l| l.contains("Switches=")).unwrap();
        assert!(lines[..first_spine].iter().all(|l| l.contains("Nodes=")));
        for l in &lines {
            assert!(l.starts_with("SwitchName="), "{l}");
            assert!(!l.contains(' ') || l.split(' ').count() == 2, "{l}");
        }
    }

    #[test]
    fn nodes_switches_and_duplicate_names() {
        let mut f = Fabric::new();
        let s1 = f.add_node(NodeSpec::switch(0x10, 4, "leaf")).unwrap();
        let s2 = f.add_node(NodeSpec::switch(0x11, 4, "leaf")).unwrap();
        let top = f.add_node(NodeSpec::switch(0x12, 4, "top sw")).unwrap();
        let lonely = f.add_node(NodeSpec::switch(0x13, 4, "lonely")).unwrap();
        let a = f.add_node(NodeSpec::ca(0x20, 1, "node01 HCA-1")).unwrap();
        let b = f.add_node(NodeSpec::ca(0x21, 1, "node02 HCA-1")).unwrap();
        let c = f.add_node(NodeSpec::ca(0x22, 2, "node03 HCA-1")).unwrap();
        let nameless = f.add_node(NodeSpec::ca(0x23, 1, "")).unwrap();
        f.connect(s1, 1, a, 1).unwrap();
        f.connect(s1, 2, b, 1).unwrap();
        f.connect(s2, 1, c, 1).unwrap();
        f.connect(s1, 3, c, 2).unwrap();
        f.connect(s2, 2, nameless, 1).unwrap();
        f.connect(s1, 4, top, 1).unwrap();
        f.connect(s2, 4, top, 2).unwrap();
        f.connect(top, 3, lonely, 1).unwrap();
        let text = tree_topology(&f, |id, n| {
            if id == s2 {
                "renamed".into()
            } else {
                n.description.clone()
            }
        });
        assert_eq!(
            text,
            "SwitchName=leaf Nodes=node[01-03]\n\
             SwitchName=renamed Nodes=node03\n\
             SwitchName=top_sw Switches=leaf,renamed\n\
             SwitchName=lonely Switches=top_sw\n"
        );
        // Two switches of one name: the second is named by its GUID.
        let text = tree_topology(&f, |_, n| n.description.clone());
        assert!(
            text.contains("SwitchName=0x0000000000000011 Nodes=node03\n"),
            "{text}"
        );
        assert!(text.contains("Switches=0x0000000000000011,leaf"), "{text}");
    }
}
