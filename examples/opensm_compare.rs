//! Side by side: OpenSM's routes (from `opensm-lfts.dump`) and ours on the same fabric and
//! the same LIDs, judged by the same validators and metrics.
//!
//! ```text
//! cargo run --release -p ibsm-examples --example opensm_compare -- fabric.net dir1/opensm-lfts.dump [dir2/...]
//! ```
//! The fabric file is what ibsim ran (ibnetdiscover format); OpenSM writes the dump with
//! `-D 0x43` (or `dump_files_dir`).

use std::time::Instant;

use ibsm_routing::{
    EngineKind, RouteOptions, Routes, check_deadlock_free, check_reachability, metrics,
    read_opensm_lfts,
};
use ibsm_topology::{Csr, ibnet};

fn report(
    name: &str,
    csr: &Csr,
    lids: &ibsm_routing::LidAssignment,
    r: &Routes,
    took: Option<f64>,
) {
    let reach = match check_reachability(csr, lids, r) {
        Ok(Ok(_)) => true,
        Ok(Err(d)) => {
            eprintln!("{name}: {d}");
            false
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            false
        }
    };
    let dl = check_deadlock_free(csr, lids, r)
        .map(|x| x.is_ok())
        .unwrap_or(false);
    match metrics::all_to_all(csr, lids, r) {
        Ok(q) => println!(
            "{name:24} {:>10}  reach {reach:5}  deadlock-free(1 VL/SLs) {dl:5}  max link load {:7}  imbalance {:6.3}  minimal {:6.2}%",
            took.map_or("-".to_string(), |t| format!("{:.1} ms", t * 1e3)),
            q.max_load,
            q.imbalance(),
            q.minimal_fraction * 100.0
        ),
        Err(e) => println!("{name:24} metrics failed: {e}"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: opensm_compare <fabric.net> <opensm-lfts.dump>...");
        std::process::exit(2);
    }
    let fabric = ibnet::read_file(&args[0])?.fabric;
    let csr = Csr::new(&fabric);
    let mut lids_for_ours = None;
    for dump in &args[1..] {
        let (routes, lids) = read_opensm_lfts(&std::fs::read_to_string(dump)?, &csr)?;
        report(&format!("opensm {dump}"), &csr, &lids, &routes, None);
        lids_for_ours.get_or_insert(lids);
    }
    let lids = lids_for_ours.ok_or("no dump")?;
    for kind in [
        EngineKind::MinHop,
        EngineKind::UpDn,
        EngineKind::FatTree,
        EngineKind::Dfsssp,
    ] {
        let t0 = Instant::now();
        match kind.engine().route(&csr, &lids, &RouteOptions::default()) {
            Ok(r) => report(
                &format!("ibsm {}", kind.name()),
                &csr,
                &lids,
                &r,
                Some(t0.elapsed().as_secs_f64()),
            ),
            Err(e) => println!("ibsm {:19} failed: {e}", kind.name()),
        }
    }
    Ok(())
}
