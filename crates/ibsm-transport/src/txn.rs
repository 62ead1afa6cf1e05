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
use crate::deadlines::Deadlines;
use crate::error::TransportError;
use crate::hash::IntMap;
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
pub enum TxEvent<C> {
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
    entries: IntMap<TxId, Entry<C>>,
    by_key: IntMap<TidKey, TxId>,
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
    events: VecDeque<TxEvent<C>>,
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
            entries: IntMap::default(),
            by_key: IntMap::default(),
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
        // A MAD shorter than its header fails `TidKey::of` below.
        let class = ibsm_wire::MadHeaderView::new_checked(&req.mad[..])
            .map_or(0, |h| u8::from(h.mgmt_class()));
        if self.config.assign_tids {
            let by_key = &self.by_key;
            let tid = self
                .tids
                .next_free(|low| !by_key.contains_key(&TidKey { low, class }))
                .ok_or(TransportError::DuplicateTid {
                    key: TidKey { low: 0, class },
                })?;
            if let Ok(mut h) = ibsm_wire::MadHeaderView::new_checked(&mut req.mad[..]) {
                h.set_transaction_id(tid);
            }
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

    fn timer_live(entries: &IntMap<TxId, Entry<C>>, id: TxId, attempt: u32) -> bool {
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
            self.events.push_back(TxEvent::Unsolicited(rx));
            return;
        };
        let Some(e) = self.remove(id) else {
            return;
        };
        self.stats.completed += 1;
        let elapsed = rx.at - e.first_sent.unwrap_or(rx.at);
        self.events.push_back(TxEvent::Completed {
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
    pub fn poll_event(&mut self) -> Option<TxEvent<C>> {
        self.events.pop_front()
    }

    fn finish_failed(&mut self, id: TxId, error: TransportError) {
        if let Some(e) = self.remove(id) {
            self.events.push_back(TxEvent::Failed {
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
    type Event = TxEvent<C>;
    type Job = NoJob;

    /// An answer completes its request, a send failure fails it, anything else
    /// becomes [`TxEvent::Unsolicited`].
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

    fn poll_event(&mut self) -> Option<TxEvent<C>> {
        Transactions::poll_event(self)
    }

    fn is_idle(&self) -> bool {
        Transactions::is_idle(self)
    }
}

#[cfg(test)]
mod tests;
