//! Every metric on fabrics of a handful of switches with hand-written LFTs, the
//! expected figures worked out by hand in the comments.
use ibsm_topology::{Csr, Fabric, NodeSpec};

use super::*;
use crate::routes::NO_ROUTE;

const NR: u8 = NO_ROUTE;

/// Switch `i` (snapshot index `i`, LID `i + 1` under `sequential`) has `ports[i]`
/// ports; `links` cables `(switch a, port, switch b, port)`; each `(switch, port)` of
/// `cas` gets a one-port CA. Terminals are numbered by switch, then port, so with
/// `sequential` the CA LIDs follow the switch LIDs in that order.
fn fabric(ports: &[u8], links: &[(usize, u8, usize, u8)], cas: &[(usize, u8)]) -> Csr {
    let mut f = Fabric::new();
    let sw: Vec<_> = ports
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            f.add_node(NodeSpec::switch(0x100 + i as u64, n, format!("sw{i}")))
                .unwrap()
        })
        .collect();
    for &(a, pa, b, pb) in links {
        f.connect(sw[a], pa, sw[b], pb).unwrap();
    }
    for (i, &(s, p)) in cas.iter().enumerate() {
        let ca = f
            .add_node(NodeSpec::ca(0x1000 + 0x10 * i as u64, 1, format!("ca{i}")))
            .unwrap();
        f.connect(ca, 1, sw[s], p).unwrap();
    }
    Csr::new(&f)
}

/// Routes from one literal LFT row per switch.
fn routes(rows: &[&[u8]]) -> Routes {
    let mut r = Routes::new("hand", rows.len(), rows[0].len());
    for (s, row) in rows.iter().enumerate() {
        r.lft_mut(s).copy_from_slice(row);
    }
    r
}

#[track_caller]
fn close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
}

/// A 3-ring S0-S1-S2 with CAs a0, a1 on S0 and b on S1, c on S2.
/// Ports: S0 p1-S1 p2, S1 p1-S2 p2, S2 p1-S0 p2; CAs on p3 (and p4 of S0).
/// LIDs: S0 1, S1 2, S2 3, a0 4, a1 5, b 6, c 7.
fn ring3() -> (Csr, LidAssignment) {
    let csr = fabric(
        &[4, 3, 3],
        &[(0, 1, 1, 2), (1, 1, 2, 2), (2, 1, 0, 2)],
        &[(0, 3), (0, 4), (1, 3), (2, 3)],
    );
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    (csr, lids)
}

/// Shortest routes on `ring3` except that S0 sends c (LID 7) the long way, by S1.
fn ring3_detour() -> Routes {
    routes(&[
        &[NR, 0, 1, 2, 3, 4, 1, 1],
        &[NR, 2, 0, 1, 2, 2, 3, 1],
        &[NR, 1, 2, 0, 1, 1, 2, 3],
    ])
}

#[test]
fn all_to_all_counts_loads_minimal_pairs_and_stretch() {
    let (csr, lids) = ring3();
    let q = all_to_all(&csr, &lids, &ring3_detour()).unwrap();
    // Flows per switch-to-switch arc (a0, a1 both on S0):
    //   S0->S1: a0->b, a1->b, a0->c, a1->c         = 4
    //   S1->S2: a0->c, a1->c, b->c                 = 3
    //   S1->S0: b->a0, b->a1                       = 2
    //   S2->S0: c->a0, c->a1                       = 2
    //   S2->S1: c->b                               = 1
    //   S0->S2: (c goes round by S1)               = 0
    // 5 of 6 arcs used, 12 flows in all: mean 12 / 5 = 2.4, imbalance 4 / 2.4.
    assert_eq!(q.max_load, 4);
    close(q.mean_load, 2.4);
    assert_eq!(q.used_links, 5);
    assert_eq!(q.links, 6);
    close(q.imbalance(), 4.0 / 2.4);
    // 4 CAs, each the destination of the 3 others: 12 pairs. All shortest but
    // a0->c and a1->c (2 hops instead of 1): 10 / 12 minimal.
    assert_eq!(q.pairs, 12);
    close(q.minimal_fraction, 10.0 / 12.0);
    // Pairs on different switches: 12 - a0<->a1 = 10; stretch 1 for 8 of them and
    // 2 / 1 for a0->c, a1->c: mean (8 + 4) / 10 = 1.2, max 2.
    close(q.mean_stretch, 1.2);
    close(q.max_stretch, 2.0);
}

