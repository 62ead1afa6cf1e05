//! Partitions over the simulator: the SM programs every port's P_Key table from a
//! partition policy, switch ports cabled to CAs enforce the CA's table, a second heavy
//! sweep writes nothing, and the SA's PathRecords follow the partitions.

use std::collections::BTreeSet;

use ibsm_manager::partition::{PartitionConfig, PartitionWarning};
use ibsm_manager::{SmConfig, SmEvent, SubnetManager, SweepStats, driver};
use ibsm_sim::{NodeIdx, Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::Transport;

struct Rig {
    sim: Sim<SmaAgent>,
    sm: SubnetManager,
    port: SimPort<SmaAgent>,
    fabric: Fabric,
    /// CA port GUIDs in fabric order (the SM's is the first).
    cas: Vec<u64>,
    events: Vec<SmEvent>,
}

fn ca_guids(fabric: &Fabric) -> Vec<u64> {
    fabric
        .cas()
        .map(|(_, ca)| ca.port(1).expect("port 1").guid.0)
        .collect()
}

fn rig(partitions: impl FnOnce(&[u64]) -> Option<PartitionConfig>) -> Rig {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
    let cas = ca_guids(&fabric);
    let (_, first) = fabric.cas().next().unwrap();
    let port = sim
        .attach_sm(sim.node_by_guid(first.guid().0).unwrap(), 1)
        .unwrap();
    let mut cfg = SmConfig::default();
    cfg.sa = true;
    cfg.partitions = partitions(&cas);
    let sm = SubnetManager::new(cfg, port.local_port());
    let mut r = Rig {
        sim,
        sm,
        port,
        fabric,
        cas,
        events: Vec::new(),
    };
    r.sm.start(r.port.now()).unwrap();
    r.until_up();
    r
}

impl Rig {
    /// Runs to the next SUBNET UP and returns its statistics.
    fn until_up(&mut self) -> SweepStats {
        let mut up = None;
        let events = &mut self.events;
        let deadline = self.port.now() + std::time::Duration::from_secs(60);
        driver::run(&mut self.sm, &mut self.port, deadline, |ev| {
            events.push(ev.clone());
            if let SmEvent::SubnetUp { stats } = ev {
                up = Some(stats.clone());
            }
            up.is_some()
        })
        .unwrap();
        up.expect("SUBNET UP")
    }

    fn heavy_sweep(&mut self) -> SweepStats {
        let now = self.port.now();
        self.sm.request_heavy_sweep(now);
        self.until_up()
    }

    fn node(&self, guid: u64) -> NodeIdx {
        self.sim.node_by_guid(guid).unwrap()
    }

    /// The table a simulated port holds.
    fn pkeys(&self, node_guid: u64, port: u8) -> Vec<u16> {
        self.sim
            .with_agent(self.node(node_guid), |a| a.sma().pkeys(port).to_vec())
    }

    fn ca_node_guid(&self, port_guid: u64) -> u64 {
        self.fabric
            .cas()
            .find(|(_, ca)| ca.port(1).unwrap().guid.0 == port_guid)
            .unwrap()
            .1
            .guid()
            .0
    }

    fn lid(&self, port_guid: u64) -> u16 {
        self.sm.lids()[&port_guid].0
    }

    fn path_pkey(&self, a: u64, b: u64) -> Option<u16> {
        let sa = self.sm.sa().expect("SA on");
        sa.path_record(self.lid(a), self.lid(b)).map(|p| p.pkey)
    }
}

fn valid(t: &[u16]) -> BTreeSet<u16> {
    t.iter().copied().filter(|k| k & 0x7fff != 0).collect()
}

/// Two halves of the CAs in partitions 0x0001 and 0x0002, everyone a limited member of
/// the default partition (switches and the SM full).
fn two_partitions(cas: &[u64]) -> PartitionConfig {
    let half = cas.len() / 2;
    let list = |g: &[u64]| {
        g.iter()
            .map(|g| format!("{g:#x}"))
            .collect::<Vec<_>>()
            .join(",\n    ")
    };
    format!(
        "# two tenants\n\
         Default=0x7fff : ALL=limited, ALL_SWITCHES=full, SELF=full ;\n\
         tenant_a=0x0001, ipoib, defmember=full :\n    {} ;\n\
         tenant_b=0x0002, ipoib :\n    {} , SELF=limited ;\n",
        list(&cas[..half]),
        list(&cas[half..])
            .split(",\n    ")
            .map(|g| format!("{g}=full"))
            .collect::<Vec<_>>()
            .join(", ")
    )
    .parse()
    .unwrap()
}

#[test]
fn two_partitions_programmed_enforced_and_served() {
    let mut r = rig(|cas| Some(two_partitions(cas)));
    let first = r
        .events
        .iter()
        .find_map(|e| match e {
            SmEvent::SubnetUp { stats } => Some(stats.clone()),
            _ => None,
        })
        .unwrap();
    assert!(first.pkey_blocks > 0, "{first:?}");
    assert!(
        first
            .by_attribute
            .iter()
            .any(|(a, n)| *a == "P_KeyTable" && *n >= first.pkey_blocks)
    );
    assert!(
        !r.events
            .iter()
            .any(|e| matches!(e, SmEvent::PartitionWarning { .. }))
    );
    let cfg = r.sm.config().partitions.clone().unwrap();
    let sm_guid = r.port.local_port().port_guid;
    let half = r.cas.len() / 2;

    // Every CA port: exactly its partitions, the default one at index 0.
    for (i, &g) in r.cas.iter().enumerate() {
        let t = r.pkeys(r.ca_node_guid(g), 1);
        let mine = if i < half { 0x8001 } else { 0x8002 };
        let mut want = BTreeSet::from([mine]);
        if g == sm_guid {
            want.extend([0xffff, 0x0002]);
            assert_eq!(t[0], 0xffff);
        } else {
            want.insert(0x7fff);
            assert_eq!(t[0], 0x7fff);
        }
        assert_eq!(valid(&t), want, "CA {g:#x}: {t:x?}");
    }

    // What the simulated nodes hold is what the policy asks, everywhere it asks; and
    // the SM's model (which the SA serves) has the same tables.
    let plan = cfg.plan(r.sm.subnet(), sm_guid);
    assert!(plan.warnings.is_empty());
    let mut enforcing = 0;
    for (&(n, p), table) in &plan.tables {
        let node = &r.sm.subnet().nodes[n];
        let held = r.pkeys(node.info.node_guid, p);
        assert_eq!(&held[..table.len()], &table[..], "node {n} port {p}");
        assert_eq!(&node.ports[usize::from(p)].pkeys[..table.len()], &table[..]);
        if node.is_switch() && p != 0 {
            // A switch port cabled to a CA: the CA's table, enforced both ways.
            let (pn, pp) = node.ports[usize::from(p)].peer.unwrap();
            let peer = &r.sm.subnet().nodes[pn];
            assert!(!peer.is_switch());
            assert_eq!(valid(&held), valid(&r.pkeys(peer.info.node_guid, pp)));
            let pi = r.sim.with_agent(r.node(node.info.node_guid), |a| {
                a.sma().port_info(p).unwrap()
            });
            assert!(pi.partition_enforcement_inbound && pi.partition_enforcement_outbound);
            enforcing += 1;
        } else if node.is_switch() {
            assert_eq!(held[0], 0xffff);
        }
    }
    assert_eq!(enforcing, r.cas.len());
    // Switch-to-switch ports do not enforce.
    for node in &r.sm.subnet().nodes {
        if !node.is_switch() {
            continue;
        }
        for p in 1..=node.info.num_ports {
            let Some((pn, _)) = node.ports[usize::from(p)].peer else {
                continue;
            };
            if r.sm.subnet().nodes[pn].is_switch() {
                let pi = r.sim.with_agent(r.node(node.info.node_guid), |a| {
                    a.sma().port_info(p).unwrap()
                });
                assert!(!pi.partition_enforcement_inbound && !pi.partition_enforcement_outbound);
            }
        }
    }

    // The SA: paths only within a partition, with its P_Key.
    let (a1, a2, b1, b2) = (r.cas[1], r.cas[2], r.cas[half], r.cas[half + 1]);
    assert_eq!(r.path_pkey(a1, a2), Some(0x8001));
    assert_eq!(r.path_pkey(b1, b2), Some(0x8002));
    assert_eq!(r.path_pkey(a1, b1), None, "no common partition: no path");
    assert_eq!(r.path_pkey(b2, a2), None);
    // The SM (full default member) reaches everyone through the default partition.
    assert_eq!(r.path_pkey(sm_guid, b1), Some(0xffff));
    assert_eq!(r.path_pkey(b1, sm_guid), Some(0x7fff));

    // A second heavy sweep finds every table as programmed: nothing to write.
    let again = r.heavy_sweep();
    assert_eq!(again.pkey_blocks, 0, "{again:?}");
    assert_eq!(again.port_sets, 0, "{again:?}");
    assert!(r.sim.verify().is_clean());
}

#[test]
fn without_a_policy_nothing_is_written() {
    let r = rig(|_| None);
    let up = r.events.iter().find_map(|e| match e {
        SmEvent::SubnetUp { stats } => Some(stats),
        _ => None,
    });
    let up = up.unwrap();
    assert_eq!(up.pkey_blocks, 0);
    // The SA reads the tables, nothing sets them: switch ports do not enforce.
    for node in &r.sm.subnet().nodes {
        if node.is_switch() {
            let pi = r.sim.with_agent(r.node(node.info.node_guid), |a| {
                a.sma().port_info(1).unwrap()
            });
            assert!(!pi.partition_enforcement_inbound);
        }
    }
}

#[test]
fn opensm_default_only_adds_enforcement() {
    let mut r = rig(|_| Some(PartitionConfig::opensm_default()));
    let up = r.heavy_sweep();
    assert_eq!(up.pkey_blocks, 0);
    let first = r
        .events
        .iter()
        .find_map(|e| match e {
            SmEvent::SubnetUp { stats } => Some(stats.pkey_blocks),
            _ => None,
        })
        .unwrap();
    // Every CA already holds 0xFFFF alone; the switch ports cabled to CAs get their
    // enforcement table once (unknown before enforcement was on).
    assert_eq!(first, r.cas.len() as u64);
    for &g in &r.cas {
        assert_eq!(
            valid(&r.pkeys(r.ca_node_guid(g), 1)),
            BTreeSet::from([0xffff])
        );
    }
    let (a, b) = (r.cas[1], r.cas[r.cas.len() - 1]);
    assert_eq!(r.path_pkey(a, b), Some(0xffff));
}

#[test]
fn tables_too_small_are_reported() {
    // 40 partitions of everyone: CAs hold 64 P_Keys, enforcing switch ports 32.
    let text: String = (1..=40)
        .map(|k| format!("p{k}={k:#x} : ALL=full ;\n"))
        .collect();
    let r = rig(|_| Some(text.parse().unwrap()));
    let warnings: Vec<&PartitionWarning> = r
        .events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PartitionWarning { warning } => Some(warning),
            _ => None,
        })
        .collect();
    // Switch port 0 (PartitionCap 32) of each switch, and every switch port cabled to
    // a CA (PartitionEnforcementCap 32).
    let switches = r.sm.subnet().switch_count();
    assert_eq!(warnings.len(), switches + r.cas.len(), "{warnings:?}");
    let mut port0 = 0;
    for w in warnings {
        let PartitionWarning::Truncated {
            capacity,
            dropped,
            port,
            ..
        } = w
        else {
            panic!("{w:?}");
        };
        port0 += usize::from(*port == 0);
        assert_eq!(*capacity, 32);
        // Default plus 40 = 41 entries; the highest P_Keys are left out.
        assert_eq!(dropped.len(), 9);
        assert_eq!(dropped.last(), Some(&0x8028));
    }
    assert_eq!(port0, switches);
    // The CAs hold all 41.
    for &g in &r.cas {
        assert_eq!(valid(&r.pkeys(r.ca_node_guid(g), 1)).len(), 41);
    }
}

