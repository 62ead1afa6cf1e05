use super::*;

fn counts(f: &Fabric) -> (usize, usize, usize) {
    (f.switch_count(), f.cas().count(), f.link_count())
}

#[test]
fn spine_storage_hangs_storage_off_its_spines() {
    let p = SpineStorage {
        leaves: 3,
        spines: 2,
        cas_per_leaf: 2,
        storage: vec![1, 1, 0],
        missing: vec![(2, 0)],
    };
    let f = spine_storage(&p).unwrap();
    // 5 switches, 6 compute + 3 storage CAs, 5 leaf-spine cables + 9 CA cables.
    assert_eq!(counts(&f), (5, 9, 14));
    assert!(f.is_connected());
    let node = |kind, group, i| f.node_by_guid(scheme_guid(kind, group, i)).unwrap();
    let spine1 = node(KIND_SWITCH, 2, 1);
    assert_eq!(f.node(spine1).unwrap().num_ports(), 5);
    // Spine 1's storage CAs on ports 4 and 5, spine 0's on 4; compute CA 5 on
    // leaf 2 port 2; leaf 2 has no cable to spine 0 (its port 3).
    let peer = |n, p| {
        f.port_peer(n, p)
            .map(|e| (f.node(e.node).unwrap().guid(), e.port))
    };
    assert_eq!(peer(spine1, 4), Some((scheme_guid(KIND_CA, 0, 6), 1)));
    assert_eq!(peer(spine1, 5), Some((scheme_guid(KIND_CA, 0, 7), 1)));
    let spine0 = node(KIND_SWITCH, 2, 0);
    assert_eq!(peer(spine0, 4), Some((scheme_guid(KIND_CA, 0, 8), 1)));
    let leaf2 = node(KIND_SWITCH, 1, 2);
    assert_eq!(peer(leaf2, 2), Some((scheme_guid(KIND_CA, 0, 5), 1)));
    assert_eq!(peer(leaf2, 3), None);
    assert_eq!(peer(leaf2, 4), Some((scheme_guid(KIND_SWITCH, 2, 1), 3)));
    assert_eq!(
        f.node(node(KIND_CA, 0, 7)).unwrap().description,
        "spine-storage io 1"
    );
    for bad in [
        SpineStorage {
            storage: vec![2],
            ..p.clone()
        },
        SpineStorage {
            missing: vec![(3, 0)],
            ..p.clone()
        },
        SpineStorage {
            spines: 0,
            storage: Vec::new(),
            missing: Vec::new(),
            ..p.clone()
        },
    ] {
        assert!(matches!(
            spine_storage(&bad),
            Err(FabricError::BadParameters(_))
        ));
    }
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

#[test]
fn mesh_and_torus() {
    let m = grid(&Grid {
        dims: vec![4, 3],
        torus: false,
        cas_per_switch: 2,
    })
    .unwrap();
    assert_eq!(m.switch_count(), 12);
    assert_eq!(m.cas().count(), 24);
    assert_eq!(m.link_count(), 24 + 3 * 3 + 4 * 2);
    assert!(m.is_connected());
    let csr = crate::Csr::new(&m);
    // Corner to corner: 3 + 2 hops.
    assert_eq!(csr.hops_from(0)[11], 5);
    let t = grid(&Grid {
        dims: vec![4, 3, 2],
        torus: true,
        cas_per_switch: 1,
    })
    .unwrap();
    assert_eq!(t.switch_count(), 24);
    // Every switch: 6 network cables (size-2 dimension gives 2 parallel ones).
    assert!(t.switches().all(|(_, n)| n.degree() == 7));
    let st = t.degree_stats();
    assert_eq!(st.parallel_pairs, 12);
    assert_eq!(st.max_parallel, 2);
    let csr = crate::Csr::new(&t);
    assert_eq!(*csr.hops_from(0).iter().max().unwrap(), 2 + 1 + 1);
    assert!(
        grid(&Grid {
            dims: vec![],
            torus: true,
            cas_per_switch: 1
        })
        .is_err()
    );
    assert!(
        grid(&Grid {
            dims: vec![2, 2, 2, 2],
            torus: true,
            cas_per_switch: 1
        })
        .is_err()
    );
}

#[test]
fn dragonfly_balanced() {
    for arrangement in [GlobalArrangement::Absolute, GlobalArrangement::Palmtree] {
        let p = Dragonfly {
            a: 4,
            p: 2,
            h: 2,
            g: 9,
            arrangement,
        };
        let f = dragonfly(&p).unwrap();
        assert_eq!(f.switch_count(), 36);
        assert_eq!(f.cas().count(), 72);
        // local: 9 * C(4,2) = 54; global: C(9,2) = 36; CA: 72.
        assert_eq!(f.link_count(), 54 + 36 + 72);
        assert!(f.switches().all(|(_, n)| n.degree() == 2 + 3 + 2));
        // Every pair of groups joined exactly once: diameter 3 router hops.
        let csr = crate::Csr::new(&f);
        let all = csr.all_hops();
        assert_eq!(*all.iter().max().unwrap(), 3);
        assert_eq!(f.degree_stats().parallel_pairs, 0);
    }
}

#[test]
fn dragonfly_fewer_groups() {
    let p = Dragonfly {
        a: 4,
        p: 1,
        h: 2,
        g: 5,
        arrangement: GlobalArrangement::Absolute,
    };
    let f = dragonfly(&p).unwrap();
    // 8 slots per group, 4 other groups: 2 cables per group pair.
    assert_eq!(f.link_count(), 5 * 6 + 10 * 2 + 20);
    assert!(f.is_connected());
    assert!(dragonfly(&Dragonfly { g: 10, ..p.clone() }).is_err());
}

#[test]
fn jellyfish_is_regular_and_seeded() {
    for seed in 0..5 {
        let p = Jellyfish {
            switches: 40,
            radix: 12,
            network_ports: 7,
            seed,
        };
        let f = jellyfish(&p).unwrap();
        assert_eq!(f.cas().count(), 200);
        let st = f.degree_stats();
        assert_eq!(st.parallel_pairs, 0);
        assert_eq!(st.switch_links.max, 7);
        // 40 * 7 is even: every network port is used.
        assert_eq!(st.switch_links.min, 7, "{st:?}");
        assert!(f.is_connected());
        let g = jellyfish(&p).unwrap();
        let la: Vec<_> = f
            .links()
            .map(|(_, l)| (f.guid_of(l.a.node), l.a.port, f.guid_of(l.b.node), l.b.port))
            .collect();
        let lb: Vec<_> = g
            .links()
            .map(|(_, l)| (g.guid_of(l.a.node), l.a.port, g.guid_of(l.b.node), l.b.port))
            .collect();
        assert_eq!(la, lb);
    }
    assert!(
        jellyfish(&Jellyfish {
            switches: 4,
            radix: 8,
            network_ports: 4,
            seed: 0
        })
        .is_err()
    );
    // Odd port total: exactly one network port stays free.
    let f = jellyfish(&Jellyfish {
        switches: 9,
        radix: 4,
        network_ports: 3,
        seed: 3,
    })
    .unwrap();
    let st = f.degree_stats();
    assert_eq!((st.switch_links.min, st.switch_links.max), (2, 3));
    assert_eq!(f.link_count() - 9, 13);
}

#[test]
fn degrade_keeps_connected() {
    let mut f = fat_tree(8, 3).unwrap();
    let before = f.link_count();
    let ss = before - f.cas().count();
    let removed = degrade(&mut f, 0.3, 7).unwrap();
    assert_eq!(removed, ss * 3 / 10);
    assert_eq!(f.link_count(), before - removed);
    assert!(f.is_connected());
    // Asking for everything removes only the non-tree cables.
    let mut g = fat_tree(8, 2).unwrap();
    let sw = g.switch_count();
    let removed = degrade(&mut g, 1.0, 1).unwrap();
    assert!(g.is_connected());
    assert_eq!(g.link_count(), g.cas().count() + sw - 1);
    assert!(removed > 0);
    // Without the guard it disconnects.
    let mut h = fat_tree(8, 2).unwrap();
    degrade_with(
        &mut h,
        1.0,
        1,
        DegradeOptions {
            keep_connected: false,
        },
    )
    .unwrap();
    assert!(!h.is_connected());
    assert!(degrade(&mut h, 1.5, 0).is_err());
    // Same seed, same result.
    let mut a = fat_tree(8, 3).unwrap();
    let mut b = fat_tree(8, 3).unwrap();
    degrade(&mut a, 0.2, 99).unwrap();
    degrade(&mut b, 0.2, 99).unwrap();
    assert_eq!(crate::Csr::new(&a), crate::Csr::new(&b));
}
