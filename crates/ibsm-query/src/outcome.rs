//! What the SMP and PerfMgt clients share: a query's slot in the transaction layer and
//! the one mapping of the layer's events into a client's outcome type, so both clients
//! tell a timeout, a refused send, an error status and a malformed answer apart in the
//! same way.

use std::time::Duration;

use ibsm_transport::{Received, TransportError, TxEvent};

/// A query in flight: the caller's cookie and what was asked.
#[derive(Debug)]
pub(crate) struct Slot<C, A> {
    pub(crate) cookie: C,
    pub(crate) asked: A,
}

/// Why a query failed, before its client says what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No answer after every attempt.
    Timeout { attempts: u32 },
    /// The transport refused or could not deliver the request.
    Transport(TransportError),
    /// The answer carries this error status.
    Status(u16),
    /// The answer is not what a query of this client gets back.
    Malformed(String),
}

/// A client's outcome type (`SmpEvent`, `PerfEvent`), built by [`outcome`].
pub(crate) trait Outcome<C>: Sized {
    /// What a query asked.
    type Asked;
    /// What a successful answer holds.
    type Data;
    /// The client's error type.
    type Error;

    /// The data of an answer with status 0; [`Failure::Status`] or
    /// [`Failure::Malformed`] otherwise.
    fn answer(mad: &[u8]) -> Result<Self::Data, Failure>;
    /// The client's error for `failure` of the query that asked `asked`.
    fn error(asked: &Self::Asked, failure: Failure) -> Self::Error;
    /// A successful answer.
    fn done(
        cookie: C,
        asked: Self::Asked,
        data: Self::Data,
        attempts: u32,
        elapsed: Duration,
    ) -> Self;
    /// A failed query.
    fn failed(cookie: C, asked: Self::Asked, error: Self::Error) -> Self;
    /// A MAD no query waits for.
    fn unsolicited(received: Received) -> Self;
}

/// Implements [`SansIo`](ibsm_transport::SansIo) for a client that is its transaction
/// layer (`txns: Transactions<Slot<C, _>>`) and nothing more: every input goes to it,
/// every event comes out through [`outcome`], and it is idle when no query waits.
macro_rules! sans_io_over_txns {
    ($client:ident, $event:ident) => {
        impl<C> ibsm_transport::SansIo for $client<C> {
            type Event = $event<C>;
            type Job = ibsm_transport::NoJob;

            fn handle_incoming(
                &mut self,
                now: ibsm_transport::Instant,
                incoming: ibsm_transport::Incoming,
            ) {
                ibsm_transport::SansIo::handle_incoming(&mut self.txns, now, incoming);
            }

            fn handle_send_error(
                &mut self,
                now: ibsm_transport::Instant,
                id: ibsm_transport::TxId,
                error: ibsm_transport::TransportError,
            ) {
                ibsm_transport::SansIo::handle_send_error(&mut self.txns, now, id, error);
            }

            fn handle_timeout(&mut self, now: ibsm_transport::Instant) {
                self.txns.handle_timeout(now);
            }

            fn poll_transmit(
                &mut self,
                now: ibsm_transport::Instant,
            ) -> Option<ibsm_transport::Outgoing> {
                ibsm_transport::SansIo::poll_transmit(&mut self.txns, now)
            }

            fn poll_timeout(&mut self) -> Option<ibsm_transport::Instant> {
                self.txns.poll_timeout()
            }

            fn poll_event(&mut self) -> Option<$event<C>> {
                self.txns.poll_event().map($crate::outcome::outcome)
            }

            fn is_idle(&self) -> bool {
                self.txns.pending() == 0
            }
        }
    };
}
pub(crate) use sans_io_over_txns;

