//! ibsm-topology at scale: the 3-level radix-48 fat tree (27,648 CAs, 2,880 switches).
//!
//! Measures generate+build, CSR snapshot, ibnetdiscover write and parse, and a BFS over
//! the switches. Before the timed runs it prints what the fabric costs in memory: the
//! model's and snapshot's heap bytes as computed, and the process peak RSS (VmHWM from
//! /proc/self/status) after each step.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_topology::{Csr, generate, ibnet};

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn bench(c: &mut Criterion) {
    let h0 = vm_hwm_kib();
    let fabric = generate::fat_tree(48, 3).expect("fat tree");
    let h1 = vm_hwm_kib();
    let csr = Csr::new(&fabric);
    let h2 = vm_hwm_kib();
    let text = ibnet::write(&fabric, &ibnet::WriteOptions::default()).expect("write");
    let h3 = vm_hwm_kib();
    let parsed = ibnet::parse(&text).expect("parse").fabric;
    let h4 = vm_hwm_kib();
    assert_eq!(parsed.link_count(), fabric.link_count());
    drop(parsed);
    let ports: usize = fabric
        .nodes()
        .map(|(_, n)| usize::from(n.num_ports()) + 1)
        .sum();
    eprintln!(
        "radix-48 3-level fat tree: {} nodes ({} switches), {} links, {} port slots",
        fabric.node_count(),
        fabric.switch_count(),
        fabric.link_count(),
        ports
    );
    eprintln!(
        "heap: Fabric {} B ({:.0} B/node), Csr {} B, ibnetdiscover text {} B",
        fabric.heap_bytes(),
        fabric.heap_bytes() as f64 / fabric.node_count() as f64,
        csr.heap_bytes(),
        text.len()
    );
    eprintln!("VmHWM KiB: start {h0}, +generate {h1}, +csr {h2}, +write {h3}, +parse {h4}");

    let mut g = c.benchmark_group("fat_tree_r48_l3");
    g.sample_size(10);
    g.bench_function("generate", |b| {
        b.iter(|| black_box(generate::fat_tree(48, 3).expect("fat tree")));
    });
    g.bench_function("csr_snapshot", |b| b.iter(|| black_box(Csr::new(&fabric))));
    g.bench_function("write_ibnetdiscover", |b| {
        b.iter(|| {
            black_box(ibnet::write(&fabric, &ibnet::WriteOptions::default()).expect("write"))
        });
    });
    g.bench_function("parse_ibnetdiscover", |b| {
        b.iter(|| black_box(ibnet::parse(&text).expect("parse")));
    });
    g.bench_function("bfs_one_switch", |b| b.iter(|| black_box(csr.hops_from(0))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
