//! The transaction layer: many outstanding requests over one transport, matched by
//! (TID low 32 bits, class), each with its own deadline and retries, under a window.
//!
//! [`Transactions`] is sans-IO: it implements [`SansIo`], so [`drive`](crate::drive)
//! runs it over any [`Transport`](crate::Transport) (with
//! [`Stop::when_idle`](crate::Stop::when_idle) for tools that simply want their
//! requests answered), and hosts with a loop of their own call the same methods.
//!
//! Three inherent methods keep an older form for the SM engine, which calls them
//! directly: [`Transactions::handle_incoming`] and [`Transactions::handle_send_error`]
//! without `now` (the layer reads no time there), and [`Transactions::poll_transmit`]
//! returning a [`Transmit`] (with the attempt number the engine counts retries by).
//! The [`SansIo`] forms take `now` and return an [`Outgoing`].

use std::collections::VecDeque;
use std::time::Duration;

use crate::addr::{Address, Incoming, Received};
use crate::clock::Instant;
use crate::deadlines::{Deadlines, IdMap};
use crate::error::TransportError;
use crate::sansio::{NoJob, Outgoing, SansIo};
use crate::tid::{TidAllocator, TidKey};

/// Limits and defaults of a [`Transactions`] instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxConfig {
    /// Most requests on the wire at once; more wait in FIFO order.
    pub window: usize,
    /// Time to wait for each attempt's answer (OpenSM `transaction_timeout`, 200 ms).
    pub timeout: Duration,
    /// Re-sends after the first attempt (OpenSM `transaction_retries`, 3).
    pub retries: u32,
    /// Upper 32 bits of every TID (a tag for logs; matching ignores it).
    pub tid_high: u32,
    /// Whether `submit` overwrites the MAD's TID with a fresh one (the usual case) or
    /// keeps the caller's.
    pub assign_tids: bool,
}

impl Default for TxConfig {
    fn default() -> Self {
        Self {
            window: 64,
            timeout: Duration::from_millis(200),
            retries: 3,
            tid_high: 0,
            assign_tids: true,
        }
    }
}

/// One request to submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<C> {
    /// Destination.
    pub addr: Address,
    /// The MAD (its TID is assigned by [`Transactions::submit`] unless configured not to).
    pub mad: Vec<u8>,
    /// Per-attempt timeout; `None` takes [`TxConfig::timeout`].
    pub timeout: Option<Duration>,
    /// Re-sends; `None` takes [`TxConfig::retries`].
    pub retries: Option<u32>,
    /// Caller data returned with the outcome.
    pub cookie: C,
}

impl<C> Request<C> {
    /// A request with the configured timeout and retries.
    #[must_use]
    pub fn new(addr: Address, mad: Vec<u8>, cookie: C) -> Self {
        Self {
            addr,
            mad,
            timeout: None,
            retries: None,
            cookie,
        }
    }
}

/// Handle of a submitted request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxId(pub u64);

/// A MAD to hand to the transport now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Which request it belongs to (for [`Transactions::handle_send_error`]).
    pub id: TxId,
    /// Destination.
    pub addr: Address,
    /// The bytes to send.
    pub mad: Vec<u8>,
    /// 1 for the first send, 2 for the first retry, ...
    pub attempt: u32,
}

/// The outcome of a request, or a MAD nobody asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<C> {
    /// The answer arrived.
    Completed {
        /// The request.
        id: TxId,
        /// Its cookie.
        cookie: C,
        /// The response.
        response: Received,
        /// Sends it took (1 = no retry).
        attempts: u32,
        /// From the first send to the answer.
        elapsed: Duration,
    },
    /// No answer after every retry, or the transport reported the request undeliverable.
    Failed {
        /// The request.
        id: TxId,
        /// Its cookie.
        cookie: C,
        /// [`TransportError::Timeout`], [`TransportError::Unreachable`], ...
        error: TransportError,
        /// Sends it took.
        attempts: u32,
    },
    /// A MAD that matches no outstanding request: a request from a peer (SMInfo from
    /// another SM), a trap, or a late duplicate answer.
    Unsolicited(Received),
}

/// Counters kept by a [`Transactions`] instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Requests submitted.
    pub submitted: u64,
    /// MADs handed out by `poll_transmit` (first sends and retries).
    pub sent: u64,
    /// Of those, retries.
    pub retried: u64,
    /// Requests completed with an answer.
    pub completed: u64,
    /// Requests that ran out of retries.
    pub timed_out: u64,
    /// Requests failed by the transport.
    pub failed: u64,
    /// Incoming MADs that matched nothing.
    pub unsolicited: u64,
}

