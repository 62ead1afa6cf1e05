//! `ibsm-election` speed and size: answering a SubnGet(SMInfo), one full poll round trip
//! (Standby poll -> Master answer -> Standby verdict), and the cost of a sweep decision
//! over many SMs. Also prints the machine's size and its per-peer memory.
//!
//! The election is not on a hot path (a poll every few hundred milliseconds); the bench
//! guards against accidental blow-ups (allocation per poll, quadratic decisions).
//!
//! Run: `cargo bench -p ibsm-benches --bench election`.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use ibsm_election::{Config, Election, Requester, SmAddr, SmInfo, SmState};
use ibsm_wire::Instant;

const KEY: u64 = 0x1;

fn cfg(guid: u64, priority: u8) -> Config {
    let mut c = Config::fast(guid);
    c.priority = priority;
    c.sm_key = KEY;
    c
}

fn master() -> Election {
    let mut m = Election::new(cfg(0x10, 9), Instant::ZERO).expect("config");
    m.begin_sweep(Instant::ZERO);
    m.sweep_complete(Instant::ZERO);
    assert_eq!(m.state(), SmState::Master);
    m
}

/// A well-formed SubnGet(SMInfo), borrowed from a probe.
fn get_request() -> [u8; 256] {
    let mut probe = Election::new(cfg(0x99, 0), Instant::ZERO).expect("config");
    probe.probe(Instant::ZERO, SmAddr::Lid(1));
    probe.poll_transmit().expect("probe").mad
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let auth = Requester {
        m_key_authenticated: true,
        ..Requester::default()
    };

    let mut m = master();
    let req = get_request();
    c.bench_function("election/answer SubnGet(SMInfo)", |b| {
        b.iter(|| black_box(m.handle_request(Instant::ZERO, black_box(&req), &auth)));
    });

    // Standby b follows Master m; one iteration = poll timer, m answers, b decides.
    let mut m = master();
    let mut s = Election::new(cfg(0x20, 1), Instant::ZERO).expect("config");
    s.begin_sweep(Instant::ZERO);
    s.sm_found(
        Instant::ZERO,
        Some(SmAddr::Lid(1)),
        SmInfo {
            guid: 0x10,
            sm_key: KEY,
            act_count: 0,
            priority: 9,
            sm_state: SmState::Master,
        },
    );
    s.sweep_complete(Instant::ZERO);
    assert_eq!(s.state(), SmState::Standby);
    let mut now = Instant::ZERO;
    c.bench_function("election/poll round trip", |b| {
        b.iter(|| {
            while let Some(tx) = s.poll_transmit() {
                let r = m.handle_request(now, &tx.mad, &auth).expect("request");
                s.handle_response(now, &r).expect("response");
            }
            now += Duration::from_millis(200);
            s.handle_timeout(now);
            m.handle_timeout(now);
        });
    });
    assert_eq!(s.state(), SmState::Standby);

    // A Master's sweep decision over n other SMs (all lower-ranked Standbys).
    for n in [4u64, 64, 1024] {
        let peers: Vec<SmInfo> = (0..n)
            .map(|i| SmInfo {
                guid: 0x1000 + i,
                sm_key: KEY,
                act_count: 1,
                priority: 1,
                sm_state: SmState::Standby,
            })
            .collect();
        let mut m = master();
        c.bench_function(&format!("election/master sweep decision, {n} SMs"), |b| {
            b.iter(|| {
                m.begin_sweep(Instant::ZERO);
                for (i, p) in peers.iter().enumerate() {
                    m.sm_found(Instant::ZERO, Some(SmAddr::Lid(i as u16 + 2)), *p);
                }
                m.sweep_complete(Instant::ZERO);
                while m.poll_event().is_some() {}
            });
        });
    }
    c.final_summary();

    // A peer entry holds its GUID, address, last SMInfo and a few flags.
    let per_peer = std::mem::size_of::<u64>()
        + std::mem::size_of::<Option<SmAddr>>()
        + std::mem::size_of::<SmInfo>()
        + 16;
    println!(
        "size_of::<Election>() = {} bytes; each known peer SM adds ~{per_peer} bytes \
         (a BTreeMap entry, plus tree overhead); nothing grows with the fabric size",
        std::mem::size_of::<Election>()
    );
}
