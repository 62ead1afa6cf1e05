//! Partitions over the simulator: the SM programs every port's P_Key table from a
//! partition policy, switch ports cabled to CAs enforce the CA's table, a second heavy
//! sweep writes nothing, and the SA's PathRecords follow the partitions.

use std::collections::BTreeSet;

use ibsm_manager::partition::{PartitionConfig, PartitionWarning};
use ibsm_manager::{SmConfig, SmEvent, SubnetManager, SweepStats, driver};
use ibsm_sim::{NodeIdx, Sim, SimConfig, SimPort, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Address, Incoming, LidAddress, Transport, TransportError};
use ibsm_wire::sa::{McMemberRecord, SaMad, SaStatus, join_state};
use ibsm_wire::{Gid, Method};

struct Rig {
    sim: Sim<SmaAgent>,
    sm: SubnetManager,
    port: SimPort<SmaAgent>,
    /// A client on the last CA (SA requests).
    tool: SimPort<SmaAgent>,
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
    rig_with(1, partitions)
}

/// [`rig`] with `routing_threads` threads to route on.
fn rig_with(
    routing_threads: usize,
    partitions: impl FnOnce(&[u64]) -> Option<PartitionConfig>,
) -> Rig {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, SimConfig::default()).unwrap();
    let cas = ca_guids(&fabric);
    let (_, first) = fabric.cas().next().unwrap();
    let port = sim
        .attach_sm(sim.node_by_guid(first.guid().0).unwrap(), 1)
        .unwrap();
    let (_, last) = fabric.cas().last().unwrap();
    let tool = sim
        .attach_tool(sim.node_by_guid(last.guid().0).unwrap(), 1)
        .unwrap();
    let mut cfg = SmConfig::default();
    cfg.sa = true;
    cfg.routing_threads = routing_threads;
    cfg.partitions = partitions(&cas);
    let sm = SubnetManager::new(cfg, port.local_port()).expect("valid configuration");
    let mut r = Rig {
        sim,
        sm,
        port,
        tool,
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

    /// The tool (on the last CA) joins group `mgid` as a full member: the SA's status
    /// and, when granted, the record.
    fn join(&mut self, mgid: Gid) -> (SaStatus, Option<McMemberRecord>) {
        let guid = *self.cas.last().unwrap();
        let t = McMemberRecord {
            mgid,
            port_gid: Gid::new(ibsm_wire::DEFAULT_SUBNET_PREFIX, guid),
            join_state: join_state::FULL_MEMBER,
            ..McMemberRecord::default()
        };
        let mask =
            McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
        let req = SaMad::request(Method::Set, 0x51, mask, &t).unwrap();
        let dst = Address::Lid(LidAddress::gsi(self.sm.sm_lid(), 0));
        self.tool.send(&dst, &req.to_bytes()).unwrap();
        let until = self.port.now() + std::time::Duration::from_millis(50);
        driver::run(&mut self.sm, &mut self.port, until, |_| false).unwrap();
        loop {
            match self.tool.recv(self.tool.now()) {
                Ok(Incoming::Mad(rx)) => {
                    let resp = SaMad::parse(&rx.mad).unwrap();
                    let rec = resp.status.is_ok().then(|| resp.record(0).unwrap());
                    return (resp.status.sa_status(), rec);
                }
                Ok(_) => {}
                Err(TransportError::Timeout) => panic!("no answer to the join"),
                Err(e) => panic!("{e}"),
            }
        }
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

/// With threads to route on, the P_Key plan is made beside the routing: every port of
/// every node gets the table it gets when the plan is made after the routing.
#[test]
fn the_plan_made_beside_the_routing_writes_the_same_tables() {
    let tables = |r: &Rig| -> Vec<(u64, u8, Vec<u16>)> {
        let mut all = Vec::new();
        for (_, node) in r.fabric.nodes() {
            let first = if node.is_switch() { 0 } else { 1 };
            for port in first..=node.num_ports() {
                all.push((node.guid().0, port, r.pkeys(node.guid().0, port)));
            }
        }
        all
    };
    let after = rig_with(1, |cas| Some(two_partitions(cas)));
    let beside = rig_with(2, |cas| Some(two_partitions(cas)));
    let (a, b) = (tables(&after), tables(&beside));
    assert!(
        a.iter().any(|(_, _, t)| valid(t).contains(&0x8002)),
        "the policy was written"
    );
    assert_eq!(a, b);
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

/// Emitted PartitionWarning events since index `from` of the event log.
fn warnings_since(r: &Rig, from: usize) -> Vec<PartitionWarning> {
    r.events[from..]
        .iter()
        .filter_map(|e| match e {
            SmEvent::PartitionWarning { warning } => Some(warning.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_partition_warning_is_reported_once_until_it_changes() {
    let policy = |n: u16| -> PartitionConfig {
        (1..=n)
            .map(|k| format!("p{k}={k:#x} : ALL=full ;\n"))
            .collect::<String>()
            .parse()
            .unwrap()
    };
    let mut r = rig(|_| Some(policy(40)));
    let first = warnings_since(&r, 0);
    assert!(!first.is_empty());
    // The same tables too small on the next heavy sweeps: nothing new to say.
    for _ in 0..2 {
        let from = r.events.len();
        r.heavy_sweep();
        assert!(
            r.events[from..]
                .iter()
                .any(|e| matches!(e, SmEvent::SubnetUp { .. }))
        );
        assert_eq!(warnings_since(&r, from), [], "repeated");
    }
    // One partition more: every warning is different (one more P_Key left out).
    let from = r.events.len();
    let now = r.port.now();
    r.sm.set_partitions(now, Some(policy(41)));
    r.until_up();
    let second = warnings_since(&r, from);
    assert_eq!(second.len(), first.len());
    assert!(second.iter().all(|w| !first.contains(w)));
    let from = r.events.len();
    r.heavy_sweep();
    assert_eq!(warnings_since(&r, from), []);
    // Everything fits: no warning; then too small again: reported again.
    let now = r.port.now();
    r.sm.set_partitions(now, Some(policy(3)));
    r.until_up();
    let from = r.events.len();
    let now = r.port.now();
    r.sm.set_partitions(now, Some(policy(41)));
    r.until_up();
    assert_eq!(warnings_since(&r, from), second);
}

#[test]
fn mgid_groups_are_predefined_and_only_members_join() {
    let mut r = rig(|cas| {
        let mut text = two_partitions(cas).to_string();
        text.push_str(
            "tenant_a=0x0001 :\n    mgid=ff12:a01b::42, sl=1, Q_Key=0x4242, mtu=5\n    ;\n\
             tenant_b=0x0002 : mgid=ff12:b01b::42, sl=1, Q_Key=0x4343, scope=5\n ;\n",
        );
        Some(text.parse().unwrap())
    });
    // The tool sits on the last CA: a member of tenant_b (0x0002), not of tenant_a.
    let a_group: Gid = Gid("ff12:a01b::42"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets());
    let (status, _) = r.join(a_group);
    assert_eq!(
        status,
        SaStatus::ReqInvalid,
        "a non-member of 0x0001 joined its group"
    );
    // Its own partition's broadcast group: granted (predefined the same way).
    let mut b_bcast = [0u8; 16];
    b_bcast[..6].copy_from_slice(&[0xff, 0x12, 0x40, 0x1b, 0x80, 0x02]);
    b_bcast[12..].copy_from_slice(&[0xff; 4]);
    let (status, rec) = r.join(Gid(b_bcast));
    assert_eq!(status, SaStatus::Success);
    assert_eq!(rec.unwrap().pkey, 0x8002);
    // Its own partition's mgid= group: granted, with the line's flags and the defaults
    // (the scope flag replaces the MGID's scope nibble, as in OpenSM).
    let b_group: Gid = Gid("ff15:b01b::42"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets());
    let (status, rec) = r.join(b_group);
    assert_eq!(status, SaStatus::Success);
    let rec = rec.unwrap();
    assert_eq!(
        (rec.pkey, rec.qkey, rec.sl, rec.scope, u8::from(rec.mtu)),
        (0x8002, 0x4343, 1, 5, 4)
    );
    assert!(rec.mlid >= 0xC000);
    // A new policy moves tenant_a's (empty) group to tenant_b: now the tool may join.
    let mut text = two_partitions(&r.cas).to_string();
    text.push_str("tenant_b=0x0002 :\n    mgid=ff12:a01b::42, sl=1, Q_Key=0x4242, mtu=5\n    ;\n");
    let now = r.port.now();
    r.sm.set_partitions(now, Some(text.parse().unwrap()));
    r.until_up();
    let (status, rec) = r.join(a_group);
    assert_eq!(status, SaStatus::Success);
    let rec = rec.unwrap();
    assert_eq!((rec.pkey, rec.qkey, u8::from(rec.mtu)), (0x8002, 0x4242, 5));
}
