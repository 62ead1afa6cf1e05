//! Checks of a programmed fabric, as the diagnostics make them on ibsim: every CA port
//! reaches every LID through the switches' LFTs over Active ports (no holes, loops or
//! wrong endpoints), LIDs are unique, and linked ports are Active; and every multicast
//! group the hosts joined carries a packet from any member to every other receiving
//! member exactly once through the switches' MFTs, without loops and without reaching
//! a port that does not receive (a non-member, or a send-only member).

use std::collections::{BTreeMap, HashSet, VecDeque};

use crate::NodeIdx;
use crate::agent::{Agent, ForwardingState};
use crate::core::Core;

/// What went wrong on one (source port, destination LID) walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathFault {
    /// A switch's LFT has no entry for the LID.
    Hole {
        /// The switch.
        switch: NodeIdx,
    },
    /// Following the LFTs comes back to a switch already visited.
    Loop {
        /// A switch on the loop.
        switch: NodeIdx,
    },
    /// The walk ends at a node that does not own the LID.
    WrongEndpoint {
        /// Where it ended.
        node: NodeIdx,
    },
    /// A hop leaves or enters through a port that is not Active (or whose link is down).
    NotActive {
        /// The node.
        node: NodeIdx,
        /// The port.
        port: u8,
    },
}

/// One failed walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathProblem {
    /// Source node (a CA or router).
    pub src: NodeIdx,
    /// Source port.
    pub src_port: u8,
    /// Destination LID.
    pub dlid: u16,
    /// What is wrong.
    pub fault: PathFault,
}

/// What went wrong with a multicast packet from one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum McastFault {
    /// A receiving member got no copy.
    Missed {
        /// The member.
        node: NodeIdx,
        /// Its port.
        port: u8,
    },
    /// A port got more than one copy (the sender: any copy).
    Duplicate {
        /// The node.
        node: NodeIdx,
        /// Its port.
        port: u8,
    },
    /// A copy came back into a switch by a port it had already come in by: the MFTs
    /// forward it for ever.
    Loop {
        /// A switch on the loop.
        switch: NodeIdx,
    },
    /// A copy reached a port that does not receive the group (a non-member, or a
    /// send-only member).
    NotReceiver {
        /// The node.
        node: NodeIdx,
        /// Its port.
        port: u8,
    },
    /// A copy had to cross a port that is not Active.
    NotActive {
        /// The node.
        node: NodeIdx,
        /// The port.
        port: u8,
    },
}

/// One failed multicast walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct McastProblem {
    /// The group's MLID.
    pub mlid: u16,
    /// The sending member.
    pub src: NodeIdx,
    /// Its port.
    pub src_port: u8,
    /// What is wrong.
    pub fault: McastFault,
}

/// Result of [`Sim::verify`](crate::Sim::verify).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Distinct LIDs in use (an LMC range counts each LID).
    pub lids: usize,
    /// LIDs claimed by more than one port: (LID, claimants).
    pub duplicate_lids: Vec<(u16, Vec<(NodeIdx, u8)>)>,
    /// Ports with a trained link but no LID (CA/router ports, switch port 0).
    pub no_lid: Vec<(NodeIdx, u8)>,
    /// Ports with a trained link that are not Active.
    pub not_active: Vec<(NodeIdx, u8)>,
    /// (source CA port, destination LID) pairs walked.
    pub paths: u64,
    /// Of those, delivered correctly.
    pub ok: u64,
    /// Of those, ending in an LFT hole.
    pub holes: u64,
    /// Of those, looping.
    pub loops: u64,
    /// Of those, ending at the wrong node.
    pub wrong_endpoint: u64,
    /// Of those, crossing a port that is not Active.
    pub not_active_hops: u64,
    /// The first problems found (at most [`VerifyReport::SAMPLES`]).
    pub samples: Vec<PathProblem>,
    /// Multicast groups with members ([`Sim::join_multicast`](crate::Sim::join_multicast)).
    pub mcast_groups: usize,
    /// (group, sending member) pairs walked through the MFTs.
    pub mcast_walks: u64,
    /// Of those, reaching every other receiving member exactly once and nothing else.
    pub mcast_ok: u64,
    /// Multicast faults found, every kind.
    pub mcast_faults: u64,
    /// The first multicast problems found (at most [`VerifyReport::SAMPLES`]).
    pub mcast_samples: Vec<McastProblem>,
}

