//! Comparing a fabric with a reference topology (a cabling plan): missing and
//! unexpected nodes, missing, extra and miswired cables, links below their planned
//! width or speed.
//!
//! [`diff`] is a pure function of two [`Fabric`]s, matched by node GUID and port number
//! (never by description or LID). The SM runs it at every heavy sweep against the file
//! named by `topology_ref`, `ibsm-topodiff` prints it; both read the same typed
//! [`Difference`]s, so what one reports the other prints.
//!
//! # What each difference means
//!
//! * [`Difference::MissingNode`] / [`Difference::UnexpectedNode`]: a GUID only in the
//!   reference / only in the fabric. The cables of such a node are not listed again:
//!   they follow from the node (a cable of a known port to an unexpected node is a
//!   miswire, since that port should reach something else).
//! * [`Difference::Miswired`]: a cable of the fabric that the reference does not have,
//!   where the reference plans a cable on at least one of its ports. It names both its
//!   ends and, for each end, which port the plan says it should reach. Two cables whose
//!   ends are swapped are exactly two miswires.
//! * [`Difference::ExtraCable`]: a cable between two known nodes on ports the reference
//!   leaves uncabled.
//! * [`Difference::MissingCable`]: a planned cable between two present nodes with
//!   neither of its ports cabled at all (when one is cabled elsewhere, that cable is the
//!   miswire that names this one).
//! * [`Difference::Degraded`]: a planned cable that is there, at a width or lane speed
//!   below the plan's. A width or speed the reference does not state (`Unknown`, e.g. an
//!   ibsim net file without `w=`) is not checked.
//!
//! ```
//! use ibsm_topology::{diff, generate};
//! let plan = generate::k_ary_n_tree(2, 2)?;
//! assert!(diff::diff(&plan, &plan).is_empty());
//! # Ok::<(), ibsm_topology::FabricError>(())
//! ```

use std::collections::HashMap;
use std::fmt;

use crate::fabric::Fabric;
use crate::types::{ActiveSpeed, ActiveWidth, Guid, NodeKind, PortNum};

/// One port, by node GUID and port number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRef {
    /// Node GUID.
    pub guid: Guid,
    /// Port number.
    pub port: PortNum,
}

impl PortRef {
    /// The port `port` of node `guid`.
    #[must_use]
    pub fn new(guid: impl Into<Guid>, port: PortNum) -> Self {
        PortRef {
            guid: guid.into(),
            port,
        }
    }
}

impl fmt::Display for PortRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.guid, self.port)
    }
}

/// A node as the differences name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeRef {
    /// Node GUID.
    pub guid: Guid,
    /// Switch, CA or router.
    pub node_type: NodeKind,
    /// NodeDescription (from the fabric it is in).
    pub description: String,
}

/// One end of a miswired cable: the port, and where the plan says it should lead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WiredEnd {
    /// The port.
    pub port: PortRef,
    /// The port the reference cables it to; `None` when the plan leaves it uncabled or
    /// does not know its node.
    pub expected: Option<PortRef>,
}

/// One way the fabric differs from the reference; see the [module](self) docs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Difference {
    /// A node of the reference that the fabric lacks.
    MissingNode(NodeRef),
    /// A node of the fabric that the reference lacks.
    UnexpectedNode(NodeRef),
    /// A planned cable between present nodes, with neither port cabled.
    MissingCable {
        /// Its lower end (GUID, port).
        a: PortRef,
        /// Its other end.
        b: PortRef,
    },
    /// A cable between known nodes on ports the reference leaves uncabled.
    ExtraCable {
        /// Its lower end.
        a: PortRef,
        /// Its other end.
        b: PortRef,
    },
    /// A cable the reference does not have, on a port where it plans another.
    Miswired {
        /// Its lower end, and where that should lead.
        a: WiredEnd,
        /// Its other end, and where that should lead.
        b: WiredEnd,
    },
    /// A planned cable that is there, narrower or slower than planned.
    Degraded {
        /// Its lower end.
        a: PortRef,
        /// Its other end.
        b: PortRef,
        /// The planned width and lane speed.
        expected: (ActiveWidth, ActiveSpeed),
        /// The active width and lane speed.
        actual: (ActiveWidth, ActiveSpeed),
    },
}

