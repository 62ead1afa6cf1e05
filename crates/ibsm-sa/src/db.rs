//! The indexed form of a [`SaSnapshot`]: dense arrays for the PathRecord walk (LID ->
//! end port, port slot -> peer / MTU / rate) and the record generators of every
//! node-related SA attribute.

use std::collections::HashMap;

use ibsm_routing::NO_ROUTE;
use ibsm_wire::sa::{
    GuidInfoRecord, LinearForwardingTableRecord, LinkRecord, NodeRecord, PKeyTableRecord,
    PortInfoRecord, Rate, SmInfoRecord, SwitchInfoRecord,
};
use ibsm_wire::{
    Gid, GuidInfo, LinearForwardingTable, Mtu, NodeDescription, PKeyTable, SmInfo, SwitchInfo,
};

use crate::snapshot::{NodeIx, SaNode, SaPort, SaSnapshot};

const NONE: u32 = u32::MAX;
/// Longest walk accepted (a loop in broken LFTs stops here).
const MAX_HOPS: u8 = 64;

/// A port that owns LIDs: a CA/router port, or switch port 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EndPort {
    pub node: NodeIx,
    pub port: u8,
    pub guid: u64,
    pub lid: u16,
    pub lmc: u8,
}

impl EndPort {
    pub(crate) fn owns(&self, lid: u16) -> bool {
        let base = u32::from(self.lid);
        let l = u32::from(lid);
        self.lid != 0 && l >= base && l < base + (1u32 << self.lmc)
    }
}

/// What a path from one end port to a LID looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathFacts {
    /// Links crossed.
    pub hops: u8,
    /// Smallest MTU code along the path.
    pub mtu: u8,
    /// Smallest link rate along the path, Mb/s.
    pub mbps: u32,
    /// SL the routing engine requires (0 when it uses none).
    pub sl: u8,
}

/// The snapshot, indexed.
#[derive(Debug, Default)]
pub(crate) struct Db {
    pub snap: SaSnapshot,
    pub ends: Vec<EndPort>,
    /// LID -> index in `ends`.
    lid_end: Vec<u32>,
    /// Port GUID -> index in `ends`.
    guid_end: HashMap<u64, u32>,
    /// First slot of each node (slot = base + port number).
    slot_base: Vec<u32>,
    slot_peer: Vec<u32>,
    slot_node: Vec<u32>,
    slot_mtu: Vec<u8>,
    slot_mbps: Vec<u32>,
    /// Route index of each node (switches), NONE otherwise.
    node_route: Vec<u32>,
    /// Node -> index in `ends` of its first end port (switch: port 0).
    node_end: Vec<u32>,
}

fn link_mtu(a: Option<&ibsm_wire::PortInfo>, b: Option<&ibsm_wire::PortInfo>) -> u8 {
    let pick = |p: Option<&ibsm_wire::PortInfo>| {
        p.map_or(0, |i| {
            let n = u8::from(i.neighbor_mtu);
            if n != 0 { n } else { u8::from(i.mtu_cap) }
        })
    };
    match (pick(a), pick(b)) {
        (0, v) | (v, 0) => v,
        (x, y) => x.min(y),
    }
}

