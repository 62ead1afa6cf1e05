//! Peer test: `ibsmd --once` brings up fabrics that are not trees, over the real umad
//! transport under the umad2sim preload on ibsim, and infiniband-diags agree (unique
//! LIDs, every link Active, every switch routes every LID through live ports, `ibtracert`
//! on sampled CA pairs, an offline walk of the dumped LFTs from every CA to every LID):
//!
//! * a 4x4 torus with two CAs per switch, routed by `dor`, which needs VLs on a torus:
//!   ibsmd programs SLtoVLMappingTable and VLArbitrationTable on every switch port, and
//!   ibsim accepts both (it does not forward by VL, so the diagnostics cannot tell
//!   whether the VL split is right; that is checked in ibsm-routing's own tests);
//! * a random irregular fabric (a Jellyfish with some cables removed), routed by
//!   `dfsssp`.

use ibsm_tests::peer::{Fabric, bring_up, json_field, needed, net_file, verify_topology};
use ibsm_tests::peers_present;
use ibsm_topology::{Fabric as Topology, generate};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

fn bring_up_and_verify(tag: &str, topo: &Topology, title: &str, routing: &str) -> String {
    let f = Fabric::start(tag, &net_file(topo, title));
    let (_, sm_ca) = topo.cas().next().unwrap();
    let json = bring_up(&f, IBSMD, Some(&sm_ca.description), &["--routing", routing]);
    assert_eq!(
        json_field(&json, "routing"),
        format!("\"{routing}\""),
        "{json}"
    );
    assert_eq!(
        json_field(&json, "nodes"),
        topo.node_count().to_string(),
        "{json}"
    );
    assert_eq!(
        json_field(&json, "links"),
        topo.link_count().to_string(),
        "{json}"
    );
    verify_topology(&f, topo, 0);
    json
}

#[test]
fn ibsmd_brings_up_a_torus_with_dor() {
    if !peers_present("ibsmd_topologies", &needed()) {
        return;
    }
    let topo = generate::grid(&generate::Grid {
        dims: vec![4, 4],
        torus: true,
        cas_per_switch: 2,
    })
    .unwrap();
    bring_up_and_verify("torus", &topo, "4x4 torus, 2 CAs per switch", "dor");
}

#[test]
fn ibsmd_brings_up_a_degraded_jellyfish_with_dfsssp() {
    if !peers_present("ibsmd_topologies", &needed()) {
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
    bring_up_and_verify("jelly", &topo, "degraded Jellyfish", "dfsssp");
}
