//! The Subnet Administrator answering arbitrary bytes: never a panic, and every answer
//! is a response of class 0x03 that carries no SM_Key. One SA (a routed 4-ary 2-tree)
//! lives across inputs, so joins, services and subscriptions accumulate as in a
//! long-running SM. The first two bytes are the requester's LID.
#![no_main]

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ibsm_routing::{EngineKind, LidAssignment, RouteOptions, route_with_fallback};
use ibsm_sa::{Requester, SaConfig, SaServer, SaSnapshot};
use ibsm_topology::{Csr, generate};
use ibsm_wire::Instant;
use libfuzzer_sys::fuzz_target;

static SA: Mutex<Option<SaServer>> = Mutex::new(None);
/// The latest `now` any input used, in nanoseconds since the origin.
static LATEST: AtomicU64 = AtomicU64::new(0);

fn build() -> SaServer {
    let fabric = generate::k_ary_n_tree(4, 2).expect("fabric");
    let csr = Csr::new(&fabric);
    let lids = LidAssignment::sequential(&csr, 1).expect("lids");
    let routes = route_with_fallback(&*EngineKind::MinHop.engine(), &csr, &lids, &RouteOptions::default())
        .expect("routes");
    let mut sa = SaServer::new(SaConfig::with_sm_key(0x42));
    sa.load(SaSnapshot::from_routed(&fabric, &lids, routes, ibsm_wire::DEFAULT_SUBNET_PREFIX));
    sa
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let lid = u16::from_be_bytes([data[0], data[1]]);
    let mut mad = data[2..].to_vec();
    // Mostly well-formed SA requests, to get past the first checks.
    if mad.len() >= 4 {
        mad[0] = 1;
        mad[1] = 0x03;
        if mad.len() > 2 && data[0] & 0x80 == 0 {
            mad[2] = 2;
        }
    }
    let mut guard = SA.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let sa = guard.get_or_insert_with(build);
    let now = Instant::from_secs(u64::from(data[1]));
    let check = |out: &[u8]| {
        assert!(out.len() >= 56, "answer too short");
        assert_eq!(out[1], 0x03);
        assert_eq!(&out[36..44], &[0; 8], "SM_Key echoed");
    };
    for out in sa.handle(now, &mad, &Requester { lid, qpn: 1 }) {
        check(&out);
        assert!(out[3] & 0x80 != 0, "not a response");
    }
    // Time passes: RMPP resends and ABORTs (responses too), Report resends (requests).
    let later = now + Duration::from_millis(u64::from(data[0]) * 10);
    if sa.poll_timeout().is_some_and(|t| t <= later) {
        sa.handle_timeout(later);
    }
    while let Some(t) = sa.poll_transmit(later) {
        check(&t.mad);
        assert!(t.mad[3] & 0x80 != 0 || t.mad[3] == 0x06, "not a response or Report");
    }
    assert!(sa.transfers_in_progress() <= sa.config().max_transfers);
    // Every transfer started at or before the latest time seen and ends (at the latest)
    // by its total timer, every Report waits at most one report time-out: the SA always
    // has something due no later than that.
    let latest = LATEST.fetch_max(later.as_nanos(), Ordering::Relaxed).max(later.as_nanos());
    if let Some(due) = sa.poll_timeout() {
        let cfg = sa.config();
        let horizon = Instant::from_nanos(latest) + cfg.rmpp_total_timeout.max(cfg.report_timeout);
        assert!(due <= horizon, "next deadline {due:?} beyond {horizon:?}");
    }
    assert!(sa.transfer_bytes() <= sa.config().max_transfer_bytes);
    let _ = sa.take_mft_updates();
});
