//! Model-based test of the M_Key rules: a small reference model written straight from
//! IBA Vol. 1 §14.2.4 (M_Key) runs beside the agent on random sequences of Gets,
//! Sets, TrapRepresses with right/wrong/zero keys, time jumps (including exactly at and
//! one tick before the lease deadline), link events and resets. After every step the two
//! must agree on the response or drop, every returned M_Key field, the violation counter,
//! the lease countdown and every trap sent.
//!
//! Cases: `IBSM_SMA_MODEL_CASES` (default 10 000). Run a million by hand with
//! `IBSM_SMA_MODEL_CASES=1000000 cargo test --release -p ibsm-sma --test model`.

use std::time::Duration;

use ibsm_sma::{MemNvStore, NodeConfig, Outcome, Rx, Sma};
use ibsm_wire::{
    DrPath, DrSmp, Instant, LidSmp, Method, PhysPortState, PortInfo, PortState, SmAttributeId,
    Trap128Details, Trap256Details, TrapNumber,
};
use proptest::prelude::*;

const K1: u64 = 0x1111_2222_3333_4444;
const K2: u64 = 0x0000_0000_0000_0042;
const SM_LID: u16 = 0x10;
const REQ_SLID: u16 = 0x33;
/// The model keeps time as plain nanoseconds (`u64`), so the agent's [`Instant`]
/// arithmetic is checked against integer arithmetic; [`at`] hands the model's time over.
const NS_PER_SEC: u64 = 1_000_000_000;
const RESEND: u64 = NS_PER_SEC;
const MAX_TRAPS: usize = 4;

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

#[derive(Debug, Clone, Copy)]
enum KeyPick {
    Right,
    Wrong(u64),
    Zero,
}

#[derive(Debug, Clone, Copy)]
enum Jump {
    Ns(u64),
    DeadlineMinusOne,
    Deadline,
    DeadlinePlus(u64),
}

#[derive(Debug, Clone)]
enum Op {
    Get {
        key: KeyPick,
        dr: bool,
        rx: u8,
        /// NodeInfo instead of PortInfo (the check does not depend on the attribute).
        node_info: bool,
    },
    Set {
        key: KeyPick,
        dr: bool,
        rx: u8,
        m_key: u64,
        protect: u8,
        lease: u16,
        sm_lid: u16,
        violations: Option<u16>,
        /// An illegal PortState transition makes the whole Set fail.
        illegal: bool,
    },
    Repress {
        key: KeyPick,
        rx: u8,
        /// Index into the model's pending traps (wrapped), or a TID no trap has.
        pick: Option<usize>,
    },
    Advance {
        jump: Jump,
        explicit: bool,
    },
    Link {
        port: u8,
        up: bool,
    },
    Reset,
}

fn key_pick() -> impl Strategy<Value = KeyPick> {
    prop_oneof![
        3 => Just(KeyPick::Right),
        3 => any::<u64>().prop_map(KeyPick::Wrong),
        2 => Just(KeyPick::Zero),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let rx = 1..=2u8;
    prop_oneof![
        6 => (key_pick(), any::<bool>(), rx.clone(), prop::bool::weighted(0.25))
            .prop_map(|(key, dr, rx, node_info)| Op::Get { key, dr, rx, node_info }),
        5 => (
            key_pick(),
            any::<bool>(),
            rx.clone(),
            prop_oneof![Just(0u64), Just(K1), Just(K2)],
            0..=3u8,
            prop_oneof![Just(0u16), Just(1), Just(3), any::<u16>()],
            prop_oneof![Just(0u16), Just(SM_LID)],
            prop_oneof![Just(None), any::<u16>().prop_map(Some), Just(Some(0xFFFE))],
            prop::bool::weighted(0.15),
        )
            .prop_map(|(key, dr, rx, m_key, protect, lease, sm_lid, violations, illegal)| Op::Set {
                key,
                dr,
                rx,
                m_key,
                protect,
                lease,
                sm_lid,
                violations,
                illegal,
            }),
        3 => (key_pick(), rx.clone(), prop::option::of(0..8usize))
            .prop_map(|(key, rx, pick)| Op::Repress { key, rx, pick }),
        4 => (
            prop_oneof![
                (0..3 * NS_PER_SEC).prop_map(Jump::Ns),
                Just(Jump::DeadlineMinusOne),
                Just(Jump::Deadline),
                (1..100 * NS_PER_SEC).prop_map(Jump::DeadlinePlus),
            ],
            any::<bool>(),
        )
            .prop_map(|(jump, explicit)| Op::Advance { jump, explicit }),
        2 => (rx, any::<bool>()).prop_map(|(port, up)| Op::Link { port, up }),
        1 => Just(Op::Reset),
    ]
}

/// What the model expects a trap to say.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TrapBody {
    BadMKey(Trap256Details),
    LinkState(u16),
}

