use super::*;
use crate::addr::{DrAddress, LidAddress, LocalPort};
use crate::{JobRunner, Stop, Transport};
use ibsm_wire::{DrPath, DrSmp, LidSmp, Method};
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

const MS: Duration = Duration::from_millis(1);

/// A fabric on virtual time: answers after `latency`, except that the first
/// `drop_first` attempts of each TID vanish and TIDs in `silent` are never answered.
/// It overwrites the upper TID bits on the way back, as kernels do.
struct Fake {
    now: Instant,
    latency: Duration,
    drop_first: u32,
    silent: HashSet<u32>,
    unreachable: HashSet<u32>,
    seen: HashMap<u32, u32>,
    queue: Vec<(Instant, Incoming)>,
    on_wire: usize,
    max_on_wire: usize,
    sends: Vec<(Instant, u32)>,
}

impl Fake {
    fn new(latency: Duration) -> Self {
        Self {
            now: Instant::ZERO,
            latency,
            drop_first: 0,
            silent: HashSet::new(),
            unreachable: HashSet::new(),
            seen: HashMap::new(),
            queue: Vec::new(),
            on_wire: 0,
            max_on_wire: 0,
            sends: Vec::new(),
        }
    }
}

impl Transport for Fake {
    fn now(&self) -> Instant {
        self.now
    }
    fn local_port(&self) -> LocalPort {
        LocalPort::default()
    }
    fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
        addr.check(mad)?;
        let low = TidKey::of(mad).unwrap().low;
        self.sends.push((self.now, low));
        if self.unreachable.contains(&low) {
            let tid = u64::from_be_bytes(mad[8..16].try_into().unwrap());
            self.queue.push((
                self.now,
                Incoming::SendFailed {
                    tid,
                    class: mad[1],
                    error: TransportError::Unreachable {
                        reason: "no route".into(),
                    },
                },
            ));
            return Ok(());
        }
        let n = self.seen.entry(low).or_insert(0);
        *n += 1;
        if *n <= self.drop_first || self.silent.contains(&low) {
            return Ok(());
        }
        let mut resp = mad.to_vec();
        resp[3] |= 0x80;
        resp[8..12].copy_from_slice(&[0xDE, 0xAD, 0xBE, 0xEF]);
        let at = self.now + self.latency;
        self.on_wire += 1;
        self.max_on_wire = self.max_on_wire.max(self.on_wire);
        self.queue.push((
            at,
            Incoming::Mad(Received {
                mad: resp,
                slid: 0xFFFF,
                sl: 0,
                qpn: 0,
                pkey_index: 0,
                at,
            }),
        ));
        Ok(())
    }
    fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError> {
        // Earliest first; ties in send order.
        let best = self
            .queue
            .iter()
            .enumerate()
            .min_by_key(|(i, (t, _))| (*t, *i))
            .map(|(i, (t, _))| (i, *t));
        match best {
            Some((i, t)) if t <= deadline => {
                self.now = self.now.max(t);
                let (_, inc) = self.queue.remove(i);
                if matches!(inc, Incoming::Mad(_)) {
                    self.on_wire -= 1;
                }
                Ok(inc)
            }
            _ => {
                self.now = self.now.max(deadline);
                Err(TransportError::Timeout)
            }
        }
    }
}

fn dr_req(cookie: u32) -> Request<u32> {
    let path = DrPath::from_ports(&[1]).unwrap();
    let mad = DrSmp::request(Method::Get, 0x11, 0, 0, 0, &path)
        .to_bytes()
        .to_vec();
    Request::new(Address::Directed(DrAddress::direct(path)), mad, cookie)
}

fn cfg(window: usize, timeout_ms: u64, retries: u32) -> TxConfig {
    TxConfig {
        window,
        timeout: MS * timeout_ms as u32,
        retries,
        tid_high: 0x5A,
        ..TxConfig::default()
    }
}

