//! A picture of a fabric as SVG, drawn without Graphviz (what `ibsm-netdiscover --svg`
//! writes and `ibsmd` serves at `/fabric.svg`).
//!
//! Layout: switches in rows by their hop distance from the nearest CA, leaves at the
//! bottom (fat trees come out level by level); a fabric whose switches all hold CAs
//! (meshes, tori) is laid out as a grid instead, its row length found from the cables
//! (the step `c` for which switch `i` is cabled to switch `i + c`, in GUID order, most
//! often). A switch's CAs sit under it, each a small circle, or folded into one box
//! ("32 CAs") when there are more than [`SvgOptions::fold_cas`].
//!
//! Links can carry a weight (routes through the link, a counter rate, anything
//! non-negative), drawn as colour (green least, red most) and width; links marked
//! unhealthy are dashed red with the reason in their tooltip. Every element has a
//! `<title>` (name, GUID, LID; weight; reason) that browsers show on hover, and a class
//! (`switch`, `ca`, `cas`, `link`, `unhealthy`) for styling and counting.
//!
//! [`route_counts`] turns forwarding tables into weights: how many (CA, destination LID)
//! routes cross each link.
//!
//! ```
//! use ibsm_topology::{generate, svg};
//! let f = generate::k_ary_n_tree(2, 2)?;
//! let text = svg::to_svg(&f, &svg::SvgOptions::default());
//! assert!(text.starts_with("<svg"));
//! assert_eq!(text.matches("class=\"switch\"").count(), f.switch_count());
//! # Ok::<(), ibsm_topology::FabricError>(())
//! ```

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

use crate::fabric::Fabric;
use crate::types::{LinkId, NodeId, PortNum};

/// Options for [`to_svg`].
pub struct SvgOptions<'a> {
    /// A title printed at the top.
    pub title: Option<String>,
    /// Per-link weight; `None` from the closure (or no closure) draws a grey line.
    pub link_weight: Option<&'a dyn Fn(LinkId) -> Option<f64>>,
    /// What the weight counts, for tooltips and the legend ("routes", "bytes/s").
    pub weight_unit: String,
    /// Links to mark unhealthy, with why (tooltip).
    pub unhealthy: HashMap<LinkId, String>,
    /// A switch's CAs are drawn one by one up to this many, else as one box.
    pub fold_cas: usize,
}

impl Default for SvgOptions<'_> {
    fn default() -> Self {
        SvgOptions {
            title: None,
            link_weight: None,
            weight_unit: "routes".to_owned(),
            unhealthy: HashMap::new(),
            fold_cas: 4,
        }
    }
}

/// Escapes text for XML content and attribute values.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Hop distance of every switch from the nearest CA (CAs 0, leaves 1); switches no CA
/// reaches count from the lowest-GUID such switch, one level up.
fn levels(f: &Fabric) -> HashMap<NodeId, u32> {
    let mut level: HashMap<NodeId, u32> = HashMap::new();
    let mut queue: VecDeque<NodeId> = VecDeque::new();
    for (id, _) in f.nodes().filter(|(_, n)| !n.is_switch()) {
        level.insert(id, 0);
        queue.push_back(id);
    }
    let bfs = |level: &mut HashMap<NodeId, u32>, queue: &mut VecDeque<NodeId>| {
        while let Some(v) = queue.pop_front() {
            let d = level[&v];
            for (_, e, _) in f.links_of(v) {
                if let std::collections::hash_map::Entry::Vacant(slot) = level.entry(e.node) {
                    slot.insert(d + 1);
                    queue.push_back(e.node);
                }
            }
        }
    };
    bfs(&mut level, &mut queue);
    let unreached: Vec<NodeId> = f
        .switches()
        .map(|(id, _)| id)
        .filter(|id| !level.contains_key(id))
        .collect();
    for id in unreached {
        if let std::collections::hash_map::Entry::Vacant(slot) = level.entry(id) {
            slot.insert(1);
            queue.push_back(id);
            bfs(&mut level, &mut queue);
        }
    }
    level
}

