//! The Subnet Administrator answering from a warm snapshot: PathRecords computed by
//! walking the LFTs of a routed fat tree (the raw walk, the record, and a whole
//! SubnAdmGet(PathRecord) request -> response MAD), and a GetTable(NodeRecord) of the
//! whole fabric: the request alone (table built, RMPP transfer started, first segment
//! out) and the whole RMPP transfer to a receiver that reassembles it and ACKs with a
//! window of 64 segments.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ibsm_routing::{EngineKind, LidAssignment, RouteOptions, route_with_fallback};
use ibsm_sa::{Requester, SaConfig, SaServer, SaSnapshot};
use ibsm_topology::{Csr, generate};
use ibsm_wire::sa::rmpp::{Reassembler, VecBuffer};
use ibsm_wire::sa::{ComponentMask, NodeRecord, PathRecord, SaMad};
use ibsm_wire::{DEFAULT_SUBNET_PREFIX, Instant, Method};

/// A 3-level fat tree of radix 24 (3,456 CAs, 720 switches; `IBSM_SA_BENCH_RADIX=36`
/// for 11,664 CAs) routed with ftree, and 4,096 pseudo-random (SLID, DLID) pairs of its
/// CAs.
fn setup() -> (SaServer, Vec<(u16, u16)>) {
    let radix = std::env::var("IBSM_SA_BENCH_RADIX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let fabric = generate::fat_tree(radix, 3).expect("fat tree");
    let csr = Csr::new(&fabric);
    let lids = LidAssignment::sequential(&csr, 0).expect("LIDs");
    let routes = route_with_fallback(
        &*EngineKind::FatTree.engine(),
        &csr,
        &lids,
        &RouteOptions::default().with_fallback(vec![EngineKind::MinHop]),
    )
    .expect("routes");
    let snap = SaSnapshot::from_routed(&fabric, &lids, routes, DEFAULT_SUBNET_PREFIX);
    let mut sa = SaServer::new(SaConfig::default());
    sa.load(snap);
    eprintln!(
        "sa_server: {} CAs, {} switches, SA snapshot + index + routes {:.1} MiB",
        csr.term_node.len(),
        csr.switch_node.len(),
        sa.memory_bytes() as f64 / (1 << 20) as f64
    );
    let terms = csr.term_node.len() as u64;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let pairs = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let a = lids.terminal_lid((x % terms) as usize).0;
            let b = lids.terminal_lid(((x >> 32) % terms) as usize).0;
            (a, b)
        })
        .collect();
    (sa, pairs)
}

fn bench(c: &mut Criterion) {
    let (mut sa, pairs) = setup();
    let mut g = c.benchmark_group("sa_server");
    g.throughput(Throughput::Elements(pairs.len() as u64));
    g.bench_function("path_walk_4096", |b| {
        b.iter(|| {
            for &(s, d) in &pairs {
                black_box(sa.path_facts(s, d));
            }
        });
    });
    g.bench_function("path_record_4096", |b| {
        b.iter(|| {
            for &(s, d) in &pairs {
                black_box(sa.path_record(s, d));
            }
        });
    });
    let reqs: Vec<[u8; 256]> = pairs
        .iter()
        .map(|&(s, d)| {
            let t = PathRecord {
                slid: s,
                dlid: d,
                ..PathRecord::default()
            };
            SaMad::request(
                Method::Get,
                1,
                PathRecord::CM_SLID | PathRecord::CM_DLID,
                &t,
            )
            .expect("fits")
            .to_bytes()
        })
        .collect();
    let from = Requester { lid: 1, qpn: 1 };
    g.bench_function("get_path_record_mad_4096", |b| {
        b.iter(|| {
            for r in &reqs {
                black_box(sa.handle(Instant::ZERO, r, &from));
            }
        });
    });
    g.throughput(Throughput::Elements(1));
    let all = SaMad::request(
        Method::GetTable,
        2,
        ComponentMask::NONE,
        &NodeRecord::default(),
    )
    .expect("fits")
    .to_bytes();
    g.sample_size(20);
    g.bench_function("node_record_table_4176_records", |b| {
        b.iter(|| black_box(sa.handle(Instant::ZERO, &all, &from)));
    });
    g.bench_function("node_record_table_rmpp_transfer_4176_records", |b| {
        b.iter(|| {
            let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 24));
            let mut batch = sa.handle(Instant::ZERO, &all, &from);
            while !batch.is_empty() {
                for m in &batch {
                    let _ = rx.push(m);
                }
                batch = sa.handle(Instant::ZERO, &rx.ack(64), &from);
            }
            assert!(rx.is_complete());
            black_box(rx.data().len())
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
