//! The SA client's answer handling on arbitrary MADs: a GetTable and a Get are in
//! flight, then every chunk of the input arrives as a received MAD (with the query's
//! class, R bit and TID forced on when the chunk is long enough, so the RMPP and status
//! paths are reached). Never panics; every query ends with an outcome once its retries
//! run out, and the client is idle.
#![no_main]

use std::time::Duration;

use ibsm_query::sa::{SaClient, SaClientConfig};
use ibsm_transport::{Incoming, Instant, Received, SansIo};
use ibsm_wire::sa::{ComponentMask, NodeRecord, PathRecord};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut cfg = SaClientConfig::new(1);
    cfg.timeout = Duration::from_millis(10);
    cfg.retries = 1;
    cfg.max_response = 1 << 16;
    let mut c: SaClient<u8> = SaClient::new(cfg);
    c.get_table(&NodeRecord::default(), ComponentMask::NONE, 0);
    c.get(&PathRecord::default(), ComponentMask::NONE, 1);
    let mut tids = Vec::new();
    while let Some(out) = c.poll_transmit(Instant::ZERO) {
        tids.push(out.mad[8..16].to_vec());
    }
    let mut at = Instant::ZERO;
    for (k, chunk) in data.split(|&b| b == 0xA5).enumerate() {
        let mut mad = chunk.to_vec();
        if mad.len() >= 16 && !tids.is_empty() {
            mad[1] = 0x03;
            mad[3] |= 0x80;
            mad[8..16].copy_from_slice(&tids[k % tids.len()]);
        }
        at += Duration::from_millis(1);
        c.handle_incoming(
            at,
            Incoming::Mad(Received { mad, slid: 1, sl: 0, qpn: 1, pkey_index: 0, at }),
        );
        while c.poll_transmit(at).is_some() {}
    }
    for step in 1..=10u64 {
        let now = at + Duration::from_millis(10 * step);
        c.handle_timeout(now);
        while c.poll_transmit(now).is_some() {}
    }
    let mut outcomes = 0;
    while c.poll_event().is_some() {
        outcomes += 1;
    }
    assert_eq!(outcomes, 2);
    assert!(c.is_idle());
});