impl Db {
    pub(crate) fn new(snap: SaSnapshot) -> Self {
        let mut db = Db {
            snap,
            ..Db::default()
        };
        let n = db.snap.nodes.len();
        let mut base = 0u32;
        for node in &db.snap.nodes {
            db.slot_base.push(base);
            base += node.ports.len() as u32;
            db.node_route.push(node.route_index.unwrap_or(NONE));
        }
        let slots = base as usize;
        db.slot_peer = vec![NONE; slots];
        db.slot_node = vec![NONE; slots];
        db.slot_mtu = vec![0; slots];
        db.slot_mbps = vec![0; slots];
        db.node_end = vec![NONE; n];
        let mut max_lid = 0usize;
        for (ni, node) in db.snap.nodes.iter().enumerate() {
            for (p, port) in node.ports.iter().enumerate() {
                let s = (db.slot_base[ni] + p as u32) as usize;
                db.slot_node[s] = ni as u32;
                if let Some((pn, pp)) = port.peer {
                    if let Some(peer) = db.snap.nodes.get(pn as usize) {
                        if usize::from(pp) < peer.ports.len() {
                            db.slot_peer[s] = db.slot_base[pn as usize] + u32::from(pp);
                            let other = peer.ports[usize::from(pp)].info.as_ref();
                            db.slot_mtu[s] = link_mtu(port.info.as_ref(), other);
                            db.slot_mbps[s] = port
                                .info
                                .and_then(|i| i.active_link_mbps())
                                .or_else(|| other.and_then(ibsm_wire::PortInfo::active_link_mbps))
                                .unwrap_or(0);
                        }
                    }
                }
                let is_end = if node.is_switch() { p == 0 } else { p != 0 };
                let Some(info) = port.info.as_ref().filter(|_| is_end) else {
                    continue;
                };
                if info.lid == 0 {
                    continue;
                }
                let e = EndPort {
                    node: ni as u32,
                    port: p as u8,
                    guid: port.guid,
                    lid: info.lid,
                    lmc: if node.is_switch() { 0 } else { info.lmc },
                };
                let idx = db.ends.len() as u32;
                if db.node_end[ni] == NONE {
                    db.node_end[ni] = idx;
                }
                db.guid_end.insert(e.guid, idx);
                max_lid = max_lid.max(usize::from(e.lid) + (1usize << e.lmc));
                db.ends.push(e);
            }
        }
        db.lid_end = vec![NONE; max_lid + 1];
        for (i, e) in db.ends.iter().enumerate() {
            for l in u32::from(e.lid)..u32::from(e.lid) + (1u32 << e.lmc) {
                if let Some(x) = db.lid_end.get_mut(l as usize) {
                    *x = i as u32;
                }
            }
        }
        db
    }

