//! `ibsmd`: the ibsm Subnet Manager as a daemon on a real (or ibsim-simulated) HCA port.
//!
//! It opens `/dev/infiniband/umadN` through `ibsm-umad`, sets IsSM, takes part in the
//! SM election (OpenSM-compatible SMInfo), and when Master discovers, configures and
//! keeps sweeping the subnet, serving SA. Under ibsim run it with
//! `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so`. `ibsmd --help` lists
//! the options (OpenSM's names where OpenSM has the option), signals and exit codes.
//!
//! Modules: [`cli`] (flags), [`conf`] (the option table; settings from defaults, file
//! and flags),
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
mod picture;
mod rest;
mod service;
mod status;
mod summary;

use std::time::Duration;

use crate::cli::Invocation;
use crate::daemon::{Daemon, Stop};

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
fn client(inv: &Invocation, cmd: &cli::Command) -> u8 {
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
        cli::Command::Port {
            action,
            target,
            json,
        } => match control::proto::parse(format!("port {action} {target}").as_bytes()) {
            Ok(r) => (r, *json),
            Err(e) => {
                eprintln!("ibsmd: {e}");
                return exit::CONFIG;
            }
        },
    };
    let path = inv
        .source
        .flags_only()
        .run
        .control_socket
        .unwrap_or_else(control::default_path);
    match control::run_client(&path, req, json) {
        0 => exit::OK,
        1 => exit::NOT_UP,
        _ => exit::CONFIG,
    }
}

/// Prints the file's warnings to stderr (before the log is set up).
fn warn_stderr(report: &conf::FileReport) {
    for w in &report.warnings {
        eprintln!("ibsmd: warning: {w}");
    }
}

fn run(inv: Invocation) -> u8 {
    if let Some(cmd) = &inv.fixed.command {
        return client(&inv, cmd);
    }
    let loaded = match conf::load(&inv.source) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ibsmd: {e}");
            return exit::CONFIG;
        }
    };
    if let Some(path) = &inv.fixed.create_config {
        warn_stderr(&loaded.report);
        return match std::fs::write(path, conf::write(&loaded.settings)) {
            Ok(()) => exit::OK,
            Err(e) => {
                eprintln!("ibsmd: {}: {e}", path.display());
                exit::CONFIG
            }
        };
    }
    if inv.fixed.validate {
        warn_stderr(&loaded.report);
        let s = &loaded.settings;
        if let Err(e) = rest::RestServer::prepare(&s.rest, s.partition_file.as_deref()) {
            eprintln!("ibsmd: {e}");
            return exit::CONFIG;
        }
        println!("configuration valid");
        return exit::OK;
    }
    let s = &loaded.settings;
    let log = match logging::Log::init(s.log_flags, &s.log_file, s.accum_log_file, s.run.log_format)
    {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ibsmd: {e}");
            return exit::CONFIG;
        }
    };
    for w in &loaded.report.warnings {
        tracing::warn!("{w}");
    }
    for n in &loaded.report.ignored {
        tracing::debug!("{n}");
    }
    let pid_file = match s.run.pid_file.as_deref().map(service::PidFile::create) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => {
            tracing::error!("{e}");
            eprintln!("ibsmd: {e}");
            return exit::CONFIG;
        }
    };
    let json = s.run.json;
    let once = s.run.once;
    let mut d = match Daemon::start(loaded, inv.source, log) {
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

/// Reports why the daemon stopped and gives its exit code: a configuration refused
/// goes to stderr too (it happens before or at the start), a port failure to the log.
fn failed(f: &daemon::Failure) -> u8 {
    if f.is_config() {
        tracing::error!("{f}");
        eprintln!("ibsmd: {f}");
        exit::CONFIG
    } else {
        tracing::error!("{}", f.to_string().replace('\n', " "));
        exit::PORT
    }
}

fn main() {
    let code = match cli::parse(std::env::args_os()) {
        Ok(inv) => run(inv),
        // Usage errors (exit 2), --help and --version (exit 0), as clap prints them.
        Err(e) => e.exit(),
    };
    // Not a plain return: under ibsim the preload's exit handler can hang.
    ibsm::umad::signal::exit_process(code, Duration::from_secs(2))
}
