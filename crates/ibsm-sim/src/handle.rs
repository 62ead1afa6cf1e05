//! The SM side of the simulator: a [`Transport`] bound to one attachment point.

use std::cell::RefCell;
use std::rc::Rc;

use ibsm_transport::{Address, Incoming, Instant, LocalPort, Transport, TransportError};

use crate::agent::{Agent, NodeKind};
use crate::core::Core;

/// A transport handle for an SM attached to the simulated fabric.
///
/// Everything runs in the caller's thread on the simulator's virtual clock: `send`
/// injects at the current virtual instant, and `recv` processes simulation events
/// until this handle has something to read or the deadline is reached, then sets the
/// clock to that instant. With one SM that is all a driver needs. With several, drive
/// them round-robin with non-blocking receives (`recv(now)`) and move time with
/// [`Sim::run_until`](crate::Sim::run_until) to the earliest of their deadlines, so
/// that no SM's timers fire late.
pub struct SimPort<A: Agent> {
    pub(crate) core: Rc<RefCell<Core<A>>>,
    pub(crate) id: usize,
}

impl<A: Agent> std::fmt::Debug for SimPort<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.core.borrow();
        let a = &c.attach[self.id];
        write!(f, "SimPort(node {} port {})", a.node, a.port)
    }
}

impl<A: Agent> SimPort<A> {
    /// MADs waiting to be read.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.core.borrow().attach[self.id].inbox.len()
    }

    /// Detaches the SM: IsSM is cleared and nothing more is delivered here.
    pub fn detach(&mut self) {
        let mut c = self.core.borrow_mut();
        let (node, port) = (c.attach[self.id].node, c.attach[self.id].port);
        c.attach[self.id].detached = true;
        c.attach[self.id].is_sm = false;
        c.attach[self.id].inbox.clear();
        c.nodes[node as usize].agent.set_is_sm(port, false);
    }
}

impl<A: Agent> Drop for SimPort<A> {
    fn drop(&mut self) {
        if let Ok(mut c) = self.core.try_borrow_mut() {
            c.attach[self.id].detached = true;
        }
    }
}

impl<A: Agent> Transport for SimPort<A> {
    fn now(&self) -> Instant {
        self.core.borrow().now
    }

    fn local_port(&self) -> LocalPort {
        let c = self.core.borrow();
        let a = &c.attach[self.id];
        let n = &c.nodes[a.node as usize];
        LocalPort {
            node_guid: n.setup.guid,
            port_guid: n.setup.port_guid(a.port),
            port_num: a.port,
            lid: n.agent.lid(a.port).0,
        }
    }

    fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
        addr.check(mad)?;
        let mut c = self.core.borrow_mut();
        let a = &c.attach[self.id];
        if a.detached || c.nodes[a.node as usize].removed {
            return Err(TransportError::Closed);
        }
        let mut buf = [0u8; 256];
        let len = mad.len().min(256);
        if mad.len() > 256 {
            return Err(TransportError::InvalidMad {
                reason: "the simulator carries single 256-byte MADs (no RMPP)",
            });
        }
        buf[..len].copy_from_slice(&mad[..len]);
        let (dlid, sl) = match addr {
            Address::Lid(l) => (l.dlid, l.sl),
            Address::Directed(dr) => {
                dr.write_to(&mut buf)?;
                let is_ca = c.nodes[a.node as usize].setup.kind != NodeKind::Switch;
                if !dr.starts_by_lid()
                    && is_ca
                    && !dr.path.is_local()
                    && dr.path.ports()[0] != a.port
                {
                    // As the Linux kernel: a CA's directed route leaves by its own port.
                    return Err(TransportError::InvalidMad {
                        reason: "InitialPath[1] is not the port this handle is attached to",
                    });
                }
                (dr.n0_lid, 0)
            }
            Address::DirectedResponse { lrh_dlid } => (*lrh_dlid, 0),
        };
        if dlid == 0 {
            return Err(TransportError::Unreachable {
                reason: "DLID 0".into(),
            });
        }
        c.inject(self.id, buf, dlid, sl);
        Ok(())
    }

    fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError> {
        let mut c = self.core.borrow_mut();
        loop {
            if let Some(m) = c.attach[self.id].inbox.pop_front() {
                return Ok(m);
            }
            if c.attach[self.id].detached {
                return Err(TransportError::Closed);
            }
            if !c.step_due(deadline) {
                // With no deadline and no events the simulation is quiescent:
                // nothing will ever arrive, so time stays where it is.
                if deadline > c.now && deadline != Instant::MAX {
                    c.now = deadline;
                }
                return Err(TransportError::Timeout);
            }
        }
    }

    fn set_is_sm(&mut self, on: bool) -> Result<(), TransportError> {
        let mut c = self.core.borrow_mut();
        let (node, port) = (c.attach[self.id].node, c.attach[self.id].port);
        c.attach[self.id].is_sm = on;
        c.nodes[node as usize].agent.set_is_sm(port, on);
        Ok(())
    }
}
