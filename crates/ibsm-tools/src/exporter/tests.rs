use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

use ibsm_query::discover::{FoundNode, FoundPort};
use ibsm_query::perf::PortReading;
use ibsm_tests::exposition::Exposition;
use ibsm_wire::perf::{PerfAttributeId, PortCounters};
use ibsm_wire::{NodeInfo, NodeType, PortInfo};

use super::*;

fn port(lid: u16, guid: u64) -> FoundPort {
    FoundPort {
        guid,
        info: Some(PortInfo {
            lid,
            ..PortInfo::default()
        }),
        ..FoundPort::default()
    }
}

fn reading(xmit_data: u32) -> PortReading {
    PortReading {
        counters: Ok(PortCounters {
            port_xmit_data: xmit_data,
            ..PortCounters::default()
        }),
        extended: None,
    }
}

fn timeout(lid: u16, port: u8) -> PerfError {
    PerfError::Timeout {
        lid,
        port,
        attribute: PerfAttributeId::PortCounters,
        attempts: 4,
    }
}

/// A switch (LID 1, GUID 0x100, 3 ports: 1 cabled to the CA, 2 not answering, 3
/// without a cable) and a CA (port 1 at LID 2, port GUID 0x201), every counter zero
/// but switch port 1's PortXmitData.
fn collected() -> Collected {
    let mut sw_ports = vec![port(1, 0x100), FoundPort::default(), FoundPort::default()];
    sw_ports.push(FoundPort::default());
    sw_ports[1].peer = Some((1, 1));
    let mut ca_port = port(2, 0x201);
    ca_port.peer = Some((0, 1));
    let found = Discovered {
        nodes: vec![
            FoundNode {
                info: NodeInfo {
                    node_type: NodeType::Switch,
                    num_ports: 3,
                    node_guid: 0x100,
                    ..NodeInfo::default()
                },
                description: "leaf-1".into(),
                ports: sw_ports,
                ..FoundNode::default()
            },
            FoundNode {
                info: NodeInfo {
                    node_type: NodeType::Ca,
                    num_ports: 1,
                    node_guid: 0x200,
                    ..NodeInfo::default()
                },
                description: "node07 HCA-1".into(),
                ports: vec![FoundPort::default(), ca_port],
                ..FoundNode::default()
            },
        ],
        ..Discovered::default()
    };
    let mut report = ScrapeReport::default();
    report.ports.insert((1, 1), reading(10));
    report.ports.insert(
        (1, 2),
        PortReading {
            counters: Err(timeout(1, 2)),
            extended: None,
        },
    );
    report.ports.insert((1, 3), reading(0));
    report.ports.insert((2, 1), reading(0));
    Collected {
        found,
        report,
        targets: BTreeMap::from([(1, (0, true)), (2, (1, false))]),
        discovery: Duration::from_millis(30),
        scrape: Duration::from_millis(70),
        discovery_finished: true,
    }
}

const BOTH: Select = Select {
    switches: true,
    hcas: true,
};

