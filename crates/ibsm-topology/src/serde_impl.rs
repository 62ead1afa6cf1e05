//! The `serde` feature: a [`Fabric`] is written as its nodes (each with its ports) and
//! its cables by (node GUID, port), never by the graph's internal indices, so the text
//! means the same to any reader and reads back through [`Fabric::add_node`] and
//! [`Fabric::connect`], with their checks (a cable to a port that does not exist, a
//! GUID twice, ... are deserialisation errors). A [`Node`] or [`Port`] on its own is
//! written the same way; read alone it has no cables.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::fabric::{Fabric, Node, NodeSpec, Port};
use crate::types::{ActiveSpeed, ActiveWidth, Guid, LinkState, NodeKind, PortNum};

#[derive(Serialize, Deserialize)]
struct PortRepr {
    port: PortNum,
    guid: Guid,
    lid: u16,
    lmc: u8,
    state: LinkState,
    width: ActiveWidth,
    speed: ActiveSpeed,
}

#[derive(Serialize, Deserialize)]
struct NodeRepr {
    guid: Guid,
    node_type: NodeKind,
    num_ports: PortNum,
    description: String,
    system_image_guid: Guid,
    vendor_id: u32,
    device_id: u16,
    /// Switches: SwitchInfo.EnhancedPort0 (absent in older dumps: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    enhanced_port0: bool,
    /// Port 0 (switches) and 1..=num_ports.
    ports: Vec<PortRepr>,
}

#[derive(Serialize, Deserialize)]
struct EndRepr {
    guid: Guid,
    port: PortNum,
}

#[derive(Serialize, Deserialize)]
struct LinkRepr {
    a: EndRepr,
    b: EndRepr,
}

#[derive(Serialize, Deserialize)]
struct FabricRepr {
    nodes: Vec<NodeRepr>,
    links: Vec<LinkRepr>,
}

fn port_repr(port: PortNum, p: &Port) -> PortRepr {
    PortRepr {
        port,
        guid: p.guid,
        lid: p.lid,
        lmc: p.lmc,
        state: p.state,
        width: p.width,
        speed: p.speed,
    }
}

fn node_repr(n: &Node) -> NodeRepr {
    let mut ports: Vec<PortRepr> = n.port(0).map(|p| port_repr(0, p)).into_iter().collect();
    ports.extend(n.ports().map(|(i, p)| port_repr(i, p)));
    NodeRepr {
        guid: n.guid(),
        node_type: n.node_type(),
        num_ports: n.num_ports(),
        description: n.description.clone(),
        system_image_guid: n.system_image_guid,
        vendor_id: n.vendor_id,
        device_id: n.device_id,
        enhanced_port0: n.enhanced_port0,
        ports,
    }
}

/// Adds `r` to `fabric` with its port attributes.
fn add_repr(fabric: &mut Fabric, r: NodeRepr) -> Result<(), String> {
    let mut spec = NodeSpec::new(r.guid, r.node_type, r.num_ports, r.description);
    spec.system_image_guid = r.system_image_guid;
    spec.vendor_id = r.vendor_id;
    spec.device_id = r.device_id;
    if r.node_type != NodeKind::Switch {
        let mut guids = vec![Guid(0); usize::from(r.num_ports)];
        for p in &r.ports {
            let slot = usize::from(p.port)
                .checked_sub(1)
                .and_then(|i| guids.get_mut(i))
                .ok_or_else(|| format!("node {}: port {} out of range", r.guid, p.port))?;
            *slot = p.guid;
        }
        spec.port_guids = Some(guids);
    }
    let id = fabric.add_node(spec).map_err(|e| e.to_string())?;
    let node = fabric
        .node_mut(id)
        .ok_or_else(|| format!("node {} vanished", r.guid))?;
    node.enhanced_port0 = r.enhanced_port0;
    for p in r.ports {
        let port = node
            .port_mut(p.port)
            .ok_or_else(|| format!("node {}: no port {}", r.guid, p.port))?;
        port.lid = p.lid;
        port.lmc = p.lmc;
        port.state = p.state;
        port.width = p.width;
        port.speed = p.speed;
    }
    Ok(())
}

