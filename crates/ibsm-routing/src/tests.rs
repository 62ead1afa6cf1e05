//! Unit tests on small hand-built fabrics (the generator matrix is in tests/engines.rs).

use crate::engine::RouteOptions;
use crate::net::testnets::{grid, ring, two_level};
use crate::net::{Net, NetInput};
use crate::routes::Routes;
use crate::validate::{RouteDefect, cdg_net, reach_net};

fn opts() -> RouteOptions {
    RouteOptions::default()
}

fn check_ok(net: &Net, r: &Routes) {
    reach_net(net, r).unwrap();
}

#[test]
fn minhop_on_ring_reaches_but_deadlocks() {
    let net = ring(6, 2);
    let r = crate::minhop::minhop_net(&net, &opts()).unwrap();
    check_ok(&net, &r);
    let cycle = cdg_net(&net, &r).unwrap_err();
    assert!(cycle.len() >= 3, "{cycle:?}");
    // The cycle is closed: each channel ends where the next starts.
    for w in 0..cycle.len() {
        let (a, b) = (cycle[w], cycle[(w + 1) % cycle.len()]);
        assert_eq!(a.remote_switch, b.switch);
    }
}

#[test]
fn updn_and_dnup_on_ring_are_deadlock_free() {
    let net = ring(7, 1);
    for rev in [false, true] {
        let r = crate::updn::updn_net(&net, &opts(), rev).unwrap();
        check_ok(&net, &r);
        cdg_net(&net, &r).unwrap();
    }
}

#[test]
fn layered_engines_break_ring_cycles() {
    for n in [5, 6, 8] {
        let net = ring(n, 2);
        for whole in [false, true] {
            let mut o = opts();
            o.max_vls = 4;
            let r = crate::layered::layered(&net, &o, "x", whole).unwrap();
            check_ok(&net, &r);
            let st = cdg_net(&net, &r).unwrap();
            assert!(
                r.vls_used() >= 2 && r.vls_used() <= 3,
                "ring {n}: {} VLs",
                r.vls_used()
            );
            assert!(st.vls <= r.vls_used());
        }
        let mut o = opts();
        o.max_vls = 1;
        assert!(matches!(
            crate::layered::layered(&net, &o, "x", true),
            Err(crate::RoutingError::NotEnoughVls { .. })
        ));
    }
}

#[test]
fn dor_on_mesh_and_torus() {
    let mesh = grid(4, 3, false);
    let r = crate::dor::dor_net(&mesh, &opts()).unwrap();
    check_ok(&mesh, &r);
    cdg_net(&mesh, &r).unwrap();
    assert_eq!(r.vls_used(), 1);
    assert!(!r.has_sls());
    for (w, h) in [(4, 4), (5, 3), (6, 5)] {
        let torus = grid(w, h, true);
        let r = crate::dor::dor_net(&torus, &opts()).unwrap();
        check_ok(&torus, &r);
        cdg_net(&torus, &r).unwrap();
        assert_eq!(r.vls_used(), 2);
        // Without the SL-to-VL tables the same LFTs deadlock.
        let mut bare = r.clone();
        bare.sl = None;
        bare.sl2vl = None;
        assert!(cdg_net(&torus, &bare).is_err(), "{w}x{h}");
    }
    let mut o = opts();
    o.max_vls = 1;
    assert!(crate::dor::dor_net(&grid(4, 4, true), &o).is_err());
    // A ring of switches with terminals on port 3 is a 1-D torus.
    let r = crate::dor::dor_net(&ring(6, 1), &opts()).unwrap();
    cdg_net(&ring(6, 1), &r).unwrap();
}

#[test]
fn dor_rejects_non_grids() {
    // Two-level fat tree: many cable classes that do not form a grid.
    assert!(crate::dor::dor_net(&two_level(4, 2, 2, 0), &opts()).is_err());
}

#[test]
fn ftree_on_two_level_is_shift_optimal_and_rejects_rings() {
    let net = two_level(6, 3, 3, 0);
    let r = crate::ftree::ftree_net(&net, &opts()).unwrap();
    check_ok(&net, &r);
    cdg_net(&net, &r).unwrap();
    assert!(matches!(
        crate::ftree::ftree_net(&ring(5, 1), &opts()),
        Err(crate::RoutingError::NotAFatTree(_))
    ));
}

#[test]
fn lmc_gives_different_up_ports() {
    // 4 up links per leaf, LMC 2: the 4 LIDs of a remote CA leave a leaf by 4 ports.
    let net = two_level(4, 4, 2, 2);
    for engine in ["minhop", "updn", "ftree"] {
        let r = match engine {
            "minhop" => crate::minhop::minhop_net(&net, &opts()).unwrap(),
            "updn" => crate::updn::updn_net(&net, &opts(), false).unwrap(),
            _ => crate::ftree::ftree_net(&net, &opts()).unwrap(),
        };
        check_ok(&net, &r);
        cdg_net(&net, &r).unwrap();
        for t in &net.terms {
            if t.sw == 0 {
                continue;
            }
            let mut ports: Vec<u8> = (0..4).map(|k| r.lft(0)[usize::from(t.base + k)]).collect();
            ports.sort_unstable();
            ports.dedup();
            assert_eq!(ports.len(), 4, "{engine}: LIDs of {t:?} share ports");
        }
    }
}