fn parse(text: &str) -> Exposition {
    Exposition::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn every_port_read_is_exported_with_its_zero_error_counters_and_a_timed_out_port_is_listed() {
    let text = render(&collected(), BOTH, &Names::default()).unwrap();
    let exp = parse(&text);
    // Ports 1 and 3 (error-free, one without a cable) are exported with every counter.
    for p in ["1", "3"] {
        for fam in [
            "infiniband_switch_port_symbol_error_total",
            "infiniband_switch_port_transmit_data_bytes_total",
            "infiniband_switch_port_link_downed_total",
        ] {
            let want = if p == "1" && fam.contains("data") {
                40.0
            } else {
                0.0
            };
            let got = exp.value(fam, &[("guid", "0x0000000000000100"), ("port", p)]);
            assert_eq!(got, want, "{fam} port {p}");
        }
    }
    // The port that timed out is not a row of zeros but a failure of its own.
    assert!(
        exp.get(
            "infiniband_switch_port_symbol_error_total",
            &[("guid", "0x0000000000000100"), ("port", "2")]
        )
        .is_none()
    );
    assert_eq!(
        exp.value(
            "infiniband_exporter_port_collect_error",
            &[
                ("collector", "switch"),
                ("guid", "0x0000000000000100"),
                ("port", "2"),
                ("lid", "1"),
                ("error", "timeout")
            ]
        ),
        1.0
    );
    assert_eq!(
        exp.named("infiniband_exporter_port_collect_error").count(),
        1
    );
    let collector = |name: &str, c: &str| exp.value(name, &[("collector", c)]);
    assert_eq!(
        collector("infiniband_exporter_collect_errors", "switch"),
        1.0
    );
    assert_eq!(
        collector("infiniband_exporter_collect_timeouts", "switch"),
        1.0
    );
    assert_eq!(collector("infiniband_exporter_collect_errors", "hca"), 0.0);
    assert_eq!(
        collector("infiniband_exporter_collect_errors", "ibnetdiscover"),
        0.0
    );
    assert!(
        (collector(
            "infiniband_exporter_collector_duration_seconds",
            "ibnetdiscover"
        ) - 0.03)
            .abs()
            < 1e-9
    );
    assert!((exp.value("infiniband_exporter_scrape_duration_seconds", &[]) - 0.1).abs() < 1e-9);
    // The CA's port, by its port GUID, and one info line per node.
    assert_eq!(
        exp.value(
            "infiniband_hca_port_transmit_data_bytes_total",
            &[("guid", "0x0000000000000201"), ("port", "1")]
        ),
        0.0
    );
    assert_eq!(exp.named("infiniband_switch_info").count(), 1);
    assert_eq!(exp.named("infiniband_hca_info").count(), 1);
    let up = exp.named("infiniband_hca_uplink_info").next().unwrap();
    assert_eq!(up.labels["uplink"], "leaf-1");
    assert_eq!(up.labels["hca"], "node07 HCA-1");
}

#[test]
fn without_hca_no_ca_family_is_written() {
    let text = render(
        &collected(),
        Select {
            switches: true,
            hcas: false,
        },
        &Names::default(),
    )
    .unwrap();
    let exp = parse(&text);
    assert_eq!(exp.named("infiniband_hca_info").count(), 0);
    assert!(
        exp.get(
            "infiniband_exporter_collect_errors",
            &[("collector", "hca")]
        )
        .is_none()
    );
}

#[test]
fn port_failures_name_the_guid_label_of_the_port() {
    let mut c = collected();
    c.report.ports.insert(
        (2, 1),
        PortReading {
            counters: Err(PerfError::Status {
                lid: 2,
                port: 1,
                attribute: PerfAttributeId::PortCounters,
                status: 0x0c,
            }),
            extended: None,
        },
    );
    let f = c.port_failures();
    assert_eq!(f.len(), 2);
    assert_eq!((f[1].collector, f[1].guid, f[1].port), ("hca", 0x201, 1));
    assert_eq!(error_kind(&f[1].error), "status");
}

#[test]
fn a_cached_answer_is_given_until_min_interval_has_passed_since_the_last_start() {
    let base = Instant::now();
    let offset = Cell::new(Duration::ZERO);
    let now = || base + offset.get();
    let cache = ScrapeCache::new(Duration::from_secs(5));
    let calls = AtomicU32::new(0);
    let mut scrape = || calls.fetch_add(1, Ordering::SeqCst) + 1;
    assert_eq!(*cache.get(now, &mut scrape), 1);
    offset.set(Duration::from_millis(4_999));
    assert_eq!(*cache.get(now, &mut scrape), 1);
    offset.set(Duration::from_secs(5));
    assert_eq!(*cache.get(now, &mut scrape), 2);
    assert_eq!(cache.runs(), 2);
}

#[test]
fn concurrent_callers_share_the_running_collection() {
    let cache = Arc::new(ScrapeCache::new(Duration::ZERO));
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let calls = Arc::new(AtomicU32::new(0));
    std::thread::scope(|s| {
        let first = {
            let (cache, calls, gate) = (Arc::clone(&cache), Arc::clone(&calls), &gate);
            s.spawn(move || {
                *cache.get(Instant::now, || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    gate.lock().unwrap().recv().unwrap();
                    7
                })
            })
        };
        // Wait until the first collection runs, then start seven more callers and
        // wait until each of them waits for it.
        while !cache.state.lock().unwrap().running {
            std::thread::yield_now();
        }
        let others: Vec<_> = (0..7)
            .map(|_| {
                let (cache, calls) = (Arc::clone(&cache), Arc::clone(&calls));
                s.spawn(move || {
                    *cache.get(Instant::now, || {
                        calls.fetch_add(1, Ordering::SeqCst);
                        8
                    })
                })
            })
            .collect();
        // (A cache that does not share starts collections of its own instead.)
        while cache.state.lock().unwrap().waiters < 7 && calls.load(Ordering::SeqCst) == 1 {
            std::thread::yield_now();
        }
        release.send(()).unwrap();
        assert_eq!(first.join().unwrap(), 7);
        for o in others {
            assert_eq!(o.join().unwrap(), 7);
        }
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(cache.runs(), 1);
}

#[test]
fn a_collection_that_panics_does_not_leave_the_cache_stuck() {
    let cache = ScrapeCache::new(Duration::from_secs(60));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cache.get(Instant::now, || -> u32 { panic!("planted") })
    }));
    assert!(r.is_err());
    assert_eq!(*cache.get(Instant::now, || 3), 3);
}

/// A port on virtual time behind which nobody answers: each send is recorded with the
/// time it left, and a receive moves the clock to its deadline.
struct Silent {
    now: ibsm_transport::Instant,
    sent: Vec<ibsm_transport::Instant>,
}

impl Transport for Silent {
    fn now(&self) -> ibsm_transport::Instant {
        self.now
    }
    fn local_port(&self) -> ibsm_transport::LocalPort {
        ibsm_transport::LocalPort::default()
    }
    fn send(&mut self, _: &ibsm_transport::Address, _: &[u8]) -> Result<(), TransportError> {
        self.sent.push(self.now);
        Ok(())
    }
    fn recv(
        &mut self,
        deadline: ibsm_transport::Instant,
    ) -> Result<ibsm_transport::Incoming, TransportError> {
        self.now = self.now.max(deadline);
        Err(TransportError::Timeout)
    }
}

#[test]
fn discovery_waits_as_long_and_retries_as_often_as_told() {
    let mut port = Silent {
        now: ibsm_transport::Instant::from_secs(1),
        sent: Vec::new(),
    };
    let tx = TxArgs {
        timeout_ms: 7,
        retries: 2,
        window: 4,
    };
    let c = collect(&mut port, BOTH, &tx, Duration::from_secs(10)).unwrap();
    // The local NodeInfo, sent three times 7 ms apart (virtual time), then given up.
    let gaps: Vec<Duration> = port.sent.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [Duration::from_millis(7); 2], "{:?}", port.sent);
    assert_eq!(c.found.unreachable.len(), 1);
    assert!(
        c.found.unreachable[0]
            .1
            .to_string()
            .contains("after 3 attempts"),
        "{}",
        c.found.unreachable[0].1
    );
    assert!(c.targets.is_empty());
}
