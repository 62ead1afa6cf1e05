//! Model tests of the multicast trees: central roots, send-only members, and the
//! order of MFT updates (every intermediate state loop-free).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::tree::{Entries, Hops, Member, next_step};

/// A switch fabric for the model: links `(a, port on a, b, port on b)`.
struct Net {
    n: u32,
    links: Vec<(u32, u8, u32, u8)>,
}

impl Net {
    fn hops(&self) -> Hops {
        let mut adj = vec![Vec::new(); self.n as usize];
        for &(a, pa, b, pb) in &self.links {
            adj[a as usize].push((pa, b, pb));
            adj[b as usize].push((pb, a, pa));
        }
        for a in &mut adj {
            a.sort_unstable();
        }
        Hops::from_links(
            (0..u64::from(self.n)).map(|g| 0x100 + g).collect(),
            adj,
            HashMap::new(),
        )
    }

    /// (switch, port) -> (switch, port) at the other end.
    fn peers(&self) -> HashMap<(u32, u8), (u32, u8)> {
        let mut m = HashMap::new();
        for &(a, pa, b, pb) in &self.links {
            m.insert((a, pa), (b, pb));
            m.insert((b, pb), (a, pa));
        }
        m
    }

    /// A ring of `n` switches (ports 20 and 21: the second port group).
    fn ring(n: u32) -> Self {
        Self {
            n,
            links: (0..n).map(|i| (i, 20, (i + 1) % n, 21)).collect(),
        }
    }

    /// A `k` x `k` torus (ports 13..=16, straddling the first two port groups).
    fn torus(k: u32) -> Self {
        let mut links = Vec::new();
        for y in 0..k {
            for x in 0..k {
                let me = y * k + x;
                links.push((me, 13, y * k + (x + 1) % k, 14));
                links.push((me, 15, ((y + 1) % k) * k + x, 16));
            }
        }
        Self { n: k * k, links }
    }

    /// A two-level fat tree: `spines` spines (0..), `leaves` leaves, every leaf port
    /// `1 + s` to spine `s` port `1 + leaf`.
    fn fat(spines: u32, leaves: u32) -> Self {
        let mut links = Vec::new();
        for l in 0..leaves {
            for s in 0..spines {
                links.push((spines + l, 1 + s as u8, s, 1 + l as u8));
            }
        }
        Self {
            n: spines + leaves,
            links,
        }
    }
}

/// Tiny deterministic generator for the model.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const MLID: u16 = 0xC000;

fn entries(h: &Hops, members: &[Member], uses: &HashMap<u64, u32>) -> Entries {
    let Some(root) = h.root(members, None, uses) else {
        return Entries::new();
    };
    h.tree(root, members)
        .into_iter()
        .map(|(s, p)| ((h.guid(s), MLID), p))
        .collect()
}

/// A packet at a switch, by the port it came in by.
type State = (u32, u8);

/// Whether the MFT state `st` lets a packet come back to a (switch, in-port) it was
/// at: a cycle in the graph of (switch, arrival port) states, where a packet at `s`
/// that came in by `q` goes out of every port of `s`'s entry but `q`.
fn has_loop(net: &Net, st: &Entries) -> bool {
    let peers = net.peers();
    let ports = |s: u32| st.get(&(0x100 + u64::from(s), MLID));
    // Iterative DFS over states (switch, in-port) with colours.
    let mut colour: HashMap<(u32, u8), u8> = HashMap::new();
    let states: Vec<(u32, u8)> = peers.keys().copied().collect();
    for &start in &states {
        if colour.contains_key(&start) {
            continue;
        }
        let mut stack: Vec<(State, Vec<State>)> = Vec::new();
        let next_of = |(s, q): (u32, u8)| -> Vec<(u32, u8)> {
            ports(s)
                .into_iter()
                .flatten()
                .filter(|&&p| p != q)
                .filter_map(|&p| peers.get(&(s, p)).copied())
                .collect()
        };
        colour.insert(start, 1);
        stack.push((start, next_of(start)));
        while let Some((_, succ)) = stack.last_mut() {
            if let Some(n) = succ.pop() {
                match colour.get(&n) {
                    Some(1) => return true,
                    Some(_) => {}
                    None => {
                        colour.insert(n, 1);
                        let s = next_of(n);
                        stack.push((n, s));
                    }
                }
            } else {
                let (done, _) = stack.pop().unwrap();
                colour.insert(done, 2);
            }
        }
    }
    false
}

/// The Sets that take `from` to `to`: one per (switch, MLID, 16-port group) that
/// differs, as the MFT blocks carry them.
fn sets(from: &Entries, to: &Entries) -> Vec<(u64, u8, BTreeSet<u8>)> {
    let mut keys: BTreeSet<(u64, u8)> = BTreeSet::new();
    let empty = BTreeSet::new();
    for k in from.keys().chain(to.keys()) {
        let a = from.get(k).unwrap_or(&empty);
        let b = to.get(k).unwrap_or(&empty);
        for pos in 0..16u8 {
            let part = |s: &BTreeSet<u8>| -> BTreeSet<u8> {
                s.iter().copied().filter(|p| p / 16 == pos).collect()
            };
            if part(a) != part(b) {
                keys.insert((k.0, pos));
            }
        }
    }
    keys.into_iter()
        .map(|(sw, pos)| {
            let ports = to
                .get(&(sw, MLID))
                .map(|s| s.iter().copied().filter(|p| p / 16 == pos).collect())
                .unwrap_or_default();
            (sw, pos, ports)
        })
        .collect()
}

