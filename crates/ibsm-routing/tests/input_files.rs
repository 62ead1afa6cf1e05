//! OpenSM's routing input files as engine options: roots (`root_guid_file`), compute and
//! I/O nodes (`cn_guid_file`, `io_guid_file`, with `max_reverse_hops`) and the routing
//! order (`guid_routing_order_file`), each on a fabric whose tables show that it was used.

use ibsm_routing::*;
use ibsm_topology::generate::{self, KIND_CA, KIND_SWITCH, SpineStorage, scheme_guid};
use ibsm_topology::{Csr, Fabric, Guid, NodeId, NodeSpec};

/// Switch GUIDs are `0x100 + i`, CA node GUIDs `0x200 + i`.
fn sw(f: &mut Fabric, i: u64, ports: u8) -> NodeId {
    f.add_node(NodeSpec::switch(0x100 + i, ports, format!("sw{i}")))
        .unwrap()
}

fn ca(f: &mut Fabric, i: u64) -> NodeId {
    f.add_node(NodeSpec::ca(0x200 + i, 1, format!("ca{i}")))
        .unwrap()
}

/// The port GUID, switch index and base LID of the CA with node GUID `0x200 + i`.
fn ca_of(f: &Fabric, csr: &Csr, lids: &LidAssignment, i: u64) -> (Guid, usize, u16) {
    ca_by_guid(f, csr, lids, Guid(0x200 + i))
}

/// The port GUID, switch index and base LID of the CA with node GUID `node`.
fn ca_by_guid(f: &Fabric, csr: &Csr, lids: &LidAssignment, node: Guid) -> (Guid, usize, u16) {
    let t = (0..csr.terminal_count())
        .find(|&t| f.node(csr.term_node[t]).unwrap().guid() == node)
        .unwrap();
    (
        csr.term_guid[t],
        csr.term_switch[t] as usize,
        lids.terminal_lid(t).0,
    )
}

fn switch_index(csr: &Csr, i: u64) -> usize {
    switch_by_guid(csr, Guid(0x100 + i))
}

fn switch_by_guid(csr: &Csr, g: Guid) -> usize {
    csr.switch_guid.iter().position(|x| *x == g).unwrap()
}

/// [`generate::spine_storage`]'s GUIDs: leaf `i`, spine `j`, CA `c` (compute CAs first,
/// then storage).
fn leaf(i: u32) -> Guid {
    scheme_guid(KIND_SWITCH, 1, i)
}

fn spine(j: u32) -> Guid {
    scheme_guid(KIND_SWITCH, 2, j)
}

fn ca_guid(c: u32) -> Guid {
    scheme_guid(KIND_CA, 0, c)
}

/// A ring of six switches (port 1 to the next, port 2 to the previous), CA `i` on port 3
/// of switch `i`.
fn ring6() -> Fabric {
    let mut f = Fabric::new();
    let s: Vec<NodeId> = (0..6).map(|i| sw(&mut f, i, 3)).collect();
    for i in 0..6 {
        f.connect(s[i], 1, s[(i + 1) % 6], 2).unwrap();
        let c = ca(&mut f, i as u64);
        f.connect(s[i], 3, c, 1).unwrap();
    }
    f
}