/// The row length of a grid of `switches` (GUID order): the step most cables span.
fn grid_columns(f: &Fabric, switches: &[NodeId]) -> usize {
    let n = switches.len();
    let index: HashMap<NodeId, usize> = switches.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let mut steps: BTreeMap<usize, usize> = BTreeMap::new();
    for (_, l) in f.links() {
        if let (Some(&a), Some(&b)) = (index.get(&l.a.node), index.get(&l.b.node)) {
            let d = a.abs_diff(b);
            if d > 1 && d < n {
                *steps.entry(d).or_default() += 1;
            }
        }
    }
    let best = steps
        .iter()
        .max_by_key(|&(&d, &c)| (c, std::cmp::Reverse(d)))
        .map(|(&d, _)| d);
    match best {
        // A row of a mesh or torus is cabled to the next one `columns` switches on.
        Some(d) if d * d <= n * 4 => d,
        _ => (n as f64).sqrt().ceil().max(1.0) as usize,
    }
}

/// How many routes between CAs cross each link, following the forwarding tables:
/// `next_port(switch, lid)` is the port `switch` forwards `lid` to (`None`: no route).
/// A route goes from each CA cabled to a switch to each LID of every other CA port (its
/// LMC range included), what the traffic between the hosts takes; routes to switches'
/// own LIDs (management only) are left out. A route that loops or leaves through a port
/// without a cable stops there.
pub fn route_counts(
    f: &Fabric,
    next_port: impl Fn(NodeId, u16) -> Option<PortNum>,
) -> HashMap<LinkId, u64> {
    let mut dests: Vec<u16> = Vec::new();
    for (_, n) in f.nodes() {
        if !n.is_switch() {
            for (_, p) in n.ports() {
                if p.lid != 0 {
                    for k in 0..(1u16 << p.lmc.min(7)) {
                        dests.push(p.lid.saturating_add(k));
                    }
                }
            }
        }
    }
    // CAs cabled to each switch: the routes that enter the fabric there, and the CA
    // link each crosses first.
    // (switch, its CAs, each CA's cable and LID)
    type Source = (NodeId, u64, Vec<(LinkId, u16)>);
    let mut sources: Vec<Source> = Vec::new();
    for (id, _) in f.switches() {
        let cas: Vec<(LinkId, u16)> = f
            .links_of(id)
            .filter_map(|(_, e, l)| {
                let n = f.node(e.node)?;
                (!n.is_switch()).then(|| (l, n.port(e.port).map_or(0, |p| p.lid)))
            })
            .collect();
        sources.push((id, cas.len() as u64, cas));
    }
    let switch_count = sources.len();
    let mut counts: HashMap<LinkId, u64> = HashMap::new();
    for &d in &dests {
        for (sw, weight, cas) in &sources {
            if *weight == 0 {
                continue;
            }
            // The CA-to-switch hop of each route that leaves its CA (not to itself).
            let own = cas.iter().filter(|&&(_, lid)| lid == d).count() as u64;
            let leaving = weight - own;
            for &(l, lid) in cas {
                if lid != d {
                    *counts.entry(l).or_default() += 1;
                }
            }
            let mut at = *sw;
            for _ in 0..=switch_count {
                let Some(port) = next_port(at, d) else { break };
                let Some(n) = f.node(at) else { break };
                let Some(p) = n.port(port) else { break };
                let (Some(peer), Some(l)) = (p.peer(), p.link()) else {
                    break;
                };
                // The last hop, into the destination CA, is one per source CA not it.
                *counts.entry(l).or_default() += leaving;
                match f.node(peer.node) {
                    Some(next) if next.is_switch() => at = peer.node,
                    _ => break,
                }
            }
        }
    }
    counts
}

/// Where each drawn thing sits.
struct Layout {
    /// Grid cells of a mesh or torus layout: (row, column) per switch.
    grid: HashMap<NodeId, (usize, usize)>,
    width: f64,
    height: f64,
    pos: HashMap<NodeId, (f64, f64)>,
    /// Per switch with folded CAs: (box centre, how many).
    folded: HashMap<NodeId, ((f64, f64), usize)>,
    /// Folded CA -> its switch.
    fold_of: HashMap<NodeId, NodeId>,
}

