//! Every engine on every generator topology, checked by the validators and metrics.

use ibsm_routing::*;
use ibsm_topology::{Csr, Fabric, generate};

mod common;
use common::xgft;

fn fabrics() -> Vec<(&'static str, Fabric)> {
    let grid = |dims: &[u32], torus| common::grid(dims, torus, 2);
    let deg = common::degraded_ft8x3();
    vec![
        ("k4n3", generate::k_ary_n_tree(4, 3).unwrap()),
        ("ft12x2", generate::fat_tree(12, 2).unwrap()),
        ("ft8x3", generate::fat_tree(8, 3).unwrap()),
        ("ft8x3-degraded", deg),
        ("mesh4x4x2", grid(&[4, 4, 2], false)),
        ("torus6x5", grid(&[6, 5], true)),
        ("torus4x4x3", grid(&[4, 4, 3], true)),
        (
            "dragonfly",
            generate::dragonfly(&generate::Dragonfly {
                a: 4,
                p: 2,
                h: 2,
                g: 9,
                arrangement: generate::GlobalArrangement::default(),
            })
            .unwrap(),
        ),
        (
            "jellyfish",
            generate::jellyfish(&generate::Jellyfish {
                switches: 40,
                radix: 8,
                network_ports: 5,
                seed: 3,
            })
            .unwrap(),
        ),
    ]
}

