//! Typed SMP queries (what `smpquery` does): Get and Set of any [`SmpAttribute`] by LID
//! or by directed route, many in flight under a window, with per-attempt timeouts and
//! retries from [`ibsm_transport::Transactions`], and every failure reported per query.
//!
//! ```
//! use ibsm_query::smp::{SmpClient, SmpConfig, Target};
//! use ibsm_wire::{DrPath, NodeInfo, PortInfo};
//!
//! let mut smps: SmpClient<&str> = SmpClient::new(SmpConfig::default());
//! smps.get::<NodeInfo>(Target::Route(DrPath::from_ports(&[1, 3])?), 0, "far node")?;
//! smps.get::<PortInfo>(Target::Lid(7), 1, "port 1 of LID 7")?;
//! // SmpClient is ibsm_transport::SansIo: hand smps.poll_transmit(now) to a
//! // transport, feed back what arrives, then read smps.poll_event(); or run
//! // ibsm_transport::drive(&mut smps, &mut transport, ..).
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::Duration;

use ibsm_transport::{
    Address, DrAddress, LidAddress, Received, Request, Transactions, Transport, TransportError,
    TxConfig, TxId, TxStats,
};
use ibsm_wire::{
    DrPath, DrSmpView, LidSmpView, MAD_SIZE, MadHeaderView, Method, MgmtClass, SmAttributeId,
    SmpAttribute, smp_data,
};
use ibsm_wire::{DrSmp, LidSmp};

use crate::outcome::{Failure, Outcome, Slot, sans_io_over_txns};

/// Where an SMP goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// LID-routed to this LID (the port must be Active and routed).
    Lid(u16),
    /// Purely directed along this route (works before LIDs and routes exist).
    Route(DrPath),
}

/// Settings of an [`SmpClient`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmpConfig {
    /// Window, per-attempt timeout and retries.
    pub tx: TxConfig,
    /// M_Key sent with every SMP (0 when the fabric's ports are not protected).
    pub m_key: u64,
}

impl Default for SmpConfig {
    /// OpenSM's transaction settings (200 ms per attempt, 3 retries), 32 SMPs in
    /// flight, no M_Key.
    fn default() -> Self {
        Self {
            tx: TxConfig {
                window: 32,
                timeout: Duration::from_millis(200),
                retries: 3,
                tid_high: 0x5a4d,
                assign_tids: true,
            },
            m_key: 0,
        }
    }
}

/// Why an SMP query failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SmpError {
    /// No answer after every retry (also what an M_Key mismatch looks like: the SMA
    /// drops the request).
    #[error("{attribute:?} at {target:?}: no answer after {attempts} attempts")]
    Timeout {
        /// The target.
        target: Target,
        /// The attribute.
        attribute: SmAttributeId,
        /// Sends it took.
        attempts: u32,
    },
    /// The SMA answered with an error status (attribute or modifier unsupported, ...).
    #[error("{attribute:?} at {target:?}: status {status:#06x}")]
    Status {
        /// The target.
        target: Target,
        /// The attribute.
        attribute: SmAttributeId,
        /// The MAD status (15 bits for a directed-route SMP).
        status: u16,
    },
    /// The answer could not be read as the attribute asked for.
    #[error("{attribute:?} at {target:?}: malformed answer: {why}")]
    Malformed {
        /// The target.
        target: Target,
        /// The attribute.
        attribute: SmAttributeId,
        /// What was wrong.
        why: String,
    },
    /// The transport refused the request.
    #[error("{attribute:?} at {target:?}: {error}")]
    Transport {
        /// The target.
        target: Target,
        /// The attribute.
        attribute: SmAttributeId,
        /// The transport's error.
        error: TransportError,
    },
}

/// What one query asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    /// The target.
    pub target: Target,
    /// The attribute.
    pub attribute: SmAttributeId,
    /// The attribute modifier.
    pub modifier: u32,
    /// Get or Set.
    pub method: Method,
}

/// The outcome of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmpEvent<C> {
    /// The SMA answered with status 0.
    Done {
        /// The query's cookie.
        cookie: C,
        /// What was asked.
        asked: Asked,
        /// The 64 data bytes of the answer.
        data: [u8; 64],
        /// Sends it took.
        attempts: u32,
        /// From the first send to the answer.
        elapsed: Duration,
    },
    /// The query failed; the others are not affected.
    Failed {
        /// The query's cookie.
        cookie: C,
        /// What was asked.
        asked: Asked,
        /// Why.
        error: SmpError,
    },
    /// A MAD no query waits for (a trap, a late duplicate).
    Unsolicited(Received),
}

