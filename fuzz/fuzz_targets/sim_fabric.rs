//! The simulator on arbitrary input: a fault script from the first line, then MADs with
//! arbitrary bytes and addresses injected by an SM on a small fabric, with time jumps.
//! Nothing may panic, and every injected request is accounted for (delivered or
//! dropped) once the fabric is quiet.
#![no_main]

use std::time::Duration;

use ibsm_sim::{Sim, SimConfig, testing::MiniAgent};
use ibsm_topology::generate;
use ibsm_transport::{Address, DrAddress, LidAddress, Transport};
use ibsm_wire::DrPath;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let (script, rest) = data.split_at(split);
    let fabric = generate::fat_tree(4, 2).unwrap();
    let cfg = SimConfig {
        seed: 1,
        ..SimConfig::default()
    };
    let mut sim: Sim<MiniAgent> = Sim::from_fabric(&fabric, cfg).unwrap();
    if let Ok(text) = std::str::from_utf8(script) {
        let _ = sim.load_script(text);
    }
    let ca = (0..sim.node_count() as u32)
        .map(ibsm_sim::NodeIdx)
        .find(|&n| sim.node_setup(n).unwrap().num_ports == 1)
        .unwrap();
    let mut sm = sim.attach_sm(ca, 1).unwrap();
    for chunk in rest.chunks(260) {
        if chunk.len() < 4 {
            break;
        }
        let (head, body) = chunk.split_at(4);
        let mut mad = [0u8; 256];
        mad[..body.len()].copy_from_slice(body);
        let addr = match head[0] % 3 {
            0 => {
                mad[1] = 0x81;
                let ports: Vec<u8> = head[1..].iter().map(|p| p % 8 + 1).collect();
                let mut path = DrPath::from_ports(&ports[..usize::from(head[1] % 4)]).unwrap();
                if !path.is_local() {
                    path = DrPath::from_ports(&[1]).unwrap().child(ports[0]).unwrap_or(path);
                }
                Address::Directed(DrAddress::direct(path))
            }
            1 => {
                mad[1] = 0x81;
                Address::DirectedResponse {
                    lrh_dlid: u16::from_be_bytes([head[1], head[2]]),
                }
            }
            _ => Address::Lid(LidAddress::smp(u16::from_be_bytes([head[1], head[2]]))),
        };
        let _ = sm.send(&addr, &mad);
        let t = sim.now() + Duration::from_micros(u64::from(head[3]));
        sim.run_until(t);
    }
    sim.run_until_idle(1_000_000);
    let c = sim.counters();
    let sent: u64 = c.attrs.values().map(|a| a.sent).sum();
    let ended: u64 = c.attrs.values().map(|a| a.delivered + a.dropped).sum();
    assert!(ended <= sent, "more endings ({ended}) than packets ({sent})");
});
