//! Simulator scale: loading the 3-level radix-36 fat tree (11,664 CAs, 1,620 switches)
//! and directed-route SMP hops per second.
//!
//! Each is measured twice: with `MiniAgent` (the simulator's own machinery: event queue,
//! link model, DR rules) and with `SmaAgent` (ibsm-sma on every node, as users run it:
//! full-size LFTs, the real SMP processing).

use ibsm_benches::rss_kib;
use std::collections::VecDeque;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ibsm_sim::testing::MiniAgent;
use ibsm_sim::{Agent, NodeIdx, Sim, SimConfig, SmaAgent};
use ibsm_topology::generate;
use ibsm_transport::{Address, DrAddress, Transport};
use ibsm_wire::{DrPath, DrSmp, Method};

/// Directed routes from `from` port 1 to every node, by BFS over the cabling.
fn routes<A: Agent>(sim: &Sim<A>, from: NodeIdx) -> Vec<(NodeIdx, DrPath)> {
    let mut seen = vec![false; sim.node_count()];
    let mut out = Vec::new();
    let mut q = VecDeque::new();
    seen[from.0 as usize] = true;
    if let Some((n, _)) = sim.peer(from, 1) {
        seen[n.0 as usize] = true;
        q.push_back((n, DrPath::from_ports(&[1]).unwrap()));
    }
    while let Some((n, path)) = q.pop_front() {
        out.push((n, path));
        let np = sim.node_setup(n).unwrap().num_ports;
        let is_switch = np > 1;
        if !is_switch || path.hops() >= 63 {
            continue;
        }
        for p in 1..=np {
            if let Some((m, _)) = sim.peer(n, p)
                && !seen[m.0 as usize]
            {
                seen[m.0 as usize] = true;
                q.push_back((m, path.child(p).unwrap()));
            }
        }
    }
    out
}

fn bench_agent<A: Agent>(c: &mut Criterion, name: &str, fabric: &ibsm_topology::Fabric) {
    let mut g = c.benchmark_group(format!("sim_{name}"));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    let before = rss_kib();
    let t = std::time::Instant::now();
    let sim: Sim<A> = Sim::from_fabric(fabric, SimConfig::default()).unwrap();
    eprintln!(
        "{name}: fat tree 36x3, {} nodes loaded in {:?}, RSS +{} MiB",
        sim.node_count(),
        t.elapsed(),
        (rss_kib().saturating_sub(before)) / 1024
    );
    drop(sim);
    g.bench_function("load_fat_tree_36x3", |b| {
        b.iter(|| Sim::<A>::from_fabric(fabric, SimConfig::default()).unwrap());
    });

    // DR hops: 2,000 NodeInfo requests to the farthest nodes (6 hops out, 6 back).
    let mut sim: Sim<A> = Sim::from_fabric(fabric, SimConfig::default()).unwrap();
    let sm_node = (0..sim.node_count() as u32)
        .map(NodeIdx)
        .find(|&n| sim.node_setup(n).unwrap().num_ports == 1)
        .unwrap();
    let mut sm = sim.attach_sm(sm_node, 1).unwrap();
    let all = routes(&sim, sm_node);
    let far: Vec<DrPath> = all.iter().rev().take(2_000).map(|(_, p)| *p).collect();
    let hops_per_iter: u64 = far.iter().map(|p| 2 * p.hops() as u64).sum();
    let reqs: Vec<[u8; 256]> = far
        .iter()
        .map(|p| DrSmp::request(Method::Get, 0x11, 0, 1, 0, p).to_bytes())
        .collect();
    g.throughput(Throughput::Elements(hops_per_iter));
    g.bench_function("dr_hops_fat_tree_36x3", |b| {
        b.iter(|| {
            for (p, r) in far.iter().zip(&reqs) {
                sm.send(&Address::Directed(DrAddress::direct(*p)), r)
                    .unwrap();
            }
            sim.run_until_idle(u64::MAX);
            while sm.pending() > 0 {
                let _ = sm.recv(sm.now());
            }
        });
    });
    let c = sim.counters();
    eprintln!(
        "{name}: dr hops {} dropped {} ({} hops per iteration)",
        c.dr_hops,
        c.total_dropped(),
        hops_per_iter
    );
    g.finish();
}

fn bench(c: &mut Criterion) {
    let fabric = generate::fat_tree(36, 3).expect("fat tree");
    bench_agent::<MiniAgent>(c, "mini_agent", &fabric);
    bench_agent::<SmaAgent>(c, "sma_agent", &fabric);
}

criterion_group!(benches, bench);
criterion_main!(benches);
