//! Switch programming: SwitchInfo (LinearFDBTop, LifeTimeValue, MulticastFDBTop), the
//! LFT blocks that changed, and for engines that use VLs the SL -> VL maps and VL
//! arbitration. A mirror of what was written lets later sweeps send only what differs.

use std::collections::HashMap;
use std::sync::Arc;

use ibsm_routing::Routes;
use ibsm_topology::Csr;
use ibsm_transport::{IntMap, IntSet};
use ibsm_wire::attr::modifier::{SlToVlMod, VlArbMod, VlArbPart};
use ibsm_wire::{
    CapabilityMask, LinearForwardingTable, SlToVlMap, SlToVlMappingTable, SwitchInfo, VlArbBlock,
    VlArbEntry, VlArbitrationTable,
};

use super::assign::Lids;
use super::discovery::Discovery;
use super::ops::{Op, SmpQueue};
use super::sweep::Sweep;
use crate::config::SmConfig;
use crate::model::{Discovered, NodeIx};

/// MulticastFDBTop of a switch with no MFT entry in use (below the first MLID).
pub(super) const NO_MFT_TOP: u16 = 0xBFFF;

/// What the SM wrote to the switches, for as long as they keep it.
#[derive(Debug, Default)]
pub(super) struct Mirror {
    /// Switch GUID -> LFT as last written (looked up for every LFT block sent: a
    /// multiply hash, not SipHash).
    pub(super) lft: IntMap<u64, WrittenLft>,
    /// (switch GUID, output port) -> SL -> VL map as last written.
    pub(super) sl2vl: HashMap<(u64, u8), [u8; 16]>,
    /// Switch GUID -> SwitchInfo as last written (or found right), the base of the
    /// MulticastFDBTop Sets multicast changes make between sweeps.
    pub(super) switch_info: HashMap<u64, SwitchInfo>,
    /// (switch GUID, block) LFT blocks whose Set got no answer or was refused: the
    /// mirror holds what was sent, not what the switch has, so the next sweep sends
    /// them again whatever the mirror says.
    unsure: IntSet<(u64, u16)>,
}

impl Mirror {
    /// An LFT block as the mirror holds it (what this sweep writes) for `node` of
    /// `subnet`.
    pub(super) fn lft_block(
        &self,
        subnet: &Discovered,
        node: NodeIx,
        block: u16,
    ) -> Option<[u8; 64]> {
        let guid = subnet.nodes.get(node)?.info.node_guid;
        let ports = self.lft.get(&guid)?.block(usize::from(block))?;
        let mut d = [0u8; 64];
        LinearForwardingTable { ports }.emit_into(&mut d).ok()?;
        Some(d)
    }
}

impl Mirror {
    /// A switch table Set for a node of `subnet` was lost or refused: what the mirror
    /// holds for it is not on the switch, so the next heavy sweep writes it again.
    pub(super) fn forget_unwritten(&mut self, subnet: &Discovered, op: &Op) {
        let guid = |n: NodeIx| subnet.nodes.get(n).map(|r| r.info.node_guid);
        match *op {
            Op::SetLft { node, block } => {
                if let Some(g) = guid(node) {
                    self.unsure.insert((g, block));
                }
            }
            Op::SetSwitchInfo { node } => {
                if let Some(g) = guid(node) {
                    self.switch_info.remove(&g);
                }
            }
            // The VL arbitration table goes out with the SL2VL map it serves.
            Op::SetSl2Vl { node, port } | Op::SetVlArb { node, port } => {
                if let Some(g) = guid(node) {
                    self.sl2vl.remove(&(g, port));
                }
            }
            _ => {}
        }
    }

