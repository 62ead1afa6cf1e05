//! The [`Fabric`] graph: nodes with dense port tables, links between (node, port) pairs.

use std::collections::BTreeMap;

use petgraph::Undirected;
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableGraph};

use crate::error::FabricError;
use crate::types::{
    ActiveSpeed, ActiveWidth, Endpoint, Guid, LinkId, LinkState, NodeId, NodeKind, PortNum,
};

/// Sentinel for "no peer" in the packed port table.
const NO_PEER: u32 = u32::MAX;

/// The highest port count a node may have (port 255 is reserved by the spec).
pub const MAX_PORTS: PortNum = 254;

/// One port of a node, with what is known about it and (privately) its peer.
///
/// Ports live in a dense per-node table indexed by port number, so the peer of any port is
/// one array access away. 24 bytes each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// Port GUID. A switch's external ports share the switch's port-0 GUID; CA and router
    /// ports each have their own.
    pub guid: Guid,
    peer_node: u32,
    link: u32,
    /// Base LID, 0 when not assigned or not known. On a switch only port 0 has a LID.
    pub lid: u16,
    peer_port: PortNum,
    /// LID mask control (0..=7): the port answers to `lid .. lid + 2^lmc`.
    pub lmc: u8,
    /// Port state, when known.
    pub state: LinkState,
    /// Active link width, when known.
    pub width: ActiveWidth,
    /// Active link speed, when known.
    pub speed: ActiveSpeed,
}

impl Port {
    pub(crate) fn new(guid: Guid) -> Self {
        Port {
            guid,
            peer_node: NO_PEER,
            link: NO_PEER,
            lid: 0,
            peer_port: 0,
            lmc: 0,
            state: LinkState::Unknown,
            width: ActiveWidth::Unknown,
            speed: ActiveSpeed::Unknown,
        }
    }

    /// The (node, port) at the other end of this port's link, if it is connected.
    #[must_use]
    pub fn peer(&self) -> Option<Endpoint> {
        (self.peer_node != NO_PEER).then_some(Endpoint {
            node: NodeId(self.peer_node),
            port: self.peer_port,
        })
    }

    /// The link through this port, if it is connected.
    #[must_use]
    pub fn link(&self) -> Option<LinkId> {
        (self.link != NO_PEER).then_some(LinkId(self.link))
    }

    /// Whether a link is attached to this port.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.peer_node != NO_PEER
    }
}

/// What a new node looks like; see [`Fabric::add_node`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    /// Node GUID (unique within the fabric).
    pub guid: Guid,
    /// Switch, CA or router.
    pub node_type: NodeKind,
    /// Number of external ports (1..=254).
    pub num_ports: PortNum,
    /// NodeDescription (up to 64 bytes on the wire; not enforced here).
    pub description: String,
    /// System image GUID; 0 means "same as the node GUID".
    pub system_image_guid: Guid,
    /// Vendor ID (24 bits).
    pub vendor_id: u32,
    /// Device ID.
    pub device_id: u16,
    /// Port GUIDs of ports 1..=num_ports for CAs and routers; `None` derives them as
    /// `node GUID + port number`. Ignored for switches (all ports use the node GUID).
    pub port_guids: Option<Vec<Guid>>,
}

impl NodeSpec {
    /// A spec with the given identity and defaults for the rest (no vendor/device IDs,
    /// system image GUID = node GUID, derived port GUIDs).
    #[must_use]
    pub fn new(
        guid: Guid,
        node_type: NodeKind,
        num_ports: PortNum,
        description: impl Into<String>,
    ) -> Self {
        NodeSpec {
            guid,
            node_type,
            num_ports,
            description: description.into(),
            system_image_guid: Guid(0),
            vendor_id: 0,
            device_id: 0,
            port_guids: None,
        }
    }

    /// Shorthand for a switch spec.
    #[must_use]
    pub fn switch(guid: u64, num_ports: PortNum, description: impl Into<String>) -> Self {
        Self::new(Guid(guid), NodeKind::Switch, num_ports, description)
    }

    /// Shorthand for a router spec.
    #[must_use]
    pub fn router(guid: u64, num_ports: PortNum, description: impl Into<String>) -> Self {
        Self::new(Guid(guid), NodeKind::Router, num_ports, description)
    }

