//! Multicast groups: MCMemberRecord join / leave, MLID allocation (only MLIDs every
//! switch's MulticastFDBCap holds), and the MulticastForwardingTable blocks that carry
//! each group over a tree of the switches its members hang off (`tree`: central roots,
//! send-only members as senders only, loop-free order of the updates).

mod tree;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ibsm_wire::sa::{ComponentMask, McMemberRecord, SaStatus, Selector, join_state};
use ibsm_wire::{Gid, Mtu, MulticastForwardingTable};

use crate::db::{Db, rate_code};
use crate::request::Requester;
use crate::select::{select_life, select_rate, select_up};

/// First multicast LID.
pub const MLID_BASE: u16 = 0xC000;
/// Last multicast LID the SA hands out (0xFFFF is the permissive LID).
pub const MLID_LAST: u16 = 0xFFFE;

/// One MFT block to write: SubnSet(MulticastForwardingTable) with AttributeModifier
/// `position << 28 | block` to the switch with `switch_guid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MftUpdate {
    /// Node GUID of the switch.
    pub switch_guid: u64,
    /// MFT block: MLIDs `0xC000 + 32 * block ..`.
    pub block: u16,
    /// Port group: ports `16 * position ..= 16 * position + 15`.
    pub position: u8,
    /// The block.
    pub mft: MulticastForwardingTable,
}

impl MftUpdate {
    /// The SMP AttributeModifier of this block.
    #[must_use]
    pub fn attribute_modifier(&self) -> u32 {
        (u32::from(self.position) << 28) | u32::from(self.block)
    }
}

#[derive(Debug, Clone)]
struct Group {
    /// Group parameters (MGID, MLID, Q_Key, MTU, ...); port fields unused.
    rec: McMemberRecord,
    /// Port GUID -> (port GID, JoinState).
    members: BTreeMap<u64, (Gid, u8)>,
    /// Defined by the SM (`SaServer::set_predefined_groups`): stays when the last
    /// member leaves.
    predefined: bool,
    /// GUID of the switch the tree is rooted at.
    root: Option<u64>,
    /// The tree's MFT entries: switch GUID -> output ports.
    tree: HashMap<u64, BTreeSet<u8>>,
    /// Members or topology changed since `tree` was built.
    dirty: bool,
    /// Switches with members whose MFT cannot hold the group's MLID (they joined with
    /// a smaller MulticastFDBCap after the MLID was given): left out of the tree.
    beyond_cap: BTreeSet<u64>,
}