/// Drives until nothing is pending or `until`: every event, in order.
fn run(t: &mut Transactions<u32>, f: &mut Fake, until: Instant) -> Vec<TxEvent<u32>> {
    let mut ev = Vec::new();
    let stop = Stop::when_idle(until);
    crate::drive(t, f, &mut JobRunner::inline(), stop, |e| {
        ev.push(e);
        ControlFlow::Continue(())
    })
    .unwrap();
    ev
}

#[test]
fn retries_until_answered() {
    let mut f = Fake::new(MS);
    f.drop_first = 2;
    let mut t = Transactions::new(cfg(4, 100, 3));
    let id = t.submit(dr_req(7)).unwrap();
    assert_eq!(t.tid_of(id).unwrap() >> 32, 0x5A);
    let ev = run(&mut t, &mut f, Instant::from_secs(10));
    assert_eq!(ev.len(), 1);
    match &ev[0] {
        TxEvent::Completed {
            cookie,
            attempts,
            elapsed,
            response,
            ..
        } => {
            assert_eq!((*cookie, *attempts), (7, 3));
            assert_eq!(*elapsed, MS * 201, "two timeouts then the latency");
            assert!(response.is_response());
        }
        e => panic!("{e:?}"),
    }
    let sends: Vec<_> = f.sends.iter().map(|s| s.0.as_nanos() / 1_000_000).collect();
    assert_eq!(sends, [0, 100, 200]);
    assert_eq!(t.stats().retried, 2);
    assert!(t.is_idle());
}