/// The client outcome of one event of the transaction layer.
pub(crate) fn outcome<C, E: Outcome<C>>(event: TxEvent<Slot<C, E::Asked>>) -> E {
    let (cookie, asked, failure) = match event {
        TxEvent::Completed {
            cookie: Slot { cookie, asked },
            response,
            attempts,
            elapsed,
            ..
        } => match E::answer(&response.mad) {
            Ok(data) => return E::done(cookie, asked, data, attempts, elapsed),
            Err(failure) => (cookie, asked, failure),
        },
        TxEvent::Failed {
            cookie: Slot { cookie, asked },
            error,
            attempts,
            ..
        } => {
            let failure = match error {
                TransportError::Timeout => Failure::Timeout { attempts },
                error => Failure::Transport(error),
            };
            (cookie, asked, failure)
        }
        TxEvent::Unsolicited(received) => return E::unsolicited(received),
    };
    let error = E::error(&asked, failure);
    E::failed(cookie, asked, error)
}

#[cfg(test)]
mod tests {
    use ibsm_transport::{Instant, TxId};

    use super::*;

    /// An outcome that shows what `outcome` handed it.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Done(u8, &'static str, u8, u32, Duration),
        Failed(u8, &'static str, (&'static str, Failure)),
        Unsolicited(Vec<u8>),
    }

    impl Outcome<u8> for Seen {
        type Asked = &'static str;
        type Data = u8;
        type Error = (&'static str, Failure);

        fn answer(mad: &[u8]) -> Result<u8, Failure> {
            match mad {
                [0, d] => Ok(*d),
                [s, _] => Err(Failure::Status(u16::from(*s))),
                _ => Err(Failure::Malformed(format!("{} bytes", mad.len()))),
            }
        }
        fn error(asked: &&'static str, failure: Failure) -> Self::Error {
            (asked, failure)
        }
        fn done(c: u8, a: &'static str, d: u8, attempts: u32, elapsed: Duration) -> Self {
            Seen::Done(c, a, d, attempts, elapsed)
        }
        fn failed(c: u8, a: &'static str, e: Self::Error) -> Self {
            Seen::Failed(c, a, e)
        }
        fn unsolicited(r: Received) -> Self {
            Seen::Unsolicited(r.mad)
        }
    }

    fn received(mad: &[u8]) -> Received {
        Received {
            mad: mad.to_vec(),
            slid: 1,
            sl: 0,
            qpn: 0,
            pkey_index: 0,
            at: Instant::ZERO,
        }
    }

    fn completed(mad: &[u8]) -> TxEvent<Slot<u8, &'static str>> {
        TxEvent::Completed {
            id: TxId(1),
            cookie: Slot {
                cookie: 7,
                asked: "q",
            },
            response: received(mad),
            attempts: 2,
            elapsed: Duration::from_millis(5),
        }
    }

    fn failed(error: TransportError) -> TxEvent<Slot<u8, &'static str>> {
        TxEvent::Failed {
            id: TxId(1),
            cookie: Slot {
                cookie: 7,
                asked: "q",
            },
            error,
            attempts: 4,
        }
    }

    #[test]
    fn each_event_becomes_its_outcome() {
        let ms5 = Duration::from_millis(5);
        assert_eq!(
            outcome::<u8, Seen>(completed(&[0, 9])),
            Seen::Done(7, "q", 9, 2, ms5)
        );
        assert_eq!(
            outcome::<u8, Seen>(completed(&[0x1c, 9])),
            Seen::Failed(7, "q", ("q", Failure::Status(0x1c)))
        );
        assert_eq!(
            outcome::<u8, Seen>(completed(&[1])),
            Seen::Failed(7, "q", ("q", Failure::Malformed("1 bytes".into())))
        );
        assert_eq!(
            outcome::<u8, Seen>(failed(TransportError::Timeout)),
            Seen::Failed(7, "q", ("q", Failure::Timeout { attempts: 4 }))
        );
        assert_eq!(
            outcome::<u8, Seen>(failed(TransportError::Closed)),
            Seen::Failed(7, "q", ("q", Failure::Transport(TransportError::Closed)))
        );
        assert_eq!(
            outcome::<u8, Seen>(TxEvent::Unsolicited(received(&[3, 4]))),
            Seen::Unsolicited(vec![3, 4])
        );
    }
}
