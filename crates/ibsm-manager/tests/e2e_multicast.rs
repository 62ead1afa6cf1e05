//! Multicast that the switches forward: hosts (`ibsm_sim::SaClient`) join the IPoIB
//! broadcast group and an IPv4 group, some send-only; the SM writes the MFTs and
//! MulticastFDBTop; the simulator's `verify()` walks every group from every member
//! (each receiver gets a copy exactly once, no loops, nothing for send-only members or
//! non-members) and packets sent through the simulated switches arrive as counted.
//! On fat trees, a torus and a tree with cut cables, with joins and leaves.

mod common;

use std::time::Duration;

use common::{Node, attach, ca_nodes, drive, isl_ends, sim_of, until_clean, until_up};
use ibsm_manager::SmConfig;
use ibsm_sim::{Fault, NodeIdx, SaClient, Sim, SimConfig, SmaAgent, VerifyReport};
use ibsm_topology::{Fabric, generate};
use ibsm_wire::Gid;
use ibsm_wire::sa::{ComponentMask, McMemberRecord, join_state};

/// OpenSM's default partition's IPoIB broadcast group (predefined by the SM).
const BROADCAST: [u8; 16] = [
    0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF,
];

fn cfg() -> SmConfig {
    let mut c = SmConfig::default();
    // Only the sweeps the test causes.
    c.sweep_interval = Duration::ZERO;
    c
}

/// A join of `mgid`: the broadcast group (exists), or an IPv4 group that the first
/// joiner creates with the broadcast group's parameters.
fn join(mgid: [u8; 16], port_gid: Gid, js: u8) -> (McMemberRecord, ComponentMask) {
    let rec = McMemberRecord {
        mgid: Gid(mgid),
        port_gid,
        qkey: 0x0B1B,
        pkey: 0xFFFF,
        join_state: js,
        ..Default::default()
    };
    let mask = McMemberRecord::CM_MGID
        | McMemberRecord::CM_PORT_GID
        | McMemberRecord::CM_JOIN_STATE
        | McMemberRecord::CM_QKEY
        | McMemberRecord::CM_PKEY;
    (rec, mask)
}

fn v4() -> [u8; 16] {
    let mut m = BROADCAST;
    m[6..].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0xE0, 0, 0, 0x16]);
    m
}

struct Rig {
    sim: Sim<SmaAgent>,
    nodes: Vec<Node>,
    clients: Vec<SaClient>,
    cas: Vec<NodeIdx>,
}

impl Rig {
    fn new(f: &Fabric) -> Self {
        Self::with(f, SimConfig::default())
    }

    fn with(f: &Fabric, sim_cfg: SimConfig) -> Self {
        let mut sim = sim_of(f, sim_cfg);
        let cas = ca_nodes(&sim, f);
        let mut nodes = vec![attach(&mut sim, cas[0], cfg(), None)];
        until_up(&mut sim, &mut nodes, 0, Duration::from_secs(30));
        Self {
            sim,
            nodes,
            clients: Vec::new(),
            cas,
        }
    }

    fn gid(&self, ca: NodeIdx) -> Gid {
        let g = self.sim.node_setup(ca).unwrap().port_guid(1);
        Gid::new(ibsm_wire::DEFAULT_SUBNET_PREFIX, g)
    }

    /// A client at CA `i` (one per CA) joining `mgid` with `js`.
    fn join(&mut self, i: usize, mgid: [u8; 16], js: u8) {
        let ca = self.cas[i];
        let gid = self.gid(ca);
        let k = match self.clients.iter().position(|c| c.node() == ca) {
            Some(k) => k,
            None => {
                self.clients
                    .push(SaClient::attach(&mut self.sim, ca, 1).unwrap());
                self.clients.len() - 1
            }
        };
        let (rec, mask) = join(mgid, gid, js);
        self.clients[k].join(&self.sim, rec, mask);
    }

    fn leave(&mut self, i: usize, mgid: [u8; 16]) {
        let ca = self.cas[i];
        let c = self
            .clients
            .iter_mut()
            .find(|c| c.node() == ca)
            .expect("a client");
        assert!(c.leave(&mut self.sim, Gid(mgid)).is_some(), "joined");
    }

    /// Drives the SM and the clients for `d` of virtual time.
    fn run(&mut self, d: Duration) {
        let end = self.sim.now() + d;
        while self.sim.now() < end {
            let step = (self.sim.now() + Duration::from_millis(20)).min(end);
            let clients = &mut self.clients;
            drive(&mut self.sim, &mut self.nodes, step, |_, _| {
                for c in clients.iter_mut() {
                    c.receive();
                }
                false
            });
            for c in &mut self.clients {
                c.poll(&mut self.sim);
            }
        }
    }