impl Group {
    fn new(rec: McMemberRecord, members: BTreeMap<u64, (Gid, u8)>, predefined: bool) -> Self {
        Self {
            rec,
            members,
            predefined,
            root: None,
            tree: HashMap::new(),
            dirty: true,
            beyond_cap: BTreeSet::new(),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Groups {
    groups: BTreeMap<[u8; 16], Group>,
    next_mgid: u64,
    /// (switch GUID, MLID) -> ports as last handed out.
    programmed: tree::Entries,
    /// What the groups' trees want, as of the last [`Self::take_updates`].
    want: tree::Entries,
    /// Hop distances of the snapshot, computed when a tree first needs them.
    hops: Option<tree::Hops>,
    /// Every block is written again at the next step (a new topology: a switch may
    /// have been reset and lost its MFT).
    rewrite: bool,
}

/// JoinState bits of a member that receives the group's traffic.
const RECEIVES: u8 = join_state::FULL_MEMBER | join_state::NON_MEMBER;

/// A McMemberRecord Set (join) or Delete (leave) as the SA received it.
#[derive(Clone, Copy)]
pub(crate) struct MemberChange<'a> {
    /// The record sent.
    pub(crate) t: &'a McMemberRecord,
    /// Its ComponentMask.
    pub(crate) mask: ComponentMask,
    /// The request carried our SM_Key: it may join or leave for other ports.
    pub(crate) trusted: bool,
    /// Who sent it.
    pub(crate) from: &'a Requester,
}

type Res<T> = Result<T, SaStatus>;

impl Groups {
    /// Makes `recs` the predefined groups: each is created (lowest free MLID, no
    /// members) unless a group with its MGID exists, which then keeps its MLID and
    /// members, and takes the new parameters (P_Key, Q_Key, MTU, ...) only while it has
    /// no member (members joined under the old ones); groups no longer predefined go
    /// when they have no member. Returns the MGIDs left out for want of an MLID.
    pub(crate) fn predefine(&mut self, db: &Db, recs: &[McMemberRecord]) -> Vec<Gid> {
        let wanted: BTreeSet<[u8; 16]> = recs.iter().map(|r| r.mgid.0).collect();
        self.groups.retain(|k, g| {
            if !wanted.contains(k) {
                g.predefined = false;
            }
            g.predefined || !g.members.is_empty()
        });
        let mut left_out = Vec::new();
        for r in recs {
            if let Some(g) = self.groups.get_mut(&r.mgid.0) {
                g.predefined = true;
                if g.members.is_empty() {
                    // A policy re-read may move the group to another partition or
                    // change its Q_Key: nobody is bound to the old values yet.
                    g.rec = Self::predefined_rec(r, g.rec.mlid);
                }
                continue;
            }
            let Some(mlid) = self.free_mlid(db) else {
                left_out.push(r.mgid);
                continue;
            };
            self.groups.insert(
                r.mgid.0,
                Group::new(Self::predefined_rec(r, mlid), BTreeMap::new(), true),
            );
        }
        left_out
    }

    /// A predefined group's record: `r`'s parameters on `mlid`, no port fields.
    fn predefined_rec(r: &McMemberRecord, mlid: u16) -> McMemberRecord {
        let mut rec = *r;
        rec.mlid = mlid;
        rec.port_gid = Gid::default();
        rec.join_state = 0;
        rec.proxy_join = false;
        rec
    }

    /// The lowest MLID no group has that every switch's MFT holds (MulticastFDBCap
    /// entries from 0xC000; the smallest cap of the subnet bounds them all).
    fn free_mlid(&self, db: &Db) -> Option<u16> {
        let last = mlid_last(db)?;
        let used: BTreeSet<u16> = self.groups.values().map(|g| g.rec.mlid).collect();
        (MLID_BASE..=last).find(|m| !used.contains(m))
    }

    pub(crate) fn retopo(&mut self, _db: &Db) {
        // A new topology may have new or reset switches and other links: every tree is
        // built again and every block written again. `programmed` stays what the
        // switches were last given, so the change is ordered like any other.
        self.hops = None;
        self.rewrite = true;
        for g in self.groups.values_mut() {
            g.dirty = true;
        }
    }

    fn member_end(db: &Db, c: MemberChange<'_>) -> Res<crate::db::EndPort> {
        let e = *db.end_by_gid(c.t.port_gid).ok_or(SaStatus::ReqInvalidGid)?;
        // Joining or leaving for another port needs our SM_Key.
        if !c.trusted && !e.owns(c.from.lid) {
            return Err(SaStatus::ReqDenied);
        }
        Ok(e)
    }

    pub(crate) fn join(&mut self, db: &Db, c: MemberChange<'_>) -> Res<McMemberRecord> {
        let MemberChange { t, mask, .. } = c;
        if !mask.contains(McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE) {
            return Err(SaStatus::ReqInsufficientComponents);
        }
        if t.join_state & 0xF == 0 {
            return Err(SaStatus::ReqInvalid);
        }
        let e = Self::member_end(db, c)?;
        let want_mgid = mask.contains(McMemberRecord::CM_MGID) && t.mgid != Gid::default();
        if want_mgid && !t.mgid.is_multicast() {
            return Err(SaStatus::ReqInvalidGid);
        }
        if want_mgid {
            if let Some(g) = self.groups.get_mut(&t.mgid.0) {
                let r = &g.rec;
                let bad = (mask.contains(McMemberRecord::CM_QKEY) && t.qkey != r.qkey)
                    || (mask.contains(McMemberRecord::CM_PKEY) && t.pkey != r.pkey)
                    || (mask.contains(McMemberRecord::CM_MTU)
                        && select_up(
                            u8::from(r.mtu),
                            mask.contains(McMemberRecord::CM_MTU_SELECTOR)
                                .then_some(t.mtu_selector),
                            Some(u8::from(t.mtu)),
                        ) != Some(u8::from(r.mtu)))
                    || (mask.contains(McMemberRecord::CM_SL) && t.sl != r.sl);
                // Only ports of the group's partition may join it.
                if bad || !db.has_pkey(&e, r.pkey) {
                    return Err(SaStatus::ReqInvalid);
                }
                let ent = g.members.entry(e.guid).or_insert((t.port_gid, 0));
                ent.1 |= t.join_state & 0xF;
                g.dirty = true;
                let mut out = g.rec;
                out.port_gid = t.port_gid;
                out.join_state = ent.1;
                out.proxy_join = t.proxy_join;
                return Ok(out);
            }
        }
        // Create.
        if !mask.contains(McMemberRecord::CM_QKEY | McMemberRecord::CM_PKEY) {
            return Err(SaStatus::ReqInsufficientComponents);
        }
        // A full member creates the group, and so does a send-only full member (IBA
        // 1.3, ClassPortInfo.CapabilityMask2 bit 12): Linux IPoIB joins a group it
        // only sends to that way, and expects it created if nobody joined it yet.
        if t.join_state & (join_state::FULL_MEMBER | join_state::SEND_ONLY_FULL_MEMBER) == 0 {
            return Err(SaStatus::ReqInvalid);
        }
        if !db.has_pkey(&e, t.pkey) {
            return Err(SaStatus::ReqInvalid);
        }
        let asked_scope =
            (mask.contains(McMemberRecord::CM_SCOPE) && t.scope != 0).then_some(t.scope);
        // A given MGID carries its scope (low nibble of byte 1): the record must agree
        // with it, whether or not the request names a Scope.
        let scope = if want_mgid {
            let s = t.mgid.0[1] & 0xF;
            if asked_scope.is_some_and(|a| a != s) {
                return Err(SaStatus::ReqInvalid);
            }
            s
        } else {
            asked_scope.unwrap_or(ibsm_wire::sa::mgid_scope::LINK_LOCAL)
        };
        // As OpenSM: no MLID left (within the smallest MulticastFDBCap) is
        // ERR_NO_RESOURCES, never an MLID some switch cannot forward.
        let mlid = self.free_mlid(db).ok_or(SaStatus::NoResources)?;
        let mgid = if want_mgid {
            t.mgid
        } else {
            self.next_mgid += 1;
            let mut b = [0u8; 16];
            b[0] = 0xFF;
            b[1] = 0x10 | scope;
            b[2] = 0xA0;
            b[3] = 0x1B;
            b[4..6].copy_from_slice(&t.pkey.to_be_bytes());
            b[8..].copy_from_slice(&self.next_mgid.to_be_bytes());
            Gid(b)
        };
        let port_mtu = db.port_mtu_cap(&e);
        let mtu = select_up(
            port_mtu,
            mask.contains(McMemberRecord::CM_MTU_SELECTOR)
                .then_some(t.mtu_selector),
            mask.contains(McMemberRecord::CM_MTU)
                .then_some(u8::from(t.mtu)),
        )
        .ok_or(SaStatus::ReqInvalid)?;
        let mbps = db
            .snap
            .nodes
            .get(e.node as usize)
            .and_then(|n| n.ports.get(usize::from(e.port)))
            .and_then(|p| p.info)
            .and_then(|i| i.active_link_mbps())
            .unwrap_or(2_500);
        let rate = select_rate(
            mbps,
            mask.contains(McMemberRecord::CM_RATE_SELECTOR)
                .then_some(t.rate_selector),
            mask.contains(McMemberRecord::CM_RATE).then_some(t.rate),
        )
        .unwrap_or_else(|| rate_code(mbps));
        let plt = select_life(
            db.snap.packet_life_time,
            mask.contains(McMemberRecord::CM_PACKET_LIFE_TIME_SELECTOR)
                .then_some(t.packet_life_time_selector),
            mask.contains(McMemberRecord::CM_PACKET_LIFE_TIME)
                .then_some(t.packet_life_time),
        )
        .unwrap_or(db.snap.packet_life_time);
        let rec = McMemberRecord {
            mgid,
            port_gid: Gid::default(),
            qkey: t.qkey,
            mlid,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::from(mtu),
            tclass: t.tclass,
            pkey: t.pkey,
            rate_selector: Selector::Exactly,
            rate,
            packet_life_time_selector: Selector::Exactly,
            packet_life_time: plt,
            sl: t.sl,
            flow_label: t.flow_label,
            hop_limit: t.hop_limit,
            scope,
            join_state: 0,
            proxy_join: false,
        };
        let mut members = BTreeMap::new();
        members.insert(e.guid, (t.port_gid, t.join_state & 0xF));
        self.groups.insert(mgid.0, Group::new(rec, members, false));
        let mut out = rec;
        out.port_gid = t.port_gid;
        out.join_state = t.join_state & 0xF;
        Ok(out)
    }

    pub(crate) fn leave(&mut self, db: &Db, c: MemberChange<'_>) -> Res<McMemberRecord> {
        let MemberChange { t, mask, .. } = c;
        let need =
            McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
        if !mask.contains(need) {
            return Err(SaStatus::ReqInsufficientComponents);
        }
        let e = Self::member_end(db, c)?;
        let g = self.groups.get_mut(&t.mgid.0).ok_or(SaStatus::ReqInvalid)?;
        let m = g.members.get_mut(&e.guid).ok_or(SaStatus::ReqInvalid)?;
        m.1 &= !(t.join_state & 0xF);
        let left = m.1;
        g.dirty = true;
        let mut out = g.rec;
        out.port_gid = t.port_gid;
        out.join_state = t.join_state & 0xF;
        if left == 0 {
            g.members.remove(&e.guid);
        }
        if g.members.is_empty() && !g.predefined {
            self.groups.remove(&t.mgid.0);
        }
        Ok(out)
    }

    /// The records a requester may see: trusted ones every membership; others the
    /// group (without members) plus their own membership.
    pub(crate) fn records(&self, db: &Db, trusted: bool, from: &Requester) -> Vec<McMemberRecord> {
        let me = db.end_by_lid(from.lid).map(|e| e.guid);
        let mut out = Vec::new();
        for g in self.groups.values() {
            let mut shown = false;
            for (guid, (gid, js)) in &g.members {
                if trusted || Some(*guid) == me {
                    let mut r = g.rec;
                    r.port_gid = *gid;
                    r.join_state = *js;
                    out.push(r);
                    shown = true;
                }
            }
            if !shown {
                out.push(g.rec);
            }
        }
        out
    }

    /// Builds the trees of the groups whose members or topology changed, and returns
    /// every group's MFT entries.
    fn desired(&mut self, db: &Db) -> tree::Entries {
        // A group without members has no tree, whatever the fabric: the all-pairs switch
        // hops are built only once a group needs a tree (on an 11,664-CA fat tree they
        // cost ~0.1 s, and a fresh subnet has only the empty IPoIB broadcast group).
        for g in self
            .groups
            .values_mut()
            .filter(|g| g.dirty && g.members.is_empty())
        {
            g.dirty = false;
            g.beyond_cap.clear();
            g.root = None;
            g.tree.clear();
        }
        if self.groups.values().any(|g| g.dirty) {
            let hops = self.hops.get_or_insert_with(|| tree::Hops::new(db));
            // Groups rooted at each switch, for spreading the roots.
            let mut uses: HashMap<u64, u32> = HashMap::new();
            for g in self.groups.values().filter(|g| !g.dirty) {
                if let Some(r) = g.root {
                    *uses.entry(r).or_default() += 1;
                }
            }
            for g in self.groups.values_mut().filter(|g| g.dirty) {
                g.dirty = false;
                let members = Self::tree_members(db, hops, g);
                let mlid = g.rec.mlid;
                g.beyond_cap = members
                    .iter()
                    .filter(|m| !hops.holds(m.sw, mlid))
                    .map(|m| hops.guid(m.sw))
                    .collect();
                let root = hops.root_for(&members, g.root, &uses, mlid);
                g.root = root.map(|r| hops.guid(r));
                g.tree = root.map_or_else(HashMap::new, |r| {
                    hops.tree_for(r, &members, mlid)
                        .into_iter()
                        .map(|(s, p)| (hops.guid(s), p))
                        .collect()
                });
                if g.tree.is_empty() {
                    g.root = None;
                }
                if let Some(r) = g.root {
                    *uses.entry(r).or_default() += 1;
                }
            }
        }
        let mut want = tree::Entries::new();
        for g in self.groups.values() {
            for (&sw, ports) in &g.tree {
                want.insert((sw, g.rec.mlid), ports.clone());
            }
        }
        want
    }

    /// The group's members on routed switches.
    fn tree_members(db: &Db, hops: &tree::Hops, g: &Group) -> Vec<tree::Member> {
        g.members
            .iter()
            .filter_map(|(guid, &(_, js))| {
                let e = db.end_by_guid(*guid)?;
                let (sw, port) = db.attach_switch(e)?;
                Some(tree::Member {
                    sw: hops.index(sw)?,
                    port,
                    receives: js & RECEIVES != 0,
                })
            })
            .collect()
    }

    /// `(MGID, MLID, switch GUID)` of every group with members on a switch whose
    /// MulticastFDBCap does not hold its MLID (as of the last tree build), sorted.
    pub(crate) fn beyond_cap(&self) -> Vec<(Gid, u16, u64)> {
        let mut out: Vec<(Gid, u16, u64)> = self
            .groups
            .values()
            .flat_map(|g| g.beyond_cap.iter().map(|&sw| (g.rec.mgid, g.rec.mlid, sw)))
            .collect();
        out.sort_unstable_by_key(|&(g, m, sw)| (m, sw, g.0));
        out
    }

    /// The root switch (GUID) of a group's tree, if it has one.
    pub(crate) fn root_of(&self, mgid: &Gid) -> Option<u64> {
        self.groups.get(&mgid.0)?.root
    }

    /// `(switch GUID, MLID, ports)` as last handed out, sorted.
    pub(crate) fn programmed(&self) -> Vec<(u64, u16, Vec<u8>)> {
        let mut out: Vec<(u64, u16, Vec<u8>)> = self
            .programmed
            .iter()
            .filter(|(_, ports)| !ports.is_empty())
            .map(|(&(sw, mlid), ports)| (sw, mlid, ports.iter().copied().collect()))
            .collect();
        out.sort_unstable();
        out
    }

    /// Whether the last [`Self::take_updates`] left changes for a later step (its
    /// Sets must all be answered first).
    pub(crate) fn pending(&self) -> bool {
        self.programmed != self.want
    }

    /// Per switch GUID, the MulticastFDBTop its MFT needs: the last MLID of the
    /// highest block in use, by what is handed out or about to be (0xBFFF: none).
    /// Never above the last MLID the switch's MulticastFDBCap holds: an SMA refuses a
    /// higher top, and the tail of a partly held block is never used.
    pub(crate) fn mft_tops(&self, db: &Db) -> HashMap<u64, u16> {
        let caps: HashMap<u64, u16> = db
            .snap
            .nodes
            .iter()
            .filter_map(|n| Some((n.info.node_guid, n.switch_info?.multicast_fdb_cap)))
            .collect();
        let mut top: HashMap<u64, u16> = HashMap::new();
        for ((sw, mlid), ports) in self.programmed.iter().chain(&self.want) {
            if ports.is_empty() {
                continue;
            }
            let mut last = MLID_BASE + ((mlid - MLID_BASE) / 32) * 32 + 31;
            if let Some(&cap) = caps.get(sw) {
                last = last.min(cap_last(cap));
            }
            let t = top.entry(*sw).or_insert(MLID_BASE - 1);
            *t = (*t).max(last);
        }
        top
    }

    /// The next step's MFT blocks (see `tree::next_step`): the caller writes them all
    /// and waits for every answer before it asks again.
    pub(crate) fn take_updates(&mut self, db: &Db) -> Vec<MftUpdate> {
        self.want = self.desired(db);
        let want = tree::next_step(&self.programmed, &self.want);
        let rewrite = std::mem::take(&mut self.rewrite);
        // (switch, block) pairs touched.
        let mut touched: BTreeSet<(u64, u16)> = BTreeSet::new();
        for (k, v) in &want {
            if rewrite || self.programmed.get(k) != Some(v) {
                touched.insert((k.0, (k.1 - MLID_BASE) / 32));
            }
        }
        for k in self.programmed.keys() {
            if rewrite || !want.contains_key(k) {
                touched.insert((k.0, (k.1 - MLID_BASE) / 32));
            }
        }
        let by_guid: HashMap<u64, (u8, u16)> = db
            .snap
            .nodes
            .iter()
            .filter(|n| n.is_switch())
            .map(|n| {
                let cap = n.switch_info.map_or(0, |si| si.multicast_fdb_cap);
                (n.info.node_guid, (n.info.num_ports, cap_last(cap)))
            })
            .collect();
        let mut out = Vec::new();
        for (sw, block) in touched {
            let Some(&(nports, last)) = by_guid.get(&sw) else {
                continue;
            };
            // A block the switch's MFT does not hold is never written (an SMA refuses
            // it); the trees leave such switches out, so only stale entries get here.
            if u32::from(MLID_BASE) + u32::from(block) * 32 > u32::from(last) {
                continue;
            }
            let positions = (usize::from(nports) + 1).div_ceil(16);
            for pos in 0..positions {
                let mut mft = MulticastForwardingTable::default();
                for i in 0..32u16 {
                    let mlid = MLID_BASE + block * 32 + i;
                    let mut mask = 0u16;
                    if let Some(ports) = want.get(&(sw, mlid)) {
                        for &p in ports {
                            let p = usize::from(p);
                            if p / 16 == pos {
                                mask |= 1 << (p % 16);
                            }
                        }
                    }
                    let _ = mft.port_masks.set(usize::from(i), mask);
                }
                out.push(MftUpdate {
                    switch_guid: sw,
                    block,
                    position: pos as u8,
                    mft,
                });
            }
        }
        self.programmed = want;
        out
    }
}

/// The highest MLID a switch with `cap` MulticastFDBCap entries holds (0xBFFF: none).
pub(crate) fn cap_last(cap: u16) -> u16 {
    (u32::from(MLID_BASE) + u32::from(cap))
        .saturating_sub(1)
        .min(u32::from(MLID_LAST)) as u16
}

/// The highest MLID every switch of the snapshot forwards (`None`: some switch has no
/// MFT at all).
fn mlid_last(db: &Db) -> Option<u16> {
    let cap = db
        .snap
        .nodes
        .iter()
        .filter_map(|n| n.switch_info.map(|si| si.multicast_fdb_cap))
        .min();
    match cap {
        None => Some(MLID_LAST),
        Some(0) => None,
        Some(c) => Some((u32::from(MLID_BASE) + u32::from(c) - 1).min(u32::from(MLID_LAST)) as u16),
    }
}

#[cfg(test)]
mod tests;