#[test]
fn a_new_policy_keeps_indexes_and_writes_only_what_changed() {
    let base = "Default=0x7fff : ALL=full ;\nfive=0x0005 : ALL_CAS=full ;\n";
    let mut r = rig(|_| Some(base.parse().unwrap()));
    let ca0 = r.ca_node_guid(r.cas[3]);
    assert_eq!(&r.pkeys(ca0, 1)[..3], [0xffff, 0x8005, 0]);
    // A lower P_Key joins: 0x8005 stays at index 1 (a QP bound to index 1 keeps its
    // partition), the new one takes the free slot.
    let now = r.port.now();
    let more = format!("{base}three=0x0003 : ALL_CAS=full ;\n");
    r.sm.set_partitions(now, Some(more.parse().unwrap()));
    let up = r.until_up();
    assert_eq!(&r.pkeys(ca0, 1)[..3], [0xffff, 0x8005, 0x8003]);
    // One block per CA and per switch port enforcing a CA, nothing on switch port 0.
    assert_eq!(up.pkey_blocks, 2 * r.cas.len() as u64, "{up:?}");
    // The SA serves the new tables.
    assert_eq!(r.path_pkey(r.cas[1], r.cas[2]), Some(0xffff));
    let sa_table = |r: &Rig| {
        let n = r.sm.subnet().by_guid[&ca0];
        r.sm.subnet().nodes[n].ports[1].pkeys[..3].to_vec()
    };
    assert_eq!(sa_table(&r), [0xffff, 0x8005, 0x8003]);
    // Back to the first policy: only 0x8003's slot is cleared.
    let now = r.port.now();
    r.sm.set_partitions(now, Some(base.parse().unwrap()));
    let up = r.until_up();
    assert_eq!(&r.pkeys(ca0, 1)[..3], [0xffff, 0x8005, 0]);
    assert_eq!(up.pkey_blocks, 2 * r.cas.len() as u64, "{up:?}");
    // No policy: tables and enforcement stay as they are, nothing is written.
    let now = r.port.now();
    r.sm.set_partitions(now, None);
    let up = r.until_up();
    assert_eq!(up.pkey_blocks, 0);
    assert_eq!(&r.pkeys(ca0, 1)[..3], [0xffff, 0x8005, 0]);
    assert!(r.sim.verify().is_clean());
}
