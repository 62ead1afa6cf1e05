//! `ibsmd`: the ibsm Subnet Manager as a daemon on a real (or ibsim-simulated) HCA port.
//!
//! It opens `/dev/infiniband/umadN` through `ibsm-umad`, sets IsSM, takes part in the
//! SM election (OpenSM-compatible SMInfo), and when Master discovers, configures and
//! keeps sweeping the subnet, serving SA. Under ibsim run it with
//! `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so`. `ibsmd --help` lists
//! the options (OpenSM's names where OpenSM has the option), signals and exit codes.
//!
//! Modules: [`cli`] (flags), [`conf`] (settings from defaults, file and flags),
//! [`logging`], [`daemon`] (the run loop), [`summary`] (the `--json` line).

mod cli;
mod conf;
mod control;
mod daemon;
mod jobs;
mod logging;
mod metrics;
mod no_sa;
mod opensm_keys;
mod ops;
mod service;
mod status;
mod summary;

use std::time::Duration;

use clap::Parser;

use crate::cli::Cli;
use crate::conf::Loaded;
use crate::daemon::{Daemon, Failure, Stop};

/// Exit codes (also in `--help`).
mod exit {
    /// Stopped by a signal or the time limit, `--once` came up, `-c`/`--validate` done.
    pub(crate) const OK: u8 = 0;
    /// `--once`: the subnet did not come up within the time limit.
    pub(crate) const NOT_UP: u8 = 1;
    /// A flag or setting is wrong, or a file it names cannot be used.
    pub(crate) const CONFIG: u8 = 2;
    /// No usable port, or its transport failed.
    pub(crate) const PORT: u8 = 3;
}

/// A client command: one request to the daemon's control socket.
fn client(cli: &Cli, cmd: &cli::Command) -> u8 {
    use crate::control::{Level, Request};
    let (req, json) = match cmd {
        cli::Command::Status { json } => (Request::Status, *json),
        cli::Command::Sweep { heavy, json } => (Request::Sweep { heavy: *heavy }, *json),
        cli::Command::Rebalance { json } => (Request::Rebalance, *json),
        cli::Command::Dump { json } => (Request::Dump, *json),
        cli::Command::LogLevel { level, json } => match Level::from_name(level) {
            Some(l) => (Request::LogLevel(l), *json),
            None => {
                eprintln!("ibsmd: log-level: {level:?} is not error, warn, info, debug or trace");
                return exit::CONFIG;
            }
        },
    };
    let path = cli
        .control_socket
        .clone()
        .unwrap_or_else(control::default_path);
    match control::run_client(&path, req, json) {
        0 => exit::OK,
        1 => exit::NOT_UP,
        _ => exit::CONFIG,
    }
}

fn run(cli: Cli) -> u8 {
    if let Some(cmd) = &cli.command {
        return client(&cli, cmd);
    }
    let Loaded { settings, report } = match conf::load(&cli) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ibsmd: {e}");
            return exit::CONFIG;
        }
    };
    if let Some(path) = &cli.create_config {
        for w in &report.warnings {
            eprintln!("ibsmd: warning: {w}");
        }
        return match std::fs::write(path, conf::write(&settings)) {
            Ok(()) => exit::OK,
            Err(e) => {
                eprintln!("ibsmd: {}: {e}", path.display());
                exit::CONFIG
            }
        };
    }
    if cli.validate {
        for w in &report.warnings {
            eprintln!("ibsmd: warning: {w}");
        }
        println!("configuration valid");
        return exit::OK;
    }
    let log = match logging::Log::init(
        settings.log_flags,
        &settings.log_file,
        settings.accum_log_file,
        cli.log_format,
    ) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ibsmd: {e}");
            return exit::CONFIG;
        }
    };
    for w in &report.warnings {
        tracing::warn!("{w}");
    }
    for n in &report.ignored {
        tracing::debug!("{n}");
    }
    let pid_file = match cli.pid_file.as_deref().map(service::PidFile::create) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => {
            tracing::error!("{e}");
            eprintln!("ibsmd: {e}");
            return exit::CONFIG;
        }
    };
    let json = cli.json;
    let once = cli.once;
    let mut d = match Daemon::start(settings, cli, log) {
        Ok(d) => d,
        Err(f) => return failed(&f),
    };
    // Ready once the port is open and the engine started: systemd orders the units
    // that need the SM after this.
    if let Err(e) = service::notify("READY=1") {
        tracing::warn!("{e}");
    }
    let stop = d.run();
    if let Err(e) = service::notify("STOPPING=1") {
        tracing::warn!("{e}");
    }
    if let Ok(Stop::SubnetUp) = stop {
        if let Err(f) = d.drain() {
            return failed(&f);
        }
    }
    d.finish();
    if json {
        match serde_json::to_string(&d.out.summary()) {
            Ok(line) => println!("{line}"),
            Err(e) => tracing::error!("summary: {e}"),
        }
    }
    // Dropping the port (here or on an error return) is safe under ibsim too: ibsm-umad
    // leaves the umad fd open there, for the preload crashes when it is closed while
    // MADs are still arriving (see `UmadPort`'s Drop).
    drop(d);
    drop(pid_file);
    match stop {
        Err(f) => failed(&f),
        Ok(Stop::TimeLimit) if once => exit::NOT_UP,
        Ok(_) => exit::OK,
    }
}

fn failed(f: &Failure) -> u8 {
    match f {
        Failure::Config(e) => {
            tracing::error!("{e}");
            eprintln!("ibsmd: {e}");
            exit::CONFIG
        }
        Failure::Port(e) => {
            tracing::error!("{}", e.replace('\n', " "));
            exit::PORT
        }
    }
}

fn main() {
    let code = run(Cli::parse());
    // Not a plain return: under ibsim the preload's exit handler can hang.
    ibsm::umad::signal::exit_process(code, Duration::from_secs(2))
}
