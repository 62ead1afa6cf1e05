//! Peer test: our topology writer's files run in ibsim, and what `ibnetdiscover` (under
//! the umad2sim preload) sees is what we wrote, read back with our reader.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ibsm_tests::peers_present;
use ibsm_topology::generate::{self, Dragonfly, GlobalArrangement, Grid, Jellyfish};
use ibsm_topology::ibnet::{self, Dialect, WriteOptions};
use ibsm_topology::{Fabric, NodeSpec};

const IBSIM: &str = "/usr/bin/ibsim";
const IBNETDISCOVER: &str = "/usr/sbin/ibnetdiscover";
const PRELOAD: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// A running ibsim, killed (by PID) when dropped.
struct Sim {
    child: Child,
    sock: String,
    dir: PathBuf,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_sim(tag: &str, net: &str) -> Sim {
    let dir = std::env::temp_dir().join(format!("ibsm_topo_peer_{}_{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("net"), net).unwrap();
    let sock = format!("ibsm_topo_{}_{tag}", std::process::id());
    let log = std::fs::File::create(dir.join("ibsim.log")).unwrap();
    let child = Command::new(IBSIM)
        .args(["-s", "-n", "net"])
        .current_dir(&dir)
        .env("IBSIM_SOCKNAME", &sock)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start ibsim");
    let sim = Sim { child, sock, dir };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(sim.dir.join("ibsim.log")).unwrap_or_default();
        if text.contains("simulator ready") {
            break;
        }
        assert!(Instant::now() < deadline, "ibsim did not start:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    sim
}

/// Runs a diagnostic under the preload with a deadline; returns stdout.
fn run_client(sim: &Sim, args: &[&str]) -> String {
    let mut child = Command::new(IBNETDISCOVER)
        .args(args)
        .current_dir(&sim.dir)
        .env("IBSIM_SOCKNAME", &sim.sock)
        .env("LD_PRELOAD", PRELOAD)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ibnetdiscover");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut out = String::new();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "ibnetdiscover {args:?} failed: {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ibnetdiscover {args:?} timed out");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    out.push_str(&reader.join().unwrap());
    out
}

fn links(f: &Fabric) -> Vec<(u64, u8, u64, u8)> {
    f.links()
        .map(|(_, l)| {
            (
                f.guid_of(l.a.node).0,
                l.a.port,
                f.guid_of(l.b.node).0,
                l.b.port,
            )
        })
        .collect()
}

fn nodes(f: &Fabric) -> Vec<(u64, ibsm_topology::NodeKind, u8, String)> {
    f.nodes()
        .map(|(_, n)| {
            (
                n.guid().0,
                n.node_type(),
                n.num_ports(),
                n.description.clone(),
            )
        })
        .collect()
}

/// Writes `f`, runs it in ibsim, discovers it, and checks node and link counts and the
/// full structure (GUIDs, types, port counts, descriptions, every cable).
fn check_through_ibsim(tag: &str, f: &Fabric) {
    let text = ibnet::write(f, &WriteOptions::default()).unwrap();
    let sim = start_sim(tag, &text);
    let discovered = run_client(&sim, &[]);
    let seen = ibnet::parse(&discovered)
        .unwrap_or_else(|e| panic!("{tag}: our reader rejects ibnetdiscover output: {e}"))
        .fabric;
    assert_eq!(seen.node_count(), f.node_count(), "{tag}: node count");
    assert_eq!(seen.switch_count(), f.switch_count(), "{tag}: switch count");
    assert_eq!(seen.link_count(), f.link_count(), "{tag}: link count");
    assert_eq!(nodes(&seen), nodes(f), "{tag}: nodes");
    assert_eq!(links(&seen), links(f), "{tag}: links");
    // The per-port report tells the same story.
    let ports = ibnet::parse_ports_report(&run_client(&sim, &["-p"]))
        .unwrap()
        .fabric;
    assert_eq!(links(&ports), links(f), "{tag}: -p links");
    eprintln!(
        "{tag}: ibsim + ibnetdiscover saw {} nodes ({} switches), {} links",
        seen.node_count(),
        seen.switch_count(),
        seen.link_count()
    );
}

fn peers() -> bool {
    peers_present("topology_ibsim", &[IBSIM, IBNETDISCOVER, PRELOAD])
}

#[test]
fn generated_fabrics_survive_ibsim() {
    if !peers() {
        return;
    }
    check_through_ibsim("fat_tree_r8_l2", &generate::fat_tree(8, 2).unwrap());
    // The reference fabric: radix 36, 2 levels = 648 CAs on 18 + 36 switches.
    check_through_ibsim("fat_tree_r36_l2", &generate::fat_tree(36, 2).unwrap());
    check_through_ibsim("kary_3_3", &generate::k_ary_n_tree(3, 3).unwrap());
    let mut degraded = generate::fat_tree(12, 2).unwrap();
    generate::degrade(&mut degraded, 0.25, 11).unwrap();
    check_through_ibsim("fat_tree_r12_degraded", &degraded);
    check_through_ibsim(
        "torus_4x3x2",
        &generate::grid(&Grid {
            dims: vec![4, 3, 2],
            torus: true,
            cas_per_switch: 2,
        })
        .unwrap(),
    );
    check_through_ibsim(
        "dragonfly_4_2_2_9",
        &generate::dragonfly(&Dragonfly {
            a: 4,
            p: 2,
            h: 2,
            g: 9,
            arrangement: GlobalArrangement::Palmtree,
        })
        .unwrap(),
    );
    check_through_ibsim(
        "jellyfish_16",
        &generate::jellyfish(&Jellyfish {
            switches: 16,
            radix: 8,
            network_ports: 5,
            seed: 5,
        })
        .unwrap(),
    );
}

#[test]
fn hand_built_fabric_with_dual_port_ca_and_parallel_links() {
    if !peers() {
        return;
    }
    let mut f = Fabric::new();
    let s1 = f
        .add_node(NodeSpec::switch(0x0002_c903_0000_1000, 36, "leaf one"))
        .unwrap();
    let s2 = f
        .add_node(NodeSpec::switch(0x0002_c903_0000_2000, 36, "leaf two"))
        .unwrap();
    let mut spec = NodeSpec::ca(0x0002_c903_0000_a000, 2, "node-1 HCA-1");
    spec.vendor_id = 0x2c9;
    spec.device_id = 0x1017;
    let h = f.add_node(spec).unwrap();
    let h2 = f
        .add_node(NodeSpec::ca(0x0002_c903_0000_b000, 1, "node-2 HCA-1"))
        .unwrap();
    for p in [10, 11, 12, 36] {
        f.connect(s1, p, s2, p).unwrap();
    }
    f.connect(h, 1, s1, 1).unwrap();
    f.connect(h, 2, s2, 1).unwrap();
    f.connect(h2, 1, s2, 20).unwrap();
    check_through_ibsim("hand_built", &f);
}

#[test]
fn ibsim_names_dialect_and_ibsim_examples() {
    if !peers() {
        return;
    }
    // Name-only files: ibsim assigns GUIDs, and our reader assigns the same ones.
    let mut files: Vec<(String, String)> = Vec::new();
    let f = generate::fat_tree(6, 2).unwrap();
    let short = ibnet::write(
        &f,
        &WriteOptions {
            dialect: Dialect::IbsimNet,
            title: None,
        },
    )
    .unwrap();
    files.push(("names_fat_tree".into(), short));
    let examples = Path::new("/usr/share/doc/ibsim-utils/net-examples");
    if let Ok(dir) = std::fs::read_dir(examples) {
        let mut paths: Vec<PathBuf> = dir.filter_map(|e| Some(e.ok()?.path())).collect();
        paths.sort();
        for p in paths {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.starts_with("net") {
                files.push((name.replace('.', "_"), std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    assert!(files.len() > 1, "ibsim-utils ships example net files");
    for (tag, text) in files {
        let ours = ibnet::parse(&text)
            .unwrap_or_else(|e| panic!("{tag}: {e}"))
            .fabric;
        let sim = start_sim(&tag, &text);
        let seen = ibnet::parse(&run_client(&sim, &[])).unwrap().fabric;
        drop(sim);
        // ibnetdiscover sees the component of the node it attaches to.
        let any = seen.nodes().next().map(|(_, n)| n.guid()).unwrap();
        let start = ours
            .node_by_guid(any)
            .unwrap_or_else(|| panic!("{tag}: GUID {any}"));
        let comp = ours
            .components()
            .into_iter()
            .find(|c| c.contains(&start))
            .unwrap();
        assert_eq!(seen.node_count(), comp.len(), "{tag}");
        assert_eq!(nodes(&seen).len(), comp.len(), "{tag}");
        for (_, n) in seen.nodes() {
            let id = ours
                .node_by_guid(n.guid())
                .unwrap_or_else(|| panic!("{tag}: GUID {}", n.guid()));
            assert_eq!(ours.node(id).unwrap().description, n.description, "{tag}");
        }
        assert_eq!(
            links(&seen).len(),
            comp.iter()
                .map(|&id| ours.node(id).unwrap().degree())
                .sum::<usize>()
                / 2,
            "{tag}"
        );
        eprintln!(
            "{tag}: {} nodes, {} links, GUIDs and names as our reader assigns",
            seen.node_count(),
            seen.link_count()
        );
    }
}