    /// Shorthand for a CA spec.
    #[must_use]
    pub fn ca(guid: u64, num_ports: PortNum, description: impl Into<String>) -> Self {
        Self::new(Guid(guid), NodeKind::Ca, num_ports, description)
    }
}

/// A node: identity, descriptive attributes and its dense port table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    guid: Guid,
    node_type: NodeKind,
    /// NodeDescription.
    pub description: String,
    /// System image GUID.
    pub system_image_guid: Guid,
    /// Vendor ID (24 bits).
    pub vendor_id: u32,
    /// Device ID.
    pub device_id: u16,
    /// Switches: port 0 is an enhanced port (SwitchInfo.EnhancedPort0); what
    /// `ibnetdiscover` prints as `enhanced port 0` rather than `base port 0`.
    pub enhanced_port0: bool,
    /// Index = port number; entry 0 is the switch management port (for CAs and routers
    /// it exists but is never used).
    ports: Box<[Port]>,
}

impl Node {
    /// Node GUID.
    #[must_use]
    pub fn guid(&self) -> Guid {
        self.guid
    }

    /// Node type.
    #[must_use]
    pub fn node_type(&self) -> NodeKind {
        self.node_type
    }

    /// Whether this is a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.node_type == NodeKind::Switch
    }

    /// Number of external ports.
    #[must_use]
    pub fn num_ports(&self) -> PortNum {
        // The table holds num_ports + 1 entries and num_ports <= MAX_PORTS.
        PortNum::try_from(self.ports.len() - 1).unwrap_or(MAX_PORTS)
    }

    /// Port `n`: 0 only on switches, 1..=num_ports on every node.
    #[must_use]
    pub fn port(&self, n: PortNum) -> Option<&Port> {
        if n == 0 && self.node_type != NodeKind::Switch {
            return None;
        }
        self.ports.get(usize::from(n))
    }

    /// Mutable access to port `n` (attributes only: links change through the fabric).
    pub fn port_mut(&mut self, n: PortNum) -> Option<&mut Port> {
        if n == 0 && self.node_type != NodeKind::Switch {
            return None;
        }
        self.ports.get_mut(usize::from(n))
    }

    /// External ports 1..=num_ports with their numbers.
    pub fn ports(&self) -> impl Iterator<Item = (PortNum, &Port)> + '_ {
        self.ports
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, p)| (i as PortNum, p))
    }

    /// The node's LID: port 0's for a switch, port 1's (the first port with a LID) for a
    /// CA or router. 0 when none is known.
    #[must_use]
    pub fn lid(&self) -> u16 {
        if self.is_switch() {
            self.ports[0].lid
        } else {
            self.ports()
                .map(|(_, p)| p.lid)
                .find(|&l| l != 0)
                .unwrap_or(0)
        }
    }

    /// Number of connected external ports.
    #[must_use]
    pub fn degree(&self) -> usize {
        self.ports().filter(|(_, p)| p.is_connected()).count()
    }
}

/// A link (cable) between two ports. `a` is the end with the lower (GUID, port) at creation
/// time, so printing is stable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// One end.
    pub a: Endpoint,
    /// The other end.
    pub b: Endpoint,
}

impl Link {
    /// The end opposite `node`/`port`, or `None` if that is not one of this link's ends.
    #[must_use]
    pub fn other(&self, end: Endpoint) -> Option<Endpoint> {
        if self.a == end {
            Some(self.b)
        } else if self.b == end {
            Some(self.a)
        } else {
            None
        }
    }
}

/// The shared picture of a subnet (ARCHITECTURE.md principle 3).
///
/// * Storage: a petgraph [`StableGraph`] (nodes carry [`Node`], edges carry [`Link`]) so
///   IDs survive removals and petgraph algorithms can run on [`Fabric::graph`].
/// * Beside it: a GUID -> [`NodeId`] ordered map, and in every node a dense port table
///   holding the peer (node, port) and link of each port, so "who is behind port p" is
///   O(1).
/// * Iteration order is by GUID everywhere ([`Fabric::nodes`], [`Fabric::links`], the
///   [`Csr`](crate::Csr) snapshot), never by insertion order, so results computed from
///   two fabrics with the same content are identical.
///
/// Parallel links (several cables between the same two switches) are normal; self-loops
/// (a node cabled to itself) are rejected.
#[derive(Clone, Debug, Default)]
pub struct Fabric {
    graph: StableGraph<Node, Link, Undirected, u32>,
    by_guid: BTreeMap<Guid, NodeId>,
    switches: usize,
}

