//! `ibsm-perfquery`: performance counters with `ibsm-query`, printed as `perfquery`
//! prints them (same headers, field names and layout), for one port or the whole
//! fabric in one run.
//!
//! ```text
//! ibsm-perfquery [-x] [-r | -R] LID [PORT]     one port (PORT 1 by default), as perfquery
//! ibsm-perfquery [-x] --all                    every port of every node discovered
//! ```
//!
//! `-x` reads PortCountersExtended, `-r` resets the counters after reading them, `-R`
//! only resets. `--all` discovers the fabric over directed routes (an SM must have
//! given LIDs) and reads every switch port and CA port with the agents' capabilities
//! (PortCountersExtended only where the agent has it); ports that fail are listed on
//! stderr and the exit code is 1. `--all` with `-r` or `-R` resets every port read:
//! one AllPortSelect Set per switch whose agent has the capability, per-port Sets for
//! the others and for CAs (stderr says how many of each). Exit code 2: bad arguments.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ibsm_query::discover::discover;
use ibsm_query::perf::{
    PerfClient, PerfEvent, PortReading, Scrape, ScrapeMode, ScrapeTarget, default_tx,
};
use ibsm_query::smp::SmpConfig;
use ibsm_transport::{Transport, TxConfig};
use ibsm_umad::{OpenOptions, Selector, UmadTransport};
use ibsm_wire::mad::ClassPortInfo;
use ibsm_wire::perf::{
    ALL_PORTS, CounterSelect, ExtCounterSelect, PmCapabilityMask, PortCounters,
    PortCountersExtended,
};

/// Read (or reset) performance counters, printed as perfquery prints them.
#[derive(Debug, Parser)]
#[command(name = "ibsm-perfquery", version)]
struct Args {
    /// Read PortCountersExtended (64-bit counters).
    #[arg(short = 'x', long = "extended")]
    extended: bool,
    /// Reset the counters after reading them.
    #[arg(short = 'r', long = "reset_after_read")]
    reset_after_read: bool,
    /// Only reset the counters.
    #[arg(short = 'R', long = "Reset_only")]
    reset_only: bool,
    /// Every port of every node discovered.
    #[arg(long)]
    all: bool,
    /// RDMA device to use.
    #[arg(short = 'C', long = "Ca")]
    ca: Option<String>,
    /// Port of that device.
    #[arg(short = 'P', long = "Port")]
    local_port: Option<u8>,
    /// Time to wait for each answer, in milliseconds.
    #[arg(short = 't', long = "timeout", default_value_t = 200)]
    timeout_ms: u64,
    /// Queries in flight at once.
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// Target LID.
    lid: Option<u16>,
    /// Target port (1 by default; 255 for a switch's sum where it has AllPortSelect).
    port: Option<u8>,
}

fn line(out: &mut String, name: &str, value: impl std::fmt::Display) {
    let label = format!("{name}:");
    let _ = writeln!(out, "{label:.<33}{value}");
}

/// A PortCounters block as perfquery prints it.
fn basic_block(out: &mut String, lid: u16, port: u8, cap: u16, pc: &PortCounters) {
    let _ = writeln!(
        out,
        "# Port counters: Lid {lid} port {port} (CapMask: {cap:#06X})"
    );
    line(out, "PortSelect", pc.port_select);
    line(
        out,
        "CounterSelect",
        format_args!("{:#06x}", pc.counter_select.0),
    );
    line(out, "SymbolErrorCounter", pc.symbol_error_counter);
    line(
        out,
        "LinkErrorRecoveryCounter",
        pc.link_error_recovery_counter,
    );
    line(out, "LinkDownedCounter", pc.link_downed_counter);
    line(out, "PortRcvErrors", pc.port_rcv_errors);
    line(
        out,
        "PortRcvRemotePhysicalErrors",
        pc.port_rcv_remote_physical_errors,
    );
    line(
        out,
        "PortRcvSwitchRelayErrors",
        pc.port_rcv_switch_relay_errors,
    );
    line(out, "PortXmitDiscards", pc.port_xmit_discards);
    line(
        out,
        "PortXmitConstraintErrors",
        pc.port_xmit_constraint_errors,
    );
    line(
        out,
        "PortRcvConstraintErrors",
        pc.port_rcv_constraint_errors,
    );
    line(
        out,
        "CounterSelect2",
        format_args!("{:#04x}", pc.counter_select2.0),
    );
    line(
        out,
        "LocalLinkIntegrityErrors",
        pc.local_link_integrity_errors,
    );
    line(
        out,
        "ExcessiveBufferOverrunErrors",
        pc.excessive_buffer_overrun_errors,
    );
    line(out, "QP1Dropped", pc.qp1_dropped());
    line(out, "VL15Dropped", pc.vl15_dropped);
    line(out, "PortXmitData", pc.port_xmit_data);
    line(out, "PortRcvData", pc.port_rcv_data);
    line(out, "PortXmitPkts", pc.port_xmit_pkts);
    line(out, "PortRcvPkts", pc.port_rcv_pkts);
    line(out, "PortXmitWait", pc.port_xmit_wait);
}

