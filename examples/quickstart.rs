//! Brings a simulated fabric up with the ibsm Subnet Manager and verifies it.
//!
//! `cargo run --release --example quickstart` builds a 2-level radix-36 fat tree (648 CAs,
//! 54 switches) in `ibsm-sim`, where every node runs the spec-exact `ibsm-sma`, runs one SM
//! on the first CA until SUBNET UP, walks the programmed LFTs from every CA to every LID,
//! and prints a summary. Options:
//!
//! ```text
//! --topology FILE        ibnetdiscover / ibsim net file
//! --fat-tree LEVELS,RADIX  e.g. 3,36 (11,664 CAs)
//! --torus X,Y[,Z],CAS    torus of switches with CAS CAs each
//! --routing LIST         engines tried in order, as OpenSM's routing_engine: minhop |
//!                          updn | dnup | ftree | dor | lash | dfsssp, comma-separated
//!                          (e.g. ftree,updn); minhop last unless no_fallback is listed
//! --lmc N                LID mask control 0..7
//! --link-speed SPEED     lane speed of every simulated port: QDR (default), FDR, EDR,
//!                          HDR, NDR, XDR (extended speeds, read with PortInfo bit 31)
//! --drop RATE            SMP loss per hop, 0.0..1.0
//! --seed N               simulator seed
//! --no-sa                do not serve Subnet Administration (served by default, as
//!                          OpenSM does; the sweep then also reads the P_Key tables of
//!                          CA ports and switch port 0 for it); --sa is still accepted
//! --until SECS           give up after SECS of virtual time (default 600); a very lossy
//!                          large fabric needs more (every lost SMP waits its timeout)
//! --topology-ref FILE    reference topology (ibnetdiscover format) the SM compares
//!                          the fabric with at every heavy sweep (policy report); the
//!                          differences are printed at SUBNET UP
//! --partitions FILE      partition policy (OpenSM partitions.conf syntax): P_Key tables
//!                          and switch enforcement programmed from it (without one,
//!                          OpenSM's default `Default=0x7fff, ipoib : ALL=full ;`)
//! --root-guid-file FILE  roots of updn, dnup, ftree, dfsssp (OpenSM root_guid_file)
//! --cn-guid-file FILE    ftree compute nodes (OpenSM cn_guid_file)
//! --io-guid-file FILE    ftree I/O nodes (OpenSM io_guid_file)
//! --guid-routing-order-file FILE  ports routed first (OpenSM guid_routing_order_file)
//!                          (each: one GUID a line; a bad line names file, line, token)
//! --force-link-speed N   PortInfo.LinkSpeedEnabled: 0 leave, 15 supported (default)
//! --force-link-speed-ext N  LinkSpeedExtEnabled: 0 leave, 30 off, 31 supported (default)
//! --force-link-width N   LinkWidthEnabled: 0 leave, 255 supported (default)
//! --offload              the engine hands its routing to the host as a job and plans
//!                          the Program stage in slices (what ibsmd does); the longest
//!                          calls into the engine are printed (how long the SM would be
//!                          silent on a real port)
//! --rebalances N         after SUBNET UP, N rebalances (every route recomputed at a
//!                          heavy sweep), each timed (with --offload: its longest
//!                          engine calls) before the fabric is verified
//! --routing-threads N    threads that route (OpenSM-style routing_threads; 0, the
//!                          default: one per CPU, as ibsmd); the tables are the same
//!                          for any N
//! --no-verify            skip the walk of every CA->LID path after SUBNET UP (minutes
//!                          on the largest fabrics; to time the SM alone)
//! --json                 one JSON object on the last stdout line
//! ```
//!
//! Human output and progress go to stderr.

use std::ops::ControlFlow;
use std::process::ExitCode;

