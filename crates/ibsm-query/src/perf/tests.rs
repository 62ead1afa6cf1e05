//! The PerfMgt client and the scrape against a fake set of performance agents on
//! virtual time (the simulator's agents are proven in the cross-crate tests).

use std::collections::{BTreeMap, HashSet, VecDeque};

use super::*;
use ibsm_transport::{Incoming, LocalPort, Transport};
use ibsm_wire::GsMad;

/// One agent: capabilities, per-port counters, whether it answers at all.
struct Agent {
    caps: u16,
    switch: bool,
    ports: BTreeMap<u8, PortCounters>,
}

struct Fabric {
    now: Instant,
    agents: BTreeMap<u16, Agent>,
    silent: HashSet<u16>,
    queue: VecDeque<(Instant, Vec<u8>, u16)>,
    /// Requests seen, per (lid, attribute, port).
    seen: Vec<(u16, PerfAttributeId, u8)>,
}

const STATUS_INVALID_FIELD: u16 = 0x001c;

impl Fabric {
    fn new() -> Self {
        Self {
            now: Instant::ZERO,
            agents: BTreeMap::new(),
            silent: HashSet::new(),
            queue: VecDeque::new(),
            seen: Vec::new(),
        }
    }

    fn counters(i: u32) -> PortCounters {
        PortCounters {
            port_xmit_data: 1000 * i,
            port_rcv_data: 2000 * i,
            port_xmit_pkts: 10 * i,
            port_rcv_pkts: 20 * i,
            ..PortCounters::default()
        }
    }

    fn add(&mut self, lid: u16, switch: bool, ports: &[u8], caps: PmCapabilityMask) {
        let ports = ports
            .iter()
            .map(|&p| (p, Self::counters(u32::from(lid) * 100 + u32::from(p))))
            .collect();
        self.agents.insert(
            lid,
            Agent {
                caps: caps.0,
                switch,
                ports,
            },
        );
    }

    fn answer(&mut self, lid: u16, req: &GsMad) -> Option<GsMad> {
        let agent = self.agents.get_mut(&lid)?;
        let attr = PerfAttributeId::from(req.attribute_id);
        let mut resp = *req;
        resp.response = true;
        if req.method == Method::Set {
            resp.method = Method::Get;
        }
        let port = req.data[1];
        self.seen.push((lid, attr, port));
        let pick = |agent: &Agent, port: u8| -> Option<PortCounters> {
            if port == ALL_PORTS
                && agent.switch
                && agent.caps & PmCapabilityMask::ALL_PORT_SELECT.0 != 0
            {
                let mut sum = PortCounters::default();
                for pc in agent.ports.values() {
                    sum.port_xmit_data = sum.port_xmit_data.saturating_add(pc.port_xmit_data);
                    sum.symbol_error_counter = sum
                        .symbol_error_counter
                        .saturating_add(pc.symbol_error_counter);
                }
                Some(sum)
            } else {
                agent.ports.get(&port).copied()
            }
        };
        match attr {
            PerfAttributeId::ClassPortInfo => {
                let cpi = ClassPortInfo {
                    capability_mask: agent.caps,
                    ..ClassPortInfo::default()
                };
                resp.data = [0; 192];
                cpi.emit_into(&mut resp.data).unwrap();
            }
            PerfAttributeId::PortCounters => match pick(agent, port) {
                Some(mut pc) => {
                    if req.method == Method::Set {
                        let sel = PortCounters::parse(&req.data).unwrap().counter_select;
                        if sel.contains(CounterSelect::PORT_XMIT_DATA) {
                            for (p, c) in &mut agent.ports {
                                if *p == port || port == ALL_PORTS {
                                    c.port_xmit_data = 0;
                                }
                            }
                            pc.port_xmit_data = 0;
                        }
                    }
                    pc.port_select = port;
                    resp.data = [0; 192];
                    pc.emit_into(&mut resp.data).unwrap();
                }
                None => resp.status = ibsm_wire::Status(STATUS_INVALID_FIELD),
            },
            PerfAttributeId::PortCountersExtended
                if agent.caps & PmCapabilityMask::EXT_WIDTH.0 != 0 =>
            {
                match agent.ports.get(&port) {
                    Some(pc) => {
                        let ext = PortCountersExtended {
                            port_select: port,
                            port_xmit_data: u64::from(pc.port_xmit_data) << 8,
                            ..PortCountersExtended::default()
                        };
                        resp.data = [0; 192];
                        ext.emit_into(&mut resp.data).unwrap();
                    }
                    None => resp.status = ibsm_wire::Status(STATUS_INVALID_FIELD),
                }
            }
            _ => resp.status = ibsm_wire::Status(0x000c),
        }
        Some(resp)
    }
}