impl Serialize for Port {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Alone, a port does not know its number; 0 stands for "not said".
        port_repr(0, self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Port {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = PortRepr::deserialize(d)?;
        let mut p = Port::new(r.guid);
        p.lid = r.lid;
        p.lmc = r.lmc;
        p.state = r.state;
        p.width = r.width;
        p.speed = r.speed;
        Ok(p)
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        node_repr(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = NodeRepr::deserialize(d)?;
        let guid = r.guid;
        let mut f = Fabric::new();
        add_repr(&mut f, r).map_err(D::Error::custom)?;
        let id = f
            .node_by_guid(guid)
            .ok_or_else(|| D::Error::custom("node not added"))?;
        f.remove_node(id).map_err(D::Error::custom)
    }
}

impl Serialize for Fabric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let end = |e: crate::types::Endpoint| EndRepr {
            guid: self.guid_of(e.node),
            port: e.port,
        };
        FabricRepr {
            nodes: self.nodes().map(|(_, n)| node_repr(n)).collect(),
            links: self
                .links()
                .map(|(_, l)| LinkRepr {
                    a: end(l.a),
                    b: end(l.b),
                })
                .collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Fabric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = FabricRepr::deserialize(d)?;
        let mut f = Fabric::with_capacity(r.nodes.len(), r.links.len());
        for n in r.nodes {
            add_repr(&mut f, n).map_err(D::Error::custom)?;
        }
        for l in r.links {
            let id = |e: &EndRepr| {
                f.node_by_guid(e.guid)
                    .ok_or_else(|| D::Error::custom(format!("cable to unknown node {}", e.guid)))
            };
            let (a, b) = (id(&l.a)?, id(&l.b)?);
            f.connect(a, l.a.port, b, l.b.port).map_err(|e| {
                D::Error::custom(format!(
                    "cable {}[{}] - {}[{}]: {e}",
                    l.a.guid, l.a.port, l.b.guid, l.b.port
                ))
            })?;
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use crate::fabric::Fabric;
    use crate::generate;
    use crate::types::{ActiveSpeed, ActiveWidth, LinkState};

    /// Everything the model holds, in GUID order, for comparing two fabrics.
    fn picture(f: &Fabric) -> String {
        let mut s = String::new();
        for (_, n) in f.nodes() {
            s += &format!("{n:?}\n");
        }
        for (_, l) in f.links() {
            s += &format!(
                "{} {} - {} {}\n",
                f.guid_of(l.a.node),
                l.a.port,
                f.guid_of(l.b.node),
                l.b.port
            );
        }
        s
    }

    #[test]
    fn a_fabric_round_trips_through_json() {
        let mut f = generate::k_ary_n_tree(4, 2).unwrap();
        let ids: Vec<_> = f.node_ids().collect();
        for (i, id) in ids.into_iter().enumerate() {
            let n = f.node_mut(id).unwrap();
            n.description = format!("node \"{i}\"");
            let p = if n.is_switch() { 0 } else { 1 };
            let port = n.port_mut(p).unwrap();
            port.lid = 10 + i as u16;
            port.lmc = 1;
            port.state = LinkState::Active;
            port.width = ActiveWidth::X4;
            port.speed = ActiveSpeed::Hdr;
        }
        let text = serde_json::to_string(&f).unwrap();
        let back: Fabric = serde_json::from_str(&text).unwrap();
        assert_eq!(picture(&back), picture(&f));
        assert_eq!(back.link_count(), f.link_count());
        assert_eq!(back.switch_count(), f.switch_count());
        // Cables are by GUID in the text, not by graph index.
        assert!(text.contains("\"links\":[{\"a\":{\"guid\":"), "{text}");
        let (_, n) = f.nodes().next().unwrap();
        let node: crate::Node = serde_json::from_str(&serde_json::to_string(n).unwrap()).unwrap();
        assert_eq!(node.guid(), n.guid());
        assert_eq!(node.degree(), 0);
    }

    #[test]
    fn a_cable_to_nowhere_or_a_guid_twice_is_an_error() {
        let f = generate::k_ary_n_tree(2, 2).unwrap();
        let text = serde_json::to_string(&f).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut bad = v.clone();
        bad["links"][0]["a"]["port"] = 200.into();
        let e = serde_json::from_value::<Fabric>(bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cable"), "{e}");
        let mut bad = v.clone();
        bad["links"][0]["a"]["guid"] = 0xdead.into();
        assert!(serde_json::from_value::<Fabric>(bad).is_err());
        let mut twice = v;
        let first = twice["nodes"][0].clone();
        twice["nodes"].as_array_mut().unwrap().push(first);
        let e = serde_json::from_value::<Fabric>(twice)
            .unwrap_err()
            .to_string();
        let guid = f.nodes().next().unwrap().1.guid();
        assert!(e.to_lowercase().contains("guid"), "{e} ({guid})");
    }
}