const SW_W: f64 = 18.0;
const SW_H: f64 = 12.0;
const COL: f64 = 26.0;
const ROW: f64 = 90.0;
const MARGIN: f64 = 30.0;

fn layout(f: &Fabric, fold: usize) -> Layout {
    let level = levels(f);
    let mut switches: Vec<NodeId> = f.switches().map(|(id, _)| id).collect();
    switches.sort_by_key(|&id| f.guid_of(id));
    let mut cas_of: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    let mut loose: Vec<NodeId> = Vec::new();
    for (id, _) in f.nodes().filter(|(_, n)| !n.is_switch()) {
        let sw = f
            .links_of(id)
            .map(|(_, e, _)| e.node)
            .find(|&m| f.node(m).is_some_and(crate::Node::is_switch));
        match sw {
            Some(s) => cas_of.entry(s).or_default().push(id),
            None => loose.push(id),
        }
    }
    let top = switches
        .iter()
        .map(|s| level.get(s).copied().unwrap_or(1))
        .max()
        .unwrap_or(1);
    let flat = switches.len() > 1 && switches.iter().all(|s| level.get(s) == Some(&1)) && top == 1;
    let mut pos: HashMap<NodeId, (f64, f64)> = HashMap::new();
    let mut grid = HashMap::new();
    // Room for the legend line.
    let mut width: f64 = 720.0;
    let mut bottom: f64 = MARGIN + 40.0;
    if flat {
        // Meshes and tori: a grid, each switch's CAs just under it.
        let cols = grid_columns(f, &switches);
        let cell_w = COL * 2.5;
        let cell_h = ROW;
        for (i, &s) in switches.iter().enumerate() {
            let (r, c) = (i / cols, i % cols);
            let xy = (
                MARGIN + 40.0 + c as f64 * cell_w,
                MARGIN + 50.0 + r as f64 * cell_h,
            );
            pos.insert(s, xy);
            grid.insert(s, (r, c));
            width = width.max(xy.0 + cell_w);
            bottom = bottom.max(xy.1 + cell_h);
        }
    } else {
        let mut rows: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
        for &s in &switches {
            rows.entry(level.get(&s).copied().unwrap_or(1))
                .or_default()
                .push(s);
        }
        let widest = rows.values().map(Vec::len).max().unwrap_or(1);
        width = width.max(MARGIN * 2.0 + widest as f64 * COL);
        for (&l, row) in &rows {
            let y = MARGIN + 50.0 + f64::from(top - l) * ROW;
            let step = (width - 2.0 * MARGIN) / row.len() as f64;
            for (i, &s) in row.iter().enumerate() {
                pos.insert(s, (MARGIN + step * (i as f64 + 0.5), y));
            }
            bottom = bottom.max(y + ROW);
        }
    }
    let mut folded = HashMap::new();
    let mut fold_of = HashMap::new();
    for (&s, cas) in &cas_of {
        let (x, y) = pos[&s];
        if cas.len() > fold {
            folded.insert(s, ((x, y + 40.0), cas.len()));
            for &c in cas {
                fold_of.insert(c, s);
            }
        } else {
            let n = cas.len() as f64;
            for (i, &c) in cas.iter().enumerate() {
                let dx = (i as f64 - (n - 1.0) / 2.0) * 7.0;
                pos.insert(c, (x + dx, y + 40.0));
            }
        }
    }
    for (i, &c) in loose.iter().enumerate() {
        pos.insert(c, (MARGIN + 10.0 + (i as f64) * 10.0, bottom + 10.0));
    }
    if !loose.is_empty() {
        bottom += 30.0;
        width = width.max(MARGIN * 2.0 + loose.len() as f64 * 10.0);
    }
    Layout {
        grid,
        width,
        height: bottom + MARGIN,
        pos,
        folded,
        fold_of,
    }
}

/// Green (0) through yellow to red (1).
fn colour(x: f64) -> String {
    let hue = 120.0 * (1.0 - x.clamp(0.0, 1.0));
    format!("hsl({hue:.0},85%,40%)")
}

