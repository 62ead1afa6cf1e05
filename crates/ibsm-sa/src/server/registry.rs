//! What clients register with the SA: ServiceRecords and InformInfo subscriptions, and
//! the Reports a trap sends to the subscribers.

use std::time::Duration;

use ibsm_wire::sa::{
    InformInfo, InformInfoRecord, SA_CLASS_VERSION, SaAttributeId, SaMad, SaStatus, ServiceRecord,
    Template,
};
use ibsm_wire::{Gid, Instant, MadHeader, MadHeaderView, Method, MgmtClass, Notice, Status};

use super::{Answer, PendingReport, Report, SaServer, Service, Subscription, collect, invalid};
use crate::db::Db;
use crate::request::{Requester, SaError};

impl SaServer {
    pub(super) fn service(
        &mut self,
        now: Instant,
        req: &SaMad,
        trusted: bool,
        from: &Requester,
    ) -> Answer {
        self.services.retain(|s| s.expires.is_none_or(|t| t > now));
        let t: ServiceRecord = req.record(0).map_err(|_| invalid())?;
        let mask = req.component_mask;
        let own = |db: &Db, g: Gid| trusted || db.end_by_gid(g).is_some_and(|e| e.owns(from.lid));
        match req.method {
            Method::Set => {
                let need = ServiceRecord::CM_SERVICE_ID | ServiceRecord::CM_SERVICE_GID;
                if !mask.contains(need) {
                    return Err(SaStatus::ReqInsufficientComponents.into());
                }
                if self.db.end_by_gid(t.service_gid).is_none() {
                    return Err(SaStatus::ReqInvalidGid.into());
                }
                if !own(&self.db, t.service_gid) {
                    return Err(SaStatus::ReqDenied.into());
                }
                let expires = (t.service_lease != ServiceRecord::INFINITE_LEASE)
                    .then(|| now + Duration::from_secs(u64::from(t.service_lease)));
                let same = |s: &Service| {
                    s.rec.service_id == t.service_id
                        && s.rec.service_gid == t.service_gid
                        && s.rec.service_pkey == t.service_pkey
                };
                if let Some(s) = self.services.iter_mut().find(|s| same(s)) {
                    s.rec = t;
                    s.expires = expires;
                } else if self.services.len() >= self.cfg.max_registrations {
                    return Err(SaStatus::NoResources.into());
                } else {
                    self.services.push(Service { rec: t, expires });
                }
                Ok(self.single(req, Status::OK, &t))
            }
            Method::Delete => {
                let tmpl = Template::new(&t, mask);
                let pos = self
                    .services
                    .iter()
                    .position(|s| tmpl.matches(&s.rec) && own(&self.db, s.rec.service_gid))
                    .ok_or(SaError::Sa(SaStatus::NoRecords))?;
                let gone = self.services.remove(pos);
                Ok(self.single(req, Status::OK, &gone.rec))
            }
            Method::Get | Method::GetTable => {
                let table = req.method == Method::GetTable;
                let recs: Vec<ServiceRecord> = self
                    .services
                    .iter()
                    .map(|s| {
                        let mut r = s.rec;
                        if let Some(t) = s.expires {
                            r.service_lease =
                                u32::try_from((t - now).as_secs()).unwrap_or(u32::MAX - 1);
                        }
                        r
                    })
                    .collect();
                let (n, data) =
                    collect::<ServiceRecord>(req, mask, recs.into_iter(), self.limit(table))?;
                self.answer::<ServiceRecord>(req, n, &data)
            }
            _ => Err(SaError::Mad(Status::METHOD_ATTR_UNSUPPORTED)),
        }
    }

    // ------------------------------------------------------------------ InformInfo

