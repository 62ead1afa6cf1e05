//! ClientReregister after a takeover: the master with a host's multicast group and
//! service dies, the standby takes over, and on its first sweep as master it sets
//! PortInfo.ClientReregister on every end port that supports it, so the host's SA
//! client (`ibsm_sim::HostSaClient`) joins and registers again and the group exists on the
//! new master's SA. Later sweeps of the same master do not set it.

mod common;

use std::time::Duration;

use common::{Node, attach, ca_nodes, drive, sim_of, until_up};
use ibsm_manager::{Role, SmConfig};
use ibsm_sim::{HostSaClient, Sim, SimConfig, SmaAgent};
use ibsm_topology::generate;
use ibsm_wire::sa::{ComponentMask, McMemberRecord, SaAttributeId, ServiceRecord, join_state};
use ibsm_wire::{Gid, Method};

fn cfg(priority: u8) -> SmConfig {
    let mut c = SmConfig::default();
    c.priority = priority;
    c.polling_timeout = Duration::from_millis(200);
    c.polling_retries = 2;
    // Only the sweeps the test asks for.
    c.sweep_interval = Duration::ZERO;
    c
}

/// Drives the SMs and the client for `d` of virtual time, in steps short enough for
/// the client's retries.
fn run(sim: &mut Sim<SmaAgent>, nodes: &mut [Node], client: &mut HostSaClient, d: Duration) {
    let end = sim.now() + d;
    while sim.now() < end {
        let step = (sim.now() + Duration::from_millis(20)).min(end);
        drive(sim, nodes, step, |_, _| {
            client.receive();
            false
        });
        client.poll(sim);
    }
}

/// IPoIB's join of an IPv4 group (224.0.0.251) with the default partition's broadcast
/// parameters: it creates the group.
fn v4_join(port_gid: Gid) -> (McMemberRecord, ComponentMask) {
    let mut mgid = [0u8; 16];
    mgid[..6].copy_from_slice(&[0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF]);
    mgid[12..].copy_from_slice(&[0, 0, 0, 0xFB]);
    let rec = McMemberRecord {
        mgid: Gid(mgid),
        port_gid,
        qkey: 0x0B1B,
        pkey: 0xFFFF,
        mtu_selector: ibsm_wire::sa::Selector::Exactly,
        mtu: ibsm_wire::Mtu::Mtu2048,
        rate_selector: ibsm_wire::sa::Selector::Exactly,
        rate: ibsm_wire::sa::Rate::from(3),
        join_state: join_state::FULL_MEMBER,
        ..Default::default()
    };
    let mask = McMemberRecord::CM_MGID
        | McMemberRecord::CM_PORT_GID
        | McMemberRecord::CM_PKEY
        | McMemberRecord::CM_JOIN_STATE
        | McMemberRecord::CM_QKEY
        | McMemberRecord::CM_MTU_SELECTOR
        | McMemberRecord::CM_MTU
        | McMemberRecord::CM_TCLASS
        | McMemberRecord::CM_RATE_SELECTOR
        | McMemberRecord::CM_RATE
        | McMemberRecord::CM_SL
        | McMemberRecord::CM_FLOW_LABEL
        | McMemberRecord::CM_HOP_LIMIT;
    (rec, mask)
}

/// Asks the SA the port now names whether it knows the client's membership of
/// `mgid` (SubnAdmGet(MCMemberRecord) by MGID and PortGID).
fn sa_knows(
    sim: &mut Sim<SmaAgent>,
    nodes: &mut [Node],
    client: &mut HostSaClient,
    rec: &McMemberRecord,
) -> bool {
    let mask = McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID;
    let before = client.answers().len();
    client.get(sim, rec, mask).expect("the port knows its SM");
    run(sim, nodes, client, Duration::from_millis(100));
    let got = &client.answers()[before..];
    let a = got
        .iter()
        .rev()
        .find(|a| a.attribute == SaAttributeId::McMemberRecord && a.method == Method::Get)
        .expect("an answer");
    a.status.is_ok()
}

#[test]
fn a_new_master_has_clients_rejoin_once() {
    let f = generate::fat_tree(8, 2).unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut nodes = vec![
        attach(&mut sim, cas[0], cfg(10), None),
        attach(&mut sim, *cas.last().unwrap(), cfg(3), None),
    ];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    common::settle_master_standby(&mut sim, &mut nodes, Duration::from_millis(500));
    assert_eq!(common::roles(&nodes), [Role::Master, Role::Standby]);

    // A host (CA 3) joins an IPv4 group and registers a service with the master.
    let host = cas[3];
    let host_guid = sim.node_setup(host).unwrap().port_guid(1);
    let gid = Gid::new(ibsm_wire::DEFAULT_SUBNET_PREFIX, host_guid);
    let mut client = HostSaClient::attach(&mut sim, host, 1).unwrap();
    let (rec, mask) = v4_join(gid);
    client.join(&sim, rec, mask);
    let mut svc = ServiceRecord {
        service_id: 0x1000_0000_0000_0042,
        service_gid: gid,
        service_pkey: 0xFFFF,
        service_lease: ServiceRecord::INFINITE_LEASE,
        ..Default::default()
    };
    svc.set_name("ibsm.rereg");
    client.register(
        &sim,
        svc,
        ServiceRecord::CM_SERVICE_ID
            | ServiceRecord::CM_SERVICE_GID
            | ServiceRecord::CM_SERVICE_PKEY,
    );
    run(
        &mut sim,
        &mut nodes,
        &mut client,
        Duration::from_millis(100),
    );
    assert!(client.all_done(), "{:?}", client.answers());
    assert!(sa_knows(&mut sim, &mut nodes, &mut client, &rec));
    assert_eq!(client.reregisters(), 0);

    // The master dies; the standby takes over with the LIDs the ports carry, so no
    // port moves, and its SA knows nothing the host registered.
    nodes[0].port.detach();
    nodes[0].alive = false;
    let ups = nodes[1].ups();
    let mut waited = Duration::ZERO;
    while nodes[1].ups() == ups {
        run(
            &mut sim,
            &mut nodes,
            &mut client,
            Duration::from_millis(100),
        );
        waited += Duration::from_millis(100);
        assert!(waited < Duration::from_secs(20), "no takeover");
    }
    assert_eq!(nodes[1].sm.role(), Role::Master);
    assert_eq!(
        client.reregisters(),
        1,
        "told to re-register by the new master"
    );
    // The client re-joins (retrying what the SA refused before its first SUBNET UP).
    run(&mut sim, &mut nodes, &mut client, Duration::from_secs(3));
    assert!(client.all_done(), "{:?}", client.answers());
    assert!(
        sa_knows(&mut sim, &mut nodes, &mut client, &rec),
        "the group exists on the new master's SA with the host in it"
    );

    // A second sweep of the same master tells nobody to re-register.
    let now = sim.now();
    nodes[1].sm.request_heavy_sweep(now);
    until_up(&mut sim, &mut nodes, 1, Duration::from_secs(10));
    run(
        &mut sim,
        &mut nodes,
        &mut client,
        Duration::from_millis(200),
    );
    assert_eq!(client.reregisters(), 1, "only the first sweep as master");
}