/// The fabric as an SVG document; see the [module docs](self).
#[must_use]
pub fn to_svg(f: &Fabric, o: &SvgOptions<'_>) -> String {
    let lay = layout(f, o.fold_cas);
    let weight = |l: LinkId| o.link_weight.and_then(|w| w(l)).filter(|w| w.is_finite());
    let max_w = f
        .links()
        .filter_map(|(l, _)| weight(l))
        .fold(0.0f64, f64::max);
    let name = |id: NodeId| {
        f.node(id).map_or_else(String::new, |n| {
            let lid = if n.is_switch() {
                n.lid()
            } else {
                n.ports().map(|(_, p)| p.lid).find(|&l| l != 0).unwrap_or(0)
            };
            format!("{} ({:#018x}, LID {lid})", n.description, n.guid().0)
        })
    };
    let mut out = String::with_capacity(f.node_count() * 200 + f.link_count() * 150);
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"sans-serif\" font-size=\"10\">",
        w = lay.width,
        h = lay.height
    );
    out.push_str(
        "<style>.switch{fill:#3b6ea5;stroke:#1d3a5a}.ca{fill:#4a9a4a}.cas{fill:#d7ecd7;stroke:#4a9a4a}\
         .link{stroke-linecap:round}.unhealthy{stroke:#d00 !important;stroke-dasharray:4 3}</style>\n",
    );
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{:.0}\" height=\"{:.0}\" fill=\"#ffffff\"/>",
        lay.width, lay.height
    );
    let title = o.title.clone().unwrap_or_else(|| "fabric".to_owned());
    let legend = if max_w > 0.0 {
        format!(
            "{}: {} switches, {} CAs, {} links; link colour: {} (green 0, red {max_w:.0})",
            esc(&title),
            f.switch_count(),
            f.cas().count(),
            f.link_count(),
            esc(&o.weight_unit)
        )
    } else {
        format!(
            "{}: {} switches, {} CAs, {} links",
            esc(&title),
            f.switch_count(),
            f.cas().count(),
            f.link_count()
        )
    };
    let _ = writeln!(
        out,
        "<text x=\"{MARGIN}\" y=\"20\" font-size=\"14\">{legend}</text>"
    );
    // Links first, under the nodes. Links into one folded box are drawn once: the
    // largest weight, unhealthy if any is.
    let mut fold_links: BTreeMap<NodeId, (Option<f64>, Vec<String>, usize)> = BTreeMap::new();
    out.push_str("<g id=\"links\">\n");
    for (l, link) in f.links() {
        let (a, b) = (link.a.node, link.b.node);
        let bad = o.unhealthy.get(&l);
        let w = weight(l);
        let folded = lay.fold_of.get(&a).or_else(|| lay.fold_of.get(&b));
        if let Some(&s) = folded {
            let e = fold_links.entry(s).or_insert((None, Vec::new(), 0));
            e.0 = match (e.0, w) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
            if let Some(why) = bad {
                e.1.push(why.clone());
            }
            e.2 += 1;
            continue;
        }
        let (Some(&pa), Some(&pb)) = (lay.pos.get(&a), lay.pos.get(&b)) else {
            continue;
        };
        let tip = format!(
            "{}[{}] - {}[{}]{}{}",
            name(a),
            link.a.port,
            name(b),
            link.b.port,
            w.map_or_else(String::new, |w| format!(": {w:.0} {}", o.weight_unit)),
            bad.map_or_else(String::new, |why| format!("; unhealthy: {why}"))
        );
        // A torus's wrap-around cable (and a mesh's long one) bows out of the grid
        // instead of running over the cables between.
        let bow = match (lay.grid.get(&a), lay.grid.get(&b)) {
            (Some(&(ra, ca)), Some(&(rb, cb))) if ra == rb && ca.abs_diff(cb) > 1 => {
                -(18.0 + 6.0 * ca.abs_diff(cb) as f64)
            }
            (Some(&(ra, ca)), Some(&(rb, cb))) if ca == cb && ra.abs_diff(rb) > 1 => {
                18.0 + 6.0 * ra.abs_diff(rb) as f64
            }
            _ => 0.0,
        };
        line(&mut out, pa, pb, bow, w, max_w, bad.is_some(), &tip);
    }
    for (s, (w, bad, n)) in &fold_links {
        let (Some(&pa), Some(&(pb, _))) = (lay.pos.get(s), lay.folded.get(s)) else {
            continue;
        };
        let tip = format!(
            "{}: {n} CA links{}{}",
            name(*s),
            w.map_or_else(String::new, |w| format!(
                ", busiest {w:.0} {}",
                o.weight_unit
            )),
            if bad.is_empty() {
                String::new()
            } else {
                format!("; unhealthy: {}", bad.join("; "))
            }
        );
        line(&mut out, pa, pb, 0.0, *w, max_w, !bad.is_empty(), &tip);
    }
    out.push_str("</g>\n<g id=\"nodes\">\n");
    for (id, n) in f.nodes() {
        if lay.fold_of.contains_key(&id) {
            continue;
        }
        let Some(&(x, y)) = lay.pos.get(&id) else {
            continue;
        };
        if n.is_switch() {
            let _ = writeln!(
                out,
                "<rect class=\"switch\" x=\"{:.1}\" y=\"{:.1}\" width=\"{SW_W}\" height=\"{SW_H}\" rx=\"2\"><title>{}</title></rect>",
                x - SW_W / 2.0,
                y - SW_H / 2.0,
                esc(&name(id))
            );
        } else {
            let _ = writeln!(
                out,
                "<circle class=\"ca\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\"><title>{}</title></circle>",
                esc(&name(id))
            );
        }
    }
    for (s, &((x, y), n)) in &lay.folded {
        let _ = writeln!(
            out,
            "<g class=\"cas\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"22\" height=\"14\" rx=\"3\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"8\" fill=\"#1f4f1f\">{n}</text><title>{n} CAs on {}</title></g>",
            x - 11.0,
            y - 7.0,
            y + 3.0,
            esc(&name(*s))
        );
    }
    out.push_str("</g>\n</svg>\n");
    out
}

