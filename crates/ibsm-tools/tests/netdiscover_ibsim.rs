//! Peer test: `ibsm-netdiscover` (ibsm-query's discovery over umad, under the umad2sim
//! preload) finds on ibsim exactly what `ibnetdiscover` finds from the same node, both
//! read back with our ibnetdiscover reader: the same nodes (GUID, type, port count,
//! description) and the same cables, on a fat tree, a torus and a degraded tree, with
//! no SM running (directed routes only). A node-name map renames nodes in our output.
//! `-p` prints every line `ibnetdiscover -p` prints (sorted, byte for byte; LIDs from
//! OpenSM on one fabric), and `--json` reads back as the fabric ibnetdiscover finds.

use std::collections::BTreeSet;
use std::time::Duration;

use ibsm_tests::peer::{
    OPENSM, PeerFabric, client, kill_other, net_file, run_bounded, start_opensm,
};
use ibsm_tests::{IBSIM, PRELOAD, peers_present};
use ibsm_topology::generate::{self, Grid};
use ibsm_topology::{Fabric, ibnet};

const IBNETDISCOVER: &str = "/usr/sbin/ibnetdiscover";

fn shape(f: &Fabric) -> BTreeSet<(u64, u8, u64, u8)> {
    f.links()
        .map(|(_, l)| {
            let a = (f.guid_of(l.a.node).0, l.a.port);
            let b = (f.guid_of(l.b.node).0, l.b.port);
            let (x, y) = if a < b { (a, b) } else { (b, a) };
            (x.0, x.1, y.0, y.1)
        })
        .collect()
}

fn nodes(f: &Fabric) -> BTreeSet<(u64, bool, u8, String)> {
    f.nodes()
        .map(|(_, n)| {
            (
                n.guid().0,
                n.is_switch(),
                n.num_ports(),
                n.description.clone(),
            )
        })
        .collect()
}

/// The node blocks of an ibnetdiscover-format text, comment lines left out, sorted:
/// equal when the two tools print every node alike, whatever the order of the nodes.
fn blocks(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .split("\n\n")
        .map(|b| {
            b.lines()
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|b| !b.is_empty())
        .collect();
    v.sort_unstable();
    v
}

/// Runs `program args` on the first CA of the net file; its stdout.
fn run(p: &PeerFabric, program: &str, args: &[&str]) -> String {
    let mut c = client(p, program, None, "diag");
    c.args(args);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(120));
    assert!(ok, "{program} {args:?} failed:\n{err}\n{out}");
    out
}

fn compare(tag: &str, topo: &Fabric) {
    let p = PeerFabric::start(tag, &net_file(topo, tag));
    let theirs_text = run(&p, IBNETDISCOVER, &[]);
    let theirs = ibnet::parse(&theirs_text)
        .expect("ibnetdiscover output")
        .fabric;
    let ours_text = run(&p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), &[]);
    assert_eq!(
        blocks(&ours_text),
        blocks(&theirs_text),
        "{tag}: node blocks"
    );
    let ours = ibnet::parse(&ours_text).expect("our output").fabric;
    assert_eq!(
        ours.node_count(),
        topo.node_count(),
        "{tag}: every node of the net file"
    );
    assert_eq!(nodes(&ours), nodes(&theirs), "{tag}: nodes differ");
    assert_eq!(shape(&ours), shape(&theirs), "{tag}: cables differ");
    assert_eq!(
        ours.link_count(),
        topo.link_count(),
        "{tag}: every cable of the net file"
    );
}

fn ready() -> bool {
    peers_present("netdiscover_ibsim", &[IBSIM, PRELOAD, IBNETDISCOVER])
}

#[test]
fn a_fat_tree_equals_ibnetdiscover() {
    if ready() {
        compare("nd_tree", &generate::k_ary_n_tree(4, 3).unwrap());
    }
}

#[test]
fn a_torus_equals_ibnetdiscover() {
    if ready() {
        let t = generate::grid(&Grid {
            dims: vec![4, 3],
            torus: true,
            cas_per_switch: 2,
        })
        .unwrap();
        compare("nd_torus", &t);
    }
}

#[test]
fn a_degraded_tree_equals_ibnetdiscover() {
    if ready() {
        let mut t = generate::k_ary_n_tree(4, 3).unwrap();
        let cut = t.degrade(0.1, 7).unwrap();
        assert!(cut > 0);
        // Cut cables may strand nodes; both tools only see what is reachable.
        let p = PeerFabric::start("nd_degraded", &net_file(&t, "nd_degraded"));
        let theirs_text = run(&p, IBNETDISCOVER, &[]);
        let ours_text = run(&p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), &[]);
        assert_eq!(blocks(&ours_text), blocks(&theirs_text), "node blocks");
        let theirs = ibnet::parse(&theirs_text).unwrap().fabric;
        let ours = ibnet::parse(&ours_text).unwrap().fabric;
        assert_eq!(nodes(&ours), nodes(&theirs));
        assert_eq!(shape(&ours), shape(&theirs));
    }
}

