//! `ibsm-transport` speed: the transaction layer's cost per request, the way an SM's
//! sweep drives it (a window of 256 on the wire, every request submitted, sent,
//! answered, and the earliest deadline asked after every MAD in and out, as the
//! engine's `refresh_timers` does). An 11k-CA bring-up pushes ~640k SMPs through
//! this path, so nanoseconds per request here are milliseconds of bring-up.
//!
//! Two shapes: answers in send order (a quiet fabric), and answers in a shuffled order
//! within the window (paths of different lengths), where the request whose deadline
//! is the earliest is seldom the one answered.
//!
//! Run: `cargo bench -p ibsm-benches --bench transport`.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use ibsm_transport::{
    Address, DrAddress, Incoming, Received, Request, SansIo, Transactions, TxConfig,
};
use ibsm_wire::{DrPath, DrSmp, Instant, Method};

const WINDOW: usize = 256;
const REQUESTS: usize = 20_000;

fn request(i: u32) -> Request<u32> {
    let path = DrPath::from_ports(&[1, (i % 36) as u8 + 1, 3]).expect("path");
    let mad = DrSmp::request(Method::Get, 0x15, 0, 0, 0, &path)
        .to_bytes()
        .to_vec();
    Request::new(Address::Directed(DrAddress::direct(path)), mad, i)
}

/// Runs `REQUESTS` requests through a window; `order` picks which sent request is
/// answered next (an index into those on the wire, oldest first; 0 answers the
/// oldest).
fn run(reqs: Vec<Request<u32>>, order: &mut impl FnMut(usize) -> usize) -> u64 {
    let mut t = Transactions::new(TxConfig {
        window: WINDOW,
        timeout: Duration::from_millis(200),
        ..TxConfig::default()
    });
    let mut now = Instant::ZERO;
    let mut wire: VecDeque<Vec<u8>> = VecDeque::with_capacity(WINDOW);
    let mut reqs = reqs.into_iter();
    let mut done = 0u64;
    loop {
        while t.pending() < 2 * WINDOW {
            let Some(r) = reqs.next() else { break };
            t.submit(r).expect("submit");
        }
        while let Some(tx) = t.next_attempt(now) {
            wire.push_back(tx.mad);
            black_box(t.poll_timeout());
        }
        if wire.is_empty() {
            break;
        }
        let mut mad = match order(wire.len()) {
            0 => wire.pop_front(),
            i => wire.swap_remove_back(i),
        }
        .expect("on the wire");
        mad[3] |= 0x80;
        now += Duration::from_micros(2);
        SansIo::handle_incoming(
            &mut t,
            now,
            Incoming::Mad(Received {
                mad,
                slid: 0xFFFF,
                sl: 0,
                qpn: 0,
                pkey_index: 0,
                at: now,
            }),
        );
        t.handle_timeout(now);
        black_box(t.poll_timeout());
        while let Some(ev) = t.poll_event() {
            black_box(ev);
            done += 1;
        }
    }
    done
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("transactions");
    g.throughput(Throughput::Elements(REQUESTS as u64));
    g.bench_function("window 256, answered in order", |b| {
        b.iter_batched(
            || (0..REQUESTS as u32).map(request).collect::<Vec<_>>(),
            |reqs| {
                let n = run(reqs, &mut |_| 0);
                assert_eq!(n, REQUESTS as u64);
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("window 256, answered out of order", |b| {
        b.iter_batched(
            || (0..REQUESTS as u32).map(request).collect::<Vec<_>>(),
            |reqs| {
                let mut x = 0x9E37_79B9_u64;
                let n = run(reqs, &mut |len| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % len as u64) as usize
                });
                assert_eq!(n, REQUESTS as u64);
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}
