extern crate std;

use super::*;
use crate::config::MemNvStore;
use core::time::Duration;
use ibsm_wire::{
    DrPath, DrSmp, LidSmp, Notice, PortState, SmState, Trap128Details, Trap256Details, TrapNumber,
};
use std::vec::Vec;

const KEY: u64 = 0xDEAD_BEEF_0000_0001;
const WRONG: u64 = 0x1234;
const SM_LID: u16 = 1;
const CA_LID: u16 = 7;
const T0: Instant = Instant::ZERO;
const SEC: Duration = Duration::from_secs(1);

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

fn just_before(t: Instant) -> Instant {
    at(t.as_nanos() - 1)
}

fn lid_req(method: Method, attr: SmAttributeId, am: u32, key: u64, data: &[u8]) -> [u8; 256] {
    let mut s = LidSmp::request(method, attr.into(), am, 0x55, key);
    s.data[..data.len()].copy_from_slice(data);
    s.to_bytes()
}

fn dr_req(method: Method, attr: SmAttributeId, am: u32, key: u64, data: &[u8]) -> [u8; 256] {
    let path = DrPath::from_ports(&[1, 3]).unwrap();
    let mut s = DrSmp::request(method, attr.into(), am, 0x66, key, &path);
    s.hop_pointer = 3;
    s.return_path[1] = 9;
    s.return_path[2] = 1;
    s.data[..data.len()].copy_from_slice(data);
    s.to_bytes()
}

fn status(resp: &[u8; 256]) -> u16 {
    u16::from_be_bytes([resp[4], resp[5]])
}

fn ca() -> Sma {
    let mut s = Sma::new(NodeConfig::ca(0x100, 2)).unwrap();
    s.link_up(T0, 1);
    s.link_up(T0, 2);
    s
}

fn switch() -> Sma {
    let mut s = Sma::new(NodeConfig::switch(0x200, 8)).unwrap();
    for p in 1..=8 {
        s.link_up(T0, p);
    }
    s
}

/// Keyed SubnSet(PortInfo) of `port` built from its current value.
fn set_pi(
    sma: &mut Sma,
    now: Instant,
    rx: u8,
    port: u8,
    key: u64,
    f: impl FnOnce(&mut PortInfo),
) -> Option<[u8; 256]> {
    let mut pi = sma.port_info(port).unwrap();
    pi.port_state = PortState::NoChange;
    pi.port_phys_state = PhysPortState::NoChange;
    f(&mut pi);
    let req = lid_req(
        Method::Set,
        SmAttributeId::PortInfo,
        u32::from(port),
        key,
        &pi.to_bytes(),
    );
    sma.handle(
        now,
        Rx {
            port: rx,
            slid: SM_LID,
        },
        &req,
    )
}

/// A CA whose port 1 has LID 7, SM LID 1 and the given M_Key settings.
fn protected_ca(protect: u8, lease: u16) -> Sma {
    let mut s = ca();
    set_pi(&mut s, T0, 1, 1, 0, |pi| {
        pi.lid = CA_LID;
        pi.master_sm_lid = SM_LID;
        pi.m_key = KEY;
        pi.m_key_protect_bits = protect;
        pi.m_key_lease_period = lease;
    })
    .unwrap();
    s
}

fn get_pi<S: NvStore>(sma: &mut Sma<S>, now: Instant, key: u64) -> Option<PortInfo> {
    let req = lid_req(Method::Get, SmAttributeId::PortInfo, 1, key, &[]);
    sma.handle(
        now,
        Rx {
            port: 1,
            slid: SM_LID,
        },
        &req,
    )
    .map(|r| PortInfo::parse(&r[64..128]).unwrap())
}

fn drain_traps(sma: &mut Sma, now: Instant) -> Vec<Trap> {
    core::iter::from_fn(|| sma.poll_trap(now)).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Right,
    Wrong,
    Zero,
}

/// Every row of the M_Key check table through the whole agent: protection levels
/// 0..3 x SubnGet / SubnSet / SubnTrapRepress x right key / wrong key / zero key, plus
/// every case with the port's M_Key 0.
#[test]
fn check_table_rows_through_the_agent() {
    for protect in 0..=3u8 {
        for method in [Method::Get, Method::Set, Method::TrapRepress] {
            for key in [Key::Right, Key::Wrong, Key::Zero] {
                for port_key_zero in [false, true] {
                    let mut s = protected_ca(protect, 0);
                    if port_key_zero {
                        set_pi(&mut s, T0, 1, 1, KEY, |pi| {
                            pi.m_key = 0;
                        })
                        .unwrap();
                    }
                    drain_traps(&mut s, T0);
                    let k = match key {
                        Key::Right => KEY,
                        Key::Wrong => WRONG,
                        Key::Zero => 0,
                    };
                    let cur = s.port_info(1).unwrap();
                    let data = match method {
                        Method::TrapRepress => [0u8; 64],
                        _ => {
                            let mut pi = cur;
                            pi.port_state = PortState::NoChange;
                            pi.port_phys_state = PhysPortState::NoChange;
                            pi.lid = 99;
                            pi.to_bytes()
                        }
                    };
                    let attr = if method == Method::TrapRepress {
                        SmAttributeId::Notice
                    } else {
                        SmAttributeId::PortInfo
                    };
                    let mut buf = lid_req(method, attr, 1, k, &data);
                    let out = s.handle_in_place(at(5), Rx { port: 1, slid: 3 }, &mut buf);
                    let matches = port_key_zero || key == Key::Right;
                    let ctx = std::format!(
                        "protect {protect} {method:?} {key:?} port key 0: {port_key_zero}"
                    );
                    let passes = matches || (method == Method::Get && protect < 2);
                    let viol = s.m_key_state(1).unwrap().violations;
                    if passes {
                        assert_eq!(viol, 0, "{ctx}");
                        assert!(drain_traps(&mut s, at(5)).is_empty(), "{ctx}");
                        match method {
                            Method::TrapRepress => {
                                assert_eq!(out, Outcome::Repressed { matched: false }, "{ctx}");
                            }
                            Method::Get => {
                                assert_eq!(out, Outcome::Respond, "{ctx}");
                                let pi = PortInfo::parse(&buf[64..128]).unwrap();
                                let shown = if !matches && protect == 1 {
                                    0
                                } else {
                                    cur.m_key
                                };
                                assert_eq!(pi.m_key, shown, "{ctx}");
                                assert_eq!(pi.m_key_protect_bits, protect, "{ctx}");
                            }
                            _ => {
                                assert_eq!(out, Outcome::Respond, "{ctx}");
                                assert_eq!(s.lid(1), Some(99), "{ctx}");
                            }
                        }
                    } else {
                        assert_eq!(out, Outcome::Dropped(DropReason::MKey), "{ctx}");
                        assert_eq!(viol, 1, "{ctx}");
                        assert_eq!(
                            s.lid(1),
                            Some(CA_LID),
                            "{ctx}: a failed Set changes nothing"
                        );
                        let traps = drain_traps(&mut s, at(5));
                        assert_eq!(traps.len(), 1, "{ctx}");
                        let n = traps[0].notice();
                        assert_eq!(n.trap(), Some(TrapNumber::BadMKey), "{ctx}");
                        let d: Trap256Details = n.details().unwrap();
                        assert_eq!((d.lid, d.m_key, d.attribute_modifier), (3, k, 1), "{ctx}");
                        assert_eq!(d.method, u8::from(method), "{ctx}");
                        assert_eq!(d.attribute_id, u16::from(attr), "{ctx}");
                        assert!(!d.dr_notice, "{ctx}");
                    }
                }
            }
        }
    }
}

