//! A full counter sweep of the 3-level radix-36 fat tree (11,664 CAs, 1,620 switches)
//! in `ibsm-sim` through ibsm-query's `Scrape` (ClassPortInfo per agent, then
//! PortCounters and PortCountersExtended of every cabled port, 64 in flight), after
//! our SM brought the fabric up; wall time per sweep and the memory a scrape holds.
//! Also the same sweep as the SM's PerfMgr would size it (500 in flight).

use ibsm_benches::rss_kib;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ibsm_manager::{SmConfig, SmEvent, SubnetManager, driver};
use ibsm_query::perf::{Scrape, ScrapeMode, ScrapeTarget, default_tx};
use ibsm_sim::{Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Instant, Transport, TxConfig};

/// What the SM's PerfMgr reads: every switch's cabled ports at its port 0 LID, every
/// cabled CA port at its own.
fn targets(f: &Fabric) -> Vec<ScrapeTarget> {
    let mut t = Vec::new();
    for (id, n) in f.nodes() {
        if n.is_switch() {
            t.push(ScrapeTarget {
                lid: n.lid(),
                ports: f.links_of(id).map(|(p, _, _)| p).collect(),
                switch: true,
            });
        } else {
            for (p, port) in n.ports().filter(|(_, p)| p.is_connected() && p.lid != 0) {
                t.push(ScrapeTarget {
                    lid: port.lid,
                    ports: vec![p],
                    switch: false,
                });
            }
        }
    }
    t
}

fn up(fabric: &Fabric) -> (Sim<SmaAgent>, SimPort<SmaAgent>, Fabric) {
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(fabric, SimConfig::default()).unwrap();
    let (_, ca) = fabric.cas().next().unwrap();
    let mut port = sim
        .attach_sm(sim.node_by_guid(ca.guid().0).unwrap(), 1)
        .unwrap();
    let mut sm = SubnetManager::new(SmConfig::default(), port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    driver::run(&mut sm, &mut port, Instant::from_secs(3600), |e| {
        matches!(e, SmEvent::SubnetUp { .. })
    })
    .unwrap();
    let model = sm.fabric().expect("configured").clone();
    (sim, port, model)
}

fn sweep(port: &mut SimPort<SmaAgent>, t: &[ScrapeTarget], tx: TxConfig) -> usize {
    let mut s = Scrape::new(t.to_vec(), ScrapeMode::PerPort, tx);
    ibsm_query::run_to_idle(&mut s, port, port.now() + Duration::from_secs(3600)).unwrap();
    let r = s.into_report();
    assert_eq!(r.failures, 0);
    r.ports.len()
}

fn bench(c: &mut Criterion) {
    let fabric = generate::fat_tree(36, 3).expect("fat tree");
    let (_sim, mut port, model) = up(&fabric);
    let t = targets(&model);
    let ports: usize = t.iter().map(|x| x.ports.len()).sum();
    let before = rss_kib();
    let mut s = Scrape::new(t.clone(), ScrapeMode::PerPort, default_tx());
    let v0 = port.now();
    let w0 = std::time::Instant::now();
    ibsm_query::run_to_idle(&mut s, &mut port, v0 + Duration::from_secs(3600)).unwrap();
    let report = s.into_report();
    eprintln!(
        "perf sweep: {} agents, {ports} ports, {} queries in {:?} wall, {:?} virtual; \
         RSS +{} MiB while the report is held",
        t.len(),
        report.queries,
        w0.elapsed(),
        port.now() - v0,
        rss_kib().saturating_sub(before) / 1024
    );
    assert_eq!(report.ports.len(), ports);
    drop(report);

    let mut g = c.benchmark_group("perf_sweep_fat_tree_36x3");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    g.throughput(Throughput::Elements(ports as u64));
    g.bench_function("scrape_window_64", |b| {
        b.iter(|| sweep(&mut port, &t, default_tx()));
    });
    g.bench_function("scrape_window_500", |b| {
        let tx = TxConfig {
            window: 500,
            ..default_tx()
        };
        b.iter(|| sweep(&mut port, &t, tx));
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