#[test]
fn validator_finds_loops_and_wrong_exits() {
    let net = two_level(3, 2, 2, 0);
    let good = crate::minhop::minhop_net(&net, &opts()).unwrap();
    let lid = usize::from(net.terms[0].base); // on leaf 0
    // Spine 3 and leaf 1 bounce the LID between them.
    let mut bad = good.clone();
    let spine = 3;
    let leaf1_port_to_spine = 2 + 1; // h + 1 + j with h = 2, j = 0
    bad.lft_mut(1)[lid] = leaf1_port_to_spine;
    bad.lft_mut(spine)[lid] = 2; // spine port 1 + leaf index 1
    assert!(matches!(
        reach_net(&net, &bad),
        Err(RouteDefect::Loop { .. })
    ));
    let mut bad = good.clone();
    bad.lft_mut(0)[lid] = 2; // the other CA's port
    assert!(matches!(
        reach_net(&net, &bad),
        Err(RouteDefect::WrongExit { .. })
    ));
    let mut bad = good;
    bad.lft_mut(2)[lid] = 255;
    assert!(matches!(
        reach_net(&net, &bad),
        Err(RouteDefect::NoRoute { .. })
    ));
}

#[test]
fn reroute_changes_only_affected_lids() {
    // Two-level tree; remove leaf 0's cable to spine 0 and re-route incrementally.
    let (l, u, h) = (6u32, 3u32, 3u8);
    let full = two_level(l, u, h, 0);
    let mut inp = NetInput {
        nports: full.nports.clone(),
        sw_lid: full.sw_lid.clone(),
        ..NetInput::default()
    };
    for a in 0..full.n_arcs() {
        let (s, x) = (full.asrc[a], full.adst[a]);
        if s < x && !(s == 0 && x == l) {
            inp.links.push((s, full.aport[a], x, full.arport[a]));
        }
    }
    inp.terms = full
        .terms
        .iter()
        .map(|t| (t.sw, t.port, t.base, t.lmc))
        .collect();
    let cut = Net::build(&inp).unwrap();
    for updown in [false, true] {
        let before = if updown {
            crate::updn::updn_net(&full, &opts(), false).unwrap()
        } else {
            crate::minhop::minhop_net(&full, &opts()).unwrap()
        };
        let pos;
        let by_pos;
        let rule = if updown {
            pos = before.updown_pos.clone().unwrap();
            by_pos = {
                let mut v = vec![0u32; pos.len()];
                for (s, &p) in pos.iter().enumerate() {
                    v[p as usize] = s as u32;
                }
                v
            };
            crate::balance::Rule::UpDown {
                pos: &pos,
                by_pos: &by_pos,
            }
        } else {
            crate::balance::Rule::MinHop
        };
        let after = crate::reroute::reroute_net(&cut, rule, &opts(), &before, "x").unwrap();
        check_ok(&cut, &after);
        cdg_net(&cut, &after).unwrap();
        // Every changed entry belongs to a LID whose old routes used the dead port.
        let dead_port = h + 1; // leaf 0 -> spine 0
        let spine_port = 1u8; // spine 0 -> leaf 0
        for lid in 1..cut.lft_len {
            let used = before.lft(0)[lid] == dead_port || before.lft(l as usize)[lid] == spine_port;
            let changed = (0..cut.n_sw).any(|s| before.lft(s)[lid] != after.lft(s)[lid]);
            assert!(!changed || used, "LID {lid} changed without using the link");
            if used {
                assert_ne!(after.lft(0)[lid], dead_port);
            }
        }
        assert!(after.changed_entries(&before) > 0);
    }
}

#[test]
fn placement_shortcuts_give_the_scans_tables() {
    // The rotation shortcuts (equal loads on a contiguous run, LMC siblings or not) must
    // reproduce the least-loaded scan byte for byte, including where siblings force a
    // second flow onto an arc (LMC 2 and 3 on runs that are not a multiple of 2^LMC).
    let nets = [
        two_level(6, 4, 3, 0),
        two_level(6, 4, 3, 1),
        two_level(5, 6, 4, 2),
        two_level(7, 5, 3, 2),
        two_level(4, 6, 2, 3),
        two_level(9, 3, 6, 1),
        grid(4, 3, true),
    ];
    for (i, net) in nets.iter().enumerate() {
        for updn in [false, true] {
            let route = || {
                if updn {
                    crate::updn::updn_net(net, &opts(), false).unwrap()
                } else {
                    crate::minhop::minhop_net(net, &opts()).unwrap()
                }
            };
            let fast = route();
            crate::balance::SCAN_ONLY.with(|c| c.set(true));
            let scan = route();
            crate::balance::SCAN_ONLY.with(|c| c.set(false));
            assert_eq!(fast.lfts, scan.lfts, "net {i} updn {updn}");
        }
    }
}

