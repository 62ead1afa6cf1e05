//! The command line: OpenSM's option names (and short flags) where OpenSM has the
//! option, ibsmd's own for what it adds.
//!
//! Every setting is an `Option`: unset means "what the configuration file says, else the
//! default" ([`crate::conf::Settings::default`], built on `SmConfig::default()`), so no
//! default value is written twice. Ranges are checked once, by `SmConfig::validate`.

use std::path::PathBuf;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

/// What `--help` ends with.
const AFTER_HELP: &str = "\
Defaults: `ibsmd -c FILE` writes every option in force (OpenSM's opensm.conf format).
Options on the command line override the configuration file (-F).

Signals: SIGINT/SIGTERM stop (exit 0). SIGHUP re-reads the configuration file's
run-time options (log_flags, partition_config_file, part_enforce, allow_both_pkeys,
sweep_interval, sm_priority, max_wire_smps) and the partitions file, keeps the configuration in force if either is
wrong, and makes a Master recompute every route (rebalance). SIGUSR1 reopens the log
file (logrotate).

Exit codes: 0 ok (stopped by a signal or --time-limit, --once up, -c written,
--validate passed); 1 --once: the subnet did not come up in time; 2 usage or
configuration error (a flag, the configuration, partitions, log or pid file);
3 port or transport error (no usable port, the umad device failed).";

/// `ibsmd`: the ibsm InfiniBand Subnet Manager, a daemon in place of OpenSM.
///
/// Runs on a local HCA port (or one simulated by ibsim under its umad2sim preload),
/// takes part in the SM election, and as Master discovers, configures and keeps
/// sweeping the subnet, serving Subnet Administration.
#[derive(Debug, Clone, Default, Parser)]
#[command(
    name = "ibsmd",
    version,
    disable_version_flag = true,
    args_override_self = true,
    after_help = AFTER_HELP
)]
#[allow(clippy::struct_excessive_bools)] // one per flag
pub(crate) struct Cli {
    /// Print the version and exit.
    #[arg(long, action = ArgAction::Version)]
    pub(crate) version: Option<bool>,

    // ---- configuration ----
    /// OpenSM configuration file to read (opensm.conf format).
    #[arg(short = 'F', long = "config", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Write the options in force (file and flags) to FILE in opensm.conf format, exit.
    #[arg(short = 'c', long = "create-config", value_name = "FILE")]
    pub(crate) create_config: Option<PathBuf>,
    /// Check the configuration (file and flags) and exit: 0 when it is valid.
    #[arg(long)]
    pub(crate) validate: bool,

    // ---- port ----
    /// Local port GUID to bind to (0: the first port whose link is up) (opensm.conf: guid).
    #[arg(short = 'g', long, value_name = "GUID", value_parser = parse_u64)]
    pub(crate) guid: Option<u64>,
    /// RDMA device to run on (default: any).
    #[arg(long, value_name = "NAME")]
    pub(crate) ca: Option<String>,
    /// Port number on the device (default: the first whose link is up).
    #[arg(long, value_name = "N")]
    pub(crate) port: Option<u8>,