#[test]
fn trap_256_carries_the_directed_route() {
    let mut s = protected_ca(2, 0);
    let req = dr_req(Method::Get, SmAttributeId::NodeInfo, 0, WRONG, &[]);
    assert!(s.handle(at(1), Rx::port(1), &req).is_none());
    let traps = drain_traps(&mut s, at(1));
    assert_eq!(traps.len(), 1);
    let t = &traps[0];
    assert_eq!((t.slid, t.dlid, t.port), (CA_LID, SM_LID, 1));
    let sent = LidSmp::parse(&t.mad).unwrap();
    assert_eq!(sent.method, Method::Trap);
    assert_eq!(sent.attribute_id, u16::from(SmAttributeId::Notice));
    let n = t.notice();
    assert_eq!(n.issuer_lid, CA_LID);
    let d: Trap256Details = n.details().unwrap();
    assert!(d.dr_notice && !d.dr_path_truncated);
    assert_eq!(d.dr_hop_count, 2);
    assert_eq!(d.dr_slid, PERMISSIVE_LID);
    assert_eq!(&d.dr_notice_return_path[..3], &[0, 9, 1]);
}

#[test]
fn no_trap_without_sm_lid_or_trap_support() {
    let mut s = protected_ca(2, 0);
    set_pi(&mut s, T0, 1, 1, KEY, |pi| pi.master_sm_lid = 0).unwrap();
    let req = lid_req(Method::Get, SmAttributeId::NodeInfo, 0, WRONG, &[]);
    assert!(s.handle(at(1), Rx::port(1), &req).is_none());
    assert!(drain_traps(&mut s, at(1)).is_empty());
    assert_eq!(s.m_key_state(1).unwrap().violations, 1);
}

#[test]
fn trap_is_resent_until_repressed() {
    let mut s = protected_ca(2, 0);
    let req = lid_req(Method::Set, SmAttributeId::NodeInfo, 0, WRONG, &[]);
    s.handle(T0, Rx::port(1), &req);
    let first = drain_traps(&mut s, T0);
    assert_eq!(first.len(), 1);
    assert_eq!(s.poll_timeout(), Some(at(1_000_000_000)));
    assert!(drain_traps(&mut s, just_before(T0 + SEC)).is_empty());
    let again = drain_traps(&mut s, T0 + SEC);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].transaction_id, first[0].transaction_id);
    // A repress with the wrong key is itself a violation and does not stop the trap.
    let mut rep = first[0].mad;
    rep[3] = 0x07;
    rep[24..32].copy_from_slice(&WRONG.to_be_bytes());
    assert_eq!(
        s.handle_in_place(T0 + SEC, Rx::port(1), &mut rep.clone()),
        Outcome::Dropped(DropReason::MKey)
    );
    rep[24..32].copy_from_slice(&KEY.to_be_bytes());
    assert_eq!(
        s.handle_in_place(T0 + SEC, Rx::port(1), &mut rep),
        Outcome::Repressed { matched: true }
    );
    // Only the trap raised by the bad repress is left.
    assert_eq!(s.pending_traps(), 1);
}

// ----- lease edges ----------------------------------------------------------------------

#[test]
fn lease_expires_exactly_at_the_period() {
    let mut s = protected_ca(2, 10);
    assert!(get_pi(&mut s, at(100), WRONG).is_none());
    let deadline = at(100 + 10_000_000_000);
    assert_eq!(s.m_key_state(1).unwrap().lease_deadline, Some(deadline));
    assert!(
        get_pi(&mut s, just_before(deadline), WRONG).is_none(),
        "still protected one ns before"
    );
    assert_eq!(s.m_key_state(1).unwrap().violations, 2);
    // At the deadline protection falls back to 0: a wrong-keyed Get succeeds.
    let pi = get_pi(&mut s, deadline, WRONG).expect("answered after expiry");
    assert_eq!(pi.m_key_protect_bits, 0);
    assert_eq!(pi.m_key, KEY, "level 0 shows the key");
    assert_eq!(pi.m_key_violations, 2);
}

#[test]
fn lease_expiry_by_timeout_alone() {
    let mut s = protected_ca(1, 1);
    // Without a MasterSMLID the violation queues no trap: the lease is the only timer.
    set_pi(&mut s, T0, 1, 1, KEY, |pi| pi.master_sm_lid = 0).unwrap();
    assert_eq!(s.poll_timeout(), None, "no countdown before a violation");
    assert!(set_pi(&mut s, T0, 1, 1, WRONG, |_| {}).is_none());
    assert_eq!(s.pending_traps(), 0);
    // The host is told to wake when the lease runs out, and not a nanosecond early.
    assert_eq!(s.poll_timeout(), Some(T0 + SEC));
    s.handle_timeout(just_before(T0 + SEC));
    assert_eq!(s.m_key_state(1).unwrap().config.protect_bits, 1);
    assert_eq!(s.poll_timeout(), Some(T0 + SEC));
    // That wake-up alone, no SMP, ends the protection and the countdown.
    s.handle_timeout(T0 + SEC);
    let st = s.m_key_state(1).unwrap();
    assert_eq!(st.config.protect_bits, 0);
    assert_eq!(st.lease_deadline, None);
    assert_eq!(s.poll_timeout(), None, "nothing left to wake the host for");
}

#[test]
fn keyed_smp_one_tick_before_expiry_refreshes() {
    let mut s = protected_ca(2, 10);
    assert!(get_pi(&mut s, T0, WRONG).is_none());
    let deadline = T0 + 10 * SEC;
    assert!(get_pi(&mut s, just_before(deadline), KEY).is_some());
    assert_eq!(s.m_key_state(1).unwrap().lease_deadline, None);
    assert!(
        get_pi(&mut s, deadline, WRONG).is_none(),
        "still protected at the old deadline"
    );
    assert!(get_pi(&mut s, at(deadline.as_nanos() + 5), WRONG).is_none());
    // The second violation started a new countdown.
    assert_eq!(
        s.m_key_state(1).unwrap().lease_deadline,
        Some(deadline + 10 * SEC)
    );
}

#[test]
fn lease_period_zero_never_expires() {
    let mut s = protected_ca(3, 0);
    assert!(get_pi(&mut s, T0, WRONG).is_none());
    assert_eq!(s.poll_timeout(), Some(T0).filter(|_| s.pending_traps() > 0));
    assert!(get_pi(&mut s, at(u64::MAX / 2), WRONG).is_none());
    assert_eq!(s.m_key_state(1).unwrap().config.protect_bits, 3);
}

#[test]
fn unkeyed_get_does_not_refresh() {
    let mut s = protected_ca(1, 10);
    assert!(set_pi(&mut s, T0, 1, 1, WRONG, |_| {}).is_none());
    let pi = get_pi(&mut s, at(5), WRONG).unwrap();
    assert_eq!(pi.m_key, 0, "level 1 hides the key");
    assert!(s.m_key_state(1).unwrap().lease_deadline.is_some());
    s.handle_timeout(T0 + 10 * SEC);
    assert_eq!(get_pi(&mut s, T0 + 10 * SEC, WRONG).unwrap().m_key, KEY);
}

