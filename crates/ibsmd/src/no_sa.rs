//! `--no-sa`: the port still has its class 0x03 agent (without one an SA request finds
//! no receiver, and under ibsim the umad2sim preload then crashes the process), and
//! every SA request gets the answer OpenSM's MAD layer gives a class it does not serve:
//! the request sent back as a response with status "unsupported class or version".

use ibsm::transport::{Address, Incoming, Instant, LocalPort, Transport, TransportError};
use ibsm::wire::{MAD_HEADER_SIZE, MadHeader, Method, MgmtClass, RmppFlags, RmppHeader, Status};

/// The refusal of an SA request `mad`; `None` for anything else (responses, other
/// classes, methods that expect no answer, MADs too short to be one).
pub(crate) fn refusal(mad: &[u8]) -> Option<Vec<u8>> {
    let mut h = MadHeader::parse(mad).ok()?;
    if h.mgmt_class != MgmtClass::SubnAdm || h.response {
        return None;
    }
    h.method = match h.method {
        // Set is answered with GetResp.
        Method::Get | Method::Set => Method::Get,
        m @ (Method::GetTable | Method::GetTraceTable | Method::GetMulti | Method::Delete) => m,
        _ => return None,
    };
    h.response = true;
    h.status = Status::BAD_VERSION;
    let mut out = mad.to_vec();
    h.emit_into(&mut out).ok()?;
    // One MAD, not the start of a transfer.
    let rmpp = out.get_mut(MAD_HEADER_SIZE..)?;
    let mut r = RmppHeader::parse(rmpp).ok()?;
    r.flags = RmppFlags(0);
    r.emit_into(rmpp).ok()?;
    Some(out)
}

/// The port seen by the engine, with SA requests answered by [`refusal`] on the way in.
pub(crate) struct RefuseSa<'a, T: Transport> {
    /// The port.
    pub(crate) inner: &'a mut T,
    /// Requests refused so far.
    pub(crate) refused: &'a mut u64,
}

impl<T: Transport> Transport for RefuseSa<'_, T> {
    fn now(&self) -> Instant {
        self.inner.now()
    }
    fn local_port(&self) -> LocalPort {
        self.inner.local_port()
    }
    fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
        self.inner.send(addr, mad)
    }
    fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError> {
        loop {
            let incoming = self.inner.recv(deadline)?;
            let Incoming::Mad(rx) = &incoming else {
                return Ok(incoming);
            };
            let Some(reply) = refusal(&rx.mad) else {
                return Ok(incoming);
            };
            *self.refused += 1;
            tracing::debug!(
                "SA request from LID {:#x} refused (--no-sa): unsupported class",
                rx.slid
            );
            if let Err(e) = self.inner.send(&rx.reply_address(), &reply) {
                if e.is_fatal() {
                    return Err(e);
                }
                tracing::debug!("SA refusal to LID {:#x} not sent: {e}", rx.slid);
            }
        }
    }
    fn set_is_sm(&mut self, on: bool) -> Result<(), TransportError> {
        self.inner.set_is_sm(on)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm::wire::MadHeaderView;

    fn request(class: MgmtClass, method: Method, response: bool) -> Vec<u8> {
        let h = MadHeader {
            base_version: 1,
            mgmt_class: class,
            class_version: 2,
            response,
            method,
            status: Status::OK,
            class_specific: 0,
            transaction_id: 0x1234,
            attribute_id: 0x11,
            attribute_modifier: 0,
        };
        let mut mad = vec![0u8; 256];
        h.emit_into(&mut mad).unwrap();
        mad[MAD_HEADER_SIZE] = 1; // RMPPVersion
        mad
    }

    #[test]
    fn sa_requests_are_answered_unsupported_and_nothing_else_is() {
        for (method, answer) in [
            (Method::Get, Method::Get),
            (Method::Set, Method::Get),
            (Method::GetTable, Method::GetTable),
        ] {
            let req = request(MgmtClass::SubnAdm, method, false);
            let out = refusal(&req).expect("answered");
            let v = MadHeaderView::new_checked(&out[..]).unwrap();
            assert!(v.response(), "{method:?}");
            assert_eq!(v.method(), answer);
            assert_eq!(v.status(), Status::BAD_VERSION);
            assert_eq!(v.transaction_id(), 0x1234);
            assert_eq!(v.attribute_id(), 0x11);
        }
        assert!(refusal(&request(MgmtClass::SubnAdm, Method::Get, true)).is_none());
        assert!(refusal(&request(MgmtClass::SubnAdm, Method::Report, false)).is_none());
        assert!(refusal(&request(MgmtClass::SubnLid, Method::Get, false)).is_none());
        assert!(refusal(&[0x01, 0x03]).is_none());
    }
}