    /// Queues the SwitchInfo, LFT, SL2VL and VLArb Sets of switch `s` of `csr` for
    /// `routes`, up to LID `max_lid`; `tops` are the SA's MulticastFDBTops. Returns the
    /// LFT blocks it looked at (the measure of its work, `program.rs`).
    pub(super) fn program_switch(
        &mut self,
        ctx: &SwitchCtx<'_>,
        smps: &mut SmpQueue,
        s: usize,
        csr: &Csr,
        routes: &Arc<Routes>,
    ) -> Written {
        let (cfg, subnet, max_lid) = (ctx.cfg, ctx.subnet(), ctx.max_lid);
        let guid = csr.switch_guid[s].0;
        let Some(&n) = subnet.by_guid.get(&guid) else {
            return Written::default();
        };
        if ctx.sweep.is_locked(guid) {
            return Written::default();
        }
        let top = ctx.tops.get(&guid).copied().unwrap_or(NO_MFT_TOP);
        self.program_switch_info(cfg, subnet, smps, n, max_lid, top);
        // The mirror of what was written is only good while the switch keeps it: one
        // that missed the previous sweep or whose port-0 LID is not the one we gave
        // it (power-cycled: LID, LFT and SL2VL are volatile) gets every table again.
        let cur_lid = subnet.nodes[n]
            .ports
            .first()
            .and_then(|p| p.info.as_ref())
            .map_or(0, |i| i.lid);
        let assigned = ctx.lids.assigned.get(&guid).map_or(0, |l| l.0);
        if cur_lid != assigned || !ctx.sweep.seen_before(ctx.last, guid) {
            self.lft.remove(&guid);
            self.sl2vl.retain(|&(g, _), _| g != guid);
        }
        let (lft_entries, lft_blocks) = self.program_lft(smps, n, guid, routes, s, max_lid);
        if routes.vls_used() > 1 || routes.has_sls() {
            self.program_vls(subnet, smps, n, guid, s, routes);
        }
        Written {
            units: usize::from(max_lid) / 64 + 1,
            lft_entries,
            lft_blocks,
        }
    }

    /// SwitchInfo: LinearFDBTop `max_lid`, LifeTimeValue, and where the switch honours
    /// it MulticastFDBTop `mft_top`.
    fn program_switch_info(
        &mut self,
        cfg: &SmConfig,
        subnet: &Discovered,
        smps: &mut SmpQueue,
        n: NodeIx,
        max_lid: u16,
        mft_top: u16,
    ) {
        let read = subnet.nodes[n].switch_info;
        let mut si = read.unwrap_or_default();
        si.linear_fdb_top = max_lid;
        si.life_time_value = cfg.packet_life_time;
        if uses_mft_top(cfg, subnet, n) {
            si.multicast_fdb_top = mft_top;
        }
        // Discovery cleared the latch before reading the ports; clearing it again
        // here would swallow a change made since, which that discovery missed.
        si.port_state_change = false;
        self.switch_info.insert(subnet.nodes[n].info.node_guid, si);
        // Nothing to write when the switch already holds these values.
        let same = read.is_some_and(|r| {
            r.linear_fdb_top == si.linear_fdb_top
                && r.life_time_value == si.life_time_value
                && r.multicast_fdb_top == si.multicast_fdb_top
        });
        if !same {
            let mut data = [0u8; 64];
            si.emit_into(&mut data).ok();
            smps.submit(Op::SetSwitchInfo { node: n }, 0, Some(data));
        }
    }

    /// A switch's MulticastFDBTop moved (groups changed between sweeps): SwitchInfo
    /// as last written with the new top, where the switch honours it.
    pub(super) fn set_mft_top(
        &mut self,
        cfg: &SmConfig,
        subnet: &Discovered,
        sweep: &Sweep,
        smps: &mut SmpQueue,
        n: NodeIx,
        top: u16,
    ) {
        let guid = subnet.nodes[n].info.node_guid;
        if !uses_mft_top(cfg, subnet, n) || sweep.is_locked(guid) {
            return;
        }
        // Not written yet: the next sweep's SwitchInfo Set carries it.
        let Some(si) = self.switch_info.get_mut(&guid) else {
            return;
        };
        if si.multicast_fdb_top == top {
            return;
        }
        si.multicast_fdb_top = top;
        let mut data = [0u8; 64];
        si.emit_into(&mut data).ok();
        smps.submit(Op::SetSwitchInfo { node: n }, 0, Some(data));
    }

