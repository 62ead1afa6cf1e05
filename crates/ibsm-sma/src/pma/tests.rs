use super::*;

use ibsm_wire::GsMad;
use ibsm_wire::perf::{
    CounterSelect, CounterSelect2, ExtCounterSelect, ExtCounterSelect2, perf_request,
};
use proptest::prelude::*;

fn ask(pma: &mut Pma, method: Method, attr: PerfAttributeId, data: &[u8]) -> Option<GsMad> {
    let req = perf_request(method, attr, 0x77, data).to_bytes();
    pma.handle(Instant::ZERO, &req)
        .map(|b| GsMad::parse(&b).expect("256 bytes"))
}

fn pc_req(port: u8, select: CounterSelect) -> [u8; PortCounters::SIZE] {
    PortCounters {
        port_select: port,
        counter_select: select,
        ..PortCounters::default()
    }
    .to_bytes()
}

fn get_pc(pma: &mut Pma, port: u8) -> PortCounters {
    let r = ask(
        pma,
        Method::Get,
        PerfAttributeId::PortCounters,
        &pc_req(port, CounterSelect::EMPTY),
    )
    .expect("answered");
    assert_eq!(r.status, Status::OK);
    PortCounters::parse(&r.data).unwrap()
}

#[test]
fn class_port_info_names_the_capabilities() {
    let mut ca = Pma::new(PmaConfig::ca(2));
    let r = ask(&mut ca, Method::Get, PerfAttributeId::ClassPortInfo, &[]).unwrap();
    assert!(r.response);
    assert_eq!(r.method, Method::Get);
    assert_eq!(r.transaction_id, 0x77);
    let cpi = ClassPortInfo::parse(&r.data).unwrap();
    assert!(cpi.pm_capabilities().contains(PmCapabilityMask::XMIT_WAIT));
    assert!(
        !cpi.pm_capabilities()
            .contains(PmCapabilityMask::ALL_PORT_SELECT)
    );
    let mut sw = Pma::new(PmaConfig::switch(8));
    let r = ask(&mut sw, Method::Get, PerfAttributeId::ClassPortInfo, &[]).unwrap();
    let cpi = ClassPortInfo::parse(&r.data).unwrap();
    assert!(
        cpi.pm_capabilities()
            .contains(PmCapabilityMask::ALL_PORT_SELECT)
    );
    assert!(
        cpi.pm_capabilities2()
            .contains(PmCapabilityMask2::ADDITIONAL_EXT_COUNTERS)
    );
}

#[test]
fn counters_saturate_at_their_width_and_data_is_in_words() {
    let mut pma = Pma::new(PmaConfig::ca(1));
    pma.add(1, Counter::SymbolErrors, 70_000);
    pma.add(1, Counter::LinkDowned, 300);
    pma.add(1, Counter::LocalLinkIntegrityErrors, 16);
    pma.add(1, Counter::XmitPkts, u64::MAX);
    pma.add(1, Counter::XmitPkts, 5);
    // 10 + 10 octets = 5 words: the remainder carries over.
    pma.count_xmit(1, 10, 1, false);
    pma.count_xmit(1, 10, 1, false);
    pma.count_rcv(1, 7, 2, true);
    let pc = get_pc(&mut pma, 1);
    assert_eq!(pc.symbol_error_counter, 0xFFFF);
    assert_eq!(pc.link_downed_counter, 0xFF);
    assert_eq!(pc.local_link_integrity_errors, 0xF);
    assert_eq!(pc.port_xmit_pkts, u32::MAX);
    assert_eq!(pc.port_xmit_data, 5);
    assert_eq!(pc.port_rcv_data, 1);
    assert_eq!(pc.port_rcv_pkts, 2);
    let r = ask(
        &mut pma,
        Method::Get,
        PerfAttributeId::PortCountersExtended,
        &[0, 1],
    )
    .unwrap();
    let e = PortCountersExtended::parse(&r.data).unwrap();
    assert_eq!(e.symbol_error_counter, 70_000);
    assert_eq!(e.link_downed_counter, 300);
    assert_eq!(e.port_xmit_pkts, u64::MAX);
    assert_eq!(e.port_xmit_data, 5);
    assert_eq!(
        (e.port_unicast_xmit_pkts, e.port_multicast_rcv_pkts),
        (2, 2)
    );
}

