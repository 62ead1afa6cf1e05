//! Lists umad ports and reads NodeInfo of the local node and of each directed route given
//! on the command line, like `ibstat` plus `smpquery -D nodeinfo`.
//!
//! `cargo run -p ibsm-umad --example umad_probe -- 0,1 0,1,3`
//! Under ibsim: `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so ...`.

use std::time::{Duration, Instant};

use ibsm_umad::{OpenOptions, SendTo, UmadPort, sysfs};
use ibsm_wire::{DrPath, DrSmpView, Method, NodeInfo, SmAttributeId};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for p in sysfs::list_ports()? {
        eprintln!(
            "{} port {} umad{}: guid {:#018x} lid {:#x} state {} phys {} {}",
            p.ca,
            p.port,
            p.umad_index,
            p.port_guid.unwrap_or(0),
            p.lid,
            p.state,
            p.phys_state,
            p.link_layer
        );
    }
    let port = UmadPort::open(&OpenOptions::default())?;
    eprintln!(
        "opened {} port {} header {:?} ibsim {}",
        port.desc().ca,
        port.desc().port,
        port.header_len(),
        port.under_ibsim()
    );
    let mut paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        paths.push("0".into());
    }
    for (i, text) in paths.iter().enumerate() {
        let path = DrPath::parse_str(text)?;
        let tid = 0x100 + i as u64;
        let req = ibsm_wire::DrSmp::request(
            Method::Get,
            SmAttributeId::NodeInfo.into(),
            0,
            tid,
            0,
            &path,
        );
        port.send(
            &SendTo::DIRECTED,
            &req.to_bytes(),
            Some(Duration::from_millis(500)),
        )?;
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(rx) = port.recv(left)? else {
                println!("{text}: timeout");
                break;
            };
            let Ok(v) = DrSmpView::new_checked(&rx.mad[..]) else {
                continue;
            };
            if v.transaction_id() & 0xFFFF_FFFF != tid {
                continue;
            }
            let ni = NodeInfo::parse(v.attr_data())?;
            println!(
                "{text}: status {:#x} type {:?} ports {} node {:#018x} port {:#018x} local port {}",
                v.status(),
                ni.node_type,
                ni.num_ports,
                ni.node_guid,
                ni.port_guid,
                ni.local_port_num
            );
            break;
        }
    }
    Ok(())
}
