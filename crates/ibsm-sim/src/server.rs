//! An ibsim-compatible server: OpenSM, infiniband-diags and any libibumad program run
//! under ibsim's `libumad2sim.so` preload talk to this simulator (and its spec-exact
//! SMAs) exactly as they would to `ibsim`.
//!
//! The protocol (ibsim 0.10, Linux abstract unix datagram sockets named after
//! `IBSIM_SOCKNAME`, default `sim`):
//! * the server listens on `<name>:ctl` for 80-byte control messages (magic 0xdeadbeef,
//!   client id, type, length, 64 data bytes, host byte order) and answers each to its
//!   sender: CONNECT, DISCONNECT, GET_PORT, GET_VENDOR, GET_GID, GET_GUID,
//!   GET_NODEINFO, GET_PORTINFO, SET_ISSM, GET_PKEYS;
//! * client `i` sends 288-byte requests to `<name>:out<i>` (DLID, SLID, DQP, SQP,
//!   status, length, then the 256-byte MAD; the LID and QP words carry the umad
//!   header's network-order values) and the server answers through the same socket,
//!   connected to the client's `<name>:in<pid>`.
//!
//! Virtual time follows the wall clock while serving, so M_Key leases and trap
//! retransmissions run at their real pace.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ibsm_transport::{Address, DrAddress, Incoming, Instant, LidAddress, Transport};
use ibsm_wire::{DrPath, DrSmpView, MadHeaderView, MgmtClass, NodeInfo, PERMISSIVE_LID};

use crate::{NodeIdx, NodeKind, Sim, SimPort, SmaAgent};

const MAGIC: u32 = 0xdead_beef;
const MAX_CLIENTS: usize = 10;
const CTL_SIZE: usize = 80;
const REQ_SIZE: usize = 288;
const MAD_OFFSET: usize = 32;

const CTL_ERROR: u32 = 0;
const CTL_CONNECT: u32 = 1;
const CTL_DISCONNECT: u32 = 2;
const CTL_GET_PORT: u32 = 3;
const CTL_GET_VENDOR: u32 = 4;
const CTL_GET_GID: u32 = 5;
const CTL_GET_GUID: u32 = 6;
const CTL_GET_NODEINFO: u32 = 7;
const CTL_GET_PORTINFO: u32 = 8;
const CTL_SET_ISSM: u32 = 9;
const CTL_GET_PKEYS: u32 = 10;

/// umad status for "could not be sent" (ETIMEDOUT, as the kernel reports it).
const STATUS_UNROUTABLE: u32 = 110;

struct Client {
    port: SimPort<SmaAgent>,
    node: NodeIdx,
    port_num: u8,
    issm: bool,
}

/// The server; see the [module docs](self).
pub struct IbsimServer {
    sim: Sim<SmaAgent>,
    name: String,
    ctl: UnixDatagram,
    outs: Vec<UnixDatagram>,
    clients: Vec<Option<Client>>,
    wall: std::time::Instant,
    start: Instant,
}

impl std::fmt::Debug for IbsimServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IbsimServer({:?})", self.name)
    }
}

/// ibsim 0.10 names its sockets with the terminating NUL inside the abstract name.
fn abstract_addr(name: &str) -> io::Result<SocketAddr> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    SocketAddr::from_abstract_name(&bytes)
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

impl IbsimServer {
    /// Binds the sockets of socket name `name` (what clients find in
    /// `IBSIM_SOCKNAME`).
    ///
    /// # Errors
    /// The socket calls' errors (e.g. another server already uses the name).
    pub fn bind(sim: Sim<SmaAgent>, name: &str) -> io::Result<Self> {
        let ctl = UnixDatagram::bind_addr(&abstract_addr(&format!("{name}:ctl"))?)?;
        ctl.set_nonblocking(true)?;
        let mut outs = Vec::with_capacity(MAX_CLIENTS);
        for i in 0..MAX_CLIENTS {
            let s = UnixDatagram::bind_addr(&abstract_addr(&format!("{name}:out{i}"))?)?;
            s.set_nonblocking(true)?;
            outs.push(s);
        }
        let start = sim.now();
        Ok(Self {
            sim,
            name: name.to_string(),
            ctl,
            outs,
            clients: (0..MAX_CLIENTS).map(|_| None).collect(),
            wall: std::time::Instant::now(),
            start,
        })
    }

