//! The SM engine with its SA, over umad, for the saquery peer test: opens the port with
//! IsSM and an SA agent (kernel RMPP), brings the subnet up, prints `SUBNET UP` on
//! stderr, then keeps answering SA queries until `--run-secs` have passed.
//!
//! `sa-umad-peer --sm-key 0x1 --run-secs 20`; under ibsim with the umad2sim preload.

use std::time::Duration;

use ibsm_manager::{SmConfig, SmEvent, SubnetManager, driver};
use ibsm_transport::Transport;
use ibsm_umad::{OpenOptions, UmadTransport};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| match v.trim().strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).expect("hex number"),
            None => v.trim().parse().expect("number"),
        })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mut port = UmadTransport::open(&OpenOptions {
        issm: true,
        sa_agent: true,
        ..OpenOptions::default()
    })?;
    let mut cfg = SmConfig::default();
    cfg.sa = true;
    cfg.sa_rmpp = ibsm_sa::RmppMode::Kernel;
    cfg.sm_key = arg(&args, "--sm-key", 1);
    cfg.m_key = match arg(&args, "--m-key", 0) {
        0 => ibsm_manager::MKeyMode::Off,
        k => ibsm_manager::MKeyMode::Single(k),
    };
    let until = port.now() + Duration::from_secs(arg(&args, "--run-secs", 20));
    let mut sm = SubnetManager::new(cfg, port.local_port());
    sm.start(port.now())?;
    driver::run(&mut sm, &mut port, until, |ev| {
        if let SmEvent::SubnetUp { stats } = ev {
            eprintln!("SUBNET UP: {} nodes, SM LID {}", stats.nodes, 0);
        }
        false
    })?;
    if let Some(sa) = sm.sa() {
        eprintln!("SA counters: {:?}", sa.counters());
    }
    Ok(())
}
