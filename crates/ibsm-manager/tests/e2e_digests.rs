//! What the engine does, pinned: every MAD it hands out (address and bytes, in order) and
//! every event, digested per scenario and compared with `tests/digests/engine.txt`.
//!
//! The engine is deterministic on the simulator's virtual clock, so a refactoring that
//! claims to change nothing must leave every digest as it is. A change that is meant to
//! alter the engine's traffic re-blesses the file in a commit of its own that says why:
//!
//! ```text
//! IBSM_BLESS_DIGESTS=1 cargo test -p ibsm-manager --test e2e_digests
//! ```
//!
//! With `IBSM_DIGEST_LOG=DIR` every record is also written to `DIR/<scenario>.<sm>.log`,
//! so two runs can be diffed line by line to find the first difference.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use common::{Node, attach, ca_nodes, drive, isl_ends, sim_of, until_clean, until_up};
use ibsm_manager::partition::PartitionConfig;
use ibsm_manager::{MKeyMode, SmConfig};
use ibsm_routing::EngineKind;
use ibsm_sim::{Fault, Sim, SimConfig, SmaAgent};
use ibsm_topology::{Fabric, generate};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/digests/engine.txt");

/// Turns recording on for every SM of a scenario (a log only when asked for).
fn traced(mut nodes: Vec<Node>) -> Vec<Node> {
    let log = std::env::var_os("IBSM_DIGEST_LOG").is_some();
    for n in &mut nodes {
        n.trace.log = log.then(Vec::new);
    }
    nodes
}

/// One line per SM: `scenario sm mads events digest`.
fn lines(name: &str, nodes: &[Node]) -> Vec<String> {
    if let Some(dir) = std::env::var_os("IBSM_DIGEST_LOG") {
        std::fs::create_dir_all(&dir).expect("log dir");
        for (i, n) in nodes.iter().enumerate() {
            let mut text = n.trace.log.as_deref().unwrap_or_default().join("\n");
            text.push('\n');
            let path = std::path::Path::new(&dir).join(format!("{name}.{i}.log"));
            std::fs::write(path, text).expect("write log");
        }
    }
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "{name} sm{i} mads={} events={} digest={:016x}",
                n.trace.mads, n.trace.events, n.trace.digest
            )
        })
        .collect()
}

fn one_sm(fabric: &Fabric, sim_cfg: SimConfig, cfg: SmConfig) -> (Sim<SmaAgent>, Vec<Node>) {
    let mut sim = sim_of(fabric, sim_cfg);
    let ca = ca_nodes(&sim, fabric)[0];
    let nodes = traced(vec![attach(&mut sim, ca, cfg, None)]);
    (sim, nodes)
}

/// Brings the subnet up, then lets `extra` of virtual time pass (light sweeps).
fn up_and_idle(sim: &mut Sim<SmaAgent>, nodes: &mut [Node], extra: Duration, verify: bool) {
    until_up(sim, nodes, 0, Duration::from_secs(120));
    if verify {
        until_clean(sim, nodes, 0, Duration::from_secs(60));
    }
    let t = sim.now() + extra;
    drive(sim, nodes, t, |_, _| false);
}

/// `ibsm-manager`'s quickstart fabric: the 648-CA two-level radix-36 fat tree, minhop,
/// and two light sweeps after it is up.
fn quickstart_tree() -> Vec<String> {
    let f = generate::fat_tree(36, 2).unwrap();
    let (mut sim, mut nodes) = one_sm(&f, SimConfig::default(), SmConfig::default());
    up_and_idle(&mut sim, &mut nodes, Duration::from_secs(25), true);
    lines("quickstart_tree", &nodes)
}

/// The 11,664-CA three-level radix-36 fat tree, up once.
fn tree_11k() -> Vec<String> {
    let f = generate::fat_tree(36, 3).unwrap();
    let sc = SimConfig {
        // Just above the LIDs the SM hands out (switches + CAs): keeps the simulator's
        // LFTs small.
        lft_cap: 14_000,
        ..SimConfig::default()
    };
    let (mut sim, mut nodes) = one_sm(&f, sc, SmConfig::default());
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(600));
    lines("tree_11k", &nodes)
}