#[test]
fn a_node_name_map_renames_nodes() {
    if !ready() {
        return;
    }
    let topo = generate::k_ary_n_tree(2, 2).unwrap();
    let p = PeerFabric::start("nd_names", &net_file(&topo, "nd_names"));
    let plain = ibnet::parse(&run(&p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), &[]))
        .unwrap()
        .fabric;
    let (_, sw) = plain.switches().next().unwrap();
    let map = p.path("names.map");
    std::fs::write(
        &map,
        format!("# test\n{:#018x} \"renamed switch\"\n", sw.guid().0),
    )
    .unwrap();
    let named = ibnet::parse(&run(
        &p,
        env!("CARGO_BIN_EXE_ibsm-netdiscover"),
        &["--node-name-map", map.to_str().unwrap()],
    ))
    .unwrap()
    .fabric;
    let id = named.node_by_guid(sw.guid()).unwrap();
    assert_eq!(named.node(id).unwrap().description, "renamed switch");
    // A broken map is refused with its line, exit code 2.
    std::fs::write(&map, "0x1 \"a\"\nnot-a-guid x\n").unwrap();
    let mut c = client(&p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), None, "diag");
    c.args(["--node-name-map", map.to_str().unwrap()]);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2") && err.contains("not-a-guid"),
        "{err}"
    );
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().collect();
    v.sort_unstable();
    v
}

/// The name ibsim gives the first CA of a net file (where the diags attach by default).
fn first_ca(net: &str) -> String {
    net.lines()
        .find_map(|l| {
            let rest = l.strip_prefix("Hca")?;
            let start = rest.find('"')? + 1;
            let len = rest[start..].find('"')?;
            Some(rest[start..start + len].to_owned())
        })
        .expect("a CA in the net file")
}

fn ports_report_equals(tag: &str, topo: &Fabric, with_sm: bool) {
    let net = net_file(topo, tag);
    let mut p = PeerFabric::start(tag, &net);
    let sm = with_sm.then(|| start_opensm(&mut p, &first_ca(&net), 0, &[]));
    let theirs = run(&p, IBNETDISCOVER, &["-p"]);
    let ours = run(&p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), &["-p"]);
    if let Some(i) = sm {
        kill_other(&mut p, i);
    }
    assert!(!theirs.is_empty());
    assert_eq!(
        sorted_lines(&ours),
        sorted_lines(&theirs),
        "{tag}: ours\n{ours}\ntheirs\n{theirs}"
    );
    if with_sm {
        // OpenSM gave every port a LID: the LID columns are compared too.
        assert!(
            ours.lines()
                .all(|l| l.split_whitespace().nth(1) != Some("0")),
            "{tag}: LIDs assigned\n{ours}"
        );
    }
}

#[test]
fn the_ports_report_equals_ibnetdiscover_p() {
    if !peers_present(
        "netdiscover_ibsim",
        &[IBSIM, PRELOAD, IBNETDISCOVER, OPENSM],
    ) {
        return;
    }
    ports_report_equals("nd_p_tree", &generate::k_ary_n_tree(4, 2).unwrap(), true);
    let torus = generate::grid(&Grid {
        dims: vec![3, 3],
        torus: true,
        cas_per_switch: 2,
    })
    .unwrap();
    ports_report_equals("nd_p_torus", &torus, false);
    // Cut cables leave ports with no cable: listed with the node's name alone.
    let mut t = generate::k_ary_n_tree(4, 2).unwrap();
    assert!(t.degrade(0.15, 7).unwrap() > 0);
    ports_report_equals("nd_p_degraded", &t, false);
}

#[test]
fn json_reads_back_as_the_fabric_ibnetdiscover_finds() {
    if !ready() {
        return;
    }
    let topo = generate::grid(&Grid {
        dims: vec![3, 2],
        torus: true,
        cas_per_switch: 2,
    })
    .unwrap();
    let p = PeerFabric::start("nd_json", &net_file(&topo, "nd_json"));
    let theirs = ibnet::parse(&run(&p, IBNETDISCOVER, &[])).unwrap().fabric;
    let json = run(&p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), &["--json"]);
    let ours: Fabric = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
    assert_eq!(nodes(&ours), nodes(&theirs));
    assert_eq!(shape(&ours), shape(&theirs));
    // Every cabled port has the state, width and speed it was read with.
    for (_, n) in ours.nodes() {
        for (q, port) in n.ports().filter(|(_, p)| p.is_connected()) {
            assert_ne!(
                port.state,
                ibsm_topology::LinkState::Unknown,
                "{:#x} {q}",
                n.guid().0
            );
            assert_ne!(
                port.width,
                ibsm_topology::ActiveWidth::Unknown,
                "{:#x} {q}",
                n.guid().0
            );
            assert_ne!(
                port.speed,
                ibsm_topology::ActiveSpeed::Unknown,
                "{:#x} {q}",
                n.guid().0
            );
        }
    }
    // Two formats at once is a usage error.
    let mut c = client(&p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), None, "diag");
    c.args(["--json", "-p"]);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Runs our tool with `args`; (exit code, stdout, stderr).
