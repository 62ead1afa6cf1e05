//! The engine's routing as a job the host runs (`SubnetManager::set_job_offload`):
//! while the job is out the SM keeps answering (no takeover by a Standby polling it,
//! the SA answers from its last snapshot), its output is applied where the host hands
//! it back, an output the engine no longer waits for is dropped, and a sweep whose
//! routing failed is tried again at the next periodic sweep.

mod common;

use std::time::Duration;

use common::{Node, attach, ca_nodes, drive, roles, sim_of};
use ibsm_manager::{Role, SmConfig, SmEvent, SmJob};
use ibsm_routing::EngineList;
use ibsm_sim::{SimConfig, SmaAgent};
use ibsm_topology::generate;
use ibsm_transport::{Address, Incoming, LidAddress, Transport, TransportError};
use ibsm_wire::Method;
use ibsm_wire::sa::{PathRecord, SaMad};

/// Runs every job the SMs hand out at once (what an Inline runner does), and takes
/// what the outputs made (MADs, events) at once too, as a driver would.
fn run_jobs(nodes: &mut [Node], now: ibsm_transport::Instant) {
    for n in nodes.iter_mut().filter(|n| n.alive) {
        while let Some(job) = n.sm.poll_job() {
            let out = job.run();
            n.sm.handle_job(now, out);
            common::flush(n);
        }
    }
}

/// The next job of `node` that is not a discard (those are run at once: they only
/// free what the engine no longer needs).
fn next_job(node: &mut Node, now: ibsm_transport::Instant) -> Option<SmJob> {
    while let Some(job) = node.sm.poll_job() {
        if job.kind() != "discard" {
            return Some(job);
        }
        node.sm.handle_job(now, job.run());
    }
    None
}

fn master_cfg() -> SmConfig {
    let mut c = SmConfig::default();
    c.priority = 10;
    c.polling_timeout = Duration::from_millis(200);
    c.polling_retries = 2;
    c.sweep_interval = Duration::from_secs(10);
    c
}

fn standby_cfg() -> SmConfig {
    let mut c = master_cfg();
    c.priority = 5;
    c
}