#[test]
fn set_resets_only_the_selected_counters() {
    let mut pma = Pma::new(PmaConfig::ca(2));
    for &c in Counter::EVERY {
        pma.add(1, c, 3);
        pma.add(2, c, 3);
    }
    let r = ask(
        &mut pma,
        Method::Set,
        PerfAttributeId::PortCounters,
        &pc_req(
            1,
            CounterSelect::SYMBOL_ERROR | CounterSelect::PORT_RCV_DATA,
        ),
    )
    .unwrap();
    assert_eq!(r.status, Status::OK);
    assert_eq!(r.method, Method::Get, "Set is answered by GetResp");
    let after = PortCounters::parse(&r.data).unwrap();
    assert_eq!(after.symbol_error_counter, 0);
    assert_eq!(after.port_rcv_data, 0);
    assert_eq!(after.port_xmit_data, 3);
    assert_eq!(after.link_downed_counter, 3);
    assert_eq!(after.port_xmit_wait, 3, "CounterSelect2 not set");
    assert_eq!(
        get_pc(&mut pma, 2).symbol_error_counter,
        3,
        "other port kept"
    );

    // CounterSelect2 resets PortXmitWait; the extended error counters follow
    // PortCountersExtended.CounterSelect2.
    let mut req = PortCounters::parse(&pc_req(1, CounterSelect::EMPTY)).unwrap();
    req.counter_select2 = CounterSelect2::PORT_XMIT_WAIT;
    ask(
        &mut pma,
        Method::Set,
        PerfAttributeId::PortCounters,
        &req.to_bytes(),
    )
    .unwrap();
    assert_eq!(pma.get(1, Counter::XmitWait), 0);
    let ext = PortCountersExtended {
        port_select: 2,
        counter_select: ExtCounterSelect::PORT_UNICAST_XMIT_PKTS,
        counter_select2: ExtCounterSelect2::LINK_DOWNED,
        ..PortCountersExtended::default()
    };
    ask(
        &mut pma,
        Method::Set,
        PerfAttributeId::PortCountersExtended,
        &ext.to_bytes(),
    )
    .unwrap();
    assert_eq!(pma.get(2, Counter::UnicastXmitPkts), 0);
    assert_eq!(pma.get(2, Counter::LinkDowned), 0);
    assert_eq!(pma.get(2, Counter::XmitPkts), 3);
    assert_eq!(pma.get(2, Counter::SymbolErrors), 3);

    let det = PortRcvErrorDetails {
        port_select: 2,
        counter_select: 0b10,
        ..PortRcvErrorDetails::default()
    };
    let r = ask(
        &mut pma,
        Method::Set,
        PerfAttributeId::PortRcvErrorDetails,
        &det.to_bytes(),
    )
    .unwrap();
    let d = PortRcvErrorDetails::parse(&r.data).unwrap();
    assert_eq!(
        (d.port_malformed_packet_errors, d.port_local_physical_errors),
        (0, 3)
    );
    let det = PortXmitDiscardDetails {
        port_select: 2,
        counter_select: 0b1000,
        ..PortXmitDiscardDetails::default()
    };
    let r = ask(
        &mut pma,
        Method::Set,
        PerfAttributeId::PortXmitDiscardDetails,
        &det.to_bytes(),
    )
    .unwrap();
    let d = PortXmitDiscardDetails::parse(&r.data).unwrap();
    assert_eq!(
        (
            d.port_sw_hoq_lifetime_limit_discards,
            d.port_inactive_discards
        ),
        (0, 3)
    );
}

