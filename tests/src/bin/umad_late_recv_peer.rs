//! A MAD already waiting is read even when the deadline given to `recv` has passed: the
//! engine works in slices with a timer due at once, so its host calls `recv` with a
//! past deadline on every turn, and a transport that gave up without reading then left
//! SMInfo polls and SA queries unread until the slicing ended (up to 200 ms on the
//! 11,664-CA tree).
//!
//! `umad-late-recv-peer`: sends one NodeInfo Get along the directed route `0,1` (the
//! port's neighbour), waits 300 ms so that the answer has arrived, then calls
//! `recv(now)`. Prints `answered` (exit 0) or `timeout` (exit 1). Run it under the
//! preload (`LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so`).

use std::process::ExitCode;
use std::time::Duration;

use ibsm_transport::{Address, DrAddress, Incoming, Transport, TransportError};
use ibsm_umad::{OpenOptions, UmadTransport};
use ibsm_wire::{DrPath, DrSmp, Method, SmAttributeId};

fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut port = UmadTransport::open(&OpenOptions::default())?;
    let path = DrPath::parse_str(&format!("0,{}", port.port().desc().port.max(1)))?;
    let req = DrSmp::request(
        Method::Get,
        SmAttributeId::NodeInfo.into(),
        0,
        0x77,
        0,
        &path,
    );
    port.send(&Address::Directed(DrAddress::direct(path)), &req.to_bytes())?;
    std::thread::sleep(Duration::from_millis(300));
    let deadline = port.now();
    match port.recv(deadline) {
        Ok(Incoming::Mad(_)) => {
            println!("answered");
            Ok(ExitCode::SUCCESS)
        }
        Err(TransportError::Timeout) => {
            println!("timeout");
            Ok(ExitCode::FAILURE)
        }
        Ok(other) => {
            println!("other {other:?}");
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(e.into()),
    }
}
