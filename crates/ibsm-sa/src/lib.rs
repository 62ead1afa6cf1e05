//! `ibsm-sa`: a sans-IO Subnet Administrator (management class 0x03).
//!
//! The SM hands the SA a read-only [`SaSnapshot`] of the subnet after each sweep (nodes,
//! ports with their PortInfo, cables, LFTs and SLs from the routing engine, the SMs);
//! [`SaServer::handle`] answers SubnAdmGet / GetTable / Set / Delete from it and returns
//! the response MADs (RMPP segments for tables, or one message for kernel RMPP).
//! Like every state machine of the workspace it is sans-IO and takes `now` as an
//! [`ibsm_wire::Instant`]: tables in segments mode run the RMPP sender protocol (window
//! from the receiver's ACKs, resends after a time-out, a total transaction timer, STOP /
//! ABORT) and Reports wait for their ReportResp, so after any input drain
//! [`SaServer::poll_transmit`] and call [`SaServer::handle_timeout`] at
//! [`SaServer::poll_timeout`].
//!
//! Served: ClassPortInfo, NodeRecord, PortInfoRecord, LinkRecord, SwitchInfoRecord,
//! LinearForwardingTableRecord, SMInfoRecord, P_KeyTableRecord, GuidInfoRecord,
//! PathRecord (walked over the LFTs: MTU and rate the minimum over the links, SL from
//! the routing engine where it uses VLs, MTU / rate / lifetime selectors), MCMemberRecord
//! (join, leave, MLID allocation, MFT blocks for the SM to write), ServiceRecord
//! (register with lease, delete, query), InformInfo (subscribe, unsubscribe) with
//! trap forwarding ([`SaServer::notice`]) and InformInfoRecord.
//!
//! Secrets: M_Keys (PortInfoRecord), SM_Keys (SMInfoRecord) and other ports' P_Key
//! tables are shown only to requests whose SA header SM_Key equals ours; matching runs
//! on what the requester may see, so a ComponentMask cannot be used to guess a key. A
//! request with a wrong non-zero SM_Key is answered ERR_REQ_DENIED and counted.
//!
//! ```
//! use ibsm_sa::{Requester, SaConfig, SaServer, SaSnapshot};
//! use ibsm_wire::sa::{NodeRecord, SaMad, SaStatus};
//! use ibsm_wire::{Instant, Method, Status};
//!
//! let mut sa = SaServer::new(SaConfig::with_sm_key(0x1234));
//! sa.load(SaSnapshot::default());
//! // A Get of a NodeRecord nobody has: ERR_NO_RECORDS.
//! let req = SaMad::request(Method::Get, 1, NodeRecord::CM_LID, &NodeRecord { lid: 7, ..Default::default() })?;
//! let out = sa.handle(Instant::ZERO, &req.to_bytes(), &Requester { lid: 1, qpn: 1 });
//! let resp = SaMad::parse(&out[0])?;
//! assert!(resp.response);
//! assert_eq!(resp.status.sa_status(), SaStatus::NoRecords);
//! // A wrong SM_Key is refused, not ignored.
//! let mut bad = req.clone();
//! bad.sm_key = 0x9999;
//! let out = sa.handle(Instant::ZERO, &bad.to_bytes(), &Requester { lid: 1, qpn: 1 });
//! assert_eq!(SaMad::parse(&out[0])?.status, Status::from(SaStatus::ReqDenied));
//! assert_eq!(sa.counters().bad_sm_key, 1);
//! # Ok::<(), ibsm_wire::Error>(())
//! ```
#![forbid(unsafe_code)]

mod db;
mod mcast;
mod request;
mod select;
mod server;
mod snapshot;

#[cfg(test)]
mod tests;

pub use db::PathFacts;
pub use mcast::{MLID_BASE, MLID_LAST, MftUpdate};
pub use request::Requester;
pub use server::{IndexedSnapshot, Report, RmppMode, SaConfig, SaCounters, SaServer, SaTransmit};
pub use snapshot::{NodeIx, SaNode, SaPort, SaSnapshot};
