//! What a discovery found: nodes, ports and cables as their SMAs answered, each with a
//! directed route to reach it, and the [`Fabric`] built from them. The one model of a
//! discovered subnet in the workspace: the SM engine keeps its sweep in it too (its
//! P_Key tables and SwitchInfo included).

use std::collections::HashMap;

use ibsm_topology::{Fabric, FabricError, Guid, NodeId, NodeKind, NodeSpec};
use ibsm_wire::{CapabilityMask, DrPath, NodeInfo, NodeType, PortInfo, PortState, SwitchInfo};

use crate::smp::SmpError;

/// A port as discovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoundPort {
    /// Port GUID (a switch's ports all carry its node GUID; a CA port not reached is 0).
    pub guid: u64,
    /// For CA and router ports: the route that enters the node through this port (each
    /// port of a multi-port CA has its own); `None` for a port not reached, and always
    /// for switch ports (a switch is reached at its node's route). Boxed: most ports are
    /// a switch's, and 65 bytes on each of them would be a fifth of a large model.
    pub path: Option<Box<DrPath>>,
    /// Its PortInfo, once read.
    pub info: Option<PortInfo>,
    /// The other end of its cable, once known.
    pub peer: Option<(usize, u8)>,
    /// The P_Key table, for a caller that reads it (entries in index order; empty: not
    /// read). The walk itself never asks for it; the SM does (CA ports, switch port 0,
    /// switch ports that enforce partitions).
    pub pkeys: Vec<u16>,
    /// The last PortInfo Get of this port set attribute-modifier bit 31
    /// (SMSupportExtendedSpeeds), so `info` holds the LinkSpeedExt* fields.
    pub ext_speeds: bool,
    /// Why its PortInfo could not be read (boxed: rare, and the SM keeps a model of
    /// every port of its subnet).
    pub error: Option<Box<SmpError>>,
}

/// A node as discovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoundNode {
    /// Its NodeInfo (from the first route that reached it).
    pub info: NodeInfo,
    /// Its NodeDescription as the node holds it (up to the first NUL, invalid UTF-8
    /// replaced); [`crate::nodemap::clean_description`] gives the form the diags print.
    pub description: String,
    /// The route it was first reached by.
    pub path: DrPath,
    /// Its SwitchInfo (switches), once read.
    pub switch_info: Option<SwitchInfo>,
    /// Ports 0..=NumPorts.
    pub ports: Vec<FoundPort>,
    /// Why its NodeDescription or SwitchInfo could not be read.
    pub error: Option<Box<SmpError>>,
}

impl FoundNode {
    /// Whether it is a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::Switch
    }

    /// The route to ask `port`'s attributes along: a switch is always reached at its
    /// port 0's SMA; a CA port through its own route when known.
    #[must_use]
    pub fn path_for(&self, port: u8) -> DrPath {
        if self.is_switch() {
            return self.path;
        }
        self.ports
            .get(usize::from(port))
            .and_then(|p| p.path.as_deref().copied())
            .unwrap_or(self.path)
    }

    /// The GUID whose M_Key guards an SMP to `port`: a switch has one key (its node
    /// GUID's, port 0); a CA port its own, and a CA's node-wide attributes (port 0) go
    /// through the port it was reached by. 0 for a port the node does not have.
    #[must_use]
    pub fn key_guid(&self, port: u8) -> u64 {
        if self.is_switch() {
            return self.info.node_guid;
        }
        let p = if port == 0 {
            self.info.local_port_num
        } else {
            port
        };
        self.ports.get(usize::from(p)).map_or(0, |r| r.guid)
    }
}

/// Whether a port advertises IsExtendedSpeedsSupported (its LinkSpeedExt* fields mean
/// something when asked for with modifier bit 31).
#[must_use]
pub fn ext_speeds_supported(pi: &PortInfo) -> bool {
    pi.capability_mask
        .contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED)
}

/// What kind of GUID two answers shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DuplicateKind {
    /// A node GUID: a second node (another type or port count, or a cable into a port
    /// whose cable is known to end elsewhere).
    Node,
    /// A port GUID another port already has.
    Port,
}

/// Two nodes or ports that answered with one GUID. The one reached first stays in the
/// model; the other is left out (not linked, not explored, not configured).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Duplicate {
    /// The GUID both answered with.
    pub guid: u64,
    /// Node or port GUID.
    pub kind: DuplicateKind,
    /// The route to the one in the model (for a port: the route entering through it).
    pub first: DrPath,
    /// The route that reached the other.
    pub second: DrPath,
}