/// A Master whose routing job is held for 20 s of virtual time (a fabric far larger
/// than this one, on a slow machine) stays Master: the Standby polling it every 200 ms
/// gets its answers throughout, the SA answers a PathRecord query from its last
/// snapshot, and once the output comes back the sweep programs the subnet and comes
/// up clean. (Planted: `routes_computed` not moving the sweep on to Program -> never
/// SUBNET UP again.)
#[test]
fn a_held_routing_job_leaves_the_master_answering() {
    let f = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut master = attach(&mut sim, cas[0], master_cfg(), None);
    master.sm.set_job_offload(true);
    let standby = attach(&mut sim, cas[1], standby_cfg(), None);
    let mut nodes = vec![master, standby];
    let tool_node = cas[6];
    let mut tool = sim.attach_tool(tool_node, 1).unwrap();

    // Bring-up, jobs run as soon as they are made.
    let ok = drive(
        &mut sim,
        &mut nodes,
        ibsm_transport::Instant::from_secs(60),
        |s, ns| {
            run_jobs(ns, s.now());
            ns[0].ups() >= 1 && ns[1].sm.role() == Role::Standby && !ns[0].sm.is_sweeping()
        },
    );
    assert!(ok, "roles {:?}", roles(&nodes));
    assert!(!nodes[0].sm.job_pending());

    // A rebalance recomputes every route: one job, held.
    nodes[0].sm.request_rebalance(sim.now());
    let mut held: Option<SmJob> = None;
    let until = sim.now() + Duration::from_secs(5);
    let got = drive(&mut sim, &mut nodes, until, |s, ns| {
        held = next_job(&mut ns[0], s.now());
        held.is_some()
    });
    assert!(got, "no routing job");
    let job = held.take().unwrap();
    assert_eq!(job.kind(), "route");
    assert!(nodes[0].sm.job_pending() && nodes[0].sm.is_sweeping());
    nodes[1].fresh();
    let ups = nodes[0].ups();

    // 20 s with the job out: 100 polling periods of the Standby.
    let ask_at = sim.now() + Duration::from_secs(10);
    let hold_until = sim.now() + Duration::from_secs(20);
    let sm_lid = nodes[0].sm.sm_lid();
    let mut asked = false;
    let mut answered = None;
    drive(&mut sim, &mut nodes, hold_until, |s, _| {
        if !asked && s.now() >= ask_at {
            let t = PathRecord {
                slid: sm_lid,
                dlid: sm_lid,
                ..PathRecord::default()
            };
            let mask = PathRecord::CM_SLID | PathRecord::CM_DLID;
            let req = SaMad::request(Method::Get, 0x1234, mask, &t).unwrap();
            let dst = Address::Lid(LidAddress::gsi(sm_lid, 0));
            tool.send(&dst, &req.to_bytes()).unwrap();
            asked = true;
        }
        loop {
            match tool.recv(tool.now()) {
                Ok(Incoming::Mad(rx)) => answered = Some(rx.mad),
                Ok(_) => {}
                Err(TransportError::Timeout) => break,
                Err(e) => panic!("{e}"),
            }
        }
        false
    });
    assert_eq!(
        roles(&nodes),
        vec![Role::Master, Role::Standby],
        "a takeover while routing"
    );
    assert!(
        !nodes[1]
            .fresh()
            .iter()
            .any(|e| matches!(e, SmEvent::RoleChanged { .. })),
        "the Standby changed role while the Master routed"
    );
    assert_eq!(nodes[0].ups(), ups, "SUBNET UP without the routes");
    let answer = answered.expect("the SA did not answer while routing");
    let mut buf = [0u8; 256];
    buf[..answer.len().min(256)].copy_from_slice(&answer[..answer.len().min(256)]);
    let parsed = SaMad::parse(&buf).unwrap();
    assert!(parsed.status.is_ok(), "{:?}", parsed.status);

    // The output comes back: programmed, up, clean.
    let out = job.run();
    nodes[0].sm.handle_job(sim.now(), out);
    // No routing job any more: at most the publish job of a sweep with nothing to
    // change (the routes came out as they were).
    if let Some(j) = next_job(&mut nodes[0], sim.now()) {
        assert_eq!(j.kind(), "publish");
        let now = sim.now();
        nodes[0].sm.handle_job(now, j.run());
    }
    let until = sim.now() + Duration::from_secs(30);
    let up = drive(&mut sim, &mut nodes, until, |s, ns| {
        run_jobs(ns, s.now());
        ns[0].ups() > ups && !ns[0].sm.is_sweeping()
    });
    assert!(up, "no SUBNET UP after the job came back");
    assert!(sim.verify().is_clean(), "{:?}", sim.verify());
    assert_eq!(roles(&nodes), vec![Role::Master, Role::Standby]);
}

/// A sweep started over while its routing job is out: the old job's output changes
/// nothing (no MAD, still waiting), the new one's configures the subnet. (Planted:
/// `job_done` without the id check -> the stale output is programmed.)
#[test]
fn the_output_of_a_job_no_longer_waited_for_is_dropped() {
    let f = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut n = attach(&mut sim, cas[0], SmConfig::default(), None);
    n.sm.set_job_offload(true);
    let mut nodes = vec![n];
    let take = |sim: &mut ibsm_sim::Sim<SmaAgent>, nodes: &mut [Node]| {
        let mut held = None;
        let until = sim.now() + Duration::from_secs(10);
        let ok = drive(sim, nodes, until, |s, ns| {
            held = next_job(&mut ns[0], s.now());
            held.is_some()
        });
        assert!(ok, "no job");
        held.unwrap()
    };
    let first = take(&mut sim, &mut nodes);
    // A restart while the job is out begins a new heavy sweep.
    nodes[0].sm.start(sim.now()).unwrap();
    let second = take(&mut sim, &mut nodes);
    assert_ne!(first.id(), second.id());
    let now = sim.now();
    nodes[0].sm.handle_job(now, first.run());
    assert!(
        nodes[0].sm.poll_transmit(now).is_none(),
        "the stale output was programmed"
    );
    assert!(nodes[0].sm.job_pending(), "the sweep stopped waiting");
    nodes[0].sm.handle_job(now, second.run());
    let until = sim.now() + Duration::from_secs(30);
    let up = drive(&mut sim, &mut nodes, until, |s, ns| {
        run_jobs(ns, s.now());
        ns[0].ups() >= 1 && !ns[0].sm.is_sweeping()
    });
    assert!(up);
    assert!(sim.verify().is_clean(), "{:?}", sim.verify());
}

