//! `ibsmd`: the ibsm Subnet Manager as a daemon on a real (or ibsim-simulated) HCA port.
//!
//! It opens `/dev/infiniband/umadN` through `ibsm-umad`, sets IsSM, takes part in the
//! SM election (OpenSM-compatible SMInfo), and when Master discovers, configures and
//! keeps sweeping the subnet. Under ibsim run it with
//! `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so`.
//!
//! ```text
//! --ca NAME --port N       port to run on (default: the first InfiniBand port whose link is up)
//! --priority 0..15         SM priority (default 0)
//! --sm-key 0xKEY           SM_Key (default 0x1)
//! --routing ENGINE         minhop | updn | dnup | ftree | dor | lash | dfsssp ...
//! --lmc 0..7               LID mask control
//! --m-key 0xKEY            one M_Key for every port (default: leave M_Keys alone)
//! --m-key-protect 0..3     M_KeyProtectBits written with the key
//! --m-key-lease SECS       M_KeyLeasePeriod (0 = never expires)
//! --sweep-interval SECS    light sweep period (0 = none; default 10)
//! --polling-timeout MS     standby: time between polls of the master (default 10000)
//! --polling-retries N      standby: failed polls before the master is dead (default 4)
//! --no-reroute-on-loss    after a lost cable or node, recompute every route instead
//!                          of repairing only the broken ones (OpenSM's behaviour);
//!                          repaired routes stay until growth or a SIGHUP rebalance
//! --rebalance-after SECS   recompute repaired routes once no topology change has been
//!                          seen for SECS (default: never on its own)
//! --guid2lid FILE          keep LIDs across restarts (OpenSM's guid2lid format)
//! --max-wire-smps N        most SMPs in flight (default 256; 128 under ibsim, whose
//!                          preload can deadlock on long send bursts)
//! --once                   sweep once, print the summary, exit 0 on SUBNET UP
//! --timeout SECS           give up (--once: exit 1) or stop (daemon: exit 0) after SECS;
//!                          default 60 with --once, none otherwise
//! --json                   one JSON object on the last stdout line
//! --sa                     serve Subnet Administration (class 0x03 agent, kernel RMPP)
//! --partitions FILE        partition policy in OpenSM's partitions.conf syntax: every
//!                          port's P_Key table is programmed from it and switch ports
//!                          cabled to CAs enforce it (mistakes: line and column)
//! --part-enforce MODE      both | in | out | off: directions switch ports cabled to CAs
//!                          filter P_Keys in (OpenSM part_enforce; default both)
//! --allow-both-pkeys        a `both` member holds the full and the limited P_Key
//!                          (OpenSM allow_both_pkeys; default: full only)
//! -v                       event log on stderr
//! ```
//!
//! `SUBNET UP` and role changes (`MASTER`, `STANDBY`, ...) always go to stderr. SIGINT
//! and SIGTERM stop it cleanly (exit 0). SIGHUP asks a Master for a heavy sweep that
//! recomputes every route from scratch (a rebalance), as OpenSM resweeps on SIGHUP, and
//! re-reads the `--partitions` file as OpenSM re-reads `partitions.conf` (a file that no
//! longer parses is reported and the policy in force stays): after a lost cable or
//! node only the broken routes are repaired (unless `--no-reroute-on-loss`), and those
//! repaired tables stay until the fabric grows back, a SIGHUP rebalances them, or
//! `--rebalance-after` finds the fabric quiet that long.
//! Errors are one line with a non-zero exit.

use std::time::{Duration, Instant as WallInstant};

use ibsm::manager::partition::{Enforcement, PartitionConfig};
use ibsm::manager::{
    FileLidStore, MKeyMode, Role, SmConfig, SmEvent, SubnetManager, SweepStats, driver,
};
use ibsm::routing::EngineKind;
use ibsm::transport::Transport;
use ibsm::umad::{HangupSignal, OpenOptions, Selector, StopSignals, UmadTransport};

