//! Writing your own routing engine: "lowest port first" shortest paths.
//!
//! An engine is any type implementing `RoutingEngine`: it reads the CSR snapshot and the
//! LIDs and fills `Routes`. The crate's validators and metrics then judge it like the
//! built-in engines. Run with `cargo run -p ibsm-examples --example custom_routing`.

use ibsm_routing::{
    EngineKind, LidAssignment, Result, RouteOptions, Routes, RoutingEngine, check_deadlock_free,
    check_reachability, metrics,
};
use ibsm_topology::{Csr, generate};

/// Shortest paths that always take the lowest-numbered shortest port (no balancing).
struct LowestPort;

impl RoutingEngine for LowestPort {
    fn name(&self) -> &str {
        "lowest-port"
    }

    fn route(&self, csr: &Csr, lids: &LidAssignment, _opts: &RouteOptions) -> Result<Routes> {
        let n = csr.switch_count();
        let mut routes = Routes::new(self.name(), n, usize::from(lids.max_lid()) + 1);
        for t in 0..n as u32 {
            // One BFS per destination switch serves every LID that lives there.
            let dist = csr.hops_from(t);
            let mut dests: Vec<(u16, u8)> = vec![(lids.switch_lid(t as usize), 0)];
            for term in csr.terminals_of(t) {
                let (base, lmc) = lids.terminal_lid(term as usize);
                let port = csr.term_switch_port[term as usize];
                dests.extend((0..1u16 << lmc).map(|k| (base + k, port)));
            }
            for s in 0..n as u32 {
                // The lowest port leading one hop closer to t (neighbours are in port order).
                let next = csr
                    .neighbours(s)
                    .find(|&(x, _)| dist[x as usize].wrapping_add(1) == dist[s as usize])
                    .map(|(_, p)| p);
                let lft = routes.lft_mut(s as usize);
                for &(lid, exit) in dests.iter().filter(|d| d.0 != 0) {
                    lft[usize::from(lid)] = if s == t { exit } else { next.unwrap_or(255) };
                }
            }
        }
        Ok(routes)
    }
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let fabric = generate::fat_tree(16, 3)?; // 320 switches, 1,024 CAs
    let csr = Csr::new(&fabric);
    let lids = LidAssignment::sequential(&csr, 0)?;
    let opts = RouteOptions::default();
    let engines: Vec<Box<dyn RoutingEngine>> =
        vec![Box::new(LowestPort), EngineKind::MinHop.engine()];
    for engine in engines {
        let t0 = std::time::Instant::now();
        let routes = engine.route(&csr, &lids, &opts)?;
        let took = t0.elapsed();
        let reach = check_reachability(&csr, &lids, &routes)?;
        let deadlock = check_deadlock_free(&csr, &lids, &routes)?;
        let q = metrics::all_to_all(&csr, &lids, &routes)?;
        eprintln!(
            "{:12} {took:>10.2?}  reachable: {:5}  deadlock-free: {:5}  max link load {:6}  imbalance {:.2}  minimal {:.0}%",
            routes.engine(),
            reach.is_ok(),
            deadlock.is_ok(),
            q.max_load,
            q.imbalance(),
            q.minimal_fraction * 100.0
        );
    }
    Ok(())
}
