//! The SA served by the engine over the simulator: a second client (a tool attached at
//! another CA) sends SA queries to the SM's LID and checks the answers against what
//! the simulated nodes hold, multi-MAD (RMPP) tables included, and the key rules.

mod common;

use std::time::Duration;

use ibsm_manager::{MKeyMode, SmConfig, SmEvent, SubnetManager, driver};
use ibsm_sim::{Fault, Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::generate;
use ibsm_transport::{Address, Incoming, Instant, LidAddress, Transport, TransportError};
use ibsm_wire::sa::rmpp::{Reassembler, VecBuffer};
use ibsm_wire::sa::{
    ComponentMask, InformInfo, LinearForwardingTableRecord, LinkRecord, McMemberRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, SaAttributeId, SaMad, SaRecord, SaStatus,
    SmInfoRecord, SwitchInfoRecord, join_state,
};
use ibsm_wire::{Gid, Method, Status};

const KEY: u64 = 0x5eed_0000_0000_00aa;
const MKEY: u64 = 0x0123_4567_89ab_cdef;

struct Rig {
    sim: Sim<SmaAgent>,
    sm: SubnetManager,
    port: SimPort<SmaAgent>,
    tool: SimPort<SmaAgent>,
    tool_lid: u16,
    tool_node: ibsm_sim::NodeIdx,
    /// The statistics of the first SUBNET UP.
    up: ibsm_manager::SweepStats,
}

fn rig() -> Rig {
    rig_on(&generate::k_ary_n_tree(4, 2).unwrap(), |_| {})
}

/// The SM on the first CA of `fabric`, the tool on the seventh; `prepare` may change
/// the simulated nodes before the SM's first sweep.
fn rig_on(fabric: &ibsm_topology::Fabric, prepare: impl FnOnce(&mut Sim<SmaAgent>)) -> Rig {
    rig_sim(fabric, SimConfig::default(), prepare)
}

/// As [`rig_on`], on a simulator configured by `sc`.
fn rig_sim(
    fabric: &ibsm_topology::Fabric,
    sc: SimConfig,
    prepare: impl FnOnce(&mut Sim<SmaAgent>),
) -> Rig {
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(fabric, sc).unwrap();
    prepare(&mut sim);
    let mut cas = fabric.cas();
    let (_, a) = cas.next().unwrap();
    let (_, b) = cas.nth(5).unwrap();
    let mut port = sim
        .attach_sm(sim.node_by_guid(a.guid().0).unwrap(), 1)
        .unwrap();
    let tool_node = sim.node_by_guid(b.guid().0).unwrap();
    let tool = sim.attach_tool(tool_node, 1).unwrap();
    let mut cfg = SmConfig::default();
    cfg.sa = true;
    // The SA over the tables the ports hold, no partition policy writing them and no
    // predefined group taking an MLID (`default_policy.rs` tests the default policy).
    cfg.partitions = None;
    cfg.sm_key = KEY;
    cfg.m_key = MKeyMode::Single(MKEY);
    let mut sm = SubnetManager::new(cfg, port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    let mut up = None;
    driver::run(&mut sm, &mut port, Instant::from_secs(60), |ev| {
        if let SmEvent::SubnetUp { stats } = ev {
            up = Some(stats.clone());
        }
        up.is_some()
    })
    .unwrap();
    let up = up.expect("SUBNET UP");
    let tool_guid = b.port(1).unwrap().guid.0;
    let tool_lid = sm.lids()[&tool_guid].0;
    Rig {
        sim,
        sm,
        port,
        tool,
        tool_lid,
        tool_node,
        up,
    }
}

impl Rig {
    /// Sends `req` from the tool to the SM and returns the answer MADs.
    fn ask(&mut self, req: &SaMad) -> Vec<Vec<u8>> {
        let dst = Address::Lid(LidAddress::gsi(self.sm.sm_lid(), 0));
        self.tool.send(&dst, &req.to_bytes()).unwrap();
        let until = self.port.now() + Duration::from_millis(50);
        driver::run(&mut self.sm, &mut self.port, until, |_| false).unwrap();
        let mut out = Vec::new();
        loop {
            match self.tool.recv(self.tool.now()) {
                Ok(Incoming::Mad(rx)) => out.push(rx.mad),
                Ok(_) => {}
                Err(TransportError::Timeout) => break,
                Err(e) => panic!("{e}"),
            }
        }
        out
    }

    /// A GetTable: reassembled records.
    fn table<R: SaRecord>(&mut self, mask: u64, t: &R, sm_key: u64) -> (Status, Vec<R>) {
        let mut req = SaMad::request(Method::GetTable, 0x77, mask.into(), t).unwrap();
        req.sm_key = sm_key;
        let got = self.fetch(&req, RxPlan::default());
        let rx = got.rx.expect("complete");
        let mut h = [0u8; 256];
        h[..56].copy_from_slice(rx.header());
        let status = SaMad::parse(&h).map(|h| h.status).unwrap();
        let recs = rx.records::<R>().map(Iterator::collect).unwrap_or_default();
        (status, recs)
    }

    /// Lets the SM run for `d` of virtual time; returns what reached the tool.
    fn step(&mut self, d: Duration) -> Vec<Vec<u8>> {
        let until = self.port.now() + d;
        driver::run(&mut self.sm, &mut self.port, until, |_| false).unwrap();
        let mut out = Vec::new();
        while let Ok(Incoming::Mad(rx)) = self.tool.recv(self.tool.now()) {
            out.push(rx.mad);
        }
        out
    }

    fn send_to_sm(&mut self, mad: &[u8]) {
        let dst = Address::Lid(LidAddress::gsi(self.sm.sm_lid(), 0));
        self.tool.send(&dst, mad).unwrap();
    }

    /// Sends a GetTable and plays the receiving side of RMPP as `plan` says: ACK
    /// whatever arrived (SegmentNumber = last in order, NewWindowLast = that plus the
    /// window), lose one segment once, or ABORT.
    fn fetch(&mut self, req: &SaMad, plan: RxPlan) -> Fetched {
        let window = plan.window.max(1);
        self.send_to_sm(&req.to_bytes());
        let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 24));
        let mut got = Fetched::default();
        let mut dropped = false;
        let give_up = self.port.now() + Duration::from_secs(30);
        while self.port.now() < give_up {
            let mads = self.step(Duration::from_millis(1));
            let mut any = false;
            for m in mads {
                if m[8..16] != req.transaction_id.to_be_bytes() {
                    continue;
                }
                match m[25] {
                    1 => {}
                    4 => {
                        got.sa_aborts += 1;
                        continue;
                    }
                    _ => continue,
                }
                got.data += 1;
                let seg = u32::from_be_bytes(m[28..32].try_into().unwrap());
                if plan.drop_once == Some(seg) && !dropped {
                    dropped = true;
                    got.dropped += 1;
                    continue;
                }
                any = true;
                if rx.push(&m).is_err() {
                    got.out_of_order += 1;
                }
            }
            if !any {
                continue;
            }
            if plan.abort_after.is_some_and(|a| rx.last_segment() >= a) {
                let mut abort = rx.ack(0);
                abort[25] = 4;
                abort[27] = 127;
                abort[28..36].fill(0);
                self.send_to_sm(&abort);
                got.aborted = true;
                return got;
            }
            self.send_to_sm(&rx.ack(window));
            got.acks += 1;
            if rx.is_complete() {
                // Let the final ACK reach the SA; nothing of this TID may follow.
                let late = self
                    .step(Duration::from_millis(2))
                    .into_iter()
                    .filter(|m| m[8..16] == req.transaction_id.to_be_bytes())
                    .count();
                assert_eq!(late, 0, "MADs after the final ACK");
                got.rx = Some(rx);
                return got;
            }
        }
        panic!("no complete answer in 30 s: {got:?}");
    }
}