#[derive(Debug)]
struct Args {
    ca: Option<String>,
    port: Option<u8>,
    priority: u8,
    sm_key: u64,
    routing: EngineKind,
    lmc: u8,
    m_key: Option<u64>,
    m_key_protect: u8,
    m_key_lease: u16,
    sweep_interval: u64,
    polling_timeout_ms: u64,
    polling_retries: u32,
    max_wire_smps: Option<usize>,
    guid2lid: Option<String>,
    once: bool,
    timeout: Option<u64>,
    json: bool,
    verbose: bool,
    sa: bool,
    reroute_on_loss: bool,
    partitions: Option<PartitionConfig>,
    partitions_path: Option<String>,
    part_enforce: Option<Enforcement>,
    allow_both_pkeys: bool,
    rebalance_after: Option<u64>,
}

const USAGE: &str = "usage: ibsmd [--ca NAME] [--port N] [--priority 0..15] [--sm-key 0xKEY] \
[--routing ENGINE] [--lmc 0..7] [--m-key 0xKEY] [--m-key-protect 0..3] [--m-key-lease SECS] \
[--sweep-interval SECS] [--polling-timeout MS] [--polling-retries N] [--max-wire-smps N] \
[--no-reroute-on-loss] [--rebalance-after SECS] [--guid2lid FILE] [--once] [--timeout SECS] [--json] [--sa] [--partitions FILE] [--part-enforce both|in|out|off] [--allow-both-pkeys] [-v]\n\
signals: SIGINT/SIGTERM stop; SIGHUP makes a Master recompute every route (rebalance), as \
OpenSM resweeps on SIGHUP";

fn parse_u64(text: &str, flag: &str) -> Result<u64, String> {
    let t = text.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|_| format!("{flag}: {text:?} is not a number"))
}

fn parse_ranged<T: TryFrom<u64>>(text: &str, flag: &str, max: u64) -> Result<T, String> {
    let v = parse_u64(text, flag)?;
    if v > max {
        return Err(format!("{flag}: {v} is above {max}"));
    }
    T::try_from(v).map_err(|_| format!("{flag}: {v} out of range"))
}