use ibsm::manager::{RoutingInputs, SmConfig, SmEvent, SubnetManager, SweepStats, driver};
use ibsm::routing::{EngineList, LidAssignment, metrics};
use ibsm::sim::{Sim, SimConfig, SmaAgent, VerifyReport};
use ibsm::topology::{Csr, Fabric, generate, ibnet};
use ibsm::transport::{BusyMeter, Call, Instant, JobRunner, Metered, Transport};

#[derive(Debug)]
struct Args {
    topology: Option<String>,
    fat_tree: (usize, u8),
    torus: Option<(Vec<u32>, u32)>,
    routing: EngineList,
    lmc: u8,
    link_speed: ibsm::topology::ActiveSpeed,
    drop: f64,
    seed: u64,
    until: u64,
    json: bool,
    sa: bool,
    partitions: Option<ibsm::manager::partition::PartitionConfig>,
    /// `--topology-ref FILE`.
    topology_ref: Option<String>,
    /// OpenSM's routing input files, read.
    inputs: RoutingInputs,
    /// OpenSM's force_link_speed, force_link_speed_ext, force_link_width.
    force_link: (u8, u8, u8),
    /// `--offload`: jobs handed to the host, every engine call timed.
    offload: bool,
    /// `--rebalances N`.
    rebalances: u32,
    /// `--routing-threads`: 0 = one per CPU.
    routing_threads: usize,
    /// `--no-verify`.
    no_verify: bool,
}