impl Fabric {
    /// An empty fabric.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty fabric with room for `nodes` nodes and `links` links.
    #[must_use]
    pub fn with_capacity(nodes: usize, links: usize) -> Self {
        Fabric {
            graph: StableGraph::with_capacity(nodes, links),
            by_guid: BTreeMap::new(),
            switches: 0,
        }
    }

    /// The underlying petgraph graph, for running petgraph algorithms directly.
    #[must_use]
    pub fn graph(&self) -> &StableGraph<Node, Link, Undirected, u32> {
        &self.graph
    }

    /// One more than the largest [`NodeId::index`] in use: the length of a dense
    /// per-node side table.
    #[must_use]
    pub fn node_bound(&self) -> usize {
        use petgraph::visit::NodeIndexable;
        self.graph.node_bound()
    }

    /// Adds a node.
    ///
    /// # Errors
    /// [`FabricError::DuplicateGuid`] if the GUID is taken, [`FabricError::BadPortCount`]
    /// for 0 or more than 254 ports or a `port_guids` list of the wrong length.
    pub fn add_node(&mut self, spec: NodeSpec) -> Result<NodeId, FabricError> {
        if spec.num_ports == 0 || spec.num_ports > MAX_PORTS {
            return Err(FabricError::BadPortCount {
                guid: spec.guid,
                num_ports: usize::from(spec.num_ports),
            });
        }
        if self.by_guid.contains_key(&spec.guid) {
            return Err(FabricError::DuplicateGuid(spec.guid));
        }
        let n = usize::from(spec.num_ports);
        let mut ports = Vec::with_capacity(n + 1);
        ports.push(Port::new(spec.guid));
        match (&spec.port_guids, spec.node_type) {
            (_, NodeKind::Switch) => ports.extend((1..=n).map(|_| Port::new(spec.guid))),
            (Some(list), _) => {
                if list.len() != n {
                    return Err(FabricError::BadPortCount {
                        guid: spec.guid,
                        num_ports: list.len(),
                    });
                }
                ports.extend(list.iter().map(|&g| Port::new(g)));
            }
            (None, _) => {
                ports.extend((1..=n as u64).map(|i| Port::new(Guid(spec.guid.0.wrapping_add(i)))));
            }
        }
        let node = Node {
            guid: spec.guid,
            node_type: spec.node_type,
            description: spec.description,
            system_image_guid: if spec.system_image_guid.0 == 0 {
                spec.guid
            } else {
                spec.system_image_guid
            },
            vendor_id: spec.vendor_id,
            device_id: spec.device_id,
            enhanced_port0: false,
            ports: ports.into_boxed_slice(),
        };
        let idx = self.graph.add_node(node);
        let id = NodeId(idx.index() as u32);
        self.by_guid.insert(spec.guid, id);
        if spec.node_type == NodeKind::Switch {
            self.switches += 1;
        }
        Ok(id)
    }

    /// Removes a node and every link attached to it; returns the node (its port table
    /// shows no peers).
    ///
    /// # Errors
    /// [`FabricError::UnknownNode`] if the ID is not in this fabric.
    pub fn remove_node(&mut self, id: NodeId) -> Result<Node, FabricError> {
        let num_ports = self
            .node(id)
            .ok_or(FabricError::UnknownNode(id))?
            .num_ports();
        for p in 1..=num_ports {
            if self.port_peer(id, p).is_some() {
                self.disconnect(id, p)?;
            }
        }
        let node = self
            .graph
            .remove_node(NodeIndex::new(id.index()))
            .ok_or(FabricError::UnknownNode(id))?;
        self.by_guid.remove(&node.guid);
        if node.is_switch() {
            self.switches -= 1;
        }
        Ok(node)
    }