    /// Until every join is accepted and the SM has written what they need.
    fn settle(&mut self) {
        for _ in 0..50 {
            self.run(Duration::from_millis(100));
            if self.clients.iter().all(SaClient::all_done) && !self.nodes[0].sm.is_sweeping() {
                break;
            }
        }
        assert!(self.clients.iter().all(SaClient::all_done));
        self.run(Duration::from_millis(200));
    }

    /// `verify()` is clean and walked the groups; then one packet from every member
    /// of every group, forwarded by the simulated switches, reaches each other
    /// receiving member exactly once and nobody else.
    fn check(&mut self, groups: usize) -> VerifyReport {
        let r = self.sim.verify();
        assert!(
            r.is_clean(),
            "multicast {:?}, unicast ok {}/{}",
            &r.mcast_samples[..r.mcast_samples.len().min(4)],
            r.ok,
            r.paths
        );
        assert_eq!(r.mcast_groups, groups);
        assert!(r.mcast_walks > 0);
        let members = self.sim.multicast_members();
        let before: Vec<u64> = members
            .iter()
            .map(|&(m, n, p, _)| self.sim.multicast_received(n, p, m))
            .collect();
        let dropped_before = self.sim.counters().drops;
        for &(m, n, p, _) in &members {
            self.sim.send_multicast(n, p, m);
        }
        self.sim.run_for(Duration::from_millis(1));
        for (k, &(m, n, p, receives)) in members.iter().enumerate() {
            let senders = members.iter().filter(|x| x.0 == m).count() as u64;
            let want = if receives { senders - 1 } else { 0 };
            let got = self.sim.multicast_received(n, p, m) - before[k];
            assert_eq!(got, want, "MLID {m:#x} at {n:?}/{p}");
        }
        let drops = self.sim.counters().drops;
        for why in [
            ibsm_sim::DropReason::Loop,
            ibsm_sim::DropReason::WrongEndpoint,
        ] {
            assert_eq!(
                drops.get(&why).copied().unwrap_or(0),
                dropped_before.get(&why).copied().unwrap_or(0),
                "{why:?}"
            );
        }
        r
    }

    /// The switch the SA rooted `mgid`'s tree at.
    fn root(&self, mgid: [u8; 16]) -> u64 {
        self.nodes[0]
            .sm
            .sa()
            .unwrap()
            .mcast_root(&Gid(mgid))
            .expect("a tree")
    }
}

/// Receivers and send-only members on several leaves, joins and leaves.
fn scenario(f: &Fabric) -> Rig {
    let mut rig = Rig::new(f);
    let n = rig.cas.len();
    let picks: Vec<usize> = (1..n).step_by((n / 6).max(1)).collect();
    for (k, &i) in picks.iter().enumerate() {
        rig.join(i, BROADCAST, join_state::FULL_MEMBER);
        let js = if k % 2 == 0 {
            join_state::FULL_MEMBER
        } else {
            join_state::SEND_ONLY_FULL_MEMBER
        };
        rig.join(i, v4(), js);
    }
    rig.settle();
    rig.check(2);
    // Some leave, others join.
    rig.leave(picks[0], v4());
    rig.leave(picks[1], BROADCAST);
    rig.join(n - 1, v4(), join_state::SEND_ONLY_FULL_MEMBER);
    rig.join(n - 2, BROADCAST, join_state::FULL_MEMBER);
    rig.settle();
    rig.check(2);
    rig
}

fn leaf_guids(f: &Fabric) -> Vec<u64> {
    f.cas()
        .filter_map(|(id, _)| f.port_peer(id, 1))
        .map(|p| f.node(p.node).unwrap().guid().0)
        .collect()
}

#[test]
fn fat_trees_forward_every_group() {
    for f in [
        generate::k_ary_n_tree(4, 2).unwrap(),
        generate::fat_tree(8, 2).unwrap(),
        generate::k_ary_n_tree(2, 3).unwrap(),
    ] {
        let rig = scenario(&f);
        // Members under several leaves: rooted above them, not at a leaf.
        let leaves = leaf_guids(&f);
        assert!(!leaves.contains(&rig.root(BROADCAST)), "rooted at a leaf");
    }
}

#[test]
fn a_torus_forwards_every_group() {
    let f = generate::grid(&generate::Grid {
        dims: vec![4, 4],
        torus: true,
        cas_per_switch: 2,
    })
    .unwrap();
    scenario(&f);
}