#[test]
fn all_to_all_on_shortest_routes_counts_same_switch_pairs_as_minimal() {
    let (csr, lids) = ring3();
    // As ring3_detour, but S0 sends c directly (port 2).
    let r = routes(&[
        &[NR, 0, 1, 2, 3, 4, 1, 2],
        &[NR, 2, 0, 1, 2, 2, 3, 1],
        &[NR, 1, 2, 0, 1, 1, 2, 3],
    ]);
    let q = all_to_all(&csr, &lids, &r).unwrap();
    // S0->S1: a0,a1->b = 2; S0->S2: a0,a1->c = 2; S1->S0: b->a0,a1 = 2;
    // S2->S0: c->a0,a1 = 2; S1->S2: b->c = 1; S2->S1: c->b = 1.
    // 6 arcs used, 10 flows: mean 10 / 6, imbalance 2 / (10 / 6) = 1.2.
    assert_eq!(q.max_load, 2);
    close(q.mean_load, 10.0 / 6.0);
    assert_eq!(q.used_links, 6);
    close(q.imbalance(), 1.2);
    // a0<->a1 never leave S0 and are shortest too: 12 / 12.
    assert_eq!(q.pairs, 12);
    close(q.minimal_fraction, 1.0);
    close(q.mean_stretch, 1.0);
    close(q.max_stretch, 1.0);
}

#[test]
fn all_to_all_on_one_switch_has_no_links_and_neutral_figures() {
    // One switch (LID 1), CAs on ports 1 and 2 (LIDs 2, 3).
    let csr = fabric(&[2], &[], &[(0, 1), (0, 2)]);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let q = all_to_all(&csr, &lids, &routes(&[&[NR, 0, 1, 2]])).unwrap();
    // 2 pairs, both on the switch: minimal; no pair crosses a link, so stretch and
    // imbalance keep their neutral 1.
    assert_eq!((q.max_load, q.used_links, q.links, q.pairs), (0, 0, 0, 2));
    close(q.mean_load, 0.0);
    close(q.imbalance(), 1.0);
    close(q.minimal_fraction, 1.0);
    close(q.mean_stretch, 1.0);
    close(q.max_stretch, 1.0);
}

#[test]
fn all_to_all_rejects_loops_dead_ends_and_foreign_lids() {
    let (csr, lids) = ring3();
    // c (LID 7): S0 -> S1 -> back to S0.
    let mut r = ring3_detour();
    r.lft_mut(1)[7] = 2;
    let e = all_to_all(&csr, &lids, &r).unwrap_err().to_string();
    assert!(e.contains("loop towards LID 7"), "{e}");
    // S1 has no entry for c; S0 reaches c through S1 so it has none either.
    let mut r = ring3_detour();
    r.lft_mut(1)[7] = NR;
    let e = all_to_all(&csr, &lids, &r).unwrap_err().to_string();
    assert!(e.contains("switch #0 has no route to LID 7"), "{e}");
    let other = fabric(&[2], &[], &[(0, 1)]);
    let foreign = LidAssignment::sequential(&other, 0).unwrap();
    assert!(all_to_all(&csr, &foreign, &ring3_detour()).is_err());
}

