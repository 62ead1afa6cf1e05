//! An election-only SM over umad, for the OpenSM peer test: it opens the port with IsSM
//! set, probes the SM its port knows (sysfs `sm_lid`), follows or leads by the election's
//! rules, answers SubnGet/SubnSet(SMInfo) from other SMs, and prints one line per
//! election event on stderr and a JSON summary as the last stdout line. It configures
//! nothing (no LIDs, no routes): it only takes part in the election.
//!
//! Each stderr line is `<ms> ms [<step>] <what>`: `<step>` counts the passes of the main
//! loop (one input: a MAD or a timer), so lines with the same step came from one input.
//! Besides the election's events it logs every SMInfo request it answers
//! (`answered SubnGet from LID n`, or `by directed route`), every response the election took as its own
//! (`response from LID n`) and every Set it sends (`sent SubnSet(Acknowledge) to ...`),
//! so a test can count polls in either direction and see the handover's messages.
//!
//! `election-umad-peer --priority 10 --sm-key 0x1 --polling-timeout 500 --polling-retries 2 --run-secs 20`
//! Under ibsim: `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so ...`.
//!
//! It runs for `--run-secs` or until a line `stop` arrives on stdin, whichever is first:
//! a test waits for what it wants to see and then stops it, instead of guessing how long
//! that takes. End of input is not a stop (stdin may be `/dev/null`).

use std::io::BufRead as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ibsm::transport::{Clock, SystemClock};
use ibsm_election::{Config, Election, ElectionEvent, Requester, SmAddr, SmInfoControl};
use ibsm_umad::{OpenOptions, SendTo, UmadPort};
use ibsm_wire::Instant;

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| {
            let v = v.trim();
            match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).expect("hex number"),
                None => v.parse().expect("number"),
            }
        })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let port = UmadPort::open(&OpenOptions {
        issm: true,
        ..OpenOptions::default()
    })?;
    let desc = port.desc().clone();
    let guid = desc.port_guid.unwrap_or(desc.node_guid);
    let mut cfg = Config::with_polling(
        guid,
        Duration::from_millis(arg(&args, "--polling-timeout", 10_000)),
        u32::try_from(arg(&args, "--polling-retries", 4))?,
    );
    cfg.priority = u8::try_from(arg(&args, "--priority", 0))?;
    cfg.sm_key = arg(&args, "--sm-key", 1);
    let end = Instant::ZERO + Duration::from_secs(arg(&args, "--run-secs", 20));
    let stop = Arc::new(AtomicBool::new(false));
    let stop_in = Arc::clone(&stop);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            match line {
                Ok(l) if l.trim() == "stop" => {
                    stop_in.store(true, Ordering::Relaxed);
                    return;
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    // How long a `stop` may wait for the receive below to return.
    let stop_latency = Duration::from_millis(100);
    let clock = SystemClock::new();
    // Milliseconds since the clock's origin, for the log lines.
    let ms = |t: Instant| (t - Instant::ZERO).as_millis();
    let mut sm = Election::new(cfg, clock.now())?;
    let mut log = Vec::new();
    let mut handovers_received = 0u32;
    let mut requests_answered = 0u32;
    eprintln!(
        "election-umad-peer: guid {guid:#018x} lid {} sm_lid {} ibsim {}",
        desc.lid,
        desc.sm_lid,
        port.under_ibsim()
    );
    let mut step = 0u64;
    loop {
        step += 1;
        let now = clock.now();
        // Events can ask for a sweep, whose probes are new transmits: drain until quiet.
        loop {
            while let Some(tx) = sm.poll_transmit() {
                let to = match tx.to {
                    SmAddr::Lid(l) => SendTo::smp(l),
                    SmAddr::Directed(_) => SendTo::DIRECTED,
                };
                port.send(&to, &tx.mad, None)?;
                if tx.is_set() {
                    eprintln!(
                        "{:>8} ms [{step}] sent SubnSet({:?}) to {:?}",
                        ms(now),
                        SmInfoControl::from(tx.attribute_modifier()),
                        tx.to
                    );
                }
            }
            let Some(ev) = sm.poll_event() else { break };
            eprintln!("{:>8} ms [{step}] {ev:?}", ms(now));
            if matches!(ev, ElectionEvent::HandoverReceived { .. }) {
                handovers_received += 1;
            }
            if ev == ElectionEvent::SweepNeeded {
                // The only SM this host knows without a fabric sweep is its port's SM.
                sm.begin_sweep(now);
                if desc.sm_lid != 0 && desc.sm_lid != desc.lid {
                    sm.probe(now, SmAddr::Lid(desc.sm_lid));
                }
                sm.sweep_complete(now);
            }
            log.push(format!("{:?}", format!("{ev:?}")));
        }
        if now >= end || stop.load(Ordering::Relaxed) {
            break;
        }
        let wait = (sm.poll_timeout().map_or(end, |t| t.min(end)) - now)
            .clamp(Duration::from_millis(1), stop_latency);
        if let Some(rx) = port.recv(wait)? {
            let now = clock.now();
            if rx.timed_out() || rx.mad.len() < 256 || rx.mad[16..18] != [0x00, 0x20] {
                // Status 110 (unreachable) or not SMInfo: nothing the election uses.
            } else if rx.mad[3] & 0x80 != 0 {
                if sm.handle_response(now, &rx.mad).unwrap_or(false) {
                    eprintln!(
                        "{:>8} ms [{step}] response from LID {}",
                        ms(now),
                        rx.hdr.lid
                    );
                }
            } else {
                let req = Requester {
                    // No M_Key on this port: like OpenSM, every requester passes.
                    m_key_authenticated: true,
                    guid: None,
                    addr: (rx.mad[1] == 0x01).then_some(SmAddr::Lid(rx.hdr.lid)),
                };
                if let Ok(resp) = sm.handle_request(now, &rx.mad, &req) {
                    let to = if resp[1] == 0x81 {
                        SendTo::DIRECTED
                    } else {
                        SendTo::smp(rx.hdr.lid)
                    };
                    port.send(&to, &resp, None)?;
                    requests_answered += 1;
                    eprintln!(
                        "{:>8} ms [{step}] answered Subn{} {}",
                        ms(now),
                        if rx.mad[3] == 0x02 { "Set" } else { "Get" },
                        if rx.mad[1] == 0x81 {
                            "by directed route".to_string()
                        } else {
                            format!("from LID {}", rx.hdr.lid)
                        }
                    );
                }
            }
        } else {
            sm.handle_timeout(clock.now());
        }
        if sm.poll_timeout().is_some_and(|t| t <= clock.now()) {
            sm.handle_timeout(clock.now());
        }
    }
    println!(
        "{{\"state\":\"{:?}\",\"following\":{},\"handovers_received\":{handovers_received},\"requests_answered\":{requests_answered},\"state_changes\":{},\"events\":[{}]}}",
        sm.state(),
        sm.following()
            .map_or("null".to_string(), |g| format!("\"{g:#x}\"")),
        sm.state_changes(),
        log.join(",")
    );
    Ok(())
}
