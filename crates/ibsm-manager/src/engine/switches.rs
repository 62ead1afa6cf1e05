//! Switch programming: SwitchInfo (LinearFDBTop, LifeTimeValue, MulticastFDBTop), the
//! LFT blocks that changed, and for engines that use VLs the SL -> VL maps and VL
//! arbitration. A mirror of what was written lets later sweeps send only what differs.

use std::collections::{HashMap, HashSet};

use ibsm_routing::Routes;
use ibsm_topology::Csr;
use ibsm_wire::attr::modifier::{SlToVlMod, VlArbMod, VlArbPart};
use ibsm_wire::{
    CapabilityMask, SlToVlMap, SlToVlMappingTable, SwitchInfo, VlArbBlock, VlArbEntry,
    VlArbitrationTable,
};

use super::SubnetManager;
use super::ops::Op;
use crate::model::NodeIx;

/// MulticastFDBTop of a switch with no MFT entry in use (below the first MLID).
pub(super) const NO_MFT_TOP: u16 = 0xBFFF;

/// What the SM wrote to the switches, for as long as they keep it.
#[derive(Debug, Default)]
pub(super) struct Mirror {
    /// Switch GUID -> LFT as last written (whole blocks).
    pub(super) lft: HashMap<u64, Vec<u8>>,
    /// (switch GUID, output port) -> SL -> VL map as last written.
    pub(super) sl2vl: HashMap<(u64, u8), [u8; 16]>,
    /// Switch GUID -> SwitchInfo as last written (or found right), the base of the
    /// MulticastFDBTop Sets multicast changes make between sweeps.
    pub(super) switch_info: HashMap<u64, SwitchInfo>,
    /// (switch GUID, block) LFT blocks whose Set got no answer or was refused: the
    /// mirror holds what was sent, not what the switch has, so the next sweep sends
    /// them again whatever the mirror says.
    unsure: HashSet<(u64, u16)>,
}

impl SubnetManager {
    /// A switch table Set was lost or refused: what the mirror holds for it is not on
    /// the switch, so the next heavy sweep writes it again.
    pub(super) fn forget_unwritten(&mut self, op: Op) {
        let guid = |n: NodeIx| self.subnet.nodes.get(n).map(|r| r.info.node_guid);
        match op {
            Op::SetLft { node, block } => {
                if let Some(g) = guid(node) {
                    self.mirror.unsure.insert((g, block));
                }
            }
            Op::SetSwitchInfo { node } => {
                if let Some(g) = guid(node) {
                    self.mirror.switch_info.remove(&g);
                }
            }
            // The VL arbitration table goes out with the SL2VL map it serves.
            Op::SetSl2Vl { node, port } | Op::SetVlArb { node, port } => {
                if let Some(g) = guid(node) {
                    self.mirror.sl2vl.remove(&(g, port));
                }
            }
            _ => {}
        }
    }
}

impl SubnetManager {
    /// Queues the SwitchInfo, LFT, SL2VL and VLArb Sets of switch `s` of `csr` for
    /// `routes`, up to LID `max_lid`; `tops` are the SA's MulticastFDBTops. Returns the
    /// LFT blocks it looked at (the measure of its work, `program.rs`).
    pub(super) fn program_switch(
        &mut self,
        s: usize,
        csr: &Csr,
        routes: &Routes,
        max_lid: u16,
        tops: &HashMap<u64, u16>,
    ) -> usize {
        let guid = csr.switch_guid[s].0;
        let Some(&n) = self.subnet.by_guid.get(&guid) else {
            return 0;
        };
        if self.sweep.is_locked(guid) {
            return 0;
        }
        let top = tops.get(&guid).copied().unwrap_or(NO_MFT_TOP);
        self.program_switch_info(n, max_lid, top);
        // The mirror of what was written is only good while the switch keeps it: one
        // that missed the previous sweep or whose port-0 LID is not the one we gave
        // it (power-cycled: LID, LFT and SL2VL are volatile) gets every table again.
        let cur_lid = self.subnet.nodes[n]
            .ports
            .first()
            .and_then(|p| p.info.as_ref())
            .map_or(0, |i| i.lid);
        let assigned = self.lids.assigned.get(&guid).map_or(0, |l| l.0);
        if cur_lid != assigned || !self.sweep.seen_before(guid) {
            self.mirror.lft.remove(&guid);
            self.mirror.sl2vl.retain(|&(g, _), _| g != guid);
        }
        self.program_lft(n, guid, routes.lft(s), max_lid);
        if routes.vls_used() > 1 || routes.has_sls() {
            self.program_vls(n, guid, s, routes);
        }
        usize::from(max_lid) / 64 + 1
    }