    fn check_port(&self, id: NodeId, port: PortNum) -> Result<&Port, FabricError> {
        let node = self.node(id).ok_or(FabricError::UnknownNode(id))?;
        if port == 0 || port > node.num_ports() {
            return Err(FabricError::PortOutOfRange {
                guid: node.guid,
                port,
                num_ports: node.num_ports(),
            });
        }
        Ok(&node.ports[usize::from(port)])
    }

    /// Cables port `pa` of `a` to port `pb` of `b`.
    ///
    /// # Errors
    /// [`FabricError::UnknownNode`], [`FabricError::PortOutOfRange`] (0 or above the node's
    /// port count), [`FabricError::PortInUse`] (either end already cabled),
    /// [`FabricError::SelfLoop`] (`a == b`).
    pub fn connect(
        &mut self,
        a: NodeId,
        pa: PortNum,
        b: NodeId,
        pb: PortNum,
    ) -> Result<LinkId, FabricError> {
        let ga = self.node(a).ok_or(FabricError::UnknownNode(a))?.guid;
        if a == b {
            return Err(FabricError::SelfLoop { guid: ga });
        }
        for (id, p) in [(a, pa), (b, pb)] {
            let port = self.check_port(id, p)?;
            if port.is_connected() {
                return Err(FabricError::PortInUse {
                    guid: self.graph[NodeIndex::new(id.index())].guid,
                    port: p,
                });
            }
        }
        let gb = self.graph[NodeIndex::new(b.index())].guid;
        let (ea, eb) = {
            let x = Endpoint { node: a, port: pa };
            let y = Endpoint { node: b, port: pb };
            if (ga, pa) <= (gb, pb) { (x, y) } else { (y, x) }
        };
        let e = self.graph.add_edge(
            NodeIndex::new(a.index()),
            NodeIndex::new(b.index()),
            Link { a: ea, b: eb },
        );
        let link = e.index() as u32;
        for (me, other) in [(ea, eb), (eb, ea)] {
            let port = &mut self.graph[NodeIndex::new(me.node.index())].ports[usize::from(me.port)];
            port.peer_node = other.node.0;
            port.peer_port = other.port;
            port.link = link;
        }
        Ok(LinkId(link))
    }

    /// Removes the link through `port` of `id`; returns it.
    ///
    /// # Errors
    /// [`FabricError::UnknownNode`], [`FabricError::PortOutOfRange`],
    /// [`FabricError::NotConnected`] when nothing is cabled there.
    pub fn disconnect(&mut self, id: NodeId, port: PortNum) -> Result<Link, FabricError> {
        let p = self.check_port(id, port)?;
        let link = p.link().ok_or_else(|| FabricError::NotConnected {
            guid: self.graph[NodeIndex::new(id.index())].guid,
            port,
        })?;
        self.remove_link(link)
    }

    /// Removes a link by ID; returns it.
    ///
    /// # Errors
    /// [`FabricError::UnknownLink`] if it is not in this fabric.
    pub fn remove_link(&mut self, link: LinkId) -> Result<Link, FabricError> {
        let l = self
            .graph
            .remove_edge(EdgeIndex::new(link.index()))
            .ok_or(FabricError::UnknownLink(link))?;
        for end in [l.a, l.b] {
            let port =
                &mut self.graph[NodeIndex::new(end.node.index())].ports[usize::from(end.port)];
            port.peer_node = NO_PEER;
            port.peer_port = 0;
            port.link = NO_PEER;
        }
        Ok(l)
    }

