//! Cost of decoding and encoding the SM attributes an SM handles most: PortInfo (every
//! sweep reads it for every port), LinearForwardingTable blocks (routing uploads) and
//! Notice trap details, through owned values and through zero-copy views.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ibsm_wire::{
    CapabilityMask, LinearForwardingTable, LinearForwardingTableView, LinkWidth, Notice, PortInfo,
    PortInfoView, PortState, ProducerType, Trap128Details, TrapData,
};

fn sample_port_info() -> [u8; 64] {
    PortInfo {
        m_key: 42,
        gid_prefix: ibsm_wire::DEFAULT_SUBNET_PREFIX,
        lid: 5,
        master_sm_lid: 1,
        capability_mask: CapabilityMask::IS_SM | CapabilityMask::IS_TRAP_SUPPORTED,
        port_state: PortState::Active,
        link_width_active: LinkWidth::X4,
        lmc: 2,
        ..PortInfo::default()
    }
    .to_bytes()
}

fn port_info(c: &mut Criterion) {
    let bytes = sample_port_info();
    let mut g = c.benchmark_group("PortInfo");
    g.throughput(Throughput::Elements(1));
    g.bench_function("parse", |b| {
        b.iter(|| PortInfo::parse(black_box(&bytes[..])));
    });
    let p = PortInfo::parse(&bytes).expect("64 bytes");
    g.bench_function("to_bytes", |b| b.iter(|| black_box(&p).to_bytes()));
    g.bench_function("view_state_lid_lmc", |b| {
        b.iter(|| {
            let v = PortInfoView::new_checked(black_box(&bytes[..])).expect("64 bytes");
            (v.port_state(), v.lid(), v.lmc())
        });
    });
    g.bench_function("view_set_port_state", |b| {
        let mut buf = bytes;
        b.iter(|| {
            let mut v = PortInfoView::new_checked(black_box(&mut buf[..])).expect("64 bytes");
            v.set_port_state(PortState::Armed);
        });
    });
    g.finish();
}

fn lft(c: &mut Criterion) {
    let mut bytes = [0xFFu8; 64];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i % 36) as u8 + 1;
    }
    let mut g = c.benchmark_group("LinearForwardingTable");
    g.throughput(Throughput::Elements(64));
    g.bench_function("parse", |b| {
        b.iter(|| LinearForwardingTable::parse(black_box(&bytes[..])));
    });
    g.bench_function("view_64_lookups", |b| {
        b.iter(|| {
            let v = LinearForwardingTableView::new_checked(black_box(&bytes[..])).expect("64");
            (0..64).map(|i| v.port(i).unwrap_or(0) as u32).sum::<u32>()
        });
    });
    g.finish();
}

fn notice(c: &mut Criterion) {
    let bytes =
        Notice::generic_with(ProducerType::Switch, 7, &Trap128Details { lid: 7 }).to_bytes();
    c.bench_function("Notice/parse_trap_data", |b| {
        b.iter(|| {
            let n = Notice::parse(black_box(&bytes[..])).expect("64 bytes");
            matches!(n.trap_data(), TrapData::LinkStateChange(_))
        });
    });
}

criterion_group!(benches, port_info, lft, notice);
criterion_main!(benches);