#[test]
fn all_port_select_sums_on_switches_only() {
    let mut sw = Pma::new(PmaConfig::switch(4));
    sw.add(1, Counter::SymbolErrors, 40_000);
    sw.add(3, Counter::SymbolErrors, 40_000);
    sw.count_rcv(2, 400, 4, false);
    sw.count_rcv(4, 400, 4, false);
    let all = get_pc(&mut sw, ALL_PORTS);
    assert_eq!(all.port_select, ALL_PORTS);
    assert_eq!(all.symbol_error_counter, 0xFFFF, "the sum saturates too");
    assert_eq!((all.port_rcv_data, all.port_rcv_pkts), (200, 8));
    assert_eq!(get_pc(&mut sw, 0).port_rcv_pkts, 0, "port 0 is a port");
    ask(
        &mut sw,
        Method::Set,
        PerfAttributeId::PortCounters,
        &pc_req(ALL_PORTS, CounterSelect::ALL),
    )
    .unwrap();
    for p in 0..=4 {
        assert_eq!(
            get_pc(&mut sw, p),
            PortCounters {
                port_select: p,
                ..PortCounters::default()
            }
        );
    }

    let mut no_cap = PmaConfig::switch(4);
    no_cap
        .capability_mask
        .remove(PmCapabilityMask::ALL_PORT_SELECT);
    let mut sw = Pma::new(no_cap);
    let r = ask(
        &mut sw,
        Method::Get,
        PerfAttributeId::PortCounters,
        &pc_req(ALL_PORTS, CounterSelect::EMPTY),
    )
    .unwrap();
    assert_eq!(r.status, Status::INVALID_VALUE);
    let mut ca = Pma::new(PmaConfig::ca(2));
    for port in [0, 3, ALL_PORTS] {
        let r = ask(
            &mut ca,
            Method::Get,
            PerfAttributeId::PortCounters,
            &pc_req(port, CounterSelect::EMPTY),
        )
        .unwrap();
        assert_eq!(r.status, Status::INVALID_VALUE, "CA port {port}");
    }
}