    // ---- SM ----
    /// SM priority, 0 (lowest) to 15 (opensm.conf: sm_priority).
    #[arg(short = 'p', long, value_name = "PRIORITY", value_parser = parse_num::<u8>)]
    pub(crate) priority: Option<u8>,
    /// SM_Key guarding SMInfo exchanges (opensm.conf: sm_key).
    #[arg(short = 'k', long = "smkey", visible_alias = "sm-key", value_name = "KEY",
          value_parser = parse_u64)]
    pub(crate) sm_key: Option<u64>,
    /// Subnet prefix written to every port (opensm.conf: subnet_prefix).
    #[arg(long = "subnet_prefix", value_name = "PREFIX", value_parser = parse_u64)]
    pub(crate) subnet_prefix: Option<u64>,
    /// Routing engine(s), comma-separated: the first that succeeds is used
    /// (minhop, updn, dnup, ftree, dor, lash, dfsssp) (opensm.conf: routing_engine).
    #[arg(
        short = 'R',
        long = "routing_engine",
        visible_alias = "routing",
        value_name = "ENGINES"
    )]
    pub(crate) routing_engine: Option<String>,
    /// Root switches of updn, dnup, ftree and dfsssp's up-first pass: switch GUIDs, or CA
    /// port GUIDs naming their switch, one a line (opensm.conf: root_guid_file).
    #[arg(
        short = 'a',
        long = "root_guid_file",
        visible_alias = "root-guid-file",
        value_name = "FILE"
    )]
    pub(crate) root_guid_file: Option<PathBuf>,
    /// Compute-node port GUIDs for ftree, one a line (opensm.conf: cn_guid_file).
    #[arg(
        short = 'u',
        long = "cn_guid_file",
        visible_alias = "cn-guid-file",
        value_name = "FILE"
    )]
    pub(crate) cn_guid_file: Option<PathBuf>,
    /// I/O-node port GUIDs for ftree (not compute nodes), one a line (opensm.conf: io_guid_file).
    #[arg(
        short = 'G',
        long = "io_guid_file",
        visible_alias = "io-guid-file",
        value_name = "FILE"
    )]
    pub(crate) io_guid_file: Option<PathBuf>,
    /// Reverse hops (a switch used the wrong way round) ftree allows the I/O nodes'
    /// traffic where no up/down path exists (default 0) (opensm.conf: max_reverse_hops).
    #[arg(
        short = 'H',
        long = "max_reverse_hops",
        visible_alias = "max-reverse-hops",
        value_name = "N",
        value_parser = parse_num::<u16>
    )]
    pub(crate) max_reverse_hops: Option<u16>,
    /// Port GUIDs routed first, in this order, by minhop, updn, dnup and dfsssp, one a
    /// line (opensm.conf: guid_routing_order_file).
    #[arg(
        short = 'X',
        long = "guid_routing_order_file",
        visible_alias = "guid-routing-order-file",
        value_name = "FILE"
    )]
    pub(crate) guid_routing_order_file: Option<PathBuf>,
    /// PortInfo.LinkSpeedEnabled written to every port: 0 leave it, 1..=14 those speed
    /// bits, 15 the port's LinkSpeedSupported (opensm.conf: force_link_speed).
    #[arg(long = "force_link_speed", visible_alias = "force-link-speed", value_name = "N",
          value_parser = parse_num::<u8>)]
    pub(crate) force_link_speed: Option<u8>,
    /// PortInfo.LinkSpeedExtEnabled written where both ends support extended speeds: 0
    /// leave it, 1..=29 those speed bits, 30 extended speeds off, 31 the port's
    /// LinkSpeedExtSupported (opensm.conf: force_link_speed_ext).
    #[arg(long = "force_link_speed_ext", visible_alias = "force-link-speed-ext", value_name = "N",
          value_parser = parse_num::<u8>)]
    pub(crate) force_link_speed_ext: Option<u8>,
    /// PortInfo.LinkWidthEnabled written to every port: 0 leave it, 1..=31 those width
    /// bits (1x 4x 8x 12x 2x), 255 the port's LinkWidthSupported (opensm.conf: force_link_width).
    #[arg(long = "force_link_width", visible_alias = "force-link-width", value_name = "N",
          value_parser = parse_num::<u8>)]
    pub(crate) force_link_width: Option<u8>,
    /// LID mask control, 0..7: 2^LMC LIDs per CA port (opensm.conf: lmc).
    #[arg(short = 'l', long, value_name = "LMC", value_parser = parse_num::<u8>)]
    pub(crate) lmc: Option<u8>,
    /// SL of SM/SA traffic (opensm.conf: sm_sl).
    #[arg(long = "sm_sl", value_name = "SL", value_parser = parse_num::<u8>)]
    pub(crate) sm_sl: Option<u8>,
    /// One M_Key for every port (0: leave M_Keys alone) (opensm.conf: m_key).
    #[arg(long = "m-key", value_name = "KEY", value_parser = parse_u64)]
    pub(crate) m_key: Option<u64>,
    /// M_KeyProtectBits written with the key, 0..3 (opensm.conf: m_key_protection_level).
    #[arg(long = "m-key-protect", value_name = "BITS", value_parser = parse_num::<u8>)]
    pub(crate) m_key_protect: Option<u8>,
    /// M_KeyLeasePeriod in seconds, 0 = never expires (opensm.conf: m_key_lease_period).
    #[arg(long = "m-key-lease", value_name = "SECS", value_parser = parse_num::<u16>)]
    pub(crate) m_key_lease: Option<u16>,

    // ---- sweeping ----
    /// Seconds between light sweeps, 0 = none (opensm.conf: sweep_interval).
    #[arg(short = 's', long = "sweep", visible_alias = "sweep-interval", value_name = "SECS",
          value_parser = parse_u64)]
    pub(crate) sweep: Option<u64>,
    /// Configure the subnet once, print the summary, exit 0 when it came up.
    #[arg(short = 'o', long)]
    pub(crate) once: bool,
    /// SMP transaction timeout in milliseconds (opensm.conf: transaction_timeout).
    #[arg(short = 't', long = "timeout", value_name = "MS", value_parser = parse_u64)]
    pub(crate) transaction_timeout: Option<u64>,
    /// SMP re-sends before giving up (opensm.conf: transaction_retries).
    #[arg(long = "retries", value_name = "N", value_parser = parse_num::<u32>)]
    pub(crate) retries: Option<u32>,
    /// SMPs in flight at the start of a sweep; ibsmd widens the window from there
    /// (opensm.conf: max_wire_smps).
    #[arg(short = 'n', long = "maxsmps", value_name = "N", value_parser = parse_num::<usize>)]
    pub(crate) maxsmps: Option<usize>,
    /// Most SMPs in flight (0: 256, or 128 under ibsim whose preload can deadlock on long
    /// send bursts) (opensm.conf: max_wire_smps_limit).
    #[arg(long = "max-wire-smps-limit", visible_alias = "max-wire-smps", value_name = "N",
          value_parser = parse_num::<usize>)]
    pub(crate) max_wire_smps_limit: Option<usize>,
    /// Standby: milliseconds between polls of the master (opensm.conf: sminfo_polling_timeout).
    #[arg(long = "polling-timeout", value_name = "MS", value_parser = parse_u64)]
    pub(crate) polling_timeout: Option<u64>,
    /// Standby: the master is dead after N + 1 unanswered polls in a row, OpenSM 3.3's
    /// count (opensm.conf: polling_retry_number); an unanswered poll is re-probed at
    /// once, after the transaction timeout, not a polling period later.
    #[arg(long = "polling-retries", value_name = "N", value_parser = parse_num::<u32>)]
    pub(crate) polling_retries: Option<u32>,
    /// Read --polling-retries / polling_retry_number N as opensm.conf words it: N
    /// failed polls declare the master dead (0 counts as 1), one fewer than OpenSM 3.3
    /// waits for (opensm.conf: polling_retries_as_failures TRUE).
    #[arg(long = "polling-retries-as-failures")]
    pub(crate) polling_retries_as_failures: bool,
    /// After a lost cable or node, recompute every route (OpenSM's behaviour) instead of
    /// repairing only the broken ones (opensm.conf: reroute_on_loss FALSE).
    #[arg(long = "no-reroute-on-loss")]
    pub(crate) no_reroute_on_loss: bool,
    /// Recompute repaired routes once no topology change has been seen for SECS
    /// (0: never on its own) (opensm.conf: rebalance_after).
    #[arg(long = "rebalance-after", value_name = "SECS", value_parser = parse_u64)]
    pub(crate) rebalance_after: Option<u64>,
    /// Disable the link of a port marked unhealthy for flapping or a trap flood, and
    /// enable it again after the quiet period (opensm.conf: babbling_port_policy).
    #[arg(long = "babbling-port-policy")]
    pub(crate) babbling_port_policy: bool,
    /// A port whose link goes down more than N times in --flap-window is unhealthy and
    /// routed around until quiet (0: off; default 5) (opensm.conf: health_flap_count).
    #[arg(long = "flap-count", value_name = "N", value_parser = parse_num::<u32>)]
    pub(crate) flap_count: Option<u32>,
    /// The flap window (default 60) (opensm.conf: health_flap_window).
    #[arg(long = "flap-window", value_name = "SECS", value_parser = parse_u64)]
    pub(crate) flap_window: Option<u64>,
    /// A port sending more than N traps in --trap-window is unhealthy: its traps are
    /// ignored (0: off; default 100) (opensm.conf: health_trap_limit).
    #[arg(long = "trap-limit", value_name = "N", value_parser = parse_num::<u32>)]
    pub(crate) trap_limit: Option<u32>,
    /// The trap window (default 10) (opensm.conf: health_trap_window).
    #[arg(long = "trap-window", value_name = "SECS", value_parser = parse_u64)]
    pub(crate) trap_window: Option<u64>,
    /// A port about or across which SMPs are lost in N heavy sweeps in a row is
    /// unhealthy and no longer explored (0: off; default 3) (opensm.conf:
    /// health_no_answer_sweeps).
    #[arg(long = "no-answer-sweeps", value_name = "N", value_parser = parse_num::<u32>)]
    pub(crate) no_answer_sweeps: Option<u32>,
    /// An unhealthy port is taken back after SECS without trouble (default 60)
    /// (opensm.conf: health_quiet_period).
    #[arg(long = "unhealthy-quiet-period", value_name = "SECS", value_parser = parse_u64)]
    pub(crate) unhealthy_quiet_period: Option<u64>,
    /// Worker threads for routing (0: one per CPU) (opensm.conf: routing_threads).
    #[arg(long = "routing-threads", value_name = "N", value_parser = parse_num::<usize>)]
    pub(crate) routing_threads: Option<usize>,
    /// Keep LIDs across restarts in FILE (OpenSM's guid2lid format) (opensm.conf: guid2lid_file).
    #[arg(long, value_name = "FILE")]
    pub(crate) guid2lid: Option<PathBuf>,

    // ---- partitions and SA ----
    /// Partition policy in OpenSM's partitions.conf syntax (opensm.conf: partition_config_file).
    #[arg(
        short = 'P',
        long = "Pconfig",
        visible_alias = "partitions",
        value_name = "FILE"
    )]
    pub(crate) partitions: Option<PathBuf>,
    /// Directions switch ports cabled to end ports filter P_Keys in (opensm.conf: part_enforce).
    #[arg(
        short = 'Z',
        long = "part_enforce",
        visible_alias = "part-enforce",
        value_name = "MODE"
    )]
    pub(crate) part_enforce: Option<PartEnforce>,
    /// A `both` member holds the full and the limited P_Key (opensm.conf: allow_both_pkeys).
    #[arg(
        short = 'W',
        long = "allow_both_pkeys",
        visible_alias = "allow-both-pkeys"
    )]
    pub(crate) allow_both_pkeys: bool,
    /// Do not serve Subnet Administration: SA requests get "unsupported class" (opensm.conf: sa).
    #[arg(long = "no-sa")]
    pub(crate) no_sa: bool,
    /// Serve Subnet Administration (the default; kept for old command lines).
    #[arg(long = "sa", conflicts_with = "no_sa")]
    pub(crate) sa: bool,
    /// Run the performance manager: as Master, read every port's counters each
    /// perfmgr_sweep_time_s, shown by the metrics endpoint (opensm.conf: perfmgr).
    #[arg(long)]
    pub(crate) perfmgr: bool,
    /// Seconds between counter sweeps (opensm.conf: perfmgr_sweep_time_s; default 180).
    #[arg(long = "perfmgr_sweep_time_s", value_name = "SECS")]
    pub(crate) perfmgr_sweep_time_s: Option<u64>,

    // ---- operations ----
    /// Client command for a running ibsmd (none: run the SM).
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Control socket: the daemon listens on it, client commands connect to it
    /// (default: $XDG_RUNTIME_DIR/ibsmd.sock, else /run/ibsmd.sock; owner-only).
    #[arg(long = "control-socket", value_name = "PATH", global = true)]
    pub(crate) control_socket: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics and the JSON status at /status
    /// (ADDR as HOST:PORT; port 0 picks one, logged).
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
    /// Write OpenSM's dumps (opensm-lfts.dump, opensm-subnet.lst, opensm-mfts.dump,
    /// opensm-sl2vl.dump, guid2lid) into DIR after every heavy sweep (opensm.conf: dump_files_dir).
    #[arg(long = "dump-dir", value_name = "DIR")]
    pub(crate) dump_dir: Option<PathBuf>,

    // ---- output ----
    /// One JSON object, the run's summary, as the last line on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// Stop after SECS (--once: give up, exit 1); default 60 with --once, none otherwise.
    #[arg(long = "time-limit", value_name = "SECS", value_parser = parse_u64)]
    pub(crate) time_limit: Option<u64>,
    /// Log to FILE instead of stderr (`stdout`, `stderr`: those streams) (opensm.conf: log_file).
    #[arg(
        short = 'f',
        long = "log_file",
        visible_alias = "log-file",
        value_name = "FILE"
    )]
    pub(crate) log_file: Option<PathBuf>,
    /// Empty the log file when opening it instead of appending (opensm.conf: accum_log_file FALSE).
    #[arg(short = 'e', long = "erase_log_file")]
    pub(crate) erase_log_file: bool,
    /// Log line format.
    #[arg(long = "log-format", value_name = "FORMAT", default_value = "text")]
    pub(crate) log_format: LogFormat,
    /// Write the daemon's PID to FILE (removed when it stops).
    #[arg(long = "pid-file", value_name = "FILE")]
    pub(crate) pid_file: Option<PathBuf>,
    /// More log: -v debug (events, light sweeps), -vv trace (opensm.conf: log_flags).
    #[arg(short = 'v', long, action = ArgAction::Count)]
    pub(crate) verbose: u8,
    /// Most log (OpenSM's -V: log_flags 0xFF).
    #[arg(short = 'V')]
    pub(crate) max_verbose: bool,
    /// OpenSM log flags: 0x01 errors, 0x02 info, 0x04 verbose (debug), 0x08 and up
    /// trace; 0 none (opensm.conf: log_flags).
    #[arg(short = 'D', long = "D", value_name = "FLAGS", value_parser = parse_num::<u8>)]
    pub(crate) log_flags: Option<u8>,
}

