//! Which M_Key each SMP carries. Ours come from `SmConfig::m_key`; a port found holding
//! another key (a predecessor's, readable once its lease ran out and its protection fell
//! to 0) is addressed with that key until our Set replaces it, and a route keeps the key
//! of the node found at its end, for the next NodeInfo Get along it.

use std::collections::{HashMap, HashSet};

use ibsm_wire::{DrPath, PortInfo};

use super::ops::Target;
use crate::config::{MKeyMode, SmConfig};
use crate::mkey;
use crate::model::{Discovered, NodeIx};

/// M_Keys learnt from the fabric.
#[derive(Debug, Default)]
pub(super) struct Keys {
    /// Port GUID (switches: node GUID) -> a key read off the port that is not ours.
    foreign: HashMap<u64, u64>,
    /// The key to present in a NodeInfo Get along a route, from the node found there
    /// before (NodeInfo is M_Key-checked too: with key 0 a protected port drops it).
    by_route: HashMap<DrPath, u64>,
    /// Ports reported locked ([`crate::SmEvent::PortLocked`] is sent once per port).
    reported_locked: HashSet<u64>,
}

impl Keys {
    /// The key for a NodeInfo Get along `path`.
    pub(super) fn route_key(&self, path: &DrPath) -> u64 {
        self.by_route.get(path).copied().unwrap_or(0)
    }

    pub(super) fn remember_route(&mut self, path: DrPath, key: u64) {
        self.by_route.insert(path, key);
    }
}

/// Whether ports carry an M_Key with a lease that the SM must keep refreshing.
pub(super) fn lease_active(cfg: &SmConfig) -> bool {
    cfg.m_key != MKeyMode::Off && cfg.m_key_lease > 0
}

/// Our key for the port (switches: node) with GUID `guid`: `SmConfig::m_key`'s.
pub(super) fn key_for_port(cfg: &SmConfig, guid: u64) -> u64 {
    mkey::key_for(cfg.m_key, guid).unwrap_or(0)
}

impl Keys {
    /// The key to present to the port (switches: node) with GUID `guid`: the one it was
    /// found holding when not ours, else ours.
    pub(super) fn smp_key(&self, cfg: &SmConfig, guid: u64) -> u64 {
        self.foreign
            .get(&guid)
            .copied()
            .unwrap_or_else(|| key_for_port(cfg, guid))
    }

    /// The key for an SMP to `node` of `subnet` through `port` (switches: port 0's).
    pub(super) fn node_key(
        &self,
        cfg: &SmConfig,
        subnet: &Discovered,
        node: NodeIx,
        port: u8,
    ) -> u64 {
        self.smp_key(cfg, subnet.nodes[node].key_guid(port))
    }

    /// The key an SMP to `target` carries (`subnet`: the model it names nodes of).
    pub(super) fn target_key(&self, cfg: &SmConfig, subnet: &Discovered, target: &Target) -> u64 {
        match *target {
            Target::Route(path) => self.route_key(&path),
            Target::Switch(_, guid) => self.smp_key(cfg, guid),
            Target::Node(n) => self.node_key(cfg, subnet, n, 0),
            Target::Port(n, p) => self.node_key(cfg, subnet, n, p),
        }
    }

    /// Learns the key a PortInfo answer shows (a key port's: switch port 0, CA ports):
    /// a foreign one is used from now on, ours forgets the foreign one; the route to
    /// the port keeps it for the next NodeInfo.
    pub(super) fn note_port_key(
        &mut self,
        cfg: &SmConfig,
        subnet: &Discovered,
        node: NodeIx,
        port: u8,
        pi: &PortInfo,
    ) {
        let rec = &subnet.nodes[node];
        let key_port = if rec.is_switch() {
            port == 0
        } else {
            port != 0
        };
        let Some(guid) = rec.ports.get(usize::from(port)).map(|p| p.guid) else {
            return;
        };
        if !key_port || pi.m_key == 0 {
            return; // level 1 hides the key; nothing to learn
        }
        if pi.m_key == key_for_port(cfg, guid) {
            self.foreign.remove(&guid);
        } else {
            self.foreign.insert(guid, pi.m_key);
        }
        let path = rec.path_for(port);
        let key = self.smp_key(cfg, guid);
        self.remember_route(path, key);
    }

    /// Notes a port that ignores our M_Key; whether it is reported for the first time.
    pub(super) fn note_locked(&mut self, guid: u64) -> bool {
        self.reported_locked.insert(guid)
    }
}