impl Transport for Fabric {
    fn now(&self) -> Instant {
        self.now
    }
    fn local_port(&self) -> LocalPort {
        LocalPort::default()
    }
    fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
        let Address::Lid(l) = addr else {
            panic!("PerfMgt goes by LID");
        };
        assert_eq!((l.qpn, mad[1]), (1, 0x04));
        if self.silent.contains(&l.dlid) {
            return Ok(());
        }
        let req = GsMad::parse(mad).unwrap();
        if let Some(resp) = self.answer(l.dlid, &req) {
            let at = self.now + Duration::from_micros(5);
            self.queue.push_back((at, resp.to_bytes().to_vec(), l.dlid));
        }
        Ok(())
    }
    fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError> {
        match self.queue.pop_front() {
            Some((at, mad, slid)) if at <= deadline => {
                self.now = self.now.max(at);
                Ok(Incoming::Mad(Received {
                    mad,
                    slid,
                    sl: 0,
                    qpn: 1,
                    pkey_index: 0,
                    at,
                }))
            }
            other => {
                if let Some(o) = other {
                    self.queue.push_front(o);
                }
                self.now = self.now.max(deadline);
                Err(TransportError::Timeout)
            }
        }
    }
}

fn fabric() -> Fabric {
    let mut f = Fabric::new();
    let all = PmCapabilityMask(PmCapabilityMask::ALL_PORT_SELECT.0 | PmCapabilityMask::EXT_WIDTH.0);
    f.add(1, true, &[1, 2, 3, 4], all);
    f.add(2, true, &[1, 2], PmCapabilityMask(0));
    f.add(3, false, &[1], PmCapabilityMask::EXT_WIDTH);
    f.add(4, false, &[1], PmCapabilityMask(0));
    f
}

fn targets() -> Vec<ScrapeTarget> {
    vec![
        ScrapeTarget {
            lid: 1,
            ports: vec![1, 2, 3, 4],
            switch: true,
        },
        ScrapeTarget {
            lid: 2,
            ports: vec![1, 2],
            switch: true,
        },
        ScrapeTarget {
            lid: 3,
            ports: vec![1],
            switch: false,
        },
        ScrapeTarget {
            lid: 4,
            ports: vec![1],
            switch: false,
        },
    ]
}