fn usage(msg: &str) -> String {
    format!(
        "{msg}\nusage: quickstart [--topology FILE | --fat-tree LEVELS,RADIX | --torus X,Y[,Z],CAS] \
         [--routing LIST] [--lmc N] [--link-speed SPEED] [--drop RATE] [--seed N] [--until SECS] [--no-sa] [--partitions FILE] [--topology-ref FILE] \
         [--root-guid-file FILE] [--cn-guid-file FILE] [--io-guid-file FILE] [--guid-routing-order-file FILE] \
         [--force-link-speed N] [--force-link-speed-ext N] [--force-link-width N] [--offload] [--rebalances N] [--routing-threads N] [--no-verify] [--json]"
    )
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        topology: None,
        fat_tree: (2, 36),
        torus: None,
        routing: EngineList::default(),
        lmc: 0,
        link_speed: ibsm::topology::ActiveSpeed::Qdr,
        drop: 0.0,
        seed: 1,
        until: 600,
        json: false,
        sa: true,
        partitions: None,
        topology_ref: None,
        inputs: RoutingInputs::default(),
        force_link: {
            let d = SmConfig::default();
            (
                d.force_link_speed,
                d.force_link_speed_ext,
                d.force_link_width,
            )
        },
        offload: false,
        rebalances: 0,
        routing_threads: 0,
        no_verify: false,
    };
    let guids = |path: String| {
        ibsm::routing::read_guid_file(std::path::Path::new(&path)).map_err(|e| e.to_string())
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--topology" => a.topology = Some(value()?),
            "--fat-tree" => {
                let v = value()?;
                let (l, r) = v
                    .split_once(',')
                    .ok_or_else(|| usage("--fat-tree wants LEVELS,RADIX"))?;
                a.fat_tree = (
                    l.trim()
                        .parse()
                        .map_err(|_| usage("--fat-tree: bad LEVELS"))?,
                    r.trim()
                        .parse()
                        .map_err(|_| usage("--fat-tree: bad RADIX"))?,
                );
            }
            "--torus" => {
                let v = value()?;
                let nums: Result<Vec<u32>, _> =
                    v.split(',').map(|x| x.trim().parse::<u32>()).collect();
                let nums = nums.map_err(|_| usage("--torus wants X,Y[,Z],CAS"))?;
                if !(3..=4).contains(&nums.len()) {
                    return Err(usage("--torus wants X,Y[,Z],CAS"));
                }
                let (dims, cas) = nums.split_at(nums.len() - 1);
                a.torus = Some((dims.to_vec(), cas[0]));
            }
            "--routing" => {
                let v = value()?;
                a.routing = v.parse().map_err(|e| usage(&format!("--routing: {e}")))?;
            }
            "--lmc" => {
                a.lmc = value()?
                    .parse()
                    .ok()
                    .filter(|l| *l <= 7)
                    .ok_or_else(|| usage("--lmc wants 0..7"))?;
            }
            "--link-speed" => {
                let v = value()?;
                a.link_speed = ibsm::topology::ActiveSpeed::from_name(&v.to_uppercase())
                    .filter(|s| s.lane_mbps() >= 10_000)
                    .ok_or_else(|| usage("--link-speed wants QDR, FDR, EDR, HDR, NDR or XDR"))?;
            }
            "--drop" => {
                a.drop = value()?
                    .parse()
                    .ok()
                    .filter(|d: &f64| (0.0..1.0).contains(d))
                    .ok_or_else(|| usage("--drop wants a rate in 0.0..1.0"))?;
            }
            "--seed" => a.seed = number(&flag, &value()?, "a number")?,
            "--until" => a.until = number(&flag, &value()?, "seconds")?,
            "--routing-threads" => a.routing_threads = number(&flag, &value()?, "a number")?,
            "--no-verify" => a.no_verify = true,
            "--json" => a.json = true,
            "--offload" => a.offload = true,
            "--rebalances" => a.rebalances = number(&flag, &value()?, "a number")?,
            "--sa" => a.sa = true,
            "--no-sa" => a.sa = false,
            "--partitions" => {
                let path = value()?;
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("--partitions {path}: {e}"))?;
                a.partitions = Some(
                    text.parse()
                        .map_err(|e| format!("--partitions {path}: {e}"))?,
                );
            }
            "--topology-ref" => a.topology_ref = Some(value()?),
            "--root-guid-file" => a.inputs.roots = guids(value()?)?,
            "--cn-guid-file" => a.inputs.compute_nodes = guids(value()?)?,
            "--io-guid-file" => a.inputs.io_nodes = guids(value()?)?,
            "--guid-routing-order-file" => {
                a.inputs.order = guids(value()?)?;
            }
            "--force-link-speed" => {
                a.force_link.0 = number(&flag, &value()?, "0..255")?;
            }
            "--force-link-speed-ext" => {
                a.force_link.1 = number(&flag, &value()?, "0..255")?;
            }
            "--force-link-width" => {
                a.force_link.2 = number(&flag, &value()?, "0..255")?;
            }
            "-h" | "--help" => return Err(usage("quickstart: bring a simulated fabric up")),
            other => return Err(usage(&format!("unknown option {other:?}"))),
        }
    }
    Ok(a)
}

/// `v` as a number of type `T`, or a usage error saying what `flag` wants.
fn number<T: std::str::FromStr>(flag: &str, v: &str, wants: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| usage(&format!("{flag} wants {wants}")))
}

/// The process's resident set now and its peak so far (Linux), in MiB, to see which
/// phase costs the memory.
fn rss_mib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib / 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// ", RSS now/peak" for a progress line, or nothing where the OS does not say.
fn rss_note() -> String {
    rss_mib().map_or(String::new(), |(now, peak)| {
        format!(", RSS {now} MiB, peak {peak} MiB")
    })
}