#[test]
fn times_out_after_all_retries() {
    let mut f = Fake::new(MS);
    f.drop_first = u32::MAX;
    let mut t = Transactions::new(cfg(4, 50, 2));
    let mut r = dr_req(1);
    r.timeout = Some(MS * 30);
    t.submit(r).unwrap();
    t.submit(dr_req(2)).unwrap();
    let ev = run(&mut t, &mut f, Instant::from_secs(10));
    let fails: Vec<_> = ev
        .iter()
        .map(|e| match e {
            TxEvent::Failed {
                cookie,
                error,
                attempts,
                ..
            } => (*cookie, error.clone(), *attempts),
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(
        fails,
        [
            (1, TransportError::Timeout, 3),
            (2, TransportError::Timeout, 3)
        ]
    );
    // The request with its own 30 ms timeout gave up at 90 ms, the other at 150 ms.
    assert_eq!(f.now, Instant::from_millis(150));
    assert_eq!(t.stats().timed_out, 2);
}

#[test]
fn window_limits_requests_on_the_wire() {
    let mut f = Fake::new(MS * 5);
    let mut t = Transactions::new(cfg(3, 100, 0));
    for i in 0..10 {
        t.submit(dr_req(i)).unwrap();
    }
    assert_eq!(t.in_flight(), 3);
    assert_eq!(t.pending(), 10);
    let ev = run(&mut t, &mut f, Instant::from_secs(10));
    assert_eq!(f.max_on_wire, 3);
    let done: Vec<u32> = ev
        .into_iter()
        .map(|e| match e {
            TxEvent::Completed { cookie, .. } => cookie,
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(done, (0..10).collect::<Vec<_>>(), "FIFO order");
    // Four rounds of 5 ms (3 + 3 + 3 + 1).
    assert_eq!(f.now, Instant::from_millis(20));
}

#[test]
fn requests_and_strangers_are_not_matched() {
    let mut t: Transactions<u32> = Transactions::new(cfg(4, 100, 0));
    let id = t.submit(dr_req(1)).unwrap();
    let tx = t.next_attempt(Instant::ZERO).unwrap();
    assert_eq!(tx.attempt, 1);
    // A peer's request carrying our TID (R bit clear) is unsolicited.
    let mut m = tx.mad.clone();
    let rx = |mad: Vec<u8>| {
        Incoming::Mad(Received {
            mad,
            slid: 1,
            sl: 0,
            qpn: 0,
            pkey_index: 0,
            at: Instant::from_millis(1),
        })
    };
    SansIo::handle_incoming(&mut t, Instant::ZERO, rx(m.clone()));
    // A response of another class with our TID, too.
    m[3] |= 0x80;
    m[1] = 0x01;
    SansIo::handle_incoming(&mut t, Instant::ZERO, rx(m.clone()));
    assert!(matches!(t.poll_event(), Some(TxEvent::Unsolicited(_))));
    assert!(matches!(t.poll_event(), Some(TxEvent::Unsolicited(_))));
    assert_eq!(t.pending(), 1);
    m[1] = 0x81;
    m[8] ^= 0xFF; // upper bits rewritten by the host: still ours
    SansIo::handle_incoming(&mut t, Instant::ZERO, rx(m));
    assert!(matches!(t.poll_event(), Some(TxEvent::Completed { id: i, .. }) if i == id));
    assert_eq!(t.stats().unsolicited, 2);
}

#[test]
fn send_failure_and_cancel_free_the_window() {
    let mut f = Fake::new(MS);
    let mut t = Transactions::new(cfg(1, 100, 5));
    let a = t.submit(dr_req(1)).unwrap();
    let b = t.submit(dr_req(2)).unwrap();
    let c = t.submit(dr_req(3)).unwrap();
    f.unreachable.insert(t.tid_of(a).unwrap() as u32);
    assert_eq!(t.cancel(b), Some(2));
    let ev = run(&mut t, &mut f, Instant::from_secs(1));
    assert!(
        matches!(&ev[0], TxEvent::Failed { id, error: TransportError::Unreachable { .. }, attempts: 1, .. } if *id == a)
    );
    assert!(matches!(&ev[1], TxEvent::Completed { id, .. } if *id == c));
    assert_eq!(ev.len(), 2);
}

#[test]
fn rejects_bad_mads_and_duplicate_tids() {
    let mut t: Transactions<()> = Transactions::new(TxConfig {
        assign_tids: false,
        ..TxConfig::default()
    });
    let lid = LidSmp::request(Method::Get, 0x11, 0, 42, 0)
        .to_bytes()
        .to_vec();
    let path = DrPath::local();
    assert!(matches!(
        t.submit(Request::new(
            Address::Directed(DrAddress::direct(path)),
            lid.clone(),
            ()
        )),
        Err(TransportError::InvalidMad { .. })
    ));
    assert!(matches!(
        t.submit(Request::new(
            Address::Lid(LidAddress::smp(3)),
            lid[..100].to_vec(),
            ()
        )),
        Err(TransportError::InvalidMad { .. })
    ));
    t.submit(Request::new(
        Address::Lid(LidAddress::smp(3)),
        lid.clone(),
        (),
    ))
    .unwrap();
    assert!(matches!(
        t.submit(Request::new(Address::Lid(LidAddress::smp(4)), lid, ())),
        Err(TransportError::DuplicateTid { key }) if key.low == 42
    ));
}

/// The earliest deadline of any attempt on the wire, computed the slow way.
fn earliest_by_scan(t: &Transactions<u32>) -> Option<Instant> {
    t.entries.values().filter_map(|e| e.deadline).min()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    /// Model check of the cached earliest deadline: after any sequence of submits
    /// (three timeouts), sends, answers, cancels, send failures and expiries,
    /// `poll_timeout` is the earliest deadline of the attempts on the wire, and
    /// `handle_timeout` expires exactly the attempts due.
    #[test]
    fn poll_timeout_is_the_earliest_live_deadline(
        ops in proptest::collection::vec((0u8..6, 0usize..64, 0u64..30), 1..300)
    ) {
        let mut t = Transactions::new(cfg(6, 100, 1));
        let mut now = Instant::ZERO;
        let mut on_wire: Vec<(TxId, Vec<u8>)> = Vec::new();
        let mut n = 0u32;
        for (op, pick, step) in ops {
            match op {
                0 => {
                    let mut r = dr_req(n);
                    r.timeout = Some(MS * [40u32, 100, 7][pick % 3]);
                    n += 1;
                    t.submit(r).unwrap();
                }
                1 => {
                    if let Some(tx) = t.next_attempt(now) {
                        on_wire.retain(|(id, _)| *id != tx.id);
                        on_wire.push((tx.id, tx.mad));
                    }
                }
                2 if !on_wire.is_empty() => {
                    let (_, mut mad) = on_wire.remove(pick % on_wire.len());
                    mad[3] |= 0x80;
                    SansIo::handle_incoming(&mut t, now, Incoming::Mad(Received {
                        mad, slid: 1, sl: 0, qpn: 0, pkey_index: 0, at: now,
                    }));
                }
                3 if !on_wire.is_empty() => {
                    let (id, _) = on_wire.remove(pick % on_wire.len());
                    t.cancel(id);
                }
                4 if !on_wire.is_empty() => {
                    let (id, _) = on_wire[pick % on_wire.len()];
                    SansIo::handle_send_error(&mut t, now, id, TransportError::Timeout);
                }
                _ => {
                    // Steps that land exactly on deadlines as often as between them.
                    now += MS * [0u32, 1, 7, 20, 40, 100][step as usize % 6];
                    let waiting: Vec<(TxId, Instant)> = t
                        .entries
                        .iter()
                        .filter_map(|(id, e)| e.deadline.filter(|&d| d > now).map(|d| (*id, d)))
                        .collect();
                    t.handle_timeout(now);
                    for (id, d) in waiting {
                        proptest::prop_assert_eq!(t.entries.get(&id).and_then(|e| e.deadline), Some(d));
                    }
                    proptest::prop_assert_eq!(
                        t.entries.values().filter(|e| e.deadline.is_some_and(|d| d <= now)).count(),
                        0
                    );
                }
            }
            // Ask twice: the second answer comes from the cache.
            let want = earliest_by_scan(&t);
            proptest::prop_assert_eq!(t.poll_timeout(), want);
            proptest::prop_assert_eq!(t.poll_timeout(), want);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Every request ends exactly once, the window is never exceeded and no request
    /// is sent more than retries + 1 times, whatever the drop pattern.
    #[test]
    fn every_request_ends_once(n in 1usize..40, window in 1usize..8, retries in 0u32..3,
                               drop_first in 0u32..4, latency_ms in 1u64..150,
                               silent in proptest::collection::vec(0u32..40, 0..5)) {
        let mut f = Fake::new(MS * latency_ms as u32);
        f.drop_first = drop_first;
        let mut t = Transactions::new(cfg(window, 100, retries));
        let mut ids = Vec::new();
        for i in 0..n {
            let id = t.submit(dr_req(i as u32)).unwrap();
            if silent.contains(&(i as u32)) {
                f.silent.insert(t.tid_of(id).unwrap() as u32);
            }
            ids.push(id);
        }
        let ev = run(&mut t, &mut f, Instant::MAX);
        if latency_ms < 100 {
            // (A slower answer outlives its timed-out request and is not counted.)
            proptest::prop_assert!(f.max_on_wire <= window);
        }
        let mut ended = HashSet::new();
        for e in ev {
            match e {
                TxEvent::Completed { id, attempts, .. } | TxEvent::Failed { id, attempts, .. } => {
                    proptest::prop_assert!(attempts <= retries + 1);
                    proptest::prop_assert!(ended.insert(id));
                }
                TxEvent::Unsolicited(_) => {} // late duplicates after a retry
            }
        }
        proptest::prop_assert_eq!(ended.len(), n);
        proptest::prop_assert!(t.is_idle());
        proptest::prop_assert_eq!(t.in_flight(), 0);
    }
}
