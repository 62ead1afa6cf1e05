//! Peer test: `ibsmd --once` brings up fabrics that are not trees, over the real umad
//! transport under the umad2sim preload on ibsim, and infiniband-diags agree (unique
//! LIDs, every link Active, every switch routes every LID through live ports, `ibtracert`
//! on sampled CA pairs, an offline walk of the dumped LFTs from every CA to every LID):
//!
//! * a 4x4 torus with two CAs per switch, routed by `dor`, which needs VLs on a torus:
//!   ibsmd programs SLtoVLMappingTable and VLArbitrationTable on every switch port.
//!   `smpquery sl2vl` must then read the same SL-to-VL map from every input port (0 and
//!   each cabled one) to an output port, and not ibsim's default. ibsim's switches do
//!   not advertise OptimizedSLtoVLMappingProgramming, and a Set with the all-inputs
//!   wildcard lands in input port 0's row only (so ibsmd sends one Set per input port
//!   there). ibsim does not forward by VL, so whether the VL split is deadlock-free is
//!   checked in ibsm-routing's own tests, not here;
//! * a 4x3x2 torus (parallel cables along the size-2 dimension), also by `dor`;
//! * a random irregular fabric (a Jellyfish with some cables removed), routed by
//!   `dfsssp`.

use ibsm_tests::peer::{PeerFabric, Verified, bring_up, diag, needed, net_file, verify_topology};
use ibsm_tests::peers_present;
use ibsm_topology::{Fabric, generate};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");
const SMPQUERY: &str = "/usr/sbin/smpquery";

fn peers() -> bool {
    let mut need = needed();
    need.push(SMPQUERY);
    peers_present("ibsmd_topologies", &need)
}

/// ibsim's SL-to-VL map before any Set.
const IBSIM_DEFAULT_SL2VL: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7];

/// Reads `smpquery sl2vl` of a few switches: every input port (0 and each cabled one)
/// maps SLs to VLs the same way towards each cabled output port, and that map is the
/// SM's, not ibsim's default.
fn check_sl2vl(f: &PeerFabric, v: &Verified) {
    for &sw in v.switches.iter().take(4) {
        let lid = v.lids[&(sw, 0)].to_string();
        let cabled: Vec<u8> = v
            .links
            .keys()
            .filter(|(g, _)| *g == sw)
            .map(|&(_, p)| p)
            .collect();
        for &out in &cabled {
            let text = diag(f, SMPQUERY, &["sl2vl", &lid, &out.to_string()]);
            // `ports: in  3, out  4: | 0| 1| ...|`
            let rows: Vec<(u8, Vec<u8>)> = text
                .lines()
                .filter_map(|l| {
                    let rest = l.strip_prefix("ports: in")?;
                    let (inp, table) = rest.split_once(',')?;
                    let vls = table.split_once(':')?.1;
                    let vls: Vec<u8> = vls
                        .split('|')
                        .filter_map(|x| x.trim().parse().ok())
                        .collect();
                    Some((inp.trim().parse().ok()?, vls))
                })
                .collect();
            let of = |i: u8| {
                rows.iter()
                    .find(|(p, _)| *p == i)
                    .map(|(_, t)| t.clone())
                    .unwrap_or_else(|| {
                        panic!(
                            "no row for input {i}:
{text}"
                        )
                    })
            };
            let first = of(0);
            assert_eq!(first.len(), 16, "{text}");
            assert_ne!(
                first, IBSIM_DEFAULT_SL2VL,
                "switch {sw:#x} out {out} not programmed:
{text}"
            );
            for &inp in &cabled {
                assert_eq!(
                    of(inp),
                    first,
                    "switch {sw:#x}: input {inp} -> output {out} maps SLs otherwise than input 0:
{text}"
                );
            }
        }
    }
}

fn bring_up_verified(
    tag: &str,
    topo: &Fabric,
    title: &str,
    routing: &str,
) -> (PeerFabric, Verified) {
    let f = PeerFabric::start(tag, &net_file(topo, title));
    let (_, sm_ca) = topo.cas().next().unwrap();
    let json = bring_up(&f, IBSMD, Some(&sm_ca.description), &["--routing", routing]);
    assert_eq!(json["routing"], routing, "{json}");
    assert_eq!(json["nodes"], topo.node_count(), "{json}");
    assert_eq!(json["links"], topo.link_count(), "{json}");
    let v = verify_topology(&f, topo, 0);
    (f, v)
}

#[test]
fn ibsmd_brings_up_a_torus_with_dor() {
    if !peers() {
        return;
    }
    let topo = generate::grid(&generate::Grid {
        dims: vec![4, 4],
        torus: true,
        cas_per_switch: 2,
    })
    .unwrap();
    let (f, v) = bring_up_verified("torus", &topo, "4x4 torus, 2 CAs per switch", "dor");
    check_sl2vl(&f, &v);
}

/// Three dimensions, one of size 2: neighbours along it are joined by two parallel
/// cables, which routing and SL-to-VL programming must both handle.
#[test]
fn ibsmd_brings_up_a_3d_torus_with_parallel_cables_with_dor() {
    if !peers() {
        return;
    }
    let topo = generate::grid(&generate::Grid {
        dims: vec![4, 3, 2],
        torus: true,
        cas_per_switch: 1,
    })
    .unwrap();
    let (f, v) = bring_up_verified("torus3d", &topo, "4x3x2 torus, 1 CA per switch", "dor");
    check_sl2vl(&f, &v);
}

#[test]
fn ibsmd_brings_up_a_degraded_jellyfish_with_dfsssp() {
    if !peers() {
        return;
    }
    let mut topo = generate::jellyfish(&generate::Jellyfish {
        switches: 16,
        radix: 8,
        network_ports: 5,
        seed: 9,
    })
    .unwrap();
    let removed = generate::degrade(&mut topo, 0.15, 3).unwrap();
    assert!(removed > 0);
    // Switch degrees now differ: irregular.
    let degrees: std::collections::BTreeSet<usize> = topo
        .switches()
        .map(|(id, _)| {
            topo.links_of(id)
                .filter(|(_, e, _)| {
                    topo.node(e.node)
                        .is_some_and(ibsm_topology::Node::is_switch)
                })
                .count()
        })
        .collect();
    assert!(degrees.len() > 1, "{degrees:?}");
    bring_up_verified("jelly", &topo, "degraded Jellyfish", "dfsssp");
}