/// A PortCountersExtended block as perfquery -x prints it.
fn extended_block(
    out: &mut String,
    lid: u16,
    port: u8,
    cpi: &ClassPortInfo,
    pc: &PortCountersExtended,
) {
    let _ = writeln!(
        out,
        "# Port extended counters: Lid {lid} port {port} (CapMask: {:#06X} CapMask2: {:#09x})",
        cpi.capability_mask, cpi.capability_mask2
    );
    line(out, "PortSelect", pc.port_select);
    line(
        out,
        "CounterSelect",
        format_args!("{:#06x}", pc.counter_select.0),
    );
    line(out, "PortXmitData", pc.port_xmit_data);
    line(out, "PortRcvData", pc.port_rcv_data);
    line(out, "PortXmitPkts", pc.port_xmit_pkts);
    line(out, "PortRcvPkts", pc.port_rcv_pkts);
    line(out, "PortUnicastXmitPkts", pc.port_unicast_xmit_pkts);
    line(out, "PortUnicastRcvPkts", pc.port_unicast_rcv_pkts);
    line(out, "PortMulticastXmitPkts", pc.port_multicast_xmit_pkts);
    line(out, "PortMulticastRcvPkts", pc.port_multicast_rcv_pkts);
    if cpi.capability_mask2 & 0x2 != 0 {
        line(out, "SymbolErrorCounter", pc.symbol_error_counter);
        line(
            out,
            "LinkErrorRecoveryCounter",
            pc.link_error_recovery_counter,
        );
        line(out, "LinkDownedCounter", pc.link_downed_counter);
        line(out, "PortRcvErrors", pc.port_rcv_errors);
        line(
            out,
            "PortRcvRemotePhysicalErrors",
            pc.port_rcv_remote_physical_errors,
        );
        line(
            out,
            "PortRcvSwitchRelayErrors",
            pc.port_rcv_switch_relay_errors,
        );
        line(out, "PortXmitDiscards", pc.port_xmit_discards);
        line(
            out,
            "PortXmitConstraintErrors",
            pc.port_xmit_constraint_errors,
        );
        line(
            out,
            "PortRcvConstraintErrors",
            pc.port_rcv_constraint_errors,
        );
        line(
            out,
            "LocalLinkIntegrityErrors",
            pc.local_link_integrity_errors,
        );
        line(
            out,
            "ExcessiveBufferOverrunErrors",
            pc.excessive_buffer_overrun_errors,
        );
        line(out, "VL15Dropped", pc.vl15_dropped);
        line(out, "PortXmitWait", pc.port_xmit_wait);
        line(out, "QP1Dropped", pc.qp1_dropped);
    }
}

fn tx(args: &Args) -> TxConfig {
    TxConfig {
        timeout: Duration::from_millis(args.timeout_ms),
        window: args.window.max(1),
        ..default_tx()
    }
}

/// Runs `client`'s queries to the end; their outcomes in order.
fn finish<T: Transport>(
    client: &mut PerfClient<u8>,
    port: &mut T,
) -> Result<Vec<PerfEvent<u8>>, String> {
    let until = port.now() + Duration::from_secs(30);
    client.drive(port, until).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(ev) = client.poll_event() {
        if !matches!(ev, PerfEvent::Unsolicited(_)) {
            out.push(ev);
        }
    }
    Ok(out)
}

fn one_port<T: Transport>(args: &Args, port: &mut T, lid: u16, p: u8) -> Result<String, String> {
    let mut c: PerfClient<u8> = PerfClient::new(tx(args));
    let mut out = String::new();
    c.class_port_info(lid, 0).map_err(|e| e.to_string())?;
    let cpi = finish(&mut c, port)?
        .first()
        .ok_or("no answer")?
        .class_port_info()
        .map_err(|e| e.to_string())?;
    if !args.reset_only {
        if args.extended {
            c.get::<PortCountersExtended>(lid, p, 0)
                .map_err(|e| e.to_string())?;
        } else {
            c.get::<PortCounters>(lid, p, 0)
                .map_err(|e| e.to_string())?;
        }
        let ev = finish(&mut c, port)?;
        let ev = ev.first().ok_or("no answer")?;
        if args.extended {
            let pc = ev
                .decode::<PortCountersExtended>()
                .map_err(|e| e.to_string())?;
            extended_block(&mut out, lid, p, &cpi, &pc);
        } else {
            let pc = ev.decode::<PortCounters>().map_err(|e| e.to_string())?;
            basic_block(&mut out, lid, p, cpi.capability_mask, &pc);
        }
    }
    if args.reset_only || args.reset_after_read {
        if args.extended {
            c.reset_extended(lid, p, ExtCounterSelect(0xffff), 0)
                .map_err(|e| e.to_string())?;
        } else {
            c.reset(lid, p, CounterSelect(0xffff), 0)
                .map_err(|e| e.to_string())?;
        }
        for ev in finish(&mut c, port)? {
            if let PerfEvent::Failed { error, .. } = ev {
                return Err(error.to_string());
            }
        }
    }
    Ok(out)
}