    /// The simulation (for faults, counters, verification while serving).
    pub fn sim(&mut self) -> &mut Sim<SmaAgent> {
        &mut self.sim
    }

    /// Stops serving and hands the simulation back.
    #[must_use]
    pub fn into_sim(self) -> Sim<SmaAgent> {
        self.sim
    }

    /// Serves until `stop` is set, sleeping briefly when idle.
    ///
    /// # Errors
    /// A socket error other than "would block".
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            if self.poll()? == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        Ok(())
    }

    /// One round: control messages, client MADs, simulation up to the wall clock,
    /// deliveries. Returns how many messages moved.
    ///
    /// # Errors
    /// A socket error other than "would block".
    pub fn poll(&mut self) -> io::Result<usize> {
        let mut moved = 0;
        let mut buf = [0u8; 512];
        loop {
            match self.ctl.recv_from(&mut buf) {
                Ok((n, from)) => {
                    moved += 1;
                    if n == CTL_SIZE {
                        let mut msg = [0u8; CTL_SIZE];
                        msg.copy_from_slice(&buf[..CTL_SIZE]);
                        if self.control(&mut msg) {
                            let _ = self.ctl.send_to_addr(&msg, &from);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        for i in 0..MAX_CLIENTS {
            loop {
                match self.outs[i].recv(&mut buf) {
                    Ok(n) => {
                        moved += 1;
                        if n >= REQ_SIZE {
                            self.packet(i, &buf[..REQ_SIZE]);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break,
                    Err(e) => return Err(e),
                }
            }
        }
        let target = self.start + self.wall.elapsed();
        self.sim.run_until(target);
        for i in 0..MAX_CLIENTS {
            let Some(c) = &mut self.clients[i] else {
                continue;
            };
            let now = c.port.now();
            while let Ok(Incoming::Mad(rx)) = c.port.recv(now) {
                moved += 1;
                let mut out = [0u8; REQ_SIZE];
                let lid = c.port.local_port().lid;
                out[0..4].copy_from_slice(&u32::from(lid.to_be()).to_ne_bytes());
                out[4..8].copy_from_slice(&u32::from(rx.slid.to_be()).to_ne_bytes());
                out[12..16].copy_from_slice(&rx.qpn.to_be().to_ne_bytes());
                out[24..32].copy_from_slice(&(rx.mad.len() as u64).to_be_bytes());
                let n = rx.mad.len().min(256);
                out[MAD_OFFSET..MAD_OFFSET + n].copy_from_slice(&rx.mad[..n]);
                let _ = self.outs[i].send(&out);
            }
        }
        Ok(moved)
    }

    /// Finds the node a client asks for: by NodeDescription, `0x<guid>`, or
    /// ibnetdiscover's `S-<guid>` / `H-<guid>` / `R-<guid>`; the first CA when empty.
    fn find_node(&self, id: &str) -> Option<NodeIdx> {
        let n = self.sim.node_count() as u32;
        if id.is_empty() {
            return (0..n).map(NodeIdx).find(|&i| {
                self.sim
                    .node_setup(i)
                    .is_some_and(|s| s.kind == NodeKind::Ca)
            });
        }
        let hex = id.strip_prefix("0x").or_else(|| {
            id.get(2..)
                .filter(|_| matches!(id.get(..2), Some("S-" | "H-" | "R-")))
        });
        if let Some(g) = hex.and_then(|h| u64::from_str_radix(h, 16).ok()) {
            if let Some(i) = self.sim.node_by_guid(g) {
                return Some(i);
            }
        }
        (0..n)
            .map(NodeIdx)
            .find(|&i| self.sim.node_setup(i).is_some_and(|s| s.description == id))
    }

    /// Handles one control message in place; `false` when there is nothing to answer.
    fn control(&mut self, msg: &mut [u8; CTL_SIZE]) -> bool {
        if u32_at(msg, 0) != MAGIC {
            return false;
        }
        let client = u32_at(msg, 4) as usize;
        let ty = u32_at(msg, 8);
        let ok = match ty {
            CTL_CONNECT => self.connect(msg),
            _ if client >= MAX_CLIENTS || self.clients[client].is_none() => false,
            CTL_DISCONNECT => {
                if let Some(mut c) = self.clients[client].take() {
                    c.port.detach();
                }
                true
            }
            _ => self.query(client, ty, &mut msg[16..]),
        };
        if !ok {
            msg[8..12].copy_from_slice(&CTL_ERROR.to_ne_bytes());
        }
        true
    }

    fn connect(&mut self, msg: &mut [u8; CTL_SIZE]) -> bool {
        let data = &msg[16..];
        let pid = u32_at(data, 0);
        let issm = u32_at(data, 8) != 0;
        let id_end = data[12..44].iter().position(|&b| b == 0).unwrap_or(32);
        let nodeid = String::from_utf8_lossy(&data[12..12 + id_end]).into_owned();
        let Some(slot) = self.clients.iter().position(Option::is_none) else {
            return false;
        };
        let Some(node) = self.find_node(&nodeid) else {
            return false;
        };
        let Some(setup) = self.sim.node_setup(node) else {
            return false;
        };
        if issm
            && self
                .clients
                .iter()
                .flatten()
                .any(|c| c.node == node && c.issm)
        {
            return false;
        }
        let port_num = if setup.kind == NodeKind::Switch { 0 } else { 1 };
        let Ok(addr) = abstract_addr(&format!("{}:in{pid}", self.name)) else {
            return false;
        };
        if self.outs[slot].connect_addr(&addr).is_err() {
            return false;
        }
        let Ok(mut port) = self.sim.attach_tool(node, port_num) else {
            return false;
        };
        if issm {
            let _ = port.set_is_sm(true);
        }
        self.clients[slot] = Some(Client {
            port,
            node,
            port_num,
            issm,
        });
        let data = &mut msg[16..];
        data[0..4].copy_from_slice(&(slot as u32).to_ne_bytes());
        let name = if setup.description.is_empty() {
            format!("{:#018x}", setup.guid)
        } else {
            setup.description.clone()
        };
        data[12..44].fill(0);
        let n = name.len().min(31);
        data[12..12 + n].copy_from_slice(&name.as_bytes()[..n]);
        true
    }

    fn query(&mut self, client: usize, ty: u32, data: &mut [u8]) -> bool {
        let Some(c) = &mut self.clients[client] else {
            return false;
        };
        let (node, port_num) = (c.node, c.port_num);
        match ty {
            CTL_SET_ISSM => {
                let on = u32_at(data, 0) != 0;
                c.issm = on;
                let _ = c.port.set_is_sm(on);
                true
            }
            CTL_GET_PORT => {
                let lp = c.port.local_port();
                let state = self.sim.with_agent(node, |a| {
                    a.sma()
                        .port_info(port_num)
                        .map_or(0, |pi| u8::from(pi.port_state))
                });
                data.fill(0);
                data[0..2].copy_from_slice(&lp.lid.to_ne_bytes());
                data[2] = state;
                true
            }
            CTL_GET_VENDOR => {
                let ni = self.sim.with_agent(node, |a| a.sma().config().node_info);
                data.fill(0);
                data[0..4].copy_from_slice(&ni.vendor_id.to_ne_bytes());
                data[4..8].copy_from_slice(&u32::from(ni.device_id).to_ne_bytes());
                data[8..12].copy_from_slice(&ni.revision.to_ne_bytes());
                data[16..24].copy_from_slice(&1u64.to_ne_bytes());
                true
            }
            CTL_GET_GID | CTL_GET_GUID => {
                let lp = c.port.local_port();
                let prefix = self.sim.with_agent(node, |a| {
                    a.sma().port_info(port_num).map_or(0, |pi| pi.gid_prefix)
                });
                data.fill(0);
                if ty == CTL_GET_GID {
                    data[0..8].copy_from_slice(&prefix.to_be_bytes());
                    data[8..16].copy_from_slice(&lp.port_guid.to_be_bytes());
                } else {
                    data[0..8].copy_from_slice(&lp.node_guid.to_be_bytes());
                }
                true
            }
            CTL_GET_NODEINFO => {
                let lp = c.port.local_port();
                let mut ni: NodeInfo = self.sim.with_agent(node, |a| a.sma().config().node_info);
                ni.port_guid = lp.port_guid;
                ni.local_port_num = port_num;
                data.fill(0);
                ni.emit_into(&mut data[..40]).is_ok()
            }
            CTL_GET_PORTINFO => {
                let asked = data[0];
                let np = self.sim.node_setup(node).map_or(0, |s| s.num_ports);
                let p = if asked == 0 || asked > np {
                    port_num
                } else {
                    asked
                };
                let pi = self.sim.with_agent(node, |a| a.sma().port_info(p));
                data.fill(0);
                pi.is_some_and(|pi| pi.emit_into(&mut data[..64]).is_ok())
            }
            CTL_GET_PKEYS => {
                let keys: Vec<u16> = self
                    .sim
                    .with_agent(node, |a| a.sma().pkeys(port_num).to_vec());
                data.fill(0);
                for (i, k) in keys.iter().take(32).enumerate() {
                    data[2 * i..2 * i + 2].copy_from_slice(&k.to_be_bytes());
                }
                true
            }
            _ => false,
        }
    }

    /// A MAD from client `i`.
    fn packet(&mut self, i: usize, req: &[u8]) {
        let Some(c) = &mut self.clients[i] else {
            return;
        };
        let dlid = u16::from_be(u32_at(req, 0) as u16);
        let dqp = u32::from_be(u32_at(req, 8));
        let mad = &req[MAD_OFFSET..MAD_OFFSET + 256];
        let addr = if MadHeaderView::new_unchecked(mad).mgmt_class() == MgmtClass::SubnDirected {
            let Ok(v) = DrSmpView::new_checked(mad) else {
                return;
            };
            if v.direction() {
                Address::DirectedResponse { lrh_dlid: dlid }
            } else {
                let Ok(path) = DrPath::from_smp(&v) else {
                    return self.bounce(i, req);
                };
                Address::Directed(DrAddress {
                    path,
                    dr_slid: v.dr_slid(),
                    dr_dlid: v.dr_dlid(),
                    n0_lid: if v.dr_slid() == PERMISSIVE_LID {
                        PERMISSIVE_LID
                    } else {
                        dlid
                    },
                })
            }
        } else if dqp == 0 {
            Address::Lid(LidAddress::smp(dlid))
        } else {
            Address::Lid(LidAddress::gsi(dlid, 0))
        };
        if c.port.send(&addr, mad).is_err() {
            self.bounce(i, req);
        }
    }

    /// Returns a request to its sender with the "unroutable" status, as ibsim does.
    fn bounce(&mut self, i: usize, req: &[u8]) {
        let mut out = [0u8; REQ_SIZE];
        out.copy_from_slice(&req[..REQ_SIZE]);
        out[16..20].copy_from_slice(&STATUS_UNROUTABLE.to_be().to_ne_bytes());
        let _ = self.outs[i].send(&out);
    }
}