impl Difference {
    /// A short stable name of the kind (`missing_node`, `miswired`, ...), for metrics
    /// labels and counts.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Difference::MissingNode(_) => "missing_node",
            Difference::UnexpectedNode(_) => "unexpected_node",
            Difference::MissingCable { .. } => "missing_cable",
            Difference::ExtraCable { .. } => "extra_cable",
            Difference::Miswired { .. } => "miswired",
            Difference::Degraded { .. } => "degraded",
        }
    }

    /// Every kind's name, in the order [`Difference::kind`] sorts them.
    pub const KINDS: [&'static str; 6] = [
        "missing_node",
        "unexpected_node",
        "missing_cable",
        "extra_cable",
        "miswired",
        "degraded",
    ];

    /// The cable of the fabric that an `isolate` policy leaves out of routing: a
    /// miswired or extra cable's ends; `None` for any other difference.
    #[must_use]
    pub fn isolated_cable(&self) -> Option<(PortRef, PortRef)> {
        match self {
            Difference::Miswired { a, b } => Some((a.port, b.port)),
            Difference::ExtraCable { a, b } => Some((*a, *b)),
            _ => None,
        }
    }
}

fn width_speed(w: ActiveWidth, s: ActiveSpeed) -> String {
    let w = match w.lanes() {
        0 => "?".to_owned(),
        n => format!("{n}x"),
    };
    format!("{w}{}", s.name())
}

fn expected(e: Option<PortRef>) -> String {
    e.map_or_else(|| "nothing".to_owned(), |p| p.to_string())
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::MissingNode(n) => write!(
                f,
                "missing node {} {:?} {:?}",
                n.guid, n.node_type, n.description
            ),
            Difference::UnexpectedNode(n) => write!(
                f,
                "unexpected node {} {:?} {:?}",
                n.guid, n.node_type, n.description
            ),
            Difference::MissingCable { a, b } => write!(f, "missing cable {a} - {b}"),
            Difference::ExtraCable { a, b } => write!(f, "extra cable {a} - {b}"),
            Difference::Miswired { a, b } => write!(
                f,
                "miswired cable {} - {}: {} should reach {}, {} should reach {}",
                a.port,
                b.port,
                a.port,
                expected(a.expected),
                b.port,
                expected(b.expected)
            ),
            Difference::Degraded {
                a,
                b,
                expected,
                actual,
            } => write!(
                f,
                "degraded cable {a} - {b}: {} planned {}",
                width_speed(actual.0, actual.1),
                width_speed(expected.0, expected.1)
            ),
        }
    }
}

/// The cables of a fabric by port: each cabled port -> its peer, both directions.
fn cables(f: &Fabric) -> HashMap<PortRef, PortRef> {
    let mut out = HashMap::with_capacity(f.link_count() * 2);
    for (_, link) in f.links() {
        let a = PortRef::new(f.guid_of(link.a.node), link.a.port);
        let b = PortRef::new(f.guid_of(link.b.node), link.b.port);
        out.insert(a, b);
        out.insert(b, a);
    }
    out
}

fn node_ref(f: &Fabric, guid: Guid) -> Option<NodeRef> {
    let node = f.node(f.node_by_guid(guid)?)?;
    Some(NodeRef {
        guid,
        node_type: node.node_type(),
        description: node.description.clone(),
    })
}

/// The width and speed of the port `p` of `f` (`Unknown` when not known).
fn active(f: &Fabric, p: PortRef) -> (ActiveWidth, ActiveSpeed) {
    f.node_by_guid(p.guid)
        .and_then(|id| f.port(id, p.port))
        .map_or((ActiveWidth::Unknown, ActiveSpeed::Unknown), |port| {
            (port.width, port.speed)
        })
}

/// Whether `actual` is below `planned`: narrower or slower per lane, where both are
/// known.
fn below(planned: (ActiveWidth, ActiveSpeed), actual: (ActiveWidth, ActiveSpeed)) -> bool {
    let (pw, ps) = planned;
    let (aw, as_) = actual;
    let narrower = pw.lanes() != 0 && aw.lanes() != 0 && aw.lanes() < pw.lanes();
    let slower = ps.lane_mbps() != 0 && as_.lane_mbps() != 0 && as_.lane_mbps() < ps.lane_mbps();
    narrower || slower
}

/// The width and speed of a cable: its first end's, the other's where that is unknown
/// (both ends of a trained link share them; a file may state them at one end only).
fn cable_rate(f: &Fabric, a: PortRef, b: PortRef) -> (ActiveWidth, ActiveSpeed) {
    let (wa, sa) = active(f, a);
    let (wb, sb) = active(f, b);
    (
        if wa == ActiveWidth::Unknown { wb } else { wa },
        if sa == ActiveSpeed::Unknown { sb } else { sa },
    )
}