#[test]
fn port_ratios_skip_unused_ports_and_single_port_switches() {
    let mut p = PortRatios::default();
    assert_eq!(p.finish(), (0.0, 0.0));
    p.add(&[0, 3, 1, 0]); // 2 used ports, mean 2: 3 / 2 = 1.5
    p.add(&[5]); // one used port: left out
    p.add(&[0, 0, 7]); // one used port: left out
    p.add(&[2, 2, 2]); // 2 / 2 = 1.0
    p.add(&[4, 1, 1]); // mean 2: 4 / 2 = 2.0
    // worst 2.0; mean (1.5 + 1.0 + 2.0) / 3 = 1.5
    let (worst, mean) = p.finish();
    close(worst, 2.0);
    close(mean, 1.5);
}

#[test]
fn lid_balance_counts_every_lid_on_switch_ports_only() {
    let (csr, lids) = ring3();
    let b = lid_balance(&csr, &lids, &ring3_detour()).unwrap();
    // LIDs per switch-to-switch port (CA ports and port 0 do not count):
    //   S0 [NR,0,1,2,3,4,1,1]: p1 {2,6,7} = 3, p2 {3} = 1  -> 3 / 2   = 1.5
    //   S1 [NR,2,0,1,2,2,3,1]: p1 {3,7} = 2, p2 {1,4,5} = 3 -> 3 / 2.5 = 1.2
    //   S2 [NR,1,2,0,1,1,2,3]: p1 {1,4,5} = 3, p2 {2,6} = 2 -> 3 / 2.5 = 1.2
    // worst 1.5; mean (1.5 + 1.2 + 1.2) / 3 = 1.3
    close(b.worst_ratio, 1.5);
    close(b.mean_ratio, 1.3);
}

#[test]
fn lid_balance_leaves_out_switches_with_one_switch_port() {
    // S0 p1 - S1 p1; CAs on S0 p2, p3 and S1 p2: LIDs S0 1, S1 2, CAs 3, 4, 5.
    let csr = fabric(&[3, 2], &[(0, 1, 1, 1)], &[(0, 2), (0, 3), (1, 2)]);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let r = routes(&[&[NR, 0, 1, 2, 3, 1], &[NR, 1, 0, 1, 1, 2]]);
    // Each switch has a single switch-to-switch port: no ratio anywhere.
    let b = lid_balance(&csr, &lids, &r).unwrap();
    assert_eq!(b, LidBalance::default());
}

/// Two leaves L0, L1 (switches 0, 1; ports 1-2 CAs, 3-5 up) under three spines
/// P0-P2 (switches 2-4; port 1 to L0, port 2 to L1): leaf port 3 + j goes to Pj.
/// LMC 0 LIDs: L0 1, L1 2, P0 3, P1 4, P2 5; CAs h0 6, h1 7 (L0), h2 8, h3 9 (L1).
fn tree2x3() -> Csr {
    let mut links = Vec::new();
    for leaf in 0..2 {
        for j in 0..3 {
            links.push((leaf, 3 + j as u8, 2 + j, 1 + leaf as u8));
        }
    }
    fabric(&[5, 5, 2, 2, 2], &links, &[(0, 1), (0, 2), (1, 1), (1, 2)])
}

/// Loop-free routes on `tree2x3` at LMC 0; L0 sends both h2 and h3 up to P2.
fn tree2x3_routes() -> Routes {
    routes(&[
        &[NR, 0, 3, 3, 4, 5, 1, 2, 5, 5],
        &[NR, 4, 0, 3, 4, 5, 3, 4, 1, 2],
        &[NR, 1, 2, 0, 1, 1, 1, 1, 2, 2],
        &[NR, 1, 2, 1, 0, 2, 1, 1, 2, 2],
        &[NR, 1, 2, 2, 2, 0, 1, 1, 2, 2],
    ])
}