#[derive(Debug)]
struct Entry<C> {
    key: TidKey,
    addr: Address,
    mad: Vec<u8>,
    timeout: Duration,
    retries_left: u32,
    attempts: u32,
    first_sent: Option<Instant>,
    /// Set while waiting on the wire; None while queued for (re)transmission.
    deadline: Option<Instant>,
    /// Waiting for a window slot (its id sits in `backlog`).
    in_backlog: bool,
    cookie: C,
}

/// Outstanding-request bookkeeping; see the [module docs](self).
#[derive(Debug)]
pub struct Transactions<C> {
    config: TxConfig,
    tids: TidAllocator,
    next_id: u64,
    entries: IdMap<TxId, Entry<C>>,
    by_key: IdMap<TidKey, TxId>,
    /// Admitted to the window but not yet handed to `poll_transmit`.
    to_send: VecDeque<TxId>,
    /// Waiting for a window slot.
    backlog: VecDeque<TxId>,
    in_window: usize,
    timers: Deadlines,
    /// What [`Self::poll_timeout`] last found, kept while nothing could have moved it
    /// (`None`: look again). The engine asks after every MAD in and out, and looking
    /// costs a map lookup per deadline at the front.
    next_deadline: Option<Option<Instant>>,
    events: VecDeque<Event<C>>,
    stats: TxStats,
}

impl<C> Transactions<C> {
    /// An empty instance.
    #[must_use]
    pub fn new(config: TxConfig) -> Self {
        Self {
            tids: TidAllocator::new(config.tid_high),
            config: TxConfig {
                window: config.window.max(1),
                ..config
            },
            next_id: 0,
            entries: IdMap::default(),
            by_key: IdMap::default(),
            to_send: VecDeque::new(),
            backlog: VecDeque::new(),
            in_window: 0,
            timers: Deadlines::default(),
            next_deadline: None,
            events: VecDeque::new(),
            stats: TxStats::default(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &TxConfig {
        &self.config
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> TxStats {
        self.stats
    }

    /// Requests not yet finished (on the wire, about to be sent, or waiting for the
    /// window).
    #[must_use]
    pub fn pending(&self) -> usize {
        self.entries.len()
    }

    /// Requests inside the window.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_window
    }

    /// Whether nothing is pending and no event is waiting.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.entries.is_empty() && self.events.is_empty()
    }

    /// Queues a request. Its TID is assigned here (unless `assign_tids` is off), so
    /// the returned handle and the MAD's TID are known before anything is sent.
    ///
    /// # Errors
    /// [`TransportError::InvalidMad`] if the MAD does not fit the address,
    /// [`TransportError::DuplicateTid`] if `assign_tids` is off and the caller's TID
    /// is already outstanding.
    pub fn submit(&mut self, mut req: Request<C>) -> Result<TxId, TransportError> {
        req.addr.check(&req.mad)?;
        if let Address::Directed(dr) = &req.addr {
            dr.write_to(&mut req.mad)?;
        }
        let class = req.mad[1];
        if self.config.assign_tids {
            let by_key = &self.by_key;
            let tid = self
                .tids
                .next_free(|low| !by_key.contains_key(&TidKey { low, class }))
                .ok_or(TransportError::DuplicateTid {
                    key: TidKey { low: 0, class },
                })?;
            req.mad[8..16].copy_from_slice(&tid.to_be_bytes());
        }
        let key = TidKey::of(&req.mad).ok_or(TransportError::InvalidMad {
            reason: "shorter than the 24-byte MAD header",
        })?;
        if self.by_key.contains_key(&key) {
            return Err(TransportError::DuplicateTid { key });
        }
        let id = TxId(self.next_id);
        self.next_id += 1;
        self.entries.insert(
            id,
            Entry {
                key,
                addr: req.addr,
                mad: req.mad,
                timeout: req.timeout.unwrap_or(self.config.timeout),
                retries_left: req.retries.unwrap_or(self.config.retries),
                attempts: 0,
                first_sent: None,
                deadline: None,
                in_backlog: self.in_window >= self.config.window,
                cookie: req.cookie,
            },
        );
        self.by_key.insert(key, id);
        self.stats.submitted += 1;
        if self.in_window < self.config.window {
            self.in_window += 1;
            self.to_send.push_back(id);
        } else {
            self.backlog.push_back(id);
        }
        Ok(id)
    }

    /// The full TID assigned to a pending request.
    #[must_use]
    pub fn tid_of(&self, id: TxId) -> Option<u64> {
        self.entries
            .get(&id)
            .and_then(|e| e.mad.get(8..16))
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
    }

    /// The next MAD to send, stamping its deadline from `now`, with its attempt number
    /// ([`SansIo::poll_transmit`] returns the same MAD as an [`Outgoing`]).
    pub fn next_attempt(&mut self, now: Instant) -> Option<Transmit> {
        while let Some(id) = self.to_send.pop_front() {
            let Some(e) = self.entries.get_mut(&id) else {
                continue;
            };
            e.attempts += 1;
            if e.attempts > 1 {
                self.stats.retried += 1;
            }
            e.first_sent.get_or_insert(now);
            let deadline = now + e.timeout;
            e.deadline = Some(deadline);
            self.timers.push(e.timeout, (deadline, id, e.attempts));
            if let Some(next) = &mut self.next_deadline {
                *next = Some(next.map_or(deadline, |t| t.min(deadline)));
            }
            self.stats.sent += 1;
            return Some(Transmit {
                id,
                addr: e.addr,
                mad: e.mad.clone(),
                attempt: e.attempts,
            });
        }
        None
    }

    /// The earliest deadline of any request on the wire.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        if let Some(next) = self.next_deadline {
            return next;
        }
        let entries = &self.entries;
        let next = self
            .timers
            .earliest_live(|&(_, id, attempt)| Self::timer_live(entries, id, attempt));
        self.next_deadline = Some(next);
        next
    }

