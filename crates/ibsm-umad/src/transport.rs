//! `ibsm_transport::Transport` over a [`UmadPort`].

use std::time::Duration;

use ibsm_transport::{
    Address, Clock, Incoming, Instant, LocalPort, Received, SystemClock, Transport, TransportError,
};

use ibsm_wire::{MadHeaderView, Method};

use crate::error::Error;
use crate::port::{OpenOptions, SendTo, UmadPort};

/// A [`UmadPort`] as an ibsm [`Transport`], on the system's monotonic clock.
#[derive(Debug)]
pub struct UmadTransport {
    port: UmadPort,
    clock: SystemClock,
    kernel_track: Duration,
}

fn os(op: &'static str, e: &Error) -> TransportError {
    match e {
        Error::Io { errno, .. } => TransportError::Os { op, errno: *errno },
        _ => TransportError::Os { op, errno: 0 },
    }
}

impl UmadTransport {
    /// Opens a port (see [`UmadPort::open`]).
    ///
    /// # Errors
    /// As [`UmadPort::open`].
    pub fn open(opts: &OpenOptions) -> crate::Result<Self> {
        let port = UmadPort::open(opts)?;
        Ok(Self {
            port,
            clock: SystemClock::new(),
            kernel_track: Duration::from_millis(150),
        })
    }

    /// How long the kernel keeps a request outstanding so its response is delivered.
    ///
    /// Keep it shorter than the transaction layer's per-attempt timeout: a retry reuses
    /// the TID, and the kernel refuses a TID that is still outstanding (EINVAL). The
    /// default is 150 ms (the transaction layer defaults to 200 ms). The umad2sim preload
    /// ignores it.
    pub fn set_kernel_track(&mut self, d: Duration) {
        self.kernel_track = d;
    }

    /// The underlying port.
    #[must_use]
    pub fn port(&self) -> &UmadPort {
        &self.port
    }
}

/// Whether a MAD is a request that gets a response (so the kernel must track it).
fn expects_response(mad: &[u8]) -> bool {
    MadHeaderView::new_checked(mad)
        .is_ok_and(|h| !h.response() && !matches!(h.method(), Method::Send | Method::TrapRepress))
}

impl Transport for UmadTransport {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn local_port(&self) -> LocalPort {
        let d = self.port.desc();
        LocalPort {
            node_guid: d.node_guid,
            port_guid: d.port_guid.unwrap_or(d.node_guid),
            port_num: d.port,
            lid: d.lid,
        }
    }

    fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
        addr.check(mad)?;
        let mut buf;
        let (to, bytes) = match addr {
            Address::Lid(l) => (
                SendTo {
                    lid: l.dlid,
                    qpn: l.qpn,
                    qkey: l.qkey,
                    sl: l.sl,
                    pkey_index: l.pkey_index,
                },
                mad,
            ),
            Address::Directed(d) => {
                buf = mad.to_vec();
                d.write_to(&mut buf)?;
                (
                    SendTo {
                        lid: d.n0_lid,
                        ..SendTo::DIRECTED
                    },
                    &buf[..],
                )
            }
            Address::DirectedResponse { lrh_dlid } => (
                SendTo {
                    lid: *lrh_dlid,
                    ..SendTo::DIRECTED
                },
                mad,
            ),
        };
        let track = expects_response(bytes).then_some(self.kernel_track);
        self.port
            .send(&to, bytes, track)
            .map_err(|e| os("write", &e))
    }

    fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError> {
        loop {
            // Poll in slices so a far deadline (Instant::MAX) still fits poll's i32 ms.
            // A deadline already past still polls once without waiting: what arrived
            // between two slices of an engine's work is read before its next slice.
            let wait = deadline
                .saturating_duration_since(self.now())
                .min(Duration::from_secs(1));
            let Some(rx) = self.port.recv(wait).map_err(|e| os("read", &e))? else {
                if self.now() >= deadline {
                    return Err(TransportError::Timeout);
                }
                continue;
            };
            if rx.mad.len() < 24 {
                continue;
            }
            let h = MadHeaderView::new_unchecked(&rx.mad[..]);
            let (tid, class) = (h.transaction_id(), u8::from(h.mgmt_class()));
            if rx.timed_out() {
                // Under ibsim, status 110 comes back at once for an unroutable request;
                // on a kernel it only means the kernel stopped tracking the request, and
                // the caller's own deadline decides.
                if self.port.under_ibsim() {
                    return Ok(Incoming::SendFailed {
                        tid,
                        class,
                        error: TransportError::Unreachable {
                            reason: "umad status 110 (no route)".into(),
                        },
                    });
                }
                continue;
            }
            return Ok(Incoming::Mad(Received {
                mad: rx.mad,
                slid: rx.hdr.lid,
                sl: rx.hdr.sl,
                qpn: rx.hdr.qpn,
                pkey_index: rx.hdr.pkey_index,
                at: self.now(),
            }));
        }
    }

    fn set_is_sm(&mut self, on: bool) -> Result<(), TransportError> {
        self.port.set_issm(on).map_err(|e| os("open issm", &e))
    }
}
