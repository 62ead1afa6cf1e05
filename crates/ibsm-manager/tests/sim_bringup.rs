//! End-to-end: the engine brings simulated fabrics up, and the simulator's LFT walk
//! agrees.

use ibsm_manager::{SmConfig, SmEvent, SubnetManager, SweepStats, driver};
use ibsm_sim::{Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Instant, Transport};

fn bring_up(
    fabric: &Fabric,
    cfg: SmConfig,
) -> (Sim<SmaAgent>, SimPort<SmaAgent>, SubnetManager, SweepStats) {
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(fabric, SimConfig::default()).expect("sim");
    let (_, ca) = fabric.cas().next().expect("a CA");
    let idx = sim.node_by_guid(ca.guid().0).expect("CA in sim");
    let mut port = sim.attach_sm(idx, 1).expect("attach");
    port.set_is_sm(true).expect("issm");
    let mut sm = SubnetManager::new(cfg, port.local_port());
    sm.start(port.now()).expect("start");
    let mut stats = None;
    driver::run(&mut sm, &mut port, Instant::from_secs(120), |ev| {
        if let SmEvent::SubnetUp { stats: s } = ev {
            stats = Some(s.clone());
            return true;
        }
        false
    })
    .expect("run");
    let stats = stats.expect("subnet up within 120 s of virtual time");
    (sim, port, sm, stats)
}

#[test]
fn small_fat_tree_comes_up_verified() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (sim, _port, sm, stats) = bring_up(&fabric, SmConfig::default());
    let report = sim.verify();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(stats.switches, fabric.switch_count());
    assert_eq!(stats.nodes, fabric.node_count());
    assert_eq!(stats.links, fabric.link_count());
    assert_eq!(report.lids, fabric.switch_count() + fabric.cas().count());
    assert!(sm.is_up());
    eprintln!("{stats:?}");
}