impl VerifyReport {
    /// How many problems [`Self::samples`] keeps.
    pub const SAMPLES: usize = 32;

    /// Whether at least one path was walked and nothing is wrong (multicast groups
    /// included).
    ///
    /// A report with no walk (no CA or router port with a trained link, or no LID
    /// to walk to) is not clean: it checked no route, so it vouches for none.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.paths > 0
            && self.duplicate_lids.is_empty()
            && self.no_lid.is_empty()
            && self.not_active.is_empty()
            && self.ok == self.paths
            && self.mcast_ok == self.mcast_walks
    }
}

const UNSEEN: u8 = 0;
const ACTIVE_WALK: u8 = 1;

/// Per-switch memo of one destination: 0 unseen, 1 on the current walk, 2 ok, 3+ fault
/// (index into a side table).
#[derive(Clone, Copy)]
enum Outcome {
    Ok,
    Fault(PathFault),
}

pub(crate) fn verify<A: Agent>(c: &Core<A>) -> VerifyReport {
    let mut r = VerifyReport::default();
    // LID owners.
    let mut owner: Vec<u32> = vec![u32::MAX; 0xC000];
    let mut dups: std::collections::BTreeMap<u16, Vec<(NodeIdx, u8)>> = Default::default();
    let mut terminals: Vec<(u32, u8)> = Vec::new();
    for (i, n) in c.nodes.iter().enumerate() {
        if n.removed {
            continue;
        }
        let ports: Vec<u8> = if n.is_switch() {
            vec![0]
        } else {
            (1..=n.setup.num_ports).collect()
        };
        for p in ports {
            let linked = p == 0 || c.slots[(n.base + u32::from(p)) as usize].up;
            if !n.is_switch() && linked {
                terminals.push((i as u32, p));
            }
            let (base, lmc) = n.agent.lid(p);
            if base == 0 {
                if linked {
                    r.no_lid.push((NodeIdx(i as u32), p));
                }
                continue;
            }
            for l in u32::from(base)..(u32::from(base) + (1 << lmc.min(7))).min(0xC000) {
                let slot = &mut owner[l as usize];
                let me = (i as u32) << 8 | u32::from(p);
                if *slot == u32::MAX {
                    *slot = me;
                    r.lids += 1;
                } else {
                    let e = dups.entry(l as u16).or_default();
                    if e.is_empty() {
                        e.push((NodeIdx(*slot >> 8), *slot as u8));
                    }
                    e.push((NodeIdx(i as u32), p));
                }
            }
        }
        for p in 1..=n.setup.num_ports {
            let s = &c.slots[(n.base + u32::from(p)) as usize];
            if s.up && n.agent.port_state(p) != ForwardingState::Active {
                r.not_active.push((NodeIdx(i as u32), p));
            }
        }
    }
    r.duplicate_lids = dups.into_iter().collect();

    let owns = |node: u32, port: u8, l: u16| -> bool {
        let o = owner[l as usize];
        o != u32::MAX && o >> 8 == node && (c.nodes[node as usize].is_switch() || o as u8 == port)
    };
    let active = |node: u32, port: u8| -> bool {
        let n = &c.nodes[node as usize];
        c.slots[(n.base + u32::from(port)) as usize].up
            && n.agent.port_state(port) == ForwardingState::Active
    };
    // Where the link out of (node, port) lands.
    let peer = |node: u32, port: u8| -> (u32, u8) {
        let s = &c.slots[(c.nodes[node as usize].base + u32::from(port)) as usize];
        let p = &c.slots[s.peer as usize];
        (p.node, p.num)
    };

    let mut state = vec![UNSEEN; c.nodes.len()];
    let mut memo: Vec<Outcome> = vec![Outcome::Ok; c.nodes.len()];
    let mut walk: Vec<u32> = Vec::new();
    for dlid in 1..0xC000u16 {
        if owner[dlid as usize] == u32::MAX {
            continue;
        }
        state.iter_mut().for_each(|s| *s = UNSEEN);
        for &(src, sp) in &terminals {
            if owns(src, sp, dlid) {
                continue;
            }
            r.paths += 1;
            let out = if !active(src, sp) {
                Outcome::Fault(PathFault::NotActive {
                    node: NodeIdx(src),
                    port: sp,
                })
            } else {
                let (n1, p1) = peer(src, sp);
                if !active(n1, p1) {
                    Outcome::Fault(PathFault::NotActive {
                        node: NodeIdx(n1),
                        port: p1,
                    })
                } else if !c.nodes[n1 as usize].is_switch() {
                    if owns(n1, p1, dlid) {
                        Outcome::Ok
                    } else {
                        Outcome::Fault(PathFault::WrongEndpoint { node: NodeIdx(n1) })
                    }
                } else {
                    switch_outcome(
                        c, n1, dlid, &mut state, &mut memo, &mut walk, &owns, &active, &peer,
                    )
                }
            };
            match out {
                Outcome::Ok => r.ok += 1,
                Outcome::Fault(f) => {
                    match f {
                        PathFault::Hole { .. } => r.holes += 1,
                        PathFault::Loop { .. } => r.loops += 1,
                        PathFault::WrongEndpoint { .. } => r.wrong_endpoint += 1,
                        PathFault::NotActive { .. } => r.not_active_hops += 1,
                    }
                    if r.samples.len() < VerifyReport::SAMPLES {
                        r.samples.push(PathProblem {
                            src: NodeIdx(src),
                            src_port: sp,
                            dlid,
                            fault: f,
                        });
                    }
                }
            }
        }
    }
    verify_mcast(c, &mut r);
    r
}