fn apply(st: &mut Entries, (sw, pos, ports): &(u64, u8, BTreeSet<u8>)) {
    let e = st.entry((*sw, MLID)).or_default();
    e.retain(|p| p / 16 != *pos);
    e.extend(ports.iter().copied());
    if e.is_empty() {
        st.remove(&(*sw, MLID));
    }
}

fn random_members(rng: &mut Rng, net: &Net, hosts_from: u32) -> Vec<Member> {
    let k = 1 + rng.below(5) as usize;
    (0..k)
        .map(|i| Member {
            sw: hosts_from + rng.below(u64::from(net.n - hosts_from)) as u32,
            port: 30 + i as u8,
            receives: rng.below(4) != 0,
        })
        .collect()
}

/// Tree changes on rings, tori and fat trees (members move, the root moves), the Sets
/// of each step applied one at a time in a random order: no intermediate state has a
/// forwarding loop, and the new tree is reached in at most two steps.
#[test]
fn updates_never_loop() {
    let mut rng = Rng(7);
    let nets = [
        (Net::ring(6), 0),
        (Net::ring(9), 0),
        (Net::torus(3), 0),
        (Net::torus(4), 0),
        (Net::fat(3, 5), 3),
    ];
    let mut changes = 0;
    for (net, hosts_from) in &nets {
        let h = net.hops();
        for _ in 0..300 {
            let old = entries(
                &h,
                &random_members(&mut rng, net, *hosts_from),
                &HashMap::new(),
            );
            let want = entries(
                &h,
                &random_members(&mut rng, net, *hosts_from),
                &HashMap::new(),
            );
            assert!(
                !has_loop(net, &old) && !has_loop(net, &want),
                "a tree loops"
            );
            let mut programmed = old;
            let mut steps = 0;
            while programmed != want {
                steps += 1;
                assert!(steps <= 2, "more than two steps");
                let next = next_step(&programmed, &want);
                let mut todo = sets(&programmed, &next);
                changes += todo.len();
                let mut st = programmed.clone();
                while !todo.is_empty() {
                    let i = rng.below(todo.len() as u64) as usize;
                    apply(&mut st, &todo.swap_remove(i));
                    assert!(!has_loop(net, &st), "a transient loop: {st:?}");
                }
                assert_eq!(st, next);
                programmed = next;
            }
        }
    }
    assert!(changes > 1000, "the model changed trees ({changes} Sets)");
}

/// The root is the switch with the fewest hops to the farthest member: a spine for
/// members under several leaves, the leaf itself for members under one leaf.
#[test]
fn root_is_central() {
    let net = Net::fat(3, 5);
    let h = net.hops();
    let m = |sw: u32, port: u8| Member {
        sw,
        port,
        receives: true,
    };
    let spread = [m(3, 30), m(5, 30), m(7, 31)];
    let r = h.root(&spread, None, &HashMap::new()).unwrap();
    assert!(r < 3, "a spine, not switch {r}");
    let one_leaf = [m(4, 30), m(4, 31)];
    assert_eq!(h.root(&one_leaf, None, &HashMap::new()), Some(4));
    // On a ring the centre of members at 0, 1 and 2 is 1.
    let ring = Net::ring(8);
    let hr = ring.hops();
    assert_eq!(
        hr.root(&[m(0, 30), m(1, 30), m(2, 30)], None, &HashMap::new()),
        Some(1)
    );
}

/// Equally central roots spread over groups: the least used spine, and a group keeps
/// its root while it stays among the most central.
#[test]
fn roots_spread_and_stay() {
    let net = Net::fat(3, 5);
    let h = net.hops();
    let members = [
        Member {
            sw: 3,
            port: 30,
            receives: true,
        },
        Member {
            sw: 6,
            port: 30,
            receives: true,
        },
    ];
    let mut uses: HashMap<u64, u32> = HashMap::new();
    let mut roots = HashSet::new();
    for _ in 0..3 {
        let r = h.root(&members, None, &uses).unwrap();
        *uses.entry(h.guid(r)).or_default() += 1;
        roots.insert(r);
    }
    assert_eq!(roots.len(), 3, "three groups, three spines");
    let cur = h.guid(2);
    assert_eq!(h.root(&members, Some(cur), &uses), Some(2));
}

/// A send-only member's switch sends up the tree; its port and the way down to it
/// carry nothing; a group of send-only members alone has no tree.
#[test]
fn send_only_members_only_send() {
    let net = Net::fat(2, 3);
    let h = net.hops();
    let recv = Member {
        sw: 2,
        port: 30,
        receives: true,
    };
    let send = Member {
        sw: 3,
        port: 31,
        receives: false,
    };
    let r = h.root(&[recv, send], None, &HashMap::new()).unwrap();
    let t = h.tree(r, &[recv, send]);
    assert!(t[&2].contains(&30), "the receiver's port");
    let sender_leaf = t.get(&3).cloned().unwrap_or_default();
    assert!(!sender_leaf.contains(&31), "not the send-only port");
    assert_eq!(sender_leaf.len(), 1, "only the way up: {sender_leaf:?}");
    // The spine forwards down to the receiver's leaf only (port 1 + leaf index).
    assert_eq!(t[&r], BTreeSet::from([1]));
    assert!(h.tree(r, &[send]).is_empty());
}
