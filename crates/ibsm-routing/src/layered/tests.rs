use super::layering::{Layer, Layering};
use super::upfirst::UpFirst;
use crate::net::testnets::{finish, grid, ring, two_level};
use crate::net::{NONE, Net};
use crate::routes::NO_ROUTE;

/// The up-first preference as a `balance::Prefer`: what `UpFirst` must reproduce.
struct Reference {
    up: Vec<bool>,
}

impl crate::balance::Prefer for Reference {
    fn prefer(
        &self,
        net: &Net,
        _: usize,
        (lid, sibs): (u16, usize),
        elig: &[u32],
        loads: &crate::balance::Loads,
        row: &[u8],
    ) -> Option<u32> {
        // Siblings first avoid the ports their earlier siblings took.
        let col = usize::from(lid);
        let mut best: Option<((bool, u64), u32)> = None;
        for &a in elig {
            let port = net.aport[a as usize];
            let l = (
                (1..=sibs).any(|q| row[col - q] == port),
                loads.key(sibs, a as usize),
            );
            if self.up[a as usize] && best.is_none_or(|(b, _)| l < b) {
                best = Some((l, a));
            }
        }
        best.map(|(_, a)| a)
    }
}

/// A `w` x `h` torus with `cas` CAs per switch and LMC `lmc` (ports 1-4 to the
/// neighbours, 5.. CAs).
fn torus_lmc(w: u32, h: u32, cas: u8, lmc: u8) -> Net {
    let id = |x: u32, y: u32| y * w + x;
    let mut links = Vec::new();
    for y in 0..h {
        for x in 0..w {
            links.push((id(x, y), 1, id((x + 1) % w, y), 2));
            links.push((id(x, y), 3, id(x, (y + 1) % h), 4));
        }
    }
    let terms = (0..w * h)
        .flat_map(|s| (0..cas).map(move |c| (s, 5 + c)))
        .collect();
    finish(vec![4 + cas; (w * h) as usize], links, terms, lmc)
}

#[test]
fn up_first_pass_gives_the_balanced_routes_with_the_up_first_preference() {
    // DFSSSP's destination-by-destination pass against the shared balanced pass with
    // the same preference: identical tables (tori with several CAs and LMC siblings,
    // a mesh, fat trees whose spines have no CAs, a ring), and the hops it hands the
    // placement are those ports.
    let nets = [
        grid(5, 4, true),
        grid(4, 3, false),
        torus_lmc(4, 3, 3, 1),
        torus_lmc(5, 5, 2, 2),
        two_level(6, 3, 4, 0),
        two_level(4, 4, 3, 1),
        ring(7, 2),
    ];
    for (i, net) in nets.iter().enumerate() {
        let roots = crate::updn::find_roots(net, false).unwrap();
        let (pos, _) = crate::updn::order_from_roots(net, &roots, false);
        let reference = Reference {
            up: (0..net.n_arcs())
                .map(|a| pos[net.adst[a] as usize] < pos[net.asrc[a] as usize])
                .collect(),
        };
        let len = net.lft_len;
        let mut want = vec![NO_ROUTE; net.n_sw * len];
        let rule = crate::balance::Rule::MinHop;
        crate::balance::route_all(net, rule, 1, &mut want, &reference);
        let mut got = vec![NO_ROUTE; net.n_sw * len];
        let mut pass = UpFirst::new(net, &pos);
        let mut lids = Vec::new();
        for t in 0..net.n_sw {
            net.lids_on(t, &mut lids);
            if lids.is_empty() {
                continue;
            }
            pass.route(t, &lids, &mut got);
            let k = lids.len();
            for &s in &pass.queue[1..] {
                let s = s as usize;
                for (j, &(lid, ..)) in lids.iter().enumerate() {
                    let a = pass.hop[s * k + j] as usize;
                    assert_eq!(net.asrc[a] as usize, s, "net {i}");
                    assert_eq!(got[s * len + usize::from(lid)], net.aport[a], "net {i}");
                }
            }
        }
        assert_eq!(got, want, "net {i}");
    }
}

/// Whether `to` is reachable from `from` over the dependencies `deps`.
fn reaches(deps: &[(u32, u32)], from: u32, to: u32) -> bool {
    let mut seen = vec![from];
    let mut stack = vec![from];
    while let Some(x) = stack.pop() {
        if x == to {
            return true;
        }
        for &(a, b) in deps {
            if a == x && !seen.contains(&b) {
                seen.push(b);
                stack.push(b);
            }
        }
    }
    false
}

#[test]
fn dynamic_order_accepts_exactly_the_acyclic_dependencies() {
    // Random dependencies on a 5x4 torus, into one layer with spread labels and one
    // whose labels are packed tight before every insertion (so every move respreads
    // them): both accept exactly what a brute-force search says keeps the layer
    // acyclic, and keep a valid topological order and a consistent list.
    let net = grid(5, 4, true);
    let tighten = |layer: &mut Layer| {
        let (mut x, mut l) = (layer.head, 1);
        while x != NONE {
            layer.ord[x as usize] = l;
            l += 1;
            x = layer.next[x as usize];
        }
    };
    for seed in 1..=12u64 {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let mut spread = Layering::new(&net, None);
        let mut tight = Layering::new(&net, None);
        spread.open();
        tight.open();
        let mut accepted: Vec<(u32, u32)> = Vec::new();
        let mut rejected = 0;
        for _ in 0..400 {
            let a = next(net.n_arcs()) as u32;
            let h = net.adst[a as usize] as usize;
            let arcs = net.arcs(h);
            let b = (arcs.start + next(arcs.len())) as u32;
            let want = !reaches(&accepted, b, a);
            tighten(&mut tight.layers[0]);
            assert_eq!(spread.insert(0, a, b), want, "seed {seed}: {a} -> {b}");
            assert_eq!(tight.insert(0, a, b), want, "seed {seed}: {a} -> {b}");
            if want {
                accepted.push((a, b));
            } else {
                rejected += 1;
            }
            for lay in [&spread, &tight] {
                let layer = &lay.layers[0];
                let ord = &layer.ord;
                for &(p, q) in &accepted {
                    assert!(ord[p as usize] < ord[q as usize], "seed {seed}");
                }
                // The list holds every channel once, with increasing labels.
                let (mut c, mut prev, mut seen) = (layer.head, NONE, 0);
                while c != NONE {
                    assert_eq!(layer.prev[c as usize], prev, "seed {seed}");
                    if prev != NONE {
                        assert!(ord[prev as usize] < ord[c as usize], "seed {seed}");
                    }
                    seen += 1;
                    prev = c;
                    c = layer.next[c as usize];
                }
                assert_eq!(seen, net.n_arcs(), "seed {seed}");
            }
        }
        assert!(
            rejected > 0 && accepted.len() > 100,
            "seed {seed}: {rejected}"
        );
    }
}
