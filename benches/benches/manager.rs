//! SM engine bring-up on the simulator: a blank fabric to SUBNET UP (discovery, LIDs,
//! routing, LFTs, PortInfo, activation) with `ibsm-manager` driving `ibsm-sim` (every
//! node running `ibsm-sma`).
//!
//! * `manager/bringup_2level_r36`: 648 CAs, 54 switches.
//! * `manager/bringup_3level_r36`: 11,664 CAs, 1,620 switches (few samples; the
//!   simulator's switch LFTs are capped at 16 Ki LIDs to keep memory to what the SM
//!   needs, see `SimConfig::lft_cap`).
//!
//! Each iteration builds the simulation and runs the SM to SUBNET UP; before timing,
//! one run prints the SMP count, virtual sweep time and peak RSS (VmHWM).

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_manager::{SmConfig, SmEvent, SubnetManager, SweepStats, driver};
use ibsm_sim::{Sim, SimConfig, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Instant, Transport};

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn bring_up(fabric: &Fabric, sim_cfg: SimConfig) -> SweepStats {
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(fabric, sim_cfg).expect("sim");
    let (_, ca) = fabric.cas().next().expect("a CA");
    let idx = sim.node_by_guid(ca.guid().0).expect("CA in sim");
    let mut port = sim.attach_sm(idx, 1).expect("attach");
    port.set_is_sm(true).expect("issm");
    let mut sm =
        SubnetManager::new(SmConfig::default(), port.local_port()).expect("valid configuration");
    sm.start(port.now()).expect("start");
    let mut stats = None;
    driver::run(&mut sm, &mut port, Instant::from_secs(600), |ev| {
        if let SmEvent::SubnetUp { stats: s } = ev {
            stats = Some(s.clone());
            return true;
        }
        false
    })
    .expect("run");
    stats.expect("subnet up")
}

fn report(name: &str, fabric: &Fabric, cfg: SimConfig) {
    let t = std::time::Instant::now();
    let st = bring_up(fabric, cfg);
    let total = st.total;
    eprintln!(
        "{name}: {} nodes, {} SMPs ({} LFT blocks, {} PortInfo Sets), virtual sweep {total:?}, routing {:?}, wall {:?}, VmHWM {} MiB",
        st.nodes,
        st.smps,
        st.lft_blocks,
        st.port_sets,
        st.routing_wall,
        t.elapsed(),
        status_kib("VmHWM:") / 1024
    );
}

fn two_level(c: &mut Criterion) {
    let f = generate::fat_tree(36, 2).expect("fat tree");
    report("2-level radix-36", &f, SimConfig::default());
    let mut g = c.benchmark_group("manager");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("bringup_2level_r36", |b| {
        b.iter(|| bring_up(&f, SimConfig::default()));
    });
    g.finish();
}

fn three_level(c: &mut Criterion) {
    let f = generate::fat_tree(36, 3).expect("fat tree");
    let cfg = SimConfig {
        lft_cap: 16 * 1024,
        ..SimConfig::default()
    };
    report("3-level radix-36", &f, cfg);
    let mut g = c.benchmark_group("manager");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    g.bench_function("bringup_3level_r36", |b| {
        b.iter(|| bring_up(&f, cfg));
    });
    g.finish();
}

criterion_group!(benches, two_level, three_level);
criterion_main!(benches);
