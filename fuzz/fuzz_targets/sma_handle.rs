//! The SMA's `handle` on arbitrary request sequences (raw bytes and well-formed SMPs with
//! fuzzed fields), interleaved with time jumps, link events, trap polls and resets.
//!
//! Besides "never panics" it checks the M_Key invariants after every step:
//! * the key, protection level and lease period of a port change only through a
//!   SubnSet(PortInfo) answered with status 0, a lease expiry (protection -> 0 once the
//!   countdown has ended, key and period kept), or a reset;
//! * M_KeyViolations grows by exactly one per failed check (until it saturates) and
//!   otherwise changes only through an accepted SubnSet(PortInfo) or a reset;
//! * every response is a response with the request's TransactionID and AttributeID;
//! * short buffers are dropped; no more traps wait than the configured maximum.
#![no_main]

use core::time::Duration;

use ibsm_sma::{DropReason, MKeyConfig, NodeConfig, Outcome, Rx, Sma};
use ibsm_wire::{Instant, SmAttributeId};
use libfuzzer_sys::fuzz_target;

const KEYS: [u64; 4] = [0, 1, 0x1234_5678_9ABC_DEF0, u64::MAX];
const ATTRS: [SmAttributeId; 19] = [
    SmAttributeId::PortInfo,
    SmAttributeId::PortInfo,
    SmAttributeId::PortInfo,
    SmAttributeId::NodeInfo,
    SmAttributeId::NodeDescription,
    SmAttributeId::SwitchInfo,
    SmAttributeId::GuidInfo,
    SmAttributeId::PKeyTable,
    SmAttributeId::SlToVlMappingTable,
    SmAttributeId::VlArbitrationTable,
    SmAttributeId::LinearForwardingTable,
    SmAttributeId::MulticastForwardingTable,
    SmAttributeId::SmInfo,
    SmAttributeId::Notice,
    SmAttributeId::LedInfo,
    SmAttributeId::PortInfoExtended,
    SmAttributeId::MlnxExtPortInfo,
    SmAttributeId::RandomForwardingTable,
    SmAttributeId::VendorDiag,
];
const MAX_TRAPS: usize = 4;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
}

type Snap = Vec<(MKeyConfig, u16, Option<Instant>)>;

fn snapshot(sma: &Sma, ports: u8) -> Snap {
    (0..=ports)
        .filter_map(|p| sma.m_key_state(p))
        .map(|s| (s.config, s.violations, s.lease_deadline))
        .collect()
}

/// Handles one SMP and checks the response's shape; returns (accepted PortInfo Set,
/// failed M_Key check).
fn handle(sma: &mut Sma, now: Instant, rx: Rx, req: &[u8; 256]) -> (bool, bool) {
    let mut b = *req;
    match sma.handle_in_place(now, rx, &mut b) {
        Outcome::Respond => {
            assert_eq!(b[3] & 0x80, 0x80, "responses have the R bit");
            assert_eq!(b[8..18], req[8..18], "TID and AttributeID are kept");
            let status = u16::from_be_bytes([b[4], b[5]]) & 0x7FFF;
            let set_pi = req[3] == 0x02 && req[16..18] == [0x00, 0x15] && status == 0;
            (set_pi, false)
        }
        Outcome::Dropped(DropReason::MKey) => (false, true),
        _ => (false, false),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let Some(kind) = inp.byte() else { return };
    let switch = kind & 1 == 1;
    let mut cfg = if switch {
        NodeConfig::switch(0x1000, 4)
    } else {
        NodeConfig::ca(0x2000, 2)
    };
    cfg.max_pending_traps = MAX_TRAPS;
    let ports: u8 = if switch { 4 } else { 2 };
    // Index into the snapshot of the port whose key guards an SMP received on `rx`.
    let guarded = |rx: u8| usize::from(if switch { 0 } else { rx.saturating_sub(1) });
    let mut sma = Sma::new(cfg).expect("valid config");
    let mut now = Instant::ZERO;
    while let Some(op) = inp.byte() {
        let before = snapshot(&sma, ports);
        let mut set_pi = false;
        let mut failed: Option<usize> = None;
        let mut reset = false;
        match op % 8 {
            0..=2 => {
                // A well-formed SMP with fuzzed fields.
                let f = inp.bytes::<12>();
                let directed = f[0] & 1 == 1;
                let mut buf = [0u8; 256];
                buf[0] = 1;
                buf[1] = if directed { 0x81 } else { 0x01 };
                buf[2] = 1;
                buf[3] = [1, 2, 7, 3][usize::from(f[1] & 3)];
                buf[8..16].copy_from_slice(&u64::from(f[2]).to_be_bytes());
                let attr = ATTRS[usize::from(f[3]) % ATTRS.len()];
                buf[16..18].copy_from_slice(&u16::from(attr).to_be_bytes());
                buf[20..24].copy_from_slice(&[f[4] & 0x83, 0, f[5] & 3, f[6]]);
                buf[24..32].copy_from_slice(&KEYS[usize::from(f[7] & 3)].to_be_bytes());
                if directed {
                    buf[6] = 1; // hop pointer after the local outbound rule
                    buf[32..36].copy_from_slice(&[0xFF; 4]);
                }
                buf[64..128].copy_from_slice(&inp.bytes::<64>());
                let rx = Rx {
                    port: f[8] % (ports + 1),
                    slid: u16::from(f[9]),
                };
                let (s, fl) = handle(&mut sma, now, rx, &buf);
                set_pi = s;
                failed = fl.then(|| guarded(rx.port));
            }
            3 => {
                // Raw bytes, and a short prefix of them.
                let raw = inp.bytes::<256>();
                let rx = Rx::port(inp.byte().unwrap_or(1) % (ports + 1));
                assert!(
                    sma.handle(now, rx, &raw[..usize::from(op) % 256]).is_none(),
                    "short SMPs are dropped"
                );
                let (s, fl) = handle(&mut sma, now, rx, &raw);
                set_pi = s;
                failed = fl.then(|| guarded(rx.port));
            }
            4 => {
                now += Duration::from_micros(u64::from(u32::from_be_bytes(inp.bytes::<4>())));
                sma.handle_timeout(now);
            }
            5 => {
                let p = inp.byte().unwrap_or(0);
                if p & 0x80 != 0 {
                    sma.link_down(now, p % (ports + 1));
                } else {
                    sma.link_up(now, p % (ports + 1));
                }
            }
            6 => {
                while let Some(t) = sma.poll_trap(now) {
                    assert_eq!(t.mad[3], 0x05, "traps are SubnTrap");
                }
                while sma.poll_event().is_some() {}
                let _ = sma.poll_timeout();
            }
            _ => {
                if op & 0x80 != 0 {
                    sma.reset(now);
                    reset = true;
                }
            }
        }
        assert!(sma.pending_traps() <= MAX_TRAPS);
        if reset {
            continue;
        }
        let after = snapshot(&sma, ports);
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            if set_pi {
                // An accepted SubnSet(PortInfo) may write any of these fields.
                continue;
            }
            if a.0 != b.0 {
                let expired = b.2.is_some_and(|d| now >= d);
                assert!(expired, "port index {i}: M_Key settings changed without a Set or expiry");
                assert_eq!(a.0.protect_bits, 0);
                assert_eq!((a.0.m_key, a.0.lease_period), (b.0.m_key, b.0.lease_period));
            }
            if failed == Some(i) {
                assert_eq!(a.1, b.1.saturating_add(1), "a failed check counts one violation");
            } else {
                assert_eq!(a.1, b.1, "violations changed without a failed check");
            }
        }
    }
});