    fn timer_live(entries: &IdMap<TxId, Entry<C>>, id: TxId, attempt: u32) -> bool {
        entries
            .get(&id)
            .is_some_and(|e| e.attempts == attempt && e.deadline.is_some())
    }

    /// Expires every attempt whose deadline is at or before `now`: a request with
    /// retries left is queued for re-sending, the others fail with `Timeout`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self
            .next_deadline
            .is_some_and(|next| next.is_none_or(|t| t > now))
        {
            return;
        }
        self.next_deadline = None;
        while let Some((t, id, attempt)) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            if !Self::timer_live(&self.entries, id, attempt) {
                continue;
            }
            let Some(e) = self.entries.get_mut(&id) else {
                continue;
            };
            e.deadline = None;
            if e.retries_left > 0 {
                e.retries_left -= 1;
                self.to_send.push_back(id);
            } else {
                self.stats.timed_out += 1;
                self.finish_failed(id, TransportError::Timeout);
            }
        }
    }

    fn handle_mad(&mut self, rx: Received) {
        // Only responses (R bit) complete requests: a peer's request may reuse our TID.
        let matched = if rx.is_response() {
            TidKey::of(&rx.mad).and_then(|k| self.by_key.get(&k).copied())
        } else {
            None
        };
        let Some(id) = matched else {
            self.stats.unsolicited += 1;
            self.events.push_back(Event::Unsolicited(rx));
            return;
        };
        let Some(e) = self.remove(id) else {
            return;
        };
        self.stats.completed += 1;
        let elapsed = rx.at - e.first_sent.unwrap_or(rx.at);
        self.events.push_back(Event::Completed {
            id,
            cookie: e.cookie,
            response: rx,
            attempts: e.attempts,
            elapsed,
        });
    }

    /// Fails request `id` whose send failed (not a fatal error: the caller stops
    /// driving then).
    fn send_failed(&mut self, id: TxId, error: TransportError) {
        if self.entries.contains_key(&id) {
            self.stats.failed += 1;
            self.finish_failed(id, error);
        }
    }

    /// Withdraws a pending request; its cookie comes back, no event is produced.
    pub fn cancel(&mut self, id: TxId) -> Option<C> {
        self.remove(id).map(|e| e.cookie)
    }

    /// The next outcome or unsolicited MAD.
    pub fn poll_event(&mut self) -> Option<Event<C>> {
        self.events.pop_front()
    }

    fn finish_failed(&mut self, id: TxId, error: TransportError) {
        if let Some(e) = self.remove(id) {
            self.events.push_back(Event::Failed {
                id,
                cookie: e.cookie,
                error,
                attempts: e.attempts,
            });
        }
    }

    /// Removes an entry and gives its window slot to the oldest waiting request.
    fn remove(&mut self, id: TxId) -> Option<Entry<C>> {
        let e = self.entries.remove(&id)?;
        self.by_key.remove(&e.key);
        // The earliest deadline can only move if it was this request's.
        if e.deadline.is_some() && self.next_deadline == Some(e.deadline) {
            self.next_deadline = None;
        }
        if e.in_backlog {
            // It never entered the window; its stale id in `backlog` is skipped later
            // (removing it here would cost a scan of the whole backlog).
            return Some(e);
        }
        self.in_window -= 1;
        self.fill_window();
        Some(e)
    }

    /// Admits waiting requests while the window has room.
    fn fill_window(&mut self) {
        while self.in_window < self.config.window {
            let Some(next) = self.backlog.pop_front() else {
                break;
            };
            if let Some(e) = self.entries.get_mut(&next) {
                e.in_backlog = false;
                self.in_window += 1;
                self.to_send.push_back(next);
            }
        }
    }

    /// Restarts TID allocation at low value `start`, so that another component sharing
    /// the port (an election machine allocating from 1, say) never collides with this
    /// instance's TIDs.
    pub fn set_tid_start(&mut self, start: u32) {
        self.tids = TidAllocator::starting_at(self.config.tid_high, start);
    }

    /// Changes the window size (at least 1), for senders that adapt it to how the
    /// fabric answers. Growing admits waiting requests at once; shrinking lets the
    /// requests already in flight finish and admits no new one until there is room.
    pub fn set_window(&mut self, window: usize) {
        self.config.window = window.max(1);
        self.fill_window();
    }
}

