//! End-to-end: routing configured as OpenSM operators configure it (issue 16, section
//! 4): an engine list with minhop last, `no_fallback`, and configurations that cannot
//! work failing at once.

mod common;

use std::time::Duration;

use common::{assert_configured, attach, ca_nodes, drive, sim_of, until_up};
use ibsm_manager::{SmConfig, SmEvent};
use ibsm_routing::{EngineKind, EngineList, RoutingError};
use ibsm_sim::SimConfig;
use ibsm_topology::{Fabric, generate};

fn torus() -> Fabric {
    generate::grid(&generate::Grid {
        dims: vec![4, 4, 2],
        torus: true,
        cas_per_switch: 2,
    })
    .unwrap()
}

fn cfg(routing: &str) -> SmConfig {
    let mut c = SmConfig::default();
    c.routing = routing.parse().unwrap();
    c
}

/// `--routing ftree` on a torus: ftree refuses it, minhop (the implicit last engine)
/// routes it, and the sweep says so before SUBNET UP.
#[test]
fn ftree_on_a_torus_falls_back_to_minhop_and_says_why() {
    let f = torus();
    let mut sim = sim_of(&f, SimConfig::default());
    let ca = ca_nodes(&sim, &f)[0];
    let mut nodes = vec![attach(&mut sim, ca, cfg("ftree"), None)];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    assert_eq!(nodes[0].last_up().unwrap().routing_engine, "minhop");
    let fallback = nodes[0]
        .events
        .iter()
        .find_map(|e| match e {
            SmEvent::RoutingFallback { engine, failed } => Some((*engine, failed.clone())),
            _ => None,
        })
        .expect("a RoutingFallback event");
    assert_eq!(fallback.0, EngineKind::MinHop);
    assert!(
        matches!(
            fallback.1.as_slice(),
            [(EngineKind::FatTree, RoutingError::NotAFatTree(_))]
        ),
        "{:?}",
        fallback.1
    );
    assert_configured(&sim, &nodes[0].sm, f.switch_count() + f.cas().count());
}

/// A list is tried in order: the second engine routes what the first refused.
#[test]
fn the_next_engine_of_the_list_routes_what_the_first_refused() {
    let f = torus();
    let mut sim = sim_of(&f, SimConfig::default());
    let ca = ca_nodes(&sim, &f)[0];
    let mut nodes = vec![attach(&mut sim, ca, cfg("ftree,updn"), None)];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    assert_eq!(nodes[0].last_up().unwrap().routing_engine, "updn");
    assert_configured(&sim, &nodes[0].sm, f.switch_count() + f.cas().count());
    // With no engine failing there is nothing to report.
    let f = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let ca = ca_nodes(&sim, &f)[0];
    let mut nodes = vec![attach(&mut sim, ca, cfg("ftree,updn"), None)];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(60));
    assert_eq!(nodes[0].last_up().unwrap().routing_engine, "ftree");
    assert!(
        !nodes[0]
            .events
            .iter()
            .any(|e| matches!(e, SmEvent::RoutingFallback { .. }))
    );
}

/// `no_fallback`: when every listed engine fails the sweep reports it and programs
/// nothing, as OpenSM does.
#[test]
fn no_fallback_reports_every_failure_instead_of_routing() {
    let f = torus();
    let mut sim = sim_of(&f, SimConfig::default());
    let ca = ca_nodes(&sim, &f)[0];
    let list: EngineList = "ftree,no_fallback".parse().unwrap();
    let mut c = SmConfig::default();
    c.routing = list;
    let mut nodes = vec![attach(&mut sim, ca, c, None)];
    let failed = drive(
        &mut sim,
        &mut nodes,
        ibsm_transport::Instant::from_secs(30),
        |_, n| {
            n[0].events
                .iter()
                .any(|e| matches!(e, SmEvent::RoutingFailed { .. }))
        },
    );
    assert!(failed, "no RoutingFailed event");
    assert_eq!(nodes[0].ups(), 0);
    let text = nodes[0]
        .events
        .iter()
        .find_map(|e| match e {
            SmEvent::RoutingFailed { error } => Some(error.to_string()),
            _ => None,
        })
        .unwrap();
    assert!(text.contains("ftree: not a fat tree"), "{text}");
}

/// LMC 7 on ports that need more LIDs than the switches' LinearFDBCap holds: the first
/// heavy sweep stops with the need and the bound, before writing anything, and no
/// SUBNET UP follows.
#[test]
fn a_lid_space_too_small_fails_the_first_sweep_with_the_need_and_the_limit() {
    let f = generate::k_ary_n_tree(4, 2).unwrap(); // 8 switches, 16 CAs
    let sc = SimConfig {
        lft_cap: 1024,
        ..SimConfig::default()
    };
    let mut sim = sim_of(&f, sc);
    let ca = ca_nodes(&sim, &f)[0];
    let mut c = SmConfig::default();
    c.lmc = 7;
    let mut nodes = vec![attach(&mut sim, ca, c, None)];
    let failed = drive(
        &mut sim,
        &mut nodes,
        ibsm_transport::Instant::from_secs(30),
        |_, n| {
            n[0].events
                .iter()
                .any(|e| matches!(e, SmEvent::RoutingFailed { .. }))
        },
    );
    assert!(failed, "no RoutingFailed event");
    let error = nodes[0]
        .events
        .iter()
        .find_map(|e| match e {
            SmEvent::RoutingFailed { error } => Some(error.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        matches!(
            error.get(),
            ibsm_manager::SmError::LidsExhausted {
                needed: 2056,
                available: 1023,
                bound: ibsm_manager::lids::LidBound::LinearFdbCap(1024)
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("2056 LIDs needed"), "{error}");
    assert_eq!(nodes[0].ups(), 0);
}
