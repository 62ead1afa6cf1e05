//! The engine's side of partitions (`SmConfig::partitions`): plan every port's P_Key
//! table from the policy after discovery, write the 32-entry blocks that differ from
//! what the sweep read, and tell the PortInfo Sets which switch ports enforce. The
//! policy itself (`crate::partition`) knows nothing of the engine.

use ibsm_transport::Instant;
use ibsm_wire::attr::modifier::PKeyMod;

use super::ops::{Op, SmpQueue};
use super::{Outbox, SubnetManager};
use crate::config::SmConfig;
use crate::event::SmEvent;
use crate::model::{Discovered, NodeIx};
use crate::partition::{Enforce, PKeyPlan, PartitionConfig, PartitionWarning};

/// P_Keys per P_KeyTable block.
const PER_BLOCK: usize = 32;

/// The last heavy sweep's partition plan.
#[derive(Debug, Default)]
pub(super) struct Partitions {
    /// The P_Key tables and enforcement bits of the last heavy sweep's policy.
    plan: Option<PKeyPlan>,
    /// The warnings of the last plan: a warning is reported when it first appears, not
    /// again on every heavy sweep that meets it.
    warnings: Vec<PartitionWarning>,
}

impl SubnetManager {
    /// Replaces the partition policy (OpenSM re-reads `partitions.conf` at SIGHUP) and
    /// asks for a heavy sweep, which writes the blocks the new policy changes: P_Keys
    /// that stay keep their indexes. `None` stops managing P_Key tables (what the ports
    /// hold stays as it is).
    pub fn set_partitions(&mut self, now: Instant, partitions: Option<PartitionConfig>) {
        self.cfg.partitions = partitions;
        self.request_heavy_sweep(now);
    }
}

/// Whether the heavy sweep reads P_Key tables: the SA serves them, or the SM programs
/// them.
pub(super) fn reads_pkeys(cfg: &SmConfig) -> bool {
    cfg.sa || cfg.partitions.is_some()
}

impl Partitions {
    /// Queues a Set for every block of the policy's plan (made by the routing job,
    /// `None` when the SM does not manage P_Key tables) that differs from what the port
    /// of `subnet` holds (all of them where the sweep could not read it; none to a port
    /// `locked` names), reporting new warnings to `out`. Called in the programming
    /// phase before the PortInfo Sets, so an enforcing switch port has its table before
    /// its enforcement bits go on. The blocks queued.
    pub(super) fn program(
        &mut self,
        plan: Option<PKeyPlan>,
        subnet: &Discovered,
        locked: impl Fn(u64) -> bool,
        smps: &mut SmpQueue,
        out: &mut Outbox,
    ) -> u64 {
        let Some(plan) = plan else {
            *self = Partitions::default();
            return 0;
        };
        // Only what the last plan did not warn about: a table that stays too small
        // would otherwise be reported on every heavy sweep.
        for w in &plan.warnings {
            if self.warnings.contains(w) {
                continue;
            }
            tracing::warn!(%w, "partition policy");
            out.event(SmEvent::PartitionWarning { warning: w.clone() });
        }
        self.warnings.clone_from(&plan.warnings);
        let sets = blocks_to_write(&plan, subnet, locked);
        let mut queued = 0;
        for (node, port, block, data) in sets {
            let sw = subnet.nodes[node].is_switch();
            let m = PKeyMod {
                block,
                port: if sw { u16::from(port) } else { 0 },
            };
            queued += 1;
            smps.submit(
                Op::SetPKeyTable { node, port, block },
                m.encode(),
                Some(data),
            );
        }
        self.plan = Some(plan);
        queued
    }

    /// The enforcement bits the policy gives a switch port (`None`: leave them).
    pub(super) fn planned_enforcement(&self, node: NodeIx, port: u8) -> Option<Enforce> {
        self.plan
            .as_ref()
            .and_then(|p: &PKeyPlan| p.enforcement.get(&(node, port)).copied())
    }
}

/// The P_KeyTable blocks `plan` wants written: every 32-entry block that differs from
/// what the port holds (all of them where the sweep could not read it), as (node, port,
/// block, the block's 64 bytes); ports whose key guard `locked` names are left alone.
fn blocks_to_write(
    plan: &PKeyPlan,
    subnet: &Discovered,
    locked: impl Fn(u64) -> bool,
) -> Vec<(NodeIx, u8, u16, [u8; 64])> {
    let mut sets = Vec::new();
    for (&(n, p), table) in &plan.tables {
        let node = &subnet.nodes[n];
        let guid = if node.is_switch() {
            node.info.node_guid
        } else {
            node.ports[usize::from(p)].guid
        };
        if locked(guid) {
            continue;
        }
        let current = &node.ports[usize::from(p)].pkeys;
        for (b, want) in table.chunks(PER_BLOCK).enumerate() {
            let at = b * PER_BLOCK;
            let have = current.get(at..at + want.len());
            if have == Some(want) {
                continue;
            }
            let mut data = [0u8; 64];
            for (slot, k) in data.chunks_exact_mut(2).zip(want) {
                slot.copy_from_slice(&k.to_be_bytes());
            }
            sets.push((n, p, b as u16, data));
        }
    }
    sets
}
