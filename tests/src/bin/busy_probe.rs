//! One client process that asks the master over and over, for `busy-bench`
//! (`tests/BUSY.md`): each question's wall time is then the MAD's round trip (through
//! umad2sim and ibsim, and the SM's wait), without the process start, umad2sim's set-up
//! and libibmad's port open that every `sminfo` and `saquery` run pays again.
//!
//! Under the umad2sim preload:
//!
//! - `busy-probe sminfo EVERY_MS LIMIT_MS`: SubnGet(SMInfo) to the SM LID the port
//!   holds;
//! - `busy-probe path SLID DLID EVERY_MS LIMIT_MS`: SubnAdmGet(PathRecord) SLID to DLID
//!   to the SA at that LID (`saquery -p --slid --dlid` asks the same with a GetTable;
//!   a Get's answer is one whole MAD, where ibsim hands a one-record table answer on
//!   cut to the record, which `ibsm-query` refuses);
//!
//! one question at a time, each started EVERY_MS after the last one's start (or at once
//! when that one took longer), sent once (no retry) with LIMIT_MS to answer. One line
//! per question on stdout, flushed: `START_US WALL_US ok DETAIL` or `START_US WALL_US
//! fail WHY`: the start in microseconds since the Unix epoch (the wall clock, which the
//! bench's clock is tied to), the wall time in microseconds (`DETAIL`: the SM's port
//! GUID and state, or the path's SLID and DLID). Runs until killed.

use std::io::Write as _;
use std::ops::ControlFlow;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ibsm_query::sa::{SaClient, SaClientConfig, SaEvent};
use ibsm_query::smp::{SmpClient, SmpConfig, SmpEvent, Target};
use ibsm_transport::{
    Address, Incoming, JobRunner, LocalPort, NoJob, SansIo, Stop, Transport, TransportError, drive,
};
use ibsm_umad::{OpenOptions, UmadTransport};
use ibsm_wire::sa::{ComponentMask, PathRecord};
use ibsm_wire::{MAD_SIZE, SmInfo};

fn usage() -> ! {
    eprintln!("busy-probe sminfo EVERY_MS LIMIT_MS | busy-probe path SLID DLID EVERY_MS LIMIT_MS");
    std::process::exit(2)
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize) -> T {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| usage())
}

/// The port, with every MAD shorter than 256 bytes zero-padded to 256 on the way in.
///
/// OpenSM's SA answers even a Get with RMPP's Active flag for the kernel to segment, so
/// a one-record answer leaves it as a 120-byte buffer (SA header and one PathRecord);
/// umad2sim hands that on as it is, as a kernel joining the one segment would (its
/// length is the header plus the RMPP payload). `ibsm-query`'s `SaClient` refuses an
/// answer shorter than a MAD; padded, it reads as the one-segment RMPP answer it is.
struct Padded<'a>(&'a mut UmadTransport);

impl Transport for Padded<'_> {
    fn now(&self) -> ibsm_transport::Instant {
        self.0.now()
    }
    fn local_port(&self) -> LocalPort {
        self.0.local_port()
    }
    fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
        self.0.send(addr, mad)
    }
    fn recv(&mut self, deadline: ibsm_transport::Instant) -> Result<Incoming, TransportError> {
        let mut incoming = self.0.recv(deadline)?;
        if let Incoming::Mad(rx) = &mut incoming
            && rx.mad.len() < MAD_SIZE
        {
            rx.mad.resize(MAD_SIZE, 0);
        }
        Ok(incoming)
    }
}