/// Cables cut while groups are in use: the SM builds the trees again on what is left
/// and the groups still reach every member.
#[test]
fn a_degraded_tree_still_forwards() {
    let f = generate::fat_tree(8, 2).unwrap();
    let mut rig = scenario(&f);
    let isls = isl_ends(&rig.sim, &f);
    for &(n, p) in isls.iter().step_by(3).take(5) {
        rig.sim.apply(Fault::LinkDown { node: n, port: p });
    }
    until_clean(&mut rig.sim, &mut rig.nodes, 0, Duration::from_secs(30));
    rig.settle();
    rig.check(2);
    // And joins after the cut.
    rig.join(2, v4(), join_state::FULL_MEMBER);
    rig.settle();
    rig.check(2);
}

/// MulticastFDBTop: the switches of a tree were told the top of their MFT (they do
/// not forward above it), the others keep "none".
#[test]
fn multicast_fdb_top_is_written() {
    let f = generate::k_ary_n_tree(4, 2).unwrap();
    let rig = scenario(&f);
    let tops = rig.nodes[0].sm.sa().unwrap().mft_tops();
    assert!(!tops.is_empty());
    for (_, n) in f.nodes().filter(|(_, n)| n.is_switch()) {
        let idx = rig.sim.node_by_guid(n.guid().0).unwrap();
        let top = rig
            .sim
            .with_agent(idx, |a| a.sma().switch_info().unwrap().multicast_fdb_top);
        let want = tops.get(&n.guid().0).copied().unwrap_or(0xBFFF);
        assert_eq!(top, want, "switch {:#x}", n.guid().0);
    }
    assert!(tops.values().all(|&t| t == 0xC01F));
}

/// While trees change (members come and go on a torus, so roots move), the MFTs
/// never form a loop at any point the SM gets an answer: the SM writes the ports the
/// new trees drop, waits for every answer, then the ones they add.
#[test]
fn tree_changes_never_loop_on_the_wire() {
    let f = generate::grid(&generate::Grid {
        dims: vec![5, 5],
        torus: true,
        cas_per_switch: 1,
    })
    .unwrap();
    // Slow links spread the arrival of one step's Sets over microseconds.
    let sim_cfg = SimConfig {
        hop_latency: Duration::from_micros(1),
        ..SimConfig::default()
    };
    let mut rig = Rig::with(&f, sim_cfg);
    let n = rig.cas.len();
    let mut loops = 0u64;
    let mut checks = 0u64;
    let mut joined: Vec<usize> = Vec::new();
    let mut rng = 0x5eedu64;
    for round in 0..80 {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let i = 1 + (rng >> 33) as usize % (n - 1);
        if joined.len() > 2 && round % 2 == 0 {
            let j = joined.remove((rng >> 20) as usize % joined.len());
            rig.leave(j, v4());
        } else if !joined.contains(&i) {
            rig.join(i, v4(), join_state::FULL_MEMBER);
            joined.push(i);
        }
        // The join or leave goes out, the SA answers and the SM writes the MFTs within
        // a few hundred microseconds: look at the MFTs every hop time meanwhile.
        for _ in 0..2000 {
            let step = rig.sim.now() + Duration::from_nanos(250);
            let clients = &mut rig.clients;
            drive(&mut rig.sim, &mut rig.nodes, step, |_, _| {
                for c in clients.iter_mut() {
                    c.receive();
                }
                false
            });
            for c in &mut rig.clients {
                c.poll(&mut rig.sim);
            }
            let r = rig.sim.verify_multicast();
            checks += 1;
            loops += r
                .mcast_samples
                .iter()
                .filter(|p| matches!(p.fault, ibsm_sim::McastFault::Loop { .. }))
                .count() as u64;
        }
        rig.run(Duration::from_millis(50));
    }
    assert!(checks > 1000, "{checks} checks");
    assert_eq!(loops, 0, "transient loops seen in {checks} checks");
    rig.settle();
    rig.check(1);
}

/// Two 6-port switches cabled by port 4, CAs on ports 1..=3 of each; ports 5 and 6
/// free.
fn two_switches() -> Fabric {
    use ibsm_topology::NodeSpec;
    let mut f = Fabric::new();
    let s: Vec<_> = (0..2)
        .map(|i| {
            f.add_node(NodeSpec::switch(0x100 + i, 6, format!("sw{i}")))
                .unwrap()
        })
        .collect();
    f.connect(s[0], 4, s[1], 4).unwrap();
    for i in 0..6u64 {
        let c = f
            .add_node(NodeSpec::ca(0x200 + i, 1, format!("ca{i}")))
            .unwrap();
        f.connect(s[(i / 3) as usize], 1 + (i % 3) as u8, c, 1)
            .unwrap();
    }
    f
}