#[test]
fn switch_lid_balance_counts_switch_lids_per_port() {
    let csr = tree2x3();
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let b = switch_lid_balance(&csr, &lids, &tree2x3_routes()).unwrap();
    // Switch LIDs 1-5 only (CA columns 6-9 do not count):
    //   L0 [0,3,3,4,5]: p3 {2,3} 2, p4 1, p5 1  spread 1, 2 / (4/3) = 1.5
    //   L1 [4,0,3,4,5]: p3 1, p4 {1,4} 2, p5 1  spread 1, 1.5
    //   P0 [1,2,0,1,1]: p1 {1,4,5} 3, p2 1      spread 2, 3 / 2 = 1.5
    //   P1 [1,2,1,0,2]: p1 {1,3} 2, p2 {2,5} 2  spread 0, 1.0
    //   P2 [1,2,2,2,0]: p1 1, p2 {2,3,4} 3      spread 2, 1.5
    // Every port of a leaf leads to a spine and every port of a spine to a leaf, so
    // each switch's ports are one class. max spread 2, worst 1.5,
    // mean (4 * 1.5 + 1.0) / 5 = 1.4.
    assert_eq!(b.max_spread, 2);
    close(b.worst_ratio, 1.5);
    close(b.mean_ratio, 1.4);
}

#[test]
fn switch_lid_balance_spread_compares_only_ports_to_the_same_rank() {
    // L0 p2 - P p1, L1 p2 - P p2, P p3 - X p1, X p2 - Y p1; CAs on L0 p1, L1 p1.
    // Ranks: L0, L1 0 (CAs), P 1, X 2, Y 3. LIDs L0 1, L1 2, P 3, X 4, Y 5, CAs 6, 7.
    let csr = fabric(
        &[2, 2, 3, 2, 1],
        &[(0, 2, 2, 1), (1, 2, 2, 2), (2, 3, 3, 1), (3, 2, 4, 1)],
        &[(0, 1), (1, 1)],
    );
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let r = routes(&[
        &[NR, 0, 2, 2, 2, 2, 1, 2],
        &[NR, 2, 0, 2, 2, 2, 2, 1],
        &[NR, 1, 2, 0, 3, 3, 1, 2],
        &[NR, 1, 1, 1, 0, 2, 1, 1],
        &[NR, 1, 1, 1, 1, 0, 1, 1],
    ]);
    let b = switch_lid_balance(&csr, &lids, &r).unwrap();
    // P: p1 {1} 1, p2 {2} 1 (both to rank 0: spread 0), p3 {4,5} 2 (alone in its
    // class): ratio 2 / (4/3) = 1.5. X: p1 {1,2,3} 3 (rank 1), p2 {5} 1 (rank 3):
    // ratio 3 / 2 = 1.5. Leaves and Y have one port each: no ratio, spread 0.
    // Mixing classes would give spread 1 at P and 2 at X.
    assert_eq!(b.max_spread, 0);
    close(b.worst_ratio, 1.5);
    close(b.mean_ratio, 1.5);
}

#[test]
fn lmc_diversity_needs_as_many_ports_as_siblings_or_choices() {
    // The tree at LMC 1, h1 at LMC 0: LIDs L0 1, L1 2, P0-P2 3-5; h0 6-7, h1 8,
    // h2 10-11, h3 12-13.
    let csr = tree2x3();
    let mut lids = LidAssignment::sequential(&csr, 1).unwrap();
    lids.set_terminal(1, 8, 0);
    let r = routes(&[
        &[NR, 0, 3, 3, 4, 5, 1, 1, 2, NR, 3, 4, 5, 5],
        &[NR, 3, 0, 3, 4, 5, 3, 5, 4, NR, 1, 1, 2, 2],
        &[NR, 1, 2, 0, 1, 1, 1, 1, 1, NR, 2, 2, 2, 2],
        &[NR, 1, 2, 1, 0, 1, 1, 1, 1, NR, 2, 2, 2, 2],
        &[NR, 1, 2, 1, 1, 0, 1, 1, 1, NR, 2, 2, 2, 2],
    ]);
    let d = lmc_diversity(&csr, &lids, &r).unwrap();
    // Only a leaf towards the other leaf has a choice (3 spines); a spine has one
    // shortest port down. h1 has LMC 0: not counted. So 3 choice pairs:
    //   L1 -> h0 (6, 7):   p3, p5  distinct (2 >= min(2, 3)), P0 / P2: disjoint
    //   L0 -> h2 (10, 11): p3, p4  distinct, disjoint
    //   L0 -> h3 (12, 13): p5, p5  neither
    // Both leaves have CAs, so all 3 are source pairs.
    assert_eq!(
        d,
        LmcDiversity {
            choice_pairs: 3,
            distinct_first_hops: 2,
            source_pairs: 3,
            disjoint_paths: 2,
        }
    );
    close(d.first_hop_fraction(), 2.0 / 3.0);
    close(d.disjoint_fraction(), 2.0 / 3.0);
}