/// Drives `client` over `port` until it has nothing outstanding (or `limit` twice
/// over passed): its events.
fn ask<C>(
    client: &mut C,
    port: &mut UmadTransport,
    limit: Duration,
) -> Result<Vec<C::Event>, String>
where
    C: SansIo<Job = NoJob>,
{
    let until = port.now() + limit.saturating_mul(2);
    let mut events = Vec::new();
    drive(
        client,
        &mut Padded(port),
        &mut JobRunner::inline(),
        Stop::when_idle(until),
        |ev| {
            events.push(ev);
            ControlFlow::Continue(())
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(events)
}

/// One SubnGet(SMInfo) to `sm_lid`: the SM's port GUID and state, or why not.
fn sm_info(
    client: &mut SmpClient<()>,
    port: &mut UmadTransport,
    sm_lid: u16,
    limit: Duration,
) -> Result<String, String> {
    client
        .get::<SmInfo>(Target::Lid(sm_lid), 0, ())
        .map_err(|e| e.to_string())?;
    // A late answer to an earlier question comes as Unsolicited: its TID is no
    // longer waited for.
    let events = ask(client, port, limit)?;
    match events
        .iter()
        .find(|ev| !matches!(ev, SmpEvent::Unsolicited(_)))
    {
        Some(ev) => ev
            .decode::<SmInfo>()
            .map(|i| format!("{:#x} {:?}", i.guid, i.sm_state))
            .map_err(|e| e.to_string()),
        None => Err("no answer".into()),
    }
}

/// One SubnAdmGet(PathRecord) with `template`'s SLID and DLID: the answer's SLID and
/// DLID, or why not.
fn path_record(
    client: &mut SaClient<()>,
    port: &mut UmadTransport,
    template: &PathRecord,
    mask: ComponentMask,
    limit: Duration,
) -> Result<String, String> {
    client.get(template, mask, ());
    match ask(client, port, limit)?.into_iter().next() {
        Some(SaEvent::Done { response, .. }) => {
            let r: Vec<PathRecord> = response.records().map_err(|e| e.to_string())?;
            let p = r.first().ok_or("no record")?;
            Ok(format!("{} {}", p.slid, p.dlid))
        }
        Some(SaEvent::Failed { error, .. }) => Err(error.to_string()),
        None => Err("no answer".into()),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, every, limit) = match args.first().map(String::as_str) {
        Some("sminfo") => (None, arg::<u64>(&args, 1), arg::<u64>(&args, 2)),
        Some("path") => (
            Some((arg::<u16>(&args, 1), arg::<u16>(&args, 2))),
            arg::<u64>(&args, 3),
            arg::<u64>(&args, 4),
        ),
        _ => usage(),
    };
    let (every, limit) = (Duration::from_millis(every), Duration::from_millis(limit));
    let mut port = UmadTransport::open(&OpenOptions {
        sa_agent: path.is_some(),
        ..OpenOptions::default()
    })?;
    let sm_lid = port.port().desc().sm_lid;
    // One send, LIMIT to answer: a lost or late answer is a failed question, not a
    // retry hidden inside one question's time. One client for every question, so that
    // no two questions share a TID and a late answer is never taken for a new one's.
    let mut smp = SmpConfig::default();
    smp.tx.timeout = limit;
    smp.tx.retries = 0;
    let mut smp: SmpClient<()> = SmpClient::new(smp);
    let mut sa = SaClientConfig::new(sm_lid);
    sa.timeout = limit;
    sa.retries = 0;
    let mut sa: SaClient<()> = SaClient::new(sa);
    let mut template = PathRecord::default();
    let mask = ComponentMask::of::<PathRecord>(&["slid", "dlid"]).ok_or("PathRecord mask")?;
    if let Some((slid, dlid)) = path {
        template.slid = slid;
        template.dlid = dlid;
    }
    let mut next = Instant::now();
    let mut out = std::io::stdout().lock();
    loop {
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let t = Instant::now();
        next = t + every;
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let result = match path {
            None => sm_info(&mut smp, &mut port, sm_lid, limit),
            Some(_) => path_record(&mut sa, &mut port, &template, mask, limit),
        };
        let wall = t.elapsed();
        let line = match result {
            Ok(detail) => format!("{} {} ok {detail}", start.as_micros(), wall.as_micros()),
            Err(why) => format!("{} {} fail {why}", start.as_micros(), wall.as_micros()),
        };
        // The bench reads until it kills us; a closed pipe ends us too.
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            return Ok(());
        }
    }
}
