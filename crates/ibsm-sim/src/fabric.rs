//! Building a simulation from an `ibsm-topology` [`Fabric`].

use std::collections::HashMap;

use ibsm_topology::Fabric;

use crate::agent::{Agent, NodeKind, NodeSetup};
use crate::error::SimError;
use crate::{NodeIdx, Sim, SimConfig};

impl<A: Agent> Sim<A> {
    /// A powered, unconfigured fabric (no LIDs, every cabled link trained to Init) with
    /// the nodes, port GUIDs and cables of `fabric`. Nodes are added in the fabric's
    /// GUID order, so node indices are reproducible; look nodes up with
    /// [`Sim::node_by_guid`].
    ///
    /// # Errors
    /// [`SimError::DuplicateGuid`] / [`SimError::BadLink`] for an inconsistent fabric.
    pub fn from_fabric(fabric: &Fabric, cfg: SimConfig) -> Result<Self, SimError> {
        let mut sim = Self::new(cfg);
        let cfg = sim.core.borrow().cfg;
        {
            // Sized once: grown by doubling, the node table of the largest fabrics
            // would hold a third more than it needs at its peak.
            let mut core = sim.core.borrow_mut();
            core.nodes.reserve_exact(fabric.node_count());
            let slots: usize = fabric
                .nodes()
                .map(|(_, n)| usize::from(n.num_ports()) + 1)
                .sum();
            core.slots.reserve_exact(slots);
        }
        let mut map: HashMap<ibsm_topology::NodeId, NodeIdx> =
            HashMap::with_capacity(fabric.node_count());
        for (id, node) in fabric.nodes() {
            let kind = node.node_type();
            let guid = node.guid().0;
            let mut setup = NodeSetup::new(guid, kind, node.num_ports(), node.description.clone());
            setup.system_image_guid = node.system_image_guid.0;
            setup.vendor_id = node.vendor_id;
            setup.device_id = node.device_id;
            setup.link_speed = cfg.link_speed;
            if kind == NodeKind::Switch {
                setup.lft_cap = cfg.lft_cap;
                setup.enhanced_port0 = node.enhanced_port0;
                let g = node.port(0).map_or(guid, |p| p.guid.0);
                let g = if g == 0 { guid } else { g };
                setup.port_guids.iter_mut().for_each(|x| *x = g);
            } else {
                for (p, port) in node.ports() {
                    if port.guid.0 != 0 {
                        setup.port_guids[usize::from(p)] = port.guid.0;
                    }
                }
            }
            map.insert(id, sim.add_node(setup)?);
        }
        for (_, link) in fabric.links() {
            let (a, b) = (map[&link.a.node], map[&link.b.node]);
            sim.connect(a, link.a.port, b, link.b.port)?;
        }
        Ok(sim)
    }
}

impl<A: Agent> Sim<A> {
    /// A fabric from the text of an ibnetdiscover or ibsim net file (see
    /// `ibsm_topology::ibnet`); the reader's notes (skipped lines, assumptions) come
    /// back beside it.
    ///
    /// # Errors
    /// [`SimError::Fabric`] with the reader's error (which names the line), or as
    /// [`Sim::from_fabric`].
    pub fn from_net(
        text: &str,
        cfg: SimConfig,
    ) -> Result<(Self, Vec<ibsm_topology::ibnet::Note>), SimError> {
        let parsed =
            ibsm_topology::ibnet::parse(text).map_err(|e| SimError::Fabric(e.to_string()))?;
        Ok((Self::from_fabric(&parsed.fabric, cfg)?, parsed.notes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MiniAgent;
    use ibsm_topology::{NodeSpec, generate};

    #[test]
    fn fat_tree_loads_with_links_up() {
        let f = generate::fat_tree(8, 2).unwrap();
        let sim: Sim<MiniAgent> = Sim::from_fabric(&f, SimConfig::default()).unwrap();
        assert_eq!(sim.node_count(), f.node_count());
        for (_, link) in f.links() {
            let ga = f.node(link.a.node).unwrap().guid().0;
            let gb = f.node(link.b.node).unwrap().guid().0;
            let a = sim.node_by_guid(ga).unwrap();
            let b = sim.node_by_guid(gb).unwrap();
            assert!(sim.link_up(a, link.a.port));
            assert_eq!(sim.peer(a, link.a.port), Some((b, link.b.port)));
        }
    }

    #[test]
    fn port_guids_come_along() {
        let mut f = Fabric::new();
        let mut spec = NodeSpec::ca(0x50, 2, "hca");
        spec.port_guids = Some(vec![ibsm_topology::Guid(0x51), ibsm_topology::Guid(0x99)]);
        let h = f.add_node(spec).unwrap();
        let s = f.add_node(NodeSpec::switch(0x60, 4, "sw")).unwrap();
        f.connect(h, 2, s, 4).unwrap();
        let sim: Sim<MiniAgent> = Sim::from_fabric(&f, SimConfig::default()).unwrap();
        let hs = sim.node_setup(sim.node_by_guid(0x50).unwrap()).unwrap();
        assert_eq!((hs.port_guid(1), hs.port_guid(2)), (0x51, 0x99));
        assert_eq!(hs.description, "hca");
        let ss = sim.node_setup(sim.node_by_guid(0x60).unwrap()).unwrap();
        assert_eq!(ss.port_guid(0), 0x60);
    }

    #[test]
    fn net_file_text() {
        let net = "Switch 4 \"S-0000000000000100\" # \"sw\" base port 0 lid 0 lmc 0\n\
[1] \"H-0000000000000200\"[1] # \"h\" lid 0 4xQDR\n\n\
Ca 1 \"H-0000000000000200\" # \"h\"\n\
[1](0000000000000201) \"S-0000000000000100\"[1] # lid 0 lmc 0 \"sw\" lid 0 4xQDR\n";
        let (sim, _notes) = Sim::<MiniAgent>::from_net(net, SimConfig::default()).unwrap();
        let s = sim.node_by_guid(0x100).unwrap();
        let h = sim.node_by_guid(0x200).unwrap();
        assert_eq!(sim.peer(s, 1), Some((h, 1)));
        assert!(matches!(
            Sim::<MiniAgent>::from_net("Switch x", SimConfig::default()),
            Err(SimError::Fabric(_))
        ));
    }
}