/// A switch whose MulticastFDBCap holds only MLIDs 0xC000..=0xC001 joins after groups
/// on 0xC002 and 0xC003 exist: the SM never writes it an entry it cannot hold, reports
/// the group with a member behind it (`MlidBeyondCap`), routes that group's tree around
/// it (its member there misses the group, every other member gets it), and a group
/// created afterwards gets an MLID within the new cap.
#[test]
fn a_switch_with_a_smaller_mft_cap_gets_no_entry_beyond_it() {
    use ibsm_manager::SmEvent;
    use ibsm_sim::{McastFault, NodeKind, NodeSetup};
    let f = two_switches();
    let mut rig = Rig::new(&f);
    let group = |last: u8| {
        let mut m = v4();
        m[15] = last;
        m
    };
    let (g3, g4, g5) = (group(0x17), group(0x18), group(0x19));
    // Broadcast 0xC000 (predefined), v4 0xC001, g3 0xC002, g4 0xC003.
    for (i, g) in [(1, v4()), (2, g3), (3, g4)] {
        rig.join(i, BROADCAST, join_state::FULL_MEMBER);
        rig.join(i, g, join_state::FULL_MEMBER);
        rig.settle();
    }
    rig.join(4, g3, join_state::FULL_MEMBER);
    rig.settle();
    let mlid = |rig: &Rig, g: [u8; 16]| {
        rig.clients
            .iter()
            .flat_map(SaClient::joined)
            .find(|(m, _)| *m == Gid(g))
            .map(|(_, l)| l)
    };
    assert_eq!(
        [v4(), g3, g4].map(|g| mlid(&rig, g)),
        [Some(0xC001), Some(0xC002), Some(0xC003)]
    );
    // v4's only member leaves: 0xC001 is free again.
    rig.leave(1, v4());
    rig.settle();
    // The small switch on sw1's port 5, a new CA behind it.
    let sw1 = rig.sim.node_by_guid(0x101).unwrap();
    let mut setup = NodeSetup::new(0x7700, NodeKind::Switch, 4, "small-mft");
    setup.mft_cap = 2;
    let small = rig.sim.add_node(setup).unwrap();
    let ca6 = rig
        .sim
        .add_node(NodeSetup::new(0x7800, NodeKind::Ca, 1, "ca6"))
        .unwrap();
    rig.sim.connect(sw1, 5, small, 1).unwrap();
    rig.sim.connect(small, 2, ca6, 1).unwrap();
    until_clean(&mut rig.sim, &mut rig.nodes, 0, Duration::from_secs(30));
    rig.cas.push(ca6);
    rig.join(6, BROADCAST, join_state::FULL_MEMBER);
    rig.join(6, g3, join_state::FULL_MEMBER);
    rig.join(6, g5, join_state::FULL_MEMBER);
    rig.settle();
    // The new group within the small switch's cap.
    assert_eq!(mlid(&rig, g5), Some(0xC001));
    let beyond: Vec<_> = rig.nodes[0]
        .events
        .iter()
        .filter_map(|e| match e {
            SmEvent::MlidBeyondCap {
                mgid,
                mlid,
                switch_guid,
            } => Some((*mgid, *mlid, *switch_guid)),
            _ => None,
        })
        .collect();
    assert_eq!(beyond, vec![(Gid(g3), 0xC002, 0x7700)]);
    // Nothing beyond the cap in the small switch's MFT; its groups within it forwarded.
    for m in 0xC002..=0xC01F {
        let e = rig
            .sim
            .with_agent(small, |a| a.sma().mft(m).map(<[u16]>::to_vec));
        assert!(
            e.as_ref().is_none_or(|v| v.iter().all(|&x| x == 0)),
            "MLID {m:#x}: {e:?}"
        );
    }
    for m in [0xC000, 0xC001] {
        let e = rig
            .sim
            .with_agent(small, |a| a.sma().mft(m).map(<[u16]>::to_vec));
        assert!(e.is_some_and(|v| v.iter().any(|&x| x != 0)), "MLID {m:#x}");
    }
    // Its MulticastFDBTop within its cap too (the SMA refuses more): 0xC001, not the
    // end of the block.
    let top = rig
        .sim
        .with_agent(small, |a| a.sma().switch_info().unwrap().multicast_fdb_top);
    assert_eq!(top, 0xC001);
    // Every multicast problem is ca6 missing g3 (or sending it into nothing); unicast
    // and every other group are clean.
    let r = rig.sim.verify();
    assert_eq!(r.ok, r.paths, "unicast");
    assert!(r.mcast_faults > 0);
    for p in &r.mcast_samples {
        assert_eq!(p.mlid, 0xC002, "{p:?}");
        let at_ca6 =
            p.src == ca6 || matches!(p.fault, McastFault::Missed { node, .. } if node == ca6);
        assert!(at_ca6, "{p:?}");
    }
}