#[allow(clippy::too_many_arguments)]
fn line(
    out: &mut String,
    a: (f64, f64),
    b: (f64, f64),
    bow: f64,
    w: Option<f64>,
    max_w: f64,
    bad: bool,
    tip: &str,
) {
    let (stroke, width) = match w {
        Some(w) if max_w > 0.0 => {
            let x = w / max_w;
            (colour(x), 1.0 + 3.0 * x)
        }
        _ => ("#9a9a9a".to_owned(), 1.0),
    };
    let class = if bad { "link unhealthy" } else { "link" };
    if bow != 0.0 {
        // A quadratic curve whose apex stands `bow` off the straight line.
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len = dx.hypot(dy).max(1.0);
        let (cx, cy) = (
            (a.0 + b.0) / 2.0 - dy / len * bow * 2.0,
            (a.1 + b.1) / 2.0 + dx / len * bow * 2.0,
        );
        let _ = writeln!(
            out,
            "<path class=\"{class}\" d=\"M{:.1},{:.1} Q{cx:.1},{cy:.1} {:.1},{:.1}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width:.1}\"><title>{}</title></path>",
            a.0,
            a.1,
            b.0,
            b.1,
            esc(tip)
        );
        return;
    }
    let _ = writeln!(
        out,
        "<line class=\"{class}\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{stroke}\" stroke-width=\"{width:.1}\"><title>{}</title></line>",
        a.0,
        a.1,
        b.0,
        b.1,
        esc(tip)
    );
}