/// How the tool receives one RMPP transfer.
#[derive(Debug, Clone, Copy, Default)]
struct RxPlan {
    /// NewWindowLast - SegmentNumber in its ACKs (0 = 1).
    window: u32,
    /// Lose this segment the first time it arrives.
    drop_once: Option<u32>,
    /// ABORT once this many segments arrived in order.
    abort_after: Option<u32>,
}

#[derive(Debug, Default)]
struct Fetched {
    rx: Option<Reassembler<VecBuffer>>,
    /// DATA segments received (duplicates included).
    data: usize,
    dropped: usize,
    out_of_order: usize,
    acks: usize,
    sa_aborts: usize,
    aborted: bool,
}

#[test]
fn node_port_link_sm_records_match_the_fabric() {
    let mut r = rig();
    // 16 CAs + 8 switches, one NodeRecord per end port: several RMPP segments.
    let (st, nodes) = r.table(0, &NodeRecord::default(), 0);
    assert!(st.is_ok());
    assert_eq!(nodes.len(), r.sm.subnet().nodes.len());
    for n in &nodes {
        let (lid, _) = r.sm.lids()[&n.node_info.port_guid];
        assert_eq!(lid, n.lid, "LID of {:#x}", n.node_info.port_guid);
    }
    // One LinkRecord per cable direction.
    let (_, links) = r.table(0, &LinkRecord::default(), 0);
    assert_eq!(links.len(), 2 * r.sm.subnet().link_count());
    // NodeRecord by LID: exactly the tool's own node.
    let t = NodeRecord {
        lid: r.tool_lid,
        ..NodeRecord::default()
    };
    let (_, one) = r.table(NodeRecord::CM_LID.0, &t, 0);
    assert_eq!(one.len(), 1);
    // SwitchInfoRecords and LFT records hold what the simulated switches hold.
    let (_, sis) = r.table(0, &SwitchInfoRecord::default(), 0);
    assert_eq!(sis.len(), r.sm.subnet().switch_count());
    let (_, lfts) = r.table(0, &LinearForwardingTableRecord::default(), 0);
    for si in &sis {
        let guid = nodes
            .iter()
            .find(|n| n.lid == si.lid)
            .map(|n| n.node_info.node_guid)
            .unwrap();
        let node = r.sim.node_by_guid(guid).unwrap();
        let (held, lft) = r.sim.with_agent(node, |a| {
            (a.sma().switch_info().unwrap(), a.sma().lft().to_vec())
        });
        assert_eq!(si.switch_info.linear_fdb_top, held.linear_fdb_top);
        let mine: Vec<u8> = lfts
            .iter()
            .filter(|b| b.lid == si.lid)
            .flat_map(|b| b.lft.ports)
            .collect();
        let top = usize::from(held.linear_fdb_top);
        assert_eq!(mine[..=top], lft[..=top], "LFT of switch LID {}", si.lid);
    }
    // SMInfoRecord: our SM, master, key hidden without the SM_Key.
    let (_, sms) = r.table(0, &SmInfoRecord::default(), 0);
    assert_eq!(sms.len(), 1);
    assert_eq!(sms[0].lid, r.sm.sm_lid());
    assert_eq!(sms[0].sm_info.sm_key, 0);
    let (_, sms) = r.table(0, &SmInfoRecord::default(), KEY);
    assert_eq!(sms[0].sm_info.sm_key, KEY);
}

