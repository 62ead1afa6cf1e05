//! `ibsm-perfquery`: performance counters with `ibsm-query`, printed as `perfquery`
//! prints them (same headers, field names and layout), for one port or the whole
//! fabric in one run.
//!
//! ```text
//! ibsm-perfquery [-x] [-r | -R] LID [PORT]     one port (PORT 1 by default), as perfquery
//! ibsm-perfquery [-x] --all                    every port of every node discovered
//! ibsm-perfquery -E | -D (LID [PORT] | --all)  receive error / transmit discard details
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
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ibsm_query::counters::Counter;
use ibsm_query::discover::discover;
use ibsm_query::perf::{
    PerfClient, PerfError, PerfEvent, PortReading, Scrape, ScrapeMode, ScrapeTarget,
};
use ibsm_tools::{PortArgs, ToolError, TxArgs, run};
use ibsm_transport::{JobRunner, Stop, Transport, TransportError, drive};
use ibsm_wire::mad::ClassPortInfo;
use ibsm_wire::perf::{
    ALL_PORTS, CounterSelect, ExtCounterSelect, PmCapabilityMask, PortCounters,
    PortCountersExtended, PortRcvErrorDetails, PortXmitDiscardDetails,
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
    /// Read PortRcvErrorDetails (perfquery -E).
    #[arg(short = 'E', long = "rcv_err", conflicts_with_all = ["extended", "xmt_disc", "reset_after_read", "reset_only"])]
    rcv_err: bool,
    /// Read PortXmitDiscardDetails (perfquery -D).
    #[arg(short = 'D', long = "xmt_disc", conflicts_with_all = ["extended", "reset_after_read", "reset_only"])]
    xmt_disc: bool,
    /// Every port of every node discovered.
    #[arg(long)]
    all: bool,
    #[command(flatten)]
    local: PortArgs,
    #[command(flatten)]
    tx: TxArgs,
    /// Target LID.
    lid: Option<u16>,
    /// Target port (1 by default; 255 for a switch's sum where it has AllPortSelect).
    port: Option<u8>,
}

fn line(out: &mut String, name: &str, value: impl std::fmt::Display) {
    let label = format!("{name}:");
    let _ = writeln!(out, "{label:.<33}{value}");
}

/// PortCounters' counters before CounterSelect2, in the order perfquery prints them:
/// CounterSelect's first nine.
const BASIC_HEAD: &[Counter] = Counter::COUNTER_SELECT.split_at(9).0;

/// PortCounters' counters after CounterSelect2, in perfquery's own order.
const BASIC_TAIL: &[Counter] = &[
    Counter::LocalLinkIntegrityErrors,
    Counter::ExcessiveBufferOverrunErrors,
    Counter::Qp1Dropped,
    Counter::Vl15Dropped,
    Counter::XmitData,
    Counter::RcvData,
    Counter::XmitPkts,
    Counter::RcvPkts,
    Counter::XmitWait,
];

/// PortCountersExtended's traffic counters, in perfquery -x order: CounterSelect's.
const EXTENDED_TRAFFIC: &[Counter] = &Counter::EXT_COUNTER_SELECT;

/// PortCountersExtended's error counters (printed where the agent has them), in
/// perfquery -x order: CounterSelect2's.
const EXTENDED_ERRORS: &[Counter] = &Counter::EXT_COUNTER_SELECT2;

/// PortCounters' counters of `counters`, by the names [`Counter`] gives them.
fn basic_lines(out: &mut String, counters: &[Counter], pc: &PortCounters) {
    for &c in counters {
        // Every counter of the BASIC_ lists is in PortCounters (a unit test checks).
        if let Some(v) = c.of_counters(pc) {
            line(out, c.perfquery_name(), v);
        }
    }
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
    basic_lines(out, BASIC_HEAD, pc);
    line(
        out,
        "CounterSelect2",
        format_args!("{:#04x}", pc.counter_select2.0),
    );
    basic_lines(out, BASIC_TAIL, pc);
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
    let errors: &[Counter] = if cpi.capability_mask2 & 0x2 != 0 {
        EXTENDED_ERRORS
    } else {
        &[]
    };
    for &c in EXTENDED_TRAFFIC.iter().chain(errors) {
        if let Some(v) = c.of_extended(pc) {
            line(out, c.perfquery_name(), v);
        }
    }
}

