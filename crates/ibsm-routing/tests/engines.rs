//! Every engine on every generator topology, checked by the validators and metrics.

use ibsm_routing::*;
use ibsm_topology::{Csr, Fabric, generate};

fn fabrics() -> Vec<(&'static str, Fabric)> {
    let mut v = vec![
        ("k4n3", generate::k_ary_n_tree(4, 3).unwrap()),
        ("ft12x2", generate::fat_tree(12, 2).unwrap()),
        ("ft8x3", generate::fat_tree(8, 3).unwrap()),
    ];
    let mut deg = generate::fat_tree(8, 3).unwrap();
    // Cut every 9th switch-to-switch cable.
    let cut: Vec<_> = deg
        .links()
        .filter(|(_, l)| {
            deg.node(l.a.node)
                .is_some_and(ibsm_topology::Node::is_switch)
                && deg
                    .node(l.b.node)
                    .is_some_and(ibsm_topology::Node::is_switch)
        })
        .map(|(id, _)| id)
        .step_by(9)
        .collect();
    for id in cut {
        deg.remove_link(id).unwrap();
    }
    v.push(("ft8x3-degraded", deg));
    v
}

fn is_full_fat_tree(name: &str) -> bool {
    name.starts_with('k') || (name.starts_with("ft") && !name.contains("degraded"))
}

#[test]
fn engine_matrix() {
    for (name, f) in fabrics() {
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        for kind in EngineKind::ALL {
            let res = kind.engine().route(&csr, &lids, &Options::default());
            let r = match (kind, res) {
                (_, Ok(r)) => r,
                // DOR needs a grid.
                (EngineKind::Dor, Err(RoutingError::NoCoordinates(_))) => continue,
                (k, Err(e)) => panic!("{name}: {} failed: {e}", k.name()),
            };
            assert_eq!(r.engine(), kind.name());
            check_reachability(&csr, &lids, &r)
                .unwrap()
                .unwrap_or_else(|e| panic!("{name} {}: {e}", kind.name()));
            let cdg = check_deadlock_free(&csr, &lids, &r).unwrap();
            if kind.deadlock_free() {
                cdg.unwrap_or_else(|c| panic!("{name} {}: cycle {c:?}", kind.name()));
            }
            let q = metrics::all_to_all(&csr, &lids, &r).unwrap();
            if is_full_fat_tree(name) {
                assert!(
                    q.imbalance() <= 1.15,
                    "{name} {}: imbalance {}",
                    kind.name(),
                    q.imbalance()
                );
                assert!(q.minimal_fraction == 1.0, "{name} {}: {q:?}", kind.name());
                assert_eq!(r.vls_used(), 1, "{name} {}", kind.name());
            }
        }
    }
}

#[test]
fn ftree_is_optimal_for_shift_permutations() {
    for (name, f) in fabrics() {
        if !is_full_fat_tree(name) {
            continue;
        }
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let r = FatTree.route(&csr, &lids, &Options::default()).unwrap();
        let n = csr.terminal_count();
        let loads = metrics::shift_max_loads(&csr, &lids, &r, 1..n).unwrap();
        assert!(loads.iter().all(|&x| x == 1), "{name}: {loads:?}");
    }
}

#[test]
fn lmc_paths_and_fallback_chain() {
    let f = generate::fat_tree(8, 2).unwrap();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 2).unwrap();
    for kind in [
        EngineKind::MinHop,
        EngineKind::UpDn,
        EngineKind::FatTree,
        EngineKind::Dfsssp,
    ] {
        let r = kind
            .engine()
            .route(&csr, &lids, &Options::default())
            .unwrap();
        check_reachability(&csr, &lids, &r).unwrap().unwrap();
        check_deadlock_free(&csr, &lids, &r).unwrap().unwrap();
    }
    // ftree refuses a fabric with a cable inside a rank; the chain says who routed.
    let mut f = generate::xgft(&generate::Xgft {
        m: vec![4, 8],
        w: vec![1, 4],
        radix: Some(12),
    })
    .unwrap();
    let leaves: Vec<_> = f
        .switches()
        .filter(|(_, n)| n.description.contains("L1"))
        .map(|(id, _)| id)
        .take(2)
        .collect();
    let free = |f: &Fabric, id| {
        (1..=f.node(id).unwrap().num_ports()).find(|&p| f.port_peer(id, p).is_none())
    };
    {
        let (pa, pb) = (free(&f, leaves[0]).unwrap(), free(&f, leaves[1]).unwrap());
        f.connect(leaves[0], pa, leaves[1], pb).unwrap();
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        assert!(matches!(
            FatTree.route(&csr, &lids, &Options::default()),
            Err(RoutingError::NotAFatTree(_))
        ));
        let opts = Options::default().with_fallback(vec![EngineKind::UpDn]);
        let r = route_with_fallback(&FatTree, &csr, &lids, &opts).unwrap();
        assert_eq!(r.engine(), "updn");
        check_deadlock_free(&csr, &lids, &r).unwrap().unwrap();
        // A chain where everything fails lists every failure.
        let opts = Options::default().with_fallback(vec![EngineKind::Dor]);
        assert!(matches!(
            route_with_fallback(&FatTree, &csr, &lids, &opts),
            Err(RoutingError::AllFailed(v)) if v.len() == 2
        ));
    }
}
