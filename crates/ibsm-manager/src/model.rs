//! What a sweep found: nodes, their attributes, ports and cables, and how to reach
//! each of them with a directed route.

use std::collections::HashMap;

use ibsm_topology::{Fabric, FabricError, Guid, NodeId, NodeSpec, NodeType as TopoType};
use ibsm_wire::{DrPath, NodeInfo, NodeType, PortInfo, SwitchInfo};

/// Index of a node in [`Subnet::nodes`].
pub type NodeIx = usize;

/// A port as discovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortRec {
    /// Port GUID (switch ports: the node GUID).
    pub guid: u64,
    /// PortInfo as read in this sweep.
    pub info: Option<PortInfo>,
    /// For CA and router ports: the directed route that enters the node through this
    /// port (each port of a multi-port CA has its own).
    pub path: Option<DrPath>,
    /// The other end of the cable, when both ends are known.
    pub peer: Option<(NodeIx, u8)>,
    /// The P_Key table as read in this sweep (entries in index order; empty: not read).
    /// Read for CA ports, switch port 0 and switch ports that enforce partitions, when
    /// the SA is enabled or a partition policy is set; P_KeyTable Sets of the policy
    /// update it with what the port answered.
    pub pkeys: Vec<u16>,
    /// The last PortInfo Get of this port set attribute-modifier bit 31
    /// (SMSupportExtendedSpeeds), so `info` holds the LinkSpeedExt* fields.
    pub ext_speeds: bool,
}

/// Whether a port advertises IsExtendedSpeedsSupported (its LinkSpeedExt* fields mean
/// something when asked for with modifier bit 31).
#[must_use]
pub fn ext_speeds_supported(pi: &PortInfo) -> bool {
    pi.capability_mask
        .contains(ibsm_wire::CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED)
}

/// The model's speed of a port from its PortInfo (extended speeds included).
fn topo_speed(pi: &PortInfo) -> ibsm_topology::LinkSpeed {
    use ibsm_topology::LinkSpeed as S;
    match pi.active_lane_mbps() {
        Some(2_500) => S::Sdr,
        Some(5_000) => S::Ddr,
        Some(10_000) => S::Qdr,
        Some(14_062) => S::Fdr,
        Some(25_781) => S::Edr,
        Some(53_125) => S::Hdr,
        Some(106_250) => S::Ndr,
        Some(212_500) => S::Xdr,
        _ => S::Unknown,
    }
}

/// The model's width of a port from its PortInfo.
fn topo_width(pi: &PortInfo) -> ibsm_topology::LinkWidth {
    pi.link_width_active
        .lanes()
        .and_then(|l| ibsm_topology::LinkWidth::from_lanes(u32::from(l)))
        .unwrap_or_default()
}

/// A node as discovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRec {
    /// NodeInfo from the first answer.
    pub info: NodeInfo,
    /// NodeDescription text.
    pub desc: String,
    /// The directed route the node was first reached by.
    pub path: DrPath,
    /// SwitchInfo (switches).
    pub switch_info: Option<SwitchInfo>,
    /// Ports 0..=NumPorts.
    pub ports: Vec<PortRec>,
}

impl NodeRec {
    /// Whether the node is a switch.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::Switch
    }

    /// The route to use for SMPs about `port`: a switch is always reached at port 0's
    /// SMA; a CA port through its own path when known.
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

/// Everything one sweep found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subnet {
    /// Nodes in discovery order.
    pub nodes: Vec<NodeRec>,
    /// Node GUID -> index.
    pub by_guid: HashMap<u64, NodeIx>,
}

impl Subnet {
    /// Records a cable between two ports (idempotent).
    pub fn link(&mut self, a: (NodeIx, u8), b: (NodeIx, u8)) {
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

    /// Every cable once, as `((node, port), (node, port))` with the first end smaller.
    pub fn links(&self) -> impl Iterator<Item = ((NodeIx, u8), (NodeIx, u8))> + '_ {
        self.nodes.iter().enumerate().flat_map(|(n, node)| {
            node.ports.iter().enumerate().filter_map(move |(p, port)| {
                let (pn, pp) = port.peer?;
                ((n, p as u8) < (pn, pp)).then_some(((n, p as u8), (pn, pp)))
            })
        })
    }