    /// Heap bytes of the snapshot and its index (approximate: vector capacities).
    pub(crate) fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        let nodes: usize = self
            .snap
            .nodes
            .iter()
            .map(|n| {
                size_of::<crate::SaNode>()
                    + n.desc.capacity()
                    + n.ports.capacity() * size_of::<crate::SaPort>()
                    + n.ports
                        .iter()
                        .map(|p| p.pkeys.capacity() * 2)
                        .sum::<usize>()
            })
            .sum();
        let routes = self.snap.routes.as_ref().map_or(0, |r| r.memory_bytes());
        nodes
            + routes
            + self.ends.capacity() * size_of::<EndPort>()
            + self.lid_end.capacity() * 4
            + self.guid_end.capacity() * 16
            + (self.slot_base.capacity()
                + self.slot_peer.capacity()
                + self.slot_node.capacity()
                + self.slot_mbps.capacity()
                + self.node_route.capacity()
                + self.node_end.capacity())
                * 4
            + self.slot_mtu.capacity()
    }

    pub(crate) fn end_by_lid(&self, lid: u16) -> Option<&EndPort> {
        let i = *self.lid_end.get(usize::from(lid))?;
        self.ends.get(i as usize)
    }

    pub(crate) fn end_by_guid(&self, guid: u64) -> Option<&EndPort> {
        self.ends.get(*self.guid_end.get(&guid)? as usize)
    }

    /// The end port with this GID (our subnet prefix, or the link-local one).
    pub(crate) fn end_by_gid(&self, gid: Gid) -> Option<&EndPort> {
        let p = gid.prefix();
        if p != self.snap.subnet_prefix && p != ibsm_wire::DEFAULT_SUBNET_PREFIX {
            return None;
        }
        self.end_by_guid(gid.interface_id())
    }

    pub(crate) fn gid_of(&self, e: &EndPort) -> Gid {
        Gid::new(self.snap.subnet_prefix, e.guid)
    }

    /// The LID of `node` as other records name it (switch: port 0; CA: that port).
    fn node_lid(&self, node: NodeIx, port: u8) -> u16 {
        let n = &self.snap.nodes[node as usize];
        let p = if n.is_switch() { 0 } else { port };
        n.ports
            .get(usize::from(p))
            .and_then(|r| r.info.as_ref())
            .map_or(0, |i| i.lid)
    }

    /// Walks the LFTs from end port `src` to `dlid`.
    pub(crate) fn walk(&self, src: &EndPort, dlid: u16) -> Option<PathFacts> {
        let dst = self.end_by_lid(dlid)?;
        let mut mtu = u8::MAX;
        let mut mbps = u32::MAX;
        let mut hops = 0u8;
        let mut node = src.node;
        let src_node = &self.snap.nodes[src.node as usize];
        let mut src_sw = self.node_route[src.node as usize];
        if !src_node.is_switch() {
            let s = self.slot_base[src.node as usize] + u32::from(src.port);
            if src.owns(dlid) {
                // Loopback: the port's own limits.
                let info = src_node.ports[usize::from(src.port)].info?;
                return Some(PathFacts {
                    hops: 0,
                    mtu: u8::from(info.mtu_cap),
                    mbps: info.active_link_mbps().unwrap_or(0),
                    sl: 0,
                });
            }
            let peer = self.slot_peer[s as usize];
            if peer == NONE {
                return None;
            }
            mtu = mtu.min(self.slot_mtu[s as usize]);
            mbps = mbps.min(self.slot_mbps[s as usize]);
            hops = 1;
            node = self.slot_node[peer as usize];
            src_sw = self.node_route[node as usize];
            if self.node_route[node as usize] == NONE {
                // CA to CA back to back.
                let (pn, pp) = (node, peer - self.slot_base[node as usize]);
                return (pn == dst.node && u32::from(dst.port) == pp).then_some(PathFacts {
                    hops,
                    mtu,
                    mbps,
                    sl: 0,
                });
            }
        }
        let routes = self.snap.routes.as_ref()?;
        loop {
            let r = self.node_route[node as usize];
            if r == NONE {
                return None;
            }
            if dst.node == node {
                break;
            }
            let out = routes.port(r as usize, dlid);
            if out == NO_ROUTE || out == 0 {
                return None;
            }
            let s = self.slot_base[node as usize] + u32::from(out);
            let peer = *self.slot_peer.get(s as usize)?;
            if peer == NONE {
                return None;
            }
            mtu = mtu.min(self.slot_mtu[s as usize]);
            mbps = mbps.min(self.slot_mbps[s as usize]);
            hops += 1;
            if hops > MAX_HOPS {
                return None;
            }
            node = self.slot_node[peer as usize];
            if self.node_route[node as usize] == NONE {
                let pp = peer - self.slot_base[node as usize];
                if node == dst.node && pp == u32::from(dst.port) {
                    break;
                }
                return None;
            }
        }
        if mtu == u8::MAX {
            // Switch to itself: its management port's MTU.
            mtu = self.snap.nodes[src.node as usize].ports[0]
                .info
                .map_or(4, |i| u8::from(i.mtu_cap));
            mbps = 0;
        }
        let sl = if src_sw == NONE {
            0
        } else {
            routes.sl(src_sw as usize, dlid)
        };
        Some(PathFacts {
            hops,
            mtu,
            mbps: if mbps == u32::MAX { 0 } else { mbps },
            sl,
        })
    }

    // ------------------------------------------------------------ record generators

    pub(crate) fn node_records(&self) -> impl Iterator<Item = NodeRecord> + '_ {
        self.ends.iter().map(|e| {
            let n = &self.snap.nodes[e.node as usize];
            let mut info = n.info;
            if !n.is_switch() {
                info.port_guid = e.guid;
                info.local_port_num = e.port;
            }
            NodeRecord {
                lid: e.lid,
                node_info: info,
                node_description: NodeDescription::from_text(&n.desc),
            }
        })
    }

    /// Every port's PortInfoRecord; M_Keys zeroed unless `trusted`.
    pub(crate) fn port_info_records(
        &self,
        trusted: bool,
    ) -> impl Iterator<Item = PortInfoRecord> + '_ {
        self.record_ports().filter_map(move |(ni, _, p, port)| {
            let mut info = port.info?;
            if !trusted {
                info.m_key = 0;
            }
            Some(PortInfoRecord {
                endport_lid: self.node_lid(ni, p),
                port_num: p,
                options: 0,
                port_info: info,
            })
        })
    }

    /// Every port a per-port record (PortInfoRecord, P_KeyTableRecord) is about, with
    /// its node: all of a switch's ports, port 0 included; a CA's or router's from 1.
    fn record_ports(&self) -> impl Iterator<Item = (NodeIx, &SaNode, u8, &SaPort)> + '_ {
        self.snap.nodes.iter().enumerate().flat_map(|(ni, n)| {
            let sw = n.is_switch();
            n.ports
                .iter()
                .enumerate()
                .filter(move |(p, _)| sw || *p != 0)
                .map(move |(p, port)| (ni as NodeIx, n, p as u8, port))
        })
    }

    pub(crate) fn link_records(&self) -> impl Iterator<Item = LinkRecord> + '_ {
        self.snap.nodes.iter().enumerate().flat_map(move |(ni, n)| {
            n.ports.iter().enumerate().filter_map(move |(p, port)| {
                let (pn, pp) = port.peer?;
                Some(LinkRecord {
                    from_lid: self.node_lid(ni as NodeIx, p as u8),
                    from_port: p as u8,
                    to_port: pp,
                    to_lid: self.node_lid(pn, pp),
                })
            })
        })
    }

    pub(crate) fn switch_info_records(&self) -> impl Iterator<Item = SwitchInfoRecord> + '_ {
        self.snap
            .nodes
            .iter()
            .enumerate()
            .filter_map(move |(ni, n)| {
                let si: SwitchInfo = n.switch_info?;
                Some(SwitchInfoRecord {
                    lid: self.node_lid(ni as NodeIx, 0),
                    switch_info: si,
                })
            })
    }

    pub(crate) fn lft_records(
        &self,
        only_lid: Option<u16>,
    ) -> impl Iterator<Item = LinearForwardingTableRecord> + '_ {
        let routes = self.snap.routes.as_ref();
        self.snap
            .nodes
            .iter()
            .enumerate()
            .filter(move |(ni, n)| {
                n.route_index.is_some()
                    && only_lid.is_none_or(|l| self.node_lid(*ni as NodeIx, 0) == l)
            })
            .flat_map(move |(ni, n)| {
                let lid = self.node_lid(ni as NodeIx, 0);
                let lft: &[u8] = match (routes, n.route_index) {
                    (Some(r), Some(i)) if (i as usize) < r.switch_count() => r.lft(i as usize),
                    _ => &[],
                };
                // The blocks the SM programmed: the whole routed range.
                let blocks = lft.len().div_ceil(64);
                (0..blocks).map(move |b| {
                    let mut ports = [NO_ROUTE; 64];
                    for (i, x) in ports.iter_mut().enumerate() {
                        *x = lft.get(b * 64 + i).copied().unwrap_or(NO_ROUTE);
                    }
                    LinearForwardingTableRecord {
                        lid,
                        block_num: b as u16,
                        lft: LinearForwardingTable { ports },
                    }
                })
            })
    }

    pub(crate) fn sm_info_records(&self, trusted: bool) -> impl Iterator<Item = SmInfoRecord> + '_ {
        self.snap.sms.iter().map(move |&(lid, info)| {
            let sm_info = SmInfo {
                sm_key: if trusted { info.sm_key } else { 0 },
                ..info
            };
            SmInfoRecord { lid, sm_info }
        })
    }

    /// P_KeyTableRecords; untrusted requesters see only the records of `own` (their
    /// own port, which they can read from their SMA anyway).
    pub(crate) fn pkey_records(
        &self,
        trusted: bool,
        own: Option<EndPort>,
    ) -> impl Iterator<Item = PKeyTableRecord> + '_ {
        self.record_ports()
            .filter(move |&(ni, n, p, port)| {
                trusted
                    || own.is_some_and(|o| {
                        o.node == ni && (n.is_switch() || o.port == p) && port.info.is_some()
                    })
            })
            .flat_map(move |(ni, n, p, port)| {
                let lid = self.node_lid(ni, p);
                let port_num = if n.is_switch() { p } else { 0 };
                let table: Vec<u16> = if port.pkeys.is_empty() {
                    vec![ibsm_wire::mad::DEFAULT_PKEY]
                } else {
                    port.pkeys.clone()
                };
                let blocks = table.len().div_ceil(32).max(1);
                (0..blocks).map(move |b| {
                    let mut t = PKeyTable::default();
                    for (i, k) in table.iter().skip(b * 32).take(32).enumerate() {
                        let _ = t.pkeys.set(i, ibsm_wire::PKey(*k));
                    }
                    PKeyTableRecord {
                        lid,
                        block_num: b as u16,
                        port_num,
                        pkey_table: t,
                    }
                })
            })
    }

    pub(crate) fn guid_info_records(&self) -> impl Iterator<Item = GuidInfoRecord> + '_ {
        self.ends.iter().map(|e| GuidInfoRecord {
            lid: e.lid,
            block_num: 0,
            guid_info: GuidInfo {
                guid0: e.guid,
                ..GuidInfo::default()
            },
        })
    }

    /// Whether the end port's P_Key table holds `pkey` (either membership).
    pub(crate) fn has_pkey(&self, e: &EndPort, pkey: u16) -> bool {
        let port = &self.snap.nodes[e.node as usize].ports[usize::from(e.port)];
        if port.pkeys.is_empty() {
            return pkey & 0x7FFF == 0x7FFF;
        }
        port.pkeys
            .iter()
            .any(|k| k & 0x7FFF == pkey & 0x7FFF && k & 0x7FFF != 0)
    }

    /// The P_Key a path from `s` to `d` uses: the first valid entry of `s`'s table
    /// whose partition `d` also holds, not both as limited members (limited members
    /// cannot talk to each other); only `want`'s partition when the requester names
    /// one, answered with `want` itself. A port whose table was not read holds the
    /// default 0xFFFF. `None`: the two share no partition, so there is no path.
    pub(crate) fn common_pkey(&self, s: &EndPort, d: &EndPort, want: Option<u16>) -> Option<u16> {
        const DEFAULT: [u16; 1] = [ibsm_wire::mad::DEFAULT_PKEY];
        let table = |e: &EndPort| -> &[u16] {
            let p = &self.snap.nodes[e.node as usize].ports[usize::from(e.port)];
            if p.pkeys.is_empty() {
                &DEFAULT
            } else {
                &p.pkeys
            }
        };
        let (ts, td) = (table(s), table(d));
        ts.iter()
            .filter(|k| **k & 0x7FFF != 0)
            .filter(|k| want.is_none_or(|w| w & 0x7FFF == **k & 0x7FFF))
            .find(|&&k| {
                td.iter()
                    .any(|&dk| dk & 0x7FFF == k & 0x7FFF && (k | dk) & 0x8000 != 0)
            })
            .map(|&k| want.unwrap_or(k))
    }

    pub(crate) fn port_mtu_cap(&self, e: &EndPort) -> u8 {
        self.snap.nodes[e.node as usize].ports[usize::from(e.port)]
            .info
            .map_or(u8::from(Mtu::Mtu2048), |i| u8::from(i.mtu_cap))
    }

    /// The switch a CA port hangs off and the port there, or the switch itself.
    pub(crate) fn attach_switch(&self, e: &EndPort) -> Option<(NodeIx, u8)> {
        let n = &self.snap.nodes[e.node as usize];
        if n.is_switch() {
            return Some((e.node, 0));
        }
        n.ports.get(usize::from(e.port))?.peer
    }

    pub(crate) fn route_of(&self, node: NodeIx) -> Option<u32> {
        let r = *self.node_route.get(node as usize)?;
        (r != NONE).then_some(r)
    }

    /// Switch neighbours of switch `node`: `(out port, neighbour node)`.
    pub(crate) fn switch_neighbours(
        &self,
        node: NodeIx,
    ) -> impl Iterator<Item = (u8, NodeIx)> + '_ {
        let n = &self.snap.nodes[node as usize];
        n.ports.iter().enumerate().filter_map(move |(p, port)| {
            let (pn, _) = port.peer?;
            (p != 0 && self.snap.nodes.get(pn as usize)?.is_switch()).then_some((p as u8, pn))
        })
    }
}

/// The SA rate code of a link rate: the fastest code not above it.
pub(crate) fn rate_code(mbps: u32) -> Rate {
    let mut best: Option<(u32, Rate)> = None;
    for c in 2u8..=24 {
        let r = Rate::from(c);
        if let Some(m) = r.mbps() {
            if m <= mbps && best.is_none_or(|(b, _)| m > b) {
                best = Some((m, r));
            }
        }
    }
    best.map_or(Rate::G2_5, |(_, r)| r)
}