#[test]
fn lmc_diversity_tells_distinct_first_hops_from_disjoint_paths() {
    // A diamond with a tail: S p1 - A p1, S p2 - B p1, A p2 - C p1, B p2 - C p2,
    // C p3 - T p1; CA s on S p3, t on T p2. At LMC 2: switches 1-5 (S, A, B, C, T),
    // s 8-11, t 12-15.
    let csr = fabric(
        &[3, 2, 2, 3, 2],
        &[
            (0, 1, 1, 1),
            (0, 2, 2, 1),
            (1, 2, 3, 1),
            (2, 2, 3, 2),
            (3, 3, 4, 1),
        ],
        &[(0, 3), (4, 2)],
    );
    let lids = LidAssignment::sequential(&csr, 2).unwrap();
    let r = routes(&[
        &[NR, 0, 1, 2, 1, 1, NR, NR, 3, 3, 3, 3, 1, 2, 1, 2],
        &[NR, 1, 0, 2, 2, 2, NR, NR, 1, 1, 1, 1, 2, 2, 2, 2],
        &[NR, 1, 1, 0, 2, 2, NR, NR, 1, 1, 1, 1, 2, 2, 2, 2],
        &[NR, 1, 1, 2, 0, 3, NR, NR, 1, 1, 1, 1, 3, 3, 3, 3],
        &[NR, 1, 1, 1, 1, 0, NR, NR, 1, 1, 1, 1, 2, 2, 2, 2],
    ]);
    let d = lmc_diversity(&csr, &lids, &r).unwrap();
    // Switches with two shortest next hops: S towards T (A, B) and C towards S
    // (A, B); every other switch has one.
    //   S -> t: ports 1, 2, 1, 2: 2 distinct = min(4 siblings, 2 choices). S has a
    //     CA, so a source pair, but every path ends on C->T: not disjoint.
    //   C -> s: port 1 four times: not distinct; C has no CA: no source pair.
    assert_eq!(
        d,
        LmcDiversity {
            choice_pairs: 2,
            distinct_first_hops: 1,
            source_pairs: 1,
            disjoint_paths: 0,
        }
    );
    close(d.first_hop_fraction(), 0.5);
    close(d.disjoint_fraction(), 0.0);
    // At LMC 0 nobody has siblings: nothing counted, both fractions 1.
    let lids0 = LidAssignment::sequential(&csr, 0).unwrap();
    let r0 = routes(&[
        &[NR, 0, 1, 2, 1, 1, 3, 1],
        &[NR, 1, 0, 2, 2, 2, 1, 2],
        &[NR, 1, 1, 0, 2, 2, 1, 2],
        &[NR, 1, 1, 2, 0, 3, 1, 3],
        &[NR, 1, 1, 1, 1, 0, 1, 2],
    ]);
    let d0 = lmc_diversity(&csr, &lids0, &r0).unwrap();
    assert_eq!(d0, LmcDiversity::default());
    close(d0.first_hop_fraction(), 1.0);
    close(d0.disjoint_fraction(), 1.0);
}

