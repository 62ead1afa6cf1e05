//! Cost of the SA paths a big fabric exercises: building a GetTableResp of many
//! records into RMPP segments (no allocation), reassembling them, matching records
//! against a ComponentMask template, and decoding PathRecords.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ibsm_wire::sa::rmpp::{Reassembler, RecordTable, Segmenter, SliceBuffer};
use ibsm_wire::sa::{
    ComponentMask, NodeRecord, PathRecord, PortInfoRecord, SaMad, SaRecord, Template, records,
};
use ibsm_wire::{Gid, Method, NodeDescription, NodeType, PortState};

/// NodeRecords of a 10,000-node fabric (a GetTable(NodeRecord) with an empty mask).
fn nodes(n: u16) -> Vec<NodeRecord> {
    (0..n)
        .map(|i| {
            let mut r = NodeRecord {
                lid: i + 1,
                node_description: NodeDescription::from_text("ibsim node"),
                ..NodeRecord::default()
            };
            r.node_info.node_type = if i % 10 == 0 {
                NodeType::Switch
            } else {
                NodeType::Ca
            };
            r.node_info.node_guid = 0x0002_c903_0000_0000 | u64::from(i);
            r.node_info.num_ports = 1;
            r
        })
        .collect()
}

fn header<R: SaRecord>() -> SaMad {
    SaMad::request(Method::GetTable, 1, ComponentMask::NONE, &R::default())
        .expect("template fits")
        .response_header::<R>()
}

fn rmpp(c: &mut Criterion) {
    let recs = nodes(10_000);
    let table = RecordTable::new(&recs);
    let seg = Segmenter::sa(&header::<NodeRecord>(), table).expect("fits u32");
    let segments: Vec<[u8; 256]> = seg.iter().collect();
    let bytes = recs.len() as u64 * 112;
    let mut g = c.benchmark_group("SA GetTableResp 10k NodeRecords");
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("segment (encode records on the fly)", |b| {
        let mut out = [0u8; 256];
        b.iter(|| {
            for s in 1..=seg.segment_count() {
                seg.write_segment(s, &mut out).expect("in range");
                black_box(&out);
            }
        });
    });
    let mut store = vec![0u8; recs.len() * 112 + 256];
    g.bench_function("reassemble", |b| {
        b.iter(|| {
            let mut rx = Reassembler::sa(SliceBuffer::new(&mut store));
            for m in &segments {
                rx.push(black_box(m)).expect("own segments");
            }
            rx.data().len()
        });
    });
    let data = {
        let mut rx = Reassembler::sa(SliceBuffer::new(&mut store));
        for m in &segments {
            rx.push(m).expect("own segments");
        }
        rx.data().to_vec()
    };
    g.bench_function("decode records", |b| {
        b.iter(|| {
            records::<NodeRecord>(black_box(&data), NodeRecord::ATTRIBUTE_OFFSET)
                .expect("stride")
                .filter(|r| r.node_info.node_type == NodeType::Switch)
                .count()
        });
    });
    g.finish();
}

fn matching(c: &mut Criterion) {
    let recs: Vec<PortInfoRecord> = (0..10_000u16)
        .map(|i| {
            let mut r = PortInfoRecord {
                endport_lid: i + 1,
                port_num: 1,
                ..PortInfoRecord::default()
            };
            r.port_info.lid = i + 1;
            r.port_info.port_state = if i % 7 == 0 {
                PortState::Down
            } else {
                PortState::Active
            };
            r
        })
        .collect();
    let mut t = PortInfoRecord::default();
    t.port_info.port_state = PortState::Active;
    let mask = PortInfoRecord::CM_PORT_STATE;
    let mut g = c.benchmark_group("SA matching");
    g.throughput(Throughput::Elements(recs.len() as u64));
    g.bench_function("PortInfoRecord by PortState, 10k records", |b| {
        b.iter(|| {
            recs.iter()
                .filter(|r| r.matches(black_box(&t), mask))
                .count()
        });
    });
    g.bench_function("same with a Template built once", |b| {
        let tpl = Template::new(&t, mask);
        b.iter(|| recs.iter().filter(|r| black_box(&tpl).matches(r)).count());
    });
    let encoded: Vec<[u8; 68]> = recs.iter().map(PortInfoRecord::to_bytes).collect();
    g.bench_function("same on encoded records", |b| {
        let tpl = Template::new(&t, mask);
        b.iter(|| {
            encoded
                .iter()
                .filter(|r| black_box(&tpl).matches_bytes(&r[..]))
                .count()
        });
    });
    g.finish();
}

fn path_record(c: &mut Criterion) {
    let p = PathRecord {
        sgid: Gid::new(ibsm_wire::DEFAULT_SUBNET_PREFIX, 1),
        dgid: Gid::new(ibsm_wire::DEFAULT_SUBNET_PREFIX, 2),
        slid: 1,
        dlid: 2,
        numb_path: 1,
        reversible: true,
        pkey: 0xFFFF,
        ..PathRecord::default()
    };
    let bytes = p.to_bytes();
    let mut g = c.benchmark_group("PathRecord");
    g.throughput(Throughput::Elements(1));
    g.bench_function("parse", |b| {
        b.iter(|| PathRecord::parse(black_box(&bytes[..])))
    });
    g.bench_function("to_bytes", |b| b.iter(|| black_box(&p).to_bytes()));
    g.finish();
}

criterion_group!(benches, rmpp, matching, path_record);
criterion_main!(benches);
