//! PathRecords: the end ports a query names and the path between two of them.

use std::collections::HashMap;

use ibsm_wire::Gid;
use ibsm_wire::sa::{ComponentMask, PathRecord, SaStatus, Selector};

use super::SaServer;
use crate::db::EndPort;
use crate::request::SaError;
use crate::select::{select_life, select_rate, select_up};

impl SaServer {
    /// The PathRecord from the end port owning `slid` to the one owning `dlid`, as a
    /// query giving only the two LIDs gets it (`None`: no such LID or no route).
    #[must_use]
    pub fn path_record(&self, slid: u16, dlid: u16) -> Option<PathRecord> {
        let src = *self.db.end_by_lid(slid)?;
        let dst = *self.db.end_by_lid(dlid)?;
        self.build_path(
            &src,
            slid,
            &dst,
            dlid,
            &PathRecord::default(),
            ComponentMask::NONE,
        )
    }

    /// Hop count, MTU, rate and SL of the routed path from the end port owning `slid` to
    /// the one owning `dlid` (`None`: no such LID or no route).
    #[must_use]
    pub fn path_facts(&self, slid: u16, dlid: u16) -> Option<crate::PathFacts> {
        self.db.walk(self.db.end_by_lid(slid)?, dlid)
    }

    /// The (end port, LID) sources or destinations a query names: a given LID alone;
    /// otherwise every LID of the port(s) (2^LMC each, base first).
    fn ends_for(&self, gid: Option<Gid>, lid: Option<u16>) -> Result<Vec<(EndPort, u16)>, SaError> {
        let all_lids = |e: EndPort| (0..1u16 << e.lmc).map(move |i| (e, e.lid + i));
        if let Some(g) = gid {
            let e = *self
                .db
                .end_by_gid(g)
                .ok_or(SaError::Sa(SaStatus::ReqInvalidGid))?;
            return Ok(match lid {
                Some(l) if e.owns(l) => vec![(e, l)],
                Some(_) => Vec::new(),
                None => all_lids(e).collect(),
            });
        }
        if let Some(l) = lid {
            return Ok(self.db.end_by_lid(l).map(|e| (*e, l)).into_iter().collect());
        }
        Ok(self.db.ends.iter().flat_map(|e| all_lids(*e)).collect())
    }

    pub(super) fn path_records(
        &self,
        t: &PathRecord,
        mask: ComponentMask,
        limit: usize,
    ) -> Result<Vec<PathRecord>, SaError> {
        if mask.contains(PathRecord::CM_RAW_TRAFFIC) && t.raw_traffic {
            return Ok(Vec::new());
        }
        let srcs = self.ends_for(
            mask.contains(PathRecord::CM_SGID).then_some(t.sgid),
            mask.contains(PathRecord::CM_SLID).then_some(t.slid),
        )?;
        let dsts = self.ends_for(
            mask.contains(PathRecord::CM_DGID).then_some(t.dgid),
            mask.contains(PathRecord::CM_DLID).then_some(t.dlid),
        )?;
        if mask.contains(PathRecord::CM_NUMB_PATH) && t.numb_path == 0 {
            return Ok(Vec::new());
        }
        // NumbPath caps the paths of each (source port, destination port) pair; with
        // LMC > 0 a pair has up to 2^LMC x 2^LMC LID combinations, base LIDs first
        // (preference 0), the others after (preference 1).
        let per_pair = if mask.contains(PathRecord::CM_NUMB_PATH) {
            usize::from(t.numb_path)
        } else {
            usize::MAX
        };
        let mut out = Vec::new();
        let mut count: HashMap<(u64, u64), usize> = HashMap::new();
        'outer: for (s, slid) in &srcs {
            for (d, dlid) in &dsts {
                if out.len() >= limit {
                    break 'outer;
                }
                let n = count.entry((s.guid, d.guid)).or_default();
                if *n >= per_pair {
                    continue;
                }
                if let Some(mut pr) = self.build_path(s, *slid, d, *dlid, t, mask) {
                    pr.preference = u8::from(*slid != s.lid || *dlid != d.lid);
                    *n += 1;
                    out.push(pr);
                }
            }
        }
        Ok(out)
    }

    fn build_path(
        &self,
        s: &EndPort,
        slid: u16,
        d: &EndPort,
        dlid: u16,
        t: &PathRecord,
        mask: ComponentMask,
    ) -> Option<PathRecord> {
        let f = self.db.walk(s, dlid)?;
        let reversible = self.db.walk(d, slid).is_some();
        if mask.contains(PathRecord::CM_REVERSIBLE) && t.reversible && !reversible {
            return None;
        }
        let pkey =
            self.db
                .common_pkey(s, d, mask.contains(PathRecord::CM_PKEY).then_some(t.pkey))?;
        let routed_sls = self.db.snap.routes.as_ref().is_some_and(|r| r.has_sls());
        let sl = if routed_sls {
            // The engine needs this SL for deadlock freedom: no other will do.
            if mask.contains(PathRecord::CM_SL) && t.sl != f.sl {
                return None;
            }
            f.sl
        } else if mask.contains(PathRecord::CM_SL) {
            t.sl
        } else {
            0
        };
        let mtu = select_up(
            f.mtu,
            mask.contains(PathRecord::CM_MTU_SELECTOR)
                .then_some(t.mtu_selector),
            mask.contains(PathRecord::CM_MTU).then_some(u8::from(t.mtu)),
        )?;
        let rate = select_rate(
            f.mbps,
            mask.contains(PathRecord::CM_RATE_SELECTOR)
                .then_some(t.rate_selector),
            mask.contains(PathRecord::CM_RATE).then_some(t.rate),
        )?;
        let plt = select_life(
            self.db.snap.packet_life_time,
            mask.contains(PathRecord::CM_PACKET_LIFE_TIME_SELECTOR)
                .then_some(t.packet_life_time_selector),
            mask.contains(PathRecord::CM_PACKET_LIFE_TIME)
                .then_some(t.packet_life_time),
        )?;
        let pick = |bit: ComponentMask| mask.contains(bit);
        Some(PathRecord {
            service_id: if pick(PathRecord::CM_SERVICE_ID_MSB)
                || pick(PathRecord::CM_SERVICE_ID_LSB)
            {
                t.service_id
            } else {
                0
            },
            dgid: self.db.gid_of(d),
            sgid: self.db.gid_of(s),
            dlid,
            slid,
            raw_traffic: false,
            flow_label: if pick(PathRecord::CM_FLOW_LABEL) {
                t.flow_label
            } else {
                0
            },
            hop_limit: if pick(PathRecord::CM_HOP_LIMIT) {
                t.hop_limit
            } else {
                0
            },
            tclass: if pick(PathRecord::CM_TCLASS) {
                t.tclass
            } else {
                0
            },
            reversible,
            numb_path: 0,
            pkey,
            qos_class: if pick(PathRecord::CM_QOS_CLASS) {
                t.qos_class
            } else {
                0
            },
            sl,
            mtu_selector: Selector::Exactly,
            mtu: ibsm_wire::Mtu::from(mtu),
            rate_selector: Selector::Exactly,
            rate,
            packet_life_time_selector: Selector::Exactly,
            packet_life_time: plt,
            preference: 0,
        })
    }
}