impl<C> SmpEvent<C> {
    /// The answer decoded as `A`.
    ///
    /// # Errors
    /// The query's own error for a failed query; [`SmpError::Malformed`] when the answer
    /// is another attribute or does not decode.
    pub fn decode<A: SmpAttribute>(&self) -> Result<A, SmpError> {
        match self {
            Self::Done { asked, data, .. } => {
                let bad = |why: String| SmpError::Malformed {
                    target: asked.target,
                    attribute: asked.attribute,
                    why,
                };
                if asked.attribute != A::ID {
                    return Err(bad(format!(
                        "asked {:?}, decoding {:?}",
                        asked.attribute,
                        A::ID
                    )));
                }
                A::parse(data).map_err(|e| bad(e.to_string()))
            }
            Self::Failed { error, .. } => Err(error.clone()),
            Self::Unsolicited(_) => Err(SmpError::Malformed {
                target: Target::Lid(0),
                attribute: A::ID,
                why: "not an answer to a query".into(),
            }),
        }
    }
}

/// The SMP client. `C` is the caller's per-query cookie. It is [`SansIo`](ibsm_transport::SansIo): its events
/// are the queries' outcomes, and it is idle when no query is waiting or in flight.
#[derive(Debug)]
pub struct SmpClient<C> {
    txns: Transactions<Slot<C, Asked>>,
    m_key: u64,
}

impl<C> SmpClient<C> {
    /// A client with `cfg`.
    #[must_use]
    pub fn new(cfg: SmpConfig) -> Self {
        Self {
            txns: Transactions::new(cfg.tx),
            m_key: cfg.m_key,
        }
    }

    /// Counters of the transaction layer (sends, retries, timeouts, ...).
    #[must_use]
    pub fn stats(&self) -> TxStats {
        self.txns.stats()
    }

    /// Queries `A` (with `modifier`: the port number of a PortInfo, the block of a
    /// table, ...) at `target`.
    ///
    /// # Errors
    /// [`SmpError::Transport`] when the request cannot be queued (a route longer than
    /// 63 hops, every TID in use); the query then does not exist.
    pub fn get<A: SmpAttribute>(
        &mut self,
        target: Target,
        modifier: u32,
        cookie: C,
    ) -> Result<TxId, SmpError> {
        self.submit(Method::Get, A::ID, target, modifier, [0; 64], cookie)
    }

    /// Writes `value` as `A` at `target`; the answer holds what the SMA now has.
    ///
    /// # Errors
    /// As [`Self::get`], and [`SmpError::Malformed`] when `value` cannot be encoded.
    pub fn set<A: SmpAttribute>(
        &mut self,
        target: Target,
        modifier: u32,
        value: &A,
        cookie: C,
    ) -> Result<TxId, SmpError> {
        let mut data = [0u8; 64];
        value
            .emit_into(&mut data)
            .map_err(|e| SmpError::Malformed {
                target,
                attribute: A::ID,
                why: e.to_string(),
            })?;
        self.submit(Method::Set, A::ID, target, modifier, data, cookie)
    }

    fn submit(
        &mut self,
        method: Method,
        attribute: SmAttributeId,
        target: Target,
        modifier: u32,
        data: [u8; 64],
        cookie: C,
    ) -> Result<TxId, SmpError> {
        let id = u16::from(attribute);
        let (addr, mad) = match target {
            Target::Lid(lid) => {
                let mut m = LidSmp::request(method, id, modifier, 0, self.m_key);
                m.data = data;
                (Address::Lid(LidAddress::smp(lid)), m.to_bytes().to_vec())
            }
            Target::Route(path) => {
                let m = DrSmp::request_bytes(method, id, modifier, 0, self.m_key, &path, &data);
                (Address::Directed(DrAddress::direct(path)), m.to_vec())
            }
        };
        let asked = Asked {
            target,
            attribute,
            modifier,
            method,
        };
        self.txns
            .submit(Request::new(addr, mad, Slot { cookie, asked }))
            .map_err(|error| SmpError::Transport {
                target,
                attribute,
                error,
            })
    }
}

sans_io_over_txns!(SmpClient, SmpEvent);

