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

fn big(c: &mut Criterion) {
    let f = xgft(&[18, 18, 36], &[1, 18, 18]);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).expect("lids");
    let mut g = c.benchmark_group("route_xgft_11k");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for kind in [
        EngineKind::MinHop,
        EngineKind::UpDn,
        EngineKind::FatTree,
        EngineKind::Dfsssp,
    ] {
        let eng = kind.engine();
        for threads in [1, 2] {
            let opts = RouteOptions::default().with_threads(threads);
            g.bench_function(format!("{}/threads{threads}", kind.name()), |b| {
                b.iter(|| black_box(eng.route(&csr, &lids, &opts)));
            });
        }
    }
    // One leaf-to-spine cable fails; re-route from the previous tables.
    let opts = RouteOptions::default();
    for kind in [EngineKind::MinHop, EngineKind::UpDn, EngineKind::FatTree] {
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
    let f = xgft(&[18, 18, 36], &[1, 18, 18]);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 1).expect("lids");
    let mut g = c.benchmark_group("route_xgft_11k_lmc1");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    let opts = RouteOptions::default();
    for kind in [EngineKind::MinHop, EngineKind::UpDn, EngineKind::FatTree] {
        let eng = kind.engine();
        g.bench_function(format!("{}/threads1", kind.name()), |b| {
            b.iter(|| black_box(eng.route(&csr, &lids, &opts)));
        });
    }
    g.finish();
}

fn lid_limit(c: &mut Criterion) {
    let f = xgft(&[32, 32, 44], &[1, 32, 32]);
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).expect("lids");
    let mut g = c.benchmark_group("route_xgft_45k");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for kind in [EngineKind::MinHop, EngineKind::FatTree] {
        let eng = kind.engine();
        for threads in [1, 2] {
            let opts = RouteOptions::default().with_threads(threads);
            g.bench_function(format!("{}/threads{threads}", kind.name()), |b| {
                b.iter(|| black_box(eng.route(&csr, &lids, &opts)));
            });
        }
    }
    g.finish();
}

criterion_group!(benches, small, big, big_lmc, lid_limit);
criterion_main!(benches);