/// A 4x4x3 torus with two CAs per switch, routed by DOR (SL2VL and VLArb programming).
fn torus_dor() -> Vec<String> {
    let f = generate::grid(&generate::Grid {
        dims: vec![4, 4, 3],
        torus: true,
        cas_per_switch: 2,
    })
    .unwrap();
    let mut cfg = SmConfig::default();
    cfg.routing = EngineKind::Dor.into();
    let (mut sim, mut nodes) = one_sm(&f, SimConfig::default(), cfg);
    up_and_idle(&mut sim, &mut nodes, Duration::from_secs(12), true);
    lines("torus_dor", &nodes)
}

/// LMC 2 with up/down routing on a 32-CA fat tree.
fn lmc2_updn() -> Vec<String> {
    let f = generate::fat_tree(8, 2).unwrap();
    let mut cfg = SmConfig::default();
    cfg.routing = EngineKind::UpDn.into();
    cfg.lmc = 2;
    let (mut sim, mut nodes) = one_sm(&f, SimConfig::default(), cfg);
    up_and_idle(&mut sim, &mut nodes, Duration::from_secs(12), true);
    lines("lmc2_updn", &nodes)
}

/// 5 % SMP loss on every hop (fixed seed), a cable flapping during the first sweep and
/// another cut after it (trap 128, re-route) and restored.
fn loss_and_flap() -> Vec<String> {
    let f = generate::fat_tree(8, 2).unwrap();
    let sc = SimConfig {
        seed: 7,
        drop_ppm: 50_000,
        ..SimConfig::default()
    };
    let mut cfg = SmConfig::default();
    cfg.sweep_interval = Duration::from_secs(1);
    let mut sim = sim_of(&f, sc);
    let ca = ca_nodes(&sim, &f)[0];
    let isls = isl_ends(&sim, &f);
    let (n1, p1) = isls[3];
    let t0 = sim.now();
    sim.schedule(
        t0 + Duration::from_micros(120),
        Fault::LinkDown { node: n1, port: p1 },
    );
    sim.schedule(
        t0 + Duration::from_micros(700),
        Fault::LinkUp { node: n1, port: p1 },
    );
    let mut nodes = traced(vec![attach(&mut sim, ca, cfg, None)]);
    until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(120));
    let (n2, p2) = isls[isls.len() - 2];
    sim.apply(Fault::LinkDown { node: n2, port: p2 });
    let t = sim.now() + Duration::from_secs(3);
    drive(&mut sim, &mut nodes, t, |_, _| false);
    sim.apply(Fault::LinkUp { node: n2, port: p2 });
    let t = sim.now() + Duration::from_secs(3);
    drive(&mut sim, &mut nodes, t, |_, _| false);
    lines("loss_and_flap", &nodes)
}

/// Two SMs (priorities 10 and 3) on a 32-CA tree: one Master, one Standby; the Master
/// dies and the Standby takes over.
fn takeover() -> Vec<String> {
    let f = generate::fat_tree(8, 2).unwrap();
    let cfg = |priority| {
        let mut c = SmConfig::default();
        c.priority = priority;
        c.polling_timeout = Duration::from_secs(1);
        c.polling_retries = 2;
        c
    };
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut nodes = traced(vec![
        attach(&mut sim, cas[0], cfg(10), None),
        attach(&mut sim, *cas.last().unwrap(), cfg(3), None),
    ]);
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(120));
    common::settle_master_standby(&mut sim, &mut nodes, Duration::from_secs(4));
    nodes[0].port.detach();
    nodes[0].alive = false;
    let t = sim.now() + Duration::from_secs(60);
    assert!(drive(&mut sim, &mut nodes, t, |_, ns| ns[1].ups() > 0));
    let t = sim.now() + Duration::from_secs(12);
    drive(&mut sim, &mut nodes, t, |_, _| false);
    lines("takeover", &nodes)
}

