//! Peer test: a running ibsmd serves `/fabric.svg` on its metrics address: after the
//! first heavy sweep, a picture (valid XML) with one element per switch, one box per
//! switch's folded CAs and one line per cable, its links coloured by the routes ibsmd
//! programmed; only GET.

use std::time::Duration;

use ibsm_tests::peer::{PeerFabric, needed, net_file, start_ibsmd, stop_ibsmd};
use ibsm_tests::{peers_present, tail, wait_until};
use ibsm_topology::generate;

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

#[test]
fn ibsmd_draws_the_fabric_it_configured() {
    if !peers_present("fabric_svg", &needed()) {
        return;
    }
    // Radix 12, two levels: 6 spines, 12 leaves with 6 CAs each (folded: more than 4).
    let fab = generate::fat_tree(12, 2).unwrap();
    let f = PeerFabric::start("fabric_svg", &net_file(&fab, "2-level radix-12 fat tree"));
    let (_, sm_ca) = fab.cas().next().unwrap();
    let daemon = start_ibsmd(
        &f,
        IBSMD,
        &sm_ca.description,
        0,
        &["--metrics", "127.0.0.1:0"],
    );
    let url = wait_until(
        "the metrics address in the log",
        Duration::from_secs(60),
        || {
            let err = f.read("ibsmd.err");
            err.lines()
                .find_map(|l| l.split("metrics on ").nth(1))
                .map(|u| u.trim().trim_end_matches("/metrics").to_owned())
                .ok_or_else(|| tail(&err, 20))
        },
    );
    let svg = wait_until(
        "a picture after SUBNET UP",
        Duration::from_secs(60),
        || match ureq::get(&format!("{url}/fabric.svg")).call() {
            Ok(r) => {
                assert_eq!(r.content_type(), "image/svg+xml");
                Ok(r.into_string().unwrap())
            }
            Err(e) => Err(e.to_string()),
        },
    );
    let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("not XML: {e}"));
    let count = |class: &str| {
        doc.descendants()
            .filter(|n| {
                n.attribute("class")
                    .is_some_and(|c| c.split_whitespace().any(|x| x == class))
            })
            .count()
    };
    let leaves = 12;
    let sw_links = fab.link_count() - fab.cas().count();
    assert_eq!(count("switch"), fab.switch_count(), "{svg}");
    assert_eq!(count("cas"), leaves);
    assert_eq!(count("link"), sw_links + leaves);
    assert_eq!(count("unhealthy"), 0);
    // Every spine-leaf cable carries some of the routes ibsmd programmed.
    let routed = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("line") && n.attribute("stroke").is_some_and(|s| s.starts_with("hsl("))
        })
        .count();
    assert_eq!(routed, sw_links + leaves, "{svg}");
    assert!(svg.contains(" routes</title>"));
    // Only GET.
    let r = ureq::post(&format!("{url}/fabric.svg")).call();
    assert!(matches!(r, Err(ureq::Error::Status(405, _))), "{r:?}");
    let _ = stop_ibsmd(&f, daemon);
}