#[test]
fn deferred_switch_lid_plans_choose_the_hops_of_plans_with_counts() {
    // Switch-LID destinations of up/down rules: a plan made with the switch-LID counts
    // (the one placing thread's) and a plan made without, from which the placement
    // chooses with the counts of its own time (planned on other threads), must give
    // every switch the same hop, whatever the counts: legal hops, escapes next to the
    // BFS and escapes of the later passes, and ties broken in the order the BFS meets
    // the hops. Counts drawn small, so ties are frequent.
    use crate::balance::{Plan, Planner, Rule, Sides, least_used_hop};
    use ibsm_topology::{Csr, generate};
    let from = |f: ibsm_topology::Fabric| {
        let csr = Csr::new(&f);
        crate::lids::LidAssignment::sequential(&csr, 0)
            .unwrap()
            .net(&csr)
            .unwrap()
    };
    let mut degraded = generate::fat_tree(8, 3).unwrap();
    generate::degrade(&mut degraded, 0.1, 7).unwrap();
    // Two cables between every leaf and spine, crossed (the leaf's lower port goes to the
    // spine's higher one), so that the BFS meets parallel hops in the spine's port order,
    // not the leaf's.
    let doubled = {
        let (l, u) = (4u32, 3u32);
        let mut nports = vec![2 + 2 * u as u8; l as usize];
        nports.extend(std::iter::repeat_n(2 * l as u8, u as usize));
        let mut links = Vec::new();
        for i in 0..l {
            for j in 0..u {
                let (lp, sp) = (3 + 2 * j as u8, 1 + 2 * i as u8);
                links.push((i, lp, l + j, sp + 1));
                links.push((i, lp + 1, l + j, sp));
            }
        }
        let terms = (0..l).flat_map(|s| [(s, 1), (s, 2)]).collect();
        crate::net::testnets::finish(nports, links, terms, 0)
    };
    let nets = [
        doubled,
        two_level(6, 4, 3, 0),
        grid(5, 4, true),
        grid(4, 3, false),
        ring(7, 1),
        from(generate::fat_tree(8, 3).unwrap()),
        from(degraded),
        from(
            generate::jellyfish(&generate::Jellyfish {
                switches: 24,
                radix: 8,
                network_ports: 5,
                seed: 3,
            })
            .unwrap(),
        ),
    ];
    // Random graphs, degraded trees and grids of several sizes: escapes of every kind,
    // among them switches whose neighbours escape later in the same pass (not hops).
    let mut nets = nets.to_vec();
    for seed in 0..40u64 {
        let jelly = generate::Jellyfish {
            switches: 20 + seed as u32 % 20,
            radix: 6,
            network_ports: 3 + seed as u8 % 3,
            seed,
        };
        nets.push(from(generate::jellyfish(&jelly).unwrap()));
        let mut deg = generate::fat_tree(8, 3).unwrap();
        generate::degrade(&mut deg, 0.05 + 0.01 * (seed % 20) as f64, seed).unwrap();
        nets.push(from(deg));
        nets.push(grid(
            3 + seed as u32 % 5,
            3 + seed as u32 % 4,
            seed % 2 == 0,
        ));
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m) as u32
    };
    let (mut escapes, mut ties) = (0, 0);
    for (i, net) in nets.iter().enumerate() {
        for reverse in [false, true] {
            let roots = crate::updn::find_roots(net, reverse).unwrap();
            let (pos, by_pos) = crate::updn::order_from_roots(net, &roots, reverse);
            let rule = Rule::UpDown {
                pos: &pos,
                by_pos: &by_pos,
            };
            let sides = Sides::new(net, rule).unwrap();
            let mut p = Planner::new(net, rule);
            let (mut with, mut without) = (Plan::default(), Plan::default());
            for t in 0..net.n_sw {
                for round in 0..4 {
                    let swl: Vec<u32> = (0..net.n_arcs()).map(|_| next(1 + round)).collect();
                    p.plan_switch_lid(t, &mut with, &swl);
                    p.plan_deferred(t, &mut without);
                    assert_eq!(with.order, without.order, "net {i} t {t}");
                    assert_eq!(with.escaped, without.escaped, "net {i} t {t}");
                    assert_eq!(with.unreachable, without.unreachable, "net {i} t {t}");
                    escapes += with.escaped.len();
                    let d = without.deferred().unwrap();
                    for (k, &s) in with.order.iter().enumerate() {
                        let chosen = with.eligible(k)[0] as usize;
                        let (hop, tied) = least_used_hop(d, s as usize, net, &sides, &swl);
                        assert_eq!(hop, chosen, "net {i} reverse {reverse} t {t} switch {s}");
                        ties += usize::from(tied);
                    }
                }
            }
        }
    }
    // The cases the comparison is about did occur.
    assert!(escapes > 100 && ties > 100, "escapes {escapes} ties {ties}");
}