#[test]
fn path_record_between_two_lids() {
    let mut r = rig();
    let t = PathRecord {
        slid: r.sm.sm_lid(),
        dlid: r.tool_lid,
        ..PathRecord::default()
    };
    let mask = PathRecord::CM_SLID | PathRecord::CM_DLID;
    let (st, prs) = r.table(mask.0, &t, 0);
    assert!(st.is_ok());
    assert_eq!(prs.len(), 1);
    let pr = prs[0];
    assert_eq!((pr.slid, pr.dlid), (r.sm.sm_lid(), r.tool_lid));
    assert!(pr.reversible);
    assert_eq!(pr.pkey, 0xFFFF);
    assert!(u8::from(pr.mtu) >= 1 && pr.rate.mbps().is_some());
    // Unknown LID: empty table.
    let t = PathRecord {
        slid: r.sm.sm_lid(),
        dlid: 999,
        ..PathRecord::default()
    };
    let (st, prs) = r.table(mask.0, &t, 0);
    assert!(st.is_ok() && prs.is_empty());
}

/// Ports of HDR, NDR and XDR fabrics report their extended speeds only to an SM that
/// sets PortInfo modifier bit 31: the SM's model holds them and PathRecords carry
/// their rates (4x: 200, 400, 800 Gb/s), as 4x QDR gives 40 Gb/s.
#[test]
fn path_records_carry_hdr_ndr_and_xdr_rates() {
    use ibsm_topology::{ActiveSpeed, ActiveWidth};
    use ibsm_wire::sa::Rate;
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    for (speed, rate) in [
        (ActiveSpeed::Qdr, Rate::G40),
        (ActiveSpeed::Hdr, Rate::G200),
        (ActiveSpeed::Ndr, Rate::G400),
        (ActiveSpeed::Xdr, Rate::G800),
    ] {
        let sc = SimConfig {
            link_speed: speed,
            ..SimConfig::default()
        };
        let mut r = rig_sim(&fabric, sc, |_| {});
        let t = PathRecord {
            slid: r.sm.sm_lid(),
            dlid: r.tool_lid,
            ..PathRecord::default()
        };
        let mask = PathRecord::CM_SLID | PathRecord::CM_DLID;
        let (st, prs) = r.table(mask.0, &t, 0);
        assert!(st.is_ok());
        assert_eq!(prs.first().map(|p| p.rate), Some(rate), "{speed:?}");
        let f = r.sm.fabric().expect("model");
        for (id, n) in f.nodes() {
            for (p, port) in n.ports().filter(|(p, _)| *p != 0) {
                if f.port_peer(id, p).is_some() {
                    assert_eq!(
                        (port.speed, port.width),
                        (speed, ActiveWidth::X4),
                        "{speed:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn m_keys_only_with_the_sm_key_and_wrong_keys_refused() {
    let mut r = rig();
    let t = PortInfoRecord {
        endport_lid: r.tool_lid,
        ..PortInfoRecord::default()
    };
    let mask = PortInfoRecord::CM_ENDPORT_LID.0;
    let (_, open) = r.table(mask, &t, 0);
    assert_eq!(open.len(), 1);
    assert_eq!(
        open[0].port_info.m_key, 0,
        "M_Key leaked without the SM_Key"
    );
    let (_, trusted) = r.table(mask, &t, KEY);
    assert_eq!(trusted[0].port_info.m_key, MKEY);
    // Guessing the key through the ComponentMask finds nothing.
    let mut guess = t;
    guess.port_info.m_key = MKEY;
    let (_, g) = r.table(mask | PortInfoRecord::CM_M_KEY.0, &guess, 0);
    assert!(g.is_empty());
    // A wrong key: an error, counted.
    let (st, recs) = r.table(mask, &t, 0xBAD);
    assert_eq!(st, Status::from(SaStatus::ReqDenied));
    assert!(recs.is_empty());
    assert_eq!(r.sm.sa().unwrap().counters().bad_sm_key, 1);
}

#[test]
fn multicast_join_allocates_an_mlid_and_programs_mfts() {
    let mut r = rig();
    let tool_guid =
        r.sm.lids()
            .iter()
            .find(|(_, v)| v.0 == r.tool_lid)
            .map(|(k, _)| *k)
            .unwrap();
    let t = McMemberRecord {
        port_gid: Gid::new(ibsm_wire::DEFAULT_SUBNET_PREFIX, tool_guid),
        qkey: 0x1234,
        pkey: 0xFFFF,
        join_state: join_state::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let mask = McMemberRecord::CM_PORT_GID
        | McMemberRecord::CM_QKEY
        | McMemberRecord::CM_PKEY
        | McMemberRecord::CM_JOIN_STATE;
    let req = SaMad::request(Method::Set, 9, mask, &t).unwrap();
    let out = r.ask(&req);
    let resp = SaMad::parse(&out[0]).unwrap();
    assert!(resp.status.is_ok(), "{:?}", resp.status);
    let rec: McMemberRecord = resp.record(0).unwrap();
    assert_eq!(rec.mlid, 0xC000);
    assert!(rec.mgid.is_multicast());
    // The SM wrote the MFT: the tool's switch now forwards MLID 0xC000 to the tool.
    let (sw, sw_port) = r.sim.peer(r.tool_node, 1).unwrap();
    let mft = |r: &Rig| {
        r.sim
            .with_agent(sw, |a| a.sma().mft(0xC000).map(<[u16]>::to_vec))
            .unwrap()
    };
    assert!(
        mft(&r)[usize::from(sw_port / 16)] & (1 << (sw_port % 16)) != 0,
        "MFT of the tool's switch: {:?}",
        mft(&r)
    );
    let (_, groups) = r.table(0, &McMemberRecord::default(), KEY);
    assert_eq!(groups.len(), 1);
    // Leave: the group goes away.
    let mut l = t;
    l.mgid = rec.mgid;
    let req = SaMad::request(Method::Delete, 10, mask | McMemberRecord::CM_MGID, &l).unwrap();
    let out = r.ask(&req);
    assert!(SaMad::parse(&out[0]).unwrap().status.is_ok());
    let (_, groups) = r.table(0, &McMemberRecord::default(), KEY);
    assert!(groups.is_empty());
    assert!(
        mft(&r).iter().all(|&m| m == 0),
        "MFT cleared after the leave"
    );
}

#[test]
fn traps_reach_inform_info_subscribers_as_reports() {
    let mut r = rig();
    // The simulator hands unsolicited MADs (Reports) only to an attachment that owns its
    // port; the tool claims it (IsSM) for that.
    r.tool.set_is_sm(true).unwrap();
    // Subscribe to every generic trap from every LID, Reports to QP 1.
    let ii = InformInfo {
        lid_range_begin: InformInfo::ALL_LIDS,
        is_generic: 1,
        subscribe: 1,
        notice_type: InformInfo::ALL,
        trap_number: InformInfo::ALL,
        qpn: 1,
        producer_type: InformInfo::ALL_PRODUCERS,
        ..InformInfo::default()
    };
    let req = SaMad::request(Method::Set, 11, ComponentMask::NONE, &ii).unwrap();
    let out = r.ask(&req);
    assert!(SaMad::parse(&out[0]).unwrap().status.is_ok());
    // A cable goes down: its switch traps (128) to the SM, which forwards it.
    let (sw, p) = r.sim.peer(r.tool_node, 1).unwrap();
    let other = (1..=8u8)
        .find(|&q| q != p && r.sim.peer(sw, q).is_some())
        .unwrap();
    r.sim.apply(Fault::LinkDown {
        node: sw,
        port: other,
    });
    // The subscriber ignores the first copy of each Report and answers the second:
    // the SA resends until the ReportResp arrives, then stops.
    let mut seen: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut answered = 0;
    for _ in 0..2000 {
        for m in r.step(Duration::from_millis(1)) {
            let Ok(rep) = SaMad::parse(&m) else { continue };
            if rep.method != Method::Report || rep.response {
                continue;
            }
            assert_eq!(rep.attribute_id, SaAttributeId::Notice);
            let n = seen.entry(rep.transaction_id).or_default();
            *n += 1;
            assert!(
                *n <= 2,
                "Report {:#x} resent after its ReportResp",
                rep.transaction_id
            );
            if *n == 2 {
                let mut resp = rep;
                resp.response = true;
                r.send_to_sm(&resp.to_bytes());
                answered += 1;
            }
        }
    }
    assert!(!seen.is_empty(), "no Report");
    assert!(seen.values().all(|&n| n == 2), "{seen:?}");
    let c = r.sm.sa().unwrap().counters();
    assert_eq!(c.reports, seen.len() as u64);
    assert_eq!(c.report_resends, seen.len() as u64);
    assert_eq!(c.report_acks, answered);
    assert_eq!(
        (c.reports_failed, r.sm.sa().unwrap().reports_pending()),
        (0, 0)
    );
}

/// A NodeRecord table of a 648-CA fat tree (hundreds of RMPP segments) through a
/// receiver with a small window that loses one segment once, after one transfer it
/// aborts: checked against a listing made from the simulated nodes themselves.
#[test]
fn rmpp_tables_follow_the_receivers_window_losses_and_aborts() {
    let fabric = generate::fat_tree(36, 2).unwrap();
    assert_eq!(fabric.cas().count(), 648);
    let mut r = rig_on(&fabric, |_| {});
    let req = SaMad::request(
        Method::GetTable,
        0x51,
        ComponentMask::NONE,
        &NodeRecord::default(),
    )
    .unwrap();
    // First the receiver gives up after 10 segments: the SA stops at once.
    let got = r.fetch(
        &req,
        RxPlan {
            window: 4,
            abort_after: Some(10),
            ..RxPlan::default()
        },
    );
    assert!(got.aborted);
    assert!(got.data <= 10 + 4, "{got:?}");
    let late = (0..500)
        .flat_map(|_| r.step(Duration::from_millis(1)))
        .filter(|m| m[8..16] == req.transaction_id.to_be_bytes())
        .count();
    assert_eq!(late, 0, "segments after the ABORT");
    let sa = r.sm.sa().unwrap();
    assert_eq!(sa.counters().rmpp_aborted, 1);
    assert_eq!(sa.transfers_in_progress(), 0);

    // Then the whole table, window 5, segment 17 lost once.
    let mut req = req;
    req.transaction_id = 0x52;
    let got = r.fetch(
        &req,
        RxPlan {
            window: 5,
            drop_once: Some(17),
            ..RxPlan::default()
        },
    );
    let rx = got.rx.as_ref().expect("complete");
    let segments = rx.expected_segments().unwrap();
    assert!(segments > 300, "{segments} segments");
    assert_eq!(got.dropped, 1);
    // The window held: never more than 5 segments past the last ACK, so the loss
    // costs one window of out-of-order segments, resent after the time-out.
    assert!(got.out_of_order <= 5, "{got:?}");
    assert!(got.data as u32 <= segments + 6, "{got:?}");
    let sa = r.sm.sa().unwrap();
    let c = sa.counters();
    assert_eq!((c.rmpp_completed, c.rmpp_resends), (1, 1), "{c:?}");
    assert_eq!(sa.transfers_in_progress(), 0);
    assert_eq!(sa.poll_timeout(), None);

    // Brute force: one record per CA port and per switch, with the LID the node's SMA
    // holds and the facts of the fabric model.
    let mut want: Vec<(u64, u64, u16, u8)> = Vec::new();
    for (id, n) in fabric.nodes() {
        let node = r.sim.node_by_guid(n.guid().0).unwrap();
        if n.is_switch() {
            let lid = r.sim.with_agent(node, |a| a.sma().lid(0)).unwrap();
            want.push((n.guid().0, n.guid().0, lid, n.num_ports()));
        } else {
            for p in 1..=n.num_ports() {
                let Some(port) = n.port(p) else { continue };
                if fabric.port_peer(id, p).is_none() {
                    continue;
                }
                let lid = r.sim.with_agent(node, |a| a.sma().lid(p)).unwrap();
                want.push((n.guid().0, port.guid.0, lid, n.num_ports()));
            }
        }
    }
    let mut have: Vec<(u64, u64, u16, u8)> = rx
        .records::<NodeRecord>()
        .unwrap()
        .map(|n| {
            (
                n.node_info.node_guid,
                n.node_info.port_guid,
                n.lid,
                n.node_info.num_ports,
            )
        })
        .collect();
    want.sort_unstable();
    have.sort_unstable();
    assert_eq!(have.len(), 648 + fabric.switches().count());
    assert_eq!(have, want);
}

/// Two SMs on `at`, the first (higher priority) up as master, the second settled as
/// Standby; then one more heavy sweep of the master, which polls the standby as it is.
fn master_and_standby(
    sim: &mut Sim<SmaAgent>,
    at: [ibsm_sim::NodeIdx; 2],
    cfgs: [SmConfig; 2],
) -> Vec<common::Node> {
    let [c0, c1] = cfgs;
    let mut nodes = vec![
        common::attach(sim, at[0], c0, None),
        common::attach(sim, at[1], c1, None),
    ];
    common::until_up(sim, &mut nodes, 0, Duration::from_secs(60));
    let settled = common::drive(sim, &mut nodes, Instant::from_secs(120), |_, ns| {
        ns[1].sm.role() == ibsm_manager::Role::Standby
    });
    assert!(settled);
    let now = sim.now();
    nodes[0].sm.request_heavy_sweep(now);
    common::until_up(sim, &mut nodes, 0, Duration::from_secs(60));
    nodes
}

/// Two SMs: the master's SA lists both in SMInfoRecord (GUID, LID, priority, state,
/// ActCount), their SM_Keys only for a requester with the SM_Key.
#[test]
fn sm_info_records_list_every_sm() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim = common::sim_of(&fabric, SimConfig::default());
    let cas = common::ca_nodes(&sim, &fabric);
    let cfg = |priority: u8, sa: bool| {
        let mut c = SmConfig::default();
        c.priority = priority;
        c.sm_key = KEY;
        c.sa = sa;
        c.polling_timeout = Duration::from_secs(1);
        c
    };
    // The master's heavy sweep after the standby settled polls it as it now is.
    let mut nodes = master_and_standby(&mut sim, [cas[0], cas[9]], [cfg(9, true), cfg(2, true)]);
    let mut tool = sim.attach_tool(cas[5], 1).unwrap();
    let master_lid = nodes[0].sm.sm_lid();
    let mut ask = |sim: &mut Sim<SmaAgent>, nodes: &mut [common::Node], key: u64, tid: u64| {
        let mut req = SaMad::request(
            Method::GetTable,
            tid,
            ComponentMask::NONE,
            &SmInfoRecord::default(),
        )
        .unwrap();
        req.sm_key = key;
        let dst = Address::Lid(LidAddress::gsi(master_lid, 0));
        tool.send(&dst, &req.to_bytes()).unwrap();
        // The tool's inbox stops the simulator's clock until it is read: drive until
        // the answer is there.
        let until = sim.now() + Duration::from_millis(20);
        assert!(common::drive(sim, nodes, until, |_, _| tool.pending() > 0));
        let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 16));
        while let Ok(Incoming::Mad(m)) = tool.recv(tool.now()) {
            if m.mad[8..16] == tid.to_be_bytes() && m.mad[25] == 1 {
                let _ = rx.push(&m.mad);
            }
        }
        assert!(rx.is_complete(), "one segment holds two records");
        // The final ACK, so the SA does not resend.
        tool.send(&dst, &rx.ack(1)).unwrap();
        let until = sim.now() + Duration::from_millis(1);
        common::drive(sim, nodes, until, |_, _| false);
        let mut recs: Vec<SmInfoRecord> = rx.records().unwrap().collect();
        recs.sort_by_key(|r| r.sm_info.priority);
        recs
    };
    let open = ask(&mut sim, &mut nodes, 0, 0x61);
    assert_eq!(open.len(), 2, "{open:?}");
    let standby_lid = sim.with_agent(cas[9], |a| a.sma().lid(1)).unwrap();
    let (b, a) = (open[0], open[1]);
    assert_eq!(a.lid, master_lid);
    assert_eq!(a.sm_info.guid, nodes[0].sm.sm_info().guid);
    assert_eq!(a.sm_info.sm_state, ibsm_wire::SmState::Master);
    assert_eq!(a.sm_info.priority, 9);
    assert_eq!(b.lid, standby_lid);
    assert_eq!(b.sm_info.guid, nodes[1].sm.sm_info().guid);
    assert_eq!(b.sm_info.sm_state, ibsm_wire::SmState::Standby);
    assert_eq!(b.sm_info.priority, 2);
    assert!(a.sm_info.act_count > 0);
    assert!(open.iter().all(|r| r.sm_info.sm_key == 0), "keys hidden");
    let trusted = ask(&mut sim, &mut nodes, KEY, 0x62);
    assert_eq!(trusted.len(), 2);
    assert!(trusted.iter().all(|r| r.sm_info.sm_key == KEY));
    // A wrong key: refused and counted.
    let mut bad = SaMad::request(
        Method::Get,
        0x63,
        ComponentMask::NONE,
        &SmInfoRecord::default(),
    )
    .unwrap();
    bad.sm_key = 0xBAD;
    let dst = Address::Lid(LidAddress::gsi(master_lid, 0));
    tool.send(&dst, &bad.to_bytes()).unwrap();
    let until = sim.now() + Duration::from_millis(20);
    assert!(common::drive(&mut sim, &mut nodes, until, |_, _| tool
        .pending()
        > 0));
    let Ok(Incoming::Mad(m)) = tool.recv(tool.now()) else {
        panic!("no answer")
    };
    assert_eq!(
        SaMad::parse(&m.mad).unwrap().status,
        Status::from(SaStatus::ReqDenied)
    );
    assert_eq!(nodes[0].sm.sa().unwrap().counters().bad_sm_key, 1);
}

/// SMInfoRecords from the master's SA, fetched by `tool` (one segment, ACKed).
fn sm_info_records(
    sim: &mut Sim<SmaAgent>,
    nodes: &mut [common::Node],
    tool: &mut SimPort<SmaAgent>,
    master_lid: u16,
    tid: u64,
) -> Vec<SmInfoRecord> {
    let req = SaMad::request(
        Method::GetTable,
        tid,
        ComponentMask::NONE,
        &SmInfoRecord::default(),
    )
    .unwrap();
    let dst = Address::Lid(LidAddress::gsi(master_lid, 0));
    tool.send(&dst, &req.to_bytes()).unwrap();
    let until = sim.now() + Duration::from_millis(20);
    assert!(common::drive(sim, nodes, until, |_, _| tool.pending() > 0));
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 16));
    let mut got = Vec::new();
    while let Ok(Incoming::Mad(m)) = tool.recv(tool.now()) {
        got.push(m.mad[..40].to_vec());
        if m.mad[8..16] == tid.to_be_bytes() && m.mad[25] == 1 {
            let _ = rx.push(&m.mad);
        }
    }
    assert!(rx.is_complete(), "{got:x?}");
    tool.send(&dst, &rx.ack(1)).unwrap();
    let until = sim.now() + Duration::from_millis(1);
    common::drive(sim, nodes, until, |_, _| tool.pending() > 0);
    // Nothing may wait in the tool's inbox: it would stop the simulator's clock.
    while tool.pending() > 0 {
        let _ = tool.recv(tool.now());
    }
    let mut recs: Vec<SmInfoRecord> = rx.records().unwrap().collect();
    recs.sort_by_key(|r| r.sm_info.priority);
    recs
}

/// SMInfoRecord shows the other SMs as they are now, not as the last heavy sweep saw
/// them: the master asks them for SMInfo at every light sweep. The standby's ActCount
/// moves (it polls the master) and then it is disabled (NotActive); after the next
/// light sweep, with no heavy sweep in between, the SA lists both changes.
#[test]
fn sm_info_records_follow_the_standby_between_heavy_sweeps() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim = common::sim_of(&fabric, SimConfig::default());
    let cas = common::ca_nodes(&sim, &fabric);
    let cfg = |priority: u8| {
        let mut c = SmConfig::default();
        c.priority = priority;
        c.sm_key = KEY;
        c.polling_timeout = Duration::from_millis(500);
        c.sweep_interval = Duration::from_secs(2);
        c.sa = true;
        c
    };
    let mut nodes = master_and_standby(&mut sim, [cas[0], cas[9]], [cfg(9), cfg(2)]);
    let heavy = |n: &common::Node| {
        n.events
            .iter()
            .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
            .count()
    };
    let light = |n: &common::Node| {
        n.events
            .iter()
            .filter(|e| matches!(e, SmEvent::LightSweepDone { .. }))
            .count()
    };
    let heavies = heavy(&nodes[0]);
    let mut tool = sim.attach_tool(cas[5], 1).unwrap();
    let master_lid = nodes[0].sm.sm_lid();
    let first = sm_info_records(&mut sim, &mut nodes, &mut tool, master_lid, 0x71);
    assert_eq!(first.len(), 2, "{first:?}");
    let seen = first[0].sm_info;
    assert_eq!(seen.guid, nodes[1].sm.sm_info().guid);
    assert_eq!(seen.sm_state, ibsm_wire::SmState::Standby);

    // The standby keeps polling (its ActCount moves); then an operator tool posing as
    // a Master disables it: NotActive, its ActCount still from then on.
    let t = sim.now() + Duration::from_secs(3);
    common::drive(&mut sim, &mut nodes, t, |_, _| false);
    let standby_lid = sim.with_agent(cas[9], |a| a.sma().lid(1)).unwrap();
    let mut set = ibsm_wire::LidSmp::request(
        Method::Set,
        0x0020,
        u32::from(ibsm_wire::SmInfoControl::Disable),
        0x0bad_cafe,
        0,
    );
    let op = ibsm_wire::SmInfo {
        guid: 0x0e0e,
        sm_key: KEY,
        act_count: 1,
        priority: 15,
        sm_state: ibsm_wire::SmState::Master,
    };
    op.emit_into(&mut set.data).unwrap();
    tool.send(&Address::Lid(LidAddress::smp(standby_lid)), &set.to_bytes())
        .unwrap();
    let t = sim.now() + Duration::from_millis(20);
    assert!(common::drive(&mut sim, &mut nodes, t, |_, _| tool
        .pending()
        > 0));
    let Ok(Incoming::Mad(answer)) = tool.recv(tool.now()) else {
        panic!("no answer to the DISABLE")
    };
    assert_eq!(answer.mad[3], 0x81, "GetResp");
    assert_eq!(answer.mad[4..6], [0, 0], "DISABLE obeyed");
    assert_eq!(nodes[1].sm.role(), ibsm_manager::Role::NotActive);
    // A light sweep of the master starts and ends.
    let lights = light(&nodes[0]);
    let t = sim.now() + Duration::from_secs(10);
    assert!(common::drive(&mut sim, &mut nodes, t, |_, ns| light(
        &ns[0]
    ) > lights));
    let t = sim.now() + Duration::from_millis(50);
    common::drive(&mut sim, &mut nodes, t, |_, _| false);
    assert_eq!(heavy(&nodes[0]), heavies, "no heavy sweep in between");
    let now_info = nodes[1].sm.sm_info();
    let later = sm_info_records(&mut sim, &mut nodes, &mut tool, master_lid, 0x72);
    assert_eq!(later.len(), 2, "{later:?}");
    let fresh = later[0].sm_info;
    assert_eq!(fresh.guid, seen.guid);
    assert_eq!(fresh.sm_state, ibsm_wire::SmState::NotActive);
    assert!(
        fresh.act_count > seen.act_count + 3,
        "{} then {}",
        seen.act_count,
        fresh.act_count
    );
    assert_eq!(
        fresh.act_count, now_info.act_count,
        "as the standby has it now"
    );
    assert_eq!(later[0].lid, first[0].lid);
    assert_eq!(later[1].sm_info.sm_state, ibsm_wire::SmState::Master);
}