#[test]
fn shift_max_loads_counts_each_shift_on_its_own() {
    let csr = tree2x3();
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let loads = shift_max_loads(&csr, &lids, &tree2x3_routes(), [0, 1, 2, 3, 4, 6]).unwrap();
    // CAs in order h0, h1 (L0), h2, h3 (L1). Paths: L0->h2 and L0->h3 both by P2;
    // L1->h0 by P0, L1->h1 by P1; same-leaf pairs use no link.
    //   k 0: everyone to itself                                   -> 0
    //   k 1: h1->h2 (L0->P2->L1), h3->h0 (L1->P0->L0)             -> 1
    //   k 2: h0->h2, h1->h3 both on L0->P2; h2->h0, h3->h1        -> 2
    //   k 3: h0->h3 (L0->P2->L1), h2->h1 (L1->P1->L0)             -> 1
    //   k 4 = k 0 (mod 4 CAs), k 6 = k 2
    assert_eq!(loads, vec![0, 1, 2, 1, 0, 2]);
}

/// A ring of `m` switches, each with one CA (port 3), routed one way round: every
/// LID but the switch's own ones leaves by port 1 (to the next switch's port 2).
/// LIDs: switch i is i + 1, its CA m + 1 + i.
fn one_way_ring(m: usize) -> (Csr, LidAssignment, Routes) {
    let links: Vec<_> = (0..m).map(|i| (i, 1, (i + 1) % m, 2)).collect();
    let cas: Vec<_> = (0..m).map(|i| (i, 3)).collect();
    let csr = fabric(&vec![3; m], &links, &cas);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    let mut r = Routes::new("hand", m, 2 * m + 1);
    for s in 0..m {
        let row = r.lft_mut(s);
        row[1..].fill(1);
        row[s + 1] = 0;
        row[m + 1 + s] = 3;
    }
    (csr, lids, r)
}

#[test]
fn ebb_on_a_one_way_ring_is_the_same_for_every_bisection() {
    // Each pair x<->y goes x->y and y->x one way round: together once round the
    // ring. With m CAs, m / 2 pairs put m / 2 flows on every arc, so every flow gets
    // 2 / m whatever the bisection: 4-ring 1/2, 6-ring 1/3.
    for (m, want) in [(4, 0.5), (6, 1.0 / 3.0)] {
        let (csr, lids, r) = one_way_ring(m);
        for (samples, seed) in [(1, 1), (5, 7), (3, 12345)] {
            let e = effective_bisection_bandwidth(&csr, &lids, &r, samples, seed).unwrap();
            close(e, want);
        }
    }
}

#[test]
fn ebb_takes_the_busiest_link_of_each_path() {
    // A p1 - X p1, A p2 - Y p1, X p2 - Y p2, X p3 - B p1, Y p3 - B p2; CA a on A p3,
    // b on B p3. LIDs A 1, X 2, Y 3, B 4, a 5, b 6.
    let csr = fabric(
        &[3, 3, 3, 3],
        &[
            (0, 1, 1, 1),
            (0, 2, 2, 1),
            (1, 2, 2, 2),
            (1, 3, 3, 1),
            (2, 3, 3, 2),
        ],
        &[(0, 3), (3, 3)],
    );
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    // a->b: A->X->Y->B; b->a: B->X->Y->A. Both cross X->Y.
    let r = routes(&[
        &[NR, 0, 1, 2, 1, 3, 1],
        &[NR, 1, 0, 2, 3, 2, 2],
        &[NR, 1, 2, 0, 3, 1, 3],
        &[NR, 1, 1, 2, 0, 1, 3],
    ]);
    // Two CAs: the only bisection pairs a with b. X->Y carries 2 flows, the other
    // arcs 1: each flow gets 1 / 2, and so does the mean, whatever the sample count
    // (0 is taken as 1).
    for samples in [0, 1, 3] {
        let e = effective_bisection_bandwidth(&csr, &lids, &r, samples, 5).unwrap();
        close(e, 0.5);
    }
    // Fewer than two CAs: no bisection, full bandwidth.
    let lone = fabric(&[1], &[], &[(0, 1)]);
    let lids = LidAssignment::sequential(&lone, 0).unwrap();
    let e = effective_bisection_bandwidth(&lone, &lids, &routes(&[&[NR, 0, 1]]), 3, 1);
    close(e.unwrap(), 1.0);
}
