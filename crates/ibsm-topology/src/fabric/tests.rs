use std::collections::BTreeMap;

use super::*;

fn two_switches() -> (Fabric, NodeId, NodeId) {
    let mut f = Fabric::new();
    let a = f.add_node(NodeSpec::switch(0x20, 4, "a")).unwrap();
    let b = f.add_node(NodeSpec::switch(0x10, 4, "b")).unwrap();
    (f, a, b)
}

#[test]
fn connect_checks() {
    let (mut f, a, b) = two_switches();
    assert_eq!(
        f.connect(a, 0, b, 1),
        Err(FabricError::PortOutOfRange {
            guid: Guid(0x20),
            port: 0,
            num_ports: 4
        })
    );
    assert_eq!(
        f.connect(a, 1, b, 5),
        Err(FabricError::PortOutOfRange {
            guid: Guid(0x10),
            port: 5,
            num_ports: 4
        })
    );
    assert_eq!(
        f.connect(a, 1, a, 2),
        Err(FabricError::SelfLoop { guid: Guid(0x20) })
    );
    let l = f.connect(a, 1, b, 3).unwrap();
    assert_eq!(
        f.connect(a, 1, b, 2),
        Err(FabricError::PortInUse {
            guid: Guid(0x20),
            port: 1
        })
    );
    assert_eq!(
        f.connect(a, 2, b, 3),
        Err(FabricError::PortInUse {
            guid: Guid(0x10),
            port: 3
        })
    );
    // Parallel links are fine.
    let l2 = f.connect(a, 2, b, 4).unwrap();
    assert_ne!(l, l2);
    assert_eq!(f.link_count(), 2);
    // Canonical end order: lower GUID first.
    let link = f.link(l).unwrap();
    assert_eq!(link.a, Endpoint { node: b, port: 3 });
    assert_eq!(f.port_peer(a, 1), Some(Endpoint { node: b, port: 3 }));
    assert_eq!(f.port_peer(b, 3), Some(Endpoint { node: a, port: 1 }));
    assert_eq!(f.neighbour(b, 4), Some(a));
    assert_eq!(f.port(a, 1).unwrap().link(), Some(l));
}

#[test]
fn disconnect_and_remove() {
    let (mut f, a, b) = two_switches();
    f.connect(a, 1, b, 1).unwrap();
    f.connect(a, 2, b, 2).unwrap();
    assert_eq!(
        f.disconnect(a, 3),
        Err(FabricError::NotConnected {
            guid: Guid(0x20),
            port: 3
        })
    );
    f.disconnect(b, 1).unwrap();
    assert_eq!(f.port_peer(a, 1), None);
    assert_eq!(f.link_count(), 1);
    let n = f.remove_node(a).unwrap();
    assert_eq!(n.degree(), 0);
    assert_eq!(f.port_peer(b, 2), None);
    assert_eq!(f.node_count(), 1);
    assert_eq!(f.switch_count(), 1);
    assert_eq!(f.node_by_guid(Guid(0x20)), None);
    assert_eq!(f.remove_node(a).unwrap_err(), FabricError::UnknownNode(a));
    // The GUID can be reused; the old ID stays dead or is recycled consistently.
    let c = f.add_node(NodeSpec::switch(0x20, 2, "c")).unwrap();
    f.connect(c, 1, b, 1).unwrap();
    assert_eq!(f.neighbour(b, 1), Some(c));
}

#[test]
fn duplicate_guid_and_port_counts() {
    let (mut f, _, _) = two_switches();
    assert_eq!(
        f.add_node(NodeSpec::ca(0x10, 1, "x")),
        Err(FabricError::DuplicateGuid(Guid(0x10)))
    );
    assert!(matches!(
        f.add_node(NodeSpec::ca(0x99, 0, "x")),
        Err(FabricError::BadPortCount { .. })
    ));
    assert!(matches!(
        f.add_node(NodeSpec::ca(0x99, 255, "x")),
        Err(FabricError::BadPortCount { .. })
    ));
    let mut spec = NodeSpec::ca(0x99, 2, "x");
    spec.port_guids = Some(vec![Guid(1)]);
    assert!(matches!(
        f.add_node(spec),
        Err(FabricError::BadPortCount { .. })
    ));
}

#[test]
fn ports_and_guids() {
    let mut f = Fabric::new();
    let h = f.add_node(NodeSpec::ca(0x100, 2, "h")).unwrap();
    let s = f.add_node(NodeSpec::switch(0x200, 3, "s")).unwrap();
    let n = f.node(h).unwrap();
    assert_eq!(n.port(0), None);
    assert_eq!(n.port(1).unwrap().guid, Guid(0x101));
    assert_eq!(n.port(2).unwrap().guid, Guid(0x102));
    assert_eq!(n.port(3), None);
    let sn = f.node(s).unwrap();
    assert_eq!(sn.port(0).unwrap().guid, Guid(0x200));
    assert_eq!(sn.port(3).unwrap().guid, Guid(0x200));
    assert_eq!(sn.system_image_guid, Guid(0x200));
    f.node_mut(s).unwrap().port_mut(0).unwrap().lid = 7;
    assert_eq!(f.node(s).unwrap().lid(), 7);
}