/// Client commands: each sends one request to a running ibsmd's control socket and
/// prints its answer (exit 0 done, 1 refused or failed, 2 no daemon answered).
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub(crate) enum Command {
    /// The running SM's role, master, sweeps, SMPs, traps and fabric counts.
    Status {
        /// The daemon's JSON response line instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Start a light sweep now (a heavy one with --heavy).
    Sweep {
        /// Full discovery and configuration.
        #[arg(long)]
        heavy: bool,
        /// The daemon's JSON response line instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Recompute every route at a heavy sweep.
    Rebalance {
        /// The daemon's JSON response line instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write the dumps into the daemon's dump directory now.
    Dump {
        /// The daemon's JSON response line instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Change the log level: error, warn, info, debug or trace.
    LogLevel {
        /// The level.
        level: String,
        /// The daemon's JSON response line instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// OpenSM's `part_enforce` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PartEnforce {
    /// Inbound and outbound.
    Both,
    /// Packets entering the switch.
    In,
    /// Packets leaving the switch.
    Out,
    /// No switch enforcement.
    Off,
}

/// A number in decimal or `0x` hex, as OpenSM reads them.
pub(crate) fn parse_u64(text: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    }
    .map_err(|_| format!("{text:?} is not a number"))
}

/// A number that must fit `T` (its width, not a range of meaning: that is
/// `SmConfig::validate`'s).
pub(crate) fn parse_num<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    let v = parse_u64(text)?;
    T::try_from(v).map_err(|_| format!("{v} does not fit in {} bits", 8 * size_of::<T>()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn opensm_short_flags_and_old_long_names_parse() {
        let c = Cli::try_parse_from([
            "ibsmd",
            "-g",
            "0x2c9",
            "-p",
            "7",
            "-R",
            "updn,minhop",
            "-s",
            "3",
            "-l",
            "1",
            "-o",
            "-F",
            "a.conf",
            "-f",
            "x.log",
            "-P",
            "p.conf",
            "-vv",
            "-e",
            "-t",
            "100",
        ])
        .unwrap();
        assert_eq!(c.log_file, Some(PathBuf::from("x.log")));
        assert!(c.erase_log_file);
        assert_eq!(c.guid, Some(0x2c9));
        assert_eq!(c.priority, Some(7));
        assert_eq!(c.routing_engine.as_deref(), Some("updn,minhop"));
        assert_eq!(c.sweep, Some(3));
        assert_eq!(c.lmc, Some(1));
        assert!(c.once);
        assert_eq!(c.verbose, 2);
        assert_eq!(c.transaction_timeout, Some(100));
        let c = Cli::try_parse_from([
            "ibsmd",
            "--sm-key",
            "0x10",
            "--routing",
            "dor",
            "--sweep-interval",
            "2",
            "--partitions",
            "p",
            "--part-enforce",
            "in",
            "--allow-both-pkeys",
            "--sa",
        ])
        .unwrap();
        assert_eq!(c.sm_key, Some(0x10));
        assert_eq!(c.routing_engine.as_deref(), Some("dor"));
        assert_eq!(c.sweep, Some(2));
        assert_eq!(c.part_enforce, Some(PartEnforce::In));
        assert!(c.allow_both_pkeys && c.sa && !c.no_sa);
        assert!(Cli::try_parse_from(["ibsmd", "--sa", "--no-sa"]).is_err());
        // A flag given twice: the later wins (scripts append to a base command line).
        let c = Cli::try_parse_from(["ibsmd", "-s", "2", "--sweep-interval", "1"]).unwrap();
        assert_eq!(c.sweep, Some(1));
    }

    #[test]
    fn a_value_wider_than_its_field_is_refused() {
        assert!(Cli::try_parse_from(["ibsmd", "-p", "256"]).is_err());
        assert!(Cli::try_parse_from(["ibsmd", "-p", "x"]).is_err());
        assert!(Cli::try_parse_from(["ibsmd", "-H", "65536"]).is_err());
        for flag in ["-H", "--max_reverse_hops", "--max-reverse-hops"] {
            let c = Cli::try_parse_from(["ibsmd", flag, "65535"]).unwrap();
            assert_eq!(c.max_reverse_hops, Some(u16::MAX), "{flag}");
        }
        // In range for the type: validate's job, not the parser's.
        assert_eq!(
            Cli::try_parse_from(["ibsmd", "-p", "16"]).unwrap().priority,
            Some(16)
        );
    }
}