/// What a discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    /// Nodes in the order they were found (the local node first).
    pub nodes: Vec<FoundNode>,
    /// Node GUID -> index.
    pub by_guid: HashMap<u64, usize>,
    /// Port GUID -> (node, port) of the port that holds it (switches: port 0).
    pub by_port_guid: HashMap<u64, (usize, u8)>,
    /// NodeInfo probes that failed (a route nobody answered): the route and why.
    pub unreachable: Vec<(DrPath, SmpError)>,
    /// GUIDs that two nodes or ports answered with, in the order they were seen.
    pub duplicates: Vec<Duplicate>,
}

impl Discovered {
    /// Records a cable between two ports (idempotent).
    pub fn link(&mut self, a: (usize, u8), b: (usize, u8)) {
        for ((n, p), other) in [(a, b), (b, a)] {
            if let Some(port) = self
                .nodes
                .get_mut(n)
                .and_then(|node| node.ports.get_mut(usize::from(p)))
            {
                port.peer = Some(other);
            }
        }
    }

    /// Number of switches.
    #[must_use]
    pub fn switch_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_switch()).count()
    }

    /// Number of cables (each counted once).
    #[must_use]
    pub fn link_count(&self) -> usize {
        self.links().count()
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

    /// The attribute modifier of a PortInfo Get of (`node`, `port`) now: the port number,
    /// with bit 31 (SMSupportExtendedSpeeds) where the port, or its switch's port 0, is
    /// known to support extended speeds. Remembered on the port ([`FoundPort::ext_speeds`])
    /// so that its answer can be told apart from one without the bit.
    pub fn port_info_get(&mut self, node: usize, port: u8) -> u32 {
        let Some(rec) = self.nodes.get_mut(node) else {
            return u32::from(port);
        };
        let has = |p: &FoundPort| p.ext_speeds || p.info.as_ref().is_some_and(ext_speeds_supported);
        let ext = rec.ports.get(usize::from(port)).is_some_and(has)
            || rec.is_switch() && rec.ports.first().is_some_and(has);
        if let Some(p) = rec.ports.get_mut(usize::from(port)) {
            p.ext_speeds = ext;
        }
        ibsm_wire::attr::modifier::PortMod {
            port,
            sm_supports_extended_speeds: ext,
        }
        .encode()
    }

    /// The fabric with every port's LID and LMC as read: see [`Self::to_fabric_with`].
    ///
    /// # Errors
    /// As [`Self::to_fabric_with`].
    pub fn to_fabric(&self) -> Result<Fabric, FabricError> {
        self.to_fabric_with(|p| p.info.map(|i| (i.lid, i.lmc)))
            .map(|(f, _)| f)
    }

    /// The fabric: nodes with their GUIDs, types, descriptions and vendor data, every
    /// port's state, width and speed as read (the extended speeds, FDR to XDR,
    /// included), every cable, and the LIDs `lid_of` gives the ports that hold one
    /// (switch port 0, CA and router ports). Also our node index -> fabric node id.
    ///
    /// # Errors
    /// [`FabricError`] when the answers contradict each other (a cable on a port
    /// beyond NumPorts, a GUID twice in a model built by hand).
    pub fn to_fabric_with(
        &self,
        lid_of: impl Fn(&FoundPort) -> Option<(u16, u8)>,
    ) -> Result<(Fabric, Vec<NodeId>), FabricError> {
        let mut fabric = Fabric::with_capacity(self.nodes.len(), self.nodes.len() * 2);
        let mut ids = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let node_type = match n.info.node_type {
                NodeType::Switch => NodeKind::Switch,
                NodeType::Router => NodeKind::Router,
                _ => NodeKind::Ca,
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
            if node_type != NodeKind::Switch {
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
            node.enhanced_port0 = n.switch_info.is_some_and(|si| si.enhanced_port0);
            for (p, rec) in n.ports.iter().enumerate() {
                let Ok(p) = u8::try_from(p) else { continue };
                let Some(port) = node.port_mut(p) else {
                    continue;
                };
                // A port not read because its cable was found from the other end
                // (`Walk::lean`) has the link's state, width and speed: its peer's.
                let info = rec.info.as_ref().or_else(|| {
                    let (m, q) = rec.peer.filter(|_| rec.error.is_none())?;
                    self.nodes.get(m)?.ports.get(usize::from(q))?.info.as_ref()
                });
                if let Some(info) = info {
                    port.state = topo_state(info.port_state);
                    port.speed = topo_speed(info);
                    port.width = topo_width(info);
                }
                // The LID of a switch lives on port 0; its external ports have none.
                if !n.is_switch() && p != 0 || n.is_switch() && p == 0 {
                    if let Some((lid, lmc)) = lid_of(rec) {
                        port.lid = lid;
                        port.lmc = lmc;
                    }
                }
            }
            ids.push(id);
        }
        for ((a, pa), (b, pb)) in self.links() {
            if a != b {
                fabric.connect(ids[a], pa, ids[b], pb)?;
            }
        }
        Ok((fabric, ids))
    }
}

fn topo_state(s: PortState) -> ibsm_topology::LinkState {
    match s {
        PortState::Down => ibsm_topology::LinkState::Down,
        PortState::Init => ibsm_topology::LinkState::Init,
        PortState::Armed => ibsm_topology::LinkState::Armed,
        PortState::Active | PortState::ActiveDefer => ibsm_topology::LinkState::Active,
        _ => ibsm_topology::LinkState::Unknown,
    }
}

/// The model's speed of a port from its PortInfo: the lane rate in use, so an
/// extended speed (LinkSpeedExtActive, or XDR in LinkSpeedExtActive2) wins over
/// LinkSpeedActive.
fn topo_speed(pi: &PortInfo) -> ibsm_topology::ActiveSpeed {
    match pi.active_lane_mbps() {
        Some(2_500) => ibsm_topology::ActiveSpeed::Sdr,
        Some(5_000) => ibsm_topology::ActiveSpeed::Ddr,
        Some(10_000) => ibsm_topology::ActiveSpeed::Qdr,
        Some(14_062) => ibsm_topology::ActiveSpeed::Fdr,
        Some(25_781) => ibsm_topology::ActiveSpeed::Edr,
        Some(53_125) => ibsm_topology::ActiveSpeed::Hdr,
        Some(106_250) => ibsm_topology::ActiveSpeed::Ndr,
        Some(212_500) => ibsm_topology::ActiveSpeed::Xdr,
        _ => ibsm_topology::ActiveSpeed::Unknown,
    }
}

fn topo_width(pi: &PortInfo) -> ibsm_topology::ActiveWidth {
    pi.link_width_active
        .lanes()
        .and_then(|l| ibsm_topology::ActiveWidth::from_lanes(u32::from(l)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(guid: u64, node_type: NodeType, num_ports: u8) -> FoundNode {
        let info = NodeInfo {
            node_guid: guid,
            node_type,
            num_ports,
            ..NodeInfo::default()
        };
        FoundNode {
            info,
            ports: (0..=num_ports)
                .map(|p| FoundPort {
                    guid: guid + u64::from(p),
                    ..FoundPort::default()
                })
                .collect(),
            ..FoundNode::default()
        }
    }

    fn model(nodes: Vec<FoundNode>) -> Discovered {
        let by_guid = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.info.node_guid, i))
            .collect();
        Discovered {
            nodes,
            by_guid,
            ..Discovered::default()
        }
    }

    #[test]
    fn model_errors_are_the_fabrics_typed_errors() {
        let mut ok = model(vec![
            node(0x10, NodeType::Switch, 4),
            node(0x20, NodeType::Ca, 1),
        ]);
        ok.link((0, 1), (1, 1));
        let (fabric, ids) = ok.to_fabric_with(|_| None).unwrap();
        assert_eq!((fabric.node_count(), ids.len()), (2, 2));

        // Two nodes with one GUID in a model built by hand (the walk leaves the second
        // out).
        let twice = model(vec![
            node(0x10, NodeType::Switch, 4),
            node(0x10, NodeType::Ca, 1),
        ]);
        assert_eq!(
            twice.to_fabric().unwrap_err(),
            FabricError::DuplicateGuid(Guid(0x10))
        );

        // A cable on a port above the node's NumPorts (the ports list came back longer
        // than NodeInfo said).
        let mut beyond = model(vec![
            node(0x10, NodeType::Switch, 4),
            node(0x20, NodeType::Ca, 1),
        ]);
        beyond.nodes[1].ports.push(FoundPort::default());
        beyond.link((0, 1), (1, 2));
        assert!(matches!(
            beyond.to_fabric().unwrap_err(),
            FabricError::PortOutOfRange { port: 2, .. }
        ));
    }

    #[test]
    fn lids_go_on_switch_port_0_and_ca_ports_only() {
        let mut m = model(vec![
            node(0x10, NodeType::Switch, 2),
            node(0x20, NodeType::Ca, 1),
        ]);
        m.link((0, 1), (1, 1));
        let (f, ids) = m.to_fabric_with(|p| Some((p.guid as u16, 0))).unwrap();
        let sw = f.node(ids[0]).unwrap();
        assert_eq!(sw.port(0).unwrap().lid, 0x10);
        assert_eq!(sw.port(1).unwrap().lid, 0);
        assert_eq!(f.node(ids[1]).unwrap().port(1).unwrap().lid, 0x21);
    }
}