fn parse_args(argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        ca: None,
        port: None,
        priority: 0,
        sm_key: 1,
        routing: EngineKind::MinHop,
        lmc: 0,
        m_key: None,
        m_key_protect: 0,
        m_key_lease: 0,
        sweep_interval: 10,
        polling_timeout_ms: 10_000,
        polling_retries: 4,
        max_wire_smps: None,
        guid2lid: None,
        once: false,
        timeout: None,
        json: false,
        sa: false,
        reroute_on_loss: true,
        rebalance_after: None,
        verbose: false,
        partitions: None,
        partitions_path: None,
        part_enforce: None,
        allow_both_pkeys: false,
    };
    let mut it = argv;
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--ca" => a.ca = Some(value()?),
            "--port" => a.port = Some(parse_ranged(&value()?, "--port", 254)?),
            "--priority" => a.priority = parse_ranged(&value()?, "--priority", 15)?,
            "--sm-key" => a.sm_key = parse_u64(&value()?, "--sm-key")?,
            "--routing" => {
                let v = value()?;
                a.routing = EngineKind::from_name(&v).ok_or_else(|| {
                    let names: Vec<&str> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                    format!(
                        "--routing: unknown engine {v:?} (one of {})",
                        names.join(", ")
                    )
                })?;
            }
            "--lmc" => a.lmc = parse_ranged(&value()?, "--lmc", 7)?,
            "--m-key" => a.m_key = Some(parse_u64(&value()?, "--m-key")?),
            "--m-key-protect" => a.m_key_protect = parse_ranged(&value()?, "--m-key-protect", 3)?,
            "--m-key-lease" => {
                a.m_key_lease = parse_ranged(&value()?, "--m-key-lease", u64::from(u16::MAX))?;
            }
            "--sweep-interval" => a.sweep_interval = parse_u64(&value()?, "--sweep-interval")?,
            "--polling-timeout" => {
                a.polling_timeout_ms = parse_u64(&value()?, "--polling-timeout")?;
                if a.polling_timeout_ms == 0 {
                    return Err("--polling-timeout: must be at least 1 ms".into());
                }
            }
            "--polling-retries" => {
                a.polling_retries = parse_ranged(&value()?, "--polling-retries", 1000)?;
            }
            "--max-wire-smps" => {
                let n: usize = parse_ranged(&value()?, "--max-wire-smps", 4096)?;
                if n == 0 {
                    return Err("--max-wire-smps: must be at least 1".into());
                }
                a.max_wire_smps = Some(n);
            }
            "--guid2lid" => a.guid2lid = Some(value()?),
            "--timeout" => a.timeout = Some(parse_u64(&value()?, "--timeout")?),
            "--once" => a.once = true,
            "--json" => a.json = true,
            "--sa" => a.sa = true,
            "--partitions" => {
                let path = value()?;
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("--partitions {path}: {e}"))?;
                a.partitions = Some(
                    PartitionConfig::parse(&text)
                        .map_err(|e| format!("--partitions {path}: {e}"))?,
                );
                a.partitions_path = Some(path);
            }
            "--part-enforce" => {
                let v = value()?;
                a.part_enforce = Some(match v.as_str() {
                    "both" => Enforcement::Both,
                    "in" => Enforcement::In,
                    "out" => Enforcement::Out,
                    "off" => Enforcement::Off,
                    _ => return Err(format!("--part-enforce: {v:?} is not both, in, out or off")),
                });
            }
            "--allow-both-pkeys" => a.allow_both_pkeys = true,
            "--no-reroute-on-loss" => a.reroute_on_loss = false,
            "--rebalance-after" => {
                let secs = parse_u64(&value()?, "--rebalance-after")?;
                if secs == 0 {
                    return Err("--rebalance-after: must be at least 1 s".into());
                }
                a.rebalance_after = Some(secs);
            }
            "-v" | "--verbose" => a.verbose = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown option {other:?}\n{USAGE}")),
        }
    }
    if a.part_enforce.is_some() && a.partitions.is_none() {
        return Err("--part-enforce needs --partitions".into());
    }
    if a.allow_both_pkeys && a.partitions.is_none() {
        return Err("--allow-both-pkeys needs --partitions".into());
    }
    if let (Some(p), Some(e)) = (a.partitions.as_mut(), a.part_enforce) {
        p.enforcement = e;
    }
    if let Some(p) = a.partitions.as_mut() {
        p.allow_both_pkeys = a.allow_both_pkeys;
    }
    if a.m_key.is_none() && (a.m_key_protect != 0 || a.m_key_lease != 0) {
        return Err("--m-key-protect and --m-key-lease need --m-key".into());
    }
    Ok(a)
}