fn ours(p: &PeerFabric, args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = client(p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), None, "diag");
    c.args(args);
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code() {
    if !ready() {
        return;
    }
    let topo = generate::k_ary_n_tree(2, 2).unwrap();
    let p = PeerFabric::start("nd_bad", &net_file(&topo, "nd_bad"));
    // A CA that is not there: exit 1, naming what was asked and what there is.
    let (code, out, err) = ours(&p, &["-C", "mlx5_9"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("ibsm-netdiscover: opening the local port")
            && err.contains("CA \"mlx5_9\"")
            && err.contains("(there are: ibsim0 port "),
        "{err}"
    );
    let ours_lines = |e: &str| e.lines().filter(|l| !l.starts_with("ibwarn")).count();
    assert_eq!(ours_lines(&err), 1, "{err}");
    // A port the CA does not have.
    let (code, _, err) = ours(&p, &["-C", "ibsim0", "-P", "3"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("CA \"ibsim0\", port 3"), "{err}");
    // A node-name map line the format does not know: exit 2 with file and line; a GUID
    // the fabric does not have is no error.
    let map = p.path("bad.map");
    std::fs::write(
        &map,
        "0x99999 \"not here\"\n0x1 two words unquoted x\n\"x\"\n",
    )
    .unwrap();
    let (code, out, err) = ours(&p, &["--node-name-map", map.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty());
    assert!(err.contains("bad.map") && err.contains("line 3"), "{err}");
    std::fs::write(&map, "0x99999 \"not here\"\n").unwrap();
    let (code, _, err) = ours(&p, &["--node-name-map", map.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    // A bad option value is clap's usage error.
    let (code, _, err) = ours(&p, &["--window", "many"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--window"), "{err}");
    // --routes without --svg, and --routes with no LIDs (no SM ran): refused.
    let (code, _, err) = ours(&p, &["--routes"]);
    assert_eq!(code, Some(2), "{err}");
    let svg = p.path("x.svg");
    let (code, _, err) = ours(&p, &["--svg", svg.to_str().unwrap(), "--routes"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no port has a LID"), "{err}");
    // An SVG file that cannot be written names the file.
    let (code, _, err) = ours(&p, &["--svg", "/nonexistent/dir/x.svg"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/dir/x.svg"), "{err}");
}

#[test]
fn an_unreachable_port_is_reported_and_the_rest_printed() {
    if !ready() {
        return;
    }
    let topo = generate::k_ary_n_tree(2, 2).unwrap();
    let net = net_file(&topo, "nd_unreach");
    let mut p = PeerFabric::start("nd_unreach", &net);
    // One CA (not the one the tools run on) answers no NodeInfo: its route is
    // unreachable (ibsim reports the loss at once; a real fabric times out).
    let host = first_ca(&net);
    let (_, lost) = topo.cas().find(|(_, n)| n.description != host).unwrap();
    p.sim
        .console(&format!("Error \"{}\"[1] 100 17", lost.description));
    let (code, out, err) = ours(&p, &["--timeout", "50", "--retries", "1"]);
    assert_eq!(code, Some(0), "{err}");
    // One line for it (the preload's own "ibwarn" lines aside).
    assert_eq!(
        err.lines()
            .filter(|l| !l.starts_with("ibwarn"))
            .collect::<Vec<_>>(),
        err.lines()
            .filter(|l| l.starts_with("unreachable: route "))
            .collect::<Vec<_>>(),
        "{err}"
    );
    assert_eq!(err.matches("unreachable: route ").count(), 1, "{err}");
    let found = ibnet::parse(&out).unwrap().fabric;
    assert_eq!(found.node_count(), topo.node_count() - 1);
    assert!(found.node_by_guid(lost.guid()).is_none());
    // ibnetdiscover does not see it either, and everything else alike.
    let theirs = ibnet::parse(&run(&p, IBNETDISCOVER, &[])).unwrap().fabric;
    assert_eq!(nodes(&found), nodes(&theirs));
}