#[derive(Debug, Clone)]
struct MTrap {
    tid: u64,
    next: u64,
    body: TrapBody,
}

/// The reference model: one guarded port (a CA's port 1 or a switch's port 0).
#[derive(Debug, Clone)]
struct Model {
    switch: bool,
    now: u64,
    m_key: u64,
    protect: u8,
    lease: u16,
    violations: u16,
    deadline: Option<u64>,
    lid: u16,
    sm_lid: u16,
    /// Whether the link of port 1..=2 is up (index 0 unused).
    up: [bool; 3],
    /// What the non-volatile store holds for the guarded port.
    nv: Option<(u64, u8, u16)>,
    traps: Vec<MTrap>,
    next_tid: u64,
}

impl Model {
    fn new(switch: bool) -> Self {
        Self {
            switch,
            now: 0,
            m_key: 0,
            protect: 0,
            lease: 0,
            violations: 0,
            deadline: None,
            lid: 0,
            sm_lid: 0,
            up: [false; 3],
            nv: None,
            traps: Vec::new(),
            next_tid: 1,
        }
    }

    fn guarded_port(&self) -> u8 {
        if self.switch { 0 } else { 1 }
    }

    fn time(&mut self, now: u64) {
        self.now = self.now.max(now);
        if let Some(d) = self.deadline {
            if self.now >= d {
                self.protect = 0;
                self.deadline = None;
            }
        }
    }

    fn push_trap(&mut self, body: TrapBody) {
        if self.traps.len() >= MAX_TRAPS {
            self.traps.remove(0);
        }
        self.traps.push(MTrap {
            tid: self.next_tid,
            next: self.now,
            body,
        });
        self.next_tid += 1;
    }

    fn traps_allowed(&self) -> bool {
        // Traps need the SM LID and a port that is not Down (a switch's port 0 never is).
        self.sm_lid != 0 && (self.switch || self.up[1])
    }

    /// The M_Key check: `Some(hide)` when the SMP goes through.
    fn check(&mut self, key: u64, method: Method, details: Trap256Details) -> Option<bool> {
        let matches = self.m_key == 0 || key == self.m_key;
        if matches {
            self.deadline = None;
            return Some(false);
        }
        if method == Method::Get && self.protect < 2 {
            return Some(self.protect == 1);
        }
        self.violations = self.violations.saturating_add(1);
        if self.deadline.is_none() && self.lease != 0 {
            self.deadline = Some(self.now + u64::from(self.lease) * NS_PER_SEC);
        }
        if self.traps_allowed() {
            self.push_trap(TrapBody::BadMKey(details));
        }
        None
    }
}

fn key_value(k: KeyPick, m: &Model) -> u64 {
    match k {
        KeyPick::Right => m.m_key,
        KeyPick::Wrong(w) => w,
        KeyPick::Zero => 0,
    }
}

