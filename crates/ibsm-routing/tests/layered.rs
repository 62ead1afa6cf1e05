//! Virtual-lane budgets of the deadlock-free engines on the generator topologies: DOR and
//! LASH on tori (2 VLs, LASH within 5% of DOR's effective bisection bandwidth), DFSSSP and
//! LASH on random and dragonfly fabrics (at most the switch-graph diameter).

use ibsm_routing::*;
use ibsm_topology::{Csr, Fabric, generate};

mod common;
use common::grid;

fn dragonfly() -> Fabric {
    generate::dragonfly(&generate::Dragonfly {
        a: 4,
        p: 2,
        h: 2,
        g: 9,
        arrangement: generate::GlobalArrangement::default(),
    })
    .unwrap()
}

fn jellyfish(seed: u64) -> Fabric {
    generate::jellyfish(&generate::Jellyfish {
        switches: 40,
        radix: 8,
        network_ports: 5,
        seed,
    })
    .unwrap()
}

fn diameter(csr: &Csr) -> u16 {
    (0..csr.switch_count() as u32)
        .map(|s| csr.hops_from(s).into_iter().max().unwrap_or(0))
        .max()
        .unwrap_or(0)
}

/// Routes with `kind`, checks reachability and the CDG, returns the routes.
fn routed(name: &str, csr: &Csr, lids: &LidAssignment, kind: EngineKind) -> Routes {
    let r = kind
        .engine()
        .route(csr, lids, &RouteOptions::default())
        .unwrap_or_else(|e| panic!("{name} {}: {e}", kind.name()));
    check_reachability(csr, lids, &r)
        .unwrap()
        .unwrap_or_else(|e| panic!("{name} {}: {e}", kind.name()));
    check_deadlock_free(csr, lids, &r)
        .unwrap()
        .unwrap_or_else(|c| panic!("{name} {}: cycle {c:?}", kind.name()));
    r
}

#[test]
fn lash_and_dor_use_two_vls_on_tori_and_lash_keeps_dor_bandwidth() {
    for (dims, cas) in [
        (vec![6u32, 5], 2),
        (vec![4, 4, 3], 2),
        (vec![8, 8, 4], 1),
        (vec![7], 2),
        (vec![4, 3, 2], 2),
    ] {
        let f = grid(&dims, true, cas);
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let name = format!("torus {dims:?}");
        let dor = routed(&name, &csr, &lids, EngineKind::Dor);
        let lash = routed(&name, &csr, &lids, EngineKind::Lash);
        assert_eq!(dor.vls_used(), 2, "{name} dor");
        assert!(lash.vls_used() <= 2, "{name}: lash {} VLs", lash.vls_used());
        let e_dor = metrics::effective_bisection_bandwidth(&csr, &lids, &dor, 20, 1).unwrap();
        let e_lash = metrics::effective_bisection_bandwidth(&csr, &lids, &lash, 20, 1).unwrap();
        eprintln!("{name}: eBB dor {e_dor:.3} lash {e_lash:.3}");
        assert!(
            e_lash >= 0.95 * e_dor,
            "{name}: lash {e_lash} < dor {e_dor}"
        );
        // Both take shortest paths.
        let q = metrics::all_to_all(&csr, &lids, &lash).unwrap();
        assert!(q.minimal_fraction == 1.0, "{name}: {q:?}");
    }
}

#[test]
fn lash_on_a_torus_gives_lmc_siblings_both_ways_round() {
    // 4x4 torus: a destination two hops away in x is half way round; the two LIDs of an
    // LMC-1 port leave by different ports there, and everything stays deadlock-free.
    let f = grid(&[4, 4], true, 1);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 1).unwrap();
    let r = routed("4x4 lmc1", &csr, &lids, EngineKind::Lash);
    assert!(r.vls_used() <= 2);
    let mut split = 0;
    for s in 0..csr.switch_count() {
        for t in 0..csr.terminal_count() {
            let (base, _) = lids.terminal_lid(t);
            if r.port(s, base) != r.port(s, base + 1) {
                split += 1;
            }
        }
    }
    assert!(split > 0, "LMC siblings always share the first hop");
}

#[test]
fn meshes_need_one_vl() {
    for dims in [vec![4u32, 4, 2], vec![5, 3]] {
        let f = grid(&dims, false, 2);
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        for kind in [EngineKind::Dor, EngineKind::Lash, EngineKind::Dfsssp] {
            let r = routed(&format!("mesh {dims:?}"), &csr, &lids, kind);
            assert_eq!(r.vls_used(), 1, "mesh {dims:?} {}", kind.name());
        }
    }
}

#[test]
fn layered_engines_stay_within_the_diameter() {
    // (fabric, most VLs for dfsssp, for lash): what the layer-aware placement reaches
    // (layering fixed paths first fit needed dfsssp 3 on torus6x5, lash 3 on the
    // dragonfly and 4 on the Jellyfish), and never more than the diameter.
    let fabrics = vec![
        ("mesh4x4x2", grid(&[4, 4, 2], false, 2), 1, 1),
        ("torus6x5", grid(&[6, 5], true, 2), 2, 2),
        ("torus4x4x3", grid(&[4, 4, 3], true, 2), 1, 2),
        ("dragonfly", dragonfly(), 2, 2),
        ("jellyfish3", jellyfish(3), 3, 3),
        ("jellyfish1", jellyfish(1), 3, 3),
    ];
    for (name, f, most_dfsssp, most_lash) in fabrics {
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let d = diameter(&csr);
        for (kind, most) in [
            (EngineKind::Dfsssp, most_dfsssp),
            (EngineKind::Lash, most_lash),
        ] {
            let r = routed(name, &csr, &lids, kind);
            eprintln!("{name}: {} {} VLs, diameter {d}", kind.name(), r.vls_used());
            assert!(
                u16::from(r.vls_used()) <= d,
                "{name} {}: {} VLs > diameter {d}",
                kind.name(),
                r.vls_used()
            );
            assert!(
                r.vls_used() <= most,
                "{name} {}: {} VLs, expected at most {most}",
                kind.name(),
                r.vls_used()
            );
        }
    }
}

