//! Multicast groups: MCMemberRecord join / leave, MLID allocation, and the
//! MulticastForwardingTable blocks that carry each group over a spanning tree of the
//! switches its members hang off.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use ibsm_wire::sa::{ComponentMask, McMemberRecord, SaStatus, Selector, join_state};
use ibsm_wire::{Gid, Mtu, MulticastForwardingTable};

use crate::db::{Db, rate_code};
use crate::server::{Requester, select_life, select_rate, select_up};
use crate::snapshot::NodeIx;

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
}

#[derive(Debug, Default)]
pub(crate) struct Groups {
    groups: BTreeMap<[u8; 16], Group>,
    next_mgid: u64,
    /// (switch GUID, MLID) -> ports as last handed out.
    programmed: HashMap<(u64, u16), BTreeSet<u8>>,
}

type Res<T> = Result<T, SaStatus>;

impl Groups {
    /// Makes `recs` the predefined groups: each is created (lowest free MLID, no
    /// members) unless a group with its MGID exists, which then keeps its MLID and
    /// members, and takes the new parameters (P_Key, Q_Key, MTU, ...) only while it has
    /// no member (members joined under the old ones); groups no longer predefined go
    /// when they have no member. Returns the MGIDs left out for want of an MLID.
    pub(crate) fn predefine(&mut self, recs: &[McMemberRecord]) -> Vec<Gid> {
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
            let Some(mlid) = self.free_mlid() else {
                left_out.push(r.mgid);
                continue;
            };
            self.groups.insert(
                r.mgid.0,
                Group {
                    rec: Self::predefined_rec(r, mlid),
                    members: BTreeMap::new(),
                    predefined: true,
                },
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

    fn free_mlid(&self) -> Option<u16> {
        let used: BTreeSet<u16> = self.groups.values().map(|g| g.rec.mlid).collect();
        (MLID_BASE..=MLID_LAST).find(|m| !used.contains(m))
    }

    pub(crate) fn retopo(&mut self, _db: &Db) {
        // A new topology may have new or reset switches: write every group again.
        self.programmed.clear();
    }

    fn member_end(
        db: &Db,
        t: &McMemberRecord,
        trusted: bool,
        from: &Requester,
    ) -> Res<crate::db::EndPort> {
        let e = *db.end_by_gid(t.port_gid).ok_or(SaStatus::ReqInvalidGid)?;
        // Joining or leaving for another port needs our SM_Key.
        if !trusted && !e.owns(from.lid) {
            return Err(SaStatus::ReqDenied);
        }
        Ok(e)
    }

    pub(crate) fn join(
        &mut self,
        db: &Db,
        t: &McMemberRecord,
        mask: ComponentMask,
        trusted: bool,
        from: &Requester,
    ) -> Result<McMemberRecord, crate::server::SaError> {
        Ok(self.join_inner(db, t, mask, trusted, from)?)
    }

    fn join_inner(
        &mut self,
        db: &Db,
        t: &McMemberRecord,
        mask: ComponentMask,
        trusted: bool,
        from: &Requester,
    ) -> Res<McMemberRecord> {
        if !mask.contains(McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE) {
            return Err(SaStatus::ReqInsufficientComponents);
        }
        if t.join_state & 0xF == 0 {
            return Err(SaStatus::ReqInvalid);
        }
        let e = Self::member_end(db, t, trusted, from)?;
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
        let mlid = self.free_mlid().ok_or(SaStatus::NoResources)?;
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
        self.groups.insert(
            mgid.0,
            Group {
                rec,
                members,
                predefined: false,
            },
        );
        let mut out = rec;
        out.port_gid = t.port_gid;
        out.join_state = t.join_state & 0xF;
        Ok(out)
    }

    pub(crate) fn leave(
        &mut self,
        db: &Db,
        t: &McMemberRecord,
        mask: ComponentMask,
        trusted: bool,
        from: &Requester,
    ) -> Result<McMemberRecord, crate::server::SaError> {
        let need =
            McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
        if !mask.contains(need) {
            return Err(SaStatus::ReqInsufficientComponents.into());
        }
        let e = Self::member_end(db, t, trusted, from)?;
        let g = self.groups.get_mut(&t.mgid.0).ok_or(SaStatus::ReqInvalid)?;
        let m = g.members.get_mut(&e.guid).ok_or(SaStatus::ReqInvalid)?;
        m.1 &= !(t.join_state & 0xF);
        let left = m.1;
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

    /// Ports of every switch for every group: a BFS tree over the switches from the
    /// first member's switch, pruned to the member switches, plus the member ports.
    fn desired(&self, db: &Db) -> HashMap<(NodeIx, u16), BTreeSet<u8>> {
        let mut want: HashMap<(NodeIx, u16), BTreeSet<u8>> = HashMap::new();
        for g in self.groups.values() {
            let mut at: Vec<(NodeIx, u8)> = Vec::new();
            for guid in g.members.keys() {
                if let Some(e) = db.end_by_guid(*guid) {
                    if let Some(a) = db.attach_switch(e) {
                        at.push(a);
                    }
                }
            }
            let Some(&(root, _)) = at.first() else {
                continue;
            };
            // BFS parents: node -> (parent, port on parent, port on node).
            let mut parent: HashMap<NodeIx, (NodeIx, u8, u8)> = HashMap::new();
            let mut seen = BTreeSet::from([root]);
            let mut q = VecDeque::from([root]);
            while let Some(n) = q.pop_front() {
                for (p, m) in db.switch_neighbours(n) {
                    if seen.insert(m) {
                        let back = db.snap.nodes[n as usize].ports[usize::from(p)]
                            .peer
                            .map_or(0, |x| x.1);
                        parent.insert(m, (n, p, back));
                        q.push_back(m);
                    }
                }
            }
            let mlid = g.rec.mlid;
            for &(sw, port) in &at {
                if db.route_of(sw).is_none() {
                    continue;
                }
                want.entry((sw, mlid)).or_default().insert(port);
                let mut n = sw;
                while let Some(&(p, op, ip)) = parent.get(&n) {
                    let child = want.entry((n, mlid)).or_default();
                    let fresh = child.insert(ip);
                    want.entry((p, mlid)).or_default().insert(op);
                    if !fresh {
                        break;
                    }
                    n = p;
                }
            }
        }
        want
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

    pub(crate) fn take_updates(&mut self, db: &Db) -> Vec<MftUpdate> {
        let want: HashMap<(u64, u16), BTreeSet<u8>> = self
            .desired(db)
            .into_iter()
            .map(|((n, m), ports)| ((db.snap.nodes[n as usize].info.node_guid, m), ports))
            .collect();
        // (switch, block) pairs touched.
        let mut touched: BTreeSet<(u64, u16)> = BTreeSet::new();
        for (k, v) in &want {
            if self.programmed.get(k) != Some(v) {
                touched.insert((k.0, (k.1 - MLID_BASE) / 32));
            }
        }
        for k in self.programmed.keys() {
            if !want.contains_key(k) {
                touched.insert((k.0, (k.1 - MLID_BASE) / 32));
            }
        }
        let by_guid: HashMap<u64, u8> = db
            .snap
            .nodes
            .iter()
            .filter(|n| n.is_switch())
            .map(|n| (n.info.node_guid, n.info.num_ports))
            .collect();
        let mut out = Vec::new();
        for (sw, block) in touched {
            let Some(&nports) = by_guid.get(&sw) else {
                continue;
            };
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
