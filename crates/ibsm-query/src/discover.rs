//! Fabric discovery over directed routes (what `ibnetdiscover` does, and the first
//! stage of the SM's heavy sweep): every node's NodeInfo and NodeDescription, every
//! switch's SwitchInfo, every port's PortInfo (down ports included, extended speeds
//! asked for where a port supports them), every cable with both ends, as a
//! [`Discovered`] model and an [`ibsm_topology::Fabric`].
//!
//! Two layers:
//! * [`Walk`]: the rules, no I/O. It hands out [`Probe`]s (which SMP to send where, with
//!   which attribute modifier) and takes their answers into a [`Discovered`] the caller
//!   owns; many may be in flight, every answer stands on its own (a node reached twice
//!   is linked, not added again). A caller with its own SMP machinery drives a `Walk`
//!   directly: the SM engine (`ibsm-manager`) does, with its M_Keys, window, latch
//!   protocol and P_Key reads on top.
//! * [`Discovery`]: a `Walk` driven by an [`SmpClient`], an
//!   [`ibsm_transport::SansIo`] core that [`ibsm_transport::drive`] runs over any
//!   transport; [`discover`] is the one-call form.
//!
//! Exploration follows ibnetdiscover and OpenSM: from the local port, out of every
//! switch port whose state is Init or beyond and whose cable is not known yet, up to 63
//! hops. A switch's ports are read once the caller says so ([`Walk::read_ports`]: after
//! its SwitchInfo, or after the SM cleared its PortStateChange latch). A probe that
//! fails is recorded on its node or port and the walk goes on. Two nodes or ports that
//! answer with one GUID are recorded in [`Discovered::duplicates`] and the second is
//! left out, so the rest of the subnet is found as if it were not there.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use ibsm_transport::{Instant, SansIo, Transport, TransportError, TxStats};
use ibsm_wire::smp::MAX_HOPS;
use ibsm_wire::{
    DrPath, NodeDescription, NodeInfo, NodeType, PhysPortState, PortInfo, PortState, SwitchInfo,
};

use crate::smp::{SmpClient, SmpConfig, SmpError, SmpEvent, Target};

mod model;

pub use model::{Discovered, Duplicate, DuplicateKind, FoundNode, FoundPort, ext_speeds_supported};

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
    /// SwitchInfo of a known switch (its ports wait for [`Walk::read_ports`]).
    SwitchInfo {
        /// Index into [`Discovered::nodes`].
        node: usize,
    },
    /// PortInfo of one port of a known node.
    PortInfo {
        /// Index into [`Discovered::nodes`].
        node: usize,
        /// Port number.
        port: u8,
    },
}

/// Where a NodeInfo answer put its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A node not known before, now at this index.
    New(usize),
    /// A known node reached again (another cable, or for a CA another port).
    Again(usize),
    /// A second node or port with a GUID already in the model: recorded in
    /// [`Discovered::duplicates`] (this one), not added.
    Duplicate(Duplicate),
}

/// What a PortInfo answer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortSeen {
    /// Taken into the model (and what lies behind the port queued, if anything).
    Taken,
    /// The port supports extended speeds but was asked without modifier bit 31, so its
    /// LinkSpeedExt* fields are blank: asked again with the bit (OpenSM PR 39), this
    /// answer dropped.
    AskedAgain,
    /// The port is Down, yet a node answering with its node's GUID was reached as if
    /// through it (it had no cable in the model then): that was a second node with the
    /// GUID, not this one again. The link is taken out of the model and the duplicate
    /// recorded in [`Discovered::duplicates`] (this one); the answer is kept.
    Duplicate(Duplicate),
}

