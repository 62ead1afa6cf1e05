//! Without a partition file OpenSM's default policy is in force
//! (`Default=0x7fff, ipoib : ALL=full ;`): a `SmConfig::default()` SM leaves every end
//! port holding 0xFFFF, and its SA has the IPoIB broadcast group of the default
//! partition, with OpenSM's parameters, before any client asks (what `saquery -g`
//! lists).

use std::time::Duration;

use ibsm_manager::{SmConfig, SmEvent, SubnetManager, driver};
use ibsm_sim::{NodeIdx, Sim, SimConfig, SmaAgent};
use ibsm_topology::generate;
use ibsm_transport::{Address, Incoming, Instant, LidAddress, Transport};
use ibsm_wire::sa::rmpp::{Reassembler, VecBuffer};
use ibsm_wire::sa::{McMemberRecord, Rate, SaMad, Selector};
use ibsm_wire::{Gid, LidSmp, Method, Mtu, SmAttributeId};

/// Writes `keys` into block 0 of a CA port's P_Key table as an SM would, before our SM
/// runs (a host left with another SM's partitions).
fn preset_pkeys(sim: &mut Sim<SmaAgent>, node: NodeIdx, keys: &[u16]) {
    let mut smp = LidSmp::request(Method::Set, SmAttributeId::PKeyTable.into(), 0, 1, 0);
    for (i, k) in keys.iter().enumerate() {
        smp.data[2 * i..2 * i + 2].copy_from_slice(&k.to_be_bytes());
    }
    let mut mad = smp.to_bytes();
    let now = sim.now();
    assert!(sim.with_agent_mut(node, |a| {
        ibsm_sim::Agent::handle_smp(a, now, 1, 1, &mut mad)
    }));
}

#[test]
fn default_policy_programs_full_default_pkeys_and_the_broadcast_group() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
    let cas: Vec<NodeIdx> = fabric
        .cas()
        .map(|(_, c)| sim.node_by_guid(c.guid().0).unwrap())
        .collect();
    // One host holds only the limited default P_Key, another a foreign partition.
    preset_pkeys(&mut sim, cas[2], &[0x7FFF]);
    preset_pkeys(&mut sim, cas[5], &[0x8123]);
    let mut port = sim.attach_sm(cas[0], 1).unwrap();
    let mut tool = sim.attach_tool(cas[7], 1).unwrap();
    let cfg = SmConfig::default();
    assert!(
        cfg.sa && cfg.partitions.is_some(),
        "the defaults under test"
    );
    let mut sm = SubnetManager::new(cfg, port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    let mut up = false;
    driver::run(&mut sm, &mut port, Instant::from_secs(30), |ev| {
        up |= matches!(ev, SmEvent::SubnetUp { .. });
        up
    })
    .unwrap();
    assert!(up);

    // Every end port holds the full default P_Key at index 0 (and the foreign one it
    // had stays where it was: queue pairs may be bound to its index).
    for &ca in &cas {
        let t = sim.with_agent(ca, |a| a.sma().pkeys(1).to_vec());
        assert_eq!(t[0], 0xFFFF, "CA {ca:?}: {:x?}", &t[..4]);
        assert!(
            !t.contains(&0x7FFF),
            "the limited entry became the full one"
        );
    }
    for (_, sw) in fabric.nodes().filter(|(_, n)| n.is_switch()) {
        let n = sim.node_by_guid(sw.guid().0).unwrap();
        assert_eq!(sim.with_agent(n, |a| a.sma().pkeys(0)[0]), 0xFFFF);
    }

    // saquery -g: a GetTable of MCMemberRecord, before any host joined anything.
    let req = SaMad::request(
        Method::GetTable,
        0x99,
        ibsm_wire::sa::ComponentMask::NONE,
        &McMemberRecord::default(),
    )
    .unwrap();
    tool.send(
        &Address::Lid(LidAddress::gsi(sm.sm_lid(), 0)),
        &req.to_bytes(),
    )
    .unwrap();
    let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
    let give_up = port.now() + Duration::from_secs(5);
    while !rx.is_complete() && port.now() < give_up {
        let until = port.now() + Duration::from_millis(1);
        driver::run(&mut sm, &mut port, until, |_| false).unwrap();
        while let Ok(Incoming::Mad(m)) = tool.recv(tool.now()) {
            if m.mad[8..16] == 0x99u64.to_be_bytes() && rx.push(&m.mad).is_ok() {
                let ack = rx.ack(8);
                tool.send(&Address::Lid(LidAddress::gsi(sm.sm_lid(), 0)), &ack)
                    .unwrap();
            }
        }
    }
    assert!(rx.is_complete(), "an answer");
    let groups: Vec<McMemberRecord> = rx.records::<McMemberRecord>().unwrap().collect();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = groups[0];
    let mut mgid = [0u8; 16];
    mgid[..6].copy_from_slice(&[0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF]);
    mgid[12..].copy_from_slice(&[0xFF; 4]);
    assert_eq!(g.mgid, Gid(mgid), "ff12:401b:ffff::ffff:ffff");
    assert_eq!(g.mlid, 0xC000);
    // OpenSM's defaults (osm_prtn_config.c / osm_prtn.c): Q_Key 0x0B1B, MTU 2048 and
    // 10 Gb/s (selector Exactly), SL 0, link-local scope, no TClass or FlowLabel, the
    // full default P_Key, and no member yet.
    assert_eq!(
        (g.qkey, g.mtu, g.mtu_selector, g.rate, g.rate_selector),
        (
            0x0B1B,
            Mtu::Mtu2048,
            Selector::Exactly,
            Rate::from(3),
            Selector::Exactly
        )
    );
    assert_eq!(
        (g.pkey, g.sl, g.scope, g.tclass, g.flow_label, g.hop_limit),
        (0xFFFF, 0, 2, 0, 0, 0)
    );
    assert_eq!(g.packet_life_time, 0x12);
    assert_eq!((g.port_gid, g.join_state), (Gid::default(), 0));
}
