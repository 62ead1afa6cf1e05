//! The performance agent's `handle` on arbitrary bytes and on PerfMgt requests with
//! fuzzed attribute data, interleaved with counter updates. Besides "never panics":
//! every answer is a class-0x04 response with the request's TransactionID, and a
//! request that is not a class-0x04 request is never answered.
#![no_main]

use ibsm_sma::{Counter, Pma, PmaConfig};
use ibsm_wire::perf::{PerfAttributeId, perf_request};
use ibsm_wire::{GsMad, Instant, Method, MgmtClass};
use libfuzzer_sys::fuzz_target;

const ATTRS: [u16; 8] = [0x0001, 0x0010, 0x0012, 0x0015, 0x0016, 0x001D, 0x001F, 0x0036];

fuzz_target!(|data: &[u8]| {
    let Some((&shape, mut rest)) = data.split_first() else {
        return;
    };
    let cfg = if shape & 1 == 1 {
        PmaConfig::switch(shape >> 3)
    } else {
        PmaConfig::ca((shape >> 3).max(1))
    };
    let mut pma = Pma::new(cfg);
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        let take = usize::from(op >> 3).min(rest.len());
        let (chunk, tail) = rest.split_at(take);
        rest = tail;
        match op & 7 {
            0 => {
                let c = Counter::ALL[usize::from(op) % Counter::ALL.len()];
                let n = chunk.iter().fold(0u64, |a, &b| a << 8 | u64::from(b));
                pma.add(chunk.first().copied().unwrap_or(1), c, n);
            }
            1 => pma.count_xmit(op >> 4, u64::from(op) << 20, 3, op & 8 != 0),
            2 => {
                // Raw bytes, padded to a MAD or not.
                let answered = pma.handle(Instant::ZERO, chunk);
                assert!(answered.is_none() || chunk.len() >= 256);
            }
            _ => {
                let method = if op & 8 == 0 { Method::Get } else { Method::Set };
                let attr = PerfAttributeId::from(ATTRS[usize::from(op >> 4) % ATTRS.len()]);
                let req = perf_request(method, attr, u64::from(op), chunk);
                let r = pma
                    .handle(Instant::ZERO, &req.to_bytes())
                    .expect("a class-0x04 request is answered");
                let r = GsMad::parse(&r).expect("256 bytes");
                assert!(r.response);
                assert_eq!(r.mgmt_class, MgmtClass::PerfMgt);
                assert_eq!(r.transaction_id, u64::from(op));
            }
        }
    }
});