    /// Builds the shared fabric model (for routing and for users), with LIDs from
    /// `lid_of(port GUID)`. Returns the fabric and our node index -> fabric node id.
    ///
    /// # Errors
    /// [`FabricError`] if the model rejects what was found (e.g. a port number above
    /// NumPorts, or a GUID twice, reported by broken SMAs).
    pub fn to_fabric(
        &self,
        lid_of: impl Fn(u64) -> Option<(u16, u8)>,
    ) -> Result<(Fabric, Vec<NodeId>), FabricError> {
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
                n.desc.clone(),
            );
            spec.system_image_guid = Guid(n.info.system_image_guid);
            spec.vendor_id = n.info.vendor_id;
            spec.device_id = n.info.device_id;
            if node_type != TopoType::Switch {
                spec.port_guids = Some(
                    (1..=usize::from(n.info.num_ports))
                        .map(|p| {
                            let g = n.ports.get(p).map_or(0, |r| r.guid);
                            // Ports we never reached get a placeholder GUID derived from
                            // the node's, as the model needs one per port.
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
            let lid_ports: Vec<u8> = if n.is_switch() {
                vec![0]
            } else {
                (1..=n.info.num_ports).collect()
            };
            for (p, rec) in n.ports.iter().enumerate() {
                let (Some(info), Ok(p)) = (rec.info.as_ref(), u8::try_from(p)) else {
                    continue;
                };
                if let Some(port) = node.port_mut(p) {
                    port.speed = topo_speed(info);
                    port.width = topo_width(info);
                }
            }
            for p in lid_ports {
                let guid = n.ports.get(usize::from(p)).map_or(0, |r| r.guid);
                if let (Some((lid, lmc)), Some(port)) = (lid_of(guid), node.port_mut(p)) {
                    port.lid = lid;
                    port.lmc = lmc;
                }
            }
            ids.push(id);
        }
        for ((a, pa), (b, pb)) in self.links() {
            if a == b {
                continue;
            }
            fabric.connect(ids[a], pa, ids[b], pb)?;
        }
        Ok((fabric, ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(guid: u64, node_type: NodeType, num_ports: u8) -> NodeRec {
        let info = NodeInfo {
            node_guid: guid,
            node_type,
            num_ports,
            ..NodeInfo::default()
        };
        NodeRec {
            info,
            desc: String::new(),
            path: DrPath::local(),
            switch_info: None,
            ports: (0..=num_ports)
                .map(|p| PortRec {
                    guid: guid + u64::from(p),
                    ..PortRec::default()
                })
                .collect(),
        }
    }

    fn subnet(nodes: Vec<NodeRec>) -> Subnet {
        let by_guid = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.info.node_guid, i))
            .collect();
        Subnet { nodes, by_guid }
    }

    #[test]
    fn model_errors_are_the_fabrics_typed_errors() {
        let mut ok = subnet(vec![
            node(0x10, NodeType::Switch, 4),
            node(0x20, NodeType::Ca, 1),
        ]);
        ok.link((0, 1), (1, 1));
        let (fabric, ids) = ok.to_fabric(|_| None).unwrap();
        assert_eq!((fabric.node_count(), ids.len()), (2, 2));

        // Two nodes answering with one GUID (a broken or cloned SMA).
        let twice = subnet(vec![
            node(0x10, NodeType::Switch, 4),
            node(0x10, NodeType::Ca, 1),
        ]);
        assert_eq!(
            twice.to_fabric(|_| None).unwrap_err(),
            FabricError::DuplicateGuid(Guid(0x10))
        );

        // A cable on a port above the node's NumPorts (the ports list came back longer
        // than NodeInfo said).
        let mut beyond = subnet(vec![
            node(0x10, NodeType::Switch, 4),
            node(0x20, NodeType::Ca, 1),
        ]);
        beyond.nodes[1].ports.push(PortRec::default());
        beyond.link((0, 1), (1, 2));
        assert!(matches!(
            beyond.to_fabric(|_| None).unwrap_err(),
            FabricError::PortOutOfRange { port: 2, .. }
        ));
    }
}
