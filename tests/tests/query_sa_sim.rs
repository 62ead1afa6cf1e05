//! `ibsm-query`'s SA client against the SM engine's SA on `ibsm-sim`: a tool port on one
//! CA asks for whole tables (many RMPP segments) while the SM runs, on virtual time, and
//! the answers equal what the simulated fabric holds; on a lossy tool link the client
//! still gets every table, re-ACKing and retrying.

use std::collections::BTreeSet;
use std::time::Duration;

use ibsm::manager::{SmConfig, SmEvent, SubnetManager, driver};
use ibsm_query::sa::{QueryError, SaClient, SaClientConfig, SaEvent, SaResponse, SaStats};
use ibsm_sim::{Fault, Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Incoming, Instant, SansIo, Transport, TransportError};
use ibsm_wire::sa::{ComponentMask, NodeRecord, PathRecord, PortInfoRecord};

struct Rig {
    sim: Sim<SmaAgent>,
    sm: SubnetManager,
    port: SimPort<SmaAgent>,
    tool: SimPort<SmaAgent>,
    tool_node: ibsm_sim::NodeIdx,
    fabric: Fabric,
}

fn rig() -> Rig {
    // 4-ary 3-tree: 64 CAs, 48 switches: a NodeRecord table of 112 records (63 segments).
    let fabric = generate::k_ary_n_tree(4, 3).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
    let (a, b) = {
        let mut cas = fabric.cas();
        let a = cas.next().unwrap().1.guid().0;
        (a, cas.nth(20).unwrap().1.guid().0)
    };
    let mut port = sim.attach_sm(sim.node_by_guid(a).unwrap(), 1).unwrap();
    let tool_node = sim.node_by_guid(b).unwrap();
    let tool = sim.attach_tool(tool_node, 1).unwrap();
    let mut cfg = SmConfig::default();
    cfg.sa = true;
    let mut sm = SubnetManager::new(cfg, port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    let mut up = false;
    driver::run(&mut sm, &mut port, Instant::from_secs(60), |ev| {
        up |= matches!(ev, SmEvent::SubnetUp { .. });
        up
    })
    .unwrap();
    assert!(up, "SUBNET UP");
    Rig {
        sim,
        sm,
        port,
        tool,
        tool_node,
        fabric,
    }
}

impl Rig {
    /// Runs the client on the tool port and the SM side by side, 1 ms of virtual time a
    /// step, until the client is idle.
    fn run(&mut self, client: &mut SaClient<&'static str>) -> Vec<SaEvent<&'static str>> {
        let end = self.port.now() + Duration::from_secs(120);
        while !client.is_idle() {
            let now = self.tool.now();
            assert!(now < end, "the client never finished: {:?}", client.stats());
            client.handle_timeout(now);
            while let Some(out) = client.poll_transmit(now) {
                self.tool.send(&out.addr, &out.mad).unwrap();
            }
            let until = now + Duration::from_millis(1);
            driver::run(&mut self.sm, &mut self.port, until, |_| false).unwrap();
            loop {
                match self.tool.recv(self.tool.now()) {
                    Ok(incoming @ Incoming::Mad(_)) => {
                        client.handle_incoming(self.tool.now(), incoming);
                    }
                    Ok(_) => {}
                    Err(TransportError::Timeout) => break,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        std::iter::from_fn(|| client.poll_event()).collect()
    }

    fn client(&self) -> SaClient<&'static str> {
        let mut cfg = SaClientConfig::new(self.sm.sm_lid());
        // Above the SA's RMPP resend time (200 ms): a lost segment is recovered by the
        // SA's go-back-N, which must come before the client's patience runs out.
        cfg.timeout = Duration::from_millis(300);
        cfg.window = 8;
        SaClient::new(cfg)
    }

    /// (LID, node GUID, port GUID) of every end port and switch, from the fabric the
    /// simulator runs and the LIDs the SM gave.
    fn expected_nodes(&self) -> BTreeSet<(u16, u64, u64)> {
        let lids = self.sm.lids();
        self.fabric
            .nodes()
            .flat_map(|(_, n)| {
                let guid = n.guid().0;
                let ports: Vec<u64> = if n.is_switch() {
                    vec![n.port(0).map_or(guid, |p| p.guid.0)]
                } else {
                    n.ports().map(|(_, p)| p.guid.0).collect()
                };
                ports
                    .into_iter()
                    .map(move |pg| (lids.get(&pg).map_or(0, |l| l.0), guid, pg))
            })
            .collect()
    }
}

fn records<R: ibsm_wire::sa::SaRecord>(events: &[SaEvent<&str>], which: &str) -> Vec<R> {
    let response: &SaResponse = events
        .iter()
        .find_map(|e| match e {
            SaEvent::Done {
                cookie, response, ..
            } if *cookie == which => Some(response),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{which}: {:?}", outcomes(events)));
    response.records::<R>().unwrap()
}

/// Cookie and error of every outcome (the records themselves are too long to print).
fn outcomes<'a>(events: &'a [SaEvent<&'a str>]) -> Vec<(&'a str, Option<&'a QueryError>)> {
    events
        .iter()
        .map(|e| match e {
            SaEvent::Done { cookie, .. } => (*cookie, None),
            SaEvent::Failed { cookie, error, .. } => (*cookie, Some(error)),
        })
        .collect()
}

fn check_tables(r: &Rig, events: &[SaEvent<&str>]) {
    let nodes = records::<NodeRecord>(events, "node");
    let got: BTreeSet<(u16, u64, u64)> = nodes
        .iter()
        .map(|n| (n.lid, n.node_info.node_guid, n.node_info.port_guid))
        .collect();
    assert_eq!(nodes.len(), 112);
    assert_eq!(got, r.expected_nodes());
    // Every CA port and every switch port 0 has a PortInfoRecord; switches also one per
    // external port (port_num > 0).
    let ports = records::<PortInfoRecord>(events, "portinfo");
    let lids: BTreeSet<u16> = ports.iter().map(|p| p.endport_lid).collect();
    let node_lids: BTreeSet<u16> = got.iter().map(|n| n.0).collect();
    assert_eq!(lids, node_lids);
    // One PathRecord from the tool to every LID.
    let tool_lid = r.tool.local_port().lid;
    let paths = records::<PathRecord>(events, "path");
    let dlids: BTreeSet<u16> = paths.iter().map(|p| p.dlid).collect();
    assert_eq!(dlids, node_lids);
    assert!(paths.iter().all(|p| p.slid == tool_lid));
}

fn ask_all(client: &mut SaClient<&'static str>, tool_lid: u16) {
    client.get_table(&NodeRecord::default(), ComponentMask::NONE, "node");
    client.get_table(&PortInfoRecord::default(), ComponentMask::NONE, "portinfo");
    let template = PathRecord {
        slid: tool_lid,
        ..PathRecord::default()
    };
    let mask = PathRecord::CM_SLID;
    client.get_table(&template, mask, "path");
}

#[test]
fn whole_tables_from_the_engines_sa() {
    let mut r = rig();
    let mut c = r.client();
    let tool_lid = r.tool.local_port().lid;
    ask_all(&mut c, tool_lid);
    let events = r.run(&mut c);
    check_tables(&r, &events);
    let s: SaStats = c.stats();
    assert_eq!((s.done, s.failed, s.retries), (3, 0, 0), "{s:?}");
    assert!(s.segments > 63, "{s:?}");
}

#[test]
fn a_lossy_tool_link_still_gets_every_table() {
    let mut r = rig();
    // 3 % of the MADs on the tool's cable vanish, both ways.
    r.sim.apply(Fault::LinkDropRate {
        node: r.tool_node,
        port: 1,
        ppm: 30_000,
    });
    let mut c = r.client();
    c_retries(&mut c);
    let tool_lid = r.tool.local_port().lid;
    ask_all(&mut c, tool_lid);
    let events = r.run(&mut c);
    check_tables(&r, &events);
    let s = c.stats();
    assert!(s.resynced + s.retries > 0, "no loss was seen: {s:?}");
}

fn c_retries(c: &mut SaClient<&'static str>) {
    // Loss on every segment of a 63-segment table needs more patience than the default.
    let mut cfg = *c.config();
    cfg.retries = 10;
    *c = SaClient::new(cfg);
}

#[test]
fn a_get_with_no_match_is_a_typed_error() {
    let mut r = rig();
    let mut c = r.client();
    let template = NodeRecord {
        lid: 0xbeef,
        ..NodeRecord::default()
    };
    c.get(&template, NodeRecord::CM_LID, "none");
    let events = r.run(&mut c);
    assert!(
        matches!(
            events.as_slice(),
            [SaEvent::Failed {
                error: QueryError::Status { .. },
                ..
            }]
        ),
        "{events:?}"
    );
}
