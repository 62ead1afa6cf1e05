//! From a partition policy and a discovered subnet to every port's P_Key table.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use ibsm_wire::NodeType;

use super::{
    DEFAULT_PKEY, Enforcement, FULL_MEMBER, MAX_TABLE_ENTRIES, Member, Membership, Partition,
    PartitionConfig,
};
use crate::model::{Discovered, NodeIx};

/// The partition enforcement bits a switch port gets (PortInfo
/// PartitionEnforcementInbound / Outbound).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Enforce {
    /// Check the P_Key of packets entering the switch here.
    pub inbound: bool,
    /// Check the P_Key of packets leaving the switch here.
    pub outbound: bool,
}

/// Something about the policy the operator should know; the tables are still
/// programmed as far as they go.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartitionWarning {
    /// A port's table (NodeInfo.PartitionCap, or SwitchInfo.PartitionEnforcementCap for
    /// a switch port that enforces) is too small for its partitions: the last ones in
    /// priority order (default first, then ascending P_Key) were left out, so the port
    /// cannot use them (an enforcing switch port drops their packets).
    Truncated {
        /// The node.
        node_guid: u64,
        /// The port (a switch port that enforces, or an end port).
        port: u8,
        /// Entries the port holds.
        capacity: usize,
        /// The entries left out (membership bit included).
        dropped: Vec<u16>,
    },
}

impl fmt::Display for PartitionWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionWarning::Truncated {
                node_guid,
                port,
                capacity,
                dropped,
            } => {
                write!(
                    f,
                    "node {node_guid:#018x} port {port}: P_Key table holds {capacity} entries; left out"
                )?;
                for k in dropped {
                    write!(f, " {k:#06x}")?;
                }
                Ok(())
            }
        }
    }
}

/// What a policy asks of a subnet's ports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PKeyPlan {
    /// (node, port) -> the whole table to hold (its capacity long, at most
    /// [`MAX_TABLE_ENTRIES`](super::MAX_TABLE_ENTRIES); empty slots 0): CA and router
    /// ports, switch port 0, and switch ports that enforce.
    pub tables: BTreeMap<(NodeIx, u8), Vec<u16>>,
    /// (switch, external port) -> enforcement bits, for every cabled switch port:
    /// on where the peer is an end port and the switch can enforce, off elsewhere.
    pub enforcement: BTreeMap<(NodeIx, u8), Enforce>,
    /// Tables cut short by a capacity.
    pub warnings: Vec<PartitionWarning>,
}

impl PKeyPlan {
    /// Records port `at`'s table: `wanted` placed over what the port holds (`current`)
    /// within `capacity` entries, and a warning naming what did not fit.
    fn place_table(
        &mut self,
        at: (NodeIx, u8),
        node_guid: u64,
        wanted: &[u16],
        current: &[u16],
        capacity: usize,
    ) {
        let (table, dropped) = place(wanted, current, capacity);
        if !dropped.is_empty() {
            self.warnings.push(PartitionWarning::Truncated {
                node_guid,
                port: at.1,
                capacity: capacity.min(MAX_TABLE_ENTRIES),
                dropped,
            });
        }
        self.tables.insert(at, table);
    }
}

/// A partition's members, indexed for lookups by port.
struct Indexed {
    pkey: u16,
    /// Membership through ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF.
    keyword: [Option<Membership>; 5],
    guids: HashMap<u64, Membership>,
}

fn merge(slot: &mut Option<Membership>, m: Membership) {
    *slot = Some(slot.map_or(m, |x| x.merge(m)));
}

impl Indexed {
    fn new(p: &Partition) -> Self {
        let mut keyword = [None; 5];
        let mut guids: HashMap<u64, Membership> = HashMap::new();
        for &(member, m) in &p.members {
            let i = match member {
                Member::All => 0,
                Member::AllCas => 1,
                Member::AllSwitches => 2,
                Member::AllRouters => 3,
                Member::SelfPort => 4,
                Member::Guid(g) => {
                    let e = guids.entry(g).or_insert(m);
                    *e = e.merge(m);
                    continue;
                }
            };
            merge(&mut keyword[i], m);
        }
        Self {
            pkey: p.pkey,
            keyword,
            guids,
        }
    }

    fn membership(&self, guid: u64, kind: NodeType, is_sm: bool) -> Option<Membership> {
        let mut m = self.keyword[0];
        let by_kind = match kind {
            NodeType::Switch => self.keyword[2],
            NodeType::Router => self.keyword[3],
            _ => self.keyword[1],
        };
        if let Some(k) = by_kind {
            merge(&mut m, k);
        }
        if is_sm {
            if let Some(k) = self.keyword[4] {
                merge(&mut m, k);
            }
            // OpenSM: the SM's port is always a full member of the default partition.
            if self.pkey == DEFAULT_PKEY {
                merge(&mut m, Membership::Full);
            }
        }
        if let Some(&k) = self.guids.get(&guid) {
            merge(&mut m, k);
        }
        m
    }
}

