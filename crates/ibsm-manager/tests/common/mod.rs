//! Shared helpers of the end-to-end tests: one or several `SubnetManager`s driven on
//! `ibsm-sim` in one thread, on virtual time.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use ibsm_manager::{LidStore, Role, SmConfig, SmEvent, SubnetManager, SweepStats};
use ibsm_sim::{NodeIdx, Sim, SimConfig, SimPort, SmaAgent, VerifyReport};
use ibsm_topology::Fabric;
use ibsm_transport::{Instant, Transport, TransportError};

/// One SM on the simulated fabric: its engine, its port, and every event it emitted.
pub(crate) struct Node {
    pub(crate) sm: SubnetManager,
    pub(crate) port: SimPort<SmaAgent>,
    pub(crate) events: Vec<SmEvent>,
    /// Position in `events` up to which a caller has looked (see [`Node::fresh`]).
    pub(crate) seen: usize,
    pub(crate) alive: bool,
    /// Every MAD handed out and every event, digested in order (see [`Trace`]).
    pub(crate) trace: Trace,
    /// When `Some`, every MAD handed out is also kept here, in order.
    pub(crate) sent: Option<Vec<Vec<u8>>>,
}

/// A running digest of what one SM did: every MAD it handed to its port (address and
/// bytes) and every event (its `Debug` form, wall-clock fields zeroed), in order.
/// FNV-1a, so the digest is the same on every machine and toolchain. With a `log`,
/// each record is also kept as a line (for diffing two runs).
#[derive(Debug, Default)]
pub(crate) struct Trace {
    pub(crate) digest: u64,
    pub(crate) mads: u64,
    pub(crate) events: u64,
    pub(crate) log: Option<Vec<String>>,
}

impl Trace {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn eat(&mut self, bytes: &[u8]) {
        if self.digest == 0 {
            self.digest = Self::OFFSET;
        }
        for &b in bytes {
            self.digest ^= u64::from(b);
            self.digest = self.digest.wrapping_mul(Self::PRIME);
        }
    }

    fn record(&mut self, line: String) {
        self.eat(line.as_bytes());
        self.eat(b"\n");
        if let Some(log) = self.log.as_mut() {
            log.push(line);
        }
    }

    /// A MAD: method, class, attribute, modifier and address spelled out, then the
    /// digest of every byte (TID and payload included).
    fn mad(&mut self, addr: &ibsm_transport::Address, mad: &[u8]) {
        self.mads += 1;
        let mut h = Trace::default();
        h.eat(mad);
        let digest = h.digest;
        let line = match ibsm_wire::MadHeaderView::new_checked(mad) {
            Ok(h) => format!(
                "mad class={:?} method={:?} response={} attr={:#06x} mod={:#010x} to={addr:?} bytes={:016x}",
                h.mgmt_class(),
                h.method(),
                h.response(),
                h.attribute_id(),
                h.attribute_modifier(),
                digest
            ),
            Err(_) => format!("mad short to={addr:?} bytes={digest:016x}"),
        };
        self.record(line);
    }

    fn event(&mut self, ev: &SmEvent) {
        self.events += 1;
        let mut ev = ev.clone();
        // Wall time spent routing is the only field not on the virtual clock.
        if let SmEvent::SubnetUp { stats } | SmEvent::LightSweepDone { stats } = &mut ev {
            stats.routing_wall = Duration::ZERO;
        }
        self.record(format!("event {ev:?}"));
    }
}

impl Node {
    /// Events since the last call.
    pub(crate) fn fresh(&mut self) -> &[SmEvent] {
        let from = self.seen;
        self.seen = self.events.len();
        &self.events[from..]
    }

    pub(crate) fn ups(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, SmEvent::SubnetUp { .. }))
            .count()
    }

    pub(crate) fn last_up(&self) -> Option<&SweepStats> {
        self.events.iter().rev().find_map(|e| match e {
            SmEvent::SubnetUp { stats } => Some(stats),
            _ => None,
        })
    }
}

/// The CA node indices of the fabric, in fabric order, as simulator nodes.
pub(crate) fn ca_nodes(sim: &Sim<SmaAgent>, fabric: &Fabric) -> Vec<NodeIdx> {
    fabric
        .cas()
        .map(|(_, ca)| sim.node_by_guid(ca.guid().0).expect("CA in sim"))
        .collect()
}

pub(crate) fn sim_of(fabric: &Fabric, cfg: SimConfig) -> Sim<SmaAgent> {
    Sim::from_fabric(fabric, cfg).expect("sim from fabric")
}

