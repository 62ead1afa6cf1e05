//! Peer test: `ibsm-netdiscover --slurm-topology` on ibsim (a generated three-level
//! tree, CAs named by a node-name map, switch descriptions with spaces and commas),
//! read back by Slurm itself: `slurmctld` (TopologyPlugin=topology/tree) loads the
//! file and `scontrol show topology` prints every switch with the level, child switches
//! and nodes we wrote, its host lists rendered as ours are.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ibsm_tests::peer::{PeerFabric, client, net_file, run_bounded};
use ibsm_tests::{IBSIM, PRELOAD, peers_present};
use ibsm_topology::{generate, ibnet};

const SLURMCTLD: &str = "/usr/sbin/slurmctld";
const SCONTROL: &str = "/usr/bin/scontrol";

/// `KEY=VALUE` words of a line.
fn words(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn slurm_reads_the_topology_as_written() {
    if !peers_present(
        "slurm_topology_ibsim",
        &[IBSIM, PRELOAD, SLURMCTLD, SCONTROL],
    ) {
        return;
    }
    let topo = generate::k_ary_n_tree(4, 3).unwrap();
    let p = PeerFabric::start("nd_slurm", &net_file(&topo, "nd_slurm"));
    let bin = env!("CARGO_BIN_EXE_ibsm-netdiscover");
    let run = |args: &[&str]| {
        let mut c = client(&p, bin, None, "diag");
        c.args(args);
        let (ok, out, err) = run_bounded(c, Duration::from_secs(120));
        assert!(ok, "{args:?}: {err}");
        out
    };
    // Name the CAs cn001.. in GUID order, as a site's map would.
    let found = ibnet::parse(&run(&[])).unwrap().fabric;
    let mut map = String::new();
    let mut hosts = BTreeSet::new();
    for (i, (_, n)) in found.cas().enumerate() {
        let host = format!("cn{:03}", i + 1);
        map.push_str(&format!("{:#018x} \"{host} mlx5_0\"\n", n.guid().0));
        hosts.insert(host);
    }
    let map_path = p.path("names.map");
    std::fs::write(&map_path, map).unwrap();
    let text = run(&[
        "--slurm-topology",
        "--node-name-map",
        map_path.to_str().unwrap(),
    ]);

    // Our own reading first: every switch once, leaves list every host once.
    let lines: Vec<BTreeMap<&str, &str>> = text.lines().map(words).collect();
    assert_eq!(lines.len(), topo.switch_count(), "{text}");
    let leaves = lines.iter().filter(|w| w.contains_key("Nodes")).count();
    assert_eq!(leaves, 16, "{text}");
    for w in &lines {
        assert!(!w["SwitchName"].contains(' ') && !w["SwitchName"].contains(','));
    }

    // Slurm's reading.
    let dir = p.path("slurm");
    std::fs::create_dir_all(dir.join("state")).unwrap();
    std::fs::write(dir.join("topology.conf"), &text).unwrap();
    let all: Vec<String> = hosts.iter().cloned().collect();
    let conf = format!(
        "ClusterName=ibsm\nSlurmctldHost=localhost\nSlurmctldPort={}\nSlurmdPort={}\n\
         AuthType=auth/none\nCredType=cred/none\nSlurmUser=root\n\
         StateSaveLocation={d}/state\nSlurmctldPidFile={d}/slurmctld.pid\n\
         SlurmctldLogFile={d}/slurmctld.log\nTopologyPlugin=topology/tree\n\
         ProctrackType=proctrack/linuxproc\nSelectType=select/linear\n\
         NodeName={} CPUs=1 State=FUTURE\nPartitionName=all Nodes=ALL Default=YES\n",
        free_port(),
        free_port(),
        ibsm_topology::slurm::compress(&all),
        d = dir.display(),
    );
    let conf_path = dir.join("slurm.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let mut ctld = Command::new(SLURMCTLD)
        .arg("-D")
        .arg("-f")
        .arg(&conf_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start slurmctld");
    let deadline = Instant::now() + Duration::from_secs(60);
    let shown = loop {
        let out = Command::new(SCONTROL)
            .args(["show", "topology"])
            .env("SLURM_CONF", &conf_path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).into_owned();
        }
        if Instant::now() > deadline {
            let _ = ctld.kill();
            let _ = ctld.wait();
            panic!(
                "scontrol show topology: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(dir.join("slurmctld.log")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    ctld.kill().unwrap();
    ctld.wait().unwrap();
    let log = std::fs::read_to_string(dir.join("slurmctld.log")).unwrap_or_default();
    assert!(
        !log.lines()
            .any(|l| l.contains("error") && l.to_lowercase().contains("switch")),
        "{log}"
    );
    let theirs: BTreeMap<String, BTreeMap<&str, &str>> = shown
        .lines()
        .map(words)
        .map(|w| (w["SwitchName"].to_owned(), w))
        .collect();
    assert_eq!(theirs.len(), lines.len(), "{shown}");
    // Slurm's levels: the leaves 0, each switch one above its children.
    let mut level = BTreeMap::new();
    for w in &lines {
        let name = w["SwitchName"];
        let t = &theirs[name];
        if let Some(nodes) = w.get("Nodes") {
            // Slurm renders a leaf's nodes from its own bitmap: the same host list.
            assert_eq!(t["Nodes"], *nodes, "{name}");
            assert_eq!(t["Level"], "0", "{name}");
        }
        if let Some(sw) = w.get("Switches") {
            assert_eq!(t["Switches"], *sw, "{name}");
        }
        level.insert(name, t["Level"]);
    }
    let levels: BTreeSet<&str> = level.values().copied().collect();
    assert_eq!(levels, BTreeSet::from(["0", "1", "2"]), "{shown}");
    // The top switches reach every host.
    let top = shown.lines().find(|l| l.contains("Level=2")).unwrap();
    assert_eq!(words(top)["Nodes"], ibsm_topology::slurm::compress(&all));
}