/// The SA, a partition policy and per-port M_Keys with a lease on a 32-CA tree: P_Key
/// reads and writes, enforcement bits, the predefined groups' MFT blocks, the keyed
/// light sweeps that keep the lease.
fn sa_partitions_mkeys() -> Vec<String> {
    let f = generate::fat_tree(8, 2).unwrap();
    let mut cfg = SmConfig::default();
    cfg.sa = true;
    cfg.partitions = Some(
        PartitionConfig::parse(
            "Default=0x7fff, ipoib : ALL=full;\n\
             tenant_a=0x0001, ipoib, mtu=4 : ALL_CAS=limited, ALL_SWITCHES=full;\n",
        )
        .expect("policy"),
    );
    cfg.m_key = MKeyMode::PerPort {
        secret: [0x1234_5678, 0x9abc_def0],
    };
    cfg.m_key_protect = 1;
    cfg.m_key_lease = 4;
    let (mut sim, mut nodes) = one_sm(&f, SimConfig::default(), cfg);
    up_and_idle(&mut sim, &mut nodes, Duration::from_secs(12), true);
    lines("sa_partitions_mkeys", &nodes)
}

fn parse(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (name, sm) = (l.split(' ').next()?, l.split(' ').nth(1)?);
            Some((format!("{name} {sm}"), l.to_owned()))
        })
        .collect()
}

/// Runs `scenarios` and compares (or, when blessing, rewrites) their lines in the file.
/// A scenario: its name and what it runs (one line per SM).
type Scenario = (&'static str, fn() -> Vec<String>);

fn check(scenarios: &[Scenario]) {
    let bless = std::env::var_os("IBSM_BLESS_DIGESTS").is_some();
    let mut got = BTreeMap::new();
    for (name, run) in scenarios {
        let first = run();
        if bless {
            // A digest is only worth committing if the run is reproducible.
            assert_eq!(first, run(), "{name}: two runs differ");
        }
        for l in first {
            got.insert(parse(&l).into_keys().next().unwrap(), l);
        }
    }
    // The tests run in parallel and share the file.
    static FILE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _lock = FILE_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let text = std::fs::read_to_string(FILE).unwrap_or_default();
    let mut want = parse(&text);
    if bless {
        want.extend(got);
        let mut out = String::from(
            "# SMP/event digests of the engine per scenario (tests/e2e_digests.rs).\n\
             # Re-bless only in a commit that says why the engine's traffic changed.\n",
        );
        for l in want.values() {
            writeln!(out, "{l}").unwrap();
        }
        std::fs::create_dir_all(std::path::Path::new(FILE).parent().unwrap()).unwrap();
        std::fs::write(FILE, out).unwrap();
        return;
    }
    let mut diffs = Vec::new();
    for (key, line) in &got {
        match want.get(key) {
            Some(w) if w == line => {}
            Some(w) => diffs.push(format!("want {w}\n got {line}")),
            None => diffs.push(format!("missing from {FILE}: {line}")),
        }
    }
    assert!(diffs.is_empty(), "digests differ:\n{}", diffs.join("\n"));
}

#[test]
fn quickstart_tree_digest() {
    check(&[("quickstart_tree", quickstart_tree)]);
}

#[test]
fn tree_11k_digest() {
    check(&[("tree_11k", tree_11k)]);
}

#[test]
fn torus_dor_digest() {
    check(&[("torus_dor", torus_dor)]);
}

#[test]
fn lmc2_updn_digest() {
    check(&[("lmc2_updn", lmc2_updn)]);
}

#[test]
fn loss_and_flap_digest() {
    check(&[("loss_and_flap", loss_and_flap)]);
}

#[test]
fn takeover_digest() {
    check(&[("takeover", takeover)]);
}

#[test]
fn sa_partitions_mkeys_digest() {
    check(&[("sa_partitions_mkeys", sa_partitions_mkeys)]);
}
