//! Drops an open umad port while answers are still on their way, then lives on: the
//! regression check of `UmadPort`'s Drop under ibsim's umad2sim preload, whose reader
//! thread crashed the process (NULL mutex) when a MAD arrived for a closed umad fd.
//!
//! `umad-drop-peer [--requests N] [--linger-ms MS]`: sends N (default 128) NodeInfo Gets
//! along the directed route `0,1` (the port's neighbour) in bursts of 8, drops the port
//! right after the last burst, waits MS (default 500) and exits 0, printing `sent N` on
//! stdout. Run it under the preload
//! (`LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so`).
//!
//! Bursts, not one long stream: the preload holds its global mutex across a blocking
//! socket write, which its reader thread needs to queue each answer. With unix datagram
//! queues of 10 (`net.unix.max_dgram_qlen`), a long stream of writes fills ibsim's queue
//! while ibsim fills ours: both block, for ever.

use std::time::Duration;

use ibsm_umad::{OpenOptions, SendTo, UmadPort};
use ibsm_wire::{DrPath, DrSmp, Method, SmAttributeId};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("number"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let requests = arg(&args, "--requests", 128);
    let linger = Duration::from_millis(arg(&args, "--linger-ms", 500));
    let port = UmadPort::open(&OpenOptions::default())?;
    let path = DrPath::parse_str(&format!("0,{}", port.desc().port.max(1)))?;
    for tid in 0..requests {
        if tid % 8 == 0 && tid > 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        let req = DrSmp::request(
            Method::Get,
            SmAttributeId::NodeInfo.into(),
            0,
            0x1000 + tid,
            0,
            &path,
        );
        port.send(
            &SendTo::DIRECTED,
            &req.to_bytes(),
            Some(Duration::from_millis(200)),
        )?;
    }
    // The answers are still arriving: ibsim serves the requests one by one.
    drop(port);
    std::thread::sleep(linger);
    println!("sent {requests}");
    Ok(())
}
