//! Graphviz DOT export, to look at a fabric (`dot -Tsvg fabric.dot > fabric.svg`).
//!
//! Nodes are drawn by type (switches blue boxes, CAs green ellipses, routers orange
//! diamonds) and labelled with their description and LID. Links can carry a weight (load,
//! congestion, anything non-negative): it is drawn as colour (green = low, red = high) and
//! pen width, and shown as a tooltip. Switches are ranked by their hop distance from the
//! nearest CA, which lays fat trees out level by level.
//!
//! ```
//! use ibsm_topology::{dot, generate};
//! let f = generate::k_ary_n_tree(2, 2)?;
//! let weight = |_link| Some(1.0);
//! let text = dot::to_dot(&f, &dot::DotOptions { link_weight: Some(&weight), ..Default::default() });
//! assert!(text.starts_with("graph fabric {"));
//! assert!(text.contains("penwidth"));
//! # Ok::<(), ibsm_topology::FabricError>(())
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use crate::fabric::Fabric;
use crate::types::{LinkId, NodeId, NodeKind};

/// Options for [`to_dot`].
pub struct DotOptions<'a> {
    /// Draw CAs and routers (large fabrics are easier to read without them).
    pub terminals: bool,
    /// Per-link weight; `None` from the closure (or no closure) draws a plain grey line.
    pub link_weight: Option<&'a dyn Fn(LinkId) -> Option<f64>>,
    /// The weight drawn fully red; `None` uses the largest weight present.
    pub max_weight: Option<f64>,
    /// Label link ends with port numbers.
    pub port_labels: bool,
    /// Rank switches by hop distance from the nearest terminal (fat-tree levels).
    pub rank_by_level: bool,
    /// Graph title.
    pub title: Option<String>,
}

