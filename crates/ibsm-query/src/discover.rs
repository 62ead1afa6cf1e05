//! Read-only fabric discovery over directed routes (what `ibnetdiscover` does): every
//! node's NodeInfo and NodeDescription, every port's PortInfo (down ports included),
//! every cable with both ends, as an [`ibsm_topology::Fabric`].
//!
//! Two layers:
//! * [`Walk`]: the rules and the model, no I/O. It hands out [`Probe`]s (which SMP to
//!   send where) and takes their answers; many may be in flight, every answer stands on
//!   its own (a node reached twice is linked, not added again). A caller with its own
//!   SMP machinery (an SM, with M_Keys and its own window) drives a `Walk` directly.
//! * [`Discovery`]: a `Walk` driven by an [`SmpClient`], with [`Discovery::drive`] over
//!   any transport; [`discover`] is the one-call form.
//!
//! Exploration follows ibnetdiscover and OpenSM: from the local port, out of every
//! switch port whose state is Init or beyond and whose cable is not known yet, up to 63
//! hops. A probe that fails is recorded on its node or port and the walk goes on.

use std::collections::{HashMap, VecDeque};

use ibsm_topology::{Fabric, FabricError, Guid, NodeSpec, NodeType as TopoType};
use ibsm_transport::{Instant, Transport, TransportError, TxStats};
use ibsm_wire::smp::MAX_HOPS;
use ibsm_wire::{DrPath, LinkSpeed, LinkSpeedExt, LinkWidth, NodeDescription, NodeInfo, NodeType};
use ibsm_wire::{PortInfo, PortState};

use crate::smp::{SmpClient, SmpConfig, SmpError, SmpEvent, Target};

/// One SMP a [`Walk`] wants sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Probe {
    /// NodeInfo at `path`, reached through (`node`, `port`) of a known node (`None` for
    /// the local node).
    NodeInfo {
        /// The route.
        path: DrPath,
        /// The known end of the cable it crosses last.
        from: Option<(usize, u8)>,
    },
    /// NodeDescription of a known node.
    NodeDescription {
        /// Index into [`Discovered::nodes`].
        node: usize,
    },
    /// PortInfo of one port of a known node (the attribute modifier is the port).
    PortInfo {
        /// Index into [`Discovered::nodes`].
        node: usize,
        /// Port number.
        port: u8,
    },
}

/// A port as discovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoundPort {
    /// Port GUID (a switch's ports share its GUID; a CA port we never reached is 0).
    pub guid: u64,
    /// A route to the node that enters through this port (CA ports) or to the node
    /// (switches); `None` for a CA port not reached.
    pub path: Option<DrPath>,
    /// Its PortInfo, once read.
    pub info: Option<PortInfo>,
    /// The other end of its cable, once known.
    pub peer: Option<(usize, u8)>,
    /// Why its PortInfo could not be read.
    pub error: Option<SmpError>,
}

/// A node as discovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundNode {
    /// Its NodeInfo (from the first route that reached it).
    pub info: NodeInfo,
    /// Its NodeDescription, once read (cleaned as the diags print it).
    pub description: String,
    /// The route it was first reached by.
    pub path: DrPath,
    /// Ports 0..=NumPorts.
    pub ports: Vec<FoundPort>,
    /// Why its NodeDescription could not be read.
    pub error: Option<SmpError>,
}

impl FoundNode {
    /// Whether it is a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::Switch
    }

    /// The route to ask `port`'s PortInfo along: the node's own route, or for a CA the
    /// route entering through that port when one is known.
    #[must_use]
    pub fn path_for(&self, port: u8) -> DrPath {
        if self.is_switch() {
            return self.path;
        }
        self.ports
            .get(usize::from(port))
            .and_then(|p| p.path)
            .unwrap_or(self.path)
    }
}

/// What a discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    /// Nodes in the order they were found (the local node first).
    pub nodes: Vec<FoundNode>,
    /// Node GUID -> index.
    pub by_guid: HashMap<u64, usize>,
    /// NodeInfo probes that failed (a route nobody answered): the route and why.
    pub unreachable: Vec<(DrPath, SmpError)>,
}

/// Where a NodeInfo answer put its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A node not known before, now at this index.
    New(usize),
    /// A known node reached again (another cable, or for a CA another port).
    Again(usize),
}

impl Discovered {
    fn link(&mut self, a: (usize, u8), b: (usize, u8)) {
        if let Some(p) = self.nodes[a.0].ports.get_mut(usize::from(a.1)) {
            p.peer = Some(b);
        }
        if let Some(p) = self.nodes[b.0].ports.get_mut(usize::from(b.1)) {
            p.peer = Some(a);
        }
    }