/// Lays out a port's table: `wanted` entries in priority order (the first goes to
/// index 0), keeping every other entry at the index the port's `current` table has it
/// (the same 15-bit P_Key, whatever its membership bit), new ones in the lowest free
/// slots. Returns the table (`capacity` long, at most [`MAX_TABLE_ENTRIES`]; free slots
/// 0) and the entries that did not fit, the last ones of `wanted`.
///
/// Laying a table out again over its own result gives the same table.
#[must_use]
pub fn place(wanted: &[u16], current: &[u16], capacity: usize) -> (Vec<u16>, Vec<u16>) {
    let cap = capacity.min(MAX_TABLE_ENTRIES);
    let mut uniq: Vec<u16> = Vec::with_capacity(wanted.len());
    for &k in wanted {
        if k & !FULL_MEMBER != 0 && !uniq.contains(&k) {
            uniq.push(k);
        }
    }
    let keep = uniq.len().min(cap);
    let dropped = uniq.split_off(keep);
    let mut table = vec![0u16; cap];
    let Some((&first, rest)) = uniq.split_first() else {
        return (table, dropped);
    };
    table[0] = first;
    let mut todo: Vec<u16> = rest.to_vec();
    // Same entry where it is, then the same partition with another membership bit.
    for exact in [true, false] {
        todo.retain(|&k| {
            let at = current
                .iter()
                .take(cap)
                .enumerate()
                .skip(1)
                .find(|&(i, &c)| {
                    table[i] == 0
                        && if exact {
                            c == k
                        } else {
                            c & !FULL_MEMBER == k & !FULL_MEMBER
                        }
                })
                .map(|(i, _)| i);
            match at {
                Some(i) => {
                    table[i] = k;
                    false
                }
                None => true,
            }
        });
    }
    let mut free = (1..cap)
        .filter(|&i| table[i] == 0)
        .collect::<Vec<_>>()
        .into_iter();
    for k in todo {
        if let Some(i) = free.next() {
            table[i] = k;
        }
    }
    (table, dropped)
}

impl PartitionConfig {
    /// The P_Key tables this policy gives the ports of `subnet`, whose SM sits on port
    /// GUID `sm_port_guid`: every reached CA and router port and every switch's port 0
    /// (capacity NodeInfo.PartitionCap) and, for switch ports cabled to such a port on
    /// a switch that can enforce (SwitchInfo.PartitionEnforcementCap and the
    /// Inbound/OutboundEnforcementCap bits, narrowed by [`Self::enforcement`]), that end
    /// port's table again (capacity PartitionEnforcementCap) with the enforcement bits.
    /// Tables are laid out by [`place`] over what `FoundPort::pkeys` holds now. A `both`
    /// member gets the full and the limited entry with [`Self::allow_both_pkeys`], the
    /// full one alone without.
    #[must_use]
    pub fn plan(&self, subnet: &Discovered, sm_port_guid: u64) -> PKeyPlan {
        let parts = self.partitions();
        let idx0 = parts.iter().find(|p| p.flags.indx0).map(|p| p.pkey);
        let mut order: Vec<&Partition> = parts.iter().collect();
        order.sort_by_key(|p| {
            let rank = if Some(p.pkey) == idx0 {
                0
            } else if p.pkey == DEFAULT_PKEY {
                1
            } else {
                2
            };
            (rank, p.pkey)
        });
        let indexed: Vec<Indexed> = order.iter().map(|p| Indexed::new(p)).collect();
        let mut plan = PKeyPlan::default();
        let mut wanted = Vec::new();
        for (n, node) in subnet.nodes.iter().enumerate() {
            let kind = node.info.node_type;
            let ports: Vec<u8> = if node.is_switch() {
                vec![0]
            } else {
                (1..=node.info.num_ports)
                    .filter(|&p| {
                        node.ports
                            .get(usize::from(p))
                            .is_some_and(|r| r.path.is_some())
                    })
                    .collect()
            };
            for p in ports {
                let Some(rec) = node.ports.get(usize::from(p)) else {
                    continue;
                };
                if rec.info.is_none() {
                    continue;
                }
                wanted.clear();
                for ix in &indexed {
                    if let Some(m) = ix.membership(rec.guid, kind, rec.guid == sm_port_guid) {
                        // OpenSM without allow_both_pkeys: `both` is full, one entry.
                        let m = match m {
                            Membership::Both if !self.allow_both_pkeys => Membership::Full,
                            m => m,
                        };
                        wanted.extend(m.entries(ix.pkey));
                    }
                }
                let cap = usize::from(node.info.partition_cap);
                plan.place_table((n, p), node.info.node_guid, &wanted, &rec.pkeys, cap);
            }
        }
        for (n, node) in subnet.nodes.iter().enumerate() {
            if !node.is_switch() {
                continue;
            }
            let si = node.switch_info.unwrap_or_default();
            let cap = usize::from(si.partition_enforcement_cap);
            let (want_in, want_out) = match self.enforcement {
                Enforcement::Both => (true, true),
                Enforcement::In => (true, false),
                Enforcement::Out => (false, true),
                Enforcement::Off => (false, false),
            };
            let can = Enforce {
                inbound: want_in && si.inbound_enforcement_cap && cap > 0,
                outbound: want_out && si.outbound_enforcement_cap && cap > 0,
            };
            for p in 1..=node.info.num_ports {
                let Some(rec) = node.ports.get(usize::from(p)) else {
                    continue;
                };
                let Some((pn, pp)) = rec.peer else {
                    continue;
                };
                let peer_table = subnet
                    .nodes
                    .get(pn)
                    .filter(|peer| !peer.is_switch())
                    .and_then(|_| plan.tables.get(&(pn, pp)));
                let (Some(peer_table), true) = (peer_table, can.inbound || can.outbound) else {
                    plan.enforcement.insert((n, p), Enforce::default());
                    continue;
                };
                let entries: Vec<u16> = peer_table.iter().copied().filter(|&k| k != 0).collect();
                plan.place_table((n, p), node.info.node_guid, &entries, &rec.pkeys, cap);
                plan.enforcement.insert((n, p), can);
            }
        }
        plan
    }
}