#[test]
fn mkey_fields_change_only_together_and_only_keyed() {
    let mut s = protected_ca(1, 60);
    set_pi(&mut s, T0, 1, 1, KEY, |pi| {
        pi.m_key = 0x77;
        pi.m_key_protect_bits = 2;
        pi.m_key_lease_period = 5;
    })
    .unwrap();
    let st = s.m_key_state(1).unwrap().config;
    assert_eq!((st.m_key, st.protect_bits, st.lease_period), (0x77, 2, 5));
    // A Set with an invalid field changes none of them.
    let r = set_pi(&mut s, T0, 1, 1, 0x77, |pi| {
        pi.m_key = 0x88;
        pi.port_state = PortState::Active; // Init -> Active is illegal
    })
    .unwrap();
    assert_eq!(status(&r), 0x001C);
    assert_eq!(s.m_key_state(1).unwrap().config.m_key, 0x77);
    let pi = PortInfo::parse(&r[64..128]).unwrap();
    assert_eq!(pi.m_key, 0x77, "the response carries the unchanged values");
}

#[test]
fn violations_saturate_through_the_agent() {
    let mut s = protected_ca(2, 0);
    set_pi(&mut s, T0, 1, 1, KEY, |pi| pi.m_key_violations = 0xFFFE).unwrap();
    for _ in 0..3 {
        get_pi(&mut s, T0, WRONG);
    }
    assert_eq!(s.m_key_state(1).unwrap().violations, 0xFFFF);
}

#[test]
fn ca_ports_have_their_own_keys() {
    let mut s = protected_ca(2, 0);
    // Port 2 has no key: SMPs arriving there pass, and may even read port 1.
    let req = lid_req(Method::Get, SmAttributeId::PortInfo, 1, WRONG, &[]);
    let r = s.handle(T0, Rx::port(2), &req).unwrap();
    let pi = PortInfo::parse(&r[64..128]).unwrap();
    assert_eq!(pi.local_port_num, 2);
    assert_eq!(pi.lid, CA_LID);
    assert!(s.handle(T0, Rx::port(1), &req).is_none());
}

#[test]
fn switch_checks_port_zero_key() {
    let mut s = switch();
    set_pi(&mut s, T0, 1, 0, 0, |pi| {
        pi.lid = 5;
        pi.master_sm_lid = SM_LID;
        pi.m_key = KEY;
        pi.m_key_protect_bits = 2;
    })
    .unwrap();
    for rx in [1, 4] {
        let req = lid_req(Method::Get, SmAttributeId::PortInfo, 3, WRONG, &[]);
        assert!(s.handle(T0, Rx::port(rx), &req).is_none());
    }
    assert_eq!(s.m_key_state(0).unwrap().violations, 2);
    let req = lid_req(Method::Get, SmAttributeId::NodeInfo, 0, KEY, &[]);
    let r = s.handle(T0, Rx::port(4), &req).unwrap();
    let ni = ibsm_wire::NodeInfo::parse(&r[64..]).unwrap();
    assert_eq!((ni.port_guid, ni.local_port_num), (0x200, 4));
}

// ----- NV store and reset ------------------------------------------------------------------

#[test]
fn reset_restores_from_nv_store_or_zero() {
    let mut plain = protected_ca(2, 3);
    plain.reset(T0);
    assert_eq!(plain.m_key_state(1).unwrap().config, MKeyConfig::default());
    assert_eq!(plain.port_state(1), Some(LogicalState::Down));

    let mut s = Sma::with_nv_store(NodeConfig::ca(0x100, 1), MemNvStore::default()).unwrap();
    s.link_up(T0, 1);
    let mut pi = s.port_info(1).unwrap();
    pi.port_state = PortState::NoChange;
    pi.port_phys_state = PhysPortState::NoChange;
    pi.m_key = KEY;
    pi.m_key_protect_bits = 2;
    pi.m_key_lease_period = 1;
    let req = lid_req(Method::Set, SmAttributeId::PortInfo, 1, 0, &pi.to_bytes());
    s.handle(T0, Rx::port(1), &req).unwrap();
    get_pi(&mut s, T0, WRONG);
    s.handle_timeout(T0 + SEC);
    assert_eq!(s.m_key_state(1).unwrap().config.protect_bits, 0);
    s.reset(T0 + 2 * SEC);
    let st = s.m_key_state(1).unwrap();
    assert_eq!(
        st.config,
        MKeyConfig {
            m_key: KEY,
            protect_bits: 2,
            lease_period: 1
        }
    );
    assert_eq!((st.violations, st.lease_deadline), (0, None));
}

// ----- port state machine --------------------------------------------------------------------

#[test]
fn port_state_transitions_via_set() {
    let mut s = ca();
    let st = |s: &Sma| s.port_state(1).unwrap();
    assert_eq!(st(&s), LogicalState::Init);
    let r = set_pi(&mut s, T0, 1, 1, 0, |pi| pi.port_state = PortState::Active).unwrap();
    assert_eq!(status(&r), 0x1C);
    assert_eq!(st(&s), LogicalState::Init);
    let r = set_pi(&mut s, T0, 1, 1, 0, |pi| pi.port_state = PortState::Armed).unwrap();
    assert_eq!(status(&r), 0);
    assert_eq!(
        PortInfo::parse(&r[64..]).unwrap().port_state,
        PortState::Armed
    );
    let r = set_pi(&mut s, T0, 1, 1, 0, |_| {}).unwrap();
    assert_eq!(
        (status(&r), st(&s)),
        (0, LogicalState::Armed),
        "NoChange keeps the state"
    );
    set_pi(&mut s, T0, 1, 1, 0, |pi| pi.port_state = PortState::Active).unwrap();
    assert_eq!(st(&s), LogicalState::Active);
    let r = set_pi(&mut s, T0, 1, 1, 0, |pi| pi.port_state = PortState::Armed).unwrap();
    assert_eq!(status(&r), 0x1C);
    let r = set_pi(&mut s, T0, 1, 1, 0, |pi| pi.port_state = PortState::Down).unwrap();
    assert_eq!(status(&r), 0);
    assert_eq!(st(&s), LogicalState::Down);
    assert_eq!(
        s.poll_event(),
        Some(SmaEvent::Link {
            port: 1,
            request: LinkRequest::Retrain
        })
    );
    s.link_up(at(1), 1);
    assert_eq!(st(&s), LogicalState::Init);
    s.link_down(at(2), 1);
    let pi = s.port_info(1).unwrap();
    assert_eq!(
        (pi.port_state, pi.port_phys_state),
        (PortState::Down, PhysPortState::Polling)
    );
    let r = set_pi(&mut s, T0, 1, 2, 0, |pi| {
        pi.port_phys_state = PhysPortState::Disabled;
    })
    .unwrap();
    assert_eq!(status(&r), 0);
    s.link_up(at(3), 2);
    assert_eq!(s.port_state(2), Some(LogicalState::Down));
}