    /// Every cable once, as ((node, port), (node, port)) with the first end the lower.
    pub fn links(&self) -> impl Iterator<Item = ((usize, u8), (usize, u8))> + '_ {
        self.nodes.iter().enumerate().flat_map(|(n, node)| {
            node.ports.iter().enumerate().filter_map(move |(p, port)| {
                let here = (n, u8::try_from(p).ok()?);
                let there = port.peer?;
                (here < there).then_some((here, there))
            })
        })
    }

    /// The fabric: nodes with their GUIDs, types, descriptions and vendor data, every
    /// port's LID, LMC, state, width and speed as read (extended speeds included), and
    /// every cable.
    ///
    /// # Errors
    /// [`FabricError`] when the answers contradict each other (two nodes with one
    /// GUID, a cable on a port beyond NumPorts).
    pub fn to_fabric(&self) -> Result<Fabric, FabricError> {
        let mut fabric = Fabric::with_capacity(self.nodes.len(), self.nodes.len() * 2);
        let mut ids = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let node_type = match n.info.node_type {
                NodeType::Switch => TopoType::Switch,
                NodeType::Router => TopoType::Router,
                _ => TopoType::Ca,
            };
            let mut spec = NodeSpec::new(
                Guid(n.info.node_guid),
                node_type,
                n.info.num_ports,
                n.description.clone(),
            );
            spec.system_image_guid = Guid(n.info.system_image_guid);
            spec.vendor_id = n.info.vendor_id;
            spec.device_id = n.info.device_id;
            if node_type != TopoType::Switch {
                spec.port_guids = Some(
                    (1..=usize::from(n.info.num_ports))
                        .map(|p| {
                            let g = n.ports.get(p).map_or(0, |r| r.guid);
                            // A port never reached gets a placeholder derived from the
                            // node GUID: the model needs one per port.
                            Guid(if g != 0 {
                                g
                            } else {
                                n.info.node_guid.wrapping_add(p as u64)
                            })
                        })
                        .collect(),
                );
            }
            let id = fabric.add_node(spec)?;
            let node = fabric.node_mut(id).ok_or(FabricError::UnknownNode(id))?;
            for (p, found) in n.ports.iter().enumerate() {
                let (Ok(p), Some(pi)) = (u8::try_from(p), found.info) else {
                    continue;
                };
                if let Some(port) = node.port_mut(p) {
                    fill_port(port, &pi, n.is_switch(), p);
                }
            }
            ids.push(id);
        }
        for ((a, pa), (b, pb)) in self.links() {
            if a != b {
                fabric.connect(ids[a], pa, ids[b], pb)?;
            }
        }
        Ok(fabric)
    }
}

fn fill_port(port: &mut ibsm_topology::Port, pi: &PortInfo, switch: bool, num: u8) {
    use ibsm_topology::{LinkSpeed as TS, LinkWidth as TW, PortState as TP};
    port.state = match pi.port_state {
        PortState::Down => TP::Down,
        PortState::Init => TP::Init,
        PortState::Armed => TP::Armed,
        PortState::Active | PortState::ActiveDefer => TP::Active,
        _ => TP::Unknown,
    };
    // The LID of a switch lives on port 0; its external ports report it too.
    if !switch || num == 0 {
        port.lid = pi.lid;
        port.lmc = pi.lmc;
    }
    if switch && num == 0 {
        return; // the management port has no link
    }
    port.width = match pi.link_width_active {
        LinkWidth::X1 => TW::X1,
        LinkWidth::X2 => TW::X2,
        LinkWidth::X4 => TW::X4,
        LinkWidth::X8 => TW::X8,
        LinkWidth::X12 => TW::X12,
        _ => TW::Unknown,
    };
    // An extended speed in use takes precedence over LinkSpeedActive.
    port.speed = match (pi.link_speed_ext_active, pi.link_speed_active) {
        (LinkSpeedExt::Fdr, _) => TS::Fdr,
        (LinkSpeedExt::Edr, _) => TS::Edr,
        (LinkSpeedExt::Hdr, _) => TS::Hdr,
        (LinkSpeedExt::Ndr, _) => TS::Ndr,
        (_, LinkSpeed::Sdr) => TS::Sdr,
        (_, LinkSpeed::Ddr) => TS::Ddr,
        (_, LinkSpeed::Qdr) => TS::Qdr,
        _ => TS::Unknown,
    };
}

/// The discovery's rules and model; see the module docs.
#[derive(Debug, Default)]
pub struct Walk {
    found: Discovered,
    out: VecDeque<Probe>,
}

