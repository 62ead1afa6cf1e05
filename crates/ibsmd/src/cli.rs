//! The command line: OpenSM's option names (and short flags) where OpenSM has the
//! option, ibsmd's own for what it adds. The flags are built from the option table
//! ([`crate::conf::OPTIONS`]) with clap's builder API, each checked by the same
//! function that reads the option from the file; the few arguments that are not
//! settings (`-F`, `-c`, `--validate`, the client commands) are [`Fixed`].
//!
//! An option not given on the command line is what the configuration file says, else
//! its default ([`crate::conf::Settings::default`], built on `SmConfig::default()`), so
//! no default value is written twice. Ranges are checked once, by `SmConfig::validate`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::conf::options::{Spec, runtime_names};
use crate::conf::{Given, OPTIONS, Settings, Source, Takes};

/// What `--help` ends with; the run-time options are the table's.
fn after_help() -> String {
    format!(
        "\
Defaults: `ibsmd -c FILE` writes every option in force (OpenSM's opensm.conf format).
Options on the command line override the configuration file (-F).

Signals: SIGINT/SIGTERM stop (exit 0). SIGHUP re-reads the configuration file's
run-time options ({}) and the partitions file, keeps the configuration in force if
either is wrong (other options changed are reported as needing a restart), and makes a
Master recompute every route (rebalance). SIGUSR1 reopens the log file (logrotate).

Exit codes: 0 ok (stopped by a signal or --time-limit, --once up, -c written,
--validate passed); 1 --once: the subnet did not come up in time; 2 usage or
configuration error (a flag, the configuration, partitions, log or pid file);
3 port or transport error (no usable port, the umad device failed).",
        runtime_names().join(", ")
    )
}

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
    args_override_self = true
)]
pub(crate) struct Fixed {
    /// Print the version and exit.
    #[arg(long, action = ArgAction::Version)]
    version: Option<bool>,
    /// OpenSM configuration file to read (opensm.conf format).
    #[arg(short = 'F', long = "config", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Write the options in force (file and flags) to FILE in opensm.conf format, exit.
    #[arg(short = 'c', long = "create-config", value_name = "FILE")]
    pub(crate) create_config: Option<PathBuf>,
    /// Check the configuration (file and flags) and exit: 0 when it is valid.
    #[arg(long)]
    pub(crate) validate: bool,
    /// Client command for a running ibsmd (none: run the SM).
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// A parsed command line.
#[derive(Debug, Clone)]
pub(crate) struct Invocation {
    /// The arguments that are not settings.
    pub(crate) fixed: Fixed,
    /// The file and the settings' flags.
    pub(crate) source: Source,
}

/// The whole command: [`Fixed`] and a flag for every flag of the table.
pub(crate) fn command() -> clap::Command {
    let mut cmd = Fixed::command().after_help(after_help());
    for o in OPTIONS {
        for f in o.flags {
            cmd = cmd.arg(arg(o, f));
        }
    }
    cmd
}

/// The clap argument of flag `f` of option `o`.
fn arg(o: &'static Spec, f: &'static crate::conf::Flag) -> Arg {
    let doc = if o.in_file() {
        format!("{} (opensm.conf: {})", f.doc, o.name)
    } else {
        f.doc.to_owned()
    };
    let mut a = Arg::new(f.long)
        .long(f.long)
        .visible_aliases(f.aliases)
        .help(doc)
        .help_heading(o.section.heading())
        .global(f.global);
    if let Some(c) = f.short {
        a = a.short(c);
    }
    match f.takes {
        Takes::Value(name) => a.value_name(name).action(ArgAction::Set).value_parser(
            move |v: &str| -> Result<String, crate::conf::ValueError> {
                // The file's reader, on scratch settings: a flag and a line of the
                // file mean the same, and a bad value is a usage error here.
                (o.access.set)(&mut Settings::default(), v)?;
                Ok(v.to_owned())
            },
        ),
        Takes::Switch(token) => {
            // Switches of one option saying different things contradict each other
            // (--sa --no-sa).
            let others = o.flags.iter().filter_map(move |g| match g.takes {
                Takes::Switch(t) if t != token => Some(g.long),
                _ => None,
            });
            a.action(ArgAction::SetTrue).conflicts_with_all(others)
        }
        Takes::Count(_) => a.action(ArgAction::Count),
    }
}

/// The flags `m` holds, in table order.
fn given(m: &ArgMatches) -> Vec<Given> {
    let mut out = Vec::new();
    for o in OPTIONS {
        for f in o.flags {
            let given = |token: &str| Given {
                key: o.key,
                flag: f,
                token: token.to_owned(),
            };
            match f.takes {
                Takes::Value(_) => out.extend(m.get_one::<String>(f.long).map(|v| given(v))),
                Takes::Switch(t) => {
                    if m.get_flag(f.long) {
                        out.push(given(t));
                    }
                }
                Takes::Count(_) => {
                    out.extend((0..m.get_count(f.long)).map(|_| given("")));
                }
            }
        }
    }
    out
}

/// The options as a Markdown table (`docs/ibsmd-options.md`, kept equal by a test):
/// opensm.conf key, flags, whether a SIGHUP applies it, what it does.
#[cfg(test)]
pub(crate) fn options_markdown() -> String {
    let mut out = String::from(
        "# ibsmd options\n\n\
         Generated from ibsmd's option table (`crates/ibsmd/src/conf/options.rs`); \
         `IBSMD_BLESS=1 cargo test -p ibsmd the_docs_list` rewrites it. Flags override \
         the configuration file (`-F`); `ibsmd -c FILE` writes every file option in \
         force. SIGHUP: `live` options take effect, the others are reported as needing \
         a restart.\n\n\
         | opensm.conf | flags | SIGHUP | what |\n|---|---|---|---|\n",
    );
    for o in OPTIONS {
        let flags: Vec<String> = o
            .flags
            .iter()
            .map(|f| {
                let mut names: Vec<String> =
                    f.short.map(|c| format!("`-{c}`")).into_iter().collect();
                names.push(format!("`--{}`", f.long));
                names.extend(f.aliases.iter().map(|a| format!("`--{a}`")));
                match f.takes {
                    Takes::Value(v) => format!("{} {v}", names.join(", ")),
                    _ => names.join(", "),
                }
            })
            .collect();
        let what = o
            .flags
            .first()
            .map_or_else(|| o.help.replace('\n', " "), |f| f.doc.to_owned());
        let key = if o.in_file() {
            format!("`{}`", o.name)
        } else {
            "(command line)".to_owned()
        };
        let live = if matches!(o.apply, crate::conf::Apply::Live(_)) {
            "live"
        } else {
            "restart"
        };
        out.push_str(&format!(
            "| {key} | {} | {live} | {} |\n",
            flags.join("; "),
            what.replace('|', "\\|")
        ));
    }
    out
}

/// Parses a command line.
///
/// # Errors
/// A usage error, `--help` or `--version` (clap's, to print and exit with).
pub(crate) fn parse<I, T>(args: I) -> Result<Invocation, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let m = command().try_get_matches_from(args)?;
    let fixed = Fixed::from_arg_matches(&m)?;
    let source = Source {
        file: fixed.config.clone(),
        flags: given(&m),
    };
    Ok(Invocation { fixed, source })
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
    /// Isolate a port (its link carries no routes; kept across restarts and
    /// failovers until cleared), or clear one, whatever it was marked for.
    Port {
        /// `isolate` or `clear`.
        #[arg(value_parser = ["isolate", "clear"])]
        action: String,
        /// The port as NODE_GUID/PORT (hexadecimal GUID, `0x` optional).
        target: String,
        /// The daemon's JSON response line instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[&str]) -> Settings {
        let inv = parse(std::iter::once("ibsmd").chain(args.iter().copied())).unwrap();
        inv.source.flags_only()
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn opensm_short_flags_and_old_long_names_parse() {
        let inv = parse([
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
        assert_eq!(inv.source.file, Some(PathBuf::from("a.conf")));
        let s = inv.source.flags_only();
        assert_eq!(
            s.log_file,
            crate::conf::LogTarget::File(PathBuf::from("x.log"))
        );
        assert!(!s.accum_log_file);
        assert_eq!(s.guid, 0x2c9);
        assert_eq!(s.sm.priority, 7);
        assert_eq!(s.sm.routing.to_string(), "updn,minhop");
        assert_eq!(s.sm.sweep_interval, std::time::Duration::from_secs(3));
        assert_eq!(s.sm.lmc, 1);
        assert!(s.run.once);
        // -vv over the default 0x03: debug, then trace.
        assert_eq!(s.log_flags, 0x0F);
        assert_eq!(
            s.sm.transaction_timeout,
            std::time::Duration::from_millis(100)
        );
        let s = settings(&[
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
        ]);
        assert_eq!(s.sm.sm_key, 0x10);
        assert_eq!(s.sm.routing.to_string(), "dor");
        assert_eq!(s.sm.sweep_interval, std::time::Duration::from_secs(2));
        assert_eq!(s.part_enforce, ibsm::manager::partition::Enforcement::In);
        assert!(s.allow_both_pkeys && s.sm.sa);
        assert!(parse(["ibsmd", "--sa", "--no-sa"]).is_err());
        assert!(!settings(&["--no-sa"]).sm.sa);
        // A flag given twice: the later wins (scripts append to a base command line).
        let s = settings(&["-s", "2", "--sweep-interval", "1"]);
        assert_eq!(s.sm.sweep_interval, std::time::Duration::from_secs(1));
        // -V after -D whatever their order; -v on top.
        assert_eq!(settings(&["-V", "-D", "1"]).log_flags, 0xFF);
        assert_eq!(settings(&["-D", "1", "-v"]).log_flags, 0x03);
    }

    #[test]
    fn a_value_wider_than_its_field_is_refused() {
        assert!(parse(["ibsmd", "-p", "256"]).is_err());
        assert!(parse(["ibsmd", "-p", "x"]).is_err());
        assert!(parse(["ibsmd", "-H", "65536"]).is_err());
        assert!(parse(["ibsmd", "-Z", "sideways"]).is_err());
        for flag in ["-H", "--max_reverse_hops", "--max-reverse-hops"] {
            let s = settings(&[flag, "65535"]);
            assert_eq!(s.sm.routing_inputs.max_reverse_hops, u16::MAX, "{flag}");
        }
        // In range for the type: validate's job, not the parser's.
        assert_eq!(settings(&["-p", "16"]).sm.priority, 16);
    }

    #[test]
    fn opensm_short_flags_set_the_option_opensm_gives_them() {
        // OpenSM's short flags (and ibsmd's long names): the option each must set, as
        // written by -c. A flag listed under the wrong option of the table fails here.
        use crate::conf::Key::{self, *};
        let cases: &[(&[&str], Key, &str)] = &[
            (&["-g", "0x2c9"], Guid, "0x00000000000002c9"),
            (&["-p", "9"], SmPriority, "9"),
            (&["-k", "0x10"], SmKey, "0x0000000000000010"),
            (&["-R", "updn"], RoutingEngine, "updn"),
            (&["-a", "/r"], RootGuidFile, "/r"),
            (&["-u", "/c"], CnGuidFile, "/c"),
            (&["-G", "/i"], IoGuidFile, "/i"),
            (&["-X", "/o"], GuidRoutingOrderFile, "/o"),
            (&["-H", "2"], MaxReverseHops, "2"),
            (&["-s", "3"], SweepInterval, "3"),
            (&["-l", "1"], Lmc, "1"),
            (&["--sm_sl", "2"], SmSl, "2"),
            (&["-t", "150"], TransactionTimeout, "150"),
            (&["--retries", "6"], TransactionRetries, "6"),
            (&["-n", "9"], MaxWireSmps, "9"),
            (&["-P", "/p"], PartitionConfigFile, "/p"),
            (&["-Z", "out"], PartEnforce, "out"),
            (&["-W"], AllowBothPkeys, "TRUE"),
            (&["-f", "/l"], LogFile, "/l"),
            (&["-e"], AccumLogFile, "FALSE"),
            (&["-D", "0x05"], LogFlags, "0x05"),
            (&["-V"], LogFlags, "0xff"),
            (&["-v"], LogFlags, "0x07"),
            (&["--m-key", "3"], MKey, "0x0000000000000003"),
            (&["--m-key-protect", "1"], MKeyProtectionLevel, "1"),
            (&["--m-key-lease", "7"], MKeyLeasePeriod, "7"),
            (&["--polling-timeout", "700"], SminfoPollingTimeout, "700"),
            (&["--polling-retries", "1"], PollingRetryNumber, "1"),
            (
                &["--polling-retries-as-failures"],
                PollingRetriesAsFailures,
                "TRUE",
            ),
            (&["--no-reroute-on-loss"], RerouteOnLoss, "FALSE"),
            (&["--rebalance-after", "30"], RebalanceAfter, "30"),
            (&["--babbling-port-policy"], BabblingPortPolicy, "TRUE"),
            (&["--flap-count", "2"], HealthFlapCount, "2"),
            (&["--flap-window", "9"], HealthFlapWindow, "9"),
            (&["--trap-limit", "8"], HealthTrapLimit, "8"),
            (&["--trap-window", "4"], HealthTrapWindow, "4"),
            (&["--no-answer-sweeps", "5"], HealthNoAnswerSweeps, "5"),
            (&["--unhealthy-quiet-period", "6"], HealthQuietPeriod, "6"),
            (&["--reboot-count", "4"], HealthRebootCount, "4"),
            (&["--reboot-window", "30"], HealthRebootWindow, "30"),
            (&["--set-err-count", "7"], HealthSetErrCount, "7"),
            (&["--set-err-window", "31"], HealthSetErrWindow, "31"),
            (
                &["--action-reboot", "disable"],
                HealthActionReboot,
                "disable",
            ),
            (
                &["--action-flapping", "report"],
                HealthActionFlapping,
                "report",
            ),
            (
                &["--action-unresponsive", "isolate"],
                HealthActionUnresponsive,
                "isolate",
            ),
            (
                &["--action-noisy-traps", "ignore"],
                HealthActionNoisyTraps,
                "ignore",
            ),
            (
                &["--action-set-err", "no_discover"],
                HealthActionSetErr,
                "no_discover",
            ),
            (
                &["--action-manual", "disable"],
                HealthActionManual,
                "disable",
            ),
            (
                &["--action-high-ber", "report"],
                HealthActionHighBer,
                "report",
            ),
            (&["--isolation-cap-min", "3"], HealthIsolationCapMin, "3"),
            (
                &["--isolation-cap-permille", "20"],
                HealthIsolationCapPermille,
                "20",
            ),
            (&["--isolated-ports", "/i"], IsolatedPortsFile, "/i"),
            (&["--routing-threads", "2"], RoutingThreads, "2"),
            (&["--max-wire-smps-limit", "64"], MaxWireSmpsLimit, "64"),
            (&["--guid2lid", "/g"], Guid2lidFile, "/g"),
            (&["--topology-ref", "/t"], TopologyRefFile, "/t"),
            (
                &["--topology-ref-policy", "isolate"],
                TopologyRefPolicy,
                "isolate",
            ),
            (&["--dump-dir", "/d"], DumpFilesDir, "/d"),
            (&["--no-sa"], Sa, "FALSE"),
            (&["--perfmgr"], Perfmgr, "TRUE"),
            (&["--perfmgr_sweep_time_s", "20"], PerfmgrSweepTimeS, "20"),
            (&["--force_link_speed", "1"], ForceLinkSpeed, "1"),
            (&["--force_link_speed_ext", "30"], ForceLinkSpeedExt, "30"),
            (&["--force_link_width", "2"], ForceLinkWidth, "2"),
            (
                &["--subnet_prefix", "0x1"],
                SubnetPrefix,
                "0x0000000000000001",
            ),
            (&["--ca", "mlx5_0"], Ca, "mlx5_0"),
            (&["--port", "2"], Port, "2"),
            (&["-o"], Once, "TRUE"),
            (&["--time-limit", "5"], TimeLimit, "5"),
            (&["--metrics", "[::1]:0"], Metrics, "[::1]:0"),
            (&["--pid-file", "/pid"], PidFile, "/pid"),
            (&["--json"], Json, "TRUE"),
            (&["--log-format", "json"], LogFormat, "json"),
            (&["--control-socket", "/s"], ControlSocket, "/s"),
            (&["--rest", "0.0.0.0:8443"], RestAddress, "0.0.0.0:8443"),
            (&["--rest-credentials", "/u"], RestCredentialsFile, "/u"),
            (&["--rest-cert", "/c"], RestTlsCertFile, "/c"),
            (&["--rest-key", "/k"], RestTlsKeyFile, "/k"),
            (&["--rest-insecure"], RestInsecure, "TRUE"),
        ];
        let d = Settings::default();
        for (args, key, want) in cases {
            let s = settings(args);
            for o in OPTIONS {
                let (got, was) = ((o.access.get)(&s), (o.access.get)(&d));
                if o.key == *key {
                    assert_eq!(got, *want, "{args:?} -> {}", o.name);
                } else {
                    assert_eq!(got, was, "{args:?} changed {}", o.name);
                }
            }
        }
        // Every flag of the table is in the list: a new one gets its case.
        let listed: Vec<_> = cases.iter().map(|(a, _, _)| a[0]).collect();
        for o in OPTIONS {
            for f in o.flags {
                let named = |a: &&str| {
                    *a == format!("--{}", f.long) || f.short.is_some_and(|c| *a == format!("-{c}"))
                };
                assert!(
                    listed.iter().any(named) || o.key == Sa,
                    "--{} has no case",
                    f.long
                );
            }
        }
    }

    #[test]
    fn help_lists_the_run_time_options_of_the_table() {
        let help = command().render_long_help().to_string();
        for name in runtime_names() {
            assert!(help.contains(name), "{name} not in --help");
        }
        assert!(help.contains("(opensm.conf: sm_priority)"), "{help}");
        assert!(help.contains("--control-socket"), "{help}");
    }

    #[test]
    fn the_docs_list_is_the_tables() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/ibsmd-options.md");
        let want = options_markdown();
        if std::env::var_os("IBSMD_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "{path} is not the option table's: IBSMD_BLESS=1 cargo test -p ibsmd the_docs_list"
        );
    }

    #[test]
    fn the_control_socket_is_taken_after_a_client_command() {
        let inv = parse(["ibsmd", "status", "--control-socket", "/x.sock"]).unwrap();
        assert_eq!(inv.fixed.command, Some(Command::Status { json: false }));
        assert_eq!(
            inv.source.flags_only().run.control_socket,
            Some(PathBuf::from("/x.sock"))
        );
    }
}
