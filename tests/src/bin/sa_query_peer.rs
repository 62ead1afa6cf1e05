//! `ibsm-query`'s SA client over umad, for the peer test against OpenSM's SA under ibsim:
//! it opens the port, asks the SA its port knows (sysfs `sm_lid`) for every NodeRecord,
//! PortInfoRecord and PathRecord with GetTable, and prints one line per record:
//!
//! ```text
//! node <lid> <node_guid> <port_guid> <description>
//! portinfo <lid> <port_num> <port_state>
//! path <slid> <dlid> <sgid> <dgid> <mtu> <rate>
//! ```
//!
//! then `stats <json>` with the client's counters. A failed query prints
//! `error <table> <error>` and the program exits 1.
//!
//! Under ibsim: `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so sa-query-peer`.

use std::time::Duration;

use ibsm_query::nodemap::clean_description;
use ibsm_query::sa::{SaClient, SaClientConfig, SaEvent};
use ibsm_transport::{JobRunner, Stop, Transport, drive};
use ibsm_umad::{OpenOptions, UmadTransport};
use ibsm_wire::sa::{ComponentMask, NodeRecord, PathRecord, PortInfoRecord};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = UmadTransport::open(&OpenOptions {
        sa_agent: true,
        ..OpenOptions::default()
    })?;
    let sm_lid = port.port().desc().sm_lid;
    let mut cfg = SaClientConfig::new(sm_lid);
    cfg.timeout = Duration::from_millis(500);
    let mut client: SaClient<&'static str> = SaClient::new(cfg);
    client.get_table(&NodeRecord::default(), ComponentMask::NONE, "node");
    client.get_table(&PortInfoRecord::default(), ComponentMask::NONE, "portinfo");
    client.get_table(&PathRecord::default(), ComponentMask::NONE, "path");
    let stop = Stop::when_idle(port.now() + Duration::from_secs(30));
    let mut events = Vec::new();
    drive(
        &mut client,
        &mut port,
        &mut JobRunner::inline(),
        stop,
        |ev| {
            events.push(ev);
            std::ops::ControlFlow::Continue(())
        },
    )?;
    let mut failed = false;
    for ev in events {
        match ev {
            SaEvent::Done {
                cookie, response, ..
            } => match cookie {
                "node" => {
                    for r in response.records::<NodeRecord>()? {
                        let desc = clean_description(r.node_description.text_bytes());
                        println!(
                            "node {} {:#018x} {:#018x} {desc}",
                            r.lid, r.node_info.node_guid, r.node_info.port_guid
                        );
                    }
                }
                "portinfo" => {
                    for r in response.records::<PortInfoRecord>()? {
                        println!(
                            "portinfo {} {} {:?}",
                            r.endport_lid, r.port_num, r.port_info.port_state
                        );
                    }
                }
                _ => {
                    for r in response.records::<PathRecord>()? {
                        println!(
                            "path {} {} {} {} {:?} {:?}",
                            r.slid, r.dlid, r.sgid, r.dgid, r.mtu, r.rate
                        );
                    }
                }
            },
            SaEvent::Failed { cookie, error, .. } => {
                println!("error {cookie} {error}");
                failed = true;
            }
        }
    }
    println!("stats {:?}", client.stats());
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
