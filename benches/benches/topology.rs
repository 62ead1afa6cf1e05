//! ibsm-topology at scale: the 3-level radix-48 fat tree (27,648 CAs, 2,880 switches).
//!
//! Measures generate+build, CSR snapshot, ibnetdiscover write and parse, and all-pairs
//! switch hops. Before the timed runs it prints the memory the fabric costs: heap
//! bytes of the model and snapshot as computed, and peak RSS (VmHWM) of the process.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_topology::{Csr, Fabric, generate, ibnet};

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn report_memory(f: &Fabric, csr: &Csr, text: &str) {
    let ports: usize = f.nodes().map(|(_, n)| usize::from(n.num_ports()) + 1).sum();
    eprintln!(
        "radix-48 3-level fat tree: {} nodes ({} switches), {} links, {} port slots",
        f.node_count(),
        f.switch_count(),
        f.link_count(),
        ports
    );
    eprintln!(
        "model estimate: ports {} B ({} B each), CSR snapshot {} B, ibnetdiscover text {} B",
        ports * size_of::<ibsm_topology::Port>(),
        size_of::<ibsm_topology::Port>(),
        csr.heap_bytes(),
        text.len()
    );
    if let Some(kib) = vm_hwm_kib() {
        eprintln!("peak RSS so far (VmHWM): {kib} KiB");
    }
}

fn bench(c: &mut Criterion) {
    let before = vm_hwm_kib();
    let fabric = generate::fat_tree(48, 3).expect("fat tree");
    if let Some(kib) = before {
        eprintln!("VmHWM before generating: {kib} KiB");
    }
    let csr = Csr::new(&fabric);
    let text = ibnet::write(&fabric, &ibnet::WriteOptions::default()).expect("write");
    report_memory(&fabric, &csr, &text);

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
