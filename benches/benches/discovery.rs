//! ibsm-query's discovery (the walk the SM engine shares) of the 3-level radix-36 fat
//! tree (11,664 CAs, 1,620 switches) on ibsm-sim with `SmaAgent` on every node: wall
//! time of one whole walk over the simulator, and the memory it holds (RSS growth of
//! the process while the model and the `Fabric` built from it are alive, and the
//! model's own heap bytes as counted from its shape).

use ibsm_benches::rss_kib;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_query::discover::{Discovered, Discovery, FoundNode, FoundPort};
use ibsm_query::smp::SmpConfig;
use ibsm_sim::{Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::generate;
use ibsm_transport::Transport;

fn walk(port: &mut SimPort<SmaAgent>) -> Discovered {
    let mut d = Discovery::new(SmpConfig::default());
    ibsm_query::run_to_idle(&mut d, port, port.now() + Duration::from_secs(3600)).expect("drive");
    assert!(d.is_done());
    d.into_found()
}

/// Heap bytes of the model from its shape (vectors at their length, the two GUID maps
/// at one entry per key plus a control byte).
fn model_bytes(found: &Discovered) -> usize {
    let ports: usize = found.nodes.iter().map(|n| n.ports.len()).sum();
    let text: usize = found.nodes.iter().map(|n| n.description.len()).sum();
    let map_entry = size_of::<(u64, usize)>() + 1;
    let port_entry = size_of::<(u64, (usize, u8))>() + 1;
    found.nodes.len() * size_of::<FoundNode>()
        + ports * size_of::<FoundPort>()
        + text
        + found.by_guid.len() * map_entry
        + found.by_port_guid.len() * port_entry
}

fn bench(c: &mut Criterion) {
    let fabric = generate::fat_tree(36, 3).expect("fat tree");
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
    let first = fabric.cas().next().unwrap().1.guid().0;
    let mut port = sim.attach_sm(sim.node_by_guid(first).unwrap(), 1).unwrap();

    let before = rss_kib();
    let t = std::time::Instant::now();
    let found = walk(&mut port);
    let wall = t.elapsed();
    let after_walk = rss_kib();
    let f = found.to_fabric().expect("fabric");
    let after_fabric = rss_kib();
    assert_eq!(f.node_count(), fabric.node_count());
    assert_eq!(f.link_count(), fabric.link_count());
    eprintln!(
        "discovery of fat tree 36x3: {} nodes, {} links in {wall:?}; model {} KiB by shape, \
         RSS +{} KiB after the walk, +{} KiB with the Fabric",
        found.nodes.len(),
        found.link_count(),
        model_bytes(&found) / 1024,
        after_walk.saturating_sub(before),
        after_fabric.saturating_sub(before),
    );
    drop((found, f));

    let mut g = c.benchmark_group("query_discovery");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("fat_tree_36x3_sma_agent", |b| b.iter(|| walk(&mut port)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