/// Why a query of this tool failed; each says what its source says, as the tool always
/// printed it.
#[derive(Debug, thiserror::Error)]
enum QueryError {
    /// The transport failed (discovery, or while queries were in flight).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The PerfMgt client refused a query, the agent answered an error, or its answer
    /// did not decode.
    #[error(transparent)]
    Perf(#[from] PerfError),
    /// The scrape could not run.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// The agent gave no answer at all.
    #[error("no answer")]
    NoAnswer,
}

/// Runs `client`'s queries to the end; their outcomes in order.
fn finish<T: Transport>(
    client: &mut PerfClient<u8>,
    port: &mut T,
) -> Result<Vec<PerfEvent<u8>>, QueryError> {
    let stop = Stop::when_idle(port.now() + Duration::from_secs(30));
    let mut out = Vec::new();
    drive(client, port, &mut JobRunner::inline(), stop, |ev| {
        if !matches!(ev, PerfEvent::Unsolicited(_)) {
            out.push(ev);
        }
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

fn one_port<T: Transport>(
    args: &Args,
    port: &mut T,
    lid: u16,
    p: u8,
) -> Result<String, QueryError> {
    let mut c: PerfClient<u8> = PerfClient::new(args.tx.tx());
    let mut out = String::new();
    c.class_port_info(lid, 0)?;
    let cpi = finish(&mut c, port)?
        .first()
        .ok_or(QueryError::NoAnswer)?
        .class_port_info()?;
    if !args.reset_only {
        if args.extended {
            c.get::<PortCountersExtended>(lid, p, 0)?;
        } else {
            c.get::<PortCounters>(lid, p, 0)?;
        }
        let ev = finish(&mut c, port)?;
        let ev = ev.first().ok_or(QueryError::NoAnswer)?;
        if args.extended {
            let pc = ev.decode::<PortCountersExtended>()?;
            extended_block(&mut out, lid, p, &cpi, &pc);
        } else {
            let pc = ev.decode::<PortCounters>()?;
            basic_block(&mut out, lid, p, cpi.capability_mask, &pc);
        }
    }
    if args.reset_only || args.reset_after_read {
        if args.extended {
            c.reset_extended(lid, p, ExtCounterSelect(0xffff), 0)?;
        } else {
            c.reset(lid, p, CounterSelect(0xffff), 0)?;
        }
        for ev in finish(&mut c, port)? {
            if let PerfEvent::Failed { error, .. } = ev {
                return Err(error.into());
            }
        }
    }
    Ok(out)
}

/// PortRcvErrorDetails (`-E`) or PortXmitDiscardDetails (`-D`) of `ports`, as
/// perfquery prints them; the ports that failed are on stderr and counted.
fn details<T: Transport>(
    args: &Args,
    port: &mut T,
    ports: &[(u16, u8)],
) -> Result<(String, usize), QueryError> {
    let mut c: PerfClient<u8> = PerfClient::new(args.tx.tx());
    for &(lid, p) in ports {
        let r = if args.rcv_err {
            c.get::<PortRcvErrorDetails>(lid, p, 0)
        } else {
            c.get::<PortXmitDiscardDetails>(lid, p, 0)
        };
        r?;
    }
    let (mut out, mut failed) = (String::new(), 0);
    // Answers come back in any order; print in the order asked.
    let mut shown = std::collections::BTreeMap::new();
    for ev in finish(&mut c, port)? {
        let asked = match &ev {
            PerfEvent::Done { asked, .. } | PerfEvent::Failed { asked, .. } => *asked,
            PerfEvent::Unsolicited(_) => continue,
        };
        let mut b = String::new();
        let decoded = if args.rcv_err {
            ev.decode::<PortRcvErrorDetails>()
                .map(|d| rcv_err_block(&mut b, &d))
        } else {
            ev.decode::<PortXmitDiscardDetails>()
                .map(|d| xmt_disc_block(&mut b, &d))
        };
        match decoded {
            Ok(()) => {
                shown.insert((asked.lid, asked.port), b);
            }
            Err(e) => {
                eprintln!("{e}");
                failed += 1;
            }
        }
    }
    let title = if args.rcv_err {
        "PortRcvErrorDetails"
    } else {
        "PortXmitDiscardDetails"
    };
    for &(lid, p) in ports {
        if let Some(b) = shown.get(&(lid, p)) {
            let _ = writeln!(out, "# {title} counters: Lid {lid} port {p}");
            out.push_str(b);
        }
    }
    Ok((out, failed))
}

/// A details block as perfquery prints it: the selects, then each counter `of` gives.
fn details_block(
    out: &mut String,
    port_select: u8,
    counter_select: u16,
    counters: &[Counter],
    of: impl Fn(Counter) -> Option<u64>,
) {
    line(out, "PortSelect", port_select);
    line(out, "CounterSelect", format_args!("{counter_select:#06x}"));
    for &c in counters {
        if let Some(v) = of(c) {
            line(out, c.perfquery_name(), v);
        }
    }
}

fn rcv_err_block(out: &mut String, d: &PortRcvErrorDetails) {
    details_block(
        out,
        d.port_select,
        d.counter_select,
        &Counter::RCV_ERROR_DETAILS_SELECT,
        |c| c.of_rcv_error_details(d),
    );
}

fn xmt_disc_block(out: &mut String, d: &PortXmitDiscardDetails) {
    details_block(
        out,
        d.port_select,
        d.counter_select,
        &Counter::XMIT_DISCARD_DETAILS_SELECT,
        |c| c.of_xmit_discard_details(d),
    );
}

fn all_ports<T: Transport>(args: &Args, port: &mut T) -> Result<(String, usize), QueryError> {
    let until = port.now() + Duration::from_secs(120);
    let found = discover(port, args.tx.smp(0), until)?;
    let targets: Vec<ScrapeTarget> = ScrapeTarget::every_port(&found)
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    if args.rcv_err || args.xmt_disc {
        let ports: Vec<(u16, u8)> = targets
            .iter()
            .flat_map(|t| t.ports.iter().map(move |&p| (t.lid, p)))
            .collect();
        return details(args, port, &ports);
    }
    let mut s = Scrape::new(targets.clone(), ScrapeMode::PerPort, args.tx.tx());
    run(&mut s, port, Duration::from_secs(120), "scrape")?;
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
) -> Result<usize, QueryError> {
    let mut c: PerfClient<u8> = PerfClient::new(args.tx.tx());
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
            r?;
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
    let mut port = match args.local.open(true) {
        Ok(p) => p,
        Err(e) => return e.report("ibsm-perfquery"),
    };
    let result = if args.all {
        all_ports(&args, &mut port)
    } else {
        let lid = args.lid.unwrap_or_default();
        let p = args.port.unwrap_or(1);
        if args.rcv_err || args.xmt_disc {
            details(&args, &mut port, &[(lid, p)])
        } else {
            one_port(&args, &mut port, lid, p).map(|o| (o, 0))
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_basic_counter_is_in_port_counters() {
        let pc = PortCounters::default();
        for &c in BASIC_HEAD.iter().chain(BASIC_TAIL) {
            assert_eq!(c.of_counters(&pc), Some(0), "{c:?}");
        }
    }

    /// The three block shapes with a value of its own in every field, as the
    /// field-by-field printing wrote them before the names came from `Counter`
    /// (perfquery's layout: `crates/ibsm-tools/tests/perfquery_ibsim.rs` compares it
    /// with perfquery's on ibsim).
    #[test]
    fn blocks_print_every_field_in_perfquerys_layout() {
        // Byte i holds i + 1, so every field reads a value of its own.
        let bytes: Vec<u8> = (1..=192).collect();
        let pc = PortCounters::parse(&bytes).unwrap();
        let ext = PortCountersExtended::parse(&bytes).unwrap();
        let mut out = String::new();
        basic_block(&mut out, 5, 3, 0x5a00, &pc);
        let mut cpi = ClassPortInfo {
            capability_mask: 0x1600,
            capability_mask2: 0x2,
            ..ClassPortInfo::default()
        };
        extended_block(&mut out, 5, 3, &cpi, &ext);
        cpi.capability_mask2 = 0;
        extended_block(&mut out, 5, 3, &cpi, &ext);
        assert_eq!(
            out,
            include_str!("../../tests/fixtures/perfquery_blocks.txt")
        );
    }
}