fn request(
    method: Method,
    attr: SmAttributeId,
    am: u32,
    tid: u64,
    key: u64,
    dr: bool,
    data: &[u8; 64],
) -> [u8; 256] {
    if dr {
        let mut s = DrSmp::request(method, attr.into(), am, tid, key, &DrPath::local());
        s.hop_pointer = 1;
        s.data = *data;
        s.to_bytes()
    } else {
        let mut s = LidSmp::request(method, attr.into(), am, tid, key);
        s.data = *data;
        s.to_bytes()
    }
}

fn details(method: Method, attr: SmAttributeId, am: u32, key: u64, dr: bool) -> Trap256Details {
    Trap256Details {
        lid: if dr { 0xFFFF } else { REQ_SLID },
        dr_slid: if dr { 0xFFFF } else { 0 },
        method: u8::from(method),
        attribute_id: attr.into(),
        attribute_modifier: am,
        m_key: key,
        dr_notice: dr,
        dr_hop_count: 0,
        ..Trap256Details::default()
    }
}

fn rx_for(m: &Model, rx: u8, dr: bool) -> Rx {
    // A CA is reached through its guarded port 1 only; a switch through port 1 or 2.
    let port = if m.switch { rx } else { 1 };
    Rx {
        port,
        slid: if dr { 0xFFFF } else { REQ_SLID },
    }
}

fn compare_state(sma: &Sma<MemNvStore>, m: &Model, step: usize) -> Result<(), TestCaseError> {
    let st = sma.m_key_state(m.guarded_port()).unwrap();
    prop_assert_eq!(st.config.m_key, m.m_key, "m_key at step {}", step);
    prop_assert_eq!(
        st.config.protect_bits,
        m.protect,
        "protect at step {}",
        step
    );
    prop_assert_eq!(st.config.lease_period, m.lease, "lease at step {}", step);
    prop_assert_eq!(st.violations, m.violations, "violations at step {}", step);
    prop_assert_eq!(
        st.lease_deadline.map(Instant::as_nanos),
        m.deadline,
        "deadline at step {}",
        step
    );
    let nv = sma
        .nv_store()
        .saved
        .get(&m.guarded_port())
        .map(|c| (c.m_key, c.protect_bits, c.lease_period));
    prop_assert_eq!(nv, m.nv, "nv store at step {}", step);
    Ok(())
}

fn check_pi(resp: &[u8; 256], m: &Model, hide: bool, step: usize) -> Result<(), TestCaseError> {
    let pi = PortInfo::parse(&resp[64..128]).unwrap();
    prop_assert_eq!(
        pi.m_key,
        if hide { 0 } else { m.m_key },
        "shown m_key at step {}",
        step
    );
    prop_assert_eq!(
        pi.m_key_protect_bits,
        m.protect,
        "shown protect at step {}",
        step
    );
    prop_assert_eq!(
        pi.m_key_lease_period,
        m.lease,
        "shown lease at step {}",
        step
    );
    prop_assert_eq!(
        pi.m_key_violations,
        m.violations,
        "shown violations at step {}",
        step
    );
    prop_assert_eq!(pi.master_sm_lid, m.sm_lid, "shown sm lid at step {}", step);
    Ok(())
}