/// The manager's settings from the flags; `under_ibsim` lowers the default SMP window.
fn config(a: &Args, under_ibsim: bool) -> SmConfig {
    let mut cfg = SmConfig::default();
    // The umad2sim preload holds its global lock while a send blocks on ibsim's full
    // queue, and its reader thread needs that lock to take in answers: a burst of 512
    // sends deadlocked both sides every time, 256 never did in ~280 runs. Half of that
    // leaves a margin for machines with smaller socket buffers at little cost (ibsim
    // itself answers one MAD at a time).
    let limit = a.max_wire_smps.unwrap_or(if under_ibsim {
        128
    } else {
        cfg.max_wire_smps_limit
    });
    cfg.max_wire_smps_limit = limit;
    cfg.max_wire_smps = cfg.max_wire_smps.min(limit);
    cfg.priority = a.priority;
    cfg.sm_key = a.sm_key;
    cfg.routing = a.routing.into();
    cfg.reroute_on_loss = a.reroute_on_loss;
    cfg.rebalance_after = a.rebalance_after.map(Duration::from_secs);
    cfg.lmc = a.lmc;
    cfg.routing_threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    cfg.m_key = a.m_key.map_or(MKeyMode::Off, MKeyMode::Single);
    cfg.m_key_protect = a.m_key_protect;
    cfg.m_key_lease = a.m_key_lease;
    cfg.sweep_interval = Duration::from_secs(a.sweep_interval);
    cfg.polling_timeout = Duration::from_millis(a.polling_timeout_ms);
    cfg.polling_retries = a.polling_retries;
    // The SA answers over the port's class 0x03 agent; the kernel runs RMPP.
    cfg.sa = a.sa;
    cfg.sa_rmpp = ibsm::manager::sa::RmppMode::Kernel;
    cfg.partitions = a.partitions.clone();
    cfg
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Discovering => "DISCOVERING",
        Role::Standby => "STANDBY",
        Role::Master => "MASTER",
        Role::NotActive => "NOT ACTIVE",
    }
}

