//! The SMP client against real SMAs (`ibsm-sim`), on virtual time.

use super::*;
use ibsm_sim::{Fault, Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::generate;
use ibsm_transport::SansIo;
use ibsm_wire::{NodeDescription, NodeInfo, NodeType, PortInfo};

fn rig() -> (Sim<SmaAgent>, SimPort<SmaAgent>, ibsm_topology::Fabric) {
    let fabric = generate::k_ary_n_tree(2, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
    let first = fabric.cas().next().unwrap().1.guid().0;
    let port = sim.attach_sm(sim.node_by_guid(first).unwrap(), 1).unwrap();
    (sim, port, fabric)
}

fn run<C>(c: &mut SmpClient<C>, port: &mut SimPort<SmaAgent>) -> Vec<SmpEvent<C>> {
    let until = port.now() + Duration::from_secs(10);
    let events = crate::run_to_idle(c, port, until).unwrap();
    assert!(c.is_idle());
    events
}

#[test]
fn node_info_by_directed_route_names_every_neighbour() {
    let (_sim, mut port, fabric) = rig();
    let mut c: SmpClient<Vec<u8>> = SmpClient::new(SmpConfig::default());
    c.get::<NodeInfo>(Target::Route(DrPath::from_ports(&[]).unwrap()), 0, vec![])
        .unwrap();
    // The leaf switch, then every port of it.
    for p in 1..=4u8 {
        let path = DrPath::from_ports(&[1, p]).unwrap();
        c.get::<NodeInfo>(Target::Route(path), 0, vec![1, p])
            .unwrap();
    }
    let events = run(&mut c, &mut port);
    assert_eq!(events.len(), 5);
    let guids: Vec<u64> = fabric.nodes().map(|(_, n)| n.guid().0).collect();
    let mut switches = 0;
    for ev in &events {
        let ni = ev.decode::<NodeInfo>().unwrap();
        assert!(guids.contains(&ni.node_guid), "{ni:?}");
        switches += usize::from(ni.node_type == NodeType::Switch);
        // Decoding as another attribute is refused, not misread.
        assert!(matches!(
            ev.decode::<PortInfo>(),
            Err(SmpError::Malformed { .. })
        ));
    }
    assert!(switches >= 2, "the leaf and its uplinks' switches");
}

#[test]
fn a_set_is_answered_with_what_the_sma_now_holds_and_m_keys_guard_gets() {
    let (_sim, mut port, _) = rig();
    let here = Target::Route(DrPath::from_ports(&[]).unwrap());
    let mut c: SmpClient<()> = SmpClient::new(SmpConfig::default());
    c.get::<PortInfo>(here, 1, ()).unwrap();
    let mut pi = run(&mut c, &mut port)[0].decode::<PortInfo>().unwrap();
    // A Set that changes nothing but the key: no state or width transitions asked.
    pi.port_state = ibsm_wire::PortState::NoChange;
    pi.port_phys_state = ibsm_wire::PhysPortState::NoChange;
    pi.m_key = 0xfeed;
    pi.m_key_protect_bits = 2;
    c.set::<PortInfo>(here, 1, &pi, ()).unwrap();
    let back = run(&mut c, &mut port)[0].decode::<PortInfo>().unwrap();
    assert_eq!((back.m_key, back.m_key_protect_bits), (0xfeed, 2));
    // Without the key the SMA stays silent: a timeout after every retry.
    c.get::<PortInfo>(here, 1, ()).unwrap();
    let ev = &run(&mut c, &mut port)[0];
    assert!(
        matches!(
            ev,
            SmpEvent::Failed {
                error: SmpError::Timeout { attempts: 4, .. },
                ..
            }
        ),
        "{ev:?}"
    );
    // With it, the Get is answered.
    let mut keyed: SmpClient<()> = SmpClient::new(SmpConfig {
        m_key: 0xfeed,
        ..SmpConfig::default()
    });
    keyed.get::<PortInfo>(here, 1, ()).unwrap();
    assert!(run(&mut keyed, &mut port)[0].decode::<PortInfo>().is_ok());
}

#[test]
fn failures_are_per_query_and_typed() {
    let (_sim, mut port, _) = rig();
    let mut c: SmpClient<&str> = SmpClient::new(SmpConfig::default());
    let here = Target::Route(DrPath::from_ports(&[]).unwrap());
    // A port the CA does not have: the SMA answers with an error status.
    c.get::<PortInfo>(here, 9, "no port 9").unwrap();
    // A route out of a port with no cable: nobody answers.
    let nowhere = DrPath::from_ports(&[1, 4, 9]).unwrap();
    c.get::<NodeInfo>(Target::Route(nowhere), 0, "nowhere")
        .unwrap();
    c.get::<NodeDescription>(here, 0, "fine").unwrap();
    let events = run(&mut c, &mut port);
    let by = |name: &str| {
        events.iter().find(|e| matches!(e, SmpEvent::Done { cookie, .. } | SmpEvent::Failed { cookie, .. } if *cookie == name)).unwrap()
    };
    assert!(
        matches!(by("no port 9"), SmpEvent::Failed { error: SmpError::Status { status, .. }, .. } if *status != 0)
    );
    assert!(matches!(
        by("nowhere"),
        SmpEvent::Failed {
            error: SmpError::Timeout { .. },
            ..
        }
    ));
    assert!(by("fine").decode::<NodeDescription>().is_ok());
}

#[test]
fn a_lossy_fabric_costs_retries_not_answers() {
    let (mut sim, mut port, _) = rig();
    sim.apply(Fault::DropRate { ppm: 100_000 });
    let mut c: SmpClient<u8> = SmpClient::new(SmpConfig {
        tx: TxConfig {
            retries: 8,
            ..SmpConfig::default().tx
        },
        ..SmpConfig::default()
    });
    for p in 1..=4u8 {
        c.get::<NodeInfo>(Target::Route(DrPath::from_ports(&[1, p]).unwrap()), 0, p)
            .unwrap();
    }
    let events = run(&mut c, &mut port);
    assert_eq!(events.len(), 4);
    assert!(
        events.iter().all(|e| e.decode::<NodeInfo>().is_ok()),
        "{events:?}"
    );
    assert!(c.stats().retried > 0, "{:?}", c.stats());
}

#[test]
fn short_or_garbage_answers_are_malformed_not_panics() {
    assert!(matches!(answer(&[0u8; 10]), Err(Failure::Malformed(_))));
    let mut m = [0u8; 256];
    m[1] = 0x81;
    m[4] = 0x00;
    m[5] = 0x0c;
    assert!(matches!(answer(&m), Err(Failure::Status(0x0c))));
}