    /// SwitchInfo: LinearFDBTop `max_lid`, LifeTimeValue, and where the switch honours
    /// it MulticastFDBTop `mft_top`.
    fn program_switch_info(&mut self, n: NodeIx, max_lid: u16, mft_top: u16) {
        let read = self.subnet.nodes[n].switch_info;
        let mut si = read.unwrap_or_default();
        si.linear_fdb_top = max_lid;
        si.life_time_value = self.cfg.packet_life_time;
        if self.uses_mft_top(n) {
            si.multicast_fdb_top = mft_top;
        }
        // Discovery cleared the latch before reading the ports; clearing it again
        // here would swallow a change made since, which that discovery missed.
        si.port_state_change = false;
        self.mirror
            .switch_info
            .insert(self.subnet.nodes[n].info.node_guid, si);
        // Nothing to write when the switch already holds these values.
        let same = read.is_some_and(|r| {
            r.linear_fdb_top == si.linear_fdb_top
                && r.life_time_value == si.life_time_value
                && r.multicast_fdb_top == si.multicast_fdb_top
        });
        if !same {
            let mut data = [0u8; 64];
            si.emit_into(&mut data).ok();
            self.submit(Op::SetSwitchInfo { node: n }, 0, Some(data));
        }
    }

    /// Whether MulticastFDBTop is written to switch `n`: `SmConfig::use_mfttop` and
    /// its port 0 says IsMulticastFDBTopSupported (as OpenSM); a switch that does not
    /// say so may take the field for something else, or ignore it.
    pub(super) fn uses_mft_top(&self, n: NodeIx) -> bool {
        self.cfg.use_mfttop
            && self.subnet.nodes[n]
                .ports
                .first()
                .and_then(|p| p.info.as_ref())
                .is_some_and(|pi| {
                    pi.capability_mask
                        .contains(CapabilityMask::IS_MULTICAST_FDB_TOP_SUPPORTED)
                })
    }

    /// A switch's MulticastFDBTop moved (groups changed between sweeps): SwitchInfo
    /// as last written with the new top, where the switch honours it.
    pub(super) fn set_mft_top(&mut self, n: NodeIx, top: u16) {
        let guid = self.subnet.nodes[n].info.node_guid;
        if !self.uses_mft_top(n) || self.sweep.is_locked(guid) {
            return;
        }
        // Not written yet: the next sweep's SwitchInfo Set carries it.
        let Some(si) = self.mirror.switch_info.get_mut(&guid) else {
            return;
        };
        if si.multicast_fdb_top == top {
            return;
        }
        si.multicast_fdb_top = top;
        let mut data = [0u8; 64];
        si.emit_into(&mut data).ok();
        self.submit(Op::SetSwitchInfo { node: n }, 0, Some(data));
    }