/// Every difference of `current` from `reference`, sorted (by kind, then GUID and port),
/// so two runs over the same fabrics give the same list. Empty when the fabric is
/// cabled as planned. Linear in the nodes and cables of both.
#[must_use]
pub fn diff(reference: &Fabric, current: &Fabric) -> Vec<Difference> {
    let mut out = Vec::new();
    for (_, node) in reference.nodes() {
        if current.node_by_guid(node.guid()).is_none() {
            out.extend(node_ref(reference, node.guid()).map(Difference::MissingNode));
        }
    }
    for (_, node) in current.nodes() {
        if reference.node_by_guid(node.guid()).is_none() {
            out.extend(node_ref(current, node.guid()).map(Difference::UnexpectedNode));
        }
    }
    let planned = cables(reference);
    let cabled = cables(current);
    let known = |p: &PortRef| reference.node_by_guid(p.guid).is_some();
    let present = |p: &PortRef| current.node_by_guid(p.guid).is_some();
    for (_, link) in current.links() {
        let a = PortRef::new(current.guid_of(link.a.node), link.a.port);
        let b = PortRef::new(current.guid_of(link.b.node), link.b.port);
        let (ea, eb) = (planned.get(&a).copied(), planned.get(&b).copied());
        if ea == Some(b) {
            let plan = cable_rate(reference, a, b);
            let now = cable_rate(current, a, b);
            if below(plan, now) {
                out.push(Difference::Degraded {
                    a,
                    b,
                    expected: plan,
                    actual: now,
                });
            }
        } else if ea.is_some() || eb.is_some() {
            out.push(Difference::Miswired {
                a: WiredEnd {
                    port: a,
                    expected: ea,
                },
                b: WiredEnd {
                    port: b,
                    expected: eb,
                },
            });
        } else if known(&a) && known(&b) {
            out.push(Difference::ExtraCable { a, b });
        }
        // Otherwise a cable of an unexpected node, which that node's entry covers.
    }
    for (_, link) in reference.links() {
        let a = PortRef::new(reference.guid_of(link.a.node), link.a.port);
        let b = PortRef::new(reference.guid_of(link.b.node), link.b.port);
        if present(&a) && present(&b) && !cabled.contains_key(&a) && !cabled.contains_key(&b) {
            out.push(Difference::MissingCable { a, b });
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::NodeSpec;
    use crate::generate;
    use proptest::prelude::*;

    /// Two switches with two cables, a CA on each.
    fn small() -> Fabric {
        let mut f = Fabric::new();
        let s1 = f.add_node(NodeSpec::switch(0x10, 8, "s1")).unwrap();
        let s2 = f.add_node(NodeSpec::switch(0x20, 8, "s2")).unwrap();
        let h1 = f.add_node(NodeSpec::ca(0x30, 1, "h1")).unwrap();
        let h2 = f.add_node(NodeSpec::ca(0x40, 1, "h2")).unwrap();
        f.connect(s1, 1, s2, 1).unwrap();
        f.connect(s1, 2, s2, 2).unwrap();
        f.connect(h1, 1, s1, 8).unwrap();
        f.connect(h2, 1, s2, 8).unwrap();
        for id in f.node_ids().collect::<Vec<_>>() {
            for p in 1..=f.node(id).unwrap().num_ports() {
                let port = f.node_mut(id).unwrap().port_mut(p).unwrap();
                port.width = ActiveWidth::X4;
                port.speed = ActiveSpeed::Edr;
            }
        }
        f
    }

    fn id(f: &Fabric, guid: u64) -> crate::NodeId {
        f.node_by_guid(Guid(guid)).unwrap()
    }

    #[test]
    fn each_kind_is_named() {
        let plan = small();
        let mut now = small();
        // Swap the ends of the two switch cables' s2 side: two miswires.
        let (s1, s2) = (id(&now, 0x10), id(&now, 0x20));
        now.disconnect(s1, 1).unwrap();
        now.disconnect(s1, 2).unwrap();
        now.connect(s1, 1, s2, 2).unwrap();
        now.connect(s1, 2, s2, 1).unwrap();
        // h2 gone, a new CA on s1 port 5, an extra cable s1/6 - s2/6.
        now.remove_node(id(&now, 0x40)).unwrap();
        let h3 = now.add_node(NodeSpec::ca(0x50, 1, "h3")).unwrap();
        now.connect(h3, 1, s1, 5).unwrap();
        now.connect(s1, 6, s2, 6).unwrap();
        // h1's cable trained at 1x.
        now.node_mut(id(&now, 0x30))
            .unwrap()
            .port_mut(1)
            .unwrap()
            .width = ActiveWidth::X1;
        now.node_mut(s1).unwrap().port_mut(8).unwrap().width = ActiveWidth::X1;
        let d = diff(&plan, &now);
        let p = |g: u64, n: u8| PortRef::new(g, n);
        let kinds: Vec<&str> = d.iter().map(Difference::kind).collect();
        assert_eq!(
            kinds,
            [
                "missing_node",
                "unexpected_node",
                "extra_cable",
                "miswired",
                "miswired",
                "degraded"
            ],
            "{d:#?}"
        );
        assert_eq!(
            d[3],
            Difference::Miswired {
                a: WiredEnd {
                    port: p(0x10, 1),
                    expected: Some(p(0x20, 1))
                },
                b: WiredEnd {
                    port: p(0x20, 2),
                    expected: Some(p(0x10, 2))
                },
            }
        );
        assert_eq!(
            d[5],
            Difference::Degraded {
                a: p(0x10, 8),
                b: p(0x30, 1),
                expected: (ActiveWidth::X4, ActiveSpeed::Edr),
                actual: (ActiveWidth::X1, ActiveSpeed::Edr),
            }
        );
        assert_eq!(
            d[2],
            Difference::ExtraCable {
                a: p(0x10, 6),
                b: p(0x20, 6)
            }
        );
        assert_eq!(
            d[5].to_string(),
            "degraded cable 0x0000000000000010/8 - 0x0000000000000030/1: 1xEDR planned 4xEDR"
        );
    }

    #[test]
    fn a_cable_pulled_at_both_ends_is_missing_and_slower_is_degraded() {
        let plan = small();
        let mut now = small();
        now.disconnect(id(&now, 0x10), 2).unwrap();
        now.node_mut(id(&now, 0x20))
            .unwrap()
            .port_mut(1)
            .unwrap()
            .speed = ActiveSpeed::Sdr;
        now.node_mut(id(&now, 0x10))
            .unwrap()
            .port_mut(1)
            .unwrap()
            .speed = ActiveSpeed::Sdr;
        let d = diff(&plan, &now);
        assert_eq!(
            d,
            [
                Difference::MissingCable {
                    a: PortRef::new(0x10, 2),
                    b: PortRef::new(0x20, 2)
                },
                Difference::Degraded {
                    a: PortRef::new(0x10, 1),
                    b: PortRef::new(0x20, 1),
                    expected: (ActiveWidth::X4, ActiveSpeed::Edr),
                    actual: (ActiveWidth::X4, ActiveSpeed::Sdr),
                },
            ]
        );
        // Faster or wider than planned, or a plan that states no rate: no difference.
        let mut plan = small();
        let s1 = id(&plan, 0x10);
        plan.node_mut(s1).unwrap().port_mut(1).unwrap().width = ActiveWidth::Unknown;
        let s2 = id(&plan, 0x20);
        plan.node_mut(s2).unwrap().port_mut(1).unwrap().width = ActiveWidth::Unknown;
        let mut now = small();
        now.node_mut(id(&now, 0x10))
            .unwrap()
            .port_mut(1)
            .unwrap()
            .width = ActiveWidth::X1;
        assert!(diff(&plan, &now).is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// A fabric compared with itself has no difference; swapping the far ends of two
        /// cables with four distinct nodes gives exactly those two cables as miswires,
        /// each naming where its ends should lead.
        #[test]
        fn swaps_are_exactly_two_miswires(k in 2u32..=4, n in 2usize..=3, i in any::<prop::sample::Index>(), j in any::<prop::sample::Index>()) {
            let plan = generate::k_ary_n_tree(k, n).unwrap();
            prop_assert!(diff(&plan, &plan).is_empty());
            let links: Vec<_> = plan.links().map(|(_, l)| *l).collect();
            let (x, y) = (links[i.index(links.len())], links[j.index(links.len())]);
            let nodes = [x.a.node, x.b.node, y.a.node, y.b.node];
            let distinct = (0..4).all(|p| (p + 1..4).all(|q| nodes[p] != nodes[q]));
            prop_assume!(distinct);
            let mut now = plan.clone();
            now.disconnect(x.a.node, x.a.port).unwrap();
            now.disconnect(y.a.node, y.a.port).unwrap();
            now.connect(x.a.node, x.a.port, y.b.node, y.b.port).unwrap();
            now.connect(y.a.node, y.a.port, x.b.node, x.b.port).unwrap();
            let d = diff(&plan, &now);
            prop_assert_eq!(d.len(), 2, "{:#?}", d);
            let at = |e: crate::Endpoint| PortRef::new(plan.guid_of(e.node), e.port);
            for (from, to) in [(x.a, y.b), (y.a, x.b)] {
                let want = [(at(from), at(if from == x.a { x.b } else { y.b })),
                            (at(to), at(if to == y.b { y.a } else { x.a }))];
                let hit = d.iter().any(|dd| match dd {
                    Difference::Miswired { a, b } => {
                        let mut got = [(a.port, a.expected), (b.port, b.expected)];
                        got.sort();
                        let mut w = want.map(|(p, e)| (p, Some(e)));
                        w.sort();
                        got == w
                    }
                    _ => false,
                });
                prop_assert!(hit, "{:?} - {:?} not a miswire in {:#?}", at(from), at(to), d);
            }
            // Every isolated cable is a cable of the fabric.
            for dd in &d {
                let (a, _) = dd.isolated_cable().unwrap();
                prop_assert!(now.node_by_guid(a.guid).and_then(|id| now.port_peer(id, a.port)).is_some());
            }
        }
    }
}