/// The one contract; see the [module docs](self) for the engine's older forms.
impl<C> SansIo for Transactions<C> {
    type Event = Event<C>;
    type Job = NoJob;

    /// An answer completes its request, a send failure fails it, anything else
    /// becomes [`Event::Unsolicited`].
    fn handle_incoming(&mut self, _now: Instant, incoming: Incoming) {
        match incoming {
            Incoming::Mad(rx) => self.handle_mad(rx),
            Incoming::SendFailed { tid, class, error } => {
                let key = TidKey {
                    low: tid as u32,
                    class,
                };
                if let Some(&id) = self.by_key.get(&key) {
                    self.send_failed(id, error);
                }
            }
        }
    }

    /// A fatal error is not consumed here (the caller stops driving); any other fails
    /// the request at once.
    fn handle_send_error(&mut self, _now: Instant, id: TxId, error: TransportError) {
        self.send_failed(id, error);
    }

    fn handle_timeout(&mut self, now: Instant) {
        Transactions::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        Transactions::next_attempt(self, now).map(|t| Outgoing {
            id: Some(t.id),
            addr: t.addr,
            mad: t.mad,
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        Transactions::poll_timeout(self)
    }

    fn poll_event(&mut self) -> Option<Event<C>> {
        Transactions::poll_event(self)
    }

    fn is_idle(&self) -> bool {
        Transactions::is_idle(self)
    }
}

#[cfg(test)]
mod tests {
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
    fn run(t: &mut Transactions<u32>, f: &mut Fake, until: Instant) -> Vec<Event<u32>> {
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
            Event::Completed {
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
                Event::Failed {
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
                Event::Completed { cookie, .. } => cookie,
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
        assert!(matches!(t.poll_event(), Some(Event::Unsolicited(_))));
        assert!(matches!(t.poll_event(), Some(Event::Unsolicited(_))));
        assert_eq!(t.pending(), 1);
        m[1] = 0x81;
        m[8] ^= 0xFF; // upper bits rewritten by the host: still ours
        SansIo::handle_incoming(&mut t, Instant::ZERO, rx(m));
        assert!(matches!(t.poll_event(), Some(Event::Completed { id: i, .. }) if i == id));
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
            matches!(&ev[0], Event::Failed { id, error: TransportError::Unreachable { .. }, attempts: 1, .. } if *id == a)
        );
        assert!(matches!(&ev[1], Event::Completed { id, .. } if *id == c));
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
                    Event::Completed { id, attempts, .. } | Event::Failed { id, attempts, .. } => {
                        proptest::prop_assert!(attempts <= retries + 1);
                        proptest::prop_assert!(ended.insert(id));
                    }
                    Event::Unsolicited(_) => {} // late duplicates after a retry
                }
            }
            proptest::prop_assert_eq!(ended.len(), n);
            proptest::prop_assert!(t.is_idle());
            proptest::prop_assert_eq!(t.in_flight(), 0);
        }
    }
}
