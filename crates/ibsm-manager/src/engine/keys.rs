//! Which M_Key each SMP carries. Ours come from `SmConfig::m_key`; a port found holding
//! another key (a predecessor's, readable once its lease ran out and its protection fell
//! to 0) is addressed with that key until our Set replaces it, and a route keeps the key
//! of the node found at its end, for the next NodeInfo Get along it.

use std::collections::{HashMap, HashSet};

use ibsm_wire::{DrPath, PortInfo};

use super::SubnetManager;
use crate::config::{MKeyMode, SmConfig};
use crate::mkey;
use crate::model::NodeIx;

/// M_Keys learnt from the fabric.
#[derive(Debug, Default)]
pub(super) struct Keys {
    /// Port GUID (switches: node GUID) -> a key read off the port that is not ours.
    foreign: HashMap<u64, u64>,
    /// The key to present in a NodeInfo Get along a route, from the node found there
    /// before (NodeInfo is M_Key-checked too: with key 0 a protected port drops it).
    by_route: HashMap<DrPath, u64>,
    /// Ports reported locked ([`crate::SmEvent::PortLocked`] is sent once per port).
    pub(super) reported_locked: HashSet<u64>,
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

impl SubnetManager {
    /// Our key for a port (0 when the policy sets none).
    pub(super) fn key_for_port(&self, guid: u64) -> u64 {
        mkey::key_for(self.cfg.m_key, guid).unwrap_or(0)
    }

    /// The key to put in an SMP to this port: ours, or the one read off it.
    pub(super) fn smp_key(&self, guid: u64) -> u64 {
        self.keys
            .foreign
            .get(&guid)
            .copied()
            .unwrap_or_else(|| self.key_for_port(guid))
    }

    /// The key of an SMP to `port` of `node`: a switch has one M_Key (port 0's), a CA
    /// port its own; node-wide attributes (port 0) of a CA go through the port it was
    /// reached by.
    pub(super) fn node_key(&self, node: NodeIx, port: u8) -> u64 {
        self.smp_key(self.subnet.nodes[node].key_guid(port))
    }

    /// Remembers the M_Key a Get or Set showed on a port that holds one (switch port 0,
    /// CA ports): a foreign key is used from now on, ours ends the exception.
    pub(super) fn note_port_key(&mut self, node: NodeIx, port: u8, pi: &PortInfo) {
        let rec = &self.subnet.nodes[node];
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
        if pi.m_key == self.key_for_port(guid) {
            self.keys.foreign.remove(&guid);
        } else {
            self.keys.foreign.insert(guid, pi.m_key);
        }
        let path = rec.path_for(port);
        let key = self.smp_key(guid);
        self.keys.remember_route(path, key);
    }
}