/// Routing that fails (every engine of a `no_fallback` list) is tried again by the
/// next periodic sweep, which is heavy, without a trap to ask for it. (Planted: no
/// `note_change` after `RoutingFailed` -> the next sweep is light and the failure is
/// never retried.)
#[test]
fn failed_routing_is_retried_at_the_next_periodic_sweep() {
    let f = generate::grid(&generate::Grid {
        dims: vec![4, 4],
        torus: true,
        cas_per_switch: 1,
    })
    .unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let ca = ca_nodes(&sim, &f)[0];
    let mut c = SmConfig::default();
    c.routing = "ftree,no_fallback".parse::<EngineList>().unwrap();
    c.sweep_interval = Duration::from_secs(5);
    let mut nodes = vec![attach(&mut sim, ca, c, None)];
    let failed = |n: &Node| {
        n.events
            .iter()
            .filter(|e| matches!(e, SmEvent::RoutingFailed { .. }))
            .count()
    };
    let until = ibsm_transport::Instant::from_secs(30);
    assert!(drive(&mut sim, &mut nodes, until, |_, n| failed(&n[0]) >= 1));
    nodes[0].fresh();
    // One sweep period later (and a little): another heavy sweep, failing again.
    let until = sim.now() + Duration::from_secs(6);
    assert!(
        drive(&mut sim, &mut nodes, until, |_, n| failed(&n[0]) >= 2),
        "routing not retried: {:?}",
        nodes[0].fresh()
    );
    let heavy_starts = nodes[0]
        .fresh()
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepStarted { heavy: true }))
        .count();
    assert_eq!(heavy_starts, 1);
}

/// Offloaded jobs (run by the host as soon as they are out) and the Program stage
/// planned a few units at a time send exactly the MADs, in exactly the order, of the
/// engine that does both in one go: every MAD and event of a bring-up, a cable cut
/// and its re-route compared one by one. (Planted: the sliced planning taking the ports
/// before the P_Key tables -> the digests differ.)
#[test]
fn offload_and_sliced_programming_send_the_same_mads() {
    let run = |offload: bool| {
        let f = generate::k_ary_n_tree(4, 3).unwrap();
        let mut sim = sim_of(&f, SimConfig::default());
        let cas = ca_nodes(&sim, &f);
        let mut n = attach(&mut sim, cas[0], SmConfig::default(), None);
        if offload {
            n.sm.set_job_offload(true);
            n.sm.set_program_slice(std::num::NonZeroUsize::new(7).unwrap());
        }
        n.trace.log = Some(Vec::new());
        let mut nodes = vec![n];
        let until = ibsm_transport::Instant::from_secs(30);
        let up = drive(&mut sim, &mut nodes, until, |s, ns| {
            run_jobs(ns, s.now());
            ns[0].ups() >= 1 && !ns[0].sm.is_sweeping()
        });
        assert!(up);
        // A switch-to-switch cable cut: a trap, a heavy sweep, a re-route.
        let (node, port) = common::isl_ends(&sim, &f)[3];
        sim.apply(ibsm_sim::Fault::LinkDown { node, port });
        let until = sim.now() + Duration::from_secs(30);
        let again = drive(&mut sim, &mut nodes, until, |s, ns| {
            run_jobs(ns, s.now());
            ns[0].ups() >= 2 && !ns[0].sm.is_sweeping()
        });
        assert!(again, "{:?}", nodes[0].events);
        assert!(sim.verify().is_clean(), "{:?}", sim.verify());
        // MADs and events each in their order (how the two interleave in the log
        // depends on when the harness collects events, not on the engine).
        let log = nodes[0].trace.log.take().unwrap();
        let (mads, events): (Vec<String>, Vec<String>) =
            log.into_iter().partition(|l| l.starts_with("mad"));
        (mads, events)
    };
    let inline = run(false);
    let offloaded = run(true);
    assert!(inline.0.len() > 3000, "{}", inline.0.len());
    let first_diff = inline.0.iter().zip(&offloaded.0).position(|(a, b)| a != b);
    assert_eq!(first_diff, None, "MADs differ");
    assert_eq!(
        inline.0.len(),
        offloaded.0.len(),
        "{:?}",
        &inline.0[inline.0.len().min(offloaded.0.len())..]
            .iter()
            .chain(&offloaded.0[inline.0.len().min(offloaded.0.len())..])
            .take(5)
            .collect::<Vec<_>>()
    );
    assert_eq!(inline.1, offloaded.1, "events differ");
}