/// Only the multicast walks of [`verify`] (cheap enough to run after every event).
pub(crate) fn verify_multicast<A: Agent>(c: &Core<A>) -> VerifyReport {
    let mut r = VerifyReport::default();
    verify_mcast(c, &mut r);
    r
}

/// Walks every multicast group from each member: a copy leaves the sender, and each
/// switch it enters by port `q` sends it out of every port of its MFT entry but `q`.
fn verify_mcast<A: Agent>(c: &Core<A>, r: &mut VerifyReport) {
    let active = |node: u32, port: u8| -> bool {
        let n = &c.nodes[node as usize];
        port == 0
            || (c.slots[(n.base + u32::from(port)) as usize].up
                && n.agent.port_state(port) == ForwardingState::Active)
    };
    let peer = |node: u32, port: u8| -> (u32, u8) {
        let s = &c.slots[(c.nodes[node as usize].base + u32::from(port)) as usize];
        let p = &c.slots[s.peer as usize];
        (p.node, p.num)
    };
    let mut mft = Vec::new();
    for (&mlid, members) in &c.mcast {
        let members: BTreeMap<(u32, u8), bool> = members
            .iter()
            .filter(|((n, _), _)| !c.nodes[*n as usize].removed)
            .map(|(k, v)| (*k, *v))
            .collect();
        if members.is_empty() {
            continue;
        }
        r.mcast_groups += 1;
        for &(src, sp) in members.keys() {
            r.mcast_walks += 1;
            let mut faults: Vec<McastFault> = Vec::new();
            let mut got: BTreeMap<(u32, u8), u32> = BTreeMap::new();
            let mut seen: HashSet<(u32, u8)> = HashSet::new();
            let mut q: VecDeque<(u32, u8)> = VecDeque::new();
            // Where a copy out of (node, port) goes: into a switch, or delivered.
            let hop = |node: u32,
                       port: u8,
                       q: &mut VecDeque<(u32, u8)>,
                       got: &mut BTreeMap<(u32, u8), u32>,
                       faults: &mut Vec<McastFault>| {
                if !active(node, port) {
                    faults.push(McastFault::NotActive {
                        node: NodeIdx(node),
                        port,
                    });
                    return;
                }
                let (n, p) = peer(node, port);
                if !active(n, p) {
                    faults.push(McastFault::NotActive {
                        node: NodeIdx(n),
                        port: p,
                    });
                } else if c.nodes[n as usize].is_switch() {
                    q.push_back((n, p));
                } else {
                    *got.entry((n, p)).or_default() += 1;
                }
            };
            if c.nodes[src as usize].is_switch() {
                q.push_back((src, 0));
            } else {
                hop(src, sp, &mut q, &mut got, &mut faults);
            }
            while let Some((sw, inp)) = q.pop_front() {
                if !seen.insert((sw, inp)) {
                    faults.push(McastFault::Loop {
                        switch: NodeIdx(sw),
                    });
                    continue;
                }
                // A bound on copies, whatever the tables hold.
                if seen.len() > c.slots.len() {
                    break;
                }
                mft.clear();
                c.nodes[sw as usize].agent.mft_ports(mlid, &mut mft);
                for &p in mft.iter().filter(|&&p| p != inp) {
                    if p == 0 {
                        *got.entry((sw, 0)).or_default() += 1;
                    } else if p <= c.nodes[sw as usize].setup.num_ports {
                        hop(sw, p, &mut q, &mut got, &mut faults);
                    }
                }
            }
            for (&(n, p), &k) in &got {
                let receives = members.get(&(n, p)).copied().unwrap_or(false);
                let at = (NodeIdx(n), p);
                if (n, p) == (src, sp) || (receives && k > 1) {
                    faults.push(McastFault::Duplicate {
                        node: at.0,
                        port: at.1,
                    });
                } else if !receives {
                    faults.push(McastFault::NotReceiver {
                        node: at.0,
                        port: at.1,
                    });
                }
            }
            for (&(n, p), &receives) in &members {
                if receives && (n, p) != (src, sp) && !got.contains_key(&(n, p)) {
                    faults.push(McastFault::Missed {
                        node: NodeIdx(n),
                        port: p,
                    });
                }
            }
            if faults.is_empty() {
                r.mcast_ok += 1;
            }
            r.mcast_faults += faults.len() as u64;
            for f in faults {
                if r.mcast_samples.len() < VerifyReport::SAMPLES {
                    r.mcast_samples.push(McastProblem {
                        mlid,
                        src: NodeIdx(src),
                        src_port: sp,
                        fault: f,
                    });
                }
            }
        }
    }
}