    /// The node with this ID.
    #[must_use]
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.graph.node_weight(NodeIndex::new(id.index()))
    }

    /// Mutable access to a node's attributes and port attributes (not its identity or
    /// links).
    pub fn node_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.graph.node_weight_mut(NodeIndex::new(id.index()))
    }

    /// The node with this GUID.
    #[must_use]
    pub fn node_by_guid(&self, guid: Guid) -> Option<NodeId> {
        self.by_guid.get(&guid).copied()
    }

    /// Port `port` of node `id`.
    #[must_use]
    pub fn port(&self, id: NodeId, port: PortNum) -> Option<&Port> {
        self.node(id)?.port(port)
    }

    /// Who is cabled to `port` of `id`: O(1).
    #[must_use]
    pub fn port_peer(&self, id: NodeId, port: PortNum) -> Option<Endpoint> {
        self.port(id, port)?.peer()
    }

    /// The node cabled to `port` of `id`.
    #[must_use]
    pub fn neighbour(&self, id: NodeId, port: PortNum) -> Option<NodeId> {
        self.port_peer(id, port).map(|e| e.node)
    }

    /// The link with this ID.
    #[must_use]
    pub fn link(&self, id: LinkId) -> Option<&Link> {
        self.graph.edge_weight(EdgeIndex::new(id.index()))
    }

    /// Number of nodes.
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    /// Number of switches.
    #[must_use]
    pub fn switch_count(&self) -> usize {
        self.switches
    }

    /// Number of CAs and routers.
    #[must_use]
    pub fn terminal_count(&self) -> usize {
        self.node_count() - self.switches
    }

    /// Number of links.
    #[must_use]
    pub fn link_count(&self) -> usize {
        self.graph.edge_count()
    }

    /// All nodes in GUID order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.by_guid
            .values()
            .map(|&id| (id, &self.graph[NodeIndex::new(id.index())]))
    }

    /// Node IDs in GUID order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.by_guid.values().copied()
    }

    /// Switches in GUID order.
    pub fn switches(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes()
            .filter(|(_, n)| n.node_type == NodeKind::Switch)
    }

    /// CAs in GUID order.
    pub fn cas(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes().filter(|(_, n)| n.node_type == NodeKind::Ca)
    }

    /// Routers in GUID order.
    pub fn routers(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes()
            .filter(|(_, n)| n.node_type == NodeKind::Router)
    }

    /// Links of one node in port order: `(local port, peer, link)`.
    pub fn links_of(&self, id: NodeId) -> impl Iterator<Item = (PortNum, Endpoint, LinkId)> + '_ {
        self.node(id)
            .into_iter()
            .flat_map(Node::ports)
            .filter_map(|(i, p)| Some((i, p.peer()?, p.link()?)))
    }

    /// Every link once, in a canonical order: by the (GUID, port) of its lower end.
    pub fn links(&self) -> impl Iterator<Item = (LinkId, &Link)> + '_ {
        self.nodes().flat_map(move |(_, node)| {
            node.ports().filter_map(move |(p, port)| {
                let peer = port.peer()?;
                let peer_guid = self.graph[NodeIndex::new(peer.node.index())].guid;
                if (node.guid, p) < (peer_guid, peer.port) {
                    let l = port.link()?;
                    Some((l, &self.graph[EdgeIndex::new(l.index())]))
                } else {
                    None
                }
            })
        })
    }

    /// Approximate heap bytes held by the fabric: graph node and edge slots (with
    /// petgraph's per-slot links), port tables, descriptions, and the GUID index (B-tree
    /// nodes estimated at 2x the key/value bytes).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        use core::mem::size_of;
        // petgraph keeps `Option<weight>` plus two next-edge indices per node slot, and two
        // next-edge plus two endpoint indices per edge slot.
        let node_slot = size_of::<Option<Node>>() + 2 * size_of::<u32>();
        let edge_slot = size_of::<Option<Link>>() + 4 * size_of::<u32>();
        let per_node: usize = self
            .graph
            .node_weights()
            .map(|n| n.ports.len() * size_of::<Port>() + n.description.capacity())
            .sum();
        self.node_bound() * node_slot
            + self.graph.edge_count() * edge_slot
            + per_node
            + self.by_guid.len() * 2 * (size_of::<Guid>() + size_of::<NodeId>())
    }

    /// Removes `fraction` of the switch-to-switch cables at random (by `seed`), keeping
    /// the fabric connected; returns how many went. Same as [`crate::generate::degrade`].
    ///
    /// # Errors
    /// [`FabricError::BadParameters`] if `fraction` is outside 0.0..=1.0.
    pub fn degrade(&mut self, fraction: f64, seed: u64) -> Result<usize, FabricError> {
        crate::generate::degrade(self, fraction, seed)
    }

    /// The node GUID of an ID (convenience for messages); `Guid(0)` if unknown.
    #[must_use]
    pub fn guid_of(&self, id: NodeId) -> Guid {
        self.node(id).map_or(Guid(0), |n| n.guid)
    }
}

#[cfg(test)]
mod tests;