/// The discovery's rules; see the module docs. The model it fills is the caller's.
/// [`Walk::new`] starts at the local node; `Walk::default()` has nothing to ask (for a
/// caller that feeds it answers about a model it already holds).
#[derive(Debug, Default)]
pub struct Walk {
    out: VecDeque<Probe>,
    /// [`Walk::lean`]: NodeInfos across cables go out first, switch ports' PortInfos
    /// last (in `ports`), and each is dropped at its turn if the cable it would find
    /// or read is known by then.
    lean: bool,
    /// A lean walk's NodeInfos across cables, ready to go.
    explore: VecDeque<Probe>,
    /// A lean walk's NodeInfos across cables queued while other NodeInfos were on the
    /// wire, each with the count handed out by then: it waits until all of those have
    /// come back, as one of them may cross its cable from the other end.
    waiting: VecDeque<(u64, Probe)>,
    /// NodeInfos across cables handed out so far.
    ni_sent: u64,
    /// Those on the wire, by sequence number and by the port they leave through.
    ni_flight: BTreeSet<u64>,
    ni_of: HashMap<(usize, u8), u64>,
    /// Ports a lean walk asked again without modifier bit 31, as the SMA refused it.
    plain: HashSet<(usize, u8)>,
    /// A lean walk's PortInfos of switches' external ports.
    ports: VecDeque<(u64, Probe)>,
    /// Switches whose ports have been queued.
    ports_read: HashSet<usize>,
    /// Switches whose external ports wait for port 0's PortInfo (its CapabilityMask
    /// says whether the switch supports extended speeds, so they are asked with
    /// modifier bit 31 at once instead of twice).
    wait_port0: HashSet<usize>,
}

impl Walk {
    /// A walk starting at the local node (the empty route).
    #[must_use]
    pub fn new() -> Self {
        let mut out = VecDeque::new();
        out.push_back(Probe::NodeInfo {
            path: DrPath::local(),
            from: None,
        });
        Self {
            out,
            ..Self::default()
        }
    }

    /// A walk starting at the local node that reads what a topology dump needs and no
    /// more (what `ibsm-netdiscover` runs; the SM reads every port, [`Walk::new`]): a
    /// switch port whose cable was found from its other end, by a NodeInfo through that
    /// end, is not read (a link has one state, width and speed, read at the end it was
    /// explored from; [`Discovered::to_fabric`] gives the port its peer's), and a
    /// NodeInfo through a port whose cable got known meanwhile is not sent. To find
    /// more cables before their ports' turn, NodeInfos across cables go out before
    /// anything else (each after the NodeInfos on the wire when it was queued have come
    /// back: one of them may cross its cable from the other end) and switch ports'
    /// PortInfos after everything else. A switch's ports are read at once, beside its
    /// SwitchInfo (only its EnhancedPort0 is shown), and every PortInfo is asked with modifier bit 31 the first time
    /// (an SMA that refuses it is asked again without). On a tree walked from a CA that
    /// is one SMP per fact: a NodeInfo per cable, a NodeDescription per node, a SwitchInfo
    /// and port 0 of each switch, one end of each cable between switches, both ends of each CA's
    /// cable. A node answering with a GUID already seen behind an unread port is taken
    /// for that node (a [`Walk::new`] walk reads the port and, finding it Down, reports
    /// the duplicate).
    #[must_use]
    pub fn lean() -> Self {
        Self {
            lean: true,
            ..Self::new()
        }
    }

    /// A lean walk's NodeInfo out of `from` came back or failed.
    fn ni_done(&mut self, from: Option<(usize, u8)>) {
        if let Some(seq) = from.and_then(|f| self.ni_of.remove(&f)) {
            self.ni_flight.remove(&seq);
        }
    }

    fn push(&mut self, probe: Probe) {
        if !self.lean {
            self.out.push_back(probe);
            return;
        }
        match probe {
            Probe::NodeInfo { from: Some(_), .. } => {
                self.waiting.push_back((self.ni_sent, probe));
            }
            Probe::PortInfo { port, .. } if port != 0 => {
                self.ports.push_back((self.ni_sent, probe));
            }
            _ => self.out.push_back(probe),
        }
    }

    /// The next probe of a lean walk, skipping those whose answer is known by now.
    fn pop_lean(&mut self, found: &Discovered) -> Option<Probe> {
        let linked = |node: usize, port: u8| {
            found
                .nodes
                .get(node)
                .and_then(|n| n.ports.get(usize::from(port)))
                .and_then(|p| p.peer)
        };
        while let Some(&(tag, probe)) = self.waiting.front() {
            if self.ni_flight.first().is_some_and(|&s| s < tag) {
                break;
            }
            self.waiting.pop_front();
            self.explore.push_back(probe);
        }
        while let Some(probe) = self.explore.pop_front() {
            if let Probe::NodeInfo {
                from: Some((n, p)), ..
            } = probe
            {
                if linked(n, p).is_some() {
                    continue;
                }
                self.ni_flight.insert(self.ni_sent);
                self.ni_of.insert((n, p), self.ni_sent);
                self.ni_sent += 1;
            }
            return Some(probe);
        }
        if let Some(probe) = self.out.pop_front() {
            return Some(probe);
        }
        while let Some(&(tag, probe)) = self.ports.front() {
            if self.ni_flight.first().is_some_and(|&s| s < tag) {
                break;
            }
            self.ports.pop_front();
            if let Probe::PortInfo { node, port } = probe {
                let switch = found.nodes.get(node).is_some_and(FoundNode::is_switch);
                let peer_read = linked(node, port).is_some_and(|(m, q)| {
                    found
                        .nodes
                        .get(m)
                        .and_then(|n| n.ports.get(usize::from(q)))
                        .is_some_and(|p| p.info.is_some())
                });
                if switch && peer_read {
                    continue;
                }
            }
            return Some(probe);
        }
        None
    }