    pub(super) fn inform(&mut self, req: &SaMad, trusted: bool, from: &Requester) -> Answer {
        let t: InformInfo = req.record(0).map_err(|_| invalid())?;
        let Some(me) = self.db.end_by_lid(from.lid).copied() else {
            return Err(SaStatus::ReqInvalid.into());
        };
        if t.gid != Gid::default() && !trusted && self.db.end_by_gid(t.gid).is_none() {
            return Err(SaStatus::ReqInvalidGid.into());
        }
        let gid = self.db.gid_of(&me);
        let same = |s: &Subscription| {
            let i = &s.rec.inform_info;
            s.lid == from.lid
                && i.gid == t.gid
                && i.lid_range_begin == t.lid_range_begin
                && i.lid_range_end == t.lid_range_end
                && i.is_generic == t.is_generic
                && i.notice_type == t.notice_type
                && i.trap_number == t.trap_number
                && i.producer_type == t.producer_type
                && i.qpn == t.qpn
        };
        if t.subscribe == 1 {
            if !self.subs.iter().any(&same) {
                if self.subs.len() >= self.cfg.max_registrations {
                    return Err(SaStatus::NoResources.into());
                }
                let e = self
                    .subs
                    .iter()
                    .filter(|s| s.lid == from.lid)
                    .map(|s| s.rec.subscriber_enum + 1)
                    .max()
                    .unwrap_or(0);
                self.subs.push(Subscription {
                    rec: InformInfoRecord {
                        subscriber_gid: gid,
                        subscriber_enum: e,
                        inform_info: t,
                    },
                    lid: from.lid,
                });
            }
        } else {
            let before = self.subs.len();
            self.subs.retain(|s| !same(s));
            if before == self.subs.len() {
                return Err(SaStatus::NoRecords.into());
            }
        }
        Ok(self.single(req, Status::OK, &t))
    }

    /// A trap the SM received: the Reports to send now to every subscriber it
    /// concerns. Each stays pending until the subscriber's SubnAdmReportResp arrives
    /// ([`Self::handle`]); unanswered ones are resent through [`Self::poll_transmit`]
    /// after [`SaConfig::report_timeout`](crate::SaConfig::report_timeout), at most [`SaConfig::report_retries`](crate::SaConfig::report_retries) times.
    pub fn notice(&mut self, now: Instant, notice: &Notice) -> Vec<Report> {
        let mut out = Vec::new();
        let producer = notice.producer_type & 0x00FF_FFFF;
        for s in &self.subs {
            let i = &s.rec.inform_info;
            if i.is_generic != u8::from(notice.is_generic) {
                continue;
            }
            if i.trap_number != InformInfo::ALL && i.trap_number != notice.trap_number {
                continue;
            }
            if i.notice_type != InformInfo::ALL
                && i.notice_type != u16::from(u8::from(notice.notice_type))
            {
                continue;
            }
            if i.producer_type != InformInfo::ALL_PRODUCERS && i.producer_type != producer {
                continue;
            }
            let lid = notice.issuer_lid;
            let in_range = if i.gid != Gid::default() {
                self.db.end_by_gid(i.gid).is_some_and(|e| e.owns(lid))
            } else if i.lid_range_begin == InformInfo::ALL_LIDS {
                true
            } else if i.lid_range_end == 0 {
                lid == i.lid_range_begin
            } else {
                (i.lid_range_begin..=i.lid_range_end).contains(&lid)
            };
            if !in_range {
                continue;
            }
            self.report_tid += 1;
            let mut m = SaMad {
                header: MadHeader {
                    base_version: 1,
                    mgmt_class: MgmtClass::SubnAdm,
                    class_version: SA_CLASS_VERSION,
                    method: Method::Report,
                    transaction_id: self.report_tid,
                    attribute_id: SaAttributeId::Notice.into(),
                    ..MadHeader::default()
                },
                ..SaMad::default()
            };
            let _ = notice.emit_into(&mut m.data);
            out.push(Report {
                dlid: s.lid,
                qpn: i.qpn,
                mad: m.to_bytes().to_vec(),
            });
        }
        for r in &out {
            self.reports.push(PendingReport {
                to: Requester {
                    lid: r.dlid,
                    qpn: r.qpn,
                },
                tid: MadHeaderView::new_checked(&r.mad[..]).map_or(0, |h| h.transaction_id()),
                mad: r.mad.clone(),
                deadline: now + self.cfg.report_timeout,
                resends: 0,
            });
        }
        self.counters.reports += out.len() as u64;
        out
    }
}