#[test]
fn bad_requests_get_the_right_status_or_none() {
    let mut pma = Pma::new(PmaConfig::ca(1));
    pma.add(1, Counter::SymbolErrors, 1);
    let r = ask(
        &mut pma,
        Method::Get,
        PerfAttributeId::PortSamplesControl,
        &[0, 1],
    )
    .unwrap();
    assert_eq!(r.status, Status::METHOD_ATTR_UNSUPPORTED);
    let r = ask(&mut pma, Method::Set, PerfAttributeId::ClassPortInfo, &[]).unwrap();
    assert_eq!(r.status, Status::METHOD_ATTR_UNSUPPORTED);
    let r = ask(
        &mut pma,
        Method::Send,
        PerfAttributeId::PortCounters,
        &[0, 1],
    )
    .unwrap();
    assert_eq!(r.status, Status::METHOD_UNSUPPORTED);
    assert!(r.response);
    // A Set with a bad PortSelect resets nothing.
    let r = ask(
        &mut pma,
        Method::Set,
        PerfAttributeId::PortCounters,
        &pc_req(9, CounterSelect::ALL),
    )
    .unwrap();
    assert_eq!(r.status, Status::INVALID_VALUE);
    assert_eq!(pma.get(1, Counter::SymbolErrors), 1);

    let mut req = perf_request(Method::Get, PerfAttributeId::PortCounters, 1, &[0, 1]);
    req.class_version = 2;
    let r = pma.handle(Instant::ZERO, &req.to_bytes()).unwrap();
    assert_eq!(GsMad::parse(&r).unwrap().status, Status::BAD_VERSION);
    req.class_version = 1;
    req.response = true;
    assert!(pma.handle(Instant::ZERO, &req.to_bytes()).is_none());
    req.response = false;
    req.base_version = 2;
    assert!(pma.handle(Instant::ZERO, &req.to_bytes()).is_none());
    req.base_version = 1;
    req.mgmt_class = MgmtClass::SubnLid;
    assert!(pma.handle(Instant::ZERO, &req.to_bytes()).is_none());
    assert!(pma.handle(Instant::ZERO, &[1, 4, 1, 1]).is_none());
    let s = pma.stats();
    assert_eq!((s.received, s.responded, s.dropped), (9, 5, 4));
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Op {
    Add(u8, usize, u64),
    Traffic(u8, u64, u64, bool, bool),
    SetPc(u8, u16, u8),
    SetExt(u8, u16, u32),
}

fn op() -> impl Strategy<Value = Op> {
    let port = prop_oneof![0u8..=5, Just(ALL_PORTS)];
    let amount = prop_oneof![0u64..1000, any::<u64>(), Just(u64::MAX)];
    prop_oneof![
        (port.clone(), 0..N, amount.clone()).prop_map(|(p, c, n)| Op::Add(p, c, n)),
        (port.clone(), amount, 0u64..10, any::<bool>(), any::<bool>())
            .prop_map(|(p, o, k, m, x)| Op::Traffic(p, o, k, m, x)),
        (port.clone(), any::<u16>(), any::<u8>()).prop_map(|(p, s, s2)| Op::SetPc(p, s, s2)),
        (port, any::<u16>(), any::<u32>()).prop_map(|(p, s, s2)| Op::SetExt(p, s, s2)),
    ]
}

proptest! {
    /// Against a model of 64-bit saturating counts: every Get shows the model clamped to
    /// the field width, and a Set zeroes exactly the selected counters of the selected
    /// ports.
    #[test]
    fn saturation_and_reset_only_selected(
        switch in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let cfg = if switch { PmaConfig::switch(4) } else { PmaConfig::ca(4) };
        let mut pma = Pma::new(cfg);
        // Octets for the data counters, so the model needs no remainder bookkeeping.
        let mut model = [[0u128; N]; 5];
        let ports = |p: u8| -> Vec<usize> {
            if p == ALL_PORTS && switch {
                (0..5).collect()
            } else if p <= 4 && (switch || p >= 1) {
                vec![usize::from(p)]
            } else {
                Vec::new()
            }
        };
        for op in &ops {
            match *op {
                Op::Add(p, c, n) => {
                    pma.add(p, Counter::EVERY[c], n);
                    if p != ALL_PORTS {
                        for i in ports(p) {
                            let data = matches!(Counter::EVERY[c], Counter::XmitData | Counter::RcvData);
                            let add = if data { u128::from(n.saturating_mul(4)) } else { u128::from(n) };
                            model[i][c] = (model[i][c] + add).min(if data { u128::from(u64::MAX) * 4 + 3 } else { u128::from(u64::MAX) });
                        }
                    }
                }
                Op::Traffic(p, octets, k, multicast, xmit) => {
                    if xmit { pma.count_xmit(p, octets, k, multicast) } else { pma.count_rcv(p, octets, k, multicast) }
                    if p != ALL_PORTS {
                        for i in ports(p) {
                            let (d, pk, u, m) = if xmit {
                                (Counter::XmitData, Counter::XmitPkts, Counter::UnicastXmitPkts, Counter::MulticastXmitPkts)
                            } else {
                                (Counter::RcvData, Counter::RcvPkts, Counter::UnicastRcvPkts, Counter::MulticastRcvPkts)
                            };
                            model[i][d as usize] = (model[i][d as usize] + u128::from(octets)).min(u128::from(u64::MAX) * 4 + 3);
                            for c in [pk, if multicast { m } else { u }] {
                                model[i][c as usize] = (model[i][c as usize] + u128::from(k)).min(u128::from(u64::MAX));
                            }
                        }
                    }
                }
                Op::SetPc(p, s, s2) => {
                    let req = PortCounters {
                        port_select: p,
                        counter_select: CounterSelect(s),
                        counter_select2: CounterSelect2(s2),
                        ..PortCounters::default()
                    };
                    let r = ask(&mut pma, Method::Set, PerfAttributeId::PortCounters, &req.to_bytes()).unwrap();
                    prop_assert_eq!(r.status.is_ok(), !ports(p).is_empty());
                    for i in ports(p) {
                        for (b, c) in PC_SELECT.iter().enumerate() {
                            if s & (1 << b) != 0 { model[i][*c as usize] = 0; }
                        }
                        if s2 & 1 != 0 { model[i][Counter::XmitWait as usize] = 0; }
                    }
                }
                Op::SetExt(p, s, s2) => {
                    let req = PortCountersExtended {
                        port_select: p,
                        counter_select: ExtCounterSelect(s),
                        counter_select2: ExtCounterSelect2(s2),
                        ..PortCountersExtended::default()
                    };
                    let r = ask(&mut pma, Method::Set, PerfAttributeId::PortCountersExtended, &req.to_bytes()).unwrap();
                    prop_assert_eq!(r.status.is_ok(), !ports(p).is_empty());
                    for i in ports(p) {
                        for (b, c) in EXT_SELECT.iter().enumerate() {
                            if s & (1 << b) != 0 { model[i][*c as usize] = 0; }
                        }
                        for (b, c) in EXT_SELECT2.iter().enumerate() {
                            if s2 & (1 << b) != 0 { model[i][*c as usize] = 0; }
                        }
                    }
                }
            }
            for i in 0..5u8 {
                if ports(i).is_empty() { continue; }
                let want = |c: Counter| -> u64 {
                    let v = model[usize::from(i)][c as usize];
                    let v = if matches!(c, Counter::XmitData | Counter::RcvData) { v / 4 } else { v };
                    u64::try_from(v).unwrap_or(u64::MAX)
                };
                let pc = get_pc(&mut pma, i);
                prop_assert_eq!(u64::from(pc.symbol_error_counter), want(Counter::SymbolErrors).min(0xFFFF));
                prop_assert_eq!(u64::from(pc.link_downed_counter), want(Counter::LinkDowned).min(0xFF));
                prop_assert_eq!(u64::from(pc.excessive_buffer_overrun_errors), want(Counter::ExcessiveBufferOverrunErrors).min(0xF));
                prop_assert_eq!(u64::from(pc.port_xmit_data), want(Counter::XmitData).min(0xFFFF_FFFF));
                prop_assert_eq!(u64::from(pc.port_rcv_pkts), want(Counter::RcvPkts).min(0xFFFF_FFFF));
                prop_assert_eq!(u64::from(pc.port_xmit_wait), want(Counter::XmitWait).min(0xFFFF_FFFF));
                for &c in Counter::EVERY {
                    prop_assert_eq!(pma.get(i, c), want(c), "port {} {:?}", i, c);
                }
            }
        }
    }

    /// Any bytes: never a panic, and an answer is always a response of class 0x04 with
    /// the request's TransactionID.
    #[test]
    fn any_bytes(mut bytes in proptest::collection::vec(any::<u8>(), 0..300), class04: bool, switch: bool) {
        if class04 && bytes.len() > 2 {
            bytes[0] = 1;
            bytes[1] = 4;
            bytes[2] = 1;
        }
        let mut pma = Pma::new(if switch { PmaConfig::switch(3) } else { PmaConfig::ca(2) });
        if let Some(r) = pma.handle(Instant::ZERO, &bytes) {
            let r = GsMad::parse(&r).unwrap();
            let q = GsMad::parse(&bytes).unwrap();
            prop_assert!(r.response);
            prop_assert_eq!(r.mgmt_class, MgmtClass::PerfMgt);
            prop_assert_eq!(r.transaction_id, q.transaction_id);
        }
    }
}

/// The storage order is a permutation (no two counters share a slot) with the traffic
/// counters in the inline slots.
#[test]
fn every_counter_has_its_own_slot_and_traffic_comes_first() {
    let mut seen = [false; N];
    for &c in Counter::EVERY {
        let s = usize::from(SLOT[c as usize]);
        assert!(!seen[s], "{c:?} shares slot {s}");
        seen[s] = true;
    }
    for (k, c) in TRAFFIC.iter().enumerate() {
        assert_eq!(usize::from(SLOT[*c as usize]), k, "{c:?}");
    }
    assert!(TRAFFIC.iter().all(|c| usize::from(SLOT[*c as usize]) < HOT));
    // Each counter keeps its own count.
    let mut p = PortCounts::default();
    for (i, c) in Counter::EVERY.iter().enumerate() {
        p.add(*c, i as u64 + 1);
    }
    for (i, c) in Counter::EVERY.iter().enumerate() {
        assert_eq!(p.get(*c), i as u64 + 1, "{c:?}");
    }
}

/// Only the traffic counters are held inline; an error counter's block exists once one
/// of them counted something, and holds what it counted through sums and resets.
#[test]
fn rare_counters_are_held_only_once_counted() {
    assert!(core::mem::size_of::<PortCounts>() <= 80);
    let mut p = PortCounts::default();
    p.add(Counter::SymbolErrors, 0);
    p.reset(Counter::LinkDowned);
    p.add(Counter::XmitPkts, 1);
    p.add_octets(Counter::XmitData, 256);
    assert!(p.rare.is_none(), "nothing but traffic counted yet");
    p.add(Counter::SymbolErrors, 3);
    assert!(p.rare.is_some());
    assert_eq!(p.get(Counter::SymbolErrors), 3);
    let mut sum = PortCounts::default();
    sum.sum(&p);
    sum.sum(&p);
    assert_eq!(sum.get(Counter::SymbolErrors), 6);
    assert_eq!(sum.get(Counter::XmitPkts), 2);
    p.reset(Counter::SymbolErrors);
    assert_eq!(p.get(Counter::SymbolErrors), 0);
    assert_eq!(p.get(Counter::XmitPkts), 1);
}