impl Walk {
    /// A walk starting at the local node (the empty route).
    #[must_use]
    pub fn new() -> Self {
        let mut w = Self::default();
        w.out.push_back(Probe::NodeInfo {
            path: DrPath::local(),
            from: None,
        });
        w
    }

    /// The next probe to send.
    pub fn poll_probe(&mut self) -> Option<Probe> {
        self.out.pop_front()
    }

    /// Whether probes wait to be handed out.
    #[must_use]
    pub fn has_probes(&self) -> bool {
        !self.out.is_empty()
    }

    /// Where a probe goes and with which attribute modifier.
    #[must_use]
    pub fn route(&self, probe: &Probe) -> (DrPath, u32) {
        match *probe {
            Probe::NodeInfo { path, .. } => (path, 0),
            Probe::NodeDescription { node } => (self.found.nodes[node].path, 0),
            Probe::PortInfo { node, port } => {
                (self.found.nodes[node].path_for(port), u32::from(port))
            }
        }
    }

    /// What has been found so far.
    #[must_use]
    pub fn found(&self) -> &Discovered {
        &self.found
    }

    /// Takes the model.
    #[must_use]
    pub fn into_found(self) -> Discovered {
        self.found
    }

    /// A NodeInfo answer at `path`, reached through `from`.
    pub fn node_info(&mut self, path: DrPath, from: Option<(usize, u8)>, ni: &NodeInfo) -> Seen {
        let in_port = ni.local_port_num;
        if let Some(&n) = self.found.by_guid.get(&ni.node_guid) {
            if let Some(f) = from {
                self.found.link(f, (n, in_port));
            }
            let node = &mut self.found.nodes[n];
            if !node.is_switch() {
                if let Some(p) = node.ports.get_mut(usize::from(in_port)) {
                    if p.path.is_none() {
                        p.path = Some(path);
                        p.guid = ni.port_guid;
                        self.out.push_back(Probe::PortInfo {
                            node: n,
                            port: in_port,
                        });
                    }
                }
            }
            return Seen::Again(n);
        }
        let n = self.found.nodes.len();
        let switch = ni.node_type == NodeType::Switch;
        let mut ports = vec![FoundPort::default(); usize::from(ni.num_ports) + 1];
        if switch {
            for p in &mut ports {
                p.guid = ni.node_guid;
            }
            if let Some(p0) = ports.first_mut() {
                p0.guid = ni.port_guid;
            }
        } else if let Some(p) = ports.get_mut(usize::from(in_port)) {
            p.guid = ni.port_guid;
            p.path = Some(path);
        }
        self.found.nodes.push(FoundNode {
            info: *ni,
            description: String::new(),
            path,
            ports,
            error: None,
        });
        self.found.by_guid.insert(ni.node_guid, n);
        if let Some(f) = from {
            self.found.link(f, (n, in_port));
        }
        self.out.push_back(Probe::NodeDescription { node: n });
        if switch {
            for port in 0..=ni.num_ports {
                self.out.push_back(Probe::PortInfo { node: n, port });
            }
        } else if usize::from(in_port) <= usize::from(ni.num_ports) && in_port > 0 {
            self.out.push_back(Probe::PortInfo {
                node: n,
                port: in_port,
            });
        }
        Seen::New(n)
    }

    /// A NodeDescription answer.
    pub fn node_description(&mut self, node: usize, d: &NodeDescription) {
        if let Some(n) = self.found.nodes.get_mut(node) {
            n.description = crate::nodemap::clean_description(d.text_bytes());
        }
    }

    /// A PortInfo answer; may queue the NodeInfo of what lies behind the port.
    pub fn port_info(&mut self, node: usize, port: u8, pi: &PortInfo) {
        let Some(rec) = self.found.nodes.get_mut(node) else {
            return;
        };
        let Some(p) = rec.ports.get_mut(usize::from(port)) else {
            return;
        };
        p.info = Some(*pi);
        let linked = p.peer.is_some();
        let explore = if rec.is_switch() {
            port != 0
        } else {
            // Out of the local CA's own port: the root, reached by the empty route.
            rec.path.is_local() && port == rec.info.local_port_num
        };
        let up = matches!(
            pi.port_state,
            PortState::Init | PortState::Armed | PortState::Active
        );
        if explore && up && !linked && rec.path.hops() < MAX_HOPS {
            if let Ok(child) = rec.path.child(port) {
                self.out.push_back(Probe::NodeInfo {
                    path: child,
                    from: Some((node, port)),
                });
            }
        }
    }