/// Writes P_Key table entries of a simulated CA port through its SMA, as a local
/// directed-route SubnSet (before any SM set an M_Key).
fn set_pkeys(sim: &mut Sim<SmaAgent>, node: ibsm_sim::NodeIdx, block: u16, keys: &[u16]) {
    let mut smp = ibsm_wire::DrSmp::request(
        Method::Set,
        ibsm_wire::SmAttributeId::PKeyTable.into(),
        u32::from(block),
        1,
        0,
        &ibsm_wire::DrPath::local(),
    );
    for (i, k) in keys.iter().enumerate() {
        smp.data[2 * i..2 * i + 2].copy_from_slice(&k.to_be_bytes());
    }
    let mut bytes = smp.to_bytes();
    // As it arrives at the end of its (empty) route: HopPointer = HopCount + 1.
    bytes[6] = 1;
    let out = sim.with_agent_mut(node, |a| {
        a.sma_mut()
            .handle_in_place(Instant::ZERO, ibsm_sma::Rx::port(1), &mut bytes)
    });
    assert_eq!(out, ibsm_sma::Outcome::Respond, "the SMA takes the Set");
}

/// P_Key tables set on the simulated ports before the sweep reach the SA: the records
/// (for the SM_Key, or the port itself), and the P_Keys of PathRecords.
#[test]
fn p_key_tables_are_read_and_served() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let cas: Vec<u64> = fabric.cas().map(|(_, c)| c.guid().0).collect();
    let (x_guid, tool_guid) = (cas[3], cas[6]);
    let mut r = rig_on(&fabric, |sim| {
        let x = sim.node_by_guid(x_guid).unwrap();
        set_pkeys(sim, x, 0, &[0xFFFF, 0x8001, 0x0003]);
        set_pkeys(sim, x, 1, &[0x8002]);
        let tool = sim.node_by_guid(tool_guid).unwrap();
        set_pkeys(sim, tool, 0, &[0xFFFF, 0x0001, 0x0003]);
    });
    // Every block of every CA port's table (PartitionCap 64 here: two blocks) and of
    // every switch's port 0 (32: one).
    let ca_ports = fabric.cas().count() as u64;
    let switches = fabric.switches().count() as u64;
    let read =
        r.up.by_attribute
            .iter()
            .find(|(a, _)| *a == "P_KeyTable")
            .map_or(0, |(_, n)| *n);
    assert_eq!(read, 2 * ca_ports + switches);
    let x = r.sim.node_by_guid(x_guid).unwrap();
    let x_lid = r.sim.with_agent(x, |a| a.sma().lid(1)).unwrap();
    let held = r.sim.with_agent(x, |a| a.sma().pkeys(1).to_vec());
    assert_eq!(held[32], 0x8002);
    let t = PKeyTableRecord {
        lid: x_lid,
        ..PKeyTableRecord::default()
    };
    let mask = PKeyTableRecord::CM_LID.0;
    // Without the SM_Key another port's P_Keys stay hidden; with it, they are there
    // exactly as the SMA holds them.
    let (st, open) = r.table(mask, &t, 0);
    assert!(st.is_ok());
    assert!(open.is_empty(), "P_Keys of another port without the SM_Key");
    let (_, recs) = r.table(mask, &t, KEY);
    assert_eq!(recs.len(), 2);
    let served: Vec<u16> = recs
        .iter()
        .flat_map(|b| b.pkey_table.pkeys.iter().map(|k| k.0))
        .collect();
    assert_eq!(served, held);
    // The tool sees its own table without a key.
    let own = PKeyTableRecord {
        lid: r.tool_lid,
        ..PKeyTableRecord::default()
    };
    let (_, mine) = r.table(mask, &own, 0);
    assert_eq!(mine.len(), 2);
    assert_eq!(mine[0].pkey_table.pkeys.get(1).unwrap().0, 0x0001);
    // A wrong key is refused and counted.
    let (st, _) = r.table(mask, &t, 0xBAD);
    assert_eq!(st, Status::from(SaStatus::ReqDenied));
    assert_eq!(r.sm.sa().unwrap().counters().bad_sm_key, 1);
    // PathRecords carry a partition both ends hold, one of them as a full member.
    let path = |r: &mut Rig, pkey: Option<u16>| {
        let mut t = PathRecord {
            slid: r.tool_lid,
            dlid: x_lid,
            ..PathRecord::default()
        };
        let mut mask = PathRecord::CM_SLID | PathRecord::CM_DLID;
        if let Some(k) = pkey {
            t.pkey = k;
            mask |= PathRecord::CM_PKEY;
        }
        let (st, prs) = r.table(mask.0, &t, 0);
        assert!(st.is_ok());
        prs.first().map(|p| p.pkey)
    };
    assert_eq!(path(&mut r, None), Some(0xFFFF));
    assert_eq!(path(&mut r, Some(0x8001)), Some(0x8001));
    assert_eq!(
        path(&mut r, Some(0x8002)),
        None,
        "the tool is not in 0x0002"
    );
    assert_eq!(
        path(&mut r, Some(0x0003)),
        None,
        "both limited members of 0x0003"
    );
}