/// A Set that changes an enabled width or speed asks the host to renegotiate the link;
/// one that writes the masks it already holds (or "no change") does not. The active
/// values change only when the host says the link trained to new ones.
#[test]
fn enabled_mask_changes_ask_for_renegotiation() {
    use ibsm_wire::{LinkSpeedMask, LinkWidth, LinkWidthMask};
    let mut s = ca();
    let pi = s.port_info(1).unwrap();
    set_pi(&mut s, T0, 1, 1, 0, |p| {
        p.link_width_enabled = pi.link_width_enabled;
        p.link_speed_enabled = LinkSpeedMask(0);
    })
    .unwrap();
    assert_eq!(s.poll_event(), None);
    let r = set_pi(&mut s, T0, 1, 1, 0, |p| {
        p.link_width_enabled = LinkWidthMask::X1;
    })
    .unwrap();
    assert_eq!(status(&r), 0);
    assert_eq!(
        s.poll_event(),
        Some(SmaEvent::Link {
            port: 1,
            request: LinkRequest::Renegotiate
        })
    );
    assert_eq!(
        s.port_info(1).unwrap().link_width_active,
        pi.link_width_active
    );
    let peer = s.port_info(2).unwrap();
    let trained = crate::negotiate(&s.port_info(1).unwrap(), &peer).unwrap();
    assert_eq!(trained.width, LinkWidth::X1);
    s.set_link_active(1, trained);
    let now = s.port_info(1).unwrap();
    assert_eq!(
        (now.link_width_active, now.link_speed_active),
        (LinkWidth::X1, pi.link_speed_active)
    );
    // Down and a mask change together: the retrain covers both.
    set_pi(&mut s, T0, 1, 1, 0, |p| {
        p.link_speed_enabled = LinkSpeedMask::SDR;
        p.port_state = PortState::Down;
    })
    .unwrap();
    assert_eq!(
        s.poll_event(),
        Some(SmaEvent::Link {
            port: 1,
            request: LinkRequest::Retrain
        })
    );
    assert_eq!(s.poll_event(), None);
}

#[test]
fn switch_port_state_change_and_trap_128() {
    let mut s = switch();
    assert!(s.switch_info().unwrap().port_state_change);
    // Clearing by writing 1.
    let mut si = s.switch_info().unwrap();
    let req = lid_req(Method::Set, SmAttributeId::SwitchInfo, 0, 0, &si.to_bytes());
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(status(&r), 0);
    assert!(!s.switch_info().unwrap().port_state_change);
    assert!(!SwitchInfo::parse(&r[64..]).unwrap().port_state_change);
    set_pi(&mut s, T0, 1, 0, 0, |pi| {
        pi.lid = 5;
        pi.master_sm_lid = SM_LID;
    })
    .unwrap();
    // A SubnSet-driven change does not set the bit ...
    set_pi(&mut s, T0, 1, 3, 0, |pi| pi.port_state = PortState::Armed).unwrap();
    assert!(!s.switch_info().unwrap().port_state_change);
    assert!(drain_traps(&mut s, T0).is_empty());
    // ... a link-driven one does, and raises trap 128.
    s.link_down(at(1), 3);
    assert!(s.switch_info().unwrap().port_state_change);
    let traps = drain_traps(&mut s, at(1));
    assert_eq!(traps.len(), 1);
    let n: Notice = traps[0].notice();
    assert_eq!(n.trap(), Some(TrapNumber::LinkStateChange));
    assert_eq!(n.details::<Trap128Details>().unwrap().lid, 5);
    assert_eq!((traps[0].slid, traps[0].dlid), (5, SM_LID));
    // Writing 0 leaves the bit set.
    si.port_state_change = false;
    let req = lid_req(Method::Set, SmAttributeId::SwitchInfo, 0, 0, &si.to_bytes());
    s.handle(at(2), Rx::port(1), &req).unwrap();
    assert!(s.switch_info().unwrap().port_state_change);
}

// ----- attribute store ------------------------------------------------------------------------