    /// The next probe to send, and its route and attribute modifier (a PortInfo's
    /// carries bit 31 where `found` knows the port supports extended speeds, which is
    /// remembered on the port).
    pub fn poll_probe(&mut self, found: &mut Discovered) -> Option<(Probe, DrPath, u32)> {
        let probe = if self.lean {
            self.pop_lean(found)?
        } else {
            self.out.pop_front()?
        };
        let (path, modifier) = match probe {
            Probe::NodeInfo { path, .. } => (path, 0),
            Probe::NodeDescription { node } | Probe::SwitchInfo { node } => {
                (found.nodes.get(node).map_or(DrPath::local(), |n| n.path), 0)
            }
            Probe::PortInfo { node, port } => {
                if self.lean && !self.plain.contains(&(node, port)) {
                    // Bit 31 at once: LinkSpeedExt* come back with the first answer
                    // instead of a second Get after the CapabilityMask says so (an SMA
                    // that refuses the bit is asked again without it: `failed`).
                    if let Some(p) = found
                        .nodes
                        .get_mut(node)
                        .and_then(|n| n.ports.get_mut(usize::from(port)))
                    {
                        p.ext_speeds = true;
                    }
                }
                let path = found
                    .nodes
                    .get(node)
                    .map_or(DrPath::local(), |n| n.path_for(port));
                (path, found.port_info_get(node, port))
            }
        };
        Some((probe, path, modifier))
    }

    /// Whether probes wait to be handed out.
    #[must_use]
    pub fn has_probes(&self) -> bool {
        !self.out.is_empty()
            || !self.explore.is_empty()
            || !self.waiting.is_empty()
            || !self.ports.is_empty()
    }

    /// A NodeInfo answer at `path`, reached through `from`.
    pub fn node_info(
        &mut self,
        found: &mut Discovered,
        path: DrPath,
        from: Option<(usize, u8)>,
        ni: &NodeInfo,
    ) -> Seen {
        self.ni_done(from);
        let in_port = ni.local_port_num;
        let switch = ni.node_type == NodeType::Switch;
        if let Some(&n) = found.by_guid.get(&ni.node_guid) {
            return self.node_again(found, n, path, from, ni);
        }
        // A node GUID not seen, but its port GUID held by another port: a cloned or
        // broken board.
        if let Some(d) = port_guid_taken(found, ni.port_guid, path) {
            return Seen::Duplicate(d);
        }
        let n = found.nodes.len();
        let mut ports = vec![FoundPort::default(); usize::from(ni.num_ports) + 1];
        if switch {
            for p in &mut ports {
                p.guid = ni.node_guid;
            }
            found.by_port_guid.insert(ni.port_guid, (n, 0));
        } else if let Some(p) = ports.get_mut(usize::from(in_port)) {
            p.guid = ni.port_guid;
            p.path = Some(Box::new(path));
            found.by_port_guid.insert(ni.port_guid, (n, in_port));
        }
        found.nodes.push(FoundNode {
            info: *ni,
            description: String::new(),
            path,
            switch_info: None,
            ports,
            error: None,
        });
        found.by_guid.insert(ni.node_guid, n);
        if let Some(f) = from {
            found.link(f, (n, in_port));
        }
        self.push(Probe::NodeDescription { node: n });
        if switch && self.lean {
            // Of SwitchInfo a topology dump shows only EnhancedPort0 (`enhanced port
            // 0`): asked beside the ports, which need not wait for it.
            self.push(Probe::SwitchInfo { node: n });
            self.read_ports(found, n);
        } else if switch {
            self.push(Probe::SwitchInfo { node: n });
        } else if usize::from(in_port) <= usize::from(ni.num_ports) {
            self.push(Probe::PortInfo {
                node: n,
                port: in_port,
            });
        }
        Seen::New(n)
    }