fn route(kind: EngineKind, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Routes {
    let r = kind.engine().route(csr, lids, opts).unwrap();
    assert!(check_reachability(csr, lids, &r).unwrap().is_ok());
    r
}

#[test]
fn a_root_file_moves_the_forbidden_turn_of_updn() {
    // Up/down on a ring forbids the down-then-up turn at the switch farthest from the
    // root: rooted at switch 0, switch 2 reaches CA 4 the long way (2-1-0-5-4, through
    // port 2) because 2-3-4 would climb after descending at 3; rooted at 3 the short way
    // (port 1) is legal. Detection picks one root for both runs, so the two cannot both
    // hold unless the file is read.
    let f = ring6();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let (_, _, lid4) = ca_of(&f, &csr, &lids, 4);
    let s2 = switch_index(&csr, 2);
    let port = |root: u64| {
        let opts = RouteOptions::default().with_roots(vec![Guid(0x100 + root)]);
        route(EngineKind::UpDn, &csr, &lids, &opts).lft(s2)[usize::from(lid4)]
    };
    assert_eq!(port(0), 2, "rooted at switch 0: the long way round");
    assert_eq!(port(3), 1, "rooted at switch 3: straight through it");
    // A CA's port GUID names the switch it is cabled to, as in OpenSM.
    let (ca3, _, _) = ca_of(&f, &csr, &lids, 3);
    let opts = RouteOptions::default().with_roots(vec![Guid(0xdead), ca3]);
    let r = route(EngineKind::UpDn, &csr, &lids, &opts);
    assert_eq!(r.lft(s2)[usize::from(lid4)], 1, "root by CA port GUID");
    // dfsssp's up-first pass climbs towards the given root too.
    let r0 = route(
        EngineKind::Dfsssp,
        &csr,
        &lids,
        &RouteOptions::default().with_roots(vec![Guid(0x100)]),
    );
    let r3 = route(
        EngineKind::Dfsssp,
        &csr,
        &lids,
        &RouteOptions::default().with_roots(vec![Guid(0x103)]),
    );
    let lfts = |r: &Routes| {
        (0..csr.switch_count())
            .map(|s| r.lft(s).to_vec())
            .collect::<Vec<_>>()
    };
    assert_ne!(lfts(&r0), lfts(&r3), "dfsssp ignored the roots");
}

#[test]
fn a_root_file_none_of_whose_guids_is_in_the_fabric_is_an_error() {
    let f = ring6();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let opts = RouteOptions::default().with_roots(vec![Guid(0xdead), Guid(0xbeef)]);
    let e = EngineKind::UpDn
        .engine()
        .route(&csr, &lids, &opts)
        .unwrap_err();
    assert!(
        matches!(&e, RoutingError::InvalidInput(m) if m.contains("root GUIDs")),
        "{e}"
    );
}

/// Two leaves with CAs 0-1 and 2-3, two spines cabled to both leaves, and a storage CA
/// (4) on spine 0: the storage CA puts a CA on a spine.
fn tree_with_storage_on_a_spine() -> Fabric {
    generate::spine_storage(&SpineStorage {
        leaves: 2,
        spines: 2,
        cas_per_leaf: 2,
        storage: vec![0],
        missing: Vec::new(),
    })
    .unwrap()
}

#[test]
fn ftree_with_a_compute_node_file_takes_a_tree_with_a_ca_on_a_spine() {
    let f = tree_with_storage_on_a_spine();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    // Every CA a compute node: the spine with the storage CA is a leaf too, cabled to
    // the other leaves.
    let e = EngineKind::FatTree
        .engine()
        .route(&csr, &lids, &RouteOptions::default())
        .unwrap_err();
    assert!(matches!(e, RoutingError::NotAFatTree(_)), "{e}");
    let cns: Vec<Guid> = (0..4)
        .map(|i| ca_by_guid(&f, &csr, &lids, ca_guid(i)).0)
        .collect();
    let (storage, _, storage_lid) = ca_by_guid(&f, &csr, &lids, ca_guid(4));
    for opts in [
        RouteOptions::default().with_compute_nodes(cns.clone()),
        RouteOptions::default().with_io_nodes(vec![storage]),
    ] {
        let r = route(EngineKind::FatTree, &csr, &lids, &opts);
        assert_eq!(r.engine(), "ftree");
        assert!(check_deadlock_free(&csr, &lids, &r).unwrap().is_ok());
        // The leaves reach the storage CA through its spine.
        for l in [0, 1] {
            let s = switch_by_guid(&csr, leaf(l));
            assert_eq!(r.lft(s)[usize::from(storage_lid)], 3, "leaf {l}");
        }
    }
    // A compute node that is listed as I/O node too is not one: CA 0 alone leaves
    // switch 0 the only leaf, and switch 1's CAs hang one rank up.
    let opts = RouteOptions::default()
        .with_compute_nodes(cns[..2].to_vec())
        .with_io_nodes(vec![cns[1]]);
    let r = route(EngineKind::FatTree, &csr, &lids, &opts);
    assert!(check_deadlock_free(&csr, &lids, &r).unwrap().is_ok());
}

#[test]
fn ftree_roots_rank_the_tree_from_the_top() {
    let f = tree_with_storage_on_a_spine();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let (storage, ..) = ca_by_guid(&f, &csr, &lids, ca_guid(4));
    let opts = RouteOptions::default()
        .with_io_nodes(vec![storage])
        .with_roots(vec![spine(0), spine(1)]);
    route(EngineKind::FatTree, &csr, &lids, &opts);
    // A leaf as root puts the other leaf two hops down and the spines between.
    let opts = RouteOptions::default()
        .with_io_nodes(vec![storage])
        .with_roots(vec![leaf(0)]);
    let e = EngineKind::FatTree
        .engine()
        .route(&csr, &lids, &opts)
        .unwrap_err();
    assert!(matches!(e, RoutingError::NotAFatTree(_)), "{e}");
}

/// Two leaves with two CAs each and two spines: which CA of leaf 0 gets which spine at
/// leaf 1 is decided by which is routed first.
fn two_level() -> Fabric {
    let mut f = Fabric::new();
    let leaves = [sw(&mut f, 0, 4), sw(&mut f, 1, 4)];
    let spines = [sw(&mut f, 2, 2), sw(&mut f, 3, 2)];
    for (l, &leaf) in leaves.iter().enumerate() {
        for (s, &spine) in spines.iter().enumerate() {
            f.connect(leaf, 3 + s as u8, spine, 1 + l as u8).unwrap();
        }
        for k in 0..2 {
            let c = ca(&mut f, (2 * l + k) as u64);
            f.connect(leaf, 1 + k as u8, c, 1).unwrap();
        }
    }
    f
}

#[test]
fn a_routing_order_file_routes_the_listed_ports_first() {
    let f = two_level();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let (a, _, lid_a) = ca_of(&f, &csr, &lids, 0);
    let (b, _, lid_b) = ca_of(&f, &csr, &lids, 1);
    let leaf1 = switch_index(&csr, 1);
    for kind in [EngineKind::MinHop, EngineKind::UpDn, EngineKind::Dfsssp] {
        let plain = route(kind, &csr, &lids, &RouteOptions::default());
        let up = |r: &Routes| {
            (
                r.lft(leaf1)[usize::from(lid_a)],
                r.lft(leaf1)[usize::from(lid_b)],
            )
        };
        let (pa, pb) = up(&plain);
        assert_ne!(pa, pb, "{kind:?}: A and B share an up port");
        // B before A: B takes the port A had.
        let ordered = route(
            kind,
            &csr,
            &lids,
            &RouteOptions::default().with_routing_order(vec![b, a]),
        );
        assert_eq!(up(&ordered), (pb, pa), "{kind:?}: the order was ignored");
    }
}

/// Three leaves with one CA each (CA `i` on leaf `i`) and two spines.
fn three_leaves() -> Fabric {
    let mut f = Fabric::new();
    let leaves: Vec<NodeId> = (0..3).map(|i| sw(&mut f, i, 3)).collect();
    let spines = [sw(&mut f, 3, 3), sw(&mut f, 4, 3)];
    for (l, &leaf) in leaves.iter().enumerate() {
        for (s, &spine) in spines.iter().enumerate() {
            f.connect(leaf, 2 + s as u8, spine, 1 + l as u8).unwrap();
        }
        let c = ca(&mut f, l as u64);
        f.connect(leaf, 1, c, 1).unwrap();
    }
    f
}

#[test]
fn the_routing_order_reaches_across_destination_switches() {
    // Leaf 2 climbs to CA 0 and CA 1 through its two spine ports: the CA routed first
    // takes the first one. Listing CA 1 routes leaf 1 before leaf 0.
    let f = three_leaves();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let (_, _, lid0) = ca_of(&f, &csr, &lids, 0);
    let (g1, _, lid1) = ca_of(&f, &csr, &lids, 1);
    let (g2, _, _) = ca_of(&f, &csr, &lids, 2);
    let leaf2 = switch_index(&csr, 2);
    for kind in [EngineKind::MinHop, EngineKind::UpDn, EngineKind::Dfsssp] {
        let at_leaf2 = |r: &Routes| {
            (
                r.lft(leaf2)[usize::from(lid0)],
                r.lft(leaf2)[usize::from(lid1)],
            )
        };
        let (p0, p1) = at_leaf2(&route(kind, &csr, &lids, &RouteOptions::default()));
        assert_ne!(p0, p1, "{kind:?}");
        let ordered = route(
            kind,
            &csr,
            &lids,
            &RouteOptions::default().with_routing_order(vec![g1]),
        );
        assert_eq!(
            at_leaf2(&ordered),
            (p1, p0),
            "{kind:?}: the order was ignored"
        );
        // Planning threads see the order too: the tables do not depend on their count
        // (leaf 2 first puts it before leaf 0, which the same planner of two plans).
        let order = RouteOptions::default().with_routing_order(vec![g2, g1]);
        let one = route(kind, &csr, &lids, &order);
        for threads in [2, 3] {
            let many = route(kind, &csr, &lids, &order.clone().with_threads(threads));
            for s in 0..csr.switch_count() {
                assert_eq!(
                    many.lft(s),
                    one.lft(s),
                    "{kind:?} {threads} threads switch {s}"
                );
            }
        }
    }
}

/// Reverse hops (a switch used the wrong way round: come down into it, leave it going
/// up) on the path from every switch towards `lid` in a [`generate::spine_storage`]
/// tree (leaves below spines), `None` where the tables do not deliver.
fn turns_towards(csr: &Csr, r: &Routes, lid: u16) -> Vec<Option<usize>> {
    let level = |s: usize| csr.switch_guid[s].0 >> 40 & 0xffff;
    (0..csr.switch_count())
        .map(|s0| {
            let (mut s, mut came_down, mut turns) = (s0, false, 0);
            for _ in 0..=csr.switch_count() {
                let port = r.lft(s)[usize::from(lid)];
                let Some(x) = csr.target(s as u32, port).as_switch() else {
                    // Delivered (or not a switch port: reachability says which).
                    return Some(turns);
                };
                let x = x as usize;
                let goes_up = level(x) > level(s);
                turns += usize::from(came_down && goes_up);
                came_down = !goes_up;
                s = x;
            }
            None
        })
        .collect()
}

/// Routes ftree with `io` as I/O nodes and `hops` reverse hops (re-routing from
/// `previous` when given); what it routes is checked for reachability and deadlock
/// freedom.
fn ftree_io(
    csr: &Csr,
    lids: &LidAssignment,
    io: &[Guid],
    hops: u16,
    previous: Option<&Routes>,
) -> Result<Routes> {
    let opts = RouteOptions::default()
        .with_io_nodes(io.to_vec())
        .with_max_reverse_hops(hops);
    let r = match previous {
        None => FatTree.route(csr, lids, &opts)?,
        Some(p) => FatTree.reroute(csr, lids, &opts, p)?,
    };
    assert_eq!(r.engine(), "ftree");
    let reach = check_reachability(csr, lids, &r).unwrap();
    assert!(reach.is_ok(), "{reach:?}");
    let cdg = check_deadlock_free(csr, lids, &r).unwrap();
    assert!(cdg.is_ok(), "{hops} reverse hops: credit loop {cdg:?}");
    Ok(r)
}

/// The LIDs of CAs `0..n` of a spine-storage tree.
fn ca_lids(f: &Fabric, csr: &Csr, lids: &LidAssignment, n: u32) -> Vec<(Guid, usize, u16)> {
    (0..n)
        .map(|c| ca_by_guid(f, csr, lids, ca_guid(c)))
        .collect()
}

fn spine_storage(
    leaves: u32,
    spines: u32,
    cas_per_leaf: u32,
    storage: &[u32],
    missing: &[(u32, u32)],
) -> Fabric {
    generate::spine_storage(&SpineStorage {
        leaves,
        spines,
        cas_per_leaf,
        storage: storage.to_vec(),
        missing: missing.to_vec(),
    })
    .unwrap()
}

#[test]
fn reverse_hops_let_storage_on_two_spines_reach_each_other() {
    // Storage 4 on spine 0, storage 5 on spine 1: between them a path must come down
    // to a leaf and climb again.
    let f = spine_storage(2, 2, 2, &[0, 1], &[]);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let cas = ca_lids(&f, &csr, &lids, 6);
    let io = [cas[4].0, cas[5].0];
    let spines = [
        switch_by_guid(&csr, spine(0)),
        switch_by_guid(&csr, spine(1)),
    ];
    let e = ftree_io(&csr, &lids, &io, 0, None).unwrap_err();
    assert!(
        matches!(e, RoutingError::Disconnected { switch, lid, .. }
            if (switch, lid) == (spines[0], cas[5].2) || (switch, lid) == (spines[1], cas[4].2)),
        "{e}"
    );
    let r = ftree_io(&csr, &lids, &io, 1, None).unwrap();
    for (c, &(_, sw, lid)) in cas.iter().enumerate() {
        let turns = turns_towards(&csr, &r, lid);
        if c < 4 {
            assert!(turns.iter().all(|&t| t == Some(0)), "CA {c}: {turns:?}");
        } else {
            assert!(turns.iter().all(|&t| t <= Some(1)), "CA {c}: {turns:?}");
            let other = spines[usize::from(sw == spines[0])];
            assert_eq!(turns[other], Some(1), "storage {c} from the other spine");
        }
    }
}

#[test]
fn reverse_hops_reach_storage_from_a_leaf_not_below_its_spine() {
    // Leaf 2 has no cable to spine 0, where the storage (CA 3) hangs: it climbs to
    // spine 1, comes down to leaf 0 or 1 and climbs to spine 0; the storage's traffic
    // to leaf 2's CA (a compute node) turns the same way, at a spine that carries no
    // compute traffic.
    let f = spine_storage(3, 2, 1, &[0], &[(2, 0)]);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let cas = ca_lids(&f, &csr, &lids, 4);
    let (storage, _, storage_lid) = cas[3];
    let leaf2 = switch_by_guid(&csr, leaf(2));
    // Without reverse hops neither leaf 2's CA reaches the storage nor the storage
    // leaf 2's CA.
    let spine0 = switch_by_guid(&csr, spine(0));
    let e = ftree_io(&csr, &lids, &[storage], 0, None).unwrap_err();
    assert!(
        matches!(&e, RoutingError::Disconnected { switch, lid, .. }
            if (*switch, *lid) == (leaf2, storage_lid) || (*switch, *lid) == (spine0, cas[2].2)),
        "{e}"
    );
    let r = ftree_io(&csr, &lids, &[storage], 1, None).unwrap();
    let turns = turns_towards(&csr, &r, storage_lid);
    assert_eq!(turns[leaf2], Some(1), "{turns:?}");
    assert!(turns.iter().all(|&t| t <= Some(1)), "{turns:?}");
    for &(_, _, lid) in &cas[..3] {
        let turns = turns_towards(&csr, &r, lid);
        for (s, &t) in turns.iter().enumerate() {
            let want = if (s, lid) == (spine0, cas[2].2) { 1 } else { 0 };
            assert_eq!(t, Some(want), "switch {s} to LID {lid}: {turns:?}");
        }
    }
    // More hops allowed than needed change nothing.
    assert_eq!(ftree_io(&csr, &lids, &[storage], 4, None).unwrap(), r);
    // Only I/O nodes may reverse: the storage as a mere non-compute node may not.
    let cns: Vec<Guid> = cas[..3].iter().map(|c| c.0).collect();
    let opts = RouteOptions::default()
        .with_compute_nodes(cns)
        .with_max_reverse_hops(1);
    let e = FatTree.route(&csr, &lids, &opts).unwrap_err();
    assert!(
        matches!(e, RoutingError::Disconnected { switch, .. } if switch == leaf2 || switch == spine0),
        "{e}"
    );
}

/// Storage 4 on spine 0, cabled to leaf 0 only, storage 5 on spine 1, cabled to leaf
/// 1 only, and spine 2 cabled to both leaves: from one storage to the other the path
/// turns at both leaves.
const APART: [(u32, u32); 2] = [(0, 1), (1, 0)];

#[test]
fn a_path_needing_more_reverse_hops_than_allowed_fails() {
    let f = spine_storage(2, 3, 2, &[0, 1], &APART);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let cas = ca_lids(&f, &csr, &lids, 6);
    let io = [cas[4].0, cas[5].0];
    let spines = [
        switch_by_guid(&csr, spine(0)),
        switch_by_guid(&csr, spine(1)),
    ];
    let e = ftree_io(&csr, &lids, &io, 1, None).unwrap_err();
    assert_eq!(
        e,
        RoutingError::Disconnected {
            switch: spines[1],
            lid: cas[4].2,
            why: " with up/down paths and at most 1 reverse hops".into()
        }
    );
    let r = ftree_io(&csr, &lids, &io, 2, None).unwrap();
    assert_eq!(turns_towards(&csr, &r, cas[5].2)[spines[0]], Some(2));
    assert_eq!(turns_towards(&csr, &r, cas[4].2)[spines[1]], Some(2));
    // The compute nodes reach the storage with one.
    for l in 0..2 {
        let s = switch_by_guid(&csr, leaf(l));
        assert_eq!(
            turns_towards(&csr, &r, cas[4 + 1 - l as usize].2)[s],
            Some(1)
        );
    }
}

#[test]
fn reverse_hops_survive_a_reroute_after_cables_are_lost() {
    // The full 2 x 3 tree needs one reverse hop between the storage spines; without
    // the cables of APART it needs two.
    let full = spine_storage(2, 3, 2, &[0, 1], &[]);
    let cut = spine_storage(2, 3, 2, &[0, 1], &APART);
    let (csr0, csr) = (Csr::new(&full), Csr::new(&cut));
    let lids0 = LidAssignment::sequential(&csr0, 0).unwrap();
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let cas = ca_lids(&cut, &csr, &lids, 6);
    assert_eq!(ca_lids(&full, &csr0, &lids0, 6), cas);
    let io = [cas[4].0, cas[5].0];
    let before = ftree_io(&csr0, &lids0, &io, 2, None).unwrap();
    let spine0 = switch_by_guid(&csr, spine(0));
    assert_eq!(turns_towards(&csr0, &before, cas[5].2)[spine0], Some(1));
    let e = ftree_io(&csr, &lids, &io, 1, Some(&before)).unwrap_err();
    assert!(matches!(e, RoutingError::Disconnected { .. }), "{e}");
    let after = ftree_io(&csr, &lids, &io, 2, Some(&before)).unwrap();
    assert_eq!(turns_towards(&csr, &after, cas[5].2)[spine0], Some(2));
}

#[test]
fn reverse_hops_change_no_table_where_up_down_reaches_everything() {
    // An I/O node on a leaf of a full tree: every switch has an up/down path to it, so
    // any number of reverse hops leaves every table as it is. On a degraded tree only
    // the I/O node's own column may change (at switches without CAs that escaped).
    let mut degraded = generate::fat_tree(8, 3).unwrap();
    generate::degrade(&mut degraded, 0.1, 7).unwrap();
    for (name, f) in [
        ("4-ary 2-tree", generate::k_ary_n_tree(4, 2).unwrap()),
        ("degraded fat_tree(8, 3)", degraded),
    ] {
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        // The last CA: d-mod-k sends it up the last ports, not the first.
        let t = csr.terminal_count() - 1;
        let (io, io_lid) = (csr.term_guid[t], lids.terminal_lid(t).0);
        let r0 = ftree_io(&csr, &lids, &[io], 0, None).unwrap();
        for hops in [1, 3] {
            let r = ftree_io(&csr, &lids, &[io], hops, None).unwrap();
            let degraded = name.starts_with("degraded");
            for s in 0..csr.switch_count() {
                for lid in 1..r.lft_len() as u16 {
                    if degraded && lid == io_lid {
                        continue;
                    }
                    assert_eq!(
                        r.port(s, lid),
                        r0.port(s, lid),
                        "{name}, {hops} hops: switch {s} LID {lid}"
                    );
                }
            }
            if !degraded {
                assert_eq!(r, r0, "{name}");
            }
        }
    }
}