/// Links whose ports say something is wrong: with `states`, an end not Active (the
/// link trained but was not brought up, or went down at one end only; leave it out for
/// a model read before an SM brought the ports up); and a link narrower or slower than
/// the widest, fastest link between the same two nodes (a degraded cable of a bundle).
#[must_use]
pub fn state_marks(f: &Fabric, states: bool) -> HashMap<LinkId, String> {
    use crate::types::LinkState;
    let mut best: HashMap<(NodeId, NodeId), (u8, crate::types::ActiveSpeed)> = HashMap::new();
    let key = |a: NodeId, b: NodeId| if a < b { (a, b) } else { (b, a) };
    let end = |e: crate::types::Endpoint| f.node(e.node).and_then(|n| n.port(e.port));
    for (_, l) in f.links() {
        if let (Some(pa), Some(pb)) = (end(l.a), end(l.b)) {
            let w = pa.width.lanes().min(pb.width.lanes());
            let s = pa.speed.min(pb.speed);
            let e = best.entry(key(l.a.node, l.b.node)).or_insert((w, s));
            *e = (e.0.max(w), e.1.max(s));
        }
    }
    let mut out = HashMap::new();
    for (id, l) in f.links() {
        let (Some(pa), Some(pb)) = (end(l.a), end(l.b)) else {
            continue;
        };
        let mut why = Vec::new();
        for (p, e) in [(pa, l.a), (pb, l.b)] {
            if states && !matches!(p.state, LinkState::Active | LinkState::Unknown) {
                why.push(format!("port {} {:?}", e.port, p.state));
            }
        }
        let (w, s) = (
            pa.width.lanes().min(pb.width.lanes()),
            pa.speed.min(pb.speed),
        );
        if let Some(&(bw, bs)) = best.get(&key(l.a.node, l.b.node)) {
            if w < bw {
                why.push(format!("width {w}x ({bw}x beside it)"));
            }
            if s < bs {
                why.push(format!("speed {} ({} beside it)", s.name(), bs.name()));
            }
        }
        if !why.is_empty() {
            out.insert(id, why.join(", "));
        }
    }
    out
}