#[test]
fn layered_engines_with_lmc_and_few_vls() {
    // LMC 1 on a Jellyfish: siblings are separate units; everything stays deadlock-free.
    let f = jellyfish(2);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 1).unwrap();
    for kind in [EngineKind::Dfsssp, EngineKind::Lash] {
        let r = routed("jellyfish2 lmc1", &csr, &lids, kind);
        assert!(r.vls_used() <= 4, "{}: {} VLs", kind.name(), r.vls_used());
        // Too few VLs is an error that says how many were needed, never a silent cycle.
        let opts = RouteOptions::default().with_max_vls(1);
        match kind.engine().route(&csr, &lids, &opts) {
            Err(RoutingError::NotEnoughVls { needed, available }) => {
                assert_eq!(available, 1);
                assert!(needed >= 2);
            }
            other => panic!("{}: {other:?}", kind.name()),
        }
    }
}

#[test]
fn dfsssp_adapts_its_paths_to_few_layers_on_tori() {
    // A constant layer per fixed shortest path needed 3 / 1 / 7 layers here; choosing
    // among the shortest hops by layer needs 2 / 1 / 4.
    for (dims, most) in [(vec![6u32, 5], 2), (vec![4, 4, 3], 1), (vec![8, 8, 4], 4)] {
        let f = grid(&dims, true, 1);
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let name = format!("torus {dims:?}");
        let r = routed(&name, &csr, &lids, EngineKind::Dfsssp);
        eprintln!("{name}: dfsssp {} VLs", r.vls_used());
        assert!(r.vls_used() <= most, "{name}: {} VLs", r.vls_used());
        let q = metrics::all_to_all(&csr, &lids, &r).unwrap();
        assert!(q.minimal_fraction == 1.0, "{name}: {q:?}");
    }
}

mod random {
    use super::*;
    use proptest::prelude::*;

    fn check(f: &Fabric, lmc: u8) -> Result<(), TestCaseError> {
        let csr = Csr::new(f);
        let lids = LidAssignment::sequential(&csr, lmc).unwrap();
        let connected = csr
            .hops_from(0)
            .iter()
            .all(|&h| h != ibsm_topology::csr::UNREACHABLE);
        let d = diameter(&csr);
        for kind in [EngineKind::Dfsssp, EngineKind::Lash] {
            let r = match kind.engine().route(&csr, &lids, &RouteOptions::default()) {
                Ok(r) => r,
                // A random graph may come out disconnected; that must be the error.
                Err(RoutingError::Disconnected { .. }) if !connected => continue,
                // A random graph may need more than 8 layers; the error must say so.
                Err(RoutingError::NotEnoughVls { needed, available }) => {
                    prop_assert!(needed > available);
                    continue;
                }
                Err(e) => return Err(TestCaseError::fail(format!("{}: {e}", kind.name()))),
            };
            let reach = check_reachability(&csr, &lids, &r).unwrap();
            prop_assert!(reach.is_ok(), "{}: {:?}", kind.name(), reach);
            let cdg = check_deadlock_free(&csr, &lids, &r).unwrap();
            prop_assert!(cdg.is_ok(), "{}: {:?}", kind.name(), cdg);
            let q = metrics::all_to_all(&csr, &lids, &r).unwrap();
            prop_assert!(q.minimal_fraction == 1.0, "{}: {q:?}", kind.name());
            prop_assert!(
                u16::from(r.vls_used()) <= d.max(1),
                "{}: {} VLs, diameter {d}",
                kind.name(),
                r.vls_used()
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn layered_engines_on_random_jellyfish(
            switches in 6u32..36,
            net_ports in 3u8..6,
            seed in any::<u64>(),
            lmc in 0u8..2,
        ) {
            let f = generate::jellyfish(&generate::Jellyfish {
                switches,
                radix: net_ports + 2,
                network_ports: net_ports,
                seed,
            });
            // Some (switches, degree) pairs have no regular graph.
            if let Ok(f) = f {
                check(&f, lmc)?;
            }
        }

        #[test]
        fn layered_engines_on_degraded_tori(
            x in 3u32..7,
            y in 3u32..6,
            cut in 0.0f64..0.3,
            seed in any::<u64>(),
        ) {
            let mut f = grid(&[x, y], true, 1);
            generate::degrade(&mut f, cut, seed).unwrap();
            check(&f, 0)?;
        }
    }
}

#[test]
fn layered_engines_on_degraded_fat_trees() {
    // 10% of the cables of a radix-8 3-level tree gone: up/down shortest paths no longer
    // exist for every pair, so one layer rarely suffices; spines carry no CAs, so only
    // paths from leaves count.
    let mut worst = 0;
    for seed in 1..=6 {
        let mut f = generate::fat_tree(8, 3).unwrap();
        generate::degrade(&mut f, 0.1, seed).unwrap();
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let d = diameter(&csr);
        for kind in [EngineKind::Dfsssp, EngineKind::Lash] {
            let r = routed(&format!("ft8x3 seed {seed}"), &csr, &lids, kind);
            eprintln!(
                "seed {seed}: {} {} VLs, diameter {d}",
                kind.name(),
                r.vls_used()
            );
            assert!(u16::from(r.vls_used()) <= d);
            worst = worst.max(r.vls_used());
        }
    }
    assert!(worst <= 3, "{worst} VLs");
}