/// Implements [`SansIo`](ibsm_transport::SansIo) for a core built on a client of this
/// crate: its traffic is all the client's (the field `smps`, an [`SmpClient`], or the
/// field path given with `via:`), it has no events of its own, and after every input it
/// reads the client's events with its own `collect(&mut self)`. `before_transmit: f`
/// names a method run before each transmit (to send what the answers just taught),
/// `idle: f` the method that says it is done (by default: nothing outstanding).
///
/// ```ignore
/// ibsm_query::sans_io_over_smps!(LftReader);
/// ibsm_query::sans_io_over_smps!(Discovery, before_transmit: submit, idle: is_done);
/// ibsm_query::sans_io_over_smps!(Scrape, via: client.txns, idle: is_done);
/// ```
#[macro_export]
macro_rules! sans_io_over_smps {
    ($core:ty $(, before_transmit: $submit:ident)? $(, idle: $idle:ident)?) => {
        $crate::sans_io_over_smps!(
            $core, via: smps $(, before_transmit: $submit)? $(, idle: $idle)?
        );
    };
    (
        $core:ty, via: $($inner:ident).+
        $(, before_transmit: $submit:ident)? $(, idle: $idle:ident)?
    ) => {
        impl $crate::__transport::SansIo for $core {
            type Event = ::core::convert::Infallible;
            type Job = $crate::__transport::NoJob;

            fn handle_incoming(
                &mut self,
                now: $crate::__transport::Instant,
                incoming: $crate::__transport::Incoming,
            ) {
                $crate::__transport::SansIo::handle_incoming(&mut self.$($inner).+, now, incoming);
                self.collect();
            }

            fn handle_send_error(
                &mut self,
                now: $crate::__transport::Instant,
                id: $crate::__transport::TxId,
                error: $crate::__transport::TransportError,
            ) {
                $crate::__transport::SansIo::handle_send_error(&mut self.$($inner).+, now, id, error);
                self.collect();
            }

            fn handle_timeout(&mut self, now: $crate::__transport::Instant) {
                $crate::__transport::SansIo::handle_timeout(&mut self.$($inner).+, now);
                self.collect();
            }

            fn poll_transmit(
                &mut self,
                now: $crate::__transport::Instant,
            ) -> Option<$crate::__transport::Outgoing> {
                $( self.$submit(); )?
                $crate::__transport::SansIo::poll_transmit(&mut self.$($inner).+, now)
            }

            fn poll_timeout(&mut self) -> Option<$crate::__transport::Instant> {
                $crate::__transport::SansIo::poll_timeout(&mut self.$($inner).+)
            }

            fn poll_event(&mut self) -> Option<::core::convert::Infallible> {
                None
            }

            fn is_idle(&self) -> bool {
                let idle: fn(&Self) -> bool =
                    $crate::sans_io_over_smps!(@idle [$($inner).+] $($idle)?);
                idle(self)
            }
        }
    };
    (@idle [$($inner:ident).+]) => { |c| $crate::__transport::SansIo::is_idle(&c.$($inner).+) };
    (@idle [$($inner:ident).+] $idle:ident) => { |c| c.$idle() };
}

impl<C> Outcome<C> for SmpEvent<C> {
    type Asked = Asked;
    type Data = [u8; 64];
    type Error = SmpError;

    fn answer(mad: &[u8]) -> Result<[u8; 64], Failure> {
        answer(mad)
    }

    fn error(asked: &Asked, failure: Failure) -> SmpError {
        let (target, attribute) = (asked.target, asked.attribute);
        match failure {
            Failure::Timeout { attempts } => SmpError::Timeout {
                target,
                attribute,
                attempts,
            },
            Failure::Transport(error) => SmpError::Transport {
                target,
                attribute,
                error,
            },
            Failure::Status(status) => SmpError::Status {
                target,
                attribute,
                status,
            },
            Failure::Malformed(why) => SmpError::Malformed {
                target,
                attribute,
                why,
            },
        }
    }

    fn done(cookie: C, asked: Asked, data: [u8; 64], attempts: u32, elapsed: Duration) -> Self {
        SmpEvent::Done {
            cookie,
            asked,
            data,
            attempts,
            elapsed,
        }
    }

    fn failed(cookie: C, asked: Asked, error: SmpError) -> Self {
        SmpEvent::Failed {
            cookie,
            asked,
            error,
        }
    }

    fn unsolicited(received: Received) -> Self {
        SmpEvent::Unsolicited(received)
    }
}

/// The data of an SMP answer with status 0.
fn answer(mad: &[u8]) -> Result<[u8; 64], Failure> {
    if mad.len() < MAD_SIZE {
        return Err(Failure::Malformed(format!(
            "{} bytes, an SMP has {MAD_SIZE}",
            mad.len()
        )));
    }
    let status = if MadHeaderView::new_unchecked(mad).mgmt_class() == MgmtClass::SubnDirected {
        DrSmpView::new_unchecked(mad).status()
    } else {
        LidSmpView::new_unchecked(mad).status().0
    };
    if status != 0 {
        return Err(Failure::Status(status));
    }
    let mut data = [0u8; 64];
    data.copy_from_slice(smp_data(mad).unwrap_or(&[0; 64]));
    Ok(data)
}

/// One Get over `transport`: `A` at `target`, or why not.
///
/// # Errors
/// The query's [`SmpError`]; a fatal transport error as [`SmpError::Transport`].
pub fn query<A: SmpAttribute, T: Transport + ?Sized>(
    transport: &mut T,
    cfg: SmpConfig,
    target: Target,
    modifier: u32,
) -> Result<A, SmpError> {
    let mut c: SmpClient<()> = SmpClient::new(cfg);
    c.get::<A>(target, modifier, ())?;
    let patience = cfg
        .tx
        .timeout
        .saturating_mul(cfg.tx.retries.saturating_add(2));
    let until = transport.now() + patience;
    let events =
        crate::run_to_idle(&mut c, transport, until).map_err(|error| SmpError::Transport {
            target,
            attribute: A::ID,
            error,
        })?;
    match events
        .iter()
        .find(|ev| !matches!(ev, SmpEvent::Unsolicited(_)))
    {
        Some(ev) => ev.decode::<A>(),
        None => Err(SmpError::Timeout {
            target,
            attribute: A::ID,
            attempts: cfg.tx.retries + 1,
        }),
    }
}

#[cfg(test)]
mod tests;
