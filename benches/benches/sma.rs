//! Requests per second the SMA answers: SubnGet(PortInfo) (every sweep reads it for
//! every port) in both routing forms, a rejected (M_Key-protected) Get, and
//! SubnSet(LinearForwardingTable) blocks (routing uploads). Target: > 10 M/s. And the
//! PMA's counter Gets (a PerfMgr sweep reads PortCounters and PortCountersExtended of
//! every port).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ibsm_sma::{NodeConfig, Pma, PmaConfig, Rx, Sma};
use ibsm_wire::perf::{PerfAttributeId, PortCounters, PortCountersExtended, perf_request};
use ibsm_wire::{DrPath, DrSmp, Instant, LidSmp, Method, SmAttributeId, WireStruct};

/// The SMA paths measured here have no timers: every call happens at the origin.
const T0: Instant = Instant::ZERO;

fn switch() -> Sma {
    let mut s = Sma::new(NodeConfig::switch(0x1000, 36)).expect("valid config");
    for p in 1..=36 {
        s.link_up(T0, p);
    }
    s
}

fn requests(c: &mut Criterion) {
    let mut g = c.benchmark_group("sma");
    g.throughput(Throughput::Elements(1));

    let mut sma = switch();
    let rx = Rx { port: 1, slid: 1 };
    let get = LidSmp::request(Method::Get, SmAttributeId::PortInfo.into(), 5, 1, 0).to_bytes();
    g.bench_function("PortInfo Get (LID-routed)", |b| {
        b.iter(|| sma.handle(T0, rx, black_box(&get[..])));
    });
    let mut dr = DrSmp::request(
        Method::Get,
        SmAttributeId::PortInfo.into(),
        5,
        1,
        0,
        &DrPath::from_ports(&[1, 3]).expect("path"),
    );
    dr.hop_pointer = 3;
    let dr = dr.to_bytes();
    g.bench_function("PortInfo Get (directed route)", |b| {
        b.iter(|| sma.handle(T0, Rx::port(3), black_box(&dr[..])));
    });
    let mut buf = get;
    g.bench_function("PortInfo Get in place", |b| {
        b.iter(|| {
            buf = get;
            sma.handle_in_place(T0, rx, black_box(&mut buf))
        });
    });

    let mut set = LidSmp::request(
        Method::Set,
        SmAttributeId::LinearForwardingTable.into(),
        0,
        2,
        0,
    );
    for (i, e) in set.data.iter_mut().enumerate() {
        *e = (i % 36) as u8 + 1;
    }
    let mut set = set.to_bytes();
    let mut block = 0u32;
    g.bench_function("LFT block Set (768 blocks round robin)", |b| {
        b.iter(|| {
            block = (block + 1) % 768;
            set[20..24].copy_from_slice(&block.to_be_bytes());
            sma.handle(T0, rx, black_box(&set[..]))
        });
    });

    let mut buf = set;
    g.bench_function("LFT block Set in place", |b| {
        b.iter(|| {
            block = (block + 1) % 768;
            set[20..24].copy_from_slice(&block.to_be_bytes());
            buf = set;
            sma.handle_in_place(T0, rx, black_box(&mut buf))
        });
    });

    // A protected switch dropping wrong-keyed Gets (violations saturate, no SM LID: no trap).
    let mut guarded = switch();
    let mut pi = guarded.port_info(0).expect("port 0");
    pi.port_state = ibsm_wire::PortState::NoChange;
    pi.port_phys_state = ibsm_wire::PhysPortState::NoChange;
    pi.m_key = 0xABCD;
    pi.m_key_protect_bits = 2;
    let mut req = LidSmp::request(Method::Set, SmAttributeId::PortInfo.into(), 0, 3, 0);
    req.data = pi.to_bytes();
    guarded
        .handle(T0, rx, &req.to_bytes())
        .expect("keyed Set accepted");
    g.bench_function("PortInfo Get, wrong M_Key (dropped)", |b| {
        b.iter(|| guarded.handle(T0, rx, black_box(&get[..])));
    });
    g.finish();
}

/// A PerfMgt Get of `value`'s attribute, as a PerfMgr sends it.
fn perf_get(attr: PerfAttributeId, value: &impl WireStruct) -> [u8; 256] {
    let mut data = [0u8; 192];
    value.emit_into(&mut data).expect("fits");
    perf_request(Method::Get, attr, 1, &data).to_bytes()
}

fn pma(c: &mut Criterion) {
    let mut g = c.benchmark_group("pma");
    g.throughput(Throughput::Elements(1));
    let mut pma = Pma::new(PmaConfig::switch(36));
    let port1 = PortCounters {
        port_select: 1,
        ..PortCounters::default()
    };
    let ext1 = PortCountersExtended {
        port_select: 1,
        ..PortCountersExtended::default()
    };
    for (name, get) in [
        (
            "PortCounters Get",
            perf_get(PerfAttributeId::PortCounters, &port1),
        ),
        (
            "PortCountersExtended Get",
            perf_get(PerfAttributeId::PortCountersExtended, &ext1),
        ),
    ] {
        g.bench_function(name, |b| b.iter(|| pma.handle(T0, black_box(&get[..]))));
    }
    g.finish();
}

criterion_group!(benches, requests, pma);
criterion_main!(benches);