    /// A NodeInfo answer with the node GUID of node `n`: the same node by another cable
    /// (and for a CA maybe another port), or a second node with its GUID.
    fn node_again(
        &mut self,
        found: &mut Discovered,
        n: usize,
        path: DrPath,
        from: Option<(usize, u8)>,
        ni: &NodeInfo,
    ) -> Seen {
        let in_port = ni.local_port_num;
        let node = &found.nodes[n];
        let entry = node.ports.get(usize::from(in_port));
        // One node answers alike along every route, and a port has one cable: another
        // type or size, or a cable into a port whose cable is known to end elsewhere,
        // or into a port read Down (no cable), is another node. (A port read Down
        // before its peer's answer and not yet cabled then is caught when its PortInfo
        // comes: `Walk::port_info`.)
        let other_node = node.info.node_type != ni.node_type
            || node.info.num_ports != ni.num_ports
            || entry.is_none_or(|p| {
                from.is_some() && p.peer.is_some_and(|peer| Some(peer) != from)
                    || !node.is_switch() && p.guid != 0 && p.guid != ni.port_guid
                    || from.is_some() && p.info.is_some_and(|pi| pi.port_state == PortState::Down)
            });
        if other_node {
            let first = node.path;
            return Seen::Duplicate(duplicate(
                found,
                ni.node_guid,
                DuplicateKind::Node,
                first,
                path,
            ));
        }
        let is_switch = node.is_switch();
        let new_port = !is_switch && entry.is_some_and(|p| p.path.is_none());
        if new_port {
            // Another port of this CA (or another node) has this port's GUID.
            if let Some(d) = port_guid_taken(found, ni.port_guid, path) {
                return Seen::Duplicate(d);
            }
        }
        if let Some(f) = from {
            found.link(f, (n, in_port));
        }
        if new_port {
            if let Some(p) = found.nodes[n].ports.get_mut(usize::from(in_port)) {
                p.path = Some(Box::new(path));
                p.guid = ni.port_guid;
            }
            found.by_port_guid.insert(ni.port_guid, (n, in_port));
            self.push(Probe::PortInfo {
                node: n,
                port: in_port,
            });
        }
        Seen::Again(n)
    }

    /// A NodeDescription answer.
    pub fn node_description(&mut self, found: &mut Discovered, node: usize, d: &NodeDescription) {
        if let Some(n) = found.nodes.get_mut(node) {
            n.description = String::from_utf8_lossy(d.text_bytes()).into_owned();
        }
    }

    /// A SwitchInfo answer (the ports are read at [`Self::read_ports`]).
    pub fn switch_info(&mut self, found: &mut Discovered, node: usize, si: &SwitchInfo) {
        if let Some(n) = found.nodes.get_mut(node) {
            n.switch_info = Some(*si);
        }
    }

    /// Queues the PortInfo of every port of switch `node` (0..=NumPorts), once: port 0
    /// first, the others once it has answered (or failed), so that they are asked with
    /// modifier bit 31 the first time where port 0's CapabilityMask says the switch
    /// supports extended speeds (as OpenSM reads a switch's capabilities from port 0).
    pub fn read_ports(&mut self, found: &Discovered, node: usize) {
        let Some(n) = found.nodes.get(node) else {
            return;
        };
        if !self.ports_read.insert(node) {
            return;
        }
        self.push(Probe::PortInfo { node, port: 0 });
        if n.info.num_ports > 0 {
            self.wait_port0.insert(node);
        }
    }

    /// Port 0 of switch `node` answered or failed: its external ports go out.
    fn release_ports(&mut self, found: &Discovered, node: usize) {
        if !self.wait_port0.remove(&node) {
            return;
        }
        let ports = found.nodes.get(node).map_or(0, |n| n.info.num_ports);
        for port in 1..=ports {
            self.push(Probe::PortInfo { node, port });
        }
    }

    /// A PortInfo Get that got no answer at all (a caller that does not hand
    /// [`Self::failed`] an error): as there, a switch's port 0 releases its other ports.
    pub fn port_info_lost(&mut self, found: &Discovered, node: usize, port: u8) {
        if port == 0 {
            self.release_ports(found, node);
        }
    }