#[test]
fn iteration_is_by_guid() {
    let mut f = Fabric::new();
    for g in [5u64, 3, 9, 1] {
        f.add_node(NodeSpec::switch(g << 8, 4, format!("s{g}")))
            .unwrap();
    }
    let guids: Vec<u64> = f.nodes().map(|(_, n)| n.guid().0 >> 8).collect();
    assert_eq!(guids, [1, 3, 5, 9]);
    let ids: Vec<NodeId> = f.node_ids().collect();
    f.connect(ids[3], 1, ids[0], 2).unwrap();
    f.connect(ids[1], 1, ids[2], 2).unwrap();
    let ends: Vec<(u64, u8)> = f
        .links()
        .map(|(_, l)| (f.guid_of(l.a.node).0 >> 8, l.a.port))
        .collect();
    assert_eq!(ends, [(1, 2), (3, 1)]);
}

#[test]
fn port_is_small() {
    assert_eq!(core::mem::size_of::<Port>(), 24);
}

#[test]
fn heap_bytes_counts_ports_and_grows() {
    let (mut f, a, b) = two_switches();
    let before = f.heap_bytes();
    assert!(before >= 2 * 5 * core::mem::size_of::<Port>());
    f.connect(a, 1, b, 1).unwrap();
    assert!(f.heap_bytes() > before);
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8, u8, bool),
    Remove(u8),
    Connect(u8, u8, u8, u8),
    Disconnect(u8, u8),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        (any::<u8>(), 1u8..6, any::<bool>()).prop_map(|(g, p, s)| Op::Add(g % 16, p, s)),
        any::<u8>().prop_map(|g| Op::Remove(g % 16)),
        (any::<u8>(), 0u8..7, any::<u8>(), 0u8..7).prop_map(|(a, pa, b, pb)| Op::Connect(
            a % 16,
            pa,
            b % 16,
            pb
        )),
        (any::<u8>(), 0u8..7).prop_map(|(a, p)| Op::Disconnect(a % 16, p)),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random mutations against a plain model: a map of (guid, port) -> (guid, port).
    #[test]
    fn mutations_match_model(ops in proptest::collection::vec(op(), 1..80)) {
        let mut f = Fabric::new();
        let mut nodes: BTreeMap<u64, u8> = BTreeMap::new();
        let mut cables: BTreeMap<(u64, u8), (u64, u8)> = BTreeMap::new();
        for o in ops {
            match o {
                Op::Add(g, p, sw) => {
                    let g = u64::from(g) << 8;
                    let spec = if sw { NodeSpec::switch(g, p, "s") } else { NodeSpec::ca(g, p, "c") };
                    let r = f.add_node(spec);
                    proptest::prop_assert_eq!(r.is_ok(), !nodes.contains_key(&g));
                    nodes.entry(g).or_insert(p);
                }
                Op::Remove(g) => {
                    let g = u64::from(g) << 8;
                    match f.node_by_guid(Guid(g)) {
                        Some(id) => {
                            f.remove_node(id).unwrap();
                            nodes.remove(&g);
                            cables.retain(|a, b| a.0 != g && b.0 != g);
                        }
                        None => proptest::prop_assert!(!nodes.contains_key(&g)),
                    }
                }
                Op::Connect(a, pa, b, pb) => {
                    let (ga, gb) = (u64::from(a) << 8, u64::from(b) << 8);
                    let (Some(ia), Some(ib)) = (f.node_by_guid(Guid(ga)), f.node_by_guid(Guid(gb))) else {
                        continue;
                    };
                    let ok = ga != gb
                        && (1..=nodes[&ga]).contains(&pa)
                        && (1..=nodes[&gb]).contains(&pb)
                        && !cables.contains_key(&(ga, pa))
                        && !cables.contains_key(&(gb, pb));
                    let r = f.connect(ia, pa, ib, pb);
                    proptest::prop_assert_eq!(r.is_ok(), ok, "{:?}", r);
                    if ok {
                        cables.insert((ga, pa), (gb, pb));
                        cables.insert((gb, pb), (ga, pa));
                    }
                }
                Op::Disconnect(a, p) => {
                    let ga = u64::from(a) << 8;
                    let Some(ia) = f.node_by_guid(Guid(ga)) else { continue };
                    let r = f.disconnect(ia, p);
                    proptest::prop_assert_eq!(r.is_ok(), cables.contains_key(&(ga, p)));
                    if let Some(other) = cables.remove(&(ga, p)) {
                        cables.remove(&other);
                    }
                }
            }
            // The fabric says exactly what the model says.
            proptest::prop_assert_eq!(f.node_count(), nodes.len());
            proptest::prop_assert_eq!(f.link_count() * 2, cables.len());
            let mut seen = BTreeMap::new();
            for (id, n) in f.nodes() {
                for (p, port) in n.ports() {
                    if let Some(peer) = port.peer() {
                        seen.insert((n.guid().0, p), (f.guid_of(peer.node).0, peer.port));
                        let back = f.port_peer(peer.node, peer.port).unwrap();
                        proptest::prop_assert_eq!(back, Endpoint { node: id, port: p });
                    }
                }
            }
            proptest::prop_assert_eq!(&seen, &cables);
            proptest::prop_assert_eq!(f.links().count(), f.link_count());
            proptest::prop_assert_eq!(f.switch_count(), f.switches().count());
        }
    }
}
