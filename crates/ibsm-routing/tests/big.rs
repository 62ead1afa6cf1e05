//! Big-fabric checks, run by hand: `cargo test --release -p ibsm-routing --test big -- --ignored --nocapture`.
use std::time::Instant;

use ibsm_routing::*;
use ibsm_topology::{Csr, generate};

/// CPU time of this thread (the machine is shared, so wall time overstates).
fn cpu() -> std::time::Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns: u64 = s
        .split_whitespace()
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    std::time::Duration::from_nanos(ns)
}

fn xgft(m: [u32; 3], w: [u32; 3]) -> Csr {
    let f = generate::xgft(&generate::Xgft {
        m: m.to_vec(),
        w: w.to_vec(),
        radix: None,
    })
    .unwrap();
    Csr::new(&f)
}

#[test]
#[ignore = "big: run by hand in release"]
fn big_tree_11k() {
    let t0 = Instant::now();
    let csr = xgft([18, 18, 36], [1, 18, 18]);
    let lids = LidAssignment::sequential(&csr, 0).unwrap();
    eprintln!(
        "build {:?}: {} switches {} CAs max LID {}",
        t0.elapsed(),
        csr.switch_count(),
        csr.terminal_count(),
        lids.max_lid()
    );
    for k in [EngineKind::MinHop, EngineKind::UpDn, EngineKind::FatTree] {
        for threads in [1, 2] {
            let opts = Options::default().with_threads(threads);
            let t0 = Instant::now();
            let c0 = cpu();
            let r = k.engine().route(&csr, &lids, &opts).unwrap();
            eprintln!(
                "{} threads {threads}: wall {:?} cpu(main thread) {:?}",
                k.name(),
                t0.elapsed(),
                cpu() - c0
            );
            if threads == 1 {
                let t0 = Instant::now();
                let q = metrics::all_to_all(&csr, &lids, &r).unwrap();
                let reach = check_reachability(&csr, &lids, &r).unwrap();
                let cdg = check_deadlock_free(&csr, &lids, &r).unwrap();
                eprintln!(
                    "  imbalance {:.4} max {} minimal {:.4} reach {:?} cdg {:?} (checks {:?})",
                    q.imbalance(),
                    q.max_load,
                    q.minimal_fraction,
                    reach.is_ok(),
                    cdg.map(|c| c.dependencies),
                    t0.elapsed()
                );
            }
        }
    }
}