    /// A PortInfo answer; may queue the NodeInfo of what lies behind the port, or the
    /// same Get again with modifier bit 31.
    pub fn port_info(
        &mut self,
        found: &mut Discovered,
        node: usize,
        port: u8,
        pi: &PortInfo,
    ) -> PortSeen {
        let Some(rec) = found.nodes.get_mut(node) else {
            return PortSeen::Taken;
        };
        let (path, is_switch, local_port) = (rec.path, rec.is_switch(), rec.info.local_port_num);
        let Some(p) = rec.ports.get_mut(usize::from(port)) else {
            return PortSeen::Taken;
        };
        if !p.ext_speeds && ext_speeds_supported(pi) && !self.plain.contains(&(node, port)) {
            p.ext_speeds = true;
            self.push(Probe::PortInfo { node, port });
            if is_switch && port == 0 {
                // The capability is known now: the other ports go with bit 31.
                self.release_ports(found, node);
            }
            return PortSeen::AskedAgain;
        }

        p.info = Some(*pi);
        if is_switch && port == 0 {
            self.release_ports(found, node);
        }
        if pi.port_state == PortState::Down {
            if let Some(d) = Self::unlink_down(found, node, port) {
                return PortSeen::Duplicate(d);
            }
        }
        let Some(p) = found
            .nodes
            .get(node)
            .and_then(|n| n.ports.get(usize::from(port)))
        else {
            return PortSeen::Taken;
        };
        let linked = p.peer.is_some();
        // Out of switch ports, and out of the local CA's own port (the root, reached by
        // the empty route).
        let explore = if is_switch {
            port != 0
        } else {
            path.is_local() && port == local_port
        };
        // A port Disabled, Polling or asleep has no link whatever its LinkState says
        // (ibsim leaves that as it was when a port is disabled or enabled again); an
        // SMP across it would be lost.
        let up = matches!(
            pi.port_state,
            PortState::Init | PortState::Armed | PortState::Active
        ) && !matches!(
            pi.port_phys_state,
            PhysPortState::Disabled | PhysPortState::Polling | PhysPortState::Sleep
        );
        if explore && up && !linked && path.hops() < MAX_HOPS {
            if let Ok(child) = path.child(port) {
                self.push(Probe::NodeInfo {
                    path: child,
                    from: Some((node, port)),
                });
            }
        }
        PortSeen::Taken
    }

    /// Port `port` of `node` reads Down but has a cable in the model: the node at the
    /// other end reached a second node with this node's GUID through it (a Down port
    /// carries no SMP), which was taken for this one. Takes the cable out and records
    /// the duplicate, with the route that reached the second node.
    fn unlink_down(found: &mut Discovered, node: usize, port: u8) -> Option<Duplicate> {
        let n = found.nodes.get(node)?;
        if !n.is_switch() && n.path.is_local() {
            return None;
        }
        let (peer, pp) = n.ports.get(usize::from(port))?.peer?;
        let (guid, first) = (n.info.node_guid, n.path);
        let via = found.nodes.get(peer)?;
        let second = via.path_for(pp).child(pp).ok()?;
        for (a, b) in [(node, port), (peer, pp)] {
            if let Some(p) = found
                .nodes
                .get_mut(a)
                .and_then(|n| n.ports.get_mut(usize::from(b)))
            {
                p.peer = None;
            }
        }
        Some(duplicate(found, guid, DuplicateKind::Node, first, second))
    }

    /// A probe that got no usable answer. A switch whose SwitchInfo failed still needs
    /// [`Self::read_ports`].
    pub fn failed(&mut self, found: &mut Discovered, probe: &Probe, error: SmpError) {
        match *probe {
            Probe::NodeInfo { path, from } => {
                self.ni_done(from);
                found.unreachable.push((path, error));
            }
            Probe::NodeDescription { node } | Probe::SwitchInfo { node } => {
                if let Some(n) = found.nodes.get_mut(node) {
                    n.error = Some(Box::new(error));
                }
            }
            Probe::PortInfo { node, port } => {
                let refused = matches!(error, SmpError::Status { .. });
                if self.lean && refused && self.plain.insert((node, port)) {
                    if let Some(p) = found
                        .nodes
                        .get_mut(node)
                        .and_then(|n| n.ports.get_mut(usize::from(port)))
                    {
                        p.ext_speeds = false;
                    }
                    self.push(*probe);
                    return;
                }
                self.port_info_lost(found, node, port);
                if let Some(p) = found
                    .nodes
                    .get_mut(node)
                    .and_then(|n| n.ports.get_mut(usize::from(port)))
                {
                    p.error = Some(Box::new(error));
                }
            }
        }
    }
}