/// The links of a set of unhealthy ports (node, port): each port's cable.
#[must_use]
pub fn links_of_ports(
    f: &Fabric,
    ports: impl IntoIterator<Item = (NodeId, PortNum, String)>,
) -> HashMap<LinkId, String> {
    let mut seen: HashSet<LinkId> = HashSet::new();
    let mut out = HashMap::new();
    for (n, p, why) in ports {
        if let Some(l) = f
            .node(n)
            .and_then(|n| n.port(p))
            .and_then(crate::Port::link)
        {
            if seen.insert(l) {
                out.insert(l, why);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;

    #[test]
    fn a_fat_tree_is_drawn_level_by_level_with_cas_folded() {
        let f = generate::fat_tree(8, 2).unwrap();
        let t = to_svg(&f, &SvgOptions::default());
        assert_eq!(t.matches("class=\"switch\"").count(), f.switch_count());
        // 8 leaves with 4 CAs each: 4 is not more than the fold limit of 4.
        assert_eq!(t.matches("class=\"ca\"").count(), f.cas().count());
        let folded = to_svg(
            &f,
            &SvgOptions {
                fold_cas: 3,
                ..SvgOptions::default()
            },
        );
        let leaves = f
            .switches()
            .filter(|(id, _)| {
                f.links_of(*id)
                    .any(|(_, e, _)| !f.node(e.node).unwrap().is_switch())
            })
            .count();
        assert_eq!(folded.matches("class=\"cas\"").count(), leaves);
        assert_eq!(folded.matches("class=\"ca\"").count(), 0);
        // One line per switch cable and one per folded box.
        let sw_links = f
            .links()
            .filter(|(_, l)| {
                f.node(l.a.node).unwrap().is_switch() && f.node(l.b.node).unwrap().is_switch()
            })
            .count();
        assert_eq!(folded.matches("class=\"link").count(), sw_links + leaves);
        // Leaves are below the spines.
        let lev = levels(&f);
        assert_eq!(lev.values().copied().max(), Some(2));
    }

    #[test]
    fn a_narrow_cable_and_a_port_not_active_are_marked() {
        let mut f = generate::k_ary_n_tree(2, 2).unwrap();
        let ids: Vec<NodeId> = f.node_ids().collect();
        for id in &ids {
            for p in 1..=f.node(*id).unwrap().num_ports() {
                let port = f.node_mut(*id).unwrap().port_mut(p).unwrap();
                port.width = crate::types::ActiveWidth::X4;
                port.speed = crate::types::ActiveSpeed::Edr;
                port.state = crate::types::LinkState::Active;
            }
        }
        assert!(state_marks(&f, true).is_empty());
        // Two leaves and two spines, one cable between each pair: a bundle of one, so
        // a narrow cable is only marked where a wider one runs beside it.
        let (l, link) = f.links().next().map(|(l, k)| (l, *k)).unwrap();
        let e = link.a;
        f.node_mut(e.node).unwrap().port_mut(e.port).unwrap().state = crate::types::LinkState::Init;
        let m = state_marks(&f, true);
        assert_eq!(m.len(), 1);
        assert!(m[&l].contains("Init"), "{m:?}");
        assert!(state_marks(&f, false).is_empty());
    }

    #[test]
    fn a_torus_is_a_grid_of_its_row_length() {
        let f = generate::grid(&generate::Grid {
            dims: vec![5, 4],
            torus: true,
            cas_per_switch: 1,
        })
        .unwrap();
        let mut sw: Vec<NodeId> = f.switches().map(|(id, _)| id).collect();
        sw.sort_by_key(|&id| f.guid_of(id));
        let cols = grid_columns(&f, &sw);
        assert!(cols == 5 || cols == 4, "{cols}");
        let lay = layout(&f, 4);
        let ys: HashSet<i64> = sw.iter().map(|s| lay.pos[s].1 as i64).collect();
        assert_eq!(ys.len(), 20 / cols, "rows");
    }

    #[test]
    fn routes_are_counted_along_the_tables_and_marks_and_names_are_escaped() {
        // Two switches in a line, two CAs on each: s0[1..2]=CAs, s0[3]-s1[3].
        let mut f = generate::grid(&generate::Grid {
            dims: vec![2],
            torus: false,
            cas_per_switch: 2,
        })
        .unwrap();
        let ids: Vec<NodeId> = f.node_ids().collect();
        for (lid, id) in (1u16..).zip(&ids) {
            let n = f.node_mut(*id).unwrap();
            n.description = "a<b>&\"c\"".to_owned();
            if n.is_switch() {
                n.port_mut(0).unwrap().lid = lid;
            } else {
                n.port_mut(1).unwrap().lid = lid;
            }
        }
        // Shortest-path tables: each switch sends a LID to its own CA, else across.
        let owner = |l: u16| -> Option<(NodeId, PortNum)> {
            f.nodes().find_map(|(id, n)| {
                if n.is_switch() {
                    (n.lid() == l).then_some((id, 0))
                } else {
                    let e = n.port(1)?.peer()?;
                    (n.port(1)?.lid == l).then_some((e.node, e.port))
                }
            })
        };
        let next = |sw: NodeId, l: u16| {
            let (at, port) = owner(l)?;
            if at == sw {
                return (port != 0).then_some(port);
            }
            f.links_of(sw)
                .find(|(_, e, _)| f.node(e.node).unwrap().is_switch())
                .map(|(p, _, _)| p)
        };
        let counts = route_counts(&f, next);
        let (cross, _) = f
            .links()
            .find(|(_, l)| {
                f.node(l.a.node).unwrap().is_switch() && f.node(l.b.node).unwrap().is_switch()
            })
            .unwrap();
        // Each of the 2 CAs on one side reaches the 2 CAs on the other: 4 routes each
        // way; the switches' own LIDs count for nothing.
        assert_eq!(counts[&cross], 8);
        // A CA's cable carries its 3 routes out and the 3 routes to it.
        let (ca_link, _) = f
            .links()
            .find(|(_, l)| {
                !f.node(l.a.node).unwrap().is_switch() || !f.node(l.b.node).unwrap().is_switch()
            })
            .unwrap();
        assert_eq!(counts[&ca_link], 6);
        let w = |l: LinkId| counts.get(&l).map(|&c| c as f64);
        let mut bad = HashMap::new();
        bad.insert(cross, "symbol errors > 10".to_owned());
        let t = to_svg(
            &f,
            &SvgOptions {
                link_weight: Some(&w),
                unhealthy: bad,
                ..SvgOptions::default()
            },
        );
        assert_eq!(t.matches("class=\"link unhealthy\"").count(), 1);
        assert!(t.contains("symbol errors &gt; 10"));
        assert!(t.contains("a&lt;b&gt;&amp;&quot;c&quot;"));
        assert!(!t.contains("a<b>"));
    }
}
