//! The SA served by the engine over the simulator: a second client (a tool attached at
//! another CA) sends SA queries to the SM's LID and checks the answers against what
//! the simulated nodes hold, multi-MAD (RMPP) tables included, and the key rules.

use std::time::Duration;

use ibsm_manager::{MKeyMode, SmConfig, SmEvent, SubnetManager, driver};
use ibsm_sim::{Fault, Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::generate;
use ibsm_transport::{Address, Incoming, Instant, LidAddress, Transport, TransportError};
use ibsm_wire::sa::rmpp::{Reassembler, VecBuffer};
use ibsm_wire::sa::{
    ComponentMask, InformInfo, LinearForwardingTableRecord, LinkRecord, McMemberRecord, NodeRecord,
    PathRecord, PortInfoRecord, SaAttributeId, SaMad, SaRecord, SaStatus, SmInfoRecord,
    SwitchInfoRecord, join_state,
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
}

fn rig() -> Rig {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
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
    cfg.sm_key = KEY;
    cfg.m_key = MKeyMode::Single(MKEY);
    let mut sm = SubnetManager::new(cfg, port.local_port());
    sm.start(port.now()).unwrap();
    let mut up = false;
    driver::run(&mut sm, &mut port, Instant::from_secs(60), |ev| {
        up = matches!(ev, SmEvent::SubnetUp { .. });
        up
    })
    .unwrap();
    assert!(up);
    let tool_guid = b.port(1).unwrap().guid.0;
    let tool_lid = sm.lids()[&tool_guid].0;
    Rig {
        sim,
        sm,
        port,
        tool,
        tool_lid,
        tool_node,
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

    /// Runs the SM a while and returns what reached the tool unasked.
    fn ask_nothing(&mut self) -> Vec<Vec<u8>> {
        let until = self.port.now() + Duration::from_millis(500);
        driver::run(&mut self.sm, &mut self.port, until, |_| false).unwrap();
        let mut out = Vec::new();
        while let Ok(Incoming::Mad(rx)) = self.tool.recv(self.tool.now()) {
            out.push(rx.mad);
        }
        out
    }

    /// A GetTable: reassembled records.
    fn table<R: SaRecord>(&mut self, mask: u64, t: &R, sm_key: u64) -> (Status, Vec<R>) {
        let mut req = SaMad::request(Method::GetTable, 0x77, mask.into(), t).unwrap();
        req.sm_key = sm_key;
        let mads = self.ask(&req);
        assert!(!mads.is_empty(), "no answer");
        let first = SaMad::parse(&mads[0]).unwrap();
        let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
        for m in &mads {
            rx.push(m).unwrap();
        }
        assert!(rx.is_complete());
        let recs = rx.records::<R>().map(Iterator::collect).unwrap_or_default();
        (first.status, recs)
    }
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
    let got = r.ask_nothing();
    let reports: Vec<SaMad> = got
        .iter()
        .filter_map(|m| SaMad::parse(m).ok())
        .filter(|m| m.method == Method::Report)
        .collect();
    assert!(!reports.is_empty(), "no Report among {} MADs", got.len());
    assert_eq!(reports[0].attribute_id, SaAttributeId::Notice);
    assert_eq!(r.sm.sa().unwrap().counters().reports, reports.len() as u64);
}