/// Switch-graph diameter.
fn diameter(csr: &Csr) -> u16 {
    (0..csr.switch_count() as u32)
        .map(|s| csr.hops_from(s).into_iter().max().unwrap_or(0))
        .max()
        .unwrap_or(0)
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
            let res = kind.engine().route(&csr, &lids, &RouteOptions::default());
            let tree = name.starts_with('k') || name.starts_with("ft");
            let grid = name.starts_with("mesh") || name.starts_with("torus");
            let r = match (kind, res) {
                (_, Ok(r)) => r,
                // Down*/Up* has no complete order outside trees; it must say so.
                (EngineKind::DnUp, Err(RoutingError::Disconnected { .. })) if !tree => {
                    eprintln!("{name}: dnup has no down/up path for some pair");
                    continue;
                }
                // DOR needs a grid, ftree a tree: both must say so.
                (EngineKind::Dor, Err(RoutingError::NoCoordinates(_))) if !grid => continue,
                (EngineKind::FatTree, Err(RoutingError::NotAFatTree(_))) if !tree => continue,
                (k, Err(e)) => panic!("{name}: {} failed: {e}", k.name()),
            };
            if kind == EngineKind::Dfsssp && !tree {
                let d = diameter(&csr);
                eprintln!("{name}: dfsssp {} VLs, diameter {d}", r.vls_used());
                if !grid {
                    assert!(
                        u16::from(r.vls_used()) <= d,
                        "{name}: {} VLs > diameter {d}",
                        r.vls_used()
                    );
                }
            }
            if grid && kind == EngineKind::Dor {
                assert!(
                    r.vls_used() <= 2,
                    "{name} {}: {} VLs",
                    kind.name(),
                    r.vls_used()
                );
            }
            if grid && kind == EngineKind::Lash {
                // Per-dimension layers on tori (tests/layered.rs checks more).
                assert!(
                    r.vls_used() <= 2,
                    "{name} {}: {} VLs",
                    kind.name(),
                    r.vls_used()
                );
            }
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

/// Threads only plan ahead; placement runs in one fixed order, so the tables (and so the
/// link loads) must not depend on the thread count: byte-identical LFTs and SLs.
#[test]
fn thread_count_does_not_change_routes() {
    let mut fabs = fabrics();
    fabs.push(("ft16x3", generate::fat_tree(16, 3).unwrap()));
    for (name, f) in &fabs {
        let csr = Csr::new(f);
        for lmc in [0, 1] {
            let lids = LidAssignment::sequential(&csr, lmc).unwrap();
            for kind in [
                EngineKind::MinHop,
                EngineKind::UpDn,
                EngineKind::DnUp,
                EngineKind::FatTree,
                EngineKind::Dfsssp,
            ] {
                let eng = kind.engine();
                let Ok(one) = eng.route(&csr, &lids, &RouteOptions::default()) else {
                    continue;
                };
                let q1 = metrics::all_to_all(&csr, &lids, &one).unwrap();
                for threads in [2, 3, 4] {
                    let opts = RouteOptions::default().with_threads(threads);
                    let many = eng.route(&csr, &lids, &opts).unwrap();
                    assert!(
                        one == many,
                        "{name} lmc {lmc} {}: {threads} threads changed {} LFT entries",
                        kind.name(),
                        many.changed_entries(&one)
                    );
                    let q = metrics::all_to_all(&csr, &lids, &many).unwrap();
                    assert_eq!(q.max_load, q1.max_load);
                }
            }
        }
    }
}

/// Switch LIDs (management traffic, no CA flow) are balanced by count: on full fat trees
/// the up/down engines spread them over a switch's interchangeable ports (its up ports,
/// its down ports) within one or two LIDs, and on a degraded tree within a few; the CA
/// link loads stay those of the d-mod-k balance.
#[test]
fn updown_engines_balance_switch_lids() {
    let deg = common::degraded_ft8x3();
    let fabs = [
        ("ft16x3", generate::fat_tree(16, 3).unwrap(), 2),
        ("k4n3", generate::k_ary_n_tree(4, 3).unwrap(), 2),
        // The 11k tree XGFT(3;18,18,36;1,18,18) at small size.
        ("xgft-3.3.6", xgft(&[3, 3, 6], &[1, 3, 3]), 2),
        ("xgft-4.4.8", xgft(&[4, 4, 8], &[1, 4, 4]), 2),
        ("ft8x3-degraded", deg, 8),
    ];
    for (name, f, bound) in &fabs {
        let csr = Csr::new(f);
        for lmc in [0, 1] {
            let lids = LidAssignment::sequential(&csr, lmc).unwrap();
            for kind in [EngineKind::UpDn, EngineKind::FatTree] {
                let r = kind
                    .engine()
                    .route(&csr, &lids, &RouteOptions::default())
                    .unwrap();
                let b = metrics::switch_lid_balance(&csr, &lids, &r).unwrap();
                assert!(
                    b.max_spread <= *bound,
                    "{name} lmc {lmc} {}: switch-LID spread {} > {bound} ({b:?})",
                    kind.name(),
                    b.max_spread
                );
                assert!(
                    b.worst_ratio < 1.5,
                    "{name} lmc {lmc} {}: {b:?}",
                    kind.name()
                );
            }
        }
    }
}

/// Re-routing after a failure is deterministic too, whatever the thread count.
#[test]
fn reroute_is_thread_independent() {
    let f = generate::fat_tree(8, 3).unwrap();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let mut cut = f.clone();
    let port = csr.neighbours(0).next().unwrap().1;
    cut.disconnect(csr.switch_node[0], port).unwrap();
    let csr2 = Csr::new(&cut);
    for kind in [EngineKind::MinHop, EngineKind::UpDn, EngineKind::FatTree] {
        let eng = kind.engine();
        let before = eng.route(&csr, &lids, &RouteOptions::default()).unwrap();
        let one = eng
            .reroute(&csr2, &lids, &RouteOptions::default(), &before)
            .unwrap();
        assert!(check_reachability(&csr2, &lids, &one).unwrap().is_ok());
        assert!(one.changed_entries(&before) > 0);
        for threads in [2, 4] {
            let opts = RouteOptions::default().with_threads(threads);
            let many = eng.reroute(&csr2, &lids, &opts, &before).unwrap();
            assert!(one == many, "{}: {threads} threads", kind.name());
        }
    }
}

/// One failed cable at a time (several per fabric): the re-routed tables reach every
/// LID, stay deadlock-free for the deadlock-free engines (minimal for minhop), and only
/// change columns of LIDs whose previous routes used the cable.
#[test]
fn reroute_changes_only_routes_over_the_failed_link() {
    let fabs: Vec<_> = fabrics()
        .into_iter()
        .filter(|(n, _)| ["ft8x3", "ft8x3-degraded", "jellyfish", "torus6x5"].contains(n))
        .collect();
    let mut checked = 0;
    for (name, f) in &fabs {
        let csr = Csr::new(f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let n = csr.switch_count() as u32;
        for kind in [EngineKind::MinHop, EngineKind::UpDn, EngineKind::FatTree] {
            let eng = kind.engine();
            let Ok(before) = eng.route(&csr, &lids, &RouteOptions::default()) else {
                continue;
            };
            for sw in [0, n / 3, n / 2, n - 1] {
                // Its last switch-to-switch cable.
                let Some((peer, port)) = csr.neighbours(sw).last() else {
                    continue;
                };
                let peer_port = csr
                    .ports_of(peer)
                    .find(|&(_, tgt, rp)| tgt.as_switch() == Some(sw) && rp == port)
                    .map(|(p, ..)| p)
                    .unwrap();
                let mut cut = f.clone();
                cut.disconnect(csr.switch_node[sw as usize], port).unwrap();
                let csr2 = Csr::new(&cut);
                let Ok(after) = eng.reroute(&csr2, &lids, &RouteOptions::default(), &before) else {
                    // Only acceptable when a full route fails too (e.g. a cut tree).
                    assert!(eng.route(&csr2, &lids, &RouteOptions::default()).is_err());
                    continue;
                };
                let what = format!("{name} {} cut {sw}:{port}", kind.name());
                check_reachability(&csr2, &lids, &after)
                    .unwrap()
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                if kind != EngineKind::MinHop {
                    check_deadlock_free(&csr2, &lids, &after)
                        .unwrap()
                        .unwrap_or_else(|c| panic!("{what}: cycle {c:?}"));
                } else {
                    let q = metrics::all_to_all(&csr2, &lids, &after).unwrap();
                    assert!(q.minimal_fraction == 1.0, "{what}: {q:?}");
                }
                // LIDs whose old routes used the cable, in either direction.
                let used = |l: usize| {
                    before.lft(sw as usize)[l] == port || before.lft(peer as usize)[l] == peer_port
                };
                for s in 0..csr.switch_count() {
                    for (l, (a, b)) in before.lft(s).iter().zip(after.lft(s)).enumerate() {
                        assert!(a == b || used(l), "{what}: switch {s} LID {l} changed");
                    }
                }
                assert!(
                    after.changed_entries(&before) > 0 || (0..before.lft_len()).all(|l| !used(l))
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 30, "{checked} cases");
}

#[test]
fn ftree_is_optimal_for_shift_permutations() {
    for (name, f) in fabrics() {
        if !is_full_fat_tree(name) {
            continue;
        }
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let r = FatTree
            .route(&csr, &lids, &RouteOptions::default())
            .unwrap();
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
            .route(&csr, &lids, &RouteOptions::default())
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
            FatTree.route(&csr, &lids, &RouteOptions::default()),
            Err(RoutingError::NotAFatTree(_))
        ));
        let opts = RouteOptions::default().with_fallback(vec![EngineKind::UpDn]);
        let r = route_with_fallback(&FatTree, &csr, &lids, &opts).unwrap();
        assert_eq!(r.engine(), "updn");
        check_deadlock_free(&csr, &lids, &r).unwrap().unwrap();
        // A chain where everything fails lists every failure.
        let opts = RouteOptions::default().with_fallback(vec![EngineKind::Dor]);
        assert!(matches!(
            route_with_fallback(&FatTree, &csr, &lids, &opts),
            Err(RoutingError::AllFailed(v)) if v.len() == 2
        ));
    }
}

/// Issue #6's quality target holds under LMC: primary traffic uses the base LIDs, which
/// on full fat trees get exactly the all-to-all loads of LMC 0 (max / mean <= 1.15), while
/// LMC siblings still leave by a different port wherever a switch has a choice.
#[test]
fn lmc_keeps_base_lids_balanced_on_fat_trees() {
    let fabs = [
        ("k4n3", generate::k_ary_n_tree(4, 3).unwrap()),
        ("ft16x3", generate::fat_tree(16, 3).unwrap()),
        ("xgft-3.3.6", xgft(&[3, 3, 6], &[1, 3, 3])),
        ("xgft-4.4.8", xgft(&[4, 4, 8], &[1, 4, 4])),
    ];
    for (name, f) in &fabs {
        let csr = Csr::new(f);
        for kind in [
            EngineKind::MinHop,
            EngineKind::UpDn,
            EngineKind::DnUp,
            EngineKind::FatTree,
            EngineKind::Dfsssp,
        ] {
            let route = |lmc| {
                let lids = LidAssignment::sequential(&csr, lmc).unwrap();
                let r = kind
                    .engine()
                    .route(&csr, &lids, &RouteOptions::default())
                    .unwrap();
                (lids, r)
            };
            let (lids0, r0) = route(0);
            let base = metrics::all_to_all(&csr, &lids0, &r0).unwrap();
            assert!(base.imbalance() <= 1.15, "{name} {kind:?} LMC 0: {base:?}");
            for lmc in [1u8, 2] {
                let (lids, r) = route(lmc);
                let q = metrics::all_to_all(&csr, &lids, &r).unwrap();
                assert!(
                    q.imbalance() <= 1.15 && q.max_load == base.max_load,
                    "{name} {kind:?} LMC {lmc}: max load {} imbalance {:.4} (LMC 0: {} {:.4})",
                    q.max_load,
                    q.imbalance(),
                    base.max_load,
                    base.imbalance()
                );
                let d = metrics::lmc_diversity(&csr, &lids, &r).unwrap();
                assert!(d.choice_pairs > 0, "{name} {kind:?} LMC {lmc}");
                assert_eq!(
                    d.distinct_first_hops, d.choice_pairs,
                    "{name} {kind:?} LMC {lmc}: siblings sharing a first hop"
                );
            }
        }
    }
}

#[test]
fn lash_on_tori_matches_dor_bandwidth() {
    for dims in [vec![6u32, 5], vec![4, 4, 3]] {
        let f = generate::grid(&generate::Grid {
            dims: dims.clone(),
            torus: true,
            cas_per_switch: 2,
        })
        .unwrap();
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let dor = Dor.route(&csr, &lids, &RouteOptions::default()).unwrap();
        let lash = Lash.route(&csr, &lids, &RouteOptions::default()).unwrap();
        let e_dor = metrics::effective_bisection_bandwidth(&csr, &lids, &dor, 20, 1).unwrap();
        let e_lash = metrics::effective_bisection_bandwidth(&csr, &lids, &lash, 20, 1).unwrap();
        eprintln!(
            "torus {dims:?}: eBB dor {e_dor:.3} lash {e_lash:.3}, VLs dor {} lash {}",
            dor.vls_used(),
            lash.vls_used()
        );
        assert!(
            e_lash >= 0.95 * e_dor,
            "{dims:?}: lash {e_lash} vs dor {e_dor}"
        );
    }
}

/// Writes routes in OpenSM's `opensm-lfts.dump` layout.
fn opensm_dump(csr: &Csr, lids: &LidAssignment, r: &Routes) -> String {
    let mut owner = std::collections::HashMap::new();
    for s in 0..csr.switch_count() {
        owner.insert(lids.switch_lid(s), ("Switch", csr.switch_guid[s]));
    }
    for t in 0..csr.terminal_count() {
        owner.insert(
            lids.terminal_lid(t).0,
            ("Channel Adapter", csr.term_guid[t]),
        );
    }
    let mut out = String::new();
    for s in 0..csr.switch_count() {
        out += &format!(
            "Unicast lids [0-{}] of switch Lid {} guid {:#018x} ('sw'):\n",
            r.lft_len() - 1,
            lids.switch_lid(s),
            csr.switch_guid[s].0
        );
        for lid in 1..r.lft_len() as u16 {
            let (kind, g) = owner[&lid];
            out += &format!(
                "0x{lid:04x} {:03} # {kind} portguid {:#018x}: 'x'\n",
                r.port(s, lid),
                g.0
            );
        }
        out += &format!("{} lids dumped\n", r.lft_len() - 1);
    }
    out
}

#[test]
fn opensm_dump_round_trip_and_errors() {
    let f = generate::k_ary_n_tree(2, 3).unwrap();
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let r = MinHop.route(&csr, &lids, &RouteOptions::default()).unwrap();
    let text = opensm_dump(&csr, &lids, &r);
    let (back, back_lids) = read_opensm_lfts(&text, &csr).unwrap();
    assert_eq!(back_lids, lids);
    for s in 0..csr.switch_count() {
        assert_eq!(back.lft(s), r.lft(s));
    }
    let bad = text.replacen(
        &format!("{:#018x} ('sw')", csr.switch_guid[1].0),
        "0x00000000deadbeef ('sw')",
        1,
    );
    let e = read_opensm_lfts(&bad, &csr).unwrap_err();
    assert!(e.line > 1 && e.message.contains("not in the fabric"), "{e}");
    let bad = text.replacen("0x0001 000", "0x0001 099", 1);
    assert_eq!(read_opensm_lfts(&bad, &csr).unwrap_err().line, 2);
}
