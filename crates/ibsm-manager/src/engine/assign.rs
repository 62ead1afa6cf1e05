//! LID assignment: every switch (port 0) and end port gets an LMC-aligned LID range,
//! keeping the LIDs ports already carry and those the store remembers (OpenSM's
//! `guid2lid`), within the smallest LinearFDBCap of the subnet.

use std::collections::BTreeMap;

use ibsm_wire::DrPath;

use super::SubnetManager;
use super::discovery::Discovery;
use crate::error::SmError;
use crate::lids::{self, LidRequest};
use crate::model::Discovered;
use crate::store::LidStore;

/// The LIDs in force and where they persist.
pub(super) struct Lids {
    store: Box<dyn LidStore + Send>,
    /// Everything the store holds (ports gone from the fabric keep their LIDs).
    pub(super) stored: BTreeMap<u64, (u16, u8)>,
    /// Port GUID (switches: node GUID) -> (base LID, LMC) in force.
    pub(super) assigned: BTreeMap<u64, (u16, u8)>,
    /// The SM's own LID (its port's, once assigned).
    pub(super) sm_lid: u16,
}

impl std::fmt::Debug for Lids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lids")
            .field("assigned", &self.assigned.len())
            .field("sm_lid", &self.sm_lid)
            .finish_non_exhaustive()
    }
}

impl Lids {
    pub(super) fn new(store: Box<dyn LidStore + Send>, sm_lid: u16) -> Self {
        Self {
            store,
            stored: BTreeMap::new(),
            assigned: BTreeMap::new(),
            sm_lid,
        }
    }

    /// Reads the store (at start).
    pub(super) fn load(&mut self) -> Result<(), SmError> {
        self.stored = self.store.load()?;
        Ok(())
    }

    /// The port GUID (switches: node GUID) whose LID range in force holds `lid`.
    pub(super) fn guid_of(&self, lid: u16) -> Option<u64> {
        if lid == 0 {
            return None;
        }
        self.assigned
            .iter()
            .find(|&(_, &(base, lmc))| {
                lid >= base && u32::from(lid) < u32::from(base) + (1u32 << lmc)
            })
            .map(|(&g, _)| g)
    }

    /// The highest LID in use (1 when none is).
    pub(super) fn max_lid(&self) -> u16 {
        self.assigned
            .values()
            .map(|&(l, m)| l + (1 << m) - 1)
            .max()
            .unwrap_or(1)
    }
}

impl Lids {
    /// Assigns the LIDs of `subnet` (every switch's port 0 with LMC 0, every end port
    /// with `lmc`) and saves the store when an assignment is new. Returns how many LIDs
    /// are in use.
    fn assign(
        &mut self,
        subnet: &Discovered,
        lmc: u8,
        local_port_guid: u64,
    ) -> Result<usize, SmError> {
        let mut reqs = Vec::new();
        let mut limit = lids::MAX_UNICAST_LID;
        for n in &subnet.nodes {
            if n.is_switch() {
                if let Some(si) = &n.switch_info {
                    if si.linear_fdb_cap > 0 {
                        limit = limit.min(si.linear_fdb_cap.saturating_sub(1));
                    }
                }
                let current = n
                    .ports
                    .first()
                    .and_then(|p| p.info.as_ref())
                    .map_or(0, |i| i.lid);
                reqs.push(LidRequest {
                    guid: n.info.node_guid,
                    lmc: 0,
                    current,
                });
            } else {
                for p in n.ports.iter().skip(1).filter(|p| p.path.is_some()) {
                    let current = p.info.as_ref().map_or(0, |i| i.lid);
                    reqs.push(LidRequest {
                        guid: p.guid,
                        lmc,
                        current,
                    });
                }
            }
        }
        // What the store holds, over it what is in force: the same map once a sweep
        // has saved its LIDs (most sweeps), so the copy is made only when they differ.
        let merged;
        let known = if self
            .assigned
            .iter()
            .all(|(k, v)| self.stored.get(k) == Some(v))
        {
            &self.stored
        } else {
            let mut m = self.stored.clone();
            m.extend(self.assigned.iter().map(|(k, v)| (*k, *v)));
            merged = m;
            &merged
        };
        self.assigned = lids::assign(&reqs, known, limit)?;
        let in_use = self.assigned.values().map(|(_, lmc)| 1usize << lmc).sum();
        // Most heavy sweeps keep every LID: writing the store (a file, on the engine's
        // thread) only when an assignment is new spares them the write.
        let changed = self
            .assigned
            .iter()
            .any(|(k, v)| self.stored.get(k) != Some(v));
        if changed {
            self.stored
                .extend(self.assigned.iter().map(|(k, v)| (*k, *v)));
            self.store.save(&self.stored)?;
        }
        self.sm_lid = self
            .assigned
            .get(&local_port_guid)
            .map_or(self.sm_lid, |x| x.0);
        Ok(in_use)
    }
}

impl Lids {
    /// The LID in force of the port a directed route ends at (its CA port, or a
    /// switch's port 0) in `found`'s model; 0 when none.
    pub(super) fn at_path(&self, found: &Discovery, path: DrPath) -> u16 {
        let subnet = &found.subnet;
        for n in &subnet.nodes {
            let guid = if n.is_switch() {
                (n.path == path).then_some(n.info.node_guid)
            } else {
                n.ports
                    .iter()
                    .find(|p| p.path.as_deref() == Some(&path))
                    .map(|p| p.guid)
            };
            if let Some(g) = guid {
                return self.assigned.get(&g).map_or(0, |l| l.0);
            }
        }
        // Not a route discovery took (an SM learnt from the return path of its own
        // request): follow the cables.
        found.port_at_path(&path).map_or(0, |(n, p)| {
            let rec = &subnet.nodes[n];
            let g = if rec.is_switch() {
                rec.info.node_guid
            } else {
                rec.ports[usize::from(p)].guid
            };
            self.assigned.get(&g).map_or(0, |l| l.0)
        })
    }
}

impl SubnetManager {
    pub(super) fn assign_lids(&mut self) -> Result<(), SmError> {
        let subnet = &self.sweep.found(&self.last).subnet;
        let in_use = self
            .lids
            .assign(subnet, self.cfg.lmc, self.local.port_guid)?;
        self.sweep.count(|s| s.lids = in_use);
        Ok(())
    }
}