/// Segments sent on the SA's own timer (the resend after a loss) go back the way the
/// request came, as the answers to ACKs do: same SL.
#[test]
fn later_segments_keep_the_requests_sl() {
    let mut r = rig();
    let req = SaMad::request(
        Method::GetTable,
        0x71,
        ComponentMask::NONE,
        &NodeRecord::default(),
    )
    .unwrap();
    let mut dst = LidAddress::gsi(r.sm.sm_lid(), 0);
    dst.sl = 5;
    r.tool.send(&Address::Lid(dst), &req.to_bytes()).unwrap();
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
    let mut sls = Vec::new();
    let mut lost = false;
    for _ in 0..2000 {
        let until = r.port.now() + Duration::from_millis(1);
        driver::run(&mut r.sm, &mut r.port, until, |_| false).unwrap();
        let mut any = false;
        while let Ok(Incoming::Mad(m)) = r.tool.recv(r.tool.now()) {
            if m.mad[8..16] == req.transaction_id.to_be_bytes() && m.mad[25] == 1 {
                sls.push(m.sl);
                if m.mad[31] == 3 && !lost {
                    lost = true;
                    continue;
                }
                any |= rx.push(&m.mad).is_ok();
            }
        }
        if any {
            r.tool.send(&Address::Lid(dst), &rx.ack(2)).unwrap();
        }
        if rx.is_complete() {
            break;
        }
    }
    assert!(rx.is_complete());
    assert!(lost);
    assert_eq!(r.sm.sa().unwrap().counters().rmpp_resends, 1);
    assert!(sls.len() > 3, "{sls:?}");
    assert!(sls.iter().all(|&s| s == 5), "{sls:?}");
}
