//! Serves a simulated fabric to programs running under ibsim's umad2sim preload.
//!
//! ```text
//! cargo run -p ibsm-sim --example ibsim_server -- net-file [--name sockname] [--seed N] [--script faults]
//! IBSIM_SOCKNAME=sockname LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so opensm ...
//! ```
//!
//! The net file is in ibsim's or ibnetdiscover's format; the optional fault script uses
//! `Sim::load_script`'s format, its times counted from the start of serving (virtual
//! time follows the wall clock). Stop the server with a signal.

#[cfg(target_os = "linux")]
fn main() {
    use std::sync::atomic::AtomicBool;

    let mut args = std::env::args().skip(1);
    let mut file = None;
    let mut name = std::env::var("IBSIM_SOCKNAME").unwrap_or_else(|_| "sim".into());
    let mut seed = 0u64;
    let mut script = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--script" => script = Some(args.next().expect("--script needs a file")),
            "--name" => name = args.next().expect("--name needs a value"),
            "--seed" => {
                seed = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--seed needs a number");
            }
            _ => file = Some(a),
        }
    }
    let Some(file) = file else {
        eprintln!("usage: ibsim_server <net-file> [--name sockname] [--seed N]");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{file}: {e}");
            std::process::exit(1);
        }
    };
    let cfg = ibsm_sim::SimConfig {
        seed,
        ..ibsm_sim::SimConfig::default()
    };
    let (mut sim, _notes) = match ibsm_sim::Sim::from_net(&text, cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{file}: {e}");
            std::process::exit(1);
        }
    };
    if let Some(path) = script {
        let loaded = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| sim.load_script(&t).map_err(|e| e.to_string()));
        match loaded {
            Ok(n) => eprintln!("{n} faults scheduled from {path}"),
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(1);
            }
        }
    }
    let nodes = sim.node_count();
    let mut server = ibsm_sim::server::IbsimServer::bind(sim, &name).unwrap_or_else(|e| {
        eprintln!("cannot bind {name}: {e}");
        std::process::exit(1);
    });
    eprintln!("ibsm-sim serving {nodes} nodes as {name:?}");
    let stop = AtomicBool::new(false);
    if let Err(e) = server.run(&stop) {
        eprintln!("server: {e}");
        std::process::exit(1);
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("the ibsim-compatible server needs Linux (abstract unix sockets)");
}