/// What `subnet()` shows while a heavy sweep rediscovers the fabric is the last whole
/// model, never the half-built one (a status or metric read mid-sweep used to drop to
/// a handful of nodes and climb back). (Planted: `subnet()` returning the sweep's own
/// model -> a round sees fewer nodes.)
#[test]
fn the_model_on_show_during_a_heavy_sweep_is_the_last_whole_one() {
    let f = generate::k_ary_n_tree(4, 3).unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut nodes = vec![attach(&mut sim, cas[0], SmConfig::default(), None)];
    let until = ibsm_transport::Instant::from_secs(30);
    assert!(drive(&mut sim, &mut nodes, until, |_, ns| {
        ns[0].ups() >= 1 && !ns[0].sm.is_sweeping()
    }));
    let whole = nodes[0].sm.subnet().nodes.len();
    assert_eq!(whole, f.node_count());
    nodes[0].sm.request_heavy_sweep(sim.now());
    let (mut rounds, mut least) = (0u32, usize::MAX);
    let until = sim.now() + Duration::from_secs(30);
    assert!(drive(&mut sim, &mut nodes, until, |_, ns| {
        if ns[0].sm.is_sweeping() {
            rounds += 1;
            least = least.min(ns[0].sm.subnet().nodes.len());
        }
        ns[0].ups() >= 2 && !ns[0].sm.is_sweeping()
    }));
    assert!(rounds > 10, "{rounds} rounds");
    assert_eq!(least, whole);
}

