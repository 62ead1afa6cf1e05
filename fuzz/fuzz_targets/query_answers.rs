//! ibsm-query's SMP and PerfMgt clients and the discovery walk on arbitrary answers:
//! queries are in flight, then every chunk of the input arrives as a received MAD
//! (class, R bit and a pending TID forced on when the chunk is long enough, so the
//! status and decode paths are reached). Never panics; every query ends with exactly
//! one outcome once retries run out. Then the discovery walk takes chunks as answers.
#![no_main]

use std::time::Duration;

use ibsm_query::discover::{Discovered, Probe, Walk};
use ibsm_query::perf::{PerfClient, default_tx};
use ibsm_query::smp::{SmpClient, SmpConfig, Target};
use ibsm_transport::{Incoming, Instant, Received, SansIo, TxConfig};
use ibsm_wire::perf::PortCounters;
use ibsm_wire::{DrPath, NodeDescription, NodeInfo, PortInfo, SwitchInfo};
use libfuzzer_sys::fuzz_target;

fn rx(mad: Vec<u8>, at: Instant) -> Incoming {
    Incoming::Mad(Received { mad, slid: 1, sl: 0, qpn: 1, pkey_index: 0, at })
}

fn force(chunk: &[u8], class: u8, tid: &[u8]) -> Vec<u8> {
    let mut m = chunk.to_vec();
    if m.len() >= 16 {
        m[1] = class;
        m[3] |= 0x80;
        m[8..16].copy_from_slice(tid);
    }
    m
}

fuzz_target!(|data: &[u8]| {
    let tx = TxConfig { timeout: Duration::from_millis(5), retries: 1, ..default_tx() };
    let here = Target::Route(DrPath::local());
    let mut smp: SmpClient<u8> = SmpClient::new(SmpConfig { tx, m_key: 0 });
    smp.get::<NodeInfo>(here, 0, 0).unwrap();
    smp.get::<PortInfo>(Target::Lid(3), 1, 1).unwrap();
    let mut perf: PerfClient<u8> = PerfClient::new(tx);
    perf.get::<PortCounters>(4, 1, 0).unwrap();
    perf.class_port_info(4, 1).unwrap();
    let mut smp_tids = Vec::new();
    while let Some(t) = smp.poll_transmit(Instant::ZERO) {
        smp_tids.push((t.mad[1], t.mad[8..16].to_vec()));
    }
    let mut perf_tids = Vec::new();
    while let Some(t) = perf.poll_transmit(Instant::ZERO) {
        perf_tids.push(t.mad[8..16].to_vec());
    }
    let mut at = Instant::ZERO;
    for (k, chunk) in data.split(|&b| b == 0xA5).enumerate() {
        at += Duration::from_micros(10);
        let (class, tid) = &smp_tids[k % smp_tids.len()];
        smp.handle_incoming(at, rx(force(chunk, *class, tid), at));
        perf.handle_incoming(at, rx(force(chunk, 0x04, &perf_tids[k % perf_tids.len()]), at));
    }
    let mut outcomes = (0, 0);
    for step in 1..=20u64 {
        let now = at + Duration::from_millis(step * 5);
        smp.handle_timeout(now);
        perf.handle_timeout(now);
        while smp.poll_transmit(now).is_some() {}
        while perf.poll_transmit(now).is_some() {}
        while let Some(e) = smp.poll_event() {
            let _ = e.decode::<NodeInfo>();
            outcomes.0 += usize::from(!matches!(e, ibsm_query::smp::SmpEvent::Unsolicited(_)));
        }
        while let Some(e) = perf.poll_event() {
            let _ = e.decode::<PortCounters>();
            let _ = e.class_port_info();
            outcomes.1 += usize::from(!matches!(e, ibsm_query::perf::PerfEvent::Unsolicited(_)));
        }
    }
    assert_eq!(outcomes, (2, 2));
    assert!(smp.is_idle() && perf.is_idle());
    // The discovery walk fed the chunks as answers to its probes, in order: whatever
    // NodeInfos and PortInfos arrive, it never panics and its model converts to a
    // fabric or a typed error.
    let mut walk = Walk::new();
    let mut found = Discovered::default();
    for chunk in data.split(|&b| b == 0x5A).take(256) {
        let Some((probe, _route, _modifier)) = walk.poll_probe(&mut found) else { break };
        let mut d = [0u8; 64];
        let n = chunk.len().min(64);
        d[..n].copy_from_slice(&chunk[..n]);
        match probe {
            Probe::NodeInfo { path, from } => {
                if let Ok(ni) = NodeInfo::parse(&d) {
                    walk.node_info(&mut found, path, from, &ni);
                }
            }
            Probe::PortInfo { node, port } => {
                if let Ok(pi) = PortInfo::parse(&d) {
                    walk.port_info(&mut found, node, port, &pi);
                }
            }
            Probe::NodeDescription { node } => {
                if let Ok(nd) = NodeDescription::parse(&d) {
                    walk.node_description(&mut found, node, &nd);
                }
            }
            Probe::SwitchInfo { node } => {
                if let Ok(si) = SwitchInfo::parse(&d) {
                    walk.switch_info(&mut found, node, &si);
                }
                // The ports follow the SwitchInfo, as for a client without latches.
                walk.read_ports(&found, node);
            }
        }
    }
    let _ = found.to_fabric();
});