    /// The LFT blocks up to `max_lid` that differ from the mirror (all of them where
    /// the mirror has none); the mirror then holds what is written: row `s` of
    /// `routes`, shared. The entries and blocks written.
    fn program_lft(
        &mut self,
        smps: &mut SmpQueue,
        n: NodeIx,
        guid: u64,
        routes: &Arc<Routes>,
        s: usize,
        max_lid: u16,
    ) -> (u64, u64) {
        let blocks = usize::from(max_lid) / 64 + 1;
        let new = WrittenLft {
            routes: Arc::clone(routes),
            row: s,
            blocks,
        };
        let old = self.lft.remove(&guid);
        let (mut entries, mut sent) = (0u64, 0u64);
        for block in 0..blocks {
            let unsure = self.unsure.remove(&(guid, block as u16));
            let before = old.as_ref().and_then(|o| o.block(block));
            // A block sent whole is not read here: the Set reads it from the mirror when
            // it leaves, and on the largest fabrics a second pass over the tables is a
            // cache miss a block.
            let changed = before
                .filter(|_| !unsure)
                .map_or(LinearForwardingTable::ENTRIES, |b| {
                    let ports = new.block(block).unwrap_or([0xFF; 64]);
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
            smps.submit(op, block as u32, None);
            sent += 1;
        }
        self.lft.insert(guid, new);
        (entries, sent)
    }

    /// Engines that use VLs for deadlock freedom (DOR on tori, LASH, DFSSSP) give an
    /// SL -> VL map per output port; without it on the switches the freedom they
    /// computed would not exist on the wire. One Set per output port covers every input
    /// port (the all-inputs wildcard) where the switch accepts the wildcard
    /// (SwitchInfo.OptimizedSLtoVLMappingProgramming); elsewhere (ibsim's switches,
    /// older silicon) one Set per input port (0 and every cabled one), or the unset
    /// pairs keep the switch's default map.
    fn program_vls(
        &mut self,
        subnet: &Discovered,
        smps: &mut SmpQueue,
        n: NodeIx,
        guid: u64,
        s: usize,
        routes: &Routes,
    ) {
        let node = &subnet.nodes[n];
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
            if self.sl2vl.get(&(guid, p)) == Some(&vls) {
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
                smps.submit(op.clone(), SlToVlMod::all_inputs_to(p).encode(), Some(data));
            }
            for &i in &inputs {
                smps.submit(op.clone(), SlToVlMod::pair(i, p).encode(), Some(data));
            }
            self.sl2vl.insert((guid, p), vls);
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
            smps.submit(Op::SetVlArb { node: n, port: p }, modifier, Some(data));
        }
    }
}

/// An LFT as last written to one switch: blocks `0..blocks` of row `row` of a routing
/// result, entries past the row's end 0xFF. The rows are the routes' own, shared and not
/// copied: on the largest fabrics the tables are 190 MB, and a copy of them would be a
/// fifth of the SM's memory. A switch not programmed again keeps older routes alive.
#[derive(Debug, Clone)]
pub(super) struct WrittenLft {
    routes: Arc<Routes>,
    row: usize,
    blocks: usize,
}

impl WrittenLft {
    /// The entries written, indexed by LID (up to the last block written).
    pub(super) fn entries(&self) -> &[u8] {
        let row = self.routes.lft(self.row);
        &row[..row.len().min(self.blocks * 64)]
    }

    /// Block `block` as written; `None` past the blocks written.
    fn block(&self, block: usize) -> Option<[u8; 64]> {
        if block >= self.blocks {
            return None;
        }
        let mut ports = [0xFFu8; 64];
        let row = self.entries();
        let from = (block * 64).min(row.len());
        let to = (block * 64 + 64).min(row.len());
        ports[..to - from].copy_from_slice(&row[from..to]);
        Some(ports)
    }
}

/// What programming a switch reads besides the mirror.
pub(super) struct SwitchCtx<'a> {
    pub(super) cfg: &'a SmConfig,
    /// The running heavy sweep (which switches are locked) and the last one's
    /// discovery (which switches the sweep before knew).
    pub(super) sweep: &'a Sweep,
    pub(super) last: &'a Discovery,
    /// The LIDs in force.
    pub(super) lids: &'a Lids,
    /// The highest LID in use: the LFTs' top.
    pub(super) max_lid: u16,
    /// The MulticastFDBTop each switch needs (the SA's).
    pub(super) tops: &'a HashMap<u64, u16>,
}

impl SwitchCtx<'_> {
    /// The model being programmed.
    fn subnet(&self) -> &Discovered {
        &self.sweep.found(self.last).subnet
    }
}

/// What programming one switch did, for the sweep's counters.
#[derive(Debug, Default)]
pub(super) struct Written {
    /// LFT blocks looked at: the measure of the work (`program.rs`).
    pub(super) units: usize,
    pub(super) lft_entries: u64,
    pub(super) lft_blocks: u64,
}

/// Whether MulticastFDBTop is written to switch `n`: `SmConfig::use_mfttop` and
/// its port 0 says IsMulticastFDBTopSupported (as OpenSM); a switch that does not
/// say so may take the field for something else, or ignore it.
pub(super) fn uses_mft_top(cfg: &SmConfig, subnet: &Discovered, n: NodeIx) -> bool {
    cfg.use_mfttop
        && subnet.nodes[n]
            .ports
            .first()
            .and_then(|p| p.info.as_ref())
            .is_some_and(|pi| {
                pi.capability_mask
                    .contains(CapabilityMask::IS_MULTICAST_FDB_TOP_SUPPORTED)
            })
}
