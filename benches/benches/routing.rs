//! Routing engine speed: a small fabric (~1k CAs, every engine), the 3-level radix-36 fat
//! tree XGFT(3;18,18,36;1,18,18) (11,664 CAs, 1,620 switches, 13,284 LIDs) for the
//! destination-based engines and DFSSSP (1 and 2 threads), the LID-space limit
//! XGFT(3;32,32,44;1,32,32) (48,896 LIDs), incremental re-routing of one failed link, and
//! the 11k tree with LMC 1.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_routing::{EngineKind, LidAssignment, RouteOptions};
use ibsm_topology::{Csr, Fabric, generate};

fn xgft(m: &[u32], w: &[u32]) -> Fabric {
    generate::xgft(&generate::Xgft {
        m: m.to_vec(),
        w: w.to_vec(),
        radix: None,
    })
    .expect("valid XGFT")
}

fn small(c: &mut Criterion) {
    let fabrics = [
        (
            "fat_tree_16x3",
            generate::fat_tree(16, 3).expect("fat tree"),
        ),
        (
            "torus_8x8x4",
            generate::grid(&generate::Grid {
                dims: vec![8, 8, 4],
                torus: true,
                cas_per_switch: 4,
            })
            .expect("torus"),
        ),
    ];
    let mut g = c.benchmark_group("route_small");
    g.sample_size(20);
    for (name, f) in &fabrics {
        let csr = Csr::new(f);
        let lids = LidAssignment::sequential(&csr, 0).expect("lids");
        for kind in EngineKind::ALL {
            let eng = kind.engine();
            if eng.route(&csr, &lids, &RouteOptions::default()).is_err() {
                continue; // e.g. ftree on a torus, dor on a fat tree
            }
            g.bench_function(format!("{name}/{}", kind.name()), |b| {
                b.iter(|| black_box(eng.route(&csr, &lids, &RouteOptions::default())));
            });
        }
    }
    g.finish();
}

/// One XGFT, routed by each of `kinds` at each of `threads` as the criterion group
/// `group`; the tree and its LIDs are handed back for further benches in the group.
fn xgft_group<'c>(
    c: &'c mut Criterion,
    group: &str,
    (m, w, lmc): (&[u32], &[u32], u8),
    (kinds, threads): (&[EngineKind], &[usize]),
    secs: u64,
) -> (
    criterion::BenchmarkGroup<'c, criterion::measurement::WallTime>,
    Fabric,
    Csr,
    LidAssignment,
) {
    let f = xgft(m, w);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, lmc).expect("lids");
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .measurement_time(Duration::from_secs(secs));
    for kind in kinds {
        let eng = kind.engine();
        for &threads in threads {
            let opts = RouteOptions::default().with_threads(threads);
            g.bench_function(format!("{}/threads{threads}", kind.name()), |b| {
                b.iter(|| black_box(eng.route(&csr, &lids, &opts)));
            });
        }
    }
    (g, f, csr, lids)
}

fn big(c: &mut Criterion) {
    use EngineKind::{Dfsssp, FatTree, MinHop, UpDn};
    let (mut g, f, csr, lids) = xgft_group(
        c,
        "route_xgft_11k",
        (&[18, 18, 36], &[1, 18, 18], 0),
        (&[MinHop, UpDn, FatTree, Dfsssp], &[1, 2]),
        8,
    );
    // One leaf-to-spine cable fails; re-route from the previous tables.
    let opts = RouteOptions::default();
    for kind in [MinHop, UpDn, FatTree] {
        let eng = kind.engine();
        let before = eng.route(&csr, &lids, &opts).expect("routes");
        let mut cut = f.clone();
        let leaf = csr.switch_node[0];
        let port = csr.neighbours(0).next().expect("uplink").1;
        cut.disconnect(leaf, port).expect("disconnect");
        let csr2 = Csr::new(&cut);
        g.bench_function(format!("{}/reroute_one_link", kind.name()), |b| {
            b.iter(|| black_box(eng.reroute(&csr2, &lids, &opts, &before)));
        });
    }
    g.finish();
}

/// The 11k tree with LMC 1 (24,949 LIDs): siblings avoid each other's ports.
fn big_lmc(c: &mut Criterion) {
    use EngineKind::{FatTree, MinHop, UpDn};
    let tree = (&[18, 18, 36][..], &[1, 18, 18][..], 1);
    let (g, ..) = xgft_group(
        c,
        "route_xgft_11k_lmc1",
        tree,
        (&[MinHop, UpDn, FatTree], &[1]),
        8,
    );
    g.finish();
}

fn lid_limit(c: &mut Criterion) {
    use EngineKind::{FatTree, MinHop};
    let tree = (&[32, 32, 44][..], &[1, 32, 32][..], 0);
    let (g, ..) = xgft_group(c, "route_xgft_45k", tree, (&[MinHop, FatTree], &[1, 2]), 20);
    g.finish();
}

criterion_group!(benches, small, big, big_lmc, lid_limit);
criterion_main!(benches);