#[test]
fn lft_blocks() {
    let mut s = switch();
    let block: Vec<u8> = (0..64).collect();
    let req = lid_req(
        Method::Set,
        SmAttributeId::LinearForwardingTable,
        2,
        0,
        &block,
    );
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(status(&r), 0);
    assert_eq!(&r[64..128], &block[..]);
    assert_eq!(&s.lft()[128..192], &block[..]);
    assert_eq!(s.lft()[0], 0xFF);
    assert_eq!(s.lft().len(), 49152);
    let req = lid_req(
        Method::Get,
        SmAttributeId::LinearForwardingTable,
        768,
        0,
        &[],
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let mut c = ca();
    let req = lid_req(Method::Get, SmAttributeId::LinearForwardingTable, 0, 0, &[]);
    assert_eq!(status(&c.handle(T0, Rx::port(1), &req).unwrap()), 0x0C);
}

#[test]
fn mft_blocks_and_positions() {
    let mut s = Sma::new(NodeConfig::switch(0x300, 20)).unwrap();
    let mut data = [0u8; 64];
    data[0..2].copy_from_slice(&0xFFFFu16.to_be_bytes());
    let am = (1 << 28) | 3;
    let req = lid_req(
        Method::Set,
        SmAttributeId::MulticastForwardingTable,
        am,
        0,
        &data,
    );
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(status(&r), 0);
    // Position 1 covers ports 16..31; only 16..20 exist.
    assert_eq!(u16::from_be_bytes([r[64], r[65]]), 0x001F);
    assert_eq!(s.mft(0xC000 + 96), Some(&[0, 0x001F][..]));
    let req = lid_req(
        Method::Get,
        SmAttributeId::MulticastForwardingTable,
        2 << 28,
        0,
        &[],
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let req = lid_req(
        Method::Get,
        SmAttributeId::MulticastForwardingTable,
        32,
        0,
        &[],
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let req = lid_req(
        Method::Get,
        SmAttributeId::MulticastForwardingTable,
        1 << 12,
        0,
        &[],
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
}

/// The MFT is held up to the last block written: a switch no SM gave a group costs
/// nothing for it, and blocks never written still read as 0 within MulticastFDBCap.
#[test]
fn mft_held_up_to_the_last_block_written() {
    let mut s = Sma::new(NodeConfig::switch(0x300, 36)).unwrap();
    let before = s.memory_bytes();
    // Within the capacity (1,024 MLIDs), nothing written: all 0, not absent.
    assert_eq!(s.mft(0xC000 + 1023), Some(&[0u16, 0, 0][..]));
    assert_eq!(s.mft(0xC000 + 1024), None);
    let get = |block: u32| {
        lid_req(
            Method::Get,
            SmAttributeId::MulticastForwardingTable,
            block,
            0,
            &[],
        )
    };
    let r = s.handle(T0, Rx::port(1), &get(31)).unwrap();
    assert_eq!(status(&r), 0);
    assert!(r[64..128].iter().all(|&b| b == 0));
    assert_eq!(s.memory_bytes(), before, "a Get allocates nothing");
    // One Set of block 2 holds blocks 0..=2 (3 positions for 36 ports), no more.
    let mut data = [0u8; 64];
    data[0..2].copy_from_slice(&0x0006u16.to_be_bytes());
    let set = lid_req(
        Method::Set,
        SmAttributeId::MulticastForwardingTable,
        2,
        0,
        &data,
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &set).unwrap()), 0);
    assert_eq!(s.mft(0xC000 + 64), Some(&[0x0006u16, 0, 0][..]));
    assert_eq!(s.mft(0xC000 + 65), Some(&[0u16, 0, 0][..]));
    assert_eq!(s.mft(0xC000 + 1023), Some(&[0u16, 0, 0][..]));
    let grown = s.memory_bytes() - before;
    assert!(
        (3 * 32 * 3 * 2..1024 * 3 * 2).contains(&grown),
        "{grown} bytes for three blocks"
    );
    let r = s.handle(T0, Rx::port(1), &get(2)).unwrap();
    assert_eq!(u16::from_be_bytes([r[64], r[65]]), 0x0006);
}

#[test]
fn pkey_tables() {
    let mut s = switch();
    let mut data = [0u8; 64];
    data[2..4].copy_from_slice(&0x8001u16.to_be_bytes());
    let req = lid_req(Method::Set, SmAttributeId::PKeyTable, 3 << 16, 0, &data);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0);
    assert_eq!(&s.pkeys(3)[..2], &[0, 0x8001]);
    assert_eq!(s.pkeys(0)[0], 0xFFFF);
    let req = lid_req(Method::Get, SmAttributeId::PKeyTable, (3 << 16) | 1, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let req = lid_req(Method::Get, SmAttributeId::PKeyTable, 9 << 16, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    // A CA ignores the port bits and uses the receiving port's table (64 entries).
    let mut c = ca();
    let req = lid_req(Method::Get, SmAttributeId::PKeyTable, (7 << 16) | 1, 0, &[]);
    let r = c.handle(T0, Rx::port(2), &req).unwrap();
    assert_eq!(status(&r), 0);
}

#[test]
fn sl2vl_tables() {
    let mut s = switch();
    let table = [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67];
    let all = (1 << 16) | (1 << 17);
    let req = lid_req(
        Method::Set,
        SmAttributeId::SlToVlMappingTable,
        all,
        0,
        &table,
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0);
    assert_eq!(s.sl2vl(3, 5), Some(table));
    let req = lid_req(
        Method::Get,
        SmAttributeId::SlToVlMappingTable,
        (3 << 8) | 5,
        0,
        &[],
    );
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(&r[64..72], &table);
    let req = lid_req(Method::Get, SmAttributeId::SlToVlMappingTable, all, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let req = lid_req(Method::Get, SmAttributeId::SlToVlMappingTable, 9, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let mut c = ca();
    let req = lid_req(Method::Set, SmAttributeId::SlToVlMappingTable, 0, 0, &table);
    assert_eq!(status(&c.handle(T0, Rx::port(2), &req).unwrap()), 0);
    assert_eq!(c.sl2vl(0, 2), Some(table));
    assert_eq!(c.sl2vl(0, 1), Some([0; 8]));
}

#[test]
fn sl2vl_and_vlarb_tables_read_zero_until_set() {
    // Both tables are kept only once set (most fabrics never set them): until then
    // every entry reads 0, and a Set of one entry leaves the others 0.
    let mut s = switch();
    let get_sl2vl = |s: &mut Sma, i: u32, o: u32| {
        let req = lid_req(
            Method::Get,
            SmAttributeId::SlToVlMappingTable,
            (i << 8) | o,
            0,
            &[],
        );
        let r = s.handle(T0, Rx::port(1), &req).unwrap();
        assert_eq!(status(&r), 0);
        r[64..72].to_vec()
    };
    assert_eq!(get_sl2vl(&mut s, 2, 4), [0; 8]);
    assert_eq!(s.sl2vl(4, 2), Some([0; 8]));
    let table = [0x10, 0x32, 0x54, 0x76, 0x10, 0x32, 0x54, 0x76];
    let req = lid_req(
        Method::Set,
        SmAttributeId::SlToVlMappingTable,
        (2 << 8) | 4,
        0,
        &table,
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0);
    assert_eq!(get_sl2vl(&mut s, 2, 4), table);
    assert_eq!(get_sl2vl(&mut s, 4, 2), [0; 8]);
    assert_eq!(s.sl2vl(0, 0), Some([0; 8]));
    let get_vlarb = |s: &mut Sma, part: u32| {
        let req = lid_req(
            Method::Get,
            SmAttributeId::VlArbitrationTable,
            (part << 16) | 2,
            0,
            &[],
        );
        let r = s.handle(T0, Rx::port(1), &req).unwrap();
        assert_eq!(status(&r), 0);
        r[64..128].to_vec()
    };
    assert_eq!(get_vlarb(&mut s, 1), [0; 64]);
    assert_eq!(s.vl_arbitration(2), Some(&[0; 256]));
    let mut data = [0u8; 64];
    data[..4].copy_from_slice(&[0x03, 0x20, 0x05, 0x10]);
    let req = lid_req(
        Method::Set,
        SmAttributeId::VlArbitrationTable,
        (1 << 16) | 2,
        0,
        &data,
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0);
    assert_eq!(&get_vlarb(&mut s, 1)[..4], &[0x03, 0x20, 0x05, 0x10]);
    assert_eq!(
        get_vlarb(&mut s, 3),
        [0; 64],
        "the high-priority part is still 0"
    );
    assert_eq!(s.vl_arbitration(3), Some(&[0; 256]), "other ports still 0");
}

#[test]
fn vlarb_tables() {
    let mut s = switch();
    let mut data = [0u8; 64];
    for (i, e) in data.chunks_exact_mut(2).enumerate() {
        e[0] = 0xF0 | (i as u8 & 7);
        e[1] = 0x40;
    }
    let req = lid_req(
        Method::Set,
        SmAttributeId::VlArbitrationTable,
        (1 << 16) | 2,
        0,
        &data,
    );
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(status(&r), 0);
    // 8 entries exist; the reserved nibble reads 0.
    assert_eq!(&r[64..68], &[0x00, 0x40, 0x01, 0x40]);
    assert_eq!(&r[80..82], &[0, 0]);
    let vl = s.vl_arbitration(2).unwrap();
    assert_eq!(&vl[..4], &[0x00, 0x40, 0x01, 0x40]);
    assert_eq!(&vl[16..18], &[0, 0], "entry 8 is beyond the cap of 8");
    let req = lid_req(
        Method::Get,
        SmAttributeId::VlArbitrationTable,
        (2 << 16) | 2,
        0,
        &[],
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let req = lid_req(
        Method::Get,
        SmAttributeId::VlArbitrationTable,
        5 << 16 | 2,
        0,
        &[],
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let req = lid_req(
        Method::Get,
        SmAttributeId::VlArbitrationTable,
        1 << 16,
        0,
        &[],
    );
    assert_eq!(
        status(&s.handle(T0, Rx::port(1), &req).unwrap()),
        0x0C,
        "port 0 has none"
    );
}

#[test]
fn guid_info() {
    let mut s = ca();
    let mut data = [0u8; 64];
    data[0..8].copy_from_slice(&0xAAu64.to_be_bytes());
    data[8..16].copy_from_slice(&0xBBu64.to_be_bytes());
    let req = lid_req(Method::Set, SmAttributeId::GuidInfo, 0, 0, &data);
    let r = s.handle(T0, Rx::port(2), &req).unwrap();
    assert_eq!(status(&r), 0);
    assert_eq!(
        u64::from_be_bytes(r[64..72].try_into().unwrap()),
        0x102,
        "entry 0 is read-only"
    );
    assert_eq!(u64::from_be_bytes(r[72..80].try_into().unwrap()), 0xBB);
    assert_eq!(&s.guids(2)[..2], &[0x102, 0xBB]);
    let req = lid_req(Method::Get, SmAttributeId::GuidInfo, 1, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(2), &req).unwrap()), 0x1C);
}

#[test]
fn port_info_modifiers() {
    let mut s = switch();
    for (am, st) in [(8, 0), (9, 0x1C), (0x100, 0x1C), (0x8000_0001, 0)] {
        let req = lid_req(Method::Get, SmAttributeId::PortInfo, am, 0, &[]);
        assert_eq!(
            status(&s.handle(T0, Rx::port(1), &req).unwrap()),
            st,
            "am {am:#x}"
        );
    }
    let mut c = ca();
    let req = lid_req(Method::Get, SmAttributeId::PortInfo, 0, 0, &[]);
    let r = c.handle(T0, Rx::port(2), &req).unwrap();
    assert_eq!(PortInfo::parse(&r[64..]).unwrap().local_port_num, 2);
    let req = lid_req(Method::Get, SmAttributeId::PortInfo, 3, 0, &[]);
    assert_eq!(status(&c.handle(T0, Rx::port(2), &req).unwrap()), 0x1C);
}

#[test]
fn port_info_set_fields() {
    let mut s = ca();
    let r = set_pi(&mut s, T0, 1, 1, 0, |pi| {
        pi.capability_mask = CapabilityMask::EMPTY; // read-only
        pi.link_width_enabled = LinkWidthMask::SET_TO_SUPPORTED;
        pi.neighbor_mtu = Mtu::Mtu2048;
        pi.client_reregister = true;
        pi.operational_vls = VlCap::NoChange;
    })
    .unwrap();
    assert_eq!(status(&r), 0);
    let pi = PortInfo::parse(&r[64..]).unwrap();
    assert!(
        pi.capability_mask
            .contains(CapabilityMask::IS_TRAP_SUPPORTED)
    );
    assert_eq!(pi.link_width_enabled, pi.link_width_supported);
    assert_eq!(pi.neighbor_mtu, Mtu::Mtu2048);
    assert!(!pi.client_reregister);
    assert_eq!(pi.operational_vls, VlCap::Vl0To7);
    assert_eq!(s.poll_event(), Some(SmaEvent::ClientReregister { port: 1 }));
    for bad in [
        |pi: &mut PortInfo| pi.link_width_enabled = LinkWidthMask::X12,
        |pi: &mut PortInfo| pi.neighbor_mtu = Mtu::from(6),
        |pi: &mut PortInfo| pi.operational_vls = VlCap::Vl0To14,
        |pi: &mut PortInfo| pi.port_phys_state = PhysPortState::LinkUp,
    ] {
        let r = set_pi(&mut s, T0, 1, 1, 0, bad).unwrap();
        assert_eq!(status(&r), 0x1C);
    }
}

#[test]
fn sm_info_answers_only_with_an_sm() {
    let mut s = protected_ca(1, 0);
    let req = lid_req(Method::Get, SmAttributeId::SmInfo, 0, KEY, &[]);
    assert!(s.handle(T0, Rx::port(1), &req).is_none());
    let info = SmInfo {
        guid: 0x101,
        sm_key: 0x5EC,
        act_count: 9,
        priority: 3,
        sm_state: SmState::Master,
    };
    s.set_sm_info(Some(info));
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(SmInfo::parse(&r[64..]).unwrap(), info);
    let req = lid_req(Method::Get, SmAttributeId::SmInfo, 0, WRONG, &[]);
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(SmInfo::parse(&r[64..]).unwrap().sm_key, 0);
    let req = lid_req(Method::Get, SmAttributeId::SmInfo, 0, 0x5EC, &[]);
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(SmInfo::parse(&r[64..]).unwrap().sm_key, 0x5EC);
    let req = lid_req(Method::Set, SmAttributeId::SmInfo, 1, KEY, &info.to_bytes());
    s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(
        s.poll_event(),
        Some(SmaEvent::SmInfoSet {
            control: 1,
            sender: info,
            authenticated: true
        })
    );
    let req = lid_req(Method::Set, SmAttributeId::SmInfo, 6, KEY, &info.to_bytes());
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
}

#[test]
fn methods_versions_and_routing_forms() {
    let mut s = ca();
    let mut req = lid_req(Method::Get, SmAttributeId::NodeInfo, 0, 0, &[]);
    req[3] = 0x03;
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!((r[3], status(&r)), (0x83, 0x0008));
    let mut req = lid_req(Method::Get, SmAttributeId::NodeInfo, 0, 0, &[]);
    req[2] = 2;
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x0004);
    let mut req = lid_req(Method::Get, SmAttributeId::NodeInfo, 0, 0, &[]);
    req[3] = 0x81;
    assert!(s.handle(T0, Rx::port(1), &req).is_none());
    let req = lid_req(Method::Set, SmAttributeId::NodeInfo, 0, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x000C);
    let req = lid_req(Method::Get, SmAttributeId::NodeInfo, 1, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x001C);
    let req = lid_req(Method::Get, SmAttributeId::CableInfo, 0, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x000C);
    assert!(s.handle(T0, Rx::port(3), &req).is_none(), "no port 3");
    let before = s.stats();
    assert!(s.handle(T0, Rx::port(1), &req[..255]).is_none());
    let after = s.stats();
    assert_eq!(
        (after.received, after.other_dropped),
        (before.received + 1, before.other_dropped + 1),
        "a short SMP is counted received and dropped"
    );
    // Directed route: answered in the same form, turned around.
    let req = dr_req(Method::Get, SmAttributeId::NodeInfo, 0, 0, &[]);
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    let v = DrSmp::parse(&r).unwrap();
    assert!(v.direction && v.response);
    assert_eq!((v.hop_pointer, v.status), (3, 0));
    let mut bad = req;
    bad[6] = 2; // hop pointer not at the end
    assert!(s.handle(T0, Rx::port(1), &bad).is_none());
}

#[test]
fn memory_per_node() {
    let sw = Sma::new(NodeConfig::switch(1, 36)).unwrap();
    let ca = Sma::new(NodeConfig::ca(2, 1)).unwrap();
    let (s, c) = (sw.memory_bytes(), ca.memory_bytes());
    std::println!("memory: 36-port switch {s} bytes, 1-port CA {c} bytes");
    // The LFT dominates a switch; a CA stays small.
    assert!(s > 49_152 && s < 120_000, "{s}");
    assert!(c < 4_096, "{c}");
}

#[test]
fn node_description_and_led_info_follow_capabilities() {
    let mut s = ca();
    let text = NodeDescription::from_text("renamed");
    let req = lid_req(
        Method::Set,
        SmAttributeId::NodeDescription,
        0,
        0,
        &text.node_string,
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x000C);
    let req = lid_req(Method::Get, SmAttributeId::LedInfo, 1, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x000C);

    let mut cfg = NodeConfig::ca(0x100, 1);
    let pi = &mut cfg.ports[0].port_info;
    pi.capability_mask |=
        CapabilityMask::IS_LED_INFO_SUPPORTED | CapabilityMask::IS_CAPABILITY_MASK2_SUPPORTED;
    pi.capability_mask2 = CapabilityMask2::IS_SET_NODE_DESCRIPTION_SUPPORTED;
    let mut s = Sma::new(cfg).unwrap();
    let req = lid_req(
        Method::Set,
        SmAttributeId::NodeDescription,
        0,
        0,
        &text.node_string,
    );
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(status(&r), 0);
    let req = lid_req(Method::Get, SmAttributeId::NodeDescription, 0, 0, &[]);
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(
        NodeDescription::parse(&r[64..]).unwrap().text(),
        Some("renamed")
    );
    let req = lid_req(Method::Set, SmAttributeId::LedInfo, 0, 0, &[0x80]);
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!((status(&r), r[64]), (0, 0x80));
    let req = lid_req(Method::Get, SmAttributeId::LedInfo, 2, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
}

#[test]
fn armed_port_goes_active_on_data_and_disable_enable_events() {
    let mut s = ca();
    set_pi(&mut s, T0, 1, 1, 0, |pi| pi.port_state = PortState::Armed).unwrap();
    s.data_packet(at(1), 1);
    assert_eq!(s.port_state(1), Some(LogicalState::Active));
    set_pi(&mut s, at(2), 1, 1, 0, |pi| {
        pi.port_phys_state = PhysPortState::Disabled;
    })
    .unwrap();
    assert_eq!(
        s.poll_event(),
        Some(SmaEvent::Link {
            port: 1,
            request: LinkRequest::Disable
        })
    );
    set_pi(&mut s, at(3), 1, 1, 0, |pi| {
        pi.port_phys_state = PhysPortState::Polling;
    })
    .unwrap();
    assert_eq!(
        s.poll_event(),
        Some(SmaEvent::Link {
            port: 1,
            request: LinkRequest::Enable
        })
    );
    assert_eq!(s.poll_event(), None);
}

#[test]
fn trap_queue_keeps_the_newest() {
    let mut cfg = NodeConfig::ca(0x100, 1);
    cfg.max_pending_traps = 2;
    let mut s = Sma::new(cfg).unwrap();
    s.link_up(T0, 1);
    set_pi(&mut s, T0, 1, 1, 0, |pi| {
        pi.master_sm_lid = SM_LID;
        pi.m_key = KEY;
        pi.m_key_protect_bits = 3;
    })
    .unwrap();
    for i in 0..5 {
        get_pi(&mut s, at(i), WRONG);
    }
    assert_eq!(s.pending_traps(), 2);
    assert_eq!(s.stats().traps_overflowed, 3);
    let tids: Vec<u64> = drain_traps(&mut s, at(10))
        .iter()
        .map(|t| t.transaction_id)
        .collect();
    assert_eq!(tids, [4, 5]);
    assert_eq!(s.stats().mkey_dropped, 5);
}

#[test]
fn config_errors() {
    let mut c = NodeConfig::ca(1, 2);
    c.ports.pop();
    assert!(matches!(
        Sma::new(c),
        Err(NodeConfigError::PortCount {
            expected: 2,
            got: 1,
            ..
        })
    ));
    let mut c = NodeConfig::switch(1, 2);
    c.switch_info = None;
    assert!(matches!(
        Sma::new(c),
        Err(NodeConfigError::SwitchInfo { .. })
    ));
    let mut c = NodeConfig::ca(1, 1);
    c.max_pending_traps = 0;
    assert_eq!(Sma::new(c).unwrap_err(), NodeConfigError::TrapQueue);
    let mut c = NodeConfig::ca(1, 1);
    c.node_info.node_type = NodeType::Rnic;
    assert!(matches!(Sma::new(c), Err(NodeConfigError::NodeType { .. })));
}

#[test]
fn extended_and_vendor_attributes() {
    use ibsm_wire::{FecModeMask, MlnxExtPortInfo, MlnxLinkSpeed, PortInfoExtended};
    let mut s = ca();
    for attr in [
        SmAttributeId::PortInfoExtended,
        SmAttributeId::MlnxExtPortInfo,
    ] {
        let req = lid_req(Method::Get, attr, 1, 0, &[]);
        assert_eq!(
            status(&s.handle(T0, Rx::port(1), &req).unwrap()),
            0x000C,
            "{attr:?}"
        );
    }
    let req = lid_req(Method::Get, SmAttributeId::VendorDiag, 0, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0);
    let req = lid_req(Method::Get, SmAttributeId::VendorDiag, 1, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);

    let mut cfg = NodeConfig::ca(0x100, 1);
    let pc = &mut cfg.ports[0];
    pc.port_info.capability_mask |= CapabilityMask::IS_CAPABILITY_MASK2_SUPPORTED;
    pc.port_info.capability_mask2 = CapabilityMask2::IS_PORT_INFO_EXTENDED_SUPPORTED;
    pc.port_info_extended.edr_fec_mode_supported = FecModeMask::NO_FEC | FecModeMask::RS;
    pc.mlnx_ext_port_info = Some(MlnxExtPortInfo {
        link_speed_supported: MlnxLinkSpeed::FDR10,
        ..MlnxExtPortInfo::default()
    });
    let mut s = Sma::new(cfg).unwrap();
    let want = PortInfoExtended {
        edr_fec_mode_enabled: FecModeMask::RS,
        ..PortInfoExtended::default()
    };
    let req = lid_req(
        Method::Set,
        SmAttributeId::PortInfoExtended,
        0,
        0,
        &want.to_bytes(),
    );
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(status(&r), 0);
    let got = PortInfoExtended::parse(&r[64..]).unwrap();
    assert_eq!(got.edr_fec_mode_enabled, FecModeMask::RS);
    assert_eq!(
        got.edr_fec_mode_supported,
        FecModeMask::NO_FEC | FecModeMask::RS,
        "read-only kept"
    );
    let bad = PortInfoExtended {
        fdr_fec_mode_enabled: FecModeMask::RS,
        ..PortInfoExtended::default()
    };
    let req = lid_req(
        Method::Set,
        SmAttributeId::PortInfoExtended,
        0,
        0,
        &bad.to_bytes(),
    );
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
    let m = MlnxExtPortInfo {
        link_speed_enabled: MlnxLinkSpeed::FDR10,
        ..MlnxExtPortInfo::default()
    };
    let req = lid_req(
        Method::Set,
        SmAttributeId::MlnxExtPortInfo,
        1,
        0,
        &m.to_bytes(),
    );
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(status(&r), 0);
    assert_eq!(
        MlnxExtPortInfo::parse(&r[64..]).unwrap().link_speed_enabled,
        MlnxLinkSpeed::FDR10
    );
}

#[test]
fn random_forwarding_table_when_capable() {
    let mut s = switch();
    let req = lid_req(Method::Get, SmAttributeId::RandomForwardingTable, 0, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x0C);
    let mut cfg = NodeConfig::switch(0x200, 4);
    cfg.switch_info.as_mut().unwrap().random_fdb_cap = 20;
    let mut s = Sma::new(cfg).unwrap();
    let mut data = [0u8; 64];
    data[..4].copy_from_slice(&[0x00, 0x05, 0x80, 0x03]);
    data[60..64].copy_from_slice(&[0, 9, 0x80, 1]);
    let req = lid_req(
        Method::Set,
        SmAttributeId::RandomForwardingTable,
        1,
        0,
        &data,
    );
    let r = s.handle(T0, Rx::port(1), &req).unwrap();
    assert_eq!(status(&r), 0);
    assert_eq!(&r[64..68], &[0, 5, 0x80, 3]);
    assert_eq!(&r[80..84], &[0; 4], "entries beyond RandomFDBCap read 0");
    let req = lid_req(Method::Get, SmAttributeId::RandomForwardingTable, 2, 0, &[]);
    assert_eq!(status(&s.handle(T0, Rx::port(1), &req).unwrap()), 0x1C);
}

#[test]
fn trap_144_on_local_changes() {
    use ibsm_wire::{Trap144ChangeFlags, Trap144Details};
    let mut cfg = NodeConfig::ca(0x100, 2);
    for pc in &mut cfg.ports {
        pc.port_info.capability_mask |= CapabilityMask::IS_CAPABILITY_MASK_NOTICE_SUPPORTED
            | CapabilityMask::IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED;
    }
    let mut s = Sma::new(cfg).unwrap();
    s.link_up(T0, 1);
    s.link_up(T0, 2);
    set_pi(&mut s, T0, 1, 1, 0, |pi| {
        pi.lid = CA_LID;
        pi.master_sm_lid = SM_LID;
    })
    .unwrap();
    // No SM LID on port 2: only port 1 reports.
    s.set_node_description(at(1), NodeDescription::from_text("new name"));
    let traps = drain_traps(&mut s, at(1));
    assert_eq!(traps.len(), 1);
    let d: Trap144Details = traps[0].notice().details().unwrap();
    assert!(d.other_local_changes);
    assert_eq!(d.change_flags, Trap144ChangeFlags::NODE_DESCRIPTION);
    assert_eq!(d.lid, CA_LID);
    s.set_node_description(at(2), NodeDescription::from_text("new name"));
    assert!(drain_traps(&mut s, at(2)).is_empty(), "no change, no trap");
    s.set_is_sm(1, true);
    let traps = drain_traps(&mut s, at(2));
    assert_eq!(traps.len(), 1);
    let d: Trap144Details = traps[0].notice().details().unwrap();
    assert!(!d.other_local_changes);
    assert!(d.capability_mask.contains(CapabilityMask::IS_SM));
    assert!(
        s.port_info(1)
            .unwrap()
            .capability_mask
            .contains(CapabilityMask::IS_SM)
    );
}

/// PortInfo modifier bit 31 (SMSupportExtendedSpeeds): an NDR port fills the
/// LinkSpeedExt* fields (and takes LinkSpeedExtEnabled in a Set) only for an SM that
/// sets it, as the spec and OpenSM (issue 38) expect.
#[test]
fn extended_speed_fields_only_with_modifier_bit_31() {
    let mut cfg = NodeConfig::ca(0x100, 1);
    {
        let pi = &mut cfg.ports[0].port_info;
        pi.capability_mask |= CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED;
        pi.link_speed_ext_active = ibsm_wire::LinkSpeedExt::Ndr;
        pi.link_speed_ext_supported = LinkSpeedExtMask::EDR | LinkSpeedExtMask::NDR;
        pi.link_speed_ext_enabled = LinkSpeedExtMask::EDR | LinkSpeedExtMask::NDR;
        pi.link_speed_ext_active2 = 1;
        pi.link_speed_ext_supported2 = 1;
    }
    let mut s = Sma::new(cfg).unwrap();
    s.link_up(T0, 1);
    let rx = Rx {
        port: 1,
        slid: SM_LID,
    };
    let get = |s: &mut Sma, am: u32| {
        let req = lid_req(Method::Get, SmAttributeId::PortInfo, am, 0, &[]);
        PortInfo::parse(&s.handle(T0, rx, &req).unwrap()[64..128]).unwrap()
    };
    let plain = get(&mut s, 1);
    assert_eq!(plain.link_speed_ext_active, ibsm_wire::LinkSpeedExt::None);
    assert_eq!(plain.link_speed_ext_supported, LinkSpeedExtMask::EMPTY);
    assert_eq!(plain.link_speed_ext_enabled, LinkSpeedExtMask::EMPTY);
    assert_eq!(
        (
            plain.link_speed_ext_active2,
            plain.link_speed_ext_supported2
        ),
        (0, 0)
    );
    let ext = get(&mut s, 1 | 1 << 31);
    assert_eq!(ext.link_speed_ext_active, ibsm_wire::LinkSpeedExt::Ndr);
    assert_eq!(
        ext.link_speed_ext_supported,
        LinkSpeedExtMask::EDR | LinkSpeedExtMask::NDR
    );
    assert_eq!(
        (ext.link_speed_ext_active2, ext.link_speed_ext_supported2),
        (1, 1)
    );
    // A Set without bit 31 leaves LinkSpeedExtEnabled alone; with it, it is written.
    let mut pi = ext;
    pi.port_state = PortState::NoChange;
    pi.port_phys_state = PhysPortState::NoChange;
    pi.link_speed_ext_enabled = LinkSpeedExtMask::EDR;
    for (am, want) in [
        (1, LinkSpeedExtMask::EDR | LinkSpeedExtMask::NDR),
        (1 | 1 << 31, LinkSpeedExtMask::EDR),
    ] {
        let req = lid_req(Method::Set, SmAttributeId::PortInfo, am, 0, &pi.to_bytes());
        assert_eq!(status(&s.handle(T0, rx, &req).unwrap()), 0);
        assert_eq!(
            s.port_info(1).unwrap().link_speed_ext_enabled,
            want,
            "am {am:#x}"
        );
    }
}

/// The cheap accessors read what `port_info` shows, on every port of both node kinds.
#[test]
fn lid_lmc_and_capability_mask_match_port_info() {
    let mut c = ca();
    let r = set_pi(&mut c, T0, 1, 2, 0, |pi| {
        pi.lid = 0x1234;
        pi.lmc = 3;
    })
    .unwrap();
    assert_eq!(status(&r), 0);
    c.set_is_sm(1, true);
    let mut sw = switch();
    let r = set_pi(&mut sw, T0, 1, 0, 0, |pi| {
        pi.lid = 0x77;
        pi.lmc = 0;
    })
    .unwrap();
    assert_eq!(status(&r), 0);
    for s in [&c, &sw] {
        for port in 0..=9 {
            let pi = s.port_info(port);
            assert_eq!(
                s.lid_lmc(port),
                pi.as_ref().map(|p| (p.lid, p.lmc)),
                "{port}"
            );
            assert_eq!(
                s.capability_mask(port),
                pi.map(|p| p.capability_mask),
                "{port}"
            );
        }
    }
    assert_eq!(c.lid_lmc(2), Some((0x1234, 3)));
    assert_eq!(sw.lid_lmc(0), Some((0x77, 0)));
    assert!(
        c.capability_mask(1)
            .unwrap()
            .contains(CapabilityMask::IS_SM)
    );
}

/// poll_timeout names a port's lease deadline while its countdown runs, and only then
/// (also after a keyed SMP stopped it, when the agent's own reminder is stale).
#[test]
fn poll_timeout_follows_the_lease_countdown() {
    // No MasterSMLID: no traps, so only the lease shows.
    let mut s = ca();
    set_pi(&mut s, T0, 1, 1, 0, |pi| {
        pi.lid = CA_LID;
        pi.m_key = KEY;
        pi.m_key_protect_bits = 2;
        pi.m_key_lease_period = 10;
    })
    .unwrap();
    assert_eq!(s.poll_timeout(), None);
    assert!(get_pi(&mut s, T0, WRONG).is_none());
    assert_eq!(s.pending_traps(), 0);
    assert_eq!(s.poll_timeout(), Some(T0 + 10 * SEC));
    assert!(get_pi(&mut s, T0 + SEC, KEY).is_some());
    assert_eq!(s.poll_timeout(), None, "a keyed SMP stopped the countdown");
    assert!(get_pi(&mut s, T0 + 2 * SEC, WRONG).is_none());
    assert_eq!(s.poll_timeout(), Some(T0 + 12 * SEC));
    s.handle_timeout(T0 + 12 * SEC);
    assert_eq!(s.poll_timeout(), None, "expired");
}
