//! Model-based test of the port state machine (IBA Vol. 1 §14.2.5.6, PortInfo's
//! PortState and PortPhysicalState, and SwitchInfo.PortStateChange): random link events,
//! data packets, SubnSet(PortInfo) with any PortState / PortPhysicalState /
//! LinkDownDefaultState code, and SubnSet(SwitchInfo) on a 2-port switch. The agent and a
//! reference model must agree on every status, port state, physical state, the
//! PortStateChange bit, host events and trap 128.
//!
//! Cases: `IBSM_SMA_MODEL_CASES` (default 10 000).

use ibsm_sma::{LinkRequest, NodeConfig, Rx, Sma, SmaEvent};
use ibsm_wire::{
    Instant, LidSmp, LinkDownDefaultState, Method, PhysPortState, PortState, SmAttributeId,
    TrapNumber,
};
use proptest::prelude::*;

/// The port state machine has no timers: every input happens at the origin.
const T0: Instant = Instant::ZERO;

#[derive(Debug, Clone, Copy)]
enum Op {
    LinkUp(u8),
    LinkDown(u8),
    Data(u8),
    Set {
        port: u8,
        state: u8,
        phys: u8,
        ldd: u8,
    },
    ClearChange(bool),
}

fn op() -> impl Strategy<Value = Op> {
    let port = 1..=2u8;
    prop_oneof![
        2 => port.clone().prop_map(Op::LinkUp),
        2 => port.clone().prop_map(Op::LinkDown),
        1 => port.clone().prop_map(Op::Data),
        5 => (port, 0..=5u8, prop_oneof![Just(0u8), Just(2), Just(3), 0..=7u8], 0..=3u8)
            .prop_map(|(port, state, phys, ldd)| Op::Set { port, state, phys, ldd }),
        1 => any::<bool>().prop_map(Op::ClearChange),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MPort {
    state: u8, // 1 Down, 2 Init, 3 Armed, 4 Active
    phys: u8,  // 1 Sleep, 2 Polling, 3 Disabled, 5 LinkUp
    ldd: u8,   // 1 Sleep, 2 Polling
}

#[derive(Debug, Clone, Default)]
struct Model {
    ports: [Option<MPort>; 3],
    change: bool,
    traps: usize,
    events: Vec<SmaEvent>,
}

impl Model {
    fn port(&mut self, p: u8) -> &mut MPort {
        self.ports[usize::from(p)].get_or_insert(MPort {
            state: 1,
            phys: 2,
            ldd: 2,
        })
    }
    fn link_changed(&mut self) {
        self.change = true;
        self.traps += 1; // the switch has an SM LID and traps enabled
    }
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut sma = Sma::new(NodeConfig::switch(0x42, 2)).unwrap();
    let rx = Rx { port: 1, slid: 1 };
    // Port 0: LID 3, SM LID 1, so link changes raise trap 128.
    let mut p0 = sma.port_info(0).unwrap();
    p0.port_state = PortState::NoChange;
    p0.lid = 3;
    p0.master_sm_lid = 1;
    let mut req = LidSmp::request(Method::Set, SmAttributeId::PortInfo.into(), 0, 1, 0);
    req.data = p0.to_bytes();
    sma.handle(T0, rx, &req.to_bytes()).unwrap();
    let mut m = Model::default();
    for (step, &op) in ops.iter().enumerate() {
        match op {
            Op::LinkUp(p) => {
                sma.link_up(T0, p);
                let mp = *m.port(p);
                if mp.phys != 3 && mp.state == 1 {
                    *m.port(p) = MPort {
                        state: 2,
                        phys: 5,
                        ..mp
                    };
                    m.link_changed();
                }
            }
            Op::LinkDown(p) => {
                sma.link_down(T0, p);
                let mp = *m.port(p);
                let phys = if mp.phys == 3 { 3 } else { mp.ldd };
                *m.port(p) = MPort {
                    state: 1,
                    phys,
                    ..mp
                };
                if mp.state != 1 {
                    m.link_changed();
                }
            }
            Op::Data(p) => {
                sma.data_packet(T0, p);
                if m.port(p).state == 3 {
                    m.port(p).state = 4;
                }
            }
            Op::Set {
                port,
                state,
                phys,
                ldd,
            } => {
                let mut pi = sma.port_info(port).unwrap();
                pi.port_state = PortState::from(state);
                pi.port_phys_state = PhysPortState::from(phys);
                pi.link_down_default_state = LinkDownDefaultState::from(ldd);
                let mut req = LidSmp::request(
                    Method::Set,
                    SmAttributeId::PortInfo.into(),
                    u32::from(port),
                    2,
                    0,
                );
                req.data = pi.to_bytes();
                let resp = sma.handle(T0, rx, &req.to_bytes()).unwrap();
                let status = u16::from_be_bytes([resp[4], resp[5]]);
                let cur = *m.port(port);
                let state_ok = match state {
                    0 | 1 => true,
                    3 => cur.state == 2 || cur.state == 3,
                    4 => cur.state == 3 || cur.state == 4,
                    _ => false,
                };
                let valid = state_ok && matches!(phys, 0 | 2 | 3) && ldd <= 2;
                prop_assert_eq!(
                    status,
                    if valid { 0 } else { 0x1C },
                    "status at step {}",
                    step
                );
                if valid {
                    let mut n = cur;
                    if ldd != 0 {
                        n.ldd = ldd;
                    }
                    match state {
                        1 => {
                            n.state = 1;
                            // Disabling in the same Set supersedes the retrain.
                            if n.phys != 3 {
                                n.phys = 2;
                                if phys != 3 {
                                    m.events.push(SmaEvent::Link {
                                        port,
                                        request: LinkRequest::Retrain,
                                    });
                                }
                            }
                        }
                        3 | 4 => n.state = state,
                        _ => {}
                    }
                    if phys == 3 {
                        n.state = 1;
                        n.phys = 3;
                        m.events.push(SmaEvent::Link {
                            port,
                            request: LinkRequest::Disable,
                        });
                    } else if phys == 2 && n.phys == 3 {
                        n.phys = 2;
                        m.events.push(SmaEvent::Link {
                            port,
                            request: LinkRequest::Enable,
                        });
                    }
                    *m.port(port) = n;
                }
            }
            Op::ClearChange(write) => {
                let mut si = sma.switch_info().unwrap();
                si.port_state_change = write;
                let mut req =
                    LidSmp::request(Method::Set, SmAttributeId::SwitchInfo.into(), 0, 3, 0);
                req.data[..20].copy_from_slice(&si.to_bytes());
                let resp = sma.handle(T0, rx, &req.to_bytes()).unwrap();
                prop_assert_eq!(u16::from_be_bytes([resp[4], resp[5]]), 0);
                if write {
                    m.change = false;
                }
            }
        }
        for p in 1..=2u8 {
            let want = *m.port(p);
            let pi = sma.port_info(p).unwrap();
            prop_assert_eq!(
                u8::from(pi.port_state),
                want.state,
                "port {} state at step {}",
                p,
                step
            );
            prop_assert_eq!(
                u8::from(pi.port_phys_state),
                want.phys,
                "port {} phys at step {}",
                p,
                step
            );
            prop_assert_eq!(
                u8::from(pi.link_down_default_state),
                want.ldd,
                "port {} ldd at step {}",
                p,
                step
            );
        }
        prop_assert_eq!(
            sma.switch_info().unwrap().port_state_change,
            m.change,
            "PortStateChange at step {}",
            step
        );
        let events: Vec<SmaEvent> = core::iter::from_fn(|| sma.poll_event()).collect();
        prop_assert_eq!(&events, &m.events, "events at step {}", step);
        m.events.clear();
        let traps: Vec<_> = core::iter::from_fn(|| sma.poll_trap(T0)).collect();
        prop_assert_eq!(traps.len(), m.traps, "traps at step {}", step);
        for t in &traps {
            prop_assert_eq!(t.notice().trap(), Some(TrapNumber::LinkStateChange));
            let mut rep = t.mad;
            rep[3] = 0x07;
            prop_assert!(sma.handle(T0, rx, &rep).is_none());
        }
        m.traps = 0;
        prop_assert_eq!(sma.pending_traps(), 0);
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("IBSM_SMA_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn port_state_machine_agrees_with_model(ops in prop::collection::vec(op(), 1..24)) {
        run(&ops)?;
    }
}