fn run(switch: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut cfg = if switch {
        NodeConfig::switch(0x5000, 2)
    } else {
        NodeConfig::ca(0x6000, 1)
    };
    cfg.trap_resend_interval = Duration::from_nanos(RESEND);
    cfg.max_pending_traps = MAX_TRAPS;
    let mut sma = Sma::with_nv_store(cfg, MemNvStore::default()).unwrap();
    let mut m = Model::new(switch);
    let gp = m.guarded_port();
    let mut tid = 1000u64;
    for (step, op) in ops.iter().enumerate() {
        tid += 1;
        match *op {
            Op::Get {
                key,
                dr,
                rx,
                node_info,
            } => {
                let k = key_value(key, &m);
                let (attr, am) = if node_info {
                    (SmAttributeId::NodeInfo, 0)
                } else {
                    (SmAttributeId::PortInfo, u32::from(gp))
                };
                let buf = request(Method::Get, attr, am, tid, k, dr, &[0; 64]);
                let rx = rx_for(&m, rx, dr);
                let mut b = buf;
                let out = sma.handle_in_place(at(m.now), rx, &mut b);
                m.time(m.now);
                let want = m.check(k, Method::Get, details(Method::Get, attr, am, k, dr));
                match want {
                    Some(hide) => {
                        prop_assert_eq!(out, Outcome::Respond, "step {}", step);
                        prop_assert_eq!(u16::from_be_bytes([b[4], b[5]]) & 0x7FFF, 0);
                        if !node_info {
                            check_pi(&b, &m, hide, step)?;
                        }
                    }
                    None => prop_assert!(
                        matches!(out, Outcome::Dropped(_)),
                        "step {}: {:?}",
                        step,
                        out
                    ),
                }
            }
            Op::Set {
                key,
                dr,
                rx,
                m_key,
                protect,
                lease,
                sm_lid,
                violations,
                illegal,
            } => {
                let k = key_value(key, &m);
                let am = u32::from(gp);
                // Start from the current value (as an SM does), write the M_Key fields.
                let mut pi = sma.port_info(gp).unwrap();
                pi.port_state = if illegal {
                    PortState::Active
                } else {
                    PortState::NoChange
                };
                pi.port_phys_state = PhysPortState::NoChange;
                pi.m_key = m_key;
                pi.m_key_protect_bits = protect;
                pi.m_key_lease_period = lease;
                pi.master_sm_lid = sm_lid;
                pi.lid = 0x20;
                if let Some(v) = violations {
                    pi.m_key_violations = v;
                }
                let written_violations = pi.m_key_violations;
                let buf = request(
                    Method::Set,
                    SmAttributeId::PortInfo,
                    am,
                    tid,
                    k,
                    dr,
                    &pi.to_bytes(),
                );
                let rx = rx_for(&m, rx, dr);
                let mut b = buf;
                let out = sma.handle_in_place(at(m.now), rx, &mut b);
                m.time(m.now);
                // An illegal transition: Init -> Active on a CA port or the switch's port 0
                // (Init at power-on and after reset); Down -> Active on a CA port.
                let state_illegal = illegal;
                match m.check(
                    k,
                    Method::Set,
                    details(Method::Set, SmAttributeId::PortInfo, am, k, dr),
                ) {
                    Some(_) => {
                        prop_assert_eq!(out, Outcome::Respond, "step {}", step);
                        let status = u16::from_be_bytes([b[4], b[5]]) & 0x7FFF;
                        if state_illegal {
                            prop_assert_eq!(status, 0x1C, "step {}", step);
                        } else {
                            prop_assert_eq!(status, 0, "step {}", step);
                            m.sm_lid = sm_lid;
                            m.lid = 0x20;
                            m.violations = written_violations;
                            if (m.m_key, m.protect, m.lease) != (m_key, protect, lease) {
                                m.m_key = m_key;
                                m.protect = protect;
                                m.lease = lease;
                                m.nv = Some((m_key, protect, lease));
                            }
                        }
                        check_pi(&b, &m, false, step)?;
                    }
                    None => prop_assert!(
                        matches!(out, Outcome::Dropped(_)),
                        "step {}: {:?}",
                        step,
                        out
                    ),
                }
            }
            Op::Repress { key, rx, pick } => {
                let k = key_value(key, &m);
                let rtid = match pick {
                    Some(i) if !m.traps.is_empty() => m.traps[i % m.traps.len()].tid,
                    _ => 0xFFFF_0000,
                };
                let buf = request(
                    Method::TrapRepress,
                    SmAttributeId::Notice,
                    0,
                    rtid,
                    k,
                    false,
                    &[0; 64],
                );
                let rx = rx_for(&m, rx, false);
                let mut b = buf;
                let out = sma.handle_in_place(at(m.now), rx, &mut b);
                m.time(m.now);
                let mut d = details(Method::TrapRepress, SmAttributeId::Notice, 0, k, false);
                d.lid = REQ_SLID;
                match m.check(k, Method::TrapRepress, d) {
                    Some(_) => {
                        let before = m.traps.len();
                        m.traps.retain(|t| t.tid != rtid);
                        let matched = m.traps.len() != before;
                        prop_assert_eq!(out, Outcome::Repressed { matched }, "step {}", step);
                    }
                    None => prop_assert!(
                        matches!(out, Outcome::Dropped(_)),
                        "step {}: {:?}",
                        step,
                        out
                    ),
                }
            }
            Op::Advance { jump, explicit } => {
                let target = match (jump, m.deadline) {
                    (Jump::Ns(d), _) => m.now + d,
                    (Jump::DeadlineMinusOne, Some(d)) => d.saturating_sub(1).max(m.now),
                    (Jump::Deadline, Some(d)) => d,
                    (Jump::DeadlinePlus(x), Some(d)) => d + x,
                    (_, None) => m.now + 1,
                };
                if explicit {
                    sma.handle_timeout(at(target));
                    m.time(target);
                } else {
                    // Lazily: nothing happens until the next input carries the new time.
                    m.now = target.max(m.now);
                }
            }
            Op::Link { port, up } => {
                let p = if switch { port } else { 1 };
                if up {
                    sma.link_up(at(m.now), p);
                } else {
                    sma.link_down(at(m.now), p);
                }
                m.time(m.now);
                let changed = m.up[usize::from(p)] != up;
                m.up[usize::from(p)] = up;
                if switch && changed && m.sm_lid != 0 {
                    m.push_trap(TrapBody::LinkState(m.lid));
                }
            }
            Op::Reset => {
                sma.reset(at(m.now));
                m.time(m.now);
                let (k, p, l) = m.nv.unwrap_or((0, 0, 0));
                m.m_key = k;
                m.protect = p;
                m.lease = l;
                m.violations = 0;
                m.deadline = None;
                m.lid = 0;
                m.sm_lid = 0;
                m.up = [false; 3];
                m.traps.clear();
            }
        }
        compare_state(&sma, &m, step)?;
        if matches!(
            op,
            Op::Advance {
                explicit: false,
                ..
            }
        ) {
            continue;
        }
        // Traps due now, in order; each one sent once per interval.
        let sent: Vec<_> = core::iter::from_fn(|| sma.poll_trap(at(m.now))).collect();
        let now = m.now;
        let mut want = Vec::new();
        for t in &mut m.traps {
            if t.next <= now {
                t.next = now + RESEND;
                want.push(t.clone());
            }
        }
        prop_assert_eq!(sent.len(), want.len(), "traps sent at step {}", step);
        for (s, w) in sent.iter().zip(&want) {
            prop_assert_eq!(s.transaction_id, w.tid, "trap tid at step {}", step);
            prop_assert_eq!(s.dlid, m.sm_lid, "trap dlid at step {}", step);
            prop_assert_eq!(s.slid, m.lid, "trap slid at step {}", step);
            let n = s.notice();
            match &w.body {
                TrapBody::BadMKey(d) => {
                    prop_assert_eq!(n.trap(), Some(TrapNumber::BadMKey));
                    prop_assert_eq!(&n.details::<Trap256Details>().unwrap(), d, "step {}", step);
                }
                TrapBody::LinkState(lid) => {
                    prop_assert_eq!(n.trap(), Some(TrapNumber::LinkStateChange));
                    prop_assert_eq!(n.details::<Trap128Details>().unwrap().lid, *lid);
                }
            }
        }
        prop_assert_eq!(
            sma.pending_traps(),
            m.traps.len(),
            "pending at step {}",
            step
        );
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
    fn ca_agrees_with_model(switch in any::<bool>(), ops in prop::collection::vec(op(), 1..24)) {
        run(switch, &ops)?;
    }
}
