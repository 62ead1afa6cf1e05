//! End-to-end election in the simulator: two SMs at different CAs, different
//! priorities, driven in one thread. Exactly one configures; when it dies the standby
//! takes over within its polling budget, the subnet stays verified and no LID changes.

mod common;

use std::time::Duration;

use common::{Node, assert_configured, attach, ca_nodes, drive, sim_of, until_clean, until_up};
use ibsm_manager::{Role, SmConfig, SmEvent};
use ibsm_sim::{Sim, SimConfig, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::Transport;

fn cfg(priority: u8, poll: Duration, retries: u32) -> SmConfig {
    let mut c = SmConfig::default();
    c.priority = priority;
    c.polling_timeout = poll;
    c.polling_retries = retries;
    c
}

struct Failover {
    /// Virtual time from the master's death to the standby's SUBNET UP.
    to_up: Duration,
    /// Virtual time from the death to the standby becoming master.
    to_master: Duration,
}

/// Master at CA 0 (priority 10), standby at the last CA (priority 3); bring up, kill
/// the master, measure.
fn failover(f: &Fabric, poll: Duration, retries: u32) -> (Sim<SmaAgent>, Vec<Node>, Failover) {
    let mut sim = sim_of(f, SimConfig::default());
    let cas = ca_nodes(&sim, f);
    let mut nodes = vec![
        attach(&mut sim, cas[0], cfg(10, poll, retries), None),
        attach(&mut sim, *cas.last().unwrap(), cfg(3, poll, retries), None),
    ];
    until_up(&mut sim, &mut nodes, 0, Duration::from_secs(120));
    // Let the standby finish its discovery and settle.
    common::settle_master_standby(&mut sim, &mut nodes, poll * 2);
    assert_eq!(common::roles(&nodes), [Role::Master, Role::Standby]);
    assert_eq!(nodes[1].ups(), 0, "the standby configured nothing");
    let lids = f.switch_count() + f.cas().count();
    assert_configured(&sim, &nodes[0].sm, lids);
    // Every port points at the master.
    let master_lid = nodes[0].sm.sm_lid();
    assert_ne!(master_lid, 0);
    for &ca in &cas {
        let pi = sim.with_agent(ca, |a| a.sma().port_info(1)).unwrap();
        assert_eq!(pi.master_sm_lid, master_lid);
    }
    let before = nodes[0].sm.lids().clone();

    // Kill the master.
    let died = sim.now();
    nodes[0].port.detach();
    nodes[0].alive = false;
    let mut became_master = None;
    let limit = poll * (retries + 2) + Duration::from_secs(60);
    let ok = drive(&mut sim, &mut nodes, died + limit, |s, ns| {
        if became_master.is_none() && ns[1].sm.role() == Role::Master {
            became_master = Some(s.now());
        }
        ns[1].ups() > 0
    });
    assert!(ok, "standby took over: {:?}", &nodes[1].events);
    let up = sim.now();
    assert_eq!(&before, nodes[1].sm.lids(), "zero LID changes");
    // At SUBNET UP every port already points at the new master.
    let new_lid = nodes[1].sm.sm_lid();
    for &ca in &cas[1..] {
        let pi = sim.with_agent(ca, |a| a.sma().port_info(1)).unwrap();
        assert_eq!(
            pi.master_sm_lid, new_lid,
            "ports point at the new master at SUBNET UP"
        );
    }
    until_clean(&mut sim, &mut nodes, 1, Duration::from_secs(30));
    assert_configured(&sim, &nodes[1].sm, lids);
    for &ca in &cas[1..] {
        let pi = sim.with_agent(ca, |a| a.sma().port_info(1)).unwrap();
        assert_eq!(pi.master_sm_lid, new_lid, "ports point at the new master");
    }
    let fo = Failover {
        to_up: up.saturating_duration_since(died),
        to_master: became_master.unwrap_or(up).saturating_duration_since(died),
    };
    (sim, nodes, fo)
}

#[test]
fn one_master_and_fast_failover_on_a_small_tree() {
    let f = generate::fat_tree(8, 2).unwrap();
    let poll = Duration::from_millis(150);
    let (_sim, nodes, fo) = failover(&f, poll, 2);
    // Declared dead after `retries` failed polls: not before, and not much after.
    assert!(fo.to_master >= poll, "{:?}", fo.to_master);
    assert!(
        fo.to_master <= poll * 4 + Duration::from_secs(1),
        "{:?}",
        fo.to_master
    );
    assert!(
        nodes[1]
            .events
            .contains(&SmEvent::RoleChanged { role: Role::Master })
    );
    eprintln!(
        "failover: master after {:?}, subnet up after {:?}",
        fo.to_master, fo.to_up
    );
}

/// OpenSM's defaults (polls every 10 s, 4 retries, 200 ms transactions): the Master is
/// declared lost when the 4th poll in a row goes unanswered for 200 ms, i.e.
/// `retries x poll + 200 ms` = 40.2 s after its last answer at the latest
/// (`Config::worst_case_detection`; OpenSM 3.3 waits two polls more). The test kills the
/// Master right after a poll was answered, the worst case, so the takeover lands after
/// 40 s and by 40.2 s plus the standby's discovery (microseconds of virtual time here).
#[test]
fn opensm_defaults_failover_on_a_small_tree() {
    let f = generate::k_ary_n_tree(4, 2).unwrap();
    let (poll, retries) = (Duration::from_secs(10), 4);
    let (_sim, nodes, fo) = failover(&f, poll, retries);
    assert!(fo.to_master > poll * retries, "{:?}", fo.to_master);
    let worst = ibsm_election::Config::with_polling(1, poll, retries).worst_case_detection();
    assert_eq!(worst, Duration::from_millis(40_200));
    assert!(
        fo.to_master <= worst + Duration::from_millis(100),
        "{:?}",
        fo.to_master
    );
    // One heavy sweep each to get there: the Master's bring-up, the standby's discovery
    // that made it follow, the standby's takeover.
    for (i, want) in [(0, 1), (1, 2)] {
        let heavy = nodes[i]
            .events
            .iter()
            .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
            .count();
        assert_eq!(heavy, want, "SM {i}: {:?}", nodes[i].events);
    }
}

/// The numbers for the report: 648-CA fat tree, OpenSM defaults vs a fast profile.
/// `cargo test --release -p ibsm-manager --test e2e_election -- --ignored --nocapture`
#[test]
#[ignore = "measurement on the 648-CA fat tree; run by hand"]
fn failover_times_648_ca_fat_tree() {
    let f = generate::fat_tree(36, 2).unwrap();
    for (name, poll, retries) in [
        ("OpenSM defaults 10 s x 4", Duration::from_secs(10), 4),
        ("fast 200 ms x 2", Duration::from_millis(200), 2),
        ("fast 100 ms x 2", Duration::from_millis(100), 2),
    ] {
        let wall = std::time::Instant::now();
        let (_sim, nodes, fo) = failover(&f, poll, retries);
        // The takeover sweep: the standby's first SUBNET UP.
        let st = nodes[1]
            .events
            .iter()
            .find_map(|e| match e {
                SmEvent::SubnetUp { stats } => Some(stats),
                _ => None,
            })
            .unwrap();
        eprintln!(
            "{name}: master after {:?}, SUBNET UP after {:?} (virtual); takeover sweep {} SMPs, {} LFT blocks, {} PortInfo sets; wall {:?}",
            fo.to_master,
            fo.to_up,
            st.smps,
            st.lft_blocks,
            st.port_sets,
            wall.elapsed()
        );
    }
}

/// Heavy sweeps SM `i` started since its event `from`.
fn heavy_since(n: &Node, from: usize) -> usize {
    n.events[from..]
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
        .count()
}

/// A Master (priority 5, light sweeps only, the next heavy one far away) on a settled
/// subnet, and a second SM started at another CA whose port is already Active: no trap
/// tells the Master, no sweep of its own probes the newcomer.
fn newcomer(priority: u8) -> (Sim<SmaAgent>, Vec<Node>, u64, usize) {
    let f = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut nodes = vec![attach(
        &mut sim,
        cas[0],
        cfg(5, Duration::from_millis(500), 2),
        None,
    )];
    common::until_clean(&mut sim, &mut nodes, 0, Duration::from_secs(30));
    let from = nodes[0].events.len();
    nodes.push(attach(
        &mut sim,
        *cas.last().unwrap(),
        cfg(priority, Duration::from_millis(500), 2),
        None,
    ));
    let guid = nodes[1].port.local_port().port_guid;
    (sim, nodes, guid, from)
}

/// The newcomer's discovery asks the Master for its SMInfo; the Master answers, learns it
/// from the request and asks back: it is among the Master's known SMs (what SMInfoRecord
/// lists) before the Master sweeps, and shows as Standby once its first poll comes.
#[test]
fn a_master_learns_a_new_sm_from_its_sminfo_request_before_any_sweep() {
    let (mut sim, mut nodes, guid, from) = newcomer(3);
    let t = sim.now() + Duration::from_secs(5);
    let known = drive(&mut sim, &mut nodes, t, |_, ns| {
        ns[0]
            .sm
            .known_sms()
            .any(|k| k.info.guid == guid && k.in_last_sweep)
    });
    assert!(
        known,
        "the Master never learnt the newcomer: {:?}",
        nodes[0].events[from..].to_vec()
    );
    assert_eq!(
        heavy_since(&nodes[0], from),
        0,
        "{:?}",
        &nodes[0].events[from..]
    );
    // Its polls (SMInfo Gets) refresh what the Master knows of it: Standby.
    let t = sim.now() + Duration::from_secs(5);
    let standby = drive(&mut sim, &mut nodes, t, |_, ns| {
        ns[1].sm.role() == Role::Standby
            && ns[0]
                .sm
                .known_sms()
                .any(|k| k.info.guid == guid && k.info.sm_state == ibsm_election::SmState::Standby)
    });
    assert!(standby, "{:?}", common::roles(&nodes));
    assert_eq!(heavy_since(&nodes[0], from), 0);
    assert_eq!(common::roles(&nodes), [Role::Master, Role::Standby]);
}

/// A newcomer that outranks the Master gets the HANDOVER as soon as it stands by and
/// polls, not at the Master's next heavy sweep.
#[test]
fn a_higher_newcomer_gets_the_handover_without_waiting_for_a_sweep() {
    let (mut sim, mut nodes, _guid, from) = newcomer(9);
    let t = sim.now() + Duration::from_secs(5);
    let swapped = drive(&mut sim, &mut nodes, t, |_, ns| {
        common::roles(ns) == [Role::Standby, Role::Master]
    });
    assert!(swapped, "{:?}", common::roles(&nodes));
    assert_eq!(
        heavy_since(&nodes[0], from),
        0,
        "{:?}",
        &nodes[0].events[from..]
    );
    common::until_clean(&mut sim, &mut nodes, 1, Duration::from_secs(30));
}