/// A heavy sweep ends when its publish job comes back: while the host holds it (a
/// large fabric's SA snapshot being indexed on a worker), the sweep is not up, the SA
/// answers from the snapshot before the sweep (the cut cable still in it), and once
/// handed back the sweep comes up with the new snapshot loaded. Then the engine hands
/// out what it no longer needs (the previous model and snapshot) to be freed by the
/// host. (Planted: `begin_publish` finishing at once without a job -> no publish job;
/// the new snapshot loaded before the job -> the SA shows the cut early.)
#[test]
fn a_sweep_is_up_when_its_publish_job_comes_back() {
    let f = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut n = attach(&mut sim, cas[0], master_cfg(), None);
    n.sm.set_job_offload(true);
    let mut nodes = vec![n];
    let until = ibsm_transport::Instant::from_secs(60);
    let up = drive(&mut sim, &mut nodes, until, |s, ns| {
        run_jobs(ns, s.now());
        ns[0].ups() >= 1 && !ns[0].sm.is_sweeping()
    });
    assert!(up);
    let ups = nodes[0].ups();
    let (node, port) = common::isl_ends(&sim, &f)[0];
    let guid = sim.node_setup(node).unwrap().guid;
    let cabled = |sm: &ibsm_manager::SubnetManager| {
        let snap = sm.sa().unwrap().snapshot();
        snap.nodes
            .iter()
            .find(|n| n.info.node_guid == guid)
            .and_then(|n| n.ports[usize::from(port)].peer)
            .is_some()
    };
    assert!(cabled(&nodes[0].sm));

    // The cut: a trap, a heavy sweep; every job run but the publish job, held.
    sim.apply(ibsm_sim::Fault::LinkDown { node, port });
    let mut held: Option<SmJob> = None;
    let until = sim.now() + Duration::from_secs(30);
    let got = drive(&mut sim, &mut nodes, until, |s, ns| {
        while let Some(job) = next_job(&mut ns[0], s.now()) {
            if job.kind() == "publish" {
                held = Some(job);
                return true;
            }
            ns[0].sm.handle_job(s.now(), job.run());
            common::flush(&mut ns[0]);
        }
        false
    });
    assert!(got, "no publish job: {:?}", nodes[0].fresh());
    assert!(nodes[0].sm.job_pending() && nodes[0].sm.is_sweeping());
    // Held for 5 s of virtual time.
    let until = sim.now() + Duration::from_secs(5);
    drive(&mut sim, &mut nodes, until, |_, _| false);
    assert_eq!(
        nodes[0].ups(),
        ups,
        "SUBNET UP before the publish job came back"
    );
    assert!(
        cabled(&nodes[0].sm),
        "the SA shows the cut before the sweep is up"
    );

    let now = sim.now();
    nodes[0].sm.handle_job(now, held.take().unwrap().run());
    common::flush(&mut nodes[0]);
    assert_eq!(nodes[0].ups(), ups + 1, "not up once published");
    assert!(!cabled(&nodes[0].sm), "the SA still shows the cut cable");
    let discard = nodes[0]
        .sm
        .poll_job()
        .expect("nothing handed out to be freed");
    assert_eq!(discard.kind(), "discard");
    nodes[0].sm.handle_job(now, discard.run());
    assert!(nodes[0].sm.poll_job().is_none());
}

/// After discovery too, `subnet()` is the last whole sweep's model until the running
/// sweep ends: with a cable cut and the re-route held, the model on show still has the
/// cable; once the sweep is up, it has not. (Planted: `subnet()` showing the sweep's
/// own model once discovery ends -> the cut shows while the routes are not in force.)
#[test]
fn the_model_on_show_is_the_last_whole_one_until_the_sweep_ends() {
    let f = generate::k_ary_n_tree(4, 2).unwrap();
    let mut sim = sim_of(&f, SimConfig::default());
    let cas = ca_nodes(&sim, &f);
    let mut n = attach(&mut sim, cas[0], master_cfg(), None);
    n.sm.set_job_offload(true);
    let mut nodes = vec![n];
    let until = ibsm_transport::Instant::from_secs(60);
    assert!(drive(&mut sim, &mut nodes, until, |s, ns| {
        run_jobs(ns, s.now());
        ns[0].ups() >= 1 && !ns[0].sm.is_sweeping()
    }));
    let links = nodes[0].sm.subnet().link_count();
    assert_eq!(links, f.link_count());
    let (node, port) = common::isl_ends(&sim, &f)[0];
    sim.apply(ibsm_sim::Fault::LinkDown { node, port });
    let mut held: Option<SmJob> = None;
    let until = sim.now() + Duration::from_secs(30);
    assert!(drive(&mut sim, &mut nodes, until, |s, ns| {
        held = next_job(&mut ns[0], s.now());
        held.is_some()
    }));
    let job = held.take().unwrap();
    assert_eq!(job.kind(), "route");
    assert_eq!(
        nodes[0].sm.subnet().link_count(),
        links,
        "the cut on show early"
    );
    let now = sim.now();
    nodes[0].sm.handle_job(now, job.run());
    let until = sim.now() + Duration::from_secs(30);
    assert!(drive(&mut sim, &mut nodes, until, |s, ns| {
        run_jobs(ns, s.now());
        ns[0].ups() >= 2 && !ns[0].sm.is_sweeping()
    }));
    assert_eq!(nodes[0].sm.subnet().link_count(), links - 1);
}