fn all_ports<T: Transport>(args: &Args, port: &mut T) -> Result<(String, usize), String> {
    let until = port.now() + Duration::from_secs(120);
    let found = discover(port, SmpConfig::default(), until).map_err(|e| e.to_string())?;
    let mut targets = Vec::new();
    for n in &found.nodes {
        if n.is_switch() {
            let lid = n.ports.first().and_then(|p| p.info).map_or(0, |i| i.lid);
            targets.push(ScrapeTarget {
                lid,
                ports: (1..=n.info.num_ports).collect(),
                switch: true,
            });
        } else {
            for (p, fp) in n.ports.iter().enumerate().skip(1) {
                if let (Some(pi), Ok(p)) = (fp.info, u8::try_from(p)) {
                    targets.push(ScrapeTarget {
                        lid: pi.lid,
                        ports: vec![p],
                        switch: false,
                    });
                }
            }
        }
    }
    targets.retain(|t| t.lid != 0);
    let mut s = Scrape::new(targets.clone(), ScrapeMode::PerPort, tx(args));
    let until = port.now() + Duration::from_secs(120);
    s.drive(port, until).map_err(|e| e.to_string())?;
    let report = s.into_report();
    let mut out = String::new();
    let mut failed = 0;
    if args.reset_only || args.reset_after_read {
        failed += reset_all(args, port, &targets, &report.agents)?;
    }
    if args.reset_only {
        return Ok((out, failed));
    }
    for (&(lid, p), PortReading { counters, extended }) in &report.ports {
        let cpi = report
            .agents
            .get(&lid)
            .and_then(|c| c.as_ref().ok())
            .copied()
            .unwrap_or_default();
        let shown = if args.extended {
            match extended {
                Some(Ok(pc)) => {
                    extended_block(&mut out, lid, p, &cpi, pc);
                    Ok(())
                }
                Some(Err(e)) => Err(e.to_string()),
                None => Err(format!(
                    "LID {lid} port {p}: the agent has no PortCountersExtended"
                )),
            }
        } else {
            match counters {
                Ok(pc) => {
                    basic_block(&mut out, lid, p, cpi.capability_mask, pc);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        };
        if let Err(e) = shown {
            eprintln!("{e}");
            failed += 1;
        }
    }
    Ok((out, failed))
}

/// Resets every port of `targets`: a switch whose agent has AllPortSelect with one Set
/// (PortSelect 255), every other port with its own. Returns the Sets that failed.
fn reset_all<T: Transport>(
    args: &Args,
    port: &mut T,
    targets: &[ScrapeTarget],
    agents: &std::collections::BTreeMap<u16, Result<ClassPortInfo, ibsm_query::perf::PerfError>>,
) -> Result<usize, String> {
    let mut c: PerfClient<u8> = PerfClient::new(tx(args));
    let (mut summed, mut single) = (0usize, 0usize);
    for t in targets {
        let all = t.switch
            && matches!(agents.get(&t.lid), Some(Ok(cpi))
                if cpi.pm_capabilities().contains(PmCapabilityMask::ALL_PORT_SELECT));
        let ports = if all {
            vec![ALL_PORTS]
        } else {
            t.ports.clone()
        };
        if all {
            summed += 1;
        } else {
            single += ports.len();
        }
        for p in ports {
            let r = if args.extended {
                c.reset_extended(t.lid, p, ExtCounterSelect(0xffff), p)
            } else {
                c.reset(t.lid, p, CounterSelect(0xffff), p)
            };
            r.map_err(|e| e.to_string())?;
        }
    }
    let mut failed = 0;
    for ev in finish(&mut c, port)? {
        if let PerfEvent::Failed { error, .. } = ev {
            eprintln!("reset: {error}");
            failed += 1;
        }
    }
    eprintln!("reset: {summed} switches with AllPortSelect, {single} ports one by one");
    Ok(failed)
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !args.all && args.lid.is_none() {
        eprintln!("ibsm-perfquery: give a LID (and port), or --all");
        return ExitCode::from(2);
    }
    let opts = OpenOptions {
        selector: Selector {
            ca: args.ca.clone(),
            port: args.local_port,
            guid: None,
        },
        perf_agent: true,
        ..OpenOptions::default()
    };
    let mut port = match UmadTransport::open(&opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ibsm-perfquery: {e}");
            return ExitCode::from(1);
        }
    };
    let result = if args.all {
        all_ports(&args, &mut port)
    } else {
        let lid = args.lid.unwrap_or_default();
        one_port(&args, &mut port, lid, args.port.unwrap_or(1)).map(|o| (o, 0))
    };
    match result {
        Ok((out, failed)) => {
            print!("{out}");
            if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("ibsm-perfquery: {e}");
            ExitCode::from(1)
        }
    }
}
