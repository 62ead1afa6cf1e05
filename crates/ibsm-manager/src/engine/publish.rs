//! The end of a heavy sweep that configured the subnet: what is derived from its model
//! for those who read it afterwards, the SA's snapshot (indexed) and the cabling the
//! health policy compares the next sweeps with. Both are pure functions of the model
//! and a few settings, so they are computed by a job (`jobs.rs`) while the engine
//! goes on answering; the sweep ends (SUBNET UP) when the job's output comes back and
//! is swapped in.

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_routing::Routes;
use ibsm_sa::{IndexedSnapshot, SaNode, SaPort, SaSnapshot};
use ibsm_topology::Csr;
use ibsm_transport::Instant;
use ibsm_wire::{PortState, SmInfo, SmState};

use super::SubnetManager;
use crate::config::MKeyMode;
use crate::health::{HealthConfig, PortKey};
use crate::mkey;
use crate::model::Discovered;

/// What the SA's snapshot is made of besides the discovered model.
#[derive(Debug, Clone)]
pub(super) struct SaInput {
    /// The snapshot the routes were computed on: its switch order indexes them.
    pub(super) switch_order: Option<Arc<Csr>>,
    pub(super) routes: Option<Arc<Routes>>,
    pub(super) m_key: MKeyMode,
    pub(super) subnet_prefix: u64,
    pub(super) packet_life_time: u8,
    /// SMInfoRecords: (LID, SMInfo), ours first.
    pub(super) sms: Vec<(u16, SmInfo)>,
}

impl SaInput {
    /// The SA's view of `subnet`: every node and port as configured, M_Keys as the SM
    /// set them (not what a protected port read back), SwitchInfo as the SM wrote it.
    pub(super) fn snapshot(self, subnet: &Discovered) -> SaSnapshot {
        let route_ix: HashMap<u64, u32> = self
            .switch_order
            .as_ref()
            .map(|csr| {
                csr.switch_guid
                    .iter()
                    .enumerate()
                    .map(|(i, g)| (g.0, i as u32))
                    .collect()
            })
            .unwrap_or_default();
        let lft_top = self
            .routes
            .as_ref()
            .map(|r| u16::try_from(r.lft_len().saturating_sub(1)).unwrap_or(u16::MAX));
        let nodes = subnet
            .nodes
            .iter()
            .map(|n| {
                let sw = n.is_switch();
                let ports = n
                    .ports
                    .iter()
                    .enumerate()
                    .map(|(p, r)| {
                        let key_guid = if sw { n.info.node_guid } else { r.guid };
                        let info = r.info.map(|mut i| {
                            let lid_port = !sw || p == 0;
                            if lid_port {
                                if let Some(k) = mkey::key_for(self.m_key, key_guid) {
                                    i.m_key = k;
                                }
                            }
                            i
                        });
                        SaPort {
                            guid: r.guid,
                            info,
                            peer: r.peer.map(|(pn, pp)| (pn as u32, pp)),
                            pkeys: r.pkeys.clone(),
                        }
                    })
                    .collect();
                // The sweep read SwitchInfo before its Set.
                let switch_info = n.switch_info.map(|mut si| {
                    if let Some(top) = lft_top {
                        si.linear_fdb_top = top;
                    }
                    si.life_time_value = self.packet_life_time;
                    si
                });
                SaNode {
                    info: n.info,
                    desc: n.description.clone(),
                    switch_info,
                    ports,
                    route_index: if sw {
                        route_ix.get(&n.info.node_guid).copied()
                    } else {
                        None
                    },
                }
            })
            .collect();
        SaSnapshot {
            nodes,
            routes: self.routes,
            subnet_prefix: self.subnet_prefix,
            sms: self.sms,
            packet_life_time: self.packet_life_time,
        }
    }
}

/// Cabled ports -> (the far end, left Active); CA and router port GUIDs -> their port.
pub(super) type Cabling = (HashMap<PortKey, (PortKey, bool)>, HashMap<u64, PortKey>);

/// The cabling of `subnet` as the health policy keeps it between sweeps.
pub(super) fn cabling(subnet: &Discovered) -> Cabling {
    let mut linked = HashMap::with_capacity(subnet.nodes.len() * 2);
    let mut by_port_guid = HashMap::new();
    for node in &subnet.nodes {
        for (p, rec) in node.ports.iter().enumerate().skip(1) {
            let key = PortKey::new(node.info.node_guid, p as u8);
            if !node.is_switch() && rec.guid != 0 {
                by_port_guid.insert(rec.guid, key);
            }
            let Some((pn, pp)) = rec.peer else {
                continue;
            };
            let active = rec.info.is_some_and(|i| i.port_state == PortState::Active);
            let far = PortKey::new(subnet.nodes[pn].info.node_guid, pp);
            linked.insert(key, (far, active));
        }
    }
    (linked, by_port_guid)
}

/// A publish job's input.
pub(super) struct PublishInput {
    subnet: Arc<Discovered>,
    /// `None`: the SA is off.
    sa: Option<SaInput>,
    /// Whether the health policy compares cabling (flap or trap checks on).
    cabling: bool,
}

/// What a publish job made.
pub(super) struct Published {
    pub(super) sa: Option<IndexedSnapshot>,
    pub(super) cabling: Option<Cabling>,
}

impl PublishInput {
    pub(super) fn run(self) -> Published {
        Published {
            sa: self
                .sa
                .map(|input| IndexedSnapshot::new(input.snapshot(&self.subnet))),
            cabling: self.cabling.then(|| cabling(&self.subnet)),
        }
    }
}

impl PublishInput {
    /// What the end of a sweep publishes: the SA's snapshot of `subnet` when `sa`
    /// (the SA is on), and the cabling when the health checks (`checks`) compare it.
    fn new(checks: &HealthConfig, subnet: Arc<Discovered>, sa: Option<SaInput>) -> Self {
        PublishInput {
            subnet,
            sa,
            cabling: checks.flap_count != 0 || checks.trap_limit != 0,
        }
    }
}

impl SubnetManager {
    /// The activation Sets are answered: the sweep publishes what it configured, then
    /// ends.
    pub(super) fn begin_publish(&mut self, now: Instant) {
        let subnet = Arc::clone(&self.sweep.found(&self.last).subnet);
        let sa = self.sa().is_some().then(|| self.sa_input());
        let input = PublishInput::new(&self.cfg.health, subnet, sa);
        self.start_publish_job(now, input);
    }

    /// The publish job came back: SUBNET UP (or an incomplete sweep) with its output.
    /// An SM that is no longer Master (one that outranks it took over meanwhile)
    /// publishes nothing.
    pub(super) fn published(&mut self, now: Instant, out: Published) {
        if self.smi.election.state() != SmState::Master {
            tracing::info!("no longer Master when the sweep ended: nothing published");
            self.stand_aside(now);
            return;
        }
        self.finish(now, Some(out));
    }
}