/// What the run saw, for the summary.
#[derive(Default)]
struct Outcome {
    first_up: Option<(f64, SweepStats)>,
    last_up: Option<SweepStats>,
    heavy_sweeps: u64,
    light_sweeps: u64,
    traps: u64,
    role_changes: Vec<(f64, &'static str)>,
    locked_ports: u64,
    unauthenticated: u64,
    routing_failures: u64,
    signal: Option<i32>,
}

fn log_event(ev: &SmEvent, ms: f64, verbose: bool, out: &mut Outcome) {
    match ev {
        SmEvent::SubnetUp { stats } => {
            if stats.heavy {
                out.heavy_sweeps += 1;
            }
            eprintln!(
                "SUBNET UP ({ms:.0} ms): {} nodes ({} switches), {} LIDs, {} SMPs, routing {} ({}), LFT blocks {} ({} entries changed)",
                stats.nodes,
                stats.switches,
                stats.lids,
                stats.smps,
                stats.routing_engine,
                if stats.rerouted {
                    "re-routed after a loss"
                } else {
                    "computed"
                },
                stats.lft_blocks,
                stats.lft_entries
            );
            if out.first_up.is_none() {
                out.first_up = Some((ms, stats.clone()));
            }
            out.last_up = Some(stats.clone());
        }
        SmEvent::RoleChanged { role } => {
            let name = role_name(*role);
            eprintln!("{name} ({ms:.0} ms)");
            out.role_changes.push((ms, name));
        }
        SmEvent::LightSweepDone { stats } => {
            out.light_sweeps += 1;
            if verbose {
                eprintln!(
                    "{ms:>9.0} ms light sweep: nothing to do ({} SMPs)",
                    stats.smps
                );
            }
        }
        SmEvent::Trap { number, issuer_lid } => {
            out.traps += 1;
            if verbose {
                eprintln!("{ms:>9.0} ms trap {number} from LID {issuer_lid:#x}");
            }
        }
        SmEvent::PortLocked { guid } => {
            out.locked_ports += 1;
            eprintln!("warning: port {guid:#018x} ignores our M_Key; not configuring it");
        }
        SmEvent::UnauthenticatedSm { guid } => {
            out.unauthenticated += 1;
            eprintln!("warning: SM {guid:#018x} has a different SM_Key; never handing over");
        }
        SmEvent::PartitionWarning { warning } => {
            eprintln!("warning: partitions: {warning}");
        }
        SmEvent::RoutingFailed { error } => {
            out.routing_failures += 1;
            eprintln!("routing failed: {error}");
        }
        other => {
            if verbose {
                eprintln!("{ms:>9.0} ms {other:?}");
            }
        }
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn run(a: &Args) -> Result<bool, String> {
    let wall = WallInstant::now();
    let signals = StopSignals::install().map_err(|e| e.to_string())?;
    let hangup = HangupSignal::install().map_err(|e| e.to_string())?;
    let opts = OpenOptions {
        selector: Selector {
            ca: a.ca.clone(),
            port: a.port,
            guid: None,
        },
        sa_agent: a.sa,
        ..OpenOptions::default()
    };
    let mut t = UmadTransport::open(&opts).map_err(|e| e.to_string())?;
    t.set_is_sm(true).map_err(|e| e.to_string())?;
    let local = t.local_port();
    let desc = t.port().desc().clone();
    eprintln!(
        "ibsmd on {} port {} (umad{}, port GUID {:#018x}, priority {}, routing {}{})",
        desc.ca,
        desc.port,
        desc.umad_index,
        local.port_guid,
        a.priority,
        a.routing.name(),
        if t.port().under_ibsim() {
            ", under ibsim"
        } else {
            ""
        }
    );
    let cfg = config(a, t.port().under_ibsim());
    let mut sm = match &a.guid2lid {
        Some(path) => SubnetManager::with_store(cfg, local, Box::new(FileLidStore::new(path))),
        None => SubnetManager::new(cfg, local),
    }
    .map_err(|e| e.to_string())?;
    sm.start(t.now()).map_err(|e| e.to_string())?;
    let timeout = a.timeout.or(a.once.then_some(60)).filter(|s| *s > 0);
    let end = timeout.map(|s| wall + Duration::from_secs(s));
    let mut out = Outcome::default();
    let verbose = a.verbose;
    let once = a.once;
    // Run in slices so a stop signal or the deadline is noticed within 200 ms.
    loop {
        if let Some(sig) = signals.caught() {
            eprintln!("{}: stopping", StopSignals::name(sig));
            out.signal = Some(sig);
            break;
        }
        if hangup.take() {
            if let Some(path) = &a.partitions_path {
                let read = std::fs::read_to_string(path)
                    .map_err(|e| e.to_string())
                    .and_then(|text| PartitionConfig::parse(&text).map_err(|e| e.to_string()));
                match read {
                    Ok(mut p) => {
                        p.enforcement = a.part_enforce.unwrap_or_default();
                        p.allow_both_pkeys = a.allow_both_pkeys;
                        eprintln!("SIGHUP: partitions re-read from {path}");
                        sm.set_partitions(t.now(), Some(p));
                    }
                    Err(e) => {
                        eprintln!("SIGHUP: --partitions {path}: {e}; the policy in force stays");
                    }
                }
            }
            if sm.role() == Role::Master {
                eprintln!("SIGHUP: rebalancing (every route recomputed at a heavy sweep)");
                sm.request_rebalance(t.now());
            } else {
                eprintln!(
                    "SIGHUP: not Master ({}), nothing to rebalance",
                    role_name(sm.role())
                );
            }
        }
        if end.is_some_and(|e| WallInstant::now() >= e) {
            if once {
                eprintln!(
                    "error: subnet not up within {} s (role {})",
                    timeout.unwrap_or(0),
                    role_name(sm.role())
                );
            }
            break;
        }
        let until = t.now() + Duration::from_millis(200);
        let mut done = false;
        driver::run(&mut sm, &mut t, until, |ev| {
            let ms = wall.elapsed().as_secs_f64() * 1e3;
            log_event(ev, ms, verbose, &mut out);
            done = once && matches!(ev, SmEvent::SubnetUp { .. });
            done
        })
        .map_err(|e| e.to_string())?;
        if done {
            break;
        }
    }
    let total_ms = wall.elapsed().as_secs_f64() * 1e3;
    let up = out.first_up.is_some();
    if once && up {
        // Absorb what is still on its way (traps of ports going Active, late answers)
        // before closing: the umad2sim preload crashes now and then when a MAD arrives
        // while it tears down.
        let until = t.now() + Duration::from_millis(100);
        driver::run(&mut sm, &mut t, until, |_| false).map_err(|e| e.to_string())?;
    }
    // Dropping the port (here or on an error return) is safe under ibsim too: ibsm-umad
    // leaves the umad fd open there, for the preload crashes when it is closed while
    // MADs are still arriving (see `UmadPort`'s Drop).
    drop(t);
    if let Some(sa) = sm.sa() {
        eprintln!("SA: {:?}", sa.counters());
    }
    if let Some((ms, s)) = &out.first_up {
        let by_attr: Vec<String> = s
            .by_attribute
            .iter()
            .map(|(a, n)| format!("{a} {n}"))
            .collect();
        eprintln!(
            "first sweep: {ms:.0} ms to SUBNET UP, {} nodes ({} switches), {} links, {} LIDs",
            s.nodes, s.switches, s.links, s.lids
        );
        eprintln!(
            "  SMPs {} (retries {}, timeouts {}), window up to {}, LFT blocks {}, PortInfo sets {}, P_Key blocks {}, routing {} {:.1} ms",
            s.smps,
            s.retries,
            s.timeouts,
            s.max_window,
            s.lft_blocks,
            s.port_sets,
            s.pkey_blocks,
            s.routing_engine,
            s.routing_wall.as_secs_f64() * 1e3
        );
        eprintln!("  by attribute: {}", by_attr.join(", "));
    }
    if a.json {
        let first = out.first_up.as_ref();
        let st = first.map(|(_, s)| s);
        let num = |f: &dyn Fn(&SweepStats) -> String| st.map_or("null".to_owned(), f);
        let roles: Vec<String> = out
            .role_changes
            .iter()
            .map(|(ms, r)| format!("[{ms:.0},{}]", json_str(r)))
            .collect();
        println!(
            "{{\"ca\":{},\"port\":{},\"port_guid\":\"{:#018x}\",\"role\":{},\"subnet_up\":{up},\"up_ms\":{},\"smps\":{},\"retries\":{},\"timeouts\":{},\"nodes\":{},\"switches\":{},\"links\":{},\"lids\":{},\"lft_blocks\":{},\"pkey_blocks\":{},\"routing\":{},\"heavy_sweeps\":{},\"light_sweeps\":{},\"traps\":{},\"role_changes\":[{}],\"locked_ports\":{},\"unauthenticated_sms\":{},\"routing_failures\":{},\"sm_lid\":{},\"signal\":{},\"wall_ms\":{total_ms:.1}}}",
            json_str(&desc.ca),
            desc.port,
            local.port_guid,
            json_str(role_name(sm.role())),
            first.map_or("null".to_owned(), |(ms, _)| format!("{ms:.1}")),
            num(&|s| s.smps.to_string()),
            num(&|s| s.retries.to_string()),
            num(&|s| s.timeouts.to_string()),
            num(&|s| s.nodes.to_string()),
            num(&|s| s.switches.to_string()),
            num(&|s| s.links.to_string()),
            num(&|s| s.lids.to_string()),
            num(&|s| s.lft_blocks.to_string()),
            num(&|s| s.pkey_blocks.to_string()),
            num(&|s| json_str(&s.routing_engine)),
            out.heavy_sweeps,
            out.light_sweeps,
            out.traps,
            roles.join(","),
            out.locked_ports,
            out.unauthenticated,
            out.routing_failures,
            sm.sm_lid(),
            out.signal
                .map_or("null".to_owned(), |s| json_str(StopSignals::name(s))),
        );
    }
    Ok(!once || up)
}

fn main() {
    let code = match parse_args(std::env::args().skip(1)) {
        Err(e) => {
            eprintln!("ibsmd: {e}");
            2
        }
        Ok(args) => match run(&args) {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(e) => {
                eprintln!("ibsmd: error: {}", e.replace('\n', " "));
                1
            }
        },
    };
    // Not a plain return: under ibsim the preload's exit handler can hang.
    ibsm::umad::signal::exit_process(code, Duration::from_secs(2))
}