/// Runs the SM until `stop` says so or `until` seconds of virtual time. With a meter
/// (`--offload`), jobs run on this thread between two calls into the engine (what a
/// worker thread does beside it) and every call into the engine is timed.
fn run_sm(
    sm: &mut SubnetManager,
    port: &mut impl Transport,
    until: u64,
    meter: Option<&mut BusyMeter>,
    mut stop: impl FnMut(&SmEvent) -> bool,
) -> Result<(), String> {
    let until = Instant::from_secs(until);
    let Some(meter) = meter else {
        return driver::run(sm, port, until, stop).map_err(|e| e.to_string());
    };
    let mut engine = Metered::new(sm, meter);
    ibsm::transport::drive(
        &mut engine,
        port,
        &mut JobRunner::inline(),
        ibsm::transport::Stop::at(until),
        |ev| {
            if stop(&ev) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// The longest calls into the engine: how long it would keep a real port unread.
fn print_busy(m: &BusyMeter) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if let Some((kind, d)) = m.longest() {
        eprintln!("longest engine call: {:.1} ms ({kind})", ms(d));
    }
    for k in Call::ALL {
        if m.count(k) > 0 {
            eprintln!(
                "  {k:<10} {:>9} calls, {:>9.1} ms in all, longest {:>7.2} ms",
                m.count(k),
                ms(m.total(k)),
                ms(m.longest_of(k))
            );
        }
    }
    for q in [0.5, 0.99, 0.9999] {
        if let Some(b) = m.quantile_bound(q) {
            eprintln!(
                "  {:>6.2} % of calls took at most {:.3} ms",
                q * 100.0,
                ms(b)
            );
        }
    }
}

fn build_fabric(a: &Args) -> Result<(Fabric, String), String> {
    if let Some(path) = &a.topology {
        let parsed = ibnet::read_file(path).map_err(|e| e.to_string())?;
        for n in &parsed.notes {
            eprintln!("note: {n:?}");
        }
        return Ok((parsed.fabric, path.clone()));
    }
    if let Some((dims, cas)) = &a.torus {
        let p = generate::Grid {
            dims: dims.clone(),
            torus: true,
            cas_per_switch: *cas,
        };
        let f = generate::grid(&p).map_err(|e| e.to_string())?;
        return Ok((f, format!("torus {dims:?} x {cas} CAs")));
    }
    let (levels, radix) = a.fat_tree;
    let f = generate::fat_tree(radix, levels).map_err(|e| e.to_string())?;
    Ok((f, format!("{levels}-level radix-{radix} fat tree")))
}

fn run(a: &Args) -> Result<bool, String> {
    let wall = std::time::Instant::now();
    let (fabric, name) = build_fabric(a)?;
    let cas = fabric.cas().count();
    eprintln!(
        "{name}: {} switches, {cas} CAs, {} links",
        fabric.switch_count(),
        fabric.link_count()
    );
    let drop_ppm = (a.drop * 1e6).round() as u32;
    let sim_cfg = SimConfig {
        seed: a.seed,
        drop_ppm,
        link_speed: a.link_speed,
        ..SimConfig::default()
    };
    let t = std::time::Instant::now();
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(&fabric, sim_cfg).map_err(|e| e.to_string())?;
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let (_, ca) = fabric
        .cas()
        .next()
        .ok_or("the fabric has no CA for the SM")?;
    let node = sim
        .node_by_guid(ca.guid().0)
        .ok_or("SM node missing in the simulator")?;
    // The simulator holds the fabric now, and the SM builds its own model: a third copy
    // kept to the end would be 200 MB of the 45,056-CA tree's peak.
    drop(fabric);
    eprintln!("  simulator built{}", rss_note());
    let mut port = sim.attach_sm(node, 1).map_err(|e| e.to_string())?;
    port.set_is_sm(true).map_err(|e| e.to_string())?;
    let mut cfg = SmConfig::default();
    cfg.routing = a.routing.clone();
    cfg.lmc = a.lmc;
    cfg.sa = a.sa;
    cfg.routing_inputs = a.inputs.clone();
    (
        cfg.force_link_speed,
        cfg.force_link_speed_ext,
        cfg.force_link_width,
    ) = a.force_link;
    if let Some(path) = &a.topology_ref {
        let plan = ibnet::read_file(path).map_err(|e| format!("--topology-ref {path}: {e}"))?;
        cfg.topology_ref = Some(ibsm::manager::topo_ref::TopologyRef::new(
            plan.fabric,
            ibsm::manager::topo_ref::TopoPolicy::Report,
            path.clone(),
        ));
    }
    // Without a file, OpenSM's default policy (SmConfig's default) stays in force.
    if let Some(p) = &a.partitions {
        cfg.partitions = Some(p.clone());
    }
    // Threads only share the routing work: the tables are the same for any count.
    cfg.routing_threads = match a.routing_threads {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    };
    let mut sm = SubnetManager::new(cfg, port.local_port()).map_err(|e| e.to_string())?;
    sm.start(port.now()).map_err(|e| e.to_string())?;
    let t = std::time::Instant::now();
    let mut stats: Option<SweepStats> = None;
    let mut fell_back: Vec<String> = Vec::new();
    // The SM could not program the subnet (no engine of the list routes it, the LIDs do
    // not fit): nothing the simulated fabric does later changes that, so stop at once.
    let mut failed: Option<String> = None;
    // Heavy sweeps that lost SMPs before the one that brought the subnet up.
    let mut incomplete: Vec<String> = Vec::new();
    let mut meter = BusyMeter::default();
    sm.set_job_offload(a.offload);
    run_sm(
        &mut sm,
        &mut port,
        a.until,
        a.offload.then_some(&mut meter),
        |ev| {
            match ev {
                SmEvent::SweepIncomplete {
                    sweep,
                    lost,
                    by_attribute,
                    missing,
                } => {
                    let attrs: Vec<String> = by_attribute
                        .iter()
                        .map(|(a, n)| format!("{a} {n}"))
                        .collect();
                    let first = missing.first().map_or(String::new(), |m| {
                        format!(
                            "; e.g. {} {} for node {:#018x} port {} via {:?}",
                            m.attribute,
                            if m.set { "Set" } else { "Get" },
                            m.node,
                            m.port,
                            m.path
                        )
                    });
                    let line = format!(
                        "heavy sweep {sweep} incomplete: {lost} SMPs lost ({}){first}",
                        attrs.join(", ")
                    );
                    eprintln!("  {line}: sweeping again");
                    incomplete.push(line);
                }
                SmEvent::SubnetUp { stats: s } => {
                    stats = Some(s.clone());
                    return true;
                }
                SmEvent::PhaseDone {
                    phase, nodes, smps, ..
                } => {
                    eprintln!(
                        "  {phase} done: {nodes} nodes, {smps} SMPs so far ({:.0} ms wall{})",
                        t.elapsed().as_secs_f64() * 1e3,
                        rss_note()
                    );
                }
                SmEvent::RoutingFailed { error } => {
                    failed = Some(error.to_string());
                    return true;
                }
                SmEvent::RoutingFallback { failed, .. } => {
                    fell_back = failed
                        .iter()
                        .map(|(k, e)| format!("{} failed: {e}", k.name()))
                        .collect();
                }
                SmEvent::PartitionWarning { warning } => {
                    eprintln!("warning: partitions: {warning}");
                }
                SmEvent::TopologyChanged {
                    appeared, total, ..
                } => {
                    eprintln!("  reference topology: {total} differences");
                    for d in appeared.iter().take(5) {
                        eprintln!("    {d}");
                    }
                }
                _ => {}
            }
            false
        },
    )
    .map_err(|e| e.to_string())?;
    let sm_wall_ms = t.elapsed().as_secs_f64() * 1e3;
    // Before verification and the route metrics, which are the example's, not the SM's.
    let sm_peak_rss_mib = rss_mib().map(|(_, peak)| peak);
    if a.offload {
        print_busy(&meter);
    }
    for i in 1..=a.rebalances {
        let mut meter = BusyMeter::default();
        sm.request_rebalance(port.now());
        let t = std::time::Instant::now();
        let mut up = None;
        let until = port.now().as_nanos() / 1_000_000_000 + a.until;
        run_sm(
            &mut sm,
            &mut port,
            until,
            a.offload.then_some(&mut meter),
            |ev| {
                if let SmEvent::SubnetUp { stats } = ev {
                    up = Some(stats.routing_wall);
                }
                up.is_some()
            },
        )?;
        let Some(routing) = up else {
            return Err(format!("rebalance {i}: the subnet did not come up again"));
        };
        eprintln!(
            "rebalance {i}: SUBNET UP in {:.0} ms wall (routing {:.0} ms)",
            t.elapsed().as_secs_f64() * 1e3,
            routing.as_secs_f64() * 1e3
        );
        if a.offload {
            print_busy(&meter);
        }
    }
    if let Some(why) = failed {
        return Err(format!("the subnet cannot come up: {why}"));
    }
    let stats = stats.ok_or_else(|| {
        format!(
            "the subnet did not come up within {} s of virtual time",
            a.until
        )
    })?;
    let virtual_ms = port.now().as_nanos() as f64 / 1e6;

    let t = std::time::Instant::now();
    let mut report = if a.no_verify {
        VerifyReport::default()
    } else {
        sim.verify()
    };
    let mut verify_ms = t.elapsed().as_secs_f64() * 1e3;
    // Forced link speeds or widths retrain the links whose trained values they change
    // (ibsm-sim trains links as hardware does): those come back at Init after the first
    // SUBNET UP, and the sweeps their traps start activate them. Only then is the subnet
    // as the options make it.
    let d = SmConfig::default();
    let forced = a.force_link
        != (
            d.force_link_speed,
            d.force_link_speed_ext,
            d.force_link_width,
        );
    let mut settle = 0;
    while forced && !a.no_verify && !report.is_clean() && settle < 8 {
        let mut up = false;
        driver::run(&mut sm, &mut port, Instant::from_secs(a.until), |ev| {
            up = matches!(ev, SmEvent::SubnetUp { .. });
            up
        })
        .map_err(|e| e.to_string())?;
        if !up {
            break;
        }
        settle += 1;
        let t = std::time::Instant::now();
        report = sim.verify();
        verify_ms = t.elapsed().as_secs_f64() * 1e3;
    }
    if settle > 0 {
        eprintln!("  retrained links settled after {settle} more SUBNET UP");
    }
    // Not verified counts as clean for the exit status: nothing was found wrong.
    let verified = a.no_verify || report.is_clean();

    // Route quality on what the SM itself built.
    let max_link_load = match (sm.fabric(), sm.routes()) {
        (Some(f), Some(r)) => {
            let csr = Csr::new(f);
            let lids = LidAssignment::from_snapshot(&csr);
            metrics::all_to_all(&csr, &lids, r)
                .map(|m| (m.max_load, m.imbalance()))
                .ok()
        }
        _ => None,
    };
    let total_wall_ms = wall.elapsed().as_secs_f64() * 1e3;

    let sweeps = incomplete.len() + 1;
    eprintln!(
        "SUBNET UP: {name} (after {sweeps} heavy sweep{})",
        if sweeps == 1 { "" } else { "s" }
    );
    for l in &incomplete {
        eprintln!("  {l}");
    }
    eprintln!(
        "  nodes {} (switches {}), links {}, LIDs {}, routing {} of {} ({:.1} ms)",
        stats.nodes,
        stats.switches,
        stats.links,
        stats.lids,
        stats.routing_engine,
        a.routing,
        stats.routing_wall.as_secs_f64() * 1e3
    );
    if let Some(f) = sm.fabric() {
        // Link speeds as the SM read them (extended speeds included), per cable end.
        let mut speeds = std::collections::BTreeMap::new();
        for (id, n) in f.nodes() {
            for (p, port) in n.ports() {
                if p != 0 && f.port_peer(id, p).is_some() {
                    *speeds
                        .entry((port.width.lanes(), port.speed.name()))
                        .or_insert(0usize) += 1;
                }
            }
        }
        let text: Vec<String> = speeds
            .iter()
            .map(|((w, s), n)| format!("{w}x {s} {n}"))
            .collect();
        eprintln!("  link speeds (ports): {}", text.join(", "));
    }
    for why in &fell_back {
        eprintln!("  routing fell back: {why}");
    }
    eprintln!(
        "  SMPs {} (retries {}, timeouts {}), window up to {}, LFT blocks {}, PortInfo sets {}, P_Key blocks {}",
        stats.smps,
        stats.retries,
        stats.timeouts,
        stats.max_window,
        stats.lft_blocks,
        stats.port_sets,
        stats.pkey_blocks
    );
    let by_attr: Vec<String> = stats
        .by_attribute
        .iter()
        .map(|(a, n)| format!("{a} {n}"))
        .collect();
    eprintln!("  by attribute: {}", by_attr.join(", "));
    if sweeps > 1 {
        eprintln!(
            "  SMPs of all {sweeps} sweeps: {} (the SM's total)",
            sm.smps_sent()
        );
    }
    let phases: Vec<String> = stats
        .phases
        .iter()
        .map(|(p, d)| format!("{p} {:.2} ms", d.as_secs_f64() * 1e3))
        .chain([format!("total {:.2} ms", stats.total.as_secs_f64() * 1e3)])
        .collect();
    eprintln!("  virtual time per phase: {}", phases.join(", "));
    eprintln!(
        "  wall: build {build_ms:.0} ms, SM {sm_wall_ms:.0} ms, verify {verify_ms:.0} ms, total {total_wall_ms:.0} ms"
    );
    if let Some(m) = sm_peak_rss_mib {
        eprintln!("  peak RSS up to SUBNET UP: {m} MiB (simulator and SM together)");
    }
    if let Some((max, imb)) = max_link_load {
        eprintln!("  all-to-all max link load {max} (max/mean {imb:.3})");
    }
    if a.no_verify {
        eprintln!("  verified: skipped (--no-verify)");
    } else {
        eprintln!(
            "  verified: {} ({} CA->LID walks, {} problems)",
            if verified { "yes" } else { "NO" },
            report.paths,
            report.paths - report.ok
        );
    }
    if !verified {
        eprintln!("  {report:?}");
    }
    if a.json {
        let summary = Summary {
            topology: &name,
            switches: stats.switches,
            cas,
            links: stats.links,
            lids: stats.lids,
            smps: stats.smps,
            retries: stats.retries,
            smps_by_attribute: stats.by_attribute.iter().copied().collect(),
            wall_ms: round(total_wall_ms, 10.0),
            sm_wall_ms: round(sm_wall_ms, 10.0),
            sm_peak_rss_mib,
            virtual_ms: round(virtual_ms, 1000.0),
            routing_ms: round(stats.routing_wall.as_secs_f64() * 1e3, 10.0),
            routing: &stats.routing_engine,
            verified,
            max_link_load: max_link_load.map(|(m, _)| m),
            sweeps,
            smps_total: sm.smps_sent(),
        };
        println!(
            "{}",
            serde_json::to_string(&summary).map_err(|e| e.to_string())?
        );
    }
    Ok(verified)
}

/// The `--json` line.
#[derive(serde::Serialize)]
struct Summary<'a> {
    topology: &'a str,
    switches: usize,
    cas: usize,
    links: usize,
    lids: usize,
    smps: u64,
    retries: u64,
    smps_by_attribute: std::collections::BTreeMap<&'static str, u64>,
    wall_ms: f64,
    sm_wall_ms: f64,
    /// Peak resident set (simulator and SM) up to SUBNET UP, where the OS says.
    sm_peak_rss_mib: Option<u64>,
    virtual_ms: f64,
    routing_ms: f64,
    routing: &'a str,
    verified: bool,
    max_link_load: Option<u64>,
    sweeps: usize,
    smps_total: u64,
}

/// `v` rounded to `1 / per` (the precision the summary shows).
fn round(v: f64, per: f64) -> f64 {
    (v * per).round() / per
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