impl Default for DotOptions<'_> {
    fn default() -> Self {
        DotOptions {
            terminals: true,
            link_weight: None,
            max_weight: None,
            port_labels: false,
            rank_by_level: true,
            title: None,
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn dot_id(f: &Fabric, id: NodeId) -> String {
    format!("n{:016x}", f.guid_of(id).0)
}

/// Renders a fabric as DOT text; see the [module docs](self).
#[must_use]
pub fn to_dot(f: &Fabric, opts: &DotOptions<'_>) -> String {
    let mut out = String::with_capacity(f.node_count() * 80 + f.link_count() * 60);
    out.push_str("graph fabric {\n");
    if let Some(t) = &opts.title {
        let _ = writeln!(out, "  label=\"{}\"; labelloc=t;", escape(t));
    }
    out.push_str("  graph [rankdir=BT, nodesep=0.15, ranksep=1.2, splines=false];\n");
    out.push_str("  node [style=filled, fontname=\"Helvetica\", fontsize=9];\n");
    out.push_str("  edge [color=\"#888888\"];\n");
    let shown = |id: NodeId| {
        f.node(id)
            .is_some_and(|n| opts.terminals || n.node_type() == NodeKind::Switch)
    };
    for (id, n) in f.nodes() {
        if !shown(id) {
            continue;
        }
        let (shape, fill) = match n.node_type() {
            NodeKind::Switch => ("box", "#9ecae1"),
            NodeKind::Ca => ("ellipse", "#c7e9c0"),
            NodeKind::Router => ("diamond", "#fdd0a2"),
        };
        let mut label = escape(&n.description);
        if n.lid() != 0 {
            let _ = write!(label, "\\nlid {}", n.lid());
        }
        let _ = writeln!(
            out,
            "  {} [shape={shape}, fillcolor=\"{fill}\", label=\"{label}\", tooltip=\"{}\"];",
            dot_id(f, id),
            n.guid()
        );
    }
    if opts.rank_by_level {
        for (_, ids) in levels(f) {
            if !ids.iter().any(|&id| shown(id)) {
                continue;
            }
            out.push_str("  { rank=same;");
            for id in ids.into_iter().filter(|&id| shown(id)) {
                let _ = write!(out, " {};", dot_id(f, id));
            }
            out.push_str(" }\n");
        }
    }
    let weights: Vec<(LinkId, Option<f64>)> = f
        .links()
        .map(|(l, _)| {
            (
                l,
                opts.link_weight
                    .and_then(|w| w(l))
                    .filter(|x| x.is_finite()),
            )
        })
        .collect();
    let max = opts
        .max_weight
        .unwrap_or_else(|| weights.iter().filter_map(|w| w.1).fold(0.0_f64, f64::max));
    for (l, w) in weights {
        let Some(link) = f.link(l) else { continue };
        if !shown(link.a.node) || !shown(link.b.node) {
            continue;
        }
        let _ = write!(
            out,
            "  {} -- {} [",
            dot_id(f, link.a.node),
            dot_id(f, link.b.node)
        );
        if opts.port_labels {
            let _ = write!(
                out,
                "taillabel=\"{}\", headlabel=\"{}\", fontsize=7, ",
                link.a.port, link.b.port
            );
        }
        if let Some(w) = w {
            let t = if max > 0.0 {
                (w / max).clamp(0.0, 1.0)
            } else {
                0.0
            };
            // Hue from green (1/3) to red (0).
            let _ = write!(
                out,
                "color=\"{:.3} 0.900 0.850\", penwidth={:.2}, tooltip=\"{w}\"",
                (1.0 - t) / 3.0,
                1.0 + 4.0 * t
            );
        }
        out.push_str("];\n");
    }
    out.push_str("}\n");
    out
}

/// Switches by hop distance from the nearest terminal (1 = has a CA), CAs at level 0.
fn levels(f: &Fabric) -> BTreeMap<u32, Vec<NodeId>> {
    let mut dist = vec![u32::MAX; f.node_bound()];
    let mut queue = VecDeque::new();
    for (id, n) in f.nodes() {
        if n.node_type().is_terminal() {
            dist[id.index()] = 0;
            queue.push_back(id);
        }
    }
    while let Some(u) = queue.pop_front() {
        for (_, peer, _) in f.links_of(u) {
            if dist[peer.node.index()] == u32::MAX {
                dist[peer.node.index()] = dist[u.index()] + 1;
                queue.push_back(peer.node);
            }
        }
    }
    let mut out: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    for (id, n) in f.nodes() {
        let d = dist[id.index()];
        if d != u32::MAX && (n.is_switch() || d == 0) {
            out.entry(d).or_default().push(id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::NodeSpec;
    use crate::generate;

    #[test]
    fn shapes_weights_and_filters() {
        let f = generate::k_ary_n_tree(2, 2).unwrap();
        let plain = to_dot(&f, &DotOptions::default());
        assert_eq!(plain.matches(" -- ").count(), f.link_count());
        assert_eq!(plain.matches("shape=box").count(), f.switch_count());
        assert_eq!(plain.matches("shape=ellipse").count(), 4);
        assert!(!plain.contains("penwidth"));
        // Two levels of switches plus the CA level.
        assert_eq!(plain.matches("rank=same").count(), 3);

        let hot = f
            .links()
            .find(|(_, l)| {
                f.node(l.a.node).unwrap().is_switch() && f.node(l.b.node).unwrap().is_switch()
            })
            .unwrap()
            .0;
        let w = move |l: LinkId| Some(if l == hot { 10.0 } else { 1.0 });
        let opts = DotOptions {
            terminals: false,
            link_weight: Some(&w),
            port_labels: true,
            title: Some("t \"q\"".into()),
            ..Default::default()
        };
        let text = to_dot(&f, &opts);
        assert!(!text.contains("ellipse"));
        assert!(text.contains("label=\"t \\\"q\\\"\""));
        assert!(text.contains("penwidth=5.00"));
        assert!(text.contains("color=\"0.000 0.900 0.850\""));
        assert!(text.contains("taillabel="));
        // Only switch-to-switch cables remain.
        assert_eq!(text.matches(" -- ").count(), f.link_count() - 4);
    }

    #[test]
    fn escapes_descriptions_and_shows_lids() {
        let mut f = Fabric::new();
        let r = f
            .add_node(NodeSpec::new(crate::Guid(1), NodeKind::Router, 1, "r\"1\\"))
            .unwrap();
        f.node_mut(r).unwrap().port_mut(1).unwrap().lid = 9;
        let text = to_dot(&f, &DotOptions::default());
        assert!(text.contains("shape=diamond"));
        assert!(text.contains("label=\"r\\\"1\\\\\\nlid 9\""), "{text}");
        assert!(text.ends_with("}\n"));
    }
}