#[test]
fn a_scrape_reads_every_port_and_the_extended_counters_where_supported() {
    let mut f = fabric();
    let mut s = Scrape::new(targets(), ScrapeMode::PerPort, default_tx());
    crate::run_to_idle(&mut s, &mut f, Instant::from_secs(10)).unwrap();
    assert!(s.is_done());
    let r = s.into_report();
    assert_eq!(r.agents.len(), 4);
    assert_eq!(r.ports.len(), 8);
    for ((lid, port), reading) in &r.ports {
        let pc = reading.counters.as_ref().unwrap();
        let want = Fabric::counters(u32::from(*lid) * 100 + u32::from(*port));
        assert_eq!(pc.port_xmit_data, want.port_xmit_data);
        assert_eq!(pc.port_rcv_pkts, want.port_rcv_pkts);
        // Extended only where the agent's capability mask says so.
        match (lid, &reading.extended) {
            (1 | 3, Some(Ok(ext))) => {
                assert_eq!(ext.port_xmit_data, u64::from(want.port_xmit_data) << 8);
            }
            (2 | 4, None) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((r.failures, r.timeouts), (0, 0));
    // Nobody was asked for what it does not have.
    assert!(
        !f.seen
            .iter()
            .any(|(lid, a, _)| matches!(lid, 2 | 4) && *a == PerfAttributeId::PortCountersExtended)
    );
}

#[test]
fn errors_first_reads_a_clean_switch_once() {
    let mut f = fabric();
    // Switch 1 is clean, switch 2 has no AllPortSelect; then make switch 1 port 3 err.
    let mut s = Scrape::new(targets(), ScrapeMode::ErrorsFirst, default_tx());
    crate::run_to_idle(&mut s, &mut f, Instant::from_secs(10)).unwrap();
    let r = s.into_report();
    assert!(r.sums.contains_key(&1) && !r.sums.contains_key(&2));
    assert!(
        !r.ports.keys().any(|k| k.0 == 1),
        "clean switch read port by port"
    );
    assert_eq!(r.ports.keys().filter(|k| k.0 == 2).count(), 2);

    f.agents
        .get_mut(&1)
        .unwrap()
        .ports
        .get_mut(&3)
        .unwrap()
        .symbol_error_counter = 7;
    let mut s = Scrape::new(targets(), ScrapeMode::ErrorsFirst, default_tx());
    crate::run_to_idle(&mut s, &mut f, Instant::from_secs(20)).unwrap();
    let r = s.into_report();
    assert_eq!(r.sums[&1].as_ref().unwrap().symbol_error_counter, 7);
    let p3 = r.ports[&(1, 3)].counters.as_ref().unwrap();
    assert_eq!(p3.symbol_error_counter, 7);
    assert_eq!(r.ports.keys().filter(|k| k.0 == 1).count(), 4);
}

#[test]
fn a_dead_agent_and_a_bad_port_fail_only_themselves() {
    let mut f = fabric();
    f.silent.insert(4);
    let mut t = targets();
    t[2].ports.push(9); // LID 3 has no port 9
    let mut s = Scrape::new(t, ScrapeMode::PerPort, default_tx());
    crate::run_to_idle(&mut s, &mut f, Instant::from_secs(30)).unwrap();
    assert!(s.is_done());
    let r = s.into_report();
    assert!(matches!(
        r.agents[&4],
        Err(PerfError::Timeout { attempts: 4, .. })
    ));
    // A node whose ClassPortInfo failed is still tried, as a basic agent.
    assert!(matches!(
        r.ports[&(4, 1)].counters,
        Err(PerfError::Timeout { .. })
    ));
    assert!(matches!(
        r.ports[&(3, 9)].counters,
        Err(PerfError::Status {
            status: STATUS_INVALID_FIELD,
            ..
        })
    ));
    assert!(r.ports[&(3, 1)].counters.is_ok() && r.ports[&(1, 4)].counters.is_ok());
    assert_eq!((r.failures, r.timeouts), (4, 2), "{r:?}");
}

#[test]
fn a_reset_clears_what_it_selects() {
    let mut f = fabric();
    let mut c: PerfClient<()> = PerfClient::new(default_tx());
    c.reset(1, ALL_PORTS, CounterSelect::PORT_XMIT_DATA, ())
        .unwrap();
    let ev = crate::run_to_idle(&mut c, &mut f, Instant::from_secs(1)).unwrap();
    assert!(matches!(ev[..], [PerfEvent::Done { .. }]));
    assert!(
        f.agents[&1]
            .ports
            .values()
            .all(|p| p.port_xmit_data == 0 && p.port_rcv_data > 0)
    );
    c.get::<PortCounters>(1, 2, ()).unwrap();
    let ev = crate::run_to_idle(&mut c, &mut f, Instant::from_secs(2)).unwrap();
    let pc = ev[0].decode::<PortCounters>().unwrap();
    assert_eq!((pc.port_xmit_data, pc.port_select), (0, 2));
    // Decoding as another attribute is refused.
    c.get::<PortCounters>(1, 2, ()).unwrap();
    let ev = crate::run_to_idle(&mut c, &mut f, Instant::from_secs(3))
        .unwrap()
        .remove(0);
    assert!(matches!(
        ev.decode::<PortCountersExtended>(),
        Err(PerfError::Malformed { .. })
    ));
    assert!(matches!(
        ev.class_port_info(),
        Err(PerfError::Malformed { .. })
    ));
}

#[test]
fn garbage_answers_are_typed() {
    assert!(matches!(answer(&[0; 100]), Err(Failure::Malformed(_))));
    let mut m = [0u8; 256];
    m[1] = 0x81;
    assert!(matches!(answer(&m), Err(Failure::Malformed(_))));
    m[1] = 0x04;
    m[5] = 0x1c;
    assert_eq!(answer(&m).err(), Some(Failure::Status(0x1c)));
}

/// The seams a host with its own run loop (the SM's PerfMgr) drives a scrape through.
#[test]
fn a_scrape_driven_by_hand_takes_its_tid_start_and_send_errors() {
    let mut s = Scrape::new(targets(), ScrapeMode::PerPort, default_tx());
    s.set_tid_start(0x1234_0000);
    let first = s.next_attempt(Instant::ZERO).expect("a ClassPortInfo Get");
    let tid = u64::from_be_bytes(first.mad[8..16].try_into().unwrap());
    assert_eq!(tid as u32, 0x1234_0000);
    // The transport refuses it: that agent's ClassPortInfo fails at once (no retries
    // waited out) and its ports are still read, as a basic agent's.
    SansIo::handle_send_error(&mut s, Instant::ZERO, first.id, TransportError::Timeout);
    let lid = match first.addr {
        Address::Lid(l) => l.dlid,
        other => panic!("{other:?}"),
    };
    assert!(s.report().agents[&lid].is_err());
    assert_eq!(s.report().failures, 1);
    let mut f = fabric();
    crate::run_to_idle(&mut s, &mut f, Instant::from_secs(10)).unwrap();
    assert!(s.is_done());
    assert_eq!(s.report().ports.len(), 8);
}

#[test]
fn every_port_reads_each_switch_at_port_0_and_each_ca_port_at_its_own_lid() {
    use crate::discover::{Discovered, FoundNode, FoundPort};
    use ibsm_wire::{NodeInfo, NodeType, PortInfo};
    let port = |lid: u16| FoundPort {
        info: Some(PortInfo {
            lid,
            ..PortInfo::default()
        }),
        ..FoundPort::default()
    };
    let node = |node_type, num_ports, ports| FoundNode {
        info: NodeInfo {
            node_type,
            num_ports,
            ..NodeInfo::default()
        },
        ports,
        ..FoundNode::default()
    };
    let found = Discovered {
        nodes: vec![
            // A CA: port 1 at LID 7, port 2 not read, port 3 without a LID.
            node(
                NodeType::Ca,
                3,
                vec![FoundPort::default(), port(7), FoundPort::default(), port(0)],
            ),
            // A switch at LID 3; its external ports' own PortInfo LIDs do not matter.
            node(NodeType::Switch, 4, vec![port(3), port(0), port(0)]),
            // A switch without a LID yet.
            node(NodeType::Switch, 8, vec![port(0)]),
            node(
                NodeType::Ca,
                2,
                vec![FoundPort::default(), port(9), port(10)],
            ),
        ],
        ..Discovered::default()
    };
    let ca = |lid, p| ScrapeTarget {
        lid,
        ports: vec![p],
        switch: false,
    };
    assert_eq!(
        ScrapeTarget::every_port(&found),
        vec![
            (0, ca(7, 1)),
            (
                1,
                ScrapeTarget {
                    lid: 3,
                    ports: vec![1, 2, 3, 4],
                    switch: true
                }
            ),
            (3, ca(9, 1)),
            (3, ca(10, 2)),
        ]
    );
}