/// Attaches an SM at port 1 of `ca` and starts it.
pub(crate) fn attach(
    sim: &mut Sim<SmaAgent>,
    ca: NodeIdx,
    cfg: SmConfig,
    store: Option<Box<dyn LidStore + Send>>,
) -> Node {
    let mut port = sim.attach_sm(ca, 1).expect("attach");
    port.set_is_sm(true).expect("issm");
    let mut sm = match store {
        Some(s) => SubnetManager::with_store(cfg, port.local_port(), s),
        None => SubnetManager::new(cfg, port.local_port()),
    }
    .expect("valid configuration");
    sm.start(port.now()).expect("start");
    Node {
        sm,
        port,
        events: Vec::new(),
        seen: 0,
        alive: true,
        trace: Trace::default(),
        sent: None,
    }
}

/// Lets every live SM transmit and collects its events.
pub(crate) fn flush(n: &mut Node) {
    let now = n.port.now();
    while let Some(out) = n.sm.poll_transmit(now) {
        n.trace.mad(&out.addr, &out.mad);
        if let Some(sent) = n.sent.as_mut() {
            sent.push(out.mad.clone());
        }
        if let Err(e) = n.port.send(&out.addr, &out.mad) {
            if let Some(id) = out.id {
                n.sm.handle_send_error(now, id, e);
            }
        }
    }
    while let Some(ev) = n.sm.poll_event() {
        n.trace.event(&ev);
        n.events.push(ev);
    }
}

/// Drives every live SM in one thread until virtual time `until` or `stop` says so
/// (checked after every round). Returns whether `stop` fired.
pub(crate) fn drive(
    sim: &mut Sim<SmaAgent>,
    nodes: &mut [Node],
    until: Instant,
    mut stop: impl FnMut(&Sim<SmaAgent>, &mut [Node]) -> bool,
) -> bool {
    // Rounds in a row at the same instant: a driver or engine bug (a deadline that
    // never moves) would otherwise spin for ever.
    let mut stuck = (Instant::ZERO, 0u32);
    loop {
        for n in nodes.iter_mut().filter(|n| n.alive) {
            flush(n);
        }
        if stuck.0 == sim.now() {
            stuck.1 += 1;
            assert!(
                stuck.1 < 100_000,
                "no progress at {:?}: {:?}",
                sim.now(),
                nodes
                    .iter_mut()
                    .map(|n| (
                        n.alive,
                        n.sm.role(),
                        n.sm.poll_timeout(),
                        format!("{:?}", n.sm)
                    ))
                    .collect::<Vec<_>>()
            );
        } else {
            stuck = (sim.now(), 0);
        }
        if std::env::var_os("E2E_TRACE").is_some() {
            eprintln!(
                "t={:?} {:?}",
                sim.now(),
                nodes
                    .iter_mut()
                    .map(|n| (n.alive, n.sm.role(), n.sm.poll_timeout(), n.events.len()))
                    .collect::<Vec<_>>()
            );
        }
        if stop(sim, nodes) {
            return true;
        }
        let now = sim.now();
        if now >= until {
            return false;
        }
        let deadline = nodes
            .iter_mut()
            .filter(|n| n.alive)
            .filter_map(|n| n.sm.poll_timeout())
            .min()
            .unwrap_or(Instant::MAX)
            .min(until)
            .max(now);
        sim.advance(deadline);
        let now = sim.now();
        for n in nodes.iter_mut().filter(|n| n.alive) {
            loop {
                match n.port.recv(now) {
                    Ok(rx) => n.sm.handle_incoming(now, rx),
                    Err(TransportError::Timeout) => break,
                    Err(_) => break,
                }
            }
            if n.sm.poll_timeout().is_some_and(|t| t <= now) {
                n.sm.handle_timeout(now);
            }
        }
    }
}

/// Drives until `nodes[i]` reports a new SUBNET UP (beyond `before` ups) or `limit`
/// of virtual time passes; panics on timeout.
pub(crate) fn until_up(sim: &mut Sim<SmaAgent>, nodes: &mut [Node], i: usize, limit: Duration) {
    let before = nodes[i].ups();
    let until = sim.now() + limit;
    let ok = drive(sim, nodes, until, |_, ns| ns[i].ups() > before);
    assert!(
        ok,
        "SM {i} not up within {limit:?}; events: {:?}",
        tail(&nodes[i].events)
    );
}

/// Drives until the subnet verifies clean while the SM `i` is idle (not sweeping, no
/// heavy sweep in progress); panics after `limit`.
pub(crate) fn until_clean(sim: &mut Sim<SmaAgent>, nodes: &mut [Node], i: usize, limit: Duration) {
    let until = sim.now() + limit;
    let mut checks = 0u32;
    let ok = drive(sim, nodes, until, |s, ns| {
        if ns[i].sm.is_sweeping() || !ns[i].sm.is_up() {
            return false;
        }
        // Verification walks every path: only check when the SM just went idle.
        checks += 1;
        s.verify().is_clean()
    });
    let report = sim.verify();
    assert!(
        ok,
        "not clean within {limit:?} ({checks} checks): {report:?}; events: {:?}",
        tail(&nodes[i].events)
    );
}

