//! End-to-end LID persistence: an SM restarted with the LID store of the previous one
//! (in memory or OpenSM's guid2lid file) assigns the same LIDs even on a fabric that
//! forgot them (every node power-cycled) and from another attachment point, where a
//! fresh SM would assign them differently.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use common::{assert_configured, attach, ca_nodes, sim_of, until_up};
use ibsm_manager::{FileLidStore, LidStore, MemoryLidStore, SmConfig};
use ibsm_sim::SimConfig;
use ibsm_topology::{Fabric, generate};

type Lids = BTreeMap<u64, (u16, u8)>;

fn fabric() -> Fabric {
    generate::fat_tree(8, 2).unwrap()
}

fn lmc_cfg(lmc: u8) -> SmConfig {
    let mut c = SmConfig::default();
    c.lmc = lmc;
    c
}

/// Brings a fresh simulation of `f` up from CA number `at`, with `store`.
fn bring_up(f: &Fabric, at: usize, lmc: u8, store: Box<dyn LidStore + Send>) -> Lids {
    let mut sim = sim_of(f, SimConfig::default());
    let ca = ca_nodes(&sim, f)[at];
    let mut nodes = vec![attach(&mut sim, ca, lmc_cfg(lmc), Some(store))];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    assert_configured(
        &sim,
        &nodes[0].sm,
        f.switch_count() + (f.cas().count() << lmc),
    );
    nodes[0].sm.lids().clone()
}

#[test]
fn memory_store_gives_the_same_lids_from_another_ca() {
    let f = fabric();
    for lmc in [0, 2] {
        let first = bring_up(&f, 0, lmc, Box::new(MemoryLidStore::default()));
        // Without a store the numbering is by GUID, so a fresh SM elsewhere agrees...
        let last = f.cas().count() - 1;
        let fresh = bring_up(&f, last, lmc, Box::new(MemoryLidStore::default()));
        assert_eq!(first, fresh, "LID assignment is deterministic");
        // ...but a store that says otherwise (LIDs from an older fabric, here the CA
        // ranges in reverse order) wins over that order.
        let mut stored = first.clone();
        let ca_keys: Vec<u64> = first
            .keys()
            .copied()
            .filter(|g| first[g].1 == lmc)
            .collect();
        let mut ca_lids: Vec<(u16, u8)> = ca_keys.iter().map(|g| first[g]).collect();
        ca_lids.reverse();
        for (g, l) in ca_keys.iter().zip(ca_lids) {
            stored.insert(*g, l);
        }
        assert_ne!(stored, first);
        let again = bring_up(
            &f,
            last,
            lmc,
            Box::new(MemoryLidStore {
                map: stored.clone(),
            }),
        );
        assert_eq!(stored, again);
    }
}

#[test]
fn guid2lid_file_survives_a_crash() {
    let dir = std::env::temp_dir().join(format!("ibsm-e2e-persist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("guid2lid");
    let _ = std::fs::remove_file(&path);
    let f = fabric();
    let first = bring_up(&f, 3, 1, Box::new(FileLidStore::new(&path)));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
            .count(),
        first.len(),
        "one guid2lid line per port"
    );
    // The "crash": a new process (new engine, new simulation, every SMA blank).
    let again = bring_up(&f, 17, 1, Box::new(FileLidStore::new(&path)));
    assert_eq!(first, again);
    // A file edited by hand (one port moved to a free LID) is honoured.
    let (&guid, &(_, lmc)) = first.iter().find(|(_, v)| v.1 == 1).unwrap();
    let free = (2..0xBFFEu16)
        .step_by(2)
        .find(|l| !first.values().any(|v| v.0 == *l))
        .unwrap();
    let mut edited = first.clone();
    edited.insert(guid, (free, lmc));
    FileLidStore::new(&path).save(&edited).unwrap();
    let third = bring_up(&f, 17, 1, Box::new(FileLidStore::new(&path)));
    assert_eq!(third[&guid], (free, lmc));
    let others: HashSet<_> = first.keys().filter(|g| **g != guid).collect();
    for g in others {
        assert_eq!(first[g], third[g]);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn standby_less_restart_on_a_live_fabric_keeps_lids_without_store() {
    // The SM process dies and a new one (empty store) starts on another CA of the
    // same, still configured fabric: the LIDs the ports carry are kept.
    let f = fabric();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut nodes = vec![attach(&mut sim, cas[0], SmConfig::default(), None)];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    let first = nodes[0].sm.lids().clone();
    nodes[0].port.detach();
    nodes[0].alive = false;
    nodes.push(attach(&mut sim, cas[20], SmConfig::default(), None));
    until_up(&mut sim, &mut nodes, 1, Duration::from_secs(60));
    assert_eq!(&first, nodes[1].sm.lids());
    let stats = nodes[1].last_up().unwrap();
    assert_eq!(
        stats.lft_blocks, stats.switches as u64,
        "one LFT block per switch"
    );
    assert_configured(&sim, &nodes[1].sm, f.switch_count() + f.cas().count());
}