    /// The LFT blocks up to `max_lid` that differ from the mirror (all of them where
    /// the mirror has none); the mirror then holds what is written.
    fn program_lft(&mut self, n: NodeIx, guid: u64, lft: &[u8], max_lid: u16) {
        let old = self.mirror.lft.get(&guid).cloned();
        let mut written = old.clone().unwrap_or_default();
        // Whole blocks, so the mirror holds every byte that is written.
        let blocks = usize::from(max_lid) / 64 + 1;
        written.resize(lft.len().max(blocks * 64), 0xFF);
        let (mut entries, mut sent) = (0u64, 0u64);
        for block in 0..blocks {
            let mut ports = [0xFFu8; 64];
            for (i, p) in ports.iter_mut().enumerate() {
                *p = lft.get(block * 64 + i).copied().unwrap_or(0xFF);
            }
            let before = old
                .as_ref()
                .and_then(|o| o.get(block * 64..block * 64 + 64));
            let unsure = self.mirror.unsure.remove(&(guid, block as u16));
            let changed = before.filter(|_| !unsure).map_or(ports.len(), |b| {
                b.iter().zip(&ports).filter(|(x, y)| x != y).count()
            });
            if changed == 0 {
                continue;
            }
            entries += changed as u64;
            let op = Op::SetLft {
                node: n,
                block: block as u16,
            };
            self.submit(op, block as u32, None);
            sent += 1;
            if let Some(dst) = written.get_mut(block * 64..block * 64 + 64) {
                dst.copy_from_slice(&ports);
            }
        }
        self.sweep.count(|s| {
            s.lft_entries += entries;
            s.lft_blocks += sent;
        });
        self.mirror.lft.insert(guid, written);
    }

    /// Engines that use VLs for deadlock freedom (DOR on tori, LASH, DFSSSP) give an
    /// SL -> VL map per output port; without it on the switches the freedom they
    /// computed would not exist on the wire. One Set per output port covers every input
    /// port (the all-inputs wildcard) where the switch accepts the wildcard
    /// (SwitchInfo.OptimizedSLtoVLMappingProgramming); elsewhere (ibsim's switches,
    /// older silicon) one Set per input port (0 and every cabled one), or the unset
    /// pairs keep the switch's default map.
    fn program_vls(&mut self, n: NodeIx, guid: u64, s: usize, routes: &Routes) {
        let node = &self.subnet.nodes[n];
        let wildcard = node
            .switch_info
            .is_some_and(|si| si.optimized_sl_to_vl_mapping_programming != 0);
        let num_ports = node.info.num_ports;
        let cabled = |i: u8| node.ports[usize::from(i)].peer.is_some();
        let inputs: Vec<u8> = if wildcard {
            Vec::new()
        } else {
            (0..=num_ports).filter(|&i| i == 0 || cabled(i)).collect()
        };
        let outputs: Vec<u8> = (1..=num_ports).filter(|&p| cabled(p)).collect();
        for p in outputs {
            let Some(vls) = routes.sl2vl(s, p) else {
                continue;
            };
            if self.mirror.sl2vl.get(&(guid, p)) == Some(&vls) {
                continue;
            }
            let mut data = [0u8; 64];
            SlToVlMappingTable {
                map: SlToVlMap::from_vls(vls),
            }
            .emit_into(&mut data)
            .ok();
            let op = Op::SetSl2Vl { node: n, port: p };
            if wildcard {
                self.submit(op, SlToVlMod::all_inputs_to(p).encode(), Some(data));
            }
            for &i in &inputs {
                self.submit(op, SlToVlMod::pair(i, p).encode(), Some(data));
            }
            self.mirror.sl2vl.insert((guid, p), vls);
            // Every VL in use gets an equal share of the low-priority table, so no lane
            // the engine relies on is starved.
            let mut block = VlArbBlock::default();
            let used = routes.vls_used().clamp(1, 15);
            for vl in 0..used {
                block
                    .set(usize::from(vl), VlArbEntry { vl, weight: 64 })
                    .ok();
            }
            let mut data = [0u8; 64];
            VlArbitrationTable { entries: block }
                .emit_into(&mut data)
                .ok();
            let modifier = VlArbMod {
                part: VlArbPart::Low0To31,
                port: u16::from(p),
            }
            .encode();
            self.submit(Op::SetVlArb { node: n, port: p }, modifier, Some(data));
        }
    }
}