fn tail(ev: &[SmEvent]) -> &[SmEvent] {
    &ev[ev.len().saturating_sub(12)..]
}

/// The checks every configured subnet must pass: the LFT walk, unique LIDs, every
/// linked port Active, and the SM's LID table agreeing with the SMAs.
pub(crate) fn assert_configured(sim: &Sim<SmaAgent>, sm: &SubnetManager, fabric_lids: usize) {
    let report: VerifyReport = sim.verify();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.lids, fabric_lids, "LIDs in use");
    // Unique base LIDs, LMC-aligned, no overlapping ranges.
    let mut used = HashSet::new();
    for (&guid, &(lid, lmc)) in sm.lids() {
        assert!((1..0xC000).contains(&lid), "{guid:#x}: LID {lid}");
        assert_eq!(
            lid & ((1 << lmc) - 1),
            0,
            "{guid:#x}: LID {lid} not aligned"
        );
        for l in lid..lid + (1 << lmc) {
            assert!(used.insert(l), "LID {l} assigned twice");
        }
    }
    // Every linked port of every node is Active, and its LID is what the SM says.
    for i in 0..sim.node_count() {
        let node = NodeIdx(i as u32);
        let Some(setup) = sim.node_setup(node) else {
            continue;
        };
        let switch = setup.kind == ibsm_sim::NodeKind::Switch;
        let mut any_up = false;
        for p in 1..=setup.num_ports {
            if sim.peer(node, p).is_some() && sim.link_up(node, p) {
                any_up = true;
                let st = sim.with_agent(node, |a| a.sma().port_state(p));
                assert_eq!(
                    st.map(|s| format!("{s:?}")),
                    Some(format!("{:?}", ibsm_sma::LogicalState::Active)),
                    "{} port {p}",
                    setup.description
                );
                if !switch {
                    let lid = sim.with_agent(node, |a| a.sma().lid(p)).unwrap_or(0);
                    let want = sm.lids().get(&setup.port_guid(p)).map(|l| l.0);
                    assert_eq!(Some(lid), want, "{} port {p}", setup.description);
                }
            }
        }
        if switch && any_up {
            let lid = sim.with_agent(node, |a| a.sma().lid(0)).unwrap_or(0);
            assert_eq!(sm.lids().get(&setup.guid).map(|l| l.0), Some(lid));
        }
    }
}

/// LIDs of the ports in `keep` (GUIDs) in `before` and `after` must agree.
pub(crate) fn assert_lids_kept(
    before: &BTreeMap<u64, (u16, u8)>,
    after: &BTreeMap<u64, (u16, u8)>,
    skip: &HashSet<u64>,
) {
    let mut kept = 0;
    for (g, l) in before {
        if skip.contains(g) {
            continue;
        }
        assert_eq!(after.get(g), Some(l), "LID of {g:#x} changed");
        kept += 1;
    }
    assert!(kept > 0);
}

/// The role of every node.
pub(crate) fn roles(nodes: &[Node]) -> Vec<Role> {
    nodes.iter().map(|n| n.sm.role()).collect()
}

/// Switch-to-switch cables of `f` in the simulator, as (node, port) of their lower end.
pub(crate) fn isl_ends(sim: &Sim<SmaAgent>, f: &Fabric) -> Vec<(NodeIdx, u8)> {
    let mut v = Vec::new();
    for (_, n) in f.nodes().filter(|(_, n)| n.is_switch()) {
        let idx = sim.node_by_guid(n.guid().0).expect("switch in sim");
        for p in 1..=n.num_ports() {
            if let Some((peer, _)) = sim.peer(idx, p) {
                let switch = sim
                    .node_setup(peer)
                    .is_some_and(|s| s.kind == ibsm_sim::NodeKind::Switch);
                if switch && idx < peer {
                    v.push((idx, p));
                }
            }
        }
    }
    v
}

/// Drives until at least `wait` has passed with `nodes[0]` Master and idle and
/// `nodes[1]` Standby (60 s more at most); panics with the roles otherwise.
pub(crate) fn settle_master_standby(sim: &mut Sim<SmaAgent>, nodes: &mut [Node], wait: Duration) {
    let t = sim.now() + wait;
    let settled = drive(sim, nodes, t + Duration::from_secs(60), |s, ns| {
        s.now() >= t && ns[1].sm.role() == Role::Standby && !ns[0].sm.is_sweeping()
    });
    assert!(settled, "roles {:?}", roles(nodes));
}