    /// A probe that got no usable answer.
    pub fn failed(&mut self, probe: &Probe, error: SmpError) {
        match *probe {
            Probe::NodeInfo { path, .. } => self.found.unreachable.push((path, error)),
            Probe::NodeDescription { node } => {
                if let Some(n) = self.found.nodes.get_mut(node) {
                    n.error = Some(error);
                }
            }
            Probe::PortInfo { node, port } => {
                if let Some(p) = self
                    .found
                    .nodes
                    .get_mut(node)
                    .and_then(|n| n.ports.get_mut(usize::from(port)))
                {
                    p.error = Some(error);
                }
            }
        }
    }
}

/// A [`Walk`] driven by an [`SmpClient`].
#[derive(Debug)]
pub struct Discovery {
    walk: Walk,
    smps: SmpClient<Probe>,
}

impl Discovery {
    /// A discovery from the local port with `cfg` (window, retries, M_Key).
    #[must_use]
    pub fn new(cfg: SmpConfig) -> Self {
        Self {
            walk: Walk::new(),
            smps: SmpClient::new(cfg),
        }
    }

    fn submit(&mut self) {
        while let Some(probe) = self.walk.poll_probe() {
            let (path, modifier) = self.walk.route(&probe);
            let target = Target::Route(path);
            let r = match probe {
                Probe::NodeInfo { .. } => self.smps.get::<NodeInfo>(target, modifier, probe),
                Probe::NodeDescription { .. } => {
                    self.smps.get::<NodeDescription>(target, modifier, probe)
                }
                Probe::PortInfo { .. } => self.smps.get::<PortInfo>(target, modifier, probe),
            };
            if let Err(e) = r {
                self.walk.failed(&probe, e);
            }
        }
    }

    fn collect(&mut self) {
        while let Some(ev) = self.smps.poll_event() {
            let probe = match &ev {
                SmpEvent::Done { cookie, .. } | SmpEvent::Failed { cookie, .. } => *cookie,
                SmpEvent::Unsolicited(_) => continue,
            };
            match probe {
                Probe::NodeInfo { path, from } => match ev.decode::<NodeInfo>() {
                    Ok(ni) => {
                        self.walk.node_info(path, from, &ni);
                    }
                    Err(e) => self.walk.failed(&probe, e),
                },
                Probe::NodeDescription { node } => match ev.decode::<NodeDescription>() {
                    Ok(d) => self.walk.node_description(node, &d),
                    Err(e) => self.walk.failed(&probe, e),
                },
                Probe::PortInfo { node, port } => match ev.decode::<PortInfo>() {
                    Ok(pi) => self.walk.port_info(node, port, &pi),
                    Err(e) => self.walk.failed(&probe, e),
                },
            }
        }
    }

    /// Whether the walk is over.
    #[must_use]
    pub fn is_done(&self) -> bool {
        !self.walk.has_probes() && self.smps.is_idle()
    }

    /// Counters of the SMP transactions.
    #[must_use]
    pub fn stats(&self) -> TxStats {
        self.smps.stats()
    }

    /// Runs over `transport` until the walk is over or the clock reaches `until`.
    ///
    /// # Errors
    /// A fatal transport error.
    pub fn drive<T: Transport + ?Sized>(
        &mut self,
        transport: &mut T,
        until: Instant,
    ) -> Result<(), TransportError> {
        loop {
            let now = transport.now();
            self.smps.handle_timeout(now);
            self.collect();
            self.submit();
            while let Some(tx) = self.smps.poll_transmit(now) {
                if let Err(e) = transport.send(&tx.addr, &tx.mad) {
                    if e.is_fatal() {
                        return Err(e);
                    }
                    self.smps.handle_send_error(tx.id, e);
                }
            }
            self.collect();
            if self.is_done() || now >= until {
                return Ok(());
            }
            let deadline = self.smps.poll_timeout().unwrap_or(until).min(until);
            match transport.recv(deadline) {
                Ok(incoming) => {
                    self.smps.handle_incoming(incoming);
                    self.collect();
                }
                Err(TransportError::Timeout) => {}
                Err(e) if e.is_fatal() => return Err(e),
                Err(_) => {}
            }
        }
    }

    /// What was found so far.
    #[must_use]
    pub fn found(&self) -> &Discovered {
        self.walk.found()
    }

    /// Takes the model.
    #[must_use]
    pub fn into_found(self) -> Discovered {
        self.walk.into_found()
    }
}

/// Discovers the fabric behind `transport`'s port, giving up at `until`.
///
/// # Errors
/// A fatal transport error.
pub fn discover<T: Transport + ?Sized>(
    transport: &mut T,
    cfg: SmpConfig,
    until: Instant,
) -> Result<Discovered, TransportError> {
    let mut d = Discovery::new(cfg);
    d.drive(transport, until)?;
    Ok(d.into_found())
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