const DONE: u8 = 2;

/// Follows LFTs from switch `start` towards `dlid`, memoising every switch on the way.
#[allow(clippy::too_many_arguments)]
fn switch_outcome<A: Agent>(
    c: &Core<A>,
    start: u32,
    dlid: u16,
    state: &mut [u8],
    memo: &mut [Outcome],
    walk: &mut Vec<u32>,
    owns: &impl Fn(u32, u8, u16) -> bool,
    active: &impl Fn(u32, u8) -> bool,
    peer: &impl Fn(u32, u8) -> (u32, u8),
) -> Outcome {
    walk.clear();
    let mut sw = start;
    let result = loop {
        match state[sw as usize] {
            DONE => break memo[sw as usize],
            ACTIVE_WALK => {
                break Outcome::Fault(PathFault::Loop {
                    switch: NodeIdx(sw),
                });
            }
            _ => {}
        }
        state[sw as usize] = ACTIVE_WALK;
        walk.push(sw);
        if owns(sw, 0, dlid) {
            break Outcome::Ok;
        }
        let Some(out) = c.nodes[sw as usize].agent.lft_port(dlid) else {
            break Outcome::Fault(PathFault::Hole {
                switch: NodeIdx(sw),
            });
        };
        if out == 0 || out > c.nodes[sw as usize].setup.num_ports {
            break Outcome::Fault(PathFault::WrongEndpoint { node: NodeIdx(sw) });
        }
        if !active(sw, out) {
            break Outcome::Fault(PathFault::NotActive {
                node: NodeIdx(sw),
                port: out,
            });
        }
        let (nn, np) = peer(sw, out);
        if !active(nn, np) {
            break Outcome::Fault(PathFault::NotActive {
                node: NodeIdx(nn),
                port: np,
            });
        }
        if !c.nodes[nn as usize].is_switch() {
            break if owns(nn, np, dlid) {
                Outcome::Ok
            } else {
                Outcome::Fault(PathFault::WrongEndpoint { node: NodeIdx(nn) })
            };
        }
        sw = nn;
    };
    for &s in walk.iter() {
        state[s as usize] = DONE;
        memo[s as usize] = result;
    }
    result
}