/// The duplicate, recorded, when a port already found has `port_guid`: the port met
/// at `path` is then left out.
fn port_guid_taken(found: &mut Discovered, port_guid: u64, path: DrPath) -> Option<Duplicate> {
    let &(m, q) = found.by_port_guid.get(&port_guid)?;
    let first = found.nodes[m].path_for(q);
    Some(duplicate(
        found,
        port_guid,
        DuplicateKind::Port,
        first,
        path,
    ))
}

fn duplicate(
    found: &mut Discovered,
    guid: u64,
    kind: DuplicateKind,
    first: DrPath,
    second: DrPath,
) -> Duplicate {
    let d = Duplicate {
        guid,
        kind,
        first,
        second,
    };
    found.duplicates.push(d);
    d
}

/// A [`Walk`] driven by an [`SmpClient`]. As a [`SansIo`] core it has no events (what
/// it finds is [`Self::found`]; MADs that answer no probe are dropped) and is idle once
/// the walk is over ([`Self::is_done`]).
#[derive(Debug)]
pub struct Discovery {
    walk: Walk,
    found: Discovered,
    smps: SmpClient<Probe>,
}

impl Discovery {
    /// A discovery from the local port with `cfg` (window, retries, M_Key).
    #[must_use]
    pub fn new(cfg: SmpConfig) -> Self {
        Self {
            walk: Walk::new(),
            found: Discovered::default(),
            smps: SmpClient::new(cfg),
        }
    }

    /// A discovery from the local port that reads only what a topology dump needs
    /// ([`Walk::lean`]).
    #[must_use]
    pub fn lean(cfg: SmpConfig) -> Self {
        Self {
            walk: Walk::lean(),
            ..Self::new(cfg)
        }
    }

    fn submit(&mut self) {
        while let Some((probe, path, modifier)) = self.walk.poll_probe(&mut self.found) {
            let target = Target::Route(path);
            let r = match probe {
                Probe::NodeInfo { .. } => self.smps.get::<NodeInfo>(target, modifier, probe),
                Probe::NodeDescription { .. } => {
                    self.smps.get::<NodeDescription>(target, modifier, probe)
                }
                Probe::SwitchInfo { .. } => self.smps.get::<SwitchInfo>(target, modifier, probe),
                Probe::PortInfo { .. } => self.smps.get::<PortInfo>(target, modifier, probe),
            };
            if let Err(e) = r {
                self.fail(&probe, e);
            }
        }
    }

    fn fail(&mut self, probe: &Probe, e: SmpError) {
        self.walk.failed(&mut self.found, probe, e);
        if let Probe::SwitchInfo { node } = *probe {
            // Nothing to wait for: the ports are read all the same.
            self.walk.read_ports(&self.found, node);
        }
    }

    fn collect(&mut self) {
        while let Some(ev) = self.smps.poll_event() {
            let probe = match &ev {
                SmpEvent::Done { cookie, .. } | SmpEvent::Failed { cookie, .. } => *cookie,
                SmpEvent::Unsolicited(_) => continue,
            };
            let (walk, found) = (&mut self.walk, &mut self.found);
            let r = match probe {
                Probe::NodeInfo { path, from } => ev.decode::<NodeInfo>().map(|ni| {
                    walk.node_info(found, path, from, &ni);
                }),
                Probe::NodeDescription { node } => ev
                    .decode::<NodeDescription>()
                    .map(|d| walk.node_description(found, node, &d)),
                Probe::SwitchInfo { node } => ev.decode::<SwitchInfo>().map(|si| {
                    walk.switch_info(found, node, &si);
                    walk.read_ports(found, node);
                }),
                Probe::PortInfo { node, port } => ev.decode::<PortInfo>().map(|pi| {
                    walk.port_info(found, node, port, &pi);
                }),
            };
            if let Err(e) = r {
                self.fail(&probe, e);
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

    /// What was found so far.
    #[must_use]
    pub fn found(&self) -> &Discovered {
        &self.found
    }

    /// Takes the model.
    #[must_use]
    pub fn into_found(self) -> Discovered {
        self.found
    }
}

crate::sans_io_over_smps!(Discovery, before_transmit: submit, idle: is_done);

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
    crate::run_to_idle(&mut d, transport, until)?;
    Ok(d.into_found())
}

#[cfg(test)]
mod tests;
